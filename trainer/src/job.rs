//! The front door: one fit from settings and a source to exported blobs
//! and their report, the same for `sgp fit`, `sgp sweep` and Python.
//!
//! A [`Job`] is the settings ([`Options`]), the source (a file, a
//! directory of Parquet files, arrays), its columns and task. It runs in
//! three stages, so that a front end can say what happened between them:
//! [`Job::read`] (the target's task and class labels, or the streamed
//! fit's first pass and subset fit: whether the file streams is decided
//! here once), [`Job::fit`], and [`Job::export`] (the class labels put on
//! the blob, the f32 check and its cure); [`Job::run`] is all three.
//! Nothing here prints: notes and warnings come back as text.

use std::path::{Path, PathBuf};

use nalgebra::DMatrix;
use serde::Serialize;
use sgp_runtime::{Link, VarianceForm};

use crate::choose::outputs::{fit_outputs, BasisChoice};
use crate::choose::{self, Asked, Choice, Request};
use crate::data::multi_target::{parse_target_list, MultiTargetData};
use crate::data::stream::TableFile;
use crate::data::Dataset;
use crate::export::cure::Cure;
use crate::export::{golden_points, golden_rust, Exported, Fidelity};
use crate::files::{check_outputs, check_outside, Input};
use crate::fit::gplasso::{gplasso_path, PathRow, PATH_HOLDOUT};
use crate::fit::streamed::StreamedProgress;
use crate::fit::streamed_classify::{ClassifierBasis, ClassifierStart};
use crate::fit::task::{choose_task, Classes, Task};
use crate::fit::warnings::about_data;
use crate::fit::{Fit, FitParams, FitReport, Method};
use crate::model::posterior_sums::PosteriorSums;
use crate::numerics::lars::LarsStop;
use crate::options::streamed_file::{start_streamed, NotStreamed, Started, StreamedStart};
use crate::options::streamed_outputs::{start_outputs, OpenTable, OutputsStart};
use crate::options::{KernelChoice, ModelChoice, Options};
use crate::{Error, Result};

/// Where the rows come from.
pub enum Source {
    /// A CSV or Parquet file, open (`-`: standard input).
    File(Input),
    /// A directory of Parquet files: one table, read by the streamed fit
    /// only.
    Directory(PathBuf),
    /// Rows in memory.
    Arrays(Arrays),
}

/// Rows in memory, in raw units: `x` (`n x d`) and `y` (`n x p`, one
/// column per target; one column of class values for a classification).
pub struct Arrays {
    /// The inputs.
    pub x: DMatrix<f64>,
    /// The targets.
    pub y: DMatrix<f64>,
    /// The inputs' names.
    pub input_names: Vec<String>,
    /// The targets' names.
    pub target_names: Vec<String>,
    /// A classification's text labels, the values of `y` their indices
    /// (empty: the values are the labels).
    pub text_labels: Vec<String>,
}

/// Whether a file is streamed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Streaming {
    /// Where the fit asked for streams and the file is large enough.
    IfLarge,
    /// Never: every row read into memory (`--in-memory`).
    Never,
    /// Always: a file that does not stream is refused, saying why.
    Always,
}

/// One fit: settings, source, columns and task.
pub struct Job {
    /// The fit's settings.
    pub options: Options,
    /// The rows.
    pub source: Source,
    /// The target column, or several comma-separated (default: the last
    /// column).
    pub target: Option<String>,
    /// The input columns, in order (default: every column but the
    /// targets).
    pub inputs: Option<Vec<String>>,
    /// The task asked for (`None`: decided by the target).
    pub task: Option<Task>,
    /// A classification's positive class.
    pub positive: Option<String>,
    /// Whether a file is streamed.
    pub streaming: Streaming,
    /// Export a model even when the f32 check fails and nothing cures it.
    pub force: bool,
    /// The files the front end writes, by the flag that names them:
    /// refused if they are an input, before anything is read.
    pub outputs: Vec<(&'static str, PathBuf)>,
    /// Settings the front end was given beyond [`Job::options`], by flag,
    /// refused where the family does not read them.
    pub given: Vec<String>,
    /// The families a sweep compares (`--models`): the task is decided for
    /// them (`None`: for the family the options name).
    pub compared: Option<Vec<Method>>,
}

/// A job's rows, read: in memory, or a streamed fit past its subset fit.
pub enum Read {
    /// Every row in memory.
    InMemory(InMemory),
    /// The first pass and the subset fit of a streamed file; the pass over
    /// every row is left.
    Streamed(Box<StreamedStart>),
    /// The first pass and the subset fit of a streamed classifier; the
    /// passes over every row are left.
    StreamedClassifier(Box<ClassifierStart>),
    /// The first pass, the choice of one basis or one model per output and
    /// the subset fit of a streamed file of several targets; the pass over
    /// every row is left.
    StreamedOutputs(Box<OutputsStart>),
}

/// Rows read into memory, their task decided.
pub struct InMemory {
    /// One dataset per target (one for a classification).
    pub outputs: Vec<Dataset>,
    /// A binary classification's labels, negative then positive.
    pub labels: Vec<String>,
    /// What the decision of the task said, for the user.
    pub notes: Vec<String>,
}

impl InMemory {
    /// The warnings about the columns read (`about_data`).
    pub fn warnings(&self) -> Vec<String> {
        self.outputs.first().map(about_data).unwrap_or_default()
    }

    /// The task decided.
    pub fn task(&self) -> Task {
        match self.outputs.first().map(|d| d.target) {
            Some(crate::data::TargetKind::Continuous) | None => Task::Regression,
            Some(_) => Task::Classification,
        }
    }
}

/// A job's fits, before export.
pub struct Fitted {
    /// One fit, or one per output where each got its own model.
    pub fits: Vec<Fit>,
    /// Several outputs: one basis for all, or one model per output.
    pub basis: Option<BasisChoice>,
    /// Raw inputs at which the export is checked.
    pub check_x: DMatrix<f64>,
    labels: Vec<String>,
}

/// One exported model.
pub struct Output {
    /// The fit, its class labels set.
    pub fit: Fit,
    /// Its blob and the check's figures.
    pub exported: Exported,
}

/// A job done: every model exported.
pub struct Done {
    /// One model, or one per output, in output order.
    pub outputs: Vec<Output>,
    /// Several outputs: one basis for all, or one model per output.
    pub basis: Option<BasisChoice>,
    /// Raw inputs at which the export was checked.
    pub check_x: DMatrix<f64>,
}

/// What one exported model reports besides its blob: the fields
/// serialised are the report Python returns; the others are plain figures
/// of the blob a front end prints.
#[derive(Serialize)]
pub struct Summary<'a> {
    /// The fit's report.
    pub report: &'a FitReport,
    /// A classifier's class labels, in class order.
    pub classes: &'a [String],
    /// The f32 check's worst deviations.
    pub fidelity: &'a Fidelity,
    /// The jitter raise that cured the export, if one was needed.
    pub cure: Option<&'a Cure>,
    /// The blob's kind (the family's, but spgp-pca's is spgp-dr).
    #[serde(skip)]
    pub kind: &'static str,
    /// Why the kind is not the family's name, where it is not.
    #[serde(skip)]
    pub kind_note: Option<String>,
    /// What the choices above the family did, where the blob is not simply
    /// the family asked for: `auto`'s choice (of a family or a kernel), or
    /// a named family plain SPGP beat on held-out rows.
    #[serde(skip)]
    pub notes: Vec<String>,
    /// Basis functions of the model.
    #[serde(skip)]
    pub n_basis: usize,
    /// Each member's link, in output (or class) order.
    #[serde(skip)]
    pub links: Vec<Link>,
    /// Each member's target column (or class), in output order.
    #[serde(skip)]
    pub targets: Vec<&'a str>,
    /// The model's inputs, in the order it takes them.
    #[serde(skip)]
    pub inputs: &'a [String],
    /// A binary classifier's bias `b`.
    #[serde(skip)]
    pub bias: f64,
    /// A binary classifier's positive class: its label, or its value.
    #[serde(skip)]
    pub positive: String,
    /// The blob's length.
    #[serde(skip)]
    pub blob_bytes: usize,
    /// The f32 check of each output, in output order.
    #[serde(skip)]
    pub fidelities: &'a [Fidelity],
    /// The blob's variance form.
    #[serde(skip)]
    pub variance: VarianceForm,
    /// Why the blob has the solves, not the product.
    #[serde(skip)]
    pub product_refused: Option<&'a str>,
}

/// GPLasso's lasso path up to the non-zeros asked for (`sgp fit --path`),
/// fitted on part of the rows and scored on the rest.
pub struct LassoPath {
    /// Its breakpoints.
    pub rows: Vec<PathRow>,
    /// Why it stopped.
    pub stop: LarsStop,
    /// The non-zeros asked for (`--m`).
    pub asked: usize,
    /// The fraction of the rows it is scored on.
    pub holdout: f64,
}

/// What a job reports besides its blobs.
#[derive(Serialize)]
pub struct Report<'a> {
    /// Several outputs: one basis for all, or one model per output.
    pub basis: Option<&'a BasisChoice>,
    /// Each blob's summary, in output order.
    pub fits: Vec<Summary<'a>>,
}

impl Fitted {
    /// Exports every fit, its class labels set, through the f32 check of
    /// `options` (and its cure; `force` exports a model nothing cures).
    ///
    /// # Errors
    /// As [`Options::export`].
    pub fn export(self, options: &Options, force: bool) -> Result<Done> {
        let Fitted {
            fits,
            basis,
            check_x,
            labels,
        } = self;
        let mut outputs = Vec::with_capacity(fits.len());
        for mut fit in fits {
            if !labels.is_empty() {
                fit.set.class_labels.clone_from(&labels);
            }
            let exported = options.export(&mut fit, &check_x, force)?;
            outputs.push(Output { fit, exported });
        }
        Ok(Done {
            outputs,
            basis,
            check_x,
        })
    }
}

impl Done {
    /// The one file the job writes: the blob, or with one model per output
    /// the container of their blobs, each verbatim
    /// ([`crate::export::artefact`]).
    ///
    /// # Errors
    /// [`Error::Blob`] when there is no blob, or more than a container holds.
    pub fn artefact(&self) -> Result<Vec<u8>> {
        let blobs: Vec<&[u8]> = self
            .outputs
            .iter()
            .map(|o| o.exported.blob.as_slice())
            .collect();
        crate::export::artefact::artefact(&blobs)
    }
}

impl Output {
    /// Its report.
    pub fn summary(&self) -> Summary<'_> {
        let (set, report) = (&self.fit.set, &self.fit.report);
        let model = &set.members[0];
        let (kind, method) = (model.kind.name(), report.method.name());
        let kind_note = (kind != method).then(|| {
            format!("the {method} blob has kind {kind}: the device evaluates the same form")
        });
        let notes = report
            .choice
            .iter()
            .filter(|c| c.asked == choose::AUTO || c.spgp_not_beaten() || c.kernel.is_some())
            .map(|c| c.reason.clone())
            .collect();
        Summary {
            report,
            classes: &set.class_labels,
            fidelity: &self.exported.fidelity,
            cure: self.exported.cure.as_ref(),
            kind,
            kind_note,
            notes,
            n_basis: model.n_basis(),
            links: set.members.iter().map(|m| m.link).collect(),
            targets: set.members.iter().map(|m| m.target_name.as_str()).collect(),
            inputs: &model.input_names,
            bias: model.bias,
            positive: set
                .class_labels
                .get(1)
                .cloned()
                .unwrap_or_else(|| model.positive_class.to_string()),
            blob_bytes: self.exported.blob.len(),
            fidelities: &self.exported.outputs,
            variance: self.exported.variance,
            product_refused: self.exported.product_refused.as_deref(),
        }
    }
}

impl Done {
    /// Golden values of output `k` for firmware tests (Rust source): f64
    /// predictions and their input gradients at 12 of the rows its export
    /// was checked at and 4 far-away points.
    ///
    /// # Errors
    /// As `crate::export::golden_rust`.
    pub fn golden(&self, k: usize) -> Result<String> {
        let set = &self.outputs[k].fit.set;
        let points = golden_points(&set.members[0], &self.check_x, 12, 4);
        golden_rust(set, &points)
    }

    /// Its report.
    pub fn report(&self) -> Report<'_> {
        Report {
            basis: self.basis.as_ref(),
            fits: self.outputs.iter().map(Output::summary).collect(),
        }
    }
}

impl Job {
    /// A job of `source` with `options` and every other setting at its
    /// default.
    pub fn new(options: Options, source: Source) -> Self {
        Job {
            options,
            source,
            target: None,
            inputs: None,
            task: None,
            positive: None,
            streaming: Streaming::IfLarge,
            force: false,
            outputs: Vec::new(),
            given: Vec::new(),
            compared: None,
        }
    }

    /// Reads, fits and exports.
    ///
    /// # Errors
    /// As [`Job::read`], [`Job::fit`] and [`Job::export`].
    pub fn run(&self, progress: &mut dyn FnMut(StreamedProgress)) -> Result<Done> {
        let read = self.read(progress)?;
        let fitted = self.fit(read, progress)?;
        self.export(fitted)
    }

    /// Reads the source: the rows in memory with their task, or (a file
    /// that streams) the streamed fit's first pass and subset fit.
    ///
    /// # Errors
    /// The settings refused for the family or the task, an output that is
    /// an input, a file that must stream and does not, and every error of
    /// reading the rows and of the subset fit.
    pub fn read(&self, progress: &mut dyn FnMut(StreamedProgress)) -> Result<Read> {
        let targets = self.target_list();
        match &self.source {
            Source::Directory(dir) => self.read_directory(dir, &targets, progress),
            Source::File(input) => {
                check_outputs(&self.output_paths(), &[input])?;
                self.check()?;
                if self.streaming != Streaming::Never {
                    let open = |target: Option<&str>, inputs: Option<&[String]>| {
                        TableFile::from_input_columns(input, target, inputs)
                    };
                    let started = match self.not_streamed() {
                        Some(why) => Err(why),
                        None => self.start(&open, &targets, progress)?,
                    };
                    match started {
                        Ok(read) => return Ok(read),
                        Err(why) if self.streaming == Streaming::Always => {
                            return Err(not_streamed(input.name(), &why))
                        }
                        Err(_) => {}
                    }
                }
                self.read_file(input, &targets).map(Read::InMemory)
            }
            Source::Arrays(arrays) => {
                self.check()?;
                self.read_arrays(arrays).map(Read::InMemory)
            }
        }
    }

    /// Fits what was read: in memory, every output (one basis for all, or
    /// one model per output); streamed, the pass over every row.
    ///
    /// # Errors
    /// The options' refusals for the data, and every error of the fit.
    pub fn fit(&self, read: Read, progress: &mut dyn FnMut(StreamedProgress)) -> Result<Fitted> {
        match read {
            Read::InMemory(data) => {
                let request = self.options.request(&data.outputs)?;
                self.fit_request(data, &request, progress)
            }
            Read::Streamed(start) => {
                let check_x = start.check_x.clone();
                let fit = start.finish_on_file(progress)?;
                Ok(self.streamed(fit, check_x))
            }
            Read::StreamedClassifier(start) => {
                let (check_x, labels) = (start.check_x.clone(), start.labels.clone());
                let fit = start.finish_on_file(progress)?;
                Ok(Fitted {
                    labels,
                    ..self.streamed(fit, check_x)
                })
            }
            Read::StreamedOutputs(start) => {
                let (check_x, basis) = (start.check_x.clone(), start.basis.clone());
                let fits = start.finish_on_file(progress)?;
                Ok(Fitted {
                    fits,
                    basis: Some(basis),
                    check_x,
                    labels: Vec::new(),
                })
            }
        }
    }

    /// As [`Job::fit`], for the `request` made of the data already.
    ///
    /// # Errors
    /// Every error of the fit.
    pub fn fit_request(
        &self,
        data: InMemory,
        request: &Request,
        progress: &mut dyn FnMut(StreamedProgress),
    ) -> Result<Fitted> {
        let rows = data.outputs.first().map_or(0, Dataset::n_rows);
        let budget = request.iteration_budget();
        let fitted = fit_outputs(&data.outputs, request, &mut |p| {
            progress(StreamedProgress::Fit {
                rows,
                progress: p,
                budget,
            })
        })?;
        Ok(Fitted {
            fits: fitted.fits,
            basis: fitted.basis,
            check_x: data.outputs[0].raw_x(),
            labels: data.labels,
        })
    }

    /// The family `params` names fitted to `data` as `sgp fit --model
    /// FAMILY` fits it (its objective chosen where open), as a sweep does
    /// at each of its points.
    ///
    /// # Errors
    /// Every error of the fit.
    pub fn fit_family(
        data: &InMemory,
        params: &FitParams,
        progress: &mut dyn FnMut(crate::numerics::optimise::Progress),
    ) -> Result<Fitted> {
        let request = Request {
            asked: Asked::Family(params.clone()),
            held_out: true,
            choose_objective: true,
            choose_kernel: false,
        };
        let fit = choose::fit(data.outputs.as_slice(), &request, progress)?;
        Ok(Fitted {
            fits: vec![fit],
            basis: None,
            check_x: data.outputs[0].raw_x(),
            labels: data.labels.clone(),
        })
    }

    /// A streamed fit conditioned on the rows whose sums are `sums`
    /// (its pass over every row run elsewhere).
    ///
    /// # Errors
    /// As [`StreamedStart::finish`].
    pub fn finish_streamed(
        &self,
        start: StreamedStart,
        sums: &PosteriorSums,
        pass_seconds: f64,
    ) -> Result<Fitted> {
        let check_x = start.check_x.clone();
        let fit = start.finish(sums, pass_seconds)?;
        Ok(self.streamed(fit, check_x))
    }

    /// A streamed classifier whose passes over every row ran elsewhere
    /// ([`ClassifierStart::finish`]), its class labels set.
    ///
    /// # Errors
    /// As [`ClassifierStart::finish`].
    pub fn finish_streamed_classifier(
        &self,
        start: ClassifierStart,
        (basis, neg_elbo): (ClassifierBasis, f64),
        pass_seconds: f64,
    ) -> Result<Fitted> {
        let (check_x, labels) = (start.check_x.clone(), start.labels.clone());
        let fit = start.finish(basis, neg_elbo, pass_seconds)?;
        Ok(Fitted {
            labels,
            ..self.streamed(fit, check_x)
        })
    }

    /// A streamed fit of several targets whose pass over every row ran
    /// elsewhere: `sums` per output ([`OutputsStart::finish`]).
    ///
    /// # Errors
    /// As [`OutputsStart::finish`].
    pub fn finish_streamed_outputs(
        &self,
        start: OutputsStart,
        sums: &[PosteriorSums],
        pass_seconds: f64,
    ) -> Result<Fitted> {
        let (check_x, basis) = (start.check_x.clone(), start.basis.clone());
        Ok(Fitted {
            fits: start.finish(sums, pass_seconds)?,
            basis: Some(basis),
            check_x,
            labels: Vec::new(),
        })
    }

    /// GPLasso's lasso path (`sgp fit --path`) where `request` asks for
    /// GPLasso, up to its `m` non-zeros.
    ///
    /// # Errors
    /// As the fit; [`Error::BadInput`] if the rows are too few to split.
    pub fn lasso_path(request: &Request, data: &InMemory) -> Result<Option<LassoPath>> {
        let Asked::Family(FitParams::Gplasso(params)) = &request.asked else {
            return Ok(None);
        };
        let (rows, stop) = gplasso_path(&data.outputs[0], params)?;
        Ok(Some(LassoPath {
            rows,
            stop,
            asked: params.m,
            holdout: PATH_HOLDOUT,
        }))
    }

    /// Exports every fit ([`Fitted::export`]) with the job's settings.
    ///
    /// # Errors
    /// As [`Options::export`].
    pub fn export(&self, fitted: Fitted) -> Result<Done> {
        fitted.export(&self.options, self.force)
    }

    /// Refuses a setting the family named (or the task asked for) does not
    /// read, before the data are read.
    fn check(&self) -> Result<()> {
        let given: Vec<&str> = self.given.iter().map(String::as_str).collect();
        self.options.check_applies(self.task, &given)
    }

    /// The task and positive class asked for.
    fn asked(&self) -> (Option<Task>, Option<&str>) {
        (self.task, self.positive.as_deref())
    }

    /// The target columns named.
    fn target_list(&self) -> Vec<String> {
        self.target
            .as_deref()
            .map(parse_target_list)
            .unwrap_or_default()
    }

    fn output_paths(&self) -> Vec<(&str, &Path)> {
        self.outputs
            .iter()
            .map(|(flag, path)| (*flag, path.as_path()))
            .collect()
    }

    /// Why the fit asked for does not stream, where that is known before
    /// the file is opened.
    fn not_streamed(&self) -> Option<NotStreamed> {
        match self.options.model {
            Some(ModelChoice::Family(m)) if m.capabilities().not_streamed.is_some() => {
                Some(NotStreamed::Family(m))
            }
            _ => None,
        }
    }

    /// The streamed fit of the table `open` opens (`open(target, inputs)`)
    /// past its subset fit: of one target, or of the several `targets`;
    /// or why it does not stream.
    fn start(
        &self,
        open: &OpenTable<'_>,
        targets: &[String],
        progress: &mut dyn FnMut(StreamedProgress),
    ) -> Result<std::result::Result<Read, NotStreamed>> {
        if targets.len() > 1 {
            if self.positive.is_some() {
                return Ok(Err(NotStreamed::Outputs));
            }
            let columns = (targets, self.inputs.as_deref());
            let started = start_outputs(open, columns, &self.options, self.task, progress)?;
            return Ok(started.map(|s| Read::StreamedOutputs(Box::new(s))));
        }
        let table = open(self.target.as_deref(), self.inputs.as_deref())?;
        let started = start_streamed(&table, &self.options, self.asked(), progress)?;
        Ok(started.map(started_read))
    }

    fn read_directory(
        &self,
        dir: &Path,
        targets: &[String],
        progress: &mut dyn FnMut(StreamedProgress),
    ) -> Result<Read> {
        let refused = |why: &dyn std::fmt::Display| {
            Error::BadInput(format!(
                "{}: a directory of Parquet files is read by the streamed fit only, and {why}; \
                 write its rows to one file to fit them otherwise",
                dir.display()
            ))
        };
        if self.streaming == Streaming::Never {
            return Err(refused(&"--in-memory asks for a fit in memory"));
        }
        if let Some(why) = self.not_streamed() {
            return Err(refused(&why));
        }
        let first = targets.first().map(String::as_str);
        let table = TableFile::open_columns(dir, first, None)?;
        let outputs = self.output_paths();
        check_outputs(&outputs, &table.inputs())?;
        check_outside(&outputs, dir)?;
        self.check()?;
        let open = |target: Option<&str>, inputs: Option<&[String]>| {
            TableFile::open_columns(dir, target, inputs)
        };
        match self.start(&open, targets, progress)? {
            Ok(read) => Ok(read),
            Err(why) => Err(refused(&why)),
        }
    }

    fn read_file(&self, input: &Input, targets: &[String]) -> Result<InMemory> {
        if targets.len() > 1 {
            if self.task == Some(Task::Classification) || self.positive.is_some() {
                return Err(Error::BadInput(
                    "several targets (--target a,b) are a multi-output regression; a classifier \
                     has one target column (its classes are that column's values)"
                        .into(),
                ));
            }
            let data = MultiTargetData::from_input_columns(input, targets, self.inputs.as_deref())?;
            return Ok(regression(data.outputs().to_vec()));
        }
        let data =
            Dataset::from_input_columns(input, self.target.as_deref(), self.inputs.as_deref())?;
        self.with_task(data)
    }

    fn read_arrays(&self, a: &Arrays) -> Result<InMemory> {
        let (x, y) = (a.x.clone(), a.y.clone());
        if self.task != Some(Task::Classification) {
            let data = MultiTargetData::from_raw(x, y, a.input_names.clone(), &a.target_names)?;
            return Ok(regression(data.outputs().to_vec()));
        }
        let target = a.target_names.first().cloned().unwrap_or_default();
        let mut data =
            Dataset::from_raw(x, y.column(0).into_owned(), a.input_names.clone(), target)?;
        data.class_labels.clone_from(&a.text_labels);
        self.with_task(data)
    }

    /// `data` with the task decided ([`choose_task`]) for the families
    /// asked for.
    fn with_task(&self, data: Dataset) -> Result<InMemory> {
        let (flag, models) = match &self.compared {
            Some(models) => ("--models", models.clone()),
            None => match self.options.model {
                Some(ModelChoice::Family(family)) => ("--model", vec![family]),
                _ => ("--model", Vec::new()),
            },
        };
        let chosen = choose_task(data, self.task, self.positive.as_deref(), flag, &models)?;
        let (outputs, labels) = match chosen.classes {
            Classes::Several => (vec![chosen.data.into_classes()?], Vec::new()),
            Classes::Binary(labels) => (vec![chosen.data], labels),
            Classes::None => (vec![chosen.data], Vec::new()),
        };
        Ok(InMemory {
            outputs,
            labels,
            notes: chosen.notes,
        })
    }

    /// A streamed fit: a regression weighs `--kernel auto` on its sample;
    /// a classifier does not, and its report says so.
    fn streamed(&self, mut fit: Fit, check_x: DMatrix<f64>) -> Fitted {
        let weighed = fit
            .report
            .choice
            .as_ref()
            .is_some_and(|c| c.kernel.is_some());
        if self.options.kernel == Some(KernelChoice::Auto) && !weighed {
            fit.report.choice = Some(Choice::kernel_unweighed(
                fit.report.method.name(),
                "a streamed classifier takes the kernel asked for, the squared exponential \
                 under auto",
            ));
        }
        Fitted {
            fits: vec![fit],
            basis: None,
            check_x,
            labels: Vec::new(),
        }
    }
}

fn regression(outputs: Vec<Dataset>) -> InMemory {
    InMemory {
        outputs,
        labels: Vec::new(),
        notes: Vec::new(),
    }
}

fn started_read(start: Started) -> Read {
    match start {
        Started::Regression(start) => Read::Streamed(start),
        Started::Classifier(start) => Read::StreamedClassifier(start),
    }
}

/// A file that must stream and does not.
fn not_streamed(name: &str, why: &NotStreamed) -> Error {
    Error::BadInput(format!(
        "{name}: not streamed: {why}; read it into memory and fit it there"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::synthetic;

    fn options() -> Options {
        Options {
            model: Some(ModelChoice::Family(Method::Spgp)),
            m: Some(5),
            restarts: Some(1),
            max_iter: Some(20),
            ..Options::default()
        }
    }

    /// The same rows from a file and from arrays: the same blob; a binary
    /// target's labels are on it, and a file that must stream and is small
    /// is refused, saying why.
    #[test]
    fn a_file_and_arrays_of_the_same_rows_give_the_same_blob() {
        let (x, y) = synthetic(60, 2, 3);
        let mut csv = String::from("a,b,y\n");
        for i in 0..x.nrows() {
            csv += &format!("{:?},{:?},{:?}\n", x[(i, 0)], x[(i, 1)], y[i]);
        }
        let path = std::env::temp_dir().join(format!("sgp-job-{}.csv", std::process::id()));
        std::fs::write(&path, csv).expect("writes");
        let file = Job::new(options(), Source::File(Input::open(&path).expect("opens")));
        let from_file = file.run(&mut |_| {}).expect("fits");
        let arrays = Arrays {
            x: x.clone(),
            y: DMatrix::from_column_slice(60, 1, y.as_slice()),
            input_names: vec!["a".into(), "b".into()],
            target_names: vec!["y".into()],
            text_labels: Vec::new(),
        };
        let from_arrays = Job::new(options(), Source::Arrays(arrays))
            .run(&mut |_| {})
            .expect("fits");
        assert_eq!(
            from_file.outputs[0].exported.blob,
            from_arrays.outputs[0].exported.blob
        );

        let must_stream = Job {
            streaming: Streaming::Always,
            ..Job::new(options(), Source::File(Input::open(&path).expect("opens")))
        };
        match must_stream.read(&mut |_| {}) {
            Err(Error::BadInput(m)) => assert!(m.contains("not streamed"), "{m}"),
            _ => panic!("a small file streamed"),
        }
        std::fs::remove_file(&path).ok();

        let classes = Arrays {
            x,
            y: DMatrix::from_fn(60, 1, |i, _| (y[i] > 0.0) as u8 as f64),
            input_names: vec!["a".into(), "b".into()],
            target_names: vec!["c".into()],
            text_labels: vec!["low".into(), "high".into()],
        };
        let classifier = Job {
            task: Some(Task::Classification),
            ..Job::new(
                Options {
                    model: None,
                    ..options()
                },
                Source::Arrays(classes),
            )
        };
        let done = classifier.run(&mut |_| {}).expect("fits");
        let mut labels = done.outputs[0].fit.set.class_labels.clone();
        labels.sort();
        assert_eq!(labels, ["high", "low"]);
    }
}
