//! `sgp fit`: the fit options, the training data and its warnings, the fit summary.

use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use nalgebra::DMatrix;
use sgp_trainer::data::labels;
use sgp_trainer::data::multi_target::{parse_target_list, MultiTargetData};
use sgp_trainer::data::stream::{
    read_dataset, scan, Format as StreamFormat, ReadProgress, TableFile,
};
use sgp_trainer::data::{is_class, Dataset, TargetKind};
use sgp_trainer::export::cure::{export_fitted, export_outputs, Cure};
use sgp_trainer::export::device::names_too_long;
use sgp_trainer::export::output_blob::set_blob;
use sgp_trainer::export::{
    export_set, golden_points, golden_rust, golden_rust_set, Exported, Fidelity,
    MEAN_TOLERANCE_FLOOR, MEAN_TOLERANCE_SD, VARIANCE_TOLERANCE,
};
use sgp_trainer::fit::gplasso::{gplasso_path, GplassoParams, GplassoRefit, PathRow, PATH_HOLDOUT};
use sgp_trainer::fit::ivm::{IvmParams, IvmPosterior};
use sgp_trainer::fit::multi_output::{fit_multi, MultiFitReport};
use sgp_trainer::fit::streamed::{fit_streamed, StreamedParams, StreamedProgress};
use sgp_trainer::fit::svgp::{fit_svgp_classes, ClassesFit, SvgpParams};
use sgp_trainer::fit::{
    fit, ExactParams, FitParams, FitReport, Fitted, HyperInit, InitMethod, Method, ProjectedParams,
    SparseParams, DEFAULT_MAX_ITER, DEFAULT_RESTARTS, DEFAULT_STALL,
};
use sgp_trainer::model::inference::Approximation;
use sgp_trainer::model::ModelSet;
use sgp_trainer::numerics::optimise::{OptimiseOptions, Progress, Stall};
use sgp_trainer::{Error, Result};

use super::{number, progress_bar, to_json, write_file};

/// `sgp fit --task`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum TaskArg {
    /// Predict a number (Gaussian noise).
    Regression,
    /// Predict one of two labels (probit likelihood).
    Classification,
}

/// `sgp fit --link`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LinkArg {
    /// Regression: Gaussian noise.
    Identity,
    /// Binary classification: `P(y = +1) = Phi((f + b) / sqrt(1 + v))`.
    Probit,
}

#[derive(clap::Args)]
pub(crate) struct FitArgs {
    /// Training data: CSV with a header row, or Parquet (numeric columns).
    /// A regression on more rows than a streamed fit samples
    /// (73,728) is fitted on a growing random subset and conditioned on
    /// every row in a second pass, in memory independent of the file's
    /// size (docs/src/large-data.md).
    #[arg(long)]
    data: PathBuf,
    /// Fit on every row in memory, even when the file is large enough to
    /// be streamed.
    #[arg(long)]
    in_memory: bool,
    /// Target column (default: the last column); all others are inputs.
    #[arg(long)]
    target: Option<String>,
    /// Model family (default: svgp for a classification, spgp for a
    /// regression).
    #[arg(long, value_enum)]
    model: Option<Method>,
    /// Regression or classification (default: classification when the
    /// target holds text labels or exactly two distinct values, or
    /// --positive is given; else regression).
    #[arg(long, value_enum)]
    task: Option<TaskArg>,
    /// Likelihood of the target: identity (regression) or probit (binary
    /// classification); `--link probit` is `--task classification`.
    #[arg(long, value_enum)]
    link: Option<LinkArg>,
    /// For a classification: the positive class (a label of the target
    /// column, text or number); every other label is negative (one against
    /// the rest). Without it a two-label target takes the larger number, or
    /// the rarer text label.
    #[arg(long, allow_negative_numbers = true)]
    positive: Option<String>,
    /// Number of pseudo-inputs (spgp, vsgp, spgp-hs, spgp-dr, spgp-pca) or of
    /// selected training inputs (gplasso; ivm: the active-set size).
    #[arg(long, default_value_t = 20)]
    m: usize,
    /// Projected dimension G (spgp-dr, spgp-pca; required there, 1..=D).
    #[arg(long)]
    dim: Option<usize>,
    /// Rank of gplasso's incomplete Cholesky factor (default max(4 M, 100),
    /// at most N); at most this many basis points can be selected.
    #[arg(long)]
    rank: Option<usize>,
    /// gplasso: first print the lasso path up to --m (non-zeros, lambda,
    /// training objective, NLPD and RMSE on a held-out 20%) to choose M.
    #[arg(long)]
    path: bool,
    /// gplasso: the paper's procedure: keep the hyperparameters of the
    /// exact GP on --max-points rows instead of re-optimising them (and the
    /// basis points) for the selected basis.
    #[arg(long, conflicts_with = "fixed_basis")]
    fixed_hyperparameters: bool,
    /// gplasso: re-optimise the hyperparameters but keep the selected
    /// training inputs as the basis (by default the basis points move too).
    #[arg(long)]
    fixed_basis: bool,
    /// Objective of a sparse fit: FITC (SPGP's likelihood) or VFE
    /// (Titsias' variational bound, GPflow's SGPR). Without it: FITC, but
    /// spgp on fewer than 2000 rows switches to VFE if VFE clearly predicts
    /// held-out rows better (the report says so).
    #[arg(long, value_enum)]
    objective: Option<Approximation>,
    /// spgp, spgp-hs: no held-out choice on small data (spgp: keep the
    /// objective; spgp-hs: always learn the uncertainties).
    #[arg(long)]
    no_held_out_choice: bool,
    /// Starts of a sparse fit; each gets a short screening run and the best
    /// is optimised to the end.
    #[arg(long, default_value_t = DEFAULT_RESTARTS)]
    restarts: usize,
    /// Seed for every random choice.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Largest number of optimiser iterations of the final run (vsgp,
    /// spgp-hs: of each of their two stages); most fits stop earlier, see
    /// --tol.
    #[arg(long, default_value_t = DEFAULT_MAX_ITER)]
    max_iter: u64,
    /// Stop a fit (not ivm's) once its training objective fell by less
    /// than TOL nats per row over the last 50 iterations (0: run to
    /// --max-iter).
    #[arg(long, default_value_t = DEFAULT_STALL.per_row)]
    tol: f64,
    /// Pseudo-input initialisation of the first start.
    #[arg(long, value_enum, default_value = "kmeans")]
    init: InitMethod,
    /// Hyperparameter initialisation.
    #[arg(long, value_enum, default_value = "scales")]
    init_hyper: HyperInit,
    /// Rows an exact GP is fitted on at most (a random subset if more);
    /// also the exact classifier an IVM classifier takes its kernel from.
    #[arg(long, default_value_t = 1000)]
    max_points: usize,
    /// ivm classifier: the posterior over the active set: the svgp bound's
    /// q(u) on every training row (all-rows), or the paper's, from the
    /// active rows' sites alone (active-set).
    #[arg(long, value_enum, default_value = "all-rows")]
    ivm_posterior: IvmPosterior,
    /// Output blob.
    #[arg(long)]
    out: PathBuf,
    /// Write the blob even if the f32 runtime deviates beyond tolerance
    /// and raising the jitter does not cure it.
    #[arg(long)]
    force: bool,
    /// Print the fit report as JSON on stdout instead of the summary.
    #[arg(long)]
    json: bool,
    /// Also write golden values (Rust source) for firmware tests: f64
    /// predictions and their input gradients at 12 training rows and 4
    /// far-away points.
    #[arg(long)]
    golden: Option<PathBuf>,
}

impl FitArgs {
    /// The task `--task` and `--link` ask for (`None`: decided by the
    /// target).
    fn task(&self) -> Result<Option<TaskArg>> {
        match (self.task, self.link) {
            (Some(TaskArg::Regression), Some(LinkArg::Probit))
            | (Some(TaskArg::Classification), Some(LinkArg::Identity)) => Err(Error::BadInput(
                "--task and --link disagree (--link probit is --task classification)".into(),
            )),
            (Some(task), _) => Ok(Some(task)),
            (None, Some(LinkArg::Probit)) => Ok(Some(TaskArg::Classification)),
            (None, Some(LinkArg::Identity)) => Ok(Some(TaskArg::Regression)),
            (None, None) => Ok(None),
        }
    }

    /// The model to fit to `data`: `--model`, else the default of its
    /// task.
    fn model_for(&self, data: &Dataset) -> Method {
        self.model.unwrap_or(match data.target {
            TargetKind::Binary { .. } => Method::Svgp,
            TargetKind::Continuous => Method::Spgp,
        })
    }

    fn params(&self, model: Method) -> Result<FitParams> {
        if model != Method::Gplasso
            && (self.rank.is_some() || self.path || self.fixed_hyperparameters || self.fixed_basis)
        {
            return Err(Error::BadInput(
                "--rank, --path, --fixed-hyperparameters and --fixed-basis are for --model \
                 gplasso"
                    .into(),
            ));
        }
        let projected = model.is_projected();
        let dim = match (projected, self.dim) {
            (true, Some(dim)) => dim,
            (true, None) => {
                return Err(Error::BadInput(format!(
                    "--model {} needs --dim G, the projected dimension",
                    model.name()
                )))
            }
            (false, Some(_)) => {
                return Err(Error::BadInput(format!(
                    "--dim applies to spgp-dr and spgp-pca only; --model {} takes no projection",
                    model.name()
                )))
            }
            (false, None) => 0,
        };
        let optimiser = OptimiseOptions {
            max_iter: self.max_iter,
            // A tolerance of 0 never fires: the best value cannot rise.
            stall: Some(Stall {
                per_row: self.tol,
                ..DEFAULT_STALL
            }),
            ..OptimiseOptions::default()
        };
        let sparse = SparseParams {
            m: self.m,
            seed: self.seed,
            approximation: self.objective.unwrap_or_default(),
            restarts: self.restarts,
            optimiser: optimiser.clone(),
            pseudo_init: self.init.into(),
            hyper_init: self.init_hyper,
            max_points: self.max_points,
            held_out_choice: !self.no_held_out_choice
                && (model == Method::SpgpHs || self.objective.is_none()),
        };
        Ok(match model {
            Method::Svgp => FitParams::Svgp(SvgpParams {
                m: self.m,
                seed: self.seed,
                restarts: self.restarts,
                optimiser,
                pseudo_init: self.init.into(),
            }),
            Method::Gplasso => FitParams::Gplasso(GplassoParams {
                m: self.m,
                rank: self.rank,
                max_points: self.max_points,
                seed: self.seed,
                optimiser,
                refit: match (self.fixed_hyperparameters, self.fixed_basis) {
                    (true, _) => GplassoRefit::Nothing,
                    (false, true) => GplassoRefit::Hyperparameters,
                    (false, false) => GplassoRefit::Everything,
                },
                ..GplassoParams::default()
            }),
            Method::Exact => FitParams::Exact(ExactParams {
                max_points: self.max_points,
                seed: self.seed,
                optimiser,
            }),
            Method::Spgp => FitParams::Spgp(sparse),
            Method::Vsgp => FitParams::Vsgp(sparse),
            Method::SpgpHs => FitParams::SpgpHs(sparse),
            Method::SpgpDr => FitParams::SpgpDr(ProjectedParams { sparse, dim }),
            Method::SpgpPca => FitParams::SpgpPca(ProjectedParams { sparse, dim }),
            Method::Ivm => FitParams::Ivm(IvmParams {
                m: self.m,
                seed: self.seed,
                optimiser: OptimiseOptions {
                    max_iter: self.max_iter.min(IvmParams::default().optimiser.max_iter),
                    ..OptimiseOptions::default()
                },
                kernel_points: self.max_points,
                posterior: self.ivm_posterior,
                ..IvmParams::default()
            }),
        })
    }
}

pub(crate) fn fit_with_progress(
    data: &Dataset,
    params: &FitParams,
    quiet: bool,
    label: &str,
) -> Result<Fitted> {
    let bar = progress_bar(quiet, params.iteration_budget(), label);
    let mut on_progress = |p: Progress| {
        bar.set_position(p.iteration);
        bar.set_message(format!("NLML {:.4}", p.best_value));
    };
    let result = fit(data, params, &mut on_progress);
    bar.finish_and_clear();
    result
}

/// What `sgp fit --json` prints.
#[derive(serde::Serialize)]
pub(crate) struct FitOutput<'a> {
    report: &'a FitReport,
    blob: &'a Path,
    blob_bytes: usize,
    fidelity: &'a Fidelity,
    /// The blob's variance form: "product" or "solves".
    variance: &'static str,
    /// Why the blob has the solves, not the product.
    #[serde(skip_serializing_if = "Option::is_none")]
    product_refused: Option<&'a str>,
    cure: Option<&'a Cure>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a [PathRow]>,
}

/// What `sgp fit --target a,b --json` prints.
#[derive(serde::Serialize)]
pub(crate) struct MultiFitOutput<'a> {
    report: &'a MultiFitReport,
    blob: &'a Path,
    blob_bytes: usize,
    /// Each output's f32 fidelity, in output order.
    fidelity: Vec<&'a Fidelity>,
    /// The blob's variance form: "product" or "solves".
    variance: &'static str,
    cure: Option<&'a Cure>,
}

/// `sgp fit --target a,b,c`: one model for several targets on one basis.
pub(crate) fn fit_outputs_command(args: &FitArgs, targets: &[String], quiet: bool) -> Result<()> {
    if args.task()? == Some(TaskArg::Classification) || args.positive.is_some() {
        return Err(Error::BadInput(
            "several targets (--target a,b) are a multi-output regression; a classifier has one \
             target column (its classes are that column's values)"
                .into(),
        ));
    }
    let data = MultiTargetData::from_csv(&args.data, targets)?;
    let params = args.params(args.model.unwrap_or(Method::Spgp))?;
    let bar = progress_bar(quiet || args.json, params.iteration_budget(), "fit");
    let fitted = fit_multi(&data, &params, &mut |p: Progress| {
        bar.set_position(p.iteration);
        bar.set_message(format!("objective {:.4}", p.best_value));
    });
    bar.finish_and_clear();
    let mut fitted = fitted?;
    let raw_x = data.first().raw_x();
    let (exported, cure) = export_outputs(&mut fitted, &raw_x, args.force)?;
    let blob = set_blob(&fitted.set, &exported)?;
    write_file(&args.out, &blob)?;
    let variance = exported.first().map_or("solves", |e| e.variance.name());
    if args.json {
        let output = MultiFitOutput {
            report: &fitted.report,
            blob: &args.out,
            blob_bytes: blob.len(),
            fidelity: exported.iter().map(|e| &e.fidelity).collect(),
            variance,
            cure: cure.as_ref(),
        };
        println!("{}", to_json(&output)?);
        return Ok(());
    }
    let report = &fitted.report;
    let first = fitted.set.members.first();
    println!(
        "model           {} (M = {}, {} outputs on one basis, {} training rows)",
        params.method().name(),
        first.map_or(0, |m| m.n_basis()),
        fitted.set.members.len(),
        data.n_rows()
    );
    for (k, start) in report.starts.iter().enumerate() {
        println!(
            "start {:<9} {} -> objective {:.4}",
            k + 1,
            start.init,
            start.nlml
        );
    }
    if let Some(run) = &report.optimiser {
        println!(
            "objective       {:.4} -> {:.4} (sum over outputs) in {} iterations ({:.2} s; {})",
            run.initial_nlml, report.nlml, run.iterations, report.seconds, run.stop_reason
        );
    }
    if let Some(out) = report.outputs.first() {
        if !out.hyper.lengthscales.is_empty() {
            let scales: Vec<String> = out
                .inputs
                .iter()
                .zip(&out.hyper.lengthscales)
                .map(|(name, l)| format!("{name} {}", number(*l)))
                .collect();
            println!("length scales   {} (shared)", scales.join(", "));
        }
    }
    if let Some(sharing) = &report.variance {
        println!("variance        {}", sharing.describe());
    }
    println!("output          objective  signal var  noise var  f32 worst mean / sd");
    for ((out, member), e) in report
        .outputs
        .iter()
        .zip(&fitted.set.members)
        .zip(&exported)
    {
        println!(
            "{:<15} {:>9.4}  {:>10}  {:>9}{}  {:.3}",
            member.target_name,
            out.nlml,
            number(out.hyper.signal_variance),
            number(out.hyper.noise_variance),
            if out.hyper.noise_on_floor {
                " (floor)"
            } else {
                ""
            },
            e.fidelity.worst_mean_sd
        );
    }
    if let Some(c) = &cure {
        println!(
            "export cure     jitter raised from {:e} to {:e} s2 for every output so that f32 \
             reproduces the models ({} iterations of joint re-optimisation); training objective \
             {:.4} -> {:.4}",
            c.from_eps, c.to_eps, c.reoptimised, c.nlml_before, c.nlml_after
        );
    }
    println!(
        "blob            {} ({} bytes, {} variance form, every output's f32 predictions checked)",
        args.out.display(),
        blob.len(),
        variance
    );
    Ok(())
}

/// What the target of the training data became.
pub(crate) enum Classes {
    /// A regression: no labels.
    None,
    /// A binary classification: the labels `[negative, positive]`.
    Binary(Vec<String>),
    /// A classification of `K > 2` classes: the target keeps its class
    /// values (the fit codes them).
    Several,
}

/// Reads the training data for `models` (named by the option `flag`; empty:
/// the default model of the task): the target as a classification when
/// `task` says so, or, with no `task`, when it holds exactly two distinct
/// values, text labels, or `positive` is given (and no model asked for is a
/// regression-only one): binary with two classes or `positive`, else of
/// `K` classes; the warnings about constant and unresolvable columns
/// unless `quiet`.
pub(crate) fn training_data(
    path: &Path,
    target: Option<&str>,
    task: Option<TaskArg>,
    positive: Option<&str>,
    (flag, models): (&str, &[Method]),
    quiet: bool,
) -> Result<(Dataset, Classes)> {
    let table = TableFile::open(path, target)?;
    let data = match table.format {
        StreamFormat::Csv => Dataset::from_csv(path, target)?,
        StreamFormat::Parquet => read_dataset(&table)?,
    };
    let regression_only = models.iter().find(|m| !m.classifies());
    let classes = data.target_classes();
    let text = !data.class_labels.is_empty();
    let task = task.unwrap_or_else(|| {
        let two = classes.len() == 2;
        match regression_only {
            Some(model) if (two || text) && !quiet => {
                eprintln!(
                    "sgp: target '{}' holds {} but {flag} {} is a regression model: fitting \
                     it as a number (--model svgp, ivm or exact classifies)",
                    data.target_name,
                    if text { "text labels" } else { "two values" },
                    model.name()
                );
                TaskArg::Regression
            }
            Some(_) => TaskArg::Regression,
            None if two || text || positive.is_some() => TaskArg::Classification,
            None => TaskArg::Regression,
        }
    });
    let data = match task {
        TaskArg::Classification => {
            if let Some(model) = regression_only {
                return Err(Error::BadInput(format!(
                    "classification needs {flag} svgp, {flag} ivm or {flag} exact, not {flag} {}",
                    model.name()
                )));
            }
            // Non-integer values are a continuous column: refused below.
            let integral = classes.iter().all(|&v| is_class(v, v.round()));
            if positive.is_none() && classes.len() > 2 && integral {
                return several_classes(data, flag, models, quiet);
            }
            let chosen = positive.is_some();
            let positive = match positive {
                Some(label) => labels::class_value(&data, label)?,
                None => labels::default_positive(&data)?,
            };
            let names = labels::binary_labels(&data, positive);
            let data = data.into_binary(Some(positive))?;
            if !quiet {
                let why = match (chosen, text) {
                    (true, _) => "--positive",
                    (false, true) => "the rarer label",
                    (false, false) => "the larger value",
                };
                eprintln!(
                    "sgp: target '{}': binary classification, positive class '{}' against '{}' \
                     ({why}; --positive LABEL chooses another, --task regression fits numbers)",
                    data.target_name,
                    names.get(1).map_or("", String::as_str),
                    names.first().map_or("", String::as_str),
                );
            }
            (data, Classes::Binary(names))
        }
        TaskArg::Regression if positive.is_some() => {
            return Err(Error::BadInput(
                "--positive names the positive class of a classification".into(),
            ))
        }
        TaskArg::Regression if text => {
            return Err(Error::BadInput(format!(
                "{}: target column '{}' holds text labels ({}): a regression needs numbers",
                data.source,
                data.target_name,
                data.class_labels
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
        TaskArg::Regression => (data, Classes::None),
    };
    if !quiet {
        warn_about_columns(&data.0);
    }
    Ok(data)
}

/// The training data of a classification of `K > 2` classes: the svgp fit
/// of one latent per class ([`fit_svgp_classes`]) is the only one there is.
pub(crate) fn several_classes(
    data: Dataset,
    flag: &str,
    models: &[Method],
    quiet: bool,
) -> Result<(Dataset, Classes)> {
    if let Some(model) = models.iter().find(|&&m| m != Method::Svgp) {
        return Err(Error::BadInput(format!(
            "{}: target column '{}' holds {} classes: a multi-class classifier is {flag} svgp, \
             not {flag} {} (--positive LABEL fits that class against the rest)",
            data.source,
            data.target_name,
            data.target_classes().len(),
            model.name()
        )));
    }
    if !quiet {
        let names: Vec<String> = data
            .target_classes()
            .iter()
            .map(|&c| labels::class_name(&data, c))
            .collect();
        eprintln!(
            "sgp: target '{}': classification of {} classes ({}), one latent each on one basis \
             (--positive LABEL fits one class against the rest)",
            data.target_name,
            names.len(),
            names.join(", ")
        );
        warn_about_columns(&data);
    }
    Ok((data, Classes::Several))
}

/// Warns about constant inputs, columns f32 cannot resolve and names too
/// long for a device.
pub(crate) fn warn_about_columns(data: &Dataset) {
    for &j in &data.constant_inputs {
        eprintln!(
            "sgp: warning: input '{}' is constant in the training data (value {}): the \
                 model ignores it",
            data.input_names[j], data.transform.x_mean[j]
        );
    }
    for warning in sgp_trainer::export::precision::for_dataset(data) {
        eprintln!("sgp: warning: {warning}");
    }
    let long = names_too_long(&data.input_names, &data.target_name);
    if !long.is_empty() {
        eprintln!(
            "sgp: warning: column names longer than the {} bytes a device Model holds: \
                 {}; a device will refuse the blob (rename the columns)",
            sgp_runtime::NAME_CAPACITY,
            long.join(", ")
        );
    }
}

pub(crate) fn fit_command(args: &FitArgs, quiet: bool) -> Result<()> {
    let targets = args
        .target
        .as_deref()
        .map(parse_target_list)
        .unwrap_or_default();
    if targets.len() > 1 {
        return fit_outputs_command(args, &targets, quiet);
    }
    if !args.in_memory {
        if let Some(streamed) = streamed_fit(args, quiet)? {
            return finish_fit(args, streamed, None, Vec::new());
        }
    }
    let asked: Vec<Method> = args.model.into_iter().collect();
    let (data, classes) = training_data(
        &args.data,
        args.target.as_deref(),
        args.task()?,
        args.positive.as_deref(),
        ("--model", &asked),
        quiet,
    )?;
    let labels = match classes {
        Classes::Several => return fit_classes_command(args, &data, quiet),
        Classes::Binary(labels) => labels,
        Classes::None => Vec::new(),
    };
    let params = args.params(args.model_for(&data))?;
    let path = match &params {
        FitParams::Gplasso(p) if args.path => {
            let (rows, stop) = gplasso_path(&data, p)?;
            if !args.json {
                print_path(&rows, stop, p.m);
            }
            Some(rows)
        }
        _ => None,
    };
    let fitted = fit_with_progress(&data, &params, quiet || args.json, "fit")?;
    finish_fit(args, (fitted, data.raw_x()), path, labels)
}

/// Rows of the sample at which a streamed fit's export is checked.
pub(crate) const STREAMED_CHECK_ROWS: usize = 16_384;

/// Fits a regression on a large file by [`fit_streamed`]: `None` when the
/// file is small enough to fit in memory, or the fit asked for is not one
/// that streams (a classification, a model other than spgp); then the
/// whole file is read as before. Returns the fit and the raw inputs its
/// export is checked at.
pub(crate) fn streamed_fit(args: &FitArgs, quiet: bool) -> Result<Option<(Fitted, DMatrix<f64>)>> {
    let model = args.model.unwrap_or(Method::Spgp);
    let classification = args.task()? == Some(TaskArg::Classification) || args.positive.is_some();
    if model != Method::Spgp || classification {
        return Ok(None);
    }
    let table = TableFile::open(&args.data, args.target.as_deref())?;
    if table.target_is_text()? {
        // Class labels: a classification, which is fitted in memory.
        return Ok(None);
    }
    let mut params = StreamedParams::default();
    let FitParams::Spgp(sparse) = args.params(Method::Spgp)? else {
        return Ok(None);
    };
    params.sparse = sparse;
    if !params.streams(&table)? {
        return Ok(None);
    }
    let quiet = quiet || args.json;
    let bar = rows_bar(quiet, table.bytes(), "read", true);
    let first = scan(
        &table,
        params.sample_rows(),
        params.sparse.seed,
        params.chunk_rows,
        &mut |at| show_rows(&bar, at),
    );
    bar.finish_and_clear();
    let first = first?;
    if args.task()?.is_none() && first.target_values.len() == 2 {
        // Two target values default to a classification, which is fitted in memory.
        return Ok(None);
    }
    let fit_bar = progress_bar(quiet, params.stage_budget(params.first_rows), "fit");
    let pass_bar = rows_bar(quiet, first.rows, "pass", false);
    let mut stage_rows = 0;
    let fitted = fit_streamed(&table, &first, &params, &mut |p| match p {
        StreamedProgress::Fit { rows, progress } => {
            if rows != stage_rows {
                stage_rows = rows;
                fit_bar.set_prefix(format!("{rows} rows"));
                fit_bar.set_length(params.stage_budget(rows));
                fit_bar.reset();
            }
            fit_bar.set_position(progress.iteration);
            fit_bar.set_message(format!("NLML {:.4}", progress.best_value));
        }
        StreamedProgress::Pass(at) => {
            fit_bar.finish_and_clear();
            pass_bar.set_position(at.rows);
        }
    });
    fit_bar.finish_and_clear();
    pass_bar.finish_and_clear();
    let check_rows = first.sample_x.nrows().min(STREAMED_CHECK_ROWS);
    Ok(Some((
        fitted?,
        first.sample_x.rows(0, check_rows).into_owned(),
    )))
}

/// A progress bar over the rows of a pass (`bytes`: over the bytes of the
/// file, rows counted in the message), hidden with --quiet.
pub(crate) fn rows_bar(quiet: bool, len: u64, label: &str, bytes: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    let template = if bytes {
        "{prefix:>6} [{bar:30}] {binary_bytes}/{binary_total_bytes}  {msg}  {eta} left"
    } else {
        "{prefix:>6} [{bar:30}] {human_pos}/{human_len} rows  {per_sec}  {eta} left"
    };
    bar.set_style(
        ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix(label.to_string());
    bar
}

/// Shows a pass's progress on a bar over the file's bytes, with rows per
/// second.
pub(crate) fn show_rows(bar: &ProgressBar, at: ReadProgress) {
    bar.set_position(at.bytes);
    let seconds = bar.elapsed().as_secs_f64().max(1e-3);
    bar.set_message(format!(
        "{} rows, {:.0} rows/s",
        at.rows,
        at.rows as f64 / seconds
    ));
}

/// Exports `fitted` (checked at the raw inputs `check_x`), writes the blob
/// and the golden values asked for, and reports.
pub(crate) fn finish_fit(
    args: &FitArgs,
    (mut fitted, raw_x): (Fitted, DMatrix<f64>),
    path: Option<Vec<PathRow>>,
    labels: Vec<String>,
) -> Result<()> {
    let (mut exported, cure) = export_fitted(&mut fitted, &raw_x, args.force)?;
    if !labels.is_empty() {
        // The (cured) model again, now with the labels in its blob.
        let set = ModelSet::single(fitted.model.clone(), labels);
        exported = export_set(&set, &raw_x, args.force)?;
    }
    write_file(&args.out, &exported.blob)?;
    if let Some(path) = &args.golden {
        let points = golden_points(&fitted.model, &raw_x, 12, 4);
        write_file(path, golden_rust(&fitted.model, &points)?.as_bytes())?;
    }
    if args.json {
        let output = FitOutput {
            report: &fitted.report,
            blob: &args.out,
            blob_bytes: exported.blob.len(),
            fidelity: &exported.fidelity,
            variance: exported.variance.name(),
            product_refused: exported.product_refused.as_deref(),
            cure: cure.as_ref(),
            path: path.as_deref(),
        };
        println!("{}", to_json(&output)?);
    } else {
        print_fit_summary(&fitted, &exported, cure.as_ref(), &args.out);
    }
    Ok(())
}

/// `sgp fit` of a target of `K > 2` classes: one probit latent per class on
/// one basis ([`fit_svgp_classes`]), exported with the softmax link (the
/// rule the classification chapter measured against one-vs-rest).
pub(crate) fn fit_classes_command(args: &FitArgs, data: &Dataset, quiet: bool) -> Result<()> {
    let FitParams::Svgp(params) = args.params(Method::Svgp)? else {
        return Err(Error::BadInput(
            "a multi-class classifier is --model svgp".into(),
        ));
    };
    let budget = FitParams::Svgp(params.clone()).iteration_budget();
    let bar = progress_bar(quiet || args.json, budget, "fit");
    let mut on_progress = |p: Progress| {
        bar.set_position(p.iteration);
        bar.set_message(format!("bound {:.4}", p.best_value));
    };
    let fitted = fit_svgp_classes(data, &params, &mut on_progress);
    bar.finish_and_clear();
    let ClassesFit { mut set, report } = fitted?;
    for member in &mut set.members {
        member.link = sgp_runtime::Link::Softmax;
    }
    let raw_x = data.raw_x();
    let exported = export_set(&set, &raw_x, args.force)?;
    write_file(&args.out, &exported.blob)?;
    if let Some(path) = &args.golden {
        let first = set
            .members
            .first()
            .ok_or_else(|| Error::Numerical("the multi-class fit returned no classes".into()))?;
        let points = golden_points(first, &raw_x, 12, 4);
        write_file(path, golden_rust_set(&set, &points)?.as_bytes())?;
    }
    if args.json {
        let output = ClassesFitOutput {
            report: &report,
            classes: &set.class_labels,
            blob: &args.out,
            blob_bytes: exported.blob.len(),
            fidelity: &exported.fidelity,
            variance: exported.variance.name(),
        };
        println!("{}", to_json(&output)?);
        return Ok(());
    }
    let first = set.members.first().map_or(0, |m| m.n_basis());
    println!(
        "model           svgp, {} classes on one basis (M = {first}, {} training rows), \
         softmax link",
        set.members.len(),
        report.rows
    );
    println!("classes         {}", set.class_labels.join(", "));
    println!(
        "objective       {:.4} (the bound summed over the classes, {:.2} s)",
        report.nlml, report.seconds
    );
    println!("fidelity        {}", exported.fidelity.describe());
    println!(
        "blob            {} ({} bytes, {} variance form)",
        args.out.display(),
        exported.blob.len(),
        exported.variance.name()
    );
    Ok(())
}

/// What `sgp fit --json` prints for a classifier of `K > 2` classes.
#[derive(serde::Serialize)]
pub(crate) struct ClassesFitOutput<'a> {
    report: &'a FitReport,
    /// The class labels, in class (output) order.
    classes: &'a [String],
    blob: &'a Path,
    blob_bytes: usize,
    fidelity: &'a Fidelity,
    /// The blob's variance form: "product" or "solves".
    variance: &'static str,
}

pub(crate) fn print_path(rows: &[PathRow], stop: sgp_trainer::numerics::lars::LarsStop, m: usize) {
    println!(
        "lasso path on {:.0}% of the rows, scored on the other {:.0}% (raw units):",
        100.0 * (1.0 - PATH_HOLDOUT),
        100.0 * PATH_HOLDOUT
    );
    println!(
        "{:>9} {:>10} {:>12} {:>14} {:>10} {:>10}",
        "non-zeros", "change", "lambda", "objective", "val NLPD", "val RMSE"
    );
    for (k, r) in rows.iter().enumerate() {
        let change = match r.action {
            // The first breakpoint: the first row entered at the start.
            _ if k == 0 => r
                .rows
                .iter()
                .map(|j| format!("+{j}"))
                .collect::<Vec<_>>()
                .join(" "),
            sgp_trainer::numerics::lars::LarsAction::Enter(j) => format!("+{j}"),
            sgp_trainer::numerics::lars::LarsAction::Leave(j) => format!("-{j}"),
            sgp_trainer::numerics::lars::LarsAction::Rejected(j) => format!("dup {j}"),
            _ => String::new(),
        };
        println!(
            "{:>9} {:>10} {:>12} {:>14} {:>10.4} {:>10}",
            r.nonzeros,
            change,
            number(r.lambda),
            number(r.objective),
            r.validation_nlpd,
            number(r.validation_rmse)
        );
    }
    let reached = rows.last().map_or(0, |r| r.nonzeros);
    if reached < m {
        println!("the path stopped at {reached} non-zeros ({stop:?}), short of --m {m}");
    }
    println!(
        "(change: data row, 0-based, header not counted, that entered (+) or left (-) the basis; \
         `--json` lists every breakpoint's rows)"
    );
    println!();
}

pub(crate) fn print_fit_summary(
    fitted: &Fitted,
    exported: &Exported,
    cure: Option<&Cure>,
    out: &Path,
) {
    let (model, report) = (&fitted.model, &fitted.report);
    let objective = report
        .approximation
        .map(|a| format!(", {}", format!("{a:?}").to_uppercase()))
        .unwrap_or_default();
    let method = report.method.name();
    let kind = if method == model.kind.name() {
        method
    } else {
        format!("{method} (blob kind {})", model.kind.name())
    };
    println!(
        "model           {kind} (M = {}, {} training rows{objective})",
        model.n_basis(),
        report.rows
    );
    if let Some(streamed) = &report.streamed {
        let stages: Vec<String> = streamed
            .stages
            .iter()
            .map(|s| format!("{} rows {:.4}", s.rows, s.validation_nlpd))
            .collect();
        println!(
            "subset          fitted on {} of {} rows (validation NLPD by stage: {}); every row              conditioned on in a {:.1} s pass",
            streamed.fitted_rows,
            streamed.rows,
            stages.join(", "),
            streamed.pass_seconds
        );
    }
    for (k, start) in report.starts.iter().enumerate() {
        println!(
            "start {:<9} {} -> NLML {:.4}",
            k + 1,
            start.init,
            start.nlml
        );
    }
    if let Some(run) = &report.optimiser {
        println!(
            "NLML            {:.4} -> {:.4} in {} iterations ({} evaluations, {:.2} s; {})",
            run.initial_nlml,
            report.nlml,
            run.iterations,
            run.evaluations,
            report.seconds,
            run.stop_reason
        );
        if run.budget_exhausted {
            println!(
                "                the optimiser used its whole budget of {} iterations and was \
                 still improving: try --max-iter {}",
                run.max_iter,
                2 * run.max_iter
            );
        }
    }
    if let Some(g) = &report.gplasso {
        println!(
            "selection       LARS path to {} of {} asked non-zeros ({:?}) in {} steps ({} \
             removals), lambda {}; ICF rank {} of {} (residual trace {:.1e}); weights {:?}; \
             hyperparameters {:.2} s, selection {:.2} s",
            g.reached,
            g.asked,
            g.stop,
            g.lars_steps,
            g.removals,
            number(g.lambda),
            g.icf_rank,
            g.rank,
            g.icf_residual,
            g.weights,
            g.hyper_seconds,
            g.select_seconds
        );
        if g.reached < g.asked {
            println!(
                "                the path could not reach {} non-zeros (duplicated rows, or the \
                 kernel's rank at the trace tolerance): the model has {}",
                g.asked, g.reached
            );
        }
        let start = format!(
            "the exact GP's on {} rows ({} iterations, {:.2} s)",
            g.hyper_rows, g.hyper_iterations, g.hyper_seconds
        );
        match g.refit {
            GplassoRefit::Nothing => {
                println!("hyperparameters {start}, kept (--fixed-hyperparameters)")
            }
            GplassoRefit::Hyperparameters => println!(
                "hyperparameters re-optimised from {start} with the selected inputs as basis \
                 (--fixed-basis)"
            ),
            GplassoRefit::Everything => println!(
                "hyperparameters re-optimised from {start}, then the basis points moved from the \
                 selected inputs with them"
            ),
        }
        let rows: Vec<String> = g.selected_rows.iter().map(usize::to_string).collect();
        println!(
            "selected rows   {} (0-based data rows, header not counted; the blob holds their \
             inputs, not these numbers)",
            rows.join(" ")
        );
        println!(
            "variance        FITC with the basis points as pseudo-inputs (an approximation); \
             its training NLML {:.4}",
            report.nlml
        );
    }
    if let Some(c) = &report.held_out {
        println!(
            "held-out choice {} (mean NLPD on {} held-out rows, raw units: {} {:.4}, {} {:.4}, \
             standard error of the difference {:.4}; the other must win by more than {} of \
             them)",
            c.chosen(),
            c.rows,
            c.incumbent,
            c.incumbent_nlpd,
            c.challenger,
            c.challenger_nlpd,
            c.standard_error,
            sgp_trainer::fit::held_out::MARGIN_SE
        );
        if c.noise_collapsed {
            println!(
                "                FITC's fit on all rows put its noise on the floor (near \
                 noise-free predictions at its pseudo-inputs) without clearly winning: the \
                 model is the VFE fit"
            );
        }
        if report.method == Method::SpgpHs && !c.challenger_chosen {
            println!(
                "                the uncertainties did not pay on held-out rows: the model is \
                 plain SPGP (all h = 0); --no-held-out-choice learns them anyway"
            );
        }
    }
    if let Some(p) = &report.projection {
        let s: Vec<String> = p.singular_values.iter().map(|v| number(*v)).collect();
        println!(
            "projection      {} x {} (standardised inputs); singular values {}",
            p.rows,
            p.cols,
            s.join(", ")
        );
    } else {
        println!("length scales");
        let width = report.inputs.iter().map(String::len).max().unwrap_or(0);
        for (name, l) in report.inputs.iter().zip(&report.hyper.lengthscales) {
            println!("  {name:<width$}  {}", number(*l));
        }
    }
    if !report.ignored_inputs.is_empty() {
        println!(
            "ignored inputs  {} (constant in the training data; no length scale)",
            report.ignored_inputs.join(", ")
        );
    }
    if let Some(h) = &report.uncertainties {
        println!(
            "uncertainties   h_m min {}  median {}  max {} (raw target variance; not in the blob)",
            number(h.min),
            number(h.median),
            number(h.max)
        );
    }
    if let Some(ivm) = &report.ivm {
        let best = ivm
            .candidates
            .iter()
            .map(|c| c.validation_log_predictive)
            .fold(f64::NEG_INFINITY, f64::max);
        println!(
            "active set      {} training rows by differential entropy ({:?} likelihood); kernel \
             chosen among {} candidates by held-out mean log predictive {best:.4}; selection \
             {:.2} s, kernel optimisation {:.2} s",
            ivm.active_rows.len(),
            ivm.likelihood,
            ivm.candidates.len(),
            ivm.select_seconds,
            ivm.optimise_seconds
        );
        if model.link == sgp_runtime::Link::Probit {
            println!(
                "classes         positive class {} (P(y = +1) in the blob), bias b = {:.4}; \
                 posterior {:?}",
                model.positive_class, model.bias, ivm.posterior
            );
        }
    }
    println!("signal variance {}", number(report.hyper.signal_variance));
    if model.link == sgp_runtime::Link::Identity {
        println!(
            "noise variance  {}{}",
            number(report.hyper.noise_variance),
            if report.hyper.noise_on_floor {
                "  (on the noise floor: FITC absorbed the noise)"
            } else {
                ""
            }
        );
    }
    if report.jitter_escalations > 0 {
        println!(
            "jitter          raised {} times to factorise",
            report.jitter_escalations
        );
    }
    if let Some(c) = cure {
        println!(
            "export cure     jitter raised from {:.0e} to {:.0e} s2 so that f32 reproduces the \
             model ({} iterations of re-optimisation); training NLML {:.4} -> {:.4} ({:+.2}%)",
            c.from_eps,
            c.to_eps,
            c.reoptimised,
            c.nlml_before,
            c.nlml_after,
            100.0 * c.cost()
        );
        if !c.within_budget {
            println!(
                "                warning: no jitter up to {:.0e} s2 cured the export within {:.0}%                  of the training NLML; this is the cheapest cure (try fewer basis functions,                  --m)",
                sgp_trainer::export::cure::MAX_CURE_EPS,
                100.0 * sgp_trainer::export::cure::MAX_CURE_COST
            );
        }
    }
    let f = &exported.fidelity;
    if model.link == sgp_runtime::Link::Probit {
        println!(
            "runtime check   worst class-probability deviation {:.1e} (limit {:.0e}), worst \
             latent variance deviation {:.1e} (limit {VARIANCE_TOLERANCE:.0e}) over {} points",
            f.worst_mean,
            sgp_trainer::export::PROBABILITY_TOLERANCE,
            f.worst_variance,
            f.points
        );
    } else {
        println!(
            "runtime check   worst mean deviation {:.1e} x predictive sd ({:.2} of the limit: \
         {MEAN_TOLERANCE_SD:.0e} x sd, at least {MEAN_TOLERANCE_FLOOR:.0e} x y_scale), worst \
         variance deviation {:.1e} (limit {VARIANCE_TOLERANCE:.0e}) over {} points",
            f.worst_mean_sd, f.worst_mean_ratio, f.worst_variance, f.points
        );
    }
    match &exported.product_refused {
        None => println!("variance form   product: |C k|^2, one triangular product on the device"),
        Some(why) => println!(
            "variance form   solves (forward substitutions): the cheaper product form was \
             refused: {why}"
        ),
    }
    println!(
        "blob            {} ({} bytes)",
        out.display(),
        exported.blob.len()
    );
}
