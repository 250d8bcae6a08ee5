//! The full GP: NLML, its gradient, prediction and runtime form. O(N^3) time
//! and O(N^2) memory, so only for subsets (a few thousand points), for
//! hyperparameter initialisation and as the reference SPGP must approach.
//!
//! `K_y = K + sigma2 I + jitter I` with `jitter = eps * s2` from
//! `crate::numerics::linalg::cholesky_jittered`. The jitter is part of the model
//! (it also appears in the exported `L1`), so its `log s2` derivative is
//! included in the gradient.

use std::f64::consts::PI;

use nalgebra::{DMatrix, DVector};

use super::{col_sq_norms, ModelGrad, Prediction, RuntimeForm};
use crate::model::features::{InducingFeatures, PseudoInputs};
use crate::model::kernel::{KernelGrad, KernelParams};
use crate::numerics::linalg::{
    cholesky_jittered, inverse_from_factor, solve_lower_mut, solve_lower_t_vec, solve_lower_vec,
    JitterPolicy, JitteredCholesky,
};
use crate::{Error, Result};

/// The factorised exact GP: everything prediction and the NLML need.
#[derive(Clone, Debug)]
pub(crate) struct ExactPosterior {
    x: DMatrix<f64>,
    kern: KernelParams,
    chol: JitteredCholesky,
    alpha: DVector<f64>,
    nlml: f64,
}

/// Factorises `K + sigma2 I` for inputs `x` (N x D) and targets `y`.
pub(crate) fn exact_posterior(
    kern: &KernelParams,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    jitter: &JitterPolicy,
) -> Result<ExactPosterior> {
    check_data(kern, x, y)?;
    let mut ky = kern.cross(x, x);
    let s2n = kern.noise_var();
    for i in 0..ky.nrows() {
        ky[(i, i)] += s2n;
    }
    let chol = cholesky_jittered(&ky, kern.signal_var(), jitter)?;
    let c = solve_lower_vec(&chol.l, y)?;
    let alpha = solve_lower_t_vec(&chol.l, &c)?;
    let n = y.len() as f64;
    let nlml = 0.5 * c.norm_squared() + 0.5 * chol.log_det() + 0.5 * n * libm::log(2.0 * PI);
    Ok(ExactPosterior {
        x: x.clone(),
        kern: kern.clone(),
        chol,
        alpha,
        nlml,
    })
}

impl ExactPosterior {
    /// NLML of the training data (full data, not per point).
    pub fn nlml(&self) -> f64 {
        self.nlml
    }

    /// The absolute jitter that was added to `K + sigma2 I`.
    #[cfg(test)]
    pub fn jitter(&self) -> f64 {
        self.chol.jitter
    }

    /// How many times the jitter had to be raised.
    pub fn jitter_escalations(&self) -> u32 {
        self.chol.escalations
    }

    /// Predictive mean and latent variance at the rows of `xs`.
    pub fn predict(&self, xs: &DMatrix<f64>) -> Result<Prediction> {
        if xs.ncols() != self.kern.dim() {
            return Err(Error::BadInput(format!(
                "prediction inputs have {} columns, model has {}",
                xs.ncols(),
                self.kern.dim()
            )));
        }
        let mut k = self.kern.cross(&self.x, xs);
        let mean = k.tr_mul(&self.alpha);
        solve_lower_mut(&self.chol.l, &mut k)?;
        let s2 = self.kern.signal_var();
        let var = col_sq_norms(&k).map(|q| (s2 - q).max(0.0));
        Ok(Prediction {
            mean,
            var,
            noise_var: self.kern.noise_var(),
        })
    }

    /// The runtime form: basis = training inputs, `beta = K_y^{-1} y`,
    /// `L1 = chol(K + sigma2 I + jitter I)`, no `L2`, prior `s2`; then
    /// `var = s2 - ||L1^{-1} k||^2`.
    pub fn runtime_form(&self) -> Result<RuntimeForm> {
        let basis = PseudoInputs::new(self.x.clone())?.runtime_basis(&self.kern);
        Ok(RuntimeForm {
            basis,
            beta: self.alpha.clone(),
            l1: self.chol.l.clone(),
            l2: None,
            prior: self.kern.signal_var(),
            noise_var: self.kern.noise_var(),
        })
    }
}

/// NLML and its gradient with respect to `(log l, log s2, log_noise_excess)`:
/// `dNLML/dtheta = 1/2 tr(W dK_y/dtheta)`, `W = K_y^{-1} - alpha alpha^T`.
pub(crate) fn exact_nlml_grad(
    kern: &KernelParams,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    jitter: &JitterPolicy,
) -> Result<(f64, ModelGrad)> {
    let post = exact_posterior(kern, x, y, jitter)?;
    let (kernel, half_trace_w) = gaussian_kernel_grad(kern, x, &post.chol, &post.alpha)?;
    Ok((
        post.nlml,
        ModelGrad {
            feature: Vec::new(),
            kernel,
            log_noise_excess: half_trace_w * kern.noise_excess(),
        },
    ))
}

/// The kernel part of `dNLML/dtheta = 1/2 tr(W dC/dtheta)` for a Gaussian
/// marginal `N(0, C)` with `C = K(x, x) + (a diagonal) + jitter`,
/// `chol = chol(C)`, `alpha = C^{-1} y` and `W = C^{-1} - alpha alpha^T`:
/// the gradient with respect to `(log l, log s2)` (the jitter's `log s2`
/// share included) and `tr(W) / 2`, which a diagonal's own parameter (the
/// noise) needs.
pub(crate) fn gaussian_kernel_grad(
    kern: &KernelParams,
    x: &DMatrix<f64>,
    chol: &JitteredCholesky,
    alpha: &DVector<f64>,
) -> Result<(KernelGrad, f64)> {
    let mut w = inverse_from_factor(&chol.l)?;
    w -= alpha * alpha.transpose();
    let half_trace_w = 0.5 * w.trace();
    w *= 0.5;
    let k = kern.cross(x, x);
    let mut kernel = kern.cross_grad(x, x, &k, &w, false, false).kernel;
    kernel.log_signal_var += chol.jitter * half_trace_w;
    Ok((kernel, half_trace_w))
}

fn check_data(kern: &KernelParams, x: &DMatrix<f64>, y: &DVector<f64>) -> Result<()> {
    if x.nrows() != y.len() || x.ncols() != kern.dim() || x.nrows() == 0 {
        return Err(Error::BadInput(format!(
            "exact GP: x is {}x{}, y has {} entries, kernel has {} dimensions",
            x.nrows(),
            x.ncols(),
            y.len(),
            kern.dim()
        )));
    }
    if !kern.is_finite() {
        return Err(Error::Numerical("non-finite kernel hyperparameters".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::inference::test_util::{assert_grad_close, fd_grad, problem};

    fn unpack(p: &[f64], d: usize) -> KernelParams {
        KernelParams {
            log_lengthscales: p[..d].to_vec(),
            log_signal_var: p[d],
            log_noise_excess: p[d + 1],
            noise_floor: crate::model::kernel::DEFAULT_NOISE_FLOOR,
            kernel: sgp_runtime::Kernel::SquaredExponential,
        }
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let (x, y) = problem(11, 30, 3);
        let policy = JitterPolicy::default();
        let p = [0.3, -0.2, 0.5, 0.4, -2.5];
        let (_, g) = exact_nlml_grad(&unpack(&p, 3), &x, &y, &policy).expect("ok");
        let mut ana = g.kernel.log_lengthscales.clone();
        ana.push(g.kernel.log_signal_var);
        ana.push(g.log_noise_excess);
        let f = |q: &[f64]| {
            exact_posterior(&unpack(q, 3), &x, &y, &policy)
                .expect("ok")
                .nlml()
        };
        let num = fd_grad(f, &p, 1e-5);
        assert_grad_close(&num, &ana, 1e-6);
    }

    #[test]
    fn nlml_matches_dense_formula() {
        let (x, y) = problem(12, 15, 2);
        let kern = KernelParams::new(&[0.9, 1.4], 1.2, 0.05).expect("valid");
        let post = exact_posterior(&kern, &x, &y, &JitterPolicy::default()).expect("ok");
        let mut ky = kern.cross(&x, &x);
        for i in 0..15 {
            ky[(i, i)] += kern.noise_var() + post.jitter();
        }
        let inv = ky.clone().try_inverse().expect("invertible");
        let want = 0.5 * (y.transpose() * inv * &y)[0]
            + 0.5 * libm::log(ky.determinant())
            + 7.5 * libm::log(2.0 * PI);
        assert!((post.nlml() - want).abs() < 1e-9 * want.abs());
    }

    #[test]
    fn runtime_form_reproduces_predictions() {
        let (x, y) = problem(13, 25, 2);
        let kern = KernelParams::new(&[0.8, 1.1], 1.5, 0.02).expect("valid");
        let post = exact_posterior(&kern, &x, &y, &JitterPolicy::default()).expect("ok");
        let (xs, _) = problem(14, 10, 2);
        let a = post.predict(&xs).expect("ok");
        let b = post.runtime_form().expect("ok").predict(&xs).expect("ok");
        assert!((&a.mean - &b.mean).amax() < 1e-10);
        assert!((&a.var - &b.var).amax() < 1e-10);
        assert!(a.var.iter().all(|v| *v >= 0.0));
    }

    #[test]
    fn rejects_mismatched_data() {
        let (x, y) = problem(15, 10, 2);
        let kern = KernelParams::new(&[1.0, 1.0, 1.0], 1.0, 0.1).expect("valid");
        assert!(exact_posterior(&kern, &x, &y, &JitterPolicy::default()).is_err());
    }
}
