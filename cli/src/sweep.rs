//! `sgp sweep`: a grid of models against a device budget.

use std::path::PathBuf;

use crate::tools::sweep::{
    grid, iteration_total, parse_bytes, sweep, Budget, SweepProgress, SweepSpec, TestSet,
};
use sgp_runtime::Kernel;
use sgp_trainer::data::TargetKind;
use sgp_trainer::files::{check_outputs, Input};
use sgp_trainer::fit::task::Task;
use sgp_trainer::fit::Method;
use sgp_trainer::job::{Job, Read, Source, Streaming};
use sgp_trainer::options::settings::{self, stated};
use sgp_trainer::options::{Options, DEFAULT_SEED};
use sgp_trainer::{Error, Result};

use super::fit::{table, LinkArg};
use super::named::help;
use super::{progress_bar, to_json, write_file};

#[derive(clap::Args)]
pub(crate) struct SweepArgs {
    /// Training data: CSV with a header row, or Parquet (`-`: standard
    /// input).
    #[arg(long)]
    data: PathBuf,
    /// Test data with the same columns (in any order).
    #[arg(long)]
    test: PathBuf,
    /// Target column (default: the last column); all others are inputs.
    /// Several, comma-separated (a,b,c): one model for all of them on one
    /// basis per grid point, ranked by the sum of the outputs' test NLPDs.
    #[arg(long)]
    target: Option<String>,
    /// Model families, comma-separated (default: spgp,vsgp for a
    /// regression, svgp for a classification). exact is one row whatever
    /// --m.
    #[arg(long, value_parser = crate::named::named::<Method>(), value_delimiter = ',')]
    models: Option<Vec<Method>>,
    #[arg(long, value_delimiter = ',', default_value = "8,16,32,64",
        value_parser = table::<usize>("--m"), help = grid_help("--m"))]
    m: Vec<usize>,
    #[arg(long, value_delimiter = ',', value_parser = table::<usize>("--dim"),
        help = grid_help("--dim"))]
    dim: Vec<usize>,
    // Covariance functions.
    #[arg(long, value_parser = crate::named::named::<Kernel>(), value_delimiter = ',',
        help = format!("Covariance functions, comma-separated (e.g. se,matern32): one grid \
        point per kernel (se only for {}) [default: {}]", stated("se_only").unwrap_or_default(),
        stated("--kernel").unwrap_or_default()))]
    kernel: Vec<Kernel>,
    /// Likelihood of the target: identity (regression) or probit (binary
    /// classification). Default: decided from the target as `sgp fit`
    /// decides it (text labels or two values classify).
    #[arg(long, value_enum)]
    link: Option<LinkArg>,
    #[arg(long, allow_negative_numbers = true, help = help("--positive"))]
    positive: Option<String>,
    /// Flash budget: largest blob in bytes (K and M suffixes: 64K).
    #[arg(long, value_parser = parse_bytes)]
    flash: Option<usize>,
    /// RAM budget: largest `Model<M, G, D>` in bytes (K and M suffixes;
    /// several targets: `Model<M, G, D, P>`).
    #[arg(long, value_parser = parse_bytes)]
    ram: Option<usize>,
    /// Time budget: most Cortex-M4 instructions per prediction (estimated:
    /// see below).
    #[arg(long)]
    instructions: Option<u64>,
    #[arg(long, value_parser = table::<u64>("--seed"), help = help("--seed"))]
    seed: Option<u64>,
    /// Print the rows as JSON instead of the table.
    #[arg(long)]
    json: bool,
    /// Write the chosen model's blob here.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// The line of help of the table's setting `flag` for a sweep's list of
/// its values (the default, if any, is the sweep's own).
fn grid_help(flag: &str) -> String {
    let Some(setting) = settings::setting(flag) else {
        unreachable!("{flag} is a setting of the library's table")
    };
    format!(
        "{}. Comma-separated: one grid point per value",
        setting.help()
    )
}

pub(crate) fn sweep_command(args: &SweepArgs, given: &[&str], quiet: bool) -> Result<()> {
    let seed = args.seed.unwrap_or(DEFAULT_SEED);
    let asked = args.link.map(|link| match link {
        LinkArg::Identity => Task::Regression,
        LinkArg::Probit => Task::Classification,
    });
    let data_input = Input::open(&args.data)?;
    let test_input = Input::open(&args.test)?;
    if let Some(out) = &args.out {
        check_outputs(&[("--out", out)], &[&data_input, &test_input])?;
    }
    // Several targets with a classification are refused by the job's
    // read, before any row.
    let job = Job {
        target: args.target.clone(),
        task: asked,
        positive: args.positive.clone(),
        streaming: Streaming::Never,
        compared: Some(args.models.clone().unwrap_or_default()),
        ..Job::new(Options::default(), Source::File(data_input))
    };
    let Read::InMemory(train) = job.read(&mut |_| {})? else {
        unreachable!("a job that never streams reads into memory")
    };
    if !quiet {
        for note in &train.notes {
            eprintln!("sgp: {note}");
        }
    }
    if let TargetKind::Classes { count } = train.outputs[0].target {
        let data = &train.outputs[0];
        return Err(Error::BadInput(format!(
            "{}: target column '{}' holds {count} classes: sgp sweep compares binary classifiers \
             (--positive LABEL sweeps one class against the rest; sgp fit fits all of them)",
            data.source, data.target_name,
        )));
    }
    // Warnings stay under --quiet: it drops notes and progress only.
    for warning in train.warnings() {
        eprintln!("sgp: warning: {warning}");
    }
    let task = train.task();
    let models = args.models.clone().unwrap_or_else(|| task.compared());
    settings::check(&models, Some(task), given)?;
    let spec = SweepSpec {
        models,
        m: args.m.clone(),
        dims: args.dim.clone(),
        kernels: args.kernel.clone(),
        seed,
    };
    let points = grid(&spec, train.outputs.as_slice())?;
    let test = TestSet::read(&test_input, train.outputs.as_slice())?;
    let budget = Budget {
        flash: args.flash,
        ram: args.ram,
        instructions: args.instructions,
    };
    let bar = progress_bar(quiet, iteration_total(&points, seed), "sweep");
    bar.set_message(format!("0/{} fits done", points.len()));
    let on_progress = |p: SweepProgress| match p {
        SweepProgress::Iterations(n) => bar.inc(n),
        SweepProgress::Finished { done, total } => {
            bar.set_message(format!("{done}/{total} fits done"))
        }
    };
    let result = sweep(&train, &test, &points, seed, budget, &on_progress);
    bar.finish_and_clear();
    // The blob first: a reader that closes the pipe early (`| head`)
    // must not cost the file.
    let written = match (&args.out, result.chosen_blob()) {
        (Some(out), Some(blob)) => {
            write_file(out, blob)?;
            Some(out)
        }
        _ => None,
    };
    if args.json {
        println!("{}", to_json(&result)?);
    } else {
        println!("{result}");
        if let Some(out) = written {
            println!("blob of the chosen model written to {}", out.display());
        }
    }
    result.outcome()
}
