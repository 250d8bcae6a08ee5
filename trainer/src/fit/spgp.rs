//! SPGP: FITC or VFE over free pseudo-inputs, pseudo-inputs and
//! hyperparameters learned jointly by L-BFGS from restarted starts
//! ([`super::restarts`]), for every output on one basis ([`super::sparse`]).
//!
//! A fit from the data-scale start that collapsed to the constant mean
//! ([`collapsed`]) is fitted again from an exact GP's hyperparameters, and
//! the better kept: in many dimensions the data-scale length scales can
//! put the optimum's basin out of reach (docs/src/model-families.md).

use sgp_runtime::ModelKind;

use super::exact::{optimise_exact, training_subset};
use super::restarts::start_positions;
use super::sparse::{fit_final, fit_restarted, SparseFit, StartChoice};
use super::{
    data_scale_kernel, held_out, refit, Checked, Fit, FitParams, HyperInit, Method, SparseParams,
    StartReport,
};
use crate::data::Dataset;
use crate::model::features::PseudoInputs;
use crate::model::inference::Approximation;
use crate::model::kernel::KernelParams;
use crate::numerics::linalg::JitterPolicy;
use crate::numerics::optimise::{OptimiseOptions, Progress};
use crate::Result;

/// Fits SPGP as `params` asks; on small data, with the objective chosen
/// on held-out rows ([`held_out`]: the other one only if it clearly wins,
/// and VFE if FITC's noise collapses: [`fit_chosen_objective`]).
pub(crate) fn fit_spgp(
    outputs: &[Dataset],
    params: &Checked<'_, SparseParams>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    let n = outputs[0].n_rows();
    let (fit, starts, choice) = if params.held_out_choice && held_out::applies(n, params.m) {
        let candidates = objective_candidates(params);
        let scores = held_out::score(outputs, params.seed, &candidates, &refit)?;
        let mut choice = scores.verdict(0, 1);
        let (fit, starts) = fit_chosen_objective(outputs, params, &mut choice, progress)?;
        (fit, starts, Some(choice))
    } else {
        let (fit, starts) = fit_pseudo_inputs(outputs, params, StartChoice::Objective, progress)?;
        (fit, starts, None)
    };
    let mut fit = fit.into_fit(outputs, ModelKind::Spgp, Method::Spgp)?;
    fit.report.starts = starts;
    fit.report.held_out = choice;
    Ok(fit)
}

/// SPGP on all of `outputs` with the objective its held-out `choice`
/// between `params`' objective and the other one picked; but a FITC fit
/// whose noise collapsed ([`noise_collapsed`]) is replaced by the VFE fit,
/// unless FITC beat VFE on the held-out rows by more than the choice's
/// margin. With its noise on the floor FITC predicts nearly noise-free
/// targets at its pseudo-inputs (MATH.md, FITC's noise collapse).
pub(crate) fn fit_chosen_objective(
    outputs: &[Dataset],
    params: &SparseParams,
    choice: &mut held_out::HeldOutChoice,
    progress: &mut dyn FnMut(Progress),
) -> Result<(SparseFit<PseudoInputs>, Vec<StartReport>)> {
    let chosen = SparseParams {
        approximation: if choice.challenger_chosen {
            other_objective(params.approximation)
        } else {
            params.approximation
        },
        ..params.clone()
    };
    let checked = chosen.check(&outputs[0])?;
    let (fit, starts) = fit_pseudo_inputs(outputs, &checked, StartChoice::Objective, progress)?;
    if chosen.approximation != Approximation::Fitc
        || !fit.kernels.iter().any(noise_collapsed)
        || choice.chosen_clearly_better()
    {
        return Ok((fit, starts));
    }
    choice.noise_collapsed = true;
    let vfe = SparseParams {
        approximation: Approximation::Vfe,
        ..chosen
    };
    let checked = vfe.check(&outputs[0])?;
    fit_pseudo_inputs(outputs, &checked, StartChoice::Objective, progress)
}

/// A FITC noise variance (standardised target) below this has collapsed
/// ([`fit_chosen_objective`]): a noise standard deviation under 3% of the
/// target's, the rest carried by FITC's diagonal correction, which
/// vanishes at the pseudo-inputs (docs/src/model-families.md).
pub const COLLAPSED_NOISE_BELOW: f64 = 1e-3;

/// Whether `kern`'s noise variance has collapsed ([`COLLAPSED_NOISE_BELOW`]).
pub(crate) fn noise_collapsed(kern: &KernelParams) -> bool {
    kern.noise_var() < COLLAPSED_NOISE_BELOW
}

/// SPGP with the objective asked for, then with the other one (both
/// without a held-out choice of their own): the candidates of SPGP's
/// held-out choice, in the order [`held_out::Scores::verdict`] takes them.
pub(crate) fn objective_candidates(params: &SparseParams) -> Vec<(String, FitParams)> {
    let asked = SparseParams {
        held_out_choice: false,
        ..params.clone()
    };
    let other = SparseParams {
        approximation: other_objective(asked.approximation),
        ..asked.clone()
    };
    vec![
        (
            objective_name("spgp", asked.approximation),
            FitParams::Spgp(asked),
        ),
        (
            objective_name("spgp", other.approximation),
            FitParams::Spgp(other),
        ),
    ]
}

pub(crate) fn other_objective(approximation: Approximation) -> Approximation {
    match approximation {
        Approximation::Fitc => Approximation::Vfe,
        Approximation::Vfe => Approximation::Fitc,
    }
}

/// How a held-out choice names `model` fitted with `approximation`.
pub(crate) fn objective_name(model: &str, approximation: Approximation) -> String {
    format!("{model} ({approximation:?})").to_lowercase()
}

/// A fit whose signal variance is below this fraction of its noise
/// variance predicts the constant mean: it has collapsed.
pub const COLLAPSED_BELOW: f64 = 1e-3;

/// Whether a kernel's signal is negligible against its noise
/// ([`COLLAPSED_BELOW`]).
pub(crate) fn collapsed(kern: &KernelParams) -> bool {
    kern.signal_var() < COLLAPSED_BELOW * kern.noise_var()
}

/// SPGP's fit before it becomes a model: the restarted fit (starts kept
/// by `choice`), then the rescue of a collapsed fit (module docs): one run
/// from the collapsed fit's pseudo-inputs and the exact GP's kernels, kept
/// if `choice` scores it better. VSGP and SPGP+HS continue from it; the
/// streamed fit's first stage is it.
pub(crate) fn fit_pseudo_inputs(
    outputs: &[Dataset],
    params: &Checked<'_, SparseParams>,
    choice: StartChoice<'_>,
    progress: &mut dyn FnMut(Progress),
) -> Result<(SparseFit<PseudoInputs>, Vec<StartReport>)> {
    let x = &outputs[0].x;
    let start = |k: usize| {
        let (label, z) = start_positions(x, params, k)?;
        Ok((label, PseudoInputs::new(z)?))
    };
    let kernels = initial_kernels(outputs, params)?;
    let (fit, starts) = fit_restarted(
        outputs,
        params,
        kernels,
        &start,
        (choice, params.sharing),
        progress,
    )?;
    if params.hyper_init != HyperInit::DataScales || !fit.kernels.iter().any(collapsed) {
        return Ok((fit, starts));
    }
    let exact = SparseParams {
        hyper_init: HyperInit::ExactSubset,
        ..(**params).clone()
    };
    // A rescue that fails (an exact GP that cannot be fitted, say) leaves
    // the collapsed fit, which is still a valid model.
    let rescued = initial_kernels(outputs, &exact).and_then(|kernels| {
        let run = fit_final(
            outputs,
            fit.features.clone(),
            kernels,
            fit.config,
            &params.optimiser,
            params.sharing,
            progress,
        )?;
        let better = choice.score(&run)? < choice.score(&fit)?;
        Ok((run, better))
    });
    Ok(match rescued {
        Ok((rescued, true)) => (rescued, starts),
        _ => (fit, starts),
    })
}

/// Each output's starting kernel: the data's scales, or an exact GP on a
/// seeded subset of at most 500 rows fitted to every output at once.
pub(crate) fn initial_kernels(
    outputs: &[Dataset],
    params: &SparseParams,
) -> Result<Vec<KernelParams>> {
    match params.hyper_init {
        HyperInit::DataScales => outputs.iter().map(data_scale_kernel).collect(),
        HyperInit::ExactSubset => {
            let rows = params.max_points.min(500);
            let subsets = outputs
                .iter()
                .map(|d| training_subset(d, rows, params.seed))
                .collect::<Result<Vec<_>>>()?;
            let warm_up = OptimiseOptions {
                max_iter: params.optimiser.max_iter.min(100),
                ..params.optimiser.clone()
            };
            let jitter = JitterPolicy::default();
            Ok(optimise_exact(&subsets, None, jitter, &warm_up, &mut |_| {})?.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use nalgebra::DMatrix;

    use super::*;
    use crate::fit::restarts::{screen_rows, SCREEN_MIN_ROWS};
    use crate::fit::sparse::VarianceSharing;
    use crate::fit::{fit, FitParams};
    use crate::numerics::optimise::OptimiseOptions;
    use crate::tools::demo::synthetic;

    #[test]
    fn a_kernel_collapsed_when_its_signal_is_negligible_against_its_noise() {
        let kern = |s2: f64, n2: f64| KernelParams::new(&[1.0], s2, n2).expect("valid");
        assert!(collapsed(&kern(1e-9, 0.8)));
        assert!(collapsed(&kern(0.9e-3, 1.0)));
        assert!(!collapsed(&kern(1.1e-3, 1.0)));
        assert!(!collapsed(&kern(0.3, 0.7)));
    }

    /// A noise variance near its floor has collapsed, not only one that
    /// sits on it, and so has one that claims nearly noise-free targets.
    #[test]
    fn a_noise_variance_far_below_the_targets_has_collapsed() {
        let kern = |n2: f64| KernelParams::new(&[1.0], 1.0, n2).expect("valid");
        let floor = kern(1.0).noise_floor;
        let stalled_above = kern(1.03 * floor);
        assert!(!stalled_above.noise_on_floor(), "{stalled_above:?}");
        assert!(noise_collapsed(&stalled_above));
        assert!(noise_collapsed(&kern(6e-5)));
        assert!(!noise_collapsed(&kern(2e-3)));
        assert!(!noise_collapsed(&kern(0.3)));
    }

    /// VFE from the data-scale start collapses to the constant mean on
    /// 300 rows in 32 dimensions; the fit then starts again from the exact
    /// GP's hyperparameters, which explain the data.
    #[test]
    fn a_collapsed_fit_starts_again_from_the_exact_gp() {
        let data = crate::tools::synth::dataset(crate::tools::synth::Shape::FewDirections, 300, 0)
            .expect("valid");
        let params = SparseParams {
            m: 5,
            approximation: Approximation::Vfe,
            restarts: 1,
            held_out_choice: false,
            ..SparseParams::default()
        };
        let checked = params.check(&data).expect("valid");
        let start = |k: usize| {
            let (label, z) = start_positions(&data.x, &params, k)?;
            Ok((label, PseudoInputs::new(z)?))
        };
        let kern = data_scale_kernel(&data).expect("kernel");
        let one = std::slice::from_ref(&data);
        let choice = (StartChoice::Objective, VarianceSharing::Auto);
        let (plain, _) =
            fit_restarted(one, &params, vec![kern], &start, choice, &mut |_| {}).expect("fitted");
        assert!(collapsed(plain.kernel()), "{:?}", plain.kernel());
        let (rescued, _) =
            fit_pseudo_inputs(one, &checked, StartChoice::Objective, &mut |_| {}).expect("fitted");
        assert!(!collapsed(rescued.kernel()), "{:?}", rescued.kernel());
        assert!(
            rescued.posteriors[0].nlml + 1.0 < plain.posteriors[0].nlml,
            "{} against {}",
            rescued.posteriors[0].nlml,
            plain.posteriors[0].nlml
        );
    }

    /// Noise-free targets: FITC puts its noise on the floor, VFE does not.
    fn noise_free() -> Dataset {
        let x = DMatrix::from_fn(150, 1, |i, _| 10.0 * ((i * 37 % 150) as f64) / 150.0);
        let y = nalgebra::DVector::from_fn(150, |i, _| {
            let t = x[(i, 0)];
            t.sin() + 0.3 * (3.0 * t).sin()
        });
        Dataset::from_raw(x, y, vec!["x".into()], "y".into()).expect("valid")
    }

    /// A held-out choice that kept FITC, the incumbent, with these scores.
    fn fitc_kept(fitc_nlpd: f64, vfe_nlpd: f64) -> held_out::HeldOutChoice {
        held_out::HeldOutChoice {
            incumbent: "spgp (fitc)".into(),
            challenger: "spgp (vfe)".into(),
            rows: 40,
            incumbent_nlpd: fitc_nlpd,
            challenger_nlpd: vfe_nlpd,
            standard_error: 0.1,
            challenger_chosen: false,
            noise_collapsed: false,
            lost_to: None,
        }
    }

    /// A FITC fit with its noise on the floor that did not clearly win on
    /// held-out rows gives way to VFE; one that clearly won stays.
    #[test]
    fn a_collapsed_fitc_noise_gives_way_to_vfe_unless_fitc_clearly_won() {
        let data = noise_free();
        let params = SparseParams {
            m: 8,
            restarts: 1,
            ..SparseParams::default()
        };
        let mut close = fitc_kept(-1.0, -0.95);
        let (fit, _) = fit_chosen_objective(
            std::slice::from_ref(&data),
            &params,
            &mut close,
            &mut |_| {},
        )
        .expect("fit");
        assert!(close.noise_collapsed);
        assert_eq!(close.chosen(), "spgp (vfe)");
        assert_eq!(fit.config.approximation, Approximation::Vfe);
        assert!(!fit.kernel().noise_on_floor(), "{:?}", fit.kernel());

        let mut clear = fitc_kept(-1.0, -0.5);
        let (fit, _) = fit_chosen_objective(
            std::slice::from_ref(&data),
            &params,
            &mut clear,
            &mut |_| {},
        )
        .expect("fit");
        assert!(!clear.noise_collapsed);
        assert_eq!(clear.chosen(), "spgp (fitc)");
        assert_eq!(fit.config.approximation, Approximation::Fitc);
        assert!(fit.kernel().noise_on_floor(), "{:?}", fit.kernel());
    }

    /// Noisy targets: FITC's noise stays off the floor and FITC is kept.
    #[test]
    fn fitc_with_noise_off_the_floor_is_kept() {
        let (x, y) = synthetic(300, 1, 3);
        let data = Dataset::from_raw(x, y, vec!["a".into()], "y".into()).expect("valid");
        let params = SparseParams {
            m: 8,
            restarts: 1,
            ..SparseParams::default()
        };
        let mut choice = fitc_kept(1.0, 1.0);
        let (fit, _) = fit_chosen_objective(
            std::slice::from_ref(&data),
            &params,
            &mut choice,
            &mut |_| {},
        )
        .expect("fit");
        assert!(!fit.kernel().noise_on_floor(), "{:?}", fit.kernel());
        assert!(!choice.noise_collapsed);
        assert_eq!(fit.config.approximation, Approximation::Fitc);
    }

    #[test]
    fn screening_sees_n_over_k_rows_but_never_fewer_than_the_floor() {
        assert_eq!(screen_rows(500, 4), 500);
        assert_eq!(screen_rows(SCREEN_MIN_ROWS + 1, 4), SCREEN_MIN_ROWS);
        assert_eq!(screen_rows(10_000, 4), 2_500);
        assert_eq!(screen_rows(10_000, 1), 10_000);
    }

    /// Above the floor the screening runs see a seeded subset: the fit is
    /// the same from run to run.
    #[test]
    fn subset_screening_is_deterministic() {
        let (x, y) = synthetic(2 * SCREEN_MIN_ROWS + 400, 2, 5);
        let data = Dataset::from_raw(x, y, vec!["a".into(), "b".into()], "y".into()).unwrap();
        let params = FitParams::Spgp(SparseParams {
            m: 5,
            restarts: 2,
            optimiser: OptimiseOptions {
                max_iter: 12,
                ..SparseParams::default().optimiser
            },
            ..SparseParams::default()
        });
        let first = fit(&data, &params, &mut |_| {}).unwrap();
        let again = fit(&data, &params, &mut |_| {}).unwrap();
        assert_eq!(
            first.set.members[0].form.beta,
            again.set.members[0].form.beta
        );
        assert_eq!(first.report.starts.len(), 2);
        assert_eq!(first.report.nlml, again.report.nlml);
    }
}
