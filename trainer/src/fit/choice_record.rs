//! What the choice layer records of its decisions: the verdicts shown in
//! the summary and `--json`. Data only, so a fit's report can carry them
//! without depending on the layer that made them.

use serde::Serialize;
use sgp_runtime::Kernel;

pub use crate::evaluate::contest::Verdict;

/// Which kernel `--kernel auto` kept, and why.
#[derive(Clone, Debug, Serialize)]
pub struct KernelVerdict {
    /// The kernel fitted and exported.
    pub chosen: &'static str,
    /// Held-out rows each kernel was scored on (0: not weighed).
    pub rows: usize,
    /// Folds the rows were held out in (`CHOICE_FOLDS`; 0: not
    /// weighed).
    pub folds: usize,
    /// Each kernel's mean held-out NLPD, a classifier's log loss (empty:
    /// not weighed).
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
    /// Mean held-out NLPD (raw units; a classifier's log loss, nats;
    /// infinite if a fit failed).
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

/// What the layer did.
#[derive(Clone, Debug, Serialize)]
pub struct Choice {
    /// What was asked: a family's name, or `auto`.
    pub asked: String,
    /// The family fitted and exported.
    pub exported: String,
    /// The exported family's objective, chosen on a held-out quarter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objective: Option<Verdict>,
    /// The families weighed over folds: SPGP (with either objective) and
    /// the challengers, each with its verdict against the SPGP it had to
    /// beat.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<Candidate>,
    /// `--kernel auto`'s verdict: the kernel kept and each kernel's
    /// held-out NLPD.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelVerdict>,
    /// What was decided and why, in one sentence.
    pub reason: String,
    /// Wall-clock seconds the held-out choices took, before the final fit
    /// (0 where none were made).
    pub seconds: f64,
}

/// One family weighed over folds.
#[derive(Clone, Debug, Serialize)]
pub struct Candidate {
    /// Its name, e.g. `spgp-hs` or `spgp (fitc)`.
    pub name: String,
    /// Mean held-out NLPD over the folds (raw units; infinite if a fit
    /// failed).
    pub nlpd: f64,
    /// A challenger's verdict against the toughest SPGP it had to beat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub against: Option<Verdict>,
}
