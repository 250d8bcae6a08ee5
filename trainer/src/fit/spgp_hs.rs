//! SPGP+HS (Snelson & Ghahramani 2006, section 5): SPGP, then every
//! pseudo-input's uncertainty `h_m` freed from that optimum and optimised
//! with the kernel, the pseudo-inputs held where SPGP put them.
//!
//! The second stage starts every `h_m` at `H_START` `s2` (a start near 0
//! barely moves: the gradient in `log h_m` is proportional to `h_m`),
//! keeps the noise above `NOISE_FLOOR` times SPGP's average noise `v =
//! sigma2 + mean_n (k_nn - q_nn)` and charges each `h_m` `beta / h_m`
//! nats, `beta` a strength times `v`, so that no pseudo-input can pin the
//! predicted noise to zero next to a training point. How strong the prior
//! must be depends on the data: too weak and HS pins, too strong and it
//! cannot follow a noise level that varies. The strength is chosen from
//! `STRENGTHS` by held-out NLPD over folds (of at most `CONTEST_ROWS`
//! rows), each fold's SPGP stage shared by every strength; a fit inside a
//! held-out contest, one of many, chooses it over two folds of its own
//! rows instead (`OwnChoice::Contest`). The report states the strength
//! and the figures it was chosen on (docs/src/model-families.md,
//! "SPGP+HS", has the sets behind each guard). Under VFE the noise is
//! `sigma2` whatever `h` is: the fit runs, but ends near SPGP-VFE, and
//! needs no prior. `h` is not bounded beyond the features' range for
//! `log h`: a pseudo-input switched off is a legitimate optimum (the
//! paper's `h_m -> inf`).

use std::cell::Cell;

use sgp_runtime::ModelKind;

use super::progress::{continuing, recording};
use nalgebra::DMatrix;

use super::restarts::iteration_budget as spgp_budget;
use super::sparse::{minimise_part, SparseFit, StartChoice};
use super::spgp::fit_pseudo_inputs;
use super::{Checked, Fit, Method, SparseParams};
use crate::data::Dataset;
use crate::evaluate::contest::{contest_rows, Contest};
use crate::evaluate::metrics::row_nlpds;
use crate::fit::{OwnChoice, PriorStrength, StrengthScore, WidthSpread};
use crate::model::features::{Heteroscedastic, InducingFeatures, PseudoInputs};
use crate::model::inference::fitc::fitc_posterior;
use crate::model::inference::objective::SparseObjective;
use crate::model::inference::Approximation;
use crate::model::kernel::KernelParams;
use crate::numerics::optimise::Progress;
use crate::{Error, Result};
use rayon::prelude::*;

/// Every `h_m` starts at this fraction of the fitted SPGP's `s2`.
pub(crate) const H_START: f64 = 1e-2;

/// The second stage's noise variance stays above this fraction of the
/// fitted SPGP's average noise variance (`average_noise`).
pub(crate) const NOISE_FLOOR: f64 = 1e-2;

/// Each `h_m` costs `H_PRIOR v / h_m` nats in the second stage, `v` the
/// fitted SPGP's average noise variance (module docs).
pub(crate) const H_PRIOR: f64 = 0.3;

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

/// The prior strengths (fractions of SPGP's average noise `v`) the folds
/// choose from, strongest first; 0 leaves the noise floor alone.
pub(crate) const STRENGTHS: [f64; 6] = [1.0, 0.3, 0.1, 0.03, 0.01, 0.0];

/// Folds the strength is chosen over, every row held out once.
const STRENGTH_FOLDS: usize = 4;

/// Folds the strength is chosen over in a fit inside a held-out contest
/// (`OwnChoice::Contest`): two SPGP stages and twelve second stages where
/// `STRENGTH_FOLDS` take four and 24 (docs/src/model-families.md, "The
/// prior's strength, chosen over folds").
const CONTEST_STRENGTH_FOLDS: usize = 2;

/// Fits SPGP+HS as `params` asks, the strength of the prior on `h` chosen
/// as `own` says (on at most `CONTEST_ROWS` rows: module docs): over
/// `STRENGTH_FOLDS` folds, over `CONTEST_STRENGTH_FOLDS` in a fit inside a
/// held-out contest, or not at all, `H_PRIOR` (`--no-held-out-choice`).
pub(crate) fn fit_spgp_hs(
    data: &Dataset,
    params: &Checked<'_, SparseParams>,
    own: OwnChoice,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    let prior = choose_strength(data, params, own);
    let stage = Stage {
        h_prior: prior.strength,
        ..DEFAULT_STAGE
    };
    let mut fit = fit_staged(data, params, stage, progress)?;
    fit.report.h_prior = Some(prior);
    Ok(fit)
}

/// The prior strength of lowest mean held-out NLPD over the folds `own`
/// asks for (`strength_folds`) of at most `CONTEST_ROWS` rows, each
/// fold's SPGP stage shared by every strength; `H_PRIOR` where the data
/// are too few for them, every fit failed, or `own` is off.
fn choose_strength(
    data: &Dataset,
    params: &Checked<'_, SparseParams>,
    own: OwnChoice,
) -> PriorStrength {
    let default = |why: String| PriorStrength {
        strength: H_PRIOR,
        tried: Vec::new(),
        rows: 0,
        reason: format!("strength {H_PRIOR} of SPGP's average noise (the default): {why}"),
    };
    if params.approximation == Approximation::Vfe {
        return PriorStrength {
            strength: 0.0,
            tried: Vec::new(),
            rows: 0,
            reason: "none: under VFE the noise is sigma2 whatever h is".into(),
        };
    }
    let StrengthFolds { k, folds } = match strength_folds(data, params, own) {
        Ok(folds) => folds,
        Err(why) => return default(why),
    };
    let per_fold: Vec<Vec<Vec<f64>>> = folds
        .par_iter()
        .map(|(train, valid)| fold_nlpds(train, valid, params))
        .collect();
    let contest = Contest::new(
        STRENGTHS.iter().map(f64::to_string).collect(),
        (0..STRENGTHS.len())
            .map(|k| Some(per_fold.iter().flat_map(|f| f[k].clone()).collect()))
            .collect(),
    );
    let Some(best) = contest.lowest() else {
        return default("every fold fit failed".into());
    };
    let at_default = STRENGTHS.iter().position(|&s| s == H_PRIOR).unwrap_or(0);
    let verdict = contest.verdict(at_default, best);
    let (strength, rows) = (STRENGTHS[best], contest.rows);
    let on = format!("over {k} folds of {rows} rows");
    let reason = if best == at_default {
        format!(
            "strength {strength} of SPGP's average noise (the default), chosen {on}: held-out \
             NLPD {:.4}, lowest of {} strengths",
            verdict.challenger_nlpd,
            STRENGTHS.len()
        )
    } else {
        format!(
            "strength {strength} of SPGP's average noise, chosen {on}: held-out NLPD {:.4} \
             against {:.4} at the default {H_PRIOR} (standard error {:.4}), lowest of {} \
             strengths",
            verdict.challenger_nlpd,
            verdict.incumbent_nlpd,
            verdict.standard_error,
            STRENGTHS.len()
        )
    };
    PriorStrength {
        strength,
        tried: STRENGTHS
            .iter()
            .enumerate()
            .map(|(k, &strength)| StrengthScore {
                strength,
                nlpd: contest.mean(k),
            })
            .collect(),
        rows,
        reason,
    }
}

/// The folds a prior strength is chosen on.
struct StrengthFolds {
    /// How many folds `OwnChoice` asks for.
    k: usize,
    /// Each fold's (training, held-out) rows.
    folds: Vec<(Dataset, Dataset)>,
}

/// The folds `own` asks for, of a seeded sample of at most
/// `CONTEST_ROWS` rows of `data`; or why there are none (`OwnChoice::Off`,
/// too few rows).
fn strength_folds(
    data: &Dataset,
    params: &Checked<'_, SparseParams>,
    own: OwnChoice,
) -> std::result::Result<StrengthFolds, String> {
    let k = match own {
        OwnChoice::Off => {
            return Err(
                "held-out choices are off (--no-held-out-choice), so none is chosen over folds"
                    .into(),
            )
        }
        OwnChoice::Contest => CONTEST_STRENGTH_FOLDS,
        OwnChoice::Final => STRENGTH_FOLDS,
    };
    let unmade = || "the folds could not be made".to_string();
    let sample = contest_rows(std::slice::from_ref(data), params.seed).map_err(|_| unmade())?;
    let data = &sample[0];
    let n = data.n_rows();
    if n / k < 5 || n - n.div_ceil(k) <= params.m {
        return Err(format!(
            "{n} rows are too few for {k} folds at M = {}",
            params.m
        ));
    }
    let folds = data.folds(k, params.seed).map_err(|_| unmade())?;
    Ok(StrengthFolds { k, folds })
}

/// Per strength of `STRENGTHS`, the NLPD of each row of `valid` under
/// SPGP+HS fitted to `train` (one SPGP stage for all); infinite where a
/// fit failed.
fn fold_nlpds(
    train: &Dataset,
    valid: &Dataset,
    params: &Checked<'_, SparseParams>,
) -> Vec<Vec<f64>> {
    let failed = || vec![f64::INFINITY; valid.n_rows()];
    let Ok(checked) = params.check(train) else {
        return vec![failed(); STRENGTHS.len()];
    };
    let Ok((spgp, _)) = spgp_stage(train, &checked, &mut |_| {}) else {
        return vec![failed(); STRENGTHS.len()];
    };
    STRENGTHS
        .iter()
        .map(|&h_prior| {
            let stage = Stage {
                h_prior,
                ..DEFAULT_STAGE
            };
            h_stage(train, &checked, &spgp, stage, &mut |_| {})
                .and_then(|fit| row_nlpds(&fit.set.members[0], valid))
                .unwrap_or_else(|_| failed())
        })
        .collect()
}

fn fit_staged(
    data: &Dataset,
    params: &Checked<'_, SparseParams>,
    stage: Stage,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    // Iterations are counted over both stages, as VSGP does.
    let done = Cell::new(0u64);
    let (spgp, starts) = spgp_stage(data, params, &mut recording(&done, progress))?;
    let mut fit = h_stage(data, params, &spgp, stage, &mut continuing(&done, progress))?;
    fit.report.starts = starts;
    Ok(fit)
}

/// The first stage: SPGP as `params` asks, with its starts.
fn spgp_stage(
    data: &Dataset,
    params: &Checked<'_, SparseParams>,
    progress: &mut dyn FnMut(Progress),
) -> Result<(SparseFit<PseudoInputs>, Vec<super::report::StartReport>)> {
    let outputs = std::slice::from_ref(data);
    fit_pseudo_inputs(outputs, params, StartChoice::Objective, progress)
}

/// The second stage: every `h_m` freed from the fitted `spgp` as `stage`
/// says, the result exported as SPGP+HS.
fn h_stage(
    data: &Dataset,
    params: &Checked<'_, SparseParams>,
    spgp: &SparseFit<PseudoInputs>,
    stage: Stage,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    let outputs = std::slice::from_ref(data);
    let spgp_kernel = spgp.kernel().clone();
    let h = stage.h_start * spgp_kernel.signal_var();
    let features = Heteroscedastic::from_pseudo_inputs(&spgp.features, h);
    let noise = average_noise(spgp, &data.x)?;
    let floor = (stage.noise_floor * noise).max(spgp_kernel.noise_floor);
    let kernel = KernelParams::with_noise_floor(
        &spgp_kernel.lengthscales(),
        spgp_kernel.signal_var(),
        spgp_kernel.noise_var().max(floor),
        floor,
    )?
    .with_kernel(spgp_kernel.kernel);
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
    let (p, run) = minimise_part(
        &objective,
        free,
        &|part, grad| h_prior(beta, &part[h_at.clone()], &mut grad[h_at.clone()]),
        &params.optimiser,
        data.n_rows(),
        progress,
    )?;
    let (features, kernel) = objective.unpack(&p)?;
    let posterior = fitc_posterior(&features, &kernel, &data.x, &data.y, &spgp.config)?;
    let fit = SparseFit {
        features,
        kernels: vec![kernel],
        posteriors: vec![posterior],
        config: spgp.config,
        run,
        max_iter: params.optimiser.max_iter,
        sharing: None,
    };
    let h = fit.features.h();
    let mut fit = fit.into_fit(outputs, ModelKind::SpgpHs, Method::SpgpHs)?;
    fit.report.uncertainties = Some(WidthSpread::of(
        h.iter().map(|&h| data.transform.unapply_var(h)).collect(),
    ));
    Ok(fit)
}

/// The fitted SPGP's noise variance averaged over the training rows `x`:
/// `sigma2 + mean_n (k_nn - q_nn)`, FITC's noise at each row (module docs).
///
/// # Errors
/// [`Error::Numerical`] if SPGP's factor of `Kuu` cannot be solved with.
fn average_noise(spgp: &SparseFit<PseudoInputs>, x: &DMatrix<f64>) -> Result<f64> {
    // In blocks of rows, so that a large fit never holds all of `Kuf`.
    const ROWS: usize = 4096;
    let mut correction = 0.0;
    for start in (0..x.nrows()).step_by(ROWS) {
        let rows = x.rows(start, ROWS.min(x.nrows() - start));
        let kuf = spgp.features.kuf(spgp.kernel(), rows);
        let v = spgp.posteriors[0]
            .l1
            .solve_lower_triangular(&kuf)
            .ok_or_else(|| Error::Numerical("SPGP+HS: SPGP's Kuu factor is singular".into()))?;
        correction += spgp.features.kdiag(spgp.kernel(), rows).sum() - v.norm_squared();
    }
    Ok(spgp.kernel().noise_var() + (correction / x.nrows().max(1) as f64).max(0.0))
}

/// The prior on `h`: `beta sum_m 1 / h_m` over `log_h` (the `log h_m`),
/// its gradient in the `log h_m` added to `grad` (module docs).
fn h_prior(beta: f64, log_h: &[f64], grad: &mut [f64]) -> f64 {
    log_h
        .iter()
        .zip(grad)
        .map(|(&log_h, grad)| {
            let cost = beta * libm::exp(-log_h);
            *grad -= cost;
            cost
        })
        .sum()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::fit::sparse::fit_sparse;
    use crate::fit::{data_scale_kernel, fit, FitParams};
    use crate::model::inference::fitc::FitcConfig;
    use crate::numerics::optimise::OptimiseOptions;

    /// The paper's procedure: `h` learned with everything else from the
    /// first iteration (one k-means start, a budget of both stages).
    fn fit_joint(data: &Dataset, params: &SparseParams, h_start: f64) -> Result<Fit> {
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
        let one = std::slice::from_ref(data);
        let fit = fit_sparse(one, features, vec![kern], config, &options, &mut |_| {})?;
        fit.into_fit(one, ModelKind::SpgpHs, Method::SpgpHs)
    }

    fn data(n: usize) -> Dataset {
        crate::synth::dataset(crate::synth::Shape::Heteroscedastic, n, 0).expect("valid")
    }

    fn params(m: usize, approximation: Approximation, restarts: usize) -> SparseParams {
        SparseParams {
            m,
            approximation,
            restarts,
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
                hs.report.outputs[0].noise_variance,
                spgp.report.outputs[0].noise_variance,
            );
            assert!(
                n_hs >= NOISE_FLOOR * n_spgp * (1.0 - 1e-9),
                "{n_hs} vs {n_spgp}"
            );
            let test =
                crate::synth::dataset(crate::synth::Shape::Heteroscedastic, 200, 1).expect("valid");
            let nlpd = |f: &Fit| {
                let p = f.set.members[0]
                    .predict_raw(&test.raw_x())
                    .expect("predicts");
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
            assert_eq!(hs.set.members[0].kind, ModelKind::SpgpHs);
            let spec = hs.set.members[0].to_spec().expect("fits a blob");
            assert!(!spec.shape.per_basis && !spec.shape.projected);
            assert_eq!(spec.shape.kind, ModelKind::SpgpHs);
            assert!(hs.with_jitter(1e-4, 0).is_ok());
            assert!(hs.with_jitter(1e-4, 3).is_ok());
        }
    }

    /// Where noise varies HS clearly wins on held-out rows; where it does
    /// not, plain SPGP predicts them better and the choice says so; HS is
    /// the model either way.
    #[test]
    fn on_small_data_hs_is_weighed_against_spgp_on_held_out_rows() {
        use crate::choose::{fit as choose, Asked, Request};
        use crate::synth::Shape;
        let mut lost = 0;
        for shape in [Shape::Heteroscedastic, Shape::VeryNoisy, Shape::Linear] {
            let train = crate::synth::dataset(shape, 400, 0).expect("valid");
            let request = Request {
                asked: Asked::Family(FitParams::SpgpHs(params(8, Approximation::Fitc, 2))),
                held_out: true,
                choose_objective: true,
                choose_kernel: false,
            };
            let hs = choose(&train, &request, &mut |_| {}).expect("fits");
            assert_eq!(hs.set.members[0].kind, ModelKind::SpgpHs);
            assert!(hs.report.uncertainties.is_some());
            let choice = hs.report.choice.clone().expect("a choice on 400 rows");
            let verdict = choice.candidates[2].against.clone().expect("weighed");
            assert_eq!(verdict.challenger, "spgp-hs");
            assert_eq!(verdict.rows, 400, "every row is held out once");
            if shape == Shape::Heteroscedastic {
                assert!(verdict.challenger_chosen, "{choice:?}");
            }
            lost += usize::from(choice.spgp_not_beaten());
        }
        assert!(lost > 0, "HS beat SPGP on every homoscedastic set");
    }

    /// Held-out choices off (`--no-held-out-choice`): no fold choice of
    /// the prior strength either, and the report says so; on, the folds
    /// weigh every strength. HS's sigma2 on its floor is never reported as
    /// FITC absorbing the noise (the h carry it).
    #[test]
    fn without_held_out_choices_the_prior_strength_is_the_fixed_default() {
        use crate::choose::{fit as choose, Asked, Request};
        use crate::synth::Shape;
        let train = crate::synth::dataset(Shape::Heteroscedastic, 200, 0).expect("valid");
        let request = |held_out| Request {
            asked: Asked::Family(FitParams::SpgpHs(params(8, Approximation::Fitc, 2))),
            held_out,
            choose_objective: false,
            choose_kernel: false,
        };
        let off = choose(&train, &request(false), &mut |_| {}).expect("fits");
        let prior = off.report.h_prior.clone().expect("a prior");
        assert_eq!(prior.strength, H_PRIOR, "{}", prior.reason);
        assert!(prior.tried.is_empty(), "{prior:?}");
        assert!(
            prior.reason.contains("--no-held-out-choice"),
            "{}",
            prior.reason
        );
        let on = choose(&train, &request(true), &mut |_| {}).expect("fits");
        let prior = on.report.h_prior.clone().expect("a prior");
        assert_eq!(prior.tried.len(), STRENGTHS.len(), "{}", prior.reason);
        for fit in [&off, &on] {
            assert!(
                !fit.report.outputs[0].noise_on_floor,
                "{:?}",
                fit.kernels[0]
            );
        }
    }

    /// Inside a held-out contest (`OwnChoice::Contest`) the strength is
    /// chosen over two folds of the fit's own rows, every strength tried
    /// there; a final fit (`fit`: `OwnChoice::Final`) chooses it over four;
    /// and each report says which, on every seed. Too few rows for two
    /// folds: the default.
    #[test]
    fn a_contest_fit_chooses_its_strength_over_two_folds() {
        let hs = |seed| {
            FitParams::SpgpHs(SparseParams {
                seed,
                ..params(6, Approximation::Fitc, 1)
            })
        };
        let heteroscedastic = |rows, seed| {
            crate::synth::dataset(crate::synth::Shape::Heteroscedastic, rows, seed).expect("valid")
        };
        let contest = |train: &Dataset, seed| {
            let fit = crate::fit::fit_choosing(train, &hs(seed), OwnChoice::Contest, &mut |_| {});
            fit.expect("fits").report.h_prior.expect("a prior")
        };
        for seed in 0..3u64 {
            let train = heteroscedastic(160, seed);
            let prior = contest(&train, seed);
            assert_eq!(prior.rows, 160, "every row held out once");
            assert_eq!(prior.tried.len(), STRENGTHS.len(), "{}", prior.reason);
            assert!(
                prior.reason.contains("over 2 folds of 160 rows"),
                "{}",
                prior.reason
            );
            let last = fit(&train, &hs(seed), &mut |_| {}).expect("fits");
            let prior = last.report.h_prior.expect("a prior");
            assert_eq!(prior.rows, 160, "every row held out once");
            assert!(
                prior.reason.contains("over 4 folds of 160 rows"),
                "{}",
                prior.reason
            );
        }
        let prior = contest(&heteroscedastic(10, 0), 0);
        assert_eq!(prior.strength, H_PRIOR);
        assert!(
            prior.reason.contains("too few for 2 folds"),
            "{}",
            prior.reason
        );
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
    fn pinning(fitted: &Fit, test: &Dataset) -> (f64, f64, f64) {
        let shape = crate::synth::Shape::Heteroscedastic;
        let p = fitted.set.members[0]
            .predict_raw(&test.raw_x())
            .expect("predicts");
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
            crate::synth::dataset(crate::synth::Shape::Heteroscedastic, 200, seed).expect("valid");
        let (train, test) = d.split(0.25, seed).expect("splits");
        let params = SparseParams {
            m: 10,
            seed,
            ..SparseParams::default()
        };
        (train, test, params)
    }

    /// Without the prior on `h`, a pseudo-input with `h_m` near 0 where the
    /// noise is large can predict a fifth of the noise's standard deviation
    /// there, and one held-out row cost tens of nats; with it, HS predicts
    /// nearly half the true noise everywhere (module docs, "A prior on
    /// h"). Which sets pin depends on the optimiser's path (seed 9 pinned on
    /// one CPU and not on another), so this compares the two over twelve
    /// sets: with the prior no row costs over 12 nats and at most one set
    /// predicts under 0.4 of the noise; without it at least two sets do
    /// each, and the prior's mean NLPD is lower by 0.05.
    #[test]
    fn the_prior_on_h_keeps_hs_from_pinning_the_noise_to_zero() {
        let seeds = 1..=12u64;
        let (mut with, mut bare) = (Vec::new(), Vec::new());
        for seed in seeds.clone() {
            let (train, test, params) = pinning_set(seed);
            let checked = params.check(&train).expect("valid");
            let fit_with = |h_prior| {
                let stage = Stage {
                    h_prior,
                    ..DEFAULT_STAGE
                };
                fit_staged(&train, &checked, stage, &mut |_| {}).expect("fits")
            };
            with.push(pinning(&fit_with(H_PRIOR), &test));
            bare.push(pinning(&fit_with(0.0), &test));
            eprintln!("seed {seed}: with {:?} bare {:?}", with.last(), bare.last());
        }
        // Seen on 12 sets, native and under SGP_TRAJECTORY_NUDGE=1..3: with
        // the prior every worst row under 7.5 nats and every ratio above
        // 0.44; without it 3 sets with a worst row of 16 to 57 nats and 3
        // or 4 with a ratio under 0.35, the mean NLPD 0.1 higher.
        let costly = |r: &&(f64, f64, f64)| r.1 > 12.0;
        let pinned = |r: &&(f64, f64, f64)| r.2 < 0.35;
        let n = with.len();
        assert_eq!(with.iter().filter(costly).count(), 0, "{with:?}");
        assert!(
            with.iter().filter(|r| r.2 > 0.4).count() >= n - 1,
            "{with:?}"
        );
        assert!(bare.iter().filter(costly).count() >= 2, "{bare:?}");
        assert!(bare.iter().filter(pinned).count() >= 2, "{bare:?}");
        let mean = |v: &[(f64, f64, f64)]| v.iter().map(|r| r.0).sum::<f64>() / n as f64;
        assert!(
            mean(&with) < mean(&bare) - 0.05,
            "{with:?} against {bare:?}"
        );
    }

    /// The folds choose the prior's strength (and the choice layer the
    /// objective) from the noise they see: over 200-row sets of four
    /// varying-noise shapes (three seeds each) SPGP+HS as `--model
    /// spgp-hs` fits it beats SPGP as `--model spgp` fits it by 0.1 test
    /// NLPD on average, and over two constant-noise shapes it stays
    /// within 0.03 of it on average (measured: -0.21 and -0.01 over six
    /// seeds each, docs/src/model-families.md, "The prior's strength").
    /// On the twelve pinning sets no held-out row costs over 12 nats.
    #[test]
    fn the_folds_choose_a_prior_strength_that_fits_the_noise() {
        use crate::choose::{fit as choose, Asked, Request};
        let request = |params: FitParams| Request {
            asked: Asked::Family(params),
            held_out: true,
            choose_objective: true,
            choose_kernel: false,
        };
        let gap = |train: &Dataset, test: &Dataset, seed: u64| {
            let params = SparseParams {
                m: 10,
                seed,
                ..SparseParams::default()
            };
            let hs = choose(
                train,
                &request(FitParams::SpgpHs(params.clone())),
                &mut |_| {},
            );
            let spgp = choose(train, &request(FitParams::Spgp(params)), &mut |_| {});
            let hs = hs.expect("fits");
            assert!(hs.report.h_prior.is_some(), "HS states its prior");
            assert_eq!(hs.set.members[0].kind, ModelKind::SpgpHs);
            test_nlpd(&hs, test) - test_nlpd(&spgp.expect("fits"), test)
        };
        let (mut varying, mut constant) = (Vec::new(), Vec::new());
        for (k, _) in NOISE_SHAPES.iter().enumerate() {
            for seed in 0..3u64 {
                let train = noise_shape_set(k, 200, seed);
                let test = noise_shape_set(k, 1000, 1000 + seed);
                let d = gap(&train, &test, seed);
                if k < 4 { &mut varying } else { &mut constant }.push(d);
            }
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        eprintln!("varying {varying:?} constant {constant:?}");
        assert!(mean(&varying) < -0.1, "{varying:?}");
        assert!(mean(&constant) < 0.03, "{constant:?}");
        for seed in 1..=12u64 {
            let (train, test, params) = pinning_set(seed);
            let hs = fit(&train, &FitParams::SpgpHs(params), &mut |_| {}).expect("fits");
            let (_, worst, _) = pinning(&hs, &test);
            assert!(worst < 12.0, "seed {seed}: a row cost {worst} nats");
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
        let expected: f64 = log_h.iter().map(|v| 0.3 / libm::exp(*v)).sum();
        assert!((value - expected).abs() < 1e-12 * expected);
        // It vanishes for h far above beta and grows without bound below.
        assert!(h_prior(0.3, &[20.0], &mut [0.0]) < 1e-8);
        assert!(h_prior(0.3, &[-20.0], &mut [0.0]) > 1e7);
    }

    /// Measures the prior on `h` (module docs) on 40
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
            let spgp = SparseParams { ..params.clone() };
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
                crate::synth::dataset(crate::synth::Shape::Heteroscedastic, 600, 0).expect("ok"),
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
                    let score = |label: &str, f: Result<Fit>| match f {
                        Ok(f) => {
                            let p = f.set.members[0].predict_raw(&test.raw_x()).expect("ok");
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
        use crate::synth::Shape;
        let mcycle = concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/data/mcycle.csv");
        let mcycle = Dataset::from_csv(mcycle, None).expect("fetched");
        // 200-row heteroscedastic sets and 100-row mcycle splits at M = 10;
        // the suite's heteroscedastic and mcycle splits at M = 10 and 30;
        // two homoscedastic 200-row sets.
        let mut sets: Vec<(String, Dataset, Dataset, usize)> = Vec::new();
        for seed in 1..=6u64 {
            let d = crate::synth::dataset(Shape::Heteroscedastic, 286, seed).expect("ok");
            let (train, test) = d.split(86.0 / 286.0, seed).expect("ok");
            sets.push((format!("heteroscedastic/{seed}"), train, test, 10));
        }
        for seed in 0..4u64 {
            let (train, test) = mcycle.split(33.0 / 133.0, seed).expect("ok");
            sets.push((format!("mcycle 100/{seed}"), train, test, 10));
        }
        let d = crate::synth::dataset(Shape::Heteroscedastic, 600, 0).expect("ok");
        let (train, test) = d.split(0.3, 0).expect("ok");
        let (mtrain, mtest) = mcycle.split(0.3, 0).expect("ok");
        for m in [10, 30] {
            sets.push(("heteroscedastic".into(), train.clone(), test.clone(), m));
            sets.push(("mcycle".into(), mtrain.clone(), mtest.clone(), m));
        }
        for shape in [Shape::Periodic, Shape::Chirp] {
            let d = crate::synth::dataset(shape, 286, 1).expect("ok");
            let (train, test) = d.split(86.0 / 286.0, 1).expect("ok");
            sets.push((format!("{} 200", shape.name()), train, test, 10));
        }
        let staged = |stage: Stage| {
            move |d: &Dataset, m: usize| {
                let p = SparseParams {
                    m,
                    ..SparseParams::default()
                };
                fit_staged(d, &p.check(d)?, stage, &mut |_| {})
            }
        };
        type Fitter = Box<dyn Fn(&Dataset, usize) -> Result<Fit>>;
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
                    let request = crate::choose::Request {
                        asked: crate::choose::Asked::Family(FitParams::SpgpHs(p)),
                        held_out: true,
                        choose_objective: true,
                        choose_kernel: false,
                    };
                    crate::choose::fit(d, &request, &mut |_| {})
                }),
            ),
        ];
        for (name, train, test, m) in &sets {
            let mut line = format!("{name:<18} M={m:<3}");
            for (label, fitter) in &fitters {
                let fitted = fitter(train, *m).expect("fits");
                let p = fitted.set.members[0]
                    .predict_raw(&test.raw_x())
                    .expect("ok");
                let e = crate::evaluate::figures(
                    p.mean.as_slice(),
                    p.var.as_slice(),
                    test.raw_y().as_slice(),
                );
                line += &format!(" | {label} {:.3}", e.nlpd);
                if let Some(choice) = fitted.report.choice.filter(|_| *label == "hs default") {
                    line += &format!(" ({})", choice.reason);
                }
            }
            println!("{line}");
        }
    }

    /// Noise shapes of the prior-strength measurements: `(name, f, sd)` of
    /// `x` in `[0, 10]`; the last two are homoscedastic.
    #[allow(clippy::type_complexity)]
    pub(super) const NOISE_SHAPES: [(&str, fn(f64) -> f64, fn(f64) -> f64); 6] = [
        ("linear sd", |x| 2.0 * libm::sin(x), |x| 0.05 + 0.15 * x),
        ("quiet left", libm::sin, |x| {
            0.02 + 0.3 * (x / 10.0) * (x / 10.0)
        }),
        ("step", libm::sin, |x| if x < 5.0 { 0.05 } else { 0.5 }),
        (
            "bump",
            |x| libm::sin(x) + 0.2 * x,
            |x| 0.05 + 0.5 * libm::exp(-0.5 * (x - 5.0) * (x - 5.0)),
        ),
        ("constant 0.2", libm::sin, |_| 0.2),
        ("constant 0.05", |x| libm::sin(2.0 * x), |_| 0.05),
    ];

    /// `rows` rows of noise shape `k` (seed `seed`).
    pub(super) fn noise_shape_set(k: usize, rows: usize, seed: u64) -> Dataset {
        use rand::{Rng, SeedableRng};
        let (_, f, sd) = NOISE_SHAPES[k];
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let x = DMatrix::from_fn(rows, 1, |_, _| rng.random_range(0.0..10.0));
        let y = nalgebra::DVector::from_fn(rows, |i, _| {
            let e: f64 = rng.sample(rand_distr::StandardNormal);
            f(x[(i, 0)]) + sd(x[(i, 0)]) * e
        });
        Dataset::from_raw(x, y, vec!["x".into()], "y".into()).expect("valid")
    }

    /// Test NLPD (raw units) of `fitted` on `test` (also VSGP's tests').
    pub(in crate::fit) fn test_nlpd(fitted: &Fit, test: &Dataset) -> f64 {
        let p = fitted.set.members[0]
            .predict_raw(&test.raw_x())
            .expect("predicts");
        crate::evaluate::figures(p.mean.as_slice(), p.var.as_slice(), test.raw_y().as_slice()).nlpd
    }

    /// Measures HS's prior strength against SPGP (`--model spgp` as the CLI
    /// fits it) on 200-row sets of every noise shape (seeds 0 to 5, 2000
    /// test rows), `mcycle` 100/33 and diabetes 332/110 splits:
    /// `cargo test --release -p sgp-trainer --lib measure_hs_strengths --
    /// --ignored --nocapture`.
    #[test]
    #[ignore]
    fn measure_hs_strengths() {
        let strengths = [1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.0];
        let bench = |name: &str| {
            let path = format!("{}/../bench/data/{name}.csv", env!("CARGO_MANIFEST_DIR"));
            Dataset::from_csv(path, None).ok()
        };
        let mut sets: Vec<(String, Dataset, Dataset, usize)> = Vec::new();
        for (k, (name, _, _)) in NOISE_SHAPES.iter().enumerate() {
            for seed in 0..6u64 {
                let train = noise_shape_set(k, 200, seed);
                let test = noise_shape_set(k, 2000, 1000 + seed);
                sets.push((format!("{name}/{seed}"), train, test, 10));
            }
        }
        if let Some(mcycle) = bench("mcycle") {
            for seed in 0..6u64 {
                let (train, test) = mcycle.split(33.0 / 133.0, seed).expect("ok");
                sets.push((format!("mcycle/{seed}"), train, test, 10));
            }
        }
        if let Some(diabetes) = bench("diabetes") {
            for seed in 0..4u64 {
                let (train, test) = diabetes.split(110.0 / 442.0, seed).expect("ok");
                sets.push((format!("diabetes/{seed}"), train, test, 25));
            }
        }
        for (name, train, test, m) in &sets {
            let params = SparseParams {
                m: *m,
                seed: name.bytes().last().map_or(0, |b| u64::from(b - b'0')),
                ..SparseParams::default()
            };
            let request = crate::choose::Request {
                asked: crate::choose::Asked::Family(FitParams::Spgp(params.clone())),
                held_out: true,
                choose_objective: true,
                choose_kernel: false,
            };
            let spgp = crate::choose::fit(train, &request, &mut |_| {}).expect("fits");
            let mut line = format!("{name:<18} spgp {:.3} |", test_nlpd(&spgp, test));
            let checked = params.check(train).expect("valid");
            let (first, _) = spgp_stage(train, &checked, &mut |_| {}).expect("fits");
            for s in strengths {
                let stage = Stage {
                    h_prior: s,
                    ..DEFAULT_STAGE
                };
                let hs = h_stage(train, &checked, &first, stage, &mut |_| {}).expect("fits");
                line += &format!(" {s}: {:.3}", test_nlpd(&hs, test));
            }
            let request = crate::choose::Request {
                asked: crate::choose::Asked::Family(FitParams::SpgpHs(params.clone())),
                ..request
            };
            let hs = crate::choose::fit(train, &request, &mut |_| {}).expect("fits");
            let strength = hs.report.h_prior.as_ref().map_or(f64::NAN, |p| p.strength);
            let (a, b) = (test_nlpd(&hs, test), test_nlpd(&spgp, test));
            let objective = hs
                .report
                .approximation
                .map_or("-".into(), |a| format!("{a:?}"));
            println!(
                "{line} | chosen {objective} {strength}: {a:.3} ({:+.3})",
                a - b
            );
        }
    }
}
