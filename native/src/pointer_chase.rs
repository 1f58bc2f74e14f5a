//! Dependent random loads, timed: the calibration's probes of the TLB and of the
//! data caches (src/perfsleuth/cache/calibrate.py).
//!
//! - `chase_ns`: one cache line in each of `slots` equal slots of memory (64 B:
//!   every line of a dense block; 4 KiB: one line per page).
//! - `chase_aliased_ns`: one line in each of `pages` virtual pages that all map
//!   the same physical page: every load hits the L1 cache, so the only cost that
//!   can grow with `pages` is address translation. (One line per distinct page
//!   would spread the data over `pages` lines, and the L2's overflow would look
//!   like the TLB's.)
//! - `chase_pages_ns`: every line of `pages` pages, `per_page` loads of distinct
//!   random lines of one random page, then the next page: with per_page = 8 the
//!   address translations are an eighth of the loads, so that the curve shows the
//!   data caches' capacity where a dense random chase would also show the TLB's.
//!
//! Native because the step being timed is a single load of a few nanoseconds: an
//! interpreter's own ~50 ns per step would hide the difference between a TLB hit
//! and a miss that the calibration looks for.
//!
//! Each step picks its slot from a random number mixed with the value the previous
//! load returned, so the loads cannot overlap, and the slots are visited in random
//! order, not in a fixed cycle: like a program's random accesses (an LRU structure
//! of K entries then misses 1 - K/x of them), where a cycle would make LRU miss
//! every access as soon as it overflows.

use pyo3::prelude::*;
use std::hint::black_box;
use std::time::Instant;

const WORD: usize = std::mem::size_of::<usize>();
const LINE_WORDS: usize = 64 / WORD;
const PAGE_BYTES: usize = 4096;
const PAGE_LINES: usize = PAGE_BYTES / 64;
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// `random` scaled to 0..count without a division.
fn below(random: u64, count: usize) -> usize {
    ((random as u128 * count as u128) >> 64) as usize
}

/// Memory of `words` words with the first word of each line written: untouched
/// anonymous memory all reads as one shared zero page. (Non-zero, or the compiler
/// may drop the stores.)
fn written(words: usize) -> Vec<usize> {
    let mut memory = vec![0; words];
    for line in memory.iter_mut().step_by(LINE_WORDS) {
        *line = 1;
    }
    memory
}

trait Pattern: Sync {
    /// `steps` dependent loads from the random `state`; returns a value that
    /// depends on all of them.
    fn run(&self, steps: usize, state: u64) -> u64;
    /// Loads before timing begins: enough to fill the caches with the pattern.
    fn warm_up_steps(&self) -> usize;
}

struct Slots {
    memory: Vec<usize>,
    slots: usize,
    slot_words: usize,
    line_bits: u32,
}

impl Slots {
    fn new(slots: usize, slot_bytes: usize) -> Self {
        let slot_words = slot_bytes / WORD;
        Slots {
            memory: written(slots * slot_words),
            slots,
            slot_words,
            line_bits: (slot_words / LINE_WORDS).trailing_zeros(),
        }
    }

    /// The word read in `slot`: at a line chosen by a hash of the slot, the same
    /// every visit, so that a sparse chase touches one line per page.
    fn word(&self, slot: usize) -> usize {
        let line = if self.line_bits == 0 {
            0
        } else {
            ((slot as u64).wrapping_mul(GOLDEN) >> (64 - self.line_bits)) as usize
        };
        slot * self.slot_words + line * LINE_WORDS
    }
}

impl Pattern for Slots {
    fn run(&self, steps: usize, mut state: u64) -> u64 {
        let mut value = 0u64;
        for _ in 0..steps {
            let slot = below(xorshift(&mut state) ^ value, self.slots);
            value = self.memory[self.word(slot)] as u64;
        }
        black_box(state ^ value)
    }

    fn warm_up_steps(&self) -> usize {
        2 * self.slots
    }
}

struct Pages {
    memory: Vec<usize>,
    pages: usize,
    per_page: usize,
}

impl Pattern for Pages {
    fn run(&self, steps: usize, mut state: u64) -> u64 {
        let mut value = 0u64;
        for _ in 0..steps.div_ceil(self.per_page) {
            let random = xorshift(&mut state);
            let page = below(random ^ value, self.pages);
            // Distinct lines of the page in an irregular order: an odd multiplier
            // makes visit -> line one-to-one, the xor breaks the constant stride
            // a stride prefetcher would follow.
            let mix = (random >> 8) as usize;
            let odd = ((random >> 16) as usize) | 1;
            for visit in 0..self.per_page {
                let line = ((visit * odd) ^ mix ^ value as usize) % PAGE_LINES;
                value = self.memory[(page * PAGE_LINES + line) * LINE_WORDS] as u64 - 1;
            }
        }
        black_box(state ^ value)
    }

    fn warm_up_steps(&self) -> usize {
        2 * self.pages * PAGE_LINES
    }
}

const HUGE_PAGE: usize = 2 << 20;
/// Loads per page that bring a chase's translations back: a page left out with chance e^-4.
const REFILL_PER_PAGE: usize = 4;

/// One line at a fixed random offset in each of `pages` pages of a mapping of its own,
/// 2 MiB aligned, madvised for transparent huge pages (its 2 MiB pages touched whole)
/// or forbidden them, before any page is touched: a `Vec` may come from heap pages
/// already touched, where no advice takes.
struct Frames {
    raw: *mut libc::c_void,
    mapped: usize,
    base: *mut u8,
    pages: usize,
}

// The mapping is only read after it is built, by one thread at a time.
unsafe impl Sync for Frames {}

impl Frames {
    fn new(pages: usize, huge: bool) -> Result<Self, String> {
        let used = (pages * PAGE_BYTES).next_multiple_of(HUGE_PAGE);
        let mapped = used + HUGE_PAGE;
        // SAFETY: a fresh private anonymous mapping, advised and written inside its bounds.
        unsafe {
            let raw = libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if raw == libc::MAP_FAILED {
                return Err(format!("mmap: {}", std::io::Error::last_os_error()));
            }
            let base = (raw as usize).next_multiple_of(HUGE_PAGE) as *mut u8;
            let advice = if huge {
                libc::MADV_HUGEPAGE
            } else {
                libc::MADV_NOHUGEPAGE
            };
            libc::madvise(base as *mut libc::c_void, used, advice);
            for line in (0..used).step_by(64) {
                *(base.add(line) as *mut usize) = 1;
            }
            Ok(Frames {
                raw,
                mapped,
                base,
                pages,
            })
        }
    }

    /// Whether the kernel put the pages read on 2 MiB pages (/proc/self/smaps).
    fn on_huge_pages(&self) -> bool {
        let start = self.base as usize;
        let end = start + (self.pages * PAGE_BYTES).next_multiple_of(HUGE_PAGE);
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
        let mut huge_kb = 0;
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split(' ').next().and_then(|r| r.split_once('-'));
            let bounds = range.and_then(|(a, b)| {
                Some((
                    usize::from_str_radix(a, 16).ok()?,
                    usize::from_str_radix(b, 16).ok()?,
                ))
            });
            if let Some((low, high)) = bounds {
                inside = low < end && high > start;
            } else if let Some(kb) = line.strip_prefix("AnonHugePages:").filter(|_| inside) {
                huge_kb += kb
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<usize>()
                    .unwrap_or(0);
            }
        }
        huge_kb * 1024 >= end - start
    }
}

impl Drop for Frames {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`.
        unsafe {
            libc::munmap(self.raw, self.mapped);
        }
    }
}

impl Pattern for Frames {
    fn run(&self, steps: usize, mut state: u64) -> u64 {
        let mut value = 0u64;
        for _ in 0..steps {
            let page = below(xorshift(&mut state) ^ value, self.pages);
            let line = ((page as u64).wrapping_mul(GOLDEN) >> 58) as usize;
            // SAFETY: page < pages, inside the mapping, and line < PAGE_LINES.
            value = unsafe {
                std::ptr::read_volatile(self.base.add(page * PAGE_BYTES + line * 64) as *const usize)
            } as u64
                - 1;
        }
        black_box(state ^ value)
    }

    fn warm_up_steps(&self) -> usize {
        4 * self.pages
    }
}

/// `pages` 4 KiB virtual pages, each a shared mapping of the same physical page.
struct Aliased {
    base: *mut u8,
    pages: usize,
    fd: libc::c_int,
}

// The mapping is only read after it is built, by one thread at a time.
unsafe impl Sync for Aliased {}

impl Aliased {
    fn new(pages: usize) -> Result<Self, String> {
        let size = pages * PAGE_BYTES;
        // SAFETY: plain system calls; every result is checked before use, and the
        // fixed mappings only replace pages of the reservation made just before.
        unsafe {
            let fd = libc::memfd_create(c"perfsleuth-chase".as_ptr(), 0);
            if fd < 0 || libc::ftruncate(fd, PAGE_BYTES as libc::off_t) != 0 {
                return Err(format!("memfd: {}", std::io::Error::last_os_error()));
            }
            let reserved = libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            );
            let mut aliased = Aliased {
                base: reserved as *mut u8,
                pages,
                fd,
            };
            if reserved == libc::MAP_FAILED {
                aliased.base = std::ptr::null_mut();
                return Err(format!("mmap: {}", std::io::Error::last_os_error()));
            }
            for page in 0..pages {
                let at = aliased.base.add(page * PAGE_BYTES) as *mut libc::c_void;
                let mapped = libc::mmap(
                    at,
                    PAGE_BYTES,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED | libc::MAP_FIXED | libc::MAP_POPULATE,
                    fd,
                    0,
                );
                if mapped != at {
                    return Err(format!(
                        "mmap of {pages} aliases: {} (vm.max_map_count?)",
                        std::io::Error::last_os_error()
                    ));
                }
            }
            *(aliased.base as *mut usize) = 1;
            Ok(aliased)
        }
    }
}

impl Drop for Aliased {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the reservation made in `new`.
        unsafe {
            if !self.base.is_null() {
                libc::munmap(self.base as *mut libc::c_void, self.pages * PAGE_BYTES);
            }
            libc::close(self.fd);
        }
    }
}

impl Pattern for Aliased {
    fn run(&self, steps: usize, mut state: u64) -> u64 {
        let mut value = 0u64;
        for _ in 0..steps {
            let page = below(xorshift(&mut state) ^ value, self.pages);
            // SAFETY: page < pages, and every page of the range is mapped.
            value = unsafe {
                std::ptr::read_volatile(self.base.add(page * PAGE_BYTES) as *const usize)
            } as u64;
        }
        black_box(state ^ value)
    }

    fn warm_up_steps(&self) -> usize {
        2 * self.pages
    }
}

/// Nanoseconds per step, the best of `rounds` rounds of `steps` steps, after the
/// pattern's warm-up.
fn time_steps(
    py: Python<'_>,
    pattern: impl Pattern,
    steps: usize,
    rounds: usize,
    seed: u64,
) -> PyResult<f64> {
    if steps == 0 || rounds == 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "steps and rounds must be at least 1",
        ));
    }
    Ok(py.allow_threads(|| {
        let mut state = pattern.run(pattern.warm_up_steps(), seed | 1) | 1;
        let mut best = f64::INFINITY;
        for _ in 0..rounds {
            let began = Instant::now();
            state = pattern.run(steps, state) | 1;
            best = best.min(began.elapsed().as_nanos() as f64 / steps as f64);
        }
        best
    }))
}

/// Nanoseconds per load, one line in each of `slots` slots of `slot_bytes`.
#[pyfunction]
#[pyo3(signature = (slots, slot_bytes=4096, steps=1_000_000, rounds=3, seed=GOLDEN))]
pub fn chase_ns(
    py: Python<'_>,
    slots: usize,
    slot_bytes: usize,
    steps: usize,
    rounds: usize,
    seed: u64,
) -> PyResult<f64> {
    let lines = slot_bytes / 64;
    if slots < 2 || !slot_bytes.is_multiple_of(64) || !lines.is_power_of_two() {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "chase_ns needs slots >= 2 and slot_bytes 64 times a power of two",
        ));
    }
    time_steps(py, Slots::new(slots, slot_bytes), steps, rounds, seed)
}

/// Nanoseconds per load over every line of `pages` 4 KiB pages, `per_page` loads
/// in a page before the next.
#[pyfunction]
#[pyo3(signature = (pages, per_page=8, steps=1_000_000, rounds=3, seed=GOLDEN))]
pub fn chase_pages_ns(
    py: Python<'_>,
    pages: usize,
    per_page: usize,
    steps: usize,
    rounds: usize,
    seed: u64,
) -> PyResult<f64> {
    if pages < 2 || per_page == 0 || per_page > PAGE_LINES {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "chase_pages_ns needs pages >= 2 and per_page from 1 to {PAGE_LINES}"
        )));
    }
    let pattern = Pages {
        memory: written(pages * PAGE_LINES * LINE_WORDS),
        pages,
        per_page,
    };
    time_steps(py, pattern, steps, rounds, seed)
}

/// Nanoseconds per load, one in each of `pages` virtual pages of one physical page.
#[pyfunction]
#[pyo3(signature = (pages, steps=1_000_000, rounds=3, seed=GOLDEN))]
pub fn chase_aliased_ns(
    py: Python<'_>,
    pages: usize,
    steps: usize,
    rounds: usize,
    seed: u64,
) -> PyResult<f64> {
    if pages < 2 {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "chase_aliased_ns needs pages >= 2",
        ));
    }
    let pattern = Aliased::new(pages).map_err(pyo3::exceptions::PyOSError::new_err)?;
    time_steps(py, pattern, steps, rounds, seed)
}

/// One line at a fixed random offset in each of `pages` pages on 4 KiB pages at the
/// frames the kernel gives (a program's heap) and on 2 MiB pages, the two timed in
/// turns, `pairs` rounds of `steps` loads each, each round after `steps / 2` loads, and
/// at least REFILL_PER_PAGE a page, that bring its translations back (the other's round
/// evicted them: on the AMD EPYC KVM guest, after 2,000 loads a 2,048-page chase on
/// 4 KiB pages paid 2.5 ns a load more for the pages left out): ns per load, the
/// fastest round on 4 KiB pages, on 2 MiB pages, and the median of the pairs'
/// differences (a pair is ~0.1 ms apart: the same neighbours, the translations alone).
/// An error where the kernel gives no 2 MiB pages.
#[pyfunction]
#[pyo3(signature = (pages, steps=4_000, pairs=40, seed=GOLDEN))]
pub fn chase_walks_ns(
    py: Python<'_>,
    pages: usize,
    steps: usize,
    pairs: usize,
    seed: u64,
) -> PyResult<(f64, f64, f64)> {
    if pages < 2 || steps < 2 || pairs == 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "chase_walks_ns needs pages >= 2, steps >= 2 and pairs >= 1",
        ));
    }
    let os_error = |why: String| pyo3::exceptions::PyOSError::new_err(why);
    let small = Frames::new(pages, false).map_err(os_error)?;
    let huge = Frames::new(pages, true).map_err(os_error)?;
    if !huge.on_huge_pages() {
        return Err(os_error(
            "the kernel gave no 2 MiB pages to a madvised mapping (transparent huge pages \
             `never`, or memory too fragmented)"
                .to_string(),
        ));
    }
    Ok(py.allow_threads(|| {
        let mut state = seed | 1;
        for frames in [&small, &huge] {
            state = frames.run(frames.warm_up_steps(), state) | 1;
        }
        let (mut fastest, mut differences) = ([f64::INFINITY; 2], Vec::with_capacity(pairs));
        for _ in 0..pairs {
            let mut took = [0.0; 2];
            for (index, frames) in [&small, &huge].into_iter().enumerate() {
                state = frames.run((steps / 2).max(REFILL_PER_PAGE * pages), state) | 1;
                let began = Instant::now();
                state = frames.run(steps, state) | 1;
                took[index] = began.elapsed().as_nanos() as f64 / steps as f64;
                fastest[index] = fastest[index].min(took[index]);
            }
            differences.push(took[0] - took[1]);
        }
        differences.sort_by(f64::total_cmp);
        (fastest[0], fastest[1], differences[pairs / 2])
    }))
}
