//! A pushed pprof (profile.proto, inflated) read into the columns the collector
//! stores: distinct frames, distinct stacks of frame indices, per-sample
//! stack, label set and values.
//!
//! Why this is native code (measured on bench/fleet_sim.py's windows, 912
//! samples in 64 pprof samples of ~15 locations each): the Python reader over
//! the protobuf objects took ~4 ms of a push's ~5 ms of decoding and table
//! building, one Python step per location of every sample. Here the message is
//! read once from its bytes and every check the Python reader made is made on
//! the way, with the same messages; Python is left one step per distinct
//! frame, stack and label set.

use std::fmt::Write;

use rustc_hash::FxHashMap as HashMap;

use crate::kept::KeptObjects;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

const MAX_STACK_DEPTH: usize = 4096;
const MAX_NAME: usize = 16384;
const MAX_VALUE: i64 = 1 << 53;

/// The Frame object of each frame's fields (frame_key), kept across pushes: the
/// store's writer keeps a frame's id by the object (columns.rs), and making each
/// frame's 8 fields Python values for Python to look up took ~0.05 CPU-ms of a fleet
/// window.
static FRAME_OBJECTS: KeptObjects = KeptObjects::new(1 << 17, 64 << 20);

type Res<T> = Result<T, String>;

fn bad(what: String) -> String {
    format!("bad pprof profile: {what}")
}

fn malformed() -> String {
    "not a valid pprof profile (malformed protobuf)".to_string()
}

/// Protobuf wire format over a byte slice.
struct Wire<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Wire<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Wire { buf, at: 0 }
    }

    fn done(&self) -> bool {
        self.at >= self.buf.len()
    }

    fn varint(&mut self) -> Res<u64> {
        let mut value: u64 = 0;
        for shift in (0..70).step_by(7) {
            let byte = *self.buf.get(self.at).ok_or_else(malformed)?;
            self.at += 1;
            if shift < 64 {
                value |= u64::from(byte & 0x7f) << shift;
            }
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(malformed())
    }

    fn key(&mut self) -> Res<(u64, u8)> {
        let key = self.varint()?;
        let field = key >> 3;
        if field == 0 {
            return Err(malformed());
        }
        Ok((field, (key & 7) as u8))
    }

    fn bytes(&mut self) -> Res<&'a [u8]> {
        let len = usize::try_from(self.varint()?).map_err(|_| malformed())?;
        let end = self.at.checked_add(len).ok_or_else(malformed)?;
        let out = self.buf.get(self.at..end).ok_or_else(malformed)?;
        self.at = end;
        Ok(out)
    }

    fn skip(&mut self, wire_type: u8) -> Res<()> {
        match wire_type {
            0 => {
                self.varint()?;
            }
            1 => self.advance(8)?,
            2 => {
                self.bytes()?;
            }
            5 => self.advance(4)?,
            _ => return Err(malformed()),
        }
        Ok(())
    }

    fn advance(&mut self, n: usize) -> Res<()> {
        if self.at + n > self.buf.len() {
            return Err(malformed());
        }
        self.at += n;
        Ok(())
    }

    /// A repeated integer field, packed (wire type 2) or one value (wire type 0).
    fn repeated(&mut self, wire_type: u8, out: &mut Vec<u64>) -> Res<()> {
        match wire_type {
            0 => out.push(self.varint()?),
            2 => {
                let mut packed = Wire::new(self.bytes()?);
                while !packed.done() {
                    out.push(packed.varint()?);
                }
            }
            _ => self.skip(wire_type)?,
        }
        Ok(())
    }

    /// A scalar varint field; a field of another wire type is skipped (as unknown).
    fn scalar(&mut self, wire_type: u8) -> Res<Option<u64>> {
        if wire_type == 0 {
            return Ok(Some(self.varint()?));
        }
        self.skip(wire_type)?;
        Ok(None)
    }

    /// Fields of an embedded message as (field, varint value) pairs of the
    /// scalar ones, with a callback for the others.
    fn message(buf: &'a [u8], mut each: impl FnMut(u64, u8, &mut Wire<'a>) -> Res<()>) -> Res<()> {
        let mut w = Wire::new(buf);
        while !w.done() {
            let (field, wire_type) = w.key()?;
            each(field, wire_type, &mut w)?;
        }
        Ok(())
    }
}

fn set(w: &mut Wire, wire_type: u8, slot: &mut u64) -> Res<()> {
    if let Some(v) = w.scalar(wire_type)? {
        *slot = v;
    }
    Ok(())
}

#[derive(Default, Clone, Copy)]
struct Function {
    id: u64,
    name: u64,
    system_name: u64,
    filename: u64,
}

#[derive(Default, Clone, Copy)]
struct Mapping {
    id: u64,
    memory_start: u64,
    file_offset: u64,
    filename: u64,
    build_id: u64,
}

#[derive(Default)]
struct Location {
    id: u64,
    mapping_id: u64,
    address: u64,
    lines: Vec<(u64, i64)>, // function id, line
}

#[derive(Default)]
struct Message<'a> {
    strings: Vec<&'a str>,
    sample_types: Vec<(u64, u64)>,
    samples: Vec<&'a [u8]>,
    mappings: Vec<Mapping>,
    locations: Vec<Location>,
    functions: Vec<Function>,
    time_nanos: u64,
    duration_nanos: u64,
    period_unit: u64,
    period: u64,
    comments: Vec<u64>,
}

fn value_type(buf: &[u8]) -> Res<(u64, u64)> {
    let (mut kind, mut unit) = (0, 0);
    Wire::message(buf, |f, t, w| match f {
        1 => set(w, t, &mut kind),
        2 => set(w, t, &mut unit),
        _ => w.skip(t),
    })?;
    Ok((kind, unit))
}

fn parse(data: &[u8]) -> Res<Message<'_>> {
    let mut m = Message::default();
    let mut w = Wire::new(data);
    while !w.done() {
        let (field, t) = w.key()?;
        match (field, t) {
            (1, 2) => m.sample_types.push(value_type(w.bytes()?)?),
            (2, 2) => m.samples.push(w.bytes()?),
            (3, 2) => m.mappings.push(mapping(w.bytes()?)?),
            (4, 2) => m.locations.push(location(w.bytes()?)?),
            (5, 2) => m.functions.push(function(w.bytes()?)?),
            (6, 2) => {
                let index = m.strings.len();
                let text = std::str::from_utf8(w.bytes()?).map_err(|_| {
                    format!("not a valid pprof profile (string {index} is not UTF-8)")
                })?;
                m.strings.push(text);
            }
            (9, _) => set(&mut w, t, &mut m.time_nanos)?,
            (10, _) => set(&mut w, t, &mut m.duration_nanos)?,
            (11, 2) => m.period_unit = value_type(w.bytes()?)?.1,
            (12, _) => set(&mut w, t, &mut m.period)?,
            (13, _) => w.repeated(t, &mut m.comments)?,
            _ => w.skip(t)?,
        }
    }
    Ok(m)
}

fn mapping(buf: &[u8]) -> Res<Mapping> {
    let mut m = Mapping::default();
    Wire::message(buf, |f, t, w| match f {
        1 => set(w, t, &mut m.id),
        2 => set(w, t, &mut m.memory_start),
        4 => set(w, t, &mut m.file_offset),
        5 => set(w, t, &mut m.filename),
        6 => set(w, t, &mut m.build_id),
        _ => w.skip(t),
    })?;
    Ok(m)
}

fn function(buf: &[u8]) -> Res<Function> {
    let mut f = Function::default();
    Wire::message(buf, |field, t, w| match field {
        1 => set(w, t, &mut f.id),
        2 => set(w, t, &mut f.name),
        3 => set(w, t, &mut f.system_name),
        4 => set(w, t, &mut f.filename),
        _ => w.skip(t),
    })?;
    Ok(f)
}

fn location(buf: &[u8]) -> Res<Location> {
    let mut loc = Location::default();
    Wire::message(buf, |f, t, w| match (f, t) {
        (1, _) => set(w, t, &mut loc.id),
        (2, _) => set(w, t, &mut loc.mapping_id),
        (3, _) => set(w, t, &mut loc.address),
        (4, 2) => {
            let (mut function_id, mut line) = (0, 0);
            Wire::message(w.bytes()?, |f, t, w| match f {
                1 => set(w, t, &mut function_id),
                2 => set(w, t, &mut line),
                _ => w.skip(t),
            })?;
            loc.lines.push((function_id, line as i64));
            Ok(())
        }
        _ => w.skip(t),
    })?;
    Ok(loc)
}

/// One pprof sample: its location ids, values and labels (key, str, num), into
/// the buffers given (reused sample after sample: no allocation per sample).
fn sample(
    buf: &[u8],
    locations: &mut Vec<u64>,
    values: &mut Vec<u64>,
    labels: &mut Vec<[i64; 3]>,
) -> Res<()> {
    Wire::message(buf, |f, t, w| match (f, t) {
        (1, _) => w.repeated(t, locations),
        (2, _) => w.repeated(t, values),
        (3, 2) => {
            let mut label = [0u64; 3];
            Wire::message(w.bytes()?, |f, t, w| match f {
                1..=3 => set(w, t, &mut label[f as usize - 1]),
                _ => w.skip(t),
            })?;
            labels.push(label.map(|x| x as i64));
            Ok(())
        }
        _ => w.skip(t),
    })
}

/// A frame as Python's model.profile.Frame takes it.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Frame<'a> {
    function: std::borrow::Cow<'a, str>,
    dso: &'a str,
    file: &'a str,
    line: i64,
    inlined: bool,
    kernel: bool,
    build_id: String,
    address: u64,
}

/// A label set: the first sample holding it, and its labels (key, str, num).
type LabelSet<'a> = (usize, Vec<(&'a str, Option<&'a str>, i64)>);

struct Decoded<'a> {
    frames: Vec<Frame<'a>>,
    stacks: Vec<Vec<u32>>,
    label_sets: Vec<LabelSet<'a>>,
    sample_stack: Vec<u32>,
    sample_labels: Vec<u32>,
    values: Vec<i64>,
    dsos: Vec<(&'a str, &'a str)>,
    frames_used: u64,
    frames_created: u64,
}

struct Reader<'a> {
    m: &'a Message<'a>,
    checked: Vec<bool>,
    functions: HashMap<u64, Function>,
    mappings: HashMap<u64, Mapping>,
    locations: HashMap<u64, usize>,
    location_frames: HashMap<u64, Vec<u32>>,
    frame_ids: HashMap<Frame<'a>, u32>,
}

fn is_hex_build_id(s: &str) -> bool {
    (2..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl<'a> Reader<'a> {
    fn new(m: &'a Message<'a>) -> Self {
        Reader {
            m,
            checked: vec![false; m.strings.len()],
            functions: m.functions.iter().map(|f| (f.id, *f)).collect(),
            mappings: m.mappings.iter().map(|x| (x.id, *x)).collect(),
            locations: m
                .locations
                .iter()
                .enumerate()
                .map(|(i, l)| (l.id, i))
                .collect(),
            location_frames: HashMap::default(),
            frame_ids: HashMap::default(),
        }
    }

    /// String `index`, checked as ingest.text checks a name (once each).
    fn string(&mut self, index: u64, owner: &str) -> Res<&'a str> {
        let i = usize::try_from(index).unwrap_or(usize::MAX);
        let Some(&text) = self.m.strings.get(i) else {
            return Err(bad(format!(
                "{owner} refers to string {} which does not exist",
                index as i64
            )));
        };
        if !self.checked[i] {
            let chars = text.chars().count();
            if chars > MAX_NAME {
                return Err(format!(
                    "{owner} is {chars} characters long; at most {MAX_NAME}"
                ));
            }
            if text.bytes().any(|b| b < 0x20) {
                return Err(format!("{owner} holds control characters"));
            }
            self.checked[i] = true;
        }
        Ok(text)
    }

    fn frame_index(&mut self, frame: Frame<'a>, frames: &mut Vec<Frame<'a>>) -> u32 {
        if let Some(&i) = self.frame_ids.get(&frame) {
            return i;
        }
        let i = frames.len() as u32;
        self.frame_ids.insert(frame.clone(), i);
        frames.push(frame);
        i
    }

    /// (build-id, address in the ELF) of a location, ("", 0) when not known as such.
    fn origin(&mut self, loc: &Location, mapping: &Mapping) -> Res<(String, u64)> {
        let owner = format!("mapping {}", mapping.id);
        let build_id = self.string(mapping.build_id, &owner)?.to_lowercase();
        let elf_own = mapping.memory_start == 0 && mapping.file_offset == 0;
        if !(elf_own && loc.address > 0 && loc.address < 1 << 63 && is_hex_build_id(&build_id)) {
            return Ok((String::new(), 0));
        }
        Ok((build_id, loc.address))
    }

    /// The frames of location `lid` appended to `stack` (a location's frames are
    /// made once; copying them out per sample was most of this reader's time).
    fn location_frames(&mut self, lid: u64, d: &mut Decoded<'a>, stack: &mut Vec<u32>) -> Res<()> {
        if let Some(found) = self.location_frames.get(&lid) {
            stack.extend_from_slice(found);
            return Ok(());
        }
        let m = self.m;
        let loc = &m.locations[self.locations[&lid]];
        if loc.lines.len() > MAX_STACK_DEPTH {
            let n = loc.lines.len();
            return Err(bad(format!(
                "location {} has {n} lines; at most {MAX_STACK_DEPTH}",
                loc.id
            )));
        }
        let (mut dso, mut build_id, mut address) = ("", String::new(), 0);
        if loc.mapping_id != 0 {
            let Some(mapping) = self.mappings.get(&loc.mapping_id).copied() else {
                return Err(bad(format!(
                    "location {}: mapping {} is missing",
                    loc.id, loc.mapping_id
                )));
            };
            dso = self.string(mapping.filename, &format!("mapping {}", mapping.id))?;
            (build_id, address) = self.origin(loc, &mapping)?;
        }
        let kernel = dso.starts_with("[kernel");
        let mut out = Vec::with_capacity(loc.lines.len().max(1));
        if loc.lines.is_empty() {
            let frame = Frame {
                function: format!("0x{:x}", loc.address).into(),
                dso,
                file: "",
                line: 0,
                inlined: false,
                kernel,
                build_id: build_id.clone(),
                address,
            };
            out.push(self.frame_index(frame, &mut d.frames));
        }
        let last = loc.lines.len().saturating_sub(1);
        for (i, &(function_id, line)) in loc.lines.iter().enumerate() {
            let Some(f) = self.functions.get(&function_id).copied() else {
                return Err(bad(format!(
                    "location {}: function {function_id} is missing",
                    loc.id
                )));
            };
            let owner = format!("function {}", f.id);
            let mut name = self.string(f.name, &owner)?;
            if name.is_empty() {
                name = self.string(f.system_name, &owner)?;
            }
            let file = self.string(f.filename, &owner)?;
            let keeps_origin = !build_id.is_empty() && last == 0 && name.starts_with("[unknown]");
            let frame = Frame {
                function: name.into(),
                dso,
                file,
                line: line.max(0),
                inlined: i < last,
                kernel,
                build_id: if keeps_origin {
                    build_id.clone()
                } else {
                    String::new()
                },
                address: if keeps_origin { address } else { 0 },
            };
            out.push(self.frame_index(frame, &mut d.frames));
        }
        d.frames_created += out.len() as u64;
        stack.extend_from_slice(&out);
        self.location_frames.insert(lid, out);
        Ok(())
    }

    fn decode(&mut self, frames_left: u64, created_left: u64) -> Res<Decoded<'a>> {
        let m = self.m;
        if m.strings.first().is_some_and(|s| !s.is_empty()) {
            return Err(bad("string_table[0] must be \"\"".to_string()));
        }
        let mut d = Decoded {
            frames: Vec::new(),
            stacks: Vec::new(),
            label_sets: Vec::new(),
            sample_stack: Vec::with_capacity(m.samples.len()),
            sample_labels: Vec::with_capacity(m.samples.len()),
            values: Vec::with_capacity(m.samples.len() * m.sample_types.len()),
            dsos: Vec::new(),
            frames_used: 0,
            frames_created: 0,
        };
        for &(kind, unit) in &m.sample_types {
            self.string(kind, "sample_type")?;
            self.string(unit, "sample_type")?;
        }
        self.string(m.period_unit, "period_type")?;
        let mut stack_ids: HashMap<Vec<u64>, u32> = HashMap::default();
        let mut frame_stacks: HashMap<Vec<u32>, u32> = HashMap::default();
        let mut label_ids: HashMap<Vec<[i64; 3]>, u32> = HashMap::default();
        let (mut locations, mut values, mut labels) = (Vec::new(), Vec::new(), Vec::new());
        for (i, buf) in m.samples.iter().enumerate() {
            locations.clear();
            values.clear();
            labels.clear();
            sample(buf, &mut locations, &mut values, &mut labels)?;
            if values.len() != m.sample_types.len() {
                let (n, k) = (values.len(), m.sample_types.len());
                return Err(bad(format!("sample {i} has {n} values for {k} types")));
            }
            for &v in &values {
                let v = v as i64;
                if v < 0 {
                    return Err(format!("sample {i} value is negative ({v})"));
                }
                if v > MAX_VALUE {
                    return Err(format!(
                        "sample {i} value is too large ({v}; at most 2**53)"
                    ));
                }
                d.values.push(v);
            }
            let set = match label_ids.get(labels.as_slice()) {
                Some(&found) => found,
                None => self.label_set(i, labels.clone(), &mut label_ids, &mut d)?,
            };
            d.sample_labels.push(set);
            let stack = match stack_ids.get(locations.as_slice()) {
                Some(&found) => found,
                None => {
                    // Two location lists can name the same frames (two addresses of
                    // one line): one stack, as the Python reader interned them.
                    let frames = self.stack(i, &locations, &mut d)?;
                    let id = match frame_stacks.get(&frames) {
                        Some(&found) => found,
                        None => {
                            let id = d.stacks.len() as u32;
                            d.stacks.push(frames.clone());
                            frame_stacks.insert(frames, id);
                            id
                        }
                    };
                    stack_ids.insert(locations.clone(), id);
                    id
                }
            };
            d.frames_used += d.stacks[stack as usize].len() as u64;
            d.sample_stack.push(stack);
            if d.frames_used > frames_left || d.frames_created > created_left {
                return Ok(d); // the caller's budget refuses the push
            }
        }
        for mapping in &m.mappings {
            if mapping.build_id != 0 {
                let path = self.string(mapping.filename, "mapping")?;
                let id = self.string(mapping.build_id, "id")?;
                d.dsos.push((path, id));
            }
        }
        Ok(d)
    }

    fn label_set(
        &mut self,
        i: usize,
        labels: Vec<[i64; 3]>,
        ids: &mut HashMap<Vec<[i64; 3]>, u32>,
        d: &mut Decoded<'a>,
    ) -> Res<u32> {
        let owner = format!("sample {i} label");
        let mut resolved = Vec::with_capacity(labels.len());
        for &[key, text, num] in &labels {
            let key = self.string(key as u64, &owner)?;
            let text = if text != 0 {
                Some(self.string(text as u64, &owner)?)
            } else {
                None
            };
            resolved.push((key, text, num));
        }
        let id = d.label_sets.len() as u32;
        d.label_sets.push((i, resolved));
        ids.insert(labels, id);
        Ok(id)
    }

    fn stack(&mut self, i: usize, locations: &[u64], d: &mut Decoded<'a>) -> Res<Vec<u32>> {
        let mut frames = Vec::new();
        for &lid in locations {
            if !self.locations.contains_key(&lid) {
                return Err(bad(format!(
                    "sample {i} refers to location {lid} which does not exist"
                )));
            }
            self.location_frames(lid, d, &mut frames)?;
            if frames.len() > MAX_STACK_DEPTH {
                return Err(bad(format!(
                    "sample {i} is deeper than {MAX_STACK_DEPTH} frames"
                )));
            }
        }
        Ok(frames)
    }
}

type Fields<'f> = (&'f str, &'f str, &'f str, i64, bool, bool, &'f str, u64);

/// A frame's fields, as Frame takes them.
fn fields<'f>(f: &'f Frame) -> Fields<'f> {
    let build_id = f.build_id.as_str();
    (
        &f.function,
        f.dso,
        f.file,
        f.line,
        f.inlined,
        f.kernel,
        build_id,
        f.address,
    )
}

fn frame_key(f: &Frame, key: &mut String) {
    key.clear();
    for text in [&*f.function, f.dso, f.file, &f.build_id] {
        let _ = write!(key, "{}:{text}", text.len()); // length first: no two keys alike
    }
    let _ = write!(key, "{}:{}:{}:{}", f.line, f.inlined, f.kernel, f.address);
}

/// The Frame object of each frame, the same object for the same fields across pushes.
fn frame_objects<'py>(
    py: Python<'py>,
    frames: &[Frame],
    make_frame: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let mut key = String::new();
    let keys: Vec<String> = frames
        .iter()
        .map(|f| {
            frame_key(f, &mut key);
            key.clone()
        })
        .collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    FRAME_OBJECTS.objects(py, &keys, 2, |i| {
        Ok(make_frame.call1(fields(&frames[i]))?.unbind())
    })
}

/// Read an inflated pprof (see the module docs). `frames_left` and
/// `created_left` are what the push's budget still allows of frames over all
/// samples and of distinct frames decoded: past either, decoding stops and the
/// counts returned exceed it. Returns a dict:
///
/// ```text
/// sample_types: [(type, unit)]      period_unit: str, period: int
/// time_nanos, duration_nanos: int   comments: [str]  (not checked)
/// frames: [make_frame(function, dso, file, line, inlined, kernel, build_id, address)]
///         (without make_frame, the fields' tuples: a collector before it kept its own)
/// stacks: [tuple[int, ...]]         frame indices, leaf first
/// label_sets: [(first sample, [(key, str or None, num)])]
/// sample_stack, sample_labels: [int]   values: [int], sample after sample
/// dsos: [(path, build_id)]          frames_used, frames_created: int
/// ```
///
/// Raises ValueError with the reason for a profile the collector refuses.
#[pyfunction]
#[pyo3(signature = (data, frames_left, created_left, make_frame=None))]
pub(crate) fn decode_pprof(
    py: Python<'_>,
    data: &[u8],
    frames_left: u64,
    created_left: u64,
    make_frame: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyObject> {
    let message = parse(data).map_err(PyValueError::new_err)?;
    let mut reader = Reader::new(&message);
    let d = reader
        .decode(frames_left, created_left)
        .map_err(PyValueError::new_err)?;
    let out = PyDict::new_bound(py);
    let types: Vec<(&str, &str)> = message
        .sample_types
        .iter()
        .map(|&(k, u)| (message.strings[k as usize], message.strings[u as usize]))
        .collect();
    out.set_item("sample_types", types)?;
    out.set_item(
        "period_unit",
        message.strings.get(message.period_unit as usize).copied(),
    )?;
    out.set_item("period", message.period as i64)?;
    out.set_item("time_nanos", message.time_nanos as i64)?;
    out.set_item("duration_nanos", message.duration_nanos as i64)?;
    let comments = PyList::empty_bound(py);
    for &c in &message.comments {
        match message.strings.get(c as usize) {
            Some(text) => comments.append(*text)?,
            None => {
                let what = format!("comment refers to string {} which does not exist", c as i64);
                return Err(PyValueError::new_err(bad(what)));
            }
        }
    }
    out.set_item("comments", comments)?;
    let frames = match make_frame {
        Some(make_frame) => frame_objects(py, &d.frames, make_frame)?,
        None => PyList::new_bound(py, d.frames.iter().map(|f| fields(f).to_object(py))),
    };
    out.set_item("frames", frames)?;
    let stacks = PyList::empty_bound(py);
    for s in &d.stacks {
        stacks.append(PyTuple::new_bound(py, s))?;
    }
    out.set_item("stacks", stacks)?;
    out.set_item("label_sets", d.label_sets)?;
    out.set_item("sample_stack", d.sample_stack)?;
    out.set_item("sample_labels", d.sample_labels)?;
    out.set_item("values", d.values)?;
    out.set_item("dsos", d.dsos)?;
    out.set_item("frames_used", d.frames_used)?;
    out.set_item("frames_created", d.frames_created)?;
    Ok(out.into_any().unbind())
}
