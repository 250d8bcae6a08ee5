//! Learning on the device (format versions 7 and 9): each new observation
//! conditions the model's posterior over its inducing values, with the
//! basis and hyperparameters fixed, in `O(M^2)` and without a heap.
//!
//! In whitened coordinates (`z = L1^-1 k`, `L1 = chol(K_M)`) the posterior
//! is `N(a, S)`, the mean `z . a`. The covariance form (version 9, what the
//! trainer writes) holds `S = W^T diag(D) W`: an observation is Bierman's
//! covariance update, which keeps `S >= 0` whatever f32 rounds, and
//! forgetting takes one whitened coordinate a step towards the prior after
//! it, the means kept (`Model::update_covariance`). The whitened form
//! (version 7) holds `I - S = (I - G)^T (I - diag(d)) (I - G)` (see
//! `crate::whitened`); one
//! observation `y` at `x`, after forgetting `S <- lam S + (1 - lam) I`,
//! `a <- sqrt(lam) a` (a plant that drifts back towards the prior, an
//! AR(1) process in time), is a Kalman step: `D = gamma + z^T S z`,
//! `a += S z (y - z^T a) / D`, `S -= S z z^T S / D` (one rank-one update of
//! `I - S`, Bierman's). The blob's `beta = L1^-T a` is solved for only
//! when the model writes itself back. A probit label takes one
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
    /// `lam` in `(0, 1]`: the posterior's information drifts back towards
    /// the prior's, so an observation `t` updates ago weighs less and
    /// less, and a region the plant has not visited for `1 / (1 - lam)`
    /// updates returns to the prior (never beyond it). The covariance form
    /// (format version 9) forgets, after each observation, one whitened
    /// coordinate by `lam^M` (`M` updates: `S <- lam^M S + (1 - lam^M) I`)
    /// and keeps the means; the whitened form (version 7), before each
    /// observation, `S <- lam S + (1 - lam) I` and `a <- sqrt(lam) a`.
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
    /// A run of this many consecutive targets beyond [`Self::gate`] opens
    /// it: a plant that moved, not a sensor that spiked. The run's first
    /// `gate_run - 1` rows are refused, its last and every further row
    /// beyond the gate learned, until a row within it ends the run (the
    /// model counts the run, a byte of its state). `0` (the default): the
    /// gate never opens.
    pub gate_run: u8,
    /// `rho` in `(0, 1]`: the observation noise variance follows the
    /// data (regression). After each learned row it moves by `(1 - rho)
    /// (e^2 - v)`, `e` the row's residual and `v` the variance the model
    /// predicted there, noise included: a moment estimate over about `1 /
    /// (1 - rho)` rows, held within [`NOISE_FLOOR`] and [`NOISE_CEILING`]
    /// times the fitted noise (or up to the prior). Predictions and the next update's gain use
    /// it; a load (and a blob the model writes) keeps the fitted one. `1`
    /// (the default) keeps the fitted noise.
    pub noise_forgetting: f32,
}

/// The least noise variance [`UpdateSettings::noise_forgetting`] learns,
/// as a multiple of the fitted one: a tenth of its standard deviation.
///
/// ```
/// assert!(sgp_runtime::NOISE_FLOOR < 1.0);
/// ```
pub const NOISE_FLOOR: f32 = 0.01;

/// The largest noise variance [`UpdateSettings::noise_forgetting`]
/// learns, as a multiple of the fitted one (ten times its standard
/// deviation), or the latent prior variance if that is larger: a FITC fit
/// may leave the noise to its diagonal correction and a fitted noise of
/// 1e-4 of the prior, which would cap a real increase.
///
/// ```
/// assert!(sgp_runtime::NOISE_CEILING > 1.0);
/// ```
pub const NOISE_CEILING: f32 = 100.0;

impl Default for UpdateSettings {
    fn default() -> Self {
        UpdateSettings {
            forgetting: 1.0,
            gate: f32::INFINITY,
            gate_run: 0,
            noise_forgetting: 1.0,
        }
    }
}

impl UpdateSettings {
    /// A model's settings before any are set: all zero bits, out of range.
    pub(crate) const UNSET: UpdateSettings = UpdateSettings {
        forgetting: 0.0,
        gate: 0.0,
        gate_run: 0,
        noise_forgetting: 0.0,
    };

    /// Accepts settings in range: `0 < forgetting <= 1`, `gate > 0`, `0 <
    /// noise_forgetting <= 1`.
    pub(crate) fn check(self) -> Result<Self, Error> {
        let forgetting = self.forgetting > 0.0 && self.forgetting <= 1.0;
        let noise = self.noise_forgetting > 0.0 && self.noise_forgetting <= 1.0;
        if forgetting && noise && self.gate > 0.0 {
            Ok(self)
        } else {
            Err(Error::InvalidSetting)
        }
    }
}

/// Settings as an update receives them: the model's own were checked when
/// set, a call's are checked by the update.
#[derive(Clone, Copy)]
enum Settings {
    Checked(UpdateSettings),
    Unchecked(UpdateSettings),
}
use Settings::{Checked, Unchecked};

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

/// How a [`Model`] learns: [`Observation`] with a variant for "not at
/// all" that is zero, as every field of an empty model must be (or the
/// compiler keeps a flash image of it to copy: `Option<Observation>`'s
/// `None` is 3), and for each observation whether the factors hold the
/// covariance form (format version 9) or the whitened one (one byte for
/// both, in the names' padding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Learns {
    Not = 0,
    Fitc,
    Vfe,
    Probit,
    FitcCovariance,
    VfeCovariance,
    ProbitCovariance,
}

impl Learns {
    pub(super) fn of(observation: Option<Observation>, covariance: bool) -> Self {
        match (observation, covariance) {
            (None, _) => Learns::Not,
            (Some(Observation::Fitc), false) => Learns::Fitc,
            (Some(Observation::Vfe), false) => Learns::Vfe,
            (Some(Observation::Probit), false) => Learns::Probit,
            (Some(Observation::Fitc), true) => Learns::FitcCovariance,
            (Some(Observation::Vfe), true) => Learns::VfeCovariance,
            (Some(Observation::Probit), true) => Learns::ProbitCovariance,
        }
    }

    fn observation(self) -> Option<Observation> {
        match self {
            Learns::Not => None,
            Learns::Fitc | Learns::FitcCovariance => Some(Observation::Fitc),
            Learns::Vfe | Learns::VfeCovariance => Some(Observation::Vfe),
            Learns::Probit | Learns::ProbitCovariance => Some(Observation::Probit),
        }
    }

    /// Whether the factors hold the covariance form.
    pub(super) fn covariance(self) -> bool {
        matches!(
            self,
            Learns::FitcCovariance | Learns::VfeCovariance | Learns::ProbitCovariance
        )
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

/// What an observation does to one output, decided before anything
/// changes: the mean's gain on `S z`, the weight of `(S z)(S z)^T` in
/// `I - S`, and what the output predicted.
#[derive(Clone, Copy)]
struct Plan {
    gain: f32,
    weight: f32,
    /// The observation's own variance, `1 / weight - z^T S z` (`> 0`):
    /// where the covariance form's sweep starts.
    row: f32,
    innovation: Innovation,
}

impl Plan {
    const EMPTY: Plan = Plan {
        gain: 0.0,
        weight: 0.0,
        row: 1.0,
        innovation: Innovation {
            prediction: Prediction {
                mean: 0.0,
                variance: 0.0,
            },
            residual: 0.0,
        },
    };
}

/// Larger mean gains are refused as an invalid target: a finite target
/// that far out would overflow the means.
const GAIN_LIMIT: f32 = 1e30;

/// What the posterior, forgotten by `lam`, says at one input: `|z|^2`,
/// `z^T S z` (clamped to `[0, |z|^2]`, where it keeps the variance
/// between 0 and the prior) and the latent mean `z . a` before
/// forgetting.
#[derive(Clone, Copy)]
struct Seen {
    n: f32,
    zsz: f32,
    za: f32,
}

impl Seen {
    /// At basis values `k`, from `output`'s factors and mean, with `S z`
    /// into the first of each pair of `sz`: one pass with the solve, a
    /// second for `G^T`. `S` forgotten is `I - U^T (lam D) U`, so with `t
    /// = U z`, `e = lam D t`: `S z = z - e + G^T e` and `z^T S z` is
    /// [`Model::predict`]'s sum plus `(1 - lam) t^T D t` (the sum itself,
    /// bit for bit, without forgetting).
    fn of<const M: usize>(
        output: &Output<M>,
        k: &[f32; M],
        m: usize,
        lam: f32,
        sz: &mut [[f32; 2]; M],
    ) -> Self {
        let packed = output.factors.as_flattened();
        let (n, exact, za) = whitened::solve_and_multiply(
            packed,
            &output.diagonal1,
            &output.inv_diagonal2,
            output.mean(),
            k,
            m,
            sz,
        );
        // (z, u = G z) becomes (z - e, e) just before its row is used.
        let mut tdt = 0.0f32;
        whitened::add_transposed(packed, sz, &output.inv_diagonal2, m, |[z, u], d| {
            let t = z - u;
            let dt = (1.0 - d) * t;
            tdt += dt * t;
            let e = lam * dt;
            [z - e, e]
        });
        let zsz = exact + (1.0 - lam) * tdt;
        Seen {
            n,
            zsz: within(zsz, n),
            za,
        }
    }
}

impl Seen {
    /// [`Seen::of`] for the covariance form (nothing forgotten: it forgets
    /// after the update): one pass, the pairs `(z, (W z)_i)` into `zu`.
    fn of_covariance<const M: usize>(
        output: &Output<M>,
        k: &[f32; M],
        m: usize,
        zu: &mut [[f32; 2]; M],
    ) -> Self {
        let (n, zsz, za) = whitened::solve_and_multiply_with(
            output.factors.as_flattened(),
            &output.diagonal1,
            &output.inv_diagonal2,
            output.mean(),
            k,
            m,
            zu,
            whitened::covariance_term,
        );
        Seen {
            n,
            zsz: within(zsz, n),
            za,
        }
    }
}

/// Applies `plan` to an output of the covariance form with factors of its
/// own, from the pairs `zu` of [`Seen::of_covariance`]: Bierman's sweep
/// (`S z / alpha` into `tau`), then the means `a <- a + S z gain`; returns
/// the sweep's `alpha` (`S z = alpha tau`).
fn commit_covariance<const M: usize>(
    output: &mut Output<M>,
    zu: &[[f32; 2]; M],
    tau: &mut [f32; M],
    plan: &Plan,
    m: usize,
) -> f32 {
    let alpha = sweep_covariance(output, zu, tau, plan, m);
    let gain = alpha * plan.gain;
    for (a, &t) in output.mean_mut().iter_mut().zip(tau.iter()).take(m) {
        *a += t * gain;
    }
    alpha
}

/// The first half of [`commit_covariance`]: Bierman's sweep alone.
fn sweep_covariance<const M: usize>(
    output: &mut Output<M>,
    zu: &[[f32; 2]; M],
    tau: &mut [f32; M],
    plan: &Plan,
    m: usize,
) -> f32 {
    let Some((packed, _)) = output.factors.split_at_mut_checked(M.saturating_sub(1)) else {
        return 0.0;
    };
    whitened::covariance_update(
        packed.as_flattened_mut(),
        &mut output.inv_diagonal2,
        zu,
        tau,
        plan.row,
        m,
    )
}

/// The covariance form forgets coordinate `k` at the updates `t` with `k
/// = t` modulo this (the model keeps `t` modulo it in a byte): each
/// coordinate once in `min(m, FORGET_CYCLE)` updates.
const FORGET_CYCLE: usize = 256;

/// What the covariance form forgets a coordinate by at each update, for
/// forgetting factor `lam` and `m` basis functions: `lam^min(m, CYCLE)`.
pub(super) fn forget_power(lam: f32, m: usize) -> f32 {
    power(lam, m.clamp(1, FORGET_CYCLE))
}

/// `lam^m` by squaring.
fn power(lam: f32, m: usize) -> f32 {
    let (mut result, mut base, mut e) = (1.0f32, lam, m);
    while e > 0 {
        if e & 1 == 1 {
            result *= base;
        }
        base *= base;
        e >>= 1;
    }
    result
}

/// `zsz` clamped to `[0, n]` (`0 <= S <= I`: the variance between 0 and
/// the prior whatever f32 did); NaN to 0.
fn within(zsz: f32, n: f32) -> f32 {
    if zsz > 0.0 {
        if zsz < n {
            zsz
        } else {
            n
        }
    } else {
        0.0
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

/// Applies `plan` to an output with factors of its own, where the
/// forgotten posterior gives `sz = S z`: the means `a <- sqrt(lam) a + S z
/// gain` (`root = sqrt(lam)`) and `I - S <- lam (I - S) + weight (S z)(S
/// z)^T`.
fn commit<const M: usize>(
    output: &mut Output<M>,
    sz: &mut [[f32; 2]; M],
    plan: &Plan,
    root: f32,
    lam: f32,
    m: usize,
) {
    for (a, &[s, _]) in output.mean_mut().iter_mut().zip(sz.iter()).take(m) {
        *a = root * *a + s * plan.gain;
    }
    let Some((packed, _)) = output.factors.split_at_mut_checked(M.saturating_sub(1)) else {
        return;
    };
    whitened::update::<M, whitened::Step, [f32; 2]>(
        packed.as_flattened_mut(),
        &mut output.inv_diagonal2,
        sz,
        plan.weight,
        lam,
        m,
    );
}

/// The plan of an output for target `target` where the forgotten
/// posterior gives `|z|^2 = n`, `z^T S z = zsz` and the latent mean
/// `latent_mean`; refuses an invalid target or an outlier.
fn plan_of<const M: usize>(
    observation: Observation,
    output: &Output<M>,
    n: f32,
    zsz: f32,
    latent_mean: f32,
    target: f32,
    settings: UpdateSettings,
) -> Result<Plan, Error> {
    if !target.is_finite() {
        return Err(Error::InvalidTarget);
    }
    let residual_variance = output.prior - n;
    let latent_variance = residual_variance + zsz;
    let latent_variance = if latent_variance > 0.0 {
        latent_variance
    } else {
        0.0
    };
    let plan = match observation {
        Observation::Fitc | Observation::Vfe => {
            let row = if observation == Observation::Fitc && residual_variance > 0.0 {
                residual_variance + output.noise
            } else {
                output.noise
            };
            let d = row + zsz;
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
            Plan {
                gain: residual / d,
                weight: 1.0 / d,
                row,
                innovation: Innovation {
                    prediction,
                    residual: target - prediction.mean,
                },
            }
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
            let weight = ratio * (t + ratio) / c;
            // weight < 1 / c <= 1 / (1 + z^T S z): row > 1 but for rounding.
            let row = 1.0 / weight - zsz;
            Plan {
                gain: sign * ratio / root,
                weight,
                row: if row > 1.0 { row } else { 1.0 },
                innovation: Innovation {
                    prediction: Prediction {
                        mean: latent_mean + output.bias,
                        variance: latent_variance,
                    },
                    residual: target - probability,
                },
            }
        }
    };
    if plan.gain.abs() < GAIN_LIMIT && plan.weight.is_finite() {
        Ok(plan)
    } else {
        Err(Error::InvalidTarget)
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
        self.learning != Learns::Not
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
        self.learning.observation()
    }

    /// The settings [`Model::update`] uses (the default after a load:
    /// no forgetting, no gate).
    ///
    /// ```
    /// let model = sgp_runtime::Model::<4, 1, 1>::new();
    /// assert_eq!(model.update_settings(), Default::default());
    /// ```
    pub fn update_settings(&self) -> UpdateSettings {
        // Set settings have `forgetting > 0` (`check`); unset ones are
        // all zero: one comparison, not five.
        if self.settings.forgetting > 0.0 {
            self.settings
        } else {
            UpdateSettings::default()
        }
    }

    /// Sets the settings [`Model::update`] and [`Model::update_all`] use
    /// from now on (a load keeps them).
    ///
    /// ```
    /// use sgp_runtime::{Error, Model, UpdateSettings};
    /// let mut model = Model::<4, 1, 1>::new();
    /// model.set_update_settings(UpdateSettings { forgetting: 0.999, gate: 5.0, gate_run: 3, noise_forgetting: 0.99 })?;
    /// assert_eq!(
    ///     model.set_update_settings(UpdateSettings { forgetting: 1.5, ..Default::default() }),
    ///     Err(Error::InvalidSetting)
    /// );
    /// # Ok::<(), Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidSetting`] for a forgetting factor (or a noise
    /// forgetting factor) outside `(0, 1]` or a gate that is not `> 0` (the
    /// settings are then unchanged).
    pub fn set_update_settings(&mut self, settings: UpdateSettings) -> Result<(), Error> {
        self.settings = settings.check()?;
        self.forget_power = forget_power(self.settings.forgetting, self.m);
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
    /// other than 0 or 1); [`Error::Outlier`] beyond the gate (the row
    /// counts towards [`UpdateSettings::gate_run`]; nothing else changes).
    pub fn update(&mut self, x: &[f32], y: f32) -> Result<Innovation, Error> {
        // Checked when set (the default is in range).
        self.update_one(x, y, Checked(self.update_settings()))
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
        self.update_one(x, y, Unchecked(settings))
    }

    /// [`Model::update_with`] for settings that may be checked already.
    fn update_one(&mut self, x: &[f32], y: f32, settings: Settings) -> Result<Innovation, Error> {
        let count = self.output_count();
        if self.learning != Learns::Not && count != 1 {
            return Err(Error::TargetLength {
                expected: count,
                found: 1,
            });
        }
        let all = self.update_all_settled(x, core::slice::from_ref(&y), settings)?;
        all.first().copied().ok_or(Error::NotUpdatable)
    }

    /// Conditions every output on one observation: `y[p]` is output `p`'s
    /// target at `x` (raw units), with the model's [`UpdateSettings`].
    /// Outputs that share the first output's variance share its update of
    /// `S` (one rank-one update; per further output the solve of its mean
    /// `z . a` and an `O(M)` update of `a`); outputs with factors of their
    /// own are each updated as a model of their own.
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
        self.update_all_with(x, y, self.update_settings())
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
        self.update_all_settled(x, y, Unchecked(settings))
    }

    /// [`Model::update_all_with`] for settings that may be checked already.
    fn update_all_settled(
        &mut self,
        x: &[f32],
        y: &[f32],
        settings: Settings,
    ) -> Result<super::Outputs<Innovation, P>, Error> {
        let observation = self.learning.observation().ok_or(Error::NotUpdatable)?;
        let settings = match settings {
            Checked(settings) => settings,
            Unchecked(settings) => settings.check()?,
        };
        // The last row of a long enough run beyond the gate opens it.
        let run = self.gated.saturating_add(1);
        let open = settings.gate_run > 0 && run >= settings.gate_run;
        let gate = if open { f32::INFINITY } else { settings.gate };
        match self.learn(observation, x, y, UpdateSettings { gate, ..settings }) {
            Ok(seen) => {
                let limit = settings.gate * settings.gate;
                let beyond = observation != Observation::Probit
                    && seen
                        .iter()
                        .any(|i| i.residual * i.residual > limit * i.prediction.variance);
                self.gated = if beyond { run } else { 0 };
                if observation != Observation::Probit && settings.noise_forgetting < 1.0 {
                    self.follow_noise(&seen, settings.noise_forgetting);
                }
                Ok(seen)
            }
            Err(Error::Outlier) => {
                self.gated = run;
                Err(Error::Outlier)
            }
            Err(e) => Err(e),
        }
    }

    /// Moves each output's noise variance towards what the row `seen`
    /// showed ([`UpdateSettings::noise_forgetting`], `rho < 1`): `noise +=
    /// (1 - rho) (e^2 - v)` in standardised units, bounded by the fitted
    /// noise's multiples (the ceiling at least the prior); an output that shares the first's variance keeps
    /// the first's ratio to its fitted noise, as the shared `S` assumes.
    fn follow_noise(&mut self, seen: &super::Outputs<Innovation, P>, rho: f32) {
        let count = self.output_count();
        let mut ratio = 1.0f32;
        let outputs = self.outputs.iter_mut().zip(seen.iter()).take(count);
        for (p, (output, innovation)) in outputs.enumerate() {
            let fitted = output.fitted_noise;
            let noise = if output.shared_variance.is_some() {
                fitted * ratio
            } else {
                let scale = output.y_scale * output.y_scale;
                let (e, v) = (innovation.residual, innovation.prediction.variance);
                output.noise + (1.0 - rho) * (e * e - v) / scale
            };
            let high = NOISE_CEILING * fitted;
            let (low, high) = (NOISE_FLOOR * fitted, high.max(output.prior));
            // Also maps NaN to the floor.
            output.noise = if noise > low {
                if noise < high {
                    noise
                } else {
                    high
                }
            } else {
                low
            };
            if p == 0 {
                ratio = output.noise / fitted;
            }
        }
    }

    /// [`Model::update_all_with`] with the settings checked and the gate
    /// as the run left it.
    fn learn(
        &mut self,
        observation: Observation,
        x: &[f32],
        y: &[f32],
        settings: UpdateSettings,
    ) -> Result<super::Outputs<Innovation, P>, Error> {
        let count = self.output_count();
        if y.len() != count {
            return Err(Error::TargetLength {
                expected: count,
                found: y.len(),
            });
        }
        let z = self.features(x)?;
        let mut k = [0.0f32; M];
        // Beta is zero in an updatable model (the mean is z . a).
        self.kernel(&z, &mut k)?;
        if self.learning.covariance() {
            return self.update_covariance(observation, &mut k, y, settings);
        }
        let lam = settings.forgetting;
        let (root, _) = whitened::root_and_reciprocal(lam);
        let m = self.m;
        let first = self.outputs.first().ok_or(Error::NotUpdatable)?;
        let mut sz = [[0.0f32; 2]; M];
        let seen = Seen::of(first, &k, m, lam, &mut sz);
        // First every output's plan, checked; then every change.
        let mut plans = [Plan::EMPTY; P];
        for (p, (plan, &target)) in plans.iter_mut().zip(y).enumerate() {
            let output = self.outputs.get(p).ok_or(Error::NotUpdatable)?;
            let seen = match output.shared_variance {
                // The first output's S and L1, scaled: z = sqrt(ratio) z_0.
                Some(ratio) => {
                    let mut scratch = [[0.0f32; 2]; M];
                    let (_, _, za) = whitened::solve_and_multiply(
                        first.factors.as_flattened(),
                        &first.diagonal1,
                        &first.inv_diagonal2,
                        output.mean(),
                        &k,
                        m,
                        &mut scratch,
                    );
                    Seen {
                        n: ratio * seen.n,
                        zsz: ratio * seen.zsz,
                        za: whitened::root_and_reciprocal(ratio).0 * za,
                    }
                }
                None if p == 0 => seen,
                None => Seen::of(output, &k, m, lam, &mut [[0.0f32; 2]; M]),
            };
            let latent_mean = root * seen.za;
            if !latent_mean.is_finite() {
                return Err(Error::InputOverflow);
            }
            *plan = plan_of(
                observation,
                output,
                seen.n,
                seen.zsz,
                latent_mean,
                target,
                settings,
            )?;
        }
        let (first, further) = self.outputs.split_first_mut().ok_or(Error::NotUpdatable)?;
        let mut innovations = super::Outputs::filled(Plan::EMPTY.innovation, count);
        for (slot, plan) in innovations.values.iter_mut().zip(&plans) {
            *slot = plan.innovation;
        }
        // The further outputs first: those that share the first's S read
        // its S z, which the first's own update then consumes.
        let mut plans = plans.iter();
        let plan = plans.next().copied().unwrap_or(Plan::EMPTY);
        for (output, plan) in further.iter_mut().zip(plans).take(count.saturating_sub(1)) {
            match output.shared_variance {
                Some(ratio) => {
                    let (scale, _) = whitened::root_and_reciprocal(ratio);
                    let mean = output.mean_mut();
                    for (a, &[s, _]) in mean.iter_mut().zip(&sz).take(m) {
                        *a = root * *a + scale * s * plan.gain;
                    }
                }
                None => {
                    let mut own = [[0.0f32; 2]; M];
                    Seen::of(output, &k, m, lam, &mut own);
                    commit(output, &mut own, plan, root, lam, m);
                }
            }
        }
        commit(first, &mut sz, &plan, root, lam, m);
        Ok(innovations)
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
        if self.learning == Learns::Not {
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
        for (o, &b) in out.iter_mut().zip(source) {
            *o = b;
        }
        let m = self.m;
        for output in outputs {
            let spans = output.spans;
            // An output that has not learned since `source` keeps its
            // beta, bit for bit (solving again would round differently).
            let kept = same_floats(source, spans.mean, output.mean().iter().take(m).copied())
                && (spans.l2 == 0 || same_floats(source, spans.l2, output.packed_second(m)));
            if !kept {
                let beta = self.mean_weights(output);
                write_floats(out, spans.beta, beta.iter().take(m).copied())?;
            }
            write_floats(out, spans.mean, output.mean().iter().take(m).copied())?;
            if spans.l2 != 0 {
                write_floats(out, spans.l2, output.packed_second(m))?;
            }
        }
        let crc_at = len.saturating_sub(TRAILER_LEN);
        let crc = CRC.checksum(out.get(..crc_at).unwrap_or(&[]));
        let trailer = out
            .get_mut(crc_at..)
            .and_then(|t| t.first_chunk_mut::<TRAILER_LEN>())
            .ok_or(Error::ForeignBlob)?;
        *trailer = crc.to_le_bytes();
        Ok(len)
    }
}

impl<const M: usize, const G: usize, const D: usize, const P: usize> Model<M, G, D, P> {
    /// [`Model::update_all_with`] for the covariance form, at basis values
    /// `k` (one target per output, settings checked): every output's plan
    /// from the posterior as it is, then Bierman's update of each `S` and
    /// the means, then forgetting one whitened coordinate by `lam^m` (the
    /// means kept: information is forgotten, not what was learned; `m`
    /// such steps are `S <- lam^m S + (1 - lam^m) I`). `k`'s storage is
    /// then the sweep's scratch.
    fn update_covariance(
        &mut self,
        observation: Observation,
        k: &mut [f32; M],
        y: &[f32],
        settings: UpdateSettings,
    ) -> Result<super::Outputs<Innovation, P>, Error> {
        let m = self.m;
        let count = self.output_count();
        let first = self.outputs.first().ok_or(Error::NotUpdatable)?;
        let mut zu = [[0.0f32; 2]; M];
        let seen = Seen::of_covariance(first, k, m, &mut zu);
        let mut plans = [Plan::EMPTY; P];
        for (p, (plan, &target)) in plans.iter_mut().zip(y).enumerate() {
            let output = self.outputs.get(p).ok_or(Error::NotUpdatable)?;
            let seen = match output.shared_variance {
                // The first output's S and L1, scaled: z = sqrt(ratio) z_0.
                Some(ratio) => {
                    let (_, _, za) = whitened::solve_and_multiply(
                        first.factors.as_flattened(),
                        &first.diagonal1,
                        &first.inv_diagonal2,
                        output.mean(),
                        k,
                        m,
                        &mut [[0.0f32; 2]; M],
                    );
                    Seen {
                        n: ratio * seen.n,
                        zsz: ratio * seen.zsz,
                        za: whitened::root_and_reciprocal(ratio).0 * za,
                    }
                }
                None if p == 0 => seen,
                None => Seen::of_covariance(output, k, m, &mut [[0.0f32; 2]; M]),
            };
            if !seen.za.is_finite() {
                return Err(Error::InputOverflow);
            }
            *plan = plan_of(
                observation,
                output,
                seen.n,
                seen.zsz,
                seen.za,
                target,
                settings,
            )?;
        }
        let mut innovations = super::Outputs::filled(Plan::EMPTY.innovation, count);
        for (slot, plan) in innovations.values.iter_mut().zip(&plans) {
            *slot = plan.innovation;
        }
        let (first, further) = self.outputs.split_first_mut().ok_or(Error::NotUpdatable)?;
        let mut plans = plans.iter();
        let plan = plans.next().copied().unwrap_or(Plan::EMPTY);
        let rest = count.saturating_sub(1);
        // The outputs with factors of their own first (each its own
        // model: the order changes no bit), as they read `k`, whose storage
        // the first output's sweep then writes before it reads as `tau`.
        let own_factors = further.iter_mut().zip(plans.clone()).take(rest);
        for (output, plan) in own_factors.filter(|(o, _)| o.shared_variance.is_none()) {
            let mut own = [[0.0f32; 2]; M];
            Seen::of_covariance(output, k, m, &mut own);
            commit_covariance(output, &own, &mut [0.0f32; M], plan, m);
        }
        let tau = k;
        let alpha = sweep_covariance(first, &zu, tau, &plan, m);
        for (output, plan) in further.iter_mut().zip(plans).take(rest) {
            if let Some(ratio) = output.shared_variance {
                let (scale, _) = whitened::root_and_reciprocal(ratio);
                let gain = scale * alpha * plan.gain;
                for (a, &t) in output.mean_mut().iter_mut().zip(tau.iter()).take(m) {
                    *a += t * gain;
                }
            }
        }
        // One coordinate in every `CYCLE` forgets per update (one
        // coordinate in all but the host's largest models).
        let cycle = m.clamp(1, FORGET_CYCLE);
        let mu = if settings.forgetting == self.settings.forgetting {
            self.forget_power
        } else {
            forget_power(settings.forgetting, m)
        };
        // The first output's means last, as the last to read `tau`: when
        // it forgets, the same pass clears `tau` for the forgetting's
        // sweep (a store a row in place of a cleared vector).
        let gain = alpha * plan.gain;
        let means = first.mean_mut().iter_mut().zip(tau.iter_mut()).take(m);
        if mu < 1.0 {
            for (a, t) in means {
                *a += *t * gain;
                *t = 0.0;
            }
        } else {
            for (a, t) in means {
                *a += *t * gain;
            }
        }
        if mu < 1.0 {
            let next = usize::from(self.forget_next);
            let mut clear = false;
            let owners = self.outputs.iter_mut().take(count);
            for output in owners.filter(|o| o.shared_variance.is_none()) {
                // The whole storage, the means' row too (untouched): the
                // scaling reads windows that may reach past the factor.
                let packed = output.factors.as_flattened_mut();
                for k in (next..m).step_by(FORGET_CYCLE) {
                    // A sweep consumes its vector: a further one starts
                    // from a cleared one.
                    if clear {
                        tau.fill(0.0);
                    }
                    let d = &mut output.inv_diagonal2;
                    whitened::forget_coordinate(packed, d, k, mu, m, tau);
                    clear = true;
                }
            }
            let next = if next + 1 < cycle { next + 1 } else { 0 };
            self.forget_next = u8::try_from(next).unwrap_or(0);
        }
        Ok(innovations)
    }

    /// The mean weights `beta = L1^-T a` of `output` of an updatable model
    /// (scaled by `sqrt(ratio)` when it shares the first output's
    /// factors): what its blob stores, and what the mean's gradient needs.
    pub(super) fn mean_weights(&self, output: &Output<M>) -> [f32; M] {
        let (source, ratio) = self.variance_source(output);
        let mut beta = *output.mean();
        whitened::back_substitute_first(
            source.factors.as_flattened(),
            &source.diagonal1,
            &mut beta,
            self.m,
        );
        if output.shared_variance.is_some() {
            let (scale, _) = whitened::root_and_reciprocal(ratio);
            for b in beta.iter_mut() {
                *b *= scale;
            }
        }
        beta
    }
}

/// Whether `blob` holds `values` as little-endian f32s from byte `at`.
fn same_floats(blob: &[u8], at: u32, mut values: impl Iterator<Item = f32>) -> bool {
    let Some(tail) = blob.get(at as usize..) else {
        return false;
    };
    let mut slots = tail.as_chunks::<4>().0.iter();
    values.all(|v| slots.next() == Some(&v.to_le_bytes()))
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
