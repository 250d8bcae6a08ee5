//! `sgp fit`'s streamed fit of a large file, from Python: the library's
//! [`Job`], streamed only, with the GIL released. [`fit_file`] runs it
//! whole, as the CLI does; [`StreamedFit`] stops after the subset fit so
//! that an engine can run the pass over every row ([`crate::chunks`]) and
//! hand back its sums.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use sgp_trainer::files::Input;
use sgp_trainer::fit::streamed::StreamedProgress;
use sgp_trainer::fit::streamed_classify::{ClassifierBasis, ClassifierStart};
use sgp_trainer::fit::task::Task;
use sgp_trainer::job::{Job, Read, Source, Streaming};
use sgp_trainer::options::streamed_file::StreamedStart;
use sgp_trainer::options::streamed_outputs::OutputsStart;
use sgp_trainer::options::Options;

use crate::chunks::{encode, PassBasis, PassSums};
use crate::errors::IntoPy;
use crate::fit::{done_bytes, options, DoneBytes, Reporter};

/// The blobs (one, or one per output where each has its own model), the
/// fitted state and the JSON summary.
type Exported<'py> = (Vec<Bound<'py, PyBytes>>, Bound<'py, PyBytes>, String);

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
/// --target` and `--inputs`: several comma-separated targets are a
/// regression of each) by the streamed fit only.
fn job(
    path: &str,
    (target, inputs): (Option<String>, Option<Vec<String>>),
    options: Options,
    task: Option<Task>,
    force: bool,
) -> sgp_trainer::Result<Job> {
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

fn exported(py: Python<'_>, (blobs, state, json): DoneBytes) -> Exported<'_> {
    (
        blobs.iter().map(|b| PyBytes::new(py, b)).collect(),
        PyBytes::new(py, &state),
        json,
    )
}

/// Fits the file `path` (CSV, Parquet or a directory of Parquet files;
/// `target` and `inputs` as `sgp fit --target` and `--inputs`)
/// by the streamed fit `sgp fit` runs on it with the same settings, and
/// exports it: the blobs, the fitted state and the JSON summary, as
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
                .run(|| done_bytes(job.run(&mut |p| report(&mut reporter, p))?))
        })
        .py_err();
    if let Some(e) = reporter.error {
        return Err(e);
    }
    Ok(exported(py, result?))
}

/// A streamed fit past its subset fit: what is left of it.
enum Left {
    /// A regression: one pass.
    Regression(Box<StreamedStart>),
    /// A classifier: rounds of a pass each, `basis` the next round's
    /// (`round`, from 0).
    Classifier {
        start: Box<ClassifierStart>,
        basis: Box<ClassifierBasis>,
        round: u32,
    },
    /// Several targets: one pass summing every output.
    Outputs(Box<OutputsStart>),
}

impl Left {
    fn file_rows(&self) -> u64 {
        match self {
            Left::Regression(s) => s.subset.file_rows(),
            Left::Classifier { start, .. } => start.file_rows(),
            Left::Outputs(s) => s.file_rows(),
        }
    }

    fn rounds(&self) -> u32 {
        match self {
            Left::Classifier { start, .. } => u32::try_from(start.passes()).unwrap_or(u32::MAX),
            _ => 1,
        }
    }

    fn round(&self) -> u32 {
        match self {
            Left::Classifier { round, .. } => *round,
            _ => 0,
        }
    }

    fn basis(&self) -> PyResult<PassBasis> {
        Ok(match self {
            Left::Regression(s) => PassBasis::Regression(s.subset.basis().to_bytes().py_err()?),
            Left::Classifier { basis, round, .. } => {
                PassBasis::Classifier(basis.to_bytes().py_err()?, *round)
            }
            Left::Outputs(s) => PassBasis::Outputs(
                s.bases()
                    .into_iter()
                    .map(|b| b.to_bytes().py_err())
                    .collect::<PyResult<_>>()?,
            ),
        })
    }

    /// Refuses sums of another kind or round, or that miss or repeat rows
    /// or parts.
    fn check(&self, sums: &PassSums, parts: Option<u64>) -> PyResult<()> {
        let rows = self.file_rows();
        match (self, sums) {
            (Left::Regression(_), PassSums::Regression(s)) => s.check_covers(rows, parts),
            (Left::Classifier { round, .. }, PassSums::Classifier(s, r)) => {
                if r != round {
                    return Err(PyValueError::new_err(format!(
                        "these are the sums of round {r}; this classifier's next round is \
                         {round} (sum every row on the basis of that round)"
                    )));
                }
                s.check_covers(rows, parts)
            }
            (Left::Outputs(_), PassSums::Outputs(s)) => {
                s.iter().try_for_each(|s| s.check_covers(rows, parts))
            }
            _ => {
                return Err(PyValueError::new_err(
                    "these sums are of another kind of fit (a regression's, a classifier's, \
                     several targets') than this one",
                ))
            }
        }
        .py_err()
    }
}

/// A streamed fit after its subset fit: the basis for each pass over every
/// row, wherever it runs, and the finish from the last pass's merged sums
/// (a classifier's rounds before it: [`StreamedFit::advance`]).
#[pyclass(unsendable, module = "sgp._native")]
pub(crate) struct StreamedFit {
    left: Option<Left>,
    job: Job,
    /// The file's input columns, in order.
    #[pyo3(get)]
    input_names: Vec<String>,
    /// The file's target columns (one, or several for several targets).
    #[pyo3(get)]
    target_names: Vec<String>,
    /// A classifier's text labels, sorted: a block's target cell is the
    /// index of its label here (empty for numbers).
    #[pyo3(get)]
    class_labels: Vec<String>,
}

fn finished() -> PyErr {
    PyValueError::new_err("this streamed fit is finished already; start another")
}

#[pymethods]
impl StreamedFit {
    /// The basis of the next pass as bytes ([`crate::chunks`]).
    fn basis<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let basis = self.left.as_ref().ok_or_else(finished)?.basis()?;
        Ok(PyBytes::new(py, &encode(&basis)?))
    }

    /// Passes over every row the fit takes (1; a classifier's rounds).
    #[getter]
    fn rounds(&self) -> PyResult<u32> {
        Ok(self.left.as_ref().ok_or_else(finished)?.rounds())
    }

    /// The next pass's number, from 0.
    #[getter]
    fn round(&self) -> PyResult<u32> {
        Ok(self.left.as_ref().ok_or_else(finished)?.round())
    }

    /// A classifier's round that is not its last: `sums` of every row on
    /// this round's basis give the next round's.
    #[pyo3(signature = (sums, parts=None))]
    fn advance(&mut self, py: Python<'_>, sums: &[u8], parts: Option<u64>) -> PyResult<()> {
        let sums = PassSums::from_bytes(sums)?;
        let left = self.left.as_mut().ok_or_else(finished)?;
        left.check(&sums, parts)?;
        let (rounds, last) = (left.rounds(), left.round() + 1 >= left.rounds());
        let (Left::Classifier { basis, round, .. }, PassSums::Classifier(s, _), false) =
            (left, &sums, last)
        else {
            return Err(PyValueError::new_err(format!(
                "the last of this fit's {rounds} passes: finish it with these sums"
            )));
        };
        let next = py.detach(|| basis.updated(s)).py_err()?;
        **basis = next;
        *round += 1;
        Ok(())
    }

    /// The fit conditioned on the rows whose merged sums are `sums` (the
    /// last pass's), exported; `pass_seconds` goes into the report. Once
    /// only.
    #[pyo3(signature = (sums, pass_seconds, force=false, parts=None))]
    fn finish<'py>(
        &mut self,
        py: Python<'py>,
        sums: &[u8],
        pass_seconds: f64,
        force: bool,
        parts: Option<u64>,
    ) -> PyResult<Exported<'py>> {
        let sums = PassSums::from_bytes(sums)?;
        // Checked before the start is taken: refused sums leave it usable.
        let left = self.left.as_ref().ok_or_else(finished)?;
        left.check(&sums, parts)?;
        if left.round() + 1 < left.rounds() {
            return Err(PyValueError::new_err(format!(
                "pass {} of this classifier's {}: advance with these sums, then sum every row \
                 on the next round's basis",
                left.round() + 1,
                left.rounds()
            )));
        }
        let left = self.left.take().ok_or_else(finished)?;
        self.job.force = force;
        let job = &self.job;
        let result = py
            .detach(|| {
                job.options.run(|| {
                    let fitted = match (left, sums) {
                        (Left::Regression(start), PassSums::Regression(s)) => {
                            job.finish_streamed(*start, &s, pass_seconds)?
                        }
                        (Left::Classifier { start, basis, .. }, PassSums::Classifier(s, _)) => {
                            let neg_elbo = basis.neg_elbo(&s);
                            let last = basis.updated(&s)?;
                            job.finish_streamed_classifier(*start, (last, neg_elbo), pass_seconds)?
                        }
                        (Left::Outputs(start), PassSums::Outputs(s)) => {
                            job.finish_streamed_outputs(*start, &s, pass_seconds)?
                        }
                        _ => {
                            return Err(sgp_trainer::Error::BadInput(
                                "sums of another kind of fit".into(),
                            ))
                        }
                    };
                    done_bytes(job.export(fitted)?)
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
        .detach(|| -> sgp_trainer::Result<(Job, Left)> {
            let job = job(&path, (target, inputs), options, task, false)?;
            let read = job
                .options
                .run(|| job.read(&mut |p| report(&mut reporter, p)))?;
            let left = match read {
                Read::Streamed(start) => Left::Regression(start),
                Read::StreamedClassifier(start) => Left::Classifier {
                    basis: Box::new(start.basis().clone()),
                    start,
                    round: 0,
                },
                Read::StreamedOutputs(start) => Left::Outputs(start),
                Read::InMemory(_) => {
                    return Err(sgp_trainer::Error::Numerical(
                        "a job that must stream read its rows into memory".into(),
                    ))
                }
            };
            Ok((job, left))
        })
        .py_err();
    if let Some(e) = reporter.error {
        return Err(e);
    }
    let (job, left) = started?;
    let (input_names, target_names) = match &left {
        Left::Regression(s) => {
            let sample = s.subset.sampled();
            (sample.input_names.clone(), vec![sample.target_name.clone()])
        }
        Left::Classifier { start, .. } => (start.input_names(), vec![start.target_name()]),
        Left::Outputs(s) => (s.input_names(), s.target_names()),
    };
    let class_labels = match &left {
        Left::Classifier { start, .. } => start.text_labels().to_vec(),
        _ => Vec::new(),
    };
    Ok(StreamedFit {
        left: Some(left),
        job,
        input_names,
        target_names,
        class_labels,
    })
}
