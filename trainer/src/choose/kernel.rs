//! `--kernel auto`: the covariance function chosen on held-out rows. The
//! family (and objective) chosen above is fitted with each kernel of
//! [`Kernel::ALL`] on the same rows and scored on the rest, as the family
//! choice scores families ([`held_out`]); the squared exponential is kept
//! unless a Matérn kernel beats it by more than [`held_out::MARGIN_SE`]
//! standard errors of the paired per-row difference, so a smooth target
//! keeps the SE fit `--kernel se` makes.
//!
//! Small data (fewer than [`held_out::HELD_OUT_BELOW`] rows) is scored
//! over [`held_out::CHOICE_FOLDS`] folds, more on one held-out quarter.
//! VSGP (Gaussian basis functions), classifiers (their held-out score is
//! not a predictive density here) and fits without held-out comparisons
//! keep the squared exponential, and the verdict says why.

use serde::Serialize;
use sgp_runtime::Kernel;

use super::held_out::{self, Scores};
use super::Request;
use crate::data::{Dataset, TargetKind};
use crate::fit::{FitParams, Method};
use crate::Result;

/// Which kernel `--kernel auto` kept, and why.
#[derive(Clone, Debug, Serialize)]
pub struct KernelVerdict {
    /// The kernel fitted and exported.
    pub chosen: &'static str,
    /// Held-out rows each kernel was scored on (0: not weighed).
    pub rows: usize,
    /// Folds the rows were held out in (1: one held-out quarter; 0: not
    /// weighed).
    pub folds: usize,
    /// Each kernel's mean held-out NLPD (empty: not weighed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<KernelScore>,
    /// What was decided and why, in one sentence.
    pub reason: String,
}

/// One kernel's held-out figures.
#[derive(Clone, Debug, Serialize)]
pub struct KernelScore {
    /// The kernel's name.
    pub kernel: &'static str,
    /// Mean held-out NLPD (raw units; infinite if a fit failed).
    pub nlpd: f64,
    /// Standard error of its per-row difference from the squared
    /// exponential's (0 for the squared exponential itself).
    pub standard_error: f64,
}

impl KernelVerdict {
    /// The squared exponential, kept without a weighing because `why`.
    pub fn unweighed(why: &str) -> Self {
        KernelVerdict {
            chosen: Kernel::SquaredExponential.name(),
            rows: 0,
            folds: 0,
            candidates: Vec::new(),
            reason: format!("kernel se: not weighed ({why})"),
        }
    }
}

/// `params` with the kernel that predicts held-out rows of `outputs` best
/// (module docs), and the verdict.
///
/// # Errors
/// If the rows cannot be split, or every kernel's fit fails.
pub(crate) fn choose(
    outputs: &[Dataset],
    params: &FitParams,
    request: &Request,
) -> Result<(FitParams, KernelVerdict)> {
    let se = params.with_kernel(Kernel::SquaredExponential);
    let unweighed = |why: &str| Ok((se.clone(), KernelVerdict::unweighed(why)));
    if params.method() == Method::Vsgp {
        return unweighed(
            "vsgp takes the squared exponential only: its Gaussian basis functions have no \
             closed-form Matérn covariances",
        );
    }
    if outputs[0].target != TargetKind::Continuous {
        return unweighed("a classifier's kernel is not chosen: auto means se for classifiers");
    }
    if !request.held_out {
        return unweighed("held-out comparisons are off");
    }
    let n = outputs[0].n_rows();
    let m = params.m().unwrap_or(2);
    let small = held_out::applies(n, m);
    if !small && n < held_out::HELD_OUT_BELOW {
        return unweighed(&format!("{n} rows are too few to hold a quarter out"));
    }
    let candidates: Vec<(String, FitParams)> = Kernel::ALL
        .iter()
        .map(|&k| (k.name().to_string(), params.with_kernel(k)))
        .collect();
    let (scores, folds) = if small {
        let scores = held_out::cross_validate(outputs, params.seed(), &candidates)?;
        (scores, held_out::CHOICE_FOLDS)
    } else {
        (held_out::score(outputs, params.seed(), &candidates)?, 1)
    };
    let verdict = decide(&scores, folds);
    let chosen = Kernel::ALL
        .iter()
        .copied()
        .find(|k| k.name() == verdict.chosen)
        .unwrap_or(Kernel::SquaredExponential);
    Ok((params.with_kernel(chosen), verdict))
}

/// The squared exponential (candidate 0) unless a Matérn kernel clearly
/// beats it; of those that do, the lowest held-out NLPD.
fn decide(scores: &Scores, folds: usize) -> KernelVerdict {
    let verdicts: Vec<held_out::Verdict> = (0..Kernel::ALL.len())
        .map(|k| scores.verdict(0, k))
        .collect();
    let winner = verdicts
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, v)| v.challenger_chosen)
        .min_by(|a, b| a.1.challenger_nlpd.total_cmp(&b.1.challenger_nlpd));
    let candidates: Vec<KernelScore> = Kernel::ALL
        .iter()
        .zip(&verdicts)
        .map(|(k, v)| KernelScore {
            kernel: k.name(),
            nlpd: v.challenger_nlpd,
            standard_error: v.standard_error,
        })
        .collect();
    let rows = verdicts[0].rows;
    let list: Vec<String> = candidates
        .iter()
        .map(|c| format!("{} {:.4}", c.kernel, c.nlpd))
        .collect();
    let over = format!(
        "held-out NLPD {} over {rows} rows{}",
        list.join(", "),
        if folds > 1 {
            format!(" in {folds} folds")
        } else {
            String::new()
        }
    );
    let (chosen, reason) = match winner {
        Some((k, v)) => (
            Kernel::ALL[k].name(),
            format!(
                "kernel {} chosen: it beat se by {:.4} (standard error {:.4}); {over}",
                Kernel::ALL[k].name(),
                v.incumbent_nlpd - v.challenger_nlpd,
                v.standard_error
            ),
        ),
        None => (
            Kernel::SquaredExponential.name(),
            format!(
                "kernel se kept: no Matérn kernel beat it by more than {} standard error; {over}",
                held_out::MARGIN_SE
            ),
        ),
    };
    KernelVerdict {
        chosen,
        rows,
        folds,
        candidates,
        reason,
    }
}
