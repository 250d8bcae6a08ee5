//! One builder from user settings to a fit request: `sgp fit`'s flags and
//! the Python estimators' keywords are the fields of [`Options`] (`--max-iter`
//! is `max_iter`), each set from its value by the one table of settings
//! ([`Options::set`]), read by the same code, with the same defaults and the
//! same messages (Python shows `--flag` as `flag`). A field left `None` (or
//! `false`) is a setting not given: the family's default applies.
//!
//! [`Options::request`] makes the [`Request`] the choice layer fits: the
//! family named (or, with none, `auto` for a regression and `svgp` for a
//! classification), and which choices stay open. A setting given for a
//! family that does not read it is an error ([`settings`]); the task of the
//! target is decided in [`crate::fit::task`].

#[macro_use]
mod named;
pub mod settings;
pub mod streamed_file;
pub mod streamed_outputs;
pub mod update;

use crate::choose::{Asked, Request, AUTO};
use crate::data::multi_target::Outputs;
use crate::data::TargetKind;
use crate::fit::gplasso::{GplassoParams, GplassoRefit};
use crate::fit::ivm::{IvmParams, IvmPosterior};
use crate::fit::svgp::SvgpParams;
use crate::fit::{
    check_m, ExactParams, FitParams, HyperInit, InitMethod, Method, ProjectedParams, SparseParams,
    DEFAULT_STALL,
};
use crate::model::inference::Approximation;
use crate::numerics::optimise::Stall;
use crate::numerics::reproducible::reproducibly;
use crate::{Error, Result};
pub(crate) use named::parse_or;
pub use named::{parse, Named};

use crate::fit::task::Task;
use sgp_runtime::Kernel;

/// The family a classification fits, and `sgp sweep` sweeps, when none is
/// named: the variational classifier (as accurate as the IVM and faster).
pub(crate) const DEFAULT_CLASSIFIER: Method = Method::Svgp;

impl Task {
    /// The families `sgp sweep` compares for this task when `--models` is
    /// not given: the default classifier, or SPGP and VSGP.
    pub fn compared(self) -> Vec<Method> {
        match self {
            Task::Regression => vec![Method::Spgp, Method::Vsgp],
            Task::Classification => vec![DEFAULT_CLASSIFIER],
        }
    }
}

pub(crate) use crate::fit::DEFAULT_M;
pub use crate::fit::DEFAULT_SEED;

/// `--model`: one family, or the one that predicts held-out rows best.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelChoice {
    /// `auto`: the family that clearly beats SPGP on held-out rows, else
    /// SPGP ([`crate::choose`]).
    Auto,
    /// This family.
    Family(Method),
}

/// A family named, or `auto` (`None`).
impl From<Option<Method>> for ModelChoice {
    fn from(family: Option<Method>) -> Self {
        family.map_or(ModelChoice::Auto, ModelChoice::Family)
    }
}

impl ModelChoice {
    /// The choice named `name`: `auto` or a family's name.
    ///
    /// # Errors
    /// [`Error::BadInput`] listing the names there are.
    pub fn parse(name: &str) -> Result<Self> {
        Ok(parse_or::<Method>(name, "--model", AUTO)?.into())
    }
}

/// `--kernel`: one covariance function, or the one that predicts held-out
/// rows best.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelChoice {
    /// `auto`: the squared exponential unless a Matérn kernel clearly
    /// predicts held-out rows better (`crate::choose::kernel`).
    Auto,
    /// This kernel.
    Kernel(Kernel),
}

impl Named for KernelChoice {
    const ALL: &'static [Self] = &[
        KernelChoice::Auto,
        KernelChoice::Kernel(Kernel::SquaredExponential),
        KernelChoice::Kernel(Kernel::Matern12),
        KernelChoice::Kernel(Kernel::Matern32),
        KernelChoice::Kernel(Kernel::Matern52),
    ];

    fn name(self) -> &'static str {
        match self {
            KernelChoice::Auto => AUTO,
            KernelChoice::Kernel(k) => Named::name(k),
        }
    }

    fn help(self) -> &'static str {
        match self {
            KernelChoice::Auto => {
                "Each of these fitted and scored on held-out rows: se unless a Matérn kernel \
                 clearly predicts them better"
            }
            KernelChoice::Kernel(k) => Named::help(k),
        }
    }
}

/// The settings users give a fit; `None` and `false` are "not given". Each
/// field is the setting of its name (`max_iter`: `--max-iter`), declared
/// with its help and default in [`settings::SETTINGS`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    /// `--model`.
    pub model: Option<ModelChoice>,
    /// `--m`.
    pub m: Option<usize>,
    /// `--dim`.
    pub dim: Option<usize>,
    /// `--rank`.
    pub rank: Option<usize>,
    /// `--fixed-hyperparameters`.
    pub fixed_hyperparameters: bool,
    /// `--fixed-basis`.
    pub fixed_basis: bool,
    /// `--objective`.
    pub objective: Option<Approximation>,
    /// `--kernel`.
    pub kernel: Option<KernelChoice>,
    /// `--no-held-out-choice`.
    pub no_held_out_choice: bool,
    /// `--restarts`.
    pub restarts: Option<usize>,
    /// `--seed`.
    pub seed: Option<u64>,
    /// `--max-iter`.
    pub max_iter: Option<u64>,
    /// `--tol`.
    pub tol: Option<f64>,
    /// `--init`.
    pub init: Option<InitMethod>,
    /// `--init-hyper`.
    pub init_hyper: Option<HyperInit>,
    /// `--max-points`.
    pub max_points: Option<usize>,
    /// `--ivm-posterior`.
    pub ivm_posterior: Option<IvmPosterior>,
    /// `--updatable`.
    pub updatable: bool,
    /// `--reproducible`.
    pub reproducible: bool,
}

impl Options {
    /// Whether a Matérn kernel was asked for.
    fn matern(&self) -> bool {
        self.kernel_named() != Kernel::SquaredExponential
    }

    /// The kernel named, the squared exponential for none and for `auto`
    /// (whose choice is made above the family: [`crate::choose::kernel`]).
    fn kernel_named(&self) -> Kernel {
        match self.kernel {
            Some(KernelChoice::Kernel(k)) => k,
            Some(KernelChoice::Auto) | None => Kernel::SquaredExponential,
        }
    }

    /// Refuses a setting given (and any of `also`, the command line's own
    /// flags such as `--path`) that the family named does not read, for
    /// `task` if known ([`settings::check`]); with no family named, waits
    /// for [`Options::request`].
    ///
    /// # Errors
    /// [`Error::BadInput`] naming the setting and the families it applies
    /// to.
    pub fn check_applies(&self, task: Option<Task>, also: &[&str]) -> Result<()> {
        let Some(ModelChoice::Family(family)) = self.model else {
            return Ok(());
        };
        // These options decide for the settings they hold (`--kernel auto`
        // is no Matérn kernel); `also` adds the ones they do not.
        let mut given = self.given();
        let held = |f: &&str| settings::setting(f).is_some_and(|s| s.held());
        given.extend(also.iter().filter(|f| !held(f)));
        settings::check(&[family], task, &given)
    }

    /// What to fit to `data`: the family named, else `auto` for a
    /// regression of one output in memory (docs/src/model-families.md, "The
    /// default model") and `svgp` for a classification; `auto`'s candidates
    /// are the families that apply.
    ///
    /// # Errors
    /// [`Error::BadInput`] for settings that do not fit the data or the
    /// family.
    pub fn request(&self, data: &(impl Outputs + ?Sized)) -> Result<Request> {
        let outputs = data.outputs();
        let first = outputs
            .first()
            .ok_or_else(|| Error::BadInput("a fit needs at least one target".into()))?;
        let rows = first.n_rows();
        let classifier = first.target != TargetKind::Continuous;
        let model = self.model.unwrap_or(if classifier {
            ModelChoice::Family(DEFAULT_CLASSIFIER)
        } else {
            ModelChoice::Auto
        });
        let asked = match model {
            ModelChoice::Family(method) => Asked::Family(self.params(method, rows)?),
            ModelChoice::Auto if classifier => {
                Asked::Auto(vec![self.params(DEFAULT_CLASSIFIER, rows)?])
            }
            ModelChoice::Auto => {
                let mut families = vec![Method::Spgp, Method::Vsgp];
                if outputs.len() == 1 {
                    families.extend([Method::SpgpHs, Method::Gplasso]);
                }
                if self.dim.is_some() {
                    families.push(Method::SpgpDr);
                }
                // A Matérn kernel leaves out the families that refuse it.
                let takes = |m: &Method| !self.matern() || m.capabilities().se_only.is_none();
                let candidates = families
                    .into_iter()
                    .filter(takes)
                    .map(|m| self.params(m, rows))
                    .collect::<Result<_>>()?;
                Asked::Auto(candidates)
            }
        };
        let task = if classifier {
            Task::Classification
        } else {
            Task::Regression
        };
        settings::check(&asked.families(), Some(task), &self.given())?;
        if let (true, TargetKind::Classes { count }) = (self.updatable, first.target) {
            return Err(Error::BadInput(format!(
                "--updatable does not apply to a classification of {count} classes: their labels \
                 have no rank-one update on the device; a binary svgp classifier learns there"
            )));
        }
        Ok(Request {
            asked,
            held_out: !self.no_held_out_choice,
            choose_objective: self.objective.is_none(),
            choose_kernel: self.kernel == Some(KernelChoice::Auto),
        })
    }

    /// Runs `work` (a fit and its export) as asked: with `reproducible`, in
    /// the fixed order of `reproducibly`.
    ///
    /// # Errors
    /// `work`'s, or [`Error::Numerical`] if the fit's threads cannot start.
    pub fn run<R: Send>(&self, work: impl FnOnce() -> Result<R> + Send) -> Result<R> {
        if self.reproducible {
            reproducibly(work)?
        } else {
            work()
        }
    }

    /// `method`'s settings on data of `rows` rows (settings it does not
    /// read are left out: [`Options::request`] refuses them).
    ///
    /// # Errors
    /// [`Error::BadInput`] for settings that contradict each other, or one
    /// `method` needs and lacks.
    pub fn params(&self, method: Method, rows: usize) -> Result<FitParams> {
        self.check_gplasso(method)?;
        let dim = match (method.is_projected(), self.dim) {
            (true, Some(dim)) => dim,
            (true, None) => {
                return Err(Error::BadInput(format!(
                    "--model {} needs --dim G, the projected dimension",
                    method.name()
                )))
            }
            (false, _) => 0,
        };
        if method != Method::Exact {
            self.m.map_or(Ok(()), check_m)?;
        }
        let sparse = self.sparse(rows);
        let SparseParams {
            m, seed, kernel, ..
        } = sparse;
        let optimiser = sparse.optimiser.clone();
        Ok(match method {
            Method::Exact => FitParams::Exact(ExactParams {
                max_points: sparse.max_points,
                seed,
                optimiser,
                kernel,
            }),
            Method::Spgp => FitParams::Spgp(sparse),
            Method::Vsgp => FitParams::Vsgp(sparse),
            Method::SpgpHs => FitParams::SpgpHs(sparse),
            Method::SpgpDr => FitParams::SpgpDr(ProjectedParams { sparse, dim }),
            Method::SpgpPca => FitParams::SpgpPca(ProjectedParams { sparse, dim }),
            Method::Gplasso => FitParams::Gplasso(GplassoParams {
                m,
                rank: self.rank,
                max_points: sparse.max_points,
                seed,
                optimiser,
                refit: match (self.fixed_hyperparameters, self.fixed_basis) {
                    (true, _) => GplassoRefit::Nothing,
                    (false, true) => GplassoRefit::Hyperparameters,
                    (false, false) => GplassoRefit::Everything,
                },
                approximation: sparse.approximation,
                kernel,
                ..GplassoParams::default()
            }),
            Method::Ivm => {
                let defaults = IvmParams::default();
                let mut optimiser = defaults.optimiser.clone();
                if let Some(max_iter) = self.max_iter {
                    optimiser.max_iter = max_iter;
                }
                FitParams::Ivm(IvmParams {
                    m,
                    seed,
                    optimiser,
                    kernel_points: sparse.max_points,
                    posterior: self.ivm_posterior.unwrap_or_default(),
                    kernel,
                    ..defaults
                })
            }
            Method::Svgp => FitParams::Svgp(SvgpParams {
                m,
                seed,
                restarts: sparse.restarts,
                optimiser,
                pseudo_init: sparse.pseudo_init,
                kernel,
            }),
        })
    }

    /// Refuses gplasso's procedures given together, or with an objective
    /// they do not take.
    fn check_gplasso(&self, method: Method) -> Result<()> {
        if self.fixed_hyperparameters && self.fixed_basis {
            return Err(Error::BadInput(
                "--fixed-hyperparameters and --fixed-basis are two gplasso procedures: give one"
                    .into(),
            ));
        }
        let fixed = self.fixed_hyperparameters || self.fixed_basis;
        if method == Method::Gplasso && self.objective.is_some() && fixed {
            return Err(Error::BadInput(
                "--objective applies to gplasso's default fit: --fixed-hyperparameters and \
                 --fixed-basis keep FITC, the paper's variance"
                    .into(),
            ));
        }
        Ok(())
    }

    /// The pseudo-input settings on data of `rows` rows: those given, the
    /// defaults of [`SparseParams`] for the rest; every family's settings
    /// start from these.
    fn sparse(&self, rows: usize) -> SparseParams {
        let defaults = SparseParams::default();
        let mut optimiser = defaults.optimiser.clone();
        if let Some(max_iter) = self.max_iter {
            optimiser.max_iter = max_iter;
        }
        if let Some(per_row) = self.tol {
            // A tolerance of 0 never fires: the best value cannot rise.
            optimiser.stall = Some(Stall {
                per_row,
                ..DEFAULT_STALL
            });
        }
        SparseParams {
            m: self.m.unwrap_or(defaults.m.min(rows)),
            seed: self.seed.unwrap_or(defaults.seed),
            kernel: self.kernel_named(),
            approximation: self.objective.unwrap_or(defaults.approximation),
            restarts: self.restarts.unwrap_or(defaults.restarts),
            optimiser,
            pseudo_init: self.init.map_or(defaults.pseudo_init.clone(), Into::into),
            hyper_init: self.init_hyper.unwrap_or(defaults.hyper_init),
            max_points: self.max_points.unwrap_or(defaults.max_points),
            ..defaults
        }
    }

    /// `method`'s defaults with `m` basis functions (G = `dim` for a
    /// projected family) and `seed`: `sgp fit --model METHOD --m M --dim
    /// DIM --seed SEED`.
    ///
    /// # Errors
    /// As [`Options::params`].
    pub fn defaults(method: Method, m: usize, dim: usize, seed: u64) -> Result<FitParams> {
        let options = Options {
            m: Some(m),
            dim: method.is_projected().then_some(dim),
            seed: Some(seed),
            ..Options::default()
        };
        options.params(method, usize::MAX)
    }
}
