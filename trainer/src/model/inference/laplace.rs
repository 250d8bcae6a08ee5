//! The exact GP classifier by Laplace's approximation (Rasmussen and
//! Williams, "Gaussian Processes for Machine Learning", algorithms 3.1,
//! 3.2 and 5.1): probit likelihood `P(y | f) = Phi(y (f + b))`, labels
//! `y = ±1`, a fixed bias `b`. O(N^3), so only on subsets; the reference
//! the sparse classifiers are judged against and the source of the IVM's
//! kernel.
//!
//! Runtime form: at the mode `K^{-1} f = d log p / df`, so the mean is
//! `beta . k` with `beta = d log p / df`, and the latent variance is one
//! forward substitution against `L1 = chol(K + W^{-1})`: the IVM's form
//! with the sites `Pi = W`.

use std::f64::consts::PI;
use std::sync::Mutex;

use nalgebra::{DMatrix, DVector};

use super::objective::ParamLayout;
use super::{col_sq_norms, ModelGrad, RuntimeForm};
use crate::model::features::{InducingFeatures, PseudoInputs};
use crate::model::kernel::KernelParams;
use crate::model::likelihood::{norm_cdf, pdf_over_cdf, Likelihood};
use crate::numerics::linalg::{
    cholesky, cholesky_jittered, lower_inverse, mat_ref, mul, solve_lower_t_vec, solve_lower_vec,
    symmetrise, JitterPolicy,
};
use crate::{Error, Result};

/// Newton steps allowed to find the mode.
const MAX_NEWTON_STEPS: usize = 100;

/// Step halvings allowed in one Newton step before it is declared stuck.
const MAX_HALVINGS: usize = 30;

/// The mode is found once a Newton step lowers `psi` by less than this
/// (per row): far below what changes a prediction, and small enough that
/// the objective is smooth to finite differences.
const MODE_TOL_PER_ROW: f64 = 1e-13;

/// Smallest `W` used in the runtime factor `chol(K + W^{-1})`: a point the
/// model is sure of (`W` underflows to zero beyond `|f| ~ 38`) contributes
/// nothing to the variance, and `1 / W` must stay finite.
const MIN_SITE_PRECISION: f64 = 1e-12;

/// The likelihood's derivatives at one latent value.
#[derive(Clone, Copy, Debug)]
struct ProbitDerivatives {
    /// `log Phi(z)`, `z = y (f + b)`.
    log_p: f64,
    /// `d log p / df`.
    d1: f64,
    /// `W = -d2 log p / df2` (>= 0).
    w: f64,
    /// `d3 log p / df3`.
    d3: f64,
}

fn probit_derivatives(y: f64, f: f64, bias: f64) -> ProbitDerivatives {
    let z = y * (f + bias);
    // r = N(z) / Phi(z); d/dz log Phi = r, d2 = -r (z + r),
    // d3 = r (z + r)^2 - r + r^2 (z + r).
    let r = pdf_over_cdf(z);
    let zr = z + r;
    let log_p = if z > -30.0 {
        libm::log(norm_cdf(z))
    } else {
        // Phi(z) = N(z) / r where Phi itself underflows.
        -0.5 * z * z - 0.5 * libm::log(2.0 * PI) - libm::log(r)
    };
    ProbitDerivatives {
        log_p,
        d1: y * r,
        w: (r * zr).max(0.0),
        d3: y * (r * zr * zr - r + r * r * zr),
    }
}

/// The Laplace approximation at the mode, factorised.
#[derive(Clone, Debug)]
pub(crate) struct LaplacePosterior {
    x: DMatrix<f64>,
    kern: KernelParams,
    /// `K(x, x)`.
    k: DMatrix<f64>,
    /// The mode.
    #[cfg_attr(not(test), allow(dead_code))] // read by the tests
    f: DVector<f64>,
    /// `a` with `f = K a` (at the mode, `a = d log p / df`).
    a: DVector<f64>,
    /// `d log p / df` at the mode.
    d1: DVector<f64>,
    /// `W` at the mode.
    w: DVector<f64>,
    /// `d3 log p / df3` at the mode.
    d3: DVector<f64>,
    /// `chol(I + W^{1/2} K W^{1/2})` at the mode.
    l: DMatrix<f64>,
    nlml: f64,
    #[cfg_attr(not(test), allow(dead_code))] // read by the tests
    newton_steps: usize,
}

/// One Newton evaluation point: everything `psi` and the next step need.
struct Point {
    f: DVector<f64>,
    a: DVector<f64>,
    psi: f64,
    derivs: Vec<ProbitDerivatives>,
}

impl Point {
    fn at(k: &DMatrix<f64>, a: DVector<f64>, y: &DVector<f64>, bias: f64) -> Point {
        let f = k * &a;
        let derivs: Vec<ProbitDerivatives> = f
            .iter()
            .zip(y.iter())
            .map(|(&fi, &yi)| probit_derivatives(yi, fi, bias))
            .collect();
        let psi = 0.5 * a.dot(&f) - derivs.iter().map(|d| d.log_p).sum::<f64>();
        Point { f, a, psi, derivs }
    }
}

/// `chol(I + W^{1/2} K W^{1/2})`.
fn factor_b(k: &DMatrix<f64>, sw: &DVector<f64>) -> Result<DMatrix<f64>> {
    let mut b = DMatrix::from_fn(k.nrows(), k.ncols(), |i, j| sw[i] * k[(i, j)] * sw[j]);
    for i in 0..b.nrows() {
        b[(i, i)] += 1.0;
    }
    cholesky(&b)
}

/// Finds the mode of the Laplace approximation for inputs `x` (N x D),
/// labels `y` (±1) and bias `b`, Newton's method starting from `start`
/// (the `a` of an earlier mode, or zeros).
///
/// # Errors
/// [`Error::BadInput`] on mismatched shapes or labels other than ±1,
/// [`Error::Numerical`] if Newton's method fails to converge.
pub(crate) fn laplace_posterior(
    kern: &KernelParams,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    bias: f64,
    start: Option<&DVector<f64>>,
) -> Result<LaplacePosterior> {
    if x.nrows() != y.len() || x.ncols() != kern.dim() || x.nrows() == 0 {
        return Err(Error::BadInput(format!(
            "Laplace classifier: x is {}x{}, y has {} entries, kernel has {} dimensions",
            x.nrows(),
            x.ncols(),
            y.len(),
            kern.dim()
        )));
    }
    if y.iter().any(|&v| v != 1.0 && v != -1.0) {
        return Err(Error::BadInput(
            "Laplace classifier: labels must be -1 or +1".into(),
        ));
    }
    if !kern.is_finite() || !bias.is_finite() {
        return Err(Error::Numerical(
            "non-finite kernel hyperparameters or bias".into(),
        ));
    }
    let n = y.len();
    let k = kern.cross(x, x);
    let a0 = match start {
        Some(a) if a.len() == n => a.clone(),
        _ => DVector::zeros(n),
    };
    let mut point = Point::at(&k, a0, y, bias);
    let tol = MODE_TOL_PER_ROW * n as f64;
    let mut steps = 0;
    loop {
        if steps == MAX_NEWTON_STEPS {
            return Err(Error::Numerical(format!(
                "Laplace classifier: no mode after {MAX_NEWTON_STEPS} Newton steps"
            )));
        }
        steps += 1;
        // a_new = b - W^{1/2} B^{-1} W^{1/2} K b, b = W f + d log p.
        let sw = DVector::from_iterator(n, point.derivs.iter().map(|d| d.w.sqrt()));
        let l = factor_b(&k, &sw)?;
        let b = DVector::from_fn(n, |i, _| {
            point.derivs[i].w * point.f[i] + point.derivs[i].d1
        });
        let kb = &k * &b;
        let v = solve_lower_vec(&l, &kb.component_mul(&sw))?;
        let c = solve_lower_t_vec(&l, &v)?;
        let a_new = b - c.component_mul(&sw);
        let direction = a_new - &point.a;
        let mut step = 1.0;
        let mut next = None;
        for _ in 0..MAX_HALVINGS {
            let trial = Point::at(&k, &point.a + step * &direction, y, bias);
            if trial.psi.is_finite() && trial.psi <= point.psi {
                next = Some(trial);
                break;
            }
            step *= 0.5;
        }
        let Some(next) = next else {
            // No step lowers psi: the current point is the mode to within
            // rounding.
            break;
        };
        let gain = point.psi - next.psi;
        point = next;
        if gain <= tol {
            break;
        }
    }
    let w = DVector::from_iterator(n, point.derivs.iter().map(|d| d.w));
    let l = factor_b(&k, &w.map(f64::sqrt))?;
    let nlml = point.psi + 0.5 * crate::numerics::linalg::log_det_from_factor(&l);
    Ok(LaplacePosterior {
        x: x.clone(),
        kern: kern.clone(),
        d1: DVector::from_iterator(n, point.derivs.iter().map(|d| d.d1)),
        d3: DVector::from_iterator(n, point.derivs.iter().map(|d| d.d3)),
        w,
        k,
        f: point.f,
        a: point.a,
        l,
        nlml,
        newton_steps: steps,
    })
}

impl LaplacePosterior {
    /// The negative approximate log marginal likelihood.
    pub fn nlml(&self) -> f64 {
        self.nlml
    }

    /// Newton steps the mode took.
    #[cfg(test)]
    pub fn newton_steps(&self) -> usize {
        self.newton_steps
    }

    /// The mode's `a` (`f = K a`), a warm start for a nearby kernel.
    pub(crate) fn mode_weights(&self) -> &DVector<f64> {
        &self.a
    }

    /// The latent mode at the training inputs.
    #[cfg(test)]
    pub fn mode(&self) -> &DVector<f64> {
        &self.f
    }

    /// Gradient of [`Self::nlml`] with respect to `(log l, log s2)`,
    /// including the mode's own dependence on the kernel.
    pub fn gradient(&self) -> Result<ModelGrad> {
        let n = self.w.len();
        let sw = self.w.map(f64::sqrt);
        // B^{-1} = L^{-T} L^{-1}; R = W^{1/2} B^{-1} W^{1/2}.
        let linv = lower_inverse(&self.l)?;
        let binv = symmetrise(mul(mat_ref(&linv).transpose(), mat_ref(&linv)));
        let r = DMatrix::from_fn(n, n, |i, j| sw[i] * binv[(i, j)] * sw[j]);
        // Posterior marginal variances diag(K - K R K) = diag(K) - |L^{-1} W^{1/2} K|^2.
        let swk = DMatrix::from_fn(n, n, |i, j| sw[i] * self.k[(i, j)]);
        let c = mul(mat_ref(&linv), mat_ref(&swk));
        let post_var = self.k.diagonal() - col_sq_norms(&c);
        // d log q / d f at the mode: the mode moves W, and -1/2 log|B| with
        // it, by dW/df = -d3 log p / df3 (so the sign is +).
        let s2 = 0.5 * post_var.component_mul(&self.d3);
        // Implicit term s2^T (I - K R) dK d1 = u^T dK d1, u = s2 - R K s2.
        let u = &s2 - &r * (&self.k * &s2);
        // log q's adjoint, negated for the NLML.
        let mut adj = &r - &self.a * self.a.transpose();
        adj *= 0.5;
        adj -= &u * self.d1.transpose();
        let kernel = self
            .kern
            .cross_grad(&self.x, &self.x, &self.k, &adj, false, false)
            .kernel;
        Ok(ModelGrad {
            feature: Vec::new(),
            kernel,
            log_noise_excess: 0.0,
        })
    }

    /// MATH.md's runtime form: basis = the training inputs,
    /// `beta = d log p / df` at the mode, `L1 = chol(K + W^{-1})`, no `L2`,
    /// prior `s2`.
    ///
    /// # Errors
    /// [`Error::Numerical`] if the factor fails at every jitter.
    pub fn runtime_form(&self, jitter: &JitterPolicy) -> Result<RuntimeForm> {
        let mut c = self.k.clone();
        for (i, &w) in self.w.iter().enumerate() {
            c[(i, i)] += 1.0 / w.max(MIN_SITE_PRECISION);
        }
        let chol = cholesky_jittered(&c, self.kern.signal_var(), jitter)?;
        let basis = PseudoInputs::new(self.x.clone())?.runtime_basis(&self.kern);
        Ok(RuntimeForm {
            basis,
            beta: self.d1.clone(),
            l1: chol.l,
            l2: None,
            prior: self.kern.signal_var(),
            noise_var: 0.0,
        })
    }
}

/// The Laplace classifier's objective over `[free length scales | log s2]`
/// ([`ParamLayout::latent`]), warm-starting each mode search from the last
/// mode found (the mode converges far below what that start could change).
pub(crate) struct LaplaceObjective<'d> {
    x: &'d DMatrix<f64>,
    y: &'d DVector<f64>,
    bias: f64,
    kernel: KernelParams,
    layout: ParamLayout,
    warm: Mutex<Option<DVector<f64>>>,
}

impl<'d> LaplaceObjective<'d> {
    /// The objective for inputs `x`, labels `y` (±1) and bias `bias`,
    /// starting at `kernel`.
    pub fn new(x: &'d DMatrix<f64>, y: &'d DVector<f64>, bias: f64, kernel: KernelParams) -> Self {
        let layout = ParamLayout::latent(&kernel, Likelihood::Probit);
        LaplaceObjective {
            x,
            y,
            bias,
            kernel,
            layout,
            warm: Mutex::new(None),
        }
    }

    /// The starting vector.
    pub fn initial(&self) -> Vec<f64> {
        self.layout.pack(&[], &self.kernel)
    }

    /// The kernel at `v`.
    pub fn unpack(&self, v: &[f64]) -> Result<KernelParams> {
        let mut kern = self.kernel.clone();
        self.layout.unpack(v, &mut kern)?;
        Ok(kern)
    }

    /// The posterior at `v`, its mode search started from the last one.
    pub fn posterior(&self, v: &[f64]) -> Result<LaplacePosterior> {
        let kern = self.unpack(v)?;
        let mut warm = self
            .warm
            .lock()
            .map_err(|_| Error::Numerical("Laplace objective: poisoned warm start".into()))?;
        let post = laplace_posterior(&kern, self.x, self.y, self.bias, warm.as_ref())?;
        *warm = Some(post.mode_weights().clone());
        Ok(post)
    }

    /// Value and gradient at `v`.
    pub fn objective(&self, v: &[f64]) -> Result<(f64, Vec<f64>)> {
        let post = self.posterior(v)?;
        let grad = post.gradient()?;
        Ok((post.nlml(), self.layout.pack_grad(v, &grad)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::inference::test_util::{assert_grad_close, fd_grad, problem};

    fn labels(x: &DMatrix<f64>) -> DVector<f64> {
        DVector::from_fn(x.nrows(), |i, _| {
            // A curved boundary with some points on the wrong side.
            let v =
                x[(i, 0)] * x[(i, 0)] + 0.5 * x[(i, 1)] - 1.0 + 0.3 * libm::sin(7.0 * x[(i, 1)]);
            if v > 0.0 {
                1.0
            } else {
                -1.0
            }
        })
    }

    #[test]
    fn likelihood_derivatives_match_finite_differences() {
        for (y, f, b) in [
            (1.0, 0.3, 0.1),
            (-1.0, 1.7, -0.2),
            (1.0, -4.0, 0.0),
            (-1.0, -9.0, 0.5),
        ] {
            let d = probit_derivatives(y, f, b);
            let h = 1e-5;
            let at = |g: f64| probit_derivatives(y, g, b);
            let d1 = (at(f + h).log_p - at(f - h).log_p) / (2.0 * h);
            let d2 = (at(f + h).d1 - at(f - h).d1) / (2.0 * h);
            let dw = -(at(f + h).w - at(f - h).w) / (2.0 * h);
            assert!((d1 - d.d1).abs() < 1e-7, "d1 {d1} vs {}", d.d1);
            assert!((d2 + d.w).abs() < 1e-7, "W {} vs {}", -d2, d.w);
            assert!((dw - d.d3).abs() < 1e-7, "d3 {dw} vs {}", d.d3);
        }
        // Far in the tail the log stays finite and continuous.
        let a = probit_derivatives(1.0, -29.999, 0.0).log_p;
        let b = probit_derivatives(1.0, -30.001, 0.0).log_p;
        assert!((a - b).abs() < 0.1 && a.is_finite() && b.is_finite());
    }

    #[test]
    fn mode_is_a_stationary_point_of_psi() {
        let (x, _) = problem(21, 40, 2);
        let y = labels(&x);
        let kern = KernelParams::new(&[0.7, 1.2], 2.0, 0.1).unwrap();
        let post = laplace_posterior(&kern, &x, &y, 0.2, None).unwrap();
        // K^{-1} f = d log p / df at the mode, i.e. f = K d1.
        let f = &post.k * &post.d1;
        assert!((&f - post.mode()).amax() < 1e-8);
        // A warm start from the mode needs a single step.
        let again = laplace_posterior(&kern, &x, &y, 0.2, Some(post.mode_weights())).unwrap();
        assert_eq!(again.newton_steps(), 1);
        assert!((again.nlml() - post.nlml()).abs() < 1e-10);
    }

    #[test]
    fn nlml_gradient_matches_finite_differences() {
        let (x, _) = problem(22, 35, 2);
        let y = labels(&x);
        let kern = KernelParams::new(&[0.6, 1.3], 3.0, 0.1).unwrap();
        let objective = LaplaceObjective::new(&x, &y, -0.3, kern);
        let v0 = objective.initial();
        assert_eq!(v0.len(), 3, "two length scales and log s2");
        let (_, g) = objective.objective(&v0).unwrap();
        // The mode is Newton's to a tolerance, so the NLML carries noise of
        // about 1e-9 that a step of 1e-5 turns into 1e-4 of gradient (it
        // passed or failed with the last bit of a label's sine); at 1e-3
        // the noise is 1e-6 and the truncation error (h^2) about as small.
        let num = fd_grad(
            |v| {
                let kern = objective.unpack(v).unwrap();
                laplace_posterior(&kern, &x, &y, -0.3, None).unwrap().nlml()
            },
            &v0,
            1e-3,
        );
        assert_grad_close(&num, &g, 1e-5);
    }

    #[test]
    fn runtime_form_gives_the_laplace_predictive() {
        let (x, _) = problem(23, 30, 2);
        let y = labels(&x);
        let kern = KernelParams::new(&[0.8, 1.0], 1.5, 0.1).unwrap();
        let post = laplace_posterior(&kern, &x, &y, 0.0, None).unwrap();
        let form = post.runtime_form(&JitterPolicy::default()).unwrap();
        let (xs, _) = problem(24, 12, 2);
        let pred = form.predict(&xs).unwrap();
        // Direct: mean k^T K^{-1} f, variance s2 - k^T (K + W^{-1})^{-1} k.
        let kinv = post.k.clone().try_inverse().unwrap();
        let mut c = post.k.clone();
        for i in 0..30 {
            c[(i, i)] += 1.0 / post.w[i];
        }
        let cinv = c.try_inverse().unwrap();
        let ks = kern.cross(&x, &xs);
        for j in 0..12 {
            let kj = ks.column(j);
            let mean = (kj.transpose() * &kinv * post.mode())[0];
            let var = kern.signal_var() - (kj.transpose() * &cinv * kj)[0];
            assert!(
                (pred.mean[j] - mean).abs() < 1e-6,
                "{} vs {mean}",
                pred.mean[j]
            );
            assert!((pred.var[j] - var).abs() < 1e-6, "{} vs {var}", pred.var[j]);
        }
    }

    #[test]
    fn rejects_labels_that_are_not_signs() {
        let (x, _) = problem(25, 10, 2);
        let y = DVector::from_element(10, 0.5);
        let kern = KernelParams::new(&[1.0, 1.0], 1.0, 0.1).unwrap();
        assert!(laplace_posterior(&kern, &x, &y, 0.0, None).is_err());
    }
}
