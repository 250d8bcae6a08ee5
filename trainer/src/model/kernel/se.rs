//! The squared-exponential cross-covariance and its chain rule, from one
//! GEMM of scaled points.

use nalgebra::{DMatrix, Dyn, Matrix, Storage};
use rayon::prelude::*;

use super::scaled::{CrossGrad, KernelGrad, PAR_MIN_ENTRIES};
use crate::numerics::linalg::{mat_ref, matmul_into, mul};

/// The squared-exponential cross-covariance with explicit scales:
/// `K[i, j] = s2 exp(-1/2 sum_t (inv_l_t (a_it - b_jt))^2)` between the rows
/// of `a` (P x T) and `b` (Q x T), `inv_l` holding T inverse length scales
/// (all 1 for a kernel with unit length scales, as in SPGP+DR's projected
/// space). [`KernelParams::cross`] is this with the kernel's own scales.
///
/// The squared distances come from one GEMM,
/// `|u_i - v_j|^2 = |u_i|^2 + |v_j|^2 - 2 u_i . v_j` (`u = a / l`,
/// `v = b / l`), both sets shifted by the mean of `u` so the expanded form
/// does not cancel far from the origin; a negative distance counts as zero.
///
/// # Panics
/// If `a`, `b` and `inv_l` disagree on T (a caller bug).
pub(crate) fn se_cross<SA, SB>(
    a: &Matrix<f64, Dyn, Dyn, SA>,
    b: &Matrix<f64, Dyn, Dyn, SB>,
    inv_l: &[f64],
    s2: f64,
) -> DMatrix<f64>
where
    SA: Storage<f64, Dyn, Dyn>,
    SB: Storage<f64, Dyn, Dyn>,
{
    check_scales(a.ncols(), b.ncols(), inv_l);
    let (p, q) = (a.nrows(), b.nrows());
    let mut out = DMatrix::<f64>::zeros(p, q);
    if p == 0 || q == 0 {
        return out;
    }
    let shift = scaled_mean(a, inv_l);
    let sa = scaled_points(a, inv_l, &shift);
    let sb = scaled_points(b, inv_l, &shift);
    let na: Vec<f64> = sa.row_iter().map(|r| r.norm_squared()).collect();
    let nb: Vec<f64> = sb.row_iter().map(|r| r.norm_squared()).collect();
    // Column-major output: one task owns a block of whole columns, so
    // tasks never share memory.
    let fill = |(j0, block): (usize, &mut [f64])| {
        let w = block.len() / p;
        let rhs = mat_ref(&sb).subrows(j0, w).transpose();
        matmul_into(block, p, false, mat_ref(&sa), rhs, 1.0);
        se_from_dots(block, &na, &nb[j0..j0 + w], s2);
    };
    if p * q < PAR_MIN_ENTRIES {
        fill((0, out.as_mut_slice()));
    } else {
        let cols_per_task = (PAR_MIN_ENTRIES / 4 / p).max(1);
        out.as_mut_slice()
            .par_chunks_mut(cols_per_task * p)
            .enumerate()
            .map(|(t, block)| (t * cols_per_task, block))
            .for_each(fill);
    }
    out
}

/// Chain rule through `K = se_cross(a, b, inv_l, s2)`: given `k` (that
/// matrix, already computed) and `adj = dF/dK` (same shape), returns
/// `dF/da`, `dF/db` (each only if asked) and `dF/d(log l, log s2)`, where
/// `log l_t = -ln inv_l_t` (ignore those when the scales are fixed).
///
/// `adj` is the gradient with every entry of `K` treated as independent;
/// for `a == b` (a symmetric matrix) pass the full adjoint and add the `a`
/// and `b` gradients. Cost O(P Q T), like building `K`: with `B = adj o K`,
/// its row sums `r` and column sums `c`, `dF/du = B v - diag(r) u` and
/// `dF/dv = B^T u - diag(c) v` are one GEMM each (`u = a / l`, `v = b / l`).
///
/// # Panics
/// On dimension mismatch (a caller bug).
pub(crate) fn se_cross_grad<SA, SB>(
    a: &Matrix<f64, Dyn, Dyn, SA>,
    b: &Matrix<f64, Dyn, Dyn, SB>,
    inv_l: &[f64],
    k: &DMatrix<f64>,
    adj: &DMatrix<f64>,
    want_a: bool,
    want_b: bool,
) -> CrossGrad
where
    SA: Storage<f64, Dyn, Dyn>,
    SB: Storage<f64, Dyn, Dyn>,
{
    let d = check_scales(a.ncols(), b.ncols(), inv_l);
    let (p, q) = (a.nrows(), b.nrows());
    assert_eq!(k.shape(), (p, q), "covariance shape");
    assert_eq!(adj.shape(), (p, q), "adjoint shape");
    if p == 0 || q == 0 {
        return CrossGrad {
            a: want_a.then(|| DMatrix::zeros(p, d)),
            b: want_b.then(|| DMatrix::zeros(q, d)),
            kernel: KernelGrad::zeros(d),
        };
    }
    let shift = scaled_mean(a, inv_l);
    let sa = scaled_points(a, inv_l, &shift);
    let sb = scaled_points(b, inv_l, &shift);
    let bm = adj.zip_map(k, |a, k| a * k);
    // Row and column sums as products with ones (vectorised, unlike a
    // running sum down each column).
    let r = mul(mat_ref(&bm), mat_ref(&DMatrix::from_element(q, 1, 1.0)));
    let c = mul(mat_ref(&DMatrix::from_element(1, p, 1.0)), mat_ref(&bm));
    let gs = c.sum();
    let bv = mul(mat_ref(&bm), mat_ref(&sb));
    let mut gl = vec![0.0; d];
    for (t, g) in gl.iter_mut().enumerate() {
        let (u, v, bvt) = (sa.column(t), sb.column(t), bv.column(t));
        let mut s = 0.0;
        for i in 0..p {
            s += u[i] * (r[i] * u[i] - 2.0 * bvt[i]);
        }
        for j in 0..q {
            s += c[j] * v[j] * v[j];
        }
        *g = s;
    }
    let ga =
        want_a.then(|| DMatrix::from_fn(p, d, |i, t| (bv[(i, t)] - r[i] * sa[(i, t)]) * inv_l[t]));
    let gb = want_b.then(|| {
        let btu = mul(mat_ref(&bm).transpose(), mat_ref(&sa));
        DMatrix::from_fn(q, d, |j, t| (btu[(j, t)] - c[j] * sb[(j, t)]) * inv_l[t])
    });
    CrossGrad {
        a: ga,
        b: gb,
        kernel: KernelGrad {
            log_lengthscales: gl,
            log_signal_var: gs,
        },
    }
}

/// `block[i, j] = s2 exp(-1/2 (na_i + nb_j - 2 block[i, j]))` (column-major,
/// `na.len()` rows): dot products `u_i . v_j` into SE kernel values.
///
/// Compiled also for AVX-512 and AVX2+FMA, the widest the CPU has running
/// (libm's scalar `exp` was a sixth of an objective); every version computes
/// the same bits: [`exp_nonpositive`] uses only IEEE operations and FMAs.
fn se_from_dots(block: &mut [f64], na: &[f64], nb: &[f64], s2: f64) {
    let p = na.len();
    let mut run = move || {
        for (col, nbj) in block.chunks_mut(p).zip(nb) {
            for (o, nai) in col.iter_mut().zip(na) {
                // -r2 / 2, never above 0.
                let e = (*o - 0.5 * (nai + nbj)).min(0.0);
                *o = s2 * exp_nonpositive(e);
            }
        }
    };
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = pulp::x86::V4::try_new() {
        return simd.vectorize(run);
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = pulp::x86::V3::try_new() {
        return simd.vectorize(run);
    }
    run()
}

/// `exp(x)` for `x <= 0`, within about one ulp of the exact value (the
/// differences from libm are last-bit roundings; checked against libm in
/// the tests), and exactly 0 below -708 where libm returns subnormals or
/// 0 (a kernel value under 1e-307 of `s2` changes nothing downstream).
///
/// `x = k ln 2 + r` with `k` the nearest integer to `x / ln 2` (by the
/// 1.5 * 2^52 rounding trick, so it vectorises), `ln 2` split in two
/// (fdlibm's constants) so `k ln2_hi` is exact, `|r| <= ln 2 / 2`;
/// `exp(r)` by its Taylor series to `r^13 / 13!` (the next term is below
/// 1e-17 relative) and `2^k` built in the exponent bits.
#[inline(always)]
fn exp_nonpositive(x: f64) -> f64 {
    const LOG2_E: f64 = std::f64::consts::LOG2_E;
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    const SHIFT: f64 = 6_755_399_441_055_744.0;
    const COEFFS: [f64; 14] = [
        1.0 / 6_227_020_800.0,
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ];
    let xc = x.max(-708.0);
    let shifted = xc.mul_add(LOG2_E, SHIFT);
    let k = shifted - SHIFT;
    let r = (-k).mul_add(LN2_LO, (-k).mul_add(LN2_HI, xc));
    let mut poly = COEFFS[0];
    for c in &COEFFS[1..] {
        poly = poly.mul_add(r, *c);
    }
    // The low bits of `shifted` hold k in two's complement.
    let k_int = shifted.to_bits().wrapping_sub(SHIFT.to_bits()) as i64;
    let scale = f64::from_bits(((k_int + 1023) as u64) << 52);
    if x < -708.0 {
        0.0
    } else {
        poly * scale
    }
}

/// Mean of the rows of `x` times the inverse length scales.
fn scaled_mean<S: Storage<f64, Dyn, Dyn>>(x: &Matrix<f64, Dyn, Dyn, S>, inv_l: &[f64]) -> Vec<f64> {
    let n = x.nrows().max(1) as f64;
    inv_l
        .iter()
        .enumerate()
        .map(|(t, il)| x.column(t).sum() * il / n)
        .collect()
}

/// `x / l - shift`, one point per row (column-major, as GEMM takes it).
fn scaled_points<S: Storage<f64, Dyn, Dyn>>(
    x: &Matrix<f64, Dyn, Dyn, S>,
    inv_l: &[f64],
    shift: &[f64],
) -> DMatrix<f64> {
    DMatrix::from_fn(x.nrows(), x.ncols(), |i, t| x[(i, t)] * inv_l[t] - shift[t])
}

/// The common dimension T of `a`, `b` and the scales.
fn check_scales(da: usize, db: usize, inv_l: &[f64]) -> usize {
    assert!(
        da == inv_l.len() && db == inv_l.len(),
        "{} scales, points have {da} and {db} dimensions",
        inv_l.len()
    );
    inv_l.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::kernel::random_matrix;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// The GEMM forms of `se_cross` and `se_cross_grad` against the
    /// definitions, evaluated entry by entry with direct differences, for
    /// points near the origin and for points far from it with small spreads
    /// (where the expanded distance would cancel without the shift).
    #[test]
    fn gemm_forms_match_direct_differences() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let inv_l = [1.0 / 0.7, 1.0 / 1.3, 2.0];
        for offset in [0.0, 1e3] {
            let a = random_matrix(&mut rng, 7, 3).add_scalar(offset);
            let b = random_matrix(&mut rng, 9, 3).add_scalar(offset);
            let adj = random_matrix(&mut rng, 7, 9);
            let k = se_cross(&a, &b, &inv_l, 1.3);
            let r2 = |i: usize, j: usize| {
                (0..3)
                    .map(|t| ((a[(i, t)] - b[(j, t)]) * inv_l[t]).powi(2))
                    .sum::<f64>()
            };
            let mut ga = DMatrix::<f64>::zeros(7, 3);
            let mut gb = DMatrix::<f64>::zeros(9, 3);
            let mut gl = [0.0; 3];
            let mut gs = 0.0;
            for i in 0..7 {
                for j in 0..9 {
                    let want = 1.3 * libm::exp(-0.5 * r2(i, j));
                    assert!(
                        (k[(i, j)] - want).abs() < 1e-12,
                        "offset {offset}: K {i},{j}"
                    );
                    let bij = adj[(i, j)] * want;
                    gs += bij;
                    for t in 0..3 {
                        let dt = (a[(i, t)] - b[(j, t)]) * inv_l[t];
                        gl[t] += bij * dt * dt;
                        ga[(i, t)] -= bij * dt * inv_l[t];
                        gb[(j, t)] += bij * dt * inv_l[t];
                    }
                }
            }
            let g = se_cross_grad(&a, &b, &inv_l, &k, &adj, true, true);
            let close = |x: f64, y: f64| (x - y).abs() < 1e-9 * (1.0 + y.abs());
            assert!(close(g.kernel.log_signal_var, gs));
            for (t, (got, want)) in g.kernel.log_lengthscales.iter().zip(&gl).enumerate() {
                assert!(close(*got, *want), "offset {offset}: l {t}");
            }
            let (a_got, b_got) = (g.a.expect("asked"), g.b.expect("asked"));
            assert!(a_got.iter().zip(ga.iter()).all(|(x, y)| close(*x, *y)));
            assert!(b_got.iter().zip(gb.iter()).all(|(x, y)| close(*x, *y)));
        }
    }

    /// The polynomial exponential against libm over the whole range a
    /// kernel value can take: at most one ulp apart in the normal range.
    #[test]
    fn exp_nonpositive_matches_libm() {
        let mut worst = 0u64;
        for i in 0..=200_000 {
            let x = -708.0 * (i as f64 / 200_000.0).powi(3);
            let (got, want) = (exp_nonpositive(x), libm::exp(x));
            worst = worst.max(got.to_bits().abs_diff(want.to_bits()));
        }
        assert!(worst <= 1, "{worst} ulp");
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(exp_nonpositive(-709.0), 0.0);
        assert_eq!(exp_nonpositive(-1e300), 0.0);
    }

    /// The dispatched (vector) fill against the scalar formula, bit for
    /// bit, over the whole range of arguments the kernel meets.
    #[test]
    fn vector_fill_matches_scalar_bits() {
        let (p, q) = (13, 11);
        let na: Vec<f64> = (0..p).map(|i| 50.0 * i as f64 / p as f64).collect();
        let nb: Vec<f64> = (0..q)
            .map(|j| 900.0 * (j as f64 / q as f64).powi(3))
            .collect();
        let dots: Vec<f64> = (0..p * q)
            .map(|k| ((k * 37) % 101) as f64 * 0.1 - 5.0)
            .collect();
        let mut block = dots.clone();
        se_from_dots(&mut block, &na, &nb, 1.7);
        for (k, (got, dot)) in block.iter().zip(&dots).enumerate() {
            let e = (dot - 0.5 * (na[k % p] + nb[k / p])).min(0.0);
            let want = 1.7 * exp_nonpositive(e);
            assert_eq!(got.to_bits(), want.to_bits(), "entry {k}: {got} vs {want}");
        }
    }
}
