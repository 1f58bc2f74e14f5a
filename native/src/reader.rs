//! Record streaming and aggregation: reads the records of a perf.data file
//! once, keeps the bookkeeping perf itself keeps (per-process mmap tables,
//! thread names) and folds every sample into a table of unique
//! (stack, thread, event) rows on the fly.
//!
//! Addresses of user frames are relative to the DSO *file*
//! (`ip - map.start + map.pgoff`, i.e. a file offset); kernel frames keep their
//! absolute address. Return addresses (every frame but the leaf) have 1
//! subtracted so that file:line and inline lookups land on the call
//! instruction, not on the instruction after it.

use byteorder::{BigEndian, LittleEndian};
use rustc_hash::FxHashMap as HashMap;

use linux_perf_data::linux_perf_event_reader::Regs;
use linux_perf_data::linux_perf_event_reader::{
    constants::{
        PERF_CONTEXT_GUEST, PERF_CONTEXT_GUEST_KERNEL, PERF_CONTEXT_GUEST_USER, PERF_CONTEXT_HV,
        PERF_CONTEXT_KERNEL, PERF_CONTEXT_MAX, PERF_CONTEXT_USER, PERF_REG_X86_BP, PERF_REG_X86_IP,
        PERF_REG_X86_SP,
    },
    CommOrExecRecord, CpuMode, Endianness, EventRecord, ForkOrExitRecord, Mmap2FileId,
    PerfEventType, RawData, RawDataU64, RawEventRecord, RecordParseInfo, RecordType, SampleFormat,
    SampleRecord, SamplingPolicy, SoftwareCounterType,
};
use linux_perf_data::{DsoKey, PerfFile, PerfFileReader, PerfFileRecord};

use crate::header;
use crate::maps::{Dso, Map, Process};
use crate::records;
use crate::unwind::DwarfUnwinder;

/// The dso of a user frame outside every known mapping.
const NO_DSO: u32 = u32::MAX;
const PERF_RECORD_LOST_SAMPLES: u32 = 13;
const PROT_EXEC: u32 = 4;

/// (stack, pid, tid, comm, event)
type RowKey = (u32, i32, i32, u32, u32);

/// One event attribute of the recording.
pub(crate) struct Event {
    pub name: String,
    /// software, hardware, hw-cache, tracepoint, breakpoint or pmu
    pub kind: &'static str,
    /// "ns" for the cpu/task clocks, else "events"
    pub unit: &'static str,
    pub has_callchain: bool,
    /// Samples carry user registers and stack (`--call-graph dwarf`).
    pub dwarf: bool,
}

pub(crate) struct Thread {
    pub pid: i32,
    pub tid: i32,
    /// Empty when the recording never named the thread.
    pub comm: String,
}

/// Unique frames, as columns: frame i is (dso[i], address[i], kernel[i]).
#[derive(Default)]
pub(crate) struct Frames {
    /// Index into `Output::dsos`, or -1 for an address outside every mapping.
    pub dso: Vec<i64>,
    /// File offset (user frames) or absolute address (kernel frames).
    pub address: Vec<u64>,
    pub kernel: Vec<bool>,
}

/// The samples in time order, run-length encoded: `count[i]` samples in a row
/// of row `row[i]` (an index into `Rows`), the first taken at `time[i]` ns.
#[derive(Default)]
pub(crate) struct Timeline {
    pub row: Vec<u32>,
    pub count: Vec<u32>,
    pub time: Vec<u64>,
}

/// Aggregated samples, as columns: one row per unique (stack, thread, event).
#[derive(Default)]
pub(crate) struct Rows {
    pub stack: Vec<u32>,
    pub thread: Vec<u32>,
    pub event: Vec<u32>,
    /// Sum of the samples' periods.
    pub period: Vec<u64>,
    /// Number of samples.
    pub count: Vec<u64>,
}

pub(crate) enum MetaVal {
    Str(String),
    Int(u64),
    List(Vec<String>),
    Pairs(Vec<(String, String)>),
}

/// Everything read from one perf.data file.
pub(crate) struct Output {
    pub meta: Vec<(&'static str, MetaVal)>,
    pub events: Vec<Event>,
    pub dsos: Vec<Dso>,
    pub frames: Frames,
    /// Frame indices, leaf first.
    pub stacks: Vec<Vec<u32>>,
    pub threads: Vec<Thread>,
    pub rows: Rows,
    /// Empty when the samples carry no time (`perf record` without -T/PERF_SAMPLE_TIME).
    pub timeline: Timeline,
}

#[derive(Default)]
struct Reader {
    dsos: Vec<Dso>,
    dso_ids: HashMap<String, u32>,
    build_ids: HashMap<DsoKey, String>,
    processes: HashMap<i32, Process>,
    kernel: Process,
    kernel_dso: u32,
    /// Per event: the fixed sample period (`perf record -c N`), used when samples carry none.
    fixed_period: Vec<u64>,
    /// Address of the kernel's _text (pgoff of the [kernel.kallsyms]_text map)
    kernel_text: Option<u64>,
    /// tid -> (pid, comm index)
    threads: HashMap<i32, (i32, u32)>,
    comms: Vec<String>,
    comm_ids: HashMap<String, u32>,
    /// Unique frames: (dso, address, kernel)
    frames: Vec<(u32, u64, bool)>,
    frame_ids: HashMap<(u32, u64, bool), u32>,
    stacks: Vec<Vec<u32>>,
    stack_ids: HashMap<Vec<u32>, u32>,
    /// (stack, pid, tid, comm, event) -> its row; per row, its key and (period, count)
    row_ids: HashMap<RowKey, u32>,
    row_keys: Vec<RowKey>,
    row_sums: Vec<(u64, u64)>,
    /// (time, row) of every sample that has a time, in the order read
    sampled: Vec<(u64, u32)>,
    lost: u64,
    /// perf record's own count at its end (PERF_RECORD_LOST_SAMPLES, from the kernel's
    /// per-event count): the same losses as the kernel's PERF_RECORD_LOST, counted again
    lost_at_end: u64,
    samples: u64,
    samples_needing_dwarf: u64,
    samples_dwarf_unwound: u64,
    /// Some event samples user registers and stack: unwind them.
    dwarf: bool,
    unwind: DwarfUnwinder,
    scratch: Vec<u32>,
    /// (pid | cpu_mode << 32, raw callchain...) -> stack id; cleared when mappings change.
    chain_cache: HashMap<Vec<u64>, u32>,
    chain_key: Vec<u64>,
    /// Read samples of the common formats straight from their bytes (`Sample::read`);
    /// set for the records read in place, so the crate's iterator, which parses every
    /// sample with `SampleRecord::parse`, is what the tests compare them against.
    read_samples: bool,
}

/// The fields of a sample the reader uses.
struct Sample<'a> {
    pid: i32,
    tid: i32,
    cpu_mode: CpuMode,
    ip: Option<u64>,
    callchain: Option<Chain<'a>>,
    period: Option<u64>,
    timestamp: Option<u64>,
    /// The user registers and stack of `--call-graph dwarf`.
    user: Option<(Regs<'a>, RawData<'a>)>,
}

/// A sample's callchain: little-endian words in place, or as the crate parsed it.
#[derive(Clone, Copy)]
enum Chain<'a> {
    Words(&'a [u8]),
    Parsed(RawDataU64<'a>),
}

impl Chain<'_> {
    fn len(&self) -> usize {
        match self {
            Chain::Words(w) => w.len() / 8,
            Chain::Parsed(r) => r.len(),
        }
    }

    fn get(&self, i: usize) -> Option<u64> {
        match self {
            Chain::Words(w) => w.get(i * 8..i * 8 + 8).map(le_word),
            Chain::Parsed(r) => r.get(i),
        }
    }

    fn extend(&self, key: &mut Vec<u64>) {
        match self {
            Chain::Words(w) => key.extend(w.chunks_exact(8).map(le_word)),
            Chain::Parsed(r) => key.extend((0..r.len()).map(|i| r.get(i).unwrap_or(0))),
        }
    }
}

fn le_word(w: &[u8]) -> u64 {
    u64::from_le_bytes(w.try_into().unwrap_or_default())
}

impl<'a> Sample<'a> {
    fn parsed(s: SampleRecord<'a>) -> Self {
        Sample {
            pid: s.pid.unwrap_or(-1),
            tid: s.tid.unwrap_or(-1),
            cpu_mode: s.cpu_mode,
            ip: s.ip,
            callchain: s.callchain.map(Chain::Parsed),
            period: s.period,
            timestamp: s.timestamp,
            user: s.user_regs.zip(s.user_stack.map(|(stack, _)| stack)),
        }
    }

    /// A little-endian sample read straight from its bytes, as `SampleRecord::parse`
    /// reads it, for the formats whose fields before the callchain all have a fixed
    /// size (no READ) and that carry no user registers or stack; None for the others
    /// and for a record too short. Why not the crate's parse: it reads every field into
    /// a struct of some 300 bytes that is then copied out, a quarter of reading the
    /// bench's 1.2M samples.
    fn read(data: &'a [u8], misc: u16, info: &RecordParseInfo) -> Option<Self> {
        let format = info.sample_format;
        if info.endian != Endianness::LittleEndian
            || format
                .intersects(SampleFormat::READ | SampleFormat::REGS_USER | SampleFormat::STACK_USER)
        {
            return None;
        }
        let mut at = 0usize;
        let mut word = |wanted: SampleFormat| -> Option<Option<u64>> {
            if !format.contains(wanted) {
                return Some(None);
            }
            let w = data.get(at..at + 8)?;
            at += 8;
            Some(Some(le_word(w)))
        };
        word(SampleFormat::IDENTIFIER)?;
        let ip = word(SampleFormat::IP)?;
        let pid_tid = word(SampleFormat::TID)?;
        let timestamp = word(SampleFormat::TIME)?;
        word(SampleFormat::ADDR)?;
        word(SampleFormat::ID)?;
        word(SampleFormat::STREAM_ID)?;
        word(SampleFormat::CPU)?;
        let period = word(SampleFormat::PERIOD)?;
        let words = word(SampleFormat::CALLCHAIN)?;
        let callchain = match words {
            Some(n) => {
                let end = usize::try_from(n).ok()?.checked_mul(8)?.checked_add(at)?;
                Some(Chain::Words(data.get(at..end)?))
            }
            None => None,
        };
        let (pid, tid) = match pid_tid {
            Some(w) => (w as u32 as i32, (w >> 32) as u32 as i32),
            None => (-1, -1),
        };
        Some(Sample {
            pid,
            tid,
            cpu_mode: CpuMode::from_misc(misc),
            ip,
            callchain,
            period,
            timestamp,
            user: None,
        })
    }
}

impl Reader {
    fn dso_id(&mut self, path: &[u8], cpu_mode: CpuMode, build_id: Option<&[u8]>) -> u32 {
        let mut p = String::from_utf8_lossy(path).into_owned();
        let kernel = matches!(cpu_mode, CpuMode::Kernel | CpuMode::GuestKernel);
        if p.starts_with("[kernel.kallsyms]") {
            p = "[kernel.kallsyms]".to_string();
        }
        if let Some(&id) = self.dso_ids.get(&p) {
            if let Some(b) = build_id {
                if self.dsos[id as usize].build_id.is_empty() {
                    self.dsos[id as usize].build_id = hex(b);
                }
            }
            return id;
        }
        let mut bid = build_id.map(hex).unwrap_or_default();
        if bid.is_empty() {
            if let Some(key) = DsoKey::detect(path, cpu_mode) {
                if let Some(b) = self.build_ids.get(&key) {
                    bid = b.clone();
                }
            }
        }
        let id = self.dsos.len() as u32;
        self.dsos.push(Dso {
            path: p.clone(),
            build_id: bid,
            kernel,
        });
        self.dso_ids.insert(p, id);
        id
    }

    fn comm_id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.comm_ids.get(name) {
            return id;
        }
        let id = self.comms.len() as u32;
        self.comms.push(name.to_string());
        self.comm_ids.insert(name.to_string(), id);
        id
    }

    fn frame_id(&mut self, key: (u32, u64, bool)) -> u32 {
        if let Some(&id) = self.frame_ids.get(&key) {
            return id;
        }
        let id = self.frames.len() as u32;
        self.frames.push(key);
        self.frame_ids.insert(key, id);
        id
    }

    #[allow(clippy::too_many_arguments)]
    fn add_mmap(
        &mut self,
        pid: i32,
        start: u64,
        len: u64,
        pgoff: u64,
        path: &[u8],
        cpu_mode: CpuMode,
        build_id: Option<&[u8]>,
    ) {
        let dso = self.dso_id(path, cpu_mode, build_id);
        self.chain_cache.clear();
        let m = Map {
            start,
            end: start.saturating_add(len),
            pgoff,
            dso,
        };
        let is_kernel = matches!(cpu_mode, CpuMode::Kernel | CpuMode::GuestKernel) || pid == -1;
        if is_kernel && path.starts_with(b"[kernel.kallsyms]") && self.kernel_text.is_none() {
            self.kernel_text = Some(pgoff);
        }
        if is_kernel {
            self.kernel.insert(m);
        } else {
            self.processes.entry(pid).or_default().insert(m);
            if self.dwarf {
                self.unwind.add_module(pid, m, &self.dsos);
            }
        }
    }

    fn on_comm(&mut self, c: &CommOrExecRecord) {
        let name = String::from_utf8_lossy(&c.name.as_slice()).into_owned();
        let id = self.comm_id(&name);
        self.threads.insert(c.tid, (c.pid, id));
        if c.is_execve && c.pid == c.tid {
            self.chain_cache.clear();
            self.processes.remove(&c.pid);
            self.unwind.remove(c.pid);
        }
    }

    fn on_fork(&mut self, f: &ForkOrExitRecord) {
        let comm = self
            .threads
            .get(&f.ptid)
            .map(|x| x.1)
            .or_else(|| self.threads.get(&f.ppid).map(|x| x.1));
        if let Some(c) = comm {
            self.threads.insert(f.tid, (f.pid, c));
        }
        if f.pid != f.ppid {
            self.chain_cache.clear();
            let parent = self.processes.get(&f.ppid).cloned().unwrap_or_default();
            self.processes.insert(f.pid, parent);
            if self.dwarf {
                let maps = self
                    .processes
                    .get(&f.pid)
                    .map(|p| p.maps.as_slice())
                    .unwrap_or_default();
                self.unwind.rebuild(f.pid, maps, &self.dsos);
            }
        }
    }

    fn user_frame(&self, pid: i32, addr: u64) -> (u32, u64, bool) {
        match self.processes.get(&pid).and_then(|p| p.find(addr)) {
            Some(m) => (m.dso, addr - m.start + m.pgoff, false),
            None => (NO_DSO, addr, false),
        }
    }

    fn kernel_frame(&self, addr: u64) -> (u32, u64, bool) {
        match self.kernel.find(addr) {
            Some(m) => (m.dso, addr, true),
            None => (self.kernel_dso, addr, true),
        }
    }

    /// Folds one event record into the tables.
    fn on_record(&mut self, attr_index: usize, record: RawEventRecord<'_>) {
        if record.record_type == RecordType(PERF_RECORD_LOST_SAMPLES) {
            let sl = record.data.as_slice();
            if sl.len() >= 8 {
                self.lost_at_end += u64::from_le_bytes(sl[..8].try_into().unwrap_or_default());
            }
            return;
        }
        if record.record_type == RecordType::SAMPLE {
            // parsed on its own: RawEventRecord::parse returns the large EventRecord
            // enum, whose copies were a fifth of the reading
            let (data, misc, info) = (record.data, record.misc, &record.parse_info);
            let read = match data {
                RawData::Single(bytes) if self.read_samples => Sample::read(bytes, misc, info),
                _ => None,
            };
            let sample = read.or_else(|| {
                match info.endian {
                    Endianness::LittleEndian => {
                        SampleRecord::parse::<LittleEndian>(data, misc, info)
                    }
                    Endianness::BigEndian => SampleRecord::parse::<BigEndian>(data, misc, info),
                }
                .ok()
                .map(Sample::parsed)
            });
            if let Some(s) = sample {
                self.on_sample(&s, attr_index as u32);
            }
            return;
        }
        let Ok(parsed) = record.parse() else {
            return;
        };
        match parsed {
            EventRecord::Mmap(m) if m.is_executable => {
                let p = m.path.as_slice();
                self.add_mmap(
                    m.pid,
                    m.address,
                    m.length,
                    m.page_offset,
                    &p,
                    m.cpu_mode,
                    None,
                );
            }
            EventRecord::Mmap2(m) if m.protection & PROT_EXEC != 0 => {
                let p = m.path.as_slice();
                let bid = match &m.file_id {
                    Mmap2FileId::BuildId(b) => Some(b.clone()),
                    _ => None,
                };
                let (pid, start, len, pgoff) = (m.pid, m.address, m.length, m.page_offset);
                self.add_mmap(pid, start, len, pgoff, &p, m.cpu_mode, bid.as_deref());
            }
            EventRecord::Comm(c) => self.on_comm(&c),
            EventRecord::Fork(f) => self.on_fork(&f),
            EventRecord::Lost(l) => self.lost += l.count,
            _ => {}
        }
    }

    fn on_sample(&mut self, s: &Sample, event: u32) {
        self.samples += 1;
        let (pid, tid) = (s.pid, s.tid);
        let sid = match (&s.callchain, &s.user) {
            // Fast path: the same raw callchain in the same process maps to the
            // same stack until the process's mappings change.
            (Some(cc), None) => {
                let mut key = std::mem::take(&mut self.chain_key);
                key.clear();
                key.push((pid as u32 as u64) | ((s.cpu_mode as u64) << 32));
                cc.extend(&mut key);
                let sid = match self.chain_cache.get(key.as_slice()) {
                    Some(&sid) => sid,
                    None => {
                        let sid = self.stack_of(s, pid);
                        self.chain_cache.insert(key.clone(), sid);
                        sid
                    }
                };
                self.chain_key = key;
                sid
            }
            _ => self.stack_of(s, pid),
        };
        let comm = match self.threads.get(&tid) {
            Some(&(_, c)) => c,
            None => u32::MAX,
        };
        let period = s
            .period
            .unwrap_or_else(|| self.fixed_period.get(event as usize).copied().unwrap_or(1));
        let key = (sid, pid, tid, comm, event);
        let row = match self.row_ids.get(&key) {
            Some(&row) => row,
            None => {
                let row = self.row_keys.len() as u32;
                self.row_ids.insert(key, row);
                self.row_keys.push(key);
                self.row_sums.push((0, 0));
                row
            }
        };
        let sums = &mut self.row_sums[row as usize];
        sums.0 += period;
        sums.1 += 1;
        if let Some(time) = s.timestamp {
            self.sampled.push((time, row));
        }
    }

    /// The stack id of a sample: callchain (and DWARF-unwound user frames)
    /// resolved to (DSO, address) frames.
    fn stack_of(&mut self, s: &Sample, pid: i32) -> u32 {
        let mut stack = std::mem::take(&mut self.scratch);
        stack.clear();
        let mut has_user = false;
        if let Some(cc) = &s.callchain {
            // Context of the frames that follow a PERF_CONTEXT_* marker.
            let mut ctx = match s.cpu_mode {
                CpuMode::Kernel => 1u8,
                CpuMode::User => 2,
                _ => 0,
            };
            let mut first = true;
            for i in 0..cc.len() {
                let Some(ip) = cc.get(i) else { break };
                if ip >= PERF_CONTEXT_MAX {
                    ctx = match ip {
                        PERF_CONTEXT_KERNEL | PERF_CONTEXT_HV => 1,
                        PERF_CONTEXT_USER => 2,
                        PERF_CONTEXT_GUEST
                        | PERF_CONTEXT_GUEST_KERNEL
                        | PERF_CONTEXT_GUEST_USER => 3,
                        _ => 3,
                    };
                    continue;
                }
                let addr = if first { ip } else { ip.wrapping_sub(1) };
                let key = match ctx {
                    1 => self.kernel_frame(addr),
                    2 => {
                        has_user = true;
                        self.user_frame(pid, addr)
                    }
                    _ => continue,
                };
                first = false;
                let id = self.frame_id(key);
                stack.push(id);
            }
        } else if let Some(ip) = s.ip {
            let key = match s.cpu_mode {
                CpuMode::Kernel | CpuMode::Hypervisor => self.kernel_frame(ip),
                _ => {
                    has_user = true;
                    self.user_frame(pid, ip)
                }
            };
            let id = self.frame_id(key);
            stack.push(id);
        }
        if !has_user {
            if let Some((regs, data)) = &s.user {
                self.samples_needing_dwarf += 1;
                if let (Some(ip), Some(sp), Some(bp)) = (
                    regs.get(PERF_REG_X86_IP),
                    regs.get(PERF_REG_X86_SP),
                    regs.get(PERF_REG_X86_BP),
                ) {
                    let bytes = data.as_slice();
                    let mut addrs: Vec<u64> = Vec::new();
                    if self.unwind.unwind(pid, (ip, sp, bp), &bytes, &mut addrs) {
                        if addrs.len() > 1 {
                            self.samples_dwarf_unwound += 1;
                        }
                    } else {
                        addrs.push(ip);
                    }
                    for a in addrs {
                        let key = self.user_frame(pid, a);
                        let id = self.frame_id(key);
                        stack.push(id);
                    }
                }
            }
        }
        let sid = match self.stack_ids.get(&stack) {
            Some(&id) => id,
            None => {
                let id = self.stacks.len() as u32;
                self.stacks.push(stack.clone());
                self.stack_ids.insert(stack.clone(), id);
                id
            }
        };
        self.scratch = stack;
        sid
    }

    /// The reader's tables as the columns and lists of an Output.
    fn finish(self, meta: Vec<(&'static str, MetaVal)>, events: Vec<Event>) -> Output {
        let mut frames = Frames {
            dso: Vec::with_capacity(self.frames.len()),
            address: Vec::with_capacity(self.frames.len()),
            kernel: Vec::with_capacity(self.frames.len()),
        };
        for &(dso, a, k) in &self.frames {
            frames.dso.push(if dso == NO_DSO { -1 } else { dso as i64 });
            frames.address.push(a);
            frames.kernel.push(k);
        }
        // threads: intern (pid, tid, comm)
        let n = self.row_keys.len();
        let mut rows = Rows {
            stack: Vec::with_capacity(n),
            thread: Vec::with_capacity(n),
            event: Vec::with_capacity(n),
            period: Vec::with_capacity(n),
            count: Vec::with_capacity(n),
        };
        let mut thread_ids: HashMap<(i32, i32, u32), u32> = HashMap::default();
        let mut threads: Vec<Thread> = Vec::new();
        for (&(sid, pid, tid, comm, ev), &(period, count)) in
            self.row_keys.iter().zip(&self.row_sums)
        {
            let ti = *thread_ids.entry((pid, tid, comm)).or_insert_with(|| {
                let comm = if comm == u32::MAX {
                    String::new()
                } else {
                    self.comms[comm as usize].clone()
                };
                threads.push(Thread { pid, tid, comm });
                threads.len() as u32 - 1
            });
            rows.stack.push(sid);
            rows.thread.push(ti);
            rows.event.push(ev);
            rows.period.push(period);
            rows.count.push(count);
        }
        Output {
            meta,
            events,
            dsos: self.dsos,
            frames,
            stacks: self.stacks,
            threads,
            rows,
            timeline: run_lengths(self.sampled),
        }
    }
}

/// Samples sorted by time (perf.data is only sorted within rounds), then runs of one row.
fn run_lengths(mut sampled: Vec<(u64, u32)>) -> Timeline {
    sampled.sort_by_key(|&(time, _)| time);
    let mut out = Timeline::default();
    for (time, row) in sampled {
        match (out.row.last(), out.count.last_mut()) {
            (Some(&last), Some(count)) if last == row => *count += 1,
            _ => {
                out.row.push(row);
                out.count.push(1);
                out.time.push(time);
            }
        }
    }
    out
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// (kind, unit) of an event type.
fn event_kind(t: &PerfEventType) -> (&'static str, &'static str) {
    match t {
        PerfEventType::Software(SoftwareCounterType::CpuClock) => ("software", "ns"),
        PerfEventType::Software(SoftwareCounterType::TaskClock) => ("software", "ns"),
        PerfEventType::Software(_) => ("software", "events"),
        PerfEventType::Hardware(..) => ("hardware", "events"),
        PerfEventType::HwCache(..) => ("hw-cache", "events"),
        PerfEventType::Tracepoint(_) => ("tracepoint", "events"),
        PerfEventType::Breakpoint(..) => ("breakpoint", "events"),
        _ => ("pmu", "events"),
    }
}

/// A reader that knows the recording's build-ids, events and kernel.
fn new_reader(perf_file: &PerfFile) -> Reader {
    let mut reader = Reader::default();
    if let Ok(b) = perf_file.build_ids() {
        for (k, v) in b {
            reader.build_ids.insert(k, hex(&v.build_id));
        }
    }
    reader.kernel_dso = reader.dso_id(b"[kernel.kallsyms]", CpuMode::Kernel, None);
    for attr in perf_file.event_attributes() {
        let a = attr.attributes();
        reader.dwarf |= a.sample_format.contains(SampleFormat::REGS_USER)
            && a.sample_format.contains(SampleFormat::STACK_USER);
        reader.fixed_period.push(match a.sampling_policy {
            SamplingPolicy::Period(p) => p.get(),
            _ => 1,
        });
    }
    reader
}

fn events_of(perf_file: &PerfFile) -> Vec<Event> {
    let mut events = Vec::new();
    for (i, attr) in perf_file.event_attributes().iter().enumerate() {
        let a = attr.attributes();
        let (kind, unit) = event_kind(&a.type_);
        let name = attr
            .name()
            .map(str::to_string)
            .unwrap_or_else(|| format!("event{i}"));
        events.push(Event {
            name,
            kind,
            unit,
            has_callchain: a.sample_format.contains(SampleFormat::CALLCHAIN),
            dwarf: a.sample_format.contains(SampleFormat::REGS_USER)
                && a.sample_format.contains(SampleFormat::STACK_USER),
        });
    }
    events
}

/// Read and aggregate the perf.data file at `path`.
///
/// Errors are messages; those starting with "cannot open" mean the file could
/// not be opened, the others that it is not readable perf.data. With `in_place`
/// the records are read from a map of the file (`records`), else, as for the
/// files that reader leaves, through linux-perf-data's iterator.
pub(crate) fn read_file(path: &str, in_place: bool) -> Result<Output, String> {
    let file = header::open_checked(path)?;
    let mapped = file
        .try_clone()
        .map_err(|e| format!("cannot read perf.data: {e}"))?;
    // The crate's iterator reads through a buffer (records::for_each_in_time_order
    // maps the file and drops what it read).
    let cursor = std::io::BufReader::with_capacity(1 << 20, file);
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = PerfFileReader::parse_file(cursor)
        .map_err(|e| format!("truncated or corrupt perf.data (bad header: {e})"))?;

    let mut meta: Vec<(&'static str, MetaVal)> = Vec::new();
    let s = |v: Result<Option<&str>, linux_perf_data::Error>| v.ok().flatten().map(str::to_string);
    if let Some(v) = s(perf_file.hostname()) {
        meta.push(("hostname", MetaVal::Str(v)));
    }
    if let Some(v) = s(perf_file.os_release()) {
        meta.push(("osrelease", MetaVal::Str(v)));
    }
    if let Some(v) = s(perf_file.arch()) {
        meta.push(("arch", MetaVal::Str(v)));
    }
    if let Some(v) = s(perf_file.cpu_desc()) {
        meta.push(("cpudesc", MetaVal::Str(v)));
    }
    if let Some(v) = s(perf_file.perf_version()) {
        meta.push(("perf_version", MetaVal::Str(v)));
    }
    if let Ok(Some(n)) = perf_file.nr_cpus() {
        meta.push(("nrcpus_online", MetaVal::Int(n.nr_cpus_online as u64)));
        meta.push(("nrcpus_avail", MetaVal::Int(n.nr_cpus_available as u64)));
    }
    if let Ok(Some(c)) = perf_file.cmdline() {
        meta.push((
            "cmdline",
            MetaVal::List(c.iter().map(|x| x.to_string()).collect()),
        ));
    }
    let mut bid_pairs = Vec::new();
    if let Ok(b) = perf_file.build_ids() {
        for v in b.values() {
            bid_pairs.push((
                String::from_utf8_lossy(&v.path).into_owned(),
                hex(&v.build_id),
            ));
        }
    }
    bid_pairs.sort();
    meta.push(("build_ids", MetaVal::Pairs(bid_pairs)));
    let events = events_of(&perf_file);

    let mut reader = new_reader(&perf_file);
    reader.read_samples = true;
    let read = in_place
        && records::for_each_in_time_order(&mapped, &perf_file, |event, record| {
            reader.on_record(event, record)
        })?;
    if !read {
        reader = new_reader(&perf_file);
        loop {
            let rec = match record_iter.next_record(&mut perf_file) {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) => {
                    return Err(format!(
                        "truncated or corrupt perf.data ({e}) after {} samples",
                        reader.samples
                    ))
                }
            };
            if let PerfFileRecord::EventRecord { attr_index, record } = rec {
                reader.on_record(attr_index, record);
            }
        }
    }
    if let Some(t) = reader.kernel_text {
        meta.push(("kernel_text", MetaVal::Int(t)));
    }
    meta.push((
        "lost_samples",
        MetaVal::Int(reader.lost.max(reader.lost_at_end)),
    ));
    meta.push(("num_samples", MetaVal::Int(reader.samples)));
    meta.push((
        "samples_needing_dwarf",
        MetaVal::Int(reader.samples_needing_dwarf),
    ));
    meta.push((
        "samples_dwarf_unwound",
        MetaVal::Int(reader.samples_dwarf_unwound),
    ));
    Ok(reader.finish(meta, events))
}
