//! A blob as the device sees it: decoded and evaluated by `sgp-runtime` in
//! f32, the very code a microcontroller runs.

use nalgebra::DVector;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sgp_runtime::{Link, ModelSpec};
use sgp_trainer::evaluate::replay::{learns, step};
use sgp_trainer::export::codegen::{export_source as source_of, Format};
use sgp_trainer::export::inspect::summarise;
use sgp_trainer::model::device::LoadedModel;
use sgp_trainer::model::device::{classify_all, predict_outputs, DevicePrediction};
use sgp_trainer::options::update::update_settings;
use std::sync::{Mutex, MutexGuard};

use crate::arrays::{matrix, to_bytes, vector, Predictions};
use crate::choice::choice;
use crate::errors::IntoPy;

/// A decoded model blob, loaded into the runtime at its first evaluation
/// and kept there: a one-row call then costs the runtime's arithmetic.
#[pyclass(frozen, module = "sgp._native")]
pub(crate) struct Model {
    /// The blob's names, shape and link, which updates do not change.
    spec: ModelSpec,
    state: Mutex<State>,
}

/// The model as it is now.
struct State {
    /// The blob; older than `device` while `stale`.
    blob: Vec<u8>,
    /// The runtime model, once loaded.
    device: Option<LoadedModel>,
    /// Whether `device` learned since `blob` was written.
    stale: bool,
}

impl Model {
    fn new(blob: Vec<u8>, spec: ModelSpec) -> Self {
        Model {
            spec,
            state: Mutex::new(State {
                blob,
                device: None,
                stale: false,
            }),
        }
    }

    fn state(&self) -> PyResult<MutexGuard<'_, State>> {
        self.state
            .lock()
            .map_err(|_| PyValueError::new_err("the model was poisoned by a failed call"))
    }

    /// The blob of the model as it is now.
    fn blob(&self) -> PyResult<Vec<u8>> {
        let mut state = self.state()?;
        state.refresh()?;
        Ok(state.blob.clone())
    }

    /// `f` on the runtime model, loaded on first use.
    fn with_device<R>(
        &self,
        f: impl FnOnce(&mut LoadedModel) -> sgp_trainer::Result<R>,
    ) -> PyResult<R> {
        f(self.state()?.device()?).py_err()
    }

    /// One row of `d` inputs: float32 (`single`) or float64 bytes.
    fn row(&self, x: &[u8], single: bool) -> PyResult<Vec<f32>> {
        let d = usize::from(self.spec.shape.input_dim);
        if single {
            if x.len() != 4 * d {
                return Err(PyValueError::new_err(format!(
                    "X: {} bytes, expected {d} float32 values",
                    x.len()
                )));
            }
            return Ok(x
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect());
        }
        Ok(vector(x, d, "X")?.iter().map(|&v| v as f32).collect())
    }
}

impl State {
    /// The runtime model, loaded on first use.
    fn device(&mut self) -> PyResult<&mut LoadedModel> {
        match &mut self.device {
            Some(device) => Ok(device),
            empty => Ok(empty.insert(LoadedModel::load(&self.blob).py_err()?)),
        }
    }

    /// Writes `blob` from the runtime model if it learned since.
    fn refresh(&mut self) -> PyResult<()> {
        if let (true, Some(device)) = (self.stale, &self.device) {
            self.blob = device.to_bytes().py_err()?;
            self.stale = false;
        }
        Ok(())
    }
}

#[pymethods]
impl Model {
    /// Decodes and validates `blob` (refusing a corrupted or truncated one).
    #[staticmethod]
    fn from_bytes(blob: &[u8]) -> PyResult<Self> {
        let spec = ModelSpec::from_bytes(blob)
            .map_err(sgp_trainer::Error::from)
            .py_err()?;
        Ok(Model::new(blob.to_vec(), spec))
    }

    /// The blob's bytes, as the model is now.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.blob()?))
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
        let blob = self.blob()?;
        let spec = ModelSpec::from_bytes(&blob)
            .map_err(sgp_trainer::Error::from)
            .py_err()?;
        let summary = summarise(&spec, blob.len(), None);
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
        let blob = self.blob()?;
        // The model kept loaded, as it is (a noise it learned included);
        // else the blob, off the interpreter.
        let kept = {
            let state = self.state()?;
            state
                .device
                .as_ref()
                .map(|loaded| loaded.predict_outputs(&x))
        };
        let outputs = match kept {
            Some(outputs) => outputs,
            None => py.detach(|| predict_outputs(&blob, &x)),
        }
        .py_err()?;
        let cells = |f: &dyn Fn(&DevicePrediction) -> f32| {
            to_bytes(py, outputs.iter().flatten().map(|p| f64::from(f(p))))
        };
        let (mean, variance) = (cells(&|p| p.mean), cells(&|p| p.variance));
        let probability = match self.spec.shape.link {
            Link::Identity => None,
            Link::Probit => Some(cells(&|p| p.probability.unwrap_or(f32::NAN))),
            Link::OneVsRest | Link::Softmax => {
                let classes = py.detach(|| classify_all(&blob, &x)).py_err()?;
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
        let blob = self.blob()?;
        let spec = ModelSpec::from_bytes(&blob)
            .map_err(sgp_trainer::Error::from)
            .py_err()?;
        let arrays = py
            .detach(|| crate::uncertain::moments(&blob, &spec, &mean, &cov, derivatives))
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

    /// The runtime's mean and variance (first output) at one row of
    /// inputs `x` (float32 bytes if `single`, else float64), on the model
    /// kept loaded: `Model::predict`.
    fn predict_one(&self, x: &[u8], single: bool) -> PyResult<(f64, f64)> {
        let row = self.row(x, single)?;
        self.with_device(|loaded| {
            let p = loaded.device().predict(&row)?;
            Ok((f64::from(p.mean), f64::from(p.variance)))
        })
    }

    /// The runtime's mean (first output) at one row, as `predict_one`
    /// reads it: `Model::mean`.
    fn mean_one(&self, x: &[u8], single: bool) -> PyResult<f64> {
        let row = self.row(x, single)?;
        self.with_device(|loaded| Ok(f64::from(loaded.device().mean(&row)?)))
    }

    /// The runtime's mean at the `n x d` rows of `x` (float64 bytes):
    /// `Model::mean` row by row, as float64 bytes.
    fn mean<'py>(
        &self,
        py: Python<'py>,
        x: &[u8],
        n: usize,
        d: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let x = matrix(x, n, d, "X")?;
        let means = self.with_device(|loaded| {
            x.row_iter()
                .map(|r| {
                    let row: Vec<f32> = r.iter().map(|&v| v as f32).collect();
                    Ok(f64::from(loaded.device().mean(&row)?))
                })
                .collect::<sgp_trainer::Result<Vec<f64>>>()
        })?;
        Ok(to_bytes(py, means.into_iter()))
    }

    /// Conditions a one-output model on one row `x` (as `predict_one`
    /// reads it) with target `y`, through the runtime's own update on the
    /// model kept loaded: what it predicted before learning the row (mean,
    /// variance) and whether the gate let it be learned. `forgetting`,
    /// `gate`, `gate_run` and `noise_forgetting` as `update_rows`'.
    #[pyo3(signature = (x, single, y, forgetting=None, gate=None, gate_run=None, noise_forgetting=None))]
    #[allow(clippy::too_many_arguments)]
    fn update_one(
        &self,
        x: &[u8],
        single: bool,
        y: f64,
        forgetting: Option<f32>,
        gate: Option<f32>,
        gate_run: Option<u8>,
        noise_forgetting: Option<f32>,
    ) -> PyResult<(f64, f64, bool)> {
        let settings = update_settings(forgetting, gate, gate_run, noise_forgetting).py_err()?;
        let row = self.row(x, single)?;
        let classifier = self.spec.shape.link == Link::Probit;
        learns(&self.spec).py_err()?;
        let mut state = self.state()?;
        let device = state.device()?;
        let steps = step(
            device.device_mut(),
            &row,
            &[y as f32],
            settings,
            classifier,
            0,
        )
        .py_err()?;
        let first = steps
            .first()
            .ok_or_else(|| PyValueError::new_err("update_one needs a one-output model"))?;
        state.stale |= first.learned;
        Ok((first.mean, first.variance, first.learned))
    }

    /// Conditions the model on the `n` rows of `x` (`n x d` float64
    /// bytes) with targets `y` (`n x p` float64 bytes; a classifier's:
    /// 1 positive, 0 negative), in order, through the runtime's own update
    /// (f32, as a device), in place: per row (first output) the predicted
    /// mean and variance before learning it and whether the gate let it be
    /// learned. `forgetting`, `gate`, `gate_run` and `noise_forgetting`
    /// are `sgp replay`'s
    /// (`None`: its default), checked by the same code. On an error the
    /// model is as it was before the call.
    #[pyo3(signature = (x, n, d, y, p, forgetting=None, gate=None, gate_run=None, noise_forgetting=None))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn update_rows<'py>(
        &self,
        py: Python<'py>,
        x: &[u8],
        n: usize,
        d: usize,
        y: &[u8],
        p: usize,
        forgetting: Option<f32>,
        gate: Option<f32>,
        gate_run: Option<u8>,
        noise_forgetting: Option<f32>,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, Vec<bool>)> {
        let settings = update_settings(forgetting, gate, gate_run, noise_forgetting).py_err()?;
        let x = matrix(x, n, d, "X")?;
        let y = matrix(y, n, p, "y")?;
        learns(&self.spec).py_err()?;
        let mut state = self.state()?;
        // The blob is the model before the call, to go back to on an error.
        state.refresh()?;
        // Not detached from the interpreter: a thread waiting for the lock
        // holds it.
        let traces = match state.device()?.replay(&x, &y, settings) {
            Ok(traces) => traces,
            Err(e) => {
                state.device = None;
                return Err(e).py_err();
            }
        };
        let steps = traces
            .first()
            .map(|t| t.steps.as_slice())
            .unwrap_or_default();
        state.stale |= steps.iter().any(|s| s.learned);
        let mean = to_bytes(py, steps.iter().map(|s| s.mean));
        let variance = to_bytes(py, steps.iter().map(|s| s.variance));
        let learned = steps.iter().map(|s| s.learned).collect();
        Ok((mean, variance, learned))
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

/// The one artefact of `blobs`, one per output in output order: the blob
/// itself, or their container, as `sgp fit --out` writes it
/// ([`sgp_trainer::export::artefact::artefact`]).
#[pyfunction]
pub(crate) fn artefact<'py>(py: Python<'py>, blobs: Vec<Vec<u8>>) -> PyResult<Bound<'py, PyBytes>> {
    let blobs: Vec<&[u8]> = blobs.iter().map(Vec::as_slice).collect();
    let bytes = sgp_trainer::export::artefact::artefact(&blobs).py_err()?;
    Ok(PyBytes::new(py, &bytes))
}

/// Output `p`'s own blob of an artefact: a container's member, or the
/// one-output blob of a shared blob's output `p`; `None` past the last
/// ([`sgp_trainer::export::artefact::output_blob`]).
#[pyfunction]
pub(crate) fn output_blob<'py>(
    py: Python<'py>,
    blob: &[u8],
    p: usize,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let bytes = sgp_trainer::export::artefact::output_blob(blob, p).py_err()?;
    Ok(bytes.map(|b| PyBytes::new(py, &b)))
}

/// `sgp inspect --json` of a container (one model per output): each
/// member's summary and the RAM of the `Artefact` that loads them all.
#[pyfunction]
pub(crate) fn inspect_container_json(blob: &[u8]) -> PyResult<String> {
    let summary = sgp_trainer::export::inspect::summarise_container(blob, None).py_err()?;
    serde_json::to_string(&summary).map_err(|e| PyValueError::new_err(e.to_string()))
}
