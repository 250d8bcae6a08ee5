//! The scalar kernels of the evaluator: `exp`, the normal CDF and the two
//! triangular solves. Kept apart so the `micromath` switch lives in one place.

/// `e^x` from libm (correctly rounded to within 1 ulp).
#[cfg(not(feature = "micromath"))]
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    libm::expf(x)
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
        let dot: f32 = row.iter().zip(&u).take(i).map(|(l, u)| l * u).sum();
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
        for (ri, l) in r.iter_mut().zip(column).take(m).skip(j + 1) {
            *ri -= l * uj;
        }
    }
    norm2
}
