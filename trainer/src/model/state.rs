//! What a host program keeps of a fitted [`ModelSet`] between fitting and
//! predicting: the set as exact f64 bytes ([`ModelSet::to_state`],
//! postcard), its f64 predictions with class probabilities
//! ([`ModelSet::predict_set`]), and a regression's joint predictive
//! covariance ([`TrainedModel::joint_covariance`]) — the f64 reference,
//! not the f32 blob.

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};
use sgp_runtime::{Kernel, Link, ModelKind};

use crate::data::Standardisation;
use crate::model::features::{BasisWidths, RuntimeBasis};
use crate::model::inference::RuntimeForm;
use crate::model::multiclass::class_probabilities;
use crate::model::{ModelSet, RawPrediction, TrainedModel};
use crate::numerics::linalg::solve_lower_mut;
use crate::{Error, Result};

/// A matrix as its shape and column-major values.
#[derive(Serialize, Deserialize)]
struct Matrix(usize, usize, Vec<f64>);

impl From<&DMatrix<f64>> for Matrix {
    fn from(m: &DMatrix<f64>) -> Self {
        Matrix(m.nrows(), m.ncols(), m.as_slice().to_vec())
    }
}

impl Matrix {
    fn into_dmatrix(self) -> Result<DMatrix<f64>> {
        let Matrix(rows, cols, values) = self;
        if values.len() != rows * cols {
            return Err(corrupt());
        }
        Ok(DMatrix::from_vec(rows, cols, values))
    }
}

/// Every field of a [`TrainedModel`]. The layout is the bytes estimators
/// pickled: a field added or moved makes old pickles undecodable.
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
    /// The basis's covariance function (a state written before kernels
    /// were recorded does not decode).
    kernel: Kernel,
}

/// The fitted models: every member, and a classifier's class labels.
#[derive(Serialize, Deserialize)]
struct SetState {
    members: Vec<State>,
    class_labels: Vec<String>,
}

fn corrupt() -> Error {
    Error::BadInput("these bytes are no fitted model's state".into())
}

/// The f64 predictions of a [`ModelSet`] at some rows.
#[derive(Clone, Debug, PartialEq)]
pub struct SetPrediction {
    /// Each member's prediction, in member order.
    pub outputs: Vec<RawPrediction>,
    /// A classifier's class probabilities, a row per input: one column
    /// (the positive class's) for a binary classifier, `K` for `K` classes;
    /// `None` for a regression.
    pub probabilities: Option<DMatrix<f64>>,
}

impl ModelSet {
    /// The set as bytes, exact (f64), for [`ModelSet::from_state`].
    ///
    /// # Errors
    /// [`Error::Numerical`] if encoding fails.
    pub fn to_state(&self) -> Result<Vec<u8>> {
        let sets = SetState {
            members: self.members.iter().map(state).collect(),
            class_labels: self.class_labels.clone(),
        };
        postcard::to_allocvec(&sets)
            .map_err(|e| Error::Numerical(format!("encoding the fitted model: {e}")))
    }

    /// The set [`ModelSet::to_state`] wrote.
    ///
    /// # Errors
    /// [`Error::BadInput`] for bytes that are no such state (corrupted, or
    /// of another version).
    pub fn from_state(bytes: &[u8]) -> Result<ModelSet> {
        let s: SetState = postcard::from_bytes(bytes).map_err(|_| corrupt())?;
        Ok(ModelSet {
            members: s.members.into_iter().map(model).collect::<Result<_>>()?,
            class_labels: s.class_labels,
        })
    }

    /// Every member's f64 prediction at the raw rows of `x`
    /// ([`TrainedModel::predict_raw`]) and a classifier's class
    /// probabilities.
    ///
    /// # Errors
    /// As [`ModelSet::link`] and [`TrainedModel::predict_raw`].
    pub fn predict_set(&self, x: &DMatrix<f64>) -> Result<SetPrediction> {
        let link = self.link()?;
        let outputs = self
            .members
            .iter()
            .map(|m| m.predict_raw(x))
            .collect::<Result<Vec<_>>>()?;
        let probabilities = (link != Link::Identity).then(|| {
            let columns = if link == Link::Probit {
                1
            } else {
                outputs.len()
            };
            let mut p = DMatrix::zeros(x.nrows(), columns);
            for i in 0..x.nrows() {
                let latents: Vec<(f64, f64)> =
                    outputs.iter().map(|r| (r.mean[i], r.var[i])).collect();
                for (k, v) in class_probabilities(link, &latents).into_iter().enumerate() {
                    p[(i, k)] = v;
                }
            }
            p
        });
        Ok(SetPrediction {
            outputs,
            probabilities,
        })
    }
}

impl TrainedModel {
    /// The joint predictive covariance of `y` (noise on the diagonal) of
    /// this regression between the raw rows of `x`, in raw target units:
    /// `C - V1^T V1 + V2^T V2`, where `C` is the prior covariance between
    /// the rows and `Vi = Li^{-1} k` (the runtime form's variance, of which
    /// this is the diagonal). `C` is the basis's own function centred at
    /// each row, which is the prior only where every basis function is the
    /// kernel at a point with the prior's amplitude: `None` for other
    /// bases (VSGP's widths, SPGP+HS's uncertainties) and for a
    /// classifier.
    ///
    /// # Errors
    /// [`Error::BadInput`] when `x` has another number of columns than the
    /// model's inputs; [`Error::Numerical`] when a triangular solve fails.
    pub fn joint_covariance(&self, x: &DMatrix<f64>) -> Result<Option<DMatrix<f64>>> {
        if x.ncols() != self.input_names.len() {
            return Err(Error::BadInput(format!(
                "inputs have {} columns, the model expects {}",
                x.ncols(),
                self.input_names.len()
            )));
        }
        let form = &self.form;
        let basis = &form.basis;
        let prior_amplitude = basis
            .amplitudes
            .iter()
            .all(|&a| (a - form.prior).abs() <= 1e-12 * form.prior.abs().max(1e-300));
        if self.link != Link::Identity
            || !matches!(basis.widths, BasisWidths::Shared(_))
            || !prior_amplitude
        {
            return Ok(None);
        }
        let z = self.transform.apply_x(x);
        let u = match &basis.projection {
            Some(p) => &z * p.transpose(),
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
        let k = basis.eval(&z);
        let mut v1 = k.clone();
        solve_lower_mut(&form.l1, &mut v1)?;
        cov -= v1.tr_mul(&v1);
        if let Some(l2) = &form.l2 {
            let mut v2 = k;
            solve_lower_mut(l2, &mut v2)?;
            cov += v2.tr_mul(&v2);
        }
        for i in 0..cov.nrows() {
            // The variance is clamped at zero as the runtime clamps it.
            cov[(i, i)] = cov[(i, i)].max(0.0) + form.noise_var;
        }
        Ok(Some(cov.map(|c| self.transform.unapply_var(c))))
    }
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

fn model(s: State) -> Result<TrainedModel> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Dataset;
    use crate::export::peer::{PeerModel, PeerPosterior};
    use crate::synth::synthetic;

    /// A FITC model of a 2-D synthetic set on 8 pseudo-inputs.
    fn fitted(seed: u64) -> (ModelSet, DMatrix<f64>) {
        let (x, y) = synthetic(80, 2, seed);
        let names = vec!["a".to_string(), "b".to_string()];
        let data = Dataset::from_raw(x.clone(), y, names, "y".into()).unwrap();
        let peer = PeerModel {
            data,
            lengthscales: vec![1.5, 2.0],
            signal_variance: 1.0,
            noise_variance: 0.01,
            kernel: "se".into(),
            force: false,
        };
        let z = x.rows(0, 8).into_owned();
        let model = peer
            .model(PeerPosterior::Inducing {
                z,
                objective: "fitc".into(),
                jitter: 1e-6,
            })
            .unwrap();
        (ModelSet::single(model, Vec::new()), x)
    }

    /// A state round-trips bit for bit, and bytes that are no state (cut
    /// short) are refused, never decoded into another model.
    #[test]
    fn a_state_round_trips_and_a_damaged_one_is_refused() {
        for seed in 0..3 {
            let (set, x) = fitted(seed);
            let bytes = set.to_state().unwrap();
            let back = ModelSet::from_state(&bytes).unwrap();
            assert_eq!(back.to_state().unwrap(), bytes);
            assert_eq!(back.predict_set(&x).unwrap(), set.predict_set(&x).unwrap());
            for cut in [1, bytes.len() / 2, bytes.len() - 1] {
                assert!(ModelSet::from_state(&bytes[..cut]).is_err(), "cut at {cut}");
            }
        }
    }

    /// The joint covariance's diagonal is the predictive variance, and the
    /// matrix is symmetric.
    #[test]
    fn the_joint_covariance_has_the_variances_on_its_diagonal() {
        for seed in 0..3 {
            let (set, x) = fitted(seed);
            let x = x.rows(0, 20).into_owned();
            let model = &set.members[0];
            let cov = model.joint_covariance(&x).unwrap().unwrap();
            let var = &model.predict_raw(&x).unwrap().var;
            for i in 0..x.nrows() {
                assert!((cov[(i, i)] - var[i]).abs() <= 1e-9 * var[i].max(1.0));
                for j in 0..i {
                    assert!((cov[(i, j)] - cov[(j, i)]).abs() <= 1e-12);
                }
            }
            assert!(set.predict_set(&x).unwrap().probabilities.is_none());
        }
    }
}
