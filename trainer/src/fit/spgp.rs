//! SPGP: FITC or VFE over free pseudo-inputs, pseudo-inputs and
//! hyperparameters learned jointly by L-BFGS from restarted starts
//! ([`super::restarts`]), for every output on one basis ([`super::sparse`]).
//!
//! A fit from the data-scale start that collapsed to the constant mean
//! (`collapsed`) is fitted again from an exact GP's hyperparameters, and
//! the better kept: in many dimensions the data-scale length scales can
//! put the optimum's basin out of reach (docs/src/model-families.md).
//! A final VFE fit gets that second run whether or not it collapsed: from
//! the data-scale start, VFE's trace term (large while the length scales
//! are short against the pseudo-inputs' spacing) lengthens every scale at
//! once and can switch a relevant input off for good, a partial collapse
//! no test on the kernel sees (docs/src/benchmarks.md, "The default's CPU
//! by stage, and the race").

use sgp_runtime::ModelKind;

use super::exact::{optimise_exact, Start};
use super::restarts::start_positions;
use super::sparse::{fit_final, fit_restarted, SparseFit, StartChoice};
use super::{
    data_scale_kernel, Checked, Fit, HyperInit, Method, OwnChoice, SparseParams, StartReport,
};
use crate::data::Dataset;
use crate::model::features::PseudoInputs;
use crate::model::inference::Approximation;
use crate::model::kernel::KernelParams;
use crate::numerics::linalg::JitterPolicy;
use crate::numerics::optimise::{OptimiseOptions, Progress};
use crate::Result;

/// Fits SPGP as `params` asks, as inside a contest: without a VFE fit's
/// second run (PCA + SPGP's stage takes it so).
pub(crate) fn fit_spgp(
    outputs: &[Dataset],
    params: &Checked<'_, SparseParams>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    fit_spgp_as(outputs, params, OwnChoice::Contest, progress)
}

/// Fits SPGP as `params` asks, a fit of `own`'s kind: outside a held-out
/// contest a VFE fit from the data-scale start also gets the run from the
/// exact GP's kernels (module docs), the lower objective kept.
pub(crate) fn fit_spgp_as(
    outputs: &[Dataset],
    params: &Checked<'_, SparseParams>,
    own: OwnChoice,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    let vfe = params.approximation == Approximation::Vfe && own != OwnChoice::Contest;
    let choice = StartChoice::Objective;
    let (fit, starts) = restarted_then_rescued(outputs, params, choice, vfe, progress)?;
    let mut fit = fit.into_fit(outputs, ModelKind::Spgp, Method::Spgp)?;
    fit.report.starts = starts;
    Ok(fit)
}

/// A FITC noise variance (standardised target) below this has collapsed
/// ([`crate::choose`] then prefers VFE): a noise standard deviation under 3% of the
/// target's, the rest carried by FITC's diagonal correction, which
/// vanishes at the pseudo-inputs (docs/src/model-families.md).
pub(crate) const COLLAPSED_NOISE_BELOW: f64 = 1e-3;

/// Whether `kern`'s noise variance has collapsed ([`COLLAPSED_NOISE_BELOW`]).
pub(crate) fn noise_collapsed(kern: &KernelParams) -> bool {
    kern.noise_var() < COLLAPSED_NOISE_BELOW
}

/// A fit whose signal variance is below this fraction of its noise
/// variance predicts the constant mean: it has collapsed.
pub(crate) const COLLAPSED_BELOW: f64 = 1e-3;

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
    restarted_then_rescued(outputs, params, choice, false, progress)
}

/// [`fit_pseudo_inputs`], the run from the exact GP's kernels also made
/// for a fit that did not collapse where `always_rescue` says so.
fn restarted_then_rescued(
    outputs: &[Dataset],
    params: &Checked<'_, SparseParams>,
    choice: StartChoice<'_>,
    always_rescue: bool,
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
    let rescue = always_rescue || fit.kernels.iter().any(collapsed);
    if params.hyper_init != HyperInit::DataScales || !rescue {
        return Ok((fit, starts));
    }
    Ok((
        from_exact_kernels(outputs, params, fit, choice, progress),
        starts,
    ))
}

/// `fit`, or one run from its pseudo-inputs and the exact GP's kernels if
/// `choice` scores that run better.
fn from_exact_kernels(
    outputs: &[Dataset],
    params: &Checked<'_, SparseParams>,
    fit: SparseFit<PseudoInputs>,
    choice: StartChoice<'_>,
    progress: &mut dyn FnMut(Progress),
) -> SparseFit<PseudoInputs> {
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
    match rescued {
        Ok((rescued, true)) => rescued,
        _ => fit,
    }
}

/// Each output's starting kernel: the data's scales, or an exact GP on a
/// seeded subset of at most 500 rows fitted to every output at once.
pub(crate) fn initial_kernels(
    outputs: &[Dataset],
    params: &SparseParams,
) -> Result<Vec<KernelParams>> {
    match params.hyper_init {
        HyperInit::DataScales => outputs
            .iter()
            .map(|d| data_scale_kernel(d, params.kernel))
            .collect(),
        HyperInit::ExactSubset => {
            let rows = params.max_points.min(500);
            let subsets = outputs
                .iter()
                .map(|d| d.at_most_rows(rows, params.seed))
                .collect::<Result<Vec<_>>>()?;
            let warm_up = OptimiseOptions {
                max_iter: params.optimiser.max_iter.min(100),
                ..params.optimiser.clone()
            };
            let jitter = JitterPolicy::default();
            let start = Start::Scales(params.kernel);
            Ok(optimise_exact(&subsets, start, jitter, &warm_up, &mut |_| {})?.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::restarts::{screen_rows, SCREEN_MIN_ROWS};
    use crate::fit::sparse::VarianceSharing;
    use crate::fit::{fit, FitParams};
    use crate::model::inference::Approximation;
    use crate::numerics::optimise::OptimiseOptions;
    use crate::synth::synthetic;

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
        let data =
            crate::synth::dataset(crate::synth::Shape::FewDirections, 300, 0).expect("valid");
        let params = SparseParams {
            m: 5,
            approximation: Approximation::Vfe,
            restarts: 1,
            ..SparseParams::default()
        };
        let checked = params.check(&data).expect("valid");
        let start = |k: usize| {
            let (label, z) = start_positions(&data.x, &params, k)?;
            Ok((label, PseudoInputs::new(z)?))
        };
        let kern =
            data_scale_kernel(&data, sgp_runtime::Kernel::SquaredExponential).expect("kernel");
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

    /// Thirty-two inputs `U(-1, 1)`, four of them relevant through waves
    /// and a product (pumadyn32's style), noise std 0.2.
    fn waves_in_32(rows: usize, seed: u64) -> Dataset {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let x = nalgebra::DMatrix::from_fn(rows, 32, |_, _| rng.random_range(-1.0..1.0));
        let y = nalgebra::DVector::from_fn(rows, |i, _| {
            let v = |j: usize| x[(i, j)];
            let f = libm::sin(2.5 * v(3)) * libm::cos(1.5 * v(5)) + 0.8 * v(14) * v(20);
            let noise: f64 = rng.sample(rand_distr::StandardNormal);
            f + 0.5 * libm::sin(3.0 * v(20)) + 0.2 * noise
        });
        let names = (0..32).map(|j| format!("x{j}")).collect();
        Dataset::from_raw(x, y, names, "y".into()).expect("valid")
    }

    /// A final VFE fit ends at an objective no higher than the same fit
    /// inside a contest (which skips the run from the exact GP's kernels)
    /// on every seed, and clearly lower on some: from the data-scale start
    /// VFE switches relevant inputs off in 32 dimensions.
    #[test]
    fn a_final_vfe_fit_also_runs_from_the_exact_gp() {
        let mut gains = Vec::new();
        for seed in 0..4 {
            let data = waves_in_32(1500, seed);
            let params = SparseParams {
                m: 20,
                approximation: Approximation::Vfe,
                seed,
                ..SparseParams::default()
            };
            let checked = params.check(&data).expect("valid");
            let one = std::slice::from_ref(&data);
            let fit = |own| fit_spgp_as(one, &checked, own, &mut |_| {}).expect("fitted");
            let (contest, last) = (fit(OwnChoice::Contest), fit(OwnChoice::Final));
            let gain = contest.report.nlml - last.report.nlml;
            assert!(gain >= 0.0, "seed {seed}: {gain}");
            gains.push(gain);
        }
        assert!(gains.iter().any(|&g| g > 10.0), "{gains:?}");
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
