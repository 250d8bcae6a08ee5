//! The fitted f64 model, kept by an estimator between `fit` and `predict`
//! as bytes (postcard): picklable like any Python attribute, and exact, so
//! that the estimator predicts what the trainer fitted, not the f32 blob.

use nalgebra::{DMatrix, DVector};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde::{Deserialize, Serialize};
use sgp_runtime::{Kernel, Link, ModelKind};
use sgp_trainer::data::Standardisation;
use sgp_trainer::model::features::{BasisWidths, RuntimeBasis};
use sgp_trainer::model::inference::RuntimeForm;
use sgp_trainer::model::likelihood::probit;
use sgp_trainer::model::TrainedModel;

use crate::arrays::{matrix, to_bytes, Predictions};
use crate::errors::IntoPy;

/// A matrix as its shape and column-major values.
#[derive(Serialize, Deserialize)]
struct Matrix(usize, usize, Vec<f64>);

impl From<&DMatrix<f64>> for Matrix {
    fn from(m: &DMatrix<f64>) -> Self {
        Matrix(m.nrows(), m.ncols(), m.as_slice().to_vec())
    }
}

impl Matrix {
    fn into_dmatrix(self) -> PyResult<DMatrix<f64>> {
        let Matrix(rows, cols, values) = self;
        if values.len() != rows * cols {
            return Err(corrupt());
        }
        Ok(DMatrix::from_vec(rows, cols, values))
    }
}

/// Every field of a [`TrainedModel`].
#[derive(Serialize, Deserialize)]
struct State {
    kind: ModelKind,
    link: Link,
    projection: Option<Matrix>,
    centres: Matrix,
    shared_widths: Option<Vec<f64>>,
    per_basis_widths: Option<Matrix>,
    amplitudes: Vec<f64>,
    beta: Vec<f64>,
    l1: Matrix,
    l2: Option<Matrix>,
    prior: f64,
    noise_var: f64,
    x_mean: Vec<f64>,
    x_scale: Vec<f64>,
    x_min: Vec<f64>,
    x_max: Vec<f64>,
    y_mean: f64,
    y_scale: f64,
    input_names: Vec<String>,
    target_name: String,
    bias: f64,
    positive_class: f64,
    /// The basis's covariance function (an estimator pickled before
    /// kernels were recorded does not decode: "fit it again").
    kernel: Kernel,
}

fn corrupt() -> PyErr {
    PyValueError::new_err("the estimator's fitted state is corrupted; fit it again")
}

/// `model` as bytes.
pub(crate) fn encode(model: &TrainedModel) -> sgp_trainer::Result<Vec<u8>> {
    let basis = &model.form.basis;
    let (shared_widths, per_basis_widths) = match &basis.widths {
        BasisWidths::Shared(w) => (Some(w.clone()), None),
        BasisWidths::PerBasis(w) => (None, Some(w.into())),
    };
    let t = &model.transform;
    let state = State {
        kind: model.kind,
        link: model.link,
        projection: basis.projection.as_ref().map(Matrix::from),
        centres: (&basis.centres).into(),
        shared_widths,
        per_basis_widths,
        amplitudes: basis.amplitudes.clone(),
        beta: model.form.beta.as_slice().to_vec(),
        l1: (&model.form.l1).into(),
        l2: model.form.l2.as_ref().map(Matrix::from),
        prior: model.form.prior,
        noise_var: model.form.noise_var,
        x_mean: t.x_mean.clone(),
        x_scale: t.x_scale.clone(),
        x_min: t.x_min.clone(),
        x_max: t.x_max.clone(),
        y_mean: t.y_mean,
        y_scale: t.y_scale,
        input_names: model.input_names.clone(),
        target_name: model.target_name.clone(),
        bias: model.bias,
        positive_class: model.positive_class,
        kernel: basis.kernel,
    };
    postcard::to_allocvec(&state)
        .map_err(|e| sgp_trainer::Error::Numerical(format!("encoding the fitted model: {e}")))
}

fn decode(bytes: &[u8]) -> PyResult<TrainedModel> {
    let s: State = postcard::from_bytes(bytes).map_err(|_| corrupt())?;
    let widths = match (s.shared_widths, s.per_basis_widths) {
        (Some(w), None) => BasisWidths::Shared(w),
        (None, Some(w)) => BasisWidths::PerBasis(w.into_dmatrix()?),
        _ => return Err(corrupt()),
    };
    Ok(TrainedModel {
        kind: s.kind,
        link: s.link,
        form: RuntimeForm {
            basis: RuntimeBasis {
                projection: s.projection.map(Matrix::into_dmatrix).transpose()?,
                centres: s.centres.into_dmatrix()?,
                widths,
                amplitudes: s.amplitudes,
                kernel: s.kernel,
            },
            beta: DVector::from_vec(s.beta),
            l1: s.l1.into_dmatrix()?,
            l2: s.l2.map(Matrix::into_dmatrix).transpose()?,
            prior: s.prior,
            noise_var: s.noise_var,
        },
        transform: Standardisation {
            x_mean: s.x_mean,
            x_scale: s.x_scale,
            x_min: s.x_min,
            x_max: s.x_max,
            y_mean: s.y_mean,
            y_scale: s.y_scale,
        },
        input_names: s.input_names,
        target_name: s.target_name,
        bias: s.bias,
        positive_class: s.positive_class,
    })
}

/// The trainer's f64 predictions of the fitted model `state` at the
/// `n x d` rows of `x`: regression mean and variance of `y` (noise
/// included), or a probit model's latent mean (bias included), latent
/// variance and class probability.
#[pyfunction]
pub(crate) fn predict_state<'py>(
    py: Python<'py>,
    state: &[u8],
    x: &[u8],
    n: usize,
    d: usize,
) -> PyResult<Predictions<'py>> {
    let model = decode(state)?;
    let x = matrix(x, n, d, "X")?;
    let p = py.detach(|| model.predict_raw(&x)).py_err()?;
    let probability = (model.link == Link::Probit).then(|| {
        to_bytes(
            py,
            p.mean.iter().zip(p.var.iter()).map(|(&m, &v)| probit(m, v)),
        )
    });
    Ok((
        to_bytes(py, p.mean.iter().copied()),
        to_bytes(py, p.var.iter().copied()),
        probability,
    ))
}

/// The fitted model `state` as a blob that learns on the device (format
/// version 7, what `sgp fit --updatable` writes), its sparse objective
/// `approximation` (`"fitc"`, `"vfe"`, or none for a classifier), held to
/// the usual runtime check at the `n x d` raw inputs `x`.
#[pyfunction]
#[pyo3(signature = (state, approximation, x, n, d, force=false))]
pub(crate) fn updatable_blob<'py>(
    py: Python<'py>,
    state: &[u8],
    approximation: Option<&str>,
    x: &[u8],
    n: usize,
    d: usize,
    force: bool,
) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
    use sgp_trainer::model::inference::Approximation;
    let model = decode(state)?;
    let x = matrix(x, n, d, "X")?;
    let approximation = match approximation {
        None => None,
        Some("fitc") => Some(Approximation::Fitc),
        Some("vfe") => Some(Approximation::Vfe),
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "objective {other:?}: expected \"fitc\" or \"vfe\""
            )))
        }
    };
    let set = sgp_trainer::model::ModelSet::single(model, Vec::new());
    let exported = py
        .detach(|| sgp_trainer::export::updatable::export_updatable(&set, &x, approximation, force))
        .py_err()?;
    Ok(pyo3::types::PyBytes::new(py, &exported.blob))
}
