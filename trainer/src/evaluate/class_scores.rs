//! Test error, log loss and calibration error of a classifier of `K`
//! classes, from its class probabilities and the true class indices.

use nalgebra::DMatrix;

use super::metrics::calibration_error;

/// Scores of class probabilities against the true class indices.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassScores {
    /// Fraction of rows whose most probable class is wrong.
    pub error_rate: f64,
    /// Mean `-ln p(true class)` (probabilities floored at 1e-12).
    pub log_loss: f64,
    /// Expected calibration error of the most probable class's
    /// probability, [`ClassEvaluation::ECE_BINS`](crate::evaluate::ClassEvaluation::ECE_BINS)
    /// equal-width bins (Guo et al. 2017).
    pub ece: f64,
}

/// Scores `p` (N x K) against `truth` (class indices, N of them); NaN
/// figures for mismatched lengths, no rows or an index out of range.
pub fn class_scores(p: &DMatrix<f64>, truth: &[usize]) -> ClassScores {
    let n = truth.len();
    if n == 0 || p.nrows() != n || truth.iter().any(|&t| t >= p.ncols()) {
        return ClassScores {
            error_rate: f64::NAN,
            log_loss: f64::NAN,
            ece: f64::NAN,
        };
    }
    let mut wrong = 0usize;
    let mut loss = 0.0;
    let mut calibration = Vec::with_capacity(n);
    for (row, &t) in p.row_iter().zip(truth) {
        let (best, confidence) =
            row.iter()
                .enumerate()
                .fold(
                    (0, f64::NEG_INFINITY),
                    |acc, (j, &v)| {
                        if v > acc.1 {
                            (j, v)
                        } else {
                            acc
                        }
                    },
                );
        let right = best == t;
        wrong += usize::from(!right);
        loss -= libm::log(row[t].max(1e-12));
        calibration.push((confidence, right));
    }
    ClassScores {
        error_rate: wrong as f64 / n as f64,
        log_loss: loss / n as f64,
        ece: calibration_error(calibration.into_iter(), n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_scores_count_errors_loss_and_calibration() {
        let p = DMatrix::from_row_slice(
            4,
            3,
            &[
                0.8, 0.1, 0.1, //
                0.2, 0.7, 0.1, //
                0.3, 0.3, 0.4, //
                0.6, 0.2, 0.2,
            ],
        );
        let s = class_scores(&p, &[0, 1, 2, 1]);
        assert!((s.error_rate - 0.25).abs() < 1e-15);
        let want =
            -(libm::log(0.8f64) + libm::log(0.7f64) + libm::log(0.4f64) + libm::log(0.2f64)) / 4.0;
        assert!((s.log_loss - want).abs() < 1e-12);
        // Bins: 0.8 right, 0.7 right, 0.4 right, 0.6 wrong.
        let ece = ((0.8f64 - 1.0).abs() + (0.7f64 - 1.0).abs() + (0.4f64 - 1.0).abs() + 0.6) / 4.0;
        assert!((s.ece - ece).abs() < 1e-12);
        assert!(class_scores(&p, &[0, 1, 3, 0]).error_rate.is_nan());
        assert!(class_scores(&p, &[0]).log_loss.is_nan());
    }
}
