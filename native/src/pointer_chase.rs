//! A pointer chase over one cache line in each of `slots` equal slots of memory
//! (64 B: every line of a dense block; 4 KiB: one line per page), visited in a
//! random cycle. Native because the step being timed is a single dependent load of
//! a few nanoseconds: an interpreter's own ~50 ns per step would hide the
//! difference between a TLB hit and a miss that the calibration looks for.

use pyo3::prelude::*;
use std::hint::black_box;
use std::time::Instant;

const WORD: usize = std::mem::size_of::<usize>();
const LINE_WORDS: usize = 64 / WORD;

struct XorShift(u64);

impl XorShift {
    fn below(&mut self, bound: usize) -> usize {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        (x % bound as u64) as usize
    }
}

/// The memory, every visited word holding the index of the next one, and a start.
/// The line within each slot is random, so sparse lines spread over the cache
/// sets instead of all falling into the few sets of one page offset.
fn linked_cycle(slots: usize, slot_words: usize, rng: &mut XorShift) -> (Vec<usize>, usize) {
    let mut memory = vec![0usize; slots * slot_words];
    let visited: Vec<usize> = (0..slots)
        .map(|slot| slot * slot_words + rng.below(slot_words / LINE_WORDS) * LINE_WORDS)
        .collect();
    let mut order: Vec<usize> = (0..slots).collect();
    for i in (1..slots).rev() {
        order.swap(i, rng.below(i + 1));
    }
    for k in 0..slots {
        memory[visited[order[k]]] = visited[order[(k + 1) % slots]];
    }
    (memory, visited[order[0]])
}

fn chase(memory: &[usize], start: usize, steps: usize) -> usize {
    let mut at = start;
    for _ in 0..steps {
        at = memory[at];
    }
    black_box(at)
}

/// Nanoseconds per step, the best of `rounds` rounds of `steps` steps, after one
/// warm-up lap of the whole cycle.
#[pyfunction]
#[pyo3(signature = (slots, slot_bytes=4096, steps=1_000_000, rounds=3, seed=0x9E37_79B9_7F4A_7C15))]
pub fn chase_ns(
    py: Python<'_>,
    slots: usize,
    slot_bytes: usize,
    steps: usize,
    rounds: usize,
    seed: u64,
) -> PyResult<f64> {
    if slots < 2 || steps == 0 || rounds == 0 || slot_bytes < 64 || !slot_bytes.is_multiple_of(64) {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "chase_ns needs slots >= 2, slot_bytes a multiple of 64, steps and rounds >= 1",
        ));
    }
    Ok(py.allow_threads(|| {
        let mut rng = XorShift(seed | 1);
        let (memory, start) = linked_cycle(slots, slot_bytes / WORD, &mut rng);
        let mut at = chase(&memory, start, slots);
        let mut best = f64::INFINITY;
        for _ in 0..rounds {
            let began = Instant::now();
            at = chase(&memory, at, steps);
            best = best.min(began.elapsed().as_nanos() as f64 / steps as f64);
        }
        best
    }))
}
