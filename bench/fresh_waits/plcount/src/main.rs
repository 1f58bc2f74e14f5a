// Workers take jobs from a crossbeam channel, hash them outside the lock, then
// fold the result into a parking_lot::Mutex<HashMap> (work under the lock).
// Each worker times its own lock() and recv() calls: the truth.
use crossbeam_channel::bounded;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

#[inline(never)]
fn digest(seed: u64, rounds: u32) -> u64 {
    let mut h = seed ^ 0x9e3779b97f4a7c15;
    for i in 0..rounds {
        h = h.rotate_left(13).wrapping_mul(0x100000001b3) ^ (i as u64);
    }
    h
}

#[inline(never)]
fn fold_under_lock(table: &mut HashMap<u64, u64>, key: u64, rounds: u32) {
    let mut v = key;
    for i in 0..rounds {
        v = v.rotate_left(7).wrapping_add(i as u64);
    }
    *table.entry(key % 4096).or_insert(0) += v & 1;
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let jobs: u64 = args.get(1).map(|s| s.parse().unwrap()).unwrap_or(200_000);
    let workers: usize = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(3);
    let (tx, rx) = bounded::<u64>(64);
    let table = Arc::new(Mutex::new(HashMap::new()));
    let mut handles = Vec::new();
    for w in 0..workers {
        let rx = rx.clone();
        let table = Arc::clone(&table);
        let h = std::thread::Builder::new()
            .name(format!("worker{w}"))
            .spawn(move || {
                let born = Instant::now();
                let (mut lock_ns, mut recv_ns) = (0u128, 0u128);
                loop {
                    let t0 = Instant::now();
                    let job = rx.recv();
                    recv_ns += t0.elapsed().as_nanos();
                    let Ok(job) = job else { break };
                    let key = digest(job, 10000);
                    let t1 = Instant::now();
                    let mut guard = table.lock();
                    lock_ns += t1.elapsed().as_nanos();
                    fold_under_lock(&mut guard, key, 20000);
                    drop(guard);
                }
                (lock_ns, recv_ns, born.elapsed().as_nanos())
            })
            .unwrap();
        handles.push(h);
    }
    drop(rx);
    for j in 0..jobs {
        tx.send(digest(j, 200)).unwrap();
    }
    drop(tx);
    let (mut lock_ns, mut recv_ns, mut lived_ns) = (0u128, 0u128, 0u128);
    for h in handles {
        let (l, r, t) = h.join().unwrap();
        lock_ns += l;
        recv_ns += r;
        lived_ns += t;
    }
    eprintln!(
        "plcount: workers waited lock {} ns recv {} ns of {} ns (lock {:.2}%, recv {:.2}%)",
        lock_ns,
        recv_ns,
        lived_ns,
        100.0 * lock_ns as f64 / lived_ns as f64,
        100.0 * recv_ns as f64 / lived_ns as f64
    );
    println!("{}", table.lock().len());
}
