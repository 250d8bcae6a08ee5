//! The scalar kernels of the evaluator: `exp`, the normal CDF and the two
//! triangular solves. Kept apart so the `micromath` switch lives in one place.

/// `e^x` for `x` in `[-87, 88]`, branch-free (constant time, unlike libm's
/// `expf`, whose special-range paths cost up to 2,000 instructions of
/// spread per prediction on a Cortex-M4): `x = n ln2 + r` with
/// `|r| <= ln2 / 2`, `e^r` by its degree-6 Taylor polynomial (truncation
/// below 2e-7 relative), times `2^n` built in the exponent bits.
#[cfg(not(feature = "micromath"))]
#[inline(always)]
fn exp_clamped(x: f32) -> f32 {
    // 1.5 * 2^23: adding it rounds to an integer held in the low mantissa bits.
    const SHIFTER: f32 = 12_582_912.0;
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
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

/// `e^x` for `x <= 0`, a basis function's exponent: clamped below at -87
/// (where `e^x` ~ 1.6e-38, negligible next to any basis value that
/// matters), so far-away inputs cost the same as near ones.
#[cfg(not(feature = "micromath"))]
#[inline(always)]
pub(crate) fn exp_non_positive(x: f32) -> f32 {
    exp_clamped(if x < -87.0 { -87.0 } else { x })
}

/// `e^x` for `x <= 0` from micromath: fewer instructions, relative error
/// up to ~1e-3 (see the README). Below -87 it is forced to 0 because the
/// approximation is not defined there.
#[cfg(feature = "micromath")]
#[inline(always)]
pub(crate) fn exp_non_positive(x: f32) -> f32 {
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

/// `sum_j a_j b_j` over the common length, with four running sums: the
/// chains are independent (the FPU pipelines them) and the loop overhead
/// is paid once per four multiply-adds.
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (a.get(..n).unwrap_or(&[]), b.get(..n).unwrap_or(&[]));
    let (a4, a_tail) = a.as_chunks::<4>();
    let (b4, b_tail) = b.as_chunks::<4>();
    let mut acc = [0.0f32; 4];
    for (&[a0, a1, a2, a3], &[b0, b1, b2, b3]) in a4.iter().zip(b4) {
        let [s0, s1, s2, s3] = acc;
        acc = [s0 + a0 * b0, s1 + a1 * b1, s2 + a2 * b2, s3 + a3 * b3];
    }
    let tail: f32 = a_tail.iter().zip(b_tail).map(|(a, b)| a * b).sum();
    let [s0, s1, s2, s3] = acc;
    (s0 + s1) + (s2 + s3) + tail
}

/// `(sum_j a_j[0] b_j[0], sum_j a_j[1] b_j[1])`: two interleaved dot
/// products in one pass, two pairs per step.
#[inline(always)]
fn dot_pairs(a: &[[f32; 2]], b: &[[f32; 2]]) -> (f32, f32) {
    let n = a.len().min(b.len());
    let (a, b) = (a.get(..n).unwrap_or(&[]), b.get(..n).unwrap_or(&[]));
    let (a2, a_tail) = a.as_chunks::<2>();
    let (b2, b_tail) = b.as_chunks::<2>();
    let mut acc = [0.0f32; 4];
    for (&[[a0, a1], [a2, a3]], &[[b0, b1], [b2, b3]]) in a2.iter().zip(b2) {
        let [s0, s1, s2, s3] = acc;
        acc = [s0 + a0 * b0, s1 + a1 * b1, s2 + a2 * b2, s3 + a3 * b3];
    }
    let [s0, s1, s2, s3] = acc;
    let (mut first, mut second) = (s0 + s2, s1 + s3);
    for (&[a0, a1], &[b0, b1]) in a_tail.iter().zip(b_tail) {
        first += a0 * b0;
        second += a1 * b1;
    }
    (first, second)
}

/// `sum_g (w_g / 2) (z_g - c_g)^2` for `params[g] = (c_g, w_g / 2)`, four
/// dimensions per step so that the common small `G` runs without a loop.
#[inline(always)]
pub(crate) fn half_weighted_distance<const G: usize>(params: &[[f32; 2]; G], z: &[f32; G]) -> f32 {
    let term = |&[c, half_w]: &[f32; 2], z: f32| {
        let diff = z - c;
        half_w * diff * diff
    };
    let (p4, p_tail) = params.as_chunks::<4>();
    let (z4, z_tail) = z.as_chunks::<4>();
    // -0.0 is the exact identity of `+` (0.0 is not: 0.0 + -0.0 = 0.0), so
    // the compiler drops the first addition.
    let mut sum = -0.0f32;
    for ([p0, p1, p2, p3], &[z0, z1, z2, z3]) in p4.iter().zip(z4) {
        sum += (term(p0, z0) + term(p1, z1)) + (term(p2, z2) + term(p3, z3));
    }
    for (p, &z) in p_tail.iter().zip(z_tail) {
        sum += term(p, z);
    }
    sum
}

/// Where row `i` of the packed factors starts. One factor: its `i`
/// entries left of the diagonal, row after row. Two factors: `L1[i][j]`
/// and `L2[i][j]` interleaved, so both solves run in one pass. Either way
/// the rows fit the `M x M` array (`M (M - 1)` numbers at most).
pub(crate) const fn row_offset(i: usize, two_factors: bool) -> usize {
    let single = i * i.saturating_sub(1) / 2;
    if two_factors {
        2 * single
    } else {
        single
    }
}

/// The forward substitutions `u1 = L1^{-1} k` and, with two factors,
/// `u2 = L2^{-1} k`, over the packed rows (see [`row_offset`]); returns
/// `(|u1|^2, |u2|^2)`, the second 0 for one factor. The diagonals are
/// stored as reciprocals so the solves never divide.
pub(crate) fn solve_packed<const M: usize>(
    packed: &[f32],
    inv_diagonal1: &[f32; M],
    inv_diagonal2: &[f32; M],
    k: &[f32; M],
    m: usize,
    two_factors: bool,
) -> (f32, f32) {
    if two_factors {
        solve_two(packed, inv_diagonal1, inv_diagonal2, k, m)
    } else {
        (solve_one(packed, inv_diagonal1, k, m), 0.0)
    }
}

fn solve_one<const M: usize>(
    packed: &[f32],
    inv_diagonal: &[f32; M],
    k: &[f32; M],
    m: usize,
) -> f32 {
    let mut u = [0.0f32; M];
    let mut norm = 0.0f32;
    let mut rest = packed;
    for (i, (&ki, &inv)) in k.iter().zip(inv_diagonal).enumerate().take(m) {
        let Some((row, tail)) = rest.split_at_checked(i) else {
            break;
        };
        rest = tail;
        let ui = (ki - dot(row, &u)) * inv;
        norm += ui * ui;
        if let Some(slot) = u.get_mut(i) {
            *slot = ui;
        }
    }
    norm
}

fn solve_two<const M: usize>(
    packed: &[f32],
    inv_diagonal1: &[f32; M],
    inv_diagonal2: &[f32; M],
    k: &[f32; M],
    m: usize,
) -> (f32, f32) {
    // Rows are solved two at a time: both read u[..i], so each loaded u
    // pair feeds four multiply-adds instead of two. The rows are consumed
    // from a running slice and the per-row inputs come in chunks of two,
    // so the per-row work has no index arithmetic or bounds checks.
    let mut rest = packed.as_chunks::<2>().0;
    let mut u = [[0.0f32; 2]; M];
    let (mut norm1, mut norm2) = (0.0f32, 0.0f32);
    let inputs = k
        .as_chunks::<2>()
        .0
        .iter()
        .zip(inv_diagonal1.as_chunks::<2>().0)
        .zip(inv_diagonal2.as_chunks::<2>().0);
    let mut solved = 0;
    for ((&[ka, kb], &[d1a, d1b]), &[d2a, d2b]) in inputs.take(m / 2) {
        let i = solved;
        let Some((row_a, tail)) = rest.split_at_checked(i) else {
            break;
        };
        let Some((row_b, tail)) = tail.split_at_checked(i + 1) else {
            break;
        };
        rest = tail;
        let Some((&[last1, last2], row_b)) = row_b.split_last() else {
            break;
        };
        let Some((done, todo)) = u.split_at_mut_checked(i) else {
            break;
        };
        let (a1, a2, b1, b2) = dot_two_rows(row_a, row_b, done);
        let ua = [(ka - a1) * d1a, (ka - a2) * d2a];
        let ub = [
            (kb - b1 - last1 * ua[0]) * d1b,
            (kb - b2 - last2 * ua[1]) * d2b,
        ];
        norm1 += ua[0] * ua[0] + ub[0] * ub[0];
        norm2 += ua[1] * ua[1] + ub[1] * ub[1];
        if let Some([slot_a, slot_b, ..]) = todo.get_mut(..2) {
            *slot_a = ua;
            *slot_b = ub;
        }
        solved += 2;
    }
    if solved < m {
        let row = rest.get(..solved).unwrap_or(&[]);
        let (dot1, dot2) = dot_pairs(row, &u);
        let at = |v: &[f32; M]| v.get(solved).copied().unwrap_or(0.0);
        let ki = at(k);
        let (u1, u2) = (
            (ki - dot1) * at(inv_diagonal1),
            (ki - dot2) * at(inv_diagonal2),
        );
        norm1 += u1 * u1;
        norm2 += u2 * u2;
    }
    (norm1, norm2)
}

/// Rows `a` and `b` (interleaved `L1`/`L2` pairs) against the solved
/// pairs `u`: `(a.u[0], a.u[1], b.u[0], b.u[1])`.
#[inline(always)]
fn dot_two_rows(a: &[[f32; 2]], b: &[[f32; 2]], u: &[[f32; 2]]) -> (f32, f32, f32, f32) {
    let n = a.len().min(b.len()).min(u.len());
    let (a, b, u) = (
        a.get(..n).unwrap_or(&[]),
        b.get(..n).unwrap_or(&[]),
        u.get(..n).unwrap_or(&[]),
    );
    let mut acc = [0.0f32; 4];
    let mut step = |&[la1, la2]: &[f32; 2], &[lb1, lb2]: &[f32; 2], &[u1, u2]: &[f32; 2]| {
        let [a1, a2, b1, b2] = acc;
        acc = [a1 + la1 * u1, a2 + la2 * u2, b1 + lb1 * u1, b2 + lb2 * u2];
    };
    let (a2, a_tail) = a.as_chunks::<2>();
    let (b2, b_tail) = b.as_chunks::<2>();
    let (u2, u_tail) = u.as_chunks::<2>();
    for (([a0, a1], [b0, b1]), [u0, u1]) in a2.iter().zip(b2).zip(u2) {
        step(a0, b0, u0);
        step(a1, b1, u1);
    }
    for ((a0, b0), u0) in a_tail.iter().zip(b_tail).zip(u_tail) {
        step(a0, b0, u0);
    }
    let [a1, a2, b1, b2] = acc;
    (a1, a2, b1, b2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The polynomial exp against f64 over the whole unclamped range.
    #[test]
    fn dot_matches_a_plain_sum_at_every_length() {
        let a: [f32; 11] = core::array::from_fn(|i| 0.5 + i as f32);
        let b: [f32; 11] = core::array::from_fn(|i| 1.0 - 0.1 * i as f32);
        for n in 0..=11 {
            let plain: f32 = a.iter().zip(&b).take(n).map(|(a, b)| a * b).sum();
            let fast = dot(a.get(..n).unwrap_or(&[]), &b);
            assert!(
                (plain - fast).abs() <= 1e-5 * plain.abs().max(1.0),
                "n = {n}"
            );
        }
    }

    #[test]
    fn packed_rows_fit_the_square_array() {
        for m in 1..200 {
            assert!(row_offset(m, true) <= m * m, "m = {m}");
            assert_eq!(row_offset(m, false), m * (m - 1) / 2);
        }
    }

    #[test]
    fn dot_pairs_matches_two_plain_sums_at_every_length() {
        let a: [[f32; 2]; 9] = core::array::from_fn(|i| [0.5 + i as f32, 2.0 - i as f32]);
        let b: [[f32; 2]; 9] = core::array::from_fn(|i| [1.0 - 0.1 * i as f32, 0.3 * i as f32]);
        for n in 0..=9 {
            let first: f32 = a.iter().zip(&b).take(n).map(|(a, b)| a[0] * b[0]).sum();
            let second: f32 = a.iter().zip(&b).take(n).map(|(a, b)| a[1] * b[1]).sum();
            let (f, s) = dot_pairs(a.get(..n).unwrap_or(&[]), &b);
            assert!((first - f).abs() <= 1e-5 * first.abs().max(1.0), "n = {n}");
            assert!(
                (second - s).abs() <= 1e-5 * second.abs().max(1.0),
                "n = {n}"
            );
        }
    }

    #[test]
    fn exp_is_accurate_to_a_few_ulp() {
        let mut worst = 0.0f64;
        let mut x = -87.0f32;
        while x <= 0.0 {
            let exact = f64::from(x).exp();
            let rel = ((f64::from(exp_non_positive(x)) - exact) / exact).abs();
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
            let e = exp_non_positive(x);
            assert!((0.0..1e-37).contains(&e), "exp({x}) = {e}");
        }
    }
}
