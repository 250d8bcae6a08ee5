//! `sgp fit`'s decision to stream a file, and the streamed fit it then
//! runs, for every front end (the CLI, Python): the same options give the
//! same fit and the same blob.
//!
//! A file streams when the fit asked for is an SPGP regression of one
//! target (`auto` is SPGP at this size) and the file has more rows than
//! [`StreamedParams::in_memory_rows`]; anything else is fitted in memory,
//! and [`NotStreamed`] says why.

use nalgebra::DMatrix;

use super::capabilities::{CLASSIFICATION_NOT_STREAMED, OUTPUTS_NOT_STREAMED};
use super::streamed::{fit_subset, StreamedParams, StreamedProgress, SubsetFit};
use super::{Choice, Fit, FitParams, Method};
use crate::data::stream::{scan, TableFile};
use crate::model::posterior_sums::PosteriorSums;
use crate::options::task::Task;
use crate::options::{ModelChoice, Options};
use crate::Result;

/// Rows of the sample at which a streamed fit's export is checked.
pub(crate) const STREAMED_CHECK_ROWS: usize = 16_384;

/// Why a file is fitted in memory rather than streamed.
#[derive(Clone, Debug, PartialEq)]
pub enum NotStreamed {
    /// Only SPGP streams; this family reads every row into memory.
    Family(Method),
    /// A classification (asked for, or a text or two-valued target): its
    /// likelihood is not Gaussian, so its posterior is not a sum of the
    /// rows' [`PosteriorSums`].
    Classification,
    /// A file of this many rows or fewer is faster fitted in memory.
    Small(u64),
    /// Several targets: a multi-output fit.
    Outputs,
}

impl std::fmt::Display for NotStreamed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotStreamed::Family(m) => write!(
                f,
                "only spgp regressions stream; {} reads every row into memory ({})",
                m.name(),
                m.capabilities().not_streamed.unwrap_or("it streams")
            ),
            NotStreamed::Classification => write!(
                f,
                "a classification does not stream: {CLASSIFICATION_NOT_STREAMED} (only spgp \
                 regressions of one target stream)"
            ),
            NotStreamed::Small(rows) => write!(
                f,
                "a file of at most {rows} rows is fitted in memory, not streamed"
            ),
            NotStreamed::Outputs => write!(
                f,
                "several targets do not stream: {OUTPUTS_NOT_STREAMED} (fit each target on its \
                 own)"
            ),
        }
    }
}

/// A streamed fit whose subset fit is done: the pass over every row is
/// left, on this machine ([`StreamedStart::finish_on_file`]) or anywhere
/// (sums of [`SubsetFit::basis`], then [`StreamedStart::finish`]).
pub struct StreamedStart {
    /// The subset fit.
    pub subset: SubsetFit,
    /// Raw sampled inputs the export is checked at.
    pub check_x: DMatrix<f64>,
    /// Whether the model was `auto` (the report then says why it is spgp).
    auto: bool,
    table: TableFile,
}

impl StreamedStart {
    /// The fit conditioned on the rows whose sums are `sums`.
    ///
    /// # Errors
    /// As [`SubsetFit::finish`].
    pub fn finish(self, sums: &PosteriorSums, pass_seconds: f64) -> Result<Fit> {
        let mut fit = self.subset.finish(sums, pass_seconds)?;
        if self.auto {
            fit.report.choice = Some(Choice::unweighed());
        }
        Ok(fit)
    }

    /// The fit conditioned on every row of the file, read here.
    ///
    /// # Errors
    /// Every error of reading the file or of [`StreamedStart::finish`].
    pub fn finish_on_file(self, progress: &mut dyn FnMut(StreamedProgress)) -> Result<Fit> {
        let started = std::time::Instant::now();
        let sums = self
            .subset
            .basis()
            .pass(&self.table, &mut |at| progress(StreamedProgress::Pass(at)))?;
        self.finish(&sums, started.elapsed().as_secs_f64())
    }
}

/// Starts the streamed fit of `table` that `options` ask for (`task` as
/// asked, `None` to infer it): the first pass and the subset fit, or why
/// the file is not streamed.
///
/// # Errors
/// Every error of the options, of reading the file and of the fit.
pub fn start_streamed(
    table: &TableFile,
    options: &Options,
    task: Option<Task>,
    progress: &mut dyn FnMut(StreamedProgress),
) -> Result<std::result::Result<StreamedStart, NotStreamed>> {
    let auto = matches!(options.model, None | Some(ModelChoice::Auto));
    let model = match options.model {
        Some(ModelChoice::Family(family)) => family,
        _ => Method::Spgp,
    };
    if model.capabilities().not_streamed.is_some() {
        return Ok(Err(NotStreamed::Family(model)));
    }
    if task == Some(Task::Classification) || table.target_is_text()? {
        return Ok(Err(NotStreamed::Classification));
    }
    let mut params = StreamedParams::default();
    let FitParams::Spgp(sparse) = options.params(Method::Spgp, usize::MAX)? else {
        return Ok(Err(NotStreamed::Family(model)));
    };
    params.sparse = sparse;
    if !params.streams(table)? {
        return Ok(Err(NotStreamed::Small(params.in_memory_rows)));
    }
    let mut spgp = options.clone();
    spgp.model = Some(ModelChoice::Family(Method::Spgp));
    spgp.check_applies(Some(Task::Regression), &[])?;
    let first = scan(
        table,
        params.sample_rows(),
        params.sparse.seed,
        params.chunk_rows,
        &mut |at| progress(StreamedProgress::Read(at)),
    )?;
    if task.is_none() && first.target_values.len() == 2 {
        // Two target values default to a classification.
        return Ok(Err(NotStreamed::Classification));
    }
    let subset = fit_subset(table, &first, &params, progress)?;
    let check_rows = first.sample_x.nrows().min(STREAMED_CHECK_ROWS);
    Ok(Ok(StreamedStart {
        subset,
        check_x: first.sample_x.rows(0, check_rows).into_owned(),
        auto,
        table: table.clone(),
    }))
}
