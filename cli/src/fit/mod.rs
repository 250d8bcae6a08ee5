//! `sgp fit`: the options ([`FitArgs`], as library parameters in
//! [`params`]) make the library's [`Job`] (read, fit, export: one target,
//! several outputs or `K` classes, in memory or streamed from a large
//! file), shown with progress bars ([`streamed`]); [`run`] writes the
//! blobs and [`summary`] prints what it did.

mod params;
mod run;
mod settings;
mod streamed;
mod summary;

use std::path::{Path, PathBuf};

use sgp_trainer::data::multi_target::parse_target_list;
use sgp_trainer::files::Input;
use sgp_trainer::fit::task::Task;
use sgp_trainer::fit::Method;
use sgp_trainer::job::{Job, Read, Source, Streaming};
use sgp_trainer::options::settings::stated;
use sgp_trainer::options::ModelChoice;
use sgp_trainer::{Error, Result};

use run::finish;
pub(crate) use settings::table;
use settings::Settings;
use streamed::Bars;
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
    // Training data.
    #[arg(long, help = format!("Training data: CSV with a header row, Parquet, or a directory \
        of Parquet files (`-`: standard input). A regression on more than {} rows is fitted \
        on a growing random subset and conditioned on every row in a second pass, in memory \
        independent of the file's size (docs/src/large-data.md)",
        stated("streamed_above").unwrap_or_default()))]
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
    /// The fit's settings (`--positive` and `--path` among them).
    #[command(flatten)]
    settings: Settings,
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
    let lasso_path = args.settings.switch("--path");
    if lasso_path && options.model != Some(ModelChoice::Family(Method::Gplasso)) {
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
        positive: args.settings.text("--positive").map(str::to_owned),
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
    let path = match lasso_path {
        true => Job::lasso_path(&request, &data)?,
        false => None,
    };
    if let Some(path) = path.as_ref().filter(|_| !args.json) {
        print_path(path);
    }
    let mut bars = Bars::in_memory(quiet_bars);
    let fitted = job.fit_request(data, &request, &mut |p| bars.show(p));
    bars.clear();
    finish(args, job.export(fitted?)?, path, quiet)
}

/// The files `sgp fit` writes, by flag: `--out` and `--golden`, and for
/// several targets each output's own golden file (`separate_path`), which
/// it may get.
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
        // `--out` is one file either way; the golden values are per output.
        if let Some(golden) = &args.golden {
            for name in &names {
                paths.push(("--golden", separate_path(golden, name)));
            }
        }
    }
    paths
}

/// Where output `target`'s own blob goes when each output gets its own
/// model: `arm.sgp` and `ex` give `arm.ex.sgp` (`arm` gives `arm.ex`).
/// Always a file beside `out`, whatever the target's name: a path
/// separator or control character in it becomes `_`.
///
/// ```text
/// d/arm.sgp, ex   -> d/arm.ex.sgp
/// d/arm.sgp, ../x -> d/arm..._x.sgp
/// ```
pub(crate) fn separate_path(out: &Path, target: &str) -> PathBuf {
    let unsafe_char =
        |c: char| std::path::is_separator(c) || c == '/' || c == '\\' || c.is_control();
    let name: String = target
        .chars()
        .map(|c| if unsafe_char(c) { '_' } else { c })
        .collect();
    let stem = out.file_stem().unwrap_or_default().to_string_lossy();
    let file = match out.extension() {
        Some(ext) => format!("{stem}.{name}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{name}"),
    };
    out.with_file_name(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_separate_path_stays_beside_the_output() {
        let out = Path::new("models/arm.sgp");
        for (target, file) in [
            ("ex", "arm.ex.sgp"),
            ("speed m s", "arm.speed m s.sgp"),
            ("v1.2", "arm.v1.2.sgp"),
            ("a/b", "arm.a_b.sgp"),
            ("a\\b", "arm.a_b.sgp"),
            ("../../etc/x", "arm..._.._etc_x.sgp"),
            ("/abs", "arm._abs.sgp"),
            ("..", "arm....sgp"),
            ("new\nline", "arm.new_line.sgp"),
            ("", "arm..sgp"),
        ] {
            let path = separate_path(out, target);
            assert_eq!(path, Path::new("models").join(file), "{target:?}");
            assert_eq!(path.parent(), out.parent(), "{target:?}");
            assert_eq!(path.components().count(), 2, "{target:?}");
        }
        assert_eq!(separate_path(Path::new("arm"), "a/b"), Path::new("arm.a_b"));
    }
}
