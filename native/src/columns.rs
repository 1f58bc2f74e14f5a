//! A fleet window's rows of the store's three tables (samples, stacks, frames) as
//! Python columns, and the same columns as the JSON text of the head's log record
//! (store/fleet/writer.py `window_record`, wal.py `encode`).
//!
//! Why this is native code (measured on bench/fleet_sim.py's windows: 150 sample
//! rows, 150 stacks of 18 frames, 195 frames): in Python, building the columns
//! took ~0.24 CPU-ms a window and orjson's dump of them ~0.08, together a seventh
//! of a fleet push's collector CPU, one Python step per row, stack and frame.
//! Here a frame's id, its column values and their JSON are kept across windows
//! (a fleet sends the same frame objects, push after push), as are a stack's id
//! and JSON, so a window is its rows' arithmetic and copies of kept text.
//! Ids missing from the caches are asked of Python (store/fleet/layout.py
//! `frame_id`, `stack_id`): one definition of an id.

use std::fmt::Write;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyList, PyLong, PyString, PyTuple};
use rustc_hash::FxHashMap as HashMap;

use crate::kept::Kept;

const FRAME_COLUMNS: [&str; 9] = [
    "frame_id", "function", "dso", "file", "line", "inlined", "kernel", "build_id", "address",
];

/// A frame as its columns' values (frame_id first) and their JSON.
struct FrameEntry {
    frame: Py<PyAny>, // kept alive: its address is its key
    id: i64,
    values: [Py<PyAny>; 9],
    json: [String; 9],
}

struct StackEntry {
    id: Py<PyAny>,
    id_json: String,
    frame_ids: Py<PyTuple>,
    json: String,
}

/// Frames by their object, stacks by their frame ids.
static FRAMES: Kept<usize, Arc<FrameEntry>> = Kept::new(1 << 18, 128 << 20);
static STACKS: Kept<Vec<i64>, Arc<StackEntry>> = Kept::new(1 << 18, 128 << 20);

/// A value's JSON as orjson writes it (str, bool, int, None, float).
fn json_value(out: &mut String, value: &Bound<'_, PyAny>) -> PyResult<()> {
    if value.is_none() {
        out.push_str("null");
    } else if let Ok(b) = value.downcast::<PyBool>() {
        out.push_str(if b.is_true() { "true" } else { "false" });
    } else if let Ok(s) = value.downcast::<PyString>() {
        json_str(out, s.to_str()?);
    } else if value.is_instance_of::<PyLong>() {
        let _ = write!(out, "{}", value.extract::<i64>()?);
    } else if let Ok(f) = value.downcast::<PyFloat>() {
        let v = f.value();
        if !v.is_finite() {
            return Err(PyValueError::new_err(
                "a column value is not a finite number",
            ));
        }
        let _ = write!(out, "{v:?}");
    } else {
        let kind = value.get_type().name()?.to_string();
        return Err(PyValueError::new_err(format!(
            "a column value of type {kind}"
        )));
    }
    Ok(())
}

/// A JSON string as orjson writes it: UTF-8 as is, `"`, `\` and control characters escaped.
fn json_str(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escaped = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if escaped.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(escaped);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

fn json_of(value: &Bound<'_, PyAny>) -> PyResult<String> {
    let mut out = String::new();
    json_value(&mut out, value)?;
    Ok(out)
}

fn frame_entry(frame: &Bound<'_, PyAny>, frame_id: &Bound<'_, PyAny>) -> PyResult<FrameEntry> {
    let py = frame.py();
    let id_obj = frame_id.call1((frame,))?;
    let id: i64 = id_obj.extract()?;
    let get = |name: &Bound<'_, PyString>| frame.getattr(name);
    let build_id = get(intern!(py, "build_id"))?;
    let symbolized = !build_id.is_truthy()?;
    let none = py.None().into_bound(py);
    let values = [
        id_obj,
        get(intern!(py, "function"))?,
        get(intern!(py, "dso"))?,
        get(intern!(py, "file"))?,
        get(intern!(py, "line"))?,
        get(intern!(py, "inlined"))?,
        get(intern!(py, "kernel"))?,
        if symbolized { none.clone() } else { build_id },
        if symbolized {
            none
        } else {
            get(intern!(py, "address"))?
        },
    ];
    let mut json: [String; 9] = Default::default();
    for (text, value) in json.iter_mut().zip(&values) {
        *text = json_of(value)?;
    }
    Ok(FrameEntry {
        frame: frame.clone().unbind(),
        id,
        values: values.map(Bound::unbind),
        json,
    })
}

fn stack_entry(py: Python<'_>, ids: &[i64], stack_id: &Bound<'_, PyAny>) -> PyResult<StackEntry> {
    let frame_ids = PyTuple::new_bound(py, ids);
    let id = stack_id.call1((&frame_ids,))?;
    let mut json = String::from("[");
    for (i, v) in ids.iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        let _ = write!(json, "{v}");
    }
    json.push(']');
    Ok(StackEntry {
        id_json: json_of(&id)?,
        id: id.unbind(),
        frame_ids: frame_ids.unbind(),
        json,
    })
}

/// The kept entries of `frames` (indices into the profile's frames), made where missing.
fn frame_entries(
    frames: &Bound<'_, PyList>,
    used: &[usize],
    frame_id: &Bound<'_, PyAny>,
) -> PyResult<Vec<Arc<FrameEntry>>> {
    let objects = used
        .iter()
        .map(|&f| frames.get_item(f))
        .collect::<PyResult<Vec<_>>>()?;
    let kept = FRAMES.get::<usize>(objects.iter().map(|o| o.as_ptr() as usize));
    let mut found: Vec<Option<Arc<FrameEntry>>> = kept
        .into_iter()
        .zip(&objects)
        .map(|(e, o)| e.filter(|e| e.frame.is(o)))
        .collect();
    let mut made = Vec::new();
    for (slot, object) in found.iter_mut().zip(&objects) {
        if slot.is_none() {
            let entry = Arc::new(frame_entry(object, frame_id)?);
            let bytes = 2 * entry.json.iter().map(String::len).sum::<usize>();
            made.push((object.as_ptr() as usize, entry.clone(), bytes));
            *slot = Some(entry);
        }
    }
    FRAMES.keep(made);
    Ok(found.into_iter().flatten().collect())
}

fn stack_entries(
    py: Python<'_>,
    keys: Vec<Vec<i64>>,
    stack_id: &Bound<'_, PyAny>,
) -> PyResult<Vec<Arc<StackEntry>>> {
    let mut found = STACKS.get::<[i64]>(keys.iter().map(Vec::as_slice));
    let mut made = Vec::new();
    for (slot, key) in found.iter_mut().zip(&keys) {
        if slot.is_none() {
            let entry = Arc::new(stack_entry(py, key, stack_id)?);
            let bytes = 56 * key.len() + entry.json.len(); // the key, the ints, the JSON
            made.push((key.clone(), entry.clone(), bytes));
            *slot = Some(entry);
        }
    }
    STACKS.keep(made);
    Ok(found.into_iter().flatten().collect())
}

/// A sample row's value in its unit, rounded as Python's round() does.
fn row_value(weight: &Bound<'_, PyAny>, count: i64, rate_hz: f64) -> PyResult<i64> {
    let value = if rate_hz > 0.0 {
        count as f64 * 1e9 / rate_hz
    } else if weight.is_instance_of::<PyLong>() {
        return weight.extract();
    } else {
        weight.extract::<f64>()?
    };
    let rounded = value.round_ties_even();
    if rounded.is_nan() || rounded.abs() >= 9.2e18 {
        return Err(PyValueError::new_err(format!(
            "a sample's value {value} is out of range"
        )));
    }
    Ok(rounded as i64)
}

fn overflow() -> PyErr {
    PyValueError::new_err("a sample row's total is out of range")
}

/// The window's constants: time (ms), host, service, pid (when a row has none), comm,
/// exe, build_id, cgroup (when its process says none), labels (JSON), type, unit.
#[derive(FromPyObject)]
pub(crate) struct Fixed<'py>(
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
);

struct Row {
    pid: i64,
    comm: usize, // into comms
    stack: usize,
    samples: i64,
    value: i64,
}

/// One Python list and its JSON array, made together.
struct Column<'py> {
    list: Vec<Bound<'py, PyAny>>,
    json: String,
}

impl<'py> Column<'py> {
    fn new() -> Self {
        let mut json = String::with_capacity(4096);
        json.push('[');
        Column {
            list: Vec::new(),
            json,
        }
    }

    fn push(&mut self, value: &Bound<'py, PyAny>, json: &str) {
        if !self.list.is_empty() {
            self.json.push(',');
        }
        self.json.push_str(json);
        self.list.push(value.clone());
    }

    fn int(&mut self, py: Python<'py>, value: i64) {
        let object = value.into_py(py).into_bound(py);
        self.push(&object, &value.to_string());
    }
}

/// Columns of a table into `dict` and their JSON object (`"name":{...}`) onto `json`.
fn table<'py>(
    py: Python<'py>,
    name: &str,
    columns: Vec<(&str, Column<'py>)>,
    json: &mut String,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new_bound(py);
    if !json.is_empty() {
        json.push(',');
    }
    let _ = write!(json, "\"{name}\":{{");
    for (i, (column, values)) in columns.into_iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        let _ = write!(json, "\"{column}\":{}]", values.json);
        dict.set_item(column, PyList::new_bound(py, values.list))?;
    }
    json.push('}');
    Ok(dict)
}

/// One samples row per (pid, comm, stack) of a window's profile, its stacks and frames,
/// as store/fleet/writer.py's WindowColumns: `(samples, stacks, frames, json)` where
/// json is `"samples":{...},"stacks":{...},"frames":{...}`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn window_columns<'py>(
    py: Python<'py>,
    frames: &Bound<'py, PyList>,
    stacks: &Bound<'py, PyList>,
    samples: (Vec<usize>, Vec<Bound<'py, PyAny>>, Vec<i64>, Vec<i64>),
    threads: Vec<(i64, Bound<'py, PyString>)>,
    processes: HashMap<i64, [Bound<'py, PyAny>; 3]>,
    fixed: Fixed<'py>,
    rate_hz: f64,
    ids: (Bound<'py, PyAny>, Bound<'py, PyAny>),
) -> PyResult<Bound<'py, PyTuple>> {
    let (sample_stack, sample_weight, sample_count, sample_thread) = samples;
    let (frame_id, stack_id) = ids;
    // comms by text: threads of one pid with one name are one row, as in Python
    let mut comms: Vec<(String, Bound<'py, PyAny>)> =
        vec![(String::new(), PyString::new_bound(py, "").into_any())];
    let mut comm_of = Vec::with_capacity(threads.len());
    for (_, name) in &threads {
        let text = name.to_str()?;
        let at = match comms.iter().position(|(c, _)| c == text) {
            Some(at) => at,
            None => {
                comms.push((text.to_string(), name.clone().into_any()));
                comms.len() - 1
            }
        };
        comm_of.push(at);
    }
    let n = sample_stack.len();
    if sample_weight.len() != n || sample_count.len() != n || sample_thread.len() != n {
        return Err(PyValueError::new_err("the sample columns differ in length"));
    }
    let mut rows: HashMap<(i64, usize, usize), usize> = HashMap::default();
    let mut table: Vec<Row> = Vec::new();
    for i in 0..n {
        let (stack, count, thread) = (sample_stack[i], sample_count[i], sample_thread[i]);
        if stack >= stacks.len() {
            return Err(PyValueError::new_err(
                "a sample's stack is not in the profile",
            ));
        }
        let (pid, comm) = if thread >= 0 {
            let t = usize::try_from(thread).unwrap_or(usize::MAX);
            let (pid, _) = threads
                .get(t)
                .ok_or_else(|| PyValueError::new_err("a sample's thread is not in the profile"))?;
            (*pid, comm_of[t])
        } else {
            (0, 0)
        };
        let value = row_value(&sample_weight[i], count, rate_hz)?;
        let at = *rows.entry((pid, comm, stack)).or_insert_with(|| {
            table.push(Row {
                pid,
                comm,
                stack,
                samples: 0,
                value: 0,
            });
            table.len() - 1
        });
        let row = &mut table[at];
        row.samples = row.samples.checked_add(count).ok_or_else(overflow)?;
        row.value = row.value.checked_add(value).ok_or_else(overflow)?;
    }
    table.sort_unstable_by(|a, b| {
        (a.pid, &comms[a.comm].0, a.stack).cmp(&(b.pid, &comms[b.comm].0, b.stack))
    });

    // the stacks the rows use, in order, and the frames they use, in order
    let mut used_stacks: Vec<usize> = table.iter().map(|r| r.stack).collect();
    used_stacks.sort_unstable();
    used_stacks.dedup();
    let stack_frames = used_stacks
        .iter()
        .map(|&s| stacks.get_item(s)?.extract::<Vec<usize>>())
        .collect::<PyResult<Vec<_>>>()?;
    let mut used_frames: Vec<usize> = stack_frames.iter().flatten().copied().collect();
    used_frames.sort_unstable();
    used_frames.dedup();
    if used_frames.last().is_some_and(|&f| f >= frames.len()) {
        return Err(PyValueError::new_err(
            "a stack's frame is not in the profile",
        ));
    }
    let frame_entries = frame_entries(frames, &used_frames, &frame_id)?;
    let mut entry_of: HashMap<usize, usize> = HashMap::default();
    for (i, &f) in used_frames.iter().enumerate() {
        entry_of.insert(f, i);
    }
    let keys = stack_frames
        .iter()
        .map(|s| s.iter().map(|f| frame_entries[entry_of[f]].id).collect())
        .collect();
    let stack_entries = stack_entries(py, keys, &stack_id)?;
    let stack_at: HashMap<usize, usize> = used_stacks
        .iter()
        .enumerate()
        .map(|(i, &s)| (s, i))
        .collect();

    let mut json = String::with_capacity(64 * 1024);
    let samples = sample_columns(
        py,
        &table,
        &comms,
        &processes,
        &fixed,
        &stack_entries,
        &stack_at,
    )?;
    let samples = self::table(py, "samples", samples, &mut json)?;
    let mut stack_ids = Column::new();
    let mut frame_id_lists = Column::new();
    for entry in &stack_entries {
        stack_ids.push(entry.id.bind(py), &entry.id_json);
        let list = entry.frame_ids.bind(py).to_list(); // a list of the kept ints
        frame_id_lists.push(list.as_any(), &entry.json);
    }
    let stacks = self::table(
        py,
        "stacks",
        vec![("stack_id", stack_ids), ("frame_ids", frame_id_lists)],
        &mut json,
    )?;
    let mut columns: Vec<(&str, Column)> =
        FRAME_COLUMNS.iter().map(|&c| (c, Column::new())).collect();
    for entry in &frame_entries {
        for (k, (_, column)) in columns.iter_mut().enumerate() {
            column.push(entry.values[k].bind(py), &entry.json[k]);
        }
    }
    let frames = self::table(py, "frames", columns, &mut json)?;
    let json = PyBytes::new_bound(py, json.as_bytes());
    Ok(PyTuple::new_bound(
        py,
        [
            samples.into_any(),
            stacks.into_any(),
            frames.into_any(),
            json.into_any(),
        ],
    ))
}

fn sample_columns<'py>(
    py: Python<'py>,
    table: &[Row],
    comms: &[(String, Bound<'py, PyAny>)],
    processes: &HashMap<i64, [Bound<'py, PyAny>; 3]>,
    fixed: &Fixed<'py>,
    stacks: &[Arc<StackEntry>],
    stack_at: &HashMap<usize, usize>,
) -> PyResult<Vec<(&'static str, Column<'py>)>> {
    let Fixed(time, host, service, default_pid, comm, exe, build_id, cgroup, labels, kind, unit) =
        fixed;
    let default_pid: i64 = default_pid.extract()?;
    let constant = |value: &Bound<'py, PyAny>| -> PyResult<Column<'py>> {
        let text = json_of(value)?;
        let mut column = Column::new();
        for _ in table {
            column.push(value, &text);
        }
        Ok(column)
    };
    // a text column: the row's own value, else the window's (`x or fixed`)
    let own_or = |fallback: &Bound<'py, PyAny>,
                  own: &dyn Fn(&Row) -> Option<Bound<'py, PyAny>>|
     -> PyResult<Column<'py>> {
        let fallback_json = json_of(fallback)?;
        let mut column = Column::new();
        let mut last: Option<(Bound<'py, PyAny>, String)> = None;
        for row in table {
            match own(row) {
                Some(value) if value.is_truthy()? => {
                    if !last.as_ref().is_some_and(|(o, _)| o.is(&value)) {
                        last = Some((value.clone(), json_of(&value)?));
                    }
                    let (object, text) = last.as_ref().expect("set above");
                    column.push(object, text);
                }
                _ => column.push(fallback, &fallback_json),
            }
        }
        Ok(column)
    };
    let process = |k: usize| move |row: &Row| processes.get(&row.pid).map(|p| p[k].clone());
    let mut pids = Column::new();
    let mut stack_ids = Column::new();
    let mut counts = Column::new();
    let mut values = Column::new();
    for row in table {
        pids.int(py, if row.pid != 0 { row.pid } else { default_pid });
        let entry = &stacks[stack_at[&row.stack]];
        stack_ids.push(entry.id.bind(py), &entry.id_json);
        counts.int(py, row.samples);
        values.int(py, row.value);
    }
    Ok(vec![
        ("time", constant(time)?),
        ("host", constant(host)?),
        ("service", constant(service)?),
        ("pid", pids),
        (
            "comm",
            own_or(comm, &|row: &Row| Some(comms[row.comm].1.clone()))?,
        ),
        ("exe", own_or(exe, &process(0))?),
        ("build_id", own_or(build_id, &process(1))?),
        ("cgroup", own_or(cgroup, &process(2))?),
        ("labels", constant(labels)?),
        ("stack_id", stack_ids),
        ("samples", counts),
        ("cpu_ns", values),
        ("type", constant(kind)?),
        ("unit", constant(unit)?),
    ])
}
