//! Several targets on a file of any size (`sgp fit --target a,b`): the
//! streamed fit of [`crate::fit::streamed`] for every output at once.
//!
//! 1. The first pass reads the inputs and every target of each row
//!    (`scan` of a table whose trailing columns are the targets after the
//!    first) and keeps one seeded sample of rows for all outputs.
//! 2. On that sample, the choice `sgp fit` makes in memory
//!    (`crate::choose::outputs::basis_choice`, the same code on a random
//!    `CONTEST_ROWS` of the sampled rows): one basis for every output, or
//!    one model per output.
//! 3. One basis: the staged subset fit of every output together
//!    (`crate::fit::streamed::fit_subset_outputs`); one model per output: each
//!    output's own staged fit.
//! 4. One pass over every row sums every output on its basis (each chunk
//!    read once); the fit is the in-memory path's for that choice: one fit
//!    whose models share the basis, or one fit per output.

use nalgebra::{DMatrix, DVector};

use super::streamed_file::NotStreamed;
use crate::choose::outputs::{basis_choice, note_kernel, BasisChoice};
use crate::data::stream::{scan, Scan, TableFile};
use crate::fit::streamed::STREAMED_CHECK_ROWS;
use crate::fit::streamed::{
    fit_subset, fit_subset_outputs, stage_pool, StreamedParams, StreamedProgress, SubsetFit,
};
use crate::fit::streamed_basis::StreamedBasis;
use crate::fit::task::Task;
use crate::fit::{Choice, Fit, FitParams, KernelVerdict, Method};
use crate::model::features::InducingFeatures;
use crate::model::posterior_sums::PosteriorSums;
use crate::options::{KernelChoice, ModelChoice, Options};
use crate::{Error, Result};

/// Opens the table of a file or directory as `open(target, inputs)`:
/// its columns chosen as [`TableFile::open_columns`] chooses them.
pub(crate) type OpenTable<'a> = dyn Fn(Option<&str>, Option<&[String]>) -> Result<TableFile> + 'a;

/// The subset fit of several outputs: one basis, or one per output.
enum Subsets {
    /// Every output on one basis.
    Shared(Box<SubsetFit>),
    /// Each output its own model, in output order.
    Separate(Vec<SubsetFit>),
}

/// A streamed fit of several targets past its subset fit: the pass over
/// every row is left ([`OutputsStart::finish_on_file`], or sums of
/// [`OutputsStart::sums`] anywhere, then [`OutputsStart::finish`]).
pub struct OutputsStart {
    subsets: Subsets,
    /// One basis for every output or one model per output, and why.
    pub basis: BasisChoice,
    /// Raw sampled inputs the export is checked at.
    pub check_x: DMatrix<f64>,
    /// The file with every target: the inputs, then the targets after the
    /// first as trailing columns, the first as its target.
    wide: TableFile,
    auto: bool,
    kernel: Option<KernelVerdict>,
}

impl OutputsStart {
    /// Each output's basis, in output order.
    pub fn bases(&self) -> Vec<&StreamedBasis> {
        match &self.subsets {
            Subsets::Shared(s) => s.bases().iter().collect(),
            Subsets::Separate(each) => each.iter().map(SubsetFit::basis).collect(),
        }
    }

    /// The file's input columns, in order.
    pub fn input_names(&self) -> Vec<String> {
        let d = self.bases().first().map_or(0, |b| b.inputs);
        self.wide.input_names[..d.min(self.wide.input_names.len())].to_vec()
    }

    /// The file's target columns, in output order.
    pub fn target_names(&self) -> Vec<String> {
        let d = self.bases().first().map_or(0, |b| b.inputs);
        let mut names = vec![self.wide.target_name.clone()];
        names.extend(self.wide.input_names.iter().skip(d).cloned());
        names
    }

    /// The rows of the file, every one of which the pass must sum once.
    pub fn file_rows(&self) -> u64 {
        match &self.subsets {
            Subsets::Shared(s) => s.file_rows(),
            Subsets::Separate(each) => each.first().map_or(0, SubsetFit::file_rows),
        }
    }

    /// Each output's sums over the raw rows `x` (the inputs, in the order
    /// of the file's input columns) with targets `y` (a column per
    /// output), cut into chunks as a pass cuts the file.
    ///
    /// # Errors
    /// [`Error::BadInput`] for a wrong shape or a non-finite value.
    pub fn sums(&self, x: &DMatrix<f64>, y: &DMatrix<f64>) -> Result<Vec<PosteriorSums>> {
        outputs_sums(&self.bases(), x, y)
    }

    /// The fits conditioned on the rows whose sums, per output, are `sums`:
    /// one fit of every output on one basis, or one fit per output.
    ///
    /// # Errors
    /// As [`SubsetFit::finish`], for each output.
    pub fn finish(self, sums: &[PosteriorSums], pass_seconds: f64) -> Result<Vec<Fit>> {
        let mut fits = match self.subsets {
            Subsets::Shared(subset) => vec![subset.finish_outputs(sums, pass_seconds)?],
            Subsets::Separate(each) => {
                if sums.len() != each.len() {
                    return Err(Error::BadInput(format!(
                        "{} sets of sums for a fit of {} outputs",
                        sums.len(),
                        each.len()
                    )));
                }
                each.into_iter()
                    .zip(sums)
                    .map(|(subset, s)| subset.finish(s, pass_seconds))
                    .collect::<Result<_>>()?
            }
        };
        if self.auto || self.kernel.is_some() {
            for fit in &mut fits {
                fit.report.choice = Some(Choice::streamed(self.auto, self.kernel.clone()));
            }
        }
        Ok(fits)
    }

    /// The fits conditioned on every row of the file, read here once.
    ///
    /// # Errors
    /// Every error of reading the file or of [`OutputsStart::finish`].
    pub fn finish_on_file(self, progress: &mut dyn FnMut(StreamedProgress)) -> Result<Vec<Fit>> {
        let started = std::time::Instant::now();
        let sums = self.pass(progress)?;
        self.finish(&sums, started.elapsed().as_secs_f64())
    }

    /// Each output's sums over every row of the file, each chunk read once.
    fn pass(&self, progress: &mut dyn FnMut(StreamedProgress)) -> Result<Vec<PosteriorSums>> {
        let bases = self.bases();
        let d = bases[0].inputs;
        let mut sums: Vec<PosteriorSums> = bases
            .iter()
            .map(|b| PosteriorSums::zeros(b.features.num_inducing()))
            .collect();
        let chunk_rows = bases[0].chunk_rows;
        self.wide.for_each_chunk(chunk_rows, &mut |chunk, at| {
            let x = chunk.x.columns(0, d).into_owned();
            for (p, (basis, total)) in bases.iter().zip(&mut sums).enumerate() {
                let y = match p {
                    0 => chunk.y.clone(),
                    _ => chunk.x.column(d + p - 1).into_owned(),
                };
                total.merge(&basis.sums(&x, &y)?)?;
            }
            progress(StreamedProgress::Pass(at));
            Ok(())
        })?;
        Ok(sums)
    }
}

/// Starts the streamed fit of the targets `targets` (two or more) of the
/// file `open` opens (`open(target, inputs)`, its columns chosen as
/// [`TableFile::open_columns`] chooses them) with `inputs` its input
/// columns (`None`: every column but the targets): the first pass, the
/// choice of one basis or one model per output, and the subset fit; or
/// why it is not streamed.
///
/// # Errors
/// Every error of the options, of the columns, of reading the file and of
/// the fits.
pub(crate) fn start_outputs(
    open: &OpenTable<'_>,
    (targets, inputs): (&[String], Option<&[String]>),
    options: &Options,
    task: Option<Task>,
    progress: &mut dyn FnMut(StreamedProgress),
) -> Result<std::result::Result<OutputsStart, NotStreamed>> {
    let auto = matches!(options.model, None | Some(ModelChoice::Auto));
    match options.model {
        Some(ModelChoice::Family(Method::Spgp)) | None | Some(ModelChoice::Auto) => {}
        Some(ModelChoice::Family(family)) => return Ok(Err(NotStreamed::Family(family))),
    }
    if task == Some(Task::Classification) {
        return Ok(Err(NotStreamed::Outputs));
    }
    let mut params = StreamedParams::default();
    let FitParams::Spgp(sparse) = options.params(Method::Spgp, usize::MAX)? else {
        return Ok(Err(NotStreamed::Family(Method::Spgp)));
    };
    params.sparse = sparse;
    let first = open(targets.first().map(String::as_str), None)?;
    crate::data::multi_target::check_target_names(&first.source, targets)?;
    if !params.streams(&first)? {
        return Ok(Err(NotStreamed::Small(params.in_memory_rows)));
    }
    let mut spgp = options.clone();
    spgp.model = Some(ModelChoice::Family(Method::Spgp));
    spgp.check_applies(Some(Task::Regression), &[])?;
    let rest = &targets[1..];
    for name in rest {
        if !first.input_names.contains(name) {
            return Err(Error::BadInput(format!(
                "{}: no target column named '{name}'",
                first.source
            )));
        }
    }
    let inputs: Vec<String> = match inputs {
        Some(given) => {
            if let Some(both) = given.iter().find(|c| rest.contains(c)) {
                return Err(Error::BadInput(format!(
                    "{}: column '{both}' is named as a target and as an input",
                    first.source
                )));
            }
            given.to_vec()
        }
        None => first
            .input_names
            .iter()
            .filter(|c| !rest.contains(c))
            .cloned()
            .collect(),
    };
    let asked = Settled {
        auto,
        held_out: !options.no_held_out_choice,
        kernel_auto: options.kernel == Some(KernelChoice::Auto),
        seed: options.seed.unwrap_or(params.sparse.seed),
    };
    started(open, (targets, &inputs), params, asked, progress).map(Ok)
}

impl StreamedBasis {
    /// Each output's sums on its basis of `bases` over the raw rows `x`
    /// with targets `y` (a column per output): [`OutputsStart::sums`], for
    /// a worker that holds the bases only.
    ///
    /// # Errors
    /// [`Error::BadInput`] for a wrong shape or a non-finite value.
    pub fn outputs_sums(
        bases: &[&StreamedBasis],
        x: &DMatrix<f64>,
        y: &DMatrix<f64>,
    ) -> Result<Vec<PosteriorSums>> {
        outputs_sums(bases, x, y)
    }
}

/// [`StreamedBasis::outputs_sums`].
pub(crate) fn outputs_sums(
    bases: &[&StreamedBasis],
    x: &DMatrix<f64>,
    y: &DMatrix<f64>,
) -> Result<Vec<PosteriorSums>> {
    if y.ncols() != bases.len() {
        return Err(Error::BadInput(format!(
            "rows to sum have {} targets; the fit has {} outputs",
            y.ncols(),
            bases.len()
        )));
    }
    bases
        .iter()
        .zip(y.column_iter())
        .map(|(basis, column)| basis.sums(x, &column.into_owned()))
        .collect()
}

/// What the front door settled before the first pass.
struct Settled {
    /// `--model auto` (the report says why it is spgp).
    auto: bool,
    /// Held-out comparisons on.
    held_out: bool,
    /// `--kernel auto`.
    kernel_auto: bool,
    /// The first pass's sampling seed.
    seed: u64,
}

/// [`start_outputs`] past its checks: `params` the streamed fit's settings.
fn started(
    open: &OpenTable<'_>,
    (targets, inputs): (&[String], &[String]),
    mut params: StreamedParams,
    asked: Settled,
    progress: &mut dyn FnMut(StreamedProgress),
) -> Result<OutputsStart> {
    let rest = targets.get(1..).unwrap_or_default();
    let mut wide_columns = inputs.to_vec();
    wide_columns.extend(rest.iter().cloned());
    let wide = open(targets.first().map(String::as_str), Some(&wide_columns))?;
    let tables = targets
        .iter()
        .map(|t| open(Some(t), Some(inputs)))
        .collect::<Result<Vec<_>>>()?;
    let whole = scan(
        &wide,
        params.sample_rows(),
        asked.seed,
        params.chunk_rows,
        &mut |at| progress(StreamedProgress::Read(at)),
    )?;
    let scans = per_output(&whole, &tables)?;
    let pool = tables
        .iter()
        .zip(&scans)
        .map(|(table, scan)| stage_pool(table, scan, &params))
        .collect::<Result<Vec<_>>>()?;
    let kernel = if asked.kernel_auto {
        let (chosen, verdict) =
            crate::choose::kernel::choose_streamed(&pool, &params.sparse, asked.held_out)?;
        params.sparse.kernel = chosen;
        Some(verdict)
    } else {
        None
    };
    let spgp = FitParams::Spgp(params.sparse.clone());
    let mut basis = basis_choice(&pool, &spgp, asked.held_out);
    drop(pool);
    if let Some(verdict) = &kernel {
        note_kernel(&mut basis, params.sparse.kernel, Some(verdict));
    }
    let subsets = if basis.separate() {
        let each = tables
            .iter()
            .zip(&scans)
            .map(|(t, s)| fit_subset(t, s, &params, progress))
            .collect::<Result<Vec<_>>>()?;
        Subsets::Separate(each)
    } else {
        // The staged fit keeps one variance factor per output: its later
        // stages refit every output's own noise.
        params.sparse.sharing = crate::fit::sparse::VarianceSharing::Separate;
        Subsets::Shared(Box::new(fit_subset_outputs(
            &tables, &scans, &params, progress,
        )?))
    };
    let check_rows = whole.sample_x.nrows().min(STREAMED_CHECK_ROWS);
    let d = tables[0].input_names.len();
    Ok(OutputsStart {
        subsets,
        basis,
        check_x: whole.sample_x.view((0, 0), (check_rows, d)).into_owned(),
        wide,
        auto: asked.auto,
        kernel,
    })
}

/// Each output's scan of the first pass `whole` over the file with every
/// target (its inputs, then the targets after the first): the inputs'
/// standardisation and sample, and the output's target.
///
/// # Errors
/// [`Error::BadInput`] for a constant target or only constant inputs.
fn per_output(whole: &Scan, tables: &[TableFile]) -> Result<Vec<Scan>> {
    let d = tables[0].input_names.len();
    let constant_inputs: Vec<usize> = whole
        .constant_inputs
        .iter()
        .copied()
        .filter(|&j| j < d)
        .collect();
    if constant_inputs.len() == d {
        return Err(Error::BadInput(format!(
            "{}: every input column ({}) is constant: there is nothing to learn from",
            tables[0].source,
            tables[0].input_names.join(", ")
        )));
    }
    let t = &whole.transform;
    let mut x_part = t.clone();
    for v in [
        &mut x_part.x_mean,
        &mut x_part.x_scale,
        &mut x_part.x_min,
        &mut x_part.x_max,
    ] {
        v.truncate(d);
    }
    let sample_x = whole.sample_x.columns(0, d).into_owned();
    tables
        .iter()
        .enumerate()
        .map(|(p, table)| {
            let (y_mean, y_scale, sample_y) = match p {
                0 => (t.y_mean, t.y_scale, whole.sample_y.clone()),
                _ => {
                    let j = d + p - 1;
                    if whole.constant_inputs.contains(&j) {
                        return Err(Error::BadInput(format!(
                            "{}: target column '{}' is constant (every row is {}): there is \
                             nothing to learn",
                            table.source, table.target_name, t.x_min[j]
                        )));
                    }
                    let column: DVector<f64> = whole.sample_x.column(j).into_owned();
                    (t.x_mean[j], t.x_scale[j], column)
                }
            };
            Ok(Scan {
                rows: whole.rows,
                transform: crate::data::Standardisation {
                    y_mean,
                    y_scale,
                    ..x_part.clone()
                },
                constant_inputs: constant_inputs.clone(),
                sample_x: sample_x.clone(),
                sample_y,
                target_values: Vec::new(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choose::outputs::fit_outputs;
    use crate::choose::{Asked, Request};
    use crate::data::multi_target::MultiTargetData;
    use crate::data::stream::write_parquet;
    use crate::data::Dataset;
    use crate::export::export;
    use crate::fit::streamed_basis::split::sums_close;
    use crate::fit::SparseParams;
    use crate::model::TrainedModel;
    use crate::synth::dynamics::System;

    /// Margin (nats per held-out row, each output) within which the
    /// streamed fit, its basis fitted on at most `params().max_rows` sampled
    /// rows, predicts as the in-memory fit of every row.
    const MARGIN: f64 = 0.1;

    fn params(seed: u64) -> StreamedParams {
        let small = crate::fit::streamed::tests::small();
        let mut sparse = SparseParams {
            m: 16,
            restarts: 1,
            seed,
            ..small.sparse
        };
        sparse.optimiser.max_iter = 100;
        StreamedParams {
            sparse,
            first_rows: 600,
            max_rows: 2400,
            validation_rows: 500,
            ..small
        }
    }

    /// `data` as a CSV file in `dir`: the inputs, then every target.
    fn write(dir: &std::path::Path, data: &MultiTargetData) -> std::path::PathBuf {
        let first = data.first();
        let (x, names) = (first.raw_x(), &first.input_names);
        let ys: Vec<_> = data.outputs().iter().map(Dataset::raw_y).collect();
        let mut header = names.clone();
        header.extend(data.target_names());
        let mut text = header.join(",") + "\n";
        for i in 0..x.nrows() {
            let mut row: Vec<String> = x.row(i).iter().map(|v| format!("{v:?}")).collect();
            row.extend(ys.iter().map(|y| format!("{:?}", y[i])));
            text += &(row.join(",") + "\n");
        }
        let path = dir.join("d.csv");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn start(path: &std::path::Path, data: &MultiTargetData, seed: u64) -> OutputsStart {
        let open = |t: Option<&str>, i: Option<&[String]>| TableFile::open_columns(path, t, i);
        let asked = Settled {
            auto: false,
            held_out: true,
            kernel_auto: false,
            seed,
        };
        let (targets, inputs) = (data.target_names(), data.first().input_names.clone());
        started(&open, (&targets, &inputs), params(seed), asked, &mut |_| {}).unwrap()
    }

    /// Output `p`'s model among `fits`: one fit of every output, or one per
    /// output.
    fn model(fits: &[Fit], p: usize) -> &TrainedModel {
        match fits {
            [shared] => &shared.set.members[p],
            each => &each[p].set.members[0],
        }
    }

    fn nlpd(model: &TrainedModel, test: &Dataset) -> f64 {
        let rows = crate::evaluate::metrics::row_nlpds(model, test).unwrap();
        rows.iter().sum::<f64>() / rows.len() as f64
    }

    /// Over seeds, on the arm (its outputs vary in different places: one
    /// model per output) and on the doubled pendulum (one quantity and
    /// twice it: one basis): the streamed fit makes the in-memory fit's
    /// choice, exports what the in-memory path exports for it (one fit of
    /// every output, or one per output), and predicts each output of
    /// held-out rows within [`MARGIN`] of the in-memory fit of every row.
    #[test]
    fn several_targets_stream_with_the_in_memory_choice_and_within_a_margin() {
        for seed in 0..2u64 {
            for system in [System::Arm, System::Doubled] {
                let data = system.data(3000, seed).unwrap();
                let test = system.data(500, seed + 100).unwrap();
                let dir = tempfile::tempdir().unwrap();
                let path = write(dir.path(), &data);
                let streamed = start(&path, &data, seed);
                let basis = streamed.basis.clone();
                let check_x = streamed.check_x.clone();
                let mut fits = streamed.finish_on_file(&mut |_| {}).unwrap();
                let request = Request {
                    asked: Asked::Family(FitParams::Spgp(params(seed).sparse)),
                    held_out: true,
                    choose_objective: false,
                    choose_kernel: false,
                };
                let in_memory = fit_outputs(&data, &request, &mut |_| {}).unwrap();
                let kept = in_memory.basis.as_ref().unwrap().kept;
                let why = format!("{} seed {seed}: {}", system.name(), basis.reason);
                assert_eq!(basis.kept, kept, "{why}");
                assert_eq!(fits.len(), in_memory.fits.len(), "{why}");
                for fit in &mut fits {
                    assert_eq!(fit.report.rows, 3000);
                    let exported = export(fit, &check_x, false).unwrap();
                    assert!(exported.fidelity.passes(), "{:?}", exported.fidelity);
                }
                for (p, output) in test.outputs().iter().enumerate() {
                    let s = nlpd(model(&fits, p), output);
                    let m = nlpd(model(&in_memory.fits, p), output);
                    assert!(
                        s < m + MARGIN,
                        "{why}: output {p} streamed {s}, in memory {m}"
                    );
                }
            }
        }
    }

    /// The same rows as CSV and Parquet (read in other batches): the same
    /// blob, byte for byte; the pass split before its last chunk, each
    /// part's sums ([`OutputsStart::sums`], as an engine's worker sums its
    /// partition) merged in order, is the file's pass bit for bit, another
    /// split the same up to rounding.
    #[test]
    fn other_chunkings_give_the_same_blob() {
        let data = System::Doubled.data(3000, 7).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let csv = write(dir.path(), &data);
        // Parquet holds one target column: the others go in as columns
        // before it, which is where the wide table reads them.
        let outputs = data.outputs();
        let x = outputs[0].raw_x();
        let mut wide = x
            .clone()
            .resize_horizontally(x.ncols() + outputs.len() - 1, 0.0);
        let mut names = outputs[0].input_names.clone();
        for (p, output) in outputs.iter().enumerate().skip(1) {
            wide.set_column(x.ncols() + p - 1, &output.raw_y());
            names.push(output.target_name.clone());
        }
        let parquet = dir.path().join("d.parquet");
        let first = &outputs[0];
        write_parquet(&parquet, &wide, &first.raw_y(), &names, &first.target_name).unwrap();

        let from_csv = start(&csv, &data, 7);
        let check_x = from_csv.check_x.clone();
        let y = DMatrix::from_columns(&outputs.iter().map(Dataset::raw_y).collect::<Vec<_>>());
        let split = |cut: usize| {
            let part = |at: usize, len: usize| {
                let rows = (x.rows(at, len).into_owned(), y.rows(at, len).into_owned());
                from_csv.sums(&rows.0, &rows.1).unwrap()
            };
            let mut sums = part(0, cut);
            for (a, b) in sums.iter_mut().zip(&part(cut, 3000 - cut)) {
                a.merge(b).unwrap();
            }
            sums
        };
        let whole = from_csv.pass(&mut |_| {}).unwrap();
        assert_eq!(split(97 * (3000 / 97)), whole);
        for (other, whole) in split(1000).iter().zip(&whole) {
            assert_ne!(other, whole);
            assert!(sums_close(other, whole));
        }
        let blob = |start: OutputsStart| {
            let mut fits = start.finish_on_file(&mut |_| {}).unwrap();
            assert_eq!(fits.len(), 1, "the doubled pendulum shares one basis");
            assert_eq!(fits[0].set.members.len(), 2);
            export(&mut fits[0], &check_x, false).unwrap().blob
        };
        let blob_csv = blob(from_csv);
        assert!(!blob_csv.is_empty());
        assert_eq!(blob(start(&parquet, &data, 7)), blob_csv);
    }
}
