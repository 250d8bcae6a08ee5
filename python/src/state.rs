//! The fitted f64 model, kept by an estimator between `fit` and `predict`
//! as bytes ([`ModelSet::to_state`]): picklable like any Python attribute,
//! and exact, so that the estimator predicts what the trainer fitted, not
//! the f32 blob.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sgp_trainer::model::ModelSet;

use crate::arrays::{matrix, to_bytes, Predictions};
use crate::errors::{corrupt, IntoPy};

fn decode(bytes: &[u8]) -> PyResult<ModelSet> {
    ModelSet::from_state(bytes).map_err(|_| corrupt("estimator's fitted state"))
}

/// The trainer's f64 predictions of the fitted models `state` at the
/// `n x d` rows of `x`, row by row (`n x P`): each regression output's mean
/// and variance of `y` (noise included), or each latent's mean (bias
/// included) and variance, and a classifier's class probabilities (`n x
/// 1`, the positive class's, for a binary one; `n x K` for `K` classes).
#[pyfunction]
pub(crate) fn predict_state<'py>(
    py: Python<'py>,
    state: &[u8],
    x: &[u8],
    n: usize,
    d: usize,
) -> PyResult<Predictions<'py>> {
    let set = decode(state)?;
    let x = matrix(x, n, d, "X")?;
    let predicted = py.detach(|| set.predict_set(&x)).py_err()?;
    let predictions = &predicted.outputs;
    let rows = |f: &dyn Fn(usize, usize) -> f64, cols: usize| {
        to_bytes(
            py,
            (0..n).flat_map(move |i| (0..cols).map(move |k| f(i, k))),
        )
    };
    let mean = rows(&|i, k| predictions[k].mean[i], predictions.len());
    let var = rows(&|i, k| predictions[k].var[i], predictions.len());
    let probability = predicted
        .probabilities
        .as_ref()
        .map(|p| rows(&|i, k| p[(i, k)], p.ncols()));
    Ok((mean, var, probability))
}

/// The trainer's f64 joint predictive covariance of each regression
/// output's `y` between the `n x d` rows of `x` (noise included, so its
/// diagonal is `predict_state`'s variance): `P` matrices of `n x n`,
/// row-major, one after another.
#[pyfunction]
pub(crate) fn predict_cov<'py>(
    py: Python<'py>,
    state: &[u8],
    x: &[u8],
    n: usize,
    d: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let set = decode(state)?;
    let x = matrix(x, n, d, "X")?;
    let mut all = Vec::with_capacity(set.members.len());
    for model in &set.members {
        if x.ncols() != model.input_names.len() {
            return Err(PyValueError::new_err(format!(
                "X has {} columns, the model expects {}",
                x.ncols(),
                model.input_names.len()
            )));
        }
        let cov = py.detach(|| model.joint_covariance(&x)).py_err()?;
        all.push(cov.ok_or_else(|| {
            PyValueError::new_err(format!(
                "return_cov: this {} model's basis functions are not its prior kernel at points \
                 (their own widths or amplitudes), so the covariance between two inputs has no \
                 closed form here; return_std gives each input's variance",
                model.kind.name()
            ))
        })?);
    }
    Ok(to_bytes(
        py,
        all.iter()
            .flat_map(|c| (0..n).flat_map(move |i| (0..n).map(move |j| c[(i, j)]))),
    ))
}
