//! Fitting from in-memory arrays: the library calls `sgp fit` makes (the
//! options builder, the choice layer with its choice of one basis or one
//! model per output, the export with its check and cure), with the GIL
//! released while the fit runs.

use std::time::{Duration, Instant};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use sgp_trainer::fit::streamed::StreamedProgress;
use sgp_trainer::fit::task::Task;
use sgp_trainer::job::{Arrays, Done, Job, Source};
use sgp_trainer::model::ModelSet;
use sgp_trainer::numerics::optimise::Progress;
use sgp_trainer::options::settings::{setting, stated, Setting, Value, FIGURES, SETTINGS};
use sgp_trainer::options::Options;

use crate::arrays::matrix;
use crate::errors::IntoPy;

/// The estimators' settings (a dict of keyword and value: `max_iter=40`)
/// as the library's options, each set by the library's table
/// ([`Options::set`]) through the flag its keyword says ([`keyword`]); a
/// value of `None`, or a switch's off value, keeps the default, as an
/// absent flag does.
pub(crate) fn options(keywords: &Bound<'_, PyDict>) -> PyResult<Options> {
    let mut given = Vec::new();
    for (name, value) in keywords.iter() {
        let name: String = name.extract()?;
        let held = SETTINGS.iter().filter(|s| s.held());
        let found = held.map(|s| (s, keyword(s))).find(|(_, (k, _))| *k == name);
        let Some((setting, (_, on))) = found else {
            return Err(PyValueError::new_err(format!(
                "{name} is not a setting of a fit"
            )));
        };
        if value.is_none() {
            continue;
        }
        if !setting.is_switch() {
            given.push((setting.flag, Some(value.str()?.to_string())));
        } else if value.is_truthy()? == on {
            given.push((setting.flag, None));
        }
    }
    Options::from_given(given.iter().map(|(flag, v)| (*flag, v.as_deref()))).py_err()
}

/// The estimators' keyword of a setting [`Options`] hold (`max_iter`,
/// `random_state`, `held_out_choice`), and for a switch the value that
/// turns it on (`held_out_choice=False` is `--no-held-out-choice`).
fn keyword(setting: &Setting) -> (String, bool) {
    let said = crate::errors::spoken(setting.flag);
    let (keyword, value) = said.split_once('=').unwrap_or((&said, "True"));
    (keyword.to_owned(), value != "False")
}

/// How the estimators say a setting the library's messages name as the
/// command line spells it ([`crate::errors::spoken`]); a flag not listed is
/// the keyword of its name (`--max-iter`: `max_iter`).
pub(crate) enum Spoken {
    /// A keyword that takes a value: `m`, `m=0`, `model='svgp'`.
    Keyword(&'static str),
    /// A switch: the keyword with the value that turns it on.
    Switch(&'static str),
    /// Words where Python has no keyword (the flag's value, if any, is
    /// part of what they replace).
    Words(&'static str),
    /// A flag whose values are said otherwise: the keyword, and each
    /// value with its words.
    Values(&'static str, &'static [(&'static str, &'static str)]),
}

/// The settings Python says otherwise than by the rule of [`Spoken`] and
/// of [`switch_words`] (`random_state`, the file's columns, and the command
/// line's own flags a library message names); a pytest holds every keyword
/// here to the estimators' signatures.
pub(crate) const SPOKEN: &[(&str, Spoken)] = &[
    ("--seed", Spoken::Keyword("random_state")),
    ("--force", Spoken::Switch("force=True")),
    (
        "--in-memory",
        Spoken::Words("the estimator's fit(X, y) on the rows read into memory"),
    ),
    ("--positive", Spoken::Words("a target of y == LABEL")),
    (
        "--link",
        Spoken::Values(
            "task",
            &[
                ("identity", "task='regression'"),
                ("probit", "task='classification'"),
            ],
        ),
    ),
    ("--data", Spoken::Keyword("path")),
];

/// A switch of the settings table as the estimators say it given:
/// `held_out_choice=False` for `--no-held-out-choice`, else `keyword=True`.
pub(crate) fn switch_words(flag: &str) -> Option<String> {
    let switch = |s: &&Setting| s.held() && s.is_switch();
    let flag = setting(flag).filter(switch)?.flag;
    Some(match flag.strip_prefix("--no-") {
        Some(on) => format!("{}=False", on.replace('-', "_")),
        None => format!("{}=True", flag[2..].replace('-', "_")),
    })
}

/// Whether `token` is a name some setting takes (`svgp`, `matern32`,
/// `vfe`, `regression`): Python quotes it.
pub(crate) fn is_value_name(token: &str) -> bool {
    let named = SETTINGS.iter().flat_map(|s| s.value.names());
    named
        .chain(["regression", "classification", "identity", "probit"])
        .any(|name| name == token)
}

/// A trainer message in the estimators' words ([`crate::errors::spoken`]),
/// for the warnings a fit reports.
#[pyfunction]
pub(crate) fn spoken(message: &str) -> String {
    crate::errors::spoken(message)
}

/// The default of each setting not given, in words, by the keyword of its
/// flag (`--max-iter`: `max_iter`), and the figures help states
/// ([`sgp_trainer::options::settings`]: what `sgp fit --help` states).
#[pyfunction]
pub(crate) fn defaults() -> std::collections::BTreeMap<String, String> {
    let stated = SETTINGS
        .iter()
        .filter_map(|s| Some((s.flag.trim_start_matches("--"), stated(s.flag)?)));
    let figures = FIGURES.iter().map(|(name, text)| (*name, text()));
    stated
        .chain(figures)
        .map(|(name, text)| (name.replace('-', "_"), text))
        .collect()
}

/// The estimators' settings, each as the library's table declares it
/// ([`sgp_trainer::options::settings`]), in Python's words, for the
/// docstrings: its keyword, type, default and help.
#[pyfunction]
pub(crate) fn settings() -> Vec<(String, String, String, String)> {
    let held = SETTINGS.iter().filter(|s| s.held());
    held.map(|setting| {
        let said = spoken(setting.flag);
        let keyword = said.split('=').next().unwrap_or_default().to_owned();
        let help = spoken(&setting.help());
        let none = |kind: &str| (format!("{kind} or None"), "None".to_owned());
        let (kind, default) = match setting.value {
            Value::Switch => {
                let off = if said.ends_with("=True") {
                    "False"
                } else {
                    "True"
                };
                let help = format!("``{said}``: {help}");
                return (keyword, "bool".into(), off.into(), help);
            }
            _ if keyword == "random_state" => {
                let seed = setting.default().unwrap_or_default();
                return (keyword, "int, RandomState or None".into(), seed, help);
            }
            Value::Count => none("int"),
            Value::Number => none("float"),
            Value::Text => none("str"),
            Value::Names(_) => {
                let names = setting.value.names();
                let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
                none(&format!("{{{}}}", quoted.join(", ")))
            }
        };
        let help = match setting.default() {
            Some(value) => format!("{help} (None: {value})"),
            None => help,
        };
        (keyword, kind, default, help)
    })
    .collect()
}

/// Shortest time between two calls of a progress callback: each call takes
/// the GIL back from whatever Python thread holds it.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(200);

/// Calls a Python progress callable at most every [`PROGRESS_INTERVAL`]
/// (unless forced); the first exception it raises is kept (and the
/// callable not called again) to be raised when the fit returns.
pub(crate) struct Reporter {
    callback: Option<Py<PyAny>>,
    last: Option<Instant>,
    pub(crate) error: Option<PyErr>,
}

impl Reporter {
    pub(crate) fn new(callback: Option<Py<PyAny>>) -> Self {
        Reporter {
            callback,
            last: None,
            error: None,
        }
    }

    /// Calls the callable as `call` does, unless it was called less than
    /// [`PROGRESS_INTERVAL`] ago and `force` is false.
    pub(crate) fn call(
        &mut self,
        force: bool,
        call: impl FnOnce(Python<'_>, &Py<PyAny>) -> PyResult<Py<PyAny>>,
    ) {
        let Some(callback) = &self.callback else {
            return;
        };
        if !force && self.last.is_some_and(|t| t.elapsed() < PROGRESS_INTERVAL) {
            return;
        }
        self.last = Some(Instant::now());
        if let Err(e) = Python::attach(|py| call(py, callback)) {
            self.error = Some(e);
            self.callback = None;
        }
    }
}

/// A job's blobs (one, or one per output where each has its own model),
/// one state of every output's models, and its JSON report.
pub(crate) type DoneBytes = (Vec<Vec<u8>>, Vec<u8>, String);

/// The bytes of the job `done`, for every front end of [`Job::run`].
pub(crate) fn done_bytes(done: Done) -> sgp_trainer::Result<DoneBytes> {
    let json = serde_json::to_string(&done.report())
        .map_err(|e| sgp_trainer::Error::Numerical(format!("JSON: {e}")))?;
    // One set of every output's models, each with its own basis.
    let set = ModelSet {
        members: done
            .outputs
            .iter()
            .flat_map(|o| o.fit.set.members.iter().cloned())
            .collect(),
        class_labels: done
            .outputs
            .first()
            .map(|o| o.fit.set.class_labels.clone())
            .unwrap_or_default(),
    };
    let blobs = done.outputs.into_iter().map(|o| o.exported.blob).collect();
    Ok((blobs, set.to_state()?, json))
}

/// Reports optimiser progress as `progress(iteration, budget, objective)`.
fn report(reporter: &mut Reporter, p: &Progress, budget: u64, force: bool) {
    reporter.call(force, |py, f| {
        f.call1(py, (p.iteration, budget, p.best_value))
    });
}

/// Fits `x` (`n x d`, raw units) to `y` (`n x p`) as `settings` ask, as
/// `sgp fit` does (one regression output per column of `y`, on one basis
/// or, where that basis loses on held-out rows, one model per output; or,
/// with `classes`, a classification of `y`'s one column of class values,
/// its positive class of two as `sgp fit` takes it; `text_labels` names
/// them where they are text), and exports every model through the f32 check (curing a failing
/// export as `sgp fit` does; `force` exports a model nothing cures).
/// Returns the blobs (one, or one per output as `sgp fit` writes
/// `out.<target>.sgp`), the fitted f64 models ([`crate::state`], every
/// output's in output order) and a JSON summary (the basis choice, and
/// per blob its report, classes, fidelity, cure and warnings).
/// `progress`, if given, is called as `progress(iteration, budget,
/// objective)` while the fit runs.
#[pyfunction]
#[pyo3(signature = (x, n, d, y, p, input_names, target_names, settings, classes=0, text_labels=Vec::new(), force=false, progress=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit<'py>(
    py: Python<'py>,
    x: &[u8],
    n: usize,
    d: usize,
    y: &[u8],
    p: usize,
    input_names: Vec<String>,
    target_names: Vec<String>,
    settings: Bound<'py, PyDict>,
    classes: usize,
    text_labels: Vec<String>,
    force: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<(Vec<Bound<'py, PyBytes>>, Bound<'py, PyBytes>, String)> {
    let x = matrix(x, n, d, "X")?;
    let y = matrix(y, n, p, "y")?;
    let options = options(&settings)?;
    let mut reporter = Reporter::new(progress);
    let job = Job {
        task: (classes > 0).then_some(Task::Classification),
        force,
        ..Job::new(
            options,
            Source::Arrays(Arrays {
                x,
                y,
                input_names,
                target_names,
                text_labels,
            }),
        )
    };
    let fitted = py
        .detach(|| {
            job.options.run(|| -> sgp_trainer::Result<DoneBytes> {
                let mut last = None;
                let done = job.run(&mut |p| {
                    if let StreamedProgress::Fit {
                        progress, budget, ..
                    } = p
                    {
                        report(&mut reporter, &progress, budget, false);
                        last = Some((progress, budget));
                    }
                });
                if let Some((p, budget)) = last {
                    report(&mut reporter, &p, budget, true);
                }
                done_bytes(done?)
            })
        })
        .py_err();
    if let Some(e) = reporter.error {
        return Err(e);
    }
    let (blobs, state, summary) = fitted?;
    let blobs = blobs.iter().map(|b| PyBytes::new(py, b)).collect();
    Ok((blobs, PyBytes::new(py, &state), summary))
}
