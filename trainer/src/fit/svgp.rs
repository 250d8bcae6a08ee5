//! The sparse variational GP classifier (`--model svgp`): the bound of
//! [`crate::model::inference::svgp`] over M free pseudo-inputs, ARD length
//! scales, the signal variance, each latent's probit bias and `q(u)`,
//! learned jointly by L-BFGS on every row; one latent for a binary target,
//! one per class (each against the rest, softmax link) for `K` classes.
//!
//! Starts as SPGP's (`super::restarts`), and one that knows the
//! relevant inputs where some are not (`focused_start`), screened by
//! successive halving (`SCREEN_ROUNDS`); every start begins at the prior
//! `q(u)`, each bias at its base rate, and the length scales at their
//! prior centres (`prior_centres`) or the focused start's. The stall test
//! waits until a run has left the base-rate plateau (`base_rate_loss`). Why this bound and not EP on the FITC prior, and
//! what the defaults below were measured on: docs/src/classification.md,
//! "svgp".

use std::cell::Cell;

use sgp_runtime::{Kernel, Link, ModelKind};

use super::progress::continuing;
use super::relevance::relevant_inputs;
use super::restarts::{best_start, screening, start_positions, Stage, KMEANS_ITER};
use super::{
    init, Checked, Fit, FitReport, Method, OptimiserReport, OutputReport, PseudoInit, Rebuilt,
    SparseParams, StartReport, DEFAULT_RESTARTS,
};
use nalgebra::DMatrix;

use crate::data::labels::class_name;
use crate::data::{is_class, Dataset, TargetKind};
use crate::model::features::{InducingFeatures, PseudoInputs};
use crate::model::inference::svgp::{
    svgp_runtime_form, LengthscalePrior, SvgpConfig, SvgpObjective, Variational,
};
use crate::model::kernel::KernelParams;
use crate::model::likelihood::norm_quantile;
use crate::model::{ModelSet, TrainedModel};
use crate::numerics::linalg::JitterPolicy;
use crate::numerics::optimise::{minimise, OptimiseOptions, OptimiseReport, Progress};
use crate::{Error, Result};

/// Iterations that optimise `q(u)` (and the bias) alone, with the
/// pseudo-inputs and the kernel held, before every joint run: from the
/// prior `q(u)` the joint gradient would first move the kernel while the
/// latent mean is still zero.
pub(crate) const WARM_UP_ITER: u64 = 20;

/// A screening round is this fraction of SPGP's screening run
/// (`super::restarts::screen_iter`), after the [`WARM_UP_ITER`]
/// iterations of `q(u)`: a third less CPU than whole runs, the same test
/// errors.
pub(crate) const SCREEN_ROUNDS: u64 = 4;

/// L-BFGS pairs remembered by the fit's runs (unless its options name
/// another number): the general rule's 50 for M = 128 cost a tenth of the
/// CPU in the two-loop recursion, for the same test errors.
pub(crate) const LBFGS_MEMORY: usize = 20;

/// Settings of an SVGP fit.
#[derive(Clone, Debug, PartialEq)]
pub struct SvgpParams {
    /// Number of inducing points M.
    pub m: usize,
    /// Seed of every random choice.
    pub seed: u64,
    /// Number of starts, screened as for SPGP.
    pub restarts: usize,
    /// Optimiser settings; `max_iter` is the budget of the final run.
    #[cfg(feature = "internals")]
    pub optimiser: OptimiseOptions,
    #[cfg(not(feature = "internals"))]
    pub(crate) optimiser: OptimiseOptions,
    /// Where the first start's pseudo-inputs come from.
    pub pseudo_init: PseudoInit,
    /// The covariance function (`--kernel`): squared exponential or Matérn.
    pub kernel: Kernel,
}

impl Default for SvgpParams {
    fn default() -> Self {
        let sparse = SparseParams::default();
        SvgpParams {
            m: sparse.m,
            seed: sparse.seed,
            restarts: DEFAULT_RESTARTS,
            optimiser: sparse.optimiser,
            pseudo_init: sparse.pseudo_init,
            kernel: sparse.kernel,
        }
    }
}

impl SvgpParams {
    /// The pseudo-input settings of SPGP these correspond to (for the shared
    /// start and validation code).
    fn sparse(&self) -> SparseParams {
        SparseParams {
            m: self.m,
            seed: self.seed,
            restarts: self.restarts,
            optimiser: self.optimiser.clone(),
            pseudo_init: self.pseudo_init.clone(),
            kernel: self.kernel,
            ..SparseParams::default()
        }
    }

    /// Validates the settings against `data`, which must be a binary
    /// classification.
    ///
    /// # Errors
    /// [`Error::BadInput`] naming the offending setting.
    #[cfg_attr(feature = "internals", visibility::make(pub))]
    pub(crate) fn check(&self, data: &Dataset) -> Result<Checked<'_, Self>> {
        self.sparse().check(data)?;
        if data.target == TargetKind::Continuous {
            return Err(Error::BadInput(format!(
                "{}: --model svgp is a classifier and target column '{}' is continuous: \
                 use --task classification for class labels (two values, or integer classes), or a \
                 regression model",
                data.source, data.target_name
            )));
        }
        Ok(super::Checked(self))
    }

    /// Optimiser iterations the fit may use in all.
    pub fn iteration_budget(&self) -> u64 {
        self.sparse().iteration_budget()
    }
}

/// A fitted classifier before it becomes a model.
struct SvgpFit {
    features: PseudoInputs,
    kernel: KernelParams,
    qs: Vec<Variational>,
    neg_elbo: f64,
    run: OptimiseReport,
}

/// The latent functions of a classifier: one for a binary target, one
/// per class (each against the rest) for `K` classes.
#[derive(Clone, Debug)]
struct Latents {
    /// The class value each latent says yes to (raw target units).
    classes: Vec<f64>,
    /// One latent: `data.y` holds the -1/+1 labels already.
    binary: bool,
}

impl Latents {
    /// The latents `data`'s target asks for.
    fn of(data: &Dataset) -> Result<Self> {
        match data.target {
            TargetKind::Binary { positive } => Ok(Latents {
                classes: vec![positive],
                binary: true,
            }),
            TargetKind::Classes { .. } => Ok(Latents {
                classes: data.target_classes(),
                binary: false,
            }),
            TargetKind::Continuous => Err(Error::BadInput("svgp needs class labels".into())),
        }
    }

    /// The -1/+1 labels of `data`, one column per latent.
    fn labels(&self, data: &Dataset) -> DMatrix<f64> {
        if self.binary {
            return DMatrix::from_column_slice(data.n_rows(), 1, data.y.as_slice());
        }
        let raw = data.raw_y();
        DMatrix::from_fn(data.n_rows(), self.classes.len(), |i, k| {
            if is_class(raw[i], self.classes[k]) {
                1.0
            } else {
                -1.0
            }
        })
    }

    /// Each latent's starting `q(u)`: the prior, with the bias that
    /// predicts its base rate.
    fn prior(&self, data: &Dataset, m: usize) -> Vec<Variational> {
        let y = self.labels(data);
        y.column_iter()
            .map(|col| Variational::prior(m, initial_bias(col.as_slice())))
            .collect()
    }
}

/// Fits the latents on shared pseudo-inputs and kernel: restarts screened
/// by successive halving ([`super::restarts`]), then the best optimised to
/// the end.
fn fit_latents(
    data: &Dataset,
    latents: &Latents,
    params: &SvgpParams,
    bound: &Bound,
    progress: &mut dyn FnMut(Progress),
) -> Result<(SvgpFit, Vec<StartReport>)> {
    let kern = initial_kernel(&bound.prior)?.with_kernel(params.kernel);
    let sparse = params.sparse();
    let done = Cell::new(0u64);
    let mut counted = continuing(&done, progress);
    let mut starts = Vec::new();
    let start = |k: usize| -> Result<(String, Start)> {
        let (label, z) = start_positions(&data.x, &sparse, k)?;
        let qs = latents.prior(data, params.m);
        Ok((label, (PseudoInputs::new(z)?, kern.clone(), qs)))
    };
    // A screened start already has its q(u): no warm-up before the final run.
    let (start, warm_up) = if params.restarts <= 1 {
        (start(0)?.1, WARM_UP_ITER)
    } else {
        let (screen, subset) = screening(std::slice::from_ref(data), &sparse)?;
        let subset = &subset[0];
        let y = latents.labels(subset);
        let round = OptimiseOptions {
            max_iter: screen.max_iter.div_ceil(SCREEN_ROUNDS),
            ..screen
        };
        let relevant = relevant_inputs(&subset.x, &y);
        let focused = focused_start(data, (&kern, &relevant), params, latents)?;
        let drawn = (0..params.restarts).map(start).chain(focused.map(Ok));
        let (best, reports) = best_start(drawn, 2, &mut |stage| {
            let (state, warm_up) = match stage {
                Stage::First(state) => (state, WARM_UP_ITER),
                Stage::Again(state) => (state, 0),
            };
            let run = optimise((subset, &y), state, bound, (warm_up, &round), &mut counted)?;
            done.set(done.get() + run.run.iterations);
            let score = run.neg_elbo;
            Ok(((run.features, run.kernel, run.qs), score))
        })?;
        starts = reports;
        (best, 0)
    };
    let y = latents.labels(data);
    let fit = optimise(
        (data, &y),
        start,
        bound,
        (warm_up, &params.optimiser),
        &mut counted,
    )?;
    Ok((fit, starts))
}

/// A start of the bound: pseudo-inputs, kernel and every latent's `q(u)`.
type Start = (PseudoInputs, KernelParams, Vec<Variational>);

/// The start that knows which inputs are `relevant` (where some but not
/// all are): from the common start `kernel`, each relevant input's
/// length scale is shortened as if the `R` relevant inputs were all
/// there are (`sqrt(R)` for `sqrt(D)`) and each other input's lengthened
/// by one prior standard deviation; the pseudo-inputs are k-means centres
/// in those length scales' units, so they spread over the relevant
/// inputs. `None` where every input or none is relevant.
fn focused_start(
    data: &Dataset,
    (kernel, relevant): (&KernelParams, &[bool]),
    params: &SvgpParams,
    latents: &Latents,
) -> Result<Option<(String, Start)>> {
    let count = relevant.iter().filter(|&&r| r).count();
    if count == 0 || count == relevant.len() {
        return Ok(None);
    }
    let shorter = 0.5 * libm::log(count as f64 / relevant.len() as f64);
    let mut kernel = kernel.clone();
    for (l, &r) in kernel.log_lengthscales.iter_mut().zip(relevant) {
        *l += if r { shorter } else { LENGTHSCALE_PRIOR_SD };
    }
    let scale: Vec<f64> = kernel
        .log_lengthscales
        .iter()
        .map(|l| libm::exp(*l))
        .collect();
    let scaled = DMatrix::from_fn(data.n_rows(), data.n_inputs(), |i, j| {
        data.x[(i, j)] / scale[j]
    });
    let seed = params.seed.wrapping_add(params.restarts as u64);
    let mut z = init::kmeans(&scaled, params.m, seed, KMEANS_ITER)?;
    for (j, s) in scale.iter().enumerate() {
        z.column_mut(j).scale_mut(*s);
    }
    let qs = latents.prior(data, params.m);
    let label = format!("relevant inputs, kmeans (seed {seed})");
    Ok(Some((label, (PseudoInputs::new(z)?, kernel, qs))))
}

/// Each latent's model on the shared basis of `fit`.
fn latent_models(
    data: &Dataset,
    (features, kernel, qs): (&PseudoInputs, &KernelParams, &[Variational]),
    latents: &Latents,
    config: &SvgpConfig,
) -> Result<(Vec<TrainedModel>, u32)> {
    let link = if latents.binary {
        Link::Probit
    } else {
        // The rule the classification chapter measured against one-vs-rest.
        Link::Softmax
    };
    let mut members = Vec::with_capacity(qs.len());
    let mut escalations = 0;
    for (q, &class) in qs.iter().zip(&latents.classes) {
        let (form, raised) = svgp_runtime_form(features, kernel, q, config)?;
        escalations += raised;
        let mut model = TrainedModel::classifier(ModelKind::Svgp, form, data, (q.bias, class));
        model.link = link;
        members.push(model);
    }
    Ok((members, escalations))
}

/// Fits SVGP as `params` asks: one probit latent for a binary target, or
/// one per class of `K` classes, each against the rest, on one basis (the
/// bound summed over the latents), exported with the softmax link.
pub(crate) fn fit_svgp(
    data: &Dataset,
    params: &Checked<'_, SvgpParams>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    let latents = Latents::of(data)?;
    let bound = Bound::for_data(data)?;
    let config = bound.config;
    let (fit, starts) = fit_latents(data, &latents, params, &bound, progress)?;
    let state = (&fit.features, &fit.kernel, fit.qs.as_slice());
    let (members, escalations) = latent_models(data, state, &latents, &config)?;
    let mut report = FitReport::new(Method::Svgp, data.n_rows(), fit.neg_elbo);
    report.jitter_escalations = escalations;
    report.optimiser = Some(OptimiserReport::new(&fit.run, params.optimiser.max_iter));
    report.starts = starts;
    let labels: Vec<String> = latents
        .classes
        .iter()
        .map(|&c| class_name(data, c))
        .collect();
    report.outputs = if latents.binary {
        vec![OutputReport::named(&data.target_name, None)]
    } else {
        labels
            .iter()
            .map(|l| OutputReport::named(l, None))
            .collect()
    };
    let set = ModelSet {
        members,
        class_labels: if latents.binary { Vec::new() } else { labels },
    };
    let kernels = vec![fit.kernel.clone(); set.members.len()];
    let data = data.clone();
    let SvgpFit {
        features,
        kernel,
        qs,
        ..
    } = fit;
    // The export cure: the same parameters with more jitter on Kuu, after
    // `max_iter` iterations that let the rest adapt to it.
    let rebuild = move |jitter: JitterPolicy, max_iter: u64| {
        let bound = Bound {
            config: SvgpConfig { jitter, ..config },
            prior: bound.prior.clone(),
        };
        let y = latents.labels(&data);
        let start = (features.clone(), kernel.clone(), qs.clone());
        let refit = if max_iter == 0 {
            let value = bound.objective((&data.x, &y), start.clone())?;
            let neg_elbo = value.value(&value.initial())?;
            let (features, kernel, qs) = start;
            (features, kernel, qs, neg_elbo)
        } else {
            let options = OptimiseOptions {
                max_iter,
                ..OptimiseOptions::default()
            };
            let fit = optimise((&data, &y), start, &bound, (0, &options), &mut |_| {})?;
            (fit.features, fit.kernel, fit.qs, fit.neg_elbo)
        };
        let (features, kernel, qs, nlml) = refit;
        let state = (&features, &kernel, qs.as_slice());
        let (members, _) = latent_models(&data, state, &latents, &bound.config)?;
        Ok(Rebuilt {
            forms: members.iter().map(|m| m.form.clone()).collect(),
            biases: Some(qs.iter().map(|q| q.bias).collect()),
            nlml,
            kernels: vec![kernel; members.len()],
            noise_held: false,
        })
    };
    Ok(Fit::new(
        set,
        report,
        kernels,
        (config.jitter.initial, Box::new(rebuild)),
    ))
}

/// The classifier `fit_svgp` fits, before it becomes models: its basis,
/// kernel and each latent's `q(u)`, what a streamed fit's passes over every
/// row start from (`super::streamed_classify`).
pub(crate) struct LatentFit {
    /// The fitted pseudo-inputs.
    pub(crate) features: PseudoInputs,
    /// The fitted kernel.
    pub(crate) kernel: KernelParams,
    /// Each latent's `q(u)` and bias.
    pub(crate) qs: Vec<Variational>,
    /// The class value each latent says yes to (raw target units).
    pub(crate) classes: Vec<f64>,
    /// One probit latent (the -1/+1 labels), not one per class.
    pub(crate) binary: bool,
    /// The bound's numerical settings.
    pub(crate) config: SvgpConfig,
    /// The starts screened.
    pub(crate) starts: Vec<StartReport>,
    /// The final run.
    pub(crate) run: OptimiseReport,
}

/// Fits the classifier `fit_svgp` fits on `data`, without making models
/// of it ([`LatentFit`]).
///
/// # Errors
/// As `fit_svgp`.
pub(crate) fn fit_latent_state(
    data: &Dataset,
    params: &Checked<'_, SvgpParams>,
    progress: &mut dyn FnMut(Progress),
) -> Result<LatentFit> {
    let latents = Latents::of(data)?;
    let bound = Bound::for_data(data)?;
    let (fit, starts) = fit_latents(data, &latents, params, &bound, progress)?;
    Ok(LatentFit {
        features: fit.features,
        kernel: fit.kernel,
        qs: fit.qs,
        classes: latents.classes,
        binary: latents.binary,
        config: bound.config,
        starts,
        run: fit.run,
    })
}

/// The models of `q(u)`s `qs` on the basis and kernel of `fit` for
/// `data`'s target, as `fit_svgp` exports them (probit for one latent,
/// softmax for one per class), the class labels of several, and the
/// jitter escalations.
///
/// # Errors
/// As `svgp_runtime_form`.
pub(crate) fn latent_set(
    data: &Dataset,
    fit: &LatentFit,
    qs: &[Variational],
    config: &SvgpConfig,
) -> Result<(ModelSet, u32)> {
    let latents = Latents {
        classes: fit.classes.clone(),
        binary: fit.binary,
    };
    let state = (&fit.features, &fit.kernel, qs);
    let (members, escalations) = latent_models(data, state, &latents, config)?;
    let class_labels = if fit.binary {
        Vec::new()
    } else {
        fit.classes.iter().map(|&c| class_name(data, c)).collect()
    };
    Ok((
        ModelSet {
            members,
            class_labels,
        },
        escalations,
    ))
}

/// One L-BFGS run of the bound from `start` on the rows of `data` with the
/// latents' labels `y`, after `warm_up` iterations of `q(u)` alone (see
/// [`WARM_UP_ITER`]; 0 from a start whose `q(u)` is already fitted).
fn optimise(
    (data, y): (&Dataset, &DMatrix<f64>),
    start: (PseudoInputs, KernelParams, Vec<Variational>),
    bound: &Bound,
    (warm_up, options): (u64, &OptimiseOptions),
    progress: &mut dyn FnMut(Progress),
) -> Result<SvgpFit> {
    let options = &OptimiseOptions {
        memory: options.memory.or(Some(LBFGS_MEMORY)),
        plateau: Some(base_rate_loss(y)),
        ..options.clone()
    };
    let objective = bound.objective((&data.x, y), start)?;
    let initial = if warm_up == 0 {
        objective.initial()
    } else {
        let options = OptimiseOptions {
            max_iter: warm_up.min(options.max_iter),
            ..options.for_rows(data.n_rows())
        };
        optimise_variational(&objective, &options, &mut |_| {})?.0
    };
    let run = minimise(
        |p| objective.objective(p),
        initial,
        &options.for_rows(data.n_rows()),
        progress,
    )?;
    let (features, kernel, qs) = objective.unpack(&run.x)?;
    Ok(SvgpFit {
        features,
        kernel,
        qs,
        neg_elbo: run.value,
        run,
    })
}

/// Minimises the bound over `q(u)` and the bias alone from the objective's
/// start, the basis and the kernel held; returns the whole parameter
/// vector at the end and the run.
fn optimise_variational<F: InducingFeatures + Clone>(
    objective: &SvgpObjective<'_, F>,
    options: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Vec<f64>, OptimiseReport)> {
    let mut p = objective.initial();
    let fixed = objective.n_shared();
    let head = p[..fixed].to_vec();
    let run = minimise(
        |qp| {
            let mut p = head.clone();
            p.extend_from_slice(qp);
            objective.variational_objective(&p)
        },
        p[fixed..].to_vec(),
        options,
        progress,
    )?;
    p.truncate(fixed);
    p.extend_from_slice(&run.x);
    Ok((p, run))
}

/// The bound's `q(u)` and bias on every row of `data` (a binary target)
/// with the inducing inputs fixed at the rows of `z` and the kernel held:
/// the posterior of a basis chosen elsewhere (the IVM's active set), fitted
/// to all the data rather than to the basis rows alone. Starts at `start`
/// (whitened, as the bound's parameters are).
///
/// # Errors
/// Shape mismatches; numerical failures of the bound.
pub(crate) fn fit_variational_on_basis(
    data: &Dataset,
    z: DMatrix<f64>,
    kernel: &KernelParams,
    start: Variational,
    (config, options): (SvgpConfig, &OptimiseOptions),
    progress: &mut dyn FnMut(Progress),
) -> Result<(PseudoInputs, Variational, OptimiseReport)> {
    let features = PseudoInputs::new(z)?;
    let y = Latents {
        classes: Vec::new(),
        binary: true,
    }
    .labels(data);
    let objective = SvgpObjective::new(
        (&data.x, &y),
        features.clone(),
        kernel.clone(),
        vec![start],
        config,
    )?;
    let (p, run) = optimise_variational(&objective, &options.for_rows(data.n_rows()), progress)?;
    let (_, _, qs) = objective.unpack(&p)?;
    let q = qs
        .into_iter()
        .next()
        .ok_or_else(|| Error::Numerical("svgp: no latent was fitted".into()))?;
    Ok((features, q, run))
}

/// The svgp fit's starting kernel on `data` (every log length scale at
/// its prior centre, signal variance 1) in the family `kernel`: a kernel
/// learned elsewhere (the IVM's) starts where svgp's does.
///
/// # Errors
/// An input whose spread is not finite.
pub(crate) fn starting_kernel(data: &Dataset, kernel: Kernel) -> Result<KernelParams> {
    Ok(initial_kernel(&Bound::for_data(data)?.prior)?.with_kernel(kernel))
}

/// The bound's kernel, `q(u)` and bias on every row of `data` (a binary
/// target) with the inducing inputs fixed at the rows of `z`, under the
/// svgp fit's prior on the log length scales: svgp's kernel fit without
/// its pseudo-input search (the IVM's kernel, on its active set). Starts
/// at `kernel` and `start` (whitened, as the bound's parameters are);
/// the pseudo-input gradient is computed and dropped.
///
/// # Errors
/// Shape mismatches; numerical failures of the bound.
pub(crate) fn fit_kernel_on_basis(
    data: &Dataset,
    z: DMatrix<f64>,
    (kernel, start): (&KernelParams, Variational),
    options: &OptimiseOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(KernelParams, Variational, OptimiseReport)> {
    let features = PseudoInputs::new(z)?;
    let held = features.params();
    let y = Latents {
        classes: Vec::new(),
        binary: true,
    }
    .labels(data);
    let bound = Bound::for_data(data)?;
    let objective = bound.objective((&data.x, &y), (features, kernel.clone(), vec![start]))?;
    let options = OptimiseOptions {
        memory: options.memory.or(Some(LBFGS_MEMORY)),
        ..options.for_rows(data.n_rows())
    };
    let whole = |free: &[f64]| {
        let mut p = held.clone();
        p.extend_from_slice(free);
        p
    };
    let free = objective.initial()[held.len()..].to_vec();
    let run = minimise(
        |free| {
            let (value, grad) = objective.objective(&whole(free))?;
            Ok((value, grad[held.len()..].to_vec()))
        },
        free,
        &options,
        progress,
    )?;
    let (_, kernel, qs) = objective.unpack(&whole(&run.x))?;
    let q = qs
        .into_iter()
        .next()
        .ok_or_else(|| Error::Numerical("svgp: no latent was fitted".into()))?;
    Ok((kernel, q, run))
}

/// Standard deviation of the prior on every log length scale, centred on
/// the start (`prior_centres`): a length scale `e` times shorter or
/// longer than its centre costs half a nat. Maximum likelihood over `D`
/// length scales overfits small data; where the rows are many the bound
/// outweighs the prior and an irrelevant input still switches off.
pub(crate) const LENGTHSCALE_PRIOR_SD: f64 = 1.0;

/// How far (in standard deviations) an input's most extreme training row
/// may lie from its mean before the input's prior centre moves out with
/// it (`prior_centres`).
pub(crate) const EXTREME_SD: f64 = 3.0;

/// The objective of a fit: the bound's numerical settings and the prior
/// on the log length scales.
#[derive(Clone, Debug)]
struct Bound {
    config: SvgpConfig,
    prior: LengthscalePrior,
}

impl Bound {
    /// The default settings and the prior [`LENGTHSCALE_PRIOR_SD`] around
    /// [`prior_centres`] of `data`.
    fn for_data(data: &Dataset) -> Result<Self> {
        Ok(Bound {
            config: SvgpConfig::default(),
            prior: LengthscalePrior {
                centres: prior_centres(data)?,
                sd: LENGTHSCALE_PRIOR_SD,
            },
        })
    }

    /// The penalised negative bound on the rows `x` with labels `y`, from
    /// `start`.
    fn objective<'d>(
        &self,
        (x, y): (&'d DMatrix<f64>, &'d DMatrix<f64>),
        (features, kernel, qs): (PseudoInputs, KernelParams, Vec<Variational>),
    ) -> Result<SvgpObjective<'d, PseudoInputs>> {
        SvgpObjective::new((x, y), features, kernel, qs, self.config)?
            .with_lengthscale_prior(self.prior.clone())
    }
}

/// Each input's prior centre and starting value of `log l_d`, standardised
/// units: `log sqrt(D)` (a typical squared distance between two rows,
/// `2 D`, is then two squared length scales: neither flat nor a lookup
/// table), plus `log(r_d / EXTREME_SD)` where the input's most extreme
/// row lies `r_d > EXTREME_SD` standard deviations from its mean.
///
/// Why: a rare or skewed input (a pixel that is ink in 2 rows of 1,347)
/// has rows far out, which at `sqrt(D)` are far from every other row and
/// fall back to the prior; the prior would otherwise hold its length
/// scale there.
fn prior_centres(data: &Dataset) -> Result<Vec<f64>> {
    let base = (data.n_inputs() as f64).sqrt();
    let centres = data
        .x
        .column_iter()
        .map(|col| {
            let mean = col.mean();
            let sd = col.variance().sqrt();
            let extreme = col.iter().map(|v| (v - mean).abs()).fold(0.0, f64::max);
            let reach = if sd > 0.0 { extreme / sd } else { 0.0 };
            libm::log(base * (reach / EXTREME_SD).max(1.0))
        })
        .collect::<Vec<f64>>();
    if centres.iter().any(|c| !c.is_finite()) {
        return Err(Error::Numerical(
            "svgp: an input's spread is not finite".into(),
        ));
    }
    Ok(centres)
}

/// The starting kernel: every log length scale at its prior centre
/// ([`prior_centres`]), signal variance 1. The noise variance is unused
/// by the probit.
fn initial_kernel(prior: &LengthscalePrior) -> Result<KernelParams> {
    let lengthscales: Vec<f64> = prior.centres.iter().map(|c| libm::exp(*c)).collect();
    KernelParams::new(&lengthscales, 1.0, 1.0)
}

/// The bound's data term at the plateau every start is on: each latent
/// predicting its base rate alone, `sum_k N H(p_k)` nats (`H` the binary
/// entropy, `p_k` latent k's fraction of +1 labels in `y`).
fn base_rate_loss(y: &DMatrix<f64>) -> f64 {
    let n = y.nrows() as f64;
    y.column_iter()
        .map(|col| {
            let p = col.iter().filter(|&&v| v > 0.0).count() as f64 / n;
            let h = |q: f64| if q > 0.0 { -q * libm::log(q) } else { 0.0 };
            n * (h(p) + h(1.0 - p))
        })
        .sum()
}

/// `Phi^{-1}` of the fraction of positive (+1) labels: the bias that
/// predicts the base rate where the latent is 0.
fn initial_bias(labels: &[f64]) -> f64 {
    let n = labels.len() as f64;
    let positive = labels.iter().filter(|&&v| v > 0.0).count() as f64;
    norm_quantile(((positive + 0.5) / (n + 1.0)).clamp(1e-6, 1.0 - 1e-6))
}

/// The small, quick svgp settings the classifier's tests share: `m`
/// inducing inputs, two restarts of at most 150 iterations.
#[cfg(test)]
pub(crate) fn test_params(m: usize, seed: u64) -> SvgpParams {
    SvgpParams {
        m,
        seed,
        restarts: 2,
        optimiser: crate::numerics::optimise::OptimiseOptions {
            max_iter: 150,
            ..SvgpParams::default().optimiser
        },
        ..SvgpParams::default()
    }
}

#[cfg(test)]
mod tests {
    use nalgebra::{DMatrix, DVector};

    use super::*;
    use crate::evaluate::class_scores as scores;
    use crate::evaluate::metrics::error_rate;
    use crate::export::check;
    use crate::fit::{fit, FitParams};
    use crate::model::multiclass::{probabilities, ClassLink};
    use crate::synth::{classification, ClassShape};

    /// Moons with a third input that is noise: `rows` rows, seed `seed`.
    fn moons_and_noise(rows: usize, seed: u64) -> Dataset {
        let (x, y) = classification(ClassShape::Moons, rows, seed);
        let noise = DVector::from_fn(rows, |i, _| {
            (libm::sin(i as f64 * 12.9898) * 43758.55).fract()
        });
        let x = DMatrix::from_fn(rows, 3, |i, j| if j < 2 { x[(i, j)] } else { noise[i] });
        let names = vec!["x1".into(), "x2".into(), "noise".into()];
        Dataset::from_raw(x, y, names, "class".into())
            .unwrap()
            .into_binary(None)
            .unwrap()
    }

    fn params(m: usize, seed: u64) -> FitParams {
        FitParams::Svgp(test_params(m, seed))
    }

    #[test]
    fn learns_the_moons_and_switches_the_noise_input_off() {
        let data = moons_and_noise(1300, 5);
        let (test, train) = data.split(1000.0 / 1300.0, 5).unwrap();
        let fitted = fit(&train, &params(20, 1), &mut |_| {}).unwrap();
        let p = fitted.set.members[0].predict_raw(&test.raw_x()).unwrap();
        let err = error_rate(p.mean.as_slice(), test.y.as_slice());
        // The IVM's moons test asks for 0.12 at M = 100 without the noise
        // input.
        assert!(err < 0.12, "test error {err}");
        let l = &fitted.report.lengthscales;
        let scale = &train.transform.x_scale;
        let relative: Vec<f64> = l.iter().zip(scale).map(|(l, s)| l / s).collect();
        assert!(
            relative[2] > 3.0 * relative[0].max(relative[1]),
            "length scales (standardised) {relative:?}"
        );
    }

    /// An input whose extreme row lies far out (one row in 200 is ink)
    /// gets a prior centre that much longer; evenly spread inputs keep
    /// `log sqrt(D)`, and the start is the centre.
    #[test]
    fn a_rare_input_gets_a_longer_prior_centre() {
        let rows = 200;
        let x = DMatrix::from_fn(rows, 3, |i, j| match j {
            0 => i as f64,
            1 => ((i * 37) % 11) as f64,
            _ => f64::from(u8::from(i == 7)),
        });
        let y = DVector::from_fn(rows, |i, _| f64::from(u8::from(i % 3 == 0)));
        let names = vec!["a".into(), "b".into(), "rare".into()];
        let data = Dataset::from_raw(x, y, names, "y".into())
            .unwrap()
            .into_binary(None)
            .unwrap();
        let bound = Bound::for_data(&data).unwrap();
        let base = libm::log(3f64.sqrt());
        let centres = &bound.prior.centres;
        assert!((centres[0] - base).abs() < 1e-12, "{centres:?}");
        assert!((centres[1] - base).abs() < 1e-12, "{centres:?}");
        // The ink row is sqrt(199) standard deviations from the mean.
        let reach = (rows as f64 - 1.0).sqrt();
        assert!((centres[2] - base - libm::log(reach / EXTREME_SD)).abs() < 1e-9);
        let start = initial_kernel(&bound.prior).unwrap();
        assert!((start.log_lengthscales[2] - centres[2]).abs() < 1e-12);
    }

    #[test]
    fn the_two_factor_posterior_exports_as_a_probit_blob_that_passes_its_check() {
        let data = moons_and_noise(300, 2);
        let fitted = fit(&data, &params(15, 0), &mut |_| {}).unwrap();
        // The bound's posterior has two factors; the blob stores both, or
        // their product form where f32 reproduces it.
        assert!(fitted.set.members[0].form.l2.is_some());
        let exported = check(&fitted.set, &data.raw_x()).unwrap();
        assert!(
            exported.fidelity.passes(),
            "{}",
            exported.fidelity.describe()
        );
        let spec = sgp_runtime::ModelSpec::from_bytes(&exported.blob).unwrap();
        assert_eq!(spec.shape.kind, ModelKind::Svgp);
        assert_eq!(spec.shape.link, Link::Probit);
        assert_eq!(spec.positive_class, 1.0);
        // Two drawn starts and the one that knows the noise input is
        // irrelevant.
        let starts = &fitted.report.starts;
        assert_eq!(starts.len(), 3, "{starts:?}");
        assert!(starts[2].init.starts_with("relevant inputs"), "{starts:?}");
        // The runtime form is the bound's posterior: the probabilities of
        // the training rows are on the right side of 1/2 mostly.
        let p = fitted.set.members[0].predict_raw(&data.raw_x()).unwrap();
        assert!(error_rate(p.mean.as_slice(), data.y.as_slice()) < 0.15);
    }

    #[test]
    fn same_seed_same_blob() {
        let data = moons_and_noise(200, 3);
        let a = fit(&data, &params(10, 4), &mut |_| {}).unwrap();
        let b = fit(&data, &params(10, 4), &mut |_| {}).unwrap();
        let blob = |f: &Fit| check(&f.set, &data.raw_x()).unwrap().blob;
        assert_eq!(blob(&a), blob(&b));
    }

    /// Three text-labelled classes, each a disc in 2-D with a noise input:
    /// one latent per class on one basis, probabilities summing to 1 that
    /// name the right class on held-out rows.
    #[test]
    fn three_classes_share_one_basis_and_predict_their_labels() {
        let mut text = String::from("x1,x2,noise,kind\n");
        for i in 0..450 {
            let k = i % 3;
            let angle = 2.1 * k as f64;
            let r = 0.6 * (libm::sin(i as f64 * 12.9898) * 43758.55).fract().abs();
            let t = i as f64 * 2.4;
            let x1 = 1.5 * libm::cos(angle) + r * libm::cos(t);
            let x2 = 1.5 * libm::sin(angle) + r * libm::sin(t);
            let noise = (libm::sin(i as f64 * 78.233) * 9631.3).fract();
            let name = ["red", "green", "blue"][k];
            text.push_str(&format!("{x1},{x2},{noise},{name}\n"));
        }
        let data = Dataset::from_reader(text.as_bytes(), "three", None).unwrap();
        let (test, train) = data.split(150.0 / 450.0, 3).unwrap();
        let params = SvgpParams {
            m: 12,
            restarts: 1,
            optimiser: OptimiseOptions {
                max_iter: 100,
                ..SvgpParams::default().optimiser
            },
            ..SvgpParams::default()
        };
        let classes = train.into_classes().unwrap();
        let fit = crate::fit::fit(&classes, &FitParams::Svgp(params.clone()), &mut |_| {}).unwrap();
        assert_eq!(fit.set.class_labels, ["blue", "green", "red"]);
        assert_eq!(fit.set.members.len(), 3);
        let basis = &fit.set.members[0].form.basis;
        assert!(fit.set.members.iter().all(|m| &m.form.basis == basis));
        let truth: Vec<usize> = test.raw_y().iter().map(|v| v.round() as usize).collect();
        for link in [ClassLink::OneVsRest, ClassLink::Softmax] {
            let p = probabilities(&fit.set, &test.raw_x(), link).unwrap();
            assert!(p.row_iter().all(|r| (r.sum() - 1.0).abs() < 1e-12));
            let s = scores(&p, &truth);
            assert!(s.error_rate < 0.05, "{link:?}: {s:?}");
        }
        let two =
            Dataset::from_reader("a,y\n1,x\n2,y\n3,x\n4,y\n".as_bytes(), "two", None).unwrap();
        let err = two.into_classes().unwrap_err();
        assert!(err.to_string().contains("2 distinct values"), "{err}");
    }

    /// The default classifier (M = 64) on the ring, two relevant inputs
    /// of six and 5% flipped labels, against the Bayes error on 20,000
    /// held-out rows: within 1 point from 20,000 rows, 1.5 from 5,000;
    /// from 2,000 rows within 2.25 points over five draws (and 3 on each),
    /// which is what a GP classifier reaches there even knowing the two
    /// relevant inputs (the exact one 6.7% and 7.2%, seeds 1 and 2:
    /// docs/src/classification.md, "The ring at every size"). Before the
    /// focused start and the plateau-aware stall test some draws stayed
    /// at the base rate (49% error); 100,000 rows is
    /// bench/classify/ring.sh.
    #[test]
    fn the_ring_is_learned_at_every_size_and_seed() {
        let test = crate::synth::classification_dataset(ClassShape::Ring, 20_000, 99).unwrap();
        let bayes = crate::synth::RING_FLIPPED;
        let error = |rows: usize, seed: u64| {
            let train = crate::synth::classification_dataset(ClassShape::Ring, rows, seed).unwrap();
            let params = FitParams::Svgp(SvgpParams {
                m: 64,
                seed,
                ..SvgpParams::default()
            });
            let fitted = fit(&train, &params, &mut |_| {}).unwrap();
            let p = fitted.set.members[0].predict_raw(&test.raw_x()).unwrap();
            error_rate(p.mean.as_slice(), test.y.as_slice())
        };
        let small: Vec<f64> = (1..=5).map(|seed| error(2000, seed)).collect();
        let mean = small.iter().sum::<f64>() / small.len() as f64;
        assert!(
            mean < bayes + 0.0225 && small.iter().all(|&e| e < bayes + 0.03),
            "2,000 rows, seeds 1 to 5: test errors {small:?}"
        );
        for (rows, seed, margin) in [(5000, 2, 0.015), (20_000, 1, 0.01)] {
            let err = error(rows, seed);
            assert!(
                err < bayes + margin,
                "{rows} rows, seed {seed}: test error {err}"
            );
        }
    }

    #[test]
    fn a_continuous_target_or_too_many_points_is_refused() {
        let regression = crate::synth::dataset(crate::synth::Shape::Periodic, 100, 1).unwrap();
        let err = fit(&regression, &params(10, 0), &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("continuous"), "{err}");
        let small = moons_and_noise(30, 1);
        assert!(matches!(
            fit(&small, &params(31, 0), &mut |_| {}),
            Err(Error::BadInput(_))
        ));
    }
}
