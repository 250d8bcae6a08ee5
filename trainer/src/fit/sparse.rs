//! Sparse fitting over any inducing feature kind, for `P` outputs on one
//! basis: the one place the optimiser and the FITC/VFE posterior meet.
//!
//! The objective is the sum of the outputs' own objectives
//! (`crate::model::inference::shared`): every output sees the same
//! features and length scales, each keeps its own signal and noise
//! variance. With `P = 1` it is the single-output objective, term for term.
//! With `P > 1` the outputs may also share one variance factor (their
//! noise-to-signal ratio tied: [`VarianceSharing`]), so the blob holds one
//! `M x M` factor for all of them.
//!
//! Every output's model carries the first output's basis bit for bit: an
//! output whose signal variance is `c` times the first's has its weights
//! times `c` and its factors divided by `c` (`fold_onto`), the same
//! predictions from the shared basis vector.

use std::cell::Cell;
use std::ops::Range;

use serde::Serialize;
use sgp_runtime::ModelKind;

use super::progress::{continuing, recording};
use super::restarts::{best_start, first, screening};
use super::{
    Fit, FitReport, Method, OptimiserReport, OutputReport, Rebuilt, SparseParams, StartReport,
};
use crate::data::Dataset;
use crate::evaluate::metrics::mean_nlpd;
use crate::model::features::{InducingFeatures, RuntimeBasis};
use crate::model::inference::fitc::{fitc_posterior, FitcConfig, FitcPosterior};
use crate::model::inference::objective::SparseObjective;
use crate::model::inference::shared::SharedObjective;
use crate::model::inference::tied_ratio::{without_noise_floor, TiedRatio};
use crate::model::inference::RuntimeForm;
use crate::model::kernel::KernelParams;
use crate::model::shared_variance::share_first_variance;
use crate::model::{ModelSet, TrainedModel};
use crate::numerics::linalg::JitterPolicy;
use crate::numerics::optimise::{minimise, OptimiseOptions, OptimiseReport, Progress};
use crate::{Error, Result};

/// A sparse fit before it becomes a model: the features, each output's
/// kernel and posterior, and the run (what another stage starts from).
#[derive(Clone, Debug)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct SparseFit<F> {
    /// The fitted inducing features.
    pub features: F,
    /// Each output's kernel.
    pub kernels: Vec<KernelParams>,
    /// Each output's posterior at those parameters.
    pub posteriors: Vec<FitcPosterior>,
    /// The FITC/VFE settings it was fitted with.
    pub config: FitcConfig,
    /// How the optimiser went.
    pub run: OptimiseReport,
    /// The run's iteration budget.
    pub max_iter: u64,
    /// Whether several outputs share one variance factor, and why.
    pub sharing: Option<SharingReport>,
}

impl<F> SparseFit<F> {
    /// The training objective, summed over the outputs.
    pub fn nlml(&self) -> f64 {
        self.posteriors.iter().map(|p| p.nlml).sum()
    }

    /// The first output's kernel (the length scales every output shares).
    pub(crate) fn kernel(&self) -> &KernelParams {
        &self.kernels[0]
    }
}

/// FITC or VFE settings for `params`' objective.
pub(crate) fn config(params: &SparseParams) -> FitcConfig {
    FitcConfig {
        approximation: params.approximation,
        ..FitcConfig::default()
    }
}

/// Minimises the joint objective of `outputs` from `features` and each
/// output's kernel.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn fit_sparse<F: InducingFeatures + Clone + Sync>(
    outputs: &[Dataset],
    features: F,
    kernels: Vec<KernelParams>,
    config: FitcConfig,
    optimiser: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<SparseFit<F>> {
    let joint = SharedObjective::new(objectives(outputs, &features, kernels, config)?)?;
    let rows = outputs.iter().map(Dataset::n_rows).sum();
    let run = minimise(
        |p| joint.objective(p),
        joint.initial(),
        &optimiser.for_rows(rows),
        progress,
    )?;
    let p = run.x.clone();
    unpacked(outputs, &joint, &p, run, config, optimiser.max_iter)
}

/// Each output's FITC or VFE objective on the shared `features`.
fn objectives<'a, F: InducingFeatures + Clone + Sync>(
    outputs: &'a [Dataset],
    features: &F,
    kernels: Vec<KernelParams>,
    config: FitcConfig,
) -> Result<Vec<SparseObjective<'a, F>>> {
    if kernels.len() != outputs.len() {
        return Err(Error::Numerical("one kernel per output expected".into()));
    }
    outputs
        .iter()
        .zip(kernels)
        .map(|(d, kern)| SparseObjective::new(&d.x, &d.y, features.clone(), kern, config))
        .collect()
}

/// The fit at the joint vector `p` of a finished `run`.
fn unpacked<F: InducingFeatures + Clone + Sync>(
    outputs: &[Dataset],
    joint: &SharedObjective<SparseObjective<'_, F>>,
    p: &[f64],
    run: OptimiseReport,
    config: FitcConfig,
    max_iter: u64,
) -> Result<SparseFit<F>> {
    let mut features = None;
    let mut kernels = Vec::with_capacity(outputs.len());
    for (i, objective) in joint.outputs().iter().enumerate() {
        let (f, kern) = objective.unpack(&joint.output_params(p, i)?)?;
        features.get_or_insert(f);
        kernels.push(kern);
    }
    let features = features.ok_or_else(|| Error::Numerical("no output".into()))?;
    let posteriors = outputs
        .iter()
        .zip(&kernels)
        .map(|(d, kern)| fitc_posterior(&features, kern, &d.x, &d.y, &config))
        .collect::<Result<_>>()?;
    Ok(SparseFit {
        features,
        kernels,
        posteriors,
        config,
        run,
        max_iter,
        sharing: None,
    })
}

/// Whether the outputs of a sparse fit share one variance factor: their
/// noise-to-signal ratio tied (`crate::model::inference::tied_ratio`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VarianceSharing {
    /// Tie when the tied objective is within `TIE_TOLERANCE` nats per
    /// row and output of the untied one.
    #[default]
    Auto,
    /// Always tie.
    Tied,
    /// Never tie.
    Separate,
}

/// How much worse (nats per row and output) the tied training objective
/// may be than the untied one for [`VarianceSharing::Auto`] to tie.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) const TIE_TOLERANCE: f64 = 0.02;

/// What a fit chose for [`VarianceSharing`], from both objectives.
#[derive(Clone, Debug, Serialize)]
pub struct SharingReport {
    /// What was asked.
    pub asked: VarianceSharing,
    /// Whether the outputs share one variance factor.
    pub tied: bool,
    /// The joint objective with every output's own noise.
    pub untied_nlml: f64,
    /// The joint objective with one noise-to-signal ratio (`None` when not
    /// fitted, or when its fit failed).
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

/// The final run of a sparse fit: the joint objective, then, for several
/// outputs and unless `sharing` is [`VarianceSharing::Separate`], the tied
/// one from its optimum, kept as `sharing` says.
pub(crate) fn fit_final<F: InducingFeatures + Clone + Sync>(
    outputs: &[Dataset],
    features: F,
    kernels: Vec<KernelParams>,
    config: FitcConfig,
    optimiser: &OptimiseOptions,
    sharing: VarianceSharing,
    progress: &mut dyn FnMut(Progress),
) -> Result<SparseFit<F>> {
    let done = Cell::new(0u64);
    let untied = fit_sparse(
        outputs,
        features,
        kernels,
        config,
        optimiser,
        &mut recording(&done, progress),
    )?;
    if outputs.len() < 2 {
        return Ok(untied);
    }
    let rows = outputs.iter().map(Dataset::n_rows).sum();
    let mut report = SharingReport {
        asked: sharing,
        tied: false,
        untied_nlml: untied.run.value,
        tied_nlml: None,
        rows,
    };
    if sharing == VarianceSharing::Separate {
        return Ok(SparseFit {
            sharing: Some(report),
            ..untied
        });
    }
    let tied = fit_tied(
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
            return Ok(SparseFit {
                sharing: Some(report),
                ..untied
            })
        }
    };
    report.tied_nlml = Some(tied.run.value);
    report.tied = sharing == VarianceSharing::Tied
        || tied.run.value - untied.run.value <= TIE_TOLERANCE * rows as f64;
    let chosen = if report.tied { tied } else { untied };
    Ok(SparseFit {
        sharing: Some(report),
        ..chosen
    })
}

/// Minimises the tied objective of `outputs` (one noise-to-signal ratio)
/// from `features` and each output's kernel.
fn fit_tied<F: InducingFeatures + Clone + Sync>(
    outputs: &[Dataset],
    features: F,
    kernels: &[KernelParams],
    config: FitcConfig,
    optimiser: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<SparseFit<F>> {
    let kernels = kernels
        .iter()
        .map(without_noise_floor)
        .collect::<Result<Vec<_>>>()?;
    let tied = TiedRatio::new(objectives(outputs, &features, kernels, config)?)?;
    let rows = outputs.iter().map(Dataset::n_rows).sum();
    let run = minimise(
        |q| tied.objective(q),
        tied.initial(),
        &optimiser.for_rows(rows),
        progress,
    )?;
    let p = tied.untied(&run.x)?;
    unpacked(outputs, tied.joint(), &p, run, config, optimiser.max_iter)
}

/// How the restart driver picks among the starts of a sparse fit.
#[derive(Clone, Copy, Debug)]
pub(crate) enum StartChoice<'a> {
    /// Every start gets a screening run and the one of lowest training
    /// objective is finished: what data held in memory get.
    Objective,
    /// Every start is optimised to the end and the one of lowest NLPD on
    /// these rows (never fitted on; one set per output) is kept: the
    /// streamed fit's first stage, where screening runs cannot rank the
    /// optima.
    Validation(&'a [Dataset]),
}

impl StartChoice<'_> {
    /// What the choice minimises for `fit`.
    pub(crate) fn score<F: InducingFeatures + Clone + Sync>(
        &self,
        fit: &SparseFit<F>,
    ) -> Result<f64> {
        match self {
            StartChoice::Objective => Ok(fit.nlml()),
            StartChoice::Validation(rows) => validation_nlpd(fit, rows),
        }
    }
}

/// Test NLPD of `fit` on `validation` (one set of rows per output), the
/// mean over the outputs of each output's mean.
pub(crate) fn validation_nlpd<F: InducingFeatures + Clone + Sync>(
    fit: &SparseFit<F>,
    validation: &[Dataset],
) -> Result<f64> {
    if validation.len() != fit.posteriors.len() {
        return Err(Error::BadInput(format!(
            "{} sets of validation rows for a fit of {} outputs",
            validation.len(),
            fit.posteriors.len()
        )));
    }
    let mut total = 0.0;
    for ((post, kern), rows) in fit.posteriors.iter().zip(&fit.kernels).zip(validation) {
        let p = post.predict(&fit.features, kern, &rows.x)?;
        let var: Vec<f64> = p.var.iter().map(|v| v + p.noise_var).collect();
        total += mean_nlpd(p.mean.as_slice(), &var, rows.y.as_slice());
    }
    let nlpd = total / validation.len() as f64;
    if nlpd.is_finite() {
        Ok(nlpd)
    } else {
        Err(Error::Numerical(format!(
            "the validation NLPD of a sparse fit is {nlpd}"
        )))
    }
}

/// The restarted sparse fit: `start(k)` gives start `k`'s features and how
/// they were drawn, every start begins at `kernels`, `choice` says how the
/// starts are screened and kept ([`super::restarts`]), and the final run
/// shares the variance as `sharing` says.
pub(crate) fn fit_restarted<F: InducingFeatures + Clone + Sync>(
    outputs: &[Dataset],
    params: &SparseParams,
    kernels: Vec<KernelParams>,
    start: &dyn Fn(usize) -> Result<(String, F)>,
    (choice, sharing): (StartChoice<'_>, VarianceSharing),
    progress: &mut dyn FnMut(Progress),
) -> Result<(SparseFit<F>, Vec<StartReport>)> {
    let config = config(params);
    let done = Cell::new(0u64);
    let mut counted = continuing(&done, progress);
    if params.restarts <= 1 {
        let features = start(0)?.1;
        let fit = fit_final(
            outputs,
            features,
            kernels,
            config,
            &params.optimiser,
            sharing,
            &mut counted,
        )?;
        return Ok((fit, Vec::new()));
    }
    // Screened starts run briefly on a subset of the rows and the best one
    // is finished; validated starts each run to the end.
    let screened = match choice {
        StartChoice::Objective => Some(screening(outputs, params)?),
        StartChoice::Validation(_) => None,
    };
    let (options, rows) = match &screened {
        Some((options, subset)) => (options, subset.as_slice()),
        None => (&params.optimiser, outputs),
    };
    let starts = (0..params.restarts).map(start);
    let (best, reports) = best_start(starts, 1, &mut |stage| {
        let features = first(stage)?;
        let run = fit_sparse(
            rows,
            features,
            kernels.clone(),
            config,
            options,
            &mut counted,
        )?;
        done.set(done.get() + run.run.iterations);
        let score = choice.score(&run)?;
        Ok((run, score))
    })?;
    let fit = match choice {
        StartChoice::Validation(_) => best,
        StartChoice::Objective => fit_final(
            outputs,
            best.features,
            best.kernels,
            config,
            &params.optimiser,
            sharing,
            &mut counted,
        )?,
    };
    Ok((fit, reports))
}

/// Minimises one output's objective over the parameters `free` only,
/// the others held where `objective` starts, with `penalty(part, grad)`
/// added (its value at the free parameters `part`, its gradient added to
/// `grad`; SPGP+HS's prior on `h`): the whole vector at the end, and the
/// run.
pub(crate) fn minimise_part<F: InducingFeatures + Clone + Sync>(
    objective: &SparseObjective<'_, F>,
    free: Range<usize>,
    penalty: &dyn Fn(&[f64], &mut [f64]) -> f64,
    optimiser: &OptimiseOptions,
    rows: usize,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Vec<f64>, OptimiseReport)> {
    let full = objective.initial();
    let with = |part: &[f64]| {
        let mut p = full.clone();
        p[free.clone()].copy_from_slice(part);
        p
    };
    let run = minimise(
        |part| {
            let (f, g) = objective.objective(&with(part))?;
            let mut g = g[free.clone()].to_vec();
            let f = f + penalty(part, &mut g);
            Ok((f, g))
        },
        full[free.clone()].to_vec(),
        &optimiser.for_rows(rows),
        progress,
    )?;
    Ok((with(&run.x), run))
}

/// No penalty ([`minimise_part`]).
pub(crate) fn no_penalty(_: &[f64], _: &mut [f64]) -> f64 {
    0.0
}

impl<F: InducingFeatures + Clone + Send + Sync + 'static> SparseFit<F> {
    /// The fitted models of `outputs` as `kind` fitted by `method`, and how
    /// to rebuild them with more jitter (re-optimising the joint, or tied,
    /// objective from the fit).
    pub(crate) fn into_fit(
        self,
        outputs: &[Dataset],
        kind: ModelKind,
        method: Method,
    ) -> Result<Fit> {
        let tied = self.sharing.as_ref().is_some_and(|s| s.tied);
        let forms: Vec<RuntimeForm> = self
            .posteriors
            .iter()
            .zip(&self.kernels)
            .map(|(post, kern)| post.runtime_form(&self.features, kern))
            .collect();
        let members = folded(forms, tied)?
            .into_iter()
            .zip(outputs)
            .map(|(form, d)| TrainedModel::regression(kind, form, d))
            .collect();
        let mut report = FitReport::new(method, outputs[0].n_rows(), self.nlml());
        report.approximation = Some(self.config.approximation);
        report.optimiser = Some(OptimiserReport::new(&self.run, self.max_iter));
        report.variance = self.sharing.clone();
        report.jitter_escalations = self.posteriors.iter().map(|p| p.jitter_escalations).sum();
        report.outputs = outputs
            .iter()
            .zip(&self.posteriors)
            .map(|(d, post)| OutputReport::named(&d.target_name, Some(post.nlml)))
            .collect();
        let set = ModelSet {
            members,
            class_labels: Vec::new(),
        };
        let (features, kernels, config) = (self.features, self.kernels, self.config);
        let outputs = outputs.to_vec();
        let fitted = kernels.clone();
        let rebuild = move |jitter: JitterPolicy, max_iter: u64| {
            let config = FitcConfig { jitter, ..config };
            let (features, kernels) = if max_iter == 0 {
                (features.clone(), kernels.clone())
            } else {
                let options = OptimiseOptions {
                    max_iter,
                    ..OptimiseOptions::default()
                };
                let refit = if tied {
                    fit_tied(
                        &outputs,
                        features.clone(),
                        &kernels,
                        config,
                        &options,
                        &mut |_| {},
                    )?
                } else {
                    fit_sparse(
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
            let mut forms = Vec::with_capacity(outputs.len());
            let mut nlml = 0.0;
            for (d, kern) in outputs.iter().zip(&kernels) {
                let post = fitc_posterior(&features, kern, &d.x, &d.y, &config)?;
                nlml += post.nlml;
                forms.push(post.runtime_form(&features, kern));
            }
            Ok(Rebuilt {
                forms: folded(forms, tied)?,
                biases: None,
                nlml,
                kernels,
                noise_held: false,
            })
        };
        Ok(Fit::new(
            set,
            report,
            fitted,
            (config.jitter.initial, Box::new(rebuild)),
        ))
    }
}

/// `forms` moved onto the first one's basis ([`fold_onto`]); with `tied`,
/// every output after the first takes the first one's variance factor,
/// scaled ([`share_first_variance`]), which the blob then stores once.
pub(crate) fn folded(forms: Vec<RuntimeForm>, tied: bool) -> Result<Vec<RuntimeForm>> {
    let basis = forms
        .first()
        .map(|f| f.basis.clone())
        .ok_or_else(|| Error::Numerical("no output".into()))?;
    let mut forms = forms
        .into_iter()
        .map(|form| fold_onto(&basis, form))
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
pub(crate) fn fold_onto(basis: &RuntimeBasis, form: RuntimeForm) -> Result<RuntimeForm> {
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
