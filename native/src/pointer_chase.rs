//! Dependent random loads over one cache line in each of `slots` equal slots of
//! memory (64 B: every line of a dense block; 4 KiB: one line per page). Native
//! because the step being timed is a single load of a few nanoseconds: an
//! interpreter's own ~50 ns per step would hide the difference between a TLB hit
//! and a miss that the calibration looks for.
//!
//! Each step picks its slot from a random number mixed with the value the previous
//! load returned, so the loads cannot overlap, and the slots are visited in random
//! order, not in a fixed cycle: like a program's random accesses (an LRU structure
//! of K entries then misses 1 - K/x of them), where a cycle would make LRU miss
//! every access as soon as it overflows.

use pyo3::prelude::*;
use std::hint::black_box;
use std::time::Instant;

const WORD: usize = std::mem::size_of::<usize>();
const LINE_WORDS: usize = 64 / WORD;
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

struct Chase {
    memory: Vec<usize>,
    slots: usize,
    slot_words: usize,
    line_bits: u32,
}

impl Chase {
    fn new(slots: usize, slot_bytes: usize) -> Self {
        let slot_words = slot_bytes / WORD;
        let mut chase = Chase {
            memory: vec![0; slots * slot_words],
            slots,
            slot_words,
            line_bits: (slot_words / LINE_WORDS).trailing_zeros(),
        };
        // Write every visited line: untouched anonymous memory all reads as one
        // shared zero page. (Non-zero, or the compiler may drop the stores.)
        for slot in 0..slots {
            let at = chase.word(slot);
            chase.memory[at] = 1;
        }
        chase
    }

    /// The word read in `slot`: at a line chosen by a hash of the slot, the same
    /// every visit, so that a sparse chase touches one line per page.
    fn word(&self, slot: usize) -> usize {
        let line = if self.line_bits == 0 {
            0
        } else {
            ((slot as u64).wrapping_mul(GOLDEN) >> (64 - self.line_bits)) as usize
        };
        slot * self.slot_words + line * LINE_WORDS
    }

    fn run(&self, steps: usize, mut state: u64) -> u64 {
        let mut value = 0u64;
        for _ in 0..steps {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let slot = (((state ^ value) as u128 * self.slots as u128) >> 64) as usize;
            value = self.memory[self.word(slot)] as u64;
        }
        black_box(state ^ value)
    }
}

/// Nanoseconds per step, the best of `rounds` rounds of `steps` steps, after a
/// warm-up of twice as many steps as there are slots.
#[pyfunction]
#[pyo3(signature = (slots, slot_bytes=4096, steps=1_000_000, rounds=3, seed=GOLDEN))]
pub fn chase_ns(
    py: Python<'_>,
    slots: usize,
    slot_bytes: usize,
    steps: usize,
    rounds: usize,
    seed: u64,
) -> PyResult<f64> {
    let lines = slot_bytes / 64;
    if slots < 2
        || steps == 0
        || rounds == 0
        || !slot_bytes.is_multiple_of(64)
        || !lines.is_power_of_two()
    {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "chase_ns needs slots >= 2, slot_bytes 64 times a power of two, steps and rounds >= 1",
        ));
    }
    Ok(py.allow_threads(|| {
        let chase = Chase::new(slots, slot_bytes);
        let mut state = chase.run(2 * slots, seed | 1) | 1;
        let mut best = f64::INFINITY;
        for _ in 0..rounds {
            let began = Instant::now();
            state = chase.run(steps, state) | 1;
            best = best.min(began.elapsed().as_nanos() as f64 / steps as f64);
        }
        best
    }))
}
