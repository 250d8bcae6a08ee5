//! Learning on the device (format version 7): each new observation
//! conditions the model's posterior over its inducing values, with the
//! basis and hyperparameters fixed, in `O(M^2)` and without a heap.
//!
//! In whitened coordinates (`z = L1^-1 k`, `L1 = chol(K_M)`) the posterior
//! is `N(a, S)` with `a = L1^T beta` and `S = G + G^T - G^T G`. One
//! observation `y` at `x`, after forgetting `S <- lam S + (1 - lam) I`,
//! `a <- sqrt(lam) a` (a plant that drifts back towards the prior, an
//! AR(1) process in time), is a Kalman step: `D = gamma + z^T S z`,
//! `a += S z (y - z^T a) / D`, `S -= S z z^T S / D` (one rank-one update of
//! `I - G` by rotations), then `beta = L1^-T a`. A probit label takes one
//! step of assumed-density filtering instead, with the same `S z`.
//! The guide's chapter "Learning on the device" derives it.

use super::{set, Model, Output, Prediction};
use crate::error::Error;
use crate::format::{
    check_learning_noise, check_learning_present, check_mean_len, check_means_len, packed_len,
    Field, Observation, Reader, Shape, VarianceForm, CRC, TRAILER_LEN,
};
use crate::math;
use crate::whitened;

/// How [`Model::update`] treats a new observation: how fast the model
/// forgets, and which residuals it refuses as outliers.
///
/// ```
/// let settings = sgp_runtime::UpdateSettings { forgetting: 0.999, ..Default::default() };
/// assert_eq!(settings.gate, f32::INFINITY); // no gate unless asked for
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct UpdateSettings {
    /// `lam` in `(0, 1]`: before each observation the posterior drifts
    /// back towards the prior, `S <- lam S + (1 - lam) I` and `a <-
    /// sqrt(lam) a` in whitened coordinates, so an observation `t` updates
    /// ago weighs less and less, and a region the plant has not visited
    /// for `1 / (1 - lam)` updates returns to the prior (never beyond it).
    /// `1` (the default) forgets nothing: the model is then the batch
    /// posterior of every row it has seen.
    pub forgetting: f32,
    /// Largest `|residual| / predictive sd` accepted (regression): a
    /// target further from the prediction is refused as an outlier
    /// ([`Error::Outlier`]) and the model is unchanged. The default,
    /// infinity, accepts every finite target: a plant that shifts by many
    /// standard deviations would otherwise be refused for ever. A
    /// classifier's labels are never refused.
    pub gate: f32,
}

impl Default for UpdateSettings {
    fn default() -> Self {
        UpdateSettings {
            forgetting: 1.0,
            gate: f32::INFINITY,
        }
    }
}

impl UpdateSettings {
    /// Accepts settings in range: `0 < forgetting <= 1`, `gate > 0`.
    pub(crate) fn check(self) -> Result<Self, Error> {
        let forgetting = self.forgetting > 0.0 && self.forgetting <= 1.0;
        if forgetting && self.gate > 0.0 {
            Ok(self)
        } else {
            Err(Error::InvalidSetting)
        }
    }
}

/// What one update saw: the prediction at the observation's input just
/// before it (forgetting applied), and how far the target was from it.
///
/// ```
/// use sgp_runtime::{Innovation, Prediction};
/// let seen = Innovation { prediction: Prediction { mean: 1.0, variance: 4.0 }, residual: -3.0 };
/// assert_eq!(seen.standardised(), -1.5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Innovation {
    /// As [`Model::predict`] gives it: of the target, noise included
    /// (regression); of the latent `f + b` (classifier).
    pub prediction: Prediction,
    /// Target minus predicted mean (regression, raw units); label minus
    /// `P(y = +1)` (classifier).
    pub residual: f32,
}

impl Innovation {
    /// The residual in predictive standard deviations (regression): what
    /// [`UpdateSettings::gate`] bounds.
    pub fn standardised(&self) -> f32 {
        self.residual / self.prediction.std_dev()
    }
}

/// Where an output's learned numbers sit in the blob it was loaded from:
/// byte offsets of the first `f32` of `beta`, `l2` and its mean in the
/// learning block (0: the output has no such field).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Spans {
    pub(super) beta: u32,
    pub(super) l2: u32,
    pub(super) mean: u32,
}

/// The loaded blob, as [`Model::write_blob`] needs to know it: its length
/// and a CRC of every byte but the learned numbers' and the trailer's.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Origin {
    pub(super) len: u32,
    pub(super) fingerprint: u32,
}

/// Offset of `position` as stored in [`Spans`].
pub(super) fn offset(position: usize) -> Result<u32, Error> {
    u32::try_from(position).map_err(|_| Error::Malformed)
}

/// Decodes field 31, the learning block (format version 7), into the
/// outputs' means; returns its observation model (`None`: no block).
pub(super) fn read_block<const M: usize>(
    reader: &mut Reader<'_>,
    shape: &Shape,
    variance: VarianceForm,
    outputs: &mut [Output<M>],
    count: usize,
) -> Result<Option<Observation>, Error> {
    let present = match reader.value::<u8>()? {
        0 => false,
        1 => true,
        _ => return Err(Error::Malformed),
    };
    let observation = if present {
        Some(reader.value::<Observation>()?)
    } else {
        None
    };
    check_learning_present(variance, present)?;
    let Some(observation) = observation else {
        return Ok(None);
    };
    observation.check(shape.link)?;
    for output in outputs.iter().take(count) {
        check_learning_noise(observation, output.noise)?;
    }
    check_means_len(count, reader.length()?)?;
    let m = usize::from(shape.n_basis);
    for output in outputs.iter_mut().take(count) {
        check_mean_len(m, reader.length()?)?;
        output.spans.mean = offset(reader.position())?;
        reader.elements(Field::Learning, m, |i, v| set(output.mean_mut(), i, v))?;
    }
    Ok(Some(observation))
}

/// The CRC of `blob` without its trailer and without the learned numbers
/// at `spans` (`m` basis functions): what stays the same when a model
/// writes itself back. The spans come in blob order: each output's beta
/// and `l2`, output after output, then the means of the learning block.
pub(super) fn fingerprint(blob: &[u8], spans: &[Spans], m: usize) -> u32 {
    let (vector, triangle) = (4 * m, 4 * packed_len(m));
    let end = blob.len().saturating_sub(TRAILER_LEN);
    let holes = spans
        .iter()
        .flat_map(|s| [(s.beta, vector), (s.l2, triangle)])
        .chain(spans.iter().map(|s| (s.mean, vector)))
        .filter(|&(at, _)| at != 0);
    let mut digest = CRC.digest();
    let mut from = 0;
    for (at, len) in holes {
        let at = at as usize;
        if let Some(kept) = blob.get(from..at.min(end)) {
            digest.update(kept);
        }
        from = from.max(at.saturating_add(len));
    }
    if let Some(kept) = blob.get(from..end) {
        digest.update(kept);
    }
    digest.finalize()
}

/// An output's update, computed and checked but not yet applied.
struct Step<const M: usize> {
    /// The new whitened mean and weights.
    mean: [f32; M],
    beta: [f32; M],
    /// The vector whose outer product joins `I - S` (consumed by the
    /// rotations).
    gain: [f32; M],
    innovation: Innovation,
}

/// The forgetting factor's square root and `1 - sqrt(lam)` (computed as
/// `(1 - lam) / (1 + sqrt(lam))`: no cancellation for `lam` near 1).
fn forgetting(settings: UpdateSettings) -> (f32, f32) {
    let (scale, _) = whitened::root_and_reciprocal(settings.forgetting);
    (scale, (1.0 - settings.forgetting) / (1.0 + scale))
}

/// What the posterior says at one input, forgetting applied: `z`, `S z`,
/// `|z|^2` and `z^T S z` (clamped to `[0, |z|^2]`, where it keeps the
/// variance between 0 and the prior).
struct Seen<const M: usize> {
    z: [f32; M],
    sz: [f32; M],
    n: f32,
    zsz: f32,
}

impl<const M: usize> Seen<M> {
    /// At basis values `k`, from `output`'s factors. Without forgetting
    /// (`scale = 1`) `z^T S z` is the very sum [`Model::predict`] makes.
    fn of(output: &Output<M>, k: &[f32; M], m: usize, scale: f32, shift: f32) -> Self {
        let packed = output.factors.as_flattened();
        let mut zu = [[0.0f32; 2]; M];
        let (n, exact) = whitened::solve_and_multiply(
            packed,
            &output.diagonal1,
            &output.inv_diagonal2,
            k,
            m,
            &mut zu,
        );
        // G forgotten: shift I + scale G, so u = shift z + scale G z.
        let mut z = [0.0f32; M];
        let mut t = [0.0f32; M];
        let mut u = [0.0f32; M];
        let mut zsz = 0.0f32;
        for (((zi, ti), ui), &[z0, u0]) in z.iter_mut().zip(&mut t).zip(&mut u).zip(&zu).take(m) {
            let uf = shift * z0 + scale * u0;
            *zi = z0;
            *ui = uf;
            *ti = z0 - uf;
            zsz += uf * (z0 + *ti);
        }
        let w = whitened::multiply_transposed(packed, &output.inv_diagonal2, &t, m);
        let mut sz = [0.0f32; M];
        for (((s, &ui), &wi), &ti) in sz.iter_mut().zip(&u).zip(&w).zip(&t).take(m) {
            *s = ui + scale * wi + shift * ti;
        }
        let zsz = if scale == 1.0 { exact } else { zsz };
        let zsz = if zsz > 0.0 {
            if zsz < n {
                zsz
            } else {
                n
            }
        } else {
            0.0
        };
        Seen { z, sz, n, zsz }
    }

    /// The same for an output whose covariance is the first's scaled by
    /// `ratio` (its `z` is the first's times `sqrt(ratio)`).
    fn scaled(&self, ratio: f32) -> Self {
        let (root, _) = whitened::root_and_reciprocal(ratio);
        Seen {
            z: self.z.map(|v| root * v),
            sz: self.sz.map(|v| root * v),
            n: ratio * self.n,
            zsz: ratio * self.zsz,
        }
    }
}

/// `1 / sqrt(2 pi)`.
const FRAC_1_SQRT_2PI: f32 = 0.398_942_3;

/// `phi(t) / Phi(t)`, the standard normal density over its CDF. Below
/// `-6` (where `Phi` is near f32's smallest numbers) from the continued
/// fraction of Mills' ratio.
fn inverse_mills(t: f32) -> f32 {
    if t > -6.0 {
        FRAC_1_SQRT_2PI * math::exp_non_positive(-0.5 * t * t) / math::normal_cdf(t)
    } else {
        let x = -t;
        x + 1.0 / (x + 2.0 / (x + 3.0 / (x + 4.0 / (x + 5.0 / x))))
    }
}

impl<const M: usize, const G: usize, const D: usize, const P: usize> Model<M, G, D, P> {
    /// Whether the model can learn on the device: its blob is of format
    /// version 7 with a learning block (`sgp fit --updatable`).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// assert!(!model.is_updatable());
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn is_updatable(&self) -> bool {
        self.learning.is_some()
    }

    /// How a new observation enters ([`Observation`]), for an updatable
    /// model.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// assert_eq!(model.observation(), None);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn observation(&self) -> Option<Observation> {
        self.learning
    }

    /// The settings [`Model::update`] uses (the default after a load:
    /// no forgetting, no gate).
    ///
    /// ```
    /// let model = sgp_runtime::Model::<4, 1, 1>::new();
    /// assert_eq!(model.update_settings(), Default::default());
    /// ```
    pub fn update_settings(&self) -> UpdateSettings {
        self.settings
    }

    /// Sets the settings [`Model::update`] and [`Model::update_all`] use
    /// from now on (a load keeps them).
    ///
    /// ```
    /// use sgp_runtime::{Error, Model, UpdateSettings};
    /// let mut model = Model::<4, 1, 1>::new();
    /// model.set_update_settings(UpdateSettings { forgetting: 0.999, gate: 5.0 })?;
    /// assert_eq!(
    ///     model.set_update_settings(UpdateSettings { forgetting: 1.5, gate: 5.0 }),
    ///     Err(Error::InvalidSetting)
    /// );
    /// # Ok::<(), Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidSetting`] for a forgetting factor outside `(0, 1]`
    /// or a gate that is not `> 0` (the settings are then unchanged).
    pub fn set_update_settings(&mut self, settings: UpdateSettings) -> Result<(), Error> {
        self.settings = settings.check()?;
        Ok(())
    }

    /// Conditions the model on one observation: target `y` (raw units; a
    /// classifier's label: `0.0` for the negative class, `1.0` for the
    /// positive one) at raw input `x`, with the model's
    /// [`UpdateSettings`]. `O(M^2)`, no allocation, the same work for
    /// every input; on error the model is unchanged. Returns what the
    /// model predicted at `x` just before.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-updatable.sgp"));
    /// let mut model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// let x = [0.5, -1.0];
    /// let before = model.predict(&x)?;
    /// let seen = model.update(&x, before.mean + 1.0)?;
    /// assert_eq!(seen.prediction, before);
    /// let after = model.predict(&x)?;
    /// assert!(after.mean > before.mean && after.variance < before.variance);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NotUpdatable`] for a model without a learning block;
    /// [`Error::TargetLength`] for a model of several outputs (use
    /// [`Model::update_all`]); the input errors of [`Model::predict`];
    /// [`Error::InvalidTarget`] for a NaN or infinite target (or a label
    /// other than 0 or 1); [`Error::Outlier`] beyond the gate.
    pub fn update(&mut self, x: &[f32], y: f32) -> Result<Innovation, Error> {
        self.update_with(x, y, self.settings)
    }

    /// [`Model::update`] with `settings` for this call only.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-updatable.sgp"));
    /// use sgp_runtime::{Error, Model, UpdateSettings};
    /// let mut model = Model::<16, 2, 2>::from_bytes(blob)?;
    /// let strict = UpdateSettings { gate: 3.0, ..Default::default() };
    /// let far = model.predict(&[0.0, 0.0])?.mean + 1e3;
    /// assert_eq!(model.update_with(&[0.0, 0.0], far, strict), Err(Error::Outlier));
    /// # Ok::<(), Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Model::update`], and [`Error::InvalidSetting`] for settings
    /// out of range.
    pub fn update_with(
        &mut self,
        x: &[f32],
        y: f32,
        settings: UpdateSettings,
    ) -> Result<Innovation, Error> {
        let count = self.output_count();
        if self.learning.is_some() && count != 1 {
            return Err(Error::TargetLength {
                expected: count,
                found: 1,
            });
        }
        let all = self.update_all_with(x, core::slice::from_ref(&y), settings)?;
        all.first().copied().ok_or(Error::NotUpdatable)
    }

    /// Conditions every output on one observation: `y[p]` is output `p`'s
    /// target at `x` (raw units), with the model's [`UpdateSettings`].
    /// Outputs that share the first output's variance share its update of
    /// `S` (one rank-one update and one weight update per output); outputs
    /// with factors of their own are each updated as a model of their own.
    /// All or nothing: if any target is invalid or an outlier, no output
    /// changes.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-updatable.sgp"));
    /// let mut model = sgp_runtime::Model::<16, 2, 2, 2>::from_bytes(blob)?;
    /// let seen = model.update_all(&[0.5, -1.0], &[1.0])?;
    /// assert_eq!(seen.len(), 1);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Model::update`], and [`Error::TargetLength`] if `y` does not
    /// hold one target per output.
    pub fn update_all(
        &mut self,
        x: &[f32],
        y: &[f32],
    ) -> Result<super::Outputs<Innovation, P>, Error> {
        self.update_all_with(x, y, self.settings)
    }

    /// [`Model::update_all`] with `settings` for this call only.
    ///
    /// # Errors
    /// As [`Model::update_all`], and [`Error::InvalidSetting`].
    pub fn update_all_with(
        &mut self,
        x: &[f32],
        y: &[f32],
        settings: UpdateSettings,
    ) -> Result<super::Outputs<Innovation, P>, Error> {
        let observation = self.learning.ok_or(Error::NotUpdatable)?;
        let settings = settings.check()?;
        let count = self.output_count();
        if y.len() != count {
            return Err(Error::TargetLength {
                expected: count,
                found: y.len(),
            });
        }
        let z = self.features(x)?;
        let mut k = [0.0f32; M];
        let first_mean = self.kernel(&z, &mut k)?;
        let (scale, shift) = forgetting(settings);
        let m = self.m;
        // First every output's step, checked; then every change at once.
        let first = self.outputs.first().ok_or(Error::NotUpdatable)?;
        let first_seen = Seen::of(first, &k, m, scale, shift);
        let mut steps = [const { None }; P];
        for (p, (slot, &target)) in steps.iter_mut().zip(y).enumerate() {
            let output = self.outputs.get(p).ok_or(Error::NotUpdatable)?;
            let own;
            let seen = match output.shared_variance {
                Some(ratio) => {
                    own = first_seen.scaled(ratio);
                    &own
                }
                None if p == 0 => &first_seen,
                None => {
                    own = Seen::of(output, &k, m, scale, shift);
                    &own
                }
            };
            let latent_mean = scale * self.output_latent_mean(p, first_mean, output, &k)?;
            *slot = Some(self.step(
                observation,
                output,
                seen,
                latent_mean,
                target,
                settings,
                scale,
            )?);
        }
        let mut innovations = super::Outputs::filled(
            Innovation {
                prediction: Prediction {
                    mean: 0.0,
                    variance: 0.0,
                },
                residual: 0.0,
            },
            count,
        );
        for (p, (step, slot)) in steps
            .iter_mut()
            .zip(innovations.values.iter_mut())
            .enumerate()
        {
            let (Some(step), Some(output)) = (step.as_mut(), self.outputs.get_mut(p)) else {
                continue;
            };
            *slot = step.innovation;
            // An output that shares the first's variance shares its S.
            if output.shared_variance.is_none() {
                let (packed, _) = output.factors.split_at_mut(M.saturating_sub(1));
                whitened::rotate(
                    packed.as_flattened_mut(),
                    &mut output.inv_diagonal2,
                    &mut step.gain,
                    m,
                    scale,
                    shift,
                );
            }
            *output.mean_mut() = step.mean;
            output.beta = step.beta;
        }
        Ok(innovations)
    }

    /// One output's step for target `target` where the posterior, forgotten
    /// by `scale = sqrt(lam)`, gives `seen` and the latent mean
    /// `latent_mean`; nothing is changed.
    #[allow(clippy::too_many_arguments)]
    fn step(
        &self,
        observation: Observation,
        output: &Output<M>,
        seen: &Seen<M>,
        latent_mean: f32,
        target: f32,
        settings: UpdateSettings,
        scale: f32,
    ) -> Result<Step<M>, Error> {
        if !target.is_finite() {
            return Err(Error::InvalidTarget);
        }
        let m = self.m;
        let residual_variance = output.prior - seen.n;
        let latent_variance = residual_variance + seen.zsz;
        let latent_variance = if latent_variance > 0.0 {
            latent_variance
        } else {
            0.0
        };
        // The mean's gain on S z and the weight of S z S z^T in I - S.
        let (gain, weight, innovation) = match observation {
            Observation::Fitc | Observation::Vfe => {
                let row = if observation == Observation::Fitc && residual_variance > 0.0 {
                    residual_variance + output.noise
                } else {
                    output.noise
                };
                let d = row + seen.zsz;
                let standard = (target - output.y_mean) / output.y_scale;
                let residual = standard - latent_mean;
                let predictive = latent_variance + output.noise;
                // Written so that NaN (an overflow) is refused too.
                let within = residual * residual <= settings.gate * settings.gate * predictive;
                if !within {
                    return Err(if residual.is_finite() {
                        Error::Outlier
                    } else {
                        Error::InvalidTarget
                    });
                }
                let prediction = Prediction {
                    mean: output.y_mean + output.y_scale * latent_mean,
                    variance: output.y_scale * output.y_scale * predictive,
                };
                let innovation = Innovation {
                    prediction,
                    residual: target - prediction.mean,
                };
                (residual / d, 1.0 / d, innovation)
            }
            Observation::Probit => {
                let sign = if target == 1.0 {
                    1.0
                } else if target == 0.0 {
                    -1.0
                } else {
                    return Err(Error::InvalidTarget);
                };
                let c = 1.0 + latent_variance;
                let (root, _) = whitened::root_and_reciprocal(c);
                let t = sign * (latent_mean + output.bias) / root;
                let ratio = inverse_mills(t);
                let probability = math::normal_cdf((latent_mean + output.bias) / root);
                let innovation = Innovation {
                    prediction: Prediction {
                        mean: latent_mean + output.bias,
                        variance: latent_variance,
                    },
                    residual: target - probability,
                };
                (sign * ratio / root, ratio * (t + ratio) / c, innovation)
            }
        };
        let (root_weight, _) = whitened::root_and_reciprocal(weight);
        let mut mean = [0.0f32; M];
        let mut step_gain = [0.0f32; M];
        let old = output.mean();
        for (((a, g), &s), &a0) in mean
            .iter_mut()
            .zip(&mut step_gain)
            .zip(&seen.sz)
            .zip(old)
            .take(m)
        {
            *a = scale * a0 + s * gain;
            *g = s * root_weight;
        }
        let mut beta = mean;
        let (factor, ratio) = match output.shared_variance {
            Some(ratio) => (
                self.outputs.first().unwrap_or(output),
                whitened::root_and_reciprocal(ratio).0,
            ),
            None => (output, 1.0),
        };
        whitened::back_substitute_first(
            factor.factors.as_flattened(),
            &factor.diagonal1,
            &mut beta,
            m,
        );
        let mut finite = true;
        for ((b, &a), &g) in beta.iter_mut().zip(&mean).zip(&step_gain).take(m) {
            *b *= ratio;
            finite &= b.is_finite() && a.is_finite() && g.is_finite();
        }
        if !finite {
            return Err(Error::InvalidTarget);
        }
        Ok(Step {
            mean,
            beta,
            gain: step_gain,
            innovation,
        })
    }

    /// Writes the model, with everything it has learned, as a blob into
    /// `out`: `source` (the blob it was loaded from, or one it wrote since)
    /// with its weights, `G` and means replaced and its CRC recomputed.
    /// The blob has the source's length, so firmware can keep it in a
    /// flash sector of that size and load it after a reset. Returns the
    /// number of bytes written.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-updatable.sgp"));
    /// let mut model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// model.update(&[0.5, -1.0], 2.0)?;
    /// let mut saved = [0u8; 4096];
    /// let len = model.write_blob(blob, &mut saved)?;
    /// let reloaded = sgp_runtime::Model::<16, 2, 2>::from_bytes(&saved[..len])?;
    /// assert_eq!(reloaded.predict(&[0.0, 1.0])?, model.predict(&[0.0, 1.0])?);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NotUpdatable`] for a model without a learning block,
    /// [`Error::ForeignBlob`] if `source` is not a blob of this model
    /// (another basis or layout, or damaged), [`Error::BufferTooSmall`] if
    /// `out` is shorter than it.
    pub fn write_blob(&self, source: &[u8], out: &mut [u8]) -> Result<usize, Error> {
        if self.learning.is_none() {
            return Err(Error::NotUpdatable);
        }
        let len = source.len();
        let count = self.output_count();
        let outputs = self.outputs.get(..count).unwrap_or(&[]);
        let mut spans = [Spans::default(); P];
        for (span, output) in spans.iter_mut().zip(outputs) {
            *span = output.spans;
        }
        let same = crate::format::open(source).is_ok()
            && len == self.origin.len as usize
            && fingerprint(source, spans.get(..count).unwrap_or(&[]), self.m)
                == self.origin.fingerprint;
        if !same {
            return Err(Error::ForeignBlob);
        }
        let capacity = out.len();
        let out = out.get_mut(..len).ok_or(Error::BufferTooSmall {
            required: len,
            capacity,
        })?;
        out.copy_from_slice(source);
        let m = self.m;
        for output in outputs {
            let spans = output.spans;
            write_floats(out, spans.beta, output.beta.iter().take(m).copied())?;
            write_floats(out, spans.mean, output.mean().iter().take(m).copied())?;
            if spans.l2 != 0 {
                write_floats(out, spans.l2, output.packed_second(m))?;
            }
        }
        let crc_at = len.saturating_sub(TRAILER_LEN);
        let crc = CRC.checksum(out.get(..crc_at).unwrap_or(&[]));
        let trailer = out.get_mut(crc_at..).ok_or(Error::ForeignBlob)?;
        trailer.copy_from_slice(&crc.to_le_bytes());
        Ok(len)
    }
}

/// `values` as little-endian f32s from byte `at` of `out`.
fn write_floats(out: &mut [u8], at: u32, values: impl Iterator<Item = f32>) -> Result<(), Error> {
    let tail = out.get_mut(at as usize..).ok_or(Error::ForeignBlob)?;
    let mut slots = tail.as_chunks_mut::<4>().0.iter_mut();
    for value in values {
        *slots.next().ok_or(Error::ForeignBlob)? = value.to_le_bytes();
    }
    Ok(())
}

impl<const M: usize> Output<M> {
    /// The whitened posterior mean `a = L1^T beta` of an updatable model:
    /// the last row of the factors' slots, which the two-factor layout
    /// never reaches (it fills `M (M - 1)` of the `M x M`).
    pub(super) fn mean(&self) -> &[f32; M] {
        self.factors.last().unwrap_or(&self.beta)
    }

    pub(super) fn mean_mut(&mut self) -> &mut [f32; M] {
        match self.factors.last_mut() {
            Some(row) => row,
            None => &mut self.beta,
        }
    }

    /// `G` packed row by row with its diagonal, as a blob's `l2` holds it.
    fn packed_second(&self, m: usize) -> impl Iterator<Item = f32> + '_ {
        let packed = self.factors.as_flattened();
        (0..m).flat_map(move |row| {
            (0..=row).map(move |col| {
                if col == row {
                    self.inv_diagonal2.get(row).copied().unwrap_or(0.0)
                } else {
                    let at = math::packed_index(row, col, 1, m, true);
                    packed.get(at).copied().unwrap_or(0.0)
                }
            })
        })
    }
}
