//! Blobs from models fitted elsewhere (scikit-learn, GPflow).
//!
//! Every converter takes the training data the model was fitted on and
//! hands it, the peer's hyperparameters and its posterior to the library's
//! [`PeerModel`], which writes the runtime form and exports it.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sgp_trainer::data::Dataset;
use sgp_trainer::export::peer::{PeerModel, PeerPosterior};

use crate::arrays::{matrix, vector};
use crate::errors::IntoPy;

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
    /// The library's peer model: the validated data and the kernel.
    fn peer(self) -> PyResult<PeerModel> {
        let x = matrix(&self.x, self.n, self.d, "X")?;
        let y = vector(&self.y, self.n, "y")?;
        let data = Dataset::from_raw(x, y, self.input_names, self.target_name).py_err()?;
        Ok(PeerModel {
            data,
            lengthscales: self.lengthscales,
            signal_variance: self.signal_variance,
            noise_variance: self.noise_variance,
            kernel: self.kernel,
            force: self.force,
        })
    }
}

/// An exact GP (scikit-learn's `GaussianProcessRegressor`):
/// [`PeerPosterior::Exact`] of `alpha_` and `L_`.
#[pyfunction]
pub(crate) fn exact_blob<'py>(
    py: Python<'py>,
    fitted: Fitted,
    alpha: &[u8],
    factor: &[u8],
    y_mean: f64,
    y_scale: f64,
) -> PyResult<Bound<'py, PyBytes>> {
    let peer = fitted.peer()?;
    let n = peer.data.n_rows();
    let posterior = PeerPosterior::Exact {
        alpha: vector(alpha, n, "alpha_")?,
        factor: matrix(factor, n, n, "L_")?,
        y_mean,
        y_scale,
    };
    let blob = py.detach(|| peer.blob(posterior)).py_err()?;
    Ok(PyBytes::new(py, &blob))
}

/// A sparse regression over inducing inputs `z` (`m x d`, raw units),
/// FITC (GPflow's `GPRFITC`) or VFE (`SGPR`): [`PeerPosterior::Inducing`].
#[pyfunction]
pub(crate) fn inducing_blob<'py>(
    py: Python<'py>,
    fitted: Fitted,
    z: &[u8],
    m: usize,
    objective: &str,
    jitter: f64,
) -> PyResult<Bound<'py, PyBytes>> {
    let d = fitted.d;
    let peer = fitted.peer()?;
    let posterior = PeerPosterior::Inducing {
        z: matrix(z, m, d, "Z")?,
        objective: objective.to_owned(),
        jitter,
    };
    let blob = py.detach(|| peer.blob(posterior)).py_err()?;
    Ok(PyBytes::new(py, &blob))
}

/// A variational sparse GP (GPflow's `SVGP`), a regression or (`probit`) a
/// probit classifier: [`PeerPosterior::Variational`].
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
    let d = fitted.d;
    let peer = fitted.peer()?;
    let posterior = PeerPosterior::Variational {
        z: matrix(z, m, d, "Z")?,
        q_mu: vector(q_mu, m, "q_mu")?,
        q_sqrt: matrix(q_sqrt, m, m, "q_sqrt")?,
        whiten,
        jitter,
        probit,
    };
    let blob = py.detach(|| peer.blob(posterior)).py_err()?;
    Ok(PyBytes::new(py, &blob))
}
