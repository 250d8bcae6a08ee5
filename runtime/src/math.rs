//! The scalar kernels of the evaluator: `exp`, the normal CDF, the
//! triangular solves and the packed layout they stream. Kept apart so the
//! `micromath` switch lives in one place.

/// Fraction bits of the fixed-point base-2 exponents the basis loop
/// hands to [`scaled_exp2_of_negative`]: 25, so that `u32` saturates at
/// an exponent of 128, where every result is 0.
const EXP2_FRACTION_BITS: u32 = 25;

/// A distance in nats times this is the fixed-point base-2 exponent
/// [`scaled_exp2_of_negative`] takes (`log2(e) 2^25`): `e^-d = 2^-(d
/// log2 e)`. The loader folds its square root into the features and the
/// centres, so the distance comes out in these units for nothing.
pub(crate) const FIXED_PER_NAT: f32 =
    core::f32::consts::LOG2_E * (1u32 << EXP2_FRACTION_BITS) as f32;

/// `d e^-d / d fixed` over `e^-d`: `-ln 2 / 2^25`, for the gradients.
pub(crate) const NAT_PER_FIXED: f32 = core::f32::consts::LN_2 / (1u32 << EXP2_FRACTION_BITS) as f32;

/// Coefficients of [`scaled_exp2_of_negative`]'s polynomial.
pub(crate) const EXP2_TERMS: usize = 6;

/// The polynomial of [`scaled_exp2_of_negative`], `2^-(t - 1)` for `t =
/// 1 + f` in `[1, 2)`, in factored form: `(l0 + l1 t) (w^2 + e1) (w^2 +
/// b2 w + e2)`, `w = t - k`, stored as `[l0, l1, k, e1, b2, e2]`. The
/// degree-5 fit for the least relative error, split at its real root and
/// its two complex pairs, `k` the real part of one pair (so that factor
/// has no linear term); its constants rounded to f32 and then moved by a
/// few ulp each for the least error of the f32 evaluation, with the value
/// at `t = 1` held at exactly 1 (a basis function is its amplitude at its
/// centre): 3.4e-7 relative in f32 arithmetic. Ten operations where the Estrin form of the
/// same degree takes eleven. Only the linear factor carries a model's
/// amplitude ([`scaled_exp2_poly`]). (Degree 4, three operations fewer,
/// is 3.2e-6: an IVM model's latent mean, a sum of large terms of both
/// signs, then misses its golden tolerance.)
pub(crate) const EXP2_OF_NEGATIVE: [f32; EXP2_TERMS] = [
    0.004_406_427_5,
    -0.000_944_902_83,
    1.149_780_6,
    20.240_39,
    -5.480_099,
    13.413_898,
];

/// [`EXP2_OF_NEGATIVE`] for basis functions of amplitude `amplitude`:
/// the linear factor scaled, so the basis loop multiplies by it for
/// nothing.
pub(crate) fn scaled_exp2_poly(amplitude: f32) -> [f32; EXP2_TERMS] {
    let [l0, l1, k, e1, b2, e2] = EXP2_OF_NEGATIVE;
    [amplitude * l0, amplitude * l1, k, e1, b2, e2]
}

/// `a 2^-x` for the fixed-point exponent `fixed = x 2^25 >= 0` and
/// `poly = scaled_exp2_poly(a)`, branch-free (constant time, unlike
/// libm's `expf`, whose special-range paths cost up to 2,000 instructions
/// of spread per prediction on a Cortex-M4).
///
/// The conversion to `u32` saturates, so every `x >= 127` (an infinite
/// one included) gives 0 without a clamp: the integer part `n <= 127` goes
/// into the exponent bits of `2^-n` (`n = 127` gives the bits of 0.0), the
/// top 23 of the 25 fraction bits into the mantissa of `t = 1 + f` (exact,
/// no conversion), and `2^-f` is the polynomial at `t` (`t - k` is exact:
/// Sterbenz). The conversion truncates below 2^-25 and the mantissa drops
/// the last two fraction bits: at most 8e-8 relative, on top of the
/// polynomial's 3.4e-7. `fixed` must not be NaN (it would read as 0: the
/// callers check their features).
#[cfg(not(feature = "micromath"))]
#[inline(always)]
pub(crate) fn scaled_exp2_of_negative(fixed: f32, poly: &[f32; EXP2_TERMS]) -> f32 {
    let bits = fixed as u32;
    // `bits >> 2` holds `n` in the exponent field's low 7 bits, the
    // fraction in the mantissa: `1 + f` ORs it into the exponent of 1.0
    // (which absorbs `n`), `2^-n` clears it from there (`(127 - n) << 23`
    // as one `bic`).
    let shifted = bits >> 2;
    let t = f32::from_bits(0x3F80_0000 | shifted);
    let [l0, l1, k, e1, b2, e2] = *poly;
    let w = t - k;
    let w2 = w * w;
    let p = ((w2 + e1) * (b2 * w + (w2 + e2))) * (l0 + l1 * t);
    p * f32::from_bits(0x3F80_0000 & !shifted)
}

/// `a 2^-x` from micromath's `e^x` (`a = poly[0] / EXP2_OF_NEGATIVE[0]`,
/// the linear factor's scaling). Measured on the Cortex-M4
/// (README): cheaper for some arguments, dearer for others (so no longer
/// constant time), and too inaccurate for the export tolerances; kept as
/// the documented alternative the design names. Beyond `x = 127` it is
/// forced to 0, as the built-in one.
#[cfg(feature = "micromath")]
#[inline(always)]
pub(crate) fn scaled_exp2_of_negative(fixed: f32, poly: &[f32; EXP2_TERMS]) -> f32 {
    let [c0, ..] = *poly;
    if fixed >= 127.0 * (1u32 << EXP2_FRACTION_BITS) as f32 {
        0.0
    } else {
        c0 * (1.0 / EXP2_OF_NEGATIVE[0]) * micromath::F32Ext::exp(-fixed * NAT_PER_FIXED)
    }
}

/// Largest magnitude of a Matérn model's features and scaled centres
/// (2^52): each difference is then within 2^53, and a squared distance
/// summed over fewer than 2^21 dimensions stays below 2^127, finite, so the basis loop needs no clamp before its square root.
/// In standardised units it is about 3e7 length scales.
pub(crate) const MATERN_FEATURE_LIMIT: f32 = 4_503_599_627_370_496.0;

/// `sqrt(q)` for finite `q >= 0`, branch-free: libm's `sqrtf` is a
/// software loop on a Cortex-M4 (no `vsqrt` without an intrinsic), so the
/// reciprocal square root from the exponent bits and three Newton steps
/// (a relative error of 2e-7 after them), times `q`; `q = 0` gives 0.
#[inline(always)]
pub(crate) fn sqrt_finite(q: f32) -> f32 {
    let half = 0.5 * q;
    let mut y = f32::from_bits(0x5F37_59DF - (q.to_bits() >> 1));
    y *= 1.5 - (half * y) * y;
    y *= 1.5 - (half * y) * y;
    y *= 1.5 - (half * y) * y;
    q * y
}

/// `q`, or `f32::MAX` for an infinite `q` (branch-free), for distances
/// that may overflow (a per-basis scale times a feature).
#[inline(always)]
pub(crate) fn finite_distance(q: f32) -> f32 {
    f32::from_bits(q.to_bits().min(f32::MAX.to_bits()))
}

/// A Matérn basis value `a m(u) e^-u`, `u = sqrt(2 nu) r`, for `NU = 2 nu`
/// (1, 3 or 5), the finite distance `q = u^2` in squared fixed-point
/// units (see `Model::rescale_for_matern`) and `poly = scaled_exp2_poly(a)`:
/// `m(u) = 1` (1/2), `1 + u` (3/2), `1 + u + u^2 / 3` (5/2). Branch-free,
/// as the squared exponential's.
#[inline(always)]
pub(crate) fn matern<const NU: u8>(q: f32, poly: &[f32; EXP2_TERMS]) -> f32 {
    let fixed = sqrt_finite(q);
    let value = scaled_exp2_of_negative(fixed, poly);
    let u = fixed * NAT_PER_FIXED;
    // `value + v value` rather than `(1 + v) value`: one multiply-add,
    // which overwrites `value` in place (the constant 1 would need a copy).
    match NU {
        3 => value + u * value,
        5 => value + (u * (1.0 + u * (1.0 / 3.0))) * value,
        _ => value,
    }
}

/// `-(d k / d q) / NAT_PER_FIXED` for [`matern`]'s `k` at the finite
/// distance `q`: the weight the gradient puts where the squared
/// exponential puts `k` itself (whose `d k / d q` is `-NAT_PER_FIXED k`).
/// Finite everywhere; at `q = 0` the Matérn 1/2 kernel has no derivative,
/// and its symmetric one (0) is taken.
#[inline(always)]
pub(crate) fn matern_slope(kernel: crate::format::Kernel, q: f32, poly: &[f32; EXP2_TERMS]) -> f32 {
    let fixed = sqrt_finite(q);
    let u = fixed * NAT_PER_FIXED;
    let value = scaled_exp2_of_negative(fixed, poly);
    match kernel {
        crate::format::Kernel::Matern32 => value * (0.5 * NAT_PER_FIXED),
        crate::format::Kernel::Matern52 => value * (1.0 + u) * (NAT_PER_FIXED / 6.0),
        _ if fixed > 0.0 => value / (2.0 * fixed),
        _ => 0.0,
    }
}

/// `e^x` for `x <= 0`, as [`scaled_exp2_of_negative`] computes it (the
/// argument's scaling by the rounded `log2(e) 2^25` adds a relative error
/// up to `|x| 8e-8`).
#[inline(always)]
pub(crate) fn exp_non_positive(x: f32) -> f32 {
    scaled_exp2_of_negative(-x * FIXED_PER_NAT, &EXP2_OF_NEGATIVE)
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
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
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

/// `sum_g (s_g z_g - c_g)^2` for `params[g] = (c_g, s_g)`: a basis
/// function's own widths as scales `s_g = sqrt(h_g)` (times the exp's
/// fixed-point units), its centre scaled by them. Unlike `h_g (z_g -
/// c_g)^2` it is never NaN for a finite `z` and a zero width (`0 * inf`
/// once the difference overflows), and it costs the same.
#[inline(always)]
pub(crate) fn scaled_distance<const G: usize>(params: &[[f32; 2]; G], z: &[f32; G]) -> f32 {
    sum_terms(params, z, |&[c, s], z| {
        let diff = s * z - c;
        diff * diff
    })
}

/// `sum_g (z_g - c_g)^2` for `params[g] = (c_g, _)`: the distance once
/// shared widths are folded into the features and centres (the stored
/// scale, 1, is not read).
#[inline(always)]
pub(crate) fn unit_distance<const G: usize>(params: &[[f32; 2]; G], z: &[f32; G]) -> f32 {
    sum_terms(params, z, |&[c, _], z| {
        let diff = z - c;
        diff * diff
    })
}

/// Half the derivative of [`scaled_distance`]'s term in `z`: `s (s z -
/// c)`.
#[inline(always)]
pub(crate) fn scaled_offset(&[c, s]: &[f32; 2], z: f32) -> f32 {
    s * (s * z - c)
}

/// Half the derivative of [`unit_distance`]'s term in `z`: `z - c`.
#[inline(always)]
pub(crate) fn unit_offset(&[c, _]: &[f32; 2], z: f32) -> f32 {
    z - c
}

/// `sum_g term(params[g], z_g)`, four dimensions per step so that the
/// common small `G` runs without a loop, in order.
#[inline(always)]
fn sum_terms<const G: usize>(
    params: &[[f32; 2]; G],
    z: &[f32; G],
    term: impl Fn(&[f32; 2], f32) -> f32,
) -> f32 {
    let (p4, p_tail) = params.as_chunks::<4>();
    let (z4, z_tail) = z.as_chunks::<4>();
    // -0.0 is the exact identity of `+` (0.0 is not: 0.0 + -0.0 = 0.0), so
    // the compiler drops the first addition.
    let mut sum = -0.0f32;
    for ([p0, p1, p2, p3], &[z0, z1, z2, z3]) in p4.iter().zip(z4) {
        // One chain: each square then folds into a multiply-add (paired
        // sums cost the Cortex-M4 one instruction more per basis function).
        sum = sum + term(p0, z0) + term(p1, z1) + term(p2, z2) + term(p3, z3);
    }
    for (p, &z) in p_tail.iter().zip(z_tail) {
        sum += term(p, z);
    }
    sum
}

/// `sum_i weights_i offset(row_i[g], z_g)` for every feature `g`, over
/// the first `m` basis rows (`offset` is [`scaled_offset`] or
/// [`unit_offset`]): the feature sums of both gradients at once. Four
/// features at a time, each four streamed over all the rows with its
/// eight sums passed by value, so that they stay in registers whatever
/// `G` is.
pub(crate) fn weighted_offset_sums<const G: usize>(
    rows: &[[[f32; 2]; G]],
    weights: &[[f32; 2]],
    z: &[f32; G],
    m: usize,
    offset: impl Fn(&[f32; 2], f32) -> f32,
) -> [[f32; 2]; G] {
    let term = |[s0, s1]: [f32; 2], p: &[f32; 2], z: f32, [w0, w1]: [f32; 2]| {
        let t = offset(p, z);
        [s0 + w0 * t, s1 + w1 * t]
    };
    let rows = || rows.iter().zip(weights).take(m);
    let mut sums = [[0.0f32; 2]; G];
    let (s4, s_tail) = sums.as_chunks_mut::<4>();
    let (z4, z_tail) = z.as_chunks::<4>();
    for (chunk, (s, &[z0, z1, z2, z3])) in s4.iter_mut().zip(z4).enumerate() {
        *s = rows().fold([[0.0; 2]; 4], |[a0, a1, a2, a3], (row, &w)| {
            match row.as_chunks::<4>().0.get(chunk) {
                Some([p0, p1, p2, p3]) => [
                    term(a0, p0, z0, w),
                    term(a1, p1, z1, w),
                    term(a2, p2, z2, w),
                    term(a3, p3, z3, w),
                ],
                None => [a0, a1, a2, a3],
            }
        });
    }
    let first_tail = G / 4 * 4;
    for (g, (s, &zg)) in (first_tail..).zip(s_tail.iter_mut().zip(z_tail)) {
        *s = rows().fold([0.0; 2], |a, (row, &w)| match row.get(g) {
            Some(p) => term(a, p, zg, w),
            None => a,
        });
    }
    sums
}

/// Rows solved together by the blocked solvers.
pub(crate) const BLOCK: usize = 4;

/// Where `L[row][col]` (`col < row`) of factor `factor` (0 for `L1`, 1
/// for `L2`) sits in the packed storage of an `m`-basis model.
///
/// Rows in blocks of four (`i0 = 4b`), each block holding first, for every
/// `j < i0`, the numbers `L[i0+t][j]` (`t = 0..4`; with two factors the
/// pairs `L1[i0+t][j], L2[i0+t][j]`) side by side, then the six entries
/// (pairs) of the block's own lower corner; rows past the last full block
/// follow as plain rows (of interleaved `(L1, L2)` pairs with two
/// factors). The solvers then stream one contiguous block per four rows.
/// Either way the numbers fill `M (M - 1)` of the `M x M` slots at most.
pub(crate) fn packed_index(
    row: usize,
    col: usize,
    factor: usize,
    m: usize,
    two_factors: bool,
) -> usize {
    let f = if two_factors { 2 } else { 1 };
    let full_rows = m / BLOCK * BLOCK;
    if row < full_rows {
        let (b, t) = (row / BLOCK, row % BLOCK);
        let i0 = BLOCK * b;
        if col < i0 {
            block_start(b, f) + f * (BLOCK * col + t) + factor
        } else {
            let corner = t * t.saturating_sub(1) / 2 + (col - i0);
            block_start(b, f) + f * (BLOCK * i0 + corner) + factor
        }
    } else {
        let before: usize = (full_rows..row).sum();
        block_start(full_rows / BLOCK, f) + f * (before + col) + factor
    }
}

/// Offset of block `b` with `factors` factors: blocks before it hold
/// `factors (4 i0 + 6)` numbers each.
pub(crate) const fn block_start(b: usize, factors: usize) -> usize {
    factors * (8 * b * b.saturating_sub(1) + 6 * b)
}

/// Forward substitution through a block's own lower corner
/// `[c10, c20, c21, c30, c31, c32]` (one factor), given the block's `k`,
/// its rows' dot products with the solutions before it, and the inverse
/// diagonal.
#[inline(always)]
pub(crate) fn corner_forward(
    [k0, k1, k2, k3]: [f32; BLOCK],
    [a0, a1, a2, a3]: [f32; BLOCK],
    [c10, c20, c21, c30, c31, c32]: [f32; 6],
    [p0, p1, p2, p3]: [f32; BLOCK],
) -> [f32; BLOCK] {
    let u0 = (k0 - a0) * p0;
    let u1 = (k1 - a1 - c10 * u0) * p1;
    let u2 = (k2 - a2 - c20 * u0 - c21 * u1) * p2;
    let u3 = (k3 - a3 - c30 * u0 - c31 * u1 - c32 * u2) * p3;
    [u0, u1, u2, u3]
}

/// Back substitution through a block's own corner (as in
/// [`corner_forward`]) by `L^T`, last row first.
#[inline(always)]
pub(crate) fn corner_backward(
    [a0, a1, a2, a3]: [f32; BLOCK],
    [c10, c20, c21, c30, c31, c32]: [f32; 6],
    [p0, p1, p2, p3]: [f32; BLOCK],
) -> [f32; BLOCK] {
    let r3 = a3 * p3;
    let r2 = (a2 - c32 * r3) * p2;
    let r1 = (a1 - c21 * r2 - c31 * r3) * p1;
    let r0 = (a0 - c10 * r1 - c20 * r2 - c30 * r3) * p0;
    [r0, r1, r2, r3]
}

#[inline(always)]
fn sum_squares([u0, u1, u2, u3]: [f32; BLOCK]) -> f32 {
    (u0 * u0 + u1 * u1) + (u2 * u2 + u3 * u3)
}

/// A two-factor corner's `(L1, L2)` pairs as the two factors' corners
/// (written out: `array::map` here cost the Cortex-M4 +800 instructions
/// per `predict` at M = 32).
#[inline(always)]
pub(crate) fn split_corner([c0, c1, c2, c3, c4, c5]: [[f32; 2]; 6]) -> ([f32; 6], [f32; 6]) {
    (
        [c0[0], c1[0], c2[0], c3[0], c4[0], c5[0]],
        [c0[1], c1[1], c2[1], c3[1], c4[1], c5[1]],
    )
}

/// The forward substitutions `u1 = L1^{-1} k` and, with two factors,
/// `u2 = L2^{-1} k`, over the packed storage (see [`packed_index`]);
/// returns `(|u1|^2, |u2|^2)`, the second 0 for one factor. The diagonals
/// are stored as reciprocals so the solves never divide.
///
/// The solutions are left in `u` for [`back_substitute_packed`]: pairs
/// `(u1_i, u2_i)` with two factors, `u1` in the first `m` numbers of
/// `u.as_flattened()` with one (its solve streams a contiguous vector).
pub(crate) fn solve_packed<const M: usize>(
    packed: &[f32],
    inv_diagonal1: &[f32; M],
    inv_diagonal2: &[f32; M],
    k: &[f32; M],
    m: usize,
    two_factors: bool,
    u: &mut [[f32; 2]; M],
) -> (f32, f32) {
    if two_factors {
        solve_two(packed, inv_diagonal1, inv_diagonal2, k, m, u)
    } else {
        (
            solve_one(packed, inv_diagonal1, k, m, u.as_flattened_mut()),
            0.0,
        )
    }
}

fn solve_one<const M: usize>(
    packed: &[f32],
    inv_diagonal: &[f32; M],
    k: &[f32; M],
    m: usize,
    u: &mut [f32],
) -> f32 {
    // Four rows at a time, as the two-factor solve: each loaded u feeds
    // four multiply-adds, and the block's numbers are one contiguous stream.
    let mut norm = 0.0f32;
    let mut rest = packed;
    let inputs = k
        .as_chunks::<BLOCK>()
        .0
        .iter()
        .zip(inv_diagonal.as_chunks::<BLOCK>().0);
    let mut solved = 0;
    for (ks, d) in inputs.take(m / BLOCK) {
        let Some((main, tail)) = rest.split_at_checked(BLOCK * solved) else {
            break;
        };
        let Some((corner, tail)) = tail.split_first_chunk::<6>() else {
            break;
        };
        rest = tail;
        let Some((done, todo)) = u.split_at_mut_checked(solved) else {
            break;
        };
        // solved is a multiple of four: neither chunking leaves a tail.
        let dots = dot_block_one(
            main.as_chunks::<BLOCK>().0.as_chunks::<BLOCK>().0,
            done.as_chunks::<BLOCK>().0,
        );
        let block = corner_forward(*ks, dots, *corner, *d);
        norm += sum_squares(block);
        if let Some(slots) = todo.first_chunk_mut::<BLOCK>() {
            *slots = block;
        }
        solved += BLOCK;
    }
    // Rows past the last full block, one at a time.
    for (i, (&ki, &inv)) in k.iter().zip(inv_diagonal).enumerate().take(m).skip(solved) {
        let Some((row, tail)) = rest.split_at_checked(i) else {
            break;
        };
        rest = tail;
        let ui = (ki - dot(row, u)) * inv;
        norm += ui * ui;
        if let Some(slot) = u.get_mut(i) {
            *slot = ui;
        }
    }
    norm
}

/// The four rows of a one-factor block against the solutions `u`, four
/// columns per step (see [`dot_block`]).
#[inline(always)]
fn dot_block_one(columns: &[[[f32; BLOCK]; BLOCK]], u: &[[f32; BLOCK]]) -> [f32; BLOCK] {
    let column = |[a0, a1, a2, a3]: [f32; BLOCK], &[l0, l1, l2, l3]: &[f32; BLOCK], v: f32| {
        [a0 + l0 * v, a1 + l1 * v, a2 + l2 * v, a3 + l3 * v]
    };
    let mut acc = [0.0f32; BLOCK];
    for ([c0, c1, c2, c3], &[v0, v1, v2, v3]) in columns.iter().zip(u) {
        acc = column(column(column(column(acc, c0, v0), c1, v1), c2, v2), c3, v3);
    }
    acc
}

fn solve_two<const M: usize>(
    packed: &[f32],
    inv_diagonal1: &[f32; M],
    inv_diagonal2: &[f32; M],
    k: &[f32; M],
    m: usize,
    u: &mut [[f32; 2]; M],
) -> (f32, f32) {
    // Four rows at a time: each loaded u pair feeds eight multiply-adds,
    // and the block's numbers are one contiguous stream.
    let mut norms = [0.0f32; 2];
    let mut rest = packed;
    let inputs = k
        .as_chunks::<BLOCK>()
        .0
        .iter()
        .zip(inv_diagonal1.as_chunks::<BLOCK>().0)
        .zip(inv_diagonal2.as_chunks::<BLOCK>().0);
    let mut solved = 0;
    for ((ks, d1), d2) in inputs.take(m / BLOCK) {
        let i0 = solved;
        let Some((main, tail)) = rest.split_at_checked(2 * BLOCK * i0) else {
            break;
        };
        let Some((corner, tail)) = tail.split_at_checked(12) else {
            break;
        };
        rest = tail;
        let Some((done, todo)) = u.split_at_mut_checked(i0) else {
            break;
        };
        // i0 is a multiple of four: both chunkings leave no tail.
        let [[a0, b0], [a1, b1], [a2, b2], [a3, b3]] = dot_block(
            main.as_chunks::<8>().0.as_chunks::<BLOCK>().0,
            done.as_chunks::<BLOCK>().0,
        );
        let Some(&corner) = corner.as_chunks::<2>().0.first_chunk::<6>() else {
            break;
        };
        let (c1, c2) = split_corner(corner);
        let [u0, u1, u2, u3] = corner_forward(*ks, [a0, a1, a2, a3], c1, *d1);
        let [v0, v1, v2, v3] = corner_forward(*ks, [b0, b1, b2, b3], c2, *d2);
        norms[0] += sum_squares([u0, u1, u2, u3]);
        norms[1] += sum_squares([v0, v1, v2, v3]);
        if let Some(slots) = todo.first_chunk_mut::<BLOCK>() {
            *slots = [[u0, v0], [u1, v1], [u2, v2], [u3, v3]];
        }
        solved += BLOCK;
    }
    // Rows past the last full block, one at a time.
    for i in solved..m {
        let Some((row, tail)) = rest.split_at_checked(2 * i) else {
            break;
        };
        rest = tail;
        let (dot1, dot2) = dot_pairs(row.as_chunks::<2>().0, u);
        let at = |v: &[f32; M]| v.get(i).copied().unwrap_or(0.0);
        let ki = at(k);
        let pair = [
            (ki - dot1) * at(inv_diagonal1),
            (ki - dot2) * at(inv_diagonal2),
        ];
        norms[0] += pair[0] * pair[0];
        norms[1] += pair[1] * pair[1];
        if let Some(slot) = u.get_mut(i) {
            *slot = pair;
        }
    }
    (norms[0], norms[1])
}

/// The four rows of a block (eight numbers per column: `L1`, `L2` of each
/// row) against the solved pairs `u`: per row, `(L1 row . u1, L2 row . u2)`.
/// Four columns per step (the blocks' column counts are multiples of
/// four): the loop's pointer updates and branch are paid once per 32
/// multiply-adds instead of once per 8, which was 5 of every 23
/// instructions of this loop on the Cortex-M4. Each sum still adds the
/// columns in order, so the result is the same bit for bit.
#[inline(always)]
fn dot_block(columns: &[[[f32; 8]; BLOCK]], u: &[[[f32; 2]; BLOCK]]) -> [[f32; 2]; BLOCK] {
    let column = |acc: [f32; 8], l: &[f32; 8], [u1, u2]: [f32; 2]| {
        let [a0, a1, a2, a3, a4, a5, a6, a7] = acc;
        let [l0, l1, l2, l3, l4, l5, l6, l7] = *l;
        [
            a0 + l0 * u1,
            a1 + l1 * u2,
            a2 + l2 * u1,
            a3 + l3 * u2,
            a4 + l4 * u1,
            a5 + l5 * u2,
            a6 + l6 * u1,
            a7 + l7 * u2,
        ]
    };
    let mut acc = [0.0f32; 8];
    for ([c0, c1, c2, c3], &[v0, v1, v2, v3]) in columns.iter().zip(u) {
        acc = column(column(column(column(acc, c0, v0), c1, v1), c2, v2), c3, v3);
    }
    let [a0, a1, a2, a3, a4, a5, a6, a7] = acc;
    [[a0, a1], [a2, a3], [a4, a5], [a6, a7]]
}

/// Rows multiplied together by the product form's blocks: eight rows per
/// column group load each `k` once for 32 multiply-adds (four rows: once
/// for 16), and halve the blocks whose corners are written out.
const PRODUCT_BLOCK: usize = 8;

/// Strictly lower entries of a product block's own corner.
const PRODUCT_CORNER: usize = PRODUCT_BLOCK * (PRODUCT_BLOCK - 1) / 2;

/// Where the product form's storage starts in the `M x M` slots: past the
/// `M (M - 1) / 2` numbers a one-factor blob's solves layout
/// ([`packed_index`]) fills, so the loader writes both and the variance
/// form read at the body's end picks one without moving numbers.
pub(crate) const fn product_offset(capacity: usize) -> usize {
    capacity * capacity / 2
}

/// Where `C[row][col]` (`col < row`) of the product form's one factor
/// sits in an `m`-basis model's product storage (from
/// [`product_offset`] on).
///
/// Rows in blocks of eight (`i0 = 8b`), each block holding first, for
/// every `j < i0`, the numbers `C[i0+t][j]` (`t = 0..8`) side by side,
/// then the 28 entries of the block's own lower corner row by row; rows
/// past the last full block follow as plain rows. `m (m - 1) / 2`
/// numbers, as the solves' layout of one factor.
pub(crate) fn product_index(row: usize, col: usize, m: usize) -> usize {
    let full_rows = m / PRODUCT_BLOCK * PRODUCT_BLOCK;
    if row < full_rows {
        let (b, t) = (row / PRODUCT_BLOCK, row % PRODUCT_BLOCK);
        let i0 = PRODUCT_BLOCK * b;
        if col < i0 {
            product_block_start(b) + PRODUCT_BLOCK * col + t
        } else {
            product_block_start(b) + PRODUCT_BLOCK * i0 + t * t.saturating_sub(1) / 2 + (col - i0)
        }
    } else {
        let before: usize = (full_rows..row).sum();
        product_block_start(full_rows / PRODUCT_BLOCK) + before + col
    }
}

/// Offset of product block `b`: blocks before it hold `8 i0 + 28`
/// numbers each.
const fn product_block_start(b: usize) -> usize {
    32 * b * b.saturating_sub(1) + PRODUCT_CORNER * b
}

/// `acc` plus the eight rows of a product block against `k`, four
/// columns per step.
#[inline(always)]
fn dot_block_eight(
    mut acc: [f32; PRODUCT_BLOCK],
    columns: &[[[f32; PRODUCT_BLOCK]; 4]],
    k: &[[f32; 4]],
) -> [f32; PRODUCT_BLOCK] {
    let column = |acc: [f32; PRODUCT_BLOCK], l: &[f32; PRODUCT_BLOCK], v: f32| {
        let [a0, a1, a2, a3, a4, a5, a6, a7] = acc;
        let [l0, l1, l2, l3, l4, l5, l6, l7] = *l;
        [
            a0 + l0 * v,
            a1 + l1 * v,
            a2 + l2 * v,
            a3 + l3 * v,
            a4 + l4 * v,
            a5 + l5 * v,
            a6 + l6 * v,
            a7 + l7 * v,
        ]
    };
    for ([c0, c1, c2, c3], &[v0, v1, v2, v3]) in columns.iter().zip(k) {
        acc = column(column(column(column(acc, c0, v0), c1, v1), c2, v2), c3, v3);
    }
    acc
}

/// A product block's own lower corner (row by row) and diagonal times the
/// block's `k`: the block's part of its eight numbers of `C k`, which
/// then start the sums over the columns before it (no zeros to load). No
/// row waits for another. Written out: as loops LLVM kept them in memory
/// (+1,200 instructions per `predict` at M = 32 on the Cortex-M4).
#[inline(always)]
fn corner_product(
    [k0, k1, k2, k3, k4, k5, k6, k7]: [f32; PRODUCT_BLOCK],
    [
        c10, c20, c21, c30, c31, c32, c40, c41, c42, c43, c50, c51, c52, c53, c54, c60, c61,
        c62, c63, c64, c65, c70, c71, c72, c73, c74, c75, c76,
    ]: [f32; PRODUCT_CORNER],
    [d0, d1, d2, d3, d4, d5, d6, d7]: [f32; PRODUCT_BLOCK],
) -> [f32; PRODUCT_BLOCK] {
    [
        d0 * k0,
        c10 * k0 + d1 * k1,
        c20 * k0 + c21 * k1 + d2 * k2,
        c30 * k0 + c31 * k1 + c32 * k2 + d3 * k3,
        c40 * k0 + c41 * k1 + c42 * k2 + c43 * k3 + d4 * k4,
        c50 * k0 + c51 * k1 + c52 * k2 + c53 * k3 + c54 * k4 + d5 * k5,
        c60 * k0 + c61 * k1 + c62 * k2 + c63 * k3 + c64 * k4 + c65 * k5 + d6 * k6,
        c70 * k0 + c71 * k1 + c72 * k2 + c73 * k3 + c74 * k4 + c75 * k5 + c76 * k6 + d7 * k7,
    ]
}

/// The transposed corner: `C^T u` over a product block's own corner and
/// diagonal, the block's `u` in, its columns' numbers out.
#[inline(always)]
fn corner_transposed_product(
    [u0, u1, u2, u3, u4, u5, u6, u7]: [f32; PRODUCT_BLOCK],
    [
        c10, c20, c21, c30, c31, c32, c40, c41, c42, c43, c50, c51, c52, c53, c54, c60, c61,
        c62, c63, c64, c65, c70, c71, c72, c73, c74, c75, c76,
    ]: [f32; PRODUCT_CORNER],
    [d0, d1, d2, d3, d4, d5, d6, d7]: [f32; PRODUCT_BLOCK],
) -> [f32; PRODUCT_BLOCK] {
    [
        d0 * u0 + c10 * u1 + c20 * u2 + c30 * u3 + c40 * u4 + c50 * u5 + c60 * u6 + c70 * u7,
        d1 * u1 + c21 * u2 + c31 * u3 + c41 * u4 + c51 * u5 + c61 * u6 + c71 * u7,
        d2 * u2 + c32 * u3 + c42 * u4 + c52 * u5 + c62 * u6 + c72 * u7,
        d3 * u3 + c43 * u4 + c53 * u5 + c63 * u6 + c73 * u7,
        d4 * u4 + c54 * u5 + c64 * u6 + c74 * u7,
        d5 * u5 + c65 * u6 + c75 * u7,
        d6 * u6 + c76 * u7,
        d7 * u7,
    ]
}

/// `|u|^2` of a product block, in four independent pairs.
#[inline(always)]
fn block_norm([u0, u1, u2, u3, u4, u5, u6, u7]: [f32; PRODUCT_BLOCK]) -> f32 {
    ((u0 * u0 + u1 * u1) + (u2 * u2 + u3 * u3)) + ((u4 * u4 + u5 * u5) + (u6 * u6 + u7 * u7))
}

/// `u = C k` for the product form's one factor `C` over its storage (see
/// [`product_index`]) with its diagonal as it is (not inverted); returns
/// `|u|^2` and, if asked, leaves `u` in the first `m` numbers of `u` for
/// [`multiply_transposed_packed`]. The product form of the variance:
/// `M (M + 1) / 2` multiply-adds and, unlike the forward substitution,
/// no row waits on the one before, so loads and multiply-adds overlap.
pub(crate) fn multiply_packed<const M: usize>(
    packed: &[f32],
    diagonal: &[f32; M],
    k: &[f32; M],
    m: usize,
    mut u: Option<&mut [f32]>,
) -> f32 {
    let mut norm = 0.0f32;
    let mut rest = packed;
    let k4 = k.as_chunks::<4>().0;
    let blocks = k
        .as_chunks::<PRODUCT_BLOCK>()
        .0
        .iter()
        .zip(diagonal.as_chunks::<PRODUCT_BLOCK>().0);
    let mut done = 0;
    for (ks, d) in blocks.take(m / PRODUCT_BLOCK) {
        let Some((main, tail)) = rest.split_at_checked(PRODUCT_BLOCK * done) else {
            break;
        };
        let Some((corner, tail)) = tail.split_first_chunk::<PRODUCT_CORNER>() else {
            break;
        };
        rest = tail;
        // `main` holds done / 4 groups of four columns: the zip stops there.
        let own = corner_product(*ks, *corner, *d);
        let columns = main.as_chunks::<PRODUCT_BLOCK>().0.as_chunks::<4>().0;
        let block = dot_block_eight(own, columns, k4);
        norm += block_norm(block);
        let slots = u.as_deref_mut().and_then(|u| u.get_mut(done..));
        if let Some(slots) = slots.and_then(|u| u.first_chunk_mut::<PRODUCT_BLOCK>()) {
            *slots = block;
        }
        done += PRODUCT_BLOCK;
    }
    // Rows past the last full block, one at a time (from `done` by
    // slicing: `skip` costs a 39-instruction `nth` call even when empty).
    let tail = k.get(done..m).zip(diagonal.get(done..m));
    let tail = tail.into_iter().flat_map(|(k, d)| k.iter().zip(d));
    for (i, (&ki, &di)) in (done..).zip(tail) {
        let Some((row, tail)) = rest.split_at_checked(i) else {
            break;
        };
        rest = tail;
        let ui = dot(row, k) + di * ki;
        norm += ui * ui;
        if let Some(slot) = u.as_deref_mut().and_then(|u| u.get_mut(i)) {
            *slot = ui;
        }
    }
    norm
}

/// `r = C^T u` for the `u` that [`multiply_packed`] left in the first `m`
/// numbers of `pairs.as_flattened()`; afterwards `pairs[i] = (r_i, 0)`, as
/// [`back_substitute_packed`] leaves one factor's `r`. The weights of the
/// product form's variance gradient: `d|u|^2 = 2 (C^T u) . dk`.
pub(crate) fn multiply_transposed_packed<const M: usize>(
    packed: &[f32],
    diagonal: &[f32; M],
    pairs: &mut [[f32; 2]; M],
    m: usize,
) {
    let mut u = [0.0f32; M];
    for (ui, &v) in u.iter_mut().zip(pairs.as_flattened()).take(m) {
        *ui = v;
    }
    let mut r = [0.0f32; M];
    let mut rest = packed;
    let blocks = u
        .as_chunks::<PRODUCT_BLOCK>()
        .0
        .iter()
        .zip(diagonal.as_chunks::<PRODUCT_BLOCK>().0);
    let mut done = 0;
    for (us, ds) in blocks.take(m / PRODUCT_BLOCK) {
        let Some((main, tail)) = rest.split_at_checked(PRODUCT_BLOCK * done) else {
            break;
        };
        let Some((corner, tail)) = tail.split_first_chunk::<PRODUCT_CORNER>() else {
            break;
        };
        rest = tail;
        let Some((before, own)) = r.split_at_mut_checked(done) else {
            break;
        };
        // Column j of the block's rows adds their eight numbers times u.
        let &[u0, u1, u2, u3, u4, u5, u6, u7] = us;
        for (rj, &[l0, l1, l2, l3, l4, l5, l6, l7]) in
            before.iter_mut().zip(main.as_chunks::<PRODUCT_BLOCK>().0)
        {
            *rj += ((l0 * u0 + l1 * u1) + (l2 * u2 + l3 * u3))
                + ((l4 * u4 + l5 * u5) + (l6 * u6 + l7 * u7));
        }
        if let Some(own) = own.first_chunk_mut::<PRODUCT_BLOCK>() {
            *own = corner_transposed_product(*us, *corner, *ds);
        }
        done += PRODUCT_BLOCK;
    }
    // Rows past the last full block, one at a time.
    for (i, (&ui, &di)) in u.iter().zip(diagonal).enumerate().take(m).skip(done) {
        let Some((row, tail)) = rest.split_at_checked(i) else {
            break;
        };
        rest = tail;
        let Some((before, own)) = r.split_at_mut_checked(i) else {
            break;
        };
        subtract_scaled(before, row, -ui);
        if let Some(slot) = own.first_mut() {
            *slot = di * ui;
        }
    }
    for (pair, &ri) in pairs.iter_mut().zip(&r).take(m) {
        *pair = [ri, 0.0];
    }
}

/// The back substitutions `r1 = L1^{-T} u1` and, with two factors,
/// `r2 = L2^{-T} u2`, in place over the forward solutions [`solve_packed`]
/// left in `u`; afterwards `u[i] = (r1_i, r2_i)` whatever the number of
/// factors (`r2 = 0` with one). These are the weights of the variance's
/// gradient: `d|u1|^2 = 2 r1 . dk`.
///
/// `L^T` is walked by rows of `L`, last first (`acc[..j] -= L[j][..j] r_j`),
/// so the solves stream the same packed blocks as the forward ones, in
/// reverse, four rows per block.
pub(crate) fn back_substitute_packed<const M: usize>(
    packed: &[f32],
    inv_diagonal1: &[f32; M],
    inv_diagonal2: &[f32; M],
    u: &mut [[f32; 2]; M],
    m: usize,
    two_factors: bool,
) {
    if two_factors {
        back_two(packed, inv_diagonal1, inv_diagonal2, u, m);
    } else {
        back_one(packed, inv_diagonal1, u.as_flattened_mut(), m);
        // Spread r1 from the first m numbers into the pairs' first halves,
        // last first: slot i is read before pair i (numbers 2i, 2i + 1 >= i)
        // is written.
        for i in (0..m).rev() {
            let r = u.as_flattened().get(i).copied().unwrap_or(0.0);
            if let Some(pair) = u.get_mut(i) {
                *pair = [r, 0.0];
            }
        }
    }
}

fn back_one<const M: usize>(packed: &[f32], inv_diagonal: &[f32; M], acc: &mut [f32], m: usize) {
    let full_rows = m / BLOCK * BLOCK;
    let blocks_end = block_start(full_rows / BLOCK, 1);
    // Each row past the last full block holds as many numbers as its index.
    let rows_end =
        blocks_end + (m * m.saturating_sub(1) - full_rows * full_rows.saturating_sub(1)) / 2;
    let Some((mut blocks, mut rows)) = packed
        .get(..rows_end)
        .and_then(|p| p.split_at_checked(blocks_end))
    else {
        return;
    };
    let tail_rows = inv_diagonal.iter().enumerate().take(m).skip(full_rows);
    for (j, &inv) in tail_rows.rev() {
        let Some((before, row)) = rows
            .len()
            .checked_sub(j)
            .and_then(|at| rows.split_at_checked(at))
        else {
            break;
        };
        rows = before;
        let Some((head, tail)) = acc.split_at_mut_checked(j) else {
            break;
        };
        let Some(slot) = tail.first_mut() else {
            break;
        };
        let r = *slot * inv;
        *slot = r;
        subtract_scaled(head, row, r);
    }
    let diagonals = inv_diagonal.as_chunks::<BLOCK>().0.iter().enumerate();
    for (b, d) in diagonals.take(full_rows / BLOCK).rev() {
        let i0 = BLOCK * b;
        let Some((before, block)) = blocks.split_at_checked(block_start(b, 1)) else {
            break;
        };
        blocks = before;
        let Some((main, corner)) = block.split_at_checked(BLOCK * i0) else {
            break;
        };
        let Some(&corner) = corner.first_chunk::<6>() else {
            break;
        };
        let Some((done, todo)) = acc.split_at_mut_checked(i0) else {
            break;
        };
        let Some(slots) = todo.first_chunk_mut::<BLOCK>() else {
            break;
        };
        let [r0, r1, r2, r3] = corner_backward(*slots, corner, *d);
        *slots = [r0, r1, r2, r3];
        // Every earlier row, one column of the block (four numbers) each;
        // four rows per step (i0 is a multiple of four: no tails).
        let columns = main.as_chunks::<BLOCK>().0.as_chunks::<BLOCK>().0;
        for (a4, l4) in done.as_chunks_mut::<BLOCK>().0.iter_mut().zip(columns) {
            for (a, &[l0, l1, l2, l3]) in a4.iter_mut().zip(l4) {
                *a = *a - l0 * r0 - l1 * r1 - l2 * r2 - l3 * r3;
            }
        }
    }
}

/// `acc -= r row` over the common length, four at a time (fewer loop
/// branches on the Cortex-M4, which has no vector unit for this).
#[inline(always)]
fn subtract_scaled(acc: &mut [f32], row: &[f32], r: f32) {
    let n = acc.len().min(row.len());
    let (Some(acc), Some(row)) = (acc.get_mut(..n), row.get(..n)) else {
        return;
    };
    let (acc4, acc_tail) = acc.as_chunks_mut::<4>();
    let (row4, row_tail) = row.as_chunks::<4>();
    for (a, l) in acc4.iter_mut().zip(row4) {
        let [a0, a1, a2, a3] = *a;
        let [l0, l1, l2, l3] = *l;
        *a = [a0 - l0 * r, a1 - l1 * r, a2 - l2 * r, a3 - l3 * r];
    }
    for (a, &l) in acc_tail.iter_mut().zip(row_tail) {
        *a -= l * r;
    }
}

fn back_two<const M: usize>(
    packed: &[f32],
    inv_diagonal1: &[f32; M],
    inv_diagonal2: &[f32; M],
    acc: &mut [[f32; 2]; M],
    m: usize,
) {
    let full_rows = m / BLOCK * BLOCK;
    let blocks_end = block_start(full_rows / BLOCK, 2);
    // Rows past the last full block hold 2 row numbers each.
    let rows_end = blocks_end + m * m.saturating_sub(1) - full_rows * full_rows.saturating_sub(1);
    let Some((mut blocks, mut rows)) = packed
        .get(..rows_end)
        .and_then(|p| p.split_at_checked(blocks_end))
    else {
        return;
    };
    for j in (full_rows..m).rev() {
        let (Some(&inv1), Some(&inv2)) = (inv_diagonal1.get(j), inv_diagonal2.get(j)) else {
            break;
        };
        let Some((before, row)) = rows
            .len()
            .checked_sub(2 * j)
            .and_then(|at| rows.split_at_checked(at))
        else {
            break;
        };
        rows = before;
        let Some((head, tail)) = acc.split_at_mut_checked(j) else {
            break;
        };
        let Some(slot) = tail.first_mut() else {
            break;
        };
        let r = [slot[0] * inv1, slot[1] * inv2];
        *slot = r;
        for (a, &[l1, l2]) in head.iter_mut().zip(row.as_chunks::<2>().0) {
            *a = [a[0] - l1 * r[0], a[1] - l2 * r[1]];
        }
    }
    let diagonals = inv_diagonal1
        .as_chunks::<BLOCK>()
        .0
        .iter()
        .zip(inv_diagonal2.as_chunks::<BLOCK>().0)
        .enumerate();
    for (b, (d1, d2)) in diagonals.take(full_rows / BLOCK).rev() {
        let i0 = BLOCK * b;
        let Some((before, block)) = blocks.split_at_checked(block_start(b, 2)) else {
            break;
        };
        blocks = before;
        let Some((main, corner)) = block.split_at_checked(2 * BLOCK * i0) else {
            break;
        };
        let Some(&corner) = corner.as_chunks::<2>().0.first_chunk::<6>() else {
            break;
        };
        let Some((done, todo)) = acc.split_at_mut_checked(i0) else {
            break;
        };
        let Some(slots) = todo.first_chunk_mut::<BLOCK>() else {
            break;
        };
        // The block's corner first, its last row first.
        let (c1, c2) = split_corner(corner);
        let [a0, a1, a2, a3] = *slots;
        let [p0, p1, p2, p3] = corner_backward([a0[0], a1[0], a2[0], a3[0]], c1, *d1);
        let [q0, q1, q2, q3] = corner_backward([a0[1], a1[1], a2[1], a3[1]], c2, *d2);
        let (r0, r1, r2, r3) = ([p0, q0], [p1, q1], [p2, q2], [p3, q3]);
        *slots = [r0, r1, r2, r3];
        // Then every earlier row, one column of the block (eight numbers)
        // each, with one chain of multiply-subtracts per factor; four rows
        // per step, as in the forward solve (i0 is a multiple of four, so
        // neither chunking leaves a tail).
        let update = |a: &mut [f32; 2], column: &[f32; 8]| {
            let [l0, l1, l2, l3, l4, l5, l6, l7] = *column;
            *a = [
                a[0] - l0 * r0[0] - l2 * r1[0] - l4 * r2[0] - l6 * r3[0],
                a[1] - l1 * r0[1] - l3 * r1[1] - l5 * r2[1] - l7 * r3[1],
            ];
        };
        let columns = main.as_chunks::<8>().0.as_chunks::<BLOCK>().0;
        for ([a0, a1, a2, a3], [l0, l1, l2, l3]) in
            done.as_chunks_mut::<BLOCK>().0.iter_mut().zip(columns)
        {
            update(a0, l0);
            update(a1, l1);
            update(a2, l2);
            update(a3, l3);
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

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

    /// Every entry of both factors gets its own slot, inside `M x M`.
    #[test]
    fn packed_layout_is_a_bijection_into_the_square_array() {
        for m in 1..40 {
            for two in [false, true] {
                let mut seen = std::vec![false; m * m];
                for row in 0..m {
                    for col in 0..row {
                        for factor in 0..if two { 2 } else { 1 } {
                            let at = packed_index(row, col, factor, m, two);
                            assert!(at < m * m, "m {m} ({row}, {col}) -> {at}");
                            assert!(!seen[at], "m {m} ({row}, {col}, {factor}) collides");
                            seen[at] = true;
                        }
                    }
                }
            }
        }
    }

    /// Every entry of the product form's factor gets its own slot, and
    /// the product storage fits beside a one-factor solves layout.
    #[test]
    fn product_layout_is_a_bijection_beside_the_solves_layout() {
        for capacity in 1..40 {
            for m in 1..=capacity {
                let mut seen = std::vec![false; capacity * capacity];
                for row in 0..m {
                    for col in 0..row {
                        let solves = packed_index(row, col, 0, m, false);
                        let product = product_offset(capacity) + product_index(row, col, m);
                        assert!(solves < product_offset(capacity), "m {m} ({row}, {col})");
                        for at in [solves, product] {
                            assert!(at < capacity * capacity, "m {m} ({row}, {col}) -> {at}");
                            assert!(!seen[at], "m {m} ({row}, {col}) collides at {at}");
                            seen[at] = true;
                        }
                    }
                }
            }
        }
    }

    /// Forward then back substitution through the packed layout against
    /// `L^{-T} L^{-1} k` in f64, for every `m` up to the capacity (full
    /// blocks, partial ones, one factor and two).
    #[test]
    fn back_substitution_gives_the_inverse_of_l_lt_times_k() {
        const M: usize = 19;
        for m in 1..=M {
            for two in [false, true] {
                // Diagonally dominant lower factors with entries of both signs.
                let entry = |f: usize, i: usize, j: usize| -> f64 {
                    if i == j {
                        2.0 + 0.1 * (i + f) as f64
                    } else {
                        0.3 * (((3 * i + 7 * j + 5 * f) % 11) as f64 / 5.0 - 1.0)
                    }
                };
                let mut packed = [[0.0f32; M]; M];
                let mut inv = [[0.0f32; M]; 2];
                for (f, diagonal) in inv.iter_mut().enumerate().take(if two { 2 } else { 1 }) {
                    for (i, slot) in diagonal.iter_mut().enumerate().take(m) {
                        *slot = (1.0 / entry(f, i, i)) as f32;
                        for j in 0..i {
                            let at = packed_index(i, j, f, m, two);
                            packed.as_flattened_mut()[at] = entry(f, i, j) as f32;
                        }
                    }
                }
                let k: [f32; M] = core::array::from_fn(|i| 0.5 - 0.13 * i as f32);
                let mut u = [[0.0f32; 2]; M];
                let (n1, n2) =
                    solve_packed(packed.as_flattened(), &inv[0], &inv[1], &k, m, two, &mut u);
                back_substitute_packed(packed.as_flattened(), &inv[0], &inv[1], &mut u, m, two);
                for f in 0..2 {
                    // f64: forward, then backward, on the same f32 entries.
                    let l = |i: usize, j: usize| -> f64 {
                        if i == j {
                            1.0 / f64::from(inv[f][i])
                        } else {
                            f64::from(entry(f, i, j) as f32)
                        }
                    };
                    let mut y = std::vec![0.0f64; m];
                    for i in 0..m {
                        let s: f64 = (0..i).map(|j| l(i, j) * y[j]).sum();
                        y[i] = (f64::from(k[i]) - s) / l(i, i);
                    }
                    let norm: f64 = y.iter().map(|v| v * v).sum();
                    let mut r = y.clone();
                    for i in (0..m).rev() {
                        let s: f64 = (i + 1..m).map(|j| l(j, i) * r[j]).sum();
                        r[i] = (y[i] - s) / l(i, i);
                    }
                    let used = f == 0 || two;
                    let got_norm = if f == 0 { n1 } else { n2 };
                    let want_norm = if used { norm } else { 0.0 };
                    assert!((f64::from(got_norm) - want_norm).abs() <= 1e-5 * want_norm.max(1.0));
                    for i in 0..m {
                        let want = if used { r[i] } else { 0.0 };
                        assert!(
                            (f64::from(u[i][f]) - want).abs() <= 1e-5 * want.abs().max(1.0),
                            "m {m} two {two} factor {f} row {i}: {} vs {want}",
                            u[i][f]
                        );
                    }
                }
            }
        }
    }

    /// `C k`, `|C k|^2` and `C^T (C k)` through the product layout against
    /// plain f64 sums, for every `m` up to the capacity (full blocks and
    /// partial ones).
    #[test]
    #[allow(clippy::needless_range_loop)] // matrix indices read as the maths
    fn products_match_plain_sums() {
        const M: usize = 19;
        for m in 1..=M {
            let entry = |i: usize, j: usize| -> f32 {
                if i == j {
                    1.5 + 0.1 * i as f32
                } else {
                    0.3 * (((3 * i + 7 * j) % 11) as f32 / 5.0 - 1.0)
                }
            };
            let mut packed = [[0.0f32; M]; M];
            let mut diagonal = [0.0f32; M];
            for i in 0..m {
                diagonal[i] = entry(i, i);
                for j in 0..i {
                    packed.as_flattened_mut()[product_index(i, j, m)] = entry(i, j);
                }
            }
            let k: [f32; M] = core::array::from_fn(|i| 0.5 - 0.13 * i as f32);
            let mut pairs = [[0.0f32; 2]; M];
            let norm = multiply_packed(
                packed.as_flattened(),
                &diagonal,
                &k,
                m,
                Some(pairs.as_flattened_mut()),
            );
            let alone = multiply_packed(packed.as_flattened(), &diagonal, &k, m, None);
            assert_eq!(norm, alone);
            let want: std::vec::Vec<f64> = (0..m)
                .map(|i| {
                    (0..=i)
                        .map(|j| f64::from(entry(i, j)) * f64::from(k[j]))
                        .sum()
                })
                .collect();
            let want_norm: f64 = want.iter().map(|v| v * v).sum();
            assert!((f64::from(norm) - want_norm).abs() <= 1e-5 * want_norm.max(1.0));
            for i in 0..m {
                let got = f64::from(pairs.as_flattened()[i]);
                assert!(
                    (got - want[i]).abs() <= 1e-5 * want[i].abs().max(1.0),
                    "m {m} row {i}"
                );
            }
            multiply_transposed_packed(packed.as_flattened(), &diagonal, &mut pairs, m);
            for j in 0..m {
                let r: f64 = (j..m).map(|i| f64::from(entry(i, j)) * want[i]).sum();
                assert!(
                    (f64::from(pairs[j][0]) - r).abs() <= 1e-5 * r.abs().max(1.0),
                    "m {m} column {j}: {} vs {r}",
                    pairs[j][0]
                );
                assert_eq!(pairs[j][1], 0.0);
            }
        }
    }

    /// Two chunks of four features and a tail of one, against plain sums,
    /// for every number of rows up to the capacity (rows past `m` ignored).
    #[test]
    fn weighted_offset_sums_match_plain_sums() {
        const G: usize = 9;
        let rows: [[[f32; 2]; G]; 5] = core::array::from_fn(|i| {
            core::array::from_fn(|g| [0.3 * i as f32 - 0.1 * g as f32, 0.5 + 0.05 * (i + g) as f32])
        });
        let weights: [[f32; 2]; 5] =
            core::array::from_fn(|i| [1.0 - 0.2 * i as f32, 0.1 * i as f32]);
        let z: [f32; G] = core::array::from_fn(|g| 0.7 - 0.15 * g as f32);
        for m in 0..=5 {
            let scaled = weighted_offset_sums(&rows, &weights, &z, m, scaled_offset);
            let unit = weighted_offset_sums(&rows, &weights, &z, m, unit_offset);
            for g in 0..G {
                for f in 0..2 {
                    let plain = |offset: &dyn Fn(usize) -> f32| -> f32 {
                        (0..m).map(|i| weights[i][f] * offset(i)).sum()
                    };
                    let want = plain(&|i| rows[i][g][1] * (rows[i][g][1] * z[g] - rows[i][g][0]));
                    assert!((scaled[g][f] - want).abs() <= 1e-6, "m {m} g {g} f {f}");
                    let want = plain(&|i| z[g] - rows[i][g][0]);
                    assert!((unit[g][f] - want).abs() <= 1e-6, "m {m} g {g} f {f}");
                }
            }
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

    /// The fixed-point exp against f64 at exact arguments over its
    /// whole range: the polynomial's 3.4e-7 (at its worst mantissa, not
    /// among these arguments) and the truncated fraction's 8e-8 at most;
    /// exactly 1 at 0.
    #[test]
    fn exp2_is_accurate_to_a_few_ulp() {
        let mut worst = 0.0f64;
        let mut fixed = 0u64;
        // Up to 2^-125 (micromath's exp is defined to e^-87 only; the end
        // of the range is the next test's).
        while fixed < 125 << EXP2_FRACTION_BITS {
            let argument = fixed as f32;
            let exact = (-f64::from(argument) / f64::from(1u32 << EXP2_FRACTION_BITS)).exp2();
            let got = scaled_exp2_of_negative(argument, &EXP2_OF_NEGATIVE);
            worst = worst.max((f64::from(got) / exact - 1.0).abs());
            fixed += 9_876_543;
        }
        let limit = if cfg!(feature = "micromath") {
            1e-2
        } else {
            2.9e-7
        };
        assert!(worst < limit, "worst relative error {worst:e}");
        if cfg!(not(feature = "micromath")) {
            assert_eq!(scaled_exp2_of_negative(0.0, &EXP2_OF_NEGATIVE), 1.0);
        }
    }

    /// `e^x` in nats: the polynomial's error plus the argument's scaling,
    /// one more rounding of `x` and the rounded `log2 e` (relative `|x|
    /// 8e-8` in the result).
    #[test]
    fn exp_is_accurate_to_a_few_ulp_of_its_argument() {
        let mut worst = 0.0f64;
        let mut x = -87.0f32;
        while x <= 0.0 {
            let exact = f64::from(x).exp();
            let rel = ((f64::from(exp_non_positive(x)) - exact) / exact).abs();
            worst = worst.max(rel / (3e-7 + f64::from(-x) * 8e-8));
            x += 0.0137;
        }
        let limit = if cfg!(feature = "micromath") {
            1e5
        } else {
            1.0
        };
        assert!(worst < limit, "worst relative error {worst:e} of the bound");
    }

    #[test]
    fn exp_of_far_away_distances_is_zero_not_nan() {
        for x in [-88.1f32, -1e3, -1e30, f32::MIN, f32::NEG_INFINITY] {
            assert_eq!(exp_non_positive(x), 0.0, "exp({x})");
        }
        // The last normal power of two, then 0.
        let n126 = (126u32 << EXP2_FRACTION_BITS) as f32;
        let at = scaled_exp2_of_negative(n126, &EXP2_OF_NEGATIVE);
        let limit = if cfg!(feature = "micromath") {
            1e-2
        } else {
            2.5e-7
        };
        assert!(
            (f64::from(at) / 2f64.powi(-126) - 1.0).abs() < limit,
            "{at:e}"
        );
        let n127 = (127u32 << EXP2_FRACTION_BITS) as f32;
        assert_eq!(scaled_exp2_of_negative(n127, &EXP2_OF_NEGATIVE), 0.0);
    }
}
