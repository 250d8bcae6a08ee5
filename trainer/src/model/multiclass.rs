//! Probabilities of a classifier of `K` classes whose members are one
//! probit latent per class: the two links the blob format offers (their
//! scores against true classes are the evaluation's).

use nalgebra::DMatrix;

use sgp_runtime::Link;

use crate::model::likelihood::{norm_cdf, probit};
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

/// The class probabilities of a multi-class `link` (FORMAT.md) from each
/// class's latent mean `t_k = m_k + b_k` and variance `v_k`, in f64: the
/// reference the device's are held to, and what host tools report.
/// One-vs-rest: `q_k = Phi(t_k / sqrt(1 + v_k))`, `p_k = q_k / sum q`
/// (`1 / K` each when every `q_k` is 0); softmax: `p_k` proportional to
/// `exp(t_k / sqrt(1 + pi v_k / 8))`. Any other link: the probit
/// probability of each latent.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn class_probabilities(link: Link, latents: &[(f64, f64)]) -> Vec<f64> {
    let weights: Vec<f64> = match link {
        Link::Softmax => {
            let scores: Vec<f64> = latents
                .iter()
                .map(|&(t, v)| t / (1.0 + std::f64::consts::PI * v / 8.0).sqrt())
                .collect();
            let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            scores.iter().map(|s| libm::exp(s - top)).collect()
        }
        Link::OneVsRest => latents.iter().map(|&(t, v)| probit(t, v)).collect(),
        Link::Identity | Link::Probit => {
            return latents.iter().map(|&(t, v)| probit(t, v)).collect()
        }
    };
    let total: f64 = weights.iter().sum();
    let k = weights.len() as f64;
    weights
        .iter()
        .map(|w| if total > 0.0 { w / total } else { 1.0 / k })
        .collect()
}
