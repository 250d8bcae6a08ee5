//! `sgp fit` of a regression on a file too large to hold in memory.

use indicatif::{ProgressBar, ProgressStyle};
use nalgebra::DMatrix;
use sgp_trainer::data::multi_target::parse_target_list;
use sgp_trainer::data::stream::{ReadProgress, TableFile};
use sgp_trainer::files::{check_outputs, check_outside, Input};
use sgp_trainer::fit::streamed::StreamedProgress;
use sgp_trainer::fit::streamed_file::{start_streamed, NotStreamed};
use sgp_trainer::fit::Fit;
use sgp_trainer::options::task::Task;
use sgp_trainer::options::ModelChoice;
use sgp_trainer::{Error, Result};

use crate::progress_bar;

use super::run::finish_fit;
use super::{FitArgs, TaskArg};

/// Fits a regression on a large file by the library's streamed fit
/// ([`start_streamed`]): `None` when the file is small enough to fit in
/// memory, or the fit asked for is not one that streams (a classification,
/// a model other than spgp); then the whole file is read.
/// Returns the fit and the raw inputs its export is checked at.
pub(crate) fn streamed_fit(
    args: &FitArgs,
    input: &Input,
    quiet: bool,
) -> Result<Option<(Fit, DMatrix<f64>)>> {
    if not_streamed(args)?.is_some() {
        // These are fitted in memory; the file is not opened here.
        return Ok(None);
    }
    let table =
        TableFile::from_input_columns(input, args.target.as_deref(), args.inputs().as_deref())?;
    Ok(fit_table(args, &table, quiet)?.ok())
}

/// Why the fit `args` ask for does not stream, if that is known before
/// the data are read.
fn not_streamed(args: &FitArgs) -> Result<Option<NotStreamed>> {
    let classification = args.task()? == Some(TaskArg::Classification) || args.positive.is_some();
    let targets = args.target.as_deref().map(parse_target_list);
    Ok(match args.settings.options().model {
        _ if targets.is_some_and(|t| t.len() > 1) => Some(NotStreamed::Outputs),
        _ if classification => Some(NotStreamed::Classification),
        Some(ModelChoice::Family(m)) if m.capabilities().not_streamed.is_some() => {
            Some(NotStreamed::Family(m))
        }
        _ => None,
    })
}

/// `sgp fit --data DIR`: a directory of Parquet files is one table
/// (`sgp_trainer::data::stream::directory`), read by the streamed fit
/// only; a fit that does not stream is refused, saying why.
pub(crate) fn fit_directory(args: &FitArgs, given: &[&str], quiet: bool) -> Result<()> {
    let dir = &args.data;
    let refused = |why: &dyn std::fmt::Display| {
        Error::BadInput(format!(
            "{}: a directory of Parquet files is read by the streamed fit only, and {why};              write its rows to one file to fit them otherwise",
            dir.display()
        ))
    };
    if args.in_memory {
        return Err(refused(&"--in-memory asks for a fit in memory"));
    }
    if let Some(why) = not_streamed(args)? {
        return Err(refused(&why));
    }
    let table = TableFile::open_columns(dir, args.target.as_deref(), args.inputs().as_deref())?;
    let mut outputs = vec![("--out", args.out.as_path())];
    if let Some(golden) = &args.golden {
        outputs.push(("--golden", golden.as_path()));
    }
    check_outputs(&outputs, &table.inputs())?;
    check_outside(&outputs, dir)?;
    let options = args.settings.options();
    options.check_applies(args.task()?.map(Task::from), given)?;
    match fit_table(args, &table, quiet)? {
        Ok((fit, check_x)) => finish_fit(args, fit, &check_x, None, quiet),
        Err(why) => Err(refused(&why)),
    }
}

/// The streamed fit of `table`, with progress bars, or why it does not
/// stream.
fn fit_table(
    args: &FitArgs,
    table: &TableFile,
    quiet: bool,
) -> Result<std::result::Result<(Fit, DMatrix<f64>), NotStreamed>> {
    let options = args.settings.options();
    let task = args.task()?.map(Task::from);
    let quiet = quiet || args.json;
    let read_bar = rows_bar(quiet, table.bytes(), "read", true);
    let fit_bar = progress_bar(quiet, 0, "fit");
    let pass_bar = rows_bar(quiet, table.bytes(), "pass", true);
    let mut stage_rows = 0;
    let mut show = |p: StreamedProgress| match p {
        StreamedProgress::Read(at) => show_rows(&read_bar, at),
        StreamedProgress::Fit {
            rows,
            progress,
            budget,
        } => {
            read_bar.finish_and_clear();
            if rows != stage_rows {
                stage_rows = rows;
                fit_bar.set_prefix(format!("{rows} rows"));
                fit_bar.set_length(budget);
                fit_bar.reset();
            }
            fit_bar.set_position(progress.iteration);
            fit_bar.set_message(format!("NLML {:.4}", progress.best_value));
        }
        StreamedProgress::Pass(at) => {
            fit_bar.finish_and_clear();
            show_rows(&pass_bar, at);
        }
    };
    let started = start_streamed(table, &options, task, &mut show);
    let fitted = match started {
        Ok(Ok(start)) => {
            let check_x = start.check_x.clone();
            start
                .finish_on_file(&mut show)
                .map(|fit| Ok((fit, check_x)))
        }
        Ok(Err(why)) => Ok(Err(why)),
        Err(e) => Err(e),
    };
    read_bar.finish_and_clear();
    fit_bar.finish_and_clear();
    pass_bar.finish_and_clear();
    fitted
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
