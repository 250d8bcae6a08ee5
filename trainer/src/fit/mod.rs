//! The fitting procedures users pick with `--model`. Each has its own
//! parameter struct, validated against the data set before anything is
//! fitted ([`ExactParams::check`], [`SparseParams::check`]: a [`Checked`]
//! value is the only thing a procedure accepts), and each ends in a
//! [`Fitted`]: a [`TrainedModel`] in the runtime form of MATH.md, a
//! [`FitReport`], and what is needed to rebuild the model with more jitter
//! when its f32 export has to be cured.
//!
//! `exact` is the reference (full GP on at most `max_points` rows); `spgp`
//! is gradient fitting of FITC or VFE over pseudo-inputs; `vsgp` continues
//! from SPGP's fit with multiscale features, `spgp_hs` with per-pseudo-input
//! uncertainties, `dr` is SPGP+DR and the PCA-then-SPGP baseline; each is a
//! feature kind ([`crate::model::features::InducingFeatures`]) fitted by
//! [`spgp::fit_sparse`]. `gplasso` selects training inputs by a lasso path
//! and re-optimises the hyperparameters for them. `ivm` selects an active set of training
//! inputs greedily (the informative vector machine), for classification
//! (probit) or regression. A binary target is fitted by the IVM or, with
//! `exact`, by the exact GP classifier ([`exact_classifier`]).

pub mod init;

mod against_spgp;
pub mod applies;
pub mod dr;
pub mod exact;
pub mod exact_classifier;
pub mod gplasso;
pub mod held_out;
pub mod ivm;
pub mod multi_output;
mod progress;
pub mod spgp;
pub mod spgp_hs;
pub mod streamed;
pub mod svgp;
pub mod task;
pub mod vsgp;

use sgp_runtime::Kernel;
use std::borrow::Cow;
use std::ops::Deref;

use nalgebra::DMatrix;
use serde::Serialize;

use crate::data::Dataset;
use crate::model::inference::{Approximation, RuntimeForm};
use crate::model::kernel::KernelParams;
use crate::model::TrainedModel;
use crate::numerics::linalg::JitterPolicy;
use crate::numerics::optimise::{OptimiseOptions, OptimiseReport, OptimiseStatus, Progress, Stall};
use crate::{Error, Result};
pub use dr::{ProjectedParams, ProjectionReport};

/// Largest number of rows an exact GP may be fitted on.
pub const MAX_EXACT_POINTS: usize = 4096;

/// Which model to fit (`sgp fit --model`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Exact GP on (a random subset of) the data.
    Exact,
    /// SPGP: FITC or VFE with M free pseudo-inputs.
    Spgp,
    /// VSGP: SPGP, then each basis function's widths freed (multiscale).
    Vsgp,
    /// SPGP+HS: SPGP, then each pseudo-input's uncertainty freed
    /// (input-dependent noise).
    SpgpHs,
    /// SPGP+DR: a learned G x D projection, pseudo-inputs in G dims.
    SpgpDr,
    /// PCA to G dims (fixed), then SPGP in that space.
    SpgpPca,
    /// GPLasso: M training inputs chosen by a lasso path, then the
    /// hyperparameters re-optimised with them as fixed pseudo-inputs.
    Gplasso,
    /// IVM: an active set of M training inputs chosen greedily by
    /// differential entropy; a probit classifier or a sparse regression.
    Ivm,
    /// SVGP: a sparse variational probit classifier, M learned
    /// inducing inputs and ARD length scales (the default classifier).
    Svgp,
}

impl Method {
    /// The name as typed after `--model`.
    pub fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .map(|v| v.get_name().to_string())
            .unwrap_or_default()
    }

    /// Whether the model can be fitted to a binary target (a probit
    /// classifier): the sparse variational classifier, the IVM, and the
    /// exact GP as the Laplace classifier.
    pub fn classifies(self) -> bool {
        matches!(self, Method::Svgp | Method::Ivm | Method::Exact)
    }

    /// Whether, on small data, the model must beat plain SPGP on held-out
    /// rows, and is otherwise SPGP's fit under its own name (SPGP+HS, VSGP,
    /// SPGP+DR, GPLasso with its basis moved: [`against_spgp`]).
    pub fn falls_back_to_spgp(self) -> bool {
        matches!(
            self,
            Method::SpgpHs | Method::Vsgp | Method::SpgpDr | Method::Gplasso
        )
    }

    /// Whether the model projects its inputs to `--dim` G dimensions.
    pub fn is_projected(self) -> bool {
        matches!(self, Method::SpgpDr | Method::SpgpPca)
    }
}

/// How pseudo-inputs are drawn from the data (`sgp fit --init`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum InitMethod {
    /// A random subset of the training inputs (the SPGP paper's choice).
    Random,
    /// k-means centres of the training inputs (the VSGP paper's choice).
    Kmeans,
}

/// Where the pseudo-inputs start.
#[derive(Clone, Debug, PartialEq)]
pub enum PseudoInit {
    /// Drawn from the data.
    Sample(InitMethod),
    /// Given positions (standardised units, M x D); further restarts, if
    /// any, are drawn from the data.
    Given(DMatrix<f64>),
}

impl From<InitMethod> for PseudoInit {
    fn from(method: InitMethod) -> Self {
        PseudoInit::Sample(method)
    }
}

/// Where the kernel hyperparameters start (`sgp fit --init-hyper`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum HyperInit {
    /// From the data's scales (see [`crate::fit::init::default_hyperparameters`]).
    #[value(name = "scales")]
    DataScales,
    /// From an exact GP fitted to a random subset of at most 500 rows.
    #[value(name = "exact")]
    ExactSubset,
}

/// A parameter struct that passed its `check` against a data set. Only
/// the `check` methods make one, so a fitting procedure that takes a
/// `Checked` never sees invalid settings.
#[derive(Debug)]
pub struct Checked<'p, P>(&'p P);

impl<P> Deref for Checked<'_, P> {
    type Target = P;
    fn deref(&self) -> &P {
        self.0
    }
}

/// Settings of the exact GP.
#[derive(Clone, Debug, PartialEq)]
pub struct ExactParams {
    /// Largest number of rows it is fitted on (a random subset if more).
    pub max_points: usize,
    /// Seed of the subset.
    pub seed: u64,
    /// Optimiser settings.
    pub optimiser: OptimiseOptions,
    /// The covariance function (`--kernel`): squared exponential or Matérn.
    pub kernel: Kernel,
}

impl Default for ExactParams {
    fn default() -> Self {
        ExactParams {
            max_points: 1000,
            seed: 0,
            optimiser: default_optimiser(),
            kernel: Kernel::SquaredExponential,
        }
    }
}

impl ExactParams {
    /// Validates the settings against `data`.
    ///
    /// # Errors
    /// [`Error::BadInput`] naming the offending setting.
    pub fn check(&self, data: &Dataset) -> Result<Checked<'_, Self>> {
        self.optimiser.validate()?;
        check_max_points(self.max_points)?;
        data.require_rows(2, "a Gaussian process")?;
        Ok(Checked(self))
    }
}

/// Default number of starts of a sparse fit. Chosen on the benchmark suite
/// (README, "Default settings"): over nine data sets, four starts (k-means
/// first) gave the best or nearly the best test NLPD at M = 10 and 30 for
/// both objectives, where one start lost up to 0.2 nats on some sets, for
/// four screening runs of at most [`spgp::MAX_SCREEN_ITER`] iterations
/// beside the final run.
pub const DEFAULT_RESTARTS: usize = 4;

/// The most starts a fit takes: each is a screening run, and more than a
/// few dozen never found a better optimum; a typo of `--restarts` must not
/// become a fit that never ends.
pub const MAX_RESTARTS: usize = 1000;

/// Default cap on a sparse fit's final run (and each of VSGP's and
/// SPGP+HS's two stages), and on an exact GP's run. Most fits stop earlier,
/// on [`DEFAULT_STALL`]; the cap bounds the time of those that keep
/// creeping down a long valley (on the peer benchmark's 10,000 x 8 ridge
/// set every run reaches it, still gaining about 0.004 nats per row every
/// 50 iterations).
pub const DEFAULT_MAX_ITER: u64 = 500;

/// Default stall test of sparse, exact and GPLasso fits (not the IVM's
/// hyperparameter runs): stop once the training objective fell by less
/// than 0.002 nats per row over 50 iterations.
///
/// Chosen on the peer benchmark's ten sets, three seeds each, against the
/// earlier fixed 200 iterations: mean test NLPD 0.024 -> 0.013, equal or
/// better on eight sets. The 10,000 x 8 ridge set kept improving (0.303 ->
/// 0.210) while the small sets stopped after 50 to 250 iterations, before
/// FITC's late, noise-shrinking steps (heteroscedastic: 1.314 -> 1.227);
/// one-of-eight lost 0.10 (one seed's start stopped on a plateau). Half the
/// tolerance (0.001) changed the mean by 0.001 for a quarter more time.
pub const DEFAULT_STALL: Stall = Stall {
    window: 50,
    per_row: 0.002,
};

/// Settings of a sparse fit over pseudo-inputs (SPGP).
#[derive(Clone, Debug, PartialEq)]
pub struct SparseParams {
    /// Number of pseudo-inputs M.
    pub m: usize,
    /// Seed for every random choice: same data, same seed, same model.
    pub seed: u64,
    /// Objective: FITC (SPGP's) or VFE (Titsias' bound).
    pub approximation: Approximation,
    /// Number of starts; the one with the lowest training objective after
    /// a short screening run is optimised to the end (see [`spgp`]).
    pub restarts: usize,
    /// Optimiser settings; `max_iter` is the budget of the final run.
    pub optimiser: OptimiseOptions,
    /// Where the first start's pseudo-inputs come from; further starts
    /// alternate k-means and random subsets with other seeds.
    pub pseudo_init: PseudoInit,
    /// Where the hyperparameters start.
    pub hyper_init: HyperInit,
    /// Rows of the exact GP behind [`HyperInit::ExactSubset`] (at most 500
    /// are used).
    pub max_points: usize,
    /// On small data ([`held_out::applies`]), choose by NLPD on held-out
    /// rows: SPGP between `approximation` and the other objective, SPGP+HS,
    /// VSGP and SPGP+DR between themselves and plain SPGP (other procedures
    /// ignore it). The procedure asked for is kept unless the other clearly
    /// wins.
    pub held_out_choice: bool,
    /// The covariance function (`--kernel`): squared exponential or Matérn.
    pub kernel: Kernel,
}

impl Default for SparseParams {
    fn default() -> Self {
        SparseParams {
            m: 20,
            seed: 0,
            approximation: Approximation::Fitc,
            restarts: DEFAULT_RESTARTS,
            optimiser: default_optimiser(),
            pseudo_init: PseudoInit::Sample(InitMethod::Kmeans),
            hyper_init: HyperInit::DataScales,
            max_points: 1000,
            held_out_choice: true,
            kernel: Kernel::SquaredExponential,
        }
    }
}

impl SparseParams {
    /// Validates the settings against `data`.
    ///
    /// # Errors
    /// [`Error::BadInput`] naming the offending setting.
    pub fn check(&self, data: &Dataset) -> Result<Checked<'_, Self>> {
        self.optimiser.validate()?;
        check_max_points(self.max_points)?;
        data.require_rows(2, "a Gaussian process")?;
        if self.m == 0 {
            return Err(Error::BadInput("--m must be at least 1".into()));
        }
        data.require_rows(self.m, "pseudo-inputs (--m)")?;
        if self.restarts == 0 {
            return Err(Error::BadInput("--restarts must be at least 1".into()));
        }
        if self.restarts > MAX_RESTARTS {
            return Err(Error::BadInput(format!(
                "--restarts {} is more starts than a fit takes (at most {MAX_RESTARTS})",
                self.restarts
            )));
        }
        if let PseudoInit::Given(z) = &self.pseudo_init {
            if z.shape() != (self.m, data.n_inputs()) {
                return Err(Error::BadInput(format!(
                    "given pseudo-inputs are {}x{}, expected {}x{}",
                    z.nrows(),
                    z.ncols(),
                    self.m,
                    data.n_inputs()
                )));
            }
        }
        Ok(Checked(self))
    }

    /// Optimiser iterations the fit may use in all: the screening runs of
    /// every start plus the final run.
    pub fn iteration_budget(&self) -> u64 {
        spgp::iteration_budget(self)
    }
}

pub(crate) fn default_optimiser() -> OptimiseOptions {
    OptimiseOptions {
        max_iter: DEFAULT_MAX_ITER,
        stall: Some(DEFAULT_STALL),
        ..OptimiseOptions::default()
    }
}

pub(crate) fn check_max_points(max_points: usize) -> Result<()> {
    if max_points < 2 {
        return Err(Error::BadInput("--max-points must be at least 2".into()));
    }
    // The exported exact GP has one basis function per row, and the host's
    // runtime check holds at most 4096 (crate::export::device).
    if max_points > MAX_EXACT_POINTS {
        return Err(Error::BadInput(format!(
            "--max-points {max_points} is too large: an exact GP is exported with one basis \
             function per row, at most {MAX_EXACT_POINTS}"
        )));
    }
    Ok(())
}

/// What to fit: one variant per procedure, each with its own settings.
#[derive(Clone, Debug, PartialEq)]
pub enum FitParams {
    /// The exact GP.
    Exact(ExactParams),
    /// SPGP.
    Spgp(SparseParams),
    /// VSGP (same settings; `optimiser.max_iter` is the budget of each of
    /// its two stages).
    Vsgp(SparseParams),
    /// SPGP+HS (same settings; `optimiser.max_iter` is the budget of each
    /// of its two stages).
    SpgpHs(SparseParams),
    /// SPGP+DR.
    SpgpDr(ProjectedParams),
    /// PCA to G dims, then SPGP.
    SpgpPca(ProjectedParams),
    /// GPLasso.
    Gplasso(gplasso::GplassoParams),
    /// IVM.
    Ivm(ivm::IvmParams),
    /// SVGP classifier.
    Svgp(svgp::SvgpParams),
}

impl FitParams {
    /// The covariance function the fit uses.
    pub fn kernel(&self) -> Kernel {
        match self {
            FitParams::Exact(p) => p.kernel,
            FitParams::Spgp(p) | FitParams::Vsgp(p) | FitParams::SpgpHs(p) => p.kernel,
            FitParams::SpgpDr(p) | FitParams::SpgpPca(p) => p.sparse.kernel,
            FitParams::Gplasso(p) => p.kernel,
            FitParams::Ivm(p) => p.kernel,
            FitParams::Svgp(p) => p.kernel,
        }
    }

    /// Sets the covariance function (`sgp fit --kernel`, Python
    /// `kernel=`); a family that cannot use it refuses it when it fits.
    pub fn set_kernel(&mut self, kernel: Kernel) {
        match self {
            FitParams::Exact(p) => p.kernel = kernel,
            FitParams::Spgp(p) | FitParams::Vsgp(p) | FitParams::SpgpHs(p) => p.kernel = kernel,
            FitParams::SpgpDr(p) | FitParams::SpgpPca(p) => p.sparse.kernel = kernel,
            FitParams::Gplasso(p) => p.kernel = kernel,
            FitParams::Ivm(p) => p.kernel = kernel,
            FitParams::Svgp(p) => p.kernel = kernel,
        }
    }

    /// The settings of `sgp fit --model METHOD --m M --seed SEED` (and
    /// `--dim DIM` for a projected method) with every other flag at its
    /// default. `m` is ignored by the exact GP and `dim` by unprojected
    /// methods.
    pub fn defaults(method: Method, m: usize, dim: usize, seed: u64) -> FitParams {
        let sparse = SparseParams {
            m,
            seed,
            ..SparseParams::default()
        };
        match method {
            Method::Exact => FitParams::Exact(ExactParams {
                seed,
                ..ExactParams::default()
            }),
            Method::Spgp => FitParams::Spgp(sparse),
            Method::Vsgp => FitParams::Vsgp(sparse),
            Method::SpgpHs => FitParams::SpgpHs(sparse),
            Method::SpgpDr => FitParams::SpgpDr(ProjectedParams { sparse, dim }),
            Method::SpgpPca => FitParams::SpgpPca(ProjectedParams { sparse, dim }),
            Method::Gplasso => FitParams::Gplasso(gplasso::GplassoParams {
                m,
                seed,
                ..gplasso::GplassoParams::default()
            }),
            Method::Ivm => FitParams::Ivm(ivm::IvmParams {
                m,
                seed,
                ..ivm::IvmParams::default()
            }),
            Method::Svgp => FitParams::Svgp(svgp::SvgpParams {
                m,
                seed,
                ..svgp::SvgpParams::default()
            }),
        }
    }

    /// The optimiser settings of the procedure (of its final run).
    pub fn optimiser_mut(&mut self) -> &mut OptimiseOptions {
        match self {
            FitParams::Exact(p) => &mut p.optimiser,
            FitParams::Spgp(p) | FitParams::Vsgp(p) | FitParams::SpgpHs(p) => &mut p.optimiser,
            FitParams::SpgpDr(p) | FitParams::SpgpPca(p) => &mut p.sparse.optimiser,
            FitParams::Gplasso(p) => &mut p.optimiser,
            FitParams::Ivm(p) => &mut p.optimiser,
            FitParams::Svgp(p) => &mut p.optimiser,
        }
    }

    /// The procedure these settings are for.
    pub fn method(&self) -> Method {
        match self {
            FitParams::Exact(_) => Method::Exact,
            FitParams::Spgp(_) => Method::Spgp,
            FitParams::Vsgp(_) => Method::Vsgp,
            FitParams::SpgpHs(_) => Method::SpgpHs,
            FitParams::SpgpDr(_) => Method::SpgpDr,
            FitParams::SpgpPca(_) => Method::SpgpPca,
            FitParams::Gplasso(_) => Method::Gplasso,
            FitParams::Ivm(_) => Method::Ivm,
            FitParams::Svgp(_) => Method::Svgp,
        }
    }

    /// The pseudo-input settings of a sparse procedure.
    pub fn sparse_mut(&mut self) -> Option<&mut SparseParams> {
        match self {
            FitParams::Exact(_) | FitParams::Gplasso(_) | FitParams::Ivm(_) => None,
            FitParams::Svgp(_) => None,
            FitParams::Spgp(p) | FitParams::Vsgp(p) | FitParams::SpgpHs(p) => Some(p),
            FitParams::SpgpDr(p) | FitParams::SpgpPca(p) => Some(&mut p.sparse),
        }
    }

    /// The same settings for the data without the inputs `ignored`: given
    /// pseudo-inputs lose those columns.
    fn without_inputs(&self, ignored: &[usize]) -> FitParams {
        let mut params = self.clone();
        if let Some(SparseParams {
            pseudo_init: PseudoInit::Given(z),
            ..
        }) = params.sparse_mut()
        {
            let keep: Vec<usize> = (0..z.ncols()).filter(|j| !ignored.contains(j)).collect();
            *z = z.select_columns(&keep);
        }
        params
    }

    /// Optimiser iterations the fit may use in all (for progress bars).
    pub fn iteration_budget(&self) -> u64 {
        match self {
            FitParams::Exact(p) => p.optimiser.max_iter,
            FitParams::Spgp(p) => p.iteration_budget(),
            FitParams::Vsgp(p) => vsgp::iteration_budget(p),
            FitParams::SpgpHs(p) => spgp_hs::iteration_budget(p),
            FitParams::SpgpDr(p) | FitParams::SpgpPca(p) => p.sparse.iteration_budget(),
            FitParams::Gplasso(p) => gplasso::iteration_budget(p),
            FitParams::Ivm(p) => p.iteration_budget(),
            FitParams::Svgp(p) => p.iteration_budget(),
        }
    }
}

/// How the gradient optimiser went (absent for procedures that do not
/// optimise by gradient).
#[derive(Clone, Debug, Serialize)]
pub struct OptimiserReport {
    /// Objective at the start of the final run (standardised data).
    pub initial_nlml: f64,
    /// Iterations of the final run.
    pub iterations: u64,
    /// The final run's iteration budget.
    pub max_iter: u64,
    /// Objective evaluations of the final run.
    pub evaluations: u64,
    /// Why the final run stopped.
    pub stop_reason: String,
    /// The final run stopped on its iteration budget, not on convergence:
    /// more iterations may still improve the fit.
    pub budget_exhausted: bool,
}

impl OptimiserReport {
    fn new(run: &OptimiseReport, max_iter: u64) -> Self {
        OptimiserReport {
            initial_nlml: run.initial_value,
            iterations: run.iterations,
            max_iter,
            evaluations: run.evaluations,
            stop_reason: if run.message.is_empty() {
                format!("{:?}", run.status)
            } else {
                format!("{:?}: {}", run.status, run.message)
            },
            budget_exhausted: run.status == OptimiseStatus::MaxIterations,
        }
    }
}

/// One start of a restarted fit and where its screening run ended.
#[derive(Clone, Debug, Serialize)]
pub struct StartReport {
    /// How the start's pseudo-inputs were drawn, e.g. `kmeans (seed 3)`.
    pub init: String,
    /// Training objective after the screening run, on the rows it saw (a
    /// subset on large data: see [`spgp::screen_rows`]); after the full
    /// run where the start is chosen on validation rows (a streamed fit).
    pub nlml: f64,
}

/// A model's kernel hyperparameters in raw units, for people.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hyperparameters {
    /// Length scales in raw input units.
    pub lengthscales: Vec<f64>,
    /// Signal variance in raw target units.
    pub signal_variance: f64,
    /// Noise variance in raw target units.
    pub noise_variance: f64,
    /// The optimum sits on the noise floor (FITC's known tendency).
    pub noise_on_floor: bool,
    /// The covariance function's name (`se`, `matern12`, `matern32`,
    /// `matern52`).
    pub kernel: &'static str,
}

impl Hyperparameters {
    /// `kern` (standardised units) through the data's transform.
    pub fn new(kern: &KernelParams, transform: &crate::data::Standardisation) -> Self {
        Hyperparameters {
            lengthscales: kern
                .lengthscales()
                .iter()
                .zip(&transform.x_scale)
                .map(|(l, s)| l * s)
                .collect(),
            signal_variance: transform.unapply_var(kern.signal_var()),
            noise_variance: transform.unapply_var(kern.noise_var()),
            noise_on_floor: kern.noise_on_floor(),
            kernel: kern.kernel.name(),
        }
    }
}

/// Minimum, median and maximum over the basis functions of one quantity:
/// one input's width as a length scale in raw input units (VSGP), or the
/// pseudo-inputs' uncertainties `h_m` in raw target variance units (HS, in
/// the fit report).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct WidthSpread {
    /// Narrowest basis function.
    pub min: f64,
    /// Median (mean of the two middle values for an even M).
    pub median: f64,
    /// Widest basis function.
    pub max: f64,
}

impl WidthSpread {
    /// The spread of `values` (not empty, no NaN).
    pub(crate) fn of(mut values: Vec<f64>) -> Self {
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let median = if n % 2 == 1 {
            values[n / 2]
        } else {
            0.5 * (values[n / 2 - 1] + values[n / 2])
        };
        WidthSpread {
            min: values[0],
            median,
            max: values[n - 1],
        }
    }
}

/// How a fit went: what `sgp fit` prints (`--json`: this, serialised).
#[derive(Clone, Debug, Serialize)]
pub struct FitReport {
    /// The procedure.
    pub method: Method,
    /// The objective of a sparse fit.
    pub approximation: Option<Approximation>,
    /// Training rows used.
    pub rows: usize,
    /// Training objective (NLML, or VFE's bound on it) at the returned
    /// parameters, standardised units.
    pub nlml: f64,
    /// Wall time of the whole fit, restarts included, in seconds.
    pub seconds: f64,
    /// Names of the inputs the model uses, in the order of `lengthscales`
    /// (the [`Self::ignored_inputs`] are left out).
    pub inputs: Vec<String>,
    /// A projected model's projection (SPGP+DR, PCA), instead of length
    /// scales (`lengthscales` is then empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projection: Option<ProjectionReport>,
    /// Inputs constant in the training data, which the model ignores.
    pub ignored_inputs: Vec<String>,
    /// The kernel hyperparameters of the exported model.
    #[serde(flatten)]
    pub hyper: Hyperparameters,
    /// How many times a Cholesky needed more jitter in the final model.
    pub jitter_escalations: u32,
    /// The final gradient run.
    pub optimiser: Option<OptimiserReport>,
    /// Every start of a restarted fit, in the order they were tried (empty
    /// for a single start); the lowest `nlml` was continued.
    pub starts: Vec<StartReport>,
    /// SPGP+HS: min / median / max of the pseudo-inputs' uncertainties
    /// `h_m`, in raw target variance units (absent for other models).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uncertainties: Option<WidthSpread>,
    /// The held-out choice of a small-data fit, if one was made
    /// ([`held_out`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_out: Option<held_out::HeldOutChoice>,
    /// GPLasso's selection: rows, rank, path (GPLasso only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gplasso: Option<gplasso::GplassoReport>,
    /// IVM's active set, bias and rounds (IVM only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ivm: Option<ivm::IvmReport>,
    /// A fit on a growing subset, conditioned on every row in a streamed
    /// pass ([`streamed`]): its stages and pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streamed: Option<streamed::StreamReport>,
}

impl FitReport {
    fn new(
        method: Method,
        data: &Dataset,
        rows: usize,
        kern: &KernelParams,
        nlml: f64,
        jitter_escalations: u32,
    ) -> Self {
        FitReport {
            method,
            approximation: None,
            rows,
            nlml,
            seconds: 0.0,
            inputs: data.input_names.clone(),
            hyper: Hyperparameters::new(kern, &data.transform),
            jitter_escalations,
            ignored_inputs: Vec::new(),
            projection: None,
            optimiser: None,
            starts: Vec::new(),
            uncertainties: None,
            held_out: None,
            gplasso: None,
            ivm: None,
            streamed: None,
        }
    }
}

/// Recomputes a fitted model with another jitter policy: the runtime form,
/// its training objective and its hyperparameters, after `max_iter`
/// iterations of optimisation from the fitted parameters (0: the posterior
/// of the fitted parameters alone). Built by each procedure around its own
/// feature type and data.
pub(crate) type Rebuild =
    Box<dyn Fn(JitterPolicy, u64) -> Result<(RuntimeForm, f64, Hyperparameters)> + Send + Sync>;

/// A fitted model recomputed by [`Fitted::with_jitter`].
#[derive(Clone, Debug)]
pub struct Rebuilt {
    /// The model.
    pub model: TrainedModel,
    /// Its training objective.
    pub nlml: f64,
    /// Its hyperparameters (raw units).
    pub hyper: Hyperparameters,
}

/// A fitted model, its report, and how to rebuild it.
pub struct Fitted {
    /// The model in runtime form.
    pub model: TrainedModel,
    /// How the fit went.
    pub report: FitReport,
    /// The relative jitter the fit used.
    pub(crate) jitter: f64,
    pub(crate) rebuild: Rebuild,
    /// How the model takes back the constant inputs it was fitted without.
    expansion: Option<Expansion>,
}

impl std::fmt::Debug for Fitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fitted")
            .field("model", &self.model)
            .field("report", &self.report)
            .field("jitter", &self.jitter)
            .finish_non_exhaustive()
    }
}

/// Constant inputs are left out of a fit; the fitted model is then extended
/// to take every input and ignore those
/// ([`crate::model::features::RuntimeBasis::with_ignored_inputs`]), so that on the
/// device their value, whatever it is, does not change the prediction.
#[derive(Clone, Debug)]
struct Expansion {
    ignored: Vec<usize>,
    transform: crate::data::Standardisation,
    input_names: Vec<String>,
}

impl Expansion {
    /// The expansion back to every input of `data`, ignoring its constant
    /// inputs.
    fn for_data(data: &Dataset) -> Self {
        Expansion {
            ignored: data.constant_inputs.clone(),
            transform: data.transform.clone(),
            input_names: data.input_names.clone(),
        }
    }

    /// Extends `fitted`'s model (and every model it rebuilds) to every
    /// input, and names the ignored ones in its report.
    fn attach(self, fitted: &mut Fitted) {
        self.apply(&mut fitted.model);
        fitted.report.ignored_inputs = self
            .ignored
            .iter()
            .filter_map(|&j| self.input_names.get(j).cloned())
            .collect();
        fitted.expansion = Some(self);
    }

    fn apply(&self, model: &mut TrainedModel) {
        model.form.basis = model
            .form
            .basis
            .with_ignored_inputs(self.input_names.len(), &self.ignored);
        model.transform = self.transform.clone();
        model.input_names = self.input_names.clone();
    }
}

impl Fitted {
    pub(crate) fn new(
        model: TrainedModel,
        report: FitReport,
        jitter: f64,
        rebuild: Rebuild,
    ) -> Self {
        Fitted {
            model,
            report,
            jitter,
            rebuild,
            expansion: None,
        }
    }

    /// The fitted model recomputed with the relative jitter `eps` (times
    /// `s2`, see [`crate::numerics::linalg`]) on the diagonal that is factorised,
    /// after `reoptimise` iterations that let the other parameters adapt to
    /// it (0: the same parameters): the model and its training objective. A
    /// larger jitter bounds the weights and the factors' condition, which is
    /// what an f32 export that fails its check needs; the objective says
    /// what that costs.
    ///
    /// # Errors
    /// If the factorisation fails even with that jitter.
    pub fn with_jitter(&self, eps: f64, reoptimise: u64) -> Result<Rebuilt> {
        let default = JitterPolicy::default();
        let policy = JitterPolicy {
            initial: eps,
            max: default.max.max(eps),
            ..default
        };
        let (form, nlml, hyper) = (self.rebuild)(policy, reoptimise)?;
        let mut model = self.model.clone();
        model.form = form;
        if let Some(expansion) = &self.expansion {
            expansion.apply(&mut model);
        }
        Ok(Rebuilt { model, nlml, hyper })
    }

    /// The relative jitter the fit used.
    pub fn jitter(&self) -> f64 {
        self.jitter
    }
}

/// Fits the model `params` asks for. `progress` is called once per
/// optimiser iteration, with iterations counted over every run of the fit
/// (see [`FitParams::iteration_budget`]).
///
/// Constant inputs ([`Dataset::constant_inputs`]) are left out of the fit
/// and the model is then extended to take every input and ignore those
/// ([`crate::model::features::RuntimeBasis::with_ignored_inputs`]): on the device
/// their value, whatever it is, does not change the prediction.
///
/// # Errors
/// [`Error::BadInput`] for parameters that do not fit the data, or a
/// numerical failure that jitter escalation could not cure.
pub fn fit(
    data: &Dataset,
    params: &FitParams,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fitted> {
    let started = std::time::Instant::now();
    let ignored = &data.constant_inputs;
    let reduced;
    let (used, params) = if ignored.is_empty() {
        (data, Cow::Borrowed(params))
    } else {
        reduced = data.without_inputs(ignored)?;
        (&reduced, Cow::Owned(params.without_inputs(ignored)))
    };
    let binary = matches!(data.target, crate::data::TargetKind::Binary { .. });
    if binary && !params.method().classifies() {
        return Err(Error::BadInput(format!(
            "{}: a binary target (classification) can only be fitted with --model svgp, ivm or exact",
            data.source
        )));
    }
    let mut fitted = match params.as_ref() {
        FitParams::Exact(p) if binary => {
            exact_classifier::fit_exact_classifier(used, &p.check(used)?, progress)?
        }
        FitParams::Exact(p) => exact::fit_exact(used, &p.check(used)?, progress)?,
        FitParams::Spgp(p) => spgp::fit_spgp(used, &p.check(used)?, progress)?,
        FitParams::Vsgp(p) => vsgp::fit_vsgp(used, &p.check(used)?, progress)?,
        FitParams::SpgpHs(p) => spgp_hs::fit_spgp_hs(used, &p.check(used)?, progress)?,
        FitParams::SpgpDr(p) => dr::fit_dr(used, &p.check(used)?, progress)?,
        FitParams::SpgpPca(p) => dr::fit_pca(used, &p.check(used)?, progress)?,
        FitParams::Gplasso(p) => gplasso::fit_gplasso(used, &p.check(used)?, progress)?,
        FitParams::Ivm(p) => ivm::fit_ivm(used, &p.check(used)?, progress)?,
        FitParams::Svgp(p) => svgp::fit_svgp(used, &p.check(used)?, progress)?,
    };
    if !ignored.is_empty() {
        Expansion::for_data(data).attach(&mut fitted);
    }
    fitted.report.seconds = started.elapsed().as_secs_f64();
    Ok(fitted)
}

/// The model `params` fits on `data`, without progress: how a held-out
/// choice fits its candidates ([`held_out`]).
pub(crate) fn refit(data: &Dataset, params: &FitParams) -> Result<TrainedModel> {
    fit(data, params, &mut |_| {}).map(|fitted| fitted.model)
}

/// Starting kernel hyperparameters from the data's scales, for `kernel`.
pub(crate) fn data_scale_kernel(data: &Dataset, kernel: Kernel) -> Result<KernelParams> {
    let h = crate::fit::init::default_hyperparameters(&data.x, data.y.as_slice());
    let l: Vec<f64> = h.log_lengthscales.iter().map(|v| v.exp()).collect();
    Ok(KernelParams::new(&l, h.log_signal_var.exp(), h.log_noise_var.exp())?.with_kernel(kernel))
}
