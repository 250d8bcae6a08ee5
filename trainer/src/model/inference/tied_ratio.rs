//! The joint objective of several outputs whose noise-to-signal ratio is
//! one shared `r`: output `p`'s noise variance is `r s2_p`, its signal
//! variance `s2_p` its own. Every covariance of output `p` is then `s2_p`
//! times one matrix of the shared basis, so one variance factor serves
//! every output (format version 6, `runtime/FORMAT.md`).
//!
//! Layout: `[shared | u | log s2_1 | ... | log s2_P]` with
//! `r = RATIO_FLOOR + exp(u)`, mapped onto `SharedObjective`'s layout
//! (`log sigma2_p = log r + log s2_p`, noise floors zero) and the gradient
//! by the chain rule.

use super::shared::{OutputObjective, SharedObjective, OWN_PARAMS};
use crate::model::kernel::{KernelParams, DEFAULT_NOISE_FLOOR};
use crate::{Error, Result};

/// Floor on the shared ratio `r`: the noise floor of one output
/// ([`DEFAULT_NOISE_FLOOR`], relative to a standardised target), relative
/// to the signal variance instead, for the same reason: FITC drives the
/// noise towards zero.
pub(crate) const RATIO_FLOOR: f64 = DEFAULT_NOISE_FLOOR;

/// `kern` with the same noise variance (at least `RATIO_FLOOR` times its
/// signal variance) and no noise floor: the form [`TiedRatio`] needs
/// from each output's objective.
///
/// # Errors
/// If the values are not finite.
pub(crate) fn without_noise_floor(kern: &KernelParams) -> Result<KernelParams> {
    let s2 = kern.signal_var();
    let noise = kern.noise_var().max(2.0 * RATIO_FLOOR * s2);
    let lengthscales: Vec<f64> = kern
        .log_lengthscales
        .iter()
        .map(|v| libm::exp(*v))
        .collect();
    Ok(KernelParams::with_noise_floor(&lengthscales, s2, noise, 0.0)?.with_kernel(kern.kernel))
}

/// The sum of `P` outputs' objectives with one noise-to-signal ratio.
#[derive(Clone, Debug)]
pub(crate) struct TiedRatio<O> {
    joint: SharedObjective<O>,
}

impl<O: OutputObjective> TiedRatio<O> {
    /// The tied objective of `outputs`, whose kernels must have no noise
    /// floor ([`without_noise_floor`]).
    ///
    /// # Errors
    /// As [`SharedObjective::new`].
    pub fn new(outputs: Vec<O>) -> Result<Self> {
        Ok(Self {
            joint: SharedObjective::new(outputs)?,
        })
    }

    /// The untied objective underneath.
    pub fn joint(&self) -> &SharedObjective<O> {
        &self.joint
    }

    fn shared(&self) -> usize {
        self.joint.len() - OWN_PARAMS * self.joint.n_outputs()
    }

    /// Length of the tied vector.
    pub fn len(&self) -> usize {
        self.shared() + 1 + self.joint.n_outputs()
    }

    /// The starting vector: the outputs' own starts, with `r` the
    /// geometric mean of their noise-to-signal ratios.
    pub fn initial(&self) -> Vec<f64> {
        let p = self.joint.initial();
        let shared = self.shared();
        let pairs: Vec<&[f64]> = p[shared..].chunks(OWN_PARAMS).collect();
        let log_ratio = pairs.iter().map(|q| q[1] - q[0]).sum::<f64>() / pairs.len() as f64;
        let ratio = libm::exp(log_ratio).max(2.0 * RATIO_FLOOR);
        let mut q = p[..shared].to_vec();
        q.push(libm::log(ratio - RATIO_FLOOR));
        q.extend(pairs.iter().map(|pair| pair[0]));
        q
    }

    /// The untied joint vector at the tied vector `q`.
    ///
    /// # Errors
    /// [`Error::Numerical`] for a vector of the wrong length.
    pub fn untied(&self, q: &[f64]) -> Result<Vec<f64>> {
        let shared = self.shared();
        if q.len() != self.len() {
            return Err(Error::Numerical(format!(
                "tied parameter vector has {} entries, expected {}",
                q.len(),
                self.len()
            )));
        }
        let log_ratio = libm::log(RATIO_FLOOR + libm::exp(q[shared]));
        let mut p = q[..shared].to_vec();
        for &log_s2 in &q[shared + 1..] {
            p.push(log_s2);
            p.push(log_ratio + log_s2);
        }
        Ok(p)
    }

    /// The summed objective and its gradient at the tied vector `q`.
    ///
    /// # Errors
    /// As [`SharedObjective::objective`].
    pub fn objective(&self, q: &[f64]) -> Result<(f64, Vec<f64>)> {
        let shared = self.shared();
        let (value, g) = self.joint.objective(&self.untied(q)?)?;
        let excess = libm::exp(q[shared]);
        // d log r / d u = exp(u) / r.
        let dlog_ratio = excess / (RATIO_FLOOR + excess);
        let mut grad = g[..shared].to_vec();
        let pairs: Vec<&[f64]> = g[shared..].chunks(OWN_PARAMS).collect();
        grad.push(pairs.iter().map(|pair| pair[1]).sum::<f64>() * dlog_ratio);
        grad.extend(pairs.iter().map(|pair| pair[0] + pair[1]));
        Ok((value, grad))
    }
}

#[cfg(test)]
mod tests {
    use nalgebra::DVector;

    use super::*;
    use crate::model::features::PseudoInputs;
    use crate::model::inference::fitc::FitcConfig;
    use crate::model::inference::objective::{ExactObjective, SparseObjective};
    use crate::model::inference::test_util::{assert_grad_close, fd_grad, problem};
    use crate::model::inference::Approximation;
    use crate::numerics::linalg::JitterPolicy;

    fn kern(s2: f64, noise: f64) -> KernelParams {
        without_noise_floor(&KernelParams::new(&[0.9, 1.3], s2, noise).unwrap()).unwrap()
    }

    /// The analytic gradient against finite differences, away from the
    /// start (where the ratio is the outputs' own mean).
    fn assert_gradient<O: OutputObjective>(tied: &TiedRatio<O>) {
        let q: Vec<f64> = tied
            .initial()
            .iter()
            .enumerate()
            .map(|(i, v)| v + 0.07 * ((i % 5) as f64 - 2.0))
            .collect();
        let (_, ana) = tied.objective(&q).unwrap();
        let num = fd_grad(|q| tied.objective(q).unwrap().0, &q, 1e-5);
        assert_grad_close(&num, &ana, 1e-5);
    }

    #[test]
    fn tied_sparse_gradient_matches_finite_differences() {
        let (x, y1) = problem(9, 40, 2);
        let y2 = DVector::from_fn(40, |i, _| 2.0 * libm::sin(x[(i, 0)] * 0.7) + 0.3 * y1[i]);
        let z = x.rows(0, 5).into_owned();
        for approximation in [Approximation::Fitc, Approximation::Vfe] {
            let config = FitcConfig {
                approximation,
                ..FitcConfig::default()
            };
            let features = PseudoInputs::new(z.clone()).unwrap();
            let tied = TiedRatio::new(vec![
                SparseObjective::new(&x, &y1, features.clone(), kern(1.0, 0.1), config).unwrap(),
                SparseObjective::new(&x, &y2, features, kern(2.5, 0.4), config).unwrap(),
            ])
            .unwrap();
            assert_gradient(&tied);
        }
    }

    #[test]
    fn tied_exact_gradient_matches_finite_differences() {
        let (x, y1) = problem(4, 30, 2);
        let y2 = DVector::from_fn(30, |i, _| libm::cos(x[(i, 1)] * 1.1) - 0.4 * y1[i]);
        let tied = TiedRatio::new(vec![
            ExactObjective::new(&x, &y1, kern(1.0, 0.1), JitterPolicy::default()).unwrap(),
            ExactObjective::new(&x, &y2, kern(0.4, 0.02), JitterPolicy::default()).unwrap(),
            ExactObjective::new(&x, &y1, kern(3.0, 0.5), JitterPolicy::default()).unwrap(),
        ])
        .unwrap();
        assert_gradient(&tied);
    }

    /// Every output's noise is `r` times its signal variance, `r` at or
    /// above its floor, and the tied value is the untied objective there.
    #[test]
    fn every_output_gets_the_shared_ratio() {
        let (x, y1) = problem(2, 20, 2);
        let tied = TiedRatio::new(vec![
            ExactObjective::new(&x, &y1, kern(1.0, 0.1), JitterPolicy::default()).unwrap(),
            ExactObjective::new(&x, &y1, kern(4.0, 1e-9), JitterPolicy::default()).unwrap(),
        ])
        .unwrap();
        let mut q = tied.initial();
        let shared = q.len() - 3;
        q[shared] = -60.0;
        let p = tied.untied(&q).unwrap();
        for i in 0..2 {
            let own = tied.joint().output_params(&p, i).unwrap();
            let k = tied.joint().outputs()[i].unpack(&own).unwrap();
            let ratio = k.noise_var() / k.signal_var();
            assert!((ratio - RATIO_FLOOR).abs() < 1e-12, "{ratio}");
        }
        assert_eq!(
            tied.objective(&q).unwrap().0,
            tied.joint().objective(&p).unwrap().0
        );
        assert!(tied.untied(&q[1..]).is_err());
    }
}
