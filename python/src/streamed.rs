//! `sgp fit`'s streamed fit of a large file, from Python: the library's
//! [`Job`], streamed only, with the GIL released. [`fit_file`] runs it
//! whole, as the CLI does; [`StreamedFit`] stops after the subset fit so
//! that an engine can run the pass over every row ([`crate::chunks`]) and
//! hand back its sums.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use sgp_trainer::data::multi_target::parse_target_list;
use sgp_trainer::files::Input;
use sgp_trainer::fit::streamed::StreamedProgress;
use sgp_trainer::fit::task::Task;
use sgp_trainer::job::{Done, Job, Read, Source, Streaming};
use sgp_trainer::options::streamed_file::StreamedStart;
use sgp_trainer::options::Options;

use crate::chunks::{encode, sums_from_bytes, BasisBytes};
use crate::errors::IntoPy;
use crate::fit::{options, Reporter};
use crate::state;

type Exported<'py> = (Bound<'py, PyBytes>, Bound<'py, PyBytes>, String);

/// Reports a streamed fit's progress as `progress(phase, done, total)`
/// (`phase`: "read", "fit", "pass"; bytes of the file for the passes,
/// iterations for the fit).
fn report(reporter: &mut Reporter, p: StreamedProgress) {
    let (phase, done, total) = match p {
        StreamedProgress::Read(at) => ("read", at.bytes, at.total_bytes),
        StreamedProgress::Fit {
            progress, budget, ..
        } => ("fit", progress.iteration, budget),
        StreamedProgress::Pass(at) => ("pass", at.bytes, at.total_bytes),
    };
    reporter.call(false, |py, f| f.call1(py, (phase, done, total)));
}

fn task(task: Option<&str>) -> PyResult<Option<Task>> {
    match task {
        None => Ok(None),
        Some("regression") => Ok(Some(Task::Regression)),
        Some("classification") => Ok(Some(Task::Classification)),
        Some(other) => Err(PyValueError::new_err(format!(
            "task must be 'regression' or 'classification', not {other:?}"
        ))),
    }
}

/// The job of fitting the file `path` (`target` and `inputs` as `sgp fit
/// --target` and `--inputs`) by the streamed fit only.
fn job(
    path: &str,
    (target, inputs): (Option<String>, Option<Vec<String>>),
    options: Options,
    task: Option<Task>,
    force: bool,
) -> sgp_trainer::Result<Job> {
    let several = target.as_deref().map(parse_target_list);
    if several.is_some_and(|targets| targets.len() > 1) {
        return Err(sgp_trainer::Error::BadInput(
            "several targets do not stream from Python yet: fit_file and start_file return one \
             target's model; `sgp fit --data FILE --target a,b` streams them"
                .into(),
        ));
    }
    let source = if std::path::Path::new(path).is_dir() {
        Source::Directory(path.into())
    } else {
        Source::File(Input::open(path)?)
    };
    Ok(Job {
        target,
        inputs,
        task,
        force,
        streaming: Streaming::Always,
        ..Job::new(options, source)
    })
}

/// The blob, the fitted state and the JSON summary of a job `done`.
fn exported_bytes(done: Done) -> sgp_trainer::Result<(Vec<u8>, Vec<u8>, String)> {
    let output =
        done.outputs.into_iter().next().ok_or_else(|| {
            sgp_trainer::Error::Numerical("a streamed fit without a model".into())
        })?;
    let json = serde_json::to_string(&output.summary())
        .map_err(|e| sgp_trainer::Error::Numerical(format!("JSON: {e}")))?;
    Ok((output.exported.blob, state::encode(&output.fit.set)?, json))
}

fn exported(py: Python<'_>, (blob, state, json): (Vec<u8>, Vec<u8>, String)) -> Exported<'_> {
    (PyBytes::new(py, &blob), PyBytes::new(py, &state), json)
}

/// Fits the file `path` (CSV, Parquet or a directory of Parquet files;
/// `target` and `inputs` as `sgp fit --target` and `--inputs`)
/// by the streamed fit `sgp fit` runs on it with the same settings, and
/// exports it: the blob, the fitted state and the JSON summary, as
/// [`crate::fit::fit`] returns them. Refuses a file that does not stream.
#[pyfunction]
#[pyo3(signature = (path, target, settings, task=None, inputs=None, force=false, progress=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit_file<'py>(
    py: Python<'py>,
    path: String,
    target: Option<String>,
    settings: Bound<'_, PyDict>,
    task: Option<String>,
    inputs: Option<Vec<String>>,
    force: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<Exported<'py>> {
    let options = options(&settings)?;
    let task = self::task(task.as_deref())?;
    let mut reporter = Reporter::new(progress);
    let result = py
        .detach(|| {
            let job = job(&path, (target, inputs), options, task, force)?;
            job.options
                .run(|| exported_bytes(job.run(&mut |p| report(&mut reporter, p))?))
        })
        .py_err();
    if let Some(e) = reporter.error {
        return Err(e);
    }
    Ok(exported(py, result?))
}

/// A streamed fit after its subset fit: the basis for the pass over every
/// row, wherever it runs, and the finish from that pass's merged sums.
#[pyclass(unsendable, module = "sgp._native")]
pub(crate) struct StreamedFit {
    start: Option<StreamedStart>,
    job: Job,
    basis: Vec<u8>,
    /// The file's input columns, in order.
    #[pyo3(get)]
    input_names: Vec<String>,
    /// The file's target column.
    #[pyo3(get)]
    target_name: String,
}

#[pymethods]
impl StreamedFit {
    /// The basis as bytes ([`crate::chunks`]).
    fn basis<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.basis)
    }

    /// The fit conditioned on the rows whose merged sums are `sums`,
    /// exported; `pass_seconds` goes into the report. Once only.
    #[pyo3(signature = (sums, pass_seconds, force=false, parts=None))]
    fn finish<'py>(
        &mut self,
        py: Python<'py>,
        sums: &[u8],
        pass_seconds: f64,
        force: bool,
        parts: Option<u64>,
    ) -> PyResult<Exported<'py>> {
        let sums = sums_from_bytes(sums)?;
        let finished =
            || PyValueError::new_err("this streamed fit is finished already; start another");
        // Checked before the start is taken: refused sums leave it usable.
        let rows = self.start.as_ref().ok_or_else(finished)?.subset.file_rows();
        sums.check_covers(rows, parts).py_err()?;
        let start = self.start.take().ok_or_else(finished)?;
        self.job.force = force;
        let job = &self.job;
        let result = py
            .detach(|| {
                job.options.run(|| {
                    let fitted = job.finish_streamed(start, &sums, pass_seconds)?;
                    exported_bytes(job.export(fitted)?)
                })
            })
            .py_err()?;
        Ok(exported(py, result))
    }
}

/// The first pass over `path` and the subset fit `sgp fit` would run on
/// it, stopped before the pass over every row.
#[pyfunction]
#[pyo3(signature = (path, target, settings, task=None, inputs=None, progress=None))]
pub(crate) fn start_file(
    py: Python<'_>,
    path: String,
    target: Option<String>,
    settings: Bound<'_, PyDict>,
    task: Option<String>,
    inputs: Option<Vec<String>>,
    progress: Option<Py<PyAny>>,
) -> PyResult<StreamedFit> {
    let options = options(&settings)?;
    let task = self::task(task.as_deref())?;
    let mut reporter = Reporter::new(progress);
    let started = py
        .detach(|| -> sgp_trainer::Result<(Job, StreamedStart)> {
            let job = job(&path, (target, inputs), options, task, false)?;
            let read = job
                .options
                .run(|| job.read(&mut |p| report(&mut reporter, p)))?;
            match read {
                Read::Streamed(start) => Ok((job, *start)),
                Read::InMemory(_) => Err(sgp_trainer::Error::Numerical(
                    "a job that must stream read its rows into memory".into(),
                )),
                Read::StreamedClassifier(_) => Err(sgp_trainer::Error::BadInput(
                    "a classifier streams from fit_file; start_file and its recipes sum a \
                     regression's rows only"
                        .into(),
                )),
                Read::StreamedOutputs(_) => Err(sgp_trainer::Error::Numerical(
                    "several targets reached start_file, which refuses them".into(),
                )),
            }
        })
        .py_err();
    if let Some(e) = reporter.error {
        return Err(e);
    }
    let (job, start) = started?;
    let sample = start.subset.sampled();
    let names = (sample.input_names.clone(), sample.target_name.clone());
    let basis = encode(&BasisBytes::new(start.subset.basis(), names.clone()))?;
    Ok(StreamedFit {
        start: Some(start),
        job,
        basis,
        input_names: names.0,
        target_name: names.1,
    })
}
