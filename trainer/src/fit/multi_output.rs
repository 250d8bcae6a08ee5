//! Several outputs on one basis (`sgp fit --target a,b,c`): one fit whose
//! `P` outputs share the basis functions (pseudo-inputs, VSGP's widths,
//! SPGP+DR's projection, the kernel's length scales) while each output
//! keeps its own target mean and scale, signal variance, noise variance,
//! weights and factors.
//!
//! # Objective
//!
//! The sum of the outputs' own objectives
//! ([`crate::model::inference::shared`]): FITC's or VFE's over the shared
//! features, or the exact NLML over shared length scales. Each output's
//! term is that of a single-output fit, so a `P = 1` fit is today's fit.
//! SPGP's FITC-or-VFE choice on held-out rows is made as for one output,
//! judged by the outputs' summed held-out NLPD ([`fit_spgp_chosen`]).
//!
//! # What can share
//!
//! Exact GP, SPGP (FITC and VFE), VSGP and SPGP+DR. The others are refused
//! with a message: SPGP+HS's per-pseudo-input uncertainties model one
//! output's input-dependent noise, GPLasso's lasso path picks the basis
//! points from one target's weights, the IVM picks its active set from one
//! output's posterior, PCA-then-SPGP is the baseline of SPGP+DR, and SVGP
//! is a classifier.
//!
//! # The result
//!
//! A [`ModelSet`] whose members carry the first output's basis bit for
//! bit. An output whose signal variance is `s2_p` has basis functions
//! `c k` with `c = s2_p / s2_1` (every amplitude is proportional to the
//! signal variance), so its weights are multiplied by `c` and its factors
//! divided by `c` ([`fold_onto`]): the same predictions from the shared
//! basis vector.
//!
//! Restarts work as for one output ([`super::spgp`]): every start gets a
//! screening run of the joint objective, on the same rows for every
//! output, and the best continues. Seeds make the fit deterministic.

use std::cell::Cell;
use std::sync::Arc;

use serde::Serialize;
use sgp_runtime::{Kernel, Link, ModelKind};

use super::exact::training_subset;
use super::progress::{continuing, recording};
use super::spgp::{screen_iter, screen_rows, start_positions};
use super::{
    held_out, Checked, Expansion, FitParams, FitReport, Method, OptimiserReport, PseudoInit,
    SparseParams, StartReport,
};
use crate::data::multi_target::MultiTargetData;
use crate::data::Dataset;
use crate::model::features::{InducingFeatures, Multiscale, Projected, PseudoInputs, RuntimeBasis};
use crate::model::inference::exact::exact_posterior;
use crate::model::inference::fitc::{fitc_posterior, FitcConfig};
use crate::model::inference::objective::{ExactObjective, SparseObjective};
use crate::model::inference::shared::{OutputObjective, SharedObjective};
use crate::model::inference::tied_ratio::{without_noise_floor, TiedRatio};
use crate::model::inference::RuntimeForm;
use crate::model::kernel::KernelParams;
use crate::model::shared_variance::share_first_variance;
use crate::model::{ModelSet, TrainedModel};
use crate::numerics::linalg::JitterPolicy;
use crate::numerics::optimise::{minimise, OptimiseOptions, OptimiseReport, Progress};
use crate::{Error, Result};

/// A multi-output fit: the models and how each output's fit went.
pub struct FittedSet {
    /// The outputs' models on one basis.
    pub set: ModelSet,
    /// The fit.
    pub report: MultiFitReport,
    /// The relative jitter the fit used.
    jitter: f64,
    /// Each output's runtime form and objective at another jitter, from
    /// the fitted parameters.
    posteriors: Posteriors,
    /// Constant inputs the fit left out (the models take them and ignore
    /// them).
    ignored: Vec<usize>,
    /// Whether the outputs share one variance factor (a tied fit).
    tied: bool,
}

impl std::fmt::Debug for FittedSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FittedSet")
            .field("set", &self.set)
            .field("report", &self.report)
            .field("jitter", &self.jitter)
            .finish_non_exhaustive()
    }
}

/// Each output's runtime form, training objective and kernel under a
/// jitter policy, after that many iterations of joint re-optimisation from
/// the fitted parameters (0: the fitted parameters).
type Posteriors =
    Arc<dyn Fn(&JitterPolicy, u64) -> Result<Vec<(RuntimeForm, f64, KernelParams)>> + Send + Sync>;

impl FittedSet {
    /// The relative jitter the fit used.
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    /// The fit recomputed with the relative jitter `eps` (times each
    /// output's `s2`) on the factorised diagonal, after `reoptimise`
    /// iterations of the joint objective from the fitted parameters (0: the
    /// same parameters): the set (every member again on one basis), its
    /// joint training objective and each output's hyperparameters. A larger
    /// jitter bounds the weights and the factors' condition, which an f32
    /// export that fails its check needs ([`crate::export::cure`]).
    ///
    /// # Errors
    /// If a factorisation fails even with that jitter.
    pub fn with_jitter(
        &self,
        eps: f64,
        reoptimise: u64,
    ) -> Result<(ModelSet, f64, Vec<super::Hyperparameters>)> {
        let default = JitterPolicy::default();
        let policy = JitterPolicy {
            initial: eps,
            max: default.max.max(eps),
            ..default
        };
        let rebuilt = (self.posteriors)(&policy, reoptimise)?;
        let nlml: f64 = rebuilt.iter().map(|(_, v, _)| v).sum();
        let hyper = rebuilt
            .iter()
            .zip(&self.set.members)
            .map(|((_, _, kern), m)| {
                let mut h = super::Hyperparameters::new(kern, &m.transform);
                if m.form.basis.projection.is_some() {
                    h.lengthscales.clear();
                }
                h
            })
            .collect();
        let forms: Vec<RuntimeForm> = rebuilt.into_iter().map(|(f, _, _)| f).collect();
        let basis = forms
            .first()
            .map(|f| f.basis.clone())
            .ok_or_else(|| Error::Numerical("no output".into()))?;
        let mut set = self.set.clone();
        let forms = folded(&basis, forms, self.tied)?;
        for (member, form) in set.members.iter_mut().zip(forms) {
            let expanded = member.form.basis.input_dim() != form.basis.input_dim();
            member.form = form;
            if expanded {
                member.form.basis = member
                    .form
                    .basis
                    .with_ignored_inputs(member.input_names.len(), &self.ignored);
            }
        }
        Ok((set, nlml, hyper))
    }
}

/// How a multi-output fit went: what `sgp fit --target a,b` prints.
#[derive(Clone, Debug, Serialize)]
pub struct MultiFitReport {
    /// The joint objective (sum over outputs, standardised units).
    pub nlml: f64,
    /// Wall time of the whole fit, in seconds.
    pub seconds: f64,
    /// Every start of a restarted fit and its joint screening objective.
    pub starts: Vec<StartReport>,
    /// The final gradient run of the joint objective.
    pub optimiser: Option<OptimiserReport>,
    /// Each output's own report: its objective term and hyperparameters
    /// (the length scales are the same in all).
    pub outputs: Vec<FitReport>,
    /// Whether the outputs share one variance factor, and why (sparse
    /// fits of several outputs; `None` otherwise).
    pub variance: Option<SharingReport>,
    /// What went wrong in a part of the fit that was not needed for the
    /// result (VSGP's second start), one line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Whether the outputs of a sparse fit share one variance factor: their
/// noise-to-signal ratio tied ([`crate::model::inference::tied_ratio`]),
/// so that the blob holds one `M x M` factor for all of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VarianceSharing {
    /// Tie when the tied training objective is within [`TIE_TOLERANCE`]
    /// nats per training row (summed over outputs) of the untied one.
    #[default]
    Auto,
    /// Always tie.
    Tied,
    /// Never tie: every output keeps its own factor.
    Separate,
}

/// How much worse (nats per row and output) the tied training objective
/// may be than the untied one for [`VarianceSharing::Auto`] to tie.
pub const TIE_TOLERANCE: f64 = 0.02;

/// What a fit chose for [`VarianceSharing`], from both objectives.
#[derive(Clone, Debug, Serialize)]
pub struct SharingReport {
    /// What was asked.
    pub asked: VarianceSharing,
    /// Whether the outputs share one variance factor.
    pub tied: bool,
    /// The joint objective with every output's own noise.
    pub untied_nlml: f64,
    /// The joint objective with one noise-to-signal ratio (`None` when
    /// not fitted, or when its fit failed).
    pub tied_nlml: Option<f64>,
    /// Training rows times outputs, the scale of the tolerance.
    pub rows: usize,
}

impl SharingReport {
    /// The report line: what the outputs share and why.
    pub fn describe(&self) -> String {
        let per_row = |t: f64| (t - self.untied_nlml) / self.rows.max(1) as f64;
        match (self.tied, self.tied_nlml) {
            (true, Some(t)) => format!(
                "one factor for all outputs (noise-to-signal ratio tied: objective {t:.4}, \
                 {:+.4} nats per row and output against separate factors{})",
                per_row(t),
                if self.asked == VarianceSharing::Auto {
                    format!(", within {TIE_TOLERANCE}")
                } else {
                    String::new()
                }
            ),
            (_, Some(t)) => format!(
                "one factor per output (a tied noise-to-signal ratio costs {:+.4} nats per row \
                 and output, over {TIE_TOLERANCE})",
                per_row(t)
            ),
            _ => "one factor per output".into(),
        }
    }
}

/// Whether `method` can fit several outputs on one basis, and if not, why.
pub fn shares_basis(method: Method) -> std::result::Result<(), &'static str> {
    match method {
        Method::Exact | Method::Spgp | Method::Vsgp | Method::SpgpDr => Ok(()),
        Method::SpgpHs => Err("its per-pseudo-input uncertainties model one output's \
             input-dependent noise"),
        Method::SpgpPca => Err("it is the baseline of spgp-dr, which shares its projection"),
        Method::Gplasso => Err("its lasso path picks the basis points from one target's weights"),
        Method::Ivm => Err("it picks its active set from one output's posterior"),
        Method::Svgp => Err("it is a classifier"),
    }
}

/// Fits every output of `data` on one basis, as `params` asks.
///
/// # Errors
/// [`Error::BadInput`] for a model that cannot share its basis
/// ([`shares_basis`]) or settings that do not fit the data; a numerical
/// failure that jitter escalation could not cure.
pub fn fit_multi(
    data: &MultiTargetData,
    params: &FitParams,
    progress: &mut dyn FnMut(Progress),
) -> Result<FittedSet> {
    fit_multi_with(data, params, VarianceSharing::Auto, progress)
}

/// [`fit_multi`] with the outputs' variance factors shared as `sharing`
/// asks (sparse fits; the exact GP keeps one factor per output).
///
/// # Errors
/// As [`fit_multi`].
pub fn fit_multi_with(
    data: &MultiTargetData,
    params: &FitParams,
    sharing: VarianceSharing,
    progress: &mut dyn FnMut(Progress),
) -> Result<FittedSet> {
    let started = std::time::Instant::now();
    let refused = |why: &str| {
        Error::BadInput(format!(
            "--model {} cannot fit several targets on one basis: {why}; fit each target \
             separately, or use exact, spgp, vsgp or spgp-dr",
            params.method().name()
        ))
    };
    shares_basis(params.method()).map_err(refused)?;
    let first = data.first();
    let ignored = first.constant_inputs.clone();
    let reduced;
    let (used, params) = if ignored.is_empty() {
        (data, params.clone())
    } else {
        reduced = data.without_inputs(&ignored)?;
        (&reduced, params.without_inputs(&ignored))
    };
    let mut fitted = match &params {
        FitParams::Exact(p) => fit_exact_shared(used, &p.check(used.first())?, progress)?,
        FitParams::Spgp(p) => fit_spgp_chosen(used, p, sharing, progress)?,
        FitParams::Vsgp(p) => fit_vsgp_shared(used, &p.check(used.first())?, sharing, progress)?,
        FitParams::SpgpDr(p) => {
            let p = p.check(used.first())?;
            fit_dr_shared(used, &p.sparse, p.dim, sharing, progress)?
        }
        other => {
            return Err(refused(
                shares_basis(other.method()).err().unwrap_or_default(),
            ))
        }
    };
    if !ignored.is_empty() {
        let expansion = Expansion {
            ignored: ignored.clone(),
            transform: first.transform.clone(),
            input_names: first.input_names.clone(),
        };
        let names: Vec<String> = ignored
            .iter()
            .filter_map(|&j| first.input_names.get(j).cloned())
            .collect();
        for (model, report) in fitted
            .set
            .members
            .iter_mut()
            .zip(&mut fitted.report.outputs)
        {
            expansion.apply(model);
            report.ignored_inputs = names.clone();
        }
        fitted.ignored = ignored;
    }
    fitted.report.seconds = started.elapsed().as_secs_f64();
    for report in &mut fitted.report.outputs {
        report.seconds = fitted.report.seconds;
    }
    Ok(fitted)
}

/// SPGP on every output with the objective chosen as for one output
/// ([`super::spgp::fit_spgp`]): on small data FITC and VFE are both fitted
/// on the same random three quarters of the rows and the other objective
/// replaces the one asked for only if it clearly wins on the rest, judged
/// by the summed NLPD of the outputs ([`held_out::score_outputs`]). On the
/// cart-pole the single-output fits chose VFE, and FITC's shared fit then
/// lost 0.05 to 0.1 nats on an output whose mean was as good: the choice
/// is the objective's, not the basis's.
fn fit_spgp_chosen(
    data: &MultiTargetData,
    params: &SparseParams,
    sharing: VarianceSharing,
    progress: &mut dyn FnMut(Progress),
) -> Result<FittedSet> {
    params.check(data.first())?;
    let choice = if params.held_out_choice && held_out::applies(data.n_rows(), params.m) {
        let candidates = super::spgp::objective_candidates(params);
        let refit = |train: &MultiTargetData, params: &FitParams| {
            Ok(fit_multi(train, params, &mut |_| {})?.set.members)
        };
        Some(held_out::score_outputs(data, params.seed, &candidates, &refit)?.verdict(0, 1))
    } else {
        None
    };
    let chosen = SparseParams {
        approximation: match &choice {
            Some(c) if c.challenger_chosen => super::spgp::other_objective(params.approximation),
            _ => params.approximation,
        },
        ..params.clone()
    };
    let mut fitted = fit_spgp_shared(data, &chosen.check(data.first())?, sharing, progress)?.0;
    for report in &mut fitted.report.outputs {
        report.held_out = choice.clone();
    }
    Ok(fitted)
}

/// The shared optimisation's outcome: features, each output's kernel,
/// the run and the joint objective.
struct SharedFit<F> {
    features: F,
    kernels: Vec<KernelParams>,
    run: OptimiseReport,
    max_iter: u64,
    /// Whether the noise-to-signal ratio was tied, and why (sparse fits).
    sharing: Option<SharingReport>,
}

/// Each output's starting kernel: the data's scales (the length scales
/// come from the inputs, which every output shares), or an exact GP on a
/// subset fitted to all outputs at once.
fn initial_kernels(data: &MultiTargetData, params: &SparseParams) -> Result<Vec<KernelParams>> {
    match params.hyper_init {
        super::HyperInit::DataScales => data
            .outputs()
            .iter()
            .map(|d| super::data_scale_kernel(d, params.kernel))
            .collect(),
        super::HyperInit::ExactSubset => {
            let subsets = subsets(data, params.max_points.min(500), params.seed)?;
            let warm_up = OptimiseOptions {
                max_iter: params.optimiser.max_iter.min(100),
                ..params.optimiser.clone()
            };
            let jitter = JitterPolicy::default();
            let start = Start::Scales(params.kernel);
            Ok(optimise_exact_shared(&subsets, start, jitter, &warm_up, &mut |_| {})?.kernels)
        }
    }
}

/// Where [`optimise_exact_shared`] starts: each output's kernel, or the
/// data's scales for a covariance function.
#[derive(Clone, Copy)]
enum Start<'a> {
    Kernels(&'a [KernelParams]),
    Scales(Kernel),
}

/// The same random rows of every output.
fn subsets(data: &MultiTargetData, rows: usize, seed: u64) -> Result<Vec<Dataset>> {
    data.outputs()
        .iter()
        .map(|d| training_subset(d, rows, seed))
        .collect()
}

/// The joint exact objective of `outputs` minimised from each output's
/// kernel `start` (the data's scales if `None`).
fn optimise_exact_shared(
    outputs: &[Dataset],
    start: Start<'_>,
    jitter: JitterPolicy,
    optimiser: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<SharedFit<()>> {
    let objectives = outputs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let kern = match start {
                Start::Kernels(k) => k.get(i).cloned().ok_or_else(|| {
                    Error::Numerical(format!("no starting kernel for output {i}"))
                })?,
                Start::Scales(kernel) => super::data_scale_kernel(d, kernel)?,
            };
            ExactObjective::new(&d.x, &d.y, kern, jitter)
        })
        .collect::<Result<_>>()?;
    let joint = SharedObjective::new(objectives)?;
    let run = run_joint(&joint, outputs, optimiser, progress)?;
    let kernels = (0..joint.n_outputs())
        .map(|i| {
            joint
                .outputs()
                .get(i)
                .ok_or_else(|| Error::Numerical("output out of range".into()))?
                .unpack(&joint.output_params(&run.x, i)?)
        })
        .collect::<Result<_>>()?;
    Ok(SharedFit {
        features: (),
        kernels,
        run,
        max_iter: optimiser.max_iter,
        sharing: None,
    })
}

/// L-BFGS on a joint objective; the stall test counts every output's rows.
fn run_joint<O: OutputObjective>(
    joint: &SharedObjective<O>,
    outputs: &[Dataset],
    optimiser: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<OptimiseReport> {
    let rows = outputs.iter().map(Dataset::n_rows).sum();
    minimise(
        |p| joint.objective(p),
        joint.initial(),
        &optimiser.for_rows(rows),
        progress,
    )
}

fn fit_exact_shared(
    data: &MultiTargetData,
    params: &Checked<'_, super::ExactParams>,
    progress: &mut dyn FnMut(Progress),
) -> Result<FittedSet> {
    let outputs = subsets(data, params.max_points, params.seed)?;
    let fit = optimise_exact_shared(
        &outputs,
        Start::Scales(params.kernel),
        JitterPolicy::default(),
        &params.optimiser,
        progress,
    )?;
    let mut reports = Vec::new();
    for ((full, used), kern) in data.outputs().iter().zip(&outputs).zip(&fit.kernels) {
        let post = exact_posterior(kern, &used.x, &used.y, &JitterPolicy::default())?;
        reports.push(FitReport::new(
            Method::Exact,
            full,
            used.n_rows(),
            kern,
            post.nlml(),
            post.jitter_escalations(),
        ));
    }
    let fitted_kernels = fit.kernels.clone();
    let posteriors: Posteriors = Arc::new(move |jitter: &JitterPolicy, max_iter: u64| {
        let kernels = if max_iter == 0 {
            fitted_kernels.clone()
        } else {
            let options = OptimiseOptions {
                max_iter,
                ..OptimiseOptions::default()
            };
            optimise_exact_shared(
                &outputs,
                Start::Kernels(&fitted_kernels),
                *jitter,
                &options,
                &mut |_| {},
            )?
            .kernels
        };
        outputs
            .iter()
            .zip(kernels)
            .map(|(d, kern)| {
                let post = exact_posterior(&kern, &d.x, &d.y, jitter)?;
                Ok((post.runtime_form()?, post.nlml(), kern))
            })
            .collect()
    });
    assemble(
        data,
        ModelKind::Exact,
        posteriors,
        reports,
        &fit,
        Vec::new(),
    )
}

/// SPGP on every output: restarts screened on the joint objective, then
/// the final run.
fn fit_spgp_shared(
    data: &MultiTargetData,
    params: &Checked<'_, SparseParams>,
    sharing: VarianceSharing,
    progress: &mut dyn FnMut(Progress),
) -> Result<(FittedSet, SharedFit<PseudoInputs>)> {
    let kernels = initial_kernels(data, params)?;
    let x = &data.first().x;
    let start = |k: usize| {
        let (label, z) = start_positions(x, params, k)?;
        Ok((label, PseudoInputs::new(z)?))
    };
    let (fit, starts) = fit_restarted_shared(data, params, kernels, &start, sharing, progress)?;
    let set = sparse_set(data, ModelKind::Spgp, Method::Spgp, params, &fit, starts)?;
    Ok((set, fit))
}

fn fit_vsgp_shared(
    data: &MultiTargetData,
    params: &Checked<'_, SparseParams>,
    sharing: VarianceSharing,
    progress: &mut dyn FnMut(Progress),
) -> Result<FittedSet> {
    let done = Cell::new(0u64);
    // The widths are freed from an untied SPGP; the choice is VSGP's own.
    let separate = VarianceSharing::Separate;
    let (spgp, first) = fit_spgp_shared(data, params, separate, &mut recording(&done, progress))?;
    let shown = Cell::new(done.get());
    let from_spgp = fit_final_sparse(
        data.outputs(),
        Multiscale::from_pseudo_inputs(&first.features),
        first.kernels,
        config(params),
        &params.optimiser,
        sharing,
        &mut recording(&shown, &mut continuing(&done, progress)),
    )?;
    done.set(shown.get());
    // A second optimum of the same joint objective, from a start where
    // each output has basis functions of its own widths; the lower wins.
    let second = concatenated_start(data, params).and_then(|start| {
        start
            .map(|(features, kernels)| {
                fit_final_sparse(
                    data.outputs(),
                    features,
                    kernels,
                    config(params),
                    &params.optimiser,
                    sharing,
                    &mut continuing(&done, progress),
                )
            })
            .transpose()
    });
    let mut warnings = Vec::new();
    let fit = lower_objective(from_spgp, second, |f| f.run.value, &mut warnings);
    let mut set = sparse_set(
        data,
        ModelKind::Vsgp,
        Method::Vsgp,
        params,
        &fit,
        spgp.report.starts,
    )?;
    set.report.warnings = warnings;
    Ok(set)
}

/// The fit of lower `objective` of VSGP's two starts. The first is a
/// complete fit, so a second start that failed only costs the choice: it
/// is said in `warnings` rather than ending the fit.
fn lower_objective<T>(
    first: T,
    second: Result<Option<T>>,
    objective: impl Fn(&T) -> f64,
    warnings: &mut Vec<String>,
) -> T {
    match second {
        Ok(Some(other)) if objective(&other) < objective(&first) => other,
        Ok(_) => first,
        Err(e) => {
            warnings.push(format!(
                "VSGP's second start (each output's own SPGP at M / P basis functions, side by \
                 side) failed, so the model comes from the shared SPGP's start alone: {e}"
            ));
            first
        }
    }
}

/// Widest start width of [`concatenated_start`], as `rho`: `l^2 (1/2 +
/// e^2)`, about 2.8 times the shared length scale. Wider starts (an
/// output's length scale of over 1000 in an input it ignores) left the
/// optimiser far from the optimum of the start from SPGP.
const CONCATENATED_WIDEST_RHO: f64 = 2.0;

/// VSGP's start from each output's own SPGP fit at about `M / P` basis
/// functions: their pseudo-inputs side by side, each keeping its own
/// output's length scales as its widths (at most
/// [`CONCATENATED_WIDEST_RHO`]), under the shortest length scale of each
/// input (so every width is one a multiscale basis can take). Outputs
/// that depend on the inputs in different places or not at all (a
/// kinematic chain's x, y, z) start with basis functions of their own.
/// `None` for one output, fewer than two basis functions per output, or
/// pseudo-inputs given by the caller (who chose the start).
fn concatenated_start(
    data: &MultiTargetData,
    params: &Checked<'_, SparseParams>,
) -> Result<Option<(Multiscale, Vec<KernelParams>)>> {
    let n_out = data.n_outputs();
    let given = matches!(params.pseudo_init, PseudoInit::Given(_));
    if n_out < 2 || params.m < 2 * n_out || given {
        return Ok(None);
    }
    let mut centres: Vec<Vec<f64>> = Vec::new();
    let mut lengths: Vec<Vec<f64>> = Vec::new();
    let mut kernels = Vec::new();
    for (k, out) in data.outputs().iter().enumerate() {
        let m = params.m / n_out + usize::from(k < params.m % n_out);
        let own = SparseParams {
            m,
            ..(**params).clone()
        };
        let (fit, _) = super::spgp::fit_pseudo_inputs(out, &own.check(out)?, &mut |_| {})?;
        let l: Vec<f64> = fit.kernel.log_lengthscales.clone();
        for row in fit.features.z().row_iter() {
            centres.push(row.iter().copied().collect());
            lengths.push(l.clone());
        }
        kernels.push(fit.kernel);
    }
    let d = lengths.first().map_or(0, Vec::len);
    let shortest: Vec<f64> = (0..d)
        .map(|j| lengths.iter().map(|l| l[j]).fold(f64::INFINITY, f64::min))
        .collect();
    let rho = nalgebra::DMatrix::from_fn(centres.len(), d, |i, j| {
        let ratio = (2.0 * (lengths[i][j] - shortest[j])).exp();
        (ratio - 0.5).ln().min(CONCATENATED_WIDEST_RHO)
    });
    let centres = nalgebra::DMatrix::from_fn(centres.len(), d, |i, j| centres[i][j]);
    for kern in &mut kernels {
        kern.log_lengthscales = shortest.clone();
    }
    Ok(Some((Multiscale::new(centres, rho)?, kernels)))
}

fn fit_dr_shared(
    data: &MultiTargetData,
    params: &SparseParams,
    dim: usize,
    sharing: VarianceSharing,
    progress: &mut dyn FnMut(Progress),
) -> Result<FittedSet> {
    let kernels = initial_kernels(data, params)?;
    let kern = kernels
        .first()
        .ok_or_else(|| Error::BadInput("no output".into()))?;
    let x = &data.first().x;
    let p0 = Projected::pca_start(x, kern, dim)?;
    let xp = x * p0.transpose();
    let sparse = super::dr::mapped(params, &p0);
    let start = |k: usize| {
        let (label, zbar) = start_positions(&xp, &sparse, k)?;
        Ok((label, Projected::new(p0.clone(), zbar)?))
    };
    let (fit, starts) = fit_restarted_shared(data, &sparse, kernels, &start, sharing, progress)?;
    let mut fitted = sparse_set(
        data,
        ModelKind::SpgpDr,
        Method::SpgpDr,
        params,
        &fit,
        starts,
    )?;
    let basis = fitted
        .set
        .members
        .first()
        .map(|m| m.form.basis.clone())
        .ok_or_else(|| Error::Numerical("no output".into()))?;
    for report in &mut fitted.report.outputs {
        super::dr::describe_projection(report, &basis);
    }
    Ok(fitted)
}

fn config(params: &SparseParams) -> FitcConfig {
    FitcConfig {
        approximation: params.approximation,
        ..FitcConfig::default()
    }
}

/// [`super::spgp::fit_restarted`] for the joint objective.
fn fit_restarted_shared<F: InducingFeatures + Clone + Sync>(
    data: &MultiTargetData,
    params: &SparseParams,
    kernels: Vec<KernelParams>,
    start: &dyn Fn(usize) -> Result<(String, F)>,
    sharing: VarianceSharing,
    progress: &mut dyn FnMut(Progress),
) -> Result<(SharedFit<F>, Vec<StartReport>)> {
    let config = config(params);
    let done = Cell::new(0u64);
    let mut counted = continuing(&done, progress);
    let mut starts = Vec::new();
    let (features, kernels) = if params.restarts <= 1 {
        (start(0)?.1, kernels)
    } else {
        let screen = OptimiseOptions {
            max_iter: screen_iter(params.optimiser.max_iter),
            ..params.optimiser.clone()
        };
        let rows = screen_rows(data.n_rows(), params.restarts);
        let subset = subsets(data, rows, params.seed)?;
        let mut best: Option<(f64, SharedFit<F>)> = None;
        for k in 0..params.restarts {
            let (label, features) = start(k)?;
            let run = fit_shared_sparse(
                &subset,
                features,
                kernels.clone(),
                config,
                &screen,
                &mut counted,
            )?;
            done.set(done.get() + run.run.iterations);
            let nlml = run.run.value;
            starts.push(StartReport { init: label, nlml });
            if best.as_ref().is_none_or(|(b, _)| nlml < *b) {
                best = Some((nlml, run));
            }
        }
        let (_, best) = best.ok_or_else(|| Error::Numerical("no start was fitted".into()))?;
        (best.features, best.kernels)
    };
    let fit = fit_final_sparse(
        data.outputs(),
        features,
        kernels,
        config,
        &params.optimiser,
        sharing,
        &mut counted,
    )?;
    Ok((fit, starts))
}

/// The final run of a sparse fit: the joint objective, then, unless
/// `sharing` is [`VarianceSharing::Separate`], the tied one from its
/// optimum, kept as `sharing` says ([`TIE_TOLERANCE`]).
fn fit_final_sparse<F: InducingFeatures + Clone + Sync>(
    outputs: &[Dataset],
    features: F,
    kernels: Vec<KernelParams>,
    config: FitcConfig,
    optimiser: &OptimiseOptions,
    sharing: VarianceSharing,
    progress: &mut dyn FnMut(Progress),
) -> Result<SharedFit<F>> {
    let done = Cell::new(0u64);
    let untied = fit_shared_sparse(
        outputs,
        features,
        kernels,
        config,
        optimiser,
        &mut recording(&done, progress),
    )?;
    let rows = outputs.iter().map(Dataset::n_rows).sum();
    let mut report = SharingReport {
        asked: sharing,
        tied: false,
        untied_nlml: untied.run.value,
        tied_nlml: None,
        rows,
    };
    if sharing == VarianceSharing::Separate || outputs.len() < 2 {
        return Ok(SharedFit {
            sharing: (outputs.len() > 1).then_some(report),
            ..untied
        });
    }
    let tied = fit_tied_sparse(
        outputs,
        untied.features.clone(),
        &untied.kernels,
        config,
        optimiser,
        &mut continuing(&done, progress),
    );
    let tied = match (tied, sharing) {
        (Ok(tied), _) => tied,
        (Err(e), VarianceSharing::Tied) => return Err(e),
        (Err(_), _) => {
            return Ok(SharedFit {
                sharing: Some(report),
                ..untied
            })
        }
    };
    report.tied_nlml = Some(tied.run.value);
    report.tied = sharing == VarianceSharing::Tied
        || tied.run.value - untied.run.value <= TIE_TOLERANCE * rows as f64;
    let chosen = if report.tied { tied } else { untied };
    Ok(SharedFit {
        sharing: Some(report),
        ..chosen
    })
}

/// Minimises the tied objective of `outputs` (one noise-to-signal ratio)
/// from `features` and each output's kernel.
fn fit_tied_sparse<F: InducingFeatures + Clone + Sync>(
    outputs: &[Dataset],
    features: F,
    kernels: &[KernelParams],
    config: FitcConfig,
    optimiser: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<SharedFit<F>> {
    let kernels = kernels
        .iter()
        .map(without_noise_floor)
        .collect::<Result<Vec<_>>>()?;
    let tied = TiedRatio::new(output_objectives(outputs, &features, kernels, config)?)?;
    let rows = outputs.iter().map(Dataset::n_rows).sum();
    let run = minimise(
        |q| tied.objective(q),
        tied.initial(),
        &optimiser.for_rows(rows),
        progress,
    )?;
    let p = tied.untied(&run.x)?;
    unpacked(tied.joint(), &p, run, optimiser.max_iter)
}

/// Minimises the joint FITC or VFE objective of `outputs` from `features`
/// and each output's kernel.
fn fit_shared_sparse<F: InducingFeatures + Clone + Sync>(
    outputs: &[Dataset],
    features: F,
    kernels: Vec<KernelParams>,
    config: FitcConfig,
    optimiser: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<SharedFit<F>> {
    let joint = SharedObjective::new(output_objectives(outputs, &features, kernels, config)?)?;
    let run = run_joint(&joint, outputs, optimiser, progress)?;
    let p = run.x.clone();
    unpacked(&joint, &p, run, optimiser.max_iter)
}

/// Each output's FITC or VFE objective on the shared `features`, from
/// its own kernel: the terms of the joint and of the tied objective.
fn output_objectives<'a, F: InducingFeatures + Clone + Sync>(
    outputs: &'a [Dataset],
    features: &F,
    kernels: Vec<KernelParams>,
    config: FitcConfig,
) -> Result<Vec<SparseObjective<'a, F>>> {
    outputs
        .iter()
        .zip(kernels)
        .map(|(d, kern)| SparseObjective::new(&d.x, &d.y, features.clone(), kern, config))
        .collect()
}

/// The features and each output's kernel at the joint vector `p` of a
/// finished `run`.
fn unpacked<F: InducingFeatures + Clone + Sync>(
    joint: &SharedObjective<SparseObjective<'_, F>>,
    p: &[f64],
    run: OptimiseReport,
    max_iter: u64,
) -> Result<SharedFit<F>> {
    let mut fitted = Vec::with_capacity(joint.n_outputs());
    for (i, objective) in joint.outputs().iter().enumerate() {
        fitted.push(objective.unpack(&joint.output_params(p, i)?)?);
    }
    let features = fitted
        .first()
        .map(|(f, _)| f.clone())
        .ok_or_else(|| Error::Numerical("no output".into()))?;
    Ok(SharedFit {
        features,
        kernels: fitted.into_iter().map(|(_, k)| k).collect(),
        run,
        max_iter,
        sharing: None,
    })
}

/// Each output's posterior of a shared sparse fit, assembled into a set.
fn sparse_set<F: InducingFeatures + Clone + Send + Sync + 'static>(
    data: &MultiTargetData,
    kind: ModelKind,
    method: Method,
    params: &SparseParams,
    fit: &SharedFit<F>,
    starts: Vec<StartReport>,
) -> Result<FittedSet> {
    let config = config(params);
    let mut reports = Vec::new();
    for (d, kern) in data.outputs().iter().zip(&fit.kernels) {
        let post = fitc_posterior(&fit.features, kern, &d.x, &d.y, &config)?;
        let mut report = FitReport::new(
            method,
            d,
            d.n_rows(),
            kern,
            post.nlml,
            post.jitter_escalations,
        );
        report.approximation = Some(config.approximation);
        if !fit.features.uses_lengthscales() {
            report.hyper.lengthscales.clear();
        }
        reports.push(report);
    }
    let (features, kernels, outputs) = (
        fit.features.clone(),
        fit.kernels.clone(),
        data.outputs().to_vec(),
    );
    let tied = fit.sharing.as_ref().is_some_and(|s| s.tied);
    let posteriors: Posteriors = Arc::new(move |jitter: &JitterPolicy, max_iter: u64| {
        let config = FitcConfig {
            jitter: *jitter,
            ..config
        };
        let (features, kernels) = if max_iter == 0 {
            (features.clone(), kernels.clone())
        } else {
            let options = OptimiseOptions {
                max_iter,
                ..OptimiseOptions::default()
            };
            let refit = if tied {
                fit_tied_sparse(
                    &outputs,
                    features.clone(),
                    &kernels,
                    config,
                    &options,
                    &mut |_| {},
                )?
            } else {
                fit_shared_sparse(
                    &outputs,
                    features.clone(),
                    kernels.clone(),
                    config,
                    &options,
                    &mut |_| {},
                )?
            };
            (refit.features, refit.kernels)
        };
        outputs
            .iter()
            .zip(kernels)
            .map(|(d, kern)| {
                let post = fitc_posterior(&features, &kern, &d.x, &d.y, &config)?;
                Ok((post.runtime_form(&features, &kern), post.nlml, kern))
            })
            .collect()
    });
    assemble(data, kind, posteriors, reports, fit, starts)
}

/// The set of the outputs' runtime forms on the first one's basis, and
/// the joint report.
fn assemble<F>(
    data: &MultiTargetData,
    kind: ModelKind,
    posteriors: Posteriors,
    reports: Vec<FitReport>,
    fit: &SharedFit<F>,
    starts: Vec<StartReport>,
) -> Result<FittedSet> {
    let jitter = JitterPolicy::default();
    let forms: Vec<RuntimeForm> = posteriors(&jitter, 0)?
        .into_iter()
        .map(|(f, _, _)| f)
        .collect();
    let basis = forms
        .first()
        .map(|f| f.basis.clone())
        .ok_or_else(|| Error::Numerical("no output".into()))?;
    let tied = fit.sharing.as_ref().is_some_and(|s| s.tied);
    let members = folded(&basis, forms, tied)?
        .into_iter()
        .zip(data.outputs())
        .map(|(form, d)| {
            Ok(TrainedModel {
                kind,
                link: Link::Identity,
                form,
                transform: d.transform.clone(),
                input_names: d.input_names.clone(),
                target_name: d.target_name.clone(),
                bias: 0.0,
                positive_class: 0.0,
            })
        })
        .collect::<Result<_>>()?;
    let run = OptimiserReport::new(&fit.run, fit.max_iter);
    let mut outputs = reports;
    for report in &mut outputs {
        report.optimiser = Some(run.clone());
    }
    Ok(FittedSet {
        set: ModelSet {
            members,
            class_labels: Vec::new(),
        },
        report: MultiFitReport {
            nlml: outputs.iter().map(|r| r.nlml).sum(),
            seconds: 0.0,
            starts,
            optimiser: Some(run),
            outputs,
            variance: fit.sharing.clone(),
            warnings: Vec::new(),
        },
        jitter: jitter.initial,
        posteriors,
        ignored: Vec::new(),
        tied,
    })
}

/// `forms` moved onto `basis` ([`fold_onto`]); with `tied`, every output
/// after the first takes the first one's variance factor, scaled
/// ([`share_first_variance`]): the same variance up to rounding, which
/// the blob then stores once.
fn folded(basis: &RuntimeBasis, forms: Vec<RuntimeForm>, tied: bool) -> Result<Vec<RuntimeForm>> {
    let mut forms = forms
        .into_iter()
        .map(|form| fold_onto(basis, form))
        .collect::<Result<Vec<_>>>()?;
    if tied {
        share_first_variance(&mut forms);
    }
    Ok(forms)
}

/// `form` moved onto `basis`, whose basis functions are those of `form`
/// divided by one constant `c` (another signal variance): weights times
/// `c`, factors divided by `c`, so every prediction is unchanged.
///
/// # Errors
/// [`Error::Numerical`] when the two bases differ in more than a common
/// amplitude factor.
pub fn fold_onto(basis: &RuntimeBasis, form: RuntimeForm) -> Result<RuntimeForm> {
    let ratios: Vec<f64> = form
        .basis
        .amplitudes
        .iter()
        .zip(&basis.amplitudes)
        .map(|(a, b)| a / b)
        .collect();
    let c = ratios.first().copied().unwrap_or(1.0);
    let same_shape = RuntimeBasis {
        amplitudes: basis.amplitudes.clone(),
        ..form.basis.clone()
    } == *basis;
    if !same_shape
        || ratios.len() != basis.amplitudes.len()
        || ratios
            .iter()
            .any(|r| !(r.is_finite() && *r > 0.0) || (r - c).abs() > 1e-9 * c)
    {
        return Err(Error::Numerical(
            "the outputs' basis functions differ in more than their amplitude".into(),
        ));
    }
    Ok(RuntimeForm {
        basis: basis.clone(),
        beta: form.beta * c,
        l1: form.l1 / c,
        l2: form.l2.map(|l| l / c),
        prior: form.prior,
        noise_var: form.noise_var,
    })
}

#[cfg(test)]
mod tests {
    use nalgebra::DMatrix;

    use super::*;
    use crate::fit::{ExactParams, ProjectedParams};
    use crate::model::inference::Approximation;

    /// Two outputs of very different scale and noise on 2-D inputs.
    fn data(n: usize, seed: u64) -> MultiTargetData {
        let (x, y) = crate::tools::demo::synthetic(n, 2, seed);
        let wobble = |i: usize| (1.7 * (i as f64)).sin();
        let y2 = DMatrix::from_fn(n, 1, |i, _| {
            40.0 * (0.5 * x[(i, 1)] + 0.3 * x[(i, 0)]).cos() + 5.0 + wobble(i)
        });
        let ys = DMatrix::from_fn(n, 2, |i, j| if j == 0 { y[i] } else { y2[(i, 0)] });
        MultiTargetData::from_raw(
            x,
            ys,
            vec!["a".into(), "b".into()],
            &["p".into(), "q".into()],
        )
        .unwrap()
    }

    fn sparse(m: usize, restarts: usize) -> SparseParams {
        SparseParams {
            m,
            restarts,
            held_out_choice: false,
            optimiser: OptimiseOptions {
                max_iter: 30,
                ..OptimiseOptions::default()
            },
            ..SparseParams::default()
        }
    }

    fn check_set(fitted: &FittedSet, data: &MultiTargetData) {
        let set = &fitted.set;
        assert_eq!(set.members.len(), 2);
        assert!(set.class_labels.is_empty());
        let (a, b) = (&set.members[0], &set.members[1]);
        assert_eq!(a.form.basis, b.form.basis, "one basis, bit for bit");
        assert_eq!(a.target_name, "p");
        assert_eq!(b.target_name, "q");
        assert_ne!(a.transform.y_scale, b.transform.y_scale);
        assert_eq!(fitted.report.outputs.len(), 2);
        let x = data.first().raw_x();
        for (model, d) in set.members.iter().zip(data.outputs()) {
            let pred = model.predict_raw(&x).unwrap();
            let y = d.raw_y();
            let rmse = ((&pred.mean - &y).norm_squared() / y.len() as f64).sqrt();
            let spread = (y.variance()).sqrt();
            assert!(
                rmse < 0.5 * spread,
                "{:?} {}: rmse {rmse}, spread {spread}",
                model.kind,
                model.target_name
            );
            assert!(pred.var.iter().all(|v| *v > 0.0));
        }
    }

    #[test]
    fn spgp_vsgp_dr_and_exact_share_one_basis_and_fit_each_output() {
        let d = data(120, 4);
        let params = [
            FitParams::Spgp(sparse(8, 2)),
            FitParams::Spgp(SparseParams {
                approximation: Approximation::Vfe,
                ..sparse(8, 1)
            }),
            FitParams::Vsgp(sparse(8, 1)),
            FitParams::SpgpDr(ProjectedParams {
                sparse: sparse(8, 1),
                dim: 2,
            }),
            FitParams::Exact(ExactParams {
                max_points: 80,
                ..ExactParams::default()
            }),
        ];
        for p in params {
            let fitted = fit_multi(&d, &p, &mut |_| {}).unwrap();
            check_set(&fitted, &d);
            let total: f64 = fitted.report.outputs.iter().map(|r| r.nlml).sum();
            assert!((total - fitted.report.nlml).abs() < 1e-9 * total.abs());
        }
    }

    #[test]
    fn a_tied_fit_shares_one_variance_factor_in_its_blob() {
        let d = data(120, 4);
        let p = FitParams::Spgp(sparse(8, 1));
        let tied = fit_multi_with(&d, &p, VarianceSharing::Tied, &mut |_| {}).unwrap();
        check_set(&tied, &d);
        let report = tied.report.variance.clone().unwrap();
        assert!(report.tied && report.tied_nlml.is_some(), "{report:?}");
        assert!(report.describe().contains("one factor for all outputs"));
        let ratio = |m: &TrainedModel| m.form.noise_var / m.form.prior;
        let (a, b) = (&tied.set.members[0], &tied.set.members[1]);
        assert!((ratio(a) - ratio(b)).abs() < 1e-9 * ratio(a));
        let x = d.first().raw_x();
        let shared = crate::export::export_set(&tied.set, &x, false).unwrap();
        assert_eq!(shared.blob[4], 6, "format version 6");
        let separate = fit_multi_with(&d, &p, VarianceSharing::Separate, &mut |_| {}).unwrap();
        assert!(!separate.report.variance.unwrap().tied);
        let own = crate::export::export_set(&separate.set, &x, false).unwrap();
        assert_eq!(own.blob[4], 5);
        assert!(shared.blob.len() < own.blob.len());
        // Host tools read each output back as a single-output model with
        // the shared factor rebuilt (scaled): the same f32 prediction as the
        // device's all-outputs call, up to the rounding of the scaling.
        let spec = sgp_runtime::ModelSpec::from_bytes(&shared.blob).unwrap();
        let device = sgp_runtime::Model::<8, 2, 2, 2>::from_bytes(&shared.blob).unwrap();
        for p in 0..2 {
            let single_spec = crate::export::output_blob::output_spec(&spec, p).unwrap();
            let single =
                sgp_runtime::Model::<8, 2, 2>::from_bytes(&single_spec.to_bytes().unwrap())
                    .unwrap();
            for i in (0..x.nrows()).step_by(7) {
                let xi: Vec<f32> = x.row(i).iter().map(|&v| v as f32).collect();
                let all = device.predict_all(&xi).unwrap();
                let one = single.predict(&xi).unwrap();
                let (a, b) = (all[p], one);
                // The two paths sum in different orders: a few f32
                // roundings of the mean's terms (raw units) and of the variance's
                // before they cancel (prior and noise): 1e-5 of those, far
                // inside the export check's tolerances.
                let close = |u: f32, v: f32, scale: f32| (u - v).abs() <= 1e-5 * scale;
                let terms = single_spec.y_scale.powi(2) * (single_spec.prior + single_spec.noise);
                assert!(
                    close(a.mean, b.mean, a.mean.abs() + single_spec.y_scale),
                    "output {p}, row {i}: {a:?} vs {b:?}"
                );
                assert!(
                    close(a.variance, b.variance, terms),
                    "output {p}, row {i}: {a:?} vs {b:?}"
                );
            }
        }
        // The re-fit under a larger jitter keeps the outputs tied.
        let (set, _, _) = tied.with_jitter(1e-4, 5).unwrap();
        let (a, b) = (&set.members[0].form, &set.members[1].form);
        assert!(crate::model::shared_variance::shares_first_variance(a, b));
    }

    #[test]
    fn same_seed_same_models() {
        let d = data(90, 5);
        let p = FitParams::Spgp(sparse(6, 2));
        let a = fit_multi(&d, &p, &mut |_| {}).unwrap();
        let b = fit_multi(&d, &p, &mut |_| {}).unwrap();
        for (x, y) in a.set.members.iter().zip(&b.set.members) {
            assert_eq!(x.form, y.form);
        }
        assert_eq!(a.report.starts.len(), 2);
    }

    /// One output through the multi-output fit is the single-output fit.
    #[test]
    fn one_output_is_the_single_output_fit() {
        let d = data(80, 6);
        let one = MultiTargetData::from_raw(
            d.first().raw_x(),
            DMatrix::from_column_slice(80, 1, d.first().raw_y().as_slice()),
            vec!["a".into(), "b".into()],
            &["p".into()],
        )
        .unwrap();
        let p = FitParams::Spgp(sparse(6, 1));
        let multi = fit_multi(&one, &p, &mut |_| {}).unwrap();
        let single = crate::fit::fit(one.first(), &p, &mut |_| {}).unwrap();
        let (a, b) = (&multi.set.members[0].form, &single.model.form);
        assert_eq!(a.basis, b.basis);
        assert!((&a.beta - &b.beta).norm() <= 1e-9 * b.beta.norm());
    }

    /// On small data FITC or VFE is chosen on held-out rows by the
    /// outputs' summed NLPD, and the chosen objective is the one fitted.
    #[test]
    fn the_objective_is_chosen_on_held_out_rows_by_the_summed_nlpd() {
        let d = data(120, 9);
        let p = SparseParams {
            held_out_choice: true,
            ..sparse(6, 1)
        };
        let fitted = fit_multi(&d, &FitParams::Spgp(p.clone()), &mut |_| {}).unwrap();
        let choice = fitted.report.outputs[0].held_out.clone().expect("a choice");
        assert_eq!(choice.rows, 30);
        assert_eq!(choice.incumbent, "spgp (fitc)");
        let chosen = if choice.challenger_chosen {
            Approximation::Vfe
        } else {
            Approximation::Fitc
        };
        for report in &fitted.report.outputs {
            assert_eq!(report.approximation, Some(chosen));
            assert_eq!(
                report.held_out.as_ref().map(|c| c.chosen()),
                Some(choice.chosen())
            );
        }
        // The incumbent's figure: each output's mean NLPD on the held-out
        // quarter, summed.
        let (train, valid) = d.split(held_out::HELD_OUT_FRACTION, p.seed).unwrap();
        let asked = SparseParams {
            held_out_choice: false,
            ..p.clone()
        };
        let part = fit_multi(&train, &FitParams::Spgp(asked), &mut |_| {}).unwrap();
        let summed: f64 = part
            .set
            .members
            .iter()
            .zip(valid.outputs())
            .map(|(model, out)| {
                let pred = model.predict_raw(&out.raw_x()).unwrap();
                let y = out.raw_y();
                crate::evaluate::metrics::mean_nlpd(
                    pred.mean.as_slice(),
                    pred.var.as_slice(),
                    y.as_slice(),
                )
            })
            .sum();
        assert!(
            (summed - choice.incumbent_nlpd).abs() < 1e-9 * summed.abs().max(1.0),
            "{summed} vs {}",
            choice.incumbent_nlpd
        );
        // The final fit is the shared fit of the chosen objective.
        let fixed = SparseParams {
            held_out_choice: false,
            approximation: chosen,
            ..p
        };
        let again = fit_multi(&d, &FitParams::Spgp(fixed), &mut |_| {}).unwrap();
        assert_eq!(again.set.members[1].form, fitted.set.members[1].form);
    }

    #[test]
    fn vsgp_may_start_from_each_outputs_own_basis_functions_side_by_side() {
        let data = data(120, 4);
        let params = sparse(9, 1);
        let checked = params.check(data.first()).unwrap();
        let (features, kernels) = concatenated_start(&data, &checked).unwrap().unwrap();
        // 9 basis functions for 2 outputs: 5 from the first, 4 from the second.
        assert_eq!(features.centres().shape(), (9, 2));
        let shared = &kernels[0].log_lengthscales;
        assert!(kernels.iter().all(|k| &k.log_lengthscales == shared));
        // Every width is at least the shared length scale's (rho >= log 1/2,
        // the width of an SPGP basis function) and at most the cap.
        let lowest = (0.5f64).ln() - 1e-12;
        assert!(features
            .rho()
            .iter()
            .all(|&r| (lowest..=CONCATENATED_WIDEST_RHO).contains(&r)));
        // The input where an output's own length scale is the shortest
        // gives its basis functions exactly the shared width.
        assert!(features
            .rho()
            .iter()
            .any(|&r| (r - 0.5f64.ln()).abs() < 1e-12));
        // One output, or fewer than two basis functions per output: no such start.
        let one = MultiTargetData::from_raw(
            data.first().raw_x(),
            DMatrix::from_column_slice(120, 1, data.first().raw_y().as_slice()),
            vec!["a".into(), "b".into()],
            &["p".into()],
        )
        .unwrap();
        assert!(
            concatenated_start(&one, &params.check(one.first()).unwrap())
                .unwrap()
                .is_none()
        );
        let few = sparse(3, 1);
        assert!(concatenated_start(&data, &few.check(data.first()).unwrap())
            .unwrap()
            .is_none());
        // Pseudo-inputs the caller gave are the start: no second one.
        let given = SparseParams {
            pseudo_init: PseudoInit::Given(data.first().x.rows(0, 9).into_owned()),
            ..params
        };
        assert!(
            concatenated_start(&data, &given.check(data.first()).unwrap())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn a_failed_second_vsgp_start_keeps_the_first_and_says_why() {
        let mut warnings = Vec::new();
        let failed = Err(Error::Numerical("Cholesky failed".into()));
        assert_eq!(lower_objective(2.0, failed, |v| *v, &mut warnings), 2.0);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("second start"), "{}", warnings[0]);
        assert!(warnings[0].contains("Cholesky failed"), "{}", warnings[0]);
        // Tried and better, tried and worse, not tried: no warning.
        assert_eq!(
            lower_objective(2.0, Ok(Some(1.0)), |v| *v, &mut warnings),
            1.0
        );
        assert_eq!(
            lower_objective(2.0, Ok(Some(3.0)), |v| *v, &mut warnings),
            2.0
        );
        assert_eq!(lower_objective(2.0, Ok(None), |v| *v, &mut warnings), 2.0);
        assert_eq!(warnings.len(), 1);
    }

    #[test]
    fn vsgp_with_given_pseudo_inputs_fits_without_a_warning() {
        let d = data(80, 5);
        let params = SparseParams {
            // Spread over the rows: the first few sit in one corner.
            pseudo_init: PseudoInit::Given(DMatrix::from_fn(6, 2, |i, j| d.first().x[(13 * i, j)])),
            ..sparse(6, 1)
        };
        let fitted = fit_multi(&d, &FitParams::Vsgp(params), &mut |_| {}).unwrap();
        assert!(
            fitted.report.warnings.is_empty(),
            "{:?}",
            fitted.report.warnings
        );
        check_set(&fitted, &d);
    }

    #[test]
    fn models_that_cannot_share_are_refused_with_the_reason() {
        let d = data(40, 7);
        for p in [
            FitParams::SpgpHs(sparse(4, 1)),
            FitParams::Gplasso(Default::default()),
            FitParams::Ivm(Default::default()),
        ] {
            let err = fit_multi(&d, &p, &mut |_| {}).unwrap_err().to_string();
            assert!(err.contains("cannot fit several targets"), "{err}");
            assert!(err.contains(&p.method().name()), "{err}");
        }
    }

    #[test]
    fn folding_keeps_predictions_and_refuses_other_shapes() {
        let d = data(60, 8);
        let p = FitParams::Spgp(sparse(5, 1));
        let single = crate::fit::fit(&d.outputs()[1], &p, &mut |_| {}).unwrap();
        let form = single.model.form.clone();
        let mut basis = form.basis.clone();
        basis.amplitudes.iter_mut().for_each(|a| *a *= 0.37);
        let folded = fold_onto(&basis, form.clone()).unwrap();
        let z = d.first().x.clone();
        let (a, b) = (form.predict(&z).unwrap(), folded.predict(&z).unwrap());
        assert!((&a.mean - &b.mean).norm() < 1e-9 * a.mean.norm());
        assert!((&a.var - &b.var).norm() < 1e-9 * a.var.norm());
        basis.centres[(0, 0)] += 0.1;
        assert!(fold_onto(&basis, form).is_err());
    }
}
