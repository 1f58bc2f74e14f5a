//! DWARF unwinding of user stacks (`perf record --call-graph dwarf`): the
//! unwind sections of each DSO read from disk (`.eh_frame`, `.eh_frame_hdr`,
//! `.debug_frame`), one `framehop` unwinder per process built from its
//! mappings, and the unwinding of one sample's registers and stack copy.

use rustc_hash::FxHashMap as HashMap;
use std::fs::File;
use std::ops::{Deref, Range};
use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, Module, Unwinder};
use object::{Object, ObjectSection, ObjectSegment};

use crate::maps::{Dso, Map};

/// One section's bytes, inside a read-only mapping of its file.
///
/// Mapped, not copied: `.text` alone is over 100 MB for LLVM, and the unwinder
/// only touches the few pages it reads (the page cache holds them, shared).
#[derive(Clone)]
struct Section {
    map: Arc<memmap2::Mmap>,
    range: Range<usize>,
}

impl Deref for Section {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.map[self.range.clone()]
    }
}

/// At most this many frames are unwound per sample.
const MAX_FRAMES: usize = 1024;

/// A PT_LOAD segment: where it is in the file and at which vaddr it loads.
struct Segment {
    offset: u64,
    file_size: u64,
    vaddr: u64,
    executable: bool,
}

/// Unwind sections of one DSO file, shared by every process that maps it.
struct UnwindData {
    base_svma: u64,
    text_svma: Option<Range<u64>>,
    text: Option<Section>,
    eh_frame_svma: Option<Range<u64>>,
    eh_frame: Option<Section>,
    eh_frame_hdr_svma: Option<Range<u64>>,
    eh_frame_hdr: Option<Section>,
    debug_frame: Option<Section>,
    got_svma: Option<Range<u64>>,
    segments: Vec<Segment>,
}

fn load_unwind_data(path: &str) -> Option<UnwindData> {
    // regular files only: never open devices or FIFOs named by a mapping
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let file = File::open(path).ok()?;
    // SAFETY: read-only mapping of a file we only read; if it is truncated
    // while we read, we may crash, like any mmap-based reader (perf does too).
    let map = Arc::new(unsafe { memmap2::Mmap::map(&file) }.ok()?);
    let obj = object::File::parse(&**map).ok()?;
    let sect = |name: &str| -> (Option<Range<u64>>, Option<Section>) {
        match obj.section_by_name(name) {
            Some(s) => {
                let svma = s.address()..s.address() + s.size();
                let data = in_file(&map, s.file_range()).map(|range| Section {
                    map: map.clone(),
                    range,
                });
                (Some(svma), data)
            }
            None => (None, None),
        }
    };
    let (text_svma, text) = sect(".text");
    let (eh_frame_svma, eh_frame) = sect(".eh_frame");
    let (eh_frame_hdr_svma, eh_frame_hdr) = sect(".eh_frame_hdr");
    let (_, debug_frame) = sect(".debug_frame");
    let (got_svma, _) = sect(".got");
    let segments = obj
        .segments()
        .map(|s| {
            let (offset, file_size) = s.file_range();
            let executable = match s.flags() {
                object::SegmentFlags::Elf { p_flags } => p_flags & object::elf::PF_X != 0,
                _ => false,
            };
            Segment {
                offset,
                file_size,
                vaddr: s.address(),
                executable,
            }
        })
        .collect();
    Some(UnwindData {
        base_svma: 0,
        text_svma,
        text,
        eh_frame_svma,
        eh_frame,
        eh_frame_hdr_svma,
        eh_frame_hdr,
        debug_frame,
        got_svma,
        segments,
    })
}

/// The byte range `(offset, size)` of a section with file contents (not
/// SHT_NOBITS), when it lies inside the mapped file.
fn in_file(map: &memmap2::Mmap, file_range: Option<(u64, u64)>) -> Option<Range<usize>> {
    let (offset, size) = file_range?;
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(size).ok()?)?;
    (end <= map.len()).then_some(start..end)
}

/// The address the DSO's vaddr 0 is loaded at, given one of its mappings.
///
/// The segment is the executable PT_LOAD (the mapping is executable) that
/// shares the most file bytes with the mapping, not the one containing
/// `pgoff`: linkers that do not page-align segment file offsets (lld, the
/// default for Rust) start the executable segment mid-page, so the
/// page-aligned `pgoff` of its mapping falls inside the preceding read-only
/// segment, whose vaddr-to-offset delta differs (by a page in lld's layout)
/// and would shift every unwind lookup.
fn base_avma_of(segments: &[Segment], m: &Map) -> Option<u64> {
    let map_end = m.pgoff + (m.end - m.start);
    let overlap = |s: &Segment| {
        map_end
            .min(s.offset + s.file_size)
            .saturating_sub(m.pgoff.max(s.offset))
    };
    let s = segments
        .iter()
        .filter(|s| overlap(s) > 0)
        .max_by_key(|s| (s.executable, overlap(s)))?;
    // avma of file offset x is start + (x - pgoff); its svma is vaddr + (x - offset)
    Some(
        m.start
            .wrapping_sub(m.pgoff)
            .wrapping_add(s.offset)
            .wrapping_sub(s.vaddr),
    )
}

/// The DWARF unwinding state of a recording: unwind data per DSO (loaded once,
/// shared by every process that maps the DSO) and one unwinder per process.
#[derive(Default)]
pub(crate) struct DwarfUnwinder {
    /// Per DSO id: its unwind sections, or None when the file is unreadable.
    data: HashMap<u32, Option<Arc<UnwindData>>>,
    /// Per pid: the unwinder over that process's executable mappings.
    procs: HashMap<i32, UnwinderX86_64<Section>>,
    cache: Option<Box<CacheX86_64>>,
}

impl DwarfUnwinder {
    /// Unwind data of DSO `dso`, whose path is `path` and build-id `build_id`.
    fn data_for(&mut self, dso: u32, path: &str, build_id: &str) -> Option<Arc<UnwindData>> {
        if let Some(d) = self.data.get(&dso) {
            return d.clone();
        }
        let d = if path.starts_with('/') {
            load_unwind_data(path).map(Arc::new)
        } else if path.starts_with("[vdso") && build_id.len() > 2 {
            // perf record saves the vDSO in its build-id cache
            let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
            let cached = format!(
                "{home}/.debug/.build-id/{}/{}/vdso",
                &build_id[..2],
                &build_id[2..]
            );
            load_unwind_data(&cached).map(Arc::new)
        } else {
            None
        };
        self.data.insert(dso, d.clone());
        d
    }

    /// Add mapping `m` of process `pid`; `dsos` is indexed by `m.dso`.
    pub fn add_module(&mut self, pid: i32, m: Map, dsos: &[Dso]) {
        let dso = &dsos[m.dso as usize];
        let Some(data) = self.data_for(m.dso, &dso.path, &dso.build_id) else {
            return;
        };
        let Some(base_avma) = base_avma_of(&data.segments, &m) else {
            return;
        };
        let info = ExplicitModuleSectionInfo::<Section> {
            base_svma: data.base_svma,
            text_svma: data.text_svma.clone(),
            text: data.text.clone(),
            eh_frame_svma: data.eh_frame_svma.clone(),
            eh_frame: data.eh_frame.clone(),
            eh_frame_hdr_svma: data.eh_frame_hdr_svma.clone(),
            eh_frame_hdr: data.eh_frame_hdr.clone(),
            debug_frame: data.debug_frame.clone(),
            got_svma: data.got_svma.clone(),
            // Mach-O only
            stubs_svma: None,
            stub_helper_svma: None,
            unwind_info: None,
            text_segment_svma: None,
            text_segment: None,
        };
        let module = Module::new(dso.path.clone(), m.start..m.end, base_avma, info);
        self.procs.entry(pid).or_default().add_module(module);
    }

    /// Forget process `pid` (exec, or before a rebuild).
    pub fn remove(&mut self, pid: i32) {
        self.procs.remove(&pid);
    }

    /// Rebuild the unwinder of `pid` from its mappings (after a fork).
    pub fn rebuild(&mut self, pid: i32, maps: &[Map], dsos: &[Dso]) {
        self.remove(pid);
        for &m in maps {
            self.add_module(pid, m, dsos);
        }
    }

    /// Unwind one sample of process `pid` from its user registers and the copy
    /// of its user stack (`stack`, which starts at `sp`), appending the
    /// addresses for lookup (return addresses minus one), leaf first, to `out`.
    ///
    /// Returns false, with nothing appended, when `pid` has no unwinder (no
    /// mapping with readable unwind data).
    pub fn unwind(
        &mut self,
        pid: i32,
        (ip, sp, bp): (u64, u64, u64),
        stack: &[u8],
        out: &mut Vec<u64>,
    ) -> bool {
        let Some(unwinder) = self.procs.get(&pid) else {
            return false;
        };
        let cache = self
            .cache
            .get_or_insert_with(|| Box::new(CacheX86_64::new()));
        let mut read_stack = |addr: u64| -> Result<u64, ()> {
            let off = addr.checked_sub(sp).ok_or(())? as usize;
            let b = stack.get(off..off + 8).ok_or(())?;
            Ok(u64::from_le_bytes(b.try_into().map_err(|_| ())?))
        };
        let start = out.len();
        let mut it = unwinder.iter_frames(
            ip,
            UnwindRegsX86_64::new(ip, sp, bp),
            cache,
            &mut read_stack,
        );
        while let Ok(Some(f)) = it.next() {
            out.push(f.address_for_lookup());
            if out.len() - start >= MAX_FRAMES {
                break;
            }
        }
        true
    }
}
