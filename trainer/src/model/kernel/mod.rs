//! The ARD squared-exponential kernel
//! `k(x, x') = s2 * exp(-1/2 * sum_d (x_d - x'_d)^2 / l_d^2)` (or, by
//! `KernelParams::kernel`, a Matérn one of the same scaled distance:
//! `matern`), its hyperparameters in the space the optimiser sees, and the chain rule
//! from an adjoint of a covariance matrix back to the hyperparameters and the
//! points.
//!
//! Matrices of points always hold one point per row (N x D).

use nalgebra::{DMatrix, Dyn, Matrix, Storage};

use serde::{Deserialize, Serialize};
use sgp_runtime::Kernel;

pub(crate) mod matern;
mod scaled;
mod se;

use matern::{matern_cross, matern_cross_grad};
pub(crate) use scaled::KernelGrad;
pub(crate) use scaled::{CrossGrad, Scaled};
pub(crate) use se::{se_cross, se_cross_grad};

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

/// Hyperparameters of the ARD squared-exponential kernel plus the Gaussian
/// noise, in the unconstrained space the optimiser works in.
///
/// The noise variance is `sigma2 = noise_floor + exp(log_noise_excess)`, so it
/// can approach but never cross the floor; see [`KernelParams::noise_on_floor`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct KernelParams {
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
            _ => matern_cross(self, a, b),
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
        match self.kernel {
            Kernel::SquaredExponential => se_cross_grad(a, b, self.inv_l, k, adj, want_a, want_b),
            _ => matern_cross_grad(self, a, b, k, adj, want_a, want_b),
        }
    }
}

/// An `r x c` matrix of entries uniform on `[-1.5, 1.5)`: the points the
/// kernels' tests evaluate at.
#[cfg(test)]
pub(crate) fn random_matrix(rng: &mut rand_chacha::ChaCha8Rng, r: usize, c: usize) -> DMatrix<f64> {
    use rand::Rng;
    DMatrix::from_fn(r, c, |_, _| rng.random_range(-1.5..1.5))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

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
