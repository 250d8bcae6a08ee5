//! The sparse variational GP classifier (`--model svgp`): the bound of
//! [`crate::model::inference::svgp`] over M free pseudo-inputs, ARD length scales,
//! the signal variance, the probit's bias and `q(u)`, all learned jointly
//! by L-BFGS on the whole data set.
//!
//! Starts and restarts as for SPGP ([`super::spgp`]): k-means centres
//! first, then random subsets and k-means with other seeds, on (a subset
//! of) the rows. Screening is by successive halving ([`SCREEN_ROUNDS`]);
//! the best start is optimised to the end. Every start begins at `q(u)` =
//! the prior and the bias at `Phi^{-1}(fraction of positive labels)`.
//!
//! The kernel starts with equal length scales ([`initial_kernel`]). An
//! exact GP regression on the -1/+1 labels of 500 rows was tried as the
//! start (ARD already there): it ended at a worse bound on the ring, digits
//! and breast cancer sets (cancer: 36.5 against 32.9 nats, test log loss
//! 0.175 against 0.150), its short length scales a local optimum the bound
//! does not leave.
//!
//! Why this bound and not EP on the FITC prior (Naish-Guzman and Holden
//! 2008): the bound has an analytic gradient in every parameter, pseudo-
//! inputs included, and a single L-BFGS run optimises all of them; EP needs
//! an inner fixed-point loop per outer step whose convergence is not
//! guaranteed, and its approximate marginal likelihood is not a bound, so
//! the optimiser may chase a wrong optimum when the sites have not
//! converged.

use std::cell::Cell;

use sgp_runtime::{Kernel, Link, ModelKind};

use super::progress::continuing;
use super::spgp::{screening, start_positions};
use super::{
    Checked, FitReport, Fitted, Hyperparameters, Method, OptimiserReport, PseudoInit, SparseParams,
    StartReport, DEFAULT_RESTARTS,
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
/// pseudo-inputs and the kernel held, before every joint run. From the
/// prior `q(u)` the joint gradient first moves the kernel while the latent
/// mean is still zero: on a 2-D wavy boundary (600 rows) the first three
/// iterations raised one length scale threefold and the fit ended on a
/// near-linear boundary (test error 7.3% against GPflow's 0.7%); with
/// 20 iterations of `q(u)` first it reaches 0.5% (100 iterations: the
/// same), and the ring and digits sets are unchanged.
pub const WARM_UP_ITER: u64 = 20;

/// A screening round is this fraction of SPGP's screening run
/// ([`super::spgp::screen_iter`]), after the [`WARM_UP_ITER`] iterations of
/// `q(u)`. The screening was about half of a fit's time: on digits 9 vs
/// rest (M = 128) the final run stalled after 97 iterations where the four
/// starts had taken 280. Measured on the classification suite (11 sets,
/// seed 0), rounds of a quarter change no test error by more than 0.3 point
/// against screening every start for the whole run, at about a third less
/// CPU per fit (docs/src/classification.md).
pub const SCREEN_ROUNDS: u64 = 4;

/// L-BFGS pairs remembered by the fit's runs (unless its options name
/// another number), where the general rule ([`auto_memory`]) gives the
/// 8,600 to 17,000 parameters of M = 128 its largest memory, 50. The
/// two-loop recursion over 50 pairs of vectors that long was a tenth of a
/// fit's CPU time; with 20 the fits of the classification suite (11 sets,
/// three splits) change no test error by more than 0.2 point (a few test
/// rows, both ways) and no log loss by more than 0.002, at 8 to 13% less
/// CPU (wave-noise5, digits8).
///
/// [`auto_memory`]: crate::numerics::optimise::auto_memory
pub const LBFGS_MEMORY: usize = 20;

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
    pub optimiser: OptimiseOptions,
    /// Where the first start's pseudo-inputs come from.
    pub pseudo_init: PseudoInit,
    /// The covariance function (`--kernel`): squared exponential or Matérn.
    pub kernel: Kernel,
}

impl Default for SvgpParams {
    fn default() -> Self {
        let sparse = SparseParams::default();
        SvgpParams {
            m: 128,
            seed: 0,
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
    pub fn check(&self, data: &Dataset) -> Result<Checked<'_, Self>> {
        self.sparse().check(data)?;
        if data.target == TargetKind::Continuous {
            return Err(Error::BadInput(format!(
                "{}: --model svgp is a classifier and target column '{}' is continuous: \
                 use --task classification with two labels, or a regression model",
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
    starts: Vec<StartReport>,
}

/// What the latent functions of a fit are.
#[derive(Clone, Debug)]
enum Latents {
    /// One latent: `data.y` holds the -1/+1 labels.
    Binary,
    /// One latent per class value (raw target units), each against the
    /// rest.
    OneVsRest(Vec<f64>),
}

impl Latents {
    /// The -1/+1 labels of `data`, one column per latent.
    fn labels(&self, data: &Dataset) -> DMatrix<f64> {
        match self {
            Latents::Binary => DMatrix::from_column_slice(data.n_rows(), 1, data.y.as_slice()),
            Latents::OneVsRest(classes) => {
                let raw = data.raw_y();
                DMatrix::from_fn(data.n_rows(), classes.len(), |i, k| {
                    if is_class(raw[i], classes[k]) {
                        1.0
                    } else {
                        -1.0
                    }
                })
            }
        }
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

/// Fits the latents of `latents` on shared pseudo-inputs and kernel:
/// screened starts, then the best optimised to the end.
fn fit_latents(
    data: &Dataset,
    latents: &Latents,
    params: &SvgpParams,
    bound: &Bound,
    progress: &mut dyn FnMut(Progress),
) -> Result<SvgpFit> {
    let kern = initial_kernel(&bound.prior)?.with_kernel(params.kernel);
    let sparse = params.sparse();
    let done = Cell::new(0u64);
    let mut counted = continuing(&done, progress);
    let mut starts = Vec::new();
    // A screened start already has its q(u): no warm-up before the final run.
    let (start, warm_up) = if params.restarts <= 1 {
        let z = start_positions(&data.x, &sparse, 0)?.1;
        let start = (PseudoInputs::new(z)?, kern, latents.prior(data, params.m));
        (start, WARM_UP_ITER)
    } else {
        let (screen, subset) = screening(data, &sparse)?;
        let y = latents.labels(&subset);
        // Successive halving: every start gets a first round, the better
        // half of them a second.
        let half = OptimiseOptions {
            max_iter: screen.max_iter.div_ceil(SCREEN_ROUNDS),
            ..screen
        };
        let mut runs = Vec::with_capacity(params.restarts);
        for k in 0..params.restarts {
            let (label, z) = start_positions(&data.x, &sparse, k)?;
            let start = (
                PseudoInputs::new(z)?,
                kern.clone(),
                latents.prior(data, params.m),
            );
            let run = optimise(
                (&subset, &y),
                start,
                bound,
                (WARM_UP_ITER, &half),
                &mut counted,
            )?;
            done.set(done.get() + run.run.iterations);
            starts.push(StartReport {
                init: label,
                nlml: run.neg_elbo,
            });
            runs.push((k, run));
        }
        runs.sort_by(|a, b| a.1.neg_elbo.total_cmp(&b.1.neg_elbo));
        runs.truncate(params.restarts.div_ceil(2));
        let mut best: Option<SvgpFit> = None;
        for (k, run) in runs {
            let start = (run.features, run.kernel, run.qs);
            let run = optimise((&subset, &y), start, bound, (0, &half), &mut counted)?;
            done.set(done.get() + run.run.iterations);
            starts[k].nlml = run.neg_elbo;
            if best.as_ref().is_none_or(|b| run.neg_elbo < b.neg_elbo) {
                best = Some(run);
            }
        }
        let best = best.ok_or_else(|| Error::Numerical("no start was fitted".into()))?;
        ((best.features, best.kernel, best.qs), 0)
    };
    let y = latents.labels(data);
    let options = (warm_up, &params.optimiser);
    let mut fit = optimise((data, &y), start, bound, options, &mut counted)?;
    fit.starts = starts;
    Ok(fit)
}

/// The report of a fit.
fn report(data: &Dataset, fit: &SvgpFit, params: &SvgpParams, escalations: u32) -> FitReport {
    let mut report = FitReport::new(
        Method::Svgp,
        data,
        data.n_rows(),
        &fit.kernel,
        fit.neg_elbo,
        escalations,
    );
    report.hyper.noise_variance = 0.0;
    report.optimiser = Some(OptimiserReport::new(&fit.run, params.optimiser.max_iter));
    report.starts = fit.starts.clone();
    report
}

/// One latent's model: its runtime form on the shared basis, its bias and
/// the class value it says yes to.
fn latent_model(
    data: &Dataset,
    fit: &SvgpFit,
    q: &Variational,
    class: f64,
    config: &SvgpConfig,
) -> Result<(TrainedModel, u32)> {
    let (form, escalations) = svgp_runtime_form(&fit.features, &fit.kernel, q, config)?;
    let mut transform = data.transform.clone();
    transform.y_mean = 0.0;
    transform.y_scale = 1.0;
    let model = TrainedModel {
        kind: ModelKind::Svgp,
        link: Link::Probit,
        form,
        transform,
        input_names: data.input_names.clone(),
        target_name: data.target_name.clone(),
        bias: q.bias,
        positive_class: class,
    };
    Ok((model, escalations))
}

/// Fits SVGP as `params` asks.
pub(crate) fn fit_svgp(
    data: &Dataset,
    params: &Checked<'_, SvgpParams>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fitted> {
    let positive = match data.target {
        TargetKind::Binary { positive } => positive,
        TargetKind::Continuous => return Err(Error::BadInput("svgp needs a binary target".into())),
    };
    let bound = Bound::for_data(data)?;
    let config = bound.config;
    let fit = fit_latents(data, &Latents::Binary, params, &bound, progress)?;
    let q = fit
        .qs
        .first()
        .ok_or_else(|| Error::Numerical("svgp: no latent was fitted".into()))?;
    let (model, escalations) = latent_model(data, &fit, q, positive, &config)?;
    let report = report(data, &fit, params, escalations);
    let data = data.clone();
    let (features, kernel, q) = (fit.features, fit.kernel, q.clone());
    // The export cure: the same parameters with more jitter on Kuu, after
    // `max_iter` iterations that let the rest adapt to it.
    let rebuild = move |jitter: JitterPolicy, max_iter: u64| {
        let bound = Bound {
            config: SvgpConfig { jitter, ..config },
            prior: bound.prior.clone(),
        };
        let config = bound.config;
        let y = Latents::Binary.labels(&data);
        let start = (features.clone(), kernel.clone(), vec![q.clone()]);
        let (features, kernel, qs, neg_elbo) = if max_iter == 0 {
            let value = bound.objective((&data.x, &y), start)?;
            let v = value.value(&value.initial())?;
            (features.clone(), kernel.clone(), vec![q.clone()], v)
        } else {
            let options = OptimiseOptions {
                max_iter,
                ..OptimiseOptions::default()
            };
            let refit = optimise((&data, &y), start, &bound, (0, &options), &mut |_| {})?;
            (refit.features, refit.kernel, refit.qs, refit.neg_elbo)
        };
        let q = qs
            .first()
            .ok_or_else(|| Error::Numerical("svgp: no latent was refitted".into()))?;
        let (form, _) = svgp_runtime_form(&features, &kernel, q, &config)?;
        let mut hyper = Hyperparameters::new(&kernel, &data.transform);
        hyper.noise_variance = 0.0;
        Ok((form, neg_elbo, hyper))
    };
    Ok(Fitted::new(
        model,
        report,
        config.jitter.initial,
        Box::new(rebuild),
    ))
}

/// A classifier of `K > 2` classes: its `K` latents on one basis and how
/// the fit went.
#[derive(Clone, Debug)]
pub struct ClassesFit {
    /// One probit member per class, labelled by the class names.
    pub set: ModelSet,
    /// How the fit went (the bound summed over the classes).
    pub report: FitReport,
}

/// Fits one probit latent per class of `data`'s target, each against the
/// rest, on shared pseudo-inputs and kernel (the bound of
/// [`svgp_objective`](crate::model::inference::svgp::svgp_objective) summed over
/// the classes). The target holds the class values (text labels coded as
/// [`crate::data::labels`] does); probabilities are the normalised one-vs-rest
/// probits ([`crate::model::multiclass::probabilities`]).
///
/// # Errors
/// [`Error::BadInput`] for settings that do not fit the data, fewer than
/// three classes or a continuous target; numerical failures of the fit.
pub fn fit_svgp_classes(
    data: &Dataset,
    params: &SvgpParams,
    progress: &mut dyn FnMut(Progress),
) -> Result<ClassesFit> {
    let classes = data.target_classes();
    let integral = classes.iter().all(|v| is_class(*v, v.round()));
    if classes.len() < 3 || !integral || classes.len() > MAX_CLASSES {
        return Err(Error::BadInput(format!(
            "{}: target column '{}' holds {} distinct values{}: a multi-class classifier needs \
             3 to {MAX_CLASSES} class labels (two: the binary classifier)",
            data.source,
            data.target_name,
            classes.len(),
            if integral { "" } else { ", not all integers" }
        )));
    }
    params.sparse().check(data)?;
    let bound = Bound::for_data(data)?;
    let config = bound.config;
    let latents = Latents::OneVsRest(classes.clone());
    let fit = fit_latents(data, &latents, params, &bound, progress)?;
    let mut members = Vec::with_capacity(classes.len());
    let mut escalations = 0;
    for (q, &class) in fit.qs.iter().zip(&classes) {
        let (model, raised) = latent_model(data, &fit, q, class, &config)?;
        escalations += raised;
        members.push(model);
    }
    Ok(ClassesFit {
        set: ModelSet {
            members,
            class_labels: classes.iter().map(|&c| class_name(data, c)).collect(),
        },
        report: report(data, &fit, params, escalations),
    })
}

/// Most classes a multi-class fit takes (each is a latent function with
/// its own `M x M` factor).
pub const MAX_CLASSES: usize = 100;

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
        starts: Vec::new(),
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
    let y = Latents::Binary.labels(data);
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

/// Standard deviation of the prior on every log length scale, centred on
/// the start ([`prior_centres`]): a length scale `e` times shorter or
/// longer than its centre costs half a nat. Maximum likelihood over `D`
/// length scales overfits small data: on breast cancer (398 rows, 30
/// inputs) the bound drove them from 0.3 to 10^5 raw units and the
/// signal variance to 130..7700, and the test error over six splits was
/// 4.1% against a tuned RBF SVM's 2.9%; with this prior 3.2%. Where the
/// rows are many the bound outweighs it: an irrelevant input still
/// switches off (ring, XOR: the same errors within 0.1 point over three
/// splits). A prior of sd 0.5 gave cancer 3.5% over three splits but
/// cost the ring 0.4 point; 2 helped cancer and digits less.
pub const LENGTHSCALE_PRIOR_SD: f64 = 1.0;

/// How far (in standard deviations) an input's most extreme training row
/// may lie from its mean before the input's prior centre moves out with
/// it ([`prior_centres`]).
pub const EXTREME_SD: f64 = 3.0;

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
/// Why: a rare or skewed input (a pixel that is ink in 2 rows of 1,347, a
/// long-tailed measurement) has rows 10 to 36 standard deviations out;
/// at a length scale of `sqrt(D)` such a row is far from every other
/// one, and its latent falls back to the prior. The bound alone lengthens
/// such inputs freely (their few rows carry little evidence), but the
/// prior held them: on digits 3 vs rest the test error over six splits
/// was 1.19% (log loss 0.038) against GPflow SVGP's 0.85% (0.030); with the
/// centre moved out 0.89% (0.031). Breast cancer: 3.21% before, 3.31%
/// after (one row in six splits). Inputs drawn from a normal or a uniform
/// distribution lie within about 3.5 standard deviations at these sizes
/// and barely move.
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
            (base * (reach / EXTREME_SD).max(1.0)).ln()
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
    let lengthscales: Vec<f64> = prior.centres.iter().map(|c| c.exp()).collect();
    KernelParams::new(&lengthscales, 1.0, 1.0)
}

/// `Phi^{-1}` of the fraction of positive (+1) labels: the bias that
/// predicts the base rate where the latent is 0.
fn initial_bias(labels: &[f64]) -> f64 {
    let n = labels.len() as f64;
    let positive = labels.iter().filter(|&&v| v > 0.0).count() as f64;
    norm_quantile(((positive + 0.5) / (n + 1.0)).clamp(1e-6, 1.0 - 1e-6))
}

#[cfg(test)]
mod tests {
    use nalgebra::{DMatrix, DVector};

    use super::*;
    use crate::evaluate::metrics::error_rate;
    use crate::export::check;
    use crate::fit::{fit, FitParams};
    use crate::model::multiclass::{probabilities, scores, ClassLink};
    use crate::tools::synth::{classification, ClassShape};

    /// Moons with a third input that is noise: `rows` rows, seed `seed`.
    fn moons_and_noise(rows: usize, seed: u64) -> Dataset {
        let (x, y) = classification(ClassShape::Moons, rows, seed);
        let noise = DVector::from_fn(rows, |i, _| ((i as f64 * 12.9898).sin() * 43758.55).fract());
        let x = DMatrix::from_fn(rows, 3, |i, j| if j < 2 { x[(i, j)] } else { noise[i] });
        let names = vec!["x1".into(), "x2".into(), "noise".into()];
        Dataset::from_raw(x, y, names, "class".into())
            .unwrap()
            .into_binary(None)
            .unwrap()
    }

    fn params(m: usize, seed: u64) -> FitParams {
        FitParams::Svgp(SvgpParams {
            m,
            seed,
            restarts: 2,
            optimiser: OptimiseOptions {
                max_iter: 150,
                ..SvgpParams::default().optimiser
            },
            ..SvgpParams::default()
        })
    }

    #[test]
    fn learns_the_moons_and_switches_the_noise_input_off() {
        let data = moons_and_noise(1300, 5);
        let (test, train) = data.split(1000.0 / 1300.0, 5).unwrap();
        let fitted = fit(&train, &params(20, 1), &mut |_| {}).unwrap();
        let p = fitted.model.predict_raw(&test.raw_x()).unwrap();
        let err = error_rate(p.mean.as_slice(), test.y.as_slice());
        // The IVM's moons test asks for 0.12 at M = 100 without the noise
        // input.
        assert!(err < 0.12, "test error {err}");
        let l = &fitted.report.hyper.lengthscales;
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
        let base = 3f64.sqrt().ln();
        let centres = &bound.prior.centres;
        assert!((centres[0] - base).abs() < 1e-12, "{centres:?}");
        assert!((centres[1] - base).abs() < 1e-12, "{centres:?}");
        // The ink row is sqrt(199) standard deviations from the mean.
        let reach = (rows as f64 - 1.0).sqrt();
        assert!((centres[2] - base - (reach / EXTREME_SD).ln()).abs() < 1e-9);
        let start = initial_kernel(&bound.prior).unwrap();
        assert!((start.log_lengthscales[2] - centres[2]).abs() < 1e-12);
    }

    #[test]
    fn the_two_factor_posterior_exports_as_a_probit_blob_that_passes_its_check() {
        let data = moons_and_noise(300, 2);
        let fitted = fit(&data, &params(15, 0), &mut |_| {}).unwrap();
        // The bound's posterior has two factors; the blob stores both, or
        // their product form where f32 reproduces it.
        assert!(fitted.model.form.l2.is_some());
        let exported = check(&fitted.model, &data.raw_x()).unwrap();
        assert!(
            exported.fidelity.passes(),
            "{}",
            exported.fidelity.describe()
        );
        let spec = sgp_runtime::ModelSpec::from_bytes(&exported.blob).unwrap();
        assert_eq!(spec.shape.kind, ModelKind::Svgp);
        assert_eq!(spec.shape.link, Link::Probit);
        assert_eq!(spec.positive_class, 1.0);
        assert_eq!(fitted.report.starts.len(), 2);
        // The runtime form is the bound's posterior: the probabilities of
        // the training rows are on the right side of 1/2 mostly.
        let p = fitted.model.predict_raw(&data.raw_x()).unwrap();
        assert!(error_rate(p.mean.as_slice(), data.y.as_slice()) < 0.15);
    }

    #[test]
    fn same_seed_same_blob() {
        let data = moons_and_noise(200, 3);
        let a = fit(&data, &params(10, 4), &mut |_| {}).unwrap();
        let b = fit(&data, &params(10, 4), &mut |_| {}).unwrap();
        let blob = |f: &Fitted| check(&f.model, &data.raw_x()).unwrap().blob;
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
            let r = 0.6 * ((i as f64 * 12.9898).sin() * 43758.55).fract().abs();
            let t = i as f64 * 2.4;
            let x1 = 1.5 * angle.cos() + r * t.cos();
            let x2 = 1.5 * angle.sin() + r * t.sin();
            let noise = ((i as f64 * 78.233).sin() * 9631.3).fract();
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
        let fit = fit_svgp_classes(&train, &params, &mut |_| {}).unwrap();
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
        let err = fit_svgp_classes(&two, &params, &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("2 distinct values"), "{err}");
    }

    #[test]
    fn a_continuous_target_or_too_many_points_is_refused() {
        let regression =
            crate::tools::synth::dataset(crate::tools::synth::Shape::Periodic, 100, 1).unwrap();
        let err = fit(&regression, &params(10, 0), &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("continuous"), "{err}");
        let small = moons_and_noise(30, 1);
        assert!(matches!(
            fit(&small, &params(31, 0), &mut |_| {}),
            Err(Error::BadInput(_))
        ));
    }
}
