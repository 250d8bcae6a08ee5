//! Likelihoods, gradients and posteriors: [`exact`] (full GP, O(N^3), for
//! subsets and reference) and [`fitc`] (SPGP/FITC, or Titsias' VFE bound, see
//! [`Approximation`], for any `crate::model::features::InducingFeatures`,
//! O(M^2 N)); the classifiers [`laplace`], `ivm` and [`svgp`];
//! [`objective`] packs a model into the flat `f64` vector an optimiser works
//! on, `shared` and `tied_ratio` sum P outputs on one basis.
//!
//! All NLMLs (and VFE's negative ELBO, an upper bound on the exact NLML) are
//! for the full data set (a sum over points, not a mean) and include the
//! `N/2 log(2 pi)` constant. Every posterior exports the single runtime form
//! of MATH.md as a `RuntimeForm`.

pub mod exact;
pub mod fitc;
pub(crate) mod ivm;
pub mod laplace;
pub mod objective;
pub(crate) mod shared;
pub mod svgp;
pub(crate) mod tied_ratio;

use nalgebra::{DMatrix, DVector};

use crate::model::features::RuntimeBasis;
use crate::model::kernel::KernelGrad;
use crate::numerics::linalg::{solve_lower_mut, symmetrise};
use crate::Result;

named_enum! {
    /// Which sparse objective [`fitc`] evaluates. Both share `Kuu`, `Kuf`, the
    /// forward pass, the adjoints and the runtime form; they differ only in the
    /// diagonal `Gamma` of the data covariance and in VFE's trace term.
    /// FITC can drive the noise to its floor and overfit; VFE is a true bound.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Approximation {
        /// SPGP's likelihood (Snelson & Ghahramani 2006): the Nystrom covariance
        /// plus the diagonal correction `Gamma = diag(Kff - Q) + sigma2 I`.
        Fitc = "fitc",
        /// Titsias' (2009) collapsed variational bound (GPflow's SGPR): the
        /// negative ELBO, `Gamma = sigma2 I` plus `tr(Kff - Q) / (2 sigma2)`.
        Vfe = "vfe",
    }
}

// `named_enum!` takes no `#[default]` on a variant.
#[allow(clippy::derivable_impls)]
impl Default for Approximation {
    fn default() -> Self {
        Approximation::Fitc
    }
}

/// Gradient of an NLML with respect to every free parameter of a model.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ModelGrad {
    /// d/d(feature parameters); empty for the exact GP.
    pub feature: Vec<f64>,
    /// d/d(log l, log s2).
    pub kernel: KernelGrad,
    /// d/d log_noise_excess (see [`crate::model::kernel::KernelParams`]).
    pub log_noise_excess: f64,
}

/// Predictions for a batch of inputs, in standardised units.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct Prediction {
    /// Latent (and predictive) mean.
    pub mean: DVector<f64>,
    /// Latent variance, clamped at zero as the runtime does.
    pub var: DVector<f64>,
    /// Noise variance `sigma2`, added for predictions of `y`.
    pub noise_var: f64,
}

impl Prediction {
    /// Predictive variance of `y`: latent variance plus noise.
    pub(crate) fn var_y(&self) -> DVector<f64> {
        self.var.add_scalar(self.noise_var)
    }
}

/// A trained model in the runtime form of MATH.md ("One runtime form"), in
/// standardised units and f64: the basis functions, the weights `beta`, the
/// lower-triangular factors and the prior, so that
/// `mean = sum_i beta_i k_i(z)` and
/// `var = max(0, prior - ||L1^{-1} k||^2 + ||L2^{-1} k||^2)`.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct RuntimeForm {
    /// The basis functions `k_i`.
    pub basis: RuntimeBasis,
    /// Weights `beta` (M).
    pub beta: DVector<f64>,
    /// First lower-triangular factor `L1` (M x M).
    pub l1: DMatrix<f64>,
    /// Second lower-triangular factor `L2` (M x M); absent for the exact GP
    /// and IVM.
    pub l2: Option<DMatrix<f64>>,
    /// Prior variance `k(x, x)` (= `s2`).
    pub prior: f64,
    /// Noise variance `sigma2`.
    pub noise_var: f64,
}

impl RuntimeForm {
    /// Evaluates the runtime formulas in f64 at the rows of `z`
    /// (standardised inputs): the reference for the f32 runtime.
    pub fn predict(&self, z: &DMatrix<f64>) -> Result<Prediction> {
        if z.ncols() != self.basis.input_dim() {
            return Err(crate::Error::BadInput(format!(
                "prediction inputs have {} columns, model expects {}",
                z.ncols(),
                self.basis.input_dim()
            )));
        }
        let k = self.basis.eval(z);
        let mean = k.tr_mul(&self.beta);
        let mut v1 = k.clone();
        solve_lower_mut(&self.l1, &mut v1)?;
        let mut var = col_sq_norms(&v1).map(|q| self.prior - q);
        if let Some(l2) = &self.l2 {
            let mut v2 = k;
            solve_lower_mut(l2, &mut v2)?;
            var += col_sq_norms(&v2);
        }
        Ok(Prediction {
            mean,
            var: var.map(|v| v.max(0.0)),
            noise_var: self.noise_var,
        })
    }
}

/// Squared Euclidean norm of every column.
pub(crate) fn col_sq_norms(m: &DMatrix<f64>) -> DVector<f64> {
    DVector::from_iterator(m.ncols(), m.column_iter().map(|c| c.norm_squared()))
}

/// `L^{-T} S L^{-1}` for symmetric `S`, as two triangular solves.
pub(crate) fn sandwich_inv_factor(l: &DMatrix<f64>, s: &DMatrix<f64>) -> Result<DMatrix<f64>> {
    let mut x = s.clone();
    crate::numerics::linalg::solve_lower_t_mut(l, &mut x)?;
    // x = L^{-T} S, so x^T = S L^{-1} and L^{-T} x^T is the sandwich.
    let mut y = x.transpose();
    crate::numerics::linalg::solve_lower_t_mut(l, &mut y)?;
    Ok(symmetrise(y))
}

#[cfg(test)]
pub(crate) mod test_util {
    //! Shared fixtures for the inference tests.

    use nalgebra::{DMatrix, DVector};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A smooth 2- or 3-D regression problem with noise, fixed seed.
    pub fn problem(seed: u64, n: usize, d: usize) -> (DMatrix<f64>, DVector<f64>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let x = DMatrix::from_fn(n, d, |_, _| rng.random_range(-2.0..2.0));
        let y = DVector::from_fn(n, |i, _| {
            let r = x.row(i);
            libm::sin(1.3_f64 * r[0])
                + 0.5 * libm::cos(r.iter().skip(1).sum::<f64>())
                + 0.1 * rng.random_range(-1.0..1.0)
        });
        (x, y)
    }

    /// Central-difference gradient of `f` at `p`.
    pub fn fd_grad(f: impl Fn(&[f64]) -> f64, p: &[f64], h: f64) -> Vec<f64> {
        (0..p.len())
            .map(|i| {
                let mut pp = p.to_vec();
                pp[i] += h;
                let fp = f(&pp);
                pp[i] -= 2.0 * h;
                let fm = f(&pp);
                (fp - fm) / (2.0 * h)
            })
            .collect()
    }

    /// Asserts `|num_i - ana_i| <= tol * max(1, |ana|_inf)` for every
    /// component, naming the first that fails.
    pub fn assert_grad_close(num: &[f64], ana: &[f64], tol: f64) {
        assert_eq!(num.len(), ana.len());
        let scale = ana.iter().fold(1.0_f64, |m, v| m.max(v.abs()));
        for (i, (a, b)) in num.iter().zip(ana).enumerate() {
            assert!(
                (a - b).abs() <= tol * scale,
                "component {i}: finite difference {a}, analytic {b} (scale {scale})"
            );
        }
    }
}
