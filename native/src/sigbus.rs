//! A file truncated while its map is read: the pages past its new end give SIGBUS
//! on access, which kills the whole interpreter (`perfsleuth import` of a
//! perf.data that perf, or a copy, is still rewriting). While a map is guarded, a
//! SIGBUS inside it replaces the faulting page with a page of zeros and is noted;
//! the reader goes on over zeros (a record header of zeros has a wrong size, so it
//! stops soon) and then reports the file as changed under it. A SIGBUS anywhere
//! else goes to the handler that was there before (Python's faulthandler, or the
//! default action).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Once;

const SLOTS: usize = 8; // maps guarded at once (reads on several threads)

#[allow(clippy::declare_interior_mutable_const)]
const FREE: AtomicUsize = AtomicUsize::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const CLEAN: AtomicBool = AtomicBool::new(false);
static STARTS: [AtomicUsize; SLOTS] = [FREE; SLOTS];
static ENDS: [AtomicUsize; SLOTS] = [FREE; SLOTS];
static FAULTED: [AtomicBool; SLOTS] = [CLEAN; SLOTS];
static PAGE_SIZE: AtomicUsize = AtomicUsize::new(4096);
static INSTALL: Once = Once::new();
static mut PREVIOUS: Option<libc::sigaction> = None;

/// A guarded map; the guard ends when this is dropped.
pub(crate) struct Guard {
    slot: Option<usize>,
}

impl Guard {
    /// Guards `len` bytes from `start`; unguarded (as before) when all slots are taken.
    pub(crate) fn new(start: *const u8, len: usize) -> Guard {
        INSTALL.call_once(install);
        let start = start as usize;
        for slot in 0..SLOTS {
            if STARTS[slot]
                .compare_exchange(0, start, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                FAULTED[slot].store(false, Ordering::SeqCst);
                ENDS[slot].store(start + len, Ordering::SeqCst);
                return Guard { slot: Some(slot) };
            }
        }
        Guard { slot: None }
    }

    /// Whether a page of the map was gone (the file shrank) while it was read.
    pub(crate) fn faulted(&self) -> bool {
        self.slot.is_some_and(|s| FAULTED[s].load(Ordering::SeqCst))
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            ENDS[slot].store(0, Ordering::SeqCst);
            STARTS[slot].store(0, Ordering::SeqCst);
        }
    }
}

fn install() {
    // SAFETY: sysconf and sigaction are called with valid arguments; PREVIOUS is
    // written once, here, by the call that installs the handler.
    unsafe {
        let page = libc::sysconf(libc::_SC_PAGESIZE);
        if page > 0 {
            PAGE_SIZE.store(page as usize, Ordering::SeqCst);
        }
        let mut action: libc::sigaction = std::mem::zeroed();
        let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            on_sigbus;
        action.sa_sigaction = handler as libc::sighandler_t;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        // the old action is written by the same call that installs the handler (a
        // zeroed one, read meanwhile, is the default action)
        PREVIOUS = Some(std::mem::zeroed());
        if let Some(previous) = (*std::ptr::addr_of_mut!(PREVIOUS)).as_mut() {
            if libc::sigaction(libc::SIGBUS, &action, previous) != 0 {
                PREVIOUS = None;
            }
        }
    }
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t. mmap is not on POSIX's list of
    // async-signal-safe functions, but on Linux it is a plain system call (glibc's
    // wrapper takes no lock), as is sigaction.
    unsafe {
        let addr = (*info).si_addr() as usize;
        // a fault's SIGBUS only (si_code > 0): one sent by kill(2) has no address
        let fault = (*info).si_code > 0;
        for slot in (0..SLOTS).filter(|_| fault) {
            let start = STARTS[slot].load(Ordering::SeqCst);
            if start != 0 && addr >= start && addr < ENDS[slot].load(Ordering::SeqCst) {
                let page = addr & !(PAGE_SIZE.load(Ordering::SeqCst) - 1);
                let zeros = libc::mmap(
                    page as *mut libc::c_void,
                    PAGE_SIZE.load(Ordering::SeqCst),
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                );
                if zeros != libc::MAP_FAILED {
                    FAULTED[slot].store(true, Ordering::SeqCst);
                    return; // the load is retried, and reads zeros
                }
            }
        }
        pass_on(sig, info, context);
    }
}

/// Not a guarded map's: what would have happened without this handler.
unsafe fn pass_on(sig: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let previous = *std::ptr::addr_of!(PREVIOUS);
    match previous {
        Some(p) if p.sa_flags & libc::SA_SIGINFO != 0 && p.sa_sigaction > 1 => {
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                std::mem::transmute(p.sa_sigaction);
            handler(sig, info, context);
        }
        Some(p) if p.sa_sigaction > 1 => {
            let handler: extern "C" fn(libc::c_int) = std::mem::transmute(p.sa_sigaction);
            handler(sig);
        }
        _ => {
            // the default action: returning retries the access, which now kills
            let mut default: libc::sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(libc::SIGBUS, &default, std::ptr::null_mut());
        }
    }
}
