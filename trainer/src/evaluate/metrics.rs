//! Test-set figures of merit.
//!
//! Every function takes slices of equal length and returns an `f64`. Inputs
//! that make the figure meaningless — an empty slice, slices of different
//! lengths, a non-positive predictive variance, a target that is not ±1
//! where labels are expected — give NaN rather than an error or a panic, so
//! a table of results can still be printed and the NaN is visible in it.
//! Log densities are in nats.

/// Central 95% interval half-width in standard deviations (Φ⁻¹(0.975)).
const Z_95: f64 = 1.959_963_984_540_054;

/// Probabilities are kept this far from 0 and 1 so one confident mistake
/// gives a large but finite NLPD.
const PROB_CLAMP: f64 = 1e-12;

fn same_nonzero_len(a: usize, b: usize) -> bool {
    a == b && a > 0
}

/// Mean squared error between predictions and targets.
pub(crate) fn mse(predicted: &[f64], target: &[f64]) -> f64 {
    if !same_nonzero_len(predicted.len(), target.len()) {
        return f64::NAN;
    }
    let sum: f64 = predicted
        .iter()
        .zip(target)
        .map(|(p, t)| (p - t) * (p - t))
        .sum();
    sum / target.len() as f64
}

/// Root mean squared error.
pub fn rmse(predicted: &[f64], target: &[f64]) -> f64 {
    mse(predicted, target).sqrt()
}

/// Standardised MSE: the MSE divided by the (population) variance of the
/// test targets, so predicting the test mean scores 1. NaN if the targets
/// are constant.
pub(crate) fn smse(predicted: &[f64], target: &[f64]) -> f64 {
    let var = population_variance(target);
    if var.is_nan() || var <= 0.0 {
        return f64::NAN;
    }
    mse(predicted, target) / var
}

fn population_variance(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n
}

/// Mean negative log predictive density of the targets under independent
/// Gaussians N(mean, variance), where `variance` is that of y (noise
/// included). NaN if any variance is not positive.
pub fn mean_nlpd(mean: &[f64], variance: &[f64], target: &[f64]) -> f64 {
    if !same_nonzero_len(mean.len(), target.len()) || variance.len() != target.len() {
        return f64::NAN;
    }
    if variance.iter().any(|v| v.is_nan() || *v <= 0.0) {
        return f64::NAN;
    }
    let sum: f64 = mean
        .iter()
        .zip(variance)
        .zip(target)
        .map(|((&m, &v), &t)| point_nlpd(m, v, t))
        .sum();
    sum / target.len() as f64
}

/// Negative log density of `target` under N(`mean`, `variance`) (one row
/// of [`mean_nlpd`]).
pub(crate) fn point_nlpd(mean: f64, variance: f64, target: f64) -> f64 {
    let ln_2pi = libm::log(2.0 * std::f64::consts::PI);
    0.5 * (ln_2pi + libm::log(variance)) + (target - mean) * (target - mean) / (2.0 * variance)
}

/// Fraction of misclassified examples. `predicted` holds ±1 labels or any
/// score whose sign is the class (0 counts as +1); `target` must be ±1.
pub(crate) fn error_rate(predicted: &[f64], target: &[f64]) -> f64 {
    if !same_nonzero_len(predicted.len(), target.len()) || !all_labels(target) {
        return f64::NAN;
    }
    if predicted.iter().any(|p| p.is_nan()) {
        return f64::NAN;
    }
    let wrong = predicted
        .iter()
        .zip(target)
        .filter(|(p, t)| (**p >= 0.0) != (**t > 0.0))
        .count();
    wrong as f64 / target.len() as f64
}

fn all_labels(target: &[f64]) -> bool {
    target.iter().all(|&t| t == 1.0 || t == -1.0)
}

/// Mean negative log probability of ±1 targets given `prob_positive`, the
/// predicted probability of +1, clamped to [1e-12, 1 − 1e-12].
pub(crate) fn mean_nlpd_binary(prob_positive: &[f64], target: &[f64]) -> f64 {
    if !same_nonzero_len(prob_positive.len(), target.len()) || !all_labels(target) {
        return f64::NAN;
    }
    if prob_positive.iter().any(|p| p.is_nan()) {
        return f64::NAN;
    }
    let sum: f64 = prob_positive
        .iter()
        .zip(target)
        .map(|(p, t)| {
            let p = p.clamp(PROB_CLAMP, 1.0 - PROB_CLAMP);
            if *t > 0.0 {
                -libm::log(p)
            } else {
                -libm::log(1.0 - p)
            }
        })
        .sum();
    sum / target.len() as f64
}

/// Number of equal-width confidence bins of `expected_calibration_error`.
pub(crate) const ECE_BINS: usize = 10;

/// Expected calibration error of ±1 targets given `prob_positive`: the
/// rows are put into [`ECE_BINS`] equal-width bins by the confidence of
/// the predicted class, `max(p, 1 - p)`, and the bins' gaps between mean
/// confidence and accuracy are averaged, weighted by their rows (Guo et
/// al. 2017). 0 for a calibrated classifier.
pub(crate) fn expected_calibration_error(prob_positive: &[f64], target: &[f64]) -> f64 {
    if !same_nonzero_len(prob_positive.len(), target.len())
        || !all_labels(target)
        || prob_positive.iter().any(|p| !(0.0..=1.0).contains(p))
    {
        return f64::NAN;
    }
    // Confidence lies in [0.5, 1].
    let rows = prob_positive
        .iter()
        .zip(target)
        .map(|(&p, &t)| (p.max(1.0 - p), (p >= 0.5) == (t > 0.0)));
    calibration_error(rows, target.len())
}

/// Expected calibration error of `n` rows, each given as the confidence
/// of its predicted class (in `[0, 1]`) and whether that class was right:
/// the rows in [`ECE_BINS`] equal-width bins by confidence, the bins' gaps
/// between summed confidence and rows right, over `n`.
pub(crate) fn calibration_error(rows: impl Iterator<Item = (f64, bool)>, n: usize) -> f64 {
    // Per bin: summed confidence, rows predicted right.
    let mut bins = [(0.0f64, 0usize); ECE_BINS];
    for (confidence, right) in rows {
        // The top edge belongs to the last bin.
        let bin = ((confidence * ECE_BINS as f64) as usize).min(ECE_BINS - 1);
        let b = &mut bins[bin];
        b.0 += confidence;
        b.1 += usize::from(right);
    }
    // An empty bin adds |0 - 0|.
    let gaps: f64 = bins
        .iter()
        .map(|&(confidence, right)| (confidence - right as f64).abs())
        .sum();
    gaps / n as f64
}

/// Calibration: fraction of targets inside the central 95% interval
/// `mean ± 1.96 sqrt(variance)` of the Gaussian predictive. A calibrated
/// model scores about 0.95. NaN if any variance is negative or NaN.
pub(crate) fn coverage_95(mean: &[f64], variance: &[f64], target: &[f64]) -> f64 {
    if !same_nonzero_len(mean.len(), target.len()) || variance.len() != target.len() {
        return f64::NAN;
    }
    if variance.iter().any(|v| v.is_nan() || *v < 0.0) {
        return f64::NAN;
    }
    let inside = mean
        .iter()
        .zip(variance)
        .zip(target)
        .filter(|((m, v), t)| (*t - *m).abs() <= Z_95 * v.sqrt())
        .count();
    inside as f64 / target.len() as f64
}

/// `model`'s NLPD on each row of `valid` (raw units).
pub(crate) fn row_nlpds(
    model: &crate::model::TrainedModel,
    valid: &crate::data::Dataset,
) -> crate::Result<Vec<f64>> {
    let p = model.predict_raw(&valid.raw_x())?;
    Ok(p.mean
        .iter()
        .zip(p.var.iter())
        .zip(valid.raw_y().iter())
        .map(|((&m, &v), &y)| point_nlpd(m, v, y))
        .collect())
}

/// A classifier's log loss on each row of `valid` (nats): minus the log of
/// the probability `set` gives the true class (the classifier's NLPD;
/// probabilities clamped to [1e-12, 1 - 1e-12] as in the log loss).
pub(crate) fn row_log_losses(
    set: &crate::model::ModelSet,
    valid: &crate::data::Dataset,
) -> crate::Result<Vec<f64>> {
    use crate::model::multiclass::{probabilities, ClassLink};
    use sgp_runtime::Link;
    let x = valid.raw_x();
    let loss = |p: f64| -libm::log(p.clamp(PROB_CLAMP, 1.0 - PROB_CLAMP));
    let link = match set.members.first().map(|m| m.link) {
        Some(Link::Softmax) => ClassLink::Softmax,
        Some(Link::OneVsRest) => ClassLink::OneVsRest,
        _ => {
            let member = set
                .members
                .first()
                .ok_or_else(|| crate::Error::Numerical("a classifier without a latent".into()))?;
            let p = member.predict_raw(&x)?;
            return Ok((0..valid.n_rows())
                .map(|i| {
                    let positive = crate::model::likelihood::norm_cdf(
                        p.mean[i] / (1.0 + p.var[i].max(0.0)).sqrt(),
                    );
                    loss(if valid.y[i] > 0.0 {
                        positive
                    } else {
                        1.0 - positive
                    })
                })
                .collect());
        }
    };
    let p = probabilities(set, &x, link)?;
    Ok(valid
        .raw_y()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let class = c.round() as usize;
            loss(if class < p.ncols() {
                p[(i, class)]
            } else {
                0.0
            })
        })
        .collect())
}

/// Standard error of the mean of `b - a` (per row).
pub(crate) fn paired_standard_error(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    if n < 2 {
        return 0.0;
    }
    let d: Vec<f64> = b.iter().zip(a).map(|(b, a)| b - a).collect();
    let mean = d.iter().sum::<f64>() / n as f64;
    let var = d.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
    (var / n as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn point_nlpd_at_the_mean_is_half_log_two_pi_variance() {
        let at_mean = point_nlpd(0.0, 1.0, 0.0);
        assert!((at_mean - 0.5 * libm::log(2.0 * std::f64::consts::PI)).abs() < 1e-12);
        let one_sd = point_nlpd(1.0, 4.0, 3.0);
        assert!((one_sd - (0.5 * libm::log(8.0 * std::f64::consts::PI) + 0.5)).abs() < 1e-12);
    }

    #[test]
    fn calibration_error_is_the_weighted_gap_between_confidence_and_accuracy() {
        // Confidence 0.9 and right: gap 0.1 per row.
        assert!((expected_calibration_error(&[0.9, 0.1], &[1.0, -1.0]) - 0.1).abs() < 1e-12);
        // Bin [0.7, 0.8): confidences 0.75, one of two right: gap |1.5 - 1| / 2 rows.
        let ece = expected_calibration_error(&[0.75, 0.25], &[1.0, 1.0]);
        assert!((ece - 0.25).abs() < 1e-12, "{ece}");
        // Certain and right everywhere: calibrated.
        assert_eq!(expected_calibration_error(&[1.0, 0.0], &[1.0, -1.0]), 0.0);
        assert!(expected_calibration_error(&[], &[]).is_nan());
        assert!(expected_calibration_error(&[0.5], &[0.0]).is_nan());
        assert!(expected_calibration_error(&[f64::NAN], &[1.0]).is_nan());
    }

    #[test]
    fn squared_errors() {
        let p = [1.0, 2.0, 3.0];
        let t = [1.0, 4.0, 1.0];
        assert!((mse(&p, &t) - 8.0 / 3.0).abs() < 1e-12);
        assert!((rmse(&p, &t) - (8.0f64 / 3.0).sqrt()).abs() < 1e-12);
        // Population variance of t is 2, so SMSE = (8/3) / 2.
        assert!((smse(&p, &t) - 4.0 / 3.0).abs() < 1e-12);
        let mean = [2.0; 3];
        assert!((smse(&mean, &t) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn gaussian_nlpd_matches_closed_form() {
        // Standard normal at 0: 0.5 ln(2 pi).
        let v = mean_nlpd(&[0.0], &[1.0], &[0.0]);
        assert!((v - 0.5 * libm::log(2.0 * std::f64::consts::PI)).abs() < 1e-12);
        let v = mean_nlpd(&[1.0, 0.0], &[4.0, 1.0], &[3.0, 0.0]);
        let a = 0.5 * libm::log(2.0 * std::f64::consts::PI * 4.0) + 4.0 / 8.0;
        let b = 0.5 * libm::log(2.0 * std::f64::consts::PI);
        assert!((v - (a + b) / 2.0).abs() < 1e-12);
        assert!(mean_nlpd(&[0.0], &[0.0], &[0.0]).is_nan());
        assert!(mean_nlpd(&[0.0], &[-1.0], &[0.0]).is_nan());
    }

    #[test]
    fn classification_figures() {
        let t = [1.0, -1.0, 1.0, -1.0];
        assert_eq!(error_rate(&[0.3, -2.0, -0.1, 0.0], &t), 0.5);
        assert_eq!(error_rate(&t, &t), 0.0);
        assert!(error_rate(&[1.0], &[0.0]).is_nan());
        let v = mean_nlpd_binary(&[0.8, 0.25], &[1.0, -1.0]);
        assert!((v - (-libm::log(0.8f64) - libm::log(0.75f64)) / 2.0).abs() < 1e-12);
        let confident_wrong = mean_nlpd_binary(&[0.0], &[1.0]);
        assert!(confident_wrong.is_finite() && confident_wrong > 20.0);
        assert!(mean_nlpd_binary(&[1.0], &[1.0]).abs() < 1e-9);
    }

    #[test]
    fn coverage_counts_the_central_interval() {
        let m = [0.0; 4];
        let v = [1.0; 4];
        assert_eq!(coverage_95(&m, &v, &[0.0, 1.9, -1.95, 2.0]), 0.75);
        assert_eq!(coverage_95(&[0.0], &[0.0], &[0.0]), 1.0);
        assert!(coverage_95(&[0.0], &[-1.0], &[0.0]).is_nan());
    }

    #[test]
    fn empty_or_mismatched_inputs_give_nan() {
        let e: [f64; 0] = [];
        assert!(mse(&e, &e).is_nan());
        assert!(rmse(&[1.0], &[1.0, 2.0]).is_nan());
        assert!(smse(&[1.0, 1.0], &[2.0, 2.0]).is_nan());
        assert!(mean_nlpd(&e, &e, &e).is_nan());
        assert!(mean_nlpd(&[0.0], &[1.0, 1.0], &[0.0]).is_nan());
        assert!(error_rate(&e, &e).is_nan());
        assert!(mean_nlpd_binary(&e, &e).is_nan());
        assert!(coverage_95(&e, &e, &e).is_nan());
    }
}
