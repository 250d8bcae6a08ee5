//! `sgp fit`'s progress bars: the streamed fit's passes over the file and
//! its subset fit, or the fit in memory.

use indicatif::{ProgressBar, ProgressStyle};
use sgp_trainer::data::stream::ReadProgress;
use sgp_trainer::fit::streamed::StreamedProgress;

use crate::progress_bar;

/// The bars of one stage of a job, hidden with --quiet.
pub(crate) struct Bars {
    read: ProgressBar,
    fit: ProgressBar,
    pass: ProgressBar,
    /// Streamed: the fit bar restarts at each stage of the growing subset.
    streamed: bool,
    stage_rows: usize,
}

impl Bars {
    /// The bars of a streamed fit: its first pass, the subset fit, the
    /// pass over every row.
    pub(crate) fn streamed(quiet: bool) -> Self {
        Bars {
            read: rows_bar(quiet, 0, "read", true),
            fit: progress_bar(quiet, 0, "fit"),
            pass: rows_bar(quiet, 0, "pass", true),
            streamed: true,
            stage_rows: 0,
        }
    }

    /// The bar of a fit in memory, over the final fit's iterations.
    pub(crate) fn in_memory(quiet: bool) -> Self {
        Bars {
            streamed: false,
            ..Bars::streamed(quiet)
        }
    }

    pub(crate) fn show(&mut self, p: StreamedProgress) {
        match p {
            StreamedProgress::Read(at) => show_rows(&self.read, at),
            StreamedProgress::Fit {
                rows,
                progress,
                budget,
            } if self.streamed => {
                self.read.finish_and_clear();
                if rows != self.stage_rows {
                    self.stage_rows = rows;
                    self.fit.set_prefix(format!("{rows} rows"));
                    self.fit.set_length(budget);
                    self.fit.reset();
                }
                self.fit.set_position(progress.iteration);
                self.fit
                    .set_message(format!("NLML {:.4}", progress.best_value));
            }
            StreamedProgress::Fit {
                progress, budget, ..
            } => {
                self.fit.set_length(budget);
                self.fit.set_position(progress.iteration);
                self.fit
                    .set_message(format!("objective {:.4}", progress.best_value));
            }
            StreamedProgress::Pass(at) => {
                self.fit.finish_and_clear();
                show_rows(&self.pass, at);
            }
        }
    }

    pub(crate) fn clear(&self) {
        self.read.finish_and_clear();
        self.fit.finish_and_clear();
        self.pass.finish_and_clear();
    }
}

/// A progress bar over the rows of a pass (`bytes`: over the bytes of the
/// file, rows counted in the message), hidden with --quiet.
fn rows_bar(quiet: bool, len: u64, label: &str, bytes: bool) -> ProgressBar {
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
fn show_rows(bar: &ProgressBar, at: ReadProgress) {
    bar.set_length(at.total_bytes);
    bar.set_position(at.bytes);
    let seconds = bar.elapsed().as_secs_f64().max(1e-3);
    bar.set_message(format!(
        "{} rows, {:.0} rows/s",
        at.rows,
        at.rows as f64 / seconds
    ));
}
