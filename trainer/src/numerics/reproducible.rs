//! Reproducible fits: the same blob, bit for bit, from the same data and
//! settings on any CPU (x86-64 v1 to v4, aarch64) and at any thread count.
//!
//! `faer`'s kernels pick their vector width and fused multiply-adds at run
//! time; inside [`reproducibly`] products and solves run
//! `super::fixed_order`'s instead (everything else a fit computes is
//! already CPU-independent: `libm`, exactly rounded exponentials, chunk-order
//! sums). The switch is a mark on the threads of a rayon pool of its own, so
//! a reproducible fit and a default one can run side by side.
//!
//! For tests, `TRAJECTORY_VARIABLE` `= n` moves every optimiser start by
//! `n` ulps (odd `n`: fixed order too): a test that fails under it checked
//! one path, not the method.

use std::cell::Cell;

thread_local! {
    static FIXED_ORDER: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread computes products and solves in the fixed
/// order (inside [`reproducibly`], or everywhere under an odd
/// `trajectory_variant`).
pub fn active() -> bool {
    FIXED_ORDER.with(Cell::get) || trajectory_variant() % 2 == 1
}

/// The environment variable of the test switch [`trajectory_variant`].
pub(crate) const TRAJECTORY_VARIABLE: &str = "SGP_TRAJECTORY_NUDGE";

/// `n` from [`TRAJECTORY_VARIABLE`] (0 when unset): optimiser starts move
/// by `n` ulps, and odd `n` computes in the fixed order everywhere.
pub(crate) fn trajectory_variant() -> usize {
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
/// `super::fixed_order`: on a rayon pool of as many threads as the
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
        assert!(!active());
    }
}
