//! Probabilities and scores of a classifier of `K` classes whose members
//! are one probit latent per class: the two links the blob format offers,
//! and test error, log loss and calibration error on class indices.

use nalgebra::DMatrix;

use crate::model::likelihood::norm_cdf;
use crate::model::ModelSet;
use crate::Result;

/// How `K` latents become `K` probabilities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) enum ClassLink {
    /// `q_k = Phi((m_k + b_k) / sqrt(1 + v_k))`, `p_k = q_k / sum q`: each
    /// latent's own probit probability, normalised. What the fit trains
    /// (one probit bound per class against the rest).
    OneVsRest,
    /// `p_k` proportional to `exp((m_k + b_k) / sqrt(1 + pi v_k / 8))`,
    /// the probit-moderated softmax.
    Softmax,
}

/// Class probabilities (N x K, rows summing to 1) of the set's members at
/// raw inputs `x` through `link`.
///
/// # Errors
/// As [`crate::model::TrainedModel::predict_raw`].
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn probabilities(
    set: &ModelSet,
    x: &DMatrix<f64>,
    link: ClassLink,
) -> Result<DMatrix<f64>> {
    let k = set.members.len();
    let mut p = DMatrix::zeros(x.nrows(), k);
    for (j, member) in set.members.iter().enumerate() {
        let pred = member.predict_raw(x)?;
        for i in 0..x.nrows() {
            let (m, v) = (pred.mean[i], pred.var[i].max(0.0));
            p[(i, j)] = match link {
                ClassLink::OneVsRest => norm_cdf(m / (1.0 + v).sqrt()),
                ClassLink::Softmax => m / (1.0 + std::f64::consts::PI * v / 8.0).sqrt(),
            };
        }
    }
    for mut row in p.row_iter_mut() {
        if link == ClassLink::Softmax {
            let top = row.max();
            row.apply(|s| *s = libm::exp(*s - top));
        }
        let total = row.sum();
        if total > 0.0 && total.is_finite() {
            row /= total;
        } else {
            row.fill(1.0 / k as f64);
        }
    }
    Ok(p)
}

/// Scores of class probabilities against the true class indices.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassScores {
    /// Fraction of rows whose most probable class is wrong.
    pub error_rate: f64,
    /// Mean `-ln p(true class)` (probabilities floored at 1e-12).
    pub log_loss: f64,
    /// Expected calibration error of the most probable class's
    /// probability, [`crate::evaluate::ClassEvaluation::ECE_BINS`]
    /// equal-width bins (Guo et al. 2017).
    pub ece: f64,
}

/// Scores `p` (N x K) against `truth` (class indices, N of them); NaN
/// figures for mismatched lengths, no rows or an index out of range.
pub fn scores(p: &DMatrix<f64>, truth: &[usize]) -> ClassScores {
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
        ece: crate::evaluate::metrics::calibration_error(calibration.into_iter(), n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_count_errors_loss_and_calibration() {
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
        let s = scores(&p, &[0, 1, 2, 1]);
        assert!((s.error_rate - 0.25).abs() < 1e-15);
        let want =
            -(libm::log(0.8f64) + libm::log(0.7f64) + libm::log(0.4f64) + libm::log(0.2f64)) / 4.0;
        assert!((s.log_loss - want).abs() < 1e-12);
        // Bins: 0.8 right, 0.7 right, 0.4 right, 0.6 wrong.
        let ece = ((0.8f64 - 1.0).abs() + (0.7f64 - 1.0).abs() + (0.4f64 - 1.0).abs() + 0.6) / 4.0;
        assert!((s.ece - ece).abs() < 1e-12);
        assert!(scores(&p, &[0, 1, 3, 0]).error_rate.is_nan());
        assert!(scores(&p, &[0]).log_loss.is_nan());
    }
}
