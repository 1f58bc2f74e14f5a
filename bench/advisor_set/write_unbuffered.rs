// Planted: writeln! straight to a File (one write(2) per line). Fix (--cfg fixed):
// a BufWriter.
use std::fs::File;
use std::io::Write;

fn emit<W: Write>(out: &mut W, n: u32) {
    for i in 0..n {
        writeln!(out, "row {} value {}", i, i % 97).unwrap();
    }
}

fn main() {
    let file = File::create("/dev/null").unwrap();
    #[cfg(fixed)]
    let mut out = std::io::BufWriter::with_capacity(1 << 16, file);
    #[cfg(not(fixed))]
    let mut out = file;
    emit(&mut out, 600_000);
    out.flush().unwrap();
}
