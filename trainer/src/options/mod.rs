//! One builder from user settings to a fit request: `sgp fit`'s flags and
//! the Python estimators' keywords are the fields of [`Options`] (`--max-iter`
//! is `max_iter`), read by the same code, with the same defaults and the
//! same messages (Python shows `--flag` as `flag`). A field left `None` (or
//! `false`) is a setting not given: the family's default applies.
//!
//! [`Options::request`] makes the [`Request`] the choice layer fits: the
//! family named (or, with none, `auto` for a regression and `svgp` for a
//! classification), and which choices stay open.

#[macro_use]
mod named;

use crate::choose::{Asked, Request, AUTO};
use crate::data::multi_target::Outputs;
use crate::data::TargetKind;
use crate::fit::gplasso::{GplassoParams, GplassoRefit};
use crate::fit::ivm::{IvmParams, IvmPosterior};
use crate::fit::svgp::SvgpParams;
use crate::fit::{
    default_optimiser, ExactParams, FitParams, HyperInit, InitMethod, Method, ProjectedParams,
    SparseParams, DEFAULT_STALL,
};
use crate::model::inference::Approximation;
use crate::numerics::optimise::Stall;
use crate::{Error, Result};
pub use named::{parse, Named};

/// Basis functions of a fit when `m` is not given (at most the rows).
pub const DEFAULT_M: usize = 20;

/// `--model`: one family, or the one that predicts held-out rows best.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelChoice {
    /// `auto`: the family that clearly beats SPGP on held-out rows, else
    /// SPGP ([`crate::choose`]).
    Auto,
    /// This family.
    Family(Method),
}

impl ModelChoice {
    /// The choice named `name`: `auto` or a family's name.
    ///
    /// # Errors
    /// [`Error::BadInput`] listing the names there are.
    pub fn parse(name: &str) -> Result<Self> {
        if name == AUTO {
            return Ok(ModelChoice::Auto);
        }
        parse::<Method>(name, "--model").map(ModelChoice::Family)
    }
}

/// The settings users give a fit; `None` and `false` are "not given".
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    /// `--model`.
    pub model: Option<ModelChoice>,
    /// `--m`: basis functions (default [`DEFAULT_M`], at most the rows).
    pub m: Option<usize>,
    /// `--dim`: the projected dimension G of spgp-dr and spgp-pca.
    pub dim: Option<usize>,
    /// `--rank`: gplasso's incomplete Cholesky rank.
    pub rank: Option<usize>,
    /// `--fixed-hyperparameters`: gplasso's paper procedure.
    pub fixed_hyperparameters: bool,
    /// `--fixed-basis`: gplasso's hyperparameters re-optimised, its basis
    /// kept.
    pub fixed_basis: bool,
    /// `--objective`: FITC or VFE (not given: chosen on held-out rows
    /// where the family has the choice).
    pub objective: Option<Approximation>,
    /// `--no-held-out-choice`: no held-out comparisons.
    pub no_held_out_choice: bool,
    /// `--restarts`: starts of a restarted fit.
    pub restarts: Option<usize>,
    /// `--seed`: seed of every random choice (default 0).
    pub seed: Option<u64>,
    /// `--max-iter`: cap on each final optimiser run.
    pub max_iter: Option<u64>,
    /// `--tol`: the stall test, nats per row over 50 iterations.
    pub tol: Option<f64>,
    /// `--init`: how the first start's pseudo-inputs are drawn.
    pub init: Option<InitMethod>,
    /// `--init-hyper`: where the hyperparameters start.
    pub init_hyper: Option<HyperInit>,
    /// `--max-points`: rows of an exact GP.
    pub max_points: Option<usize>,
    /// `--ivm-posterior`: the IVM classifier's posterior.
    pub ivm_posterior: Option<IvmPosterior>,
}

impl Options {
    /// What to fit to `data`: the family named, else `auto` for a
    /// regression of one output in memory (`examples/default_model.rs`
    /// measured it against SPGP: docs/src/model-families.md, "The default
    /// model") and `svgp` for a classification; `auto`'s candidates are
    /// the families that apply.
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
            ModelChoice::Family(Method::Svgp)
        } else {
            ModelChoice::Auto
        });
        let asked = match model {
            ModelChoice::Family(method) => Asked::Family(self.params(method, rows)?),
            ModelChoice::Auto if classifier => Asked::Auto(vec![self.params(Method::Svgp, rows)?]),
            ModelChoice::Auto => {
                let mut families = vec![Method::Spgp, Method::Vsgp];
                if outputs.len() == 1 {
                    families.extend([Method::SpgpHs, Method::Gplasso]);
                }
                if self.dim.is_some() {
                    families.push(Method::SpgpDr);
                }
                let candidates = families
                    .into_iter()
                    .map(|m| self.family_params(m, rows, true))
                    .collect::<Result<_>>()?;
                Asked::Auto(candidates)
            }
        };
        Ok(Request {
            asked,
            held_out: !self.no_held_out_choice,
            choose_objective: self.objective.is_none(),
        })
    }

    /// `method`'s settings on data of `rows` rows.
    ///
    /// # Errors
    /// [`Error::BadInput`] for a setting `method` does not take, or one it
    /// needs and lacks.
    pub fn params(&self, method: Method, rows: usize) -> Result<FitParams> {
        self.family_params(method, rows, false)
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

    /// `method`'s settings; `among`: one of `auto`'s candidates, which
    /// ignores settings meant for another (`--dim`).
    fn family_params(&self, method: Method, rows: usize, among: bool) -> Result<FitParams> {
        let gplasso_only = self.rank.is_some() || self.fixed_hyperparameters || self.fixed_basis;
        if method != Method::Gplasso && gplasso_only && !among {
            return Err(Error::BadInput(
                "--rank, --fixed-hyperparameters and --fixed-basis are for --model gplasso".into(),
            ));
        }
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
        let dim = match (method.is_projected(), self.dim) {
            (true, Some(dim)) => dim,
            (true, None) => {
                return Err(Error::BadInput(format!(
                    "--model {} needs --dim G, the projected dimension",
                    method.name()
                )))
            }
            (false, Some(_)) if !among => {
                return Err(Error::BadInput(format!(
                    "--dim applies to spgp-dr and spgp-pca only; --model {} takes no projection",
                    method.name()
                )))
            }
            (false, _) => 0,
        };
        let m = self.m.unwrap_or(DEFAULT_M.min(rows));
        let seed = self.seed.unwrap_or(0);
        let mut optimiser = default_optimiser();
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
        let defaults = SparseParams::default();
        let pseudo_init = self.init.map_or(defaults.pseudo_init.clone(), Into::into);
        let sparse = SparseParams {
            m,
            seed,
            approximation: self.objective.unwrap_or_default(),
            restarts: self.restarts.unwrap_or(defaults.restarts),
            optimiser: optimiser.clone(),
            pseudo_init: pseudo_init.clone(),
            hyper_init: self.init_hyper.unwrap_or(defaults.hyper_init),
            max_points: self.max_points.unwrap_or(defaults.max_points),
            ..defaults
        };
        Ok(match method {
            Method::Exact => FitParams::Exact(ExactParams {
                max_points: self.max_points.unwrap_or(ExactParams::default().max_points),
                seed,
                optimiser,
            }),
            Method::Spgp => FitParams::Spgp(sparse),
            Method::Vsgp => FitParams::Vsgp(sparse),
            Method::SpgpHs => FitParams::SpgpHs(sparse),
            Method::SpgpDr => FitParams::SpgpDr(ProjectedParams { sparse, dim }),
            Method::SpgpPca => FitParams::SpgpPca(ProjectedParams { sparse, dim }),
            Method::Gplasso => FitParams::Gplasso(GplassoParams {
                m,
                rank: self.rank,
                max_points: self
                    .max_points
                    .unwrap_or(GplassoParams::default().max_points),
                seed,
                optimiser,
                refit: match (self.fixed_hyperparameters, self.fixed_basis) {
                    (true, _) => GplassoRefit::Nothing,
                    (false, true) => GplassoRefit::Hyperparameters,
                    (false, false) => GplassoRefit::Everything,
                },
                approximation: self.objective.unwrap_or_default(),
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
                    kernel_points: self.max_points.unwrap_or(defaults.kernel_points),
                    posterior: self.ivm_posterior.unwrap_or_default(),
                    ..defaults
                })
            }
            Method::Svgp => FitParams::Svgp(SvgpParams {
                m,
                seed,
                restarts: self.restarts.unwrap_or(SvgpParams::default().restarts),
                optimiser,
                pseudo_init,
            }),
        })
    }
}
