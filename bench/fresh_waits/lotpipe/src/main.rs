// A producer fills a bounded queue (parking_lot::Mutex<VecDeque> with two
// parking_lot::Condvars); 3 workers pop jobs, digest them outside any lock,
// then fold each result into a std::sync::RwLock<HashMap> (write: work under
// the lock; a read lock for a lookup first); each round every worker takes
// BATCH jobs and they meet at a std::sync::Barrier. Every thread times its own lock calls (`mutex`: the queue's
// lock(), the RwLock's read() and write()) and waits (`condvar`: the Condvars'
// wait(), the Barrier's wait()) over its life: the truth.
// usage: lotpipe ROUNDS WORKERS
use parking_lot::{Condvar, Mutex};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Barrier, RwLock};
use std::thread;
use std::time::Instant;

const DEPTH: usize = 8;
const BATCH: u64 = 40;

struct Queue {
    jobs: Mutex<VecDeque<u64>>,
    not_empty: Condvar,
    not_full: Condvar,
}

#[derive(Default)]
struct Clock {
    mutex: u128,
    condvar: u128,
}

impl Clock {
    fn lock<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let t0 = Instant::now();
        let held = f();
        self.mutex += t0.elapsed().as_nanos();
        held
    }
    fn wait(&mut self, f: impl FnOnce()) {
        let t0 = Instant::now();
        f();
        self.condvar += t0.elapsed().as_nanos();
    }
}

#[inline(never)]
fn digest(seed: u64) -> u64 {
    let mut h = seed ^ 0x2545f4914f6cdd1d;
    for k in 0..30_000u64 {
        h = (h ^ (h >> 27)).wrapping_mul(0x9e3779b97f4a7c15).wrapping_add(k);
    }
    h
}

#[inline(never)]
fn merge(table: &mut HashMap<u64, u64>, h: u64) {
    let mut x = h;
    for k in 0..15_000u64 {
        x = (x ^ (x >> 31)).wrapping_mul(0xbf58476d1ce4e5b9).wrapping_add(k);
    }
    *table.entry(x % 2048).or_insert(0) += h & 0xff;
}

fn produce(queue: &Queue, jobs: u64) -> Clock {
    let mut clock = Clock::default();
    for item in 0..jobs {
        let mut q = clock.lock(|| queue.jobs.lock());
        while q.len() >= DEPTH {
            clock.wait(|| queue.not_full.wait(&mut q));
        }
        q.push_back(item);
        drop(q);
        queue.not_empty.notify_one();
    }
    clock
}

fn work(queue: &Queue, table: &RwLock<HashMap<u64, u64>>, barrier: &Barrier, rounds: u64) -> Clock {
    let mut clock = Clock::default();
    for _ in 0..rounds {
        for _ in 0..BATCH {
            take_one(queue, table, &mut clock);
        }
        clock.wait(|| {
            barrier.wait();
        });
    }
    clock
}

fn take_one(queue: &Queue, table: &RwLock<HashMap<u64, u64>>, clock: &mut Clock) {
    let mut q = clock.lock(|| queue.jobs.lock());
    while q.is_empty() {
        clock.wait(|| queue.not_empty.wait(&mut q));
    }
    let job = q.pop_front().unwrap();
    drop(q);
    queue.not_full.notify_one();
    let h = digest(job);
    let seen = clock.lock(|| table.read().unwrap()).contains_key(&(h % 2048));
    let mut t = clock.lock(|| table.write().unwrap());
    merge(&mut t, h ^ seen as u64);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: u64 = args.get(1).map_or(100, |s| s.parse().unwrap());
    let workers: usize = args.get(2).map_or(3, |s| s.parse().unwrap());
    let queue = Arc::new(Queue {
        jobs: Mutex::new(VecDeque::new()),
        not_empty: Condvar::new(),
        not_full: Condvar::new(),
    });
    let table = Arc::new(RwLock::new(HashMap::new()));
    let barrier = Arc::new(Barrier::new(workers));
    let mut threads = Vec::new();
    for _ in 0..workers {
        let (queue, table, barrier) = (queue.clone(), table.clone(), barrier.clone());
        threads.push(thread::spawn(move || {
            let born = Instant::now();
            let clock = work(&queue, &table, &barrier, rounds);
            (clock, born.elapsed().as_nanos())
        }));
    }
    let producer = {
        let queue = queue.clone();
        thread::spawn(move || {
            let born = Instant::now();
            (produce(&queue, rounds * BATCH * workers as u64), born.elapsed().as_nanos())
        })
    };
    let (mut mutex, mut condvar, mut lived) = (0u128, 0u128, 0u128);
    for t in threads.into_iter().chain([producer]) {
        let (clock, life) = t.join().unwrap();
        mutex += clock.mutex;
        condvar += clock.condvar;
        lived += life;
    }
    let sum: u64 = table.read().unwrap().values().sum();
    println!("{sum}");
    eprintln!("lotpipe: threads waited lock {mutex} ns wait {condvar} ns of {lived} ns");
}
