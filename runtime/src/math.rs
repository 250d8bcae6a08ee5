//! The scalar kernels of the evaluator: `exp`, the normal CDF and the two
//! triangular solves. Kept apart so the `micromath` switch lives in one place.

/// `e^x`, branch-free (constant time): x clamped to [-87, 88], split as
/// n ln2 + r with |r| <= ln2/2, e^r by its degree-6 Taylor polynomial
/// (truncation < 2e-7 relative), times 2^n built in the exponent bits.
#[cfg(not(feature = "micromath"))]
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    const SHIFTER: f32 = 12_582_912.0; // 1.5 * 2^23: adding it rounds to an integer
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    let x = if x < -87.0 { -87.0 } else { x };
    let x = if x > 88.0 { 88.0 } else { x };
    let shifted = x * core::f32::consts::LOG2_E + SHIFTER;
    let n = (shifted.to_bits() as i32).wrapping_sub(SHIFTER.to_bits() as i32);
    let nf = shifted - SHIFTER;
    let r = (x - nf * LN2_HI) - nf * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    p * f32::from_bits((n.wrapping_add(127) as u32) << 23)
}

/// `e^x` from micromath: a few times cheaper, relative error ~1e-3 at worst.
/// Below -87 it is forced to 0 because the approximation is not defined
/// there, and a far-away input must still give the prior variance.
#[cfg(feature = "micromath")]
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    use micromath::F32Ext;
    if x < -87.0 {
        0.0
    } else {
        x.exp()
    }
}

/// Standard normal CDF `Phi(t) = erfc(-t / sqrt 2) / 2`; erfc keeps full
/// relative precision in the lower tail, where `1 + erf` would cancel.
pub(crate) fn normal_cdf(t: f32) -> f32 {
    0.5 * libm::erfcf(-t * core::f32::consts::FRAC_1_SQRT_2)
}

/// `||L^{-1} k||^2` for the lower triangle stored row-wise below the
/// diagonal of `rows` (row `i` holds `L[i][j]` at `j < i`), with the
/// reciprocal diagonal apart. Dot-product form: row `i` is read
/// contiguously.
pub(crate) fn solve_rows_norm2<const M: usize>(
    rows: &[[f32; M]; M],
    inv_diagonal: &[f32; M],
    k: &[f32; M],
    m: usize,
) -> f32 {
    let mut u = [0.0f32; M];
    let mut norm2 = 0.0;
    for (i, ((row, &ki), &inv)) in rows.iter().zip(k).zip(inv_diagonal).enumerate().take(m) {
        let dot: f32 = row
            .get(..i)
            .unwrap_or(&[])
            .iter()
            .zip(u.get(..i).unwrap_or(&[]))
            .map(|(l, u)| l * u)
            .sum();
        let ui = (ki - dot) * inv;
        if let Some(slot) = u.get_mut(i) {
            *slot = ui;
        }
        norm2 += ui * ui;
    }
    norm2
}

/// `||L^{-1} k||^2` for the lower triangle stored transposed above the
/// diagonal of `columns` (row `j` holds `L[i][j]` at `i > j`). Column
/// (axpy) form: column `j` is read contiguously.
pub(crate) fn solve_columns_norm2<const M: usize>(
    columns: &[[f32; M]; M],
    inv_diagonal: &[f32; M],
    k: &[f32; M],
    m: usize,
) -> f32 {
    let mut r = *k;
    let mut norm2 = 0.0;
    for (j, (column, &inv)) in columns.iter().zip(inv_diagonal).enumerate().take(m) {
        let uj = r.get(j).copied().unwrap_or(0.0) * inv;
        norm2 += uj * uj;
        // Slices, not `.take(m).skip(j + 1)`: Skip walks the skipped
        // elements one by one and the zipped take/skip bounds stay in the loop.
        if let (Some(rest), Some(column)) = (r.get_mut(j + 1..m), column.get(j + 1..m)) {
            for (ri, l) in rest.iter_mut().zip(column) {
                *ri -= l * uj;
            }
        }
    }
    norm2
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The polynomial exp against f64 over the whole unclamped range.
    #[test]
    fn exp_is_accurate_to_a_few_ulp() {
        let mut worst = 0.0f64;
        let mut x = -87.0f32;
        while x <= 88.0 {
            let exact = f64::from(x).exp();
            let rel = ((f64::from(exp(x)) - exact) / exact).abs();
            worst = worst.max(rel);
            x += 0.0137;
        }
        let limit = if cfg!(feature = "micromath") {
            1e-2
        } else {
            5e-7
        };
        assert!(worst < limit, "worst relative error {worst:e}");
    }

    #[test]
    fn exp_of_far_away_distances_is_negligible_not_nan() {
        for x in [-88.0f32, -1e3, -1e30, f32::MIN] {
            let e = exp(x);
            assert!((0.0..1e-37).contains(&e), "exp({x}) = {e}");
        }
    }
}
