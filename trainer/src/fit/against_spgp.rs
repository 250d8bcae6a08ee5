//! SPGP+HS, VSGP, SPGP+DR and GPLasso on small data: kept only where they
//! beat the SPGP that `--model spgp` would fit, on held-out rows.
//!
//! Each of these families is SPGP with more freedom: an uncertainty per
//! pseudo-input (HS), widths per basis function (VSGP), a learned
//! projection (DR). On a few hundred rows the training objective rewards
//! that freedom whether or not it predicts better, and each was a trap
//! there (suite, 70/30 split, test NLPD against SPGP's at the same M):
//! SPGP+HS on `mcycle` (93 rows, M = 30) 4.84 against 4.69, VSGP on
//! `mcycle` at M = 10 4.97 against 4.68, SPGP+DR with G = 2 on diabetes
//! (309 rows, M = 10) 6.65 against 5.34, and on few-directions (700 x 32,
//! M = 10) 51.9 against 1.35: a projection that explains the training rows
//! and is confidently wrong on new ones.
//!
//! GPLasso with its basis moved (the default) is SPGP from the lasso's
//! starts, and those can be the worse ones: on 24 100-row `mcycle` splits
//! (M = 10) it was more than 0.10 behind SPGP on 8 (by up to 31.9 where
//! its FITC noise collapsed), on 24 200-row heteroscedastic splits on 3
//! (docs/src/model-families.md, "GPLasso").
//!
//! One rule serves the four. Where SPGP itself would make its held-out
//! choice ([`held_out::applies`], with the fit's `held_out_choice` on),
//! the family and that SPGP (its objective chosen on held-out rows as
//! `--model spgp` chooses it) are both fitted on each of
//! [`held_out::CHOICE_FOLDS`] folds and scored on the rows each fold holds
//! out (held_out, "Cross-validated"). The family is kept only if it wins by
//! more than [`held_out::MARGIN_SE`] standard errors of the paired per-row
//! difference; otherwise the model is the SPGP fit on all rows (noise
//! collapse rule included: [`super::spgp::fit_chosen_objective`]), exported
//! under the family's kind, and the report's `held_out` names SPGP as
//! chosen. SPGP is each family's own limit or a special case of it (all
//! `h_m = 0`; every width at `l^2`; a projection `diag(1/l)` with G = D),
//! so the fallback is the family with its extra freedom unused (for
//! GPLasso: the same model class from SPGP's own starts). On larger
//! data the training objective is trusted and the family is fitted as is.
//!
//! The price is the fits on the folds: four of the family and four of SPGP,
//! after SPGP's own two-candidate choice, and all on fewer than 2000 rows.
//!
//! # Both objectives
//!
//! SPGP+HS and GPLasso must beat SPGP with either objective on the folds
//! ([`Rivals::BothObjectives`]: four more fits, of the other objective).
//! SPGP's own choice picks FITC or VFE on one 25% split, and FITC fitted
//! on three quarters of 100 `mcycle` rows is heavy-tailed: on 24 splits
//! of the peer benchmark's `mcycle` (M = 10) its fold NLPD reached 5.3 to
//! 11.2 where the FITC fit on all rows scored 4.2 to 4.4 on the test rows,
//! so HS won the folds against a model no user would get. Against the
//! better of the two objectives, SPGP+HS was worse than SPGP by more than
//! 0.01 on 3 of those 24 splits instead of 7, and unchanged on 24
//! heteroscedastic splits (docs/src/model-families.md, "SPGP+HS"). For
//! GPLasso with one rival, `mcycle` split 13 kept a fit that scored 36.2
//! on the test rows (SPGP 4.3), and 3 of 24 splits stayed more than 0.10
//! behind; with both, 1. Where the family loses, the model is still the
//! SPGP `--model spgp` fits, and the report weighs the family against that
//! SPGP.
//!
//! VSGP and SPGP+DR keep the one rival ([`Rivals::ChosenObjective`]):
//! with both objectives, VSGP lost more on the test rows than it saved.
//! On the suite its `mcycle` at M = 30 fell back to SPGP (4.581 to
//! 4.685); on 24 splits of the peer benchmark's 200-row heteroscedastic
//! set (M = 10) it was worse than with one rival by more than 0.01 on 7
//! (by up to 0.63, mean +0.081) and better on none, and on 24 `mcycle`
//! splits (100 rows, M = 10) worse on 6 and better on 2. SPGP+DR's choice
//! changed on none of the suite's 20 SPGP+DR figures nor on 24 splits of
//! diabetes (G = 2, M = 10) (docs/src/model-families.md, "The suite:
//! VSGP and SPGP+DR").

use sgp_runtime::ModelKind;

use super::held_out;
use super::spgp::{fit_chosen_objective, objective_candidates, objective_name, other_objective};
use super::{refit, Checked, FitParams, Fitted, SparseParams};
use crate::data::Dataset;
use crate::numerics::optimise::Progress;
use crate::Result;

/// Which SPGP fits a family must beat on the folds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rivals {
    /// The SPGP with the objective SPGP's own held-out choice picked.
    ChosenObjective,
    /// SPGP with either objective: the family is kept only if it beats the
    /// better of FITC and VFE on the folds (SPGP+HS, module docs, "Both
    /// objectives").
    BothObjectives,
}

/// The family that `family` makes of sparse settings, fitted on `data` by
/// `fit_family` unless, on small data, plain SPGP (`rivals`) beats it on
/// held-out rows (module docs); then SPGP's fit, under `kind`.
pub(crate) fn unless_spgp_wins(
    data: &Dataset,
    params: &Checked<'_, SparseParams>,
    family: impl Fn(SparseParams) -> FitParams,
    kind: ModelKind,
    rivals: Rivals,
    progress: &mut dyn FnMut(Progress),
    fit_family: impl FnOnce(&mut dyn FnMut(Progress)) -> Result<Fitted>,
) -> Result<Fitted> {
    if !(params.held_out_choice && held_out::applies(data.n_rows(), params.m)) {
        return fit_family(progress);
    }
    let objectives = objective_candidates(params);
    let mut spgp_choice = held_out::score(data, params.seed, &objectives, &refit)?.verdict(0, 1);
    let asked = SparseParams {
        held_out_choice: false,
        ..(**params).clone()
    };
    let spgp = SparseParams {
        approximation: if spgp_choice.challenger_chosen {
            other_objective(asked.approximation)
        } else {
            asked.approximation
        },
        ..asked.clone()
    };
    let challenger = family(asked.clone());
    let method = challenger.method();
    let other = SparseParams {
        approximation: other_objective(spgp.approximation),
        ..spgp.clone()
    };
    let mut candidates = vec![
        (
            objective_name("spgp", spgp.approximation),
            FitParams::Spgp(spgp),
        ),
        (method.name(), challenger),
    ];
    if rivals == Rivals::BothObjectives {
        candidates.push((
            objective_name("spgp", other.approximation),
            FitParams::Spgp(other),
        ));
    }
    let scores = held_out::cross_validate(data, params.seed, &candidates, &refit)?;
    // Each SPGP rival against the family; the toughest (lowest held-out
    // NLPD) decides.
    let verdicts: Vec<_> = (0..candidates.len())
        .filter(|&rival| rival != 1)
        .map(|rival| scores.verdict(rival, 1))
        .collect();
    let toughest = verdicts
        .iter()
        .min_by(|a, b| a.incumbent_nlpd.total_cmp(&b.incumbent_nlpd))
        .cloned()
        .unwrap_or_else(|| scores.verdict(0, 1));
    let (mut fitted, choice) = if toughest.challenger_chosen {
        (fit_family(progress)?, toughest)
    } else {
        // As `--model spgp` fits it, a collapsed FITC noise included; the
        // report weighs the family against that SPGP where the folds have
        // it, and says the family lost (to the toughest rival) even where
        // it beat this one.
        let (spgp, starts) = fit_chosen_objective(data, &asked, &mut spgp_choice, progress)?;
        let mut fitted = spgp.into_fitted(data, kind, method);
        fitted.report.starts = starts;
        let mut exported = verdicts
            .into_iter()
            .find(|v| v.incumbent == spgp_choice.chosen())
            .unwrap_or_else(|| toughest.clone());
        exported.challenger_chosen = false;
        if exported.incumbent != toughest.incumbent {
            exported.lost_to = Some(held_out::Rival {
                name: toughest.incumbent,
                nlpd: toughest.incumbent_nlpd,
                standard_error: toughest.standard_error,
            });
        }
        (fitted, exported)
    };
    fitted.report.held_out = Some(choice);
    Ok(fitted)
}

#[cfg(test)]
mod tests {
    use nalgebra::{DMatrix, DVector};

    use crate::data::Dataset;
    use crate::fit::gplasso::GplassoParams;
    use crate::fit::spgp::objective_candidates;
    use crate::fit::{fit, held_out, refit, FitParams, Method, ProjectedParams, SparseParams};
    use crate::numerics::optimise::OptimiseOptions;
    use crate::tools::synth::{dataset, Shape};

    /// A target that needs both of its inputs: no single direction of them
    /// explains it.
    fn product_of_waves(n: usize) -> Dataset {
        let x = DMatrix::from_fn(n, 2, |i, j| {
            let u = ((i * (7 + 4 * j) + 3 * j) % n) as f64 / n as f64;
            6.0 * u - 3.0
        });
        let y = DVector::from_fn(n, |i, _| {
            let wiggle = 0.1 * ((i * 13 % 17) as f64 / 8.0 - 1.0);
            libm::sin(1.5 * x[(i, 0)]) * libm::cos(1.5 * x[(i, 1)]) + wiggle
        });
        Dataset::from_raw(x, y, vec!["a".into(), "b".into()], "y".into()).expect("valid")
    }

    fn sparse(held_out_choice: bool) -> SparseParams {
        SparseParams {
            m: 12,
            restarts: 2,
            held_out_choice,
            optimiser: OptimiseOptions {
                max_iter: 60,
                ..OptimiseOptions::default()
            },
            ..SparseParams::default()
        }
    }

    /// SPGP+DR with G = 1 cannot follow a target of two directions: on
    /// small data the folds show it, and the model is exactly the SPGP that
    /// `--model spgp` fits, under SPGP+DR's kind and method; without the
    /// choice (or on large data) the projection is fitted as asked.
    #[test]
    fn a_family_that_loses_on_held_out_rows_is_spgp_under_its_name() {
        let train = product_of_waves(240);
        let dr = |held_out_choice| {
            FitParams::SpgpDr(ProjectedParams {
                sparse: sparse(held_out_choice),
                dim: 1,
            })
        };
        let fallen = fit(&train, &dr(true), &mut |_| {}).expect("fits");
        let choice = fallen
            .report
            .held_out
            .clone()
            .expect("a choice on 240 rows");
        assert_eq!(choice.challenger, "spgp-dr");
        assert_eq!(choice.rows, 240, "every row is held out once");
        assert!(!choice.challenger_chosen, "{choice:?}");
        assert!(choice.incumbent_nlpd < choice.challenger_nlpd, "{choice:?}");
        assert_eq!(fallen.report.method, Method::SpgpDr);
        assert_eq!(fallen.model.kind, sgp_runtime::ModelKind::SpgpDr);
        assert!(fallen.report.projection.is_none());
        assert_eq!(fallen.report.hyper.lengthscales.len(), 2);
        let spgp = fit(&train, &FitParams::Spgp(sparse(true)), &mut |_| {}).expect("fits");
        assert_eq!(spgp.model.form.beta, fallen.model.form.beta);
        assert_eq!(
            Some(choice.incumbent.as_str()),
            spgp.report.held_out.as_ref().map(|c| c.chosen())
        );

        let asked = fit(&train, &dr(false), &mut |_| {}).expect("fits");
        assert!(asked.report.held_out.is_none());
        assert!(asked.report.projection.is_some());
    }

    /// SPGP+HS must beat SPGP with either objective on the folds: HS is
    /// weighed against whichever SPGP objective scores better there, not
    /// against the one SPGP's own choice keeps (FITC unless VFE is clearly
    /// better). Checked on eight heteroscedastic sets, of which at least one
    /// must tell the two apart (SPGP keeps FITC, VFE scores better), so the
    /// test fails if HS is weighed against SPGP's own choice (seen: 1 to 3
    /// of 8, native and under SGP_TRAJECTORY_NUDGE=1..3).
    #[test]
    fn spgp_hs_is_weighed_against_the_better_spgp_objective() {
        let mut telling = 0;
        for seed in 1..=8 {
            let train = dataset(Shape::Heteroscedastic, 200, seed).expect("generates");
            let params = sparse(true);
            let spgp = fit(&train, &FitParams::Spgp(params.clone()), &mut |_| {}).expect("fits");
            let own = spgp.report.held_out.expect("a choice on 200 rows");
            let hs = fit(&train, &FitParams::SpgpHs(params.clone()), &mut |_| {}).expect("fits");
            let choice = hs.report.held_out.expect("a choice on 200 rows");
            let folds = held_out::cross_validate(
                &train,
                params.seed,
                &objective_candidates(&params),
                &refit,
            )
            .expect("scores")
            .verdict(0, 1);
            let (better, nlpd) = if folds.challenger_nlpd < folds.incumbent_nlpd {
                ("spgp (vfe)", folds.challenger_nlpd)
            } else {
                ("spgp (fitc)", folds.incumbent_nlpd)
            };
            assert_eq!(
                choice.incumbent, better,
                "seed {seed}: {choice:?} {folds:?}"
            );
            assert_eq!(choice.incumbent_nlpd, nlpd, "seed {seed}: {folds:?}");
            eprintln!(
                "seed {seed}: SPGP keeps {}, folds favour {better}",
                own.chosen()
            );
            telling += usize::from(own.chosen() != better);
        }
        assert!(
            telling >= 1,
            "no set where SPGP's own choice is the worse objective"
        );
    }

    /// GPLasso (its basis moved, the default) is weighed against the
    /// better SPGP objective too: where it loses, the model is exactly
    /// `--model spgp`'s fit under GPLasso's kind, with no selection in the
    /// report; where it wins, the lasso's selection is there; without the
    /// choice it is GPLasso whatever the folds say.
    #[test]
    fn gplasso_is_weighed_against_spgp_on_small_data() {
        let gplasso = |m, held_out_choice| {
            FitParams::Gplasso(GplassoParams {
                m,
                held_out_choice,
                optimiser: sparse(true).optimiser,
                ..GplassoParams::default()
            })
        };
        let spgp = |m| {
            FitParams::Spgp(SparseParams {
                m,
                optimiser: sparse(true).optimiser,
                ..SparseParams::default()
            })
        };
        let mut outcomes = Vec::new();
        // GPLasso loses on the first set's folds and wins on the second's.
        for rows in [200, 420] {
            let train = dataset(Shape::Heteroscedastic, rows, 1).expect("generates");
            let m = 10;
            let fitted = fit(&train, &gplasso(m, true), &mut |_| {}).expect("fits");
            let choice = fitted.report.held_out.clone().expect("a choice");
            assert_eq!(choice.challenger, "gplasso", "{choice:?}");
            assert!(choice.incumbent.starts_with("spgp ("), "{choice:?}");
            assert_eq!(choice.rows, train.n_rows(), "every row held out once");
            assert_eq!(fitted.model.kind, sgp_runtime::ModelKind::GpLasso);
            assert_eq!(fitted.report.method, Method::Gplasso);
            assert_eq!(fitted.report.gplasso.is_some(), choice.challenger_chosen);
            if !choice.challenger_chosen {
                let spgp = fit(&train, &spgp(m), &mut |_| {}).expect("fits");
                assert_eq!(spgp.model.form.beta, fitted.model.form.beta);
            }
            outcomes.push(choice.challenger_chosen);
            let asked = fit(&train, &gplasso(m, false), &mut |_| {}).expect("fits");
            assert!(asked.report.held_out.is_none());
            assert!(asked.report.gplasso.is_some());
        }
        assert_eq!(outcomes, [false, true], "both branches are exercised");
    }

    /// VSGP makes the same choice against the same SPGP, and whichever
    /// wins is the model.
    #[test]
    fn vsgp_is_weighed_against_spgp_on_small_data() {
        let train = product_of_waves(240);
        let vsgp = fit(&train, &FitParams::Vsgp(sparse(true)), &mut |_| {}).expect("fits");
        let choice = vsgp.report.held_out.clone().expect("a choice on 240 rows");
        assert_eq!(choice.challenger, "vsgp");
        assert_eq!(vsgp.model.kind, sgp_runtime::ModelKind::Vsgp);
        let per_basis = matches!(
            vsgp.model.form.basis.widths,
            crate::model::features::BasisWidths::PerBasis(_)
        );
        assert_eq!(per_basis, choice.challenger_chosen, "{choice:?}");
    }
}
