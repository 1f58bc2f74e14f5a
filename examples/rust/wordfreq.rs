// A Rust release program as cargo builds one: -O, no frame pointers, no debug
// info, std linked in. No planted problem: it counts words of a generated text in
// a HashMap, on the main thread and on one std::thread, so its stacks go through
// Rust's entry chains (std::rt::lang_start, __rust_begin_short_backtrace, the
// std thread start). perfsleuth must not call these stacks broken.
use std::collections::HashMap;
use std::thread;

fn text(seed: u64, words: usize) -> String {
    let mut x = seed;
    let mut out = String::with_capacity(words * 8);
    for _ in 0..words {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = 3 + (x % 6) as usize;
        for k in 0..len {
            out.push((b'a' + ((x >> (5 * k)) % 8) as u8) as char);
        }
        out.push(' ');
    }
    out
}

#[inline(never)]
fn count(text: &str) -> HashMap<&str, u32> {
    let mut freq = HashMap::new();
    for word in text.split_ascii_whitespace() {
        *freq.entry(word).or_insert(0) += 1;
    }
    freq
}

fn work(seed: u64, rounds: u32) -> usize {
    let t = text(seed, 400_000);
    (0..rounds).map(|_| count(&t).len()).sum()
}

fn main() {
    let rounds: u32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(16);
    let mut header = [0u8; 16 * 1024];
    std::hint::black_box(&mut header);
    let helper = thread::spawn(move || work(7, rounds));
    let mine = work(11 + header[0] as u64, rounds);
    std::hint::black_box(&mut header);
    println!("{}", mine + helper.join().unwrap());
}
