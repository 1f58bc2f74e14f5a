//! perfsleuth_native: a streaming perf.data reader that returns aggregated stacks.
//!
//! Why this is native code: the obvious pipeline, `perf script | parse text in
//! Python`, is 2-4x slower than `perf report --stdio` on the same file (perf
//! script formats every sample as text, symbolizes every frame again, and the
//! consumer then parses all that text back). perfsleuth must be no slower than
//! `perf report --stdio`, so we read the binary records directly, keep only
//! the bookkeeping perf itself keeps (per-process mmap tables, thread names),
//! and fold every sample into a table of unique (stack, thread) rows on the
//! fly. Memory grows with the number of *distinct* stacks, not with the number
//! of samples. Symbolization happens afterwards, in Python, once per unique
//! (DSO, address) — a few thousand addresses instead of millions of frames.
//!
//! Recordings made with `perf record --call-graph dwarf` carry user registers
//! and a copy of the user stack instead of a user callchain; those are unwound
//! here with `framehop`, using `.eh_frame` / `.debug_frame` read from the DSOs
//! on disk.
//!
//! Modules, one job each:
//! - `header`: magic, pipe-mode and bounds checks before the parser runs;
//! - `reader`: record streaming and aggregation into frames, stacks, rows;
//! - `records`: the records in time order, read in place from a map of the file;
//! - `timeline`: the time order re-keyed by a profile's stacks and threads;
//! - `event_rows`: one event's rows mapped onto a profile's frames and stacks;
//! - `maps`: per-process executable mappings and the DSOs they map;
//! - `unwind`: DWARF unwinding (unwind sections per DSO, unwinder per process);
//! - `kallsyms`: kernel address -> symbol lookup;
//! - `pprof`: the collector's pushed pprof profiles read into columns
//!   (unrelated to the reader);
//! - `pointer_chase`: the cache calibration's timed pointer chases (unrelated
//!   to the reader);
//! - this file: the Python module and the conversion of results to Python.

// pyo3 0.22 macros trigger this lint on #[pyfunction] under newer clippy.
#![allow(clippy::useless_conversion)]

mod columns;
mod event_rows;
mod folded;
mod header;
mod kallsyms;
mod kept;
mod maps;
mod pointer_chase;
mod pprof;
mod reader;
mod records;
mod samples;
mod sigbus;
mod timeline;
mod unwind;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use reader::MetaVal;

/// Read a perf.data file and return aggregated stacks (see the module docs).
///
/// User frame addresses are DSO file offsets; kernel frames keep their
/// absolute address; return addresses (every frame but the leaf) have 1
/// subtracted. Returns a dict; small tables are lists of dicts, the bulk
/// tables (frames, rows: up to millions of entries) are dicts of equally long
/// columns, where entry i of the table is column[i] of every column:
///
/// ```text
/// meta:    dict of header metadata: hostname, osrelease, arch, cpudesc,
///          perf_version, nrcpus_online, nrcpus_avail, cmdline (list of str),
///          build_ids (list of (path, build_id_hex), sorted), kernel_text (when
///          known), lost_samples, num_samples, samples_needing_dwarf,
///          samples_dwarf_unwound
/// events:  [{name: str, kind: str, unit: str, has_callchain: bool, dwarf: bool}]
///          one per event attribute; kind is software, hardware, hw-cache,
///          tracepoint, breakpoint or pmu; unit is "ns" or "events"
/// dsos:    [{path: str, build_id: str (hex, "" if unknown), kernel: bool}]
/// frames:  {dso: [int], address: [int], kernel: [bool]}
///          dso indexes `dsos`, -1 for an address outside every mapping
/// stacks:  [tuple[int, ...]]  frame indices, leaf first
/// threads: [{pid: int, tid: int, comm: str}]
/// rows:    {stack: [int], thread: [int], event: [int], period: [int], count: [int]}
///          one per unique (stack, thread, event); stack indexes `stacks`,
///          thread `threads`, event `events`; period is the sum of the
///          samples' periods, count the number of samples
/// timeline: {row: [int], count: [int], time: [int]}
///          the samples in time order, run-length encoded: count[i] samples in
///          a row of row[i] (indexes `rows`), the first taken at time[i] (ns,
///          perf's clock); empty when the samples carry no time. With
///          `packed_timeline=True` the columns are bytes of native-endian u32,
///          u32 and u64 (array typecodes I, I, Q), which `join_runs` re-keys
///          by a profile's stacks: a million samples make ~250,000 runs
/// ```
///
/// `in_place=False` reads the records through linux-perf-data's iterator, which
/// copies them, instead of in place from a map of the file; the result is the
/// same (the tests compare them), only slower.
///
/// Raises ValueError for files that are not readable perf.data (a panic in
/// the parser included), OSError if the file cannot be opened.
#[pyfunction]
#[pyo3(signature = (path, in_place = true, packed_timeline = false))]
fn read_perf_data(
    py: Python<'_>,
    path: &str,
    in_place: bool,
    packed_timeline: bool,
) -> PyResult<PyObject> {
    let p = path.to_string();
    let out = py.allow_threads(move || {
        // A corrupt file must give an error, never a crash: turn panics in the
        // parser into errors (silently: the caller reports them).
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let res = std::panic::catch_unwind(|| reader::read_file(&p, in_place));
        std::panic::set_hook(prev);
        res.unwrap_or_else(|_| Err("corrupt perf.data (the reader failed on it)".into()))
    });
    let out = match out {
        Ok(o) => o,
        Err(e) if e.starts_with("cannot open") => return Err(PyOSError::new_err(e)),
        Err(e) => return Err(PyValueError::new_err(e)),
    };
    let d = PyDict::new_bound(py);

    let meta = PyDict::new_bound(py);
    for (k, v) in out.meta {
        match v {
            MetaVal::Str(s) => meta.set_item(k, s)?,
            MetaVal::Int(i) => meta.set_item(k, i)?,
            MetaVal::List(l) => meta.set_item(k, l)?,
            MetaVal::Pairs(p) => meta.set_item(k, p)?,
        }
    }
    d.set_item("meta", meta)?;

    let events = PyList::empty_bound(py);
    for e in out.events {
        let x = PyDict::new_bound(py);
        x.set_item(intern!(py, "name"), e.name)?;
        x.set_item(intern!(py, "kind"), e.kind)?;
        x.set_item(intern!(py, "unit"), e.unit)?;
        x.set_item(intern!(py, "has_callchain"), e.has_callchain)?;
        x.set_item(intern!(py, "dwarf"), e.dwarf)?;
        events.append(x)?;
    }
    d.set_item("events", events)?;

    let dsos = PyList::empty_bound(py);
    for s in out.dsos {
        let x = PyDict::new_bound(py);
        x.set_item(intern!(py, "path"), s.path)?;
        x.set_item(intern!(py, "build_id"), s.build_id)?;
        x.set_item(intern!(py, "kernel"), s.kernel)?;
        dsos.append(x)?;
    }
    d.set_item("dsos", dsos)?;

    let frames = PyDict::new_bound(py);
    frames.set_item("dso", out.frames.dso)?;
    frames.set_item("address", out.frames.address)?;
    frames.set_item("kernel", out.frames.kernel)?;
    d.set_item("frames", frames)?;

    let stacks = PyList::empty_bound(py);
    for s in &out.stacks {
        stacks.append(PyTuple::new_bound(py, s))?;
    }
    d.set_item("stacks", stacks)?;

    let threads = PyList::empty_bound(py);
    for t in out.threads {
        let x = PyDict::new_bound(py);
        x.set_item(intern!(py, "pid"), t.pid)?;
        x.set_item(intern!(py, "tid"), t.tid)?;
        x.set_item(intern!(py, "comm"), t.comm)?;
        threads.append(x)?;
    }
    d.set_item("threads", threads)?;

    let rows = PyDict::new_bound(py);
    rows.set_item("stack", out.rows.stack)?;
    rows.set_item("thread", out.rows.thread)?;
    rows.set_item("event", out.rows.event)?;
    rows.set_item("period", out.rows.period)?;
    rows.set_item("count", out.rows.count)?;
    d.set_item("rows", rows)?;

    let timeline = PyDict::new_bound(py);
    if packed_timeline {
        let ne = |b: Vec<u8>| PyBytes::new_bound(py, &b);
        let t = &out.timeline;
        timeline.set_item("row", ne(timeline::ne_bytes(&t.row, u32::to_ne_bytes)))?;
        timeline.set_item("count", ne(timeline::ne_bytes(&t.count, u32::to_ne_bytes)))?;
        timeline.set_item("time", ne(timeline::ne_bytes(&t.time, u64::to_ne_bytes)))?;
    } else {
        timeline.set_item("row", out.timeline.row)?;
        timeline.set_item("count", out.timeline.count)?;
        timeline.set_item("time", out.timeline.time)?;
    }
    d.set_item("timeline", timeline)?;
    Ok(d.into_any().unbind())
}

/// Look kernel addresses up in a kallsyms file (e.g. /proc/kallsyms).
///
/// Returns a dict of the address of `_text` and two columns as long as `addrs`:
///
/// ```text
/// text_addr: int or None   address of _text, None when the file lacks it
/// name:      [str or None]  the text symbol at or below each address,
///                           None when the address is below every symbol
/// module:    [str or None]  its module, "" for the kernel image, None with name
/// ```
///
/// Raises OSError when the file cannot be read.
#[pyfunction]
fn kallsyms_lookup(py: Python<'_>, path: &str, addrs: Vec<u64>) -> PyResult<PyObject> {
    let p = path.to_string();
    let found = py
        .allow_threads(move || kallsyms::lookup(&p, &addrs))
        .map_err(|e| PyOSError::new_err(e.to_string()))?;
    let d = PyDict::new_bound(py);
    d.set_item("text_addr", found.text_addr)?;
    d.set_item("name", found.name)?;
    d.set_item("module", found.module)?;
    Ok(d.into_any().unbind())
}

#[pymodule]
fn perfsleuth_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_perf_data, m)?)?;
    m.add_function(wrap_pyfunction!(kallsyms_lookup, m)?)?;
    m.add_function(wrap_pyfunction!(timeline::join_runs, m)?)?;
    m.add_class::<event_rows::EventRows>()?;
    m.add_function(wrap_pyfunction!(pprof::decode_pprof, m)?)?;
    m.add_function(wrap_pyfunction!(columns::window_columns, m)?)?;
    m.add_function(wrap_pyfunction!(folded::decode_folded, m)?)?;
    m.add_function(wrap_pyfunction!(samples::group_samples, m)?)?;
    m.add_function(wrap_pyfunction!(pointer_chase::chase_ns, m)?)?;
    m.add_function(wrap_pyfunction!(pointer_chase::chase_pages_ns, m)?)?;
    m.add_function(wrap_pyfunction!(pointer_chase::chase_aliased_ns, m)?)?;
    m.add_function(wrap_pyfunction!(pointer_chase::chase_walks_ns, m)?)?;
    Ok(())
}
