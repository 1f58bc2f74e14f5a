//! Address-space bookkeeping: the executable mappings of one process (or of
//! the kernel), as perf reports them in MMAP/MMAP2 records.

/// One executable mapping: `[start, end)` maps the DSO `dso` from file offset `pgoff`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Map {
    pub start: u64,
    pub end: u64,
    pub pgoff: u64,
    pub dso: u32,
}

#[derive(Clone, Default)]
pub(crate) struct Process {
    /// Sorted by start, non-overlapping.
    pub maps: Vec<Map>,
}

impl Process {
    /// Add a mapping; it replaces whatever part of older mappings it overlaps.
    pub fn insert(&mut self, m: Map) {
        if m.end <= m.start {
            return;
        }
        let mut out = Vec::with_capacity(self.maps.len() + 2);
        for old in self.maps.drain(..) {
            if old.end <= m.start || old.start >= m.end {
                out.push(old);
                continue;
            }
            if old.start < m.start {
                out.push(Map {
                    start: old.start,
                    end: m.start,
                    pgoff: old.pgoff,
                    dso: old.dso,
                });
            }
            if old.end > m.end {
                out.push(Map {
                    start: m.end,
                    end: old.end,
                    pgoff: old.pgoff + (m.end - old.start),
                    dso: old.dso,
                });
            }
        }
        out.push(m);
        out.sort_by_key(|x| x.start);
        self.maps = out;
    }

    /// The mapping that contains `ip`, if any.
    pub fn find(&self, ip: u64) -> Option<&Map> {
        let i = self.maps.partition_point(|m| m.start <= ip);
        if i == 0 {
            return None;
        }
        let m = &self.maps[i - 1];
        (ip < m.end).then_some(m)
    }
}

/// A mapped file (or pseudo-file such as `[vdso]`, `[kernel.kallsyms]`).
pub(crate) struct Dso {
    pub path: String,
    /// Hex, empty when unknown.
    pub build_id: String,
    pub kernel: bool,
}
