//! A blob as the device sees it: decoded and evaluated by `sgp-runtime` in
//! f32, the very code a microcontroller runs.

use nalgebra::DVector;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sgp_runtime::{Link, ModelSpec};
use sgp_trainer::export::codegen::{export_source as source_of, Format};
use sgp_trainer::export::device::{classify_all, predict_outputs, DevicePrediction};
use sgp_trainer::options::update::update_settings;
use sgp_trainer::tools::inspect::summarise;
use sgp_trainer::tools::replay::replay;

use crate::arrays::{matrix, to_bytes, vector, Predictions};
use crate::choice::choice;
use crate::errors::IntoPy;

/// A decoded model blob.
#[pyclass(frozen, module = "sgp._native")]
pub(crate) struct Model {
    blob: Vec<u8>,
    spec: ModelSpec,
}

#[pymethods]
impl Model {
    /// Decodes and validates `blob` (refusing a corrupted or truncated one).
    #[staticmethod]
    fn from_bytes(blob: &[u8]) -> PyResult<Self> {
        let spec = ModelSpec::from_bytes(blob)
            .map_err(sgp_trainer::Error::from)
            .py_err()?;
        Ok(Model {
            blob: blob.to_vec(),
            spec,
        })
    }

    /// The blob's bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.blob)
    }

    /// Input names, in the order `predict` reads the columns.
    #[getter]
    fn input_names(&self) -> Vec<String> {
        self.spec.input_names.clone()
    }

    /// Target name.
    #[getter]
    fn target_name(&self) -> String {
        self.spec.target_name.clone()
    }

    /// Fitting procedure, e.g. `spgp`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.spec.shape.kind.name()
    }

    /// Whether the blob is a classifier (of two classes or several).
    #[getter]
    fn is_classifier(&self) -> bool {
        self.spec.shape.link != Link::Identity
    }

    /// Outputs (regression) or class latents in the blob.
    #[getter]
    fn n_outputs(&self) -> usize {
        self.spec.output_count()
    }

    /// A classifier's class labels, in class order (empty for a regression).
    #[getter]
    fn class_labels(&self) -> Vec<String> {
        sgp_trainer::data::labels::blob_labels(&self.spec)
    }

    /// Raw target value of the positive class (classifiers).
    #[getter]
    fn positive_class(&self) -> f64 {
        f64::from(self.spec.positive_class)
    }

    /// Number of basis functions M.
    #[getter]
    fn n_basis(&self) -> usize {
        usize::from(self.spec.shape.n_basis)
    }

    /// Number of inputs D.
    #[getter]
    fn n_inputs(&self) -> usize {
        usize::from(self.spec.shape.input_dim)
    }

    /// `sgp inspect --json` of the blob.
    fn inspect_json(&self) -> PyResult<String> {
        let summary = summarise(&self.spec, self.blob.len(), None);
        serde_json::to_string(&summary).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Runs the f32 runtime at the `n x d` rows of `x` (float64 bytes),
    /// row by row: each output's mean and variance (`n x P`), and a
    /// classifier's probabilities (`n x 1`, the positive class's, for a
    /// binary one; `n x K` for `K` classes), each as float64 bytes.
    fn predict<'py>(
        &self,
        py: Python<'py>,
        x: &[u8],
        n: usize,
        d: usize,
    ) -> PyResult<Predictions<'py>> {
        let x = matrix(x, n, d, "X")?;
        let outputs = py.detach(|| predict_outputs(&self.blob, &x)).py_err()?;
        let cells = |f: &dyn Fn(&DevicePrediction) -> f32| {
            to_bytes(py, outputs.iter().flatten().map(|p| f64::from(f(p))))
        };
        let (mean, variance) = (cells(&|p| p.mean), cells(&|p| p.variance));
        let probability = match self.spec.shape.link {
            Link::Identity => None,
            Link::Probit => Some(cells(&|p| p.probability.unwrap_or(f32::NAN))),
            Link::OneVsRest | Link::Softmax => {
                let classes = py.detach(|| classify_all(&self.blob, &x)).py_err()?;
                let p = classes
                    .iter()
                    .flat_map(|(_, p)| p.iter().map(|&v| f64::from(v)));
                Some(to_bytes(py, p))
            }
        };
        Ok((mean, variance, probability))
    }

    /// The moments of every output at a Gaussian input `N(mean, cov)`
    /// (`d` and `d x d` float64 bytes, raw units) through the runtime's
    /// `Uncertain` (f32, as a device), and with `derivatives` their
    /// derivatives with respect to `mean` and `cov` (its f64 path): a list
    /// of float64 bytes, C-order, in `UncertainPrediction`'s field order.
    fn predict_uncertain<'py>(
        &self,
        py: Python<'py>,
        mean: &[u8],
        cov: &[u8],
        derivatives: bool,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let d = usize::from(self.spec.shape.input_dim);
        let narrow = |v: &DVector<f64>| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
        let mean = narrow(&vector(mean, d, "mean")?);
        let cov = narrow(&vector(cov, d * d, "cov")?);
        let arrays = py
            .detach(|| crate::uncertain::moments(&self.blob, &self.spec, &mean, &cov, derivatives))
            .py_err()?;
        Ok(arrays
            .into_iter()
            .map(|a| to_bytes(py, a.into_iter()))
            .collect())
    }

    /// Whether the blob learns on the device (format version 7).
    #[getter]
    fn is_updatable(&self) -> bool {
        self.spec.learning.is_some()
    }

    /// Conditions the model on the `n` rows of `x` (`n x d` float64
    /// bytes) with targets `y` (`n x p` float64 bytes; a classifier's:
    /// 1 positive, 0 negative), in order, through the runtime's own update
    /// (f32, as a device): the updated model, and per row (first output)
    /// the predicted mean and variance before learning it and whether the
    /// gate let it be learned. `forgetting` and `gate` are `sgp replay`'s
    /// (`None`: its default), checked by the same code.
    #[pyo3(signature = (x, n, d, y, p, forgetting=None, gate=None))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn updated<'py>(
        &self,
        py: Python<'py>,
        x: &[u8],
        n: usize,
        d: usize,
        y: &[u8],
        p: usize,
        forgetting: Option<f32>,
        gate: Option<f32>,
    ) -> PyResult<(Model, Bound<'py, PyBytes>, Bound<'py, PyBytes>, Vec<bool>)> {
        let settings = update_settings(forgetting, gate).py_err()?;
        let x = matrix(x, n, d, "X")?;
        let y = matrix(y, n, p, "y")?;
        let replayed = py
            .detach(|| replay(&self.blob, &x, &y, settings))
            .py_err()?;
        let steps = replayed
            .outputs
            .first()
            .map(|t| t.steps.clone())
            .unwrap_or_default();
        let mean = to_bytes(py, steps.iter().map(|s| s.mean));
        let variance = to_bytes(py, steps.iter().map(|s| s.variance));
        let learned = steps.iter().map(|s| s.learned).collect();
        let model = Model::from_bytes(&replayed.blob)?;
        Ok((model, mean, variance, learned))
    }
}

/// What `sgp export --format FORMAT --name NAME` writes for `blob`;
/// `source` names the blob in the generated comment.
#[pyfunction]
pub(crate) fn export_source(
    blob: &[u8],
    format: &str,
    name: &str,
    source: &str,
) -> PyResult<String> {
    let format: Format = choice(format, "format")?;
    source_of(blob, format, name, source).py_err()
}

/// Writes `data` to `path` as `sgp` writes its outputs: to a temporary
/// file beside it, renamed over it, so that a failure leaves any old file
/// as it was (`Model.save`, the estimators' `save`).
#[pyfunction]
pub(crate) fn write_file(path: std::path::PathBuf, data: &[u8]) -> PyResult<()> {
    sgp_trainer::files::write_atomic(&path, data).py_err()
}

/// Where output `target`'s own blob goes beside `path` when each output
/// gets its own model, as `sgp fit --out path` names it
/// ([`sgp_trainer::files::separate_path`]).
#[pyfunction]
pub(crate) fn separate_path(path: std::path::PathBuf, target: &str) -> std::path::PathBuf {
    sgp_trainer::files::separate_path(&path, target)
}
