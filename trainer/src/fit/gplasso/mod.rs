//! GPLasso (Yan & Qi 2010; MATH.md, "GPLasso"): hyperparameters from an
//! exact GP on a subset, then the basis points chosen among the training
//! inputs by the lasso path of `||C beta - d||^2 + lambda' |beta|_1`, then
//! (by default) the hyperparameters and the basis points re-optimised
//! ([`GplassoRefit`]).
//!
//! The path runs on the reduced problem of a pivoted incomplete Cholesky
//! `K ~ Rt^T Rt` (rank r, [`crate::model::icf`]; docs/src/gplasso.md), which
//! has the original's normal equations with `K~` for `K`; at most r weights
//! can be non-zero, so a path may end short of M ([`GplassoReport::reached`]).
//! The variance is FITC's with the selected inputs as pseudo-inputs; the
//! mean takes the lasso's weights or that posterior's ([`GplassoWeights`]).

use std::cell::Cell;
use std::time::Instant;

use nalgebra::{DMatrix, DVector};
use serde::Serialize;
use sgp_runtime::{Kernel, ModelKind};

use super::exact::{optimise_exact, Start};
use super::progress::continuing;
use super::restarts::{best_start, first, screen_iter, screen_rows};
use super::sparse::{fit_sparse, minimise_part, no_penalty, SparseFit};
use super::{
    check_m, check_max_points, default_optimiser, Checked, Fit, FitReport, Method, OptimiserReport,
    OutputReport, Rebuilt, DEFAULT_M, DEFAULT_MAX_POINTS, DEFAULT_SEED,
};
use crate::data::Dataset;
use crate::model::features::{InducingFeatures, PseudoInputs};
use crate::model::icf::{kernel_icf, Icf};
use crate::model::inference::fitc::{fitc_posterior, FitcConfig, FitcPosterior};
use crate::model::inference::objective::SparseObjective;
use crate::model::inference::{Approximation, RuntimeForm};
use crate::model::kernel::KernelParams;
use crate::model::{ModelSet, TrainedModel};
use crate::numerics::lars::{lasso_path, LarsAction, LarsOptions, LarsStop, LassoPath};
use crate::numerics::linalg::{cholesky_jittered, mat_ref, mul, solve_lower_vec, JitterPolicy};
use crate::numerics::optimise::{OptimiseOptions, OptimiseReport, Progress};
use crate::{Error, Result};

mod path;
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) use path::fit_spgp_fixed_hyperparameters;
pub use path::PathRow;
pub(crate) use path::{gplasso_path, PATH_HOLDOUT};

named_enum! {
    /// Which weights the exported mean uses.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum GplassoWeights {
        /// The lasso solution itself (shrunk towards zero by the penalty).
        Lasso = "lasso",
        /// Refitted on the selected inputs: the mean of the FITC posterior with
        /// them as pseudo-inputs (the posterior the variance comes from).
        Refit = "refit",
    }
}

/// Default weights: the lasso's are shrunk by the penalty that stops the
/// path at M non-zeros (docs/src/gplasso.md has the comparison).
pub(crate) const DEFAULT_WEIGHTS: GplassoWeights = GplassoWeights::Refit;

/// What a GPLasso fit re-optimises once the lasso path has picked its
/// basis (`fit_gplasso` says why and what it costs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GplassoRefit {
    /// Nothing: the exact GP's hyperparameters and the selected training
    /// inputs as they are (the paper's procedure, `--fixed-hyperparameters`).
    Nothing,
    /// The hyperparameters, the selected training inputs staying the basis
    /// (`--fixed-basis`).
    Hyperparameters,
    /// The hyperparameters, then the basis points' positions with them
    /// (the default): SPGP from the lasso's start.
    Everything,
}

/// Default relative trace tolerance of the incomplete Cholesky.
pub(crate) const DEFAULT_TRACE_TOL: f64 = 1e-6;

/// The ICF rank used when none is given: `max(4 M, 100)`, at most N (from
/// 4 M on the test NLPD is that of the full rank: docs/src/gplasso.md).
pub(crate) fn default_rank(m: usize, n: usize) -> usize {
    (4 * m).max(100).min(n)
}

/// Settings of a GPLasso fit.
#[derive(Clone, Debug, PartialEq)]
pub struct GplassoParams {
    /// Number of basis points (non-zero weights) M.
    pub m: usize,
    /// ICF rank r (None: `default_rank`).
    pub rank: Option<usize>,
    /// The ICF stops when the residual trace is at most this fraction of
    /// the trace of K.
    pub trace_tol: f64,
    /// Which weights the mean uses.
    pub weights: GplassoWeights,
    /// Rows of the exact GP the hyperparameters come from.
    pub max_points: usize,
    /// Seed of that subset.
    pub seed: u64,
    /// Optimiser of the exact GP and of each re-optimisation.
    #[cfg(feature = "internals")]
    pub optimiser: OptimiseOptions,
    #[cfg(not(feature = "internals"))]
    pub(crate) optimiser: OptimiseOptions,
    /// What is re-optimised after the selection.
    pub refit: GplassoRefit,
    /// Objective of the last stage of [`GplassoRefit::Everything`] (the
    /// other refits are FITC's, as the paper's variance).
    pub approximation: Approximation,
    /// The covariance function (`--kernel`): squared exponential or Matérn.
    pub kernel: Kernel,
}

impl Default for GplassoParams {
    fn default() -> Self {
        GplassoParams {
            m: DEFAULT_M,
            rank: None,
            trace_tol: DEFAULT_TRACE_TOL,
            weights: DEFAULT_WEIGHTS,
            max_points: DEFAULT_MAX_POINTS,
            seed: DEFAULT_SEED,
            optimiser: default_optimiser(),
            refit: GplassoRefit::Everything,
            approximation: Approximation::Fitc,
            kernel: Kernel::SquaredExponential,
        }
    }
}

impl GplassoParams {
    /// Validates the settings against `data`.
    ///
    /// # Errors
    /// [`Error::BadInput`] naming the offending setting: M of 0 or above N,
    /// a rank of 0, M above the rank.
    #[cfg_attr(feature = "internals", visibility::make(pub))]
    pub(crate) fn check(&self, data: &Dataset) -> Result<Checked<'_, Self>> {
        self.optimiser.validate()?;
        check_max_points(self.max_points)?;
        data.require_rows(2, "a Gaussian process")?;
        let n = data.n_rows();
        check_m(self.m)?;
        if self.m > n {
            return Err(Error::BadInput(format!(
                "{}: --m {} is larger than the {n} training rows: GPLasso selects its basis \
                 points among them",
                data.source, self.m
            )));
        }
        if let Some(rank) = self.rank {
            if rank == 0 {
                return Err(Error::BadInput("--rank must be at least 1".into()));
            }
            if self.m > rank.min(n) {
                return Err(Error::BadInput(format!(
                    "gplasso: --m {} is larger than the incomplete Cholesky rank {} allows: the reduced \
                     lasso problem has rank at most {}, so at most that many weights can be \
                     non-zero; raise --rank or lower --m",
                    self.m,
                    rank,
                    rank.min(n)
                )));
            }
        }
        if self.weights == GplassoWeights::Lasso && self.refit != GplassoRefit::Nothing {
            return Err(Error::BadInput(
                "the lasso's own weights belong to the hyperparameters it selected with: they \
                 need --fixed-hyperparameters"
                    .into(),
            ));
        }
        if !(self.trace_tol.is_finite() && self.trace_tol >= 0.0) {
            return Err(Error::BadInput(format!(
                "the trace tolerance must be finite and >= 0, got {}",
                self.trace_tol
            )));
        }
        Ok(Checked(self))
    }

    /// The ICF rank for `n` rows.
    pub(crate) fn rank_for(&self, n: usize) -> usize {
        self.rank.unwrap_or_else(|| default_rank(self.m, n)).min(n)
    }
}

/// What a GPLasso fit did, beyond the common [`FitReport`].
#[derive(Clone, Debug, Serialize)]
pub struct GplassoReport {
    /// Basis points asked for (M).
    pub asked: usize,
    /// Non-zero weights the path reached (less than `asked` when it could
    /// not go further, e.g. duplicated rows).
    pub reached: usize,
    /// Why the path stopped.
    pub stop: LarsStop,
    /// Training rows whose inputs are the basis points (with
    /// [`GplassoRefit::Everything`]: where the basis points started),
    /// 0-based (header not counted), in the order they entered the path;
    /// the blob holds coordinates, not these indices.
    pub selected_rows: Vec<usize>,
    /// The weights used.
    pub weights: GplassoWeights,
    /// What was re-optimised after the selection.
    pub refit: GplassoRefit,
    /// Rows of the exact GP behind the starting hyperparameters.
    pub hyper_rows: usize,
    /// ICF rank asked for.
    pub rank: usize,
    /// ICF rank reached (lower when the trace tolerance stopped it).
    pub icf_rank: usize,
    /// ICF residual trace relative to the trace of K.
    pub icf_residual: f64,
    /// LARS steps (entries and removals).
    pub lars_steps: usize,
    /// Variables removed from the active set along the path.
    pub removals: usize,
    /// Penalty at the end of the path (`1/2 ||.||^2 + lambda |beta|_1`
    /// convention; the paper's is twice this).
    pub lambda: f64,
    /// Optimiser iterations of the exact GP behind the (starting)
    /// hyperparameters.
    pub hyper_iterations: u64,
    /// Seconds spent on that exact GP.
    pub hyper_seconds: f64,
    /// Seconds spent selecting the basis (ICF, LARS).
    pub select_seconds: f64,
}

/// The reduced lasso problem and the factor it came from.
struct Reduced {
    c: DMatrix<f64>,
    d: DVector<f64>,
    icf: Icf,
}

/// Builds `C~` and `d~` (module docs) for the rows of `x`, `y`.
fn reduced_problem(
    kern: &KernelParams,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    rank: usize,
    trace_tol: f64,
) -> Result<Reduced> {
    let icf = kernel_icf(kern, x, rank, trace_tol)?;
    let rt = &icf.r;
    let v = kern.noise_var();
    let mut s = mul(mat_ref(rt), mat_ref(rt).transpose());
    for i in 0..s.nrows() {
        s[(i, i)] += v;
    }
    let scale = s.diagonal().max().max(f64::MIN_POSITIVE);
    let policy = JitterPolicy {
        initial: 1e-12,
        ..JitterPolicy::default()
    };
    let lv = cholesky_jittered(&s, scale, &policy)?.l;
    let c = mul(mat_ref(&lv).transpose(), mat_ref(rt)) / v.sqrt();
    let d = solve_lower_vec(&lv, &(rt * y))? / v.sqrt();
    Ok(Reduced { c, d, icf })
}

/// The model for a set of selected rows: FITC posterior on them as
/// pseudo-inputs, and the weights `weights` asks for.
fn selected_model(
    kern: &KernelParams,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    coef: &[(usize, f64)],
    weights: GplassoWeights,
    config: &FitcConfig,
) -> Result<(PseudoInputs, FitcPosterior, DVector<f64>)> {
    let rows: Vec<usize> = coef.iter().map(|&(j, _)| j).collect();
    let features = PseudoInputs::new(x.select_rows(&rows))?;
    let post = fitc_posterior(&features, kern, x, y, config)?;
    let beta = match weights {
        GplassoWeights::Lasso => DVector::from_iterator(coef.len(), coef.iter().map(|&(_, v)| v)),
        GplassoWeights::Refit => post.beta.clone(),
    };
    Ok((features, post, beta))
}

fn runtime_form(
    features: &PseudoInputs,
    kern: &KernelParams,
    post: &FitcPosterior,
    beta: DVector<f64>,
) -> RuntimeForm {
    let mut form = post.runtime_form(features, kern);
    form.beta = beta;
    form
}

/// Hyperparameters from the exact GP on at most `max_points` rows.
fn hyperparameters(
    data: &Dataset,
    max_points: usize,
    seed: u64,
    kernel: Kernel,
    optimiser: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(KernelParams, u64)> {
    let subset = data.at_most_rows(max_points, seed)?;
    let jitter = JitterPolicy::default();
    let (kernels, run) = optimise_exact(
        &[subset],
        Start::Scales(kernel),
        jitter,
        optimiser,
        progress,
    )?;
    Ok((kernels[0].clone(), run.iterations))
}

fn lars_for(reduced: &Reduced, m: usize) -> Result<LassoPath> {
    lasso_path(&reduced.c, &reduced.d, &LarsOptions::until_nonzeros(m))
}

/// Rows of the exact GP that starts a re-optimised fit: `4 M`, within
/// `[100, 500]` (and at most `max_points`): the start only has to let the
/// lasso pick a sensible basis.
pub(crate) fn start_rows(m: usize) -> usize {
    (4 * m).clamp(100, 500)
}

/// Iteration cap of that exact GP (at most the optimiser's own).
pub(crate) const START_MAX_ITER: u64 = 100;

/// Iterations a GPLasso fit may use in all: the exact GP's, plus each
/// re-optimisation's.
pub(crate) fn iteration_budget(params: &GplassoParams) -> u64 {
    let max_iter = params.optimiser.max_iter;
    let start = max_iter.min(START_MAX_ITER);
    match params.refit {
        GplassoRefit::Nothing => max_iter,
        GplassoRefit::Hyperparameters => start + max_iter,
        GplassoRefit::Everything => start + 4 * screen_iter(max_iter) + max_iter,
    }
}

/// Fits GPLasso. With [`GplassoRefit::Nothing`], the paper's procedure:
/// the exact GP on `max_points` rows, then the lasso path. Otherwise the
/// exact GP on [`start_rows`] rows and the lasso path with its
/// hyperparameters; then, with [`GplassoRefit::Hyperparameters`], the
/// hyperparameters re-optimised on the FITC likelihood with the selected
/// training inputs as fixed pseudo-inputs (the weights those of that
/// posterior); with [`GplassoRefit::Everything`], three starts from the
/// selected inputs (the exact GP's hyperparameters, those re-optimised for
/// one screening run, and SPGP's data-scale start) screened as SPGP
/// screens its starts, the best optimised to the end, positions included.
/// Why: the exact GP's hyperparameters are right for N basis functions,
/// not for M (docs/src/model-families.md, "GPLasso").
pub(crate) fn fit_gplasso(
    data: &Dataset,
    params: &Checked<'_, GplassoParams>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    fit_with(data, params, params.approximation, progress)
}

/// GPLasso as [`fit_gplasso`] describes it, the last stage under
/// `approximation`.
fn fit_with(
    data: &Dataset,
    params: &Checked<'_, GplassoParams>,
    approximation: Approximation,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    let started = Instant::now();
    let done = Cell::new(0u64);
    let mut counted = continuing(&done, progress);
    let (points, start) = if params.refit == GplassoRefit::Nothing {
        (params.max_points, params.optimiser.clone())
    } else {
        let start = OptimiseOptions {
            max_iter: params.optimiser.max_iter.min(START_MAX_ITER),
            ..params.optimiser.clone()
        };
        (params.max_points.min(start_rows(params.m)), start)
    };
    let (kern, hyper_iterations) = hyperparameters(
        data,
        points,
        params.seed,
        params.kernel,
        &start,
        &mut counted,
    )?;
    done.set(hyper_iterations);
    let hyper_seconds = started.elapsed().as_secs_f64();
    let selection = select(data, params, &kern)?;
    let mut report = selection.report(params);
    report.hyper_rows = points.min(data.n_rows());
    report.hyper_iterations = hyper_iterations;
    report.hyper_seconds = hyper_seconds;
    let config = FitcConfig::default();
    let mut fitted = match params.refit {
        GplassoRefit::Nothing => into_fitted(data, params, kern, &selection.coef, None)?,
        GplassoRefit::Hyperparameters => {
            let z = data.x.select_rows(&selection.rows());
            let (kern, run) = reoptimise(data, z, kern, &params.optimiser, &config, &mut counted)?;
            done.set(done.get() + run.iterations);
            into_fitted(data, params, kern, &selection.coef, Some(&run))?
        }
        GplassoRefit::Everything => {
            // Three starts from the selected inputs, screened as SPGP
            // screens its starts (on a subset of the rows on large data):
            // the exact GP's hyperparameters, those re-optimised for the
            // selected inputs for as long as a screening run, and SPGP's
            // data-scale start (fit_gplasso's docs say why).
            let z = data.x.select_rows(&selection.rows());
            let screen = OptimiseOptions {
                max_iter: screen_iter(params.optimiser.max_iter),
                ..params.optimiser.clone()
            };
            // Four screening runs (the re-optimisation and the three
            // starts) on a quarter of the rows each cost about one run on
            // all of them, as SPGP's four screened starts do.
            let subset = data.at_most_rows(screen_rows(data.n_rows(), 4), params.seed)?;
            let (reoptimised, run) = reoptimise(
                &subset,
                z.clone(),
                kern.clone(),
                &screen,
                &config,
                &mut counted,
            )?;
            done.set(done.get() + run.iterations);
            let config = FitcConfig {
                approximation,
                ..config
            };
            let scales = super::data_scale_kernel(data, kern.kernel)?;
            let kernels = [kern, reoptimised, scales];
            let starts = kernels
                .into_iter()
                .map(|kern| Ok((String::new(), (PseudoInputs::new(z.clone())?, kern))));
            let subset = [subset];
            let (best, _) = best_start(starts, 1, &mut |stage| {
                let (features, kern) = first(stage)?;
                let run = fit_sparse(&subset, features, vec![kern], config, &screen, &mut counted)?;
                done.set(done.get() + run.run.iterations);
                let score = run.nlml();
                Ok((run, score))
            })?;
            let outputs = std::slice::from_ref(data);
            fit_sparse(
                outputs,
                best.features,
                best.kernels,
                config,
                &params.optimiser,
                &mut counted,
            )?
            .into_fit(outputs, ModelKind::GpLasso, Method::Gplasso)?
        }
    };
    fitted.report.gplasso = Some(report);
    Ok(fitted)
}

/// The kernel hyperparameters re-optimised from `kern` on the FITC
/// likelihood, with the training inputs `rows` as fixed pseudo-inputs.
fn reoptimise(
    data: &Dataset,
    z: DMatrix<f64>,
    kern: KernelParams,
    optimiser: &OptimiseOptions,
    config: &FitcConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<(KernelParams, OptimiseReport)> {
    let features = PseudoInputs::new(z)?;
    let objective = SparseObjective::new(&data.x, &data.y, features, kern, *config)?;
    let layout = objective.layout();
    let kernel = layout.feature_range().end..layout.len();
    let (p, run) = minimise_part(
        &objective,
        kernel,
        &no_penalty,
        optimiser,
        data.n_rows(),
        progress,
    )?;
    Ok((objective.unpack(&p)?.1, run))
}

/// The exact GP's hyperparameters GPLasso would use for `data` (for
/// comparisons that hold them fixed across methods).
///
/// # Errors
/// Bad settings, or a failed optimisation.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn exact_hyperparameters(
    data: &Dataset,
    params: &GplassoParams,
) -> Result<KernelParams> {
    let params = params.check(data)?;
    Ok(hyperparameters(
        data,
        params.max_points,
        params.seed,
        params.kernel,
        &params.optimiser,
        &mut |_| {},
    )?
    .0)
}

/// GPLasso with given hyperparameters `kern` (standardised units of
/// `data`): the selection alone. `data` must have no constant inputs
/// ([`crate::fit::fit`] removes them first).
///
/// # Errors
/// Bad settings; constant inputs; a numerical failure.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn fit_gplasso_given(
    data: &Dataset,
    params: &GplassoParams,
    kern: KernelParams,
) -> Result<Fit> {
    require_no_constant_inputs(data)?;
    let started = Instant::now();
    let params = params.check(data)?;
    let selection = select(data, &params, &kern)?;
    let mut fitted = into_fitted(data, &params, kern, &selection.coef, None)?;
    fitted.report.gplasso = Some(selection.report(&params));
    fitted.report.seconds = started.elapsed().as_secs_f64();
    Ok(fitted)
}

fn require_no_constant_inputs(data: &Dataset) -> Result<()> {
    if data.constant_inputs.is_empty() {
        Ok(())
    } else {
        Err(Error::BadInput(
            "constant inputs: fit through sgp_trainer::fit::fit, which leaves them out".into(),
        ))
    }
}

/// What the lasso path picked for one set of hyperparameters.
struct Selection {
    /// Non-zero weights at the end of the path, by row.
    coef: Vec<(usize, f64)>,
    stop: LarsStop,
    lambda: f64,
    rank: usize,
    icf_rank: usize,
    icf_residual: f64,
    lars_steps: usize,
    removals: usize,
    seconds: f64,
}

impl Selection {
    fn rows(&self) -> Vec<usize> {
        self.coef.iter().map(|&(j, _)| j).collect()
    }

    /// The report of a fit with this selection (the start's figures zero).
    fn report(&self, params: &GplassoParams) -> GplassoReport {
        GplassoReport {
            asked: params.m,
            reached: self.coef.len(),
            stop: self.stop,
            selected_rows: self.rows(),
            weights: params.weights,
            refit: params.refit,
            hyper_rows: 0,
            rank: self.rank,
            icf_rank: self.icf_rank,
            icf_residual: self.icf_residual,
            lars_steps: self.lars_steps,
            removals: self.removals,
            lambda: self.lambda,
            hyper_iterations: 0,
            hyper_seconds: 0.0,
            select_seconds: self.seconds,
        }
    }
}

/// ICF and LARS for the hyperparameters `kern`.
fn select(
    data: &Dataset,
    params: &Checked<'_, GplassoParams>,
    kern: &KernelParams,
) -> Result<Selection> {
    let selecting = Instant::now();
    let rank = params.rank_for(data.n_rows());
    let reduced = reduced_problem(kern, &data.x, &data.y, rank, params.trace_tol)?;
    let path = lars_for(&reduced, params.m)?;
    let last = path.last().clone();
    if last.coef.is_empty() {
        return Err(Error::BadInput(
            "GPLasso: the lasso path selected no basis point (is the target constant?)".into(),
        ));
    }
    Ok(Selection {
        stop: path.stop,
        lambda: last.lambda,
        coef: last.coef,
        rank,
        icf_rank: reduced.icf.rank(),
        icf_residual: reduced.icf.relative_residual(),
        lars_steps: path.points.len() - 1,
        removals: path
            .points
            .iter()
            .filter(|p| matches!(p.action, LarsAction::Leave(_)))
            .count(),
        seconds: selecting.elapsed().as_secs_f64(),
    })
}

/// The model with the selected training inputs `coef` (by row, with the
/// lasso's weights) as its basis and the hyperparameters `kern`;
/// `reoptimised` is the run that re-optimised them, if any.
fn into_fitted(
    data: &Dataset,
    params: &GplassoParams,
    kern: KernelParams,
    coef: &[(usize, f64)],
    reoptimised: Option<&OptimiseReport>,
) -> Result<Fit> {
    let config = FitcConfig::default();
    let (features, post, beta) =
        selected_model(&kern, &data.x, &data.y, coef, params.weights, &config)?;
    let mut report = FitReport::new(Method::Gplasso, data.n_rows(), post.nlml);
    report.jitter_escalations = post.jitter_escalations;
    report.outputs = vec![OutputReport::named(&data.target_name, Some(post.nlml))];
    report.optimiser = reoptimised.map(|run| OptimiserReport::new(run, params.optimiser.max_iter));
    let form = runtime_form(&features, &kern, &post, beta);
    let model = TrainedModel::regression(ModelKind::GpLasso, form, data);
    let (weights, coef) = (params.weights, coef.to_vec());
    let kept = params.refit == GplassoRefit::Nothing;
    let kernels = vec![kern.clone()];
    let data = data.clone();
    // The selection stays; a rebuild refactorises with the new jitter and,
    // unless the hyperparameters are the paper's fixed ones, lets them
    // adapt to it for `max_iter` iterations.
    let rebuild = move |jitter: JitterPolicy, max_iter: u64| {
        let config = FitcConfig {
            jitter,
            ..FitcConfig::default()
        };
        let kern = if kept || max_iter == 0 {
            kern.clone()
        } else {
            let rows: Vec<usize> = coef.iter().map(|&(j, _)| j).collect();
            let options = OptimiseOptions {
                max_iter,
                ..OptimiseOptions::default()
            };
            let z = data.x.select_rows(&rows);
            reoptimise(&data, z, kern.clone(), &options, &config, &mut |_| {})?.0
        };
        let (features, post, beta) =
            selected_model(&kern, &data.x, &data.y, &coef, weights, &config)?;
        Ok(Rebuilt {
            forms: vec![runtime_form(&features, &kern, &post, beta)],
            biases: None,
            nlml: post.nlml,
            kernels: vec![kern],
            noise_held: false,
        })
    };
    Ok(Fit::new(
        ModelSet::single(model, Vec::new()),
        report,
        kernels,
        (config.jitter.initial, Box::new(rebuild)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::{fit, FitParams};

    fn data(n: usize, seed: u64) -> Dataset {
        let (x, y) = crate::model::inference::test_util::problem(seed, n, 2);
        Dataset::from_raw(x, y, vec!["a".into(), "b".into()], "y".into()).expect("valid")
    }

    fn quick(m: usize) -> GplassoParams {
        GplassoParams {
            m,
            optimiser: OptimiseOptions {
                max_iter: 30,
                ..OptimiseOptions::default()
            },
            ..GplassoParams::default()
        }
    }

    #[test]
    fn reduced_problem_has_the_original_normal_equations() {
        let d = data(40, 1);
        let kern = KernelParams::new(&[0.8, 1.1], 1.2, 0.05).expect("valid");
        let red = reduced_problem(&kern, &d.x, &d.y, 40, 0.0).expect("ok");
        assert_eq!(red.c.nrows(), red.icf.rank(), "one row per ICF rank");
        let k = kern.cross(&d.x, &d.x);
        let v = kern.noise_var();
        let ctc = red.c.tr_mul(&red.c);
        let want = &k * &k / v + &k;
        assert!((ctc - &want).amax() < 1e-7 * want.amax());
        let ctd = red.c.tr_mul(&red.d);
        let want = &k * &d.y / v;
        assert!((ctd - &want).amax() < 1e-7 * want.amax());
    }

    #[test]
    fn selects_m_training_rows_and_predicts_with_them() {
        let d = data(120, 2);
        let params = GplassoParams {
            refit: GplassoRefit::Hyperparameters,
            ..quick(12)
        };
        let fitted = fit(&d, &FitParams::Gplasso(params), &mut |_| {}).expect("fit");
        let report = fitted.report.gplasso.as_ref().expect("gplasso report");
        assert_eq!(report.reached, 12);
        assert_eq!(report.selected_rows.len(), 12);
        assert_eq!(fitted.set.members[0].kind, ModelKind::GpLasso);
        assert_eq!(fitted.set.members[0].n_basis(), 12);
        // The basis points are the selected rows' inputs.
        let centres = &fitted.set.members[0].form.basis.centres;
        for (i, &row) in report.selected_rows.iter().enumerate() {
            assert!((centres.row(i) - d.x.row(row)).amax() < 1e-12);
        }
        // Fits the data much better than the mean.
        let p = fitted.set.members[0]
            .predict_raw(&d.raw_x())
            .expect("predict");
        let rmse = crate::evaluate::metrics::rmse(p.mean.as_slice(), d.raw_y().as_slice());
        let sd = d.raw_y().variance().sqrt();
        assert!(rmse < 0.5 * sd, "rmse {rmse} vs sd {sd}");
        assert!(p.var.iter().all(|v| *v > 0.0));
    }

    /// Each stage of the refit lowers the training objective from the same
    /// selection: the exact GP's hyperparameters, then re-optimised ones
    /// with the selected inputs fixed, then the inputs moved too; and only
    /// the last moves the basis off the training inputs.
    #[test]
    fn each_refit_stage_improves_the_training_objective() {
        let d = data(150, 6);
        let with = |refit| {
            // The stages themselves: no small-data choice against SPGP.
            let params = GplassoParams {
                refit,
                max_points: 100,
                ..quick(8)
            };
            let fitted = fit(&d, &FitParams::Gplasso(params), &mut |_| {}).expect("fit");
            let report = fitted.report.gplasso.clone().expect("gplasso report");
            (fitted, report)
        };
        let (kept, kept_report) = with(GplassoRefit::Nothing);
        let (hyper, hyper_report) = with(GplassoRefit::Hyperparameters);
        let (moved, moved_report) = with(GplassoRefit::Everything);
        // The same start and selection (the start has 100 rows either way).
        assert_eq!(kept_report.hyper_rows, 100);
        assert_eq!(hyper_report.hyper_rows, 100);
        assert_eq!(kept_report.selected_rows, hyper_report.selected_rows);
        assert_eq!(hyper_report.selected_rows, moved_report.selected_rows);
        assert!(kept.report.optimiser.is_none());
        assert!(hyper.report.optimiser.is_some() && moved.report.optimiser.is_some());
        let (a, b, c) = (kept.report.nlml, hyper.report.nlml, moved.report.nlml);
        assert!(b < a - 1.0, "re-optimised {b} vs kept {a}");
        assert!(c < b - 1e-3, "moved {c} vs fixed basis {b}");
        let on_rows = |f: &Fit, report: &GplassoReport| {
            let centres = &f.set.members[0].form.basis.centres;
            report
                .selected_rows
                .iter()
                .enumerate()
                .all(|(i, &row)| (centres.row(i) - d.x.row(row)).amax() < 1e-12)
        };
        assert!(on_rows(&kept, &kept_report) && on_rows(&hyper, &hyper_report));
        assert!(!on_rows(&moved, &moved_report));
        assert_eq!(moved.set.members[0].kind, ModelKind::GpLasso);
        assert_eq!(moved.report.method, Method::Gplasso);
        // Both re-optimised models can be rebuilt with more jitter (the
        // export cure), re-optimising for a few iterations.
        assert!(hyper.with_jitter(1e-4, 3).is_ok());
        assert!(moved.with_jitter(1e-4, 3).is_ok());
    }

    #[test]
    fn lasso_weights_need_the_papers_hyperparameters() {
        let d = data(30, 4);
        let params = GplassoParams {
            weights: GplassoWeights::Lasso,
            ..quick(5)
        };
        match params.check(&d) {
            Err(Error::BadInput(msg)) => assert!(msg.contains("--fixed-hyperparameters")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn duplicated_rows_stop_the_path_early_and_say_so() {
        let base = data(6, 3);
        let rows: Vec<usize> = (0..36).map(|i| i % 6).collect();
        let d = base.subset(&rows).expect("subset");
        let mut params = quick(10);
        params.rank = Some(20);
        let fitted = fit(&d, &FitParams::Gplasso(params), &mut |_| {}).expect("fit");
        let report = fitted.report.gplasso.expect("report");
        assert!(report.reached <= 6, "{report:?}");
        assert_eq!(report.asked, 10);
        assert_ne!(report.stop, LarsStop::Nonzeros);
    }

    #[test]
    fn bad_settings_are_clear_errors() {
        let d = data(30, 4);
        let bad = |p: GplassoParams| match p.check(&d) {
            Err(Error::BadInput(msg)) => msg,
            other => panic!("{other:?}"),
        };
        assert!(bad(quick(31)).contains("larger than the 30 training rows"));
        assert!(bad(quick(0)).contains("at least 1"));
        let mut p = quick(10);
        p.rank = Some(0);
        assert!(bad(p.clone()).contains("--rank"));
        p.rank = Some(5);
        assert!(bad(p).contains("rank 5 allows"));
    }

    #[test]
    fn the_path_scores_every_breakpoint_on_held_out_rows() {
        let d = data(100, 5);
        let (rows, stop) = gplasso_path(&d, &quick(8)).expect("path");
        assert_eq!(stop, LarsStop::Nonzeros);
        assert_eq!(rows.last().expect("rows").nonzeros, 8);
        assert!(rows.windows(2).all(|w| w[1].lambda <= w[0].lambda));
        assert!(rows.iter().all(|r| r.validation_nlpd.is_finite()));
        // More basis points fit the training data better.
        assert!(rows.last().expect("rows").objective < rows[0].objective);
    }
}
