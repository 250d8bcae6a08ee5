//! `sgp sweep`: fit a grid of models (family x M, x G for projected
//! families, x kernel) with `sgp fit`'s default settings, export each as
//! `sgp fit` does (runtime check and cure included), evaluate every blob on
//! a test set through the runtime, and pick the most accurate model whose
//! blob, `Model<M, G, D>` and instructions per prediction
//! ([`crate::tools::cost`]) fit the flash, RAM and time budgets.
//!
//! Several targets (`--target a,b,c`) sweep one fit of P outputs: one blob
//! per grid point, each output evaluated against its own test column, the
//! row ranked by the figures of the output vector ([`joint`]), its RAM and
//! instructions those of one model predicting all P.
//!
//! A grid point that fails to fit or to export is a row saying why, not the
//! end of the sweep. Grid points run in parallel; every fit is
//! deterministic and the rows keep the grid's order, so the table does not
//! depend on the scheduling (fit times do: wall times, run side by side).

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;
use serde::Serialize;
use sgp_runtime::{ram_bytes_with_outputs, Kernel, ModelSpec};

use crate::tools::cost::{
    fixed_point_cost, instructions_per_prediction, CostModel, FixedCost, CORTEX_M3_FIXED, CORTEX_M4,
};
use sgp_trainer::data::multi_target::Outputs;
use sgp_trainer::data::{is_class, Dataset, TargetKind};
use sgp_trainer::evaluate::{
    evaluate_blob, evaluate_classifier, Evaluation, Figures, OutputEvaluation,
};
use sgp_trainer::export::cure::Cure;
use sgp_trainer::export::output_blob::output_specs;
use sgp_trainer::files::Input;
use sgp_trainer::fit::{FitParams, Method};
use sgp_trainer::job::{InMemory, Job};
use sgp_trainer::numerics::optimise::Progress;
use sgp_trainer::options::Options;
use sgp_trainer::{Error, Result};

mod budget;
mod table;
use budget::to_u64;
pub use budget::{parse_bytes, Budget, Limit};

/// What to sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepSpec {
    /// Model families, in the order of the table.
    pub models: Vec<Method>,
    /// Basis-function counts M (the exact GP has none: one row).
    pub m: Vec<usize>,
    /// Projected dimensions G, for the projected families only.
    pub dims: Vec<usize>,
    /// Covariance functions (a family the capabilities table limits to
    /// the squared exponential gets no Matérn points).
    pub kernels: Vec<Kernel>,
    /// Seed of every fit.
    pub seed: u64,
}

/// One fit of the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct GridPoint {
    /// Family.
    pub model: Method,
    /// Asked basis-function count (none for the exact GP).
    pub m: Option<usize>,
    /// Asked projected dimension (projected families only).
    pub dim: Option<usize>,
    /// Covariance function, by its name (`se`, `matern32`).
    #[serde(serialize_with = "kernel_name")]
    pub kernel: Kernel,
}

fn kernel_name<S: serde::Serializer>(
    kernel: &Kernel,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(kernel.name())
}

impl GridPoint {
    /// The settings `sgp fit` would use for this point.
    ///
    /// # Errors
    /// As [`Options::params`] (never for a point of [`grid`]).
    pub fn params(&self, seed: u64) -> Result<FitParams> {
        // As `Options::defaults`, M at its default where the family has
        // none (the exact GP).
        let options = Options {
            m: self.m,
            dim: self.dim.filter(|_| self.model.is_projected()),
            seed: Some(seed),
            ..Options::default()
        };
        Ok(options
            .params(self.model, usize::MAX)?
            .with_kernel(self.kernel))
    }

    /// E.g. `spgp-dr M = 16, G = 2`, `spgp M = 32, matern32`.
    pub fn label(&self) -> String {
        let mut label = self.model.name().to_string();
        if let Some(m) = self.m {
            label += &format!(" M = {m}");
        }
        if let Some(g) = self.dim {
            label += &format!(", G = {g}");
        }
        if self.kernel != Kernel::SquaredExponential {
            label += &format!(", {}", self.kernel.name());
        }
        label
    }
}

/// Checks `spec` against the training data and lays out its grid: every
/// family in the given order, each with every M (and every G when
/// projected); repeated values count once. The exact GP is one point.
///
/// # Errors
/// [`Error::BadInput`] for an empty grid, an M or G of zero, a G larger
/// than the inputs, `--dim` without a projected family or a projected
/// family without `--dim`, a regression family on a binary target, and
/// for several targets a family that cannot fit them on one basis.
pub fn grid(spec: &SweepSpec, train: &(impl Outputs + ?Sized)) -> Result<Vec<GridPoint>> {
    let outputs = train.outputs();
    let train = &outputs[0];
    let models = distinct(&spec.models);
    let ms = distinct(&spec.m);
    let dims = distinct(&spec.dims);
    if models.is_empty() {
        return Err(Error::BadInput("--models: no model to sweep".into()));
    }
    if let TargetKind::Binary { .. } = train.target {
        if let Some(m) = models.iter().find(|&&m| !m.classifies()) {
            return Err(Error::BadInput(format!(
                "--models {}: a binary target (--link probit) can only be fitted with svgp, ivm or \
                 exact (the classifiers); the other families are regression models",
                m.name()
            )));
        }
    }
    if outputs.len() > 1 {
        for &m in &models {
            m.shares_basis().map_err(|why| {
                Error::BadInput(format!(
                    "--models {}: cannot fit the {} targets on one basis: {why} (the families \
                     that can: exact, spgp, vsgp, spgp-dr)",
                    m.name(),
                    outputs.len()
                ))
            })?;
        }
    }
    if ms.is_empty() && models.iter().any(|&m| m != Method::Exact) {
        return Err(Error::BadInput(
            "--m: no basis-function count to sweep".into(),
        ));
    }
    for &m in &ms {
        // The options' own check of M, its message declared there.
        Options::defaults(Method::Spgp, m, 0, spec.seed)?;
    }
    let projected: Vec<String> = models
        .iter()
        .filter(|m| m.is_projected())
        .map(|m| m.name().to_string())
        .collect();
    match (projected.is_empty(), dims.is_empty()) {
        (true, false) => {
            return Err(Error::BadInput(
                "--dim applies to spgp-dr and spgp-pca only, and --models names neither".into(),
            ))
        }
        (false, true) => {
            return Err(Error::BadInput(format!(
                "--models {} needs --dim G, the projected dimensions to try (e.g. --dim 2,4)",
                projected.join(",")
            )))
        }
        _ => {}
    }
    // Constant inputs are fitted around, so they do not count.
    let inputs = train.n_inputs() - train.constant_inputs.len();
    if let Some(&g) = dims.iter().find(|&&g| g == 0 || g > inputs) {
        return Err(Error::BadInput(format!(
            "--dim {g}: the projected dimension must be 1 to the {inputs} (non-constant) inputs"
        )));
    }
    let kernels = match distinct(&spec.kernels) {
        k if k.is_empty() => vec![Kernel::SquaredExponential],
        k => k,
    };
    let mut points = Vec::new();
    for &model in &models {
        let takes = |k: &&Kernel| {
            model.capabilities().se_only.is_none() || **k == Kernel::SquaredExponential
        };
        for &kernel in kernels.iter().filter(takes) {
            let point = |m, dim| GridPoint {
                model,
                m,
                dim,
                kernel,
            };
            if model == Method::Exact {
                points.push(point(None, None));
                continue;
            }
            for &m in &ms {
                if model.is_projected() {
                    points.extend(dims.iter().map(|&g| point(Some(m), Some(g))));
                } else {
                    points.push(point(Some(m), None));
                }
            }
        }
    }
    Ok(points)
}

fn distinct<T: PartialEq + Copy>(values: &[T]) -> Vec<T> {
    let mut out = Vec::new();
    for &v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// A test set read against the training data.
#[derive(Clone, Debug, PartialEq)]
pub struct TestSet {
    /// Raw inputs, in the training data's input order.
    pub x: DMatrix<f64>,
    /// Raw targets, one vector per target in the training data's order,
    /// or ±1 labels for a binary training target (its positive class is
    /// +1).
    pub targets: Vec<DVector<f64>>,
    /// The file.
    pub source: String,
}

impl TestSet {
    /// Reads `input`, which must hold exactly the training data's columns
    /// (in any order); for several targets, its inputs and every target
    /// column (other columns are ignored).
    ///
    /// # Errors
    /// [`Error::BadInput`] for different columns and every data error.
    pub fn read(input: &Input, train: &(impl Outputs + ?Sized)) -> Result<TestSet> {
        let train = match train.outputs() {
            [train] => train,
            outputs => {
                let names = &outputs[0].input_names;
                let mut x = DMatrix::zeros(0, 0);
                let mut targets = Vec::with_capacity(outputs.len());
                for output in outputs {
                    let (read_x, y) = input.read_inputs_and_target(names, &output.target_name)?;
                    x = read_x;
                    targets.push(y);
                }
                return Ok(TestSet {
                    x,
                    targets,
                    source: input.name().to_owned(),
                });
            }
        };
        if !train.class_labels.is_empty() {
            return TestSet::read_labels(input, train);
        }
        let (x, y) = input.read_same_columns(&train.input_names, &train.target_name)?;
        let y = match train.target {
            TargetKind::Binary { positive } => {
                y.map(|v| if is_class(v, positive) { 1.0 } else { -1.0 })
            }
            _ => y,
        };
        Ok(TestSet {
            x,
            targets: vec![y],
            source: input.name().to_owned(),
        })
    }

    /// A test set whose target holds the text labels of `train`'s
    /// classification: each mapped through the training labels to +1 (the
    /// positive class) or -1, or to its class index for several classes.
    fn read_labels(input: &Input, train: &Dataset) -> Result<TestSet> {
        let (x, cells) = input.read_inputs_and_labels(&train.input_names, &train.target_name)?;
        let y = cells
            .iter()
            .map(
                |(cell, place)| match train.class_labels.iter().position(|l| l == cell) {
                    Some(k) => Ok(match train.target {
                        TargetKind::Binary { positive } if is_class(k as f64, positive) => 1.0,
                        TargetKind::Binary { .. } => -1.0,
                        _ => k as f64,
                    }),
                    None => Err(Error::BadInput(format!(
                        "{place}: '{cell}' is not a class of the training data (its classes: {})",
                        train.class_labels.join(", ")
                    ))),
                },
            )
            .collect::<Result<Vec<f64>>>()?;
        Ok(TestSet {
            x,
            targets: vec![DVector::from_vec(y)],
            source: input.name().to_owned(),
        })
    }

    /// Test rows.
    pub fn rows(&self) -> usize {
        self.x.nrows()
    }
}

/// What a sweep reports while it runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SweepProgress {
    /// Optimiser iterations done since the last report (over all grid
    /// points; they add up to [`iteration_total`]).
    Iterations(u64),
    /// A grid point is finished.
    Finished {
        /// Grid points finished so far.
        done: usize,
        /// Grid points in all.
        total: usize,
    },
}

/// Optimiser iterations the whole grid may use: the length of a progress
/// bar fed by [`SweepProgress::Iterations`].
pub fn iteration_total(points: &[GridPoint], seed: u64) -> u64 {
    points
        .iter()
        .map(|p| p.params(seed).map_or(0, |params| params.iteration_budget()))
        .sum()
}

/// A fitted and exported grid point.
#[derive(Clone, Debug, Serialize)]
pub struct Done {
    /// Basis functions of the model (GPLasso may reach fewer than asked;
    /// the exact GP has one per training row it used).
    pub n_basis: usize,
    /// Feature dimension G of the runtime model (D when unprojected).
    pub feature_dim: usize,
    /// Raw inputs D.
    pub input_dim: usize,
    /// Test-set figures, computed by the runtime from the blob; for
    /// several outputs those of the output vector ([`joint`]).
    #[serde(flatten)]
    pub figures: Figures,
    /// Each output's own figures (several outputs only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<OutputEvaluation>,
    /// Blob size (flash).
    pub blob_bytes: usize,
    /// RAM of `Model<M, G, D, P>` at exactly the model's sizes.
    pub ram_bytes: usize,
    /// Cortex-M4 instructions per prediction of every output
    /// ([`crate::tools::cost`]).
    pub instructions: u64,
    /// The fixed-point form's cost on a core without an FPU, where the
    /// model has one ([`crate::tools::cost::fixed_point_cost`]).
    pub fixed_point: Option<FixedCost>,
    /// The budget's limits this model exceeds.
    pub over_budget: Vec<Limit>,
    /// The export cure, if the f32 check needed one.
    pub cure: Option<Cure>,
    /// The blob.
    #[serde(skip)]
    pub blob: Vec<u8>,
}

/// How a grid point ended.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Outcome {
    /// Fit, exported and evaluated.
    Ok(Box<Done>),
    /// Fitting or exporting failed.
    Failed {
        /// The error.
        reason: String,
        /// The error was about the input (exit code 2), e.g. M above N.
        #[serde(skip)]
        bad_input: bool,
    },
}

/// One row of the table.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// What was fitted.
    #[serde(flatten)]
    pub point: GridPoint,
    /// Wall time of the fit and the export, seconds.
    pub fit_seconds: f64,
    /// Result.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The chosen model: the most accurate within the budget.
    pub chosen: bool,
}

impl Row {
    /// The figures and sizes of a fitted row.
    pub fn done(&self) -> Option<&Done> {
        match &self.outcome {
            Outcome::Ok(done) => Some(done.as_ref()),
            Outcome::Failed { .. } => None,
        }
    }
}

/// `regression` or `classification`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Task {
    /// Continuous target: lowest test NLPD wins.
    Regression,
    /// Binary target: lowest test error rate wins (then log loss).
    Classification,
}

/// A finished sweep: what `sgp sweep` prints (`--json`: this, serialised).
#[derive(Clone, Debug, Serialize)]
pub struct Sweep {
    /// Regression or classification.
    pub task: Task,
    /// Training file and rows.
    pub train: String,
    /// Training rows.
    pub train_rows: usize,
    /// Test file.
    pub test: String,
    /// Test rows.
    pub test_rows: usize,
    /// Raw inputs D.
    pub inputs: usize,
    /// The target names (several: a multi-output sweep).
    pub targets: Vec<String>,
    /// The budget.
    pub budget: Budget,
    /// The instruction cost model.
    pub cost_model: CostModel,
    /// Its formula, for people.
    pub cost_formula: String,
    /// The fixed-point form's formula (Cortex-M3), for people.
    pub fixed_cost_formula: String,
    /// One row per grid point, in grid order.
    pub rows: Vec<Row>,
    /// Index of the chosen row.
    pub chosen: Option<usize>,
}

/// Fits, exports and evaluates every point of `points` (from [`grid`]) on
/// `train`, evaluates it on `test`, and marks the most accurate row within
/// `budget`; a binary classifier's blobs carry `labels` `[negative,
/// positive]` as `sgp fit`'s do (empty: none). `progress` is called from
/// the worker threads.
pub fn sweep(
    data: &InMemory,
    test: &TestSet,
    points: &[GridPoint],
    seed: u64,
    budget: Budget,
    progress: &(dyn Fn(SweepProgress) + Sync),
) -> Sweep {
    let train = data.outputs.as_slice();
    let first = &train[0];
    let finished = AtomicUsize::new(0);
    let mut rows: Vec<Row> = points
        .par_iter()
        .map(|point| {
            let fit = |params: &FitParams, progress: &mut dyn FnMut(Progress)| {
                fit_and_export(data, params, progress)
            };
            let row = run_point(&fit, test, point, seed, budget, progress);
            progress(SweepProgress::Finished {
                done: finished.fetch_add(1, Ordering::Relaxed) + 1,
                total: points.len(),
            });
            row
        })
        .collect();
    let task = match first.target {
        TargetKind::Continuous => Task::Regression,
        _ => Task::Classification,
    };
    let chosen = choose(&mut rows);
    Sweep {
        task,
        train: first.source.clone(),
        train_rows: first.n_rows(),
        test: test.source.clone(),
        test_rows: test.rows(),
        inputs: first.n_inputs(),
        targets: train.iter().map(|d| d.target_name.clone()).collect(),
        budget,
        cost_model: *CORTEX_M4,
        cost_formula: CORTEX_M4.formula(),
        fixed_cost_formula: CORTEX_M3_FIXED.formula(),
        rows,
        chosen,
    }
}

/// The fit of one point, exported: the blob and the export cure, if any.
type FitPoint<'a> =
    dyn Fn(&FitParams, &mut dyn FnMut(Progress)) -> Result<(Vec<u8>, Option<Cure>)> + 'a;

fn run_point(
    fit: &FitPoint,
    test: &TestSet,
    point: &GridPoint,
    seed: u64,
    budget: Budget,
    progress: &(dyn Fn(SweepProgress) + Sync),
) -> Row {
    let params = point.params(seed);
    let iterations = params.as_ref().map_or(0, FitParams::iteration_budget);
    let started = Instant::now();
    let mut reported = 0;
    let result = params.and_then(|params| {
        fit(&params, &mut |p| {
            let now = p.iteration.min(iterations);
            if now > reported {
                progress(SweepProgress::Iterations(now - reported));
                reported = now;
            }
        })
    });
    // A fit that converged early, or failed, used less than its budget:
    // the bar still has to reach its end.
    progress(SweepProgress::Iterations(iterations - reported));
    let fit_seconds = started.elapsed().as_secs_f64();
    let outcome = result
        .and_then(|(blob, cure)| evaluate(blob, cure, test, budget))
        .unwrap_or_else(|e| Outcome::Failed {
            reason: e.to_string(),
            bad_input: e.exit_code() == 2,
        });
    Row {
        point: *point,
        fit_seconds,
        outcome,
        chosen: false,
    }
}

/// `params`' fit of `data`, exported as `sgp fit` exports it (a binary
/// classifier's with its labels): the blob and the export cure, if any.
fn fit_and_export(
    data: &InMemory,
    params: &FitParams,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Vec<u8>, Option<Cure>)> {
    let fitted = Job::fit_family(data, params, progress)?;
    let mut done = fitted.export(&Options::default(), false)?;
    let exported = done.outputs.swap_remove(0).exported;
    Ok((exported.blob, exported.cure))
}

/// The figures of a vector of outputs from each output's: the sum of their
/// NLPDs (the NLPD of the vector, the outputs independent given the
/// model), the Euclidean RMSE (the root of the summed MSEs: an error
/// distance when the outputs share a unit, e.g. a position), the mean
/// SMSE and the worst output's 95% coverage.
pub fn joint(outputs: &[Evaluation]) -> Evaluation {
    let mse: f64 = outputs.iter().map(|e| e.mse).sum();
    Evaluation {
        rows: outputs.first().map_or(0, |e| e.rows),
        rmse: mse.sqrt(),
        mse,
        smse: outputs.iter().map(|e| e.smse).sum::<f64>() / outputs.len().max(1) as f64,
        nlpd: outputs.iter().map(|e| e.nlpd).sum(),
        coverage_95: outputs
            .iter()
            .map(|e| e.coverage_95)
            .fold(f64::INFINITY, f64::min),
    }
}

/// Each output of a multi-output blob evaluated against its own test
/// column.
fn evaluate_outputs(spec: &ModelSpec, test: &TestSet) -> Result<Vec<OutputEvaluation>> {
    let specs = output_specs(spec);
    if specs.len() != test.targets.len() {
        return Err(Error::BadInput(format!(
            "{}: {} target columns for a blob of {} outputs",
            test.source,
            test.targets.len(),
            specs.len()
        )));
    }
    specs
        .iter()
        .zip(&test.targets)
        .map(|(output, y)| {
            Ok(OutputEvaluation {
                output: output.target_name.clone(),
                evaluation: evaluate_blob(&output.to_bytes()?, &test.x, y)?,
            })
        })
        .collect()
}

fn evaluate(blob: Vec<u8>, cure: Option<Cure>, test: &TestSet, budget: Budget) -> Result<Outcome> {
    let spec = ModelSpec::from_bytes(&blob)?;
    let shape = spec.shape;
    let first = test
        .targets
        .first()
        .ok_or_else(|| Error::BadInput(format!("{}: no target column", test.source)))?;
    let mut outputs = Vec::new();
    let figures = match shape.link {
        sgp_runtime::Link::Identity if spec.output_count() > 1 => {
            outputs = evaluate_outputs(&spec, test)?;
            let each: Vec<Evaluation> = outputs.iter().map(|o| o.evaluation.clone()).collect();
            Figures::Regression(joint(&each))
        }
        sgp_runtime::Link::Identity => Figures::Regression(evaluate_blob(&blob, &test.x, first)?),
        sgp_runtime::Link::Probit => {
            Figures::Classification(evaluate_classifier(&blob, &test.x, first)?)
        }
        sgp_runtime::Link::OneVsRest | sgp_runtime::Link::Softmax => {
            return Err(Error::BadInput(
                "sgp sweep evaluates single-output models; this blob is a multi-class classifier"
                    .into(),
            ))
        }
    };
    let (m, g, d) = (
        usize::from(shape.n_basis),
        usize::from(shape.feature_dim),
        usize::from(shape.input_dim),
    );
    let p = spec.output_count();
    let ram = ram_bytes_with_outputs(m, g, d, p);
    let instructions = instructions_per_prediction(&shape, spec.variance, p, spec.kernel);
    Ok(Outcome::Ok(Box::new(Done {
        n_basis: m,
        feature_dim: g,
        input_dim: d,
        figures,
        outputs,
        blob_bytes: blob.len(),
        ram_bytes: ram,
        instructions,
        fixed_point: fixed_point_cost(&shape, spec.variance, p, spec.kernel),
        over_budget: budget.exceeded(blob.len(), ram, instructions),
        cure,
        blob,
    })))
}

/// How a row ranks: lower is better; `None` cannot be chosen (failed,
/// over budget, or a figure that is NaN).
fn rank(done: &Done) -> Option<(f64, f64)> {
    let key = match &done.figures {
        Figures::Regression(e) => (e.nlpd, e.rmse),
        Figures::Classification(c) => (c.error_rate, c.log_loss),
    };
    (done.over_budget.is_empty() && !key.0.is_nan() && !key.1.is_nan()).then_some(key)
}

/// Marks the most accurate row within the budget and returns its index:
/// lowest test NLPD (classifiers: error rate, then log loss), then fewer
/// instructions, then the first.
fn choose(rows: &mut [Row]) -> Option<usize> {
    let chosen = rows
        .iter()
        .enumerate()
        .filter_map(|(i, row)| {
            let done = row.done()?;
            Some((i, rank(done)?, done.instructions))
        })
        .min_by(|a, b| {
            a.1 .0
                .total_cmp(&b.1 .0)
                .then(a.1 .1.total_cmp(&b.1 .1))
                .then(a.2.cmp(&b.2))
                .then(a.0.cmp(&b.0))
        })
        .map(|(i, _, _)| i);
    if let Some(row) = chosen.and_then(|i| rows.get_mut(i)) {
        row.chosen = true;
    }
    chosen
}

impl Sweep {
    /// The chosen row's blob.
    pub fn chosen_blob(&self) -> Option<&[u8]> {
        let row = self.rows.get(self.chosen?)?;
        row.done().map(|done| done.blob.as_slice())
    }

    /// `Ok` when a model was chosen; otherwise why not.
    ///
    /// # Errors
    /// [`Error::OverBudget`] (exit code 3) when fitted models exist but
    /// none meets the budget, naming the smallest figure reached per limit;
    /// when every grid point failed, [`Error::BadInput`] if every failure
    /// was about the input, else [`Error::Numerical`].
    pub fn outcome(&self) -> Result<()> {
        if self.chosen.is_some() {
            return Ok(());
        }
        let fitted: Vec<(&Row, &Done)> = self
            .rows
            .iter()
            .filter_map(|row| Some((row, row.done()?)))
            .collect();
        if fitted.is_empty() {
            let all_bad_input = self.rows.iter().all(|row| {
                matches!(
                    row.outcome,
                    Outcome::Failed {
                        bad_input: true,
                        ..
                    }
                )
            });
            let message = format!(
                "every one of the {} grid points failed (reasons in the table)",
                self.rows.len()
            );
            return Err(if all_bad_input {
                Error::BadInput(message)
            } else {
                Error::Numerical(message)
            });
        }
        if !self.budget.is_set() {
            return Err(Error::Numerical(
                "no fitted model has finite test figures to rank".into(),
            ));
        }
        let closest_to = |what: &str, value: fn(&Done) -> u64| {
            fitted
                .iter()
                .min_by_key(|(_, done)| value(done))
                .map(|(row, done)| format!("{what} {} ({})", value(done), row.point.label()))
        };
        let closest: Vec<String> = [
            self.budget
                .flash
                .and_then(|_| closest_to("smallest blob (B)", |d| to_u64(d.blob_bytes))),
            self.budget
                .ram
                .and_then(|_| closest_to("least RAM (B)", |d| to_u64(d.ram_bytes))),
            self.budget
                .instructions
                .and_then(|_| closest_to("fewest instructions", |d| d.instructions)),
        ]
        .into_iter()
        .flatten()
        .collect();
        Err(Error::OverBudget(format!(
            "no model meets the budget ({}): {}; raise the budget or sweep smaller M (or G)",
            self.budget.describe(),
            closest.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sgp_trainer::choose::{self, Asked, Request};
    use sgp_trainer::evaluate::{ClassEvaluation, Evaluation};
    use sgp_trainer::synth::{dataset, Shape};

    fn spec(models: &[Method], m: &[usize], dims: &[usize]) -> SweepSpec {
        SweepSpec {
            models: models.to_vec(),
            m: m.to_vec(),
            dims: dims.to_vec(),
            kernels: Vec::new(),
            seed: 0,
        }
    }

    fn refused(spec: &SweepSpec, data: &Dataset, mentions: &str) {
        match grid(spec, data) {
            Err(Error::BadInput(message)) => {
                assert!(message.contains(mentions), "{message}")
            }
            other => panic!("expected bad input mentioning {mentions:?}, got {other:?}"),
        }
    }

    #[test]
    fn the_grid_is_family_by_m_by_g_in_the_given_order() {
        let data = dataset(Shape::Ridge, 60, 0).unwrap();
        let points = grid(
            &spec(
                &[Method::SpgpDr, Method::Spgp, Method::Exact, Method::Spgp],
                &[16, 8, 16],
                &[2, 1],
            ),
            &data,
        )
        .unwrap();
        let labels: Vec<String> = points.iter().map(GridPoint::label).collect();
        assert_eq!(
            labels,
            [
                "spgp-dr M = 16, G = 2",
                "spgp-dr M = 16, G = 1",
                "spgp-dr M = 8, G = 2",
                "spgp-dr M = 8, G = 1",
                "spgp M = 16",
                "spgp M = 8",
                "exact",
            ]
        );
        // Each point's settings are sgp fit's defaults for it.
        assert_eq!(
            points[2].params(7).unwrap(),
            Options::defaults(Method::SpgpDr, 8, 2, 7).unwrap()
        );
        // Kernels are the innermost-but-M axis; vsgp takes se only.
        let kernels = SweepSpec {
            kernels: vec![Kernel::SquaredExponential, Kernel::Matern32],
            ..spec(&[Method::Spgp, Method::Vsgp], &[8, 16], &[])
        };
        let labels: Vec<String> = grid(&kernels, &data)
            .unwrap()
            .iter()
            .map(GridPoint::label)
            .collect();
        assert_eq!(
            labels,
            [
                "spgp M = 8",
                "spgp M = 16",
                "spgp M = 8, matern32",
                "spgp M = 16, matern32",
                "vsgp M = 8",
                "vsgp M = 16",
            ]
        );
    }

    #[test]
    fn bad_grids_are_refused() {
        let data = dataset(Shape::Ridge, 60, 0).unwrap();
        refused(&spec(&[], &[8], &[]), &data, "no model");
        refused(
            &spec(&[Method::Spgp], &[], &[]),
            &data,
            "no basis-function count",
        );
        refused(&spec(&[Method::Spgp], &[8, 0], &[]), &data, "at least 1");
        refused(&spec(&[Method::Spgp], &[8], &[2]), &data, "--dim applies");
        refused(&spec(&[Method::SpgpPca], &[8], &[]), &data, "needs --dim");
        refused(&spec(&[Method::SpgpDr], &[8], &[5]), &data, "--dim 5");
        refused(&spec(&[Method::SpgpDr], &[8], &[0]), &data, "--dim 0");
        // The exact GP alone needs no M.
        assert_eq!(
            grid(&spec(&[Method::Exact], &[], &[]), &data)
                .unwrap()
                .len(),
            1
        );
        // A binary target: only the IVM classifies.
        let mut classes = dataset(Shape::Ridge, 60, 0).unwrap();
        classes.y = classes.y.map(|v| if v > 0.0 { 1.0 } else { 0.0 });
        let classes = classes.into_binary(None).unwrap();
        refused(
            &spec(&[Method::Ivm, Method::Spgp], &[8], &[]),
            &classes,
            "ivm",
        );
        assert_eq!(
            grid(&spec(&[Method::Ivm], &[8], &[]), &classes)
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn byte_counts_take_k_and_m() {
        assert_eq!(parse_bytes("65536").unwrap(), 65536);
        assert_eq!(parse_bytes("64K").unwrap(), 65536);
        assert_eq!(parse_bytes("64k").unwrap(), 65536);
        assert_eq!(parse_bytes(" 2M ").unwrap(), 2 << 20);
        for bad in ["", "K", "-1", "1.5K", "12Q", "99999999999999999999"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }

    /// A fitted regression row with these figures, checked against `budget`.
    fn fitted(nlpd: f64, blob: usize, ram: usize, instructions: u64, budget: Budget) -> Row {
        Row {
            point: GridPoint {
                model: Method::Spgp,
                m: Some(8),
                dim: None,
                kernel: Kernel::SquaredExponential,
            },
            fit_seconds: 0.1,
            outcome: Outcome::Ok(Box::new(Done {
                n_basis: 8,
                feature_dim: 2,
                input_dim: 2,
                figures: Figures::Regression(Evaluation {
                    rows: 10,
                    rmse: 1.0,
                    mse: 1.0,
                    smse: 1.0,
                    nlpd,
                    coverage_95: 0.95,
                }),
                outputs: Vec::new(),
                blob_bytes: blob,
                ram_bytes: ram,
                instructions,
                fixed_point: None,
                over_budget: budget.exceeded(blob, ram, instructions),
                cure: None,
                blob: vec![1, 2, 3],
            })),
            chosen: false,
        }
    }

    fn failed(bad_input: bool) -> Row {
        let mut row = fitted(0.0, 1, 1, 1, Budget::default());
        row.outcome = Outcome::Failed {
            reason: "no".into(),
            bad_input,
        };
        row
    }

    fn finished(mut rows: Vec<Row>, budget: Budget) -> Sweep {
        let chosen = choose(&mut rows);
        Sweep {
            task: Task::Regression,
            train: "train.csv".into(),
            train_rows: 10,
            test: "test.csv".into(),
            test_rows: 10,
            inputs: 2,
            targets: vec!["y".into()],
            budget,
            cost_model: *CORTEX_M4,
            cost_formula: CORTEX_M4.formula(),
            fixed_cost_formula: CORTEX_M3_FIXED.formula(),
            rows,
            chosen,
        }
    }

    #[test]
    fn the_most_accurate_row_within_the_budget_is_chosen() {
        let budget = Budget {
            flash: Some(1000),
            ram: Some(2000),
            instructions: Some(3000),
        };
        assert_eq!(
            budget.exceeded(1001, 2000, 3001),
            [Limit::Flash, Limit::Instructions]
        );
        let rows = vec![
            fitted(0.5, 900, 1500, 2000, budget),
            fitted(-1.0, 1200, 1500, 2000, budget), // best, but over flash
            failed(false),
            fitted(0.2, 1000, 2000, 3000, budget), // at every limit: within
            fitted(f64::NAN, 100, 100, 100, budget),
        ];
        let sweep = finished(rows, budget);
        assert_eq!(sweep.chosen, Some(3));
        assert!(sweep.outcome().is_ok());
        assert_eq!(sweep.chosen_blob(), Some(&[1u8, 2, 3][..]));
        let table = sweep.to_string();
        assert!(table.contains("over: flash"), "{table}");
        assert!(table.contains("failed after"), "{table}");
        assert_eq!(
            table.lines().filter(|l| l.starts_with('*')).count(),
            2,
            "{table}"
        );
        // Without a budget the best row wins.
        let open = finished(
            vec![
                fitted(0.5, 900, 1500, 2000, Budget::default()),
                fitted(-1.0, 1200, 1, 1, Budget::default()),
            ],
            Budget::default(),
        );
        assert_eq!(open.chosen, Some(1));
        // Equal NLPD: fewer instructions.
        let tie = finished(
            vec![
                fitted(0.5, 9, 9, 2000, Budget::default()),
                fitted(0.5, 9, 9, 1000, Budget::default()),
            ],
            Budget::default(),
        );
        assert_eq!(tie.chosen, Some(1));
    }

    #[test]
    fn a_classifier_is_chosen_by_error_rate_then_log_loss() {
        let class = |error_rate: f64, log_loss: f64| {
            let mut row = fitted(0.0, 1, 1, 1, Budget::default());
            if let Outcome::Ok(done) = &mut row.outcome {
                done.figures = Figures::Classification(ClassEvaluation {
                    rows: 10,
                    error_rate,
                    log_loss,
                    brier: 0.1,
                    ece: 0.1,
                    true_positives: 1,
                    false_positives: 1,
                    true_negatives: 1,
                    false_negatives: 1,
                });
            }
            row
        };
        let mut rows = vec![class(0.2, 0.3), class(0.1, 0.6), class(0.1, 0.5)];
        assert_eq!(choose(&mut rows), Some(2));
        assert!(rows[2].chosen && !rows[1].chosen);
    }

    #[test]
    fn an_unmet_budget_and_a_sweep_that_failed_everywhere_are_errors() {
        let budget = Budget {
            flash: None,
            ram: Some(100),
            instructions: None,
        };
        let over = finished(
            vec![
                fitted(0.5, 900, 1500, 2000, budget),
                fitted(0.1, 900, 700, 2000, budget),
            ],
            budget,
        );
        match over.outcome() {
            Err(e @ Error::OverBudget(_)) => {
                assert_eq!(e.exit_code(), 3);
                let message = e.to_string();
                assert!(message.contains("RAM <= 100 B"), "{message}");
                assert!(message.contains("least RAM (B) 700"), "{message}");
            }
            other => panic!("expected OverBudget, got {other:?}"),
        }
        assert!(over.chosen_blob().is_none());
        assert!(over.to_string().contains("no model chosen"));
        let refused = finished(vec![failed(true), failed(true)], budget);
        assert!(matches!(refused.outcome(), Err(Error::BadInput(_))));
        let broken = finished(vec![failed(true), failed(false)], budget);
        assert_eq!(broken.outcome().unwrap_err().exit_code(), 1);
    }

    /// Training data as a job reads them, with no class labels.
    fn in_memory(train: &(impl Outputs + ?Sized)) -> InMemory {
        InMemory {
            outputs: train.outputs().to_vec(),
            labels: Vec::new(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn a_small_sweep_fits_exports_and_evaluates_every_point_in_order() {
        let data = dataset(Shape::Periodic, 120, 1).unwrap();
        let (train, test) = data.split(0.3, 1).unwrap();
        let test = TestSet {
            x: test.raw_x(),
            targets: vec![test.raw_y()],
            source: "test part".into(),
        };
        let points = grid(
            &spec(&[Method::Spgp, Method::Gplasso], &[4, 200], &[]),
            &train,
        )
        .unwrap();
        let total = iteration_total(&points, 0);
        let counted = AtomicUsize::new(0);
        let iterations = std::sync::atomic::AtomicU64::new(0);
        let progress = |p: SweepProgress| match p {
            SweepProgress::Iterations(n) => {
                iterations.fetch_add(n, Ordering::Relaxed);
            }
            SweepProgress::Finished { total, .. } => {
                assert_eq!(total, 4);
                counted.fetch_add(1, Ordering::Relaxed);
            }
        };
        let result = sweep(
            &in_memory(&train),
            &test,
            &points,
            0,
            Budget::default(),
            &progress,
        );
        // The progress bar ends exactly full.
        assert_eq!(counted.into_inner(), 4);
        assert_eq!(iterations.into_inner(), total);
        let status: Vec<bool> = result.rows.iter().map(|r| r.done().is_some()).collect();
        // M = 200 is more than the 84 training rows: failed rows, in place.
        assert_eq!(status, [true, false, true, false]);
        assert_eq!(result.rows[0].point.label(), "spgp M = 4");
        let done = result.rows[0].done().unwrap();
        assert_eq!(done.ram_bytes, sgp_runtime::ram_bytes(4, 1, 1));
        assert_eq!(done.blob_bytes, done.blob.len());
        assert!(done.instructions > 0);
        // An SE regression blob in product form: its fixed-point form is charged.
        let fixed = done.fixed_point.expect("a fixed-point form");
        assert_eq!(fixed.ram_bytes, sgp_runtime::fixed_ram_bytes(4, 1));
        assert!(fixed.instructions > 0);
        // The same blob as `sgp fit` of that point on its own.
        let request = Request {
            asked: Asked::Family(points[0].params(0).unwrap()),
            held_out: true,
            choose_objective: true,
            choose_kernel: false,
        };
        let mut alone = choose::fit(&train, &request, &mut |_| {}).unwrap();
        let exported = sgp_trainer::export::export(&mut alone, &train.raw_x(), false).unwrap();
        assert_eq!(exported.blob, done.blob);
        let Figures::Regression(e) = &done.figures else {
            panic!("a regression row")
        };
        assert_eq!(e.rows, test.rows());
        assert_eq!(
            *e,
            evaluate_blob(&done.blob, &test.x, &test.targets[0]).unwrap()
        );
        assert!(result.chosen.is_some_and(|i| i == 0 || i == 2));
    }

    /// Several targets: one blob per grid point holding every output, each
    /// output evaluated on its own column, the row's figures those of the
    /// output vector; families that cannot share a basis are refused.
    #[test]
    fn a_sweep_of_several_targets_evaluates_each_output_of_one_blob() {
        let data = sgp_trainer::synth::dynamics::System::Arm
            .data(160, 2)
            .unwrap();
        let (train, test) = data.split(0.25, 1).unwrap();
        let test = TestSet {
            x: test.first().raw_x(),
            targets: test.outputs().iter().map(Dataset::raw_y).collect(),
            source: "test part".into(),
        };
        match grid(&spec(&[Method::Spgp, Method::Gplasso], &[4], &[]), &train) {
            Err(Error::BadInput(message)) => {
                assert!(message.contains("--models gplasso"), "{message}");
                assert!(message.contains("3 targets on one basis"), "{message}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        let points = grid(&spec(&[Method::Spgp], &[4, 6], &[]), &train).unwrap();
        let result = sweep(
            &in_memory(&train),
            &test,
            &points,
            0,
            Budget::default(),
            &|_| {},
        );
        assert_eq!(result.targets, ["ex", "ey", "ez"]);
        for row in &result.rows {
            let done = row.done().expect("fitted");
            let names: Vec<&str> = done.outputs.iter().map(|o| o.output.as_str()).collect();
            assert_eq!(names, ["ex", "ey", "ez"]);
            let spec = ModelSpec::from_bytes(&done.blob).unwrap();
            assert_eq!(spec.output_count(), 3);
            for (output, (one, y)) in done
                .outputs
                .iter()
                .zip(output_specs(&spec).iter().zip(&test.targets))
            {
                let alone = evaluate_blob(&one.to_bytes().unwrap(), &test.x, y).unwrap();
                assert_eq!(output.evaluation, alone);
            }
            let each: Vec<Evaluation> = done.outputs.iter().map(|o| o.evaluation.clone()).collect();
            let Figures::Regression(e) = &done.figures else {
                panic!("a regression row")
            };
            assert_eq!(*e, joint(&each));
            let (m, g, d) = (done.n_basis, done.feature_dim, done.input_dim);
            assert_eq!(done.ram_bytes, ram_bytes_with_outputs(m, g, d, 3));
            let single = crate::tools::cost::instructions_per_prediction(
                &spec.shape,
                spec.variance,
                1,
                spec.kernel,
            );
            assert!(done.instructions > single && done.instructions < 3 * single);
        }
        let text = result.to_string();
        assert!(
            text.contains("3 outputs (ex, ey, ez) on one basis"),
            "{text}"
        );
        assert!(text.contains("lowest summed test NLPD"), "{text}");
        assert_eq!(
            text.lines()
                .filter(|l| l.trim_start().starts_with("ez "))
                .count(),
            2
        );
    }

    #[test]
    fn the_joint_figures_sum_nlpd_and_mse_and_keep_the_worst_coverage() {
        let e = |nlpd: f64, mse: f64, smse: f64, coverage_95: f64| Evaluation {
            rows: 5,
            rmse: mse.sqrt(),
            mse,
            smse,
            nlpd,
            coverage_95,
        };
        let both = joint(&[e(-1.0, 9.0, 0.25, 0.9), e(0.5, 16.0, 0.75, 0.97)]);
        assert_eq!(both, e(-0.5, 25.0, 0.5, 0.9));
        assert_eq!(both.rmse, 5.0);
    }
}
