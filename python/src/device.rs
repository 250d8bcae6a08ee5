//! A blob as the device sees it: decoded and evaluated by `sgp-runtime` in
//! f32, the very code a microcontroller runs.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sgp_runtime::{Link, ModelSpec};
use sgp_trainer::export::codegen::{export_source as source_of, Format};
use sgp_trainer::export::device::predict_all;
use sgp_trainer::tools::inspect::summarise;
use sgp_trainer::tools::replay::replay;

use crate::arrays::{matrix, to_bytes, Predictions};
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

    /// Whether the blob is a probit classifier.
    #[getter]
    fn is_classifier(&self) -> bool {
        self.spec.shape.link == Link::Probit
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

    /// Runs the f32 runtime at the `n x d` rows of `x` (float64 bytes):
    /// mean, variance and (classifiers) probability, each as float64 bytes.
    fn predict<'py>(
        &self,
        py: Python<'py>,
        x: &[u8],
        n: usize,
        d: usize,
    ) -> PyResult<Predictions<'py>> {
        let x = matrix(x, n, d, "X")?;
        let predictions = py.detach(|| predict_all(&self.blob, &x)).py_err()?;
        let mean = to_bytes(py, predictions.iter().map(|p| f64::from(p.mean)));
        let variance = to_bytes(py, predictions.iter().map(|p| f64::from(p.variance)));
        let probability = self.is_classifier().then(|| {
            to_bytes(
                py,
                predictions
                    .iter()
                    .map(|p| p.probability.map_or(f64::NAN, f64::from)),
            )
        });
        Ok((mean, variance, probability))
    }

    /// Whether the blob learns on the device (format version 7).
    #[getter]
    fn is_updatable(&self) -> bool {
        self.spec.learning.is_some()
    }

    /// Number of outputs P.
    #[getter]
    fn n_outputs(&self) -> usize {
        self.spec.output_count()
    }

    /// Conditions the model on the `n` rows of `x` (`n x d` float64
    /// bytes) with targets `y` (`n x p` float64 bytes; a classifier's:
    /// 1 positive, 0 negative), in order, through the runtime's own update
    /// (f32, as a device): the updated model, and per row (first output)
    /// the predicted mean and variance before learning it and whether the
    /// gate let it be learned.
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn updated<'py>(
        &self,
        py: Python<'py>,
        x: &[u8],
        n: usize,
        d: usize,
        y: &[u8],
        p: usize,
        forgetting: f32,
        gate: f32,
    ) -> PyResult<(Model, Bound<'py, PyBytes>, Bound<'py, PyBytes>, Vec<bool>)> {
        let x = matrix(x, n, d, "X")?;
        let y = matrix(y, n, p, "y")?;
        let settings = sgp_runtime::UpdateSettings { forgetting, gate };
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
