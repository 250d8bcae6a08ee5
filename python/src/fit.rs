//! Fitting from in-memory arrays: the same library calls as `sgp fit`
//! (validate, fit, export with the f32 check and its cure), with the GIL
//! released while the fit runs.

use std::time::{Duration, Instant};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sgp_trainer::data::Dataset;
use sgp_trainer::export::cure::{export_fitted, Cure};
use sgp_trainer::export::device::names_too_long;
use sgp_trainer::export::Fidelity;
use sgp_trainer::fit::task::{choose_task, Task};
use sgp_trainer::fit::{
    fit as fit_model, FitParams, FitReport, HyperInit, InitMethod, Method, DEFAULT_STALL,
};
use sgp_trainer::model::inference::Approximation;
use sgp_trainer::numerics::optimise::{Progress, Stall};

use crate::arrays::{matrix, vector};
use crate::choice::choice;
use crate::errors::IntoPy;
use crate::state::encode;

/// What a fit returns besides the blob, as JSON for the Python side.
#[derive(serde::Serialize)]
struct FitSummary<'a> {
    report: &'a FitReport,
    fidelity: &'a Fidelity,
    cure: Option<&'a Cure>,
    /// What `sgp fit` warns about: constant inputs, columns f32 cannot
    /// resolve, names too long for a device.
    warnings: Vec<String>,
}

/// `sgp fit`'s warnings about the training data, for `warnings.warn`.
fn data_warnings(data: &Dataset) -> Vec<String> {
    let mut warnings: Vec<String> = data
        .constant_inputs
        .iter()
        .filter_map(|&j| {
            let name = data.input_names.get(j)?;
            let value = data.transform.x_mean.get(j)?;
            Some(format!(
                "input '{name}' is constant in the training data (value {value}): the model \
                 ignores it"
            ))
        })
        .collect();
    warnings.extend(sgp_trainer::data::extremes::warnings(data));
    warnings.extend(sgp_trainer::export::precision::for_dataset(data));
    let long = names_too_long(&data.input_names, &data.target_name);
    if !long.is_empty() {
        warnings.push(format!(
            "column names longer than the {} bytes a device Model holds: {}; a device will \
             refuse the blob (rename the columns)",
            sgp_runtime::NAME_CAPACITY,
            long.join(", ")
        ));
    }
    warnings
}

/// Settings as the estimators name them; `None` keeps the procedure's
/// default, as an absent `sgp fit` flag does.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub(crate) struct Settings {
    model: String,
    m: usize,
    seed: u64,
    objective: Option<String>,
    restarts: Option<usize>,
    max_iter: Option<u64>,
    tol: Option<f64>,
    init: Option<String>,
    init_hyper: Option<String>,
    max_points: Option<usize>,
    dim: Option<usize>,
    kernel: Option<String>,
}

impl Settings {
    fn params(&self) -> PyResult<FitParams> {
        let method: Method = choice(&self.model, "model")?;
        let dim = match (method.is_projected(), self.dim) {
            (true, Some(dim)) => dim,
            (true, None) => {
                return Err(PyValueError::new_err(format!(
                    "model='{}' needs dim, the projected dimension G",
                    self.model
                )))
            }
            (false, Some(_)) => {
                return Err(PyValueError::new_err(format!(
                    "dim applies to spgp-dr and spgp-pca only, not model='{}'",
                    self.model
                )))
            }
            (false, None) => 0,
        };
        let mut params = FitParams::defaults(method, self.m, dim, self.seed);
        let optimiser = params.optimiser_mut();
        if let Some(max_iter) = self.max_iter {
            optimiser.max_iter = max_iter;
        }
        if let Some(per_row) = self.tol {
            optimiser.stall = Some(Stall {
                per_row,
                ..DEFAULT_STALL
            });
        }
        let approximation = self
            .objective
            .as_deref()
            .map(|o| choice::<Approximation>(o, "objective"))
            .transpose()?;
        if let Some(sparse) = params.sparse_mut() {
            // As `sgp fit --objective`: a named objective is kept, not
            // weighed against the other on held-out rows (spgp-hs, vsgp
            // and spgp-dr are still weighed against plain SPGP).
            if let Some(approximation) = approximation {
                sparse.approximation = approximation;
                sparse.held_out_choice &= method.falls_back_to_spgp();
            }
            if let Some(restarts) = self.restarts {
                sparse.restarts = restarts;
            }
            if let Some(init) = &self.init {
                sparse.pseudo_init = choice::<InitMethod>(init, "init")?.into();
            }
            if let Some(hyper) = &self.init_hyper {
                sparse.hyper_init = choice::<HyperInit>(hyper, "init_hyper")?;
            }
        }
        if let Some(kernel) = &self.kernel {
            let kernel = sgp_trainer::model::kernel::kernel_by_name(kernel)
                .map_err(|e| PyValueError::new_err(format!("kernel: {e}")))?;
            params.set_kernel(kernel);
        }
        if let (FitParams::Gplasso(p), Some(approximation)) = (&mut params, approximation) {
            p.approximation = approximation;
            p.choose_objective = false;
        }
        if let Some(max_points) = self.max_points {
            match &mut params {
                FitParams::Exact(p) => p.max_points = max_points,
                FitParams::Gplasso(p) => p.max_points = max_points,
                other => {
                    if let Some(sparse) = other.sparse_mut() {
                        sparse.max_points = max_points;
                    }
                }
            }
        }
        Ok(params)
    }
}

/// Shortest time between two calls of a progress callback: each call takes
/// the GIL back from whatever Python thread holds it.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(200);

/// Reports optimiser progress to a Python callable
/// `progress(iteration, budget, objective)`, at most every
/// [`PROGRESS_INTERVAL`]; the first exception it raises is kept (and the
/// callable not called again) to be raised when the fit returns.
struct ProgressReporter {
    callback: Option<Py<PyAny>>,
    budget: u64,
    last: Option<Instant>,
    error: Option<PyErr>,
}

impl ProgressReporter {
    fn report(&mut self, p: &Progress, force: bool) {
        let Some(callback) = &self.callback else {
            return;
        };
        if !force && self.last.is_some_and(|t| t.elapsed() < PROGRESS_INTERVAL) {
            return;
        }
        self.last = Some(Instant::now());
        let called = Python::attach(|py| {
            callback
                .call1(py, (p.iteration, self.budget, p.best_value))
                .map(drop)
        });
        if let Err(e) = called {
            self.error = Some(e);
            self.callback = None;
        }
    }
}

/// Fits `settings.model` to `x` (`n x d`, raw units) and `y`, exports it
/// through the f32 check (curing a failing export by more jitter, as `sgp
/// fit` does; `force` exports a model nothing cures) and returns the blob,
/// the fitted f64 model ([`crate::state`]) and a JSON summary (report,
/// fidelity, cure, warnings). With `positive_class`, `y` holds class labels
/// and that value is the positive class (probit). `progress`, if given, is
/// called as `progress(iteration, budget, objective)` while the fit runs.
#[pyfunction]
#[pyo3(signature = (x, n, d, y, input_names, target_name, settings, positive_class=None, force=false, progress=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit<'py>(
    py: Python<'py>,
    x: &[u8],
    n: usize,
    d: usize,
    y: &[u8],
    input_names: Vec<String>,
    target_name: String,
    settings: Settings,
    positive_class: Option<f64>,
    force: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, String)> {
    let x = matrix(x, n, d, "X")?;
    let y = vector(y, n, "y")?;
    let params = settings.params()?;
    let mut reporter = ProgressReporter {
        callback: progress,
        budget: params.iteration_budget(),
        last: None,
        error: None,
    };
    let fitted = py
        .detach(|| -> sgp_trainer::Result<(Vec<u8>, Vec<u8>, String)> {
            let data = Dataset::from_raw(x, y, input_names, target_name)?;
            // The estimator's class is the task; the rules of the target
            // (a class in at least two rows) are `sgp fit`'s.
            let (task, positive) = match positive_class {
                Some(p) => (Task::Classification, Some(format!("{p}"))),
                None => (Task::Regression, None),
            };
            let data = choose_task(
                data,
                Some(task),
                positive.as_deref(),
                "--model",
                &[params.method()],
            )?
            .data;
            let mut last = None;
            let mut on_progress = |p: Progress| {
                reporter.report(&p, false);
                last = Some(p);
            };
            let fitted = fit_model(&data, &params, &mut on_progress);
            if let Some(p) = last {
                reporter.report(&p, true);
            }
            let mut fitted = fitted?;
            let (exported, cure) = export_fitted(&mut fitted, &data.raw_x(), force)?;
            let summary = FitSummary {
                report: &fitted.report,
                fidelity: &exported.fidelity,
                cure: cure.as_ref(),
                warnings: data_warnings(&data),
            };
            let json = serde_json::to_string(&summary)
                .map_err(|e| sgp_trainer::Error::Numerical(format!("JSON: {e}")))?;
            Ok((exported.blob, encode(&fitted.model)?, json))
        })
        .py_err();
    if let Some(e) = reporter.error {
        return Err(e);
    }
    let (blob, state, summary) = fitted?;
    Ok((PyBytes::new(py, &blob), PyBytes::new(py, &state), summary))
}
