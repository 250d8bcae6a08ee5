//! `sgp fit`: the options ([`FitArgs`], as library parameters in
//! [`params`]) and the dispatch by kind of fit. Each kind reads, fits,
//! exports and reports in a module of its own: one target, a regression
//! or a binary classification ([`single`]); a regression on a file too
//! large for memory ([`streamed`]); several outputs ([`outputs`]); `K > 2`
//! classes ([`classes`]). [`data`] reads the training data and decides
//! the task; [`summary`] prints what a single fit did.

mod classes;
mod data;
mod outputs;
mod params;
mod single;
mod streamed;
mod summary;

use std::path::PathBuf;

use sgp_runtime::Kernel;
use sgp_trainer::data::multi_target::parse_target_list;
use sgp_trainer::fit::gplasso::gplasso_path;
use sgp_trainer::fit::ivm::IvmPosterior;
use sgp_trainer::fit::{
    FitParams, HyperInit, InitMethod, Method, DEFAULT_MAX_ITER, DEFAULT_RESTARTS, DEFAULT_STALL,
};
use sgp_trainer::model::inference::Approximation;
use sgp_trainer::model::kernel::kernel_by_name;
use sgp_trainer::Result;

use classes::fit_classes_command;
use data::training_data;
pub(crate) use data::warn_about_columns;
use outputs::fit_outputs_command;
use sgp_trainer::files::{check_outputs, Input};
use sgp_trainer::fit::applies;
use sgp_trainer::fit::task::{Classes, Task};
use single::finish_fit;
pub(crate) use single::fit_with_progress;
use streamed::streamed_fit;
use summary::print_path;

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
    /// Training data: CSV with a header row, or Parquet (`-`: standard
    /// input). A regression on more rows than a streamed fit samples
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
    /// spgp and gplasso on fewer than 2000 rows switch to VFE if VFE
    /// clearly predicts held-out rows better (the report says so).
    #[arg(long, value_enum)]
    objective: Option<Approximation>,
    /// Covariance function: se (squared exponential, infinitely smooth),
    /// or Matérn matern12, matern32, matern52 (rougher: continuous, once,
    /// twice differentiable). vsgp takes se only.
    #[arg(long, default_value = "se", value_parser = parse_kernel)]
    kernel: Kernel,
    /// spgp, spgp-hs, vsgp, spgp-dr, gplasso: no held-out choice on small
    /// data (spgp: keep the objective; the others: keep their own model
    /// even where plain SPGP predicts held-out rows better; gplasso also
    /// keeps FITC).
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
    /// Write a blob that learns on the device (format version 7): the
    /// whitened form of the posterior and the learning block that
    /// `Model::update` conditions on new observations (sparse regressions
    /// and the binary svgp classifier; docs/src/learning.md).
    #[arg(long)]
    updatable: bool,
    /// Print the fit report as JSON on stdout instead of the summary.
    #[arg(long)]
    json: bool,
    /// Also write golden values (Rust source) for firmware tests: f64
    /// predictions and their input gradients at 12 training rows and 4
    /// far-away points.
    #[arg(long)]
    golden: Option<PathBuf>,
}

pub(crate) fn fit_command(args: &FitArgs, given: &[&str], quiet: bool) -> Result<()> {
    let input = Input::open(&args.data)?;
    let mut outputs = vec![("--out", args.out.as_path())];
    if let Some(golden) = &args.golden {
        outputs.push(("--golden", golden.as_path()));
    }
    check_outputs(&outputs, &[&input])?;
    let task = args.task()?;
    if let Some(model) = args.model {
        // Before the data are read: settings of one task wait for it.
        applies::check(&[model], task.map(Task::from), given)?;
    }
    let targets = args
        .target
        .as_deref()
        .map(parse_target_list)
        .unwrap_or_default();
    if targets.len() > 1 {
        return fit_outputs_command(args, &input, &targets, given, quiet);
    }
    if !args.in_memory {
        if let Some(streamed) = streamed_fit(args, &input, given, quiet)? {
            return finish_fit(args, streamed, None, Vec::new());
        }
    }
    let asked: Vec<Method> = args.model.into_iter().collect();
    let (data, classes) = training_data(
        &input,
        args.target.as_deref(),
        task,
        args.positive.as_deref(),
        ("--model", &asked),
        quiet,
    )?;
    let model = match classes {
        Classes::Several => Method::Svgp,
        _ => args.model_for(&data),
    };
    let task_of = match classes {
        Classes::None => Task::Regression,
        _ => Task::Classification,
    };
    applies::check(&[model], Some(task_of), given)?;
    let labels = match classes {
        Classes::Several => return fit_classes_command(args, &data, quiet),
        Classes::Binary(labels) => labels,
        Classes::None => Vec::new(),
    };
    let params = args.params(model)?;
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

/// `--kernel`'s parser: the library's names, one home.
fn parse_kernel(name: &str) -> std::result::Result<Kernel, String> {
    kernel_by_name(name).map_err(|e| e.to_string())
}
