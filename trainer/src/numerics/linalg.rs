//! Cholesky factorisation with jitter escalation, triangular solves that
//! report failure through [`crate::Error`], and the dense products of the
//! sparse objectives.
//!
//! Jitter is `eps * scale * I` with `scale` the kernel's signal variance;
//! `eps` starts at `JitterPolicy::initial` and grows by
//! `JitterPolicy::factor` after each failure up to `JitterPolicy::max`,
//! beyond which [`Error::Numerical`]. The jitter used is returned, so callers
//! report escalation and predict with the same factor.
//!
//! Products go through `faer`'s kernels (`matmul_into`, `mul`; faster than
//! nalgebra's at these shapes), borrowing nalgebra's column-major storage.
//! Inside a reproducible fit (`super::reproducible`) products and solves
//! run `super::fixed_order`'s kernels instead.

use nalgebra::{Cholesky, DMatrix, DVector, Dyn, Matrix, Storage};
use serde::{Deserialize, Serialize};

use faer::linalg::triangular_solve::{
    solve_lower_triangular_in_place, solve_upper_triangular_in_place,
};
use faer::{Accum, MatMut, Par};

pub(crate) use super::fixed_order::MatRef;
pub(crate) use super::fixed_order::Triangle;
use super::fixed_order::{gemm, solve_lower_in_place, solve_lower_t_in_place, Product};
use super::reproducible;

use crate::{Error, Result};

/// How much jitter to add to a diagonal before factorising, and how to
/// escalate it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct JitterPolicy {
    /// First relative jitter tried (> 0).
    pub initial: f64,
    /// Largest relative jitter tried.
    pub max: f64,
    /// Multiplier between attempts (> 1).
    pub factor: f64,
}

/// The default starts at `1e-6 s2` (as Snelson's SPGP code does): lower
/// lets two near pseudo-inputs give weights f32 cannot hold
/// (docs/src/numerics.md, "Jitter").
impl Default for JitterPolicy {
    fn default() -> Self {
        Self {
            initial: 1e-6,
            max: 1e-2,
            factor: 10.0,
        }
    }
}

/// A lower-triangular Cholesky factor of `A + jitter * I`.
#[derive(Clone, Debug)]
pub(crate) struct JitteredCholesky {
    /// The lower-triangular factor `L` (upper triangle zero).
    pub l: DMatrix<f64>,
    /// The absolute jitter added to the diagonal, `eps * scale`.
    pub jitter: f64,
    /// The relative jitter `eps` that succeeded.
    #[cfg_attr(not(test), allow(dead_code))] // read by the tests
    pub eps: f64,
    /// How many times the jitter had to be raised (0 = first try worked).
    pub escalations: u32,
}

impl JitteredCholesky {
    /// `log |A + jitter I|`.
    pub(crate) fn log_det(&self) -> f64 {
        log_det_from_factor(&self.l)
    }
}

/// Factorises `a + eps * scale * I` (only the lower triangle of `a` is read),
/// escalating `eps` per `policy` until it succeeds.
pub(crate) fn cholesky_jittered(
    a: &DMatrix<f64>,
    scale: f64,
    policy: &JitterPolicy,
) -> Result<JitteredCholesky> {
    if !a.is_square() {
        return Err(Error::Numerical(format!(
            "Cholesky of a non-square {}x{} matrix",
            a.nrows(),
            a.ncols()
        )));
    }
    let valid_policy = policy.initial > 0.0
        && policy.factor > 1.0
        && policy.max >= policy.initial
        && policy.max.is_finite();
    if !valid_policy {
        return Err(Error::Numerical(format!(
            "invalid jitter policy {policy:?}"
        )));
    }
    if !(scale.is_finite() && scale > 0.0) {
        return Err(Error::Numerical(format!(
            "jitter scale must be finite and positive, got {scale}"
        )));
    }
    if a.iter().any(|v| !v.is_finite()) {
        return Err(Error::Numerical(
            "Cholesky of a matrix with NaN or infinite entries".into(),
        ));
    }
    let mut eps = policy.initial;
    let mut escalations = 0;
    loop {
        let jitter = eps * scale;
        let mut m = a.clone();
        for i in 0..m.nrows() {
            m[(i, i)] += jitter;
        }
        if let Some(ch) = Cholesky::new(m) {
            return Ok(JitteredCholesky {
                l: ch.unpack(),
                jitter,
                eps,
                escalations,
            });
        }
        // Compare against a slightly inflated max so that float drift in
        // repeated multiplication never skips the last allowed step.
        let next = eps * policy.factor;
        if next > policy.max * (1.0 + 1e-9) {
            return Err(Error::Numerical(format!(
                "Cholesky of a {n}x{n} matrix failed even with jitter {eps:e} * {scale:e} on the diagonal",
                n = a.nrows()
            )));
        }
        eps = next;
        escalations += 1;
    }
}

/// Factorises `a` with no jitter; for matrices that are positive definite by
/// construction (e.g. `I + V Gamma^{-1} V^T`). Fails with
/// [`Error::Numerical`] if `a` is not numerically positive definite.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn cholesky(a: &DMatrix<f64>) -> Result<DMatrix<f64>> {
    if !a.is_square() || a.iter().any(|v| !v.is_finite()) {
        return Err(Error::Numerical(
            "Cholesky of a non-square or non-finite matrix".into(),
        ));
    }
    Cholesky::new(a.clone())
        .map(Cholesky::unpack)
        .ok_or_else(|| Error::Numerical("matrix is not positive definite".into()))
}

/// `log |L L^T| = 2 sum log L_ii`.
pub(crate) fn log_det_from_factor(l: &DMatrix<f64>) -> f64 {
    2.0 * l.diagonal().iter().map(|v| libm::log(*v)).sum::<f64>()
}

/// Overwrites `b` with `L^{-1} b` (forward substitution), `l` lower
/// triangular; blocked in `faer` (nalgebra's is column by column).
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn solve_lower_mut(l: &DMatrix<f64>, b: &mut DMatrix<f64>) -> Result<()> {
    check_solve(l, b.nrows())?;
    if reproducible::active() {
        solve_lower_in_place(l.as_slice(), l.nrows(), b.as_mut_slice());
        return Ok(());
    }
    let (rows, cols) = b.shape();
    let rhs = MatMut::from_column_major_slice_mut(b.as_mut_slice(), rows, cols);
    solve_lower_triangular_in_place(faer_of(mat_ref(l)), rhs, Par::Seq);
    clear_upper_vector_state();
    Ok(())
}

/// Overwrites `b` with `L^{-T} b` (back substitution against the transpose),
/// `l` lower triangular; blocked like [`solve_lower_mut`].
pub(crate) fn solve_lower_t_mut(l: &DMatrix<f64>, b: &mut DMatrix<f64>) -> Result<()> {
    check_solve(l, b.nrows())?;
    if reproducible::active() {
        solve_lower_t_in_place(l.as_slice(), l.nrows(), b.as_mut_slice());
        return Ok(());
    }
    let (rows, cols) = b.shape();
    let rhs = MatMut::from_column_major_slice_mut(b.as_mut_slice(), rows, cols);
    solve_upper_triangular_in_place(faer_of(mat_ref(l)).transpose(), rhs, Par::Seq);
    clear_upper_vector_state();
    Ok(())
}

/// `L^{-1} b` for a vector.
pub(crate) fn solve_lower_vec(l: &DMatrix<f64>, b: &DVector<f64>) -> Result<DVector<f64>> {
    check_solve(l, b.nrows())?;
    let mut x = b.clone();
    // A zero on the diagonal, nalgebra's only failure, was rejected above.
    l.solve_lower_triangular_mut(&mut x);
    Ok(x)
}

/// `L^{-T} b` for a vector.
pub(crate) fn solve_lower_t_vec(l: &DMatrix<f64>, b: &DVector<f64>) -> Result<DVector<f64>> {
    check_solve(l, b.nrows())?;
    let mut x = b.clone();
    // As in `solve_lower_vec`.
    l.tr_solve_lower_triangular_mut(&mut x);
    Ok(x)
}

/// `L^{-1}` for lower-triangular `L` (lower triangular, by forward
/// substitution on the identity). O(M^3); only for M x M factors. Products
/// with it are blocked where substitution is not, at comparable accuracy
/// (Higham, ch. 8 and 14).
pub(crate) fn lower_inverse(l: &DMatrix<f64>) -> Result<DMatrix<f64>> {
    let n = l.nrows();
    let mut x = DMatrix::<f64>::identity(n, n);
    solve_lower_mut(l, &mut x)?;
    // Exact zeros above the diagonal, whatever the substitution left there.
    x.fill_upper_triangle(0.0, 1);
    Ok(x)
}

/// `(L L^T)^{-1}`, symmetric, from the factor `L`. O(M^3); only for M x M
/// matrices.
pub(crate) fn inverse_from_factor(l: &DMatrix<f64>) -> Result<DMatrix<f64>> {
    let n = l.nrows();
    let mut x = DMatrix::<f64>::identity(n, n);
    solve_lower_mut(l, &mut x)?;
    let inv = mul(mat_ref(&x).transpose(), mat_ref(&x));
    Ok(symmetrise(inv))
}

/// `(m + m^T) / 2`: removes round-off asymmetry from products that are
/// symmetric in exact arithmetic.
pub(crate) fn symmetrise(m: DMatrix<f64>) -> DMatrix<f64> {
    let t = m.transpose();
    (m + t) * 0.5
}

/// `a . b` for slices of equal length, summed as `lane_sum` does.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    lane_sum(a, b, |x, y| x * y)
}

/// `sum_i term(a_i, b_i)` for slices of equal length, summed in four
/// interleaved lanes so the loop vectorises (one running sum is one long
/// dependency chain).
pub(crate) fn lane_sum(a: &[f64], b: &[f64], term: impl Fn(f64, f64) -> f64) -> f64 {
    debug_assert_eq!(a.len(), b.len(), "lane sum of unequal lengths");
    let mut lanes = [0.0; 4];
    let (ac, bc) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f64 = ac
        .remainder()
        .iter()
        .zip(bc.remainder())
        .map(|(x, y)| term(*x, *y))
        .sum();
    for (x, y) in ac.zip(bc) {
        for k in 0..4 {
            lanes[k] += term(x[k], y[k]);
        }
    }
    (lanes[0] + lanes[2]) + (lanes[1] + lanes[3]) + tail
}

/// A column-major nalgebra matrix as a view of the same storage.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn mat_ref(m: &DMatrix<f64>) -> MatRef<'_> {
    MatRef::of(m)
}

/// `dst = alpha * lhs * rhs`, or `dst += alpha * lhs * rhs` with
/// `accumulate`, in `faer` (or [`super::fixed_order`] in a reproducible
/// fit) on the calling thread (callers parallelise over blocks of data
/// themselves). `lhs` and `rhs` may be transposed views.
///
/// # Panics
/// If the shapes do not chain (a caller bug).
pub(crate) fn matmul_into(
    dst: &mut [f64],
    rows: usize,
    accumulate: bool,
    lhs: MatRef<'_>,
    rhs: MatRef<'_>,
    alpha: f64,
) {
    assert_eq!(lhs.nrows(), rows, "product's destination rows");
    if reproducible::active() {
        let (lhs, rhs) = ((lhs, Triangle::Rectangular), (rhs, Triangle::Rectangular));
        let out = Triangle::Rectangular;
        return gemm(
            dst,
            Product {
                lhs,
                rhs,
                out,
                accumulate,
                alpha,
            },
        );
    }
    let dst = MatMut::from_column_major_slice_mut(dst, rows, rhs.ncols());
    let beta = if accumulate {
        Accum::Add
    } else {
        Accum::Replace
    };
    faer::linalg::matmul::matmul(dst, beta, faer_of(lhs), faer_of(rhs), alpha, Par::Seq);
    clear_upper_vector_state();
}

/// A view as `faer` takes it (every view here has unit stride along its
/// rows or its columns).
fn faer_of(m: MatRef<'_>) -> faer::MatRef<'_, f64> {
    let (data, rows, cols, row_stride, col_stride) = m.parts();
    if row_stride == 1 || rows <= 1 {
        faer::MatRef::from_column_major_slice_with_stride(data, rows, cols, col_stride.max(rows))
    } else {
        faer::MatRef::from_row_major_slice_with_stride(data, rows, cols, row_stride)
    }
}

/// A `vzeroupper` after `faer`'s AVX kernels, which leave the upper vector
/// halves dirty: otherwise every later SSE instruction pays a transition.
fn clear_upper_vector_state() {
    #[cfg(target_arch = "x86_64")]
    if let Some(avx) = pulp::core_arch::x86::Avx::try_new() {
        avx._mm256_zeroupper();
    }
}

/// `lhs * rhs` as a new matrix (see `matmul_into`).
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn mul(lhs: MatRef<'_>, rhs: MatRef<'_>) -> DMatrix<f64> {
    let mut out = DMatrix::<f64>::zeros(lhs.nrows(), rhs.ncols());
    matmul_into(out.as_mut_slice(), lhs.nrows(), false, lhs, rhs, 1.0);
    out
}

/// `lhs rhs` where a factor may be triangular (its other triangle is not
/// read) and only one triangle of the result may be wanted (the rest is
/// zero); the zero blocks are skipped.
pub(crate) fn mul_triangular(
    lhs: (MatRef<'_>, Triangle),
    rhs: (MatRef<'_>, Triangle),
    out_shape: Triangle,
) -> DMatrix<f64> {
    let (rows, cols) = (lhs.0.nrows(), rhs.0.ncols());
    let mut out = DMatrix::<f64>::zeros(rows, cols);
    if reproducible::active() {
        let (accumulate, alpha) = (false, 1.0);
        let out_slice = out.as_mut_slice();
        gemm(
            out_slice,
            Product {
                lhs,
                rhs,
                out: out_shape,
                accumulate,
                alpha,
            },
        );
        return out;
    }
    let faer_shape = |t: Triangle| match t {
        Triangle::Rectangular => faer::linalg::matmul::triangular::BlockStructure::Rectangular,
        Triangle::TriangularLower => {
            faer::linalg::matmul::triangular::BlockStructure::TriangularLower
        }
        Triangle::TriangularUpper => {
            faer::linalg::matmul::triangular::BlockStructure::TriangularUpper
        }
    };
    let dst = MatMut::from_column_major_slice_mut(out.as_mut_slice(), rows, cols);
    faer::linalg::matmul::triangular::matmul(
        dst,
        faer_shape(out_shape),
        Accum::Replace,
        faer_of(lhs.0),
        faer_shape(lhs.1),
        faer_of(rhs.0),
        faer_shape(rhs.1),
        1.0,
        Par::Seq,
    );
    clear_upper_vector_state();
    out
}

/// `x p^T` for `x` (N x D, any storage) and a small `p` (G x D): a
/// projection of N points, summed over `d` in increasing order on every CPU
/// (one pass over `x` per entry of `p`; nalgebra's `*` would pick its
/// kernel by CPU).
///
/// # Panics
/// If `x` and `p` disagree on D (a caller bug).
pub(crate) fn times_transpose<S: Storage<f64, Dyn, Dyn>>(
    x: &Matrix<f64, Dyn, Dyn, S>,
    p: &DMatrix<f64>,
) -> DMatrix<f64> {
    assert_eq!(
        x.ncols(),
        p.ncols(),
        "x has {} columns, p {}",
        x.ncols(),
        p.ncols()
    );
    let mut out = DMatrix::<f64>::zeros(x.nrows(), p.nrows());
    for (g, mut col) in out.column_iter_mut().enumerate() {
        for (d, xd) in x.column_iter().enumerate() {
            let w = p[(g, d)];
            for (o, v) in col.iter_mut().zip(xd.iter()) {
                *o += v * w;
            }
        }
    }
    out
}

/// The symmetric matrix whose lower triangle `lower` holds.
pub(crate) fn mirror_lower(mut lower: DMatrix<f64>) -> DMatrix<f64> {
    lower.fill_upper_triangle_with_lower_triangle();
    lower
}

/// A square factor of the right size with no zero on its diagonal (a
/// substitution would divide by it).
fn check_solve(l: &DMatrix<f64>, rows: usize) -> Result<()> {
    if l.is_square() && l.nrows() == rows {
        if l.diagonal().iter().any(|d| *d == 0.0) {
            return Err(singular());
        }
        Ok(())
    } else {
        Err(Error::Numerical(format!(
            "triangular solve: factor is {}x{}, right-hand side has {rows} rows",
            l.nrows(),
            l.ncols()
        )))
    }
}

fn singular() -> Error {
    Error::Numerical("triangular factor has a zero on its diagonal".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Triangular factors and triangular results give the dense product's
    /// entries where they are wanted and zeros elsewhere.
    #[test]
    fn triangular_products_match_the_dense_one() {
        let n = 37;
        let mut l = DMatrix::from_fn(n, n, |i, j| libm::sin((i * 7 + j * 3) as f64));
        l.fill_upper_triangle(0.0, 1);
        let a = DMatrix::from_fn(n, n, |i, j| libm::cos((i * 5 + j * 11) as f64));
        let close = |x: &DMatrix<f64>, y: &DMatrix<f64>| (x - y).amax() < 1e-12;
        let dense = mul(mat_ref(&l), mat_ref(&a));
        let got = mul_triangular(
            (mat_ref(&l), Triangle::TriangularLower),
            (mat_ref(&a), Triangle::Rectangular),
            Triangle::Rectangular,
        );
        assert!(close(&got, &dense));
        let mut lower = mul(mat_ref(&a), mat_ref(&l).transpose());
        lower.fill_upper_triangle(0.0, 1);
        let got = mul_triangular(
            (mat_ref(&a), Triangle::Rectangular),
            (mat_ref(&l).transpose(), Triangle::TriangularUpper),
            Triangle::TriangularLower,
        );
        assert!(close(&got, &lower));
        let gram = mul(mat_ref(&l), mat_ref(&l).transpose());
        let got = mirror_lower(mul_triangular(
            (mat_ref(&l), Triangle::TriangularLower),
            (mat_ref(&l).transpose(), Triangle::TriangularUpper),
            Triangle::TriangularLower,
        ));
        assert!(close(&got, &gram));
    }

    #[test]
    fn no_escalation_for_a_well_conditioned_matrix() {
        let a = DMatrix::from_row_slice(2, 2, &[4.0, 1.0, 1.0, 3.0]);
        let ch = cholesky_jittered(&a, 2.0, &JitterPolicy::default()).expect("pd");
        assert_eq!(ch.escalations, 0);
        assert!((ch.jitter - 2e-6).abs() < 1e-18);
        let mut back = &ch.l * ch.l.transpose();
        back[(0, 0)] -= ch.jitter;
        back[(1, 1)] -= ch.jitter;
        assert!((back - a).norm() < 1e-12);
    }

    #[test]
    fn escalates_on_a_singular_matrix_and_reports_it() {
        // Rank one: needs jitter well above round-off to factorise.
        let v = DVector::from_vec(vec![1.0, 2.0, 3.0]);
        let a = &v * v.transpose();
        let policy = JitterPolicy {
            initial: 1e-20,
            ..JitterPolicy::default()
        };
        let ch = cholesky_jittered(&a, 1.0, &policy).expect("jitter rescues it");
        assert!(ch.escalations > 0);
        assert!(ch.eps > 1e-20);
    }

    #[test]
    fn fails_with_numerical_error_beyond_max_jitter() {
        let a = DMatrix::from_row_slice(2, 2, &[1.0, 0.0, 0.0, -1.0]);
        let err = cholesky_jittered(&a, 1.0, &JitterPolicy::default()).unwrap_err();
        assert!(matches!(err, Error::Numerical(_)));
        let nan = DMatrix::from_element(2, 2, f64::NAN);
        assert!(cholesky_jittered(&nan, 1.0, &JitterPolicy::default()).is_err());
    }

    #[test]
    fn products_match_nalgebra() {
        let a = DMatrix::from_fn(3, 4, |i, j| (i * 4 + j) as f64 * 0.3 - 1.0);
        let b = DMatrix::from_fn(4, 2, |i, j| (i + 2 * j) as f64 * 0.7 - 2.0);
        assert!((mul(mat_ref(&a), mat_ref(&b)) - &a * &b).amax() < 1e-12);
        let at_b = mul(mat_ref(&a).transpose(), mat_ref(&a));
        assert!((at_b - a.tr_mul(&a)).amax() < 1e-12);
        let mut acc = DMatrix::from_element(3, 2, 1.0);
        matmul_into(acc.as_mut_slice(), 3, true, mat_ref(&a), mat_ref(&b), -2.0);
        let want = DMatrix::from_element(3, 2, 1.0) - (&a * &b) * 2.0;
        assert!((acc - want).amax() < 1e-12);
    }

    #[test]
    fn every_solve_rejects_a_zero_on_the_diagonal() {
        let l = DMatrix::from_row_slice(2, 2, &[1.0, 0.0, 0.5, 0.0]);
        let b = DVector::from_vec(vec![1.0, 2.0]);
        let mut bm = DMatrix::from_element(2, 3, 1.0);
        assert!(solve_lower_vec(&l, &b).is_err());
        assert!(solve_lower_t_vec(&l, &b).is_err());
        assert!(solve_lower_mut(&l, &mut bm).is_err());
        assert!(solve_lower_t_mut(&l, &mut bm).is_err());
        assert!(lower_inverse(&l).is_err());
    }

    #[test]
    fn solves_and_inverse_agree() {
        let a = DMatrix::from_row_slice(3, 3, &[4.0, 1.0, 0.5, 1.0, 3.0, 0.2, 0.5, 0.2, 2.0]);
        let l = cholesky(&a).expect("pd");
        let inv = inverse_from_factor(&l).expect("ok");
        assert!((&inv * &a - DMatrix::identity(3, 3)).norm() < 1e-12);
        let b = DVector::from_vec(vec![1.0, -2.0, 0.5]);
        let x = solve_lower_t_vec(&l, &solve_lower_vec(&l, &b).expect("ok")).expect("ok");
        assert!((&a * x - b).norm() < 1e-12);
        assert!((log_det_from_factor(&l) - libm::log(a.determinant())).abs() < 1e-12);
    }
}
