//! What to fit: the families' settings ([`FitParams`]), each validated
//! against the data before anything is fitted (`check`: a [`Checked`]
//! value is the only thing a family accepts).

use std::ops::Deref;

use nalgebra::DMatrix;
use serde::Serialize;
use sgp_runtime::Kernel;

pub use super::dr::ProjectedParams;
use super::sparse::VarianceSharing;
use super::{gplasso, ivm, restarts, spgp_hs, svgp, vsgp};
use crate::data::Dataset;
use crate::model::inference::Approximation;
use crate::numerics::optimise::{OptimiseOptions, Stall};
use crate::{Error, Result};

/// Largest number of rows an exact GP may be fitted on.
pub(crate) const MAX_EXACT_POINTS: usize = 4096;

/// Basis functions of a fit when `--m` is not given (at most the rows).
pub(crate) const DEFAULT_M: usize = 20;

/// Seed of every random choice when `--seed` is not given (`sgp fit`, `sgp
/// sweep`, Python's `random_state`).
pub const DEFAULT_SEED: u64 = 0;

/// Rows an exact GP is fitted on at most when `--max-points` is not given.
pub(crate) const DEFAULT_MAX_POINTS: usize = 1000;

named_enum! {
    /// Which model to fit (`sgp fit --model`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum Method {
        /// Exact GP on (a random subset of) the data.
        Exact = "exact",
        /// SPGP: FITC or VFE with M free pseudo-inputs.
        Spgp = "spgp",
        /// VSGP: SPGP, then each basis function's widths freed (multiscale).
        Vsgp = "vsgp",
        /// SPGP+HS: SPGP, then each pseudo-input's uncertainty freed
        /// (input-dependent noise).
        SpgpHs = "spgp-hs",
        /// SPGP+DR: a learned G x D projection, pseudo-inputs in G dims.
        SpgpDr = "spgp-dr",
        /// PCA to G dims (fixed), then SPGP in that space.
        SpgpPca = "spgp-pca",
        /// GPLasso: M training inputs chosen by a lasso path, then the
        /// hyperparameters re-optimised with them as fixed pseudo-inputs.
        Gplasso = "gplasso",
        /// IVM: an active set of M training inputs chosen greedily by
        /// differential entropy; a probit classifier or a sparse regression.
        Ivm = "ivm",
        /// SVGP: a sparse variational probit classifier, M learned
        /// inducing inputs and ARD length scales (the default classifier).
        Svgp = "svgp",
    }
}

impl Method {
    /// Whether the model can be fitted to a binary target (a probit
    /// classifier): the sparse variational classifier, the IVM, and the
    /// exact GP as the Laplace classifier.
    pub fn classifies(self) -> bool {
        self.capabilities().classifies
    }

    /// Whether the model projects its inputs to `--dim` G dimensions.
    pub fn is_projected(self) -> bool {
        matches!(self, Method::SpgpDr | Method::SpgpPca)
    }
}

named_enum! {
    /// How pseudo-inputs are drawn from the data (`sgp fit --init`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum InitMethod {
        /// A random subset of the training inputs (the SPGP paper's choice).
        Random = "random",
        /// k-means centres of the training inputs (the VSGP paper's choice).
        Kmeans = "kmeans",
        /// The rows a greedy conditional-variance rule picks under the
        /// data-scale kernel (a pivoted Cholesky, Burt et al. 2020).
        Greedy = "greedy",
    }
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

named_enum! {
    /// Where the kernel hyperparameters start (`sgp fit --init-hyper`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum HyperInit {
        /// From the data's scales (see `crate::fit::init::default_hyperparameters`).
        DataScales = "scales",
        /// From an exact GP fitted to a random subset of at most 500 rows.
        ExactSubset = "exact",
    }
}

/// A parameter struct that passed its `check` against a data set. Only
/// the `check` methods make one, so a fitting procedure that takes a
/// `Checked` never sees invalid settings.
#[derive(Debug)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct Checked<'p, P>(pub(crate) &'p P);

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
    #[cfg(feature = "internals")]
    pub optimiser: OptimiseOptions,
    #[cfg(not(feature = "internals"))]
    pub(crate) optimiser: OptimiseOptions,
    /// The covariance function (`--kernel`): squared exponential or Matérn.
    pub kernel: Kernel,
}

impl Default for ExactParams {
    fn default() -> Self {
        ExactParams {
            max_points: DEFAULT_MAX_POINTS,
            seed: DEFAULT_SEED,
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
    #[cfg_attr(feature = "internals", visibility::make(pub))]
    pub(crate) fn check(&self, data: &Dataset) -> Result<Checked<'_, Self>> {
        self.optimiser.validate()?;
        check_max_points(self.max_points)?;
        data.require_rows(2, "a Gaussian process")?;
        Ok(Checked(self))
    }
}

/// Default number of starts of a sparse fit (docs/src/benchmarks.md,
/// "Default settings": one start lost up to 0.2 nats on some suite sets).
pub(crate) const DEFAULT_RESTARTS: usize = 4;

/// The most starts a fit takes: more than a few dozen never found a better
/// optimum, and a typo of `--restarts` must not become a fit that never ends.
pub(crate) const MAX_RESTARTS: usize = 1000;

/// Default cap on a final optimiser run (and each of VSGP's three runs and
/// SPGP+HS's two stages); most fits stop earlier, on [`DEFAULT_STALL`].
pub(crate) const DEFAULT_MAX_ITER: u64 = 500;

/// Default stall test: stop once the training objective fell by less than
/// 0.002 nats per row over 50 iterations (docs/src/benchmarks.md, "Default
/// settings").
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
    /// a short screening run is optimised to the end (`restarts`).
    pub restarts: usize,
    /// Optimiser settings; `max_iter` is the budget of the final run.
    #[cfg(feature = "internals")]
    pub optimiser: OptimiseOptions,
    #[cfg(not(feature = "internals"))]
    pub(crate) optimiser: OptimiseOptions,
    /// Where the first start's pseudo-inputs come from; further starts
    /// alternate k-means and random subsets with other seeds (random first
    /// after a greedy start).
    pub pseudo_init: PseudoInit,
    /// Where the hyperparameters start.
    pub hyper_init: HyperInit,
    /// Rows of the exact GP behind [`HyperInit::ExactSubset`] (at most 500
    /// are used).
    pub max_points: usize,
    /// Whether several outputs share one variance factor.
    pub sharing: VarianceSharing,
    /// The covariance function (`--kernel`): squared exponential or Matérn.
    pub kernel: Kernel,
}

impl Default for SparseParams {
    fn default() -> Self {
        SparseParams {
            m: DEFAULT_M,
            seed: DEFAULT_SEED,
            approximation: Approximation::Fitc,
            restarts: DEFAULT_RESTARTS,
            optimiser: default_optimiser(),
            pseudo_init: PseudoInit::Sample(InitMethod::Kmeans),
            hyper_init: HyperInit::DataScales,
            max_points: DEFAULT_MAX_POINTS,
            sharing: VarianceSharing::Auto,
            kernel: Kernel::SquaredExponential,
        }
    }
}

impl SparseParams {
    /// Validates the settings against `data`.
    ///
    /// # Errors
    /// [`Error::BadInput`] naming the offending setting.
    #[cfg_attr(feature = "internals", visibility::make(pub))]
    pub(crate) fn check(&self, data: &Dataset) -> Result<Checked<'_, Self>> {
        self.optimiser.validate()?;
        check_max_points(self.max_points)?;
        data.require_rows(2, "a Gaussian process")?;
        check_m(self.m)?;
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
        restarts::iteration_budget(self)
    }
}

pub(crate) fn default_optimiser() -> OptimiseOptions {
    OptimiseOptions {
        max_iter: DEFAULT_MAX_ITER,
        stall: Some(DEFAULT_STALL),
        ..OptimiseOptions::default()
    }
}

/// Refuses `--m 0`: every family but the exact GP needs a basis function.
pub(crate) fn check_m(m: usize) -> Result<()> {
    if m == 0 {
        return Err(Error::BadInput("--m must be at least 1".into()));
    }
    Ok(())
}

pub(crate) fn check_max_points(max_points: usize) -> Result<()> {
    if max_points < 2 {
        return Err(Error::BadInput("--max-points must be at least 2".into()));
    }
    // The exported exact GP has one basis function per row, and the host's
    // runtime check holds at most 4096 (crate::model::device).
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
    /// its three runs: SPGP, and the widths from SPGP's and from twice the
    /// length scale).
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

    /// The same settings with the covariance function `kernel`.
    pub fn with_kernel(&self, kernel: Kernel) -> FitParams {
        let mut params = self.clone();
        match &mut params {
            FitParams::Exact(p) => p.kernel = kernel,
            FitParams::Spgp(p) | FitParams::Vsgp(p) | FitParams::SpgpHs(p) => p.kernel = kernel,
            FitParams::SpgpDr(p) | FitParams::SpgpPca(p) => p.sparse.kernel = kernel,
            FitParams::Gplasso(p) => p.kernel = kernel,
            FitParams::Ivm(p) => p.kernel = kernel,
            FitParams::Svgp(p) => p.kernel = kernel,
        }
        params
    }

    /// The optimiser settings of the procedure (of its final run).
    #[cfg_attr(feature = "internals", visibility::make(pub))]
    pub(crate) fn optimiser_mut(&mut self) -> &mut OptimiseOptions {
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

    /// The objective of a sparse family (`None`: the family has none).
    pub fn approximation(&self) -> Option<Approximation> {
        match self {
            FitParams::Spgp(p) | FitParams::Vsgp(p) | FitParams::SpgpHs(p) => Some(p.approximation),
            FitParams::SpgpDr(p) | FitParams::SpgpPca(p) => Some(p.sparse.approximation),
            FitParams::Gplasso(p) => Some(p.approximation),
            FitParams::Exact(_) | FitParams::Ivm(_) | FitParams::Svgp(_) => None,
        }
    }

    /// The same settings with the objective `approximation` (unchanged for
    /// a family without one).
    pub(crate) fn with_approximation(&self, approximation: Approximation) -> FitParams {
        let mut params = self.clone();
        match &mut params {
            FitParams::Gplasso(p) => p.approximation = approximation,
            other => {
                if let Some(p) = other.sparse_mut() {
                    p.approximation = approximation;
                }
            }
        }
        params
    }

    /// Basis functions the family fits (`None` for the exact GP, which has
    /// one per row).
    pub fn m(&self) -> Option<usize> {
        match self {
            FitParams::Exact(_) => None,
            FitParams::Spgp(p) | FitParams::Vsgp(p) | FitParams::SpgpHs(p) => Some(p.m),
            FitParams::SpgpDr(p) | FitParams::SpgpPca(p) => Some(p.sparse.m),
            FitParams::Gplasso(p) => Some(p.m),
            FitParams::Ivm(p) => Some(p.m),
            FitParams::Svgp(p) => Some(p.m),
        }
    }

    /// The seed of every random choice of the fit.
    pub fn seed(&self) -> u64 {
        match self {
            FitParams::Exact(p) => p.seed,
            FitParams::Spgp(p) | FitParams::Vsgp(p) | FitParams::SpgpHs(p) => p.seed,
            FitParams::SpgpDr(p) | FitParams::SpgpPca(p) => p.sparse.seed,
            FitParams::Gplasso(p) => p.seed,
            FitParams::Ivm(p) => p.seed,
            FitParams::Svgp(p) => p.seed,
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
    pub(crate) fn without_inputs(&self, ignored: &[usize]) -> FitParams {
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
