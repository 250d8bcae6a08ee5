//! Exporting a fit whose f32 blob fails the fidelity check: cure it rather
//! than hand the failure to the user.
//!
//! What breaks f32 is conditioning: slowly varying data give long length
//! scales, `Kuu` is then nearly singular, and the weights `beta` grow large
//! with alternating signs, so their f32 rounding no longer cancels. More
//! jitter on the factorised diagonal bounds both the weights and the
//! factors' condition number. The cure raises the jitter tenfold at a time
//! (up to [`MAX_CURE_EPS`] times `s2`), re-optimises briefly from the fitted
//! parameters with it (falling back to the fitted parameters themselves if
//! that model still fails), and reports what the cure cost in training
//! objective, so the user can judge it.
//!
//! A cure should cost at most [`MAX_CURE_COST`] of the training objective:
//! a passing model that costs more is re-optimised longer
//! ([`LONG_REOPTIMISE_ITER`]) at the same jitter, and the cheaper of the
//! two is exported; [`Cure::within_budget`] says whether it kept to the
//! budget. Larger jitters are not tried once one passes: they smooth more
//! and cost more.

use nalgebra::DMatrix;
use serde::Serialize;

use crate::export::{check, refusal, Exported};
use crate::fit::multi_output::FittedSet;
use crate::fit::Fitted;
use crate::model::ModelSet;
use crate::Result;
use sgp_runtime::VarianceForm;

/// Largest relative jitter the cure tries: beyond a percent of the signal
/// variance the model would be visibly smoothed.
pub const MAX_CURE_EPS: f64 = 1e-2;

/// Iterations of re-optimisation at the raised jitter: the other parameters
/// adapt to it (the signal variance, which the jitter is relative to,
/// mostly), which measured on slowly varying data recovered most of the
/// training NLML the raised jitter alone cost.
pub const REOPTIMISE_ITER: u64 = 50;

/// Most a cure should cost, as a fraction of the magnitude of the
/// training objective (issue 24: a jitter raised from 1e-6 to 1e-3 once
/// cost 10% of a 10^6-row fit's NLML).
pub const MAX_CURE_COST: f64 = 0.01;

/// Iterations of the longer re-optimisation tried when the brief one
/// leaves a cure over [`MAX_CURE_COST`].
pub const LONG_REOPTIMISE_ITER: u64 = 5 * REOPTIMISE_ITER;

/// What curing an export changed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cure {
    /// Relative jitter the fit used.
    pub from_eps: f64,
    /// Relative jitter of the exported model.
    pub to_eps: f64,
    /// Training objective before.
    pub nlml_before: f64,
    /// Training objective of the exported model.
    pub nlml_after: f64,
    /// Iterations of re-optimisation at the raised jitter (0: the fitted
    /// parameters, only the posterior recomputed).
    pub reoptimised: u64,
    /// The cure cost at most [`MAX_CURE_COST`] of the training objective.
    pub within_budget: bool,
}

impl Cure {
    /// What the cure cost, as a fraction of the magnitude of the training
    /// objective before it.
    pub fn cost(&self) -> f64 {
        (self.nlml_after - self.nlml_before) / self.nlml_before.abs().max(f64::MIN_POSITIVE)
    }
}

/// Exports `fitted.model`, checking it at `check_x` (raw inputs) and at
/// far-away points. If the check fails, the jitter is raised until it
/// passes; `fitted.model` is then replaced by the cured model and the cure
/// is returned. With `force` a model that nothing cures is exported as
/// fitted.
///
/// # Errors
/// [`crate::Error::Fidelity`] when nothing cures the check and `force` is false,
/// naming what to try; [`Error::Blob`] if the model cannot be encoded.
pub fn export_fitted(
    fitted: &mut Fitted,
    check_x: &DMatrix<f64>,
    force: bool,
) -> Result<(Exported, Option<Cure>)> {
    let first = check(&fitted.model, check_x)?;
    if first.fidelity.passes() {
        return Ok((first, None));
    }
    let from_eps = fitted.jitter();
    let mut eps = from_eps;
    while eps * 10.0 <= MAX_CURE_EPS * (1.0 + 1e-9) {
        eps *= 10.0;
        let mut passing: Vec<(Exported, Cure, crate::fit::Rebuilt)> = Vec::new();
        for reoptimise in [REOPTIMISE_ITER, LONG_REOPTIMISE_ITER, 0] {
            // The longer run only when the brief one passed over budget;
            // the fitted parameters only when it failed.
            let over_budget = passing.first().is_some_and(|(_, c, _)| !c.within_budget);
            let wanted = match reoptimise {
                LONG_REOPTIMISE_ITER => over_budget,
                0 => passing.is_empty(),
                _ => true,
            };
            if !wanted {
                continue;
            }
            // A factorisation that fails at this jitter may succeed at the next.
            let Ok(rebuilt) = fitted.with_jitter(eps, reoptimise) else {
                continue;
            };
            let exported = check(&rebuilt.model, check_x)?;
            if !exported.fidelity.passes() {
                continue;
            }
            let mut cure = Cure {
                from_eps,
                to_eps: eps,
                nlml_before: fitted.report.nlml,
                nlml_after: rebuilt.nlml,
                reoptimised: reoptimise,
                within_budget: false,
            };
            cure.within_budget = cure.cost() <= MAX_CURE_COST;
            passing.push((exported, cure, rebuilt));
        }
        // A larger jitter smooths more: the cheapest cure at the first
        // jitter that passes is the cheapest there is.
        let cheapest = passing
            .into_iter()
            .min_by(|a, b| a.1.nlml_after.total_cmp(&b.1.nlml_after));
        if let Some((exported, cure, rebuilt)) = cheapest {
            fitted.model = rebuilt.model;
            fitted.report.hyper = rebuilt.hyper;
            return Ok((exported, Some(cure)));
        }
    }
    if force {
        return Ok((first, None));
    }
    Err(refusal(
        &first,
        &format!(
            "raising the jitter to {MAX_CURE_EPS:e} s2 did not cure it: try fewer basis \
             functions (--m) or --objective vfe"
        ),
    ))
}

/// [`export_fitted`] for the outputs of a multi-output fit: every member
/// is checked as a model of its own (the set's blob holds the same
/// numbers); if any fails, the jitter of every output is raised tenfold at
/// a time, the joint objective re-optimised briefly from the fitted
/// parameters (falling back to the fitted parameters), until all pass, and
/// `fitted.set` and each output's hyperparameters become the cured ones.
/// Returns each member's check, in output order, and the cure.
///
/// # Errors
/// As [`export_fitted`].
pub fn export_outputs(
    fitted: &mut FittedSet,
    check_x: &DMatrix<f64>,
    force: bool,
) -> Result<(Vec<Exported>, Option<Cure>)> {
    let check_all = |set: &ModelSet| -> Result<Vec<Exported>> {
        set.members.iter().map(|m| check(m, check_x)).collect()
    };
    let passes = |checks: &[Exported]| checks.iter().all(|e| e.fidelity.passes());
    // The blob has one variance form for all outputs: one member refusing
    // the product form puts every output in the larger solves form, so a
    // cure is also tried for that.
    let compact = |checks: &[Exported]| {
        passes(checks) && checks.iter().all(|e| e.variance == VarianceForm::Product)
    };
    let first = check_all(&fitted.set)?;
    if compact(&first) {
        return Ok((first, None));
    }
    let from_eps = fitted.jitter();
    let mut eps = from_eps;
    let mut fallback = None;
    'raise: while eps * 10.0 <= MAX_CURE_EPS * (1.0 + 1e-9) {
        eps *= 10.0;
        for reoptimise in [REOPTIMISE_ITER, 0] {
            let Ok((set, nlml, hyper)) = fitted.with_jitter(eps, reoptimise) else {
                continue;
            };
            let checks = check_all(&set)?;
            if !passes(&checks) {
                continue;
            }
            let done = compact(&checks);
            let mut cure = Cure {
                from_eps,
                to_eps: eps,
                nlml_before: fitted.report.nlml,
                nlml_after: nlml,
                reoptimised: reoptimise,
                within_budget: false,
            };
            cure.within_budget = cure.cost() <= MAX_CURE_COST;
            if fallback.is_none() && !passes(&first) {
                fallback = Some((set.clone(), hyper.clone(), checks.clone(), cure.clone()));
            }
            if done {
                fallback = Some((set, hyper, checks, cure));
                break 'raise;
            }
        }
    }
    if let Some((set, hyper, checks, cure)) = fallback {
        fitted.set = set;
        for (report, h) in fitted.report.outputs.iter_mut().zip(hyper) {
            report.hyper = h;
        }
        return Ok((checks, Some(cure)));
    }
    let failed = first
        .iter()
        .find(|e| !e.fidelity.passes())
        .or(first.first());
    match failed {
        _ if passes(&first) || force => Ok((first, None)),
        Some(failed) => Err(refusal(
            failed,
            &format!(
                "raising the jitter to {MAX_CURE_EPS:e} s2 did not cure it: try fewer basis \
                 functions (--m) or --objective vfe"
            ),
        )),
        None => Err(crate::Error::BadInput("no output to export".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::{fit, ExactParams, FitParams, SparseParams};
    use crate::tools::synth::{dataset, Shape};

    #[test]
    fn reoptimising_at_a_raised_jitter_recovers_what_the_jitter_alone_costs() {
        let data = dataset(Shape::Linear, 200, 3).unwrap();
        for params in [
            FitParams::Spgp(SparseParams {
                m: 10,
                restarts: 1,
                ..SparseParams::default()
            }),
            FitParams::Exact(ExactParams::default()),
        ] {
            let fitted = fit(&data, &params, &mut |_| {}).unwrap();
            let plain = fitted.with_jitter(1e-3, 0).unwrap().nlml;
            let rebuilt = fitted.with_jitter(1e-3, REOPTIMISE_ITER).unwrap();
            let (model, refit) = (rebuilt.model, rebuilt.nlml);
            // The report follows the re-optimised kernel, not the fitted one.
            assert_ne!(rebuilt.hyper, fitted.report.hyper);
            // The jitter costs training NLML; re-optimising wins some back.
            assert!(
                plain > fitted.report.nlml,
                "{plain} vs {}",
                fitted.report.nlml
            );
            assert!(refit < plain, "{refit} vs {plain}");
            assert_eq!(model.n_basis(), fitted.model.n_basis());
            assert_ne!(model.form.l1, fitted.model.form.l1);
        }
    }
}
