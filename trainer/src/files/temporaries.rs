//! The temporary files [`super::AtomicFile`] has made and not yet renamed or
//! removed, so that an interruption (SIGINT, SIGTERM, SIGHUP) or an early
//! exit removes them too: the user's directory keeps the old file or the
//! new one and nothing else.
//!
//! Creating, renaming and removing a temporary happen under one lock; the
//! interruption takes that lock, removes what is listed and ends the
//! process while holding it, so no temporary is made or renamed after the
//! list was read.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The list of live temporaries, locked.
pub(super) fn live() -> MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Forgets `temp` (renamed or removed), in a list already locked.
pub(super) fn forget(list: &mut Vec<PathBuf>, temp: &Path) {
    list.retain(|p| p != temp);
}

/// Removes every live temporary file: for a process about to end without
/// unwinding (`std::process::exit`), which runs no destructor. The lock is
/// returned held, so none is made after.
pub fn remove_temporaries() -> MutexGuard<'static, Vec<PathBuf>> {
    let mut list = live();
    for temp in list.drain(..) {
        let _ = std::fs::remove_file(temp);
    }
    list
}

/// Makes SIGINT, SIGTERM and SIGHUP remove the live temporary files before
/// they end the process (still by that signal, so a shell sees the
/// interruption). Call it first thing in `main`, before any thread starts:
/// the signals are blocked in this thread and every thread it starts after,
/// and one thread waits for them.
pub fn remove_temporaries_on_interrupt() {
    #[cfg(unix)]
    unix::install();
}

#[cfg(unix)]
mod unix {
    use super::remove_temporaries;

    const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

    fn signal_set() -> libc::sigset_t {
        // SAFETY: sigemptyset initialises the zeroed set; sigaddset only
        // writes to it.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for s in SIGNALS {
                libc::sigaddset(&mut set, s);
            }
            set
        }
    }

    pub(super) fn install() {
        let set = signal_set();
        // SAFETY: changes this thread's signal mask only.
        if unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) } != 0 {
            return;
        }
        let spawned = std::thread::Builder::new()
            .name("sgp-interrupt".into())
            .spawn(move || loop {
                let mut signal: libc::c_int = 0;
                // SAFETY: waits for a signal of `set`, which every thread blocks.
                if unsafe { libc::sigwait(&set, &mut signal) } != 0 {
                    continue;
                }
                let _held = remove_temporaries();
                // SAFETY: the default action, then the signal unblocked in
                // this thread and raised: the process ends by it.
                unsafe {
                    libc::signal(signal, libc::SIG_DFL);
                    libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
                    libc::raise(signal);
                }
                std::process::exit(128 + signal);
            });
        if spawned.is_err() {
            // No thread to take them: the signals keep their default action.
            // SAFETY: as above.
            unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
        }
    }
}
