//! The reader's time order re-keyed by the caller's stacks and threads.
//!
//! The reader's timeline names rows (unique stack, thread, event); the profile
//! built from them can give several rows one stack (two addresses of one line)
//! and drops another event's rows. Joining the runs again was a Python loop
//! over every run (250,000 for a million samples), a twentieth of `import`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

type Columns<'py> = (
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
);

/// Join a timeline of rows (read_perf_data's: native-endian u32 rows, u32
/// counts, u64 times) onto stacks and threads: run i moves to
/// (stack_of_row[row], thread_of_row[row]), a row whose stack is -1 is
/// dropped, and runs on the same stack and thread in a row become one (the
/// count of both, the time of the first).
///
/// Returns the columns (stack i32, thread i32, count u32, time u64) as
/// native-endian bytes, for `array.frombytes`. Raises ValueError for columns
/// of different lengths or a row past `stack_of_row`.
#[pyfunction]
pub(crate) fn join_runs<'py>(
    py: Python<'py>,
    row: &[u8],
    count: &[u8],
    time: &[u8],
    stack_of_row: Vec<i32>,
    thread_of_row: Vec<i32>,
) -> PyResult<Columns<'py>> {
    let n = row.len() / 4;
    if !row.len().is_multiple_of(4) || count.len() != 4 * n || time.len() != 8 * n {
        return Err(PyValueError::new_err(
            "timeline columns of different lengths",
        ));
    }
    // the columns written as bytes as they go (see ne_bytes)
    let mut stacks: Vec<u8> = Vec::with_capacity(4 * n);
    let mut threads: Vec<u8> = Vec::with_capacity(4 * n);
    let mut counts: Vec<u32> = Vec::with_capacity(n);
    let mut times: Vec<u8> = Vec::with_capacity(8 * n);
    let mut last: Option<(i32, i32)> = None;
    let runs = row
        .chunks_exact(4)
        .zip(count.chunks_exact(4))
        .zip(time.chunks_exact(8));
    for ((r, c), t) in runs {
        let r = u32::from_ne_bytes(r.try_into().unwrap_or_default()) as usize;
        let c = u32::from_ne_bytes(c.try_into().unwrap_or_default());
        let (Some(&stack), Some(&thread)) = (stack_of_row.get(r), thread_of_row.get(r)) else {
            return Err(PyValueError::new_err("a timeline row past the rows given"));
        };
        if stack < 0 {
            continue;
        }
        if last == Some((stack, thread)) {
            if let Some(joined) = counts.last_mut() {
                *joined = joined.saturating_add(c);
            }
            continue;
        }
        last = Some((stack, thread));
        stacks.extend_from_slice(&stack.to_ne_bytes());
        threads.extend_from_slice(&thread.to_ne_bytes());
        counts.push(c);
        times.extend_from_slice(t);
    }
    Ok((
        PyBytes::new_bound(py, &stacks),
        PyBytes::new_bound(py, &threads),
        PyBytes::new_bound(py, &ne_bytes(&counts, u32::to_ne_bytes)),
        PyBytes::new_bound(py, &times),
    ))
}

/// VALUES as native-endian bytes, for `array.frombytes`. Collected through `flat_map`,
/// a byte at a time into a vector of unknown size, the bench's timeline (340,000 runs,
/// three columns) took some milliseconds.
pub(crate) fn ne_bytes<T: Copy, const N: usize>(values: &[T], bytes: fn(T) -> [u8; N]) -> Vec<u8> {
    let mut out = Vec::with_capacity(N * values.len());
    for &v in values {
        out.extend_from_slice(&bytes(v));
    }
    out
}
