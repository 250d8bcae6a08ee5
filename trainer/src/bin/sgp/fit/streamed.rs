//! `sgp fit` of a regression on a file too large to hold in memory.

use indicatif::{ProgressBar, ProgressStyle};
use nalgebra::DMatrix;
use sgp_trainer::data::stream::{ReadProgress, TableFile};
use sgp_trainer::files::Input;
use sgp_trainer::fit::streamed::StreamedProgress;
use sgp_trainer::fit::streamed_file::start_streamed;
use sgp_trainer::fit::{Fit, Method};
use sgp_trainer::options::task::Task;
use sgp_trainer::options::ModelChoice;
use sgp_trainer::Result;

use crate::progress_bar;

use super::{FitArgs, TaskArg};

/// Fits a regression on a large file by the library's streamed fit
/// ([`start_streamed`]): `None` when the file is small enough to fit in
/// memory, or the fit asked for is not one that streams (a classification,
/// a model other than spgp); then the whole file is read as before.
/// Returns the fit and the raw inputs its export is checked at.
pub(crate) fn streamed_fit(
    args: &FitArgs,
    input: &Input,
    quiet: bool,
) -> Result<Option<(Fit, DMatrix<f64>)>> {
    let classification = args.task()? == Some(TaskArg::Classification) || args.positive.is_some();
    let options = args.settings.options();
    let family = |m: ModelChoice| m != ModelChoice::Auto && m != ModelChoice::Family(Method::Spgp);
    if classification || options.model.is_some_and(family) {
        // These are fitted in memory; the file is not opened here.
        return Ok(None);
    }
    let task = args.task()?.map(Task::from);
    let table = TableFile::from_input(input, args.target.as_deref())?;
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
    let started = start_streamed(&table, &options, task, &mut show);
    let fitted = match started {
        Ok(Ok(start)) => {
            let check_x = start.check_x.clone();
            start
                .finish_on_file(&mut show)
                .map(|fit| Some((fit, check_x)))
        }
        Ok(Err(_)) => Ok(None),
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
