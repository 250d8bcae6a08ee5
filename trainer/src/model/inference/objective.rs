//! The flat parameter vector an optimiser sees, and NLML-with-gradient
//! objectives over it, so fitting code needs only a closure.
//!
//! Layout: `[feature parameters | t_1..t_D | log s2 | log_noise_excess]`,
//! the feature block in the feature's own packing
//! (`InducingFeatures::params`), the length scales (left out when the
//! feature does not use them: DR) as `l = LENGTHSCALE_FLOOR + exp(t)`, and
//! the noise as `sigma2 = noise_floor + exp(log_noise_excess)`
//! (`KernelParams`): no bounds needed. Values are the NLML (VFE: the
//! negative ELBO) of the whole data, constants included.

use std::ops::Range;

use nalgebra::{DMatrix, DVector};

use super::exact::exact_nlml_grad;
use super::fitc::{fitc_nlml_grad, FitcConfig};
use super::ModelGrad;
use crate::model::features::InducingFeatures;
use crate::model::kernel::{KernelParams, LENGTHSCALE_FLOOR};
use crate::numerics::linalg::JitterPolicy;
use crate::{Error, Result};

/// Where each group of parameters sits in the flat vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ParamLayout {
    /// Number of feature parameters (0 for the exact GP).
    pub n_feature: usize,
    /// Number of log length scales in the vector (0 when unused).
    pub n_lengthscales: usize,
    /// The vector ends in the Gaussian likelihood's `log_noise_excess`
    /// (absent for a probit likelihood, which has no noise parameter).
    pub noise: bool,
}

impl ParamLayout {
    /// Layout for a sparse model with features `feat` and kernel `kern`.
    pub fn sparse<F: InducingFeatures + ?Sized>(feat: &F, kern: &KernelParams) -> Self {
        Self {
            n_feature: feat.num_params(),
            n_lengthscales: if feat.uses_lengthscales() {
                kern.dim()
            } else {
                0
            },
            noise: true,
        }
    }

    /// Layout for the exact GP: kernel and noise only.
    pub fn exact(kern: &KernelParams) -> Self {
        Self::latent(kern, crate::model::likelihood::Likelihood::Gaussian)
    }

    /// Layout for a GP on training inputs under `likelihood`: the kernel,
    /// and the noise only if the likelihood has one (IVM's active-set
    /// objective).
    pub fn latent(kern: &KernelParams, likelihood: crate::model::likelihood::Likelihood) -> Self {
        Self {
            n_feature: 0,
            n_lengthscales: kern.dim(),
            noise: likelihood.has_noise(),
        }
    }

    /// Total length of the vector.
    pub fn len(&self) -> usize {
        self.n_feature + self.n_lengthscales + 1 + usize::from(self.noise)
    }

    /// Indices of the feature parameters.
    pub(crate) fn feature_range(&self) -> Range<usize> {
        0..self.n_feature
    }

    /// Indices of the log length scales (empty when unused).
    pub(crate) fn lengthscale_range(&self) -> Range<usize> {
        self.n_feature..self.n_feature + self.n_lengthscales
    }

    /// Index of `log s2`.
    pub(crate) fn signal_var_index(&self) -> usize {
        self.n_feature + self.n_lengthscales
    }

    /// Index of `log_noise_excess`.
    pub(crate) fn noise_index(&self) -> usize {
        self.signal_var_index() + 1
    }

    /// Packs feature parameters (may be empty) and kernel hyperparameters.
    pub(crate) fn pack(&self, feature_params: &[f64], kern: &KernelParams) -> Vec<f64> {
        let mut p = Vec::with_capacity(self.len());
        p.extend_from_slice(feature_params);
        if self.n_lengthscales > 0 {
            p.extend(
                kern.log_lengthscales
                    .iter()
                    .map(|&v| lengthscale_to_free(v)),
            );
        }
        p.push(kern.log_signal_var);
        if self.noise {
            p.push(kern.log_noise_excess);
        }
        p
    }

    /// Writes `p` into `kern` (length scales only if in the layout) and
    /// returns the feature block.
    pub fn unpack<'p>(&self, p: &'p [f64], kern: &mut KernelParams) -> Result<&'p [f64]> {
        if p.len() != self.len() {
            return Err(Error::Numerical(format!(
                "parameter vector has {} entries, layout expects {}",
                p.len(),
                self.len()
            )));
        }
        if p.iter().any(|v| !v.is_finite()) {
            return Err(Error::Numerical("non-finite parameter vector".into()));
        }
        if self.n_lengthscales > 0 {
            kern.log_lengthscales = p[self.lengthscale_range()]
                .iter()
                .map(|&t| free_to_lengthscale(t))
                .collect();
        }
        kern.log_signal_var = p[self.signal_var_index()];
        if self.noise {
            kern.log_noise_excess = p[self.noise_index()];
        }
        Ok(&p[self.feature_range()])
    }

    /// Flattens a gradient at the parameter vector `p` into this layout.
    pub(crate) fn pack_grad(&self, p: &[f64], g: &ModelGrad) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.len());
        out.extend_from_slice(&g.feature);
        if self.n_lengthscales > 0 {
            // d log l / d t = exp(t) / (floor + exp(t)).
            out.extend(
                g.kernel
                    .log_lengthscales
                    .iter()
                    .zip(&p[self.lengthscale_range()])
                    .map(|(d, &t)| d * libm::exp(t) / (LENGTHSCALE_FLOOR + libm::exp(t))),
            );
        }
        out.push(g.kernel.log_signal_var);
        if self.noise {
            out.push(g.log_noise_excess);
        }
        out
    }
}

/// `log l` from its free parameter `t`: `l = floor + exp(t)`.
fn free_to_lengthscale(t: f64) -> f64 {
    libm::log(LENGTHSCALE_FLOOR + libm::exp(t))
}

/// The free parameter of `log l`; a length scale at or below the floor is
/// placed just above it.
fn lengthscale_to_free(log_l: f64) -> f64 {
    let excess = libm::exp(log_l) - LENGTHSCALE_FLOOR;
    if excess > 0.0 {
        libm::log(excess)
    } else {
        libm::log(1e-3 * LENGTHSCALE_FLOOR)
    }
}

/// The sparse objective (FITC or VFE, per [`FitcConfig::approximation`])
/// over one feature kind: borrows the data, owns
/// templates of the feature and the kernel (which fix M, D and the noise
/// floor) and evaluates NLML and gradient at any parameter vector.
#[derive(Clone, Debug)]
pub(crate) struct SparseObjective<'d, F> {
    x: &'d DMatrix<f64>,
    y: &'d DVector<f64>,
    feature: F,
    kernel: KernelParams,
    layout: ParamLayout,
    config: FitcConfig,
}

impl<'d, F: InducingFeatures + Clone> SparseObjective<'d, F> {
    /// An objective starting from `feature` and `kernel` (whose current
    /// values are [`Self::initial`]).
    pub fn new(
        x: &'d DMatrix<f64>,
        y: &'d DVector<f64>,
        feature: F,
        kernel: KernelParams,
        config: FitcConfig,
    ) -> Result<Self> {
        if x.nrows() != y.len() || x.ncols() != feature.input_dim() {
            return Err(Error::BadInput(format!(
                "x is {}x{}, y has {} entries, features expect {} dimensions",
                x.nrows(),
                x.ncols(),
                y.len(),
                feature.input_dim()
            )));
        }
        let layout = ParamLayout::sparse(&feature, &kernel);
        Ok(Self {
            x,
            y,
            feature,
            kernel,
            layout,
            config,
        })
    }

    /// The parameter layout.
    pub fn layout(&self) -> ParamLayout {
        self.layout
    }

    /// The starting parameter vector.
    pub fn initial(&self) -> Vec<f64> {
        self.layout.pack(&self.feature.params(), &self.kernel)
    }

    /// The model at `p`.
    pub fn unpack(&self, p: &[f64]) -> Result<(F, KernelParams)> {
        let mut kern = self.kernel.clone();
        let fp = self.layout.unpack(p, &mut kern)?;
        let mut feat = self.feature.clone();
        feat.set_params(fp)?;
        Ok((feat, kern))
    }

    /// The objective at `p`.
    #[cfg(test)]
    pub fn value(&self, p: &[f64]) -> Result<f64> {
        let (f, k) = self.unpack(p)?;
        Ok(super::fitc::fitc_nlml(&f, &k, self.x, self.y, &self.config)?.nlml)
    }

    /// The objective and its gradient at `p`.
    pub fn objective(&self, p: &[f64]) -> Result<(f64, Vec<f64>)> {
        let (f, k) = self.unpack(p)?;
        let v = fitc_nlml_grad(&f, &k, self.x, self.y, &self.config)?;
        let g = v
            .grad
            .ok_or_else(|| Error::Numerical("sparse objective returned no gradient".into()))?;
        Ok((v.nlml, self.layout.pack_grad(p, &g)))
    }
}

/// The exact-GP objective over `[log l | log s2 | log_noise_excess]`.
#[derive(Clone, Debug)]
pub(crate) struct ExactObjective<'d> {
    x: &'d DMatrix<f64>,
    y: &'d DVector<f64>,
    kernel: KernelParams,
    layout: ParamLayout,
    jitter: JitterPolicy,
}

impl<'d> ExactObjective<'d> {
    /// An objective starting from `kernel`.
    pub fn new(
        x: &'d DMatrix<f64>,
        y: &'d DVector<f64>,
        kernel: KernelParams,
        jitter: JitterPolicy,
    ) -> Result<Self> {
        if x.nrows() != y.len() || x.ncols() != kernel.dim() {
            return Err(Error::BadInput(format!(
                "x is {}x{}, y has {} entries, kernel has {} dimensions",
                x.nrows(),
                x.ncols(),
                y.len(),
                kernel.dim()
            )));
        }
        let layout = ParamLayout::exact(&kernel);
        Ok(Self {
            x,
            y,
            kernel,
            layout,
            jitter,
        })
    }

    /// The parameter layout.
    pub fn layout(&self) -> ParamLayout {
        self.layout
    }

    /// The starting parameter vector.
    pub fn initial(&self) -> Vec<f64> {
        self.layout.pack(&[], &self.kernel)
    }

    /// The kernel at `p`.
    pub fn unpack(&self, p: &[f64]) -> Result<KernelParams> {
        let mut kern = self.kernel.clone();
        self.layout.unpack(p, &mut kern)?;
        Ok(kern)
    }

    /// NLML at `p`.
    #[cfg(test)]
    pub fn value(&self, p: &[f64]) -> Result<f64> {
        let k = self.unpack(p)?;
        Ok(super::exact::exact_posterior(&k, self.x, self.y, &self.jitter)?.nlml())
    }

    /// NLML and its gradient at `p`.
    pub fn objective(&self, p: &[f64]) -> Result<(f64, Vec<f64>)> {
        let k = self.unpack(p)?;
        let (v, g) = exact_nlml_grad(&k, self.x, self.y, &self.jitter)?;
        Ok((v, self.layout.pack_grad(p, &g)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::features::PseudoInputs;
    use crate::model::inference::test_util::{assert_grad_close, fd_grad, problem};
    use crate::model::inference::Approximation;

    fn check_sparse_objective(approximation: Approximation) {
        let (x, y) = problem(41, 30, 3);
        let z = DMatrix::from_fn(5, 3, |i, d| x[(i * 6, d)] + 0.03);
        let feat = PseudoInputs::new(z).expect("valid");
        let kern = KernelParams::new(&[1.1, 0.8, 1.5], 1.3, 0.05).expect("valid");
        let config = FitcConfig {
            approximation,
            ..FitcConfig::default()
        };
        let obj = SparseObjective::new(&x, &y, feat.clone(), kern.clone(), config).expect("valid");
        let p = obj.initial();
        assert_eq!(p.len(), 15 + 3 + 2);
        let (f2, k2) = obj.unpack(&p).expect("ok");
        assert_eq!(f2, feat);
        assert_eq!(k2, kern);
        let (v, g) = obj.objective(&p).expect("ok");
        assert!((v - obj.value(&p).expect("ok")).abs() < 1e-12 * v.abs());
        let num = fd_grad(|q| obj.value(q).expect("ok"), &p, 1e-5);
        assert_grad_close(&num, &g, 1e-6);
        assert!(obj.objective(&p[1..]).is_err());
        let mut bad = p.clone();
        bad[0] = f64::NAN;
        assert!(obj.objective(&bad).is_err());
    }

    #[test]
    fn sparse_objective_gradient_and_round_trip() {
        check_sparse_objective(Approximation::Fitc);
    }

    #[test]
    fn vfe_sparse_objective_gradient_and_round_trip() {
        check_sparse_objective(Approximation::Vfe);
    }

    #[test]
    fn length_scales_never_go_below_the_floor() {
        let kern = KernelParams::new(&[2.0, 1e-9], 1.0, 0.1).expect("valid");
        let layout = ParamLayout::exact(&kern);
        let p = layout.pack(&[], &kern);
        let mut back = kern.clone();
        layout.unpack(&p, &mut back).expect("finite");
        assert!((back.lengthscales()[0] - 2.0).abs() < 1e-12);
        // Below the floor on the way in, just above it on the way out.
        let l = back.lengthscales()[1];
        assert!(l > LENGTHSCALE_FLOOR && l < 1.01 * LENGTHSCALE_FLOOR, "{l}");
        let mut far = p.clone();
        far[1] = -1e3;
        layout.unpack(&far, &mut back).expect("finite");
        assert!(back.lengthscales()[1] >= LENGTHSCALE_FLOOR);
    }

    #[test]
    fn exact_objective_gradient() {
        let (x, y) = problem(42, 25, 2);
        let kern = KernelParams::new(&[0.9, 1.2], 0.8, 0.1).expect("valid");
        let obj = ExactObjective::new(&x, &y, kern, JitterPolicy::default()).expect("valid");
        let p = obj.initial();
        assert_eq!(p.len(), 4);
        let (_, g) = obj.objective(&p).expect("ok");
        let num = fd_grad(|q| obj.value(q).expect("ok"), &p, 1e-5);
        assert_grad_close(&num, &g, 1e-6);
    }
}
