//! Pivoted incomplete Cholesky factorisation (ICF, Fine & Scheinberg 2001):
//! a rank-`r` factor `R` (r x N) with `K ~ R^T R`, built one column of `K`
//! at a time, so an N x N kernel matrix is never formed.
//!
//! The pivot is the largest remaining diagonal (ties to the lowest index:
//! deterministic); it stops at `max_rank` rows or once the residual trace is
//! at most `tol` times `K`'s (the residual is positive semi-definite, so its
//! trace bounds it). O(N r^2) time, O(N r) memory.

use nalgebra::{DMatrix, DVector, DVectorViewMut};
use rayon::prelude::*;

use crate::model::kernel::KernelParams;
use crate::{Error, Result};

/// A pivoted incomplete Cholesky factor.
#[derive(Clone, Debug)]
pub(crate) struct Icf {
    /// `R`, rank x N: `K ~ R^T R`.
    pub r: DMatrix<f64>,
    /// The pivot (row of `K`) chosen at each step, `rank` of them.
    pub pivots: Vec<usize>,
    /// `sum_i (K - R^T R)_ii` when the factorisation stopped.
    pub residual_trace: f64,
    /// `sum_i K_ii`.
    pub trace: f64,
}

impl Icf {
    /// Rank of the factor (rows of `R`).
    pub fn rank(&self) -> usize {
        self.r.nrows()
    }

    /// Residual trace relative to the trace of `K`.
    pub(crate) fn relative_residual(&self) -> f64 {
        if self.trace > 0.0 {
            self.residual_trace / self.trace
        } else {
            0.0
        }
    }
}

/// Pivoted incomplete Cholesky of a symmetric positive semi-definite N x N
/// matrix given by its diagonal and a function returning column `j`
/// (length N). Stops at `max_rank` or when the residual trace is at most
/// `tol` times the trace.
///
/// # Errors
/// [`Error::BadInput`] for `max_rank == 0`, a negative or non-finite `tol`
/// or diagonal, or a column of the wrong length.
pub(crate) fn pivoted_cholesky(
    diag: &[f64],
    mut column: impl FnMut(usize) -> DVector<f64>,
    max_rank: usize,
    tol: f64,
) -> Result<Icf> {
    let n = diag.len();
    if max_rank == 0 {
        return Err(Error::BadInput(
            "incomplete Cholesky: the rank must be at least 1".into(),
        ));
    }
    if !(tol.is_finite() && tol >= 0.0) {
        return Err(Error::BadInput(format!(
            "incomplete Cholesky: trace tolerance must be finite and >= 0, got {tol}"
        )));
    }
    if diag.iter().any(|v| !v.is_finite() || *v < 0.0) {
        return Err(Error::BadInput(
            "incomplete Cholesky: the diagonal must be finite and non-negative".into(),
        ));
    }
    let max_rank = max_rank.min(n);
    let trace: f64 = diag.iter().sum();
    let mut d = diag.to_vec();
    let mut rows: Vec<DVector<f64>> = Vec::with_capacity(max_rank);
    let mut pivots = Vec::with_capacity(max_rank);
    let mut residual: f64 = trace;
    while rows.len() < max_rank && residual > tol * trace {
        // Largest remaining diagonal, lowest index on ties.
        let (p, &dp) = d
            .iter()
            .enumerate()
            .fold((0, &f64::NEG_INFINITY), |best, cur| {
                if *cur.1 > *best.1 {
                    cur
                } else {
                    best
                }
            });
        // Round-off leaves tiny positive residuals on pivots already
        // chosen and on points that duplicate them: stop there rather than
        // divide by noise.
        if dp <= f64::EPSILON * trace.max(f64::MIN_POSITIVE) {
            break;
        }
        let col = column(p);
        if col.len() != n {
            return Err(Error::BadInput(format!(
                "incomplete Cholesky: column {p} has {} entries, expected {n}",
                col.len()
            )));
        }
        let pivot = dp.sqrt();
        let mut row = col;
        subtract_earlier_rows(&mut row, &rows, p);
        row /= pivot;
        // Exact values on the pivot itself.
        row[p] = pivot;
        for (di, ri) in d.iter_mut().zip(row.iter()) {
            *di = (*di - ri * ri).max(0.0);
        }
        d[p] = 0.0;
        for &q in &pivots {
            row[q] = 0.0;
        }
        pivots.push(p);
        rows.push(row);
        residual = d.iter().sum();
    }
    let rank = rows.len();
    let r = DMatrix::from_fn(rank, n, |k, j| rows[k][j]);
    Ok(Icf {
        r,
        pivots,
        residual_trace: residual,
        trace,
    })
}

/// Columns a thread takes at a time in [`subtract_earlier_rows`].
const COLUMNS_PER_TASK: usize = 1024;

/// `row -= sum_k rows[k][p] rows[k]`: the step's O(N k) part, most of the
/// factorisation's time at GPLasso's ranks, shared out over the threads
/// by blocks of columns. Each entry is updated in the same order as one
/// thread would, so the factor does not depend on the thread count.
fn subtract_earlier_rows(row: &mut DVector<f64>, rows: &[DVector<f64>], p: usize) {
    let coefficients: Vec<f64> = rows.iter().map(|prev| prev[p]).collect();
    row.as_mut_slice()
        .par_chunks_mut(COLUMNS_PER_TASK)
        .enumerate()
        .for_each(|(block, out)| {
            let start = block * COLUMNS_PER_TASK;
            let mut out = DVectorViewMut::from_slice(out, out.len());
            for (prev, &c) in rows.iter().zip(&coefficients) {
                if c != 0.0 {
                    out.axpy(-c, &prev.rows(start, out.len()), 1.0);
                }
            }
        });
}

/// ICF of the noise-free kernel matrix `K(x, x)` of the rows of `x`
/// (standardised inputs, N x D).
///
/// # Errors
/// As [`pivoted_cholesky`].
pub(crate) fn kernel_icf(
    kern: &KernelParams,
    x: &DMatrix<f64>,
    max_rank: usize,
    tol: f64,
) -> Result<Icf> {
    let diag = vec![kern.signal_var(); x.nrows()];
    pivoted_cholesky(
        &diag,
        |j| {
            let xj = x.rows(j, 1);
            kern.cross(x, &xj).column(0).into_owned()
        },
        max_rank,
        tol,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numerics::linalg::cholesky;

    fn kernel_matrix(n: usize, seed: u64) -> (DMatrix<f64>, KernelParams, DMatrix<f64>) {
        let (x, _) = crate::model::inference::test_util::problem(seed, n, 2);
        let kern = KernelParams::new(&[0.7, 1.3], 1.5, 0.1).expect("valid");
        let k = kern.cross(&x, &x);
        (k, kern, x)
    }

    #[test]
    fn full_rank_is_the_cholesky_of_the_permuted_matrix() {
        let n = 25;
        let (mut k, _, _) = kernel_matrix(n, 3);
        // Strictly positive definite so the full Cholesky exists.
        for i in 0..n {
            k[(i, i)] += 0.1;
        }
        let diag: Vec<f64> = (0..n).map(|i| k[(i, i)]).collect();
        let icf = pivoted_cholesky(&diag, |j| k.column(j).into_owned(), n, 0.0).expect("ok");
        assert_eq!(icf.rank(), n);
        assert!((icf.r.tr_mul(&icf.r) - &k).amax() < 1e-10);
        // R[:, P] is the transpose of the Cholesky factor of K[P, P].
        let p = &icf.pivots;
        let kp = DMatrix::from_fn(n, n, |i, j| k[(p[i], p[j])]);
        let l = cholesky(&kp).expect("pd");
        let rp = DMatrix::from_fn(n, n, |i, j| icf.r[(i, p[j])]);
        assert!((rp.transpose() - l).amax() < 1e-10);
        // Largest diagonal first: the first pivot has the largest K_ii.
        let first = (0..n).fold(0, |b, i| if diag[i] > diag[b] { i } else { b });
        assert_eq!(p[0], first);
    }

    #[test]
    fn stops_on_the_trace_tolerance_and_the_residual_is_what_it_says() {
        let (k, kern, x) = kernel_matrix(60, 5);
        for tol in [1e-2, 1e-4, 1e-8] {
            let icf = kernel_icf(&kern, &x, 60, tol).expect("ok");
            assert!(icf.relative_residual() <= tol, "{tol}");
            assert!(
                icf.rank() < 60,
                "smooth kernel, tol {tol}: rank {}",
                icf.rank()
            );
            let resid = &k - icf.r.tr_mul(&icf.r);
            assert!((resid.trace() - icf.residual_trace).abs() < 1e-9 * icf.trace);
            // The residual is positive semi-definite: its trace bounds it.
            let eig = resid.clone().symmetric_eigen().eigenvalues;
            assert!(eig.min() > -1e-9);
            assert!(eig.max() <= icf.residual_trace + 1e-9);
        }
    }

    /// More rows than one task's block of columns: the blocks shared out
    /// over the threads must still give a factor that reproduces every
    /// pivot's column of `K` exactly (as any incomplete Cholesky does).
    #[test]
    fn the_factor_spans_the_pivot_columns_across_thread_blocks() {
        let n = 2 * COLUMNS_PER_TASK + 500;
        let (x, _) = crate::model::inference::test_util::problem(9, n, 2);
        let kern = KernelParams::new(&[0.7, 1.3], 1.5, 0.1).expect("valid");
        let icf = kernel_icf(&kern, &x, 30, 0.0).expect("ok");
        assert_eq!(icf.rank(), 30);
        for &p in &icf.pivots {
            let column = kern.cross(&x, &x.rows(p, 1));
            let rebuilt = icf.r.tr_mul(&icf.r.column(p));
            assert!((rebuilt - column).amax() < 1e-10, "pivot {p}");
        }
    }

    #[test]
    fn stops_on_the_rank_and_on_duplicated_points() {
        let (_, kern, x) = kernel_matrix(40, 7);
        let icf = kernel_icf(&kern, &x, 5, 0.0).expect("ok");
        assert_eq!(icf.rank(), 5);
        assert_eq!(icf.pivots.len(), 5);
        // Four distinct points, each repeated: rank at most 4.
        let dup = DMatrix::from_fn(12, 2, |i, j| x[(i % 4, j)]);
        let icf = kernel_icf(&kern, &dup, 12, 0.0).expect("ok");
        assert!(icf.rank() <= 4, "rank {}", icf.rank());
        assert!(icf.relative_residual() < 1e-10);
    }

    #[test]
    fn bad_arguments_are_errors() {
        let (_, kern, x) = kernel_matrix(10, 1);
        assert!(matches!(
            kernel_icf(&kern, &x, 0, 1e-6),
            Err(Error::BadInput(_))
        ));
        assert!(kernel_icf(&kern, &x, 3, f64::NAN).is_err());
        assert!(pivoted_cholesky(&[1.0, -1.0], |_| DVector::zeros(2), 2, 0.0).is_err());
        assert!(pivoted_cholesky(&[1.0, 1.0], |_| DVector::zeros(3), 2, 0.0).is_err());
    }
}
