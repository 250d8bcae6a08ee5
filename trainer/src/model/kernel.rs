//! The ARD squared-exponential kernel
//! `k(x, x') = s2 * exp(-1/2 * sum_d (x_d - x'_d)^2 / l_d^2)` (or, by
//! [`KernelParams::kernel`], a Matérn one of the same scaled distance:
//! [`crate::model::matern`]), its hyperparameters in the space the optimiser sees, and the chain rule
//! from an adjoint of a covariance matrix back to the hyperparameters and the
//! points.
//!
//! Matrices of points always hold one point per row (N x D).

use nalgebra::{DMatrix, Dyn, Matrix, Storage};
use rayon::prelude::*;

use sgp_runtime::Kernel;

use crate::model::matern::{matern_cross, matern_cross_grad};
use crate::numerics::linalg::{mat_ref, matmul_into, mul};
use crate::{Error, Result};

/// Default floor on the noise variance, in units of the (standardised)
/// target variance. FITC drives `sigma2` towards zero because its diagonal
/// correction absorbs the noise (MATH.md); GPflow uses the same `1e-6`.
pub(crate) const DEFAULT_NOISE_FLOOR: f64 = 1e-6;

/// Floor on every length scale, in standardised input units (the optimiser
/// cannot go below it; see [`crate::model::inference::objective`]): duplicated
/// rows otherwise drive a length scale towards zero, a basis f32 cannot evaluate.
pub(crate) const LENGTHSCALE_FLOOR: f64 = 1e-3;

/// An excess noise below this fraction of the floor counts as "on the floor":
/// at that point the floor, not the data, sets the noise variance.
const ON_FLOOR_FRACTION: f64 = 1e-2;

/// Below this many output entries a covariance matrix is built serially:
/// spawning rayon tasks costs more than the work.
const PAR_MIN_ENTRIES: usize = 1 << 16;

/// Hyperparameters of the ARD squared-exponential kernel plus the Gaussian
/// noise, in the unconstrained space the optimiser works in.
///
/// The noise variance is `sigma2 = noise_floor + exp(log_noise_excess)`, so it
/// can approach but never cross the floor; see [`KernelParams::noise_on_floor`].
#[derive(Clone, Debug, PartialEq)]
pub struct KernelParams {
    /// `log l_d`, one per input dimension.
    pub log_lengthscales: Vec<f64>,
    /// `log s2`, the log signal (prior) variance.
    pub log_signal_var: f64,
    /// `log(sigma2 - noise_floor)`.
    pub log_noise_excess: f64,
    /// Lower bound on `sigma2`; not optimised.
    pub noise_floor: f64,
    /// The covariance function of the scaled distance (not optimised):
    /// squared exponential unless set by [`KernelParams::with_kernel`].
    pub kernel: Kernel,
}

/// Gradient of a scalar with respect to the kernel's log hyperparameters
/// (noise excluded: covariance matrices of the latent function do not depend
/// on it).
#[derive(Clone, Debug, PartialEq)]
pub struct KernelGrad {
    /// d/d log l_d.
    pub log_lengthscales: Vec<f64>,
    /// d/d log s2.
    pub log_signal_var: f64,
}

impl KernelGrad {
    /// A zero gradient for a `dim`-dimensional kernel.
    pub fn zeros(dim: usize) -> Self {
        Self {
            log_lengthscales: vec![0.0; dim],
            log_signal_var: 0.0,
        }
    }

    /// Adds `other` into `self`.
    pub(crate) fn add_assign(&mut self, other: &KernelGrad) {
        for (a, b) in self
            .log_lengthscales
            .iter_mut()
            .zip(&other.log_lengthscales)
        {
            *a += b;
        }
        self.log_signal_var += other.log_signal_var;
    }
}

/// The result of [`KernelParams::cross_grad`].
#[derive(Clone, Debug)]
pub(crate) struct CrossGrad {
    /// Gradient with respect to the rows of `a` (same shape as `a`), if asked.
    pub a: Option<DMatrix<f64>>,
    /// Gradient with respect to the rows of `b` (same shape as `b`), if asked.
    pub b: Option<DMatrix<f64>>,
    /// Gradient with respect to the log hyperparameters.
    pub kernel: KernelGrad,
}

impl KernelParams {
    /// Builds parameters from natural values, with the default noise floor.
    ///
    /// A `noise_var` at or below the floor is placed just above it (the
    /// excess is set to 1e-3 of the floor), so a starting point taken from a
    /// noiseless heuristic is still valid.
    pub fn new(lengthscales: &[f64], signal_var: f64, noise_var: f64) -> Result<Self> {
        Self::with_noise_floor(lengthscales, signal_var, noise_var, DEFAULT_NOISE_FLOOR)
    }

    /// As [`KernelParams::new`] with an explicit noise floor (>= 0).
    pub fn with_noise_floor(
        lengthscales: &[f64],
        signal_var: f64,
        noise_var: f64,
        noise_floor: f64,
    ) -> Result<Self> {
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if lengthscales.is_empty() || !lengthscales.iter().all(|&l| positive(l)) {
            return Err(Error::BadInput(format!(
                "length scales must be finite and positive, got {lengthscales:?}"
            )));
        }
        if !positive(signal_var) {
            return Err(Error::BadInput(format!(
                "signal variance must be finite and positive, got {signal_var}"
            )));
        }
        if !positive(noise_var) {
            return Err(Error::BadInput(format!(
                "noise variance must be finite and positive, got {noise_var}"
            )));
        }
        if !(noise_floor.is_finite() && noise_floor >= 0.0) {
            return Err(Error::BadInput(format!(
                "noise floor must be finite and non-negative, got {noise_floor}"
            )));
        }
        let excess = if noise_var > noise_floor {
            noise_var - noise_floor
        } else {
            // With a zero floor `noise_var > 0` already took the branch above.
            1e-3 * noise_floor
        };
        Ok(Self {
            log_lengthscales: lengthscales.iter().map(|l| libm::log(*l)).collect(),
            log_signal_var: libm::log(signal_var),
            log_noise_excess: libm::log(excess),
            noise_floor,
            kernel: Kernel::SquaredExponential,
        })
    }

    /// The same hyperparameters with covariance function `kernel`.
    pub fn with_kernel(mut self, kernel: Kernel) -> Self {
        self.kernel = kernel;
        self
    }

    /// Input dimension D.
    pub fn dim(&self) -> usize {
        self.log_lengthscales.len()
    }

    /// Length scales `l_d`.
    pub fn lengthscales(&self) -> Vec<f64> {
        self.log_lengthscales
            .iter()
            .map(|v| libm::exp(*v))
            .collect()
    }

    /// Inverse squared length scales `w_d = 1 / l_d^2`: the runtime's shared
    /// widths.
    pub fn inv_sq_lengthscales(&self) -> Vec<f64> {
        self.log_lengthscales
            .iter()
            .map(|v| libm::exp(-2.0 * v))
            .collect()
    }

    /// Signal variance `s2`, which is also the prior variance `k(x, x)`.
    pub fn signal_var(&self) -> f64 {
        libm::exp(self.log_signal_var)
    }

    /// Noise variance `sigma2 = noise_floor + exp(log_noise_excess)`.
    pub fn noise_var(&self) -> f64 {
        self.noise_floor + self.noise_excess()
    }

    /// The part of `sigma2` above the floor; `d sigma2 / d log_noise_excess`.
    pub(crate) fn noise_excess(&self) -> f64 {
        libm::exp(self.log_noise_excess)
    }

    /// True when the noise variance is effectively the floor (the excess is
    /// below 1% of it): the fit wanted less noise than the floor allows, which
    /// callers should report (MATH.md, FITC noise collapse).
    pub fn noise_on_floor(&self) -> bool {
        self.noise_floor > 0.0 && self.noise_excess() <= ON_FLOOR_FRACTION * self.noise_floor
    }

    /// The same hyperparameters on the noise floor `floor`: the noise
    /// variance kept where it is above it, else placed just above it (as
    /// [`KernelParams::with_noise_floor`]).
    pub(crate) fn on_noise_floor(&self, floor: f64) -> Self {
        let noise = self.noise_var();
        let excess = if noise > floor {
            noise - floor
        } else {
            1e-3 * floor
        };
        Self {
            noise_floor: floor,
            log_noise_excess: libm::log(excess),
            ..self.clone()
        }
    }

    /// True when every hyperparameter is finite.
    pub fn is_finite(&self) -> bool {
        self.log_lengthscales.iter().all(|v| v.is_finite())
            && self.log_signal_var.is_finite()
            && self.log_noise_excess.is_finite()
    }

    /// Covariance matrix `K[i, j] = k(a_i, b_j)` between the rows of `a`
    /// (P x D) and the rows of `b` (Q x D).
    ///
    /// # Panics
    /// If `a` or `b` does not have D columns (a caller bug: data dimensions
    /// are validated long before this point).
    pub fn cross<SA, SB>(
        &self,
        a: &Matrix<f64, Dyn, Dyn, SA>,
        b: &Matrix<f64, Dyn, Dyn, SB>,
    ) -> DMatrix<f64>
    where
        SA: Storage<f64, Dyn, Dyn>,
        SB: Storage<f64, Dyn, Dyn>,
    {
        self.check_dims(a.ncols(), b.ncols());
        self.scaled(&self.inv_lengthscales()).cross(a, b)
    }

    /// Chain rule through `K = cross(a, b)`: given `k` (that matrix, already
    /// computed) and `adj = dF/dK` (same shape), returns `dF/da`, `dF/db` (each
    /// only if asked) and `dF/d(log l, log s2)`.
    ///
    /// `adj` is the gradient with every entry of `K` treated as independent;
    /// for `a == b` (a symmetric matrix) pass the full adjoint and add the `a`
    /// and `b` gradients. Cost O(P Q D), like building `K`.
    ///
    /// # Panics
    /// On dimension mismatch (a caller bug).
    pub(crate) fn cross_grad<SA, SB>(
        &self,
        a: &Matrix<f64, Dyn, Dyn, SA>,
        b: &Matrix<f64, Dyn, Dyn, SB>,
        k: &DMatrix<f64>,
        adj: &DMatrix<f64>,
        want_a: bool,
        want_b: bool,
    ) -> CrossGrad
    where
        SA: Storage<f64, Dyn, Dyn>,
        SB: Storage<f64, Dyn, Dyn>,
    {
        self.check_dims(a.ncols(), b.ncols());
        self.scaled(&self.inv_lengthscales())
            .cross_grad(a, b, k, adj, want_a, want_b)
    }

    /// Inverse length scales `1 / l_d`: the scales [`se_cross`] takes.
    pub(crate) fn inv_lengthscales(&self) -> Vec<f64> {
        self.log_lengthscales
            .iter()
            .map(|v| libm::exp(-v))
            .collect()
    }

    /// This kernel's covariance function and signal variance with scales `inv_l`.
    pub(crate) fn scaled<'a>(&self, inv_l: &'a [f64]) -> Scaled<'a> {
        Scaled {
            kernel: self.kernel,
            inv_l,
            s2: self.signal_var(),
        }
    }

    fn check_dims(&self, da: usize, db: usize) {
        assert!(
            da == self.dim() && db == self.dim(),
            "kernel has {} dimensions, points have {da} and {db}",
            self.dim()
        );
    }
}

/// A covariance function with explicit inverse length scales `inv_l` and
/// signal variance `s2` (SPGP+DR's projected space has unit scales).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scaled<'a> {
    pub kernel: Kernel,
    pub inv_l: &'a [f64],
    pub s2: f64,
}

impl Scaled<'_> {
    /// The cross-covariance: [`se_cross`] or [`matern_cross`].
    pub(crate) fn cross<SA, SB>(
        &self,
        a: &Matrix<f64, Dyn, Dyn, SA>,
        b: &Matrix<f64, Dyn, Dyn, SB>,
    ) -> DMatrix<f64>
    where
        SA: Storage<f64, Dyn, Dyn>,
        SB: Storage<f64, Dyn, Dyn>,
    {
        match self.kernel {
            Kernel::SquaredExponential => se_cross(a, b, self.inv_l, self.s2),
            matern => matern_cross(matern, a, b, self.inv_l, self.s2),
        }
    }

    /// The chain rule through [`Scaled::cross`]: [`se_cross_grad`] or
    /// [`matern_cross_grad`].
    pub(crate) fn cross_grad<SA, SB>(
        &self,
        a: &Matrix<f64, Dyn, Dyn, SA>,
        b: &Matrix<f64, Dyn, Dyn, SB>,
        k: &DMatrix<f64>,
        adj: &DMatrix<f64>,
        want_a: bool,
        want_b: bool,
    ) -> CrossGrad
    where
        SA: Storage<f64, Dyn, Dyn>,
        SB: Storage<f64, Dyn, Dyn>,
    {
        let (inv_l, s2) = (self.inv_l, self.s2);
        match self.kernel {
            Kernel::SquaredExponential => se_cross_grad(a, b, inv_l, k, adj, want_a, want_b),
            matern => matern_cross_grad(matern, a, b, inv_l, s2, k, adj, want_a, want_b),
        }
    }
}

/// The squared-exponential cross-covariance with explicit scales:
/// `K[i, j] = s2 exp(-1/2 sum_t (inv_l_t (a_it - b_jt))^2)` between the rows
/// of `a` (P x T) and `b` (Q x T), `inv_l` holding T inverse length scales
/// (all 1 for a kernel with unit length scales, as in SPGP+DR's projected
/// space). [`KernelParams::cross`] is this with the kernel's own scales.
///
/// The squared distances come from one GEMM,
/// `|u_i - v_j|^2 = |u_i|^2 + |v_j|^2 - 2 u_i . v_j` (`u = a / l`,
/// `v = b / l`), both sets shifted by the mean of `u` so the expanded form
/// does not cancel far from the origin; a negative distance counts as zero.
///
/// # Panics
/// If `a`, `b` and `inv_l` disagree on T (a caller bug).
pub(crate) fn se_cross<SA, SB>(
    a: &Matrix<f64, Dyn, Dyn, SA>,
    b: &Matrix<f64, Dyn, Dyn, SB>,
    inv_l: &[f64],
    s2: f64,
) -> DMatrix<f64>
where
    SA: Storage<f64, Dyn, Dyn>,
    SB: Storage<f64, Dyn, Dyn>,
{
    check_scales(a.ncols(), b.ncols(), inv_l);
    let (p, q) = (a.nrows(), b.nrows());
    let mut out = DMatrix::<f64>::zeros(p, q);
    if p == 0 || q == 0 {
        return out;
    }
    let shift = scaled_mean(a, inv_l);
    let sa = scaled_points(a, inv_l, &shift);
    let sb = scaled_points(b, inv_l, &shift);
    let na: Vec<f64> = sa.row_iter().map(|r| r.norm_squared()).collect();
    let nb: Vec<f64> = sb.row_iter().map(|r| r.norm_squared()).collect();
    // Column-major output: one task owns a block of whole columns, so
    // tasks never share memory.
    let fill = |(j0, block): (usize, &mut [f64])| {
        let w = block.len() / p;
        let rhs = mat_ref(&sb).subrows(j0, w).transpose();
        matmul_into(block, p, false, mat_ref(&sa), rhs, 1.0);
        se_from_dots(block, &na, &nb[j0..j0 + w], s2);
    };
    if p * q < PAR_MIN_ENTRIES {
        fill((0, out.as_mut_slice()));
    } else {
        let cols_per_task = (PAR_MIN_ENTRIES / 4 / p).max(1);
        out.as_mut_slice()
            .par_chunks_mut(cols_per_task * p)
            .enumerate()
            .map(|(t, block)| (t * cols_per_task, block))
            .for_each(fill);
    }
    out
}

/// Chain rule through `K = se_cross(a, b, inv_l, s2)`: given `k` (that
/// matrix, already computed) and `adj = dF/dK` (same shape), returns
/// `dF/da`, `dF/db` (each only if asked) and `dF/d(log l, log s2)`, where
/// `log l_t = -ln inv_l_t` (ignore those when the scales are fixed).
///
/// `adj` is the gradient with every entry of `K` treated as independent;
/// for `a == b` (a symmetric matrix) pass the full adjoint and add the `a`
/// and `b` gradients. Cost O(P Q T), like building `K`: with `B = adj o K`,
/// its row sums `r` and column sums `c`, `dF/du = B v - diag(r) u` and
/// `dF/dv = B^T u - diag(c) v` are one GEMM each (`u = a / l`, `v = b / l`).
///
/// # Panics
/// On dimension mismatch (a caller bug).
pub(crate) fn se_cross_grad<SA, SB>(
    a: &Matrix<f64, Dyn, Dyn, SA>,
    b: &Matrix<f64, Dyn, Dyn, SB>,
    inv_l: &[f64],
    k: &DMatrix<f64>,
    adj: &DMatrix<f64>,
    want_a: bool,
    want_b: bool,
) -> CrossGrad
where
    SA: Storage<f64, Dyn, Dyn>,
    SB: Storage<f64, Dyn, Dyn>,
{
    let d = check_scales(a.ncols(), b.ncols(), inv_l);
    let (p, q) = (a.nrows(), b.nrows());
    assert_eq!(k.shape(), (p, q), "covariance shape");
    assert_eq!(adj.shape(), (p, q), "adjoint shape");
    if p == 0 || q == 0 {
        return CrossGrad {
            a: want_a.then(|| DMatrix::zeros(p, d)),
            b: want_b.then(|| DMatrix::zeros(q, d)),
            kernel: KernelGrad::zeros(d),
        };
    }
    let shift = scaled_mean(a, inv_l);
    let sa = scaled_points(a, inv_l, &shift);
    let sb = scaled_points(b, inv_l, &shift);
    let bm = adj.zip_map(k, |a, k| a * k);
    // Row and column sums as products with ones (vectorised, unlike a
    // running sum down each column).
    let r = mul(mat_ref(&bm), mat_ref(&DMatrix::from_element(q, 1, 1.0)));
    let c = mul(mat_ref(&DMatrix::from_element(1, p, 1.0)), mat_ref(&bm));
    let gs = c.sum();
    let bv = mul(mat_ref(&bm), mat_ref(&sb));
    let mut gl = vec![0.0; d];
    for (t, g) in gl.iter_mut().enumerate() {
        let (u, v, bvt) = (sa.column(t), sb.column(t), bv.column(t));
        let mut s = 0.0;
        for i in 0..p {
            s += u[i] * (r[i] * u[i] - 2.0 * bvt[i]);
        }
        for j in 0..q {
            s += c[j] * v[j] * v[j];
        }
        *g = s;
    }
    let ga =
        want_a.then(|| DMatrix::from_fn(p, d, |i, t| (bv[(i, t)] - r[i] * sa[(i, t)]) * inv_l[t]));
    let gb = want_b.then(|| {
        let btu = mul(mat_ref(&bm).transpose(), mat_ref(&sa));
        DMatrix::from_fn(q, d, |j, t| (btu[(j, t)] - c[j] * sb[(j, t)]) * inv_l[t])
    });
    CrossGrad {
        a: ga,
        b: gb,
        kernel: KernelGrad {
            log_lengthscales: gl,
            log_signal_var: gs,
        },
    }
}

/// `block[i, j] = s2 exp(-1/2 (na_i + nb_j - 2 block[i, j]))` (column-major,
/// `na.len()` rows): dot products `u_i . v_j` into SE kernel values.
///
/// Compiled also for AVX-512 and AVX2+FMA, the widest the CPU has running
/// (libm's scalar `exp` was a sixth of an objective); every version computes
/// the same bits: [`exp_nonpositive`] uses only IEEE operations and FMAs.
fn se_from_dots(block: &mut [f64], na: &[f64], nb: &[f64], s2: f64) {
    let p = na.len();
    let mut run = move || {
        for (col, nbj) in block.chunks_mut(p).zip(nb) {
            for (o, nai) in col.iter_mut().zip(na) {
                // -r2 / 2, never above 0.
                let e = (*o - 0.5 * (nai + nbj)).min(0.0);
                *o = s2 * exp_nonpositive(e);
            }
        }
    };
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = pulp::x86::V4::try_new() {
        return simd.vectorize(run);
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = pulp::x86::V3::try_new() {
        return simd.vectorize(run);
    }
    run()
}

/// `exp(x)` for `x <= 0`, within about one ulp of the exact value (the
/// differences from libm are last-bit roundings; checked against libm in
/// the tests), and exactly 0 below -708 where libm returns subnormals or
/// 0 (a kernel value under 1e-307 of `s2` changes nothing downstream).
///
/// `x = k ln 2 + r` with `k` the nearest integer to `x / ln 2` (by the
/// 1.5 * 2^52 rounding trick, so it vectorises), `ln 2` split in two
/// (fdlibm's constants) so `k ln2_hi` is exact, `|r| <= ln 2 / 2`;
/// `exp(r)` by its Taylor series to `r^13 / 13!` (the next term is below
/// 1e-17 relative) and `2^k` built in the exponent bits.
#[inline(always)]
fn exp_nonpositive(x: f64) -> f64 {
    const LOG2_E: f64 = std::f64::consts::LOG2_E;
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    const SHIFT: f64 = 6_755_399_441_055_744.0;
    const COEFFS: [f64; 14] = [
        1.0 / 6_227_020_800.0,
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ];
    let xc = x.max(-708.0);
    let shifted = xc.mul_add(LOG2_E, SHIFT);
    let k = shifted - SHIFT;
    let r = (-k).mul_add(LN2_LO, (-k).mul_add(LN2_HI, xc));
    let mut poly = COEFFS[0];
    for c in &COEFFS[1..] {
        poly = poly.mul_add(r, *c);
    }
    // The low bits of `shifted` hold k in two's complement.
    let k_int = shifted.to_bits().wrapping_sub(SHIFT.to_bits()) as i64;
    let scale = f64::from_bits(((k_int + 1023) as u64) << 52);
    if x < -708.0 {
        0.0
    } else {
        poly * scale
    }
}

/// Mean of the rows of `x` times the inverse length scales.
fn scaled_mean<S: Storage<f64, Dyn, Dyn>>(x: &Matrix<f64, Dyn, Dyn, S>, inv_l: &[f64]) -> Vec<f64> {
    let n = x.nrows().max(1) as f64;
    inv_l
        .iter()
        .enumerate()
        .map(|(t, il)| x.column(t).sum() * il / n)
        .collect()
}

/// `x / l - shift`, one point per row (column-major, as GEMM takes it).
fn scaled_points<S: Storage<f64, Dyn, Dyn>>(
    x: &Matrix<f64, Dyn, Dyn, S>,
    inv_l: &[f64],
    shift: &[f64],
) -> DMatrix<f64> {
    DMatrix::from_fn(x.nrows(), x.ncols(), |i, t| x[(i, t)] * inv_l[t] - shift[t])
}

/// The common dimension T of `a`, `b` and the scales.
fn check_scales(da: usize, db: usize, inv_l: &[f64]) -> usize {
    assert!(
        da == inv_l.len() && db == inv_l.len(),
        "{} scales, points have {da} and {db} dimensions",
        inv_l.len()
    );
    inv_l.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random_matrix(rng: &mut ChaCha8Rng, r: usize, c: usize) -> DMatrix<f64> {
        DMatrix::from_fn(r, c, |_, _| rng.random_range(-1.5..1.5))
    }

    #[test]
    fn cross_matches_definition_and_parallel_path() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let kern = KernelParams::new(&[0.7, 1.3], 2.0, 0.1).expect("valid");
        // Big enough to take the rayon path.
        let a = random_matrix(&mut rng, 300, 2);
        let b = random_matrix(&mut rng, 400, 2);
        let k = kern.cross(&a, &b);
        for &(i, j) in &[(0, 0), (17, 399), (299, 123)] {
            let r2 =
                ((a[(i, 0)] - b[(j, 0)]) / 0.7).powi(2) + ((a[(i, 1)] - b[(j, 1)]) / 1.3).powi(2);
            let want = 2.0 * libm::exp(-0.5 * r2);
            assert!((k[(i, j)] - want).abs() < 1e-14, "{i},{j}");
        }
    }

    #[test]
    fn cross_grad_matches_finite_differences() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let mut kern = KernelParams::new(&[0.8, 1.1, 0.5], 1.7, 0.1).expect("valid");
        let a = random_matrix(&mut rng, 4, 3);
        let b = random_matrix(&mut rng, 6, 3);
        let adj = random_matrix(&mut rng, 4, 6);
        let f = |kern: &KernelParams, a: &DMatrix<f64>, b: &DMatrix<f64>| {
            kern.cross(a, b).component_mul(&adj).sum()
        };
        let k = kern.cross(&a, &b);
        let g = kern.cross_grad(&a, &b, &k, &adj, true, true);
        let h = 1e-6;
        let rel = |num: f64, ana: f64| (num - ana).abs() / (1.0 + ana.abs());
        for t in 0..3 {
            let mut kp = kern.clone();
            kp.log_lengthscales[t] += h;
            let mut km = kern.clone();
            km.log_lengthscales[t] -= h;
            let num = (f(&kp, &a, &b) - f(&km, &a, &b)) / (2.0 * h);
            assert!(rel(num, g.kernel.log_lengthscales[t]) < 1e-8);
        }
        let base = kern.log_signal_var;
        kern.log_signal_var = base + h;
        let fp = f(&kern, &a, &b);
        kern.log_signal_var = base - h;
        let fm = f(&kern, &a, &b);
        kern.log_signal_var = base;
        assert!(rel((fp - fm) / (2.0 * h), g.kernel.log_signal_var) < 1e-8);
        let (ga, gb) = (g.a.expect("asked"), g.b.expect("asked"));
        for i in 0..4 {
            for t in 0..3 {
                let mut ap = a.clone();
                ap[(i, t)] += h;
                let mut am = a.clone();
                am[(i, t)] -= h;
                let num = (f(&kern, &ap, &b) - f(&kern, &am, &b)) / (2.0 * h);
                assert!(rel(num, ga[(i, t)]) < 1e-8);
            }
        }
        for j in 0..6 {
            for t in 0..3 {
                let mut bp = b.clone();
                bp[(j, t)] += h;
                let mut bm = b.clone();
                bm[(j, t)] -= h;
                let num = (f(&kern, &a, &bp) - f(&kern, &a, &bm)) / (2.0 * h);
                assert!(rel(num, gb[(j, t)]) < 1e-8);
            }
        }
    }

    /// The GEMM forms of `se_cross` and `se_cross_grad` against the
    /// definitions, evaluated entry by entry with direct differences, for
    /// points near the origin and for points far from it with small spreads
    /// (where the expanded distance would cancel without the shift).
    #[test]
    fn gemm_forms_match_direct_differences() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let inv_l = [1.0 / 0.7, 1.0 / 1.3, 2.0];
        for offset in [0.0, 1e3] {
            let a = random_matrix(&mut rng, 7, 3).add_scalar(offset);
            let b = random_matrix(&mut rng, 9, 3).add_scalar(offset);
            let adj = random_matrix(&mut rng, 7, 9);
            let k = se_cross(&a, &b, &inv_l, 1.3);
            let r2 = |i: usize, j: usize| {
                (0..3)
                    .map(|t| ((a[(i, t)] - b[(j, t)]) * inv_l[t]).powi(2))
                    .sum::<f64>()
            };
            let mut ga = DMatrix::<f64>::zeros(7, 3);
            let mut gb = DMatrix::<f64>::zeros(9, 3);
            let mut gl = [0.0; 3];
            let mut gs = 0.0;
            for i in 0..7 {
                for j in 0..9 {
                    let want = 1.3 * libm::exp(-0.5 * r2(i, j));
                    assert!(
                        (k[(i, j)] - want).abs() < 1e-12,
                        "offset {offset}: K {i},{j}"
                    );
                    let bij = adj[(i, j)] * want;
                    gs += bij;
                    for t in 0..3 {
                        let dt = (a[(i, t)] - b[(j, t)]) * inv_l[t];
                        gl[t] += bij * dt * dt;
                        ga[(i, t)] -= bij * dt * inv_l[t];
                        gb[(j, t)] += bij * dt * inv_l[t];
                    }
                }
            }
            let g = se_cross_grad(&a, &b, &inv_l, &k, &adj, true, true);
            let close = |x: f64, y: f64| (x - y).abs() < 1e-9 * (1.0 + y.abs());
            assert!(close(g.kernel.log_signal_var, gs));
            for (t, (got, want)) in g.kernel.log_lengthscales.iter().zip(&gl).enumerate() {
                assert!(close(*got, *want), "offset {offset}: l {t}");
            }
            let (a_got, b_got) = (g.a.expect("asked"), g.b.expect("asked"));
            assert!(a_got.iter().zip(ga.iter()).all(|(x, y)| close(*x, *y)));
            assert!(b_got.iter().zip(gb.iter()).all(|(x, y)| close(*x, *y)));
        }
    }

    #[test]
    fn explicit_scales_equal_prescaled_points_with_unit_scales() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let a = random_matrix(&mut rng, 3, 2);
        let b = random_matrix(&mut rng, 5, 2);
        let inv_l = [2.0, 0.25];
        let scale = |m: &DMatrix<f64>| DMatrix::from_fn(m.nrows(), 2, |i, t| m[(i, t)] * inv_l[t]);
        let k = se_cross(&a, &b, &inv_l, 1.7);
        let unit = se_cross(&scale(&a), &scale(&b), &[1.0, 1.0], 1.7);
        assert!((&k - unit).amax() < 1e-14);
        let kern = KernelParams::new(&[0.5, 4.0], 1.7, 0.1).expect("valid");
        assert!((kern.cross(&a, &b) - &k).amax() < 1e-14);
    }

    /// The polynomial exponential against libm over the whole range a
    /// kernel value can take: at most one ulp apart in the normal range.
    #[test]
    fn exp_nonpositive_matches_libm() {
        let mut worst = 0u64;
        for i in 0..=200_000 {
            let x = -708.0 * (i as f64 / 200_000.0).powi(3);
            let (got, want) = (exp_nonpositive(x), libm::exp(x));
            worst = worst.max(got.to_bits().abs_diff(want.to_bits()));
        }
        assert!(worst <= 1, "{worst} ulp");
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(exp_nonpositive(-709.0), 0.0);
        assert_eq!(exp_nonpositive(-1e300), 0.0);
    }

    /// The dispatched (vector) fill against the scalar formula, bit for
    /// bit, over the whole range of arguments the kernel meets.
    #[test]
    fn vector_fill_matches_scalar_bits() {
        let (p, q) = (13, 11);
        let na: Vec<f64> = (0..p).map(|i| 50.0 * i as f64 / p as f64).collect();
        let nb: Vec<f64> = (0..q)
            .map(|j| 900.0 * (j as f64 / q as f64).powi(3))
            .collect();
        let dots: Vec<f64> = (0..p * q)
            .map(|k| ((k * 37) % 101) as f64 * 0.1 - 5.0)
            .collect();
        let mut block = dots.clone();
        se_from_dots(&mut block, &na, &nb, 1.7);
        for (k, (got, dot)) in block.iter().zip(&dots).enumerate() {
            let e = (dot - 0.5 * (na[k % p] + nb[k / p])).min(0.0);
            let want = 1.7 * exp_nonpositive(e);
            assert_eq!(got.to_bits(), want.to_bits(), "entry {k}: {got} vs {want}");
        }
    }

    #[test]
    fn noise_floor_is_respected_and_reported() {
        let k = KernelParams::new(&[1.0], 1.0, 1e-9).expect("valid");
        assert!(k.noise_var() >= DEFAULT_NOISE_FLOOR);
        assert!(k.noise_on_floor());
        let k = KernelParams::new(&[1.0], 1.0, 0.05).expect("valid");
        assert!((k.noise_var() - 0.05).abs() < 1e-15);
        assert!(!k.noise_on_floor());
        assert!(KernelParams::new(&[1.0, -1.0], 1.0, 0.1).is_err());
        assert!(KernelParams::new(&[1.0], f64::NAN, 0.1).is_err());
    }
}
