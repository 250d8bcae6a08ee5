//! `sgp fit` of a regression on a file too large to hold in memory.

use indicatif::{ProgressBar, ProgressStyle};
use nalgebra::DMatrix;
use sgp_trainer::choose::Choice;
use sgp_trainer::data::stream::{scan, ReadProgress, TableFile};
use sgp_trainer::files::Input;
use sgp_trainer::fit::streamed::{fit_streamed, StreamedParams, StreamedProgress};
use sgp_trainer::fit::{Fit, FitParams, Method};
use sgp_trainer::options::task::Task;
use sgp_trainer::options::ModelChoice;
use sgp_trainer::Result;

use crate::progress_bar;

use super::{FitArgs, ModelArg, TaskArg};

/// Rows of the sample at which a streamed fit's export is checked.
pub(crate) const STREAMED_CHECK_ROWS: usize = 16_384;

/// Fits a regression on a large file by [`fit_streamed`]: `None` when the
/// file is small enough to fit in memory, or the fit asked for is not one
/// that streams (a classification, a model other than spgp); then the
/// whole file is read as before. Returns the fit and the raw inputs its
/// export is checked at.
pub(crate) fn streamed_fit(
    args: &FitArgs,
    input: &Input,
    quiet: bool,
) -> Result<Option<(Fit, DMatrix<f64>)>> {
    // On data large enough to stream, auto is spgp (no held-out
    // comparison at this size).
    let auto = args.settings.model.is_none_or(|m| m == ModelArg::Auto);
    let model = args
        .settings
        .model
        .and_then(ModelArg::family)
        .unwrap_or(Method::Spgp);
    let classification = args.task()? == Some(TaskArg::Classification) || args.positive.is_some();
    if model != Method::Spgp || classification {
        return Ok(None);
    }
    let table = TableFile::from_input(input, args.target.as_deref())?;
    if table.target_is_text()? {
        // Class labels: a classification, which is fitted in memory.
        return Ok(None);
    }
    let mut params = StreamedParams::default();
    let options = args.settings.options();
    let FitParams::Spgp(sparse) = options.params(Method::Spgp, usize::MAX)? else {
        return Ok(None);
    };
    params.sparse = sparse;
    if !params.streams(&table)? {
        return Ok(None);
    }
    let mut spgp = options.clone();
    spgp.model = Some(ModelChoice::Family(Method::Spgp));
    spgp.check_applies(Some(Task::Regression), &[])?;
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
    let mut fitted = fitted?;
    if auto {
        fitted.report.choice = Some(Choice::unweighed(fitted.report.rows));
    }
    Ok(Some((
        fitted,
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
