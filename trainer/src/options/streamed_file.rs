//! `sgp fit`'s decision to stream a file, and the streamed fit it then
//! runs, for every front end (the CLI, Python): the same options give the
//! same fit and the same blob.
//!
//! A file streams when the fit asked for is an SPGP regression (`auto` is
//! SPGP at this size; several targets: [`super::streamed_outputs`]) or an
//! svgp classifier, and the file has more rows than
//! `StreamedParams::in_memory_rows`; anything else is fitted in memory,
//! and `NotStreamed` says why.

use nalgebra::DMatrix;

use crate::data::stream::{scan, Scan, TableFile};
use crate::fit::capabilities::CLASSIFICATION_NOT_STREAMED;
use crate::fit::streamed::{
    fit_subset, stage_pool, StreamedParams, StreamedProgress, SubsetFit, STREAMED_CHECK_ROWS,
};
use crate::fit::streamed_classify::{start_classifier, ClassifierStart, SUBSET_ROWS};
use crate::fit::task::Task;
use crate::fit::{Choice, Fit, FitParams, KernelVerdict, Method};
use crate::model::posterior_sums::PosteriorSums;
use crate::options::{KernelChoice, ModelChoice, Options};
use crate::Result;

/// Why a file is fitted in memory rather than streamed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum NotStreamed {
    /// Only SPGP streams; this family reads every row into memory.
    Family(Method),
    /// A classification asked of a family that does not classify.
    Classification,
    /// A file of this many rows or fewer is faster fitted in memory.
    Small(u64),
    /// Several targets asked to be classified: they stream as a
    /// regression only.
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
                "a classification streams with svgp only: {CLASSIFICATION_NOT_STREAMED}"
            ),
            NotStreamed::Small(rows) => write!(
                f,
                "a file of at most {rows} rows is fitted in memory, not streamed"
            ),
            NotStreamed::Outputs => write!(
                f,
                "several targets stream as a regression only: a classifier has one target \
                 column"
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
    /// `--kernel auto`'s verdict, made on the sampled rows.
    kernel: Option<KernelVerdict>,
    table: TableFile,
}

impl StreamedStart {
    /// The fit conditioned on the rows whose sums are `sums`.
    ///
    /// # Errors
    /// As [`SubsetFit::finish`].
    pub fn finish(self, sums: &PosteriorSums, pass_seconds: f64) -> Result<Fit> {
        let mut fit = self.subset.finish(sums, pass_seconds)?;
        if self.auto || self.kernel.is_some() {
            fit.report.choice = Some(Choice::streamed(self.auto, self.kernel));
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

/// A streamed fit past its subset fit: a regression's, or a classifier's.
pub(crate) enum Started {
    /// An SPGP regression.
    Regression(Box<StreamedStart>),
    /// An svgp classifier ([`crate::fit::streamed_classify`]).
    Classifier(Box<ClassifierStart>),
}

/// `--kernel auto` on a streamed regression: the kernel chosen on the
/// stages' pool and set in `params`, with its verdict for the report;
/// `None` when a kernel was named.
///
/// # Errors
/// Those of the choice's fits.
fn chosen_kernel(
    options: &Options,
    table: &TableFile,
    first: &Scan,
    params: &mut StreamedParams,
) -> Result<Option<KernelVerdict>> {
    if options.kernel != Some(KernelChoice::Auto) {
        return Ok(None);
    }
    let pool = stage_pool(table, first, params)?;
    let (chosen, verdict) = crate::choose::kernel::choose_streamed(
        std::slice::from_ref(&pool),
        &params.sparse,
        !options.no_held_out_choice,
    )?;
    params.sparse.kernel = chosen;
    Ok(Some(verdict))
}

/// Starts the streamed fit of `table` that `options` ask for (`task` as
/// asked, `None` to infer it; `positive` a binary classification's
/// positive class): the first pass and the subset fit, or why the file is
/// not streamed.
///
/// # Errors
/// Every error of the options, of reading the file and of the fit.
pub(crate) fn start_streamed(
    table: &TableFile,
    options: &Options,
    (task, positive): (Option<Task>, Option<&str>),
    progress: &mut dyn FnMut(StreamedProgress),
) -> Result<std::result::Result<Started, NotStreamed>> {
    let auto = matches!(options.model, None | Some(ModelChoice::Auto));
    let model = match options.model {
        Some(ModelChoice::Family(family)) => family,
        _ => Method::Spgp,
    };
    if model.capabilities().not_streamed.is_some() {
        return Ok(Err(NotStreamed::Family(model)));
    }
    let text = table.target_is_text()?;
    let asked_class = task == Some(Task::Classification) || positive.is_some();
    let classifies = auto || model.capabilities().classifies;
    if ((asked_class || text) && !classifies) || (text && task == Some(Task::Regression)) {
        // Text labels asked of a regression: refused in memory.
        return Ok(Err(NotStreamed::Classification));
    }
    let mut params = StreamedParams::default();
    let classify = asked_class || text || !model.capabilities().regresses;
    if classify {
        if !table.has_more_rows_than(params.in_memory_rows)? {
            return Ok(Err(NotStreamed::Small(params.in_memory_rows)));
        }
    } else {
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
    }
    // Text labels: their pass, then every pass reads a label's index.
    let labelled;
    let table = if text {
        labelled = table.clone().with_labels(table.collect_labels()?);
        &labelled
    } else {
        table
    };
    let seed = options.seed.unwrap_or(params.sparse.seed);
    let first = scan(
        table,
        params.sample_rows(),
        seed,
        params.chunk_rows,
        &mut |at| progress(StreamedProgress::Read(at)),
    )?;
    let two_values = task.is_none() && first.target_values.len() == 2;
    if classify || (two_values && auto) {
        let mut svgp = options.clone();
        svgp.model = Some(ModelChoice::Family(Method::Svgp));
        svgp.check_applies(Some(Task::Classification), &[])?;
        let FitParams::Svgp(classifier) = svgp.params(Method::Svgp, usize::MAX)? else {
            return Ok(Err(NotStreamed::Family(Method::Svgp)));
        };
        let started = start_classifier(
            table,
            &first,
            (&classifier, &params, SUBSET_ROWS),
            (task, positive),
            progress,
        )?;
        return Ok(started
            .map(|s| Started::Classifier(Box::new(s)))
            .ok_or(NotStreamed::Classification));
    }
    if two_values {
        // Two target values default to a classification, which the
        // regression family asked for does not fit.
        return Ok(Err(NotStreamed::Classification));
    }
    let kernel = chosen_kernel(options, table, &first, &mut params)?;
    let subset = fit_subset(table, &first, &params, progress)?;
    let check_rows = first.sample_x.nrows().min(STREAMED_CHECK_ROWS);
    Ok(Ok(Started::Regression(Box::new(StreamedStart {
        subset,
        check_x: first.sample_x.rows(0, check_rows).into_owned(),
        auto,
        kernel,
        table: table.clone(),
    }))))
}
