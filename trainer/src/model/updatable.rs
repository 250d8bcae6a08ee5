//! The covariance form of an updatable blob
//! ([`sgp_runtime::VarianceForm::Covariance`], format version 9): what a
//! device needs to condition the model on new observations
//! (`sgp_runtime::Model::update`).
//!
//! The posterior of the whitened inducing values `L1^-1 u` is
//! `N(L1^T beta, S)`; the blob stores `L1`, the means `L1^T beta` and a
//! U-D factor of `S` itself, `S = W^T diag(D) W`, so that the device's
//! variance adds non-negative terms and its updates keep `S >= 0`
//! (docs/src/learning.md).

use nalgebra::{DMatrix, DVector};
use sgp_runtime::{Learning, Link, Observation, VarianceForm};

use crate::model::inference::{Approximation, RuntimeForm};
use crate::model::posterior_sums::PosteriorSums;
use crate::model::TrainedModel;
use crate::numerics::linalg::{lower_inverse, mat_ref, mul, solve_lower_t_vec, symmetrise};
use crate::{Error, Result};

/// How far `I - S` may fall below zero (rounding of a direction no data
/// informs) before the posterior counts as wider than the prior.
const WIDER_THAN_PRIOR: f64 = 1e-8;

/// The smallest diagonal `D` a blob holds (the format wants it `> 0`;
/// the device's updates keep the same floor).
const DIAGONAL_FLOOR: f64 = 1e-30;

/// How a model of this link, fitted with `approximation` (a sparse
/// regression's objective), conditions on a new observation.
///
/// # Errors
/// [`Error::BadInput`] for a multi-class link, or a regression without a
/// sparse objective (an exact GP): neither learns on the device.
pub(crate) fn observation_of(
    link: Link,
    approximation: Option<Approximation>,
) -> Result<Observation> {
    match (link, approximation) {
        (Link::Identity, Some(Approximation::Fitc)) => Ok(Observation::Fitc),
        (Link::Identity, Some(Approximation::Vfe)) => Ok(Observation::Vfe),
        (Link::Probit, _) => Ok(Observation::Probit),
        (Link::Identity, None) => Err(Error::BadInput(
            "only a sparse regression (spgp, spgp-hs, spgp-dr, spgp-pca, vsgp, gplasso) or a \
             binary classifier (svgp) can learn on the device; fit one of those with --updatable"
                .into(),
        )),
        (Link::OneVsRest | Link::Softmax, _) => Err(Error::BadInput(format!(
            "a {} classifier cannot learn on the device (its labels have no rank-one update); a \
             binary svgp classifier can",
            link.name()
        ))),
    }
}

/// The covariance form of `form` (two factors): `W` with `S = W^T
/// diag(D) W`, its strictly lower part (`W - I`) below the diagonal and
/// `D` on it, and the mean `L1^T beta`. Formed in f64 from `S` itself,
/// last row first, so that a small `S` gives small `D` (f32 keeps a
/// well-determined direction to its relative precision).
///
/// # Errors
/// [`Error::BadInput`] for a one-factor form (the exact GP, the IVM: their
/// `L1` is not `chol(K_M)`); [`Error::Numerical`] if a factor is singular
/// or the posterior is wider than the prior in some direction.
pub(crate) fn whitened_factor(form: &RuntimeForm) -> Result<(DMatrix<f64>, DVector<f64>)> {
    let Some(l2) = &form.l2 else {
        return Err(Error::BadInput(
            "this model's variance has one factor (an exact GP or an IVM): its basis has no \
             posterior of its own to update; fit spgp or svgp with --updatable"
                .into(),
        ));
    };
    let m = form.l1.nrows();
    let inv1 = lower_inverse(&form.l1)?;
    let inv_a = lower_inverse(&mul(mat_ref(&inv1), mat_ref(l2)))?;
    // S = A^-1 = L_A^-T L_A^-1.
    let s = symmetrise(mul(mat_ref(&inv_a).transpose(), mat_ref(&inv_a)));
    let least = (DMatrix::identity(m, m) - &s)
        .symmetric_eigen()
        .eigenvalues
        .min();
    if least < -WIDER_THAN_PRIOR {
        // No update would keep such a posterior below the prior.
        return Err(Error::Numerical(format!(
            "the fitted posterior's variance exceeds the prior along some direction of the \
             inducing values (I - S has eigenvalue {least:.3e} in whitened coordinates), which \
             an updatable blob cannot hold (seen with svgp classifiers on labels their inputs \
             separate perfectly); export this model without --updatable"
        )));
    }
    let mut w = DMatrix::<f64>::zeros(m, m);
    let mut d = DVector::<f64>::zeros(m);
    for j in (0..m).rev() {
        let dj = s[(j, j)] - (j + 1..m).map(|k| w[(k, j)].powi(2) * d[k]).sum::<f64>();
        // A pivot rounding to zero or below: a direction S holds none of.
        d[j] = dj.max(0.0);
        for i in 0..j {
            w[(j, i)] = if d[j] > 0.0 {
                (s[(i, j)]
                    - (j + 1..m)
                        .map(|k| w[(k, i)] * w[(k, j)] * d[k])
                        .sum::<f64>())
                    / d[j]
            } else {
                0.0
            };
        }
    }
    for i in 0..m {
        w[(i, i)] = d[i].max(DIAGONAL_FLOOR);
    }
    Ok((w, form.l1.tr_mul(&form.beta)))
}

/// The posterior of `form`'s basis and hyperparameters (its `L1`, prior
/// and noise) conditioned on the rows `x` (standardised inputs, N x D) and
/// `y` (standardised targets) alone, with FITC's or VFE's row variance:
/// the batch posterior an updated model is held to ("same basis and
/// hyperparameters"), by the sums a streamed fit merges
/// ([`crate::model::posterior_sums`]).
///
/// # Errors
/// [`Error::BadInput`] for a one-factor form or mismatched shapes,
/// [`Error::Numerical`] if the system cannot be factorised.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn conditioned(
    form: &RuntimeForm,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    approximation: Approximation,
) -> Result<RuntimeForm> {
    if form.l2.is_none() || x.nrows() != y.len() || x.ncols() != form.basis.input_dim() {
        return Err(Error::BadInput(format!(
            "conditioning a {}-input model with {} factor(s) on {} x {} inputs and {} targets",
            form.basis.input_dim(),
            if form.l2.is_some() { 2 } else { 1 },
            x.nrows(),
            x.ncols(),
            y.len()
        )));
    }
    let m = form.l1.nrows();
    let v = mul(
        mat_ref(&lower_inverse(&form.l1)?),
        mat_ref(&form.basis.eval(x)),
    );
    let kdiag = vec![form.prior; y.len()];
    let mut gamma = vec![0.0; y.len()];
    let mut scratch = DMatrix::zeros(m, y.len());
    let sums = PosteriorSums::of_whitened(
        &v,
        &kdiag,
        y.as_slice(),
        form.noise_var,
        approximation,
        &mut gamma,
        &mut scratch,
    );
    let solved = sums.solve(approximation, form.noise_var)?;
    let mut l2 = mul(mat_ref(&form.l1), mat_ref(&solved.la));
    l2.fill_upper_triangle(0.0, 1);
    Ok(RuntimeForm {
        basis: form.basis.clone(),
        beta: solve_lower_t_vec(&form.l1, &solved.beta_v)?,
        l1: form.l1.clone(),
        l2: Some(l2),
        prior: form.prior,
        noise_var: form.noise_var,
    })
}

impl TrainedModel {
    /// [`TrainedModel::to_spec`] in the covariance form of an updatable
    /// blob (format version 9), learning with `observation`.
    ///
    /// # Errors
    /// As [`whitened_factor`] and [`TrainedModel::to_spec`].
    pub(crate) fn to_whitened_spec(
        &self,
        observation: Observation,
    ) -> Result<sgp_runtime::ModelSpec> {
        let (g, mean) = whitened_factor(&self.form)?;
        let mut spec = self.to_spec()?;
        spec.l2 = (0..g.nrows())
            .flat_map(|i| (0..=i).map(move |j| (i, j)))
            .map(|(i, j)| g[(i, j)] as f32)
            .collect();
        for i in 0..g.nrows() {
            // Rounding must not undo the floor.
            let at = i * (i + 3) / 2;
            spec.l2[at] = spec.l2[at].max(DIAGONAL_FLOOR as f32);
        }
        spec.variance = VarianceForm::Covariance;
        spec.learning = Some(Learning {
            observation,
            means: vec![mean.iter().map(|&v| v as f32).collect()],
        });
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::{fit, FitParams, SparseParams};

    /// The updatable blob predicts what the model does, and its factor
    /// gives back the posterior covariance `S`.
    #[test]
    fn the_whitened_form_is_the_posterior() {
        let (x, y) = crate::synth::synthetic(200, 2, 4);
        let data =
            crate::data::Dataset::from_raw(x, y, vec!["a".into(), "b".into()], "y".into()).unwrap();
        let params = FitParams::Spgp(SparseParams {
            m: 8,
            restarts: 1,
            ..SparseParams::default()
        });
        let set = fit(&data, &params, &mut |_| {}).unwrap().set;
        let model = &set.members[0];
        let (g, mean) = whitened_factor(&model.form).unwrap();
        let m = g.nrows();
        let w = DMatrix::from_fn(m, m, |i, j| match j.cmp(&i) {
            std::cmp::Ordering::Less => g[(i, j)],
            std::cmp::Ordering::Equal => 1.0,
            _ => 0.0,
        });
        let d = DMatrix::from_diagonal(&DVector::from_fn(m, |i, _| g[(i, i)]));
        let s = w.transpose() * d * &w;
        let l_a = lower_inverse(&model.form.l1).unwrap() * model.form.l2.as_ref().unwrap();
        let a = &l_a * l_a.transpose();
        let err = (&a * &s - DMatrix::identity(m, m)).abs().max();
        assert!(err < 1e-8, "A S - I: {err:e}");
        assert!(
            (model.form.l1.transpose() * &model.form.beta - mean)
                .abs()
                .max()
                < 1e-12
        );
        let spec = set.to_whitened_spec(Observation::Fitc).unwrap();
        let blob = spec.to_bytes().unwrap();
        assert_eq!(u16::from_le_bytes([blob[4], blob[5]]), 9);
        let fidelity = crate::export::compare(&set, &blob, &data.raw_x()).unwrap();
        assert!(fidelity[0].passes(), "{}", fidelity[0].describe());
    }

    #[test]
    fn only_models_with_a_posterior_over_their_basis_learn() {
        assert!(observation_of(Link::Identity, None).is_err());
        assert!(observation_of(Link::Softmax, None).is_err());
        assert_eq!(
            observation_of(Link::Probit, None).unwrap(),
            Observation::Probit
        );
        assert_eq!(
            observation_of(Link::Identity, Some(Approximation::Vfe)).unwrap(),
            Observation::Vfe
        );
    }
}
