//! GPLasso (Yan & Qi 2010): hyperparameters fixed from an exact GP on a
//! subset, then the basis points are chosen among the training inputs by
//! the lasso path of
//!
//! `||C beta - d||^2 + lambda' |beta|_1`, `C = [K / sqrt(v); R]`,
//! `d = [y / sqrt(v); 0]`, `K = R^T R`
//!
//! (MATH.md, "GPLasso"), which is `2 KL(exact || sparse posterior)` up to a
//! constant plus the l1 penalty. With a pivoted incomplete Cholesky
//! `K ~ Rt^T Rt` (rank r, [`crate::icf`]) and `S = Rt Rt^T = Ls Ls^T`, the
//! reduced problem is 2r x N: `C~ = [Ls^T Rt / sqrt(v); Rt]`,
//! `d~ = [Ls^{-1} Rt y / sqrt(v); 0]`, whose `C~^T C~ = K~ K~ / v + K~`
//! and `C~^T d~ = K~ y / v` are the original's with `K~` for `K`. LARS
//! ([`crate::lars`], which minimises `1/2 ||.||^2 + lambda |beta|_1`, so
//! the paper's `lambda' = 2 lambda`) follows the path until M weights are
//! non-zero; those training inputs are the basis.
//!
//! `C~` has rank at most r, so at most r weights can be non-zero: M may not
//! exceed the ICF rank. Duplicated training inputs give identical columns;
//! LARS admits only one of each, so a path may end with fewer than M
//! non-zeros — the fit says so ([`GplassoReport::reached`]).
//!
//! # Prediction
//!
//! The mean is `sum_i beta_i k(x, x_i)` over the selected inputs. The paper
//! gives no variance; we use FITC's predictive variance with the selected
//! inputs as pseudo-inputs and the same hyperparameters (an approximation:
//! it is not the variance of the lasso posterior). The weights are, per
//! [`GplassoWeights`], the lasso's or those of that same FITC posterior
//! (refitted on the selected set); the default is chosen by measurement
//! ([`DEFAULT_WEIGHTS`]).

use std::time::Instant;

use nalgebra::{DMatrix, DVector};
use serde::Serialize;
use sgp_runtime::{Link, ModelKind};

use super::exact::{optimise_exact, training_subset};
use super::spgp::SparseFit;
use super::{check_max_points, default_optimiser, Checked, FitReport, Fitted, Method};
use crate::data::Dataset;
use crate::features::{InducingFeatures, PseudoInputs};
use crate::icf::{kernel_icf, Icf};
use crate::inference::fitc::{fitc_posterior, FitcConfig, FitcPosterior};
use crate::inference::RuntimeForm;
use crate::kernel::KernelParams;
use crate::lars::{lasso_path, LarsAction, LarsOptions, LarsStop, LassoPath};
use crate::linalg::{cholesky_jittered, solve_lower_vec, JitterPolicy};
use crate::model::TrainedModel;
use crate::optimise::{minimise, OptimiseOptions, Progress};
use crate::{Error, Result};

/// Which weights the exported mean uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum GplassoWeights {
    /// The lasso solution itself (shrunk towards zero by the penalty).
    Lasso,
    /// Refitted on the selected inputs: the mean of the FITC posterior with
    /// them as pseudo-inputs (the posterior the variance comes from).
    Refit,
}

/// Default weights. Measured with `examples/gplasso_vs_spgp.rs` (9 data
/// sets, M in {10, 25, 50, 100}, 35 cases): the refit's test NLPD was
/// better or equal in 30, worse in 5 by at most 0.005 nats, and better by
/// up to 1.9 nats (chirp) and 5.7 (periodic) at M = 10 and 0.6 (varying2d)
/// at M = 50 — the lasso's weights are shrunk by the penalty that stops
/// the path at M non-zeros, which costs most at small M; once the path
/// nears the kernel's rank the two coincide.
pub const DEFAULT_WEIGHTS: GplassoWeights = GplassoWeights::Refit;

/// Default relative trace tolerance of the incomplete Cholesky.
pub const DEFAULT_TRACE_TOL: f64 = 1e-6;

/// The ICF rank used when none is given: `max(4 M, 100)`, at most N.
/// Measured (`examples/gplasso_vs_spgp.rs --ranks`, chirp, ridge and
/// diabetes at M = 10, 25, 50; ranks 2M, 4M, 8M, N): from 4 M on, test NLPD
/// is within 0.003 of the full-rank result; at 2 M it moved by up to 0.04
/// either way (ridge, M = 10: 0.737 vs 0.699). The ICF's trace tolerance
/// stops it earlier on smooth kernels anyway (rank 44 on chirp).
pub fn default_rank(m: usize, n: usize) -> usize {
    (4 * m).max(100).min(n)
}

/// Settings of a GPLasso fit.
#[derive(Clone, Debug, PartialEq)]
pub struct GplassoParams {
    /// Number of basis points (non-zero weights) M.
    pub m: usize,
    /// ICF rank r (None: [`default_rank`]).
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
    /// Optimiser of the exact GP.
    pub optimiser: OptimiseOptions,
}

impl Default for GplassoParams {
    fn default() -> Self {
        GplassoParams {
            m: 20,
            rank: None,
            trace_tol: DEFAULT_TRACE_TOL,
            weights: DEFAULT_WEIGHTS,
            max_points: 1000,
            seed: 0,
            optimiser: default_optimiser(),
        }
    }
}

impl GplassoParams {
    /// Validates the settings against `data`.
    ///
    /// # Errors
    /// [`Error::BadInput`] naming the offending setting: M of 0 or above N,
    /// a rank of 0, M above the rank.
    pub fn check(&self, data: &Dataset) -> Result<Checked<'_, Self>> {
        self.optimiser.validate()?;
        check_max_points(self.max_points)?;
        data.require_rows(2, "a Gaussian process")?;
        let n = data.n_rows();
        if self.m == 0 {
            return Err(Error::BadInput("--m must be at least 1".into()));
        }
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
                    "--m {} is larger than the incomplete Cholesky rank {} allows: the reduced \
                     lasso problem has rank at most {}, so at most that many weights can be \
                     non-zero; raise --rank or lower --m",
                    self.m,
                    rank,
                    rank.min(n)
                )));
            }
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
    pub fn rank_for(&self, n: usize) -> usize {
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
    /// Training rows whose inputs are the basis points, 0-based (header not
    /// counted), in the order they entered the path; the blob holds their
    /// coordinates, not these indices.
    pub selected_rows: Vec<usize>,
    /// The weights used.
    pub weights: GplassoWeights,
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
    /// Optimiser iterations of the exact GP behind the hyperparameters.
    pub hyper_iterations: u64,
    /// Seconds spent on the hyperparameters (exact GP).
    pub hyper_seconds: f64,
    /// Seconds spent selecting the basis (ICF, LARS, posterior).
    pub select_seconds: f64,
}

/// One breakpoint of the path as `sgp fit --path` prints it.
#[derive(Clone, Debug, Serialize)]
pub struct PathRow {
    /// What changed at this breakpoint; the variable is a row of the whole
    /// data set (0-based), as in [`Self::rows`].
    pub action: LarsAction,
    /// The rows with non-zero weight (0-based rows of the whole data set),
    /// in the order they entered.
    pub rows: Vec<usize>,
    /// Non-zero weights.
    pub nonzeros: usize,
    /// The penalty (`1/2 ||.||^2` convention).
    pub lambda: f64,
    /// Training objective without the penalty: `||C~ beta - d~||^2 -
    /// ||d~||^2`, i.e. `2 KL` up to a constant (0 at beta = 0).
    pub objective: f64,
    /// Mean NLPD on the held-out rows, raw units.
    pub validation_nlpd: f64,
    /// RMSE on the held-out rows, raw units.
    pub validation_rmse: f64,
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
    let r = rt.nrows();
    let n = rt.ncols();
    let s = rt * rt.transpose();
    let scale = s.diagonal().max().max(f64::MIN_POSITIVE);
    let policy = JitterPolicy {
        initial: 1e-12,
        ..JitterPolicy::default()
    };
    let ls = cholesky_jittered(&s, scale, &policy)?.l;
    let sv = kern.noise_var().sqrt();
    let top = ls.tr_mul(rt) / sv;
    let d_top = solve_lower_vec(&ls, &(rt * y))? / sv;
    let mut c = DMatrix::zeros(2 * r, n);
    c.rows_mut(0, r).copy_from(&top);
    c.rows_mut(r, r).copy_from(rt);
    let mut d = DVector::zeros(2 * r);
    d.rows_mut(0, r).copy_from(&d_top);
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
    optimiser: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(KernelParams, u64)> {
    let subset = training_subset(data, max_points, seed)?;
    let (kern, run) = optimise_exact(&subset, optimiser, progress)?;
    Ok((kern, run.iterations))
}

fn lars_for(reduced: &Reduced, m: usize) -> Result<LassoPath> {
    lasso_path(&reduced.c, &reduced.d, &LarsOptions::until_nonzeros(m))
}

/// Fits GPLasso.
pub(crate) fn fit_gplasso(
    data: &Dataset,
    params: &Checked<'_, GplassoParams>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fitted> {
    let started = Instant::now();
    let (kern, hyper_iterations) = hyperparameters(
        data,
        params.max_points,
        params.seed,
        &params.optimiser,
        progress,
    )?;
    let hyper_seconds = started.elapsed().as_secs_f64();
    let mut fitted = select(data, params, kern)?;
    if let Some(g) = &mut fitted.report.gplasso {
        g.hyper_iterations = hyper_iterations;
        g.hyper_seconds = hyper_seconds;
    }
    Ok(fitted)
}

/// The exact GP's hyperparameters GPLasso would use for `data` (for
/// comparisons that hold them fixed across methods).
///
/// # Errors
/// Bad settings, or a failed optimisation.
pub fn exact_hyperparameters(data: &Dataset, params: &GplassoParams) -> Result<KernelParams> {
    let params = params.check(data)?;
    Ok(hyperparameters(
        data,
        params.max_points,
        params.seed,
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
pub fn fit_gplasso_given(
    data: &Dataset,
    params: &GplassoParams,
    kern: KernelParams,
) -> Result<Fitted> {
    require_no_constant_inputs(data)?;
    let started = Instant::now();
    let mut fitted = select(data, &params.check(data)?, kern)?;
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

/// ICF, LARS and the model, for fixed hyperparameters.
fn select(
    data: &Dataset,
    params: &Checked<'_, GplassoParams>,
    kern: KernelParams,
) -> Result<Fitted> {
    let selecting = Instant::now();
    let n = data.n_rows();
    let rank = params.rank_for(n);
    let reduced = reduced_problem(&kern, &data.x, &data.y, rank, params.trace_tol)?;
    let path = lars_for(&reduced, params.m)?;
    let last = path.last().clone();
    if last.coef.is_empty() {
        return Err(Error::BadInput(
            "GPLasso: the lasso path selected no basis point (is the target constant?)".into(),
        ));
    }
    let config = FitcConfig::default();
    let (features, post, beta) =
        selected_model(&kern, &data.x, &data.y, &last.coef, params.weights, &config)?;
    let select_seconds = selecting.elapsed().as_secs_f64();
    let mut report = FitReport::new(
        Method::Gplasso,
        data,
        n,
        &kern,
        post.nlml,
        post.jitter_escalations,
    );
    report.gplasso = Some(GplassoReport {
        asked: params.m,
        reached: last.nonzeros(),
        stop: path.stop,
        selected_rows: last.coef.iter().map(|&(j, _)| j).collect(),
        weights: params.weights,
        rank,
        icf_rank: reduced.icf.rank(),
        icf_residual: reduced.icf.relative_residual(),
        lars_steps: path.points.len() - 1,
        removals: path
            .points
            .iter()
            .filter(|p| matches!(p.action, LarsAction::Leave(_)))
            .count(),
        lambda: last.lambda,
        hyper_iterations: 0,
        hyper_seconds: 0.0,
        select_seconds,
    });
    let model = TrainedModel {
        kind: ModelKind::GpLasso,
        link: Link::Identity,
        form: runtime_form(&features, &kern, &post, beta),
        transform: data.transform.clone(),
        input_names: data.input_names.clone(),
        target_name: data.target_name.clone(),
        bias: 0.0,
        positive_class: 0.0,
    };
    let (x, y, weights, coef) = (data.x.clone(), data.y.clone(), params.weights, last.coef);
    let hyper = report.hyper.clone();
    // The hyperparameters and the selection are fixed: a rebuild only
    // refactorises with the new jitter (nothing is re-optimised).
    let rebuild = move |jitter: JitterPolicy, _max_iter: u64| {
        let config = FitcConfig {
            jitter,
            ..FitcConfig::default()
        };
        let (features, post, beta) = selected_model(&kern, &x, &y, &coef, weights, &config)?;
        let form = runtime_form(&features, &kern, &post, beta);
        Ok((form, post.nlml, hyper.clone()))
    };
    Ok(Fitted::new(
        model,
        report,
        config.jitter.initial,
        Box::new(rebuild),
    ))
}

/// Held-out fraction of `sgp fit --path`.
pub const PATH_HOLDOUT: f64 = 0.2;

/// The lasso path up to `params.m` non-zeros, fitted on a random
/// `1 - PATH_HOLDOUT` of `data` (hyperparameters included) and scored on
/// the rest, so that M can be chosen on held-out data; plus why it stopped.
/// Both parts keep `data`'s standardisation, so that row numbers and units
/// are those of `data`.
///
/// # Errors
/// As the fit; [`Error::BadInput`] if `data` is too small to split.
pub fn gplasso_path(data: &Dataset, params: &GplassoParams) -> Result<(Vec<PathRow>, LarsStop)> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let reduced_data;
    let data = if data.constant_inputs.is_empty() {
        data
    } else {
        reduced_data = data.without_inputs(&data.constant_inputs)?;
        &reduced_data
    };
    let n = data.n_rows();
    let n_valid = (PATH_HOLDOUT * n as f64).round() as usize;
    if n_valid == 0 || n_valid + 2 > n {
        return Err(Error::BadInput(format!(
            "--path holds out {:.0}% of the rows for validation: {n} rows are too few",
            100.0 * PATH_HOLDOUT
        )));
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(params.seed));
    let (valid_rows, train_rows) = order.split_at(n_valid);
    let mut valid_rows = valid_rows.to_vec();
    let mut train_rows = train_rows.to_vec();
    valid_rows.sort_unstable();
    train_rows.sort_unstable();
    let train = data.subset(&train_rows)?;
    let valid = data.subset(&valid_rows)?;
    let params = params.check(&train)?;
    let (kern, _) = hyperparameters(
        &train,
        params.max_points,
        params.seed,
        &params.optimiser,
        &mut |_| {},
    )?;
    let reduced = reduced_problem(
        &kern,
        &train.x,
        &train.y,
        params.rank_for(train.n_rows()),
        params.trace_tol,
    )?;
    let path = lars_for(&reduced, params.m)?;
    let d_sq = reduced.d.norm_squared();
    let t = &train.transform;
    let y_raw = valid.raw_y();
    let config = FitcConfig::default();
    let mut rows = Vec::new();
    for point in path.points.iter().skip(1) {
        if point.coef.is_empty() {
            continue;
        }
        let (features, post, beta) = selected_model(
            &kern,
            &train.x,
            &train.y,
            &point.coef,
            params.weights,
            &config,
        )?;
        let mut p = post.predict(&features, &kern, &valid.x)?;
        p.mean = features.kuf(&kern, valid.x.as_view()).tr_mul(&beta);
        let mean = t.unapply_y(&p.mean);
        let var = p.var_y().map(|v| t.unapply_var(v));
        let original = |j: usize| train_rows[j];
        rows.push(PathRow {
            action: match point.action {
                LarsAction::Enter(j) => LarsAction::Enter(original(j)),
                LarsAction::Leave(j) => LarsAction::Leave(original(j)),
                LarsAction::Rejected(j) => LarsAction::Rejected(original(j)),
                other => other,
            },
            rows: point.coef.iter().map(|&(j, _)| original(j)).collect(),
            nonzeros: point.nonzeros(),
            lambda: point.lambda,
            objective: 2.0 * point.half_rss - d_sq,
            validation_nlpd: crate::metrics::mean_nlpd(
                mean.as_slice(),
                var.as_slice(),
                y_raw.as_slice(),
            ),
            validation_rmse: crate::metrics::rmse(mean.as_slice(), y_raw.as_slice()),
        });
    }
    Ok((rows, path.stop))
}

/// The paper's baseline: SPGP (FITC) with the SAME fixed hyperparameters as
/// GPLasso (the exact GP on at most `max_points` rows), optimising only the
/// pseudo-input positions, from one k-means start. For the comparison of
/// `examples/gplasso_vs_spgp.rs`; `report.seconds` is the time spent on
/// the pseudo-inputs alone, as for [`fit_gplasso_given`]. (A cure that re-optimises would free the
/// hyperparameters too; the benchmark only reports the fit.) `kern`: the
/// hyperparameters ([`exact_hyperparameters`]); `data` without constant
/// inputs.
///
/// # Errors
/// As the fits it is made of.
pub fn fit_spgp_fixed_hyperparameters(
    data: &Dataset,
    params: &GplassoParams,
    kern: KernelParams,
) -> Result<Fitted> {
    require_no_constant_inputs(data)?;
    let started = Instant::now();
    let params = params.check(data)?;
    let z = crate::init::kmeans(&data.x, params.m, params.seed, 100)?;
    let config = FitcConfig::default();
    let objective = crate::inference::objective::SparseObjective::new(
        &data.x,
        &data.y,
        PseudoInputs::new(z)?,
        kern.clone(),
        config,
    )?;
    let full = objective.initial();
    let range = objective.layout().feature_range();
    let run = minimise(
        |pz| {
            let mut p = full.clone();
            p[range.clone()].copy_from_slice(pz);
            let (f, g) = objective.objective(&p)?;
            Ok((f, g[range.clone()].to_vec()))
        },
        full[range.clone()].to_vec(),
        &params.optimiser.for_rows(data.n_rows()),
        &mut |_| {},
    )?;
    let mut p = full.clone();
    p[range.clone()].copy_from_slice(&run.x);
    let (features, kernel) = objective.unpack(&p)?;
    let posterior = fitc_posterior(&features, &kernel, &data.x, &data.y, &config)?;
    let fit = SparseFit {
        features,
        kernel,
        posterior,
        config,
        run,
        max_iter: params.optimiser.max_iter,
    };
    let mut fitted = fit.into_fitted(data, ModelKind::Spgp, Method::Spgp);
    fitted.report.seconds = started.elapsed().as_secs_f64();
    Ok(fitted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::{fit, FitParams};

    fn data(n: usize, seed: u64) -> Dataset {
        let (x, y) = crate::inference::test_util::problem(seed, n, 2);
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
        let fitted = fit(&d, &FitParams::Gplasso(quick(12)), &mut |_| {}).expect("fit");
        let report = fitted.report.gplasso.as_ref().expect("gplasso report");
        assert_eq!(report.reached, 12);
        assert_eq!(report.selected_rows.len(), 12);
        assert_eq!(fitted.model.kind, ModelKind::GpLasso);
        assert_eq!(fitted.model.n_basis(), 12);
        // The basis points are the selected rows' inputs.
        let centres = &fitted.model.form.basis.centres;
        for (i, &row) in report.selected_rows.iter().enumerate() {
            assert!((centres.row(i) - d.x.row(row)).amax() < 1e-12);
        }
        // Fits the data much better than the mean.
        let p = fitted.model.predict_raw(&d.raw_x()).expect("predict");
        let rmse = crate::metrics::rmse(p.mean.as_slice(), d.raw_y().as_slice());
        let sd = d.raw_y().variance().sqrt();
        assert!(rmse < 0.5 * sd, "rmse {rmse} vs sd {sd}");
        assert!(p.var.iter().all(|v| *v > 0.0));
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
