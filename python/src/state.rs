//! The fitted f64 model, kept by an estimator between `fit` and `predict`
//! as bytes (postcard): picklable like any Python attribute, and exact, so
//! that the estimator predicts what the trainer fitted, not the f32 blob.

use nalgebra::{DMatrix, DVector};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde::{Deserialize, Serialize};
use sgp_runtime::{Kernel, Link, ModelKind};
use sgp_trainer::data::Standardisation;
use sgp_trainer::export::class_probabilities;
use sgp_trainer::model::features::{BasisWidths, RuntimeBasis};
use sgp_trainer::model::inference::RuntimeForm;
use sgp_trainer::model::likelihood::probit;
use sgp_trainer::model::{ModelSet, TrainedModel};
use sgp_trainer::numerics::linalg::solve_lower_mut;

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

/// The fitted models: every member, and a classifier's class labels.
#[derive(Serialize, Deserialize)]
struct SetState {
    members: Vec<State>,
    class_labels: Vec<String>,
}

/// `set` as bytes.
pub(crate) fn encode(set: &ModelSet) -> sgp_trainer::Result<Vec<u8>> {
    let sets = SetState {
        members: set.members.iter().map(state).collect(),
        class_labels: set.class_labels.clone(),
    };
    postcard::to_allocvec(&sets)
        .map_err(|e| sgp_trainer::Error::Numerical(format!("encoding the fitted model: {e}")))
}

/// Every field of `model`.
fn state(model: &TrainedModel) -> State {
    let basis = &model.form.basis;
    let (shared_widths, per_basis_widths) = match &basis.widths {
        BasisWidths::Shared(w) => (Some(w.clone()), None),
        BasisWidths::PerBasis(w) => (None, Some(w.into())),
    };
    let t = &model.transform;
    State {
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
    }
}

fn decode(bytes: &[u8]) -> PyResult<ModelSet> {
    let s: SetState = postcard::from_bytes(bytes).map_err(|_| corrupt())?;
    Ok(ModelSet {
        members: s.members.into_iter().map(model).collect::<PyResult<_>>()?,
        class_labels: s.class_labels,
    })
}

fn model(s: State) -> PyResult<TrainedModel> {
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
    let link = set.link().py_err()?;
    let predictions = py
        .detach(|| {
            set.members
                .iter()
                .map(|m| m.predict_raw(&x))
                .collect::<sgp_trainer::Result<Vec<_>>>()
        })
        .py_err()?;
    let rows = |f: &dyn Fn(usize, usize) -> f64, cols: usize| {
        to_bytes(
            py,
            (0..n).flat_map(move |i| (0..cols).map(move |k| f(i, k))),
        )
    };
    let mean = rows(&|i, k| predictions[k].mean[i], predictions.len());
    let var = rows(&|i, k| predictions[k].var[i], predictions.len());
    let probability = match link {
        Link::Identity => None,
        Link::Probit => Some(rows(
            &|i, _| probit(predictions[0].mean[i], predictions[0].var[i]),
            1,
        )),
        Link::OneVsRest | Link::Softmax => {
            let p: Vec<Vec<f64>> = (0..n)
                .map(|i| {
                    let latents: Vec<(f64, f64)> =
                        predictions.iter().map(|r| (r.mean[i], r.var[i])).collect();
                    class_probabilities(link, &latents)
                })
                .collect();
            Some(rows(&|i, k| p[i][k], predictions.len()))
        }
    };
    Ok((mean, var, probability))
}

/// The joint predictive covariance of `y` (noise on the diagonal) of
/// `model`, a regression, between the rows of the standardised `z`, in raw
/// target units: `C - V1^T V1 + V2^T V2`, where `C` is the prior
/// covariance between the rows and `Vi = Li^{-1} k` (the runtime form's
/// variance, of which this is the diagonal). `C` is the basis's own
/// function centred at each row, which is the prior only where every basis
/// function is the kernel at a point with the prior's amplitude; other
/// bases (VSGP's widths, SPGP+HS's uncertainties) are refused.
fn covariance(model: &TrainedModel, z: &DMatrix<f64>) -> PyResult<DMatrix<f64>> {
    let form = &model.form;
    let basis = &form.basis;
    let prior_amplitude = basis
        .amplitudes
        .iter()
        .all(|&a| (a - form.prior).abs() <= 1e-12 * form.prior.abs().max(1e-300));
    if model.link != Link::Identity
        || !matches!(basis.widths, BasisWidths::Shared(_))
        || !prior_amplitude
    {
        return Err(PyValueError::new_err(format!(
            "return_cov: this {} model's basis functions are not its prior kernel at points \
             (their own widths or amplitudes), so the covariance between two inputs has no \
             closed form here; return_std gives each input's variance",
            model.kind.name()
        )));
    }
    let u = match &basis.projection {
        Some(p) => z * p.transpose(),
        None => z.clone(),
    };
    let at_rows = RuntimeBasis {
        projection: None,
        centres: u.clone(),
        widths: basis.widths.clone(),
        amplitudes: vec![form.prior; u.nrows()],
        kernel: basis.kernel,
    };
    let mut cov = at_rows.eval(&u);
    let k = basis.eval(z);
    let mut v1 = k.clone();
    solve_lower_mut(&form.l1, &mut v1).py_err()?;
    cov -= v1.tr_mul(&v1);
    if let Some(l2) = &form.l2 {
        let mut v2 = k;
        solve_lower_mut(l2, &mut v2).py_err()?;
        cov += v2.tr_mul(&v2);
    }
    for i in 0..cov.nrows() {
        // The variance is clamped at zero as the runtime clamps it.
        cov[(i, i)] = cov[(i, i)].max(0.0) + form.noise_var;
    }
    Ok(cov.map(|c| model.transform.unapply_var(c)))
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
        let z = model.transform.apply_x(&x);
        all.push(py.detach(|| covariance(model, &z))?);
    }
    Ok(to_bytes(
        py,
        all.iter()
            .flat_map(|c| (0..n).flat_map(move |i| (0..n).map(move |j| c[(i, j)]))),
    ))
}
