//! Likelihoods, apart from the kernel: how a latent value `f` explains a
//! target. [`Likelihood::Gaussian`] is regression with noise variance
//! `sigma2` (a parameter the optimiser sees, in the kernel's parameter
//! vector); [`Likelihood::Probit`] is binary classification,
//! `P(y | f) = Phi(y (f + b))` for labels `y = ±1` and a bias `b`, with no
//! noise parameter. The target kind of a [`crate::data::Dataset`] picks one.

use sgp_runtime::Link;

use crate::data::TargetKind;

/// The observation model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Likelihood {
    /// `y = f + N(0, sigma2)`, continuous standardised targets.
    Gaussian,
    /// `P(y = ±1 | f) = Phi(±(f + b))`, labels kept as -1/+1.
    Probit,
}

impl Likelihood {
    /// The likelihood a data set's target calls for.
    pub(crate) fn for_target(target: TargetKind) -> Self {
        match target {
            TargetKind::Continuous => Likelihood::Gaussian,
            TargetKind::Binary { .. } | TargetKind::Classes { .. } => Likelihood::Probit,
        }
    }

    /// The runtime link that evaluates it.
    pub fn link(self) -> Link {
        match self {
            Likelihood::Gaussian => Link::Identity,
            Likelihood::Probit => Link::Probit,
        }
    }

    /// Whether the parameter vector holds a noise variance for it (the
    /// Gaussian's `sigma2`; the probit has none).
    pub(crate) fn has_noise(self) -> bool {
        self == Likelihood::Gaussian
    }
}

/// The standard normal CDF `Phi(z)`.
pub(crate) fn norm_cdf(z: f64) -> f64 {
    0.5 * libm::erfc(-z / std::f64::consts::SQRT_2)
}

/// The standard normal density `N(z | 0, 1)`.
pub(crate) fn norm_pdf(z: f64) -> f64 {
    libm::exp(-0.5 * z * z) / (2.0 * std::f64::consts::PI).sqrt()
}

/// `N(z) / Phi(z)`, accurate where both underflow (z far below zero: the
/// asymptotic series of Mills' ratio).
pub(crate) fn pdf_over_cdf(z: f64) -> f64 {
    if z > -30.0 {
        norm_pdf(z) / norm_cdf(z)
    } else {
        let r = 1.0 / (z * z);
        -z / (1.0 - r + 3.0 * r * r - 15.0 * r * r * r)
    }
}

/// `(log Phi(z), N(z) / Phi(z))` from one `Phi(z)` (one `erfc` per
/// quadrature node): the probit's log-likelihood and its slope. Accurate
/// where `Phi(z)` underflows (through [`pdf_over_cdf`]: `Phi = N / (N / Phi)`).
pub(crate) fn log_norm_cdf_and_ratio(z: f64) -> (f64, f64) {
    if z > -30.0 {
        let cdf = norm_cdf(z);
        (libm::log(cdf), norm_pdf(z) / cdf)
    } else {
        let ratio = pdf_over_cdf(z);
        let log_cdf = -0.5 * z * z - 0.5 * libm::log(2.0 * std::f64::consts::PI) - libm::log(ratio);
        (log_cdf, ratio)
    }
}

/// The inverse of [`norm_cdf`] for `p` in (0, 1), by bisection (used once
/// per fit, for the bias).
pub(crate) fn norm_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0_f64, 40.0_f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if norm_cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// `Phi(m / sqrt(1 + v))`: the probit class probability in f64.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn probit(mean: f64, var: f64) -> f64 {
    0.5 * libm::erfc(-mean / (1.0 + var).sqrt() / std::f64::consts::SQRT_2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mills_ratio_is_continuous_where_the_series_takes_over() {
        // Just past the switch the direct quotient is still accurate.
        let direct = norm_pdf(-30.001) / norm_cdf(-30.001);
        assert!((pdf_over_cdf(-30.001) - direct).abs() < 1e-9 * direct);
        assert!(pdf_over_cdf(-1e3).is_finite() && pdf_over_cdf(-1e3) > 999.0);
        assert!(pdf_over_cdf(40.0) >= 0.0);
    }

    #[test]
    fn log_cdf_is_continuous_where_the_series_takes_over() {
        let log_cdf = |z: f64| log_norm_cdf_and_ratio(z).0;
        let direct = libm::log(norm_cdf(-30.001));
        assert!((log_cdf(-30.001) - direct).abs() < 1e-9 * direct.abs());
        assert!(log_cdf(-1e3).is_finite());
        assert!(log_cdf(10.0) <= 0.0);
        for z in [-40.0, -30.001, -29.999, -3.0, 0.0, 2.5, 9.0] {
            assert_eq!(log_norm_cdf_and_ratio(z).1, pdf_over_cdf(z), "z = {z}");
        }
    }

    #[test]
    fn quantile_inverts_the_cdf() {
        for p in [1e-6, 0.1, 0.5, 0.73, 0.999] {
            assert!((norm_cdf(norm_quantile(p)) - p).abs() < 1e-12);
        }
        assert!(norm_quantile(0.5).abs() < 1e-12);
    }
}
