//! `sgp fit`: the options ([`FitArgs`], as library parameters in
//! [`params`]) make the library's [`Job`] (read, fit, export: one target,
//! several outputs or `K` classes, in memory or streamed from a large
//! file), shown with progress bars ([`streamed`]); [`run`] writes the
//! blobs and [`summary`] prints what it did.

mod params;
mod run;
mod streamed;
mod summary;

use std::path::PathBuf;

use clap::builder::TypedValueParser;

use sgp_trainer::choose::Asked;
use sgp_trainer::data::multi_target::parse_target_list;
use sgp_trainer::files::{separate_path, Input};
use sgp_trainer::fit::gplasso::gplasso_path;
use sgp_trainer::fit::ivm::IvmPosterior;
use sgp_trainer::fit::{FitParams, HyperInit, InitMethod, Method};
use sgp_trainer::job::{Job, Read, Source, Streaming};
use sgp_trainer::model::inference::Approximation;
use sgp_trainer::options::defaults::stated;
use sgp_trainer::options::task::Task;
use sgp_trainer::options::{KernelChoice, ModelChoice, Options};
use sgp_trainer::{Error, Result};

use crate::named::with_default;
use run::finish;
use streamed::Bars;
use summary::print_path;

/// `sgp fit --model`: a family, or the choice among them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ModelArg {
    /// The family that predicts held-out rows best.
    Auto,
    /// This family.
    Family(Method),
}

/// `--model auto` in `--help`.
const AUTO_HELP: (&str, &str) = (
    sgp_trainer::choose::AUTO,
    "The family that predicts held-out rows best, and why",
);

impl From<Option<Method>> for ModelArg {
    fn from(family: Option<Method>) -> Self {
        family.map_or(ModelArg::Auto, ModelArg::Family)
    }
}

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
    // Training data.
    #[arg(long, help = format!("Training data: CSV with a header row, Parquet, or a directory \
        of Parquet files (`-`: standard input). A regression on more than {} rows is fitted \
        on a growing random subset and conditioned on every row in a second pass, in memory \
        independent of the file's size (docs/src/large-data.md)",
        stated("streamed above").unwrap_or_default()))]
    data: PathBuf,
    /// Fit on every row in memory, even when the file is large enough to
    /// be streamed.
    #[arg(long)]
    in_memory: bool,
    /// Target column (default: the last column); all others are inputs
    /// unless --inputs names them.
    #[arg(long)]
    target: Option<String>,
    /// Input columns, comma-separated, in the order the model takes them
    /// (default: every column but the targets).
    #[arg(long)]
    inputs: Option<String>,
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
    /// The fit's settings.
    #[command(flatten)]
    settings: Settings,
    /// gplasso: first print the lasso path up to --m (non-zeros, lambda,
    /// training objective, NLPD and RMSE on a held-out 20%) to choose M.
    #[arg(long)]
    path: bool,
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

/// The settings of a fit, as the library's [`Options`] name them (the
/// defaults are the library's).
#[derive(clap::Args)]
pub(crate) struct Settings {
    /// Model family (default: auto for a regression, svgp for a
    /// classification), or `auto`: the family that predicts held-out rows
    /// best, with the choice and its figures reported.
    #[arg(long, value_parser = crate::named::named_or::<Method>(AUTO_HELP).map(ModelArg::from))]
    model: Option<ModelArg>,
    // Number of basis functions.
    #[arg(long, allow_hyphen_values = true, value_parser = crate::named::count,
        help = with_default("Number of basis functions: pseudo-inputs, selected \
        training inputs (gplasso), the active set (ivm)", "--m"))]
    m: Option<usize>,
    /// Projected dimension G (spgp-dr, spgp-pca; required there, 1..=D).
    #[arg(long)]
    dim: Option<usize>,
    /// Rank of gplasso's incomplete Cholesky factor (default max(4 M, 100),
    /// at most N); at most this many basis points can be selected.
    #[arg(long)]
    rank: Option<usize>,
    /// gplasso: the paper's procedure: keep the hyperparameters of the
    /// exact GP on --max-points rows instead of re-optimising them (and the
    /// basis points) for the selected basis.
    #[arg(long)]
    fixed_hyperparameters: bool,
    /// gplasso: re-optimise the hyperparameters but keep the selected
    /// training inputs as the basis (by default the basis points move too).
    #[arg(long)]
    fixed_basis: bool,
    // Objective of a sparse fit.
    #[arg(long, value_parser = crate::named::named::<Approximation>(), help = format!(
        "Objective of a sparse fit: FITC (SPGP's likelihood) or VFE (Titsias' variational \
         bound, GPflow's SGPR). Without it: {}, but spgp, spgp-pca and gplasso switch to VFE if \
         VFE clearly predicts held-out rows better, weighed on at most {} of the rows (the \
         report says so)", stated("--objective").unwrap_or_default().to_uppercase(),
         stated("held-out rows").unwrap_or_default()))]
    objective: Option<Approximation>,
    // Covariance function.
    #[arg(long, value_parser = crate::named::named::<KernelChoice>(), help = with_default(
        "Covariance function; vsgp and a streamed fit take se only, and auto keeps se there \
         and for a classifier (docs/src/kernels.md)", "--kernel"))]
    kernel: Option<KernelChoice>,
    // No held-out comparisons.
    #[arg(long, help = format!("No held-out comparisons: the objective is FITC \
        unless --objective names it, spgp-hs, vsgp, spgp-dr and gplasso are not weighed \
        against plain SPGP, --model auto fits spgp, spgp-hs's prior strength on h is the fixed \
        {} (not chosen over folds), and several targets keep one basis",
        stated("spgp-hs prior").unwrap_or_default()))]
    no_held_out_choice: bool,
    // Starts of a sparse fit.
    #[arg(long, help = with_default("Starts of a sparse fit; each gets a short screening run \
        and the best is optimised to the end", "--restarts"))]
    restarts: Option<usize>,
    // Seed.
    #[arg(long, help = with_default("Seed for every random choice", "--seed"))]
    seed: Option<u64>,
    // Iteration cap.
    #[arg(long, help = with_default("Largest number of optimiser iterations of the final run \
        (vsgp, spgp-hs: of each of their two stages); most fits stop earlier, see --tol",
        "--max-iter"))]
    max_iter: Option<u64>,
    // Stall test.
    #[arg(long, help = with_default("Stop a fit (not ivm's) once its training objective fell \
        by less than TOL nats per row over the last 50 iterations (0: run to --max-iter)",
        "--tol"))]
    tol: Option<f64>,
    // Pseudo-input initialisation.
    #[arg(long, value_parser = crate::named::named::<InitMethod>(), help = with_default(
        "Pseudo-input initialisation of the first start", "--init"))]
    init: Option<InitMethod>,
    // Hyperparameter initialisation.
    #[arg(long, value_parser = crate::named::named::<HyperInit>(), help = with_default(
        "Hyperparameter initialisation", "--init-hyper"))]
    init_hyper: Option<HyperInit>,
    // Rows of an exact GP.
    #[arg(long, help = with_default("Rows an exact GP is fitted on at most (a random subset \
        if more); also the rows an IVM classifier learns its kernel on (0: every row)",
        "--max-points"))]
    max_points: Option<usize>,
    // The IVM's posterior.
    #[arg(long, value_parser = crate::named::named::<IvmPosterior>(), help = with_default(
        "ivm classifier: the posterior over the active set: the svgp bound's q(u) on every \
         training row, or the paper's, from the active rows' sites alone", "--ivm-posterior"))]
    ivm_posterior: Option<IvmPosterior>,
    /// Write a blob that learns on the device (format version 9): the
    /// covariance form of the posterior and the learning block that
    /// `Model::update` conditions on new observations (sparse regressions
    /// and the binary svgp classifier; docs/src/learning.md).
    #[arg(long)]
    updatable: bool,
    /// The same blob, bit for bit, from the same data and settings on any
    /// x86-64 or aarch64 CPU and at any thread count: products and solves
    /// in one fixed order, no fused multiply-adds (the guide's benchmarks,
    /// "Across machines", for what it costs).
    #[arg(long)]
    reproducible: bool,
}

impl Settings {
    /// The settings as the library's options.
    pub(crate) fn options(&self) -> Options {
        Options {
            model: self.model.map(|m| match m {
                ModelArg::Auto => ModelChoice::Auto,
                ModelArg::Family(f) => ModelChoice::Family(f),
            }),
            m: self.m,
            dim: self.dim,
            rank: self.rank,
            fixed_hyperparameters: self.fixed_hyperparameters,
            fixed_basis: self.fixed_basis,
            objective: self.objective,
            kernel: self.kernel,
            no_held_out_choice: self.no_held_out_choice,
            restarts: self.restarts,
            seed: self.seed,
            max_iter: self.max_iter,
            tol: self.tol,
            init: self.init,
            init_hyper: self.init_hyper,
            max_points: self.max_points,
            ivm_posterior: self.ivm_posterior,
            updatable: self.updatable,
            reproducible: self.reproducible,
        }
    }
}

pub(crate) fn fit_command(args: &FitArgs, given: &[&str], quiet: bool) -> Result<()> {
    args.settings.options().run(|| fit_any(args, given, quiet))
}

fn fit_any(args: &FitArgs, given: &[&str], quiet: bool) -> Result<()> {
    let source = if args.data.is_dir() {
        Source::Directory(args.data.clone())
    } else {
        Source::File(Input::open(&args.data)?)
    };
    let options = args.settings.options();
    if args.path && options.model != Some(ModelChoice::Family(Method::Gplasso)) {
        return Err(Error::BadInput(
            "--path does not apply to the model asked for: it is gplasso's lasso path (--model \
             gplasso)"
                .into(),
        ));
    }
    let job = Job {
        target: args.target.clone(),
        inputs: args.inputs(),
        task: args.task()?.map(Task::from),
        positive: args.positive.clone(),
        streaming: if args.in_memory {
            Streaming::Never
        } else {
            Streaming::IfLarge
        },
        force: args.force,
        outputs: output_paths(args),
        given: given.iter().map(ToString::to_string).collect(),
        ..Job::new(options, source)
    };
    let quiet_bars = quiet || args.json;
    let mut bars = Bars::streamed(quiet_bars);
    let read = job.read(&mut |p| bars.show(p));
    bars.clear();
    let data = match read? {
        Read::InMemory(data) => data,
        streamed => {
            let mut bars = Bars::streamed(quiet_bars);
            let fitted = job.fit(streamed, &mut |p| bars.show(p));
            bars.clear();
            return finish(args, job.export(fitted?)?, None, quiet);
        }
    };
    if !quiet {
        for note in &data.notes {
            eprintln!("sgp: {note}");
        }
    }
    let request = job.options.request(&data.outputs)?;
    let path = match &request.asked {
        Asked::Family(FitParams::Gplasso(p)) if args.path => {
            let (rows, stop) = gplasso_path(&data.outputs[0], p)?;
            if !args.json {
                print_path(&rows, stop, p.m);
            }
            Some(rows)
        }
        _ => None,
    };
    let mut bars = Bars::in_memory(quiet_bars);
    let fitted = job.fit_request(data, &request, &mut |p| bars.show(p));
    bars.clear();
    finish(args, job.export(fitted?)?, path, quiet)
}

/// The files `sgp fit` writes, by flag: `--out` and `--golden`, and for
/// several targets each output's own (`separate_path`), which it may get.
fn output_paths(args: &FitArgs) -> Vec<(&'static str, PathBuf)> {
    let mut paths = vec![("--out", args.out.clone())];
    if let Some(golden) = &args.golden {
        paths.push(("--golden", golden.clone()));
    }
    let targets = args
        .target
        .as_deref()
        .map(parse_target_list)
        .unwrap_or_default();
    if targets.len() > 1 {
        let mut names: Vec<&String> = targets.iter().collect();
        // A target named twice is refused when the data are read.
        names.sort();
        names.dedup();
        for i in 0..paths.len() {
            for name in &names {
                paths.push((paths[i].0, separate_path(&paths[i].1, name)));
            }
        }
    }
    paths
}
