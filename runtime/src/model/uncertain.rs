//! Prediction at a Gaussian input `x ~ N(mu, S)` (MATH.md, "Prediction at
//! a Gaussian input"): the exact moments of a squared-exponential basis
//! (shared widths, or VSGP's own widths per basis function), and their
//! derivatives with respect to `mu` and `S`, for filters and model-
//! predictive control that propagate a state distribution through a model.
//!
//! The integrals are taken in feature units `t = F (x - x_mean)`, where
//! basis function `i` is `a_i exp(-1/2 sum_d l_id (t_d - c_id)^2)` (with
//! shared widths `F` folds them in and `l_id = 1`). The second moments
//! are quadratic forms in trained weights and factors whose f32
//! cancellation they would square: the reference form
//! ([`Uncertain::predict_exact`]) works in f64; the device form
//! ([`Uncertain::predict`], shared widths and a factored `W`) in f32, with
//! every sum the weights would amplify split off in closed form (see
//! `moments_f32`). The derivatives come from the f64 code run on dual
//! numbers, one direction of `(mu, S)` per pass: no second copy of the
//! algebra to disagree with it.

use core::ops::{Add, Div, Mul, Sub};

use super::{Model, Output};
use crate::error::Error;
use crate::format::{Kernel, Link, VarianceForm};
use crate::math;

/// A model made ready for predictions at a Gaussian input, from
/// [`Model::uncertain`] (or [`Uncertain::new`] and
/// [`Uncertain::prepare`], to keep it in a `static`).
///
/// It holds the basis in feature units and, per output, the weights and
/// the dense variance matrix `W` (`v(x) = prior - k^T W k`, the shared
/// variance ratio folded in, in f64), which the expected variance
/// `prior - tr(W Q)` needs (in f64, and in f32 with its factors for the
/// f32 moments); building `W` costs `O(M^3)` once. RAM:
/// `20 P M^2 + 4 (P (M + 5) + M (2 D + 1) + 2 D)` bytes plus a few words.
///
/// ```
/// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
/// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
/// let uncertain = model.uncertain()?;
/// // A certain input (zero covariance) gives back `predict`.
/// let y = uncertain.predict(&[0.5, -1.0], &[0.0; 4])?;
/// let p = model.predict(&[0.5, -1.0])?;
/// assert!((y.mean[0] - p.mean).abs() < 1e-4);
/// assert!((y.covariance[0][0] - p.variance).abs() < 1e-3);
/// # Ok::<(), sgp_runtime::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Uncertain<const M: usize, const D: usize, const P: usize = 1> {
    /// Row `i`: basis function `i`'s centre in feature units (zero past
    /// `d`).
    centres: [[f32; D]; M],
    /// Row `i`: its precisions `l_id` in feature units (one past `d`, so
    /// the padding dimensions contribute nothing).
    precisions: [[f32; D]; M],
    amplitudes: [f32; M],
    x_mean: [f32; D],
    /// `F`: feature units per raw unit.
    feature_scale: [f32; D],
    /// Each output's mean weights `beta`.
    weights: [[f32; M]; P],
    /// Each output's `W` (latent, standardised units), full and symmetric.
    variance: [[[f64; M]; M]; P],
    /// The same `W` in f32 for the f32 moments' pair sum: row `i`, column
    /// `j <= i`, holding `W_ij` on the diagonal and `2 W_ij` below it (each
    /// pair once); zero above.
    pair_weights: [[[f32; M]; M]; P],
    /// Each output's lower triangular factors `R1` and `R2`, row by row
    /// (`R2` only with two factors), `W = ratio (R1' R1 - R2' R2)`: the f32
    /// moments take `s' W s` as `predict` takes `k' W k`.
    factors: [[[[f32; M]; M]; 2]; P],
    /// Each output's `ratio` of `factors`.
    factor_ratio: [f32; P],
    /// Whether `R2` is there.
    two_factors: bool,
    /// Whether the f32 moments serve (shared widths, a factored `W`).
    single: bool,
    /// Each output's latent prior variance (standardised units).
    prior: [f32; P],
    /// `y_mean` (regression) or the bias (classifiers).
    offset: [f32; P],
    /// `y_scale` (regression) or 1 (classifiers).
    scale: [f32; P],
    /// Observation noise in raw units (regression) or 0.
    noise: [f32; P],
    m: usize,
    d: usize,
    p: usize,
    per_basis: bool,
}

/// The moments of a model's outputs at a Gaussian input, from
/// [`Uncertain::predict`]: entries past the model's input and output
/// counts are zero.
///
/// ```
/// let y = sgp_runtime::UncertainPrediction::<2, 1> {
///     mean: [1.0],
///     covariance: [[0.25]],
///     input_output: [[0.1], [0.0]],
/// };
/// // The correlation of input 0 with the output, for an input sd of 0.5:
/// let rho = y.input_output[0][0] / (0.5 * y.covariance[0][0].sqrt());
/// assert!((rho - 0.4).abs() < 1e-6);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UncertainPrediction<const D: usize, const P: usize> {
    /// `E[y_a]`, raw units.
    pub mean: [f32; P],
    /// `Cov[y_a, y_b]`, observation noise included on the diagonal as in
    /// [`Model::predict`]'s variance.
    pub covariance: [[f32; P]; P],
    /// `Cov[x_d, y_a]`, row `d`.
    pub input_output: [[f32; P]; D],
}

/// The derivatives of an [`UncertainPrediction`] with respect to the input
/// mean `mu` and covariance `S`, from [`Uncertain::predict_with_derivatives`].
///
/// A derivative with respect to `S` is the symmetric gradient: for a
/// symmetric change `dS`, `d(moment) = sum_ij deriv[i][j] dS_ij`. So a
/// central difference that moves both `S_ij` and `S_ji` by `h` sees `2
/// deriv[i][j]` off the diagonal (PILCO's convention).
///
/// ```
/// let d = sgp_runtime::UncertainDerivatives::<2, 1>::default();
/// assert_eq!(d.dmean_dmu, [[0.0; 2]]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UncertainDerivatives<const D: usize, const P: usize> {
    /// `d mean[a] / d mu[e]`, at `[a][e]`.
    pub dmean_dmu: [[f32; D]; P],
    /// `d mean[a] / d S[e][f]`, at `[a][e][f]`.
    pub dmean_dcov: [[[f32; D]; D]; P],
    /// `d covariance[a][b] / d mu[e]`, at `[a][b][e]`.
    pub dcov_dmu: [[[f32; D]; P]; P],
    /// `d covariance[a][b] / d S[e][f]`, at `[a][b][e][f]`.
    pub dcov_dcov: [[[[f32; D]; D]; P]; P],
    /// `d input_output[c][a] / d mu[e]`, at `[c][a][e]`.
    pub dinput_output_dmu: [[[f32; D]; P]; D],
    /// `d input_output[c][a] / d S[e][f]`, at `[c][a][e][f]`.
    pub dinput_output_dcov: [[[[f32; D]; D]; P]; D],
}

impl<const D: usize, const P: usize> Default for UncertainDerivatives<D, P> {
    fn default() -> Self {
        UncertainDerivatives {
            dmean_dmu: [[0.0; D]; P],
            dmean_dcov: [[[0.0; D]; D]; P],
            dcov_dmu: [[[0.0; D]; P]; P],
            dcov_dcov: [[[[0.0; D]; D]; P]; P],
            dinput_output_dmu: [[[0.0; D]; P]; D],
            dinput_output_dcov: [[[[0.0; D]; D]; P]; D],
        }
    }
}

impl<const M: usize, const G: usize, const D: usize, const P: usize> Model<M, G, D, P> {
    /// This model made ready for [`Uncertain::predict`]: predictions at a
    /// Gaussian input, exact for the squared-exponential kernel (every
    /// model kind but SPGP+DR's projection; VSGP's own widths too).
    /// Builds each output's dense variance matrix (`O(M^3)`, once).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// let y = model.uncertain()?.predict(&[0.0, 0.0], &[0.04, 0.01, 0.01, 0.09])?;
    /// assert!(y.covariance[0][0] > model.noise_variance());
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NoClosedForm`] for a Matérn kernel or a projection (their
    /// moments: [`Model::predict_unscented`]), [`Error::InputLength`] for
    /// an empty model.
    pub fn uncertain(&self) -> Result<Uncertain<M, D, P>, Error> {
        let mut uncertain = Uncertain::new();
        uncertain.prepare(self)?;
        Ok(uncertain)
    }
}

impl<const M: usize, const G: usize, const D: usize, const P: usize> Model<M, G, D, P> {
    /// The moments of every output at a raw input `x ~ N(mean, cov)` by the
    /// unscented transform, for any model (the way for a Matérn kernel or
    /// a projection, where [`Model::uncertain`] has no closed form).
    /// `2 d + 1` sigma points `mean` and `mean +/- sqrt(d + kappa) L_j`
    /// (`L_j` the columns of the Cholesky factor of `cov`, `d + kappa = 3`,
    /// the classic choice for a Gaussian input: it matches its fourth
    /// moments), weights `kappa / 3` and `1 / 6`; [`Model::predict_all`]
    /// at each. Mean: the weighted means; covariance: the weighted outer
    /// products of the mean deviations plus the weighted predictive
    /// variances (noise included, as [`Model::predict`]'s); input-output
    /// covariance: the weighted `(x_i - mean)(y_i - E y)'`. An
    /// approximation, not the exact moments: the guide measures its error
    /// against Monte Carlo. Cost: `2 d + 1` calls of `predict_all`, the
    /// same whatever the values. For a classifier the moments are of the
    /// latent `f + b` that `predict_all` reports.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// let y = model.predict_unscented(&[0.5, -1.0], &[0.01, 0.0, 0.0, 0.01])?;
    /// let exact = model.uncertain()?.predict(&[0.5, -1.0], &[0.01, 0.0, 0.0, 0.01])?;
    /// assert!((y.mean[0] - exact.mean[0]).abs() < 1e-2 * exact.covariance[0][0].sqrt());
    /// // A certain input gives back `predict`.
    /// let y = model.predict_unscented(&[0.5, -1.0], &[0.0; 4])?;
    /// assert!((y.mean[0] - model.predict(&[0.5, -1.0])?.mean).abs() < 1e-5);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Uncertain::predict`] (a `cov` that is not positive
    /// semi-definite is [`Error::InvalidCovariance`]), and as
    /// [`Model::predict`] at a sigma point. There are no derivatives on
    /// this path.
    pub fn predict_unscented(
        &self,
        mean: &[f32],
        cov: &[f32],
    ) -> Result<UncertainPrediction<D, P>, Error> {
        let d = self.input_dim();
        let (mu, s) = checked::<D>(d, mean, cov)?;
        let s = widen_rows(&s);
        // A tiny jitter so that a semi-definite `cov` (a certain input) has
        // a factor; it moves the sigma points by about 1e-6 sd.
        let chol = factor(&s, |e| {
            let v = s.get(e).and_then(|row| row.get(e)).copied().unwrap_or(0.0);
            1e-12 * v + f64::MIN_POSITIVE
        })?;
        const SPREAD: f64 = 3.0;
        let root = libm::sqrt(SPREAD);
        let kappa = SPREAD - d as f64;
        let p = self.output_count().min(P);
        let mut sum = [0.0f64; P];
        let mut second = [[0.0f64; P]; P];
        let mut variance = [0.0f64; P];
        let mut cross = [[0.0f64; P]; D];
        let mut x = [0.0f32; D];
        for point in 0..=2 * d {
            // Point 0 the mean; then +column j, -column j.
            let (column, sign) = (
                point.saturating_sub(1) / 2,
                if point % 2 == 1 { 1.0 } else { -1.0 },
            );
            let weight = if point == 0 {
                kappa / SPREAD
            } else {
                0.5 / SPREAD
            };
            let mut dx = [0.0f64; D];
            for (i, (slot, xi)) in dx.iter_mut().zip(x.iter_mut()).enumerate().take(d) {
                let l = chol
                    .lower
                    .get(i)
                    .and_then(|row| row.get(column))
                    .copied()
                    .unwrap_or(0.0);
                *slot = if point == 0 { 0.0 } else { sign * root * l };
                *xi = (f64::from(mu.get(i).copied().unwrap_or(0.0)) + *slot) as f32;
            }
            let all = self.predict_all(x.get(..d).unwrap_or(&[]))?;
            for (a, prediction) in all.iter().enumerate().take(p) {
                let ya = f64::from(prediction.mean);
                if let (Some(s), Some(v)) = (sum.get_mut(a), variance.get_mut(a)) {
                    *s += weight * ya;
                    *v += weight * f64::from(prediction.variance);
                }
                if let Some(row) = second.get_mut(a) {
                    for (slot, other) in row.iter_mut().zip(all.iter()) {
                        *slot += weight * ya * f64::from(other.mean);
                    }
                }
                for (row, &dxc) in cross.iter_mut().zip(&dx) {
                    if let Some(slot) = row.get_mut(a) {
                        *slot += weight * dxc * ya;
                    }
                }
            }
        }
        let mut out = UncertainPrediction {
            mean: [0.0; P],
            covariance: [[0.0; P]; P],
            input_output: [[0.0; P]; D],
        };
        for (a, (m, &total)) in out.mean.iter_mut().zip(&sum).enumerate().take(p) {
            *m = total as f32;
            let (Some(row), Some(moments)) = (out.covariance.get_mut(a), second.get(a)) else {
                continue;
            };
            for (b, (c, &ab)) in row.iter_mut().zip(moments).enumerate().take(p) {
                let mb = sum.get(b).copied().unwrap_or(0.0);
                let mut value = ab - total * mb;
                if a == b {
                    // The centre's negative weight (d > 3) can push a
                    // variance below zero in rounding: clamp.
                    value = (value + variance.get(a).copied().unwrap_or(0.0)).max(0.0);
                }
                *c = value as f32;
            }
        }
        // sum of weights of (x_i - mu) is zero, so E[(x - mu) y] is the
        // covariance.
        for (row, totals) in out.input_output.iter_mut().zip(&cross) {
            for (slot, &v) in row.iter_mut().zip(totals) {
                *slot = v as f32;
            }
        }
        Ok(out)
    }
}

impl<const M: usize, const D: usize, const P: usize> Default for Uncertain<M, D, P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const M: usize, const D: usize, const P: usize> Uncertain<M, D, P> {
    /// An empty one (every prediction fails with [`Error::InputLength`]),
    /// to [`Uncertain::prepare`] in place: all-zero bits, so a `static` of
    /// it stays in `.bss` and is never built on the stack.
    ///
    /// ```
    /// let u = sgp_runtime::Uncertain::<4, 1>::new();
    /// assert!(u.predict(&[0.0], &[0.0]).is_err());
    /// ```
    pub const fn new() -> Self {
        Uncertain {
            centres: [[0.0; D]; M],
            precisions: [[0.0; D]; M],
            amplitudes: [0.0; M],
            x_mean: [0.0; D],
            feature_scale: [0.0; D],
            weights: [[0.0; M]; P],
            variance: [[[0.0; M]; M]; P],
            pair_weights: [[[0.0; M]; M]; P],
            factors: [[[[0.0; M]; M]; 2]; P],
            factor_ratio: [0.0; P],
            two_factors: false,
            single: false,
            prior: [0.0; P],
            offset: [0.0; P],
            scale: [0.0; P],
            noise: [0.0; P],
            m: 0,
            d: 0,
            p: 0,
            per_basis: false,
        }
    }

    /// Makes this ready for `model`, as [`Model::uncertain`]. On error it
    /// is left empty.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// let mut u = sgp_runtime::Uncertain::<16, 2>::new();
    /// u.prepare(&model)?;
    /// assert!(u.predict(&[0.0, 0.0], &[0.0; 4]).is_ok());
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Model::uncertain`].
    pub fn prepare<const G: usize>(&mut self, model: &Model<M, G, D, P>) -> Result<(), Error> {
        self.m = 0;
        self.d = 0;
        self.p = 0;
        self.single = false;
        if model.kernel != Kernel::SquaredExponential || model.shape.projected {
            return Err(Error::NoClosedForm);
        }
        let (m, d, p) = (model.m, model.input_dim(), usize::from(model.p));
        if d == 0 || p == 0 {
            return Err(Error::InputLength {
                expected: 0,
                found: 0,
            });
        }
        let per_basis = model.shape.per_basis;
        // With shared widths the loader folded them (and the exp's
        // fixed-point units) into the features and centres: undo the units
        // only, so every precision is 1. VSGP keeps its scales per basis
        // function: precision 2 s^2 / FIXED_PER_NAT, centre c s / s.
        let units = libm::sqrtf(2.0 / math::FIXED_PER_NAT);
        let rows = self.centres.iter_mut().zip(self.precisions.iter_mut());
        for (i, ((centre, precision), params)) in rows.zip(&model.basis_params).enumerate() {
            for (e, ((c, l), &[sc, s])) in centre
                .iter_mut()
                .zip(precision.iter_mut())
                .zip(params.iter())
                .enumerate()
            {
                (*c, *l) = if i >= m || e >= d {
                    (0.0, 1.0)
                } else if per_basis {
                    if s.is_nan() || s <= 0.0 {
                        return Err(Error::NoClosedForm);
                    }
                    (sc / s, s * s * units * units)
                } else {
                    (sc * units, 1.0)
                };
            }
            // Capacity D beyond G: padding dimensions.
            for (c, l) in centre.iter_mut().zip(precision.iter_mut()).skip(G) {
                (*c, *l) = (0.0, 1.0);
            }
        }
        self.amplitudes = model.amplitudes;
        self.x_mean = model.x_mean;
        let feature = if per_basis { 1.0 } else { units };
        for (e, (f, &inv)) in self
            .feature_scale
            .iter_mut()
            .zip(&model.x_inv_scale)
            .enumerate()
        {
            *f = if e < d { inv * feature } else { 0.0 };
        }
        for (a, output) in model.outputs.iter().enumerate().take(p) {
            self.prepare_output(model, a, output);
        }
        (self.m, self.d, self.p, self.per_basis) = (m, d, p, per_basis);
        self.single = !per_basis && model.variance != VarianceForm::Whitened;
        self.two_factors = model.variance == VarianceForm::Solves && model.shape.two_factors;
        Ok(())
    }

    /// Output `a`'s weights, scalars and dense `W`, column by column from
    /// the model's own variance operator (`W e_j`).
    fn prepare_output<const G: usize>(
        &mut self,
        model: &Model<M, G, D, P>,
        a: usize,
        output: &Output<M>,
    ) {
        let (source, ratio) = model.variance_source(output);
        let beta = if model.variance == VarianceForm::Whitened {
            model.mean_weights(output)
        } else {
            output.beta
        };
        if let Some(w) = self.weights.get_mut(a) {
            *w = beta;
        }
        let regression = model.shape.link == Link::Identity;
        let scalars = [
            (&mut self.prior, ratio * source.prior),
            (
                &mut self.offset,
                if regression {
                    output.y_mean
                } else {
                    output.bias
                },
            ),
            (
                &mut self.scale,
                if regression { output.y_scale } else { 1.0 },
            ),
            (
                &mut self.noise,
                if regression {
                    output.noise_variance()
                } else {
                    0.0
                },
            ),
        ];
        for (slots, value) in scalars {
            if let Some(slot) = slots.get_mut(a) {
                *slot = value;
            }
        }
        let Some(w) = self.variance.get_mut(a) else {
            return;
        };
        // Zeroed in place: `*w = [[0.0; M]; M]` may build the temporary on
        // the stack (32 KB at M = 64).
        w.iter_mut().for_each(|row| row.fill(0.0));
        let (Some(columns), Some(slot)) = (self.factors.get_mut(a), self.factor_ratio.get_mut(a))
        else {
            return;
        };
        columns.iter_mut().flatten().for_each(|row| row.fill(0.0));
        *slot = ratio;
        if model.variance == VarianceForm::Whitened {
            operator_columns(model, source, output, ratio, w);
        } else {
            factor_products(model, source, output, ratio, w, columns);
        }
        if let Some(pairs) = self.pair_weights.get_mut(a) {
            for (i, (row, full)) in pairs.iter_mut().zip(w.iter()).enumerate() {
                for (j, (slot, &v)) in row.iter_mut().zip(full).enumerate() {
                    let twice = if j < i { 2.0 } else { 1.0 };
                    *slot = if j <= i { (twice * v) as f32 } else { 0.0 };
                }
            }
        }
    }

    /// The moments of every output at a raw input `x ~ N(mean, cov)`, in
    /// f32: `O(M^2 (D + P^2) + M (D^2 + P D^2))`, one `expm1` per pair of
    /// basis functions, the same work whatever the values (shared widths
    /// and a factored `W`; VSGP's own widths and an updatable model's
    /// whitened form take [`Uncertain::predict_exact`]'s f64 path).
    /// `cov` is the `d x d` covariance, row-major; its symmetric part is
    /// used. The f32 form holds while `r_i' T r_j < 85` (with `T <= I/2`:
    /// the mean within about 13 length scales of the basis, or any mean
    /// when `S` is small beside the length scales).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// let u = model.uncertain()?;
    /// let y = u.predict(&[0.5, -1.0], &[0.01, 0.0, 0.0, 0.01])?;
    /// // Input uncertainty adds to the output's.
    /// assert!(y.covariance[0][0] >= model.predict(&[0.5, -1.0])?.variance * 0.99);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InputLength`] if `mean` does not have the model's input
    /// dimension `d` (or nothing is prepared), [`Error::NonFiniteInput`]
    /// for a NaN or infinite mean, [`Error::InvalidCovariance`] if `cov`
    /// is not `d x d`, not finite, has a negative variance, or is so far
    /// from positive semi-definite that `S + widths` is not positive
    /// definite.
    pub fn predict(&self, mean: &[f32], cov: &[f32]) -> Result<UncertainPrediction<D, P>, Error> {
        let (mu, s) = self.checked(mean, cov)?;
        if !self.single {
            return Ok(self.moments::<f64>(&widen(&mu), &widen_rows(&s))?.values());
        }
        self.moments_f32(&mu, &s)
    }

    /// [`Uncertain::predict`] in f64 throughout (what
    /// [`Uncertain::predict_with_derivatives`] differentiates): the
    /// reference the f32 moments are checked against, about 100 times
    /// their cost on a Cortex-M4F (soft-float).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// let u = model.uncertain()?;
    /// let cov = [0.01, 0.0, 0.0, 0.01];
    /// let fast = u.predict(&[0.5, -1.0], &cov)?;
    /// let exact = u.predict_exact(&[0.5, -1.0], &cov)?;
    /// assert!((fast.mean[0] - exact.mean[0]).abs() < 1e-3);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Uncertain::predict`].
    pub fn predict_exact(
        &self,
        mean: &[f32],
        cov: &[f32],
    ) -> Result<UncertainPrediction<D, P>, Error> {
        let (mu, s) = self.checked(mean, cov)?;
        Ok(self.moments::<f64>(&widen(&mu), &widen_rows(&s))?.values())
    }

    /// [`Uncertain::predict`] and every derivative of its moments with
    /// respect to the input mean and covariance (see
    /// [`UncertainDerivatives`]), by forward-mode differentiation of the
    /// same code: `d + d (d + 1) / 2` more passes, each about three times
    /// `predict`'s work.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// let u = model.uncertain()?;
    /// let cov = [0.02, 0.0, 0.0, 0.02];
    /// let (_, d) = u.predict_with_derivatives(&[0.5, -1.0], &cov)?;
    /// let h = 1e-2;
    /// let up = u.predict(&[0.5 + h, -1.0], &cov)?.mean[0];
    /// let down = u.predict(&[0.5 - h, -1.0], &cov)?.mean[0];
    /// let slope = (up - down) / (2.0 * h);
    /// assert!((d.dmean_dmu[0][0] - slope).abs() < 1e-2 * (1.0 + slope.abs()));
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Uncertain::predict`].
    pub fn predict_with_derivatives(
        &self,
        mean: &[f32],
        cov: &[f32],
    ) -> Result<(UncertainPrediction<D, P>, UncertainDerivatives<D, P>), Error> {
        let (mu, s) = self.checked(mean, cov)?;
        let (mu, s) = (widen(&mu), widen_rows(&s));
        let value = self.moments::<f64>(&mu, &s)?.values();
        let mut out = UncertainDerivatives::default();
        let lift = |v: f64| Dual { v, d: 0.0 };
        let mu_dual = mu.map(lift);
        let s_dual = s.map(|row| row.map(lift));
        for e in 0..self.d {
            let mut m = mu_dual;
            if let Some(x) = m.get_mut(e) {
                x.d = 1.0;
            }
            let t = self.moments::<Dual>(&m, &s_dual)?;
            scatter(
                &t,
                &mut out,
                |slot: &mut [f32; D], v| {
                    if let Some(x) = slot.get_mut(e) {
                        *x = v;
                    }
                },
                |_, _| {},
            );
        }
        for e in 0..self.d {
            for f in 0..=e {
                let mut sd = s_dual;
                for (r, c) in [(e, f), (f, e)] {
                    if let Some(x) = sd.get_mut(r).and_then(|row| row.get_mut(c)) {
                        x.d = 1.0;
                    }
                }
                let t = self.moments::<Dual>(&mu_dual, &sd)?;
                // The tangent along E_ef + E_fe is twice the symmetric
                // gradient off the diagonal.
                let half = if e == f { 1.0 } else { 0.5 };
                scatter(
                    &t,
                    &mut out,
                    |_, _| {},
                    |slot: &mut [[f32; D]; D], v| {
                        for (r, c) in [(e, f), (f, e)] {
                            if let Some(x) = slot.get_mut(r).and_then(|row| row.get_mut(c)) {
                                *x = half * v;
                            }
                        }
                    },
                );
            }
        }
        Ok((value, out))
    }

    /// The raw mean and the symmetric part of the raw covariance, checked,
    /// zero past `d`.
    fn checked(&self, mean: &[f32], cov: &[f32]) -> Result<([f32; D], [[f32; D]; D]), Error> {
        checked::<D>(self.d, mean, cov)
    }

    /// The f32 moments of shared widths and a factored `W` (feature
    /// units, every precision 1). With `r_i = mu - c_i`, `A = (S + I)^-1`
    /// and `T = (2 S + I)^-1 S`: `q_i = a_i |I + S|^-1/2 exp(-r_i' A r_i /
    /// 2)` and `Q_ij = s_i s_j exp(y_ij)`, `y_ij = r_i' T r_j`,
    /// `s_i = q_i exp(rho_i)`, `rho_i = (log(|I + S| / |I + 2 S|^1/2) +
    /// r_i' (T - S A) r_i) / 2`. The weights cancel (their sizes reach
    /// thousands of times the output's), so no sum of the size of
    /// `beta' Q beta` or `tr(W Q)` is formed in f32: with `g_i = beta_i q_i`
    /// and `h_i = beta_i s_i`, `Cov[f] = sum_ij g_i g_j (Q_ij / (q_i q_j) - 1)`
    /// is `(H^2 - G^2) + u' T u + tr(T U T U) / 2 + sum_ij h_i h_j R(y_ij)`
    /// (`u = sum h_i r_i`, `U = sum h_i r_i r_i'`, `R(y) = e^y - 1 - y - y^2/2`),
    /// and `tr(W Q) = s' W s + sum_ij W_ij s_i s_j expm1(y_ij)`, `s' W s`
    /// from the factors as `predict`'s `k' W k`. What is left to the pair
    /// sums is small beside the result; the guide measures it.
    #[allow(clippy::indexing_slicing, clippy::needless_range_loop)] // every index is below a const capacity (loop bounds)
    fn moments_f32(
        &self,
        mu_raw: &[f32; D],
        s_raw: &[[f32; D]; D],
    ) -> Result<UncertainPrediction<D, P>, Error> {
        let f = &self.feature_scale;
        let mut mu = [0.0f32; D];
        let mut s = [[0.0f32; D]; D];
        for e in 0..D {
            // Beyond 1e3 length scales from the data every basis function
            // is 0; the bound keeps every y_ij below 2^22 (see `reduced`).
            let t = (mu_raw[e] - self.x_mean[e]) * f[e];
            let t = if t < -1e3 { -1e3 } else { t };
            mu[e] = if t > 1e3 { 1e3 } else { t };
            for g in 0..D {
                s[e][g] = s_raw[e][g] * f[e] * f[g];
            }
        }
        // I + S and I + 2 S: their inverses and determinants; T, S A.
        let mut once = s;
        let mut twice = s;
        for e in 0..D {
            for g in 0..D {
                twice[e][g] = 2.0 * s[e][g];
            }
            once[e][e] += 1.0;
            twice[e][e] += 1.0;
        }
        let (a1, det1) = inverse_spd(&once)?;
        let (a2, det2) = inverse_spd(&twice)?;
        // T = (I - (I + 2 S)^-1) / 2, S A = I - A, and half their
        // difference: rounded as matrices, their errors are the same
        // bilinear form at every pair, which the weights do not amplify.
        let mut t2 = [[0.0f32; D]; D];
        let mut bend = [[0.0f32; D]; D];
        for e in 0..D {
            for g in 0..D {
                let unit = if e == g { 1.0 } else { 0.0 };
                let t = 0.5 * (unit - a2[e][g]);
                t2[e][g] = t;
                bend[e][g] = 0.5 * (t - (unit - a1[e][g]));
            }
        }
        let c1 = 1.0 / math::sqrt_finite(det1);
        let rho0 = 0.5 * libm::logf(det1 / math::sqrt_finite(det2));
        // Outputs past p have zero weights: the loops run over P.
        let m = self.m.min(M);
        let mut r = [[0.0f32; D]; M];
        let mut t = [[0.0f32; D]; M];
        let mut sv = [0.0f32; M];
        let mut h = [[0.0f32; M]; P];
        // Per output: G = sum g_i, H - G, sum g_i r_i, u, U.
        let mut big_g = [0.0f32; P];
        let mut h_minus_g = [0.0f32; P];
        let mut pull = [[0.0f32; D]; P];
        let mut u = [[0.0f32; D]; P];
        let mut uu = [[[0.0f32; D]; D]; P];
        for i in 0..m {
            let mut ri = [0.0f32; D];
            for e in 0..D {
                ri[e] = mu[e] - self.centres[i][e];
            }
            let (mut ar, mut br, mut ti) = ([0.0f32; D], [0.0f32; D], [0.0f32; D]);
            for e in 0..D {
                axpy(&mut ar, ri[e], &a1[e]);
                axpy(&mut br, ri[e], &bend[e]);
                axpy(&mut ti, ri[e], &t2[e]);
            }
            let quad = dot_short(&ri, &ar);
            let rho = rho0 + dot_short(&ri, &br);
            let qi = self.amplitudes[i] * c1 * exp(-0.5 * quad);
            let grow = expm1(rho);
            let si = qi + qi * grow;
            sv[i] = si;
            r[i] = ri;
            t[i] = ti;
            for a in 0..P {
                let (gi, hi) = (self.weights[a][i] * qi, self.weights[a][i] * si);
                h[a][i] = hi;
                big_g[a] += gi;
                h_minus_g[a] += gi * grow;
                axpy(&mut pull[a], gi, &ri);
                axpy(&mut u[a], hi, &ri);
                for e in 0..D {
                    axpy(&mut uu[a][e], hi * ri[e], &ri);
                }
            }
        }
        // The pairs i >= j: the covariance's remainders, W's expm1 terms.
        let mut second = [[0.0f32; P]; P];
        let mut trace = [0.0f32; P];
        for i in 0..m {
            let (ti, si) = (&t[i], sv[i]);
            // Each pair i > j twice (h2), the diagonal once.
            let mut h2 = [0.0f32; P];
            for a in 0..P {
                h2[a] = 2.0 * h[a][i];
            }
            let (rest, e) = remainder2(dot_short(ti, &r[i]));
            for a in 0..P {
                trace[a] += self.pair_weights[a][i][i] * (si * si * e);
                for b in a..P {
                    second[a][b] += h[a][i] * h[b][i] * rest;
                }
            }
            for j in 0..i {
                let (rest, e) = remainder2(dot_short(ti, &r[j]));
                let ss = si * sv[j] * e;
                for a in 0..P {
                    trace[a] += self.pair_weights[a][i][j] * ss;
                    second[a][a] += h2[a] * h[a][j] * rest;
                    for b in a + 1..P {
                        second[a][b] += (h[a][i] * h[b][j] + h[a][j] * h[b][i]) * rest;
                    }
                }
            }
        }
        let mut out = UncertainPrediction {
            mean: [0.0; P],
            covariance: [[0.0; P]; P],
            input_output: [[0.0; P]; D],
        };
        // T u and T U per output, for the separable terms.
        let mut tu = [[0.0f32; D]; P];
        let mut tuu = [[[0.0f32; D]; D]; P];
        for a in 0..P {
            for e in 0..D {
                tu[a][e] = dot_short(&t2[e], &u[a]);
                for l in 0..D {
                    axpy(&mut tuu[a][e], t2[e][l], &uu[a][l]);
                }
            }
        }
        for a in 0..self.p.min(P) {
            let sa = self.scale[a];
            out.mean[a] = self.offset[a] + sa * big_g[a];
            for b in a..self.p.min(P) {
                // H_a H_b - G_a G_b + u_a' T u_b + tr(T U_a T U_b) / 2 + pairs.
                let mut c = h_minus_g[a] * (big_g[b] + h_minus_g[b]) + big_g[a] * h_minus_g[b];
                for e in 0..D {
                    c += tu[a][e] * u[b][e];
                    for k in 0..D {
                        c += 0.5 * tuu[a][e][k] * tuu[b][k][e];
                    }
                }
                c += second[a][b];
                let c = sa * self.scale[b] * c;
                out.covariance[a][b] = c;
                out.covariance[b][a] = c;
            }
            let explained = self.factor_ratio[a]
                * factored_quadratic(&self.factors[a], &sv, m, self.two_factors);
            let expected = self.prior[a] - explained - trace[a];
            let expected = if expected > 0.0 { expected } else { 0.0 };
            out.covariance[a][a] += sa * sa * expected + self.noise[a];
            // Cov[x, f_a] = -S_raw F A sum_i g_i r_i (raw units).
            let mut slope = [0.0f32; D];
            for e in 0..D {
                for k in 0..D {
                    slope[e] += a1[e][k] * pull[a][k];
                }
            }
            for c in 0..D {
                let mut acc = 0.0f32;
                for e in 0..D {
                    acc += s_raw[c][e] * f[e] * slope[e];
                }
                out.input_output[c][a] = -sa * acc;
            }
        }
        Ok(out)
    }

    /// The moments at raw `mu`, `s` in any [`Scalar`]: MATH.md's formulas
    /// in feature units.
    #[allow(clippy::indexing_slicing, clippy::needless_range_loop)] // every index is below a const capacity (loop bounds)
    fn moments<T: Scalar>(
        &self,
        mu_raw: &[T; D],
        s_raw: &[[T; D]; D],
    ) -> Result<Moments<T, D, P>, Error> {
        let zero = T::of(0.0);
        // Feature units: mu = F (mu_raw - x_mean), S = F S_raw F.
        let mut mu = [zero; D];
        let mut s = [[zero; D]; D];
        for e in 0..D {
            mu[e] = (mu_raw[e] - lift(self.x_mean[e])) * lift(self.feature_scale[e]);
            for f in 0..D {
                s[e][f] = s_raw[e][f] * lift(self.feature_scale[e]) * lift(self.feature_scale[f]);
            }
        }
        let (m, p) = (self.m.min(M), self.p.min(P));
        // With shared widths, the factors of S + L and S + L/2, once.
        let shared = if self.per_basis {
            None
        } else {
            let l = self.precisions.first().unwrap_or(&[1.0; D]);
            Some((
                factor(&s, |e| 1.0 / f64::from(l[e]))?,
                factor(&s, |e| 0.5 / f64::from(l[e]))?,
            ))
        };
        let mut mean = [zero; P];
        // sum_i beta_ai q_i (S + L_i)^-1 (mu - c_i), per output.
        let mut slope = [[zero; D]; P];
        // L2^-1 (mu - c_i) (shared widths), for the pairs.
        let mut whitened = [[zero; D]; M];
        let mut offsets = [[zero; D]; M];
        for i in 0..m {
            let mut r = [zero; D];
            for e in 0..D {
                r[e] = mu[e] - lift(self.centres[i][e]);
            }
            offsets[i] = r;
            let l = &self.precisions[i];
            let own;
            let f1 = match &shared {
                Some((first, _)) => first,
                None => {
                    own = factor(&s, |e| 1.0 / f64::from(l[e]))?;
                    &own
                }
            };
            let w = f1.forward(&r);
            let q = lift::<T>(self.amplitudes[i])
                * f1.scale(&l.map(f64::from), 1.0)
                * (T::of(-0.5) * dot(&w, &w)).exp_neg();
            let v = f1.backward(&w);
            for a in 0..p {
                let bq = lift::<T>(self.weights[a][i]) * q;
                mean[a] = mean[a] + bq;
                for e in 0..D {
                    slope[a][e] = slope[a][e] + bq * v[e];
                }
            }
            if let Some((_, f2)) = &shared {
                whitened[i] = f2.forward(&r);
            }
        }
        // E[f_a f_b] (a <= b) and tr(W_a Q), over the pairs i >= j.
        let mut second = [[zero; P]; P];
        let mut trace = [zero; P];
        for i in 0..m {
            for j in 0..=i {
                let q = self.pair(
                    i,
                    j,
                    &s,
                    &offsets,
                    &whitened,
                    shared.as_ref().map(|(_, f)| f),
                )?;
                let twice = T::of(if i == j { 1.0 } else { 2.0 });
                let qq = twice * q;
                for a in 0..p {
                    trace[a] = trace[a] + T::of(self.variance[a][i][j]) * qq;
                    let (bai, baj) = (f64::from(self.weights[a][i]), f64::from(self.weights[a][j]));
                    for b in a..p {
                        let w = 0.5
                            * (bai * f64::from(self.weights[b][j])
                                + baj * f64::from(self.weights[b][i]));
                        second[a][b] = second[a][b] + T::of(w) * qq;
                    }
                }
            }
        }
        let mut out = Moments {
            mean: [zero; P],
            covariance: [[zero; P]; P],
            input_output: [[zero; P]; D],
        };
        for a in 0..p {
            let (sa, ma) = (lift::<T>(self.scale[a]), mean[a]);
            out.mean[a] = lift::<T>(self.offset[a]) + sa * ma;
            for b in a..p {
                let c = sa * lift(self.scale[b]) * (second[a][b] - ma * mean[b]);
                out.covariance[a][b] = c;
                out.covariance[b][a] = c;
            }
            let expected = lift::<T>(self.prior[a]) - trace[a];
            let expected = if expected.value() > 0.0 {
                expected
            } else {
                zero
            };
            out.covariance[a][a] = out.covariance[a][a] + sa * sa * expected + lift(self.noise[a]);
            // Cov[x, f_a] = -S_raw F slope_a (in raw units).
            for c in 0..D {
                let mut acc = zero;
                for e in 0..D {
                    acc = acc + s_raw[c][e] * lift(self.feature_scale[e]) * slope[a][e];
                }
                out.input_output[c][a] = T::of(0.0) - sa * acc;
            }
        }
        Ok(out)
    }

    /// `Q_ij = E[k_i(t) k_j(t)]`.
    #[allow(clippy::indexing_slicing, clippy::needless_range_loop)] // i, j < m <= M, every other index below D
    #[inline(always)]
    fn pair<T: Scalar>(
        &self,
        i: usize,
        j: usize,
        s: &[[T; D]; D],
        offsets: &[[T; D]; M],
        whitened: &[[T; D]; M],
        shared: Option<&Factor<T, D>>,
    ) -> Result<T, Error> {
        let (li, lj) = (&self.precisions[i], &self.precisions[j]);
        let (ci, cj) = (&self.centres[i], &self.centres[j]);
        // The input-free part: (c_i - c_j)' (L_i + L_j)^-1 (c_i - c_j).
        let mut apart = 0.0f64;
        for e in 0..D {
            let diff = f64::from(ci[e]) - f64::from(cj[e]);
            let (a, b) = (f64::from(li[e]), f64::from(lj[e]));
            apart += diff * diff * a * b / (a + b);
        }
        let amplitude = lift::<T>(self.amplitudes[i]) * lift(self.amplitudes[j]);
        let zero = T::of(0.0);
        let (scale, quad) = match shared {
            Some(f2) => {
                // mu - c_ij = (r_i + r_j) / 2.
                let mut sum = [zero; D];
                for e in 0..D {
                    sum[e] = T::of(0.5) * (whitened[i][e] + whitened[j][e]);
                }
                (f2.scale(&li.map(f64::from), 2.0), dot(&sum, &sum))
            }
            None => {
                let mut precision = [0.0f64; D];
                let mut centred = [zero; D];
                for e in 0..D {
                    let total = f64::from(li[e]) + f64::from(lj[e]);
                    precision[e] = total;
                    centred[e] = (lift::<T>(li[e]) * offsets[i][e]
                        + lift::<T>(lj[e]) * offsets[j][e])
                        * T::of(1.0 / total);
                }
                let f = factor(s, |e| 1.0 / precision[e])?;
                let w = f.forward(&centred);
                (f.scale(&precision, 1.0), dot(&w, &w))
            }
        };
        Ok(amplitude * scale * (T::of(-0.5) * (T::of(apart) + quad)).exp_neg())
    }
}

/// `W = ratio (R1^T R1 - R2^T R2)` in f64 from the model's triangular
/// factors `R` (the product form's `C`; the solves' `L^-1`, whose columns
/// the forward substitutions of `e_j` give): `k^T W k` summed in f32
/// squares the cancellation that `|R k|^2` has, so `W` is formed from the
/// factors, never from f32 products. Column `j` of `R` is zero above row
/// `j`; it waits in the upper triangle of row `j` of `w` (the two f32
/// factors' entries side by side in one f64's bits), and `W_ij`, `i > j`,
/// goes into the strictly lower triangle those columns leave free.
fn factor_products<const M: usize, const G: usize, const D: usize, const P: usize>(
    model: &Model<M, G, D, P>,
    source: &Output<M>,
    output: &Output<M>,
    ratio: f32,
    w: &mut [[f64; M]; M],
    rows: &mut [[[f32; M]; M]; 2],
) {
    let m = model.m.min(M);
    let pairs = model.variance == VarianceForm::Solves && model.shape.two_factors;
    let pack =
        |a: f32, b: f32| f64::from_bits(u64::from(a.to_bits()) << 32 | u64::from(b.to_bits()));
    let unpack = |x: f64| {
        let bits = x.to_bits();
        (
            f64::from(f32::from_bits((bits >> 32) as u32)),
            f64::from(f32::from_bits(bits as u32)),
        )
    };
    for (j, row) in w.iter_mut().enumerate().take(m) {
        let mut k = [0.0f32; M];
        if let Some(kj) = k.get_mut(j) {
            *kj = 1.0;
        }
        let mut u = [[0.0f32; 2]; M];
        model.latent_variance(source, output, &k, Some(&mut u));
        for (r, slot) in row.iter_mut().enumerate().take(m).skip(j) {
            let (r1, r2) = if pairs {
                u.get(r).map_or((0.0, 0.0), |p| (p[0], p[1]))
            } else {
                (u.as_flattened().get(r).copied().unwrap_or(0.0), 0.0)
            };
            *slot = pack(r1, r2);
            for (factor, value) in rows.iter_mut().zip([r1, r2]) {
                if let Some(x) = factor.get_mut(r).and_then(|row| row.get_mut(j)) {
                    *x = value;
                }
            }
        }
    }
    let mut diagonal = [0.0f64; M];
    for i in 0..m {
        for j in 0..=i {
            let (Some(col_i), Some(col_j)) = (w.get(i), w.get(j)) else {
                continue;
            };
            let mut sum = 0.0f64;
            for (&a, &b) in col_i.iter().zip(col_j).take(m).skip(i) {
                let ((a1, a2), (b1, b2)) = (unpack(a), unpack(b));
                sum += a1 * b1 - a2 * b2;
            }
            let value = f64::from(ratio) * sum;
            let slot = if i == j {
                diagonal.get_mut(i)
            } else {
                w.get_mut(i).and_then(|row| row.get_mut(j))
            };
            if let Some(slot) = slot {
                *slot = value;
            }
        }
    }
    for i in 0..m {
        for j in 0..i {
            let value = w.get(i).and_then(|row| row.get(j)).copied().unwrap_or(0.0);
            if let Some(slot) = w.get_mut(j).and_then(|row| row.get_mut(i)) {
                *slot = value;
            }
        }
        if let (Some(slot), Some(&d)) =
            (w.get_mut(i).and_then(|row| row.get_mut(i)), diagonal.get(i))
        {
            *slot = d;
        }
    }
}

/// `W` of the whitened form (an updatable model), column by column from
/// the variance's own gradient operator in f32 (`W e_j`), symmetrised:
/// good to f32's cancellation in `k^T W k`, which the guide measures.
fn operator_columns<const M: usize, const G: usize, const D: usize, const P: usize>(
    model: &Model<M, G, D, P>,
    source: &Output<M>,
    output: &Output<M>,
    ratio: f32,
    w: &mut [[f64; M]; M],
) {
    for j in 0..model.m {
        let mut k = [0.0f32; M];
        if let Some(kj) = k.get_mut(j) {
            *kj = 1.0;
        }
        let mut u = [[0.0f32; 2]; M];
        model.latent_variance(source, output, &k, Some(&mut u));
        model.variance_slopes(source, &mut u);
        for (row, pair) in w.iter_mut().zip(&u).take(model.m) {
            if let Some(slot) = row.get_mut(j) {
                *slot = f64::from(ratio) * f64::from(pair[0] - pair[1]);
            }
        }
    }
    for i in 0..model.m {
        for j in 0..i {
            let (Some(&wij), Some(&wji)) = (
                w.get(i).and_then(|r| r.get(j)),
                w.get(j).and_then(|r| r.get(i)),
            ) else {
                continue;
            };
            let mean = 0.5 * (wij + wji);
            for (r, c) in [(i, j), (j, i)] {
                if let Some(slot) = w.get_mut(r).and_then(|row| row.get_mut(c)) {
                    *slot = mean;
                }
            }
        }
    }
}

/// The moments in a [`Scalar`] (f64, or a dual number's value and tangent).
struct Moments<T, const D: usize, const P: usize> {
    mean: [T; P],
    covariance: [[T; P]; P],
    input_output: [[T; P]; D],
}

impl<const D: usize, const P: usize> Moments<f64, D, P> {
    /// Rounded to f32.
    fn values(&self) -> UncertainPrediction<D, P> {
        UncertainPrediction {
            mean: self.mean.map(|v| v as f32),
            covariance: self.covariance.map(|row| row.map(|v| v as f32)),
            input_output: self.input_output.map(|row| row.map(|v| v as f32)),
        }
    }
}

/// Writes one direction's tangents of `t` into `out`: `mu_slot` for a
/// direction of the mean, `cov_slot` for one of the covariance.
fn scatter<const D: usize, const P: usize>(
    t: &Moments<Dual, D, P>,
    out: &mut UncertainDerivatives<D, P>,
    mut mu_slot: impl FnMut(&mut [f32; D], f32),
    mut cov_slot: impl FnMut(&mut [[f32; D]; D], f32),
) {
    for (a, m) in t.mean.iter().enumerate() {
        if let (Some(x), Some(y)) = (out.dmean_dmu.get_mut(a), out.dmean_dcov.get_mut(a)) {
            mu_slot(x, m.d as f32);
            cov_slot(y, m.d as f32);
        }
    }
    for (a, row) in t.covariance.iter().enumerate() {
        for (b, c) in row.iter().enumerate() {
            let x = out.dcov_dmu.get_mut(a).and_then(|r| r.get_mut(b));
            if let Some(x) = x {
                mu_slot(x, c.d as f32);
            }
            let y = out.dcov_dcov.get_mut(a).and_then(|r| r.get_mut(b));
            if let Some(y) = y {
                cov_slot(y, c.d as f32);
            }
        }
    }
    for (c, row) in t.input_output.iter().enumerate() {
        for (a, v) in row.iter().enumerate() {
            let x = out.dinput_output_dmu.get_mut(c).and_then(|r| r.get_mut(a));
            if let Some(x) = x {
                mu_slot(x, v.d as f32);
            }
            let y = out.dinput_output_dcov.get_mut(c).and_then(|r| r.get_mut(a));
            if let Some(y) = y {
                cov_slot(y, v.d as f32);
            }
        }
    }
}

/// The raw mean and the symmetric part of the raw `d x d` covariance,
/// checked, zero past `d`.
fn checked<const D: usize>(
    d: usize,
    mean: &[f32],
    cov: &[f32],
) -> Result<([f32; D], [[f32; D]; D]), Error> {
    if mean.len() != d || d == 0 {
        return Err(Error::InputLength {
            expected: d,
            found: mean.len(),
        });
    }
    if cov.len() != d * d {
        return Err(Error::InvalidCovariance);
    }
    if !mean.iter().all(|v| v.is_finite()) {
        return Err(Error::NonFiniteInput);
    }
    if !cov.iter().all(|v| v.is_finite()) {
        return Err(Error::InvalidCovariance);
    }
    let mut mu = [0.0f32; D];
    for (m, &v) in mu.iter_mut().zip(mean) {
        *m = v;
    }
    let mut s = [[0.0f32; D]; D];
    for (i, row) in s.iter_mut().enumerate().take(d) {
        for (j, x) in row.iter_mut().enumerate().take(d) {
            let at = |r: usize, c: usize| cov.get(r * d + c).copied().unwrap_or(0.0);
            *x = 0.5 * (at(i, j) + at(j, i));
        }
        let variance = row.get(i).copied().unwrap_or(0.0);
        if variance.is_nan() || variance < 0.0 {
            return Err(Error::InvalidCovariance);
        }
    }
    Ok((mu, s))
}

/// `v` in f64.
fn widen<const D: usize>(v: &[f32; D]) -> [f64; D] {
    v.map(f64::from)
}

/// `s` in f64.
fn widen_rows<const D: usize>(s: &[[f32; D]; D]) -> [[f64; D]; D] {
    s.map(|row| widen(&row))
}

/// `e^x - 1` to f32's relative precision near 0 as well (where `e^x - 1`
/// in f32 would keep only its absolute precision), branch-free.
#[inline(always)]
fn expm1(x: f32) -> f32 {
    let (two, u, tail) = reduced(x);
    two * (u + 0.5 * u * u + tail) + (two - 1.0)
}

/// `e^x` to a few ulp whatever `x` (the basis loop's exponential is
/// good to `2e-7 + |x| 8e-8` relative, which the weights' cancellation
/// would amplify here), branch-free.
#[inline(always)]
fn exp(x: f32) -> f32 {
    let (two, u, tail) = reduced(x);
    two * (1.0 + u + 0.5 * u * u + tail)
}

/// `(expm1(y) - y - y^2 / 2, expm1(y))`, both to f32's relative
/// precision: where [`reduced`] leaves `y` whole (`|y| < 2 ln 2`) the
/// remainder is its series' tail, beyond it the difference (at least
/// 0.3 there, so its cancellation costs a few ulp); branch-free.
#[inline(always)]
fn remainder2(y: f32) -> (f32, f32) {
    let (two, u, tail) = reduced(y);
    let e = two * (u + 0.5 * u * u + tail) + (two - 1.0);
    let direct = (e - y) - 0.5 * y * y;
    // All ones where y was not reduced: a select without a branch.
    let whole = 0u32.wrapping_sub(u32::from(two == 1.0));
    let bits = (tail.to_bits() & whole) | (direct.to_bits() & !whole);
    (f32::from_bits(bits), e)
}

/// `(2^(4n), u, e^u - 1 - u - u^2 / 2)` with `x = 4 n ln 2 + u`,
/// `|u| <= 2 ln 2`, for `|x| < 2^22` (where the rounding trick holds):
/// `e^x = 2^(4n) (1 + u + u^2 / 2 + tail)`, with `2^(4n)` clamped to
/// `[0, 2^123]` in the integer exponent (no float compare). The wide
/// reduction keeps every `|x| < 1.38` whole, where [`remainder2`] needs
/// the tail to its relative precision.
#[inline(always)]
fn reduced(x: f32) -> (f32, f32, f32) {
    // 1.5 2^23: adding and subtracting it rounds to an integer.
    const ROUND: f32 = 12_582_912.0;
    // 4 ln 2 in two parts, the first with trailing zero bits (exact n x).
    const STEP_HI: f32 = 4.0 * 0.693_145_75;
    const STEP_LO: f32 = 4.0 * 1.428_606_8e-6;
    let n = (x * (0.25 * core::f32::consts::LOG2_E) + ROUND) - ROUND;
    let u = (x - n * STEP_HI) - n * STEP_LO;
    // (e^u - 1 - u - u^2 / 2) / u^3 on |u| <= 2 ln 2: degree 7, fitted for
    // the least relative error (2e-8; 1.2e-7 in f32 arithmetic).
    const TAIL: [f32; 8] = [
        0.166_666_66,
        0.041_666_668,
        0.008_333_378,
        0.001_388_879_5,
        0.000_198_296_42,
        2.480_564_4e-5,
        2.852_984_2e-6,
        2.795_640_6e-7,
    ];
    let [c0, c1, c2, c3, c4, c5, c6, c7] = TAIL;
    let poly = c0 + u * (c1 + u * (c2 + u * (c3 + u * (c4 + u * (c5 + u * (c6 + u * c7))))));
    let tail = u * u * u * poly;
    let biased = (4 * (n as i32) + 127).clamp(0, 250);
    let two = f32::from_bits((biased as u32) << 23);
    (two, u, tail)
}

/// `acc += a x`, four lanes at a time (the firmware's opt-level does not
/// unroll a loop over `D`).
#[inline(always)]
fn axpy<const D: usize>(acc: &mut [f32; D], a: f32, x: &[f32; D]) {
    let (acc4, acc_tail) = acc.as_chunks_mut::<4>();
    let (x4, x_tail) = x.as_chunks::<4>();
    for (s, &[x0, x1, x2, x3]) in acc4.iter_mut().zip(x4) {
        let [s0, s1, s2, s3] = *s;
        *s = [s0 + a * x0, s1 + a * x1, s2 + a * x2, s3 + a * x3];
    }
    for (s, &v) in acc_tail.iter_mut().zip(x_tail) {
        *s += a * v;
    }
}

/// `|R1 s|^2 - |R2 s|^2` (the second only if `two`) from the rows of
/// [`Uncertain`]'s factors, over the first `m`.
fn factored_quadratic<const M: usize>(
    factors: &[[[f32; M]; M]; 2],
    s: &[f32; M],
    m: usize,
    two: bool,
) -> f32 {
    let [first, second] = factors;
    let norm = |rows: &[[f32; M]; M]| {
        let mut sum = 0.0f32;
        for (r, row) in rows.iter().enumerate().take(m) {
            let v = math::dot(row.get(..=r).unwrap_or(&[]), s.get(..=r).unwrap_or(&[]));
            sum += v * v;
        }
        sum
    };
    let explained = norm(first);
    if two {
        explained - norm(second)
    } else {
        explained
    }
}

/// `sum_e a_e b_e` of a short vector, one chain (the firmware's
/// opt-level does not unroll a loop over `D`).
#[inline(always)]
fn dot_short<const D: usize>(a: &[f32; D], b: &[f32; D]) -> f32 {
    let (a4, a_tail) = a.as_chunks::<4>();
    let (b4, b_tail) = b.as_chunks::<4>();
    let mut acc = 0.0f32;
    for (&[a0, a1, a2, a3], &[b0, b1, b2, b3]) in a4.iter().zip(b4) {
        acc += a0 * b0 + a1 * b1 + a2 * b2 + a3 * b3;
    }
    for (&x, &y) in a_tail.iter().zip(b_tail) {
        acc += x * y;
    }
    acc
}

/// The inverse of a symmetric positive definite `a` and its determinant,
/// by Cholesky in f32 ([`Error::InvalidCovariance`] if a pivot is not
/// positive).
#[allow(clippy::indexing_slicing, clippy::needless_range_loop)] // every index is below the const D
fn inverse_spd<const D: usize>(a: &[[f32; D]; D]) -> Result<([[f32; D]; D], f32), Error> {
    let mut l = [[0.0f32; D]; D];
    let mut inv_diag = [0.0f32; D];
    let mut det = 1.0f32;
    for i in 0..D {
        for j in 0..=i {
            let mut sum = a[i][j];
            for k in 0..j {
                sum -= l[i][k] * l[j][k];
            }
            if i == j {
                if !sum.is_finite() || sum <= 0.0 {
                    return Err(Error::InvalidCovariance);
                }
                det *= sum;
                let root = math::sqrt_finite(sum);
                l[i][i] = root;
                inv_diag[i] = 1.0 / root;
            } else {
                l[i][j] = sum * inv_diag[j];
            }
        }
    }
    // L^-1, column by column, then L^-T L^-1.
    let mut li = [[0.0f32; D]; D];
    for c in 0..D {
        for i in c..D {
            let mut sum = if i == c { 1.0 } else { 0.0 };
            for k in c..i {
                sum -= l[i][k] * li[k][c];
            }
            li[i][c] = sum * inv_diag[i];
        }
    }
    let mut inv = [[0.0f32; D]; D];
    for i in 0..D {
        for j in 0..=i {
            let mut sum = 0.0f32;
            for k in i..D {
                sum += li[k][i] * li[k][j];
            }
            inv[i][j] = sum;
            inv[j][i] = sum;
        }
    }
    Ok((inv, det))
}

/// `sum_e a_e b_e`.
fn dot<T: Scalar, const D: usize>(a: &[T; D], b: &[T; D]) -> T {
    a.iter()
        .zip(b)
        .fold(T::of(0.0), |acc, (&x, &y)| acc + x * y)
}

/// The lower Cholesky factor of `S + diag(widths)` and its reciprocal
/// diagonal.
struct Factor<T, const D: usize> {
    lower: [[T; D]; D],
    inverse_diagonal: [T; D],
}

/// [`Factor`] of `s + diag(width(e))`, or [`Error::InvalidCovariance`]
/// when it is not positive definite.
#[allow(clippy::indexing_slicing, clippy::needless_range_loop)] // every index is below the const D
fn factor<T: Scalar, const D: usize>(
    s: &[[T; D]; D],
    width: impl Fn(usize) -> f64,
) -> Result<Factor<T, D>, Error> {
    let zero = T::of(0.0);
    let mut lower = [[zero; D]; D];
    let mut inverse_diagonal = [zero; D];
    for i in 0..D {
        for j in 0..=i {
            let mut sum = s[i][j];
            if i == j {
                sum = sum + T::of(width(i));
            }
            for k in 0..j {
                sum = sum - lower[i][k] * lower[j][k];
            }
            if i == j {
                if !sum.value().is_finite() || sum.value() <= 0.0 {
                    return Err(Error::InvalidCovariance);
                }
                let root = sum.sqrt();
                lower[i][i] = root;
                inverse_diagonal[i] = T::of(1.0) / root;
            } else {
                lower[i][j] = sum * inverse_diagonal[j];
            }
        }
    }
    Ok(Factor {
        lower,
        inverse_diagonal,
    })
}

impl<T: Scalar, const D: usize> Factor<T, D> {
    /// `L^-1 r`.
    #[allow(clippy::indexing_slicing, clippy::needless_range_loop)] // every index is below the const D
    fn forward(&self, r: &[T; D]) -> [T; D] {
        let mut w = *r;
        for i in 0..D {
            let mut sum = r[i];
            for k in 0..i {
                sum = sum - self.lower[i][k] * w[k];
            }
            w[i] = sum * self.inverse_diagonal[i];
        }
        w
    }

    /// `L^-T w`.
    #[allow(clippy::indexing_slicing, clippy::needless_range_loop)] // every index is below the const D
    fn backward(&self, w: &[T; D]) -> [T; D] {
        let mut x = *w;
        for i in (0..D).rev() {
            let mut sum = w[i];
            for k in i + 1..D {
                sum = sum - self.lower[k][i] * x[k];
            }
            x[i] = sum * self.inverse_diagonal[i];
        }
        x
    }

    /// `|I + S diag(factor l)|^-1/2 = |S + diag(1 / (factor l))|^-1/2
    /// prod (factor l)^-1/2`.
    fn scale(&self, precision: &[f64; D], factor: f64) -> T {
        self.inverse_diagonal
            .iter()
            .zip(precision)
            .fold(T::of(1.0), |acc, (&inv, &l)| {
                acc * inv * T::of(1.0 / libm::sqrt(factor * l))
            })
    }
}

/// The arithmetic the moments need, in f64 for the values and in [`Dual`]
/// numbers for the derivatives.
trait Scalar:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self>
{
    fn of(v: f64) -> Self;
    /// `e^x` for `x <= 0`.
    fn exp_neg(self) -> Self;
    fn sqrt(self) -> Self;
    fn value(self) -> f64;
}

impl Scalar for f64 {
    #[inline(always)]
    fn of(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn exp_neg(self) -> Self {
        libm::exp(self)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        libm::sqrt(self)
    }
    #[inline(always)]
    fn value(self) -> f64 {
        self
    }
}

/// An f32 of the model as a [`Scalar`].
#[inline(always)]
fn lift<T: Scalar>(v: f32) -> T {
    T::of(f64::from(v))
}

/// A value and its derivative along one direction of `(mu, S)`.
#[derive(Debug, Clone, Copy)]
struct Dual {
    v: f64,
    d: f64,
}

impl Add for Dual {
    type Output = Dual;
    fn add(self, o: Dual) -> Dual {
        Dual {
            v: self.v + o.v,
            d: self.d + o.d,
        }
    }
}

impl Sub for Dual {
    type Output = Dual;
    fn sub(self, o: Dual) -> Dual {
        Dual {
            v: self.v - o.v,
            d: self.d - o.d,
        }
    }
}

impl Mul for Dual {
    type Output = Dual;
    fn mul(self, o: Dual) -> Dual {
        Dual {
            v: self.v * o.v,
            d: self.d * o.v + self.v * o.d,
        }
    }
}

impl Div for Dual {
    type Output = Dual;
    fn div(self, o: Dual) -> Dual {
        let v = self.v / o.v;
        Dual {
            v,
            d: (self.d - v * o.d) / o.v,
        }
    }
}

impl Scalar for Dual {
    fn of(v: f64) -> Self {
        Dual { v, d: 0.0 }
    }
    fn exp_neg(self) -> Self {
        let v = libm::exp(self.v);
        Dual { v, d: self.d * v }
    }
    fn sqrt(self) -> Self {
        let v = libm::sqrt(self.v);
        Dual {
            v,
            d: 0.5 * self.d / v,
        }
    }
    fn value(self) -> f64 {
        self.v
    }
}
