//! Several outputs on one basis (format version 5): each output's own
//! weights, factors and scalars, the call that evaluates the basis once for
//! all of them, and the class probabilities of a multi-class link.

use core::ops::Deref;

use super::learning::{offset, Spans};
use super::{set, unpack, Model, Name, Prediction, PredictionWithGradient};
use crate::error::{Dimension, Error};
use crate::format::{
    check_diagonal, packed_len, shared_variance_ratio, Field, Link, Reader, Shape, VarianceForm,
};
use crate::math::{self, packed_index};

/// What each output of a [`Model`] holds besides the shared basis.
#[derive(Debug, Clone)]
#[repr(C)]
pub(super) struct Output<const M: usize> {
    /// Mean weights `beta_i`.
    pub(super) beta: [f32; M],
    /// The strictly lower parts of `L1` and `L2` in the solver's streaming
    /// order (see `math::packed_index`): `M (M - 1)` numbers at most, in
    /// `M x M` slots. With one factor it is also in the product's order
    /// from `math::product_offset` on (see `math::product_index`).
    pub(super) factors: [[f32; M]; M],
    /// `L1`'s diagonal: as it is for the product, its reciprocal for the
    /// solves (which then never divide).
    pub(super) diagonal1: [f32; M],
    /// The reciprocal of `L2`'s diagonal (the whitened form: `G`'s
    /// diagonal as it is).
    pub(super) inv_diagonal2: [f32; M],
    pub(super) prior: f32,
    /// The observation noise variance (standardised units): the blob's,
    /// or what [`super::UpdateSettings::noise_forgetting`] has made of it.
    pub(super) noise: f32,
    /// The blob's noise variance, which bounds the learned one.
    pub(super) fitted_noise: f32,
    pub(super) bias: f32,
    pub(super) y_mean: f32,
    pub(super) y_scale: f32,
    /// The output's (target column's) name.
    pub(super) name: Name,
    /// `Some(prior / the first output's prior)` when the output has no
    /// factors of its own and its latent variance is the first output's
    /// times that ratio (format version 6); `None` with its own factors.
    pub(super) shared_variance: Option<f32>,
    /// Where its learned numbers sit in the loaded blob (an updatable
    /// model's, for [`Model::write_blob`]).
    pub(super) spans: Spans,
}

impl<const M: usize> Output<M> {
    /// All zero bits (`y_scale` too), so an empty model is zero-filled
    /// rather than copied from a flash image.
    pub(super) const EMPTY: Self = Output {
        beta: [0.0; M],
        factors: [[0.0; M]; M],
        diagonal1: [0.0; M],
        inv_diagonal2: [0.0; M],
        prior: 0.0,
        noise: 0.0,
        fitted_noise: 0.0,
        bias: 0.0,
        y_mean: 0.0,
        y_scale: 0.0,
        name: Name::new(),
        shared_variance: None,
        spans: Spans {
            beta: 0,
            l2: 0,
            mean: 0,
        },
    };

    /// Decodes `beta`, `l1`, `l2`, `prior`, `noise`, `bias`, `y_mean` and
    /// `y_scale` (fields 17 to 24, and the same fields of each further
    /// output), the diagonals as stored. `first_prior` is the first
    /// output's prior when this output may share its variance (a further
    /// output of a version-6 blob), else `None`.
    pub(super) fn read_numbers(
        &mut self,
        reader: &mut Reader<'_>,
        shape: &Shape,
        first_prior: Option<f32>,
    ) -> Result<(), Error> {
        let m = usize::from(shape.n_basis);
        reader.numbers(shape, Field::Beta, |i, v| set(&mut self.beta, i, v))?;
        self.spans.beta = offset(reader.position() - 4 * m)?;
        let two = shape.two_factors;
        let mut shares = false;
        for (field, factor) in [(Field::L1, 0), (Field::L2, 1)] {
            let sink = |i: usize, v: f32| {
                let (row, col) = unpack(i);
                if row == col {
                    // As stored: the variance form, which says whether the
                    // solves want its reciprocal, comes later in the body.
                    let diagonal = if factor == 0 {
                        &mut self.diagonal1
                    } else {
                        &mut self.inv_diagonal2
                    };
                    set(diagonal, row, check_diagonal(field, v)?)
                } else {
                    let slots = self.factors.as_flattened_mut();
                    if !two {
                        let at = math::product_offset(M) + math::product_index(row, col, m);
                        set(slots, at, v)?;
                    }
                    set(slots, packed_index(row, col, factor, m, two), v)
                }
            };
            match (field, first_prior) {
                (Field::L1, Some(_)) => shares = reader.own_or_shared_factor(shape, sink)?,
                // A shared variance has no second factor either.
                _ if shares => reader.sized(field, 0, sink)?,
                _ => reader.numbers(shape, field, sink)?,
            }
        }
        self.spans.l2 = if two && !shares {
            offset(reader.position() - 4 * packed_len(m))?
        } else {
            0
        };
        self.prior = reader.scalar(Field::Prior)?;
        self.shared_variance = match first_prior {
            Some(first) if shares => Some(shared_variance_ratio(first, self.prior)?),
            _ => None,
        };
        self.noise = reader.scalar(Field::Noise)?;
        self.fitted_noise = self.noise;
        self.bias = reader.scalar(Field::Bias)?;
        self.y_mean = reader.scalar(Field::YMean)?;
        self.y_scale = reader.scalar(Field::YScale)?;
        Ok(())
    }

    /// The solves divide by the diagonals: store their reciprocals (only
    /// `L1`'s in the whitened form, whose `G` is multiplied).
    pub(super) fn invert_diagonals(&mut self, m: usize, both: bool) {
        let second = both.then_some(&mut self.inv_diagonal2);
        for diagonal in core::iter::once(&mut self.diagonal1).chain(second) {
            for v in diagonal.iter_mut().take(m) {
                *v = 1.0 / *v;
            }
        }
    }

    /// The product form's `C` in its own order (`math::product_index`).
    #[inline(always)]
    pub(super) fn product_factor(&self) -> &[f32] {
        let slots = self.factors.as_flattened();
        slots.get(math::product_offset(M)..).unwrap_or(&[])
    }

    /// Noise variance in raw target units.
    pub(super) fn noise_variance(&self) -> f32 {
        self.y_scale * self.y_scale * self.noise
    }

    /// Latent prior variance in output units.
    pub(super) fn prior_variance(&self, link: Link) -> f32 {
        match link {
            Link::Identity => self.y_scale * self.y_scale * self.prior,
            Link::Probit | Link::OneVsRest | Link::Softmax => self.prior,
        }
    }
}

/// Decodes the further outputs and the class labels of a version-5 body
/// into `outputs[1..]`; returns the number of outputs, the first included.
/// The labels are checked (count, UTF-8) but not kept: a device reports the
/// class index, and host tools read the labels from `ModelSpec`.
pub(super) fn read_outputs<const M: usize>(
    reader: &mut Reader<'_>,
    shape: &Shape,
    outputs: &mut [Output<M>],
    version: u16,
) -> Result<usize, Error> {
    let count = reader.length()?.checked_add(1).ok_or(Error::Malformed)?;
    shape.link.check_outputs(count)?;
    if count > outputs.len() {
        return Err(Error::CapacityExceeded {
            dimension: Dimension::Output,
            required: count,
            capacity: outputs.len(),
        });
    }
    let (first, further) = outputs.split_first_mut().ok_or(Error::Malformed)?;
    let first_prior = (version >= 6).then_some(first.prior);
    for output in further.iter_mut().take(count.saturating_sub(1)) {
        let name: &str = reader.value()?;
        output.name = Name::try_from(name).map_err(|_| Error::NameTooLong {
            input: None,
            length: name.len(),
            capacity: crate::NAME_CAPACITY,
        })?;
        output.read_numbers(reader, shape, first_prior)?;
    }
    let labels = reader.length()?;
    shape.link.check_labels(count, labels)?;
    for _ in 0..labels {
        let _: &str = reader.value()?;
    }
    Ok(count)
}

/// Up to `P` values, one per output of a model: a fixed array and how many
/// of its entries are meaningful. Dereferences to that slice.
///
/// ```
/// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
/// let model = sgp_runtime::Model::<16, 2, 2, 3>::from_bytes(blob)?;
/// let all = model.predict_all(&[0.5, -1.0])?;
/// assert_eq!(all.len(), 1); // a single-output blob in a three-output capacity
/// assert_eq!(all[0], model.predict(&[0.5, -1.0])?);
/// # Ok::<(), sgp_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outputs<T, const P: usize> {
    pub(crate) values: [T; P],
    len: usize,
}

impl<T: Copy, const P: usize> Outputs<T, P> {
    /// `len` copies of `value` (at most `P`).
    pub(crate) fn filled(value: T, len: usize) -> Self {
        Outputs {
            values: [value; P],
            len: len.min(P),
        }
    }

    /// The whole array, entries past the slice it dereferences to
    /// included (as the C library copies it out).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2, 3>::from_bytes(blob)?;
    /// let all = model.predict_all(&[0.5, -1.0])?;
    /// assert_eq!(all.as_array().len(), 3); // the capacity
    /// assert_eq!(all.as_array()[0], all[0]);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn as_array(&self) -> &[T; P] {
        &self.values
    }
}

impl<T, const P: usize> Deref for Outputs<T, P> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        self.values.get(..self.len).unwrap_or(&self.values)
    }
}

/// The class a multi-class model picks and the probability of every class,
/// from [`Model::classify`].
///
/// ```
/// let c = sgp_runtime::Classification { class: 1, probabilities: [0.2, 0.7, 0.1], classes: 3 };
/// assert_eq!(c.probabilities()[c.class], 0.7);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Classification<const P: usize> {
    /// Index of the most probable class (the first of equals), into the
    /// blob's class labels.
    pub class: usize,
    /// `p_k` for each class `k < classes`, summing to 1 (zero past it).
    pub probabilities: [f32; P],
    /// Number of classes `K`.
    pub classes: usize,
}

impl<const P: usize> Classification<P> {
    /// The `K` class probabilities.
    ///
    /// ```
    /// let c = sgp_runtime::Classification { class: 0, probabilities: [0.6, 0.4, 0.0], classes: 2 };
    /// assert_eq!(c.probabilities(), &[0.6, 0.4]);
    /// ```
    pub fn probabilities(&self) -> &[f32] {
        self.probabilities
            .get(..self.classes)
            .unwrap_or(&self.probabilities)
    }
}

impl<const M: usize, const G: usize, const D: usize, const P: usize> Model<M, G, D, P> {
    /// Number of outputs of the loaded blob (class latents of a
    /// multi-class model; 1 before format version 5; 0 for an empty model).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// assert_eq!(model.output_count(), 1);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn output_count(&self) -> usize {
        usize::from(self.p)
    }

    /// The name of output `p` (its target column), or `None` past the last.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// assert_eq!(model.output_name(0), Some("torque"));
    /// assert_eq!(model.output_name(1), None);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn output_name(&self, p: usize) -> Option<&str> {
        self.outputs
            .get(..self.output_count())
            .and_then(|outputs| outputs.get(p))
            .map(|output| output.name.as_str())
    }

    /// Predictions of every output at `x`, the basis evaluated once: each
    /// as [`Model::predict`] gives it for a single output (regression: the
    /// target in raw units, noise included; classification: the latent
    /// `f + b`). Output 0 is bit for bit [`Model::predict`]'s. Cost: one
    /// basis pass (`O(M G)`), then `O(M)` for each further mean and the
    /// variance work of [`Model::predict`] (`O(M^2)`) per output.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2, 2>::from_bytes(blob)?;
    /// for (p, prediction) in model.predict_all(&[0.5, -1.0])?.iter().enumerate() {
    ///     assert!(prediction.variance > 0.0, "output {p}");
    /// }
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Model::predict`].
    pub fn predict_all(&self, x: &[f32]) -> Result<Outputs<Prediction, P>, Error> {
        let z = self.features(x)?;
        let mut k = [0.0f32; M];
        let first_mean = self.kernel(&z, &mut k)?;
        let mut all = Outputs::filled(
            Prediction {
                mean: 0.0,
                variance: 0.0,
            },
            self.output_count(),
        );
        // The first output's latent variance, which outputs that share it
        // scale instead of evaluating factors of their own.
        let mut first_variance = 0.0;
        for (p, (slot, output)) in all.values.iter_mut().zip(&self.outputs).enumerate() {
            let latent_mean = self.output_latent_mean(p, first_mean, output, &k)?;
            let latent = match output.shared_variance {
                // An updatable model's means need each output's z . a.
                _ if self.variance == VarianceForm::Whitened => {
                    self.latent(output, latent_mean, &k, None)?.0
                }
                Some(ratio) => self.scaled_latent(output, latent_mean, ratio * first_variance),
                None => {
                    let (variance, _, _) = self.latent_variance(output, output, &k, None);
                    if p == 0 {
                        first_variance = variance;
                    }
                    self.scaled_latent(output, latent_mean, variance)
                }
            };
            *slot = self.observed(output, latent);
        }
        Ok(all)
    }

    /// [`Model::predict_all`] with the gradient of every output's mean and
    /// variance with respect to the raw inputs, each as
    /// [`Model::predict_with_gradient`] gives it for one output.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2, 2>::from_bytes(blob)?;
    /// let x = [0.5, -1.0];
    /// let all = model.predict_all_with_gradient(&x)?;
    /// assert_eq!(all[0], model.predict_with_gradient(&x)?);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Model::predict_with_gradient`].
    pub fn predict_all_with_gradient(
        &self,
        x: &[f32],
    ) -> Result<Outputs<PredictionWithGradient<D>, P>, Error> {
        let z = self.features(x)?;
        let mut k = [0.0f32; M];
        let first_mean = self.kernel(&z, &mut k)?;
        let mut all = Outputs::filled(
            PredictionWithGradient {
                mean: 0.0,
                variance: 0.0,
                mean_gradient: [0.0; D],
                variance_gradient: [0.0; D],
            },
            self.output_count(),
        );
        for (p, (slot, output)) in all.values.iter_mut().zip(&self.outputs).enumerate() {
            let latent_mean = self.output_latent_mean(p, first_mean, output, &k)?;
            *slot = self.output_gradient(output, &z, &k, latent_mean)?;
        }
        Ok(all)
    }

    /// The class of `x` and the probability of every class: for a
    /// multi-class link the `K` latents `t_k = m_k + b_k` with variances
    /// `v_k` give [`Link::OneVsRest`]'s `p_k = q_k / sum_j q_j`,
    /// `q_k = Phi(t_k / sqrt(1 + v_k))` (every `q_k` zero, far in every
    /// tail: `1 / K` each), or [`Link::Softmax`]'s `p_k` proportional to
    /// `exp(t_k / sqrt(1 + pi v_k / 8))`; a probit model gives two classes,
    /// `[1 - P(y = +1), P(y = +1)]`, in the order of its labels
    /// `[negative, positive]` (it needs `P >= 2`).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// use sgp_runtime::{Error, Model};
    /// let regression = Model::<16, 2, 2, 4>::from_bytes(blob)?;
    /// assert_eq!(regression.classify(&[0.0, 0.0]), Err(Error::NotClassifier));
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NotClassifier`] for a regression model;
    /// [`Error::CapacityExceeded`] (`Output`) for a probit model in a
    /// capacity `P < 2`; otherwise as [`Model::predict`].
    pub fn classify(&self, x: &[f32]) -> Result<Classification<P>, Error> {
        let link = self.shape.link;
        if !link.classifies() {
            return Err(Error::NotClassifier);
        }
        let latents = self.predict_all(x)?;
        let mut probabilities = [0.0f32; P];
        let classes = if link == Link::Probit {
            let p = self.probability_of(latents.first().copied())?;
            let [negative, positive, ..] = probabilities.as_mut_slice() else {
                return Err(Error::CapacityExceeded {
                    dimension: Dimension::Output,
                    required: 2,
                    capacity: P,
                });
            };
            (*negative, *positive) = (1.0 - p, p);
            2
        } else {
            spread(link, &latents, &mut probabilities);
            latents.len()
        };
        let mut class = 0;
        for (k, &p) in probabilities.iter().enumerate().take(classes) {
            if p > probabilities.get(class).copied().unwrap_or(0.0) {
                class = k;
            }
        }
        Ok(Classification {
            class,
            probabilities,
            classes,
        })
    }

    /// `P(y = +1)` from a probit latent, as [`Model::probability`].
    fn probability_of(&self, latent: Option<Prediction>) -> Result<f32, Error> {
        let latent = latent.ok_or(Error::NotClassifier)?;
        Ok(math::normal_cdf(
            latent.mean / libm::sqrtf(1.0 + latent.variance),
        ))
    }

    /// Output `p`'s latent mean `beta_p . k`: the first's was summed with
    /// the basis values. The basis check found every `k_i` finite, but a
    /// further output's sum can still overflow.
    #[inline(always)]
    pub(super) fn output_latent_mean(
        &self,
        p: usize,
        first_mean: f32,
        output: &Output<M>,
        k: &[f32; M],
    ) -> Result<f32, Error> {
        if p == 0 {
            return Ok(first_mean);
        }
        let m = self.m;
        let mean = math::dot(
            output.beta.get(..m).unwrap_or(&[]),
            k.get(..m).unwrap_or(&[]),
        );
        if mean.is_finite() {
            Ok(mean)
        } else {
            Err(Error::InputOverflow)
        }
    }
}

/// The class probabilities of a multi-class `link` from the latents, into
/// `probabilities` (one per latent).
fn spread(link: Link, latents: &[Prediction], probabilities: &mut [f32]) {
    let pairs = probabilities.iter_mut().zip(latents);
    if link == Link::Softmax {
        const PI_OVER_8: f32 = core::f32::consts::PI / 8.0;
        let mut largest = f32::NEG_INFINITY;
        for (slot, latent) in pairs {
            *slot = latent.mean / libm::sqrtf(1.0 + PI_OVER_8 * latent.variance);
            largest = if *slot > largest { *slot } else { largest };
        }
        for slot in probabilities.iter_mut().take(latents.len()) {
            *slot = math::exp_non_positive(*slot - largest);
        }
    } else {
        for (slot, latent) in pairs {
            *slot = math::normal_cdf(latent.mean / libm::sqrtf(1.0 + latent.variance));
        }
    }
    let used = probabilities.iter_mut().take(latents.len());
    let total: f32 = used.map(|p| *p).sum();
    let count = latents.len() as f32;
    for p in probabilities.iter_mut().take(latents.len()) {
        *p = if total > 0.0 { *p / total } else { 1.0 / count };
    }
}
