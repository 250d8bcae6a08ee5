//! Test-set figures of a blob, computed through the runtime (what the
//! device would compute), for `sgp eval` and the demo.

use nalgebra::{DMatrix, DVector};
use serde::Serialize;

use crate::device::predict_all;
use crate::metrics;
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
pub fn figures(mean: &[f64], var: &[f64], y: &[f64]) -> Evaluation {
    Evaluation {
        rows: y.len(),
        rmse: metrics::rmse(mean, y),
        mse: metrics::mse(mean, y),
        smse: metrics::smse(mean, y),
        nlpd: metrics::mean_nlpd(mean, var, y),
        coverage_95: metrics::coverage_95(mean, var, y),
    }
}
