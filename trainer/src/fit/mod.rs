//! The families users pick with `--model`, each fitting the `P` outputs
//! of a data set on one basis (a single output is `P = 1`; a classifier of
//! `K` classes has `K` latents) and ending in one [`Fit`]: the models in
//! the runtime form of MATH.md, a [`FitReport`], and how to rebuild them
//! with more jitter when the f32 export needs a cure.
//!
//! `exact` is the reference (full GP on at most `max_points` rows); `spgp`
//! fits FITC or VFE over pseudo-inputs ([`sparse`], restarted by
//! `restarts`); `vsgp`, `spgp_hs` and `dr` are the same fit over other
//! feature kinds ([`crate::model::features`]); `gplasso` selects training
//! inputs by a lasso path; `ivm` an active set, greedily; `svgp` is the
//! sparse variational classifier. Families that cannot share a basis
//! between outputs ([`Method::shares_basis`]) refuse `P > 1`.

pub(crate) mod capabilities;
mod choice_record;
pub(crate) mod dr;
pub(crate) mod exact;
pub mod gplasso;
#[cfg(feature = "internals")]
pub mod init;
#[cfg(not(feature = "internals"))]
pub(crate) mod init;
pub mod ivm;
mod params;
mod pass_bytes;
mod progress;
mod relevance;
mod report;
pub(crate) mod restarts;
pub mod sparse;
pub(crate) mod spgp;
pub(crate) mod spgp_hs;
pub mod streamed;
pub mod streamed_basis;
pub mod streamed_classify;
pub mod svgp;
pub mod task;
pub(crate) mod vsgp;
pub(crate) mod warnings;

use sgp_runtime::{Kernel, ModelKind};
use std::borrow::Cow;

use crate::data::multi_target::Outputs;
use crate::data::{Dataset, Standardisation, TargetKind};
use crate::model::inference::RuntimeForm;
use crate::model::kernel::KernelParams;
use crate::model::{ModelSet, TrainedModel};
use crate::numerics::linalg::JitterPolicy;
use crate::numerics::optimise::Progress;
use crate::{Error, Result};

pub(crate) use choice_record::Candidate;
pub(crate) use choice_record::Choice;
pub(crate) use choice_record::KernelScore;
pub(crate) use choice_record::KernelVerdict;
pub(crate) use choice_record::Verdict;
pub(crate) use dr::ProjectionReport;
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) use params::Checked;
pub(crate) use params::PseudoInit;
pub(crate) use params::DEFAULT_STALL;
pub(crate) use params::{check_m, check_max_points, default_optimiser};
pub use params::{
    ExactParams, FitParams, HyperInit, InitMethod, Method, ProjectedParams, SparseParams,
    DEFAULT_SEED,
};
pub(crate) use params::{DEFAULT_M, DEFAULT_MAX_POINTS, DEFAULT_RESTARTS};
pub use report::FitReport;
pub(crate) use report::OptimiserReport;
pub(crate) use report::OutputReport;
pub(crate) use report::PriorStrength;
pub(crate) use report::StartReport;
pub(crate) use report::StrengthScore;
pub(crate) use report::WidthSpread;
pub use sparse::VarianceSharing;

/// The models a family fitted on every output (or class), how the fit went,
/// and how to rebuild the models with more jitter.
pub struct Fit {
    /// The models, one per output or class, on one basis.
    pub set: ModelSet,
    /// How the fit went.
    pub report: FitReport,
    /// Each member's kernel (standardised units of the inputs fitted).
    pub(crate) kernels: Vec<KernelParams>,
    /// The relative jitter the fit used.
    jitter: f64,
    rebuild: Rebuild,
    /// How the models take back the constant inputs they were fitted
    /// without.
    expansion: Option<Expansion>,
}

impl std::fmt::Debug for Fit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fit")
            .field("set", &self.set)
            .field("report", &self.report)
            .field("jitter", &self.jitter)
            .finish_non_exhaustive()
    }
}

/// The models of a fit recomputed with another jitter: each member's
/// runtime form (on one basis), its probit bias where that moved, the
/// summed training objective, each member's kernel, and whether the
/// re-optimisation held each noise at least at its fitted value
/// ([`crate::export::cure::Cure::noise_held`]; stated by the rebuild that
/// does it, so a fit cannot claim it for a rebuild that did not).
pub(crate) struct Rebuilt {
    pub(crate) forms: Vec<RuntimeForm>,
    pub(crate) biases: Option<Vec<f64>>,
    pub(crate) nlml: f64,
    pub(crate) kernels: Vec<KernelParams>,
    pub(crate) noise_held: bool,
}

/// The fit's models recomputed by [`Fit::with_jitter`]: the set, its
/// training objective, each member's kernel and whether the noise was held
/// ([`Rebuilt`]).
pub(crate) struct Rejittered {
    pub(crate) set: ModelSet,
    pub(crate) nlml: f64,
    pub(crate) kernels: Vec<KernelParams>,
    pub(crate) noise_held: bool,
}

/// Recomputes a fit with another jitter policy, after `max_iter`
/// iterations of optimisation from the fitted parameters (0: the posterior
/// of the fitted parameters alone). Built by each family around its own
/// features and data.
pub(crate) type Rebuild = Box<dyn Fn(JitterPolicy, u64) -> Result<Rebuilt> + Send + Sync>;

impl Fit {
    /// A fit of `set` with its report, kernels, jitter and rebuild; the
    /// report's inputs and hyperparameters are filled in from them.
    pub(crate) fn new(
        set: ModelSet,
        report: FitReport,
        kernels: Vec<KernelParams>,
        (jitter, rebuild): (f64, Rebuild),
    ) -> Self {
        let mut fit = Fit {
            set,
            report,
            kernels,
            jitter,
            rebuild,
            expansion: None,
        };
        fit.report.inputs = fit.first().input_names.clone();
        fit.describe();
        fit
    }

    /// The first member (every fit has one).
    pub(crate) fn first(&self) -> &TrainedModel {
        &self.set.members[0]
    }

    /// The report's hyperparameters from the kernels.
    pub(crate) fn describe(&mut self) {
        let first = self.first();
        let x_scale: Vec<f64> = first
            .transform
            .x_scale
            .iter()
            .enumerate()
            .filter(|(j, _)| {
                !self
                    .expansion
                    .as_ref()
                    .is_some_and(|e| e.ignored.contains(j))
            })
            .map(|(_, s)| *s)
            .collect();
        let classifier = first.link != sgp_runtime::Link::Identity;
        let projected = first.form.basis.projection.is_some();
        let transforms: Vec<&Standardisation> =
            self.set.members.iter().map(|m| &m.transform).collect();
        let heteroscedastic = first.kind == ModelKind::SpgpHs;
        self.report.describe_kernels(
            &self.kernels,
            (&x_scale, &transforms),
            (classifier, projected),
        );
        // HS keeps sigma2 on its floor by design: its h carry the noise.
        if heteroscedastic {
            for output in &mut self.report.outputs {
                output.noise_on_floor = false;
            }
        }
    }

    /// The relative jitter the fit used.
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    /// The models recomputed with the relative jitter `eps` (times `s2`)
    /// on the factorised diagonal, after `reoptimise` iterations that let
    /// the other parameters adapt to it (0: the same parameters)
    /// ([`Rejittered`]). A larger jitter
    /// bounds the weights and the factors' condition, which an f32 export
    /// that fails its check needs ([`crate::export::cure`]).
    ///
    /// # Errors
    /// If a factorisation fails even with that jitter.
    pub(crate) fn with_jitter(&self, eps: f64, reoptimise: u64) -> Result<Rejittered> {
        let default = JitterPolicy::default();
        let policy = JitterPolicy {
            initial: eps,
            max: default.max.max(eps),
            ..default
        };
        let rebuilt = (self.rebuild)(policy, reoptimise)?;
        let mut set = self.set.clone();
        for (p, (member, form)) in set.members.iter_mut().zip(rebuilt.forms).enumerate() {
            member.form = form;
            if let Some(b) = rebuilt.biases.as_ref().and_then(|b| b.get(p)) {
                member.bias = *b;
            }
            if let Some(expansion) = &self.expansion {
                expansion.apply(member);
            }
        }
        Ok(Rejittered {
            set,
            nlml: rebuilt.nlml,
            kernels: rebuilt.kernels,
            noise_held: rebuilt.noise_held,
        })
    }

    /// Takes the models of [`Fit::with_jitter`] as the fit's own.
    pub(crate) fn adopt(&mut self, set: ModelSet, kernels: Vec<KernelParams>) {
        self.set = set;
        self.kernels = kernels;
        self.describe();
    }
}

/// Constant inputs are left out of a fit; the fitted models are then
/// extended to take every input and ignore those
/// ([`crate::model::features::RuntimeBasis::with_ignored_inputs`]), so that
/// on the device their value does not change the prediction.
#[derive(Clone, Debug)]
struct Expansion {
    ignored: Vec<usize>,
    transform: Standardisation,
    input_names: Vec<String>,
}

impl Expansion {
    fn for_data(data: &Dataset) -> Self {
        Expansion {
            ignored: data.constant_inputs.clone(),
            transform: data.transform.clone(),
            input_names: data.input_names.clone(),
        }
    }

    /// Extends every model of `fit` (and every one it rebuilds) to every
    /// input, and names the ignored ones in its report.
    fn attach(self, fit: &mut Fit) {
        for member in &mut fit.set.members {
            self.apply(member);
        }
        fit.report.ignored_inputs = self
            .ignored
            .iter()
            .filter_map(|&j| self.input_names.get(j).cloned())
            .collect();
        fit.expansion = Some(self);
    }

    /// `model` on every input: its basis ignores the constant ones, its
    /// input standardisation is the full data's (the target's is its own).
    fn apply(&self, model: &mut TrainedModel) {
        model.form.basis = model
            .form
            .basis
            .with_ignored_inputs(self.input_names.len(), &self.ignored);
        model.transform = Standardisation {
            y_mean: model.transform.y_mean,
            y_scale: model.transform.y_scale,
            ..self.transform.clone()
        };
        model.input_names = self.input_names.clone();
    }
}

impl Method {
    /// Whether the family can fit several outputs on one basis, and if not,
    /// why.
    pub fn shares_basis(self) -> std::result::Result<(), &'static str> {
        match self {
            Method::Exact | Method::Spgp | Method::Vsgp | Method::SpgpDr => Ok(()),
            Method::SpgpHs => Err("its per-pseudo-input uncertainties model one output's \
                 input-dependent noise"),
            Method::SpgpPca => Err("it is the baseline of spgp-dr, which shares its projection"),
            Method::Gplasso => {
                Err("its lasso path picks the basis points from one target's weights")
            }
            Method::Ivm => Err("it picks its active set from one output's posterior"),
            Method::Svgp => Err("it is a classifier"),
        }
    }
}

/// Fits the family `params` names to every output of `outputs` (data sets
/// over the same inputs, one per target; one for a classifier). `progress`
/// is called once per optimiser iteration, counted over every run of the
/// fit ([`FitParams::iteration_budget`]). Constant inputs are left out of
/// the fit and the models then take them and ignore them.
///
/// # Errors
/// [`Error::BadInput`] for parameters that do not fit the data, or a
/// numerical failure that jitter escalation could not cure.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn fit(
    data: &(impl Outputs + ?Sized),
    params: &FitParams,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    fit_outputs(data.outputs(), params, OwnChoice::Final, progress)
}

/// How a family makes the choices it makes on its own rows (SPGP+HS's
/// prior strength on `h`): the one home of the rule, which the choice
/// layer picks by what the fit is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OwnChoice {
    /// None: the family's fixed defaults (`--no-held-out-choice`).
    Off,
    /// As cheaply as is honest: a fit inside a held-out contest (a contest
    /// fold, the objective's quarter), one of many, choosing on its own
    /// training rows only (SPGP+HS: over two folds of them).
    Contest,
    /// In full: a final fit, or one asked directly (SPGP+HS: over four
    /// folds).
    Final,
}

/// As [`fit`], the choices a family makes on its own rows made as `own`
/// says ([`fit`]: [`OwnChoice::Final`]).
///
/// # Errors
/// As [`fit`].
pub(crate) fn fit_choosing(
    data: &(impl Outputs + ?Sized),
    params: &FitParams,
    own: OwnChoice,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    fit_outputs(data.outputs(), params, own, progress)
}

fn fit_outputs(
    outputs: &[Dataset],
    params: &FitParams,
    own: OwnChoice,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    let started = std::time::Instant::now();
    let (first, used, params) = prepared(outputs, params)?;
    let one = &used[0];
    let classifier = matches!(one.target, TargetKind::Binary { .. });
    let mut fit = match params.as_ref() {
        FitParams::Exact(p) if classifier => {
            exact::fit_exact_classifier(one, &p.check(one)?, progress)?
        }
        FitParams::Exact(p) => exact::fit_exact(&used, &p.check(one)?, progress)?,
        FitParams::Spgp(p) => spgp::fit_spgp_as(&used, &p.check(one)?, own, progress)?,
        FitParams::Vsgp(p) => vsgp::fit_vsgp(&used, &p.check(one)?, progress)?,
        FitParams::SpgpHs(p) => spgp_hs::fit_spgp_hs(one, &p.check(one)?, own, progress)?,
        FitParams::SpgpDr(p) => dr::fit_dr(&used, &p.check(one)?, progress)?,
        FitParams::SpgpPca(p) => dr::fit_pca(one, &p.check(one)?, progress)?,
        FitParams::Gplasso(p) => gplasso::fit_gplasso(one, &p.check(one)?, progress)?,
        FitParams::Ivm(p) => ivm::fit_ivm(one, &p.check(one)?, progress)?,
        FitParams::Svgp(p) => svgp::fit_svgp(one, &p.check(one)?, progress)?,
    };
    if !first.constant_inputs.is_empty() {
        Expansion::for_data(first).attach(&mut fit);
    }
    fit.report.seconds = started.elapsed().as_secs_f64();
    Ok(fit)
}

/// Whether `params` can be fitted to `data`, as [`fit`] checks before any
/// work: the error it would give for the data or the settings.
///
/// # Errors
/// As [`fit`]'s [`Error::BadInput`].
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn check(data: &(impl Outputs + ?Sized), params: &FitParams) -> Result<()> {
    let (_, used, params) = prepared(data.outputs(), params)?;
    let one = &used[0];
    match params.as_ref() {
        FitParams::Exact(p) => p.check(one).map(drop),
        FitParams::Spgp(p) | FitParams::Vsgp(p) | FitParams::SpgpHs(p) => p.check(one).map(drop),
        FitParams::SpgpDr(p) | FitParams::SpgpPca(p) => p.check(one).map(drop),
        FitParams::Gplasso(p) => p.check(one).map(drop),
        FitParams::Ivm(p) => p.check(one).map(drop),
        FitParams::Svgp(p) => p.check(one).map(drop),
    }
}

/// The outputs checked for the family, and without their constant inputs
/// (the settings too: given pseudo-inputs lose those columns).
#[allow(clippy::type_complexity)]
fn prepared<'a>(
    outputs: &'a [Dataset],
    params: &'a FitParams,
) -> Result<(&'a Dataset, Cow<'a, [Dataset]>, Cow<'a, FitParams>)> {
    let first = check_outputs(outputs, params.method())?;
    match (first.target, params.method()) {
        (TargetKind::Continuous, _) => {}
        (TargetKind::Binary { .. }, m) if m.classifies() => {}
        (TargetKind::Classes { .. }, Method::Svgp) => {}
        (TargetKind::Classes { count }, m) => {
            return Err(Error::BadInput(format!(
                "{}: target column '{}' holds {count} classes: a multi-class classifier is \
                 --model svgp, not --model {} (--positive LABEL fits one class against the rest)",
                first.source,
                first.target_name,
                m.name()
            )))
        }
        (TargetKind::Binary { .. }, _) => {
            return Err(Error::BadInput(format!(
                "{}: a classification can only be fitted with --model svgp, ivm or exact",
                first.source
            )))
        }
    }
    let ignored = &first.constant_inputs;
    if ignored.is_empty() {
        return Ok((first, Cow::Borrowed(outputs), Cow::Borrowed(params)));
    }
    let reduced = outputs
        .iter()
        .map(|d| d.without_inputs(ignored))
        .collect::<Result<Vec<_>>>()?;
    Ok((
        first,
        Cow::Owned(reduced),
        Cow::Owned(params.without_inputs(ignored)),
    ))
}

/// The first of `outputs`, once they are known to be outputs of one data
/// set that `method` can fit together.
fn check_outputs(outputs: &[Dataset], method: Method) -> Result<&Dataset> {
    let first = outputs
        .first()
        .ok_or_else(|| Error::BadInput("a fit needs at least one target".into()))?;
    if outputs.len() == 1 {
        return Ok(first);
    }
    method.shares_basis().map_err(|why| {
        Error::BadInput(format!(
            "--model {} cannot fit several targets on one basis: {why}; fit each target \
             separately, or use exact, spgp, vsgp or spgp-dr",
            method.name()
        ))
    })?;
    let same = |d: &Dataset| {
        d.target == TargetKind::Continuous
            && d.x.shape() == first.x.shape()
            && d.input_names == first.input_names
            && d.transform.x_mean == first.transform.x_mean
            && d.transform.x_scale == first.transform.x_scale
    };
    if !outputs.iter().all(same) {
        return Err(Error::BadInput(
            "the outputs of a multi-output fit must be regressions on the same inputs".into(),
        ));
    }
    Ok(first)
}

/// Starting kernel hyperparameters from the data's scales, for `kernel`.
pub(crate) fn data_scale_kernel(data: &Dataset, kernel: Kernel) -> Result<KernelParams> {
    let h = init::default_hyperparameters(&data.x, data.y.as_slice());
    let l: Vec<f64> = h.log_lengthscales.iter().map(|v| libm::exp(*v)).collect();
    Ok(
        KernelParams::new(&l, libm::exp(h.log_signal_var), libm::exp(h.log_noise_var))?
            .with_kernel(kernel),
    )
}
