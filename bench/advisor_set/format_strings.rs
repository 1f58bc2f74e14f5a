// Planted: format!() of every number into a new String. Fix (--cfg fixed): digits
// written by hand into one reused buffer.
fn digits(mut v: u64, out: &mut Vec<u8>) {
    let start = out.len();
    loop {
        out.push(b'0' + (v % 10) as u8);
        v /= 10;
        if v == 0 { break; }
    }
    out[start..].reverse();
}

fn main() {
    let mut total = 0usize;
    let mut buf: Vec<u8> = Vec::with_capacity(32);
    for i in 0..15_000_000u64 {
        #[cfg(fixed)]
        {
            buf.clear();
            digits(i * 31, &mut buf);
            total += buf.len();
        }
        #[cfg(not(fixed))]
        {
            let s = format!("{}", i * 31);
            total += s.len();
            let _ = (&mut buf, digits as fn(u64, &mut Vec<u8>));
        }
    }
    println!("{}", total);
}
