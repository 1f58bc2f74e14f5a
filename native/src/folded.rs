//! A pushed folded text (`a;b;c 12` lines, root first; or Pyroscope's `lines`, one
//! stack a line) read into the push's distinct frames, stacks and their counts.
//!
//! Why this is native code (measured on bench/fleet_sim.py's windows as folded text,
//! ~50 KB, 150 lines of ~18 names): the Python reader took ~0.3 CPU-ms a push, a
//! sixth of its collector CPU, in per-line and per-name steps. This reader takes
//! only text it is sure the Python reader (formats/wire/pyroscope.py) would accept
//! whole, and reads it the same way; for anything else (a line it would refuse, a
//! control character, a line break other than `\n`, Unicode white space, a push
//! past a limit) it answers None and the Python reader reads the push and says
//! what is wrong.

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use rustc_hash::FxHashMap as HashMap;

use crate::kept::KeptObjects;

const MAX_COUNT_DIGITS: usize = 16;
const MAX_VALUE: u64 = 1 << 53;
const MAX_STACK_DEPTH: usize = 4096;
const MAX_NAME: usize = 16384;
const MAX_PUSH_FRAMES: usize = 1 << 21;
const MAX_PUSH_NEW_FRAMES: usize = 1 << 19;

/// The Frame object of each name (Python's `named_frame`'s), kept across pushes: a
/// fleet sends the same names every window.
static FRAMES: KeptObjects = KeptObjects::new(1 << 17, 64 << 20);

/// Whether the Python reader reads `text` as this one does: no control character
/// but `\n` (no other line break of str.splitlines, no tab), no Unicode white space.
fn plain(text: &str) -> bool {
    let ascii_ok = text.bytes().all(|b| b >= 0x20 || b == b'\n');
    ascii_ok && (text.is_ascii() || !text.chars().any(|c| !c.is_ascii() && c.is_whitespace()))
}

/// A line's stack text and count, as pyroscope._folded_line reads them; None when
/// it would refuse the line.
fn folded_line(line: &str) -> Option<(&str, u64)> {
    let (stack, raw) = line.trim_end_matches(' ').rsplit_once(' ')?;
    if stack.is_empty()
        || raw.is_empty()
        || raw.len() > MAX_COUNT_DIGITS
        || !raw.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let count: u64 = raw.parse().ok()?;
    (count <= MAX_VALUE).then_some((stack, count))
}

struct Read<'a> {
    names: Vec<&'a str>,
    stacks: Vec<Vec<u32>>,
    counts: Vec<u64>,
}

fn read(text: &str, per_sample: bool) -> Option<Read<'_>> {
    if !plain(text) {
        return None;
    }
    let mut name_ids: HashMap<&str, u32> = HashMap::default();
    let mut names = Vec::new();
    let mut stack_ids: HashMap<Vec<u32>, u32> = HashMap::default();
    let mut stacks = Vec::new();
    let mut counts: Vec<u64> = Vec::new();
    let mut used = 0usize;
    let mut stack = Vec::new();
    for line in text.split('\n') {
        if line.trim_matches(' ').is_empty() {
            continue;
        }
        let (text, count) = if per_sample {
            (line.trim_end_matches(' '), 1)
        } else {
            folded_line(line)?
        };
        stack.clear();
        for name in text.split(';') {
            if name.len() > MAX_NAME {
                return None;
            }
            let next = names.len() as u32;
            let id = *name_ids.entry(name).or_insert(next);
            if id == next {
                names.push(name);
            }
            stack.push(id);
        }
        if stack.len() > MAX_STACK_DEPTH {
            return None;
        }
        used += stack.len();
        if used > MAX_PUSH_FRAMES {
            return None;
        }
        stack.reverse(); // leaf first
        let next = stacks.len() as u32;
        let id = *stack_ids.entry(stack.clone()).or_insert(next);
        if id == next {
            stacks.push(stack.clone());
            counts.push(0);
        }
        let total = &mut counts[id as usize];
        *total = total.checked_add(count)?;
    }
    (names.len() <= MAX_PUSH_NEW_FRAMES).then_some(Read {
        names,
        stacks,
        counts,
    })
}

fn frames<'py>(
    py: Python<'py>,
    names: &[&str],
    named_frame: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    FRAMES.objects(py, names, 3, |i| {
        Ok(named_frame.call1((names[i],))?.unbind())
    })
}

/// `(frames, stacks, counts)` of a folded text (`per_sample`: Pyroscope's `lines`):
/// the Frame (`named_frame(name)`) of each distinct name in the order they first
/// appear, each distinct stack (frame indices, leaf first) in the order it first
/// appears, and its total count; None when the Python reader must read it.
#[pyfunction]
pub(crate) fn decode_folded<'py>(
    py: Python<'py>,
    data: &[u8],
    per_sample: bool,
    named_frame: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let Some(read) = std::str::from_utf8(data)
        .ok()
        .and_then(|text| read(text, per_sample))
    else {
        return Ok(None);
    };
    let frames = frames(py, &read.names, named_frame)?;
    let stacks = PyList::new_bound(py, read.stacks.iter().map(|s| PyTuple::new_bound(py, s)));
    let counts = PyList::new_bound(py, &read.counts);
    Ok(Some(PyTuple::new_bound(
        py,
        [frames.into_any(), stacks.into_any(), counts.into_any()],
    )))
}
