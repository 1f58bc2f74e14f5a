//! A decoded pprof's samples grouped into the rows of its windows: one group per
//! (profile type read, user label set), in it one row per (stack, thread) with its
//! summed value and sample count (formats/wire/window_pprof.py `_Reader.windows`).
//!
//! Why this is native code (measured on bench/fleet_sim.py's windows, 150 samples
//! of 2 label sets): the Python loop over every sample and profile type took ~0.17
//! CPU-ms a push, the largest Python part of decoding a fleet window's pprof. Its
//! label sets, threads and types are still read and checked in Python, once each.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rustc_hash::FxHashMap as HashMap;

/// One group's rows, in the order they first appear.
#[derive(Default)]
struct Group {
    threads: Vec<i64>, // the thread keys of its rows, in the order they first appear
    thread_at: HashMap<i64, i64>,
    row_at: HashMap<(u32, i64), usize>,
    stacks: Vec<u32>,
    row_threads: Vec<i64>,
    weights: Vec<i128>,
    counts: Vec<i128>,
}

impl Group {
    fn add(&mut self, stack: u32, thread: i64, weight: i64, count: i64) {
        let t = if thread < 0 {
            -1
        } else {
            let next = self.threads.len() as i64;
            let t = *self.thread_at.entry(thread).or_insert(next);
            if t == next {
                self.threads.push(thread);
            }
            t
        };
        let next = self.stacks.len();
        let row = *self.row_at.entry((stack, t)).or_insert(next);
        if row == next {
            self.stacks.push(stack);
            self.row_threads.push(t);
            self.weights.push(0);
            self.counts.push(0);
        }
        self.weights[row] += i128::from(weight);
        self.counts[row] += i128::from(count);
    }
}

/// A view's sample count in `sample` (a sample's values): its count value, else for
/// a time its samples at `ns_per_sample` (rounded as Python's round(), at least 1
/// when the time is not 0), else 1.
fn count(sample: &[i64], value: usize, count_at: i64, timed: bool, ns_per_sample: f64) -> i64 {
    match usize::try_from(count_at) {
        Ok(c) => sample[c],
        Err(_) if timed => {
            let samples = (sample[value] as f64 / ns_per_sample).round_ties_even() as i64;
            samples.max(i64::from(sample[value] != 0))
        }
        Err(_) => 1,
    }
}

/// One window's rows: (view, labels key, thread keys, row stacks, row threads
/// (indices into its thread keys, -1 none), values, counts).
type Rows = (
    usize,
    usize,
    Vec<i64>,
    Vec<u32>,
    Vec<i64>,
    Vec<i128>,
    Vec<i128>,
);

/// The samples (`sample_stack`, `sample_set`: each one's label set; `values`,
/// `width` a sample) grouped per (view, labels key) in the order they first appear.
/// `views`: (value index, count index or -1, timed); `sets`: each label set's
/// (labels key, thread key or -1).
#[pyfunction]
pub(crate) fn group_samples(
    sample_stack: Vec<u32>,
    sample_set: Vec<usize>,
    values: Vec<i64>,
    width: usize,
    views: Vec<(usize, i64, bool)>,
    ns_per_sample: f64,
    sets: Vec<(usize, i64)>,
) -> PyResult<Vec<Rows>> {
    let n = sample_stack.len();
    let fits = sample_set.len() == n
        && values.len() == n * width
        && views.iter().all(|&(v, c, _)| v < width && c < width as i64)
        && sample_set.iter().all(|&s| s < sets.len());
    if !fits {
        return Err(PyValueError::new_err("the samples do not fit their types"));
    }
    let mut groups: Vec<(usize, usize, Group)> = Vec::new();
    let mut group_at: HashMap<(usize, usize), usize> = HashMap::default();
    for (i, (&stack, &set)) in sample_stack.iter().zip(&sample_set).enumerate() {
        let (labels, thread) = sets[set];
        let sample = &values[i * width..(i + 1) * width];
        for (v, &(value, count_at, timed)) in views.iter().enumerate() {
            let weight = sample[value];
            let count = count(sample, value, count_at, timed, ns_per_sample);
            let next = groups.len();
            let g = *group_at.entry((v, labels)).or_insert(next);
            if g == next {
                groups.push((v, labels, Group::default()));
            }
            groups[g].2.add(stack, thread, weight, count);
        }
    }
    Ok(groups
        .into_iter()
        .map(|(v, labels, g)| {
            (
                v,
                labels,
                g.threads,
                g.stacks,
                g.row_threads,
                g.weights,
                g.counts,
            )
        })
        .collect())
}
