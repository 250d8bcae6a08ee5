//! Blobs from models fitted elsewhere (scikit-learn, GPflow): each one's
//! posterior rewritten in the one runtime form of MATH.md, then exported
//! through the same f32 check as a fit.
//!
//! Every converter takes the training data the model was fitted on: it
//! validates the inputs, gives the blob its input standardisation and
//! training range, and supplies the points of the export check. The
//! kernel is an ARD squared exponential in raw input units; in the blob's
//! standardised units `z = (x - mean) / scale` its inverse squared widths
//! are `scale^2 / l^2`.

use nalgebra::DMatrix;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sgp_runtime::{Link, ModelKind};
use sgp_trainer::data::{Dataset, Standardisation};
use sgp_trainer::export::{check, refusal};
use sgp_trainer::model::features::{BasisWidths, PseudoInputs, RuntimeBasis};
use sgp_trainer::model::inference::fitc::{fitc_posterior, FitcConfig};
use sgp_trainer::model::inference::{Approximation, RuntimeForm};
use sgp_trainer::model::kernel::KernelParams;
use sgp_trainer::model::ModelSet;
use sgp_trainer::model::TrainedModel;
use sgp_trainer::numerics::linalg::{
    cholesky, solve_lower_mut, solve_lower_t_vec, solve_lower_vec, JitterPolicy,
};
use sgp_trainer::options::parse;
use sgp_trainer::{Error, Result};

use crate::arrays::{matrix, vector};
use crate::choice::choice;
use crate::errors::IntoPy;

/// Largest number of training rows the export check runs the runtime on
/// (evenly spread over the data): the check of an exact GP costs O(N^2)
/// per point.
const MAX_CHECK_ROWS: usize = 1000;

/// The training data of a converted model and the kernel it was fitted
/// with, in raw units.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub(crate) struct Fitted {
    x: Vec<u8>,
    y: Vec<u8>,
    n: usize,
    d: usize,
    input_names: Vec<String>,
    target_name: String,
    lengthscales: Vec<f64>,
    signal_variance: f64,
    noise_variance: f64,
    /// The covariance function's name (`se`, `matern12`, `matern32`,
    /// `matern52`).
    kernel: String,
    /// Export a model that fails the check anyway.
    force: bool,
}

impl Fitted {
    fn data(&self) -> PyResult<Dataset> {
        let x = matrix(&self.x, self.n, self.d, "X")?;
        let y = vector(&self.y, self.n, "y")?;
        Dataset::from_raw(x, y, self.input_names.clone(), self.target_name.clone()).py_err()
    }

    /// The kernel in the standardised units of `t` (noise 0 is allowed: a
    /// model without a white-noise term).
    fn kernel(&self, t: &Standardisation) -> Result<KernelParams> {
        if self.lengthscales.len() != t.x_scale.len() {
            return Err(Error::BadInput(format!(
                "{} length scales for {} inputs",
                self.lengthscales.len(),
                t.x_scale.len()
            )));
        }
        let l: Vec<f64> = self
            .lengthscales
            .iter()
            .zip(&t.x_scale)
            .map(|(l, s)| l / s)
            .collect();
        // KernelParams needs a positive noise. Only the inducing posterior
        // reads it, and there it is a Gaussian likelihood's, never 0; the
        // exact and variational forms take the basis and covariances alone.
        Ok(KernelParams::with_noise_floor(
            &l,
            self.signal_variance,
            self.noise_variance.max(f64::MIN_POSITIVE),
            0.0,
        )?
        .with_kernel(parse(&self.kernel, "kernel")?))
    }

    /// A model in runtime form with this data's input transform and the
    /// target transform `(y_mean, y_scale)`, exported through the check.
    fn export(
        &self,
        data: &Dataset,
        kind: ModelKind,
        link: Link,
        form: RuntimeForm,
        y: (f64, f64),
    ) -> Result<Vec<u8>> {
        if !(self.noise_variance.is_finite() && self.noise_variance >= 0.0) {
            return Err(Error::BadInput(format!(
                "noise variance must be finite and non-negative, got {}",
                self.noise_variance
            )));
        }
        let model = TrainedModel {
            kind,
            link,
            form: RuntimeForm {
                noise_var: self.noise_variance,
                ..form
            },
            transform: Standardisation {
                y_mean: y.0,
                y_scale: y.1,
                ..data.transform.clone()
            },
            input_names: data.input_names.clone(),
            target_name: data.target_name.clone(),
            bias: 0.0,
            positive_class: if link == Link::Probit { 1.0 } else { 0.0 },
        };
        let n = data.n_rows();
        let step = n.div_ceil(MAX_CHECK_ROWS).max(1);
        let rows: Vec<usize> = (0..n).step_by(step).collect();
        let check_x = data.raw_x().select_rows(&rows);
        let exported = check(&ModelSet::single(model, Vec::new()), &check_x)?;
        if !exported.fidelity.passes() && !self.force {
            return Err(refusal(&exported, ""));
        }
        Ok(exported.blob)
    }
}

/// Basis functions centred on `centres` (standardised) with kernel `kern`.
fn basis(centres: DMatrix<f64>, kern: &KernelParams) -> RuntimeBasis {
    RuntimeBasis {
        projection: None,
        amplitudes: vec![kern.signal_var(); centres.nrows()],
        centres,
        widths: BasisWidths::Shared(kern.inv_sq_lengthscales()),
        kernel: kern.kernel,
    }
}

/// An exact GP (scikit-learn's `GaussianProcessRegressor`): basis on the
/// training inputs, `beta = alpha_`, `L1 = L_` (the Cholesky factor of the
/// training covariance, white noise and `alpha` included), no `L2`; the
/// predictions are `y_mean + y_scale * mean` and `y_scale^2 * variance`.
#[pyfunction]
pub(crate) fn exact_blob<'py>(
    py: Python<'py>,
    fitted: Fitted,
    alpha: &[u8],
    factor: &[u8],
    y_mean: f64,
    y_scale: f64,
) -> PyResult<Bound<'py, PyBytes>> {
    let data = fitted.data()?;
    let n = data.n_rows();
    let beta = vector(alpha, n, "alpha_")?;
    let l1 = matrix(factor, n, n, "L_")?.lower_triangle();
    let blob = py
        .detach(|| {
            let kern = fitted.kernel(&data.transform)?;
            let form = RuntimeForm {
                basis: basis(data.x.clone(), &kern),
                beta,
                l1,
                l2: None,
                prior: kern.signal_var(),
                noise_var: 0.0,
            };
            fitted.export(
                &data,
                ModelKind::Exact,
                Link::Identity,
                form,
                (y_mean, y_scale),
            )
        })
        .py_err()?;
    Ok(PyBytes::new(py, &blob))
}

/// A sparse regression over inducing inputs `z` (`m x d`, raw units),
/// FITC (GPflow's `GPRFITC`) or VFE (`SGPR`): the posterior of those
/// hyperparameters on the training data, computed by the trainer with
/// `jitter` (absolute, as GPflow's) on `Kuu`. The jitter matters: FITC
/// draws inducing inputs together, and on such a fit the trainer's own
/// default (`1e-6 s2`) moved the predictive sd by a fifth.
#[pyfunction]
pub(crate) fn inducing_blob<'py>(
    py: Python<'py>,
    fitted: Fitted,
    z: &[u8],
    m: usize,
    objective: &str,
    jitter: f64,
) -> PyResult<Bound<'py, PyBytes>> {
    let data = fitted.data()?;
    let z = matrix(z, m, fitted.d, "Z")?;
    let approximation: Approximation = choice(objective, "objective")?;
    let blob = py
        .detach(|| {
            let t = &data.transform;
            let kern = fitted.kernel(t)?;
            let feat = PseudoInputs::new(t.apply_x(&z))?;
            let relative = jitter / kern.signal_var();
            let default = JitterPolicy::default();
            let cfg = FitcConfig {
                approximation,
                jitter: JitterPolicy {
                    initial: relative,
                    max: default.max.max(relative),
                    ..default
                },
                ..FitcConfig::default()
            };
            let raw_y = data.raw_y();
            let posterior = fitc_posterior(&feat, &kern, &data.x, &raw_y, &cfg)?;
            let form = posterior.runtime_form(&feat, &kern);
            fitted.export(&data, ModelKind::Spgp, Link::Identity, form, (0.0, 1.0))
        })
        .py_err()?;
    Ok(PyBytes::new(py, &blob))
}

/// A variational sparse GP (GPflow's `SVGP`): `q(u) = N(q_mu, S)`,
/// `S = q_sqrt q_sqrt^T`, of `u = f(z)` or, whitened, of `v` with
/// `u = L v`, `L L^T = Kuu + jitter I`. With `B = Kuu` (or `L^T` when
/// whitened) the predictive is `mean = k^T B^{-1} q_mu` and
/// `var = prior - ||L^{-1} k||^2 + k^T B^{-1} S B^{-T} k`; the last term is
/// `||L2^{-1} k||^2` with `L2 L2^T = B^T S^{-1} B`, i.e. `L2 = chol(M^T M)`
/// for `M = q_sqrt^{-1} B`. `probit`: a Bernoulli likelihood with the probit
/// link, whose class probability `Phi(mean / sqrt(1 + var))` is the
/// runtime's.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn variational_blob<'py>(
    py: Python<'py>,
    fitted: Fitted,
    z: &[u8],
    m: usize,
    q_mu: &[u8],
    q_sqrt: &[u8],
    whiten: bool,
    jitter: f64,
    probit: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let data = fitted.data()?;
    let z = matrix(z, m, fitted.d, "Z")?;
    let q_mu = vector(q_mu, m, "q_mu")?;
    let q_sqrt = matrix(q_sqrt, m, m, "q_sqrt")?.lower_triangle();
    let blob = py
        .detach(|| {
            let t = &data.transform;
            let kern = fitted.kernel(t)?;
            let centres = t.apply_x(&z);
            let kuu = kern.cross(&centres, &centres) + DMatrix::identity(m, m) * jitter;
            let l1 = cholesky(&kuu)?;
            let (beta, b) = if whiten {
                (solve_lower_t_vec(&l1, &q_mu)?, l1.transpose())
            } else {
                let half = solve_lower_vec(&l1, &q_mu)?;
                (solve_lower_t_vec(&l1, &half)?, kuu)
            };
            let mut root_inv_b = b;
            solve_lower_mut(&q_sqrt, &mut root_inv_b)?;
            let l2 = cholesky(&root_inv_b.tr_mul(&root_inv_b))?;
            let form = RuntimeForm {
                basis: basis(centres, &kern),
                beta,
                l1,
                l2: Some(l2),
                prior: kern.signal_var(),
                noise_var: 0.0,
            };
            let link = if probit { Link::Probit } else { Link::Identity };
            fitted.export(&data, ModelKind::Spgp, link, form, (0.0, 1.0))
        })
        .py_err()?;
    Ok(PyBytes::new(py, &blob))
}
