//! The built-in demonstration (`sgp demo`): the SPGP paper's Figure 1 as
//! the paper ran it, then the fits `sgp fit` makes by default, on the same
//! data. This module runs the experiments and returns their numbers; the
//! command line prints them.
//!
//! Figure 1: 1-D data drawn from a GP whose hyperparameters are known;
//! those hyperparameters held at their true values; only the pseudo-inputs
//! learned, from a start bunched at the left of the data. FITC's
//! likelihood spreads them over the data and matches the exact GP; PLV's
//! (DTC, the demo's own objective) gets stuck (docs/src/getting-started.md).

use std::time::Instant;

use nalgebra::{DMatrix, DVector};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use serde::Serialize;

use crate::choose::{fit, Request};
use crate::data::Dataset;
use crate::evaluate::{evaluate_blob, figures, Evaluation};
use crate::export::export;
use crate::fit::{ExactParams, FitParams};
use crate::model::features::{InducingFeatures, PseudoInputs};
use crate::model::inference::exact::exact_posterior;
use crate::model::inference::fitc::{fitc_posterior, objective_grad, FitcConfig, Objective};
use crate::model::inference::{Approximation, Prediction};
use crate::model::kernel::KernelParams;
use crate::numerics::linalg::JitterPolicy;
use crate::numerics::optimise::{minimise, OptimiseOptions};
use crate::options::Options;
use crate::{Error, Result};

/// Training rows of the demo data.
pub(crate) const DEMO_ROWS: usize = 200;
/// Test rows (a regular grid over [0, 6]).
pub(crate) const DEMO_TEST_ROWS: usize = 400;
/// The true length scale of the GP the demo data are drawn from.
pub(crate) const TRUE_LENGTHSCALE: f64 = 0.8;
/// The true signal variance.
pub(crate) const TRUE_SIGNAL_VAR: f64 = 0.7;
/// Standard deviation of the demo's observation noise (its true value).
pub(crate) const DEMO_NOISE_STD: f64 = 0.25;

/// Figure 1's claim, in test NLPD ([`Demo::match_nlpd`]).
pub(crate) const MATCH_NLPD: f64 = 0.05;

/// Largest change of a pseudo-input (raw units, the data span [0, 6]) per
/// line search in the Figure 1 fits: from the bunched start longer steps
/// throw pseudo-inputs out of the data, where they stay unused.
const FIGURE1_MAX_STEP: f64 = 0.1;

/// L-BFGS iterations of a Figure 1 fit at most: short steps need many.
const FIGURE1_MAX_ITER: u64 = 2000;

/// The demo's data: training rows, test rows and the kernel they were
/// drawn from.
pub(crate) struct DemoProblem {
    /// The training rows.
    pub train: Dataset,
    /// Test inputs (raw units).
    pub test_x: DMatrix<f64>,
    /// Test targets, with fresh noise.
    pub test_y: DVector<f64>,
    /// The true hyperparameters (raw units).
    pub truth: KernelParams,
}

/// One GP draw (zero mean, squared exponential with the true
/// hyperparameters) at [`DEMO_ROWS`] inputs spread unevenly over [0, 6]
/// (denser on the left, as in the paper's figure) and at a grid of
/// [`DEMO_TEST_ROWS`], with independent noise on every target.
///
/// # Errors
/// [`Error::Numerical`] if the joint covariance cannot be factorised.
pub(crate) fn demo_problem(seed: u64) -> Result<DemoProblem> {
    let truth = KernelParams::new(
        &[TRUE_LENGTHSCALE],
        TRUE_SIGNAL_VAR,
        DEMO_NOISE_STD * DEMO_NOISE_STD,
    )?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (n, t) = (DEMO_ROWS, DEMO_TEST_ROWS);
    let x: Vec<f64> = (0..n)
        .map(|_| 6.0 * libm::pow(rng.random::<f64>(), 1.3))
        .chain((0..t).map(|i| 6.0 * (i as f64 + 0.5) / t as f64))
        .collect();
    let all = DMatrix::from_column_slice(n + t, 1, &x);
    let mut k = truth.cross(&all, &all);
    for i in 0..n + t {
        k[(i, i)] += 1e-8 * TRUE_SIGNAL_VAR;
    }
    let l = k
        .cholesky()
        .ok_or_else(|| Error::Numerical("the demo's prior covariance".into()))?
        .unpack();
    let z = DVector::from_fn(n + t, |_, _| rng.sample::<f64, _>(StandardNormal));
    let f = l * z;
    let y = DVector::from_fn(n + t, |i, _| {
        f[i] + DEMO_NOISE_STD * rng.sample::<f64, _>(StandardNormal)
    });
    let train = Dataset::from_raw(
        all.rows(0, n).into_owned(),
        y.rows(0, n).into_owned(),
        vec!["x".into()],
        "y".into(),
    )?;
    Ok(DemoProblem {
        train,
        test_x: all.rows(n, t).into_owned(),
        test_y: y.rows(n, t).into_owned(),
        truth,
    })
}

/// `m` pseudo-inputs bunched in the leftmost 5% of the data's range (raw
/// units): the adversarial start of the paper.
pub(crate) fn bunched_left(x: &DMatrix<f64>, m: usize) -> DMatrix<f64> {
    let col = x.column(0);
    let (lo, hi) = (col.min(), col.max());
    DMatrix::from_fn(m, 1, |i, _| {
        lo + 0.05 * (hi - lo) * (i as f64 + 0.5) / m as f64
    })
}

/// Which part of the demo a row belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Experiment {
    /// Figure 1: true hyperparameters, pseudo-inputs learned from the
    /// bunched start.
    Figure1,
    /// What `sgp fit` does by default: everything learned.
    Default,
}

/// One row of the demo's table.
#[derive(Clone, Debug, Serialize)]
pub struct DemoRow {
    /// Which experiment.
    pub experiment: Experiment,
    /// The row's name: the fit and its objective (FITC, VFE, PLV, exact).
    pub name: String,
    /// The training objective at the end (the objective's own: FITC's or
    /// PLV's NLML, VFE's negative ELBO, the exact GP's NLML).
    pub nlml: f64,
    /// Test RMSE of the f64 predictions.
    pub rmse: f64,
    /// Test NLPD (nats per point) of the f64 predictions.
    pub nlpd: f64,
    /// Basis functions (pseudo-inputs, or training rows for the exact GP).
    pub m: usize,
    /// Figure 1's learned pseudo-inputs (raw units), in order; empty
    /// elsewhere.
    pub pseudo_inputs: Vec<f64>,
    /// Seconds the fit took.
    pub seconds: f64,
    /// The exported blob's test RMSE and NLPD on the device (f32) and its
    /// size in bytes: the default fits only.
    pub device: Option<DeviceFigures>,
}

/// The exported blob's figures.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceFigures {
    /// Test RMSE of the runtime's f32 predictions.
    pub rmse: f64,
    /// Test NLPD of the runtime's f32 predictions.
    pub nlpd: f64,
    /// Size of the blob in bytes.
    pub blob_bytes: usize,
}

/// Everything the demo computed.
#[derive(Clone, Debug, Serialize)]
pub struct Demo {
    /// The seed of the data and the fits.
    pub seed: u64,
    /// Training rows of the data.
    pub train_rows: usize,
    /// Test rows (a regular grid over [0, 6]).
    pub test_rows: usize,
    /// The true length scale of the squared-exponential GP the data are
    /// drawn from (Figure 1 holds it).
    pub lengthscale: f64,
    /// Its true signal variance.
    pub signal_variance: f64,
    /// The true standard deviation of the observation noise.
    pub noise_std: f64,
    /// Figure 1's claim, in test NLPD: FITC's fit is within this many nats
    /// per point of the exact GP's (`tests/tests/figure1.rs` holds it over
    /// seeds; the demo's words say "matches" within it).
    pub match_nlpd: f64,
    /// The training inputs' range (raw units).
    pub data_range: [f64; 2],
    /// Figure 1's start (raw units, in order).
    pub start: Vec<f64>,
    /// The Figure 1 rows (exact GP, FITC, PLV), then the default fits.
    pub rows: Vec<DemoRow>,
    /// The blob of the default sparse fit (what `--out` receives).
    #[serde(skip)]
    pub blob: Vec<u8>,
}

/// Runs the demo on seed `seed`'s data with `m` pseudo-inputs in Figure 1.
///
/// # Errors
/// [`Error::BadInput`] for an `m` outside 1 to the demo's training rows; a fit's or
/// the export's error.
pub fn run_demo(seed: u64, m: usize) -> Result<Demo> {
    if m == 0 || m > DEMO_ROWS {
        return Err(Error::BadInput(format!(
            "--m {m}: the demo's {DEMO_ROWS} rows take 1 to {DEMO_ROWS} pseudo-inputs"
        )));
    }
    let problem = demo_problem(seed)?;
    let x = problem.train.raw_x();
    let start = bunched_left(&x, m);
    let mut rows = figure1(&problem, &start)?;
    let (default_rows, blob) = default_fits(&problem, seed)?;
    rows.extend(default_rows);
    Ok(Demo {
        seed,
        train_rows: DEMO_ROWS,
        test_rows: DEMO_TEST_ROWS,
        lengthscale: TRUE_LENGTHSCALE,
        signal_variance: TRUE_SIGNAL_VAR,
        noise_std: DEMO_NOISE_STD,
        match_nlpd: MATCH_NLPD,
        data_range: [x.min(), x.max()],
        start: start.iter().copied().collect(),
        rows,
        blob,
    })
}

/// Test RMSE and NLPD of predictions of `y`.
fn test_figures(p: &Prediction, y: &DVector<f64>) -> Evaluation {
    let var = p.var.add_scalar(p.noise_var);
    figures(p.mean.as_slice(), var.as_slice(), y.as_slice())
}

/// Figure 1's three rows: the exact GP with the true hyperparameters,
/// then FITC and PLV with the same hyperparameters and only the
/// pseudo-inputs learned from `start`.
fn figure1(problem: &DemoProblem, start: &DMatrix<f64>) -> Result<Vec<DemoRow>> {
    let x = problem.train.raw_x();
    let y = problem.train.raw_y();
    let kern = &problem.truth;
    let row = |name: &str, nlml, figures: Evaluation, m, z: Vec<f64>, seconds| DemoRow {
        experiment: Experiment::Figure1,
        name: name.into(),
        nlml,
        rmse: figures.rmse,
        nlpd: figures.nlpd,
        m,
        pseudo_inputs: z,
        seconds,
        device: None,
    };
    let started = Instant::now();
    let exact = exact_posterior(kern, &x, &y, &JitterPolicy::default())?;
    let scored = test_figures(&exact.predict(&problem.test_x)?, &problem.test_y);
    let mut rows = vec![row(
        "exact GP",
        exact.nlml(),
        scored,
        x.nrows(),
        Vec::new(),
        started.elapsed().as_secs_f64(),
    )];
    for (name, objective) in [("FITC", Objective::Fitc), ("PLV", Objective::Plv)] {
        let started = Instant::now();
        let (feat, nlml) = learn_pseudo_inputs(kern, &x, &y, start, objective)?;
        // PLV's posterior is VFE's (both have `Gamma = sigma2 I`).
        let cfg = FitcConfig {
            approximation: objective.gamma(),
            ..FitcConfig::default()
        };
        let post = fitc_posterior(&feat, kern, &x, &y, &cfg)?;
        let scored = test_figures(
            &post.predict(&feat, kern, &problem.test_x)?,
            &problem.test_y,
        );
        let mut z: Vec<f64> = feat.z().iter().copied().collect();
        z.sort_by(f64::total_cmp);
        let seconds = started.elapsed().as_secs_f64();
        rows.push(row(name, nlml, scored, start.nrows(), z, seconds));
    }
    Ok(rows)
}

/// L-BFGS on `objective` over the pseudo-inputs alone, `kern` held.
fn learn_pseudo_inputs(
    kern: &KernelParams,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    start: &DMatrix<f64>,
    objective: Objective,
) -> Result<(PseudoInputs, f64)> {
    let cfg = FitcConfig::default();
    let mut feat = PseudoInputs::new(start.clone())?;
    let opts = OptimiseOptions {
        max_step: FIGURE1_MAX_STEP,
        max_iter: FIGURE1_MAX_ITER,
        ..OptimiseOptions::default()
    };
    let template = feat.clone();
    let evaluate = |p: &[f64]| {
        let mut f = template.clone();
        f.set_params(p)?;
        let v = objective_grad(&f, kern, x, y, &cfg, objective)?;
        let grad = v.grad.map(|g| g.feature).unwrap_or_default();
        Ok((v.nlml, grad))
    };
    let report = minimise(evaluate, feat.params(), &opts, &mut |_| {})?;
    feat.set_params(&report.x)?;
    Ok((feat, report.value))
}

/// The fits `sgp fit` makes of the demo data with every setting at its
/// default (and the exact GP, named), each exported and scored on the
/// device; the sparse fit's blob.
fn default_fits(problem: &DemoProblem, seed: u64) -> Result<(Vec<DemoRow>, Vec<u8>)> {
    let data = &problem.train;
    let options = Options {
        seed: Some(seed),
        ..Options::default()
    };
    let exact = Request::exactly(FitParams::Exact(ExactParams {
        seed,
        ..ExactParams::default()
    }));
    let mut rows = Vec::new();
    let mut blob = Vec::new();
    for request in [exact, options.request(data)?] {
        let started = Instant::now();
        let mut fitted = fit(data, &request, &mut |_| {})?;
        let seconds = started.elapsed().as_secs_f64();
        let exported = export(&mut fitted, &problem.test_x, false)?;
        let model = &fitted.set.members[0];
        let p = model.predict_raw(&problem.test_x)?;
        let trainer = figures(
            p.mean.as_slice(),
            p.var.as_slice(),
            problem.test_y.as_slice(),
        );
        let device = evaluate_blob(&exported.blob, &problem.test_x, &problem.test_y)?;
        let report = &fitted.report;
        let objective = match report.approximation {
            Some(Approximation::Fitc) => "FITC",
            Some(Approximation::Vfe) => "VFE",
            None => "exact",
        };
        let name = match report.method {
            crate::fit::Method::Exact => "exact GP".to_string(),
            method => format!("{} {objective}", method.name()),
        };
        rows.push(DemoRow {
            experiment: Experiment::Default,
            name,
            nlml: report.nlml,
            rmse: trainer.rmse,
            nlpd: trainer.nlpd,
            m: model.n_basis(),
            pseudo_inputs: Vec::new(),
            seconds,
            device: Some(DeviceFigures {
                rmse: device.rmse,
                nlpd: device.nlpd,
                blob_bytes: exported.blob.len(),
            }),
        });
        blob = exported.blob;
    }
    Ok((rows, blob))
}
