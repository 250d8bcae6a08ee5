//! The fit options as the library's validated parameters.

use sgp_trainer::data::{Dataset, TargetKind};
use sgp_trainer::fit::gplasso::{GplassoParams, GplassoRefit};
use sgp_trainer::fit::ivm::IvmParams;
use sgp_trainer::fit::svgp::SvgpParams;
use sgp_trainer::fit::{
    ExactParams, FitParams, Method, ProjectedParams, SparseParams, DEFAULT_STALL,
};
use sgp_trainer::numerics::optimise::{OptimiseOptions, Stall};
use sgp_trainer::{Error, Result};

use super::{FitArgs, LinkArg, TaskArg};

impl FitArgs {
    /// The task `--task` and `--link` ask for (`None`: decided by the
    /// target).
    pub(super) fn task(&self) -> Result<Option<TaskArg>> {
        match (self.task, self.link) {
            (Some(TaskArg::Regression), Some(LinkArg::Probit))
            | (Some(TaskArg::Classification), Some(LinkArg::Identity)) => Err(Error::BadInput(
                "--task and --link disagree (--link probit is --task classification)".into(),
            )),
            (Some(task), _) => Ok(Some(task)),
            (None, Some(LinkArg::Probit)) => Ok(Some(TaskArg::Classification)),
            (None, Some(LinkArg::Identity)) => Ok(Some(TaskArg::Regression)),
            (None, None) => Ok(None),
        }
    }

    /// The model to fit to `data`: `--model`, else the default of its
    /// task.
    pub(super) fn model_for(&self, data: &Dataset) -> Method {
        self.model.unwrap_or(match data.target {
            TargetKind::Binary { .. } => Method::Svgp,
            TargetKind::Continuous => Method::Spgp,
        })
    }

    pub(super) fn params(&self, model: Method) -> Result<FitParams> {
        if model != Method::Gplasso
            && (self.rank.is_some() || self.path || self.fixed_hyperparameters || self.fixed_basis)
        {
            return Err(Error::BadInput(
                "--rank, --path, --fixed-hyperparameters and --fixed-basis are for --model \
                 gplasso"
                    .into(),
            ));
        }
        if model == Method::Gplasso
            && self.objective.is_some()
            && (self.fixed_hyperparameters || self.fixed_basis)
        {
            return Err(Error::BadInput(
                "--objective applies to gplasso's default fit: --fixed-hyperparameters and                  --fixed-basis keep FITC, the paper's variance"
                    .into(),
            ));
        }
        let projected = model.is_projected();
        let dim = match (projected, self.dim) {
            (true, Some(dim)) => dim,
            (true, None) => {
                return Err(Error::BadInput(format!(
                    "--model {} needs --dim G, the projected dimension",
                    model.name()
                )))
            }
            (false, Some(_)) => {
                return Err(Error::BadInput(format!(
                    "--dim applies to spgp-dr and spgp-pca only; --model {} takes no projection",
                    model.name()
                )))
            }
            (false, None) => 0,
        };
        let optimiser = OptimiseOptions {
            max_iter: self.max_iter,
            // A tolerance of 0 never fires: the best value cannot rise.
            stall: Some(Stall {
                per_row: self.tol,
                ..DEFAULT_STALL
            }),
            ..OptimiseOptions::default()
        };
        let sparse = SparseParams {
            m: self.m,
            seed: self.seed,
            approximation: self.objective.unwrap_or_default(),
            restarts: self.restarts,
            optimiser: optimiser.clone(),
            pseudo_init: self.init.into(),
            hyper_init: self.init_hyper,
            max_points: self.max_points,
            held_out_choice: !self.no_held_out_choice
                && (model.falls_back_to_spgp() || self.objective.is_none()),
            kernel: self.kernel,
        };
        Ok(match model {
            Method::Svgp => FitParams::Svgp(SvgpParams {
                m: self.m,
                seed: self.seed,
                restarts: self.restarts,
                optimiser,
                pseudo_init: self.init.into(),
                kernel: self.kernel,
            }),
            Method::Gplasso => FitParams::Gplasso(GplassoParams {
                m: self.m,
                rank: self.rank,
                max_points: self.max_points,
                seed: self.seed,
                optimiser,
                refit: match (self.fixed_hyperparameters, self.fixed_basis) {
                    (true, _) => GplassoRefit::Nothing,
                    (false, true) => GplassoRefit::Hyperparameters,
                    (false, false) => GplassoRefit::Everything,
                },
                approximation: self.objective.unwrap_or_default(),
                held_out_choice: !self.no_held_out_choice,
                choose_objective: self.objective.is_none(),
                kernel: self.kernel,
                ..GplassoParams::default()
            }),
            Method::Exact => FitParams::Exact(ExactParams {
                max_points: self.max_points,
                seed: self.seed,
                optimiser,
                kernel: self.kernel,
            }),
            Method::Spgp => FitParams::Spgp(sparse),
            Method::Vsgp => FitParams::Vsgp(sparse),
            Method::SpgpHs => FitParams::SpgpHs(sparse),
            Method::SpgpDr => FitParams::SpgpDr(ProjectedParams { sparse, dim }),
            Method::SpgpPca => FitParams::SpgpPca(ProjectedParams { sparse, dim }),
            Method::Ivm => FitParams::Ivm(IvmParams {
                m: self.m,
                seed: self.seed,
                optimiser: OptimiseOptions {
                    max_iter: self.max_iter.min(IvmParams::default().optimiser.max_iter),
                    ..OptimiseOptions::default()
                },
                kernel_points: self.max_points,
                posterior: self.ivm_posterior,
                kernel: self.kernel,
                ..IvmParams::default()
            }),
        })
    }
}
