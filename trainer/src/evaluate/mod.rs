//! Test-set figures of a blob, computed through the runtime (what the
//! device would compute), for `sgp eval` and the demo.

mod class_scores;
pub(crate) mod contest;
#[cfg(feature = "internals")]
pub mod metrics;
#[cfg(not(feature = "internals"))]
pub(crate) mod metrics;
pub mod replay;

pub use class_scores::{class_scores, ClassScores};

use nalgebra::{DMatrix, DVector};
use serde::Serialize;

use crate::model::device::predict_all;
use crate::Result;

/// Figures of merit on one data set.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Evaluation {
    /// Number of rows evaluated.
    pub rows: usize,
    /// Root mean squared error (raw units).
    pub rmse: f64,
    /// Mean squared error (raw units).
    pub mse: f64,
    /// MSE divided by the variance of the targets.
    pub smse: f64,
    /// Mean negative log predictive density of `y` (nats, Gaussian).
    pub nlpd: f64,
    /// Fraction of targets inside the central 95% predictive interval.
    pub coverage_95: f64,
}

/// One output's evaluation, named: what `sgp eval --json` and `sgp sweep`
/// give per output of a multi-output blob.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OutputEvaluation {
    /// The output's (target's) name.
    pub output: String,
    /// Its figures.
    #[serde(flatten)]
    pub evaluation: Evaluation,
}

/// Evaluates `blob` on raw inputs `x` and targets `y`.
///
/// # Errors
/// If the runtime refuses the blob or an input.
pub fn evaluate_blob(blob: &[u8], x: &DMatrix<f64>, y: &DVector<f64>) -> Result<Evaluation> {
    let predictions = predict_all(blob, x)?;
    let mean: Vec<f64> = predictions.iter().map(|p| f64::from(p.mean)).collect();
    let var: Vec<f64> = predictions.iter().map(|p| f64::from(p.variance)).collect();
    Ok(figures(&mean, &var, y.as_slice()))
}

/// The figures for given predictive means and variances of `y`.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn figures(mean: &[f64], var: &[f64], y: &[f64]) -> Evaluation {
    Evaluation {
        rows: y.len(),
        rmse: metrics::rmse(mean, y),
        mse: metrics::mse(mean, y),
        smse: metrics::smse(mean, y),
        nlpd: metrics::mean_nlpd(mean, var, y),
        coverage_95: metrics::coverage_95(mean, var, y),
    }
}

/// Figures of merit of a classifier (probit model) on one data set.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ClassEvaluation {
    /// Number of rows evaluated.
    pub rows: usize,
    /// Fraction misclassified (`P(+1) >= 0.5` predicts the positive class).
    pub error_rate: f64,
    /// Mean negative log probability of the true class (nats): the binary
    /// NLPD.
    pub log_loss: f64,
    /// Mean squared difference between `P(+1)` and the 0/1 outcome.
    pub brier: f64,
    /// Expected calibration error over equal-width confidence bins
    /// (`metrics::expected_calibration_error`).
    pub ece: f64,
    /// Positive rows predicted positive.
    pub true_positives: usize,
    /// Negative rows predicted positive.
    pub false_positives: usize,
    /// Negative rows predicted negative.
    pub true_negatives: usize,
    /// Positive rows predicted negative.
    pub false_negatives: usize,
}

impl ClassEvaluation {
    /// Number of equal-width confidence bins of the expected calibration
    /// error ([`ClassEvaluation::ece`]).
    pub const ECE_BINS: usize = metrics::ECE_BINS;
}

/// Figures for predicted probabilities of the positive class and ±1
/// labels.
pub(crate) fn class_figures(prob_positive: &[f64], labels: &[f64]) -> ClassEvaluation {
    let score: Vec<f64> = prob_positive.iter().map(|p| p - 0.5).collect();
    let count = |want_label: f64, want_positive: bool| {
        prob_positive
            .iter()
            .zip(labels)
            .filter(|(p, l)| **l == want_label && (**p >= 0.5) == want_positive)
            .count()
    };
    let brier = prob_positive
        .iter()
        .zip(labels)
        .map(|(p, l)| (p - if *l > 0.0 { 1.0 } else { 0.0 }).powi(2))
        .sum::<f64>()
        / labels.len().max(1) as f64;
    ClassEvaluation {
        rows: labels.len(),
        error_rate: metrics::error_rate(&score, labels),
        log_loss: metrics::mean_nlpd_binary(prob_positive, labels),
        brier,
        ece: metrics::expected_calibration_error(prob_positive, labels),
        true_positives: count(1.0, true),
        false_positives: count(-1.0, true),
        true_negatives: count(-1.0, false),
        false_negatives: count(1.0, false),
    }
}

/// Evaluates a probit `blob` on raw inputs `x` and ±1 `labels`.
///
/// # Errors
/// If the runtime refuses the blob or an input, or the blob does not
/// classify.
pub fn evaluate_classifier(
    blob: &[u8],
    x: &DMatrix<f64>,
    labels: &DVector<f64>,
) -> Result<ClassEvaluation> {
    let predictions = predict_all(blob, x)?;
    let prob = predictions
        .iter()
        .map(|p| p.probability.map(f64::from))
        .collect::<Option<Vec<f64>>>()
        .ok_or(crate::Error::Blob(sgp_runtime::Error::NotClassifier))?;
    Ok(class_figures(&prob, labels.as_slice()))
}

/// The figures a data set's target kind calls for.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(untagged)]
pub enum Figures {
    /// Continuous target.
    Regression(Evaluation),
    /// Binary target.
    Classification(ClassEvaluation),
}
