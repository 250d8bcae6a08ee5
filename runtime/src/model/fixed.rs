//! The squared-exponential model in integers, for cores without an FPU
//! (Cortex-M0/M0+/M3): [`FixedModel`].
//!
//! Formats (fraction bits; every bound below holds for every input, so no
//! sum can overflow, whatever the input):
//! - features and centres: `i32` Q22 in the exp's units (`k = 2^-e`,
//!   `e = sum_g (z_g - c_g)^2`), features clamped to `±2^8` units
//!   (about 300 length scales; Q16 was 1e-4 relative in `k` through the
//!   features' rounding: a low-noise model's mean, a sum of large terms,
//!   missed 1% of its sd);
//! - a difference: clamped to `±8` units (`e >= 64` gives 0 anyway) and
//!   squared into a `u64` Q44;
//! - `k = 2^-f 2^-n`: `2^-f` a degree-5 polynomial in Q31 multiplies whose
//!   high words are taken (`i32 x i32 -> i64`), `k` in Q30 (`<= 2^30`);
//! - mean weights `i32` with per-model fraction bits chosen so that
//!   `sum |b_i| < 2^32` (the mean's `i64` sum stays below `2^62`);
//! - the variance factor `C` (amplitude and `y_scale` folded in) `i32`,
//!   each row's `sum |C_ji| < 2^32`, its product `u_j` in `i64` brought to
//!   an `i32` whose squares sum below `2^63`.
//!
//! Built at load time from a loaded f32 [`Model`] (the product form of the
//! variance, shared widths, no projection, regression); the training range
//! picks nothing but a check: every input inside it maps to an unclamped
//! feature. Outside it, a feature clamps at `±2^8` units, beyond every
//! centre: the prediction goes to the prior's (mean `y_mean`, variance
//! prior plus noise), never to an overflow.

use super::Model;
use crate::error::Error;
use crate::format::{Kernel, Link, Shape, VarianceForm};
use crate::math;
use crate::model::Prediction;

/// Fraction bits of features, centres and their differences.
const FEATURE_BITS: u32 = 22;
/// Fraction bits of `e`, the squared differences' sum.
const E_BITS: u32 = 2 * FEATURE_BITS;
/// Largest feature magnitude (Q22): `2^8` units.
const FEATURE_LIMIT: i64 = 1 << 30;
/// Largest centre magnitude (Q22): 16 units inside the features' clamp,
/// so a clamped feature is at `e >= 256` from every centre.
const CENTRE_LIMIT: f64 = (FEATURE_LIMIT - (16 << FEATURE_BITS)) as f64;
/// A difference beyond 8 units (`e >= 64`, `k < 2^-64`) is clamped there.
const DIFF_LIMIT: i32 = (8 << FEATURE_BITS) - 1;
/// Largest `|x r - mu r|` before the clamp (Q22): the products stay far
/// inside `i64`.
const PRODUCT_LIMIT: i64 = 1 << 40;
/// What a sum of magnitudes scaled to `i32` stays below: `2^31` less a
/// margin for the rounding of up to `2^12` terms.
const I32_SUM_LIMIT: f64 = 2_147_483_648.0 - 4096.0;
/// Fraction bits of `k`.
const K_BITS: u32 = 30;

/// `2^-f = 1 + f (c1 + f (c2 + f (c3 + f (c4 + f c5))))` on `[0, 1)`,
/// `c_j` in Q(30 + j) so that each Horner step takes the high word of a
/// Q31 `f` times the previous sum: fitted for the least relative error,
/// 8.7e-8 in this integer arithmetic, exactly 1 at `f = 0`.
const EXP2_POLY: [i32; 5] = [
    -1_488_514_806,
    1_031_565_844,
    -475_000_613,
    158_154_239,
    -32_466_512,
];

/// Why a model has no fixed-point form.
///
/// ```
/// let e = sgp_runtime::FixedError::Unsupported { what: "a classifier" };
/// assert_eq!(e.to_string(), "no fixed-point form: a classifier");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FixedError {
    /// The model is not one the fixed-point form covers: the squared
    /// exponential with shared widths, no projection, regression, the
    /// product form of the variance, one output with its own factor.
    Unsupported {
        /// What it has instead.
        what: &'static str,
    },
    /// A number is too large for the formats: a feature of the training
    /// range or a centre beyond `2^8` units (about 300 length scales), or an input offset
    /// beyond `2^23`.
    OutOfRange {
        /// Which.
        what: &'static str,
    },
}

impl core::fmt::Display for FixedError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            FixedError::Unsupported { what } => write!(f, "no fixed-point form: {what}"),
            FixedError::OutOfRange { what } => {
                write!(f, "no fixed-point form: {what} too large for its format")
            }
        }
    }
}

/// Whether a model of this kernel, shape, variance form and output count
/// has a fixed-point form ([`FixedModel::from_model`] also needs its
/// numbers within the formats), for tools that hold a blob's description
/// rather than a `Model`.
///
/// ```
/// use sgp_runtime::{fixed_point_supports, FixedError, Kernel, VarianceForm};
/// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
/// # let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
/// let shape = model.shape();
/// assert!(matches!(
///     fixed_point_supports(Kernel::Matern32, shape, VarianceForm::Product, 1),
///     Err(FixedError::Unsupported { what: "a Matérn kernel" })
/// ));
/// # Ok::<(), sgp_runtime::Error>(())
/// ```
///
/// # Errors
/// [`FixedError::Unsupported`], saying what the model has instead.
pub fn supports(
    kernel: Kernel,
    shape: &Shape,
    variance: VarianceForm,
    outputs: usize,
) -> Result<(), FixedError> {
    let unsupported = |what| Err(FixedError::Unsupported { what });
    if kernel != Kernel::SquaredExponential {
        return unsupported("a Matérn kernel");
    }
    if shape.per_basis || shape.projected {
        return unsupported("per-basis widths or a projection");
    }
    if shape.link != Link::Identity {
        return unsupported("a classifier");
    }
    if variance != VarianceForm::Product {
        return unsupported("the solves or whitened form of the variance");
    }
    if outputs != 1 {
        return unsupported("no output, or several");
    }
    Ok(())
}

/// Bytes of RAM a `FixedModel<M, G>` occupies on a 32-bit target (the
/// f32 [`Model`] it is built from is needed only while it is built), as
/// [`crate::ram_bytes`] for the f32 model: exactly `size_of` there,
/// checked at compile time.
///
/// ```
/// use sgp_runtime::fixed_ram_bytes;
/// // Mostly the M x M factor, as the f32 model's.
/// assert_eq!(fixed_ram_bytes(32, 4), 4848);
/// ```
pub const fn ram_bytes(m: usize, g: usize) -> usize {
    // Centres, weights and factor (i32), two i32 scale words and an i64
    // offset per input, three i64 and four 32-bit words of scaling, two
    // sizes; padded to the i64 alignment.
    (4 * m * (m + g + 1) + 16 * g + 48).next_multiple_of(8)
}

#[cfg(target_pointer_width = "32")]
const _: () = {
    use core::mem::size_of;
    assert!(size_of::<FixedModel<1, 1>>() == ram_bytes(1, 1));
    assert!(size_of::<FixedModel<7, 3>>() == ram_bytes(7, 3));
    assert!(size_of::<FixedModel<32, 4>>() == ram_bytes(32, 4));
    assert!(size_of::<FixedModel<33, 16>>() == ram_bytes(33, 16));
};

/// A squared-exponential regression model in integer arithmetic: `M`
/// basis functions over `G` inputs, predicting with no floating point but
/// the input's bits and the two numbers returned. Constant time, no
/// allocation, no panic.
///
/// ```
/// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
/// use sgp_runtime::{FixedModel, Model};
/// let model = Model::<16, 2, 2>::from_bytes(blob)?;
/// // A product-form squared-exponential regression model converts;
/// // this one keeps the solves form, and stays in f32.
/// if let Ok(fixed) = FixedModel::<16, 2>::from_model(&model) {
///     let p = fixed.predict(&[0.5, -1.0])?;
///     assert!(p.variance >= 0.0);
/// }
/// # Ok::<(), sgp_runtime::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct FixedModel<const M: usize, const G: usize> {
    /// Centres, Q22 units.
    centres: [[i32; G]; M],
    /// Mean weights `y_scale a beta_i`, Q`mean_bits`.
    beta: [i32; M],
    /// `y_scale a C`, row `j` holding `C[j][0..=j]`, Q`factor_bits`.
    factor: [[i32; M]; M],
    /// `r_g = R_g 2^-shift_g`: the standardisation's scale into Q22 units,
    /// `R_g` in `[2^30, 2^31)` (0 for a zero scale).
    scale_mantissa: [u32; G],
    /// `150 + shift_g`: the right shift of an f32 mantissa times `R_g`.
    scale_shift: [i32; G],
    /// `mu_g r_g`, Q22 units.
    offset: [i64; G],
    /// Right shift of each row's `i64` product to its `i32` `u_j`, and
    /// half its unit (0 for no shift), to round.
    u_shift: u32,
    u_half: i64,
    /// `y_scale^2 prior` and the noise in raw units, Q`2 u_bits`.
    prior: i64,
    noise: i64,
    /// `2^-(mean_bits + 30)` and `2^-(2 u_bits)`.
    mean_unit: f32,
    variance_unit: f32,
    y_mean: f32,
    m: usize,
    g: usize,
}

impl<const M: usize, const G: usize> FixedModel<M, G> {
    /// The fixed-point form of `model`, its scaling chosen for its numbers
    /// (f64 arithmetic, once).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// use sgp_runtime::{FixedError, FixedModel, Model};
    /// // The documentation's model keeps the solves form of the variance:
    /// let model = Model::<16, 2, 2>::from_bytes(blob)?;
    /// assert!(matches!(FixedModel::<16, 2>::from_model(&model), Err(FixedError::Unsupported { .. })));
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`FixedError::Unsupported`] for another kind of model,
    /// [`FixedError::OutOfRange`] for numbers the formats cannot hold.
    pub fn from_model<const D: usize, const P: usize>(
        model: &Model<M, G, D, P>,
    ) -> Result<Self, FixedError> {
        let unsupported = |what| Err(FixedError::Unsupported { what });
        supports(model.kernel, &model.shape, model.variance, model.p.into())?;
        let output = match model.outputs.first() {
            Some(output) if output.shared_variance.is_none() => output,
            _ => return unsupported("no output, or several"),
        };
        let (m, g) = (model.m, model.g);
        if m == 0 || g != model.input_dim() {
            return unsupported("an empty model");
        }
        let out_of_range = |what| Err(FixedError::OutOfRange { what });
        // Q22 units per stored unit: the stored features are in sqrt of the
        // exp's fixed-point units (2^25 per unit of e).
        let per_unit =
            f64::from(1u32 << FEATURE_BITS) / f64::from(1u32 << 12) / core::f64::consts::SQRT_2;
        let mut fixed = FixedModel {
            centres: [[0; G]; M],
            beta: [0; M],
            factor: [[0; M]; M],
            scale_mantissa: [0; G],
            scale_shift: [0; G],
            offset: [0; G],
            u_shift: 0,
            u_half: 0,
            prior: 0,
            noise: 0,
            mean_unit: 0.0,
            variance_unit: 0.0,
            y_mean: output.y_mean,
            m,
            g,
        };
        for (row, params) in fixed.centres.iter_mut().zip(&model.basis_params).take(m) {
            for (c, &[centre, _]) in row.iter_mut().zip(params).take(g) {
                let q = f64::from(centre) * per_unit;
                if !within(q, CENTRE_LIMIT) {
                    return out_of_range("a centre");
                }
                *c = round(q) as i32;
            }
        }
        for gi in 0..g {
            let (Some(&mu), Some(&inv)) = (model.x_mean.get(gi), model.x_inv_scale.get(gi)) else {
                return unsupported("an empty model");
            };
            let r = f64::from(inv) * per_unit;
            let (mantissa, shift) = split(r);
            let offset = f64::from(mu) * r;
            if !within(offset, (PRODUCT_LIMIT / 2) as f64) {
                return out_of_range("an input's mean");
            }
            if model.ranged {
                for bound in [model.x_min.get(gi), model.x_max.get(gi)]
                    .into_iter()
                    .flatten()
                {
                    let feature = (f64::from(*bound) - f64::from(mu)) * r;
                    if !within(feature, (FEATURE_LIMIT - 1) as f64) {
                        return out_of_range("the training range");
                    }
                }
            }
            if let (Some(a), Some(b), Some(c)) = (
                fixed.scale_mantissa.get_mut(gi),
                fixed.scale_shift.get_mut(gi),
                fixed.offset.get_mut(gi),
            ) {
                (*a, *b, *c) = (mantissa, 150 + shift, round(offset) as i64);
            }
        }
        let amplitude = f64::from(model.exp_poly[0]) / f64::from(math::EXP2_OF_NEGATIVE[0]);
        let y_scale = f64::from(output.y_scale);
        let weight = y_scale * amplitude;
        // Mean: sum |b_i| 2^bits < 2^32.
        let total: f64 = output
            .beta
            .iter()
            .take(m)
            .map(|b| (f64::from(*b) * weight).abs())
            .sum();
        let mean_bits = fraction_bits(total, I32_SUM_LIMIT, 62);
        for (q, b) in fixed.beta.iter_mut().zip(&output.beta).take(m) {
            *q = round(f64::from(*b) * weight * pow2(mean_bits)) as i32;
        }
        fixed.mean_unit = pow2(-(mean_bits + K_BITS as i32)) as f32;
        // The factor: row sums of |C_ji| 2^bits < 2^32.
        let entry = |j: usize, i: usize| -> f64 {
            let value = if i == j {
                output.diagonal1.get(j).copied()
            } else {
                output
                    .product_factor()
                    .get(math::product_index(j, i, m))
                    .copied()
            };
            f64::from(value.unwrap_or(0.0)) * weight
        };
        let row_sum = |j: usize| (0..=j).map(|i| entry(j, i).abs()).sum::<f64>();
        let largest_row = (0..m).map(row_sum).fold(0.0, f64::max);
        let factor_bits = fraction_bits(largest_row, I32_SUM_LIMIT, 62);
        for (j, row) in fixed.factor.iter_mut().enumerate().take(m) {
            for (i, q) in row.iter_mut().enumerate().take(j + 1) {
                *q = round(entry(j, i) * pow2(factor_bits)) as i32;
            }
        }
        // u_j = (row j . k) 2^-(factor_bits + 30 - u_bits): each below 2^31,
        // their squares' sum below 2^63, and prior + noise below 2^62.
        let squares: f64 = (0..m).map(|j| row_sum(j) * row_sum(j)).sum();
        let prior = y_scale * y_scale * f64::from(output.prior);
        let noise = f64::from(output.noise_variance());
        let u_bits = fraction_bits(largest_row, I32_SUM_LIMIT, 62)
            .min(fraction_bits(libm::sqrt(squares), I32_SUM_LIMIT, 62))
            .min(fraction_bits(libm::sqrt(prior + noise), I32_SUM_LIMIT, 62))
            .min(factor_bits + K_BITS as i32)
            .max(factor_bits + K_BITS as i32 - 63);
        fixed.u_shift = (factor_bits + K_BITS as i32 - u_bits) as u32;
        fixed.u_half = ((1u64 << fixed.u_shift) >> 1) as i64;
        fixed.prior = round(prior * pow2(2 * u_bits)) as i64;
        fixed.noise = round(noise * pow2(2 * u_bits)) as i64;
        fixed.variance_unit = pow2(-2 * u_bits) as f32;
        Ok(fixed)
    }

    /// Predictive mean and variance of the target in raw units, noise
    /// included, as [`Model::predict`] gives them (error bound: the guide's
    /// "Fixed point" section; `sgp inspect` states the model's).
    ///
    /// # Errors
    /// [`Error::InputLength`] if `x` does not have `G` values of the model,
    /// [`Error::NonFiniteInput`] for a NaN or infinite value.
    pub fn predict(&self, x: &[f32]) -> Result<Prediction, Error> {
        if x.len() != self.g {
            return Err(Error::InputLength {
                expected: self.g,
                found: x.len(),
            });
        }
        let mut z = [0i32; G];
        let inputs = x
            .iter()
            .zip(&self.scale_mantissa)
            .zip(&self.scale_shift)
            .zip(&self.offset);
        for (zg, (((&xg, &mantissa), &shift), &offset)) in z.iter_mut().zip(inputs) {
            *zg = feature(xg, mantissa, shift, offset).ok_or(Error::NonFiniteInput)?;
        }
        let mut k = [0i32; M];
        let mut mean = 0i64;
        for ((ki, centre), &beta) in k.iter_mut().zip(&self.centres).zip(&self.beta).take(self.m) {
            *ki = basis(&z, centre);
            mean += i64::from(beta) * i64::from(*ki);
        }
        let mut explained = 0i64;
        for (j, row) in self.factor.iter().enumerate().take(self.m) {
            let u: i64 = row
                .iter()
                .zip(&k)
                .take(j + 1)
                .map(|(&c, &kv)| i64::from(c) * i64::from(kv))
                .sum();
            // Rounded, not floored: a floor's bias adds up over the rows.
            let u = ((u + self.u_half) >> self.u_shift) as i32;
            explained += i64::from(u) * i64::from(u);
        }
        let latent = self.prior - explained;
        let latent = if latent > 0 { latent } else { 0 };
        Ok(Prediction {
            mean: self.y_mean + mean as f32 * self.mean_unit,
            variance: (latent + self.noise) as f32 * self.variance_unit,
        })
    }
}

/// `k = 2^-e` in Q30 for features `z` and a centre, both Q22.
#[inline(always)]
fn basis<const G: usize>(z: &[i32; G], centre: &[i32; G]) -> i32 {
    let mut e = 0u64;
    for (&zg, &cg) in z.iter().zip(centre) {
        let d = (zg - cg).clamp(-DIFF_LIMIT, DIFF_LIMIT);
        e += (i64::from(d) * i64::from(d)) as u64;
    }
    // e is Q44: the integer part n above bit 44, the fraction f below.
    let n = (e >> E_BITS).min(31) as u32;
    let f = ((e >> (E_BITS - 31)) as u32 & 0x7FFF_FFFF) as i32;
    let mut p = EXP2_POLY[4];
    for &c in EXP2_POLY[..4].iter().rev() {
        p = c + high(f, p);
    }
    ((1 << K_BITS) + high(f, p)) >> n
}

/// The high word of `a b`.
#[inline(always)]
fn high(a: i32, b: i32) -> i32 {
    ((i64::from(a) * i64::from(b)) >> 32) as i32
}

/// `x r - mu r` in Q22 units, clamped to the features' limit, from the
/// f32's bits (`r = mantissa 2^(150 - shift)` over the mantissa's units);
/// `None` for a NaN or infinite `x`.
#[inline(always)]
fn feature(x: f32, mantissa: u32, shift: i32, offset: i64) -> Option<i32> {
    let bits = x.to_bits();
    let field = (bits >> 23) & 0xFF;
    if field == 0xFF {
        return None;
    }
    let significand = (bits & 0x007F_FFFF) | if field != 0 { 0x0080_0000 } else { 0 };
    let product = u64::from(significand) * u64::from(mantissa);
    // x r = product 2^(field - shift) for a normal x (field 1 for a subnormal).
    let right = shift - field.max(1) as i32;
    let magnitude = if right > 0 {
        (product >> right.min(63) as u32).min(PRODUCT_LIMIT as u64) as i64
    } else if product != 0 {
        PRODUCT_LIMIT
    } else {
        0
    };
    let signed = if bits >> 31 != 0 {
        -magnitude
    } else {
        magnitude
    };
    Some((signed - offset).clamp(-FEATURE_LIMIT, FEATURE_LIMIT) as i32)
}

/// `r = mantissa 2^-shift` with the mantissa in `[2^30, 2^31)`; `(0, 0)`
/// for `r = 0` (and for anything not positive and finite).
fn split(r: f64) -> (u32, i32) {
    if !(r > 0.0 && r < f64::MAX) {
        return (0, 0);
    }
    let (mut scaled, mut shift) = (r, 0i32);
    while scaled >= pow2(31) {
        scaled *= 0.5;
        shift -= 1;
    }
    while scaled < pow2(30) {
        scaled *= 2.0;
        shift += 1;
    }
    ((round(scaled) as u32).min(u32::MAX >> 1), shift)
}

/// The largest fraction bits `b <= cap` with `value 2^b < limit`.
fn fraction_bits(value: f64, limit: f64, cap: i32) -> i32 {
    let mut bits = cap;
    while bits > -64 && value * pow2(bits) >= limit {
        bits -= 1;
    }
    bits
}

/// `|v| <= limit`, false for NaN.
fn within(v: f64, limit: f64) -> bool {
    v.abs() <= limit
}

/// `2^e` in f64 without libm.
fn pow2(e: i32) -> f64 {
    f64::from_bits(((1023 + e.clamp(-1022, 1023)) as u64) << 52)
}

/// Round half away from zero without libm.
fn round(v: f64) -> f64 {
    let t = v as i64 as f64;
    if (v - t).abs() >= 0.5 {
        t + v.signum()
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host's layout is the 32-bit one with 8-byte sizes: `ram_bytes`
    /// plus 8 for the two `usize`s, rounded as there.
    #[test]
    fn ram_bytes_is_the_struct_size_with_the_hosts_sizes() {
        use core::mem::size_of;
        let host = |m: usize, g: usize| {
            let word = size_of::<usize>();
            (4 * m * (m + g + 1) + 16 * g + 40 + 2 * word).next_multiple_of(8)
        };
        let cases = [
            (size_of::<FixedModel<1, 1>>(), host(1, 1), ram_bytes(1, 1)),
            (size_of::<FixedModel<7, 3>>(), host(7, 3), ram_bytes(7, 3)),
            (
                size_of::<FixedModel<16, 4>>(),
                host(16, 4),
                ram_bytes(16, 4),
            ),
            (
                size_of::<FixedModel<32, 4>>(),
                host(32, 4),
                ram_bytes(32, 4),
            ),
            (
                size_of::<FixedModel<33, 16>>(),
                host(33, 16),
                ram_bytes(33, 16),
            ),
        ];
        for (i, &(size, expected, device)) in cases.iter().enumerate() {
            assert_eq!(size, expected, "case {i}");
            // Where a usize is 4 bytes the formula is the device's.
            if size_of::<usize>() == 4 {
                assert_eq!(size, device, "case {i}");
            }
        }
        // The firmware's figures (run.sh's `golden ... fixed:` lines).
        assert_eq!(ram_bytes(16, 4), 1456);
        assert_eq!(ram_bytes(32, 4), 4848);
        assert_eq!(ram_bytes(64, 4), 17776);
        assert_eq!(ram_bytes(32, 16), 6576);
    }
}
