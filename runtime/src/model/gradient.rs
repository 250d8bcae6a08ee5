//! Gradients of a prediction with respect to the raw inputs, for
//! controllers and filters (MPC, EKF) that linearise the model at every
//! step.
//!
//! With `z` the features (standardised, then projected if the model has a
//! projection `P`; with shared widths both already carry `s_g`), `s_d`
//! the input scales, and the stored pairs `(c_ig, s_ig)` (see
//! `Model::basis_params`: scaled centres, and the scales `s_ig =
//! sqrt(w_ig / 2)`, or 1 once shared ones are folded into `z`), each basis
//! value is `k_i = a_i 2^-(q_i / 2^25)`, `q_i = sum_g (s_ig z_g -
//! c_ig)^2` the distance in the exp's fixed-point units (`s_ig` carries
//! `sqrt(log2(e) 2^25)`). With `o_ig = s_ig (s_ig z_g - c_ig)` (`z_g -
//! c_ig` for shared widths) and `n = ln 2 / 2^25`, `dk_i/dz_g = -2 n o_ig
//! k_i`, so
//!
//! - latent mean `m = beta . k`: `dm/dz_g = -2 n sum_i beta_i k_i o_ig`;
//! - latent variance `v = prior - |u1|^2 + |u2|^2` with `u = L^{-1} k`:
//!   `dv/dz_g = 2 (r2 - r1) . dk/dz_g = 4 n sum_i (r1_i - r2_i) k_i o_ig`,
//!   `r = L^{-T} u` (one back substitution per factor); with the product
//!   form `v = prior - |u|^2`, `u = L1 k`, the same with `r1 = L1^T u`
//!   (one transposed product) and `r2 = 0`; zero where the variance is
//!   clamped at zero;
//! - `dz_g/dx_d = P_gd / s_d` (without a projection `z_d = (x_d - mean_d) / s_d`);
//! - output units as [`Model::predict`]: regression scales the mean's
//!   gradient by `y_scale` and the variance's by `y_scale^2` (the noise is
//!   constant); probit models give the latent `f + b` and its variance.
//!
//! Both gradients come from one pass over the basis functions (`O(M G)`)
//! plus `O(G D)` for the chain rule through the projection, and the
//! variance's needs the two back substitutions (`O(M^2)`, as many
//! multiply-adds as the forward ones [`Model::predict`] already does).

use super::{Model, Output, Prediction};
use crate::error::Error;
use crate::format::{Kernel, Link, VarianceForm};
use crate::math;
use crate::whitened;

/// `1 / sqrt(2 pi)`, the standard normal density at 0.
const FRAC_1_SQRT_2PI: f32 = 0.398_942_3;

/// A prediction and its gradient with respect to the raw inputs, from
/// [`Model::predict_with_gradient`].
///
/// `mean` and `variance` are exactly (bit for bit) what [`Model::predict`]
/// returns at the same input: regression gives the target in raw units,
/// noise included; probit models the latent `f + b`. The gradients hold
/// `d mean / d x_j` and `d variance / d x_j` in raw units for `j` below the
/// model's [`Model::input_dim`]; entries from there up to the capacity `D`
/// are zero. Where the variance is clamped at zero (f32 cancellation next
/// to a basis centre) its gradient is zero too.
///
/// ```
/// let p = sgp_runtime::PredictionWithGradient {
///     mean: 1.0,
///     variance: 0.25,
///     mean_gradient: [2.0, 0.0],
///     variance_gradient: [0.0, -0.5],
/// };
/// // First-order model of the mean near x: mean + mean_gradient . dx.
/// let dx = [0.01, 0.02];
/// let linear: f32 = p.mean + p.mean_gradient.iter().zip(&dx).map(|(g, d)| g * d).sum::<f32>();
/// assert!((linear - 1.02).abs() < 1e-6);
/// assert_eq!(p.prediction().std_dev(), 0.5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PredictionWithGradient<const D: usize> {
    /// Predictive mean, as [`Prediction::mean`].
    pub mean: f32,
    /// Predictive variance, as [`Prediction::variance`]: never negative,
    /// never NaN.
    pub variance: f32,
    /// `d mean / d x_j` for each raw input `j` (zero past the model's input
    /// dimension).
    pub mean_gradient: [f32; D],
    /// `d variance / d x_j` for each raw input `j` (zero past the model's
    /// input dimension, and zero where the variance is clamped at zero).
    pub variance_gradient: [f32; D],
}

impl<const D: usize> PredictionWithGradient<D> {
    /// The mean and variance alone, as [`Model::predict`] gives them.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// let x = [0.5, -1.0];
    /// assert_eq!(model.predict_with_gradient(&x)?.prediction(), model.predict(&x)?);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn prediction(&self) -> Prediction {
        Prediction {
            mean: self.mean,
            variance: self.variance,
        }
    }
}

/// A probit model's class probability and its gradient with respect to the
/// raw inputs, from [`Model::probability_with_gradient`].
///
/// `probability` is exactly what [`Model::probability`] returns;
/// `gradient[j]` is `dP(y = +1) / d x_j` for `j` below the model's input
/// dimension, zero from there up to the capacity `D`.
///
/// ```
/// let p = sgp_runtime::ProbabilityWithGradient { probability: 0.7, gradient: [0.1, -0.2] };
/// // Which input raises the probability fastest:
/// let steepest = if p.gradient[0].abs() > p.gradient[1].abs() { 0 } else { 1 };
/// assert_eq!(steepest, 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbabilityWithGradient<const D: usize> {
    /// `P(y = +1 | x)`.
    pub probability: f32,
    /// `dP(y = +1 | x) / d x_j` for each raw input `j` (zero past the
    /// model's input dimension).
    pub gradient: [f32; D],
}

impl<const M: usize, const G: usize, const D: usize, const P: usize> Model<M, G, D, P> {
    /// [`Model::predict`] and the gradients of its mean and variance with
    /// respect to the raw inputs (see [`PredictionWithGradient`]).
    ///
    /// Cost: `predict`'s, plus one more pass over the basis functions
    /// (`O(M G)`), `O(G D)` through a projection, and one back substitution
    /// per triangular factor (`O(M^2)`). No allocation, no panic, and the
    /// same work for every input value.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// let x = [0.5, -1.0];
    /// let p = model.predict_with_gradient(&x)?;
    /// // Against a central difference of the mean in the first input.
    /// let h = 1e-2;
    /// let slope = (model.mean(&[x[0] + h, x[1]])? - model.mean(&[x[0] - h, x[1]])?) / (2.0 * h);
    /// assert!((p.mean_gradient[0] - slope).abs() < 1e-3 * (1.0 + slope.abs()));
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Model::predict`]: [`Error::InputLength`] if `x` does not have
    /// [`Model::input_dim`] values, [`Error::NonFiniteInput`] for NaN or
    /// infinity, [`Error::InputOverflow`] for a value so far out that f32
    /// overflows.
    pub fn predict_with_gradient(&self, x: &[f32]) -> Result<PredictionWithGradient<D>, Error> {
        // The same steps as `predict`, so the same numbers.
        let z = self.features(x)?;
        let mut k = [0.0f32; M];
        let latent_mean = self.kernel(&z, &mut k)?;
        self.output_gradient(self.first()?, &z, &k, latent_mean)
    }

    /// Output `output`'s prediction and gradients at features `z` with
    /// basis values `k` and latent mean `latent_mean` (that output's).
    #[inline(always)]
    pub(super) fn output_gradient(
        &self,
        output: &Output<M>,
        z: &[f32; G],
        k: &[f32; M],
        latent_mean: f32,
    ) -> Result<PredictionWithGradient<D>, Error> {
        let mut u = [[0.0f32; 2]; M];
        let (latent, unclamped) = self.latent(output, latent_mean, k, Some(&mut u))?;
        let Prediction { mean, variance } = self.observed(output, latent);
        // A shared variance is the first output's times `ratio`: its
        // factors, its vectors `u`, and the ratio in the chain rule.
        let (source, ratio) = self.variance_source(output);
        self.variance_slopes(source, &mut u);
        // An updatable model's mean is z . a = beta . k: its beta (zero in
        // the model) solved for here.
        let solved;
        let beta = if self.variance == VarianceForm::Whitened {
            solved = self.mean_weights(output);
            &solved
        } else {
            &output.beta
        };

        // Per feature g: sum_i (beta_i, r1_i - r2_i) k_i o_ig,
        // with the weights written over the r pairs (a Matérn basis puts
        // its slope where the squared exponential has k_i).
        let slopes;
        let slopes = match self.kernel {
            Kernel::SquaredExponential => k,
            matern => {
                slopes = self.matern_slopes(matern, z);
                &slopes
            }
        };
        let weights = u.iter_mut().zip(slopes).zip(beta).take(self.m);
        for ((pair, &ki), &beta) in weights {
            *pair = [beta * ki, (pair[0] - pair[1]) * ki];
        }
        let sums = if self.shape.per_basis {
            math::weighted_offset_sums(&self.basis_params, &u, z, self.m, math::scaled_offset)
        } else {
            math::weighted_offset_sums(&self.basis_params, &u, z, self.m, math::unit_offset)
        };
        let (mean_scale, variance_scale) = match self.shape.link {
            Link::Identity => (output.y_scale, ratio * (output.y_scale * output.y_scale)),
            Link::Probit | Link::OneVsRest | Link::Softmax => (1.0, ratio),
        };
        // A clamped variance is zero all around x.
        let variance_scale = if unclamped { variance_scale } else { 0.0 };
        // The distances are in the exp's fixed-point units (see
        // `math::FIXED_PER_NAT`): `dk = -k NAT_PER_FIXED d(distance)`.
        let (mean_scale, variance_scale) = (
            math::NAT_PER_FIXED * mean_scale,
            math::NAT_PER_FIXED * variance_scale,
        );
        let per_feature = sums.map(|[m, v]| [-2.0 * mean_scale * m, 4.0 * variance_scale * v]);

        // (d mean / d x_j, d variance / d x_j) side by side.
        let mut gradients = [[0.0f32; 2]; D];
        let d = self.input_dim();
        if self.shape.projected {
            let rows = self.projection.iter().zip(&per_feature).take(self.g);
            for (row, &[gm, gv]) in rows {
                for (out, &p) in gradients.iter_mut().zip(row).take(d) {
                    *out = [out[0] + gm * p, out[1] + gv * p];
                }
            }
        } else {
            for (out, &pair) in gradients.iter_mut().zip(&per_feature).take(d) {
                *out = pair;
            }
        }
        for (out, &inv_scale) in gradients.iter_mut().zip(&self.x_inv_scale).take(d) {
            *out = [out[0] * inv_scale, out[1] * inv_scale];
        }
        // An input so far out that a standardised value is infinite can
        // leave the mean finite (every basis value 0) while 0 * inf makes
        // a gradient NaN.
        if !gradients.as_flattened().iter().all(|g| g.is_finite()) {
            return Err(Error::InputOverflow);
        }
        let mean_gradient = gradients.map(|[gm, _]| gm);
        let variance_gradient = gradients.map(|[_, gv]| gv);
        Ok(PredictionWithGradient {
            mean,
            variance,
            mean_gradient,
            variance_gradient,
        })
    }

    /// The vectors `u` that [`Model::latent`] filled for `source`'s
    /// variance turned into `(r1, r2)` pairs with `W k = r1 - r2`, i.e.
    /// `dv/dk = -2 (r1 - r2)` (`v = prior - k^T W k`), in every variance
    /// form: shared by the input gradient and `predict_uncertain`'s `W`.
    #[inline(always)]
    pub(super) fn variance_slopes(&self, source: &Output<M>, u: &mut [[f32; 2]; M]) {
        let factors = source.factors.as_flattened();
        match self.variance {
            VarianceForm::Product => {
                math::multiply_transposed_packed(
                    source.product_factor(),
                    &source.diagonal1,
                    u,
                    self.m,
                );
            }
            VarianceForm::Solves => math::back_substitute_packed(
                factors,
                &source.diagonal1,
                &source.inv_diagonal2,
                u,
                self.m,
                self.shape.two_factors,
            ),
            VarianceForm::Whitened | VarianceForm::Covariance => {
                // v = prior - |z|^2 + z^T S z: dv/dk = -2 L1^-T (I - S) z.
                if self.learning.covariance() {
                    // S z = W^T (D f), W = I + H, the pairs (z, f = W z):
                    // each becomes (z - D f, -D f) before its row is used.
                    whitened::add_transposed(factors, u, &source.inv_diagonal2, self.m, |p, d| {
                        let g = d * p[1];
                        [p[0] - g, -g]
                    });
                } else {
                    // (I - S) z = U^T D U z = D t - G^T (D t), t = z - G z.
                    whitened::add_transposed(factors, u, &source.inv_diagonal2, self.m, |p, d| {
                        let dt = (1.0 - d) * (p[0] - p[1]);
                        [dt, -dt]
                    });
                }
                let mut r = [0.0f32; M];
                for (ri, pair) in r.iter_mut().zip(u.iter()) {
                    *ri = pair[0];
                }
                whitened::back_substitute_first(factors, &source.diagonal1, &mut r, self.m);
                for (pair, &ri) in u.iter_mut().zip(&r) {
                    *pair = [ri, 0.0];
                }
            }
        }
    }

    /// Each basis function's [`math::matern_slope`] at features `z`: one
    /// more pass over the distances, on the gradient's path only.
    fn matern_slopes(&self, kernel: Kernel, z: &[f32; G]) -> [f32; M] {
        let mut slopes = [0.0f32; M];
        let rows = self.basis_params.iter().zip(&self.amplitudes);
        for (slope, (params, &amplitude)) in slopes.iter_mut().zip(rows).take(self.m) {
            *slope = if self.shape.per_basis {
                amplitude
                    * math::matern_slope(
                        kernel,
                        math::finite_distance(math::scaled_distance(params, z)),
                        &math::EXP2_OF_NEGATIVE,
                    )
            } else {
                math::matern_slope(kernel, math::unit_distance(params, z), &self.exp_poly)
            };
        }
        slopes
    }

    /// [`Model::probability`] and its gradient with respect to the raw
    /// inputs, by the chain rule through `P = Phi(t)`,
    /// `t = (m + b) / sqrt(1 + v)`:
    /// `dP = phi(t) / sqrt(1 + v) (d(m + b) - t / (2 sqrt(1 + v)) dv)`.
    /// Costs [`Model::predict_with_gradient`] plus one exponential and
    /// `O(D)`.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// use sgp_runtime::{Error, Model};
    /// let regression = Model::<16, 2, 2>::from_bytes(blob)?;
    /// assert_eq!(regression.probability_with_gradient(&[0.0, 0.0]), Err(Error::NotClassifier));
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NotClassifier`] for a regression model, otherwise as
    /// [`Model::predict_with_gradient`].
    pub fn probability_with_gradient(
        &self,
        x: &[f32],
    ) -> Result<ProbabilityWithGradient<D>, Error> {
        if self.shape.link != Link::Probit {
            return Err(Error::NotClassifier);
        }
        let latent = self.predict_with_gradient(x)?;
        // The same expression as `probability`, so the same number.
        let scale = libm::sqrtf(1.0 + latent.variance);
        let t = latent.mean / scale;
        let probability = math::normal_cdf(t);
        let density = FRAC_1_SQRT_2PI * math::exp_non_positive(-0.5 * t * t);
        let per_mean = density / scale;
        let per_variance = per_mean * t / (2.0 * scale);
        let mut gradient = [0.0f32; D];
        let parts = latent.mean_gradient.iter().zip(&latent.variance_gradient);
        for (out, (&dm, &dv)) in gradient.iter_mut().zip(parts) {
            *out = per_mean * dm - per_variance * dv;
        }
        Ok(ProbabilityWithGradient {
            probability,
            gradient,
        })
    }
}
