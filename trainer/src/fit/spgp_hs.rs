//! SPGP+HS (Snelson & Ghahramani 2006, section 5): SPGP, then every
//! pseudo-input's uncertainty `h_m` freed from that optimum and optimised
//! with the kernel hyperparameters.
//!
//! The first stage is [`super::spgp`]'s fit as is (initialisation,
//! restarts, objective); the second optimises the `log h_m` and the kernel
//! of [`Heteroscedastic`] features built from its pseudo-inputs with every
//! `h_m = H_START s2`, the same [`crate::model::inference::fitc::FitcConfig`]
//! (FITC or VFE) and a second budget of `max_iter`, the noise kept above a
//! floor ("A floor under the noise") and every `h_m` under a prior ("A
//! prior on h"). On small data the result must beat
//! SPGP on held-out rows ("Falling back to SPGP").
//!
//! # Only h and the kernel move
//!
//! Until issue 20 the second stage moved the pseudo-inputs too. On 200-row
//! heteroscedastic sets (six seeds, M = 10, test NLPD against SPGP's) that
//! was better on five and worse by 0.44 on one: pseudo-inputs moved onto
//! training points and, with a small `h`, pinned the predictive variance
//! there. With the pseudo-inputs left where SPGP put them it was better on
//! four and worse by 0.08 on one; with the held-out choice below, better on
//! three (by 0.10 to 0.19) and never worse by more than 0.002. The price is
//! part of the gain on larger sets (suite, heteroscedastic, 420 rows at
//! M = 10: 1.06 against 0.93 with moving pseudo-inputs, SPGP 1.09).
//!
//! # Why two stages, and where `h` starts
//!
//! The paper learns `h` "with the rest" from the start. Measured on the
//! suite's data (`synth` heteroscedastic, 600 rows, and `mcycle`, 70/30
//! split, seed 0; FITC; `measure_hs_start` below, `--ignored`), test NLPD:
//!
//! | data, M | SPGP | staged, h0 = 1e-6 / 1e-2 / 1e-1 s2 | joint, 1e-2 / 1e-1 s2 |
//! |---|---:|---:|---:|
//! | heteroscedastic, 10 | 1.109 | 0.969 / 0.929 / 0.926 | 0.926 / 0.926 |
//! | heteroscedastic, 20 | 1.079 | 1.029 / **0.929** / 0.926 | 1.416 / 0.994 |
//! | mcycle, 10 | 4.697 | 4.674 / **4.397** / 4.397 | 4.440 / 4.439 |
//! | mcycle, 20 | 4.686 | 4.686 / 4.756 / 5.070 | **4.348** / 5.157 |
//!
//! (one k-means start each, equal iteration budgets; with the default four
//! starts the staged fit at `1e-2 s2` gives 0.927, 0.927, 4.341, 4.356.)
//!
//! - **Staged**: never far from the best, and it reuses SPGP's restarts
//!   (the joint fit would need its own); jointly from the data-scale start,
//!   `h` can switch pseudo-inputs off before they have found their place
//!   (heteroscedastic, M = 20: 1.42 against 0.93).
//! - **`h0 = 1e-2 s2`**: the gradient in `log h_m` is `adj_mm h_m`, so a
//!   start near 0 barely moves (`1e-6 s2` stays at SPGP); `1e-1 s2` is
//!   already a large perturbation that overfits `mcycle` at M = 20 (lowest
//!   training NLML, worst NLPD). Even at `1e-2 s2` the second stage starts
//!   above the SPGP optimum (by 23 of 161 nats in this module's test), so,
//!   unlike VSGP, HS is not guaranteed to end at or below SPGP's training
//!   objective — in every run above it ended well below.
//!
//! # FITC only, in effect
//!
//! With `--objective vfe` the fit runs, but cannot model input-dependent
//! noise: VFE's noise is `sigma2 I` whatever `Kuu` is, and a larger `h_m`
//! only shrinks `Q` and so raises the bound's trace penalty
//! `tr(K - Q) / (2 sigma2)`. The `h_m` then fall back towards zero and the
//! model is (within 1e-3 of the objective) the SPGP-VFE it started from.
//! Heteroscedasticity comes from FITC's `lambda_n = k_nn - q_nn + sigma2`.
//!
//! # A floor under the noise
//!
//! FITC's noise at a training point is `sigma2 + k_nn - q_nn`, and with
//! `h` the second term can carry all of it: `sigma2` then falls to its
//! floor and, next to a pseudo-input with `h_m` near 0, `k_nn - q_nn` is
//! near 0 too, so the model takes the points there for noise-free
//! observations. On a 200-row heteroscedastic set (seed 4 of
//! `measure_hs_choice`) it predicted a standard deviation of 0.007 where
//! the noise's is 0.075, and two test points cost 120 and 20 nats: test
//! NLPD 2.65 against SPGP's 1.27. The second stage therefore keeps
//! `sigma2` above [`NOISE_FLOOR`] times the fitted SPGP's average noise
//! variance `v = sigma2 + mean_n (k_nn - q_nn)` (a noise variance that
//! varies at most a hundredfold below that average). Until issue 20's
//! last round the floor was relative to SPGP's `sigma2` alone; but where
//! FITC carries the noise in its diagonal, `sigma2` is itself small (on
//! a 100-row mcycle split, where FITC's fit on all rows put it near its
//! floor, HS scored 5.35 against SPGP's 4.54; relative to `v`, 4.76). A
//! floor of a tenth was worse on one set (heteroscedastic seed 1 of
//! `measure_hs_choice`: 1.41 against 1.26).
//!
//! # A prior on h
//!
//! The floor is not enough. A pseudo-input that SPGP put on a training
//! point where the noise is large can take `h_m` near 0: the model then
//! interpolates that point, the training NLML rewards it (one tiny
//! `lambda_n`), and the predictive noise there is `sigma2` on its floor.
//! On a fold of the peer benchmark's heteroscedastic set (split 0, 150
//! rows, M = 10) HS predicted a standard deviation of 0.054 at `x = 6.02`,
//! where the noise's is 0.95 (SPGP's 0.34): that held-out row cost 839
//! nats, the fold 17.9 against SPGP's 1.54, and the held-out choice
//! refused HS on a set where HS fitted on all rows was 0.24 better.
//!
//! So each `h_m` costs `beta / h_m` nats, `beta = H_PRIOR v`: nothing
//! where `h_m >> beta`, a steep price below. The noise at pseudo-input
//! `m` (about `sigma2 + h_m` for small `h_m`) can still fall below `v`,
//! but no longer to `sigma2`'s floor at a single point: an improper
//! prior `exp(-beta / h)`, a soft floor under each `h_m` on the scale of
//! the average noise, and its weight against the likelihood falls as the
//! rows grow. On 40 generated 150-row heteroscedastic sets
//! (`measure_hs_prior`, M = 10, held-out choice off) it took HS's mean
//! test NLPD from 1.275 to 1.155 (SPGP 1.442), its worst row from 37.3 to
//! 9.7 nats, and the smallest ratio of predicted to true noise standard
//! deviation from 0.13 to 0.51; HS is then more than 0.01 worse than SPGP
//! on 4 of the 40 (by at most 0.10), against 8 (by up to 0.43).
//! `H_PRIOR` between 0.2 and 0.5 gave much the same on the peer
//! benchmark's 8 heteroscedastic and 8 mcycle splits; 1 cost part of the
//! gain, 3 made HS worse than SPGP on every mcycle split. A prior on the
//! noise at the pseudo-input instead, `beta / (h_m + sigma2)`, which
//! leaves SPGP's `h = 0` reachable, let heteroscedastic split 7 end 0.14
//! worse than SPGP (this prior: 0.04 better) and was otherwise alike.
//! Starting every `h_m` at `beta` or `3 beta` (where the prior's pull is
//! gentle) instead of `H_START s2` changed those 16 splits by at most
//! 0.04 (one split), so the start stays.
//!
//! Under VFE there is no prior: the noise is `sigma2` whatever `h` is
//! ("FITC only, in effect"), so there is nothing to guard, and the prior
//! would only keep `h` from SPGP-VFE's optimum at 0.
//!
//! # Falling back to SPGP
//!
//! On 93 rows of `mcycle` at M = 30 the `h_m` fit the noise of the
//! training points: the training NLML fell, the test NLPD rose from
//! SPGP's 4.69 to 4.84. On small data SPGP+HS must therefore beat SPGP in
//! NLPD on held-out rows, over folds, by more than the noise of that
//! comparison: the rule VSGP and SPGP+DR share ([`super::against_spgp`]),
//! with SPGP fitted with either objective, FITC and VFE, and HS measured
//! against the better (there, "Both objectives"). Otherwise the model is the
//! SPGP fit (all `h_m = 0`, which is SPGP+HS's own limit), exported under
//! SPGP+HS's kind, and the report's `held_out` says which was chosen and
//! why. On larger data the staged fit runs as before.
//!
//! Measured (`measure_hs_choice`, test NLPD, M = 10 unless said; with
//! the prior, against both objectives): the default is better than SPGP
//! on all six 200-row heteroscedastic sets (by 0.13 to 0.55), on the four
//! 100-row mcycle splits (by 0.16 to 2.76) and on the suite's
//! heteroscedastic set at M = 10 (by 0.005); it keeps SPGP on the suite's
//! heteroscedastic set at M = 30, its mcycle at M = 10 and 30 (where HS
//! was 0.17 and 0.21 better before HS had to beat both objectives) and on
//! two homoscedastic 200-row sets, so it is never worse there.
//!
//! `h` is not bounded beyond [`crate::model::features::heteroscedastic`]'s range
//! for `log h`: a pseudo-input switched entirely off is a legitimate
//! optimum (the paper's `h_m -> inf`).

use std::cell::Cell;

use sgp_runtime::ModelKind;

use super::against_spgp::{unless_spgp_wins, Rivals};
use super::progress::{continuing, recording};
use nalgebra::DMatrix;

use super::spgp::{
    fit_pseudo_inputs, iteration_budget as spgp_budget, minimise_part_penalised, SparseFit,
};
use super::{Checked, FitParams, Fitted, Method, SparseParams};
use crate::data::Dataset;
use crate::fit::WidthSpread;
use crate::model::features::{Heteroscedastic, InducingFeatures, PseudoInputs};
use crate::model::inference::fitc::fitc_posterior;
use crate::model::inference::objective::SparseObjective;
use crate::model::inference::Approximation;
use crate::model::kernel::KernelParams;
use crate::numerics::optimise::Progress;
use crate::{Error, Result};

/// Every `h_m` starts at this fraction of the fitted SPGP's `s2`.
pub const H_START: f64 = 1e-2;

/// The second stage's noise variance stays above this fraction of the
/// fitted SPGP's average noise variance ([`average_noise`]).
pub const NOISE_FLOOR: f64 = 1e-2;

/// Each `h_m` costs `H_PRIOR v / h_m` nats in the second stage, `v` the
/// fitted SPGP's average noise variance (module docs, "A prior on h").
pub const H_PRIOR: f64 = 0.3;

/// How the second stage runs: the defaults, or a variant measured against
/// them (`measure_hs_start`, `measure_hs_choice`).
#[derive(Clone, Copy, Debug)]
struct Stage {
    /// `h_m` starts at this fraction of SPGP's `s2`.
    h_start: f64,
    /// `sigma2` stays above this fraction of SPGP's average noise.
    noise_floor: f64,
    /// The weight of the prior on `h`, as a fraction of that noise.
    h_prior: f64,
    /// The pseudo-inputs move too.
    move_pseudo_inputs: bool,
}

const DEFAULT_STAGE: Stage = Stage {
    h_start: H_START,
    noise_floor: NOISE_FLOOR,
    h_prior: H_PRIOR,
    move_pseudo_inputs: false,
};

/// Iterations an SPGP+HS fit may use in all: the SPGP stage's, plus
/// `max_iter`.
pub(crate) fn iteration_budget(params: &SparseParams) -> u64 {
    spgp_budget(params) + params.optimiser.max_iter
}

/// Fits SPGP+HS as `params` asks; on small data only if it clearly beats
/// plain SPGP on held-out rows, else plain SPGP under SPGP+HS's name, with
/// the report saying so (module docs, "Falling back to SPGP").
pub(crate) fn fit_spgp_hs(
    data: &Dataset,
    params: &Checked<'_, SparseParams>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fitted> {
    unless_spgp_wins(
        data,
        params,
        FitParams::SpgpHs,
        ModelKind::SpgpHs,
        Rivals::BothObjectives,
        progress,
        |progress| fit_staged(data, params, DEFAULT_STAGE, progress),
    )
}

fn fit_staged(
    data: &Dataset,
    params: &Checked<'_, SparseParams>,
    stage: Stage,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fitted> {
    // Iterations are counted over both stages, as VSGP does.
    let done = Cell::new(0u64);
    let (spgp, starts) = fit_pseudo_inputs(data, params, &mut recording(&done, progress))?;
    let h = stage.h_start * spgp.kernel.signal_var();
    let features = Heteroscedastic::from_pseudo_inputs(&spgp.features, h);
    let mut counted = continuing(&done, progress);
    let noise = average_noise(&spgp, &data.x)?;
    let floor = (stage.noise_floor * noise).max(spgp.kernel.noise_floor);
    let kernel = KernelParams::with_noise_floor(
        &spgp.kernel.lengthscales(),
        spgp.kernel.signal_var(),
        spgp.kernel.noise_var().max(floor),
        floor,
    )?
    .with_kernel(spgp.kernel.kernel);
    let objective = SparseObjective::new(&data.x, &data.y, features, kernel, spgp.config)?;
    let layout = objective.layout();
    let log_h = layout.feature_range().end - params.m;
    // The pseudo-inputs stay where SPGP put them (module docs, "Only h
    // and the kernel move").
    let (free, h_at) = if stage.move_pseudo_inputs {
        (0..layout.len(), log_h..log_h + params.m)
    } else {
        (log_h..layout.len(), 0..params.m)
    };
    // Under VFE the noise is sigma2 wherever h is (module docs, "FITC
    // only, in effect"): nothing to guard, and h = 0 its optimum.
    let beta = match spgp.config.approximation {
        Approximation::Fitc => stage.h_prior * noise,
        Approximation::Vfe => 0.0,
    };
    let (p, run) = minimise_part_penalised(
        &objective,
        free,
        &|part, grad| h_prior(beta, &part[h_at.clone()], &mut grad[h_at.clone()]),
        &params.optimiser,
        data.n_rows(),
        &mut counted,
    )?;
    let (features, kernel) = objective.unpack(&p)?;
    let posterior = fitc_posterior(&features, &kernel, &data.x, &data.y, &spgp.config)?;
    let fit = SparseFit {
        features,
        kernel,
        posterior,
        config: spgp.config,
        run,
        max_iter: params.optimiser.max_iter,
    };
    let h = fit.features.h();
    let mut fitted = fit.into_fitted(data, ModelKind::SpgpHs, Method::SpgpHs);
    fitted.report.starts = starts;
    fitted.report.uncertainties = Some(WidthSpread::of(
        h.iter().map(|&h| data.transform.unapply_var(h)).collect(),
    ));
    Ok(fitted)
}

/// The fitted SPGP's noise variance averaged over the training rows `x`:
/// `sigma2 + mean_n (k_nn - q_nn)`, FITC's noise at each row (module docs,
/// "A prior on h").
///
/// # Errors
/// [`Error::Numerical`] if SPGP's factor of `Kuu` cannot be solved with.
fn average_noise(spgp: &SparseFit<PseudoInputs>, x: &DMatrix<f64>) -> Result<f64> {
    // In blocks of rows, so that a large fit never holds all of `Kuf`.
    const ROWS: usize = 4096;
    let mut correction = 0.0;
    for start in (0..x.nrows()).step_by(ROWS) {
        let rows = x.rows(start, ROWS.min(x.nrows() - start));
        let kuf = spgp.features.kuf(&spgp.kernel, rows);
        let v = spgp
            .posterior
            .l1
            .solve_lower_triangular(&kuf)
            .ok_or_else(|| Error::Numerical("SPGP+HS: SPGP's Kuu factor is singular".into()))?;
        correction += spgp.features.kdiag(&spgp.kernel, rows).sum() - v.norm_squared();
    }
    Ok(spgp.kernel.noise_var() + (correction / x.nrows().max(1) as f64).max(0.0))
}

/// The prior on `h`: `beta sum_m 1 / h_m` over `log_h` (the `log h_m`),
/// its gradient in the `log h_m` added to `grad` (module docs, "A prior
/// on h").
fn h_prior(beta: f64, log_h: &[f64], grad: &mut [f64]) -> f64 {
    log_h
        .iter()
        .zip(grad)
        .map(|(&log_h, grad)| {
            let cost = beta * (-log_h).exp();
            *grad -= cost;
            cost
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::spgp::fit_sparse;
    use crate::fit::{data_scale_kernel, fit, FitParams};
    use crate::model::inference::fitc::FitcConfig;
    use crate::numerics::optimise::OptimiseOptions;

    /// The paper's procedure: `h` learned with everything else from the
    /// first iteration (one k-means start, a budget of both stages).
    fn fit_joint(data: &Dataset, params: &SparseParams, h_start: f64) -> Result<Fitted> {
        let kern = data_scale_kernel(data, sgp_runtime::Kernel::SquaredExponential)?;
        let z = crate::fit::init::kmeans(&data.x, params.m, params.seed, 100)?;
        let features = Heteroscedastic::from_pseudo_inputs(
            &crate::model::features::PseudoInputs::new(z)?,
            h_start * kern.signal_var(),
        );
        let config = FitcConfig {
            approximation: params.approximation,
            ..FitcConfig::default()
        };
        let options = OptimiseOptions {
            max_iter: 2 * params.optimiser.max_iter,
            ..params.optimiser.clone()
        };
        let fit = fit_sparse(data, features, kern, config, &options, &mut |_| {})?;
        Ok(fit.into_fitted(data, ModelKind::SpgpHs, Method::SpgpHs))
    }

    fn data(n: usize) -> Dataset {
        crate::tools::synth::dataset(crate::tools::synth::Shape::Heteroscedastic, n, 0)
            .expect("valid")
    }

    fn params(m: usize, approximation: Approximation, restarts: usize) -> SparseParams {
        SparseParams {
            m,
            approximation,
            restarts,
            held_out_choice: false,
            optimiser: OptimiseOptions {
                max_iter: 40,
                ..OptimiseOptions::default()
            },
            ..SparseParams::default()
        }
    }

    #[test]
    fn learns_uncertainties_from_spgp() {
        let train = data(200);
        for (approximation, restarts) in [(Approximation::Fitc, 1), (Approximation::Vfe, 2)] {
            let mut p = params(8, approximation, restarts);
            // With the pseudo-inputs fixed, h needs more than 40 iterations
            // to move from its start to where it pays.
            p.optimiser.max_iter = 150;
            let spgp = fit(&train, &FitParams::Spgp(p.clone()), &mut |_| {}).expect("fits");
            let mut last = 0;
            let hs = fit(&train, &FitParams::SpgpHs(p.clone()), &mut |pr| {
                assert!(pr.iteration >= last, "iterations count up over both stages");
                last = pr.iteration;
            })
            .expect("fits");
            let budget = FitParams::SpgpHs(p.clone()).iteration_budget();
            assert!(last <= budget);
            assert_eq!(budget, p.iteration_budget() + 150);
            // The second stage's noise stays above its floor, a fraction of
            // SPGP's average noise, which is at least SPGP's sigma2.
            let (n_hs, n_spgp) = (
                hs.report.hyper.noise_variance,
                spgp.report.hyper.noise_variance,
            );
            assert!(
                n_hs >= NOISE_FLOOR * n_spgp * (1.0 - 1e-9),
                "{n_hs} vs {n_spgp}"
            );
            let test =
                crate::tools::synth::dataset(crate::tools::synth::Shape::Heteroscedastic, 200, 1)
                    .expect("valid");
            let nlpd = |f: &Fitted| {
                let p = f.model.predict_raw(&test.raw_x()).expect("predicts");
                let y = test.raw_y();
                crate::evaluate::figures(p.mean.as_slice(), p.var.as_slice(), y.as_slice()).nlpd
            };
            let (a, b) = (hs.report.nlml, spgp.report.nlml);
            match approximation {
                // The prior keeps every h_m near or above beta, away from
                // SPGP's h = 0, and costs training NLML (3 nats here); the
                // pseudo-inputs stay where SPGP put them. On new rows HS
                // is as good.
                Approximation::Fitc => {
                    assert!(a < b + 5.0, "HS {a} vs SPGP {b}");
                    assert!(
                        nlpd(&hs) < nlpd(&spgp) + 0.02,
                        "{} vs {}",
                        nlpd(&hs),
                        nlpd(&spgp)
                    );
                }
                // VFE's noise is homoscedastic whatever h is, and h only
                // adds to its trace penalty, so there it ends back near
                // SPGP's bound (within 2%: h starts above it and 40
                // iterations with the pseudo-inputs fixed do not bring it
                // all the way back).
                Approximation::Vfe => assert!((a - b).abs() < 2e-2 * b.abs(), "HS {a} vs SPGP {b}"),
            }
            assert_eq!(hs.report.method, Method::SpgpHs);
            assert_eq!(hs.report.approximation, Some(approximation));
            assert_eq!(hs.report.starts.len(), spgp.report.starts.len());
            let u = hs.report.uncertainties.expect("HS reports h");
            assert!(0.0 < u.min && u.min <= u.median && u.median <= u.max);
            assert!(u.max > u.min, "the h_m were learned, not left equal");
            assert!(spgp.report.uncertainties.is_none());
            // The blob is SPGP's shape under its own kind; the model can be
            // rebuilt with more jitter (the export cure) through HS.
            assert_eq!(hs.model.kind, ModelKind::SpgpHs);
            let spec = hs.model.to_spec().expect("fits a blob");
            assert!(!spec.shape.per_basis && !spec.shape.projected);
            assert_eq!(spec.shape.kind, ModelKind::SpgpHs);
            assert!(hs.with_jitter(1e-4, 0).is_ok());
            assert!(hs.with_jitter(1e-4, 3).is_ok());
        }
    }

    /// Where noise varies HS clearly wins on held-out rows and is fitted;
    /// where it does not, the model is exactly the SPGP `--model spgp`
    /// fits, under HS's kind; the report says which was chosen.
    #[test]
    fn on_small_data_hs_must_beat_spgp_on_held_out_rows() {
        use crate::tools::synth::Shape;
        let mut fell_back = 0;
        for shape in [Shape::Heteroscedastic, Shape::VeryNoisy, Shape::Linear] {
            let train = crate::tools::synth::dataset(shape, 400, 0).expect("valid");
            let p = SparseParams {
                held_out_choice: true,
                ..params(8, Approximation::Fitc, 2)
            };
            let hs = fit(&train, &FitParams::SpgpHs(p.clone()), &mut |_| {}).expect("fits");
            let choice = hs.report.held_out.clone().expect("a choice on 400 rows");
            assert_eq!(choice.challenger, "spgp-hs");
            assert_eq!(choice.rows, 400, "every row is held out once");
            assert_eq!(hs.model.kind, ModelKind::SpgpHs);
            let hs_chosen = choice.challenger_chosen;
            assert_eq!(hs.report.uncertainties.is_some(), hs_chosen);
            if shape == Shape::Heteroscedastic {
                assert!(hs_chosen, "{choice:?}");
            }
            if !hs_chosen {
                fell_back += 1;
                let spgp = fit(&train, &FitParams::Spgp(p), &mut |_| {}).expect("fits");
                assert_eq!(spgp.model.form.beta, hs.model.form.beta);
                assert_eq!(spgp.report.approximation, hs.report.approximation);
                assert_eq!(
                    Some(choice.incumbent.as_str()),
                    spgp.report.held_out.as_ref().map(|c| c.chosen())
                );
            }
        }
        assert!(fell_back > 0, "no homoscedastic set fell back to SPGP");
    }

    #[test]
    fn more_pseudo_inputs_than_rows_is_a_clear_error() {
        let err = fit(
            &data(5),
            &FitParams::SpgpHs(params(6, Approximation::Fitc, 1)),
            &mut |_| {},
        )
        .expect_err("M > N");
        assert!(matches!(err, crate::Error::BadInput(_)), "{err}");
        assert!(err.to_string().contains("--m"), "{err}");
    }

    /// One HS fit's test figures on a generated heteroscedastic set: mean
    /// NLPD, the worst row's NLPD, and the smallest ratio of predicted to
    /// true noise standard deviation.
    fn pinning(fitted: &Fitted, test: &Dataset) -> (f64, f64, f64) {
        let shape = crate::tools::synth::Shape::Heteroscedastic;
        let p = fitted.model.predict_raw(&test.raw_x()).expect("predicts");
        let (x, y) = (test.raw_x(), test.raw_y());
        let (mut sum, mut worst, mut ratio) = (0.0, f64::NEG_INFINITY, f64::INFINITY);
        for i in 0..y.len() {
            let nlpd = crate::evaluate::metrics::point_nlpd(p.mean[i], p.var[i], y[i]);
            sum += nlpd;
            worst = worst.max(nlpd);
            ratio = ratio.min(p.var[i].sqrt() / shape.noise_std(&[x[(i, 0)]]));
        }
        (sum / y.len() as f64, worst, ratio)
    }

    /// A 150-row heteroscedastic training set (seed `seed`), the 50 rows
    /// held out, and SPGP+HS settings at M = 10 without the held-out choice.
    fn pinning_set(seed: u64) -> (Dataset, Dataset, SparseParams) {
        let d =
            crate::tools::synth::dataset(crate::tools::synth::Shape::Heteroscedastic, 200, seed)
                .expect("valid");
        let (train, test) = d.split(0.25, seed).expect("splits");
        let params = SparseParams {
            m: 10,
            seed,
            held_out_choice: false,
            ..SparseParams::default()
        };
        (train, test, params)
    }

    /// Without the prior on `h`, a pseudo-input with `h_m` near 0 where the
    /// noise is large predicted a fifth of the noise's standard deviation
    /// there, and one held-out row cost tens of nats; with it, HS
    /// predicts at least half the true noise everywhere (module docs, "A
    /// prior on h").
    #[test]
    fn the_prior_on_h_keeps_hs_from_pinning_the_noise_to_zero() {
        for seed in [1, 9] {
            let (train, test, params) = pinning_set(seed);
            let checked = params.check(&train).expect("valid");
            let fit_with = |h_prior| {
                let stage = Stage {
                    h_prior,
                    ..DEFAULT_STAGE
                };
                fit_staged(&train, &checked, stage, &mut |_| {}).expect("fits")
            };
            let (nlpd, worst, ratio) = pinning(&fit_with(H_PRIOR), &test);
            assert!(ratio > 0.5 && worst < 10.0, "seed {seed}: {ratio} {worst}");
            let (bare, bare_worst, bare_ratio) = pinning(&fit_with(0.0), &test);
            assert!(
                bare_ratio < 0.35 && bare_worst > 20.0,
                "seed {seed}: {bare_ratio} {bare_worst}"
            );
            assert!(nlpd < bare - 0.3, "seed {seed}: {nlpd} against {bare}");
        }
    }

    #[test]
    fn the_prior_gradient_matches_finite_differences() {
        use crate::model::inference::test_util::{assert_grad_close, fd_grad};
        let log_h = [-6.0, -1.0, 0.5, 3.0];
        let mut grad = vec![0.25; 4];
        let value = h_prior(0.3, &log_h, &mut grad);
        let num = fd_grad(|p| h_prior(0.3, p, &mut [0.0; 4]), &log_h, 1e-6);
        let ana: Vec<f64> = grad.iter().map(|g| g - 0.25).collect();
        assert_grad_close(&num, &ana, 1e-7);
        let expected: f64 = log_h.iter().map(|v| 0.3 / v.exp()).sum();
        assert!((value - expected).abs() < 1e-12 * expected);
        // It vanishes for h far above beta and grows without bound below.
        assert!(h_prior(0.3, &[20.0], &mut [0.0]) < 1e-8);
        assert!(h_prior(0.3, &[-20.0], &mut [0.0]) > 1e7);
    }

    /// Measures the prior on `h` (module docs, "A prior on h") on 40
    /// generated 150-row heteroscedastic sets: `cargo test --release -p
    /// sgp-trainer --lib measure_hs_prior -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn measure_hs_prior() {
        let mut totals = [[0.0; 3]; 3];
        let mut worse = [0; 3];
        for seed in 0..40u64 {
            let (train, test, params) = pinning_set(seed);
            let checked = params.check(&train).expect("valid");
            let spgp = SparseParams {
                held_out_choice: true,
                ..params.clone()
            };
            let spgp = fit(&train, &FitParams::Spgp(spgp), &mut |_| {}).expect("fits");
            let runs = [
                spgp,
                fit_staged(
                    &train,
                    &checked,
                    Stage {
                        h_prior: 0.0,
                        ..DEFAULT_STAGE
                    },
                    &mut |_| {},
                )
                .expect("fits"),
                fit_staged(&train, &checked, DEFAULT_STAGE, &mut |_| {}).expect("fits"),
            ];
            let figures: Vec<(f64, f64, f64)> = runs.iter().map(|f| pinning(f, &test)).collect();
            let mut line = format!("seed {seed:2}");
            for (k, (label, &(nlpd, worst, ratio))) in ["spgp", "hs, no prior", "hs"]
                .iter()
                .zip(&figures)
                .enumerate()
            {
                line += &format!(" | {label} {nlpd:.3} worst {worst:5.1} sd ratio {ratio:.2}");
                totals[k][0] += nlpd / 40.0;
                totals[k][1] = totals[k][1].max(worst);
                totals[k][2] = if seed == 0 {
                    ratio
                } else {
                    totals[k][2].min(ratio)
                };
                worse[k] += usize::from(nlpd > figures[0].0 + 0.01);
            }
            println!("{line}");
        }
        for (label, (t, w)) in ["spgp", "hs, no prior", "hs"]
            .iter()
            .zip(totals.iter().zip(worse))
        {
            println!(
                "{label}: mean NLPD {:.3}, worst row {:.1}, smallest sd ratio {:.2}, worse than SPGP by > 0.01 on {w}",
                t[0], t[1], t[2]
            );
        }
    }

    /// Measures the choices above: `cargo test --release -p sgp-trainer
    /// --lib measure_hs_start -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn measure_hs_start() {
        let mcycle = concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/data/mcycle.csv");
        let sets = [
            (
                "heteroscedastic",
                crate::tools::synth::dataset(crate::tools::synth::Shape::Heteroscedastic, 600, 0)
                    .expect("ok"),
            ),
            ("mcycle", Dataset::from_csv(mcycle, None).expect("fetched")),
        ];
        for (name, data) in sets {
            let (train, test) = data.split(0.3, 0).expect("ok");
            for m in [10, 20] {
                for restarts in [1, 4] {
                    let params = SparseParams {
                        m,
                        restarts,
                        ..SparseParams::default()
                    };
                    let score = |label: &str, f: Result<Fitted>| match f {
                        Ok(f) => {
                            let p = f.model.predict_raw(&test.raw_x()).expect("ok");
                            let e = crate::evaluate::figures(
                                p.mean.as_slice(),
                                p.var.as_slice(),
                                test.raw_y().as_slice(),
                            );
                            println!(
                                "{name} M={m} r={restarts} {label:<18} NLML {:9.3} NLPD {:.4} RMSE {:.4}",
                                f.report.nlml, e.nlpd, e.rmse
                            );
                        }
                        Err(e) => println!("{name} M={m} r={restarts} {label}: {e}"),
                    };
                    score(
                        "spgp",
                        fit(&train, &FitParams::Spgp(params.clone()), &mut |_| {}),
                    );
                    let checked = params.check(&train).expect("valid");
                    for h in [1e-6, 1e-2, 1e-1] {
                        score(
                            &format!("staged h0={h:.0e}"),
                            fit_staged(
                                &train,
                                &checked,
                                Stage {
                                    h_start: h,
                                    ..DEFAULT_STAGE
                                },
                                &mut |_| {},
                            ),
                        );
                    }
                    if restarts == 1 {
                        for h in [1e-2, 1e-1] {
                            score(&format!("joint h0={h:.0e}"), fit_joint(&train, &params, h));
                        }
                    }
                }
            }
        }
    }

    /// Measures the noise floor and the cross-validated choice (module
    /// docs, "A floor under the noise"): `cargo test --release -p
    /// sgp-trainer --lib measure_hs_choice -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn measure_hs_choice() {
        use crate::tools::synth::Shape;
        let mcycle = concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/data/mcycle.csv");
        let mcycle = Dataset::from_csv(mcycle, None).expect("fetched");
        // 200-row heteroscedastic sets and 100-row mcycle splits at M = 10;
        // the suite's heteroscedastic and mcycle splits at M = 10 and 30;
        // two homoscedastic 200-row sets.
        let mut sets: Vec<(String, Dataset, Dataset, usize)> = Vec::new();
        for seed in 1..=6u64 {
            let d = crate::tools::synth::dataset(Shape::Heteroscedastic, 286, seed).expect("ok");
            let (train, test) = d.split(86.0 / 286.0, seed).expect("ok");
            sets.push((format!("heteroscedastic/{seed}"), train, test, 10));
        }
        for seed in 0..4u64 {
            let (train, test) = mcycle.split(33.0 / 133.0, seed).expect("ok");
            sets.push((format!("mcycle 100/{seed}"), train, test, 10));
        }
        let d = crate::tools::synth::dataset(Shape::Heteroscedastic, 600, 0).expect("ok");
        let (train, test) = d.split(0.3, 0).expect("ok");
        let (mtrain, mtest) = mcycle.split(0.3, 0).expect("ok");
        for m in [10, 30] {
            sets.push(("heteroscedastic".into(), train.clone(), test.clone(), m));
            sets.push(("mcycle".into(), mtrain.clone(), mtest.clone(), m));
        }
        for shape in [Shape::Periodic, Shape::Chirp] {
            let d = crate::tools::synth::dataset(shape, 286, 1).expect("ok");
            let (train, test) = d.split(86.0 / 286.0, 1).expect("ok");
            sets.push((format!("{} 200", shape.name()), train, test, 10));
        }
        let staged = |stage: Stage| {
            move |d: &Dataset, m: usize| {
                let p = SparseParams {
                    m,
                    held_out_choice: false,
                    ..SparseParams::default()
                };
                fit_staged(d, &p.check(d)?, stage, &mut |_| {})
            }
        };
        type Fitter = Box<dyn Fn(&Dataset, usize) -> Result<Fitted>>;
        let fitters: Vec<(&str, Fitter)> = vec![
            (
                "spgp",
                Box::new(|d: &Dataset, m| {
                    let p = SparseParams {
                        m,
                        ..SparseParams::default()
                    };
                    fit(d, &FitParams::Spgp(p), &mut |_| {})
                }),
            ),
            (
                "hs, no prior",
                Box::new(staged(Stage {
                    h_prior: 0.0,
                    ..DEFAULT_STAGE
                })),
            ),
            (
                "hs, no floor",
                Box::new(staged(Stage {
                    noise_floor: 0.0,
                    ..DEFAULT_STAGE
                })),
            ),
            ("hs", Box::new(staged(DEFAULT_STAGE))),
            (
                "hs, moving",
                Box::new(staged(Stage {
                    move_pseudo_inputs: true,
                    ..DEFAULT_STAGE
                })),
            ),
            (
                "hs default",
                Box::new(|d: &Dataset, m| {
                    let p = SparseParams {
                        m,
                        ..SparseParams::default()
                    };
                    fit(d, &FitParams::SpgpHs(p), &mut |_| {})
                }),
            ),
        ];
        for (name, train, test, m) in &sets {
            let mut line = format!("{name:<18} M={m:<3}");
            for (label, fitter) in &fitters {
                let fitted = fitter(train, *m).expect("fits");
                let p = fitted.model.predict_raw(&test.raw_x()).expect("ok");
                let e = crate::evaluate::figures(
                    p.mean.as_slice(),
                    p.var.as_slice(),
                    test.raw_y().as_slice(),
                );
                line += &format!(" | {label} {:.3}", e.nlpd);
                if let Some(choice) = fitted.report.held_out.filter(|_| *label == "hs default") {
                    line += &format!(" ({})", choice.chosen());
                }
            }
            println!("{line}");
        }
    }
}
