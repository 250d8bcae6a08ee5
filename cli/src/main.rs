//! `sgp`: fit sparse GP models from CSV, export them as blobs for
//! `sgp-runtime`, and predict, evaluate and inspect blobs. Thin: parsing and
//! printing here, everything else in the `sgp_trainer` library.

mod demo;
mod eval;
mod export;
mod fit;
mod inspect;
mod named;
mod plot;
mod predict;
mod replay;
mod sweep;
mod synth;
mod tools;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use nalgebra::{DMatrix, DVector};
use sgp_runtime::ModelSpec;
use sgp_trainer::export::artefact;
use sgp_trainer::export::codegen::Format;
use sgp_trainer::files::{check_outputs, write_atomic, Input};
use sgp_trainer::synth::dynamics::System;
use sgp_trainer::synth::{ClassShape, Shape};
use sgp_trainer::{Error, Result};

use demo::demo_command;
use eval::eval_command;
use export::export_command;
use fit::{fit_command, FitArgs};
use inspect::inspect_command;
use plot::plot_command;
use predict::predict_command;
use replay::{replay_command, ReplayArgs};
use sweep::{sweep_command, SweepArgs};
use synth::synth_command;

/// mimalloc instead of the system allocator: the sparse objectives allocate
/// and free blocks of a few hundred KB every evaluation, which glibc's hands
/// back to the kernel and faults in again each time.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "sgp",
    version,
    about = "Sparse Gaussian processes: fit on the host, run on the microcontroller"
)]
struct Cli {
    /// Print only results and warnings: no progress bars, notes or fit
    /// summary (`sgp fit -q` writes its blob and says only its warnings;
    /// `--json` still prints).
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Fit a model to a CSV file and export it as a blob.
    Fit(FitArgs),
    /// Predict with a blob: CSV `mean,variance` on stdout, one row per input row
    /// (a classifier: `class` and one `p_LABEL` per class; a binary one also
    /// `probability,latent_mean,latent_variance`).
    Predict {
        /// The model blob.
        #[arg(long)]
        model: PathBuf,
        /// CSV with a header, or Parquet (`-`: standard input); the model's
        /// input columns are picked by name.
        #[arg(long)]
        data: PathBuf,
    },
    /// RMSE, SMSE and NLPD of a blob on a CSV file, computed by the runtime.
    Eval {
        #[command(flatten)]
        input: BlobAndData,
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
        /// is reported for them, with whether the model fits; exit status 1
        /// when it does not (2 stays for unusable input).
        #[arg(long, value_name = "M[,G,D]")]
        capacity: Option<String>,
    },
    /// Write a blob as source code to compile into firmware: a C header for
    /// the sgp C library, or a Rust file to `include!`.
    Export {
        /// The model blob.
        #[arg(long)]
        model: PathBuf,
        /// `c`: the blob as an aligned array and its length; `rust`: a module
        /// with the blob, the input names and the `Model` type of its sizes.
        #[arg(long, value_parser = named::named::<Format>())]
        format: Format,
        /// Output file (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Rust module name and C identifier prefix (default: the blob's file
        /// name, e.g. `heater` for heater.sgp).
        #[arg(long)]
        name: Option<String>,
    },
    /// Write a synthetic data set as CSV (stdout): a smooth D-dimensional
    /// ridge function, one of the shapes users feed in, or a two-class set.
    Synth {
        /// Rows (at most what 4 GiB of numbers hold).
        #[arg(long, default_value_t = 500)]
        rows: usize,
        /// Input dimension of the ridge data (without --shape or --system).
        #[arg(long, default_value_t = 4)]
        dim: usize,
        /// A named shape instead of the ridge data (its own inputs).
        #[arg(long, value_parser = named::named::<Shape>())]
        shape: Option<Shape>,
        /// A dynamical system with several outputs instead (its own inputs
        /// and outputs: fit them with --target a,b).
        #[arg(long, value_parser = named::named::<System>(), conflicts_with = "shape")]
        system: Option<System>,
        /// A two-class set instead (its own inputs; labels 0 and 1 in
        /// column `class`).
        #[arg(long, value_parser = named::named::<ClassShape>(), conflicts_with_all = ["shape", "system"])]
        classes: Option<ClassShape>,
        /// Seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Write Parquet (f64 columns) to this file instead of CSV on
        /// standard output.
        #[arg(long)]
        parquet: Option<PathBuf>,
    },
    /// Fit a grid of models (family x M, x G for projected families) with
    /// `sgp fit`'s default settings, evaluate every blob on a test set
    /// through the runtime, and mark the most accurate one within a flash,
    /// RAM and instruction budget.
    ///
    /// Exit code 0 when a model was chosen, 3 when fitted models exist but
    /// none meets the budget (the table is printed all the same), 2 for
    /// bad input, 1 when every grid point failed otherwise.
    #[command(after_help = tools::cost::HELP)]
    Sweep(SweepArgs),
    /// Plot a blob's predictions on a CSV file as SVG: for one input the
    /// data, predictive mean, 2-sigma band and basis-function locations
    /// (a classifier: P(y = +1)); for more, predicted against actual and a
    /// calibration curve. A multi-output blob gets one row of panels per
    /// output, each against the column of its own name.
    Plot {
        #[command(flatten)]
        input: BlobAndData,
        /// Where to write the SVG (`-`: standard output).
        #[arg(long)]
        out: PathBuf,
    },
    /// Replay a CSV of observations, in order, through the device's own
    /// update of a blob that learns (`sgp fit --updatable`): the error of
    /// what it predicted for each row before learning it, per window of
    /// rows; a picture (--svg) and the model it ends as (--out).
    Replay(ReplayArgs),
    /// The SPGP paper's Figure 1 on built-in 1-D data (true
    /// hyperparameters, pseudo-inputs learned from a bunched start: FITC
    /// against PLV and the exact GP), then the fits `sgp fit` makes by
    /// default.
    Demo {
        /// Where to write the default sparse fit's blob.
        #[arg(long, default_value = "sgp-demo.sgp")]
        out: PathBuf,
        /// Number of pseudo-inputs in Figure 1 (the demo's own, whatever
        /// `sgp fit`'s default).
        #[arg(long, default_value_t = 20)]
        m: usize,
        /// Seed for the demo's data and fits (the demo's own: seed 1 draws
        /// the data the guide's figures come from).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print the table as JSON (`{"rows": [...]}`, Figure 1's first).
        #[arg(long)]
        json: bool,
    },
}

/// A blob and a CSV file holding its inputs and target (`eval`, `plot`).
#[derive(clap::Args)]
struct BlobAndData {
    /// The model blob.
    #[arg(long)]
    model: PathBuf,
    /// CSV with a header, or Parquet (`-`: standard input), holding the
    /// model's inputs and the target.
    #[arg(long)]
    data: PathBuf,
    /// Target column (default: the name stored in the blob).
    #[arg(long)]
    target: Option<String>,
}

/// What [`BlobAndData`] names, read: the data in raw units, columns picked
/// by name.
struct BlobOnData {
    blob: Vec<u8>,
    spec: ModelSpec,
    x: DMatrix<f64>,
    y: DVector<f64>,
}

/// What [`BlobAndData`] names, opened (each file once).
struct Opened {
    blob: Vec<u8>,
    spec: ModelSpec,
    data: Input,
}

impl BlobAndData {
    /// Refuses `--target` for a multi-output blob, whose outputs are each
    /// `what` against the column of their own name.
    fn refuse_target(&self, what: &str) -> Result<()> {
        if self.target.is_some() {
            return Err(Error::BadInput(format!(
                "--target does not apply to a multi-output blob: each output is {what} against \
                 the column of its own name"
            )));
        }
        Ok(())
    }

    /// Reads the blob and opens the data, refusing `out` (if any) when it
    /// is either of them, before any work.
    fn open(&self, out: Option<(&str, &Path)>) -> Result<Opened> {
        let model = Input::open(&self.model)?;
        let data = Input::open(&self.data)?;
        if let Some(out) = out {
            check_outputs(&[out], &[&model, &data])?;
        }
        let (blob, spec) = read_blob(&model)?;
        Ok(Opened { blob, spec, data })
    }
}

impl Opened {
    /// The model's inputs and the target (`target`, default the blob's).
    fn read(self, target: Option<&str>) -> Result<BlobOnData> {
        let target = target.unwrap_or(&self.spec.target_name);
        let (x, y) = self
            .data
            .read_inputs_and_target(&self.spec.input_names, target)?;
        Ok(BlobOnData {
            blob: self.blob,
            spec: self.spec,
            x,
            y,
        })
    }
}

/// Ignores SIGXFSZ: a file-size limit then fails a write with an error the
/// atomic writer cleans up after, instead of killing the process mid-write.
fn ignore_file_size_signal() {
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to SIG_IGN, before any thread
    // starts, has no memory-safety requirement.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// The flags given on the command line (not left at their defaults), as
/// `--name`.
fn given_flags(matches: &ArgMatches) -> Vec<String> {
    matches
        .ids()
        .filter(|id| {
            matches
                .try_get_raw(id.as_str())
                .is_ok_and(|raw| raw.is_some())
                && matches.value_source(id.as_str()) == Some(ValueSource::CommandLine)
        })
        .map(|id| format!("--{}", id.as_str().replace('_', "-")))
        .collect()
}

/// Every write to standard output or error checked, by one mechanism for
/// every subcommand: `println!` and `eprintln!` panic when a write fails,
/// and this hook turns that panic into the end of the process. A closed
/// pipe (`sgp inspect m.sgp | head -1`) ends it quietly with exit 0: the
/// reader has all it wanted, and files are written before the summaries
/// that follow them. Any other failure (`> /dev/full`) is an error, said on
/// standard error when it can be, with exit 1. Temporary files go first.
fn check_every_print() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        let stream = ["stdout", "stderr"]
            .into_iter()
            .find(|s| message.starts_with(&format!("failed printing to {s}: ")));
        match stream {
            Some(stream) => {
                let reason = &message[format!("failed printing to {stream}: ").len()..];
                end_on_a_failed_print(stream, print_failure(reason))
            }
            None => previous(info),
        }
    }));
}

/// The `io::Error` a failed print's panic message describes.
fn print_failure(reason: &str) -> std::io::Error {
    let code = reason
        .rsplit_once("(os error ")
        .and_then(|(_, n)| n.trim_end_matches(')').parse::<i32>().ok());
    match code {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => std::io::Error::other(reason.to_owned()),
    }
}

/// Ends the process after a failed write to `stream` (see
/// [`check_every_print`]).
fn end_on_a_failed_print(stream: &str, source: std::io::Error) -> ! {
    let _held = sgp_trainer::files::remove_temporaries();
    if source.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    let e = Error::Io {
        path: PathBuf::from(format!("<{stream}>")),
        source,
    };
    let _ = writeln!(std::io::stderr(), "sgp: error: {e}");
    std::process::exit(e.exit_code());
}

fn main() -> ExitCode {
    sgp_trainer::files::remove_temporaries_on_interrupt();
    ignore_file_size_signal();
    check_every_print();
    let matches = match Cli::command().try_get_matches() {
        Ok(matches) => matches,
        Err(e) => {
            // Help or version (standard output), checked here, where clap's
            // own exit would ignore a failed write; a usage error keeps its
            // exit code when standard error cannot say it.
            match e.print() {
                Err(source) if !e.use_stderr() => end_on_a_failed_print("stdout", source),
                _ => return ExitCode::from(e.exit_code() as u8),
            }
        }
    };
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let given = matches
        .subcommand()
        .map(|(_, sub)| given_flags(sub))
        .unwrap_or_default();
    let given: Vec<&str> = given.iter().map(String::as_str).collect();
    let result = run(&cli, &given).and_then(|()| std::io::stdout().flush().map_err(stdout_error));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // `sgp predict ... | head` closes the pipe early: the reader has all
        // it wanted, so that is not a failure worth a message.
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            // Unsaid when standard error fails too; the exit code stays.
            let _ = writeln!(std::io::stderr(), "sgp: error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

fn run(cli: &Cli, given: &[&str]) -> Result<()> {
    match &cli.command {
        Command::Fit(args) => fit_command(args, given, cli.quiet),
        Command::Predict { model, data } => predict_command(model, data),
        Command::Eval { input, json } => eval_command(input, *json),
        Command::Inspect {
            model,
            json,
            capacity,
        } => inspect_command(model, *json, capacity.as_deref()),
        Command::Export {
            model,
            format,
            out,
            name,
        } => export_command(model, *format, out.as_deref(), name.as_deref()),
        Command::Synth {
            rows,
            dim,
            shape,
            system,
            classes,
            seed,
            parquet,
        } => synth_command(
            synth::SynthArgs {
                rows: *rows,
                dim: *dim,
                shape: *shape,
                system: *system,
                classes: *classes,
                seed: *seed,
                parquet: parquet.as_deref(),
            },
            given,
        ),
        Command::Demo { out, m, seed, json } => demo_command(out, *m, *seed, *json),
        Command::Sweep(args) => sweep_command(args, given, cli.quiet),
        Command::Plot { input, out } => plot_command(input, out),
        Command::Replay(args) => replay_command(args),
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

/// A number for people: fixed point in the usual range, scientific notation
/// where fixed point would show only zeros or too many digits.
fn number(v: f64) -> String {
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e6).contains(&a) {
        format!("{v:.4e}")
    } else {
        format!("{v:.6}")
    }
}

/// The largest blob read: a model is kilobytes to megabytes; a larger file
/// is not one (and is not read into memory).
const MAX_BLOB_BYTES: u64 = 1 << 30;

/// The file and its description: a blob's, or a container's first
/// member's (whose inputs are every member's; `export::artefact` reads
/// the rest).
fn read_blob(model: &Input) -> Result<(Vec<u8>, ModelSpec)> {
    let blob = model.read_all(MAX_BLOB_BYTES)?;
    let first = if artefact::is_container(&blob) {
        sgp_runtime::Container::parse(&blob).and_then(|container| {
            ModelSpec::from_bytes(container.member(0).ok_or(sgp_runtime::Error::Malformed)?)
        })
    } else {
        ModelSpec::from_bytes(&blob)
    };
    let spec = first
        .map_err(|e| Error::BadInput(format!("{}: not a usable model blob: {e}", model.name())))?;
    Ok((blob, spec))
}

/// Names the file `source` in an error about a data row (the device's
/// refusal of an input).
fn in_file(source: &str) -> impl Fn(Error) -> Error + '_ {
    move |e| match e {
        Error::BadInput(m) if m.starts_with("data row") => {
            Error::BadInput(format!("{source}: {m}"))
        }
        other => other,
    }
}

/// A failed write to standard output (e.g. a closed pipe).
fn stdout_error(source: std::io::Error) -> Error {
    Error::Io {
        path: PathBuf::from("<stdout>"),
        source,
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic(path, bytes)
}

fn to_json(value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string_pretty(value).map_err(|e| Error::Numerical(format!("JSON: {e}")))
}
