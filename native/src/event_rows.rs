//! One event's rows of `read_perf_data` mapped onto a profile (formats/perf_data.py
//! `_NativeReading`): the frames its samples hold and in how many samples, the
//! weight of each leaf frame, and its stacks re-keyed by the profile's frames with
//! the rows summed per (stack, thread).
//!
//! Why this is native code (measured on the bench's perf.data of 1.1M samples:
//! 10,490 rows, 8,720 stacks of ~90,000 frames, load 5): those were Python loops
//! over every row and every frame of every stack, frame_samples 0.010-0.015,
//! add_samples 0.03-0.045 and leaf_costs 0.005-0.008 CPU-s of `import`'s ~0.65.
//! The results come in the order the Python loops gave them, the per-row `set` of a
//! stack's frames included, so that a run's frame and stack ids do not change.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use rustc_hash::FxHashMap as HashMap;

/// A row of read_perf_data's `rows` table.
struct Row {
    stack: u32,
    thread: u32,
    event: u32,
    period: u64,
    count: u64,
}

/// The stacks and rows of a perf.data reading, with the event a profile is made of.
#[pyclass(module = "perfsleuth_native")]
pub(crate) struct EventRows {
    stacks: Vec<Vec<u32>>,
    rows: Vec<Row>,
    event: u32,
}

/// The profile's side of `EventRows.expand`: its stacks, where each row went, and
/// the rows summed per (stack, thread).
type Expanded<'py> = (
    Bound<'py, PyList>,
    Vec<i64>,
    Vec<i64>,
    (Vec<u32>, Vec<i64>, Vec<f64>, Vec<u64>),
);

#[pymethods]
impl EventRows {
    /// read_perf_data's `stacks` and the columns of its `rows` (stack, thread, event,
    /// period, count), for the rows of event `event_index`. Raises ValueError for columns of
    /// different lengths or a row whose stack is not in `stacks`.
    #[new]
    fn new(
        stacks: Vec<Vec<u32>>,
        stack: Vec<u32>,
        thread: Vec<u32>,
        event: Vec<u32>,
        period: Vec<u64>,
        count: Vec<u64>,
        event_index: u32,
    ) -> PyResult<Self> {
        let n = stack.len();
        if [thread.len(), event.len(), period.len(), count.len()] != [n; 4] {
            return Err(PyValueError::new_err("rows: columns of different lengths"));
        }
        if stack.iter().any(|&s| s as usize >= stacks.len()) {
            return Err(PyValueError::new_err("rows: a stack past the stacks given"));
        }
        let rows = (0..n)
            .map(|i| Row {
                stack: stack[i],
                thread: thread[i],
                event: event[i],
                period: period[i],
                count: count[i],
            })
            .collect();
        Ok(EventRows {
            stacks,
            rows,
            event: event_index,
        })
    }

    /// The frames of the event's stacks and per frame the samples whose stack holds
    /// it (once however often it holds it): (frames, samples), the frames in the
    /// order first seen, row by row, each row's frames in the order of Python's
    /// `set` of them.
    fn frame_samples(&self) -> (Vec<u32>, Vec<u64>) {
        let mut at: HashMap<u32, usize> = HashMap::default();
        let (mut frames, mut samples) = (Vec::new(), Vec::new());
        let mut distinct = PySetOrder::default();
        for row in self.rows.iter().filter(|r| r.event == self.event) {
            for &fid in distinct.of(&self.stacks[row.stack as usize]) {
                let i = *at.entry(fid).or_insert_with(|| {
                    frames.push(fid);
                    samples.push(0);
                    frames.len() - 1
                });
                samples[i] += row.count;
            }
        }
        (frames, samples)
    }

    /// Per leaf frame of the event's stacks its weight (the rows' counts, or their
    /// periods when `count_weights` is false), summed in row order as floats:
    /// (frames in the order first seen, weights).
    fn leaf_weights(&self, count_weights: bool) -> (Vec<u32>, Vec<f64>) {
        let mut at: HashMap<u32, usize> = HashMap::default();
        let (mut leaves, mut weights) = (Vec::new(), Vec::<f64>::new());
        for row in self.rows.iter().filter(|r| r.event == self.event) {
            let Some(&leaf) = self.stacks[row.stack as usize].first() else {
                continue;
            };
            let weight = (if count_weights { row.count } else { row.period }) as f64;
            match at.get(&leaf) {
                Some(&i) => weights[i] += weight,
                None => {
                    at.insert(leaf, leaves.len());
                    leaves.push(leaf);
                    weights.push(weight);
                }
            }
        }
        (leaves, weights)
    }

    /// The event's stacks with each frame replaced by `chains[frame]` (the profile's
    /// frame ids, inlined first), interned in the order first seen; `threads` maps a
    /// reading's thread to the profile's. Returns (stacks as tuples, per row its
    /// profile stack and thread (-1, -1 for another event's row), and the rows summed
    /// per (stack, thread) in the order first seen: stacks, threads, weights (counts,
    /// or periods when `count_weights` is false, as floats), counts). Raises
    /// ValueError for a frame without a chain or a thread past `threads`.
    fn expand<'py>(
        &self,
        py: Python<'py>,
        chains: HashMap<u32, Vec<u32>>,
        threads: Vec<i64>,
        count_weights: bool,
    ) -> PyResult<Expanded<'py>> {
        let mut stack_of: HashMap<u32, u32> = HashMap::default();
        let mut stack_ids: HashMap<Vec<u32>, u32> = HashMap::default();
        let mut stacks: Vec<Vec<u32>> = Vec::new();
        let (mut row_stack, mut row_thread) = (Vec::new(), Vec::new());
        let mut sum_at: HashMap<(u32, i64), usize> = HashMap::default();
        let mut sums = (Vec::new(), Vec::new(), Vec::<f64>::new(), Vec::<u64>::new());
        for row in &self.rows {
            if row.event != self.event {
                row_stack.push(-1);
                row_thread.push(-1);
                continue;
            }
            let stack = match stack_of.get(&row.stack) {
                Some(&s) => s,
                None => {
                    let mut ids = Vec::new();
                    for fid in &self.stacks[row.stack as usize] {
                        let chain = chains.get(fid).ok_or_else(|| {
                            PyValueError::new_err(format!("frame {fid} has no chain"))
                        })?;
                        ids.extend_from_slice(chain);
                    }
                    let s = match stack_ids.get(&ids) {
                        Some(&s) => s,
                        None => {
                            let s = stacks.len() as u32;
                            stack_ids.insert(ids.clone(), s);
                            stacks.push(ids);
                            s
                        }
                    };
                    stack_of.insert(row.stack, s);
                    s
                }
            };
            let thread = *threads
                .get(row.thread as usize)
                .ok_or_else(|| PyValueError::new_err("rows: a thread past the threads given"))?;
            let weight = (if count_weights { row.count } else { row.period }) as f64;
            match sum_at.get(&(stack, thread)) {
                Some(&i) => {
                    sums.2[i] += weight;
                    sums.3[i] += row.count;
                }
                None => {
                    sum_at.insert((stack, thread), sums.0.len());
                    sums.0.push(stack);
                    sums.1.push(thread);
                    sums.2.push(weight);
                    sums.3.push(row.count);
                }
            }
            row_stack.push(i64::from(stack));
            row_thread.push(thread);
        }
        let tuples = PyList::empty_bound(py);
        for s in &stacks {
            tuples.append(PyTuple::new_bound(py, s))?;
        }
        Ok((tuples, row_stack, row_thread, sums))
    }
}

/// The order CPython's `set(items)` iterates a tuple of non-negative ints in (the
/// hash of such an int is itself): an open-addressed table of 8 slots probed 10 at a
/// time then by perturbation, grown to 4x the items when 3/5 full (Objects/setobject.c,
/// the same from 3.11 on; tests/unit/test_event_rows.py compares it with `set`).
#[derive(Default)]
struct PySetOrder {
    table: Vec<Option<u32>>,
    out: Vec<u32>,
}

const LINEAR_PROBES: usize = 9;
const PERTURB_SHIFT: u32 = 5;
const MIN_SIZE: usize = 8;

impl PySetOrder {
    fn of(&mut self, items: &[u32]) -> &[u32] {
        self.table.clear();
        self.table.resize(MIN_SIZE, None);
        let (mut fill, mut used) = (0usize, 0usize);
        for &x in items {
            let mask = self.table.len() - 1;
            if Self::slot_of(&self.table, x).is_some() {
                continue;
            }
            let at = Self::free_slot(&self.table, x);
            self.table[at] = Some(x);
            fill += 1;
            used += 1;
            if fill * 5 >= mask * 3 {
                self.resize(if used > 50_000 { used * 2 } else { used * 4 });
                fill = used;
            }
        }
        self.out.clear();
        self.out.extend(self.table.iter().flatten());
        &self.out
    }

    /// The probe sequence of `hash` in a table of `mask + 1` slots, calling `visit`
    /// on each slot until it returns Some.
    fn probe<T>(mask: usize, hash: usize, mut visit: impl FnMut(usize) -> Option<T>) -> T {
        let (mut i, mut perturb) = (hash & mask, hash);
        loop {
            let probes = if i + LINEAR_PROBES <= mask {
                LINEAR_PROBES
            } else {
                0
            };
            for j in 0..=probes {
                if let Some(found) = visit(i + j) {
                    return found;
                }
            }
            perturb >>= PERTURB_SHIFT;
            i = (i * 5 + 1 + perturb) & mask;
        }
    }

    /// Where `x` is, if it is in the table (the probe stops at the first empty slot).
    fn slot_of(table: &[Option<u32>], x: u32) -> Option<usize> {
        Self::probe(table.len() - 1, x as usize, |at| match table[at] {
            None => Some(None),
            Some(y) if y == x => Some(Some(at)),
            Some(_) => None,
        })
    }

    /// The first empty slot of `x`'s probe sequence.
    fn free_slot(table: &[Option<u32>], x: u32) -> usize {
        Self::probe(table.len() - 1, x as usize, |at| {
            table[at].is_none().then_some(at)
        })
    }

    fn resize(&mut self, min_used: usize) {
        let mut size = MIN_SIZE;
        while size <= min_used {
            size <<= 1;
        }
        let old = std::mem::replace(&mut self.table, vec![None; size]);
        for x in old.into_iter().flatten() {
            let at = Self::free_slot(&self.table, x);
            self.table[at] = Some(x);
        }
    }
}
