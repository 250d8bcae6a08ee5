//! The svgp classifier on data of any size: the kernel and inducing inputs
//! fitted on a seeded sample, `q(u)` on every row.
//!
//! 1. The first pass (`crate::data::stream::scan`) is the regression's:
//!    validation, standardisation, a seeded random sample.
//! 2. The classifier `sgp fit --model svgp` fits in memory is fitted on
//!    the first `SUBSET_ROWS` sampled rows (its task, positive class and
//!    classes decided there as in memory), giving the pseudo-inputs, the
//!    kernel, each latent's bias and a first `q(u)`.
//! 3. `PASSES` passes over every row then move each latent's `q(v)`
//!    (whitened, `u = Lu v`) to the maximiser of the same bound on every
//!    row, the basis, kernel and bias held: each pass is one natural-gradient
//!    step of length 1 on the bound, whose new natural parameters are sums
//!    over rows ([`SiteSums`]) of each row's expected probit curvature and
//!    slope at the last `q(v)`:
//!    `Lambda = I + sum_n h_n a_n a_n^T`, `Lambda m = sum_n a_n (g_n + h_n
//!    mu_n)`, with `a_n = Lu^{-1} k_u(x_n)`, `mu_n = a_n^T m` and `g_n`,
//!    `-h_n / 2` the derivatives of `E_q[log Phi(y_n (f_n + b))]` in the
//!    marginal's mean and variance. A fixed point is the bound's optimum
//!    in `q(v)` (its stationarity conditions); the probit is log-concave,
//!    so `Lambda` stays positive definite.
//!
//! Chunks are summed in blocks of fixed size folded in order, as
//! [`super::streamed_basis`] sums a regression's: the same rows in the same
//! chunks give the same bits whatever the threads, the format, or a split
//! at a chunk's end. Memory is O(sample + chunk M + K M^2).

use std::time::Instant;

use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;

use super::streamed::{sampled_dataset, StreamReport, StreamedParams, StreamedProgress};
use super::streamed_basis::{pass_of, sums_of, RowPass};
use super::svgp::{fit_latent_state, latent_set, LatentFit, SvgpParams};
use super::{Expansion, Fit, FitReport, Method, OptimiserReport, OutputReport, Rebuilt};
use crate::data::stream::{ReadProgress, Scan, TableFile};
use crate::data::{is_class, Dataset, Standardisation};
use crate::fit::task::{choose_task, Classes, Task};
use crate::model::features::{InducingFeatures, PseudoInputs};
use crate::model::inference::svgp::{expected_log_probit, SvgpConfig, Variational};
use crate::model::kernel::KernelParams;
use crate::model::posterior_sums::{check_covers, union};
use crate::numerics::linalg::{cholesky_jittered, mat_ref, mul, solve_lower_mut, JitterPolicy};
use crate::{Error, Result};

/// Sampled rows the classifier's kernel and inducing inputs are fitted on:
/// where the in-memory svgp classifier at `--m 64` has reached its held-out
/// error on the ring of docs/src/cluster.md ("Classifiers").
pub(crate) const SUBSET_ROWS: usize = 20_000;

/// Passes over every row that move `q(u)` towards the bound's optimum
/// (module documentation); docs/src/cluster.md measures more.
pub(crate) const PASSES: usize = 3;

/// Rows per block of a chunk's parallel sums (fixed, so the sums do not
/// depend on the thread count).
const BLOCK_ROWS: usize = 512;

/// What one pass over rows sums, per latent (module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct SiteSums {
    /// Rows summed.
    pub rows: u64,
    /// `sum_n h_n a_n a_n^T`, per latent.
    pub(crate) precision: Vec<DMatrix<f64>>,
    /// `sum_n a_n (g_n + h_n mu_n)`, per latent.
    pub(crate) shift: Vec<DVector<f64>>,
    /// `sum_n E_q[log Phi]` over the rows and latents at the `q(u)` the
    /// pass linearised at.
    pub(crate) expected_log_lik: f64,
    /// The numbered parts these sums cover, as
    /// [`crate::model::posterior_sums::PosteriorSums::parts`]: a lost or repeated partition is named.
    pub(crate) parts: Vec<(u64, u64)>,
}

impl SiteSums {
    fn zeros(m: usize, latents: usize) -> Self {
        SiteSums {
            rows: 0,
            precision: vec![DMatrix::zeros(m, m); latents],
            shift: vec![DVector::zeros(m); latents],
            expected_log_lik: 0.0,
            parts: Vec::new(),
        }
    }

    /// These sums, labelled as those of part `part` of the rows
    /// ([`crate::model::posterior_sums::PosteriorSums::of_part`]).
    pub fn of_part(mut self, part: u64) -> Self {
        self.parts = vec![(part, part.saturating_add(1))];
        self
    }

    /// Refuses sums that are not of exactly `rows` rows and, `parts`
    /// given, the parts `0..parts` ([`crate::model::posterior_sums::PosteriorSums::check_covers`]).
    ///
    /// # Errors
    /// [`Error::BadInput`] naming the rows and parts missing or in excess.
    pub fn check_covers(&self, rows: u64, parts: Option<u64>) -> Result<()> {
        check_covers(&self.parts, self.rows, (rows, parts))
    }

    /// Adds the sums of another, disjoint set of rows.
    ///
    /// # Errors
    /// [`Error::BadInput`] for sums of another shape, or of a numbered
    /// part both hold.
    pub fn merge(&mut self, other: &SiteSums) -> Result<()> {
        let shape = |s: &SiteSums| (s.precision.len(), s.shift.first().map(|v| v.len()));
        if shape(self) != shape(other) {
            return Err(Error::BadInput(
                "cannot merge a classifier's sums of another basis or class count".into(),
            ));
        }
        self.parts = union(&self.parts, &other.parts)?;
        self.rows += other.rows;
        for (s, o) in self.precision.iter_mut().zip(&other.precision) {
            *s += o;
        }
        for (s, o) in self.shift.iter_mut().zip(&other.shift) {
            *s += o;
        }
        self.expected_log_lik += other.expected_log_lik;
        Ok(())
    }
}

/// What a pass over every row needs: the fitted basis, kernel and
/// standardisation, and the `q(u)` the pass linearises at.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassifierBasis {
    /// The pseudo-inputs (standardised units, kept inputs only).
    pub(crate) features: PseudoInputs,
    /// The kernel.
    pub(crate) kernel: KernelParams,
    /// The bound's jitter.
    pub(crate) config: SvgpConfig,
    /// Each latent's `q(v)` and bias.
    pub(crate) qs: Vec<Variational>,
    /// The class value each latent says yes to (raw units).
    pub(crate) classes: Vec<f64>,
    /// Every class value of the target (a row of another is refused).
    pub(crate) known: Vec<f64>,
    /// Raw to standardised units, of the kept inputs.
    pub(crate) transform: Standardisation,
    /// Indices of the inputs the model reads (the non-constant ones).
    pub(crate) keep: Vec<usize>,
    /// Inputs of a raw row (constant ones included).
    pub(crate) inputs: usize,
    /// Rows per chunk of a pass.
    pub(crate) chunk_rows: usize,
}

impl ClassifierBasis {
    /// The sums of the raw rows `x` (file column order) with raw class
    /// values `y`, in chunks of the basis's `chunk_rows` as a pass
    /// reads a file.
    ///
    /// # Errors
    /// [`Error::BadInput`] for a wrong shape, a non-finite value or a class
    /// value the sample did not hold; [`Error::Numerical`] if `Kuu` cannot
    /// be factorised.
    pub fn sums(&self, x: &DMatrix<f64>, y: &DVector<f64>) -> Result<SiteSums> {
        sums_of(self, x, y)
    }

    /// The sums of every row of `table`; `progress` after each chunk.
    ///
    /// # Errors
    /// Every error of reading the file and of [`ClassifierBasis::sums`].
    pub(crate) fn pass(
        &self,
        table: &TableFile,
        progress: &mut dyn FnMut(ReadProgress),
    ) -> Result<SiteSums> {
        pass_of(self, table, progress)
    }

    /// The basis whose `q(u)`s are the step of `sums` (module
    /// documentation): the biases held.
    ///
    /// # Errors
    /// [`Error::Numerical`] if a new precision cannot be factorised.
    pub fn updated(&self, sums: &SiteSums) -> Result<ClassifierBasis> {
        let qs = self
            .qs
            .iter()
            .zip(sums.precision.iter().zip(&sums.shift))
            .map(|(q, (p, s))| step(q, p, s))
            .collect::<Result<Vec<_>>>()?;
        Ok(ClassifierBasis { qs, ..self.clone() })
    }

    /// The negative bound at the `q(u)`s `sums` linearised at.
    pub fn neg_elbo(&self, sums: &SiteSums) -> f64 {
        self.qs.iter().map(Variational::kl).sum::<f64>() - sums.expected_log_lik
    }

    fn kuu_factor(&self) -> Result<DMatrix<f64>> {
        let kuu = self.features.kuu(&self.kernel);
        Ok(cholesky_jittered(&kuu, self.kernel.signal_var(), &self.config.jitter)?.l)
    }

    fn block_sums(&self, lu: &DMatrix<f64>, xs: &DMatrix<f64>, y: &[f64]) -> Result<SiteSums> {
        let mut a = self.features.kuf(&self.kernel, xs.as_view());
        solve_lower_mut(lu, &mut a)?;
        let kdiag = self.features.kdiag(&self.kernel, xs.as_view());
        let mut sums = SiteSums::zeros(a.nrows(), self.qs.len());
        sums.rows = y.len() as u64;
        for (k, q) in self.qs.iter().enumerate() {
            let mu = a.tr_mul(&q.mean);
            let b = mul(mat_ref(&q.sqrt).transpose(), mat_ref(&a));
            let mut weight = DVector::zeros(y.len());
            let mut a_h = a.clone();
            for n in 0..y.len() {
                let label = if is_class(y[n], self.classes[k]) {
                    1.0
                } else {
                    -1.0
                };
                let var = kdiag[n] - a.column(n).norm_squared() + b.column(n).norm_squared();
                let (value, d_mu, d_var) = expected_log_probit(label, mu[n], var, q.bias);
                let h = (-2.0 * d_var).max(0.0);
                sums.expected_log_lik += value;
                weight[n] = d_mu + h * mu[n];
                a_h.column_mut(n).scale_mut(h);
            }
            sums.shift[k] = &a * weight;
            sums.precision[k] = mul(mat_ref(&a_h), mat_ref(&a).transpose());
        }
        Ok(sums)
    }
}

impl RowPass for ClassifierBasis {
    type Sums = SiteSums;
    type Prepared<'a> = DMatrix<f64>;

    fn shape(&self) -> (usize, usize) {
        (self.inputs, self.chunk_rows)
    }

    /// The factor `Lu` of `Kuu`.
    fn prepare(&self) -> Result<DMatrix<f64>> {
        self.kuu_factor()
    }

    fn zeros(&self) -> SiteSums {
        SiteSums::zeros(self.features.num_inducing(), self.qs.len())
    }

    fn merge(sums: &mut SiteSums, other: &SiteSums) -> Result<()> {
        sums.merge(other)
    }

    /// The sums of one chunk of raw rows, its first row `first_row` of the
    /// file (for messages): blocks of [`BLOCK_ROWS`] in parallel, added in
    /// order.
    fn chunk_sums(
        &self,
        lu: &Self::Prepared<'_>,
        x: &DMatrix<f64>,
        y: &DVector<f64>,
        first_row: u64,
    ) -> Result<SiteSums> {
        if let Some(i) = (0..y.len()).find(|&i| !self.known.iter().any(|&c| is_class(y[i], c))) {
            return Err(Error::BadInput(format!(
                "data row {}: class value {} is none of the {} the sampled rows hold; a streamed \
                 classifier learns the classes of its sample (fit the file in memory, \
                 --in-memory, for a class this rare)",
                first_row + i as u64 + 1,
                y[i],
                self.known.len()
            )));
        }
        let xs = self.transform.apply_x(&x.select_columns(&self.keep));
        let starts: Vec<usize> = (0..y.len()).step_by(BLOCK_ROWS).collect();
        let blocks = starts
            .par_iter()
            .map(|&r0| {
                let rows = BLOCK_ROWS.min(y.len() - r0);
                self.block_sums(
                    lu,
                    &xs.rows(r0, rows).into_owned(),
                    &y.as_slice()[r0..r0 + rows],
                )
            })
            .collect::<Result<Vec<_>>>()?;
        let mut sums = self.zeros();
        for block in &blocks {
            sums.merge(block)?;
        }
        Ok(sums)
    }
}

/// The `q(v)` of natural parameters `I + precision` and `shift`, with
/// `q`'s bias.
fn step(q: &Variational, precision: &DMatrix<f64>, shift: &DVector<f64>) -> Result<Variational> {
    let m = shift.len();
    let mut lambda = precision.clone() + DMatrix::identity(m, m);
    lambda = (&lambda + lambda.transpose()) * 0.5;
    let chol = lambda
        .cholesky()
        .ok_or_else(|| Error::Numerical("a streamed classifier's precision is singular".into()))?;
    let mean = chol.solve(shift);
    let cov = chol.inverse();
    let cov = (&cov + cov.transpose()) * 0.5;
    let sqrt = cov
        .cholesky()
        .ok_or_else(|| Error::Numerical("a streamed classifier's covariance is singular".into()))?
        .l();
    Ok(Variational {
        mean,
        sqrt,
        bias: q.bias,
    })
}

/// A streamed classifier whose subset fit is done: the passes over every
/// row are left ([`ClassifierStart::finish_on_file`]).
pub struct ClassifierStart {
    fit: LatentFit,
    basis: ClassifierBasis,
    /// The sample with the task decided, without its constant inputs.
    sample: Dataset,
    /// The sample with every input.
    full: Dataset,
    /// A binary classification's labels, negative then positive.
    pub labels: Vec<String>,
    /// What the decision of the task said, for the user.
    pub notes: Vec<String>,
    /// Raw sampled inputs the export is checked at.
    pub check_x: DMatrix<f64>,
    fitted_rows: usize,
    rows: u64,
    table: TableFile,
    passes: usize,
    started: Instant,
}

impl ClassifierStart {
    /// The basis of the first pass over every row.
    pub fn basis(&self) -> &ClassifierBasis {
        &self.basis
    }

    /// The fit after the passes over every row of the file, read here.
    ///
    /// # Errors
    /// Every error of reading the file; [`Error::Numerical`] if a step
    /// fails.
    pub fn finish_on_file(self, progress: &mut dyn FnMut(StreamedProgress)) -> Result<Fit> {
        let pass_started = Instant::now();
        let (basis, neg_elbo) =
            passes(&self.basis, (&self.table, self.rows), self.passes, progress)?;
        self.finish(basis, neg_elbo, pass_started.elapsed().as_secs_f64())
    }

    /// Passes over every row a finish expects (`PASSES`).
    pub fn passes(&self) -> usize {
        self.passes
    }

    /// The file's input columns, in order (constant ones included).
    pub fn input_names(&self) -> Vec<String> {
        self.full.input_names.clone()
    }

    /// The file's target column.
    pub fn target_name(&self) -> String {
        self.full.target_name.clone()
    }

    /// The file's text class labels, sorted (empty for numbers): each
    /// pass reads a target cell as its label's index here, as
    /// [`ClassifierBasis::sums`] takes it.
    pub fn text_labels(&self) -> &[String] {
        self.table.class_labels()
    }

    /// Rows of the file, every one of which each pass must sum once.
    pub fn file_rows(&self) -> u64 {
        self.rows
    }

    /// The fit whose `q(u)`s are those of `basis`, after passes run
    /// elsewhere (an engine's rounds: each round sums every row on the last
    /// basis, [`ClassifierBasis::sums`] of parts merged in a fixed order,
    /// then [`ClassifierBasis::updated`]); `neg_elbo` is
    /// [`ClassifierBasis::neg_elbo`] of the last round's sums. The rounds
    /// of [`ClassifierStart::finish_on_file`] with parts that end at its
    /// chunks' ends give its blob, byte for byte.
    ///
    /// # Errors
    /// [`Error::BadInput`] for a basis of another shape; every error of
    /// the export's rebuild, which reads the file again.
    pub fn finish(self, basis: ClassifierBasis, neg_elbo: f64, pass_seconds: f64) -> Result<Fit> {
        let (a, b) = (&basis, &self.basis);
        let same = a.features == b.features
            && a.kernel == b.kernel
            && a.qs.len() == b.qs.len()
            && a.classes == b.classes;
        if !same {
            return Err(Error::BadInput(
                "a classifier's passes ran on another basis than its start's".into(),
            ));
        }
        let ClassifierStart {
            fit,
            sample,
            full,
            fitted_rows,
            rows,
            table,
            passes: count,
            started,
            ..
        } = self;
        let (set, escalations) = latent_set(&sample, &fit, &basis.qs, &basis.config)?;
        let file_rows = usize::try_from(rows).unwrap_or(usize::MAX);
        let mut report = FitReport::new(Method::Svgp, file_rows, neg_elbo);
        report.jitter_escalations = escalations;
        report.optimiser = Some(OptimiserReport::new(&fit.run, fit.run.iterations));
        report.starts = fit.starts.clone();
        report.outputs = if fit.binary {
            vec![OutputReport::named(&sample.target_name, None)]
        } else {
            set.class_labels
                .iter()
                .map(|l| OutputReport::named(l, None))
                .collect()
        };
        crate::fit::warnings::prepend_data_warnings(&mut report.warnings, &full);
        report.streamed = Some(StreamReport {
            rows,
            fitted_rows,
            validation_rows: 0,
            stages: Vec::new(),
            chunk_rows: basis.chunk_rows,
            pass_seconds,
            passes: Some(count),
        });
        let kernels = vec![fit.kernel.clone(); set.members.len()];
        let jitter = basis.config.jitter.initial;
        let first = basis.clone();
        // The export cure: the same passes from the subset's q(u) with more
        // jitter on Kuu (whose factor the whitened q(u) is relative to).
        let rebuild = move |policy: JitterPolicy, _max_iter: u64| {
            let start = ClassifierBasis {
                config: SvgpConfig {
                    jitter: policy,
                    ..first.config
                },
                qs: fit.qs.clone(),
                ..first.clone()
            };
            let (again, nlml) = passes(&start, (&table, rows), count, &mut |_| {})?;
            let (set, _) = latent_set(&sample, &fit, &again.qs, &again.config)?;
            Ok(Rebuilt {
                forms: set.members.iter().map(|m| m.form.clone()).collect(),
                biases: Some(again.qs.iter().map(|q| q.bias).collect()),
                nlml,
                kernels: vec![fit.kernel.clone(); set.members.len()],
                noise_held: false,
            })
        };
        let mut fitted = Fit::new(set, report, kernels, (jitter, Box::new(rebuild)));
        if !full.constant_inputs.is_empty() {
            Expansion::for_data(&full).attach(&mut fitted);
        }
        fitted.report.seconds = started.elapsed().as_secs_f64();
        Ok(fitted)
    }
}

/// `count` passes from `basis`: the last basis and the negative bound at
/// the `q(u)` the last pass linearised at.
fn passes(
    basis: &ClassifierBasis,
    (table, rows): (&TableFile, u64),
    count: usize,
    progress: &mut dyn FnMut(StreamedProgress),
) -> Result<(ClassifierBasis, f64)> {
    let mut basis = basis.clone();
    let mut neg_elbo = f64::NAN;
    for _ in 0..count.max(1) {
        let sums = basis.pass(table, &mut |at| progress(StreamedProgress::Pass(at)))?;
        if sums.rows != rows {
            return Err(Error::BadInput(format!(
                "{}: a pass read {} rows, the first pass {rows}",
                table.source, sums.rows
            )));
        }
        neg_elbo = basis.neg_elbo(&sums);
        basis = basis.updated(&sums)?;
    }
    Ok((basis, neg_elbo))
}

/// The task `sgp fit` would decide for the sample of `scan` (as asked, or
/// from the target), and the classifier's fit on the first `subset_rows`
/// sampled rows where it is a classification; `None` for a regression.
///
/// # Errors
/// The task's refusals (as in memory), and every error of the subset fit.
pub(crate) fn start_classifier(
    table: &TableFile,
    scan: &Scan,
    (params, streamed, subset_rows): (&SvgpParams, &StreamedParams, usize),
    (task, positive): (Option<Task>, Option<&str>),
    progress: &mut dyn FnMut(StreamedProgress),
) -> Result<Option<ClassifierStart>> {
    let started = Instant::now();
    let rows = scan.sample_x.nrows().min(subset_rows);
    let raw = sampled_dataset(table, scan);
    let subset = raw.subset(&(0..rows).collect::<Vec<_>>())?;
    let known = subset.target_classes();
    let chosen = choose_task(subset, task, positive, "--model", &[Method::Svgp])?;
    let (full, labels) = match chosen.classes {
        Classes::None => {
            // A regression asked of svgp: refused as in memory.
            params.check(&chosen.data)?;
            return Ok(None);
        }
        Classes::Binary(labels) => (chosen.data, labels),
        Classes::Several => (chosen.data.into_classes()?, Vec::new()),
    };
    let sample = if scan.constant_inputs.is_empty() {
        full.clone()
    } else {
        full.without_inputs(&scan.constant_inputs)?
    };
    let budget = params.iteration_budget();
    let fit = fit_latent_state(&sample, &params.check(&sample)?, &mut |p| {
        progress(StreamedProgress::Fit {
            rows,
            progress: p,
            budget,
        })
    })?;
    let basis = ClassifierBasis {
        features: fit.features.clone(),
        kernel: fit.kernel.clone(),
        config: fit.config,
        qs: fit.qs.clone(),
        classes: fit.classes.clone(),
        known,
        transform: sample.transform.clone(),
        keep: (0..table.input_names.len())
            .filter(|j| !scan.constant_inputs.contains(j))
            .collect(),
        inputs: table.input_names.len(),
        chunk_rows: streamed.chunk_rows,
    };
    let check_rows = scan
        .sample_x
        .nrows()
        .min(super::streamed::STREAMED_CHECK_ROWS);
    Ok(Some(ClassifierStart {
        fit,
        basis,
        sample,
        full,
        labels,
        notes: chosen.notes,
        check_x: scan.sample_x.rows(0, check_rows).into_owned(),
        fitted_rows: rows,
        rows: scan.rows,
        table: table.clone(),
        passes: PASSES,
        started,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::stream::{scan, write_parquet};
    use crate::evaluate::class_scores as scores;
    use crate::evaluate::metrics::error_rate;
    use crate::export::export;
    use crate::fit::streamed_basis::split::{rows_of, split_sums};
    use crate::fit::svgp::test_params;
    use crate::fit::{fit, FitParams};
    use crate::model::multiclass::{probabilities, ClassLink};
    use crate::synth::{classification, ClassShape};

    fn svgp(seed: u64) -> SvgpParams {
        test_params(16, seed)
    }

    /// The rows `x` (three inputs `a`, `b`, `c`) and `y` (`class`) as
    /// `dir/d.csv`, opened.
    fn write_csv(dir: &std::path::Path, x: &DMatrix<f64>, y: &DVector<f64>) -> TableFile {
        let mut text = String::from("a,b,c,class\n");
        for (i, r) in x.row_iter().enumerate() {
            text += &format!("{:?},{:?},{:?},{:?}\n", r[0], r[1], r[2], y[i]);
        }
        std::fs::write(dir.join("d.csv"), text).unwrap();
        TableFile::open(dir.join("d.csv"), None).unwrap()
    }

    /// `rows` rows of the moons (labels 0/1) with a constant third input,
    /// as CSV and Parquet in a directory of the caller's own.
    fn files(rows: usize, seed: u64) -> (tempfile::TempDir, TableFile, TableFile) {
        let (x2, y) = classification(ClassShape::Moons, rows, seed);
        let x = DMatrix::from_fn(rows, 3, |i, j| if j < 2 { x2[(i, j)] } else { 4.0 });
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().to_path_buf();
        let csv = write_csv(&dir, &x, &y);
        let names: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        write_parquet(&dir.join("d.parquet"), &x, &y, &names, "class").unwrap();
        let parquet = TableFile::open(dir.join("d.parquet"), None).unwrap();
        (temp, csv, parquet)
    }

    fn start(table: &TableFile, seed: u64, subset: usize) -> ClassifierStart {
        start_task(table, seed, subset, None)
    }

    /// As `start`, the task asked for (numeric classes beyond two are a
    /// classification only when asked, as in memory).
    fn start_task(
        table: &TableFile,
        seed: u64,
        subset: usize,
        task: Option<Task>,
    ) -> ClassifierStart {
        let streamed = StreamedParams {
            chunk_rows: 97,
            ..StreamedParams::default()
        };
        let first = scan(table, 100_000, seed, 97, &mut |_| {}).unwrap();
        let params = (&svgp(seed), &streamed, subset);
        start_classifier(table, &first, params, (task, None), &mut |_| {})
            .unwrap()
            .expect("two values are a classification")
    }

    /// Over seeds: the kernel and basis fitted on half the rows, q(u) on
    /// every row, predict held-out rows within half a point of the
    /// in-memory classifier fitted on every row.
    #[test]
    fn streamed_is_within_half_a_point_of_the_in_memory_classifier() {
        let (mut worse, mut gaps) = (0, Vec::new());
        for seed in 1..=3u64 {
            let (_dir, csv, _) = files(3000, seed);
            let streamed = start(&csv, seed, 1500).finish_on_file(&mut |_| {}).unwrap();
            let (x, y) = classification(ClassShape::Moons, 3000, seed + 100);
            let x = DMatrix::from_fn(3000, 3, |i, j| if j < 2 { x[(i, j)] } else { 4.0 });
            let truth = y.map(|v| if v > 0.5 { 1.0 } else { -1.0 });
            let (xt, yt) = classification(ClassShape::Moons, 3000, seed);
            let data = Dataset::from_raw(xt, yt, vec!["a".into(), "b".into()], "class".into())
                .unwrap()
                .into_binary(None)
                .unwrap();
            let memory = fit(&data, &FitParams::Svgp(svgp(seed)), &mut |_| {}).unwrap();
            let p_st = streamed.set.members[0].predict_raw(&x).unwrap();
            let p_mem = memory.set.members[0]
                .predict_raw(&x.columns(0, 2).into_owned())
                .unwrap();
            let e_st = error_rate(p_st.mean.as_slice(), truth.as_slice());
            let e_mem = error_rate(p_mem.mean.as_slice(), truth.as_slice());
            gaps.push((e_st, e_mem));
            if e_st > e_mem + 0.005 {
                worse += 1;
            }
            assert_eq!(streamed.report.rows, 3000);
            assert_eq!(
                streamed.report.streamed.as_ref().unwrap().passes,
                Some(PASSES)
            );
        }
        assert_eq!(worse, 0, "streamed against in-memory test error: {gaps:?}");
    }

    /// The passes converge: a further pass moves the bound by less than
    /// 1e-3 nats a row, and each pass's bound is no worse than the last.
    #[test]
    fn the_passes_converge_to_the_bounds_optimum() {
        let (_dir, csv, _) = files(2000, 4);
        let started = start(&csv, 4, 500);
        let mut basis = started.basis().clone();
        let mut bounds = Vec::new();
        for _ in 0..5 {
            let sums = basis.pass(&csv, &mut |_| {}).unwrap();
            bounds.push(basis.neg_elbo(&sums) / 2000.0);
            basis = basis.updated(&sums).unwrap();
        }
        assert!(bounds.windows(2).all(|w| w[1] <= w[0] + 1e-9), "{bounds:?}");
        assert!(bounds[3] - bounds[4] < 1e-3, "{bounds:?}");
        assert!(
            bounds[0] - bounds[4] > 1e-3,
            "the subset's q(u) was already optimal: {bounds:?}"
        );
    }

    /// The same rows as CSV and Parquet: the same blob, byte for byte; the
    /// pass split before its last chunk and merged in order (an engine's
    /// two parts) is the file's pass bit for bit, another split the same
    /// up to rounding; a class the sample never saw is refused.
    #[test]
    fn the_same_rows_in_other_chunkings_give_the_same_blob() {
        let (_dir, csv, parquet) = files(2000, 5);
        let from_csv = start(&csv, 5, 800);
        let check_x = from_csv.check_x.rows(0, 200).into_owned();
        let basis = from_csv.basis().clone();
        let mut a = from_csv.finish_on_file(&mut |_| {}).unwrap();
        let mut b = start(&parquet, 5, 800).finish_on_file(&mut |_| {}).unwrap();
        let blob_a = export(&mut a, &check_x, false).unwrap().blob;
        let blob_b = export(&mut b, &check_x, false).unwrap().blob;
        assert_eq!(blob_a, blob_b);
        assert!(!blob_a.is_empty());
        assert_eq!(a.set.members[0].input_names, ["a", "b", "c"]);

        // An engine's rounds on two parts split at the last chunk.
        let rows = rows_of(&csv);
        let rounds = start(&csv, 5, 800);
        let mut driven = rounds.basis().clone();
        let mut neg_elbo = f64::NAN;
        for _ in 0..rounds.passes() {
            let sums = split_sums(&driven, (&rows.0, &rows.1), 97 * (2000 / 97));
            neg_elbo = driven.neg_elbo(&sums);
            driven = driven.updated(&sums).unwrap();
        }
        let mut c = rounds.finish(driven, neg_elbo, 0.0).unwrap();
        assert_eq!(export(&mut c, &check_x, false).unwrap().blob, blob_a);

        let whole = basis.pass(&csv, &mut |_| {}).unwrap();
        let (x, y) = (&rows.0, &rows.1);
        let split = |cut: usize| split_sums(&basis, (x, y), cut);
        assert_eq!(split(97 * (2000 / 97)), whole);
        let other = split(1000);
        let gap = (&other.precision[0] - &whole.precision[0]).amax();
        assert!(gap <= 1e-10 * whole.precision[0].amax(), "{gap}");

        let mut odd = y.clone();
        odd[7] = 2.0;
        let err = basis.sums(x, &odd).unwrap_err().to_string();
        assert!(err.contains("data row 8: class value 2"), "{err}");
    }

    /// Three overlapping Gaussian classes (labels 0, 1, 2) in two inputs
    /// with a constant third: `rows` rows.
    fn three_classes(rows: usize, seed: u64) -> (DMatrix<f64>, DVector<f64>) {
        use rand::SeedableRng;
        use rand_distr::{Distribution, StandardNormal};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let y = DVector::from_fn(rows, |i, _| (i % 3) as f64);
        let x = DMatrix::from_fn(rows, 3, |i, j| {
            let angle = 2.1 * y[i];
            let noise: f64 = StandardNormal.sample(&mut rng);
            match j {
                0 => libm::cos(angle) + 0.6 * noise,
                1 => libm::sin(angle) + 0.6 * noise,
                _ => 4.0,
            }
        });
        (x, y)
    }

    /// Three classes over seeds: streamed from a CSV file (the kernel and
    /// basis fitted on half the rows, q(u) on every row), the held-out
    /// error is within a point of the in-memory svgp on every row; the
    /// same rows as a Parquet directory of two files give the same blob.
    #[test]
    fn three_classes_stream_within_a_point_of_the_in_memory_classifier() {
        let names: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let mut gaps = Vec::new();
        for seed in 1..=3u64 {
            let (x, y) = three_classes(3000, seed);
            let temp = tempfile::tempdir().unwrap();
            let dir = temp.path();
            let csv = write_csv(dir, &x, &y);
            let from_csv = start_task(&csv, seed, 1500, Some(Task::Classification));
            let check_x = from_csv.check_x.rows(0, 200).into_owned();
            let mut streamed = from_csv.finish_on_file(&mut |_| {}).unwrap();
            assert_eq!(streamed.set.members.len(), 3);
            assert_eq!(streamed.set.class_labels, ["0", "1", "2"]);
            assert_eq!(streamed.report.rows, 3000);

            let data = Dataset::from_raw(x.clone(), y.clone(), names.clone(), "class".into())
                .unwrap()
                .into_classes()
                .unwrap();
            let memory = fit(&data, &FitParams::Svgp(svgp(seed)), &mut |_| {}).unwrap();
            let (xt, yt) = three_classes(3000, seed + 100);
            let truth: Vec<usize> = yt.iter().map(|&v| v as usize).collect();
            let error = |set| {
                let p = probabilities(set, &xt, ClassLink::OneVsRest).unwrap();
                scores(&p, &truth).error_rate
            };
            let (e_st, e_mem) = (error(&streamed.set), error(&memory.set));
            gaps.push((seed, e_st, e_mem));
            assert!(e_st <= e_mem + 0.01, "streamed against in-memory: {gaps:?}");

            if seed == 1 {
                let parts = dir.join("parts");
                std::fs::create_dir(&parts).unwrap();
                let (a, b) = ((0, 1700), (1700, 1300));
                for (name, (at, len)) in [("0.parquet", a), ("1.parquet", b)] {
                    let rows = (x.rows(at, len).into_owned(), y.rows(at, len).into_owned());
                    write_parquet(&parts.join(name), &rows.0, &rows.1, &names, "class").unwrap();
                }
                let parquet = TableFile::open(&parts, None).unwrap();
                let mut again = start_task(&parquet, seed, 1500, Some(Task::Classification))
                    .finish_on_file(&mut |_| {})
                    .unwrap();
                let blob = |f: &mut Fit| export(f, &check_x, false).unwrap().blob;
                assert_eq!(blob(&mut streamed), blob(&mut again));
            }
        }
    }

    /// Text labels stream as the indices they name: the moons labelled
    /// `low`/`ring` (the rarer, so the positive class either way), as CSV
    /// and as a Parquet string column, give the blob of the same rows
    /// labelled 0/1 but its labels; a label the first pass did not find,
    /// met by a later pass, is refused naming file, line and column.
    #[test]
    fn text_labels_stream_as_the_numbers_they_index() {
        use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray};
        use std::sync::Arc;

        let (x2, y2) = classification(ClassShape::Moons, 3000, 8);
        let keep: Vec<usize> = (0..3000).filter(|&i| y2[i] < 0.5 || i % 3 != 0).collect();
        let x = DMatrix::from_fn(keep.len(), 3, |i, j| match j {
            2 => 4.0,
            _ => x2[(keep[i], j)],
        });
        let y = DVector::from_fn(keep.len(), |i, _| y2[keep[i]]);
        let temp = tempfile::tempdir().unwrap();
        let numbers = write_csv(temp.path(), &x, &y);
        let label = |v: f64| if v > 0.5 { "ring" } else { "low" };
        let mut text = String::from("a,b,c,class\n");
        for (i, r) in x.row_iter().enumerate() {
            text += &format!("{:?},{:?},{:?},{}\n", r[0], r[1], r[2], label(y[i]));
        }
        let csv = temp.path().join("t.csv");
        std::fs::write(&csv, text).unwrap();
        let column = |j: usize| Arc::new(Float64Array::from(x.column(j).as_slice().to_vec()));
        let labels: Vec<&str> = y.iter().map(|&v| label(v)).collect();
        let batch = RecordBatch::try_from_iter([
            ("a", column(0) as ArrayRef),
            ("b", column(1) as ArrayRef),
            ("c", column(2) as ArrayRef),
            ("class", Arc::new(StringArray::from(labels)) as ArrayRef),
        ])
        .unwrap();
        let parquet = temp.path().join("t.parquet");
        let file = std::fs::File::create(&parquet).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();

        // The streamed fit's blob, its binary labels set as `Job` sets them.
        let blob = |table: &TableFile, labels: Option<Vec<String>>| {
            let started = start(table, 8, 800);
            let check_x = started.check_x.rows(0, 200).into_owned();
            let named = labels.unwrap_or_else(|| started.labels.clone());
            let mut fit = started.finish_on_file(&mut |_| {}).unwrap();
            fit.set.class_labels = named;
            export(&mut fit, &check_x, false).unwrap().blob
        };
        let names = vec!["low".to_owned(), "ring".to_owned()];
        let expected = blob(&numbers, Some(names.clone()));
        assert_ne!(blob(&numbers, None), expected, "the labels are in the blob");
        for path in [&csv, &parquet] {
            let table = TableFile::open(path, None).unwrap();
            assert!(table.target_is_text().unwrap());
            let labels = table.collect_labels().unwrap();
            assert_eq!(labels, names);
            let table = table.with_labels(labels);
            assert_eq!(start(&table, 8, 800).labels, names);
            assert_eq!(blob(&table, None), expected, "{}", path.display());
        }

        // A later pass meets a label its first pass did not find.
        let started = start(
            &TableFile::open(&csv, None).unwrap().with_labels(names),
            8,
            800,
        );
        let short = |path: &std::path::Path| {
            let table = TableFile::open(path, None).unwrap();
            let table = table.with_labels(vec!["low".to_owned()]);
            started
                .basis()
                .pass(&table, &mut |_| {})
                .unwrap_err()
                .to_string()
        };
        let ring = y.iter().position(|&v| v > 0.5).unwrap();
        let err = short(&csv);
        let at = format!(
            "t.csv: line {} (data row {}), column 'class'",
            ring + 2,
            ring + 1
        );
        assert!(
            err.contains(&at) && err.contains("label 'ring' is none"),
            "{err}"
        );
        let err = short(&parquet);
        let at = format!("t.parquet: data row {}, column 'class'", ring + 1);
        assert!(
            err.contains(&at) && err.contains("label 'ring' is none"),
            "{err}"
        );
    }
}
