// A std-only Rust worker pool: the main thread sends jobs over a bounded
// std::sync::mpsc::sync_channel, shared by the workers behind a std Mutex (the
// Rust book's pool), and each worker folds its result into a std Mutex<HashMap>.
// Prints the workers' time in lock() of either mutex (`mutex`) and in recv()
// (`condvar`: waiting for a job), over their lifetime.
// usage: stdpool JOBS WORKERS
use std::collections::HashMap;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Instant;

#[inline(never)]
fn crunch(seed: u64) -> u64 {
    let mut h = seed;
    for k in 0..20_000u64 {
        h = (h ^ (h >> 29)).wrapping_mul(0xbf58476d1ce4e5b9).wrapping_add(k);
    }
    h
}

#[inline(never)]
fn fold_in(table: &mut HashMap<u64, u64>, h: u64) {
    for k in 0..64u64 {
        *table.entry((h.wrapping_add(k)) % 4096).or_insert(0) += h >> 7;
    }
    let mut x = h;
    for k in 0..9_000u64 {
        x = (x ^ (x >> 31)).wrapping_mul(0x94d049bb133111eb).wrapping_add(k);
    }
    *table.entry(x % 4096).or_insert(0) += 1;
}

fn worker(jobs: Arc<Mutex<Receiver<u64>>>, results: Arc<Mutex<HashMap<u64, u64>>>) -> (u128, u128, u128) {
    let born = Instant::now();
    let (mut in_lock, mut in_recv) = (0u128, 0u128);
    loop {
        let t0 = Instant::now();
        let rx = jobs.lock().unwrap();
        let t1 = Instant::now();
        let job = rx.recv();
        in_lock += (t1 - t0).as_nanos();
        in_recv += t1.elapsed().as_nanos();
        drop(rx);
        let Ok(seed) = job else { break };
        let h = crunch(seed);
        let t2 = Instant::now();
        let mut table = results.lock().unwrap();
        in_lock += t2.elapsed().as_nanos();
        fold_in(&mut table, h);
    }
    (in_lock, in_recv, born.elapsed().as_nanos())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let jobs_n: u64 = args.get(1).map_or(20000, |s| s.parse().unwrap());
    let workers: usize = args.get(2).map_or(3, |s| s.parse().unwrap());
    let (tx, rx) = sync_channel::<u64>(16);
    let rx = Arc::new(Mutex::new(rx));
    let results = Arc::new(Mutex::new(HashMap::new()));
    let handles: Vec<_> = (0..workers)
        .map(|_| {
            let (rx, results) = (rx.clone(), results.clone());
            thread::spawn(move || worker(rx, results))
        })
        .collect();
    for j in 0..jobs_n {
        // the producer paces the jobs: it does a little work per job
        let mut x = j;
        for k in 0..2_000u64 {
            x = (x ^ (x >> 17)).wrapping_mul(31).wrapping_add(k);
        }
        tx.send(x).unwrap();
    }
    drop(tx);
    let (mut l, mut r, mut lived) = (0u128, 0u128, 0u128);
    for h in handles {
        let (a, b, c) = h.join().unwrap();
        l += a;
        r += b;
        lived += c;
    }
    eprintln!("waited lock {} ns recv {} ns of {} ns", l, r, lived);
}
