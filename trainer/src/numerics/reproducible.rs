//! Reproducible fits: the same blob, bit for bit, from the same data and
//! settings on any CPU (x86-64 v1 to v4, aarch64) and at any thread count.
//!
//! By default the dense products and triangular solves run `faer`'s
//! kernels, which pick their vector width and fused multiply-adds at run
//! time, so the rounding, and with it an optimiser's path, follows the CPU.
//! Inside [`reproducibly`] they run [`super::fixed_order`]'s instead, the
//! same operations in the same order everywhere. Everything else a fit
//! computes already is: elementary functions come from the `libm` crate
//! (pure Rust, no run-time dispatch), the kernel's vectorised exponential
//! uses only exactly rounded operations, and parallel sums add per-chunk
//! partial sums in chunk order over chunks of fixed size.
//!
//! The switch is a mark on the threads that compute: [`reproducibly`] runs
//! its closure on a rayon pool of its own whose threads all carry it, so a
//! reproducible fit and a default one can run side by side in one process.
//!
//! For tests, [`TRAJECTORY_VARIABLE`] `= n` perturbs every optimiser's
//! path without changing the method: each start moves by `n` units in the
//! last place, and for odd `n` every product and solve takes the fixed
//! order. A test that fails under it checked one path, not the method.

use std::cell::Cell;

thread_local! {
    static FIXED_ORDER: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread computes products and solves in the fixed
/// order (inside [`reproducibly`], or everywhere under an odd
/// [`trajectory_variant`]).
pub fn active() -> bool {
    FIXED_ORDER.with(Cell::get) || trajectory_variant() % 2 == 1
}

/// The environment variable of the test switch [`trajectory_variant`].
pub const TRAJECTORY_VARIABLE: &str = "SGP_TRAJECTORY_NUDGE";

/// `n` from [`TRAJECTORY_VARIABLE`] (0 when unset): optimiser starts move
/// by `n` ulps, and odd `n` computes in the fixed order everywhere.
pub fn trajectory_variant() -> usize {
    static VARIANT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *VARIANT.get_or_init(|| {
        std::env::var(TRAJECTORY_VARIABLE)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    })
}

/// Runs `f` with every dense product and triangular solve, on this thread
/// and on the rayon threads it uses, in the fixed order of
/// [`super::fixed_order`]: on a rayon pool of as many threads as the
/// global one whose threads are all marked. Inside a reproducible run it
/// just calls `f`.
///
/// # Errors
/// [`crate::Error::Numerical`] if the pool cannot be started.
///
/// ```
/// use sgp_trainer::numerics::reproducible::{active, reproducibly};
/// assert!(reproducibly(|| active()).unwrap());
/// ```
pub fn reproducibly<R: Send>(f: impl FnOnce() -> R + Send) -> crate::Result<R> {
    if active() {
        return Ok(f());
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(rayon::current_num_threads())
        .thread_name(|i| format!("sgp-reproducible-{i}"))
        .start_handler(|_| FIXED_ORDER.with(|c| c.set(true)))
        .build()
        .map_err(|e| crate::Error::Numerical(format!("cannot start the fit's threads: {e}")))?;
    Ok(pool.install(f))
}

/// Runs `f` on this thread marked as `fixed_order` says: for the threads a
/// fit starts outside rayon, which inherit the mark of the thread that
/// starts them.
pub fn with_mark<R>(fixed_order: bool, f: impl FnOnce() -> R) -> R {
    let before = FIXED_ORDER.with(|c| c.replace(fixed_order));
    let out = f();
    FIXED_ORDER.with(|c| c.set(before));
    out
}

#[cfg(test)]
mod tests {
    use rayon::prelude::*;

    use super::*;

    #[test]
    fn every_thread_of_a_reproducible_run_is_marked_and_others_are_not() {
        if trajectory_variant() % 2 == 1 {
            // The test switch marks every thread.
            assert!(active());
            return;
        }
        assert!(!active());
        let marks: Vec<bool> =
            reproducibly(|| (0..64).into_par_iter().map(|_| active()).collect()).expect("pool");
        assert!(marks.iter().all(|m| *m));
        let outside: Vec<bool> = (0..64).into_par_iter().map(|_| active()).collect();
        assert!(outside.iter().all(|m| !m));
        assert!(with_mark(true, active));
        assert!(!active());
    }
}
