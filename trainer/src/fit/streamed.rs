//! SPGP on data of any size: fit on enough rows, condition on every row.
//!
//! At a device-sized M the basis limits the model, not the number of rows:
//! beyond some tens of thousands of rows, more rows no longer move the
//! pseudo-inputs and hyperparameters in any way that shows on held-out
//! data, while every optimiser iteration still costs O(N M^2). So:
//!
//! 1. the first pass (`crate::data::stream::scan`) validates the whole file,
//!    standardises it and keeps a seeded random sample of
//!    `StreamedParams::max_rows` + `StreamedParams::validation_rows`
//!    rows;
//! 2. SPGP is fitted on the first `StreamedParams::first_rows` sampled
//!    rows from each of its starts, every start optimised to the end and
//!    the one of best test NLPD on the validation rows kept (the starts
//!    land in different local optima, which decide the model, and a short
//!    screening run does not rank them: see docs/src/large-data.md), by
//!    SPGP's restart procedure and its rescue of a collapsed fit
//!    (`super::spgp::fit_pseudo_inputs`); then
//!    warm-started from the best stage on twice as many rows, and so on,
//!    each stage scored on the validation rows; the subset stops growing
//!    when a doubling gains less than `StreamedParams::min_gain` nats per
//!    row, or at `StreamedParams::max_rows`, and the best-scoring stage
//!    is kept;
//! 3. a second pass computes the posterior of every row with those
//!    parameters: the sums of [`crate::model::posterior_sums`], chunk by chunk.
//!
//! Memory is O(sample + chunk + M^2), whatever the number of rows.

use std::time::Instant;

use serde::Serialize;
use sgp_runtime::ModelKind;

use super::sparse::{fit_sparse, folded, validation_nlpd, SparseFit, StartChoice};
use super::spgp::fit_pseudo_inputs;
use super::streamed_basis::StreamedBasis;
use super::{
    Expansion, Fit, FitReport, Method, OptimiserReport, OutputReport, Rebuild, Rebuilt,
    SparseParams, StartReport,
};
use crate::data::stream::{ReadProgress, Scan, TableFile};
use crate::data::{Dataset, TargetKind};
use crate::model::features::PseudoInputs;
use crate::model::inference::fitc::FitcConfig;
use crate::model::inference::RuntimeForm;
use crate::model::posterior_sums::{ChunkModel, PosteriorSums};
use crate::model::{ModelSet, TrainedModel};
use crate::numerics::linalg::JitterPolicy;
use crate::numerics::optimise::{OptimiseOptions, Progress};
use crate::{Error, Result};

/// Rows of the sample at which a streamed fit's export is checked.
pub(crate) const STREAMED_CHECK_ROWS: usize = 16_384;

/// Settings of a streamed fit.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StreamedParams {
    /// The SPGP fit of each stage (its starts are not screened but each
    /// optimised to the end and scored on validation rows).
    pub sparse: SparseParams,
    /// Rows per chunk of the posterior pass.
    pub chunk_rows: usize,
    /// Rows of the first stage.
    pub first_rows: usize,
    /// Most rows the subset grows to.
    pub max_rows: usize,
    /// Sampled rows that score the stages (never fitted on).
    pub validation_rows: usize,
    /// Least gain in validation NLPD (nats per row) for which the subset
    /// keeps doubling.
    pub min_gain: f64,
    /// Files of at most this many rows are fitted in memory instead
    /// (`sgp fit` asks [`StreamedParams::streams`]).
    pub in_memory_rows: u64,
}

impl Default for StreamedParams {
    /// Chosen by measurement (docs/src/large-data.md): on ridge data with
    /// D = 8 at M = 64 the doubling from 32,768 to 65,536 rows still gained
    /// 0.011 to 0.017 nats on some files, so the subset may grow to 131,072
    /// rows (about 450 MB at its largest stage) when the file has them and
    /// the doublings keep paying. Files up to 73,728 rows are fitted in
    /// memory in less time than a streamed fit takes.
    fn default() -> Self {
        StreamedParams {
            sparse: SparseParams::default(),
            chunk_rows: crate::data::stream::DEFAULT_CHUNK_ROWS,
            first_rows: 8_192,
            max_rows: 131_072,
            validation_rows: 8_192,
            min_gain: 0.01,
            in_memory_rows: 73_728,
        }
    }
}

impl StreamedParams {
    /// Rows the first pass must sample: the largest subset and the
    /// validation rows.
    pub fn sample_rows(&self) -> usize {
        self.max_rows + self.validation_rows
    }

    /// Optimiser iterations the stage of `rows` rows may use (for
    /// progress bars).
    pub fn stage_budget(&self, rows: usize) -> u64 {
        let starts = if rows == self.first_rows {
            self.sparse.restarts as u64
        } else {
            1
        };
        starts * self.sparse.optimiser.max_iter
    }

    /// Whether a file of `table`'s rows is streamed rather than fitted in
    /// memory.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be read.
    pub fn streams(&self, table: &TableFile) -> Result<bool> {
        table.has_more_rows_than(self.in_memory_rows)
    }

    fn check(&self, scan: &Scan) -> Result<()> {
        if self.chunk_rows == 0 || self.first_rows < 2 || self.validation_rows == 0 {
            return Err(Error::BadInput(
                "a streamed fit needs chunks of at least one row, a first stage of at least two \
                 rows and at least one validation row"
                    .into(),
            ));
        }
        if self.first_rows > self.max_rows {
            return Err(Error::BadInput(format!(
                "a streamed fit's first stage ({} rows) is larger than its largest ({} rows)",
                self.first_rows, self.max_rows
            )));
        }
        let sampled = scan.sample_x.nrows();
        if sampled < self.first_rows + self.validation_rows {
            return Err(Error::BadInput(format!(
                "{sampled} sampled rows are too few for a streamed fit (first stage {} rows, \
                 validation {} rows): fit the data in memory",
                self.first_rows, self.validation_rows
            )));
        }
        Ok(())
    }
}

/// What a streamed fit is doing, for progress displays.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StreamedProgress {
    /// An optimiser iteration of the stage fitted on `rows` rows.
    Fit {
        /// Rows of the stage.
        rows: usize,
        /// The optimiser's progress within the stage.
        progress: Progress,
        /// Iterations the stage may use (`StreamedParams::stage_budget`).
        budget: u64,
    },
    /// The first pass over the file (`crate::data::stream::scan`).
    Read(ReadProgress),
    /// The posterior pass over the file.
    Pass(ReadProgress),
}

/// One stage of the growing subset.
#[derive(Clone, Debug, Serialize)]
pub struct SubsetStage {
    /// Rows fitted on.
    pub rows: usize,
    /// Test NLPD on the validation rows (standardised units).
    pub validation_nlpd: f64,
    /// Optimiser iterations of the stage.
    pub iterations: u64,
    /// Wall time of the stage, in seconds.
    pub seconds: f64,
}

/// How a streamed fit went.
#[derive(Clone, Debug, Serialize)]
pub struct StreamReport {
    /// Rows of the file, all of them conditioned on.
    pub rows: u64,
    /// Rows of the stage whose parameters were kept.
    pub fitted_rows: usize,
    /// Validation rows scoring the stages.
    pub validation_rows: usize,
    /// Every stage, in order.
    pub stages: Vec<SubsetStage>,
    /// Rows per chunk of the posterior pass.
    pub chunk_rows: usize,
    /// Wall time of the posterior pass, in seconds.
    pub pass_seconds: f64,
    /// Passes over every row (a classifier's; a regression's is one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passes: Option<usize>,
}

/// The subset fit of a streamed fit (steps 1 and 2 of the module
/// documentation): the parameters every row is then conditioned on, and
/// what turns the pass's sums into the fit ([`SubsetFit::finish`]). Its
/// [`SubsetFit::basis`] is all a worker of the pass needs. Several outputs
/// on one basis ([`crate::options::streamed_outputs`]) have one basis each, the
/// same pseudo-inputs and length scales under each output's own kernel.
pub struct SubsetFit {
    fit: SparseFit<PseudoInputs>,
    starts: Vec<StartReport>,
    stages: Vec<SubsetStage>,
    fitted_rows: usize,
    /// Each output's sample without its constant inputs (what was fitted
    /// on).
    samples: Vec<Dataset>,
    /// The first output's sample with every input.
    full: Dataset,
    rows: u64,
    validation_rows: usize,
    /// Each output's table, for a pass at another jitter.
    tables: Vec<TableFile>,
    bases: Vec<StreamedBasis>,
    started: Instant,
}

impl SubsetFit {
    /// The fixed basis and transform of the pass over every row (the
    /// first output's).
    pub fn basis(&self) -> &StreamedBasis {
        &self.bases[0]
    }

    /// Each output's basis, in output order.
    pub fn bases(&self) -> &[StreamedBasis] {
        &self.bases
    }

    /// The rows of the file, every one of which the pass must sum once
    /// ([`PosteriorSums::check_covers`]).
    pub fn file_rows(&self) -> u64 {
        self.rows
    }

    /// The sampled rows, standardised, with every input (the sample's
    /// constant inputs listed), for warnings about the data.
    pub fn sampled(&self) -> &Dataset {
        &self.full
    }

    /// The fit conditioned on the rows whose merged sums are `sums` (every
    /// row of the file, for the same model as `sgp fit`'s), `pass_seconds`
    /// the wall time of the pass, for the report. The fit's export may
    /// rebuild it at another jitter by a pass over the file on this machine.
    ///
    /// # Errors
    /// [`Error::BadInput`] for sums of another basis or of other than
    /// every row of the file, once ([`PosteriorSums::check_covers`]: a
    /// lost or repeated partition); [`Error::Numerical`] if they give no
    /// posterior.
    pub fn finish(self, sums: &PosteriorSums, pass_seconds: f64) -> Result<Fit> {
        self.finish_outputs(std::slice::from_ref(sums), pass_seconds)
    }

    /// As [`SubsetFit::finish`], with each output's sums, in output order:
    /// one fit whose models share the first output's basis, as an
    /// in-memory fit of several outputs on one basis exports them.
    ///
    /// # Errors
    /// As [`SubsetFit::finish`], and for other than one set of sums per
    /// output.
    pub fn finish_outputs(self, sums: &[PosteriorSums], pass_seconds: f64) -> Result<Fit> {
        let SubsetFit {
            fit,
            starts,
            stages,
            fitted_rows,
            samples,
            full,
            rows: file_rows,
            validation_rows,
            tables,
            bases,
            started,
        } = self;
        if sums.len() != samples.len() {
            return Err(Error::BadInput(format!(
                "{} sets of sums for a fit of {} outputs",
                sums.len(),
                samples.len()
            )));
        }
        let mut posteriors = Vec::with_capacity(sums.len());
        for (s, kernel) in sums.iter().zip(&fit.kernels) {
            s.check_covers(file_rows, None)?;
            posteriors.push(ChunkModel::new(&fit.features, kernel, &fit.config)?.posterior(s)?);
        }
        let nlml: f64 = posteriors.iter().map(|p| p.nlml).sum();
        let rows = usize::try_from(sums[0].rows).unwrap_or(usize::MAX);
        let mut report = FitReport::new(Method::Spgp, rows, nlml);
        report.jitter_escalations = posteriors.iter().map(|p| p.jitter_escalations).sum();
        report.outputs = samples
            .iter()
            .zip(&posteriors)
            .map(|(d, p)| OutputReport::named(&d.target_name, Some(p.nlml)))
            .collect();
        report.approximation = Some(fit.config.approximation);
        report.optimiser = Some(OptimiserReport::new(&fit.run, fit.max_iter));
        report.variance = fit.sharing.clone();
        report.starts = starts;
        crate::fit::warnings::prepend_data_warnings(&mut report.warnings, &full);
        report.streamed = Some(StreamReport {
            rows: file_rows,
            fitted_rows,
            validation_rows,
            stages,
            chunk_rows: bases[0].chunk_rows,
            pass_seconds,
            passes: None,
        });
        let forms = posteriors
            .iter()
            .zip(&fit.kernels)
            .map(|(p, k)| p.runtime_form(&fit.features, k))
            .collect();
        let members = on_one_basis(forms)?
            .into_iter()
            .zip(&samples)
            .map(|(form, d)| TrainedModel::regression(ModelKind::Spgp, form, d))
            .collect();
        let fitted_data = samples
            .iter()
            .map(|d| d.subset(&(0..fitted_rows).collect::<Vec<_>>()))
            .collect::<Result<Vec<_>>>()?;
        let kernels = fit.kernels.clone();
        let jitter = fit.config.jitter.initial;
        let rebuild = rebuild_pass(fit, fitted_data, bases, tables);
        let set = ModelSet {
            members,
            class_labels: Vec::new(),
        };
        let mut fitted = Fit::new(set, report, kernels, (jitter, rebuild));
        if !full.constant_inputs.is_empty() {
            Expansion::for_data(&full).attach(&mut fitted);
        }
        fitted.report.seconds = started.elapsed().as_secs_f64();
        Ok(fitted)
    }
}

/// How a streamed fit is rebuilt at another jitter (`max_iter` > 0: the
/// subset refitted first): a new pass over each output's table with the
/// basis at that jitter.
fn rebuild_pass(
    fit: SparseFit<PseudoInputs>,
    fitted_data: Vec<Dataset>,
    bases: Vec<StreamedBasis>,
    tables: Vec<TableFile>,
) -> Rebuild {
    Box::new(move |policy: JitterPolicy, max_iter: u64| {
        let config = FitcConfig {
            jitter: policy,
            ..fit.config
        };
        let (features, kernels) = if max_iter == 0 {
            (fit.features.clone(), fit.kernels.clone())
        } else {
            let options = OptimiseOptions {
                max_iter,
                ..OptimiseOptions::default()
            };
            let refit = fit_sparse(
                &fitted_data,
                fit.features.clone(),
                fit.kernels.clone(),
                config,
                &options,
                &mut |_| {},
            )?;
            (refit.features, refit.kernels)
        };
        let (mut forms, mut nlml) = (Vec::with_capacity(kernels.len()), 0.0);
        for ((basis, table), kernel) in bases.iter().zip(&tables).zip(&kernels) {
            let again = StreamedBasis {
                features: features.clone(),
                kernel: kernel.clone(),
                config,
                ..basis.clone()
            };
            let sums = again.pass(table, &mut |_| {})?;
            let post = again.chunk_model()?.posterior(&sums)?;
            nlml += post.nlml;
            forms.push(post.runtime_form(&features, kernel));
        }
        Ok(Rebuilt {
            forms: on_one_basis(forms)?,
            biases: None,
            nlml,
            kernels,
            noise_held: false,
        })
    })
}

/// Each output's form on the first output's basis, as an in-memory fit of
/// several outputs stores them (`super::sparse::folded`, each output's own
/// variance factor); one output's form as it is.
fn on_one_basis(forms: Vec<RuntimeForm>) -> Result<Vec<RuntimeForm>> {
    if forms.len() < 2 {
        return Ok(forms);
    }
    folded(forms, false)
}

/// The rows `scan` sampled of `table`, standardised, with every input (its
/// constant inputs listed) and the target as numbers.
pub(crate) fn sampled_dataset(table: &TableFile, scan: &Scan) -> Dataset {
    Dataset {
        x: scan.transform.apply_x(&scan.sample_x),
        y: scan.transform.apply_y(&scan.sample_y),
        target: TargetKind::Continuous,
        input_names: table.input_names.clone(),
        target_name: table.target_name.clone(),
        transform: scan.transform.clone(),
        source: format!("{} (sample)", table.source),
        constant_inputs: scan.constant_inputs.clone(),
        class_labels: table.class_labels().to_vec(),
    }
}

/// The scan's sample as the fit sees it: `full` with every input, in the
/// scan's transform, and `sample` without the constant inputs.
fn sample_sets(table: &TableFile, scan: &Scan) -> Result<(Dataset, Dataset)> {
    let full = sampled_dataset(table, scan);
    let sample = if scan.constant_inputs.is_empty() {
        full.clone()
    } else {
        full.without_inputs(&scan.constant_inputs)?
    };
    Ok((full, sample))
}

/// The sampled rows of `table` the stages fit on (the validation rows
/// left out), standardised, without constant inputs.
///
/// # Errors
/// [`Error::BadInput`] for settings that do not fit the sample.
pub(crate) fn stage_pool(
    table: &TableFile,
    scan: &Scan,
    params: &StreamedParams,
) -> Result<Dataset> {
    params.check(scan)?;
    let (_, sample) = sample_sets(table, scan)?;
    let pool = sample.n_rows() - params.validation_rows;
    sample.subset(&(0..pool).collect::<Vec<_>>())
}

/// Steps 1 and 2 of the module documentation: the staged SPGP fit on the
/// sample `scan` kept of `table`.
///
/// # Errors
/// [`Error::BadInput`] for settings that do not fit the sample; every
/// error of the fits.
pub(crate) fn fit_subset(
    table: &TableFile,
    scan: &Scan,
    params: &StreamedParams,
    progress: &mut dyn FnMut(StreamedProgress),
) -> Result<SubsetFit> {
    fit_subset_outputs(
        std::slice::from_ref(table),
        std::slice::from_ref(scan),
        params,
        progress,
    )
}

/// As [`fit_subset`], for several outputs on one basis: `tables[p]` and
/// `scans[p]` output `p`'s, over the same rows and inputs (the same
/// sample, in the same order); every stage fits them together and is
/// scored by their mean validation NLPD.
///
/// # Errors
/// As [`fit_subset`].
pub(crate) fn fit_subset_outputs(
    tables: &[TableFile],
    scans: &[Scan],
    params: &StreamedParams,
    progress: &mut dyn FnMut(StreamedProgress),
) -> Result<SubsetFit> {
    let started = Instant::now();
    let (table, scan) = match (tables.first(), scans.first()) {
        (Some(table), Some(scan)) if tables.len() == scans.len() => (table, scan),
        _ => {
            return Err(Error::BadInput(
                "one table and scan per output expected".into(),
            ))
        }
    };
    params.check(scan)?;
    let sets = tables
        .iter()
        .zip(scans)
        .map(|(t, s)| sample_sets(t, s))
        .collect::<Result<Vec<_>>>()?;
    let (mut fulls, samples): (Vec<Dataset>, Vec<Dataset>) = sets.into_iter().unzip();
    let full = fulls.swap_remove(0);
    let n_sample = samples[0].n_rows();
    let held = (n_sample - params.validation_rows..n_sample).collect::<Vec<_>>();
    let validation = samples
        .iter()
        .map(|d| d.subset(&held))
        .collect::<Result<Vec<_>>>()?;
    let pool = n_sample - params.validation_rows;
    let Grown {
        fit,
        fitted_rows,
        stages,
        starts,
    } = grow_subset(&samples, &validation, pool, params, progress)?;

    let keep: Vec<usize> = (0..table.input_names.len())
        .filter(|j| !scan.constant_inputs.contains(j))
        .collect();
    let bases = samples
        .iter()
        .zip(&fit.kernels)
        .map(|(d, kernel)| StreamedBasis {
            features: fit.features.clone(),
            kernel: kernel.clone(),
            config: fit.config,
            transform: d.transform.clone(),
            keep: keep.clone(),
            inputs: table.input_names.len(),
            chunk_rows: params.chunk_rows,
        })
        .collect();
    Ok(SubsetFit {
        fit,
        starts,
        stages,
        fitted_rows,
        samples,
        full,
        rows: scan.rows,
        validation_rows: params.validation_rows,
        tables: tables.to_vec(),
        bases,
        started,
    })
}

/// The subset [`grow_subset`] kept.
struct Grown {
    fit: SparseFit<PseudoInputs>,
    fitted_rows: usize,
    stages: Vec<SubsetStage>,
    starts: Vec<StartReport>,
}

/// Step 2 of the module documentation: SPGP fitted on the first `rows` of
/// each output's sample (of `pool` rows), the rows doubled while the
/// validation NLPD gains `params.min_gain`; the best stage, its rows, every
/// stage's figures and the first stage's starts.
fn grow_subset(
    samples: &[Dataset],
    validation: &[Dataset],
    pool: usize,
    params: &StreamedParams,
    progress: &mut dyn FnMut(StreamedProgress),
) -> Result<Grown> {
    let sparse = params.sparse.clone();

    let mut stages = Vec::new();
    let mut best: Option<(SparseFit<PseudoInputs>, f64, usize)> = None;
    let mut starts = Vec::new();
    let mut rows = params.first_rows;
    loop {
        let stage_started = Instant::now();
        let first_rows = (0..rows).collect::<Vec<_>>();
        let outputs = samples
            .iter()
            .map(|d| d.subset(&first_rows))
            .collect::<Result<Vec<_>>>()?;
        let budget = params.stage_budget(rows);
        let mut stage_progress = |p: Progress| {
            progress(StreamedProgress::Fit {
                rows,
                progress: p,
                budget,
            })
        };
        let fit = match &best {
            None => {
                let (fit, tried) = fit_pseudo_inputs(
                    &outputs,
                    &sparse.check(&outputs[0])?,
                    StartChoice::Validation(validation),
                    &mut stage_progress,
                )?;
                starts = tried;
                fit
            }
            Some((previous, _, _)) => fit_sparse(
                &outputs,
                previous.features.clone(),
                previous.kernels.clone(),
                previous.config,
                &sparse.optimiser,
                &mut stage_progress,
            )?,
        };
        let nlpd = validation_nlpd(&fit, validation)?;
        stages.push(SubsetStage {
            rows,
            validation_nlpd: nlpd,
            iterations: fit.run.iterations,
            seconds: stage_started.elapsed().as_secs_f64(),
        });
        let gain = best.as_ref().map_or(f64::INFINITY, |(_, b, _)| b - nlpd);
        if gain > 0.0 {
            best = Some((fit, nlpd, rows));
        }
        let next = (rows * 2).min(params.max_rows).min(pool);
        if gain < params.min_gain || next <= rows {
            break;
        }
        rows = next;
    }
    let (fit, _, fitted_rows) =
        best.ok_or_else(|| Error::Numerical("no stage was fitted".into()))?;
    Ok(Grown {
        fit,
        fitted_rows,
        stages,
        starts,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use nalgebra::DMatrix;
    use sgp_runtime::Kernel;

    use crate::data::stream::{scan, write_parquet};
    use crate::export::export;
    use crate::fit::restarts::start_positions;
    use crate::fit::sparse::{fit_restarted, VarianceSharing};
    use crate::fit::spgp::{collapsed, initial_kernels, COLLAPSED_BELOW};
    use crate::fit::streamed_basis::split::{rows_of, split_sums, sums_close};
    use crate::model::inference::Approximation;
    use crate::numerics::optimise::OptimiseOptions;
    use crate::synth::{generate, synthetic, Shape};

    /// The subset fit, the pass over every row, the finish (as
    /// `StreamedStart::finish_on_file` runs them).
    fn fit_streamed(
        table: &TableFile,
        scan: &Scan,
        params: &StreamedParams,
        progress: &mut dyn FnMut(StreamedProgress),
    ) -> Result<Fit> {
        let subset = fit_subset(table, scan, params, progress)?;
        let sums = subset
            .basis()
            .pass(table, &mut |at| progress(StreamedProgress::Pass(at)))?;
        subset.finish(&sums, 0.0)
    }

    /// Settings of a streamed fit small enough for a test.
    pub(crate) fn small() -> StreamedParams {
        StreamedParams {
            sparse: SparseParams {
                m: 8,
                restarts: 2,
                optimiser: OptimiseOptions {
                    max_iter: 30,
                    ..SparseParams::default().optimiser
                },
                ..SparseParams::default()
            },
            chunk_rows: 97,
            first_rows: 200,
            max_rows: 800,
            validation_rows: 300,
            min_gain: 0.0,
            in_memory_rows: 1000,
        }
    }

    /// 3000 ridge rows with a constant third input, as CSV and Parquet, in
    /// a directory of the caller's own (tests run in parallel).
    fn files() -> (tempfile::TempDir, TableFile, TableFile) {
        let (x2, y) = synthetic(3000, 2, 11);
        let x = DMatrix::from_fn(3000, 3, |i, j| if j < 2 { x2[(i, j)] } else { 4.0 });
        let names: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().to_path_buf();
        let mut text = String::from("a,b,c,y\n");
        for i in 0..3000 {
            text += &format!("{},{},{},{}\n", x[(i, 0)], x[(i, 1)], x[(i, 2)], y[i]);
        }
        std::fs::write(dir.join("d.csv"), text).unwrap();
        write_parquet(&dir.join("d.parquet"), &x, &y, &names, "y").unwrap();
        (
            temp,
            TableFile::open(dir.join("d.csv"), None).unwrap(),
            TableFile::open(dir.join("d.parquet"), None).unwrap(),
        )
    }

    #[test]
    fn grows_the_subset_and_conditions_on_every_row() {
        let (_dir, csv, parquet) = files();
        let params = small();
        let first = scan(&csv, params.sample_rows(), 0, 97, &mut |_| {}).unwrap();
        assert_eq!(first.constant_inputs, [2]);
        let mut passed = 0;
        let mut fitted = fit_streamed(&csv, &first, &params, &mut |p| {
            if let StreamedProgress::Pass(at) = p {
                passed = at.rows;
            }
        })
        .unwrap();
        assert_eq!(passed, 3000);
        let report = fitted.report.streamed.as_ref().unwrap();
        let rows: Vec<usize> = report.stages.iter().map(|s| s.rows).collect();
        // min_gain 0: the subset doubles to its cap (800) unless a doubling
        // made the validation NLPD worse.
        assert!(rows.starts_with(&[200, 400]), "{rows:?}");
        assert!(rows.iter().all(|&r| r <= 800));
        assert_eq!(fitted.report.rows, 3000);
        assert_eq!(fitted.report.ignored_inputs, ["c"]);
        assert_eq!(fitted.set.members[0].input_names, ["a", "b", "c"]);

        // Conditioned on 3000 rows, not on the 800 it was fitted on: the
        // objective is that of every row (the posterior pass itself is
        // checked against the in-memory posterior in crate::model::posterior_sums).
        assert!(fitted.report.nlml < 0.0, "{}", fitted.report.nlml);

        // Same data as Parquet: the same blob, byte for byte, exported as
        // `sgp fit` exports it (checked, and cured if need be, at the same
        // sampled rows).
        let first_pq = scan(&parquet, params.sample_rows(), 0, 97, &mut |_| {}).unwrap();
        let mut from_pq = fit_streamed(&parquet, &first_pq, &params, &mut |_| {}).unwrap();
        assert_eq!(first_pq.sample_x, first.sample_x);
        let check_x = first.sample_x.rows(0, 200).into_owned();
        let blob = export(&mut fitted, &check_x, false).unwrap();
        let blob_pq = export(&mut from_pq, &check_x, false).unwrap();
        assert!(!blob.blob.is_empty());
        assert_eq!(blob_pq.blob, blob.blob);
    }

    /// Held-out NLPD of `model` (raw units) on `x`, `y`.
    fn held_out_nlpd(model: &TrainedModel, x: &DMatrix<f64>, y: &nalgebra::DVector<f64>) -> f64 {
        let p = model.predict_raw(x).unwrap();
        crate::evaluate::metrics::mean_nlpd(p.mean.as_slice(), p.var.as_slice(), y.as_slice())
    }

    /// Margin (nats per held-out row) within which a streamed fit, its
    /// kernel and basis fitted on at most 2,400 of 3,000 rows, predicts as
    /// the in-memory fit of the same kernel on every row.
    const STREAMED_MARGIN: f64 = 0.1;

    /// Every Matérn kernel streams as the squared exponential does: over
    /// seeds, the subset fit, the pass and the export keep it, the export
    /// passes its f32 check, and on held-out rows the streamed fit is within
    /// [`STREAMED_MARGIN`] of the in-memory SPGP fit of the same kernel on
    /// every row.
    #[test]
    fn every_matern_kernel_streams_within_a_margin_of_the_in_memory_fit() {
        for seed in 0..2u64 {
            let (x, y) = synthetic(3000, 2, 20 + seed);
            let (test_x, test_y) = synthetic(500, 2, 40 + seed);
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("d.parquet");
            let names: Vec<String> = ["a", "b"].map(String::from).to_vec();
            write_parquet(&path, &x, &y, &names, "y").unwrap();
            let table = TableFile::open(&path, None).unwrap();
            let every_row = Dataset::from_raw(x, y, names, "y".into()).unwrap();
            for kernel in [Kernel::Matern12, Kernel::Matern32, Kernel::Matern52] {
                let mut params = StreamedParams {
                    first_rows: 600,
                    max_rows: 2400,
                    validation_rows: 500,
                    ..small()
                };
                params.sparse.kernel = kernel;
                params.sparse.seed = seed;
                let first = scan(&table, params.sample_rows(), seed, 97, &mut |_| {}).unwrap();
                let mut streamed = fit_streamed(&table, &first, &params, &mut |_| {}).unwrap();
                assert_eq!(streamed.report.kernel, kernel.name());
                let check_x = first.sample_x.rows(0, 200).into_owned();
                let exported = export(&mut streamed, &check_x, false).unwrap();
                assert!(exported.fidelity.passes(), "{:?}", exported.fidelity);
                let spgp = crate::fit::FitParams::Spgp(params.sparse.clone());
                let one = std::slice::from_ref(&every_row);
                let in_memory = crate::fit::fit(one, &spgp, &mut |_| {}).unwrap();
                assert_eq!(in_memory.report.kernel, kernel.name());
                let s = held_out_nlpd(&streamed.set.members[0], &test_x, &test_y);
                let m = held_out_nlpd(&in_memory.set.members[0], &test_x, &test_y);
                assert!(
                    s < m + STREAMED_MARGIN,
                    "seed {seed}, {}: streamed {s}, in memory {m}",
                    kernel.name()
                );
            }
        }
    }

    /// The pass split before its last chunk, each part summed by
    /// `StreamedBasis::sums` (as an engine's worker does) and merged in
    /// order, is the file's pass bit for bit (the same additions in the
    /// same order); other splits reassociate the sum, the same up to
    /// rounding; and the finish of the sums is the fit on the file.
    #[test]
    fn the_pass_splits_into_the_same_sums() {
        let (_dir, csv, _) = files();
        let params = small();
        let first = scan(&csv, params.sample_rows(), 0, 97, &mut |_| {}).unwrap();
        let subset = fit_subset(&csv, &first, &params, &mut |_| {}).unwrap();
        let basis = subset.basis().clone();
        let whole = basis.pass(&csv, &mut |_| {}).unwrap();
        let (x, y) = &rows_of(&csv);
        let split = |cut: usize| split_sums(&basis, (x, y), cut);
        let last_chunk = 97 * (3000 / 97);
        let parts = split(last_chunk);
        assert_eq!(parts, whole);
        let other = split(1000);
        assert_ne!(other, whole);
        assert!(sums_close(&other, &whole));
        // Wrong widths are refused, not summed.
        let narrow = basis.sums(&x.columns(0, 2).into_owned(), y);
        assert!(narrow.unwrap_err().to_string().contains("reads 3 inputs"));

        let fitted = subset.finish(&parts, 0.0).unwrap();
        let direct = fit_streamed(&csv, &first, &params, &mut |_| {}).unwrap();
        assert_eq!(fitted.report.nlml, direct.report.nlml);
        assert_eq!(
            fitted.set.members[0].form.beta,
            direct.set.members[0].form.beta
        );
    }

    #[test]
    fn the_first_stage_keeps_the_start_of_best_validation_nlpd() {
        let (x, y) = synthetic(900, 2, 5);
        let data = Dataset::from_raw(x, y, vec!["a".into(), "b".into()], "y".into()).unwrap();
        let fitted = data.subset(&(0..600).collect::<Vec<_>>()).unwrap();
        let validation = data.subset(&(600..900).collect::<Vec<_>>()).unwrap();
        let sparse = SparseParams {
            restarts: 3,
            ..small().sparse
        };
        let checked = sparse.check(&fitted).unwrap();
        let one = std::slice::from_ref(&fitted);
        let (kept, starts) = fit_pseudo_inputs(
            one,
            &checked,
            StartChoice::Validation(std::slice::from_ref(&validation)),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(starts.len(), 3);
        let kernels = initial_kernels(one, &checked).unwrap();
        let each: Vec<f64> = (0..3)
            .map(|k| {
                let z = start_positions(&fitted.x, &checked, k).unwrap().1;
                let fit = fit_sparse(
                    one,
                    PseudoInputs::new(z).unwrap(),
                    kernels.clone(),
                    kept.config,
                    &sparse.optimiser,
                    &mut |_| {},
                )
                .unwrap();
                validation_nlpd(&fit, std::slice::from_ref(&validation)).unwrap()
            })
            .collect();
        let best = each.iter().copied().fold(f64::INFINITY, f64::min);
        // The starts end in different optima, so the choice matters.
        assert!(each.iter().any(|&v| v > best + 1e-6), "{each:?}");
        assert_eq!(
            validation_nlpd(&kept, std::slice::from_ref(&validation)).unwrap(),
            best
        );
    }

    /// VFE from the data-scale start collapses to the constant mean on
    /// few-directions data (32 inputs); the streamed fit's first stage,
    /// like an in-memory fit, then starts again from the exact GP's
    /// hyperparameters, and the whole streamed fit keeps the signal.
    #[test]
    fn a_collapsed_first_stage_is_rescued() {
        let generated = generate(Shape::FewDirections, 1200, 0);
        let sparse = SparseParams {
            m: 5,
            approximation: Approximation::Vfe,
            restarts: 1,
            ..SparseParams::default()
        };
        let data = generated.to_dataset().unwrap();
        let fitted = data.subset(&(0..600).collect::<Vec<_>>()).unwrap();
        let validation = data.subset(&(600..1200).collect::<Vec<_>>()).unwrap();
        let checked = sparse.check(&fitted).unwrap();
        let choice = StartChoice::Validation(std::slice::from_ref(&validation));
        let start = |k: usize| {
            let (label, z) = start_positions(&fitted.x, &checked, k)?;
            Ok((label, PseudoInputs::new(z)?))
        };
        let one = std::slice::from_ref(&fitted);
        let kernels = initial_kernels(one, &checked).unwrap();
        let how = (choice, VarianceSharing::Auto);
        let (plain, _) = fit_restarted(one, &checked, kernels, &start, how, &mut |_| {}).unwrap();
        assert!(collapsed(plain.kernel()), "{:?}", plain.kernel());
        let (rescued, _) = fit_pseudo_inputs(one, &checked, choice, &mut |_| {}).unwrap();
        assert!(!collapsed(rescued.kernel()), "{:?}", rescued.kernel());
        assert!(
            validation_nlpd(&rescued, std::slice::from_ref(&validation)).unwrap()
                < validation_nlpd(&plain, std::slice::from_ref(&validation)).unwrap()
        );

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("few.parquet");
        let names = &generated.input_names;
        write_parquet(
            &path,
            &generated.x,
            &generated.y,
            names,
            &generated.target_name,
        )
        .unwrap();
        let table = TableFile::open(&path, None).unwrap();
        let params = StreamedParams {
            sparse,
            first_rows: 600,
            max_rows: 600,
            validation_rows: 600,
            ..small()
        };
        let first = scan(&table, params.sample_rows(), 0, 97, &mut |_| {}).unwrap();
        let streamed = fit_streamed(&table, &first, &params, &mut |_| {}).unwrap();
        let hyper = &streamed.report.outputs[0];
        assert!(
            hyper.signal_variance > COLLAPSED_BELOW * hyper.noise_variance,
            "{hyper:?}"
        );
    }

    #[test]
    fn refuses_a_sample_too_small_for_its_stages() {
        let (_dir, csv, _) = files();
        let params = StreamedParams {
            first_rows: 2000,
            max_rows: 2000,
            validation_rows: 1500,
            ..small()
        };
        let first = scan(&csv, params.sample_rows(), 0, 500, &mut |_| {}).unwrap();
        let err = fit_streamed(&csv, &first, &params, &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(err.contains("too few for a streamed fit"), "{err}");
    }
}
