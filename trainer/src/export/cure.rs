//! Exporting a fit whose f32 blob fails the fidelity check: cure it rather
//! than hand the failure to the user (docs/src/numerics.md, "The runtime
//! check and the export cure").
//!
//! Nearly singular `Kuu` gives large alternating weights whose f32 rounding
//! no longer cancels; more jitter bounds them. The cure raises the jitter
//! tenfold at a time (up to [`MAX_CURE_EPS`] times `s2`), re-optimises
//! briefly with it (else keeps the fitted parameters), and reports the
//! cost in training objective. A passing model that costs more than
//! [`MAX_CURE_COST`] is re-optimised longer and the cheaper exported
//! ([`Cure::within_budget`]).

use nalgebra::DMatrix;
use serde::Serialize;

use crate::export::{check, Exported};
use crate::fit::Fit;
use crate::Result;

/// Largest relative jitter the cure tries: beyond a percent of the signal
/// variance the model would be visibly smoothed.
pub const MAX_CURE_EPS: f64 = 1e-2;

/// Iterations of re-optimisation at the raised jitter: the other parameters
/// adapt to it and recover most of what the jitter alone cost.
pub(crate) const REOPTIMISE_ITER: u64 = 50;

/// Most a cure should cost, as a fraction of the magnitude of the
/// training objective.
pub const MAX_CURE_COST: f64 = 0.01;

/// Iterations of the longer re-optimisation tried when the brief one
/// leaves a cure over [`MAX_CURE_COST`].
pub(crate) const LONG_REOPTIMISE_ITER: u64 = 5 * REOPTIMISE_ITER;

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

/// Cures `fit`, whose set failed its check at `check_x` (raw inputs):
/// the jitter raised tenfold at a time up to [`MAX_CURE_EPS`], each time
/// re-optimised briefly from the fitted parameters, longer if the brief
/// one passed over [`MAX_CURE_COST`], and not at all if neither passed;
/// the cheapest passing set at the first jitter that passes replaces the
/// fit's own, and its check (with the cure) is returned. `None` if
/// nothing cures the check.
///
/// # Errors
/// If a cured set cannot be encoded.
pub(crate) fn cure(fit: &mut Fit, check_x: &DMatrix<f64>) -> Result<Option<Exported>> {
    cure_until(fit, check_x, |e| e.fidelity.passes(), false)
}

/// Cures `fit`, whose several outputs pass their check only in the solves
/// form of the variance (two `M x M` factors each, about twice the
/// product form's bytes, more than separate product-form blobs), into the
/// product form, as [`cure`] cures a failing check but only within
/// [`MAX_CURE_COST`]; `None` (the fit untouched) if no jitter does.
///
/// # Errors
/// If a cured set cannot be encoded.
pub(crate) fn cure_to_product(fit: &mut Fit, check_x: &DMatrix<f64>) -> Result<Option<Exported>> {
    let product = |e: &Exported| e.fidelity.passes() && e.product_refused.is_none();
    cure_until(fit, check_x, product, true)
}

/// [`cure`] with the check `accept` a cured set must pass, and whether it
/// must also keep to the budget.
fn cure_until(
    fit: &mut Fit,
    check_x: &DMatrix<f64>,
    accept: impl Fn(&Exported) -> bool,
    within_budget_only: bool,
) -> Result<Option<Exported>> {
    let from_eps = fit.jitter();
    let mut eps = from_eps;
    while eps * 10.0 <= MAX_CURE_EPS * (1.0 + 1e-9) {
        eps *= 10.0;
        let mut passing: Vec<(Exported, Cure, crate::model::ModelSet, Vec<_>)> = Vec::new();
        for reoptimise in [REOPTIMISE_ITER, LONG_REOPTIMISE_ITER, 0] {
            // The longer run only when the brief one passed over budget;
            // the fitted parameters only when it failed.
            let over_budget = passing.first().is_some_and(|(_, c, ..)| !c.within_budget);
            let wanted = match reoptimise {
                LONG_REOPTIMISE_ITER => over_budget,
                0 => passing.is_empty(),
                _ => true,
            };
            if !wanted {
                continue;
            }
            // A factorisation that fails at this jitter may succeed at the next.
            let Ok((set, nlml, kernels)) = fit.with_jitter(eps, reoptimise) else {
                continue;
            };
            let exported = check(&set, check_x)?;
            if !accept(&exported) {
                continue;
            }
            let mut cure = Cure {
                from_eps,
                to_eps: eps,
                nlml_before: fit.report.nlml,
                nlml_after: nlml,
                reoptimised: reoptimise,
                within_budget: false,
            };
            cure.within_budget = cure.cost() <= MAX_CURE_COST;
            if within_budget_only && !cure.within_budget {
                continue;
            }
            passing.push((exported, cure, set, kernels));
        }
        // A larger jitter smooths more: the cheapest cure at the first
        // jitter that passes is the cheapest there is.
        let cheapest = passing
            .into_iter()
            .min_by(|a, b| a.1.nlml_after.total_cmp(&b.1.nlml_after));
        if let Some((mut exported, cure, set, kernels)) = cheapest {
            fit.adopt(set, kernels);
            exported.cure = Some(cure);
            return Ok(Some(exported));
        }
    }
    Ok(None)
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
            let plain = fitted.with_jitter(1e-3, 0).unwrap().1;
            let (set, refit, kernels) = fitted.with_jitter(1e-3, REOPTIMISE_ITER).unwrap();
            let model = &set.members[0];
            // The kernel moves with the re-optimisation.
            assert_ne!(kernels, fitted.kernels);
            // The jitter costs training NLML; re-optimising wins some back.
            assert!(
                plain > fitted.report.nlml,
                "{plain} vs {}",
                fitted.report.nlml
            );
            assert!(refit < plain, "{refit} vs {plain}");
            let first = &fitted.set.members[0];
            assert_eq!(model.n_basis(), first.n_basis());
            assert_ne!(model.form.l1, first.form.l1);
        }
    }
}
