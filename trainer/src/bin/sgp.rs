//! `sgp`: fit sparse GP models from CSV, export them as blobs for
//! `sgp-runtime`, and predict, evaluate and inspect blobs. Thin: parsing and
//! printing here, everything else in the `sgp_trainer` library.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use nalgebra::DMatrix;
use sgp_runtime::ModelSpec;
use sgp_trainer::data::{read_inputs, read_inputs_and_target, Dataset};
use sgp_trainer::demo::{bunched_left, demo_data, demo_test_set, synthetic, DEMO_NOISE_STD};
use sgp_trainer::evaluate::{evaluate_blob, figures, Evaluation};
use sgp_trainer::export::{
    export, golden_points, golden_rust, Exported, MEAN_TOLERANCE_FLOOR, MEAN_TOLERANCE_SD,
    VARIANCE_TOLERANCE,
};
use sgp_trainer::fit::{fit, FitParams, FitReport, HyperInit, Method, PseudoInit};
use sgp_trainer::inspect::{parse_capacity, summarise};
use sgp_trainer::model::TrainedModel;
use sgp_trainer::optimise::{OptimiseOptions, Progress};
use sgp_trainer::{Error, Result};

#[derive(Parser)]
#[command(
    name = "sgp",
    version,
    about = "Sparse Gaussian processes: fit on the host, run on the microcontroller"
)]
struct Cli {
    /// Print only results: no progress bars or notes.
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Fit a model to a CSV file and export it as a blob.
    Fit(FitArgs),
    /// Predict with a blob: CSV `mean,variance` on stdout, one row per input row.
    Predict {
        /// The model blob.
        #[arg(long)]
        model: PathBuf,
        /// CSV with a header; the model's input columns are picked by name.
        #[arg(long)]
        data: PathBuf,
    },
    /// RMSE, SMSE and NLPD of a blob on a CSV file, computed by the runtime.
    Eval {
        /// The model blob.
        #[arg(long)]
        model: PathBuf,
        /// CSV with a header holding the model's inputs and the target.
        #[arg(long)]
        data: PathBuf,
        /// Target column (default: the name stored in the blob).
        #[arg(long)]
        target: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Describe a blob: kind, sizes, hyperparameters, flash and RAM.
    Inspect {
        /// The model blob.
        model: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Capacities `M` or `M,G,D` of the device's `Model<M, G, D>`: RAM
        /// is reported for them, with whether the model fits.
        #[arg(long, value_name = "M[,G,D]")]
        capacity: Option<String>,
    },
    /// Write a synthetic D-dimensional regression data set as CSV (stdout).
    Synth {
        /// Rows.
        #[arg(long, default_value_t = 500)]
        rows: usize,
        /// Input dimension.
        #[arg(long, default_value_t = 4)]
        dim: usize,
        /// Seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Fit exact GP and SPGP on built-in 1-D data and compare them.
    Demo {
        /// Where to write the SPGP blob.
        #[arg(long, default_value = "sgp-demo.sgp")]
        out: PathBuf,
        /// Number of pseudo-inputs.
        #[arg(long, default_value_t = 20)]
        m: usize,
        /// Seed for data and fit.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum ModelArg {
    /// Exact GP on at most --max-points rows.
    Exact,
    /// SPGP / FITC with --m pseudo-inputs.
    Spgp,
}

#[derive(Clone, Copy, ValueEnum)]
enum InitArg {
    /// A random subset of the training inputs.
    Random,
    /// k-means centres.
    Kmeans,
}

#[derive(Clone, Copy, ValueEnum)]
enum InitHyperArg {
    /// From the data's scales.
    Scales,
    /// From an exact GP on a random subset.
    Exact,
}

#[derive(clap::Args)]
struct FitArgs {
    /// CSV with a header row.
    #[arg(long)]
    data: PathBuf,
    /// Target column (default: the last column); all others are inputs.
    #[arg(long)]
    target: Option<String>,
    /// Model family.
    #[arg(long, value_enum, default_value = "spgp")]
    model: ModelArg,
    /// Number of pseudo-inputs (spgp).
    #[arg(long, default_value_t = 20)]
    m: usize,
    /// Seed for every random choice.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Largest number of optimiser iterations.
    #[arg(long, default_value_t = 200)]
    max_iter: u64,
    /// Pseudo-input initialisation.
    #[arg(long, value_enum, default_value = "random")]
    init: InitArg,
    /// Hyperparameter initialisation.
    #[arg(long, value_enum, default_value = "scales")]
    init_hyper: InitHyperArg,
    /// Rows an exact GP is fitted on at most (a random subset if more).
    #[arg(long, default_value_t = 1000)]
    max_points: usize,
    /// Output blob.
    #[arg(long)]
    out: PathBuf,
    /// Write the blob even if the f32 runtime deviates beyond tolerance.
    #[arg(long)]
    force: bool,
    /// Also write golden values (Rust source) for firmware tests: f64
    /// predictions at 12 training rows and 4 far-away points.
    #[arg(long)]
    golden: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sgp: error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

fn run(cli: &Cli) -> Result<()> {
    match &cli.command {
        Command::Fit(args) => fit_command(args, cli.quiet),
        Command::Predict { model, data } => predict_command(model, data),
        Command::Eval {
            model,
            data,
            target,
            json,
        } => eval_command(model, data, target.as_deref(), *json),
        Command::Inspect {
            model,
            json,
            capacity,
        } => inspect_command(model, *json, capacity.as_deref()),
        Command::Synth { rows, dim, seed } => synth_command(*rows, *dim, *seed),
        Command::Demo { out, m, seed } => demo_command(out, *m, *seed, cli.quiet),
    }
}

/// A progress bar over optimiser iterations, hidden with --quiet.
fn progress_bar(quiet: bool, max_iter: u64, label: &str) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(max_iter);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>6} [{bar:30}] {pos}/{len} iterations  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix(label.to_string());
    bar
}

fn fit_with_progress(
    data: &Dataset,
    params: &FitParams,
    quiet: bool,
    label: &str,
) -> Result<(TrainedModel, FitReport)> {
    let bar = progress_bar(quiet, params.optimiser.max_iter, label);
    let mut on_progress = |p: Progress| {
        bar.set_position(p.iteration);
        bar.set_message(format!("NLML {:.4}", p.best_value));
    };
    let result = fit(data, params, &mut on_progress);
    bar.finish_and_clear();
    result
}

fn fit_command(args: &FitArgs, quiet: bool) -> Result<()> {
    let data = Dataset::from_csv(&args.data, args.target.as_deref())?;
    if !quiet {
        for &j in &data.constant_inputs {
            eprintln!(
                "sgp: warning: input '{}' is constant in the training data (value {}): the \
                 model ignores it",
                data.input_names[j], data.transform.x_mean[j]
            );
        }
        for warning in sgp_trainer::precision::for_dataset(&data) {
            eprintln!("sgp: warning: {warning}");
        }
    }
    let params = FitParams {
        method: match args.model {
            ModelArg::Exact => Method::Exact,
            ModelArg::Spgp => Method::Spgp,
        },
        m: args.m,
        seed: args.seed,
        optimiser: OptimiseOptions {
            max_iter: args.max_iter,
            ..OptimiseOptions::default()
        },
        pseudo_init: match args.init {
            InitArg::Random => PseudoInit::RandomSubset,
            InitArg::Kmeans => PseudoInit::KMeans,
        },
        hyper_init: match args.init_hyper {
            InitHyperArg::Scales => HyperInit::DataScales,
            InitHyperArg::Exact => HyperInit::ExactSubset,
        },
        max_points: args.max_points,
    };
    let (model, report) = fit_with_progress(&data, &params, quiet, "fit")?;
    let exported = export(&model, &data.raw_x(), args.force)?;
    write_file(&args.out, &exported.blob)?;
    if let Some(path) = &args.golden {
        let points = golden_points(&model, &data.raw_x(), 12, 4);
        write_file(path, golden_rust(&model, &points)?.as_bytes())?;
    }
    print_fit_summary(&model, &report, &exported, &args.out);
    Ok(())
}

fn print_fit_summary(model: &TrainedModel, report: &FitReport, exported: &Exported, out: &Path) {
    println!(
        "model           {} (M = {}, {} training rows)",
        model.kind.name(),
        model.n_basis(),
        report.rows
    );
    println!(
        "NLML            {:.4} -> {:.4} in {} iterations ({} evaluations, {:.2} s; {})",
        report.initial_nlml,
        report.nlml,
        report.iterations,
        report.evaluations,
        report.elapsed.as_secs_f64(),
        report.stop_reason
    );
    let l: Vec<String> = report
        .lengthscales
        .iter()
        .map(|v| format!("{v:.4}"))
        .collect();
    println!("length scales   {}", l.join(", "));
    if !report.ignored_inputs.is_empty() {
        println!(
            "ignored inputs  {} (constant in the training data; no length scale)",
            report.ignored_inputs.join(", ")
        );
    }
    println!("signal variance {:.6}", report.signal_variance);
    println!(
        "noise variance  {:.6}{}",
        report.noise_variance,
        if report.noise_on_floor {
            "  (on the noise floor: FITC absorbed the noise)"
        } else {
            ""
        }
    );
    if report.jitter_escalations > 0 {
        println!(
            "jitter          raised {} times to factorise",
            report.jitter_escalations
        );
    }
    let f = &exported.fidelity;
    println!(
        "runtime check   worst mean deviation {:.1e} x predictive sd ({:.2} of the limit: \
         {MEAN_TOLERANCE_SD:.0e} x sd, at least {MEAN_TOLERANCE_FLOOR:.0e} x y_scale), worst \
         variance deviation {:.1e} (limit {VARIANCE_TOLERANCE:.0e}) over {} points",
        f.worst_mean_sd, f.worst_mean_ratio, f.worst_variance, f.points
    );
    println!(
        "blob            {} ({} bytes)",
        out.display(),
        exported.blob.len()
    );
}

fn read_blob(path: &Path) -> Result<(Vec<u8>, ModelSpec)> {
    let blob = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let spec = ModelSpec::from_bytes(&blob).map_err(|e| {
        Error::BadInput(format!("{}: not a usable model blob: {e}", path.display()))
    })?;
    Ok((blob, spec))
}

/// A failed write to standard output (e.g. a closed pipe).
fn stdout_error(source: std::io::Error) -> Error {
    Error::Io {
        path: PathBuf::from("<stdout>"),
        source,
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn predict_command(model: &Path, data: &Path) -> Result<()> {
    let (blob, spec) = read_blob(model)?;
    let x = read_inputs(data, &spec.input_names)?;
    let predictions = sgp_trainer::device::predict_all(&blob, &x)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let io = stdout_error;
    match spec.shape.link {
        sgp_runtime::Link::Identity => writeln!(out, "mean,variance").map_err(io)?,
        sgp_runtime::Link::Probit => writeln!(out, "mean,variance,probability").map_err(io)?,
    }
    for p in predictions {
        match p.probability {
            Some(prob) => writeln!(out, "{},{},{}", p.mean, p.variance, prob),
            None => writeln!(out, "{},{}", p.mean, p.variance),
        }
        .map_err(io)?;
    }
    out.flush().map_err(io)
}

fn eval_command(model: &Path, data: &Path, target: Option<&str>, json: bool) -> Result<()> {
    let (blob, spec) = read_blob(model)?;
    let target = target.unwrap_or(&spec.target_name);
    let (x, y) = read_inputs_and_target(data, &spec.input_names, target)?;
    let evaluation = evaluate_blob(&blob, &x, &y)?;
    if json {
        println!("{}", to_json(&evaluation)?);
    } else {
        print_evaluation(&evaluation);
    }
    Ok(())
}

fn print_evaluation(e: &Evaluation) {
    println!("rows        {}", e.rows);
    println!("RMSE        {:.6}", e.rmse);
    println!("MSE         {:.6}", e.mse);
    println!("SMSE        {:.6}", e.smse);
    println!("mean NLPD   {:.6}", e.nlpd);
    println!("95% cover   {:.3}", e.coverage_95);
}

fn to_json(value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string_pretty(value).map_err(|e| Error::Numerical(format!("JSON: {e}")))
}

fn inspect_command(model: &Path, json: bool, capacity: Option<&str>) -> Result<()> {
    let (blob, spec) = read_blob(model)?;
    let capacity = capacity.map(|c| parse_capacity(c, &spec)).transpose()?;
    let summary = summarise(&spec, blob.len(), capacity);
    if json {
        println!("{}", to_json(&summary)?);
    } else {
        println!("{summary}");
    }
    Ok(())
}

/// One row of the demo's comparison table.
struct DemoRow {
    name: String,
    seconds: f64,
    nlml: f64,
    trainer: Evaluation,
    device: Evaluation,
    blob_bytes: usize,
}

fn demo_command(out: &Path, m: usize, seed: u64, quiet: bool) -> Result<()> {
    let data = demo_data(200, seed)?;
    let (test_x, test_y) = demo_test_set(400, seed.wrapping_add(1000));
    println!(
        "demo: 200 noisy samples of sin(2x) + 0.4 cos(5x) + 0.3x on [0, 6] (noise std {DEMO_NOISE_STD}), \
         400 test points"
    );

    let exact_params = FitParams {
        method: Method::Exact,
        seed,
        ..FitParams::default()
    };
    let start_z = bunched_left(&data, m);
    let spgp_params = FitParams {
        method: Method::Spgp,
        m,
        seed,
        pseudo_init: PseudoInit::Given(start_z.clone()),
        ..FitParams::default()
    };
    let mut rows = Vec::new();
    let mut spgp_blob = Vec::new();
    let mut final_z = DMatrix::zeros(0, 1);
    for (name, params) in [("exact GP", &exact_params), ("SPGP", &spgp_params)] {
        let started = Instant::now();
        let (model, report) = fit_with_progress(&data, params, quiet, name)?;
        let seconds = started.elapsed().as_secs_f64();
        let exported = export(&model, &test_x, false)?;
        let reference = model.predict_raw(&test_x)?;
        let trainer = figures(
            reference.mean.as_slice(),
            reference.var.as_slice(),
            test_y.as_slice(),
        );
        let device = evaluate_blob(&exported.blob, &test_x, &test_y)?;
        let name = format!("{name} (M = {})", model.n_basis());
        if params.method == Method::Spgp {
            spgp_blob = exported.blob.clone();
            final_z = data.transform.unapply_x(&model.form.basis.centres);
        }
        rows.push(DemoRow {
            name,
            seconds,
            nlml: report.nlml,
            trainer,
            device,
            blob_bytes: exported.blob.len(),
        });
    }
    write_file(out, &spgp_blob)?;

    println!();
    println!(
        "{:<18} {:>8} {:>10} {:>10} {:>10} {:>12} {:>12} {:>8}",
        "model", "fit s", "NLML", "RMSE f64", "NLPD f64", "RMSE device", "NLPD device", "blob B"
    );
    for r in &rows {
        println!(
            "{:<18} {:>8.2} {:>10.3} {:>10.4} {:>10.4} {:>12.4} {:>12.4} {:>8}",
            r.name,
            r.seconds,
            r.nlml,
            r.trainer.rmse,
            r.trainer.nlpd,
            r.device.rmse,
            r.device.nlpd,
            r.blob_bytes
        );
    }
    let positions = |z: &DMatrix<f64>| {
        let mut v: Vec<f64> = z.iter().copied().collect();
        v.sort_by(f64::total_cmp);
        v.iter()
            .map(|p| format!("{p:.2}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!();
    println!(
        "pseudo-inputs before: {}",
        positions(&data.transform.unapply_x(&start_z))
    );
    println!("pseudo-inputs after:  {}", positions(&final_z));
    println!();
    println!(
        "SPGP blob written to {} — try `sgp inspect {}`",
        out.display(),
        out.display()
    );
    Ok(())
}

fn synth_command(rows: usize, dim: usize, seed: u64) -> Result<()> {
    if rows == 0 || dim == 0 {
        return Err(Error::BadInput(
            "--rows and --dim must be at least 1".into(),
        ));
    }
    let (x, y) = synthetic(rows, dim, seed);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let io = stdout_error;
    let header: Vec<String> = (1..=dim)
        .map(|j| format!("x{j}"))
        .chain(["y".into()])
        .collect();
    writeln!(out, "{}", header.join(",")).map_err(io)?;
    for (row, target) in x.row_iter().zip(y.iter()) {
        let cells: Vec<String> = row.iter().chain([target]).map(|v| format!("{v}")).collect();
        writeln!(out, "{}", cells.join(",")).map_err(io)?;
    }
    out.flush().map_err(io)
}
