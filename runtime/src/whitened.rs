//! The kernels of the whitened variance form ([`crate::VarianceForm::Whitened`]):
//! `L1 = chol(K_M)` and the lower-triangular `G` whose `S = G + G^T - G^T G`
//! is the covariance of the whitened inducing values, interleaved in the
//! two-factor layout of [`math::packed_index`] (`L1`'s diagonal stored as
//! its reciprocal, `G`'s as it is).
//!
//! `S` is written through `G` rather than through a factor of `S` or of
//! `I - S` because a well-determined direction has a small `S`, hence a
//! small `G`, held to f32's relative precision (`I - S` would hold it as
//! the difference of two numbers near 1), and because forgetting towards
//! the prior, `S <- lam S + (1 - lam) I`, is `I - G <- sqrt(lam) (I - G)`:
//! a scaling, folded into the rank-one update's rotations.

use crate::math::{block_start, corner_backward, corner_forward, split_corner, BLOCK};

/// The smallest diagonal of `G` the rotations leave: a diagonal must be
/// `> 0` in a blob, and `I - G` must keep a row whose rotation is defined.
/// `S` moves by at most this much.
const DIAGONAL_FLOOR: f32 = 1e-30;

/// Added under the square root of a rotation: a row of `I - G` and a
/// rotated vector that are both zero then give a rotation of zero, not NaN.
const TINY: f32 = 1e-37;

/// `(sqrt(a), 1 / sqrt(a))` for a normal `a > 0` (0 gives `(0, 1.3e19)`),
/// to 2e-7 relative: the classic first guess from the exponent bits, then
/// three Newton steps for the reciprocal root. Plain f32 arithmetic, so the
/// same bits on every target and the same instructions for every `a`: a
/// Cortex-M4's `vsqrt` is out of reach of stable `no_std` Rust without
/// `unsafe`, and libm's software root costs about a hundred instructions
/// and branches on special values.
#[inline(always)]
pub(crate) fn root_and_reciprocal(a: f32) -> (f32, f32) {
    let half = 0.5 * a;
    let mut y = f32::from_bits(0x5F37_5A86_u32.wrapping_sub(a.to_bits() >> 1));
    y *= 1.5 - half * y * y;
    y *= 1.5 - half * y * y;
    y *= 1.5 - half * y * y;
    (a * y, y)
}

/// `z = L1^-1 k` and `u = G z` into `zu` (pairs `(z_i, u_i)`); returns
/// `(|z|^2, z^T S z)`, the second summed as `u . (2 z - u)`.
pub(crate) fn solve_and_multiply<const M: usize>(
    packed: &[f32],
    inv_diagonal1: &[f32; M],
    diagonal2: &[f32; M],
    k: &[f32; M],
    m: usize,
    zu: &mut [[f32; 2]; M],
) -> (f32, f32) {
    let (mut n, mut s) = (0.0f32, 0.0f32);
    let mut rest = packed;
    let inputs = k
        .as_chunks::<BLOCK>()
        .0
        .iter()
        .zip(inv_diagonal1.as_chunks::<BLOCK>().0)
        .zip(diagonal2.as_chunks::<BLOCK>().0);
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
        let Some((done, todo)) = zu.split_at_mut_checked(i0) else {
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
        let z = corner_forward(*ks, [a0, a1, a2, a3], c1, *d1);
        let u = corner_product([b0, b1, b2, b3], c2, *d2, z);
        let [z0, z1, z2, z3] = z;
        let [u0, u1, u2, u3] = u;
        n += (z0 * z0 + z1 * z1) + (z2 * z2 + z3 * z3);
        s += (u0 * (2.0 * z0 - u0) + u1 * (2.0 * z1 - u1))
            + (u2 * (2.0 * z2 - u2) + u3 * (2.0 * z3 - u3));
        if let Some(slots) = todo.first_chunk_mut::<BLOCK>() {
            *slots = [[z0, u0], [z1, u1], [z2, u2], [z3, u3]];
        }
        solved += BLOCK;
    }
    // Rows past the last full block, one at a time.
    for i in solved..m {
        let Some((row, tail)) = rest.split_at_checked(2 * i) else {
            break;
        };
        rest = tail;
        let (mut dot1, mut dot2) = (0.0f32, 0.0f32);
        for (&[l, g], &[z, _]) in row.as_chunks::<2>().0.iter().zip(zu.iter()) {
            dot1 += l * z;
            dot2 += g * z;
        }
        let at = |v: &[f32; M]| v.get(i).copied().unwrap_or(0.0);
        let z = (at(k) - dot1) * at(inv_diagonal1);
        let u = dot2 + at(diagonal2) * z;
        n += z * z;
        s += u * (2.0 * z - u);
        if let Some(slot) = zu.get_mut(i) {
            *slot = [z, u];
        }
    }
    (n, s)
}

/// The four rows of a block (pairs `(L1, G)` per row and column) against
/// the `z` of the pairs solved before it: per row `(L1 row . z, G row .
/// z)`, four columns per step.
#[inline(always)]
fn dot_block(columns: &[[[f32; 8]; BLOCK]], zu: &[[[f32; 2]; BLOCK]]) -> [[f32; 2]; BLOCK] {
    let column = |acc: [f32; 8], l: &[f32; 8], z: f32| {
        let [a0, a1, a2, a3, a4, a5, a6, a7] = acc;
        let [l0, l1, l2, l3, l4, l5, l6, l7] = *l;
        [
            a0 + l0 * z,
            a1 + l1 * z,
            a2 + l2 * z,
            a3 + l3 * z,
            a4 + l4 * z,
            a5 + l5 * z,
            a6 + l6 * z,
            a7 + l7 * z,
        ]
    };
    let mut acc = [0.0f32; 8];
    for ([c0, c1, c2, c3], [[z0, _], [z1, _], [z2, _], [z3, _]]) in columns.iter().zip(zu) {
        acc = column(
            column(column(column(acc, c0, *z0), c1, *z1), c2, *z2),
            c3,
            *z3,
        );
    }
    let [a0, a1, a2, a3, a4, a5, a6, a7] = acc;
    [[a0, a1], [a2, a3], [a4, a5], [a6, a7]]
}

/// A block's part of `G z` from its own corner and diagonal, added to the
/// sums over the columns before it.
#[inline(always)]
fn corner_product(
    [b0, b1, b2, b3]: [f32; BLOCK],
    [g10, g20, g21, g30, g31, g32]: [f32; 6],
    [d0, d1, d2, d3]: [f32; BLOCK],
    [z0, z1, z2, z3]: [f32; BLOCK],
) -> [f32; BLOCK] {
    [
        b0 + d0 * z0,
        b1 + g10 * z0 + d1 * z1,
        b2 + g20 * z0 + g21 * z1 + d2 * z2,
        b3 + g30 * z0 + g31 * z1 + g32 * z2 + d3 * z3,
    ]
}

/// `G^T t` over the `G` half of the pairs.
pub(crate) fn multiply_transposed<const M: usize>(
    packed: &[f32],
    diagonal2: &[f32; M],
    t: &[f32; M],
    m: usize,
) -> [f32; M] {
    let mut w = [0.0f32; M];
    let mut rest = packed;
    let blocks = t
        .as_chunks::<BLOCK>()
        .0
        .iter()
        .zip(diagonal2.as_chunks::<BLOCK>().0);
    let mut done = 0;
    for (&[t0, t1, t2, t3], &[d0, d1, d2, d3]) in blocks.take(m / BLOCK) {
        let Some((main, tail)) = rest.split_at_checked(2 * BLOCK * done) else {
            break;
        };
        let Some((corner, tail)) = tail.split_first_chunk::<12>() else {
            break;
        };
        rest = tail;
        let Some((before, own)) = w.split_at_mut_checked(done) else {
            break;
        };
        for (wj, &[_, g0, _, g1, _, g2, _, g3]) in before.iter_mut().zip(main.as_chunks::<8>().0) {
            *wj += (g0 * t0 + g1 * t1) + (g2 * t2 + g3 * t3);
        }
        let [_, g10, _, g20, _, g21, _, g30, _, g31, _, g32] = *corner;
        if let Some(own) = own.first_chunk_mut::<BLOCK>() {
            *own = [
                d0 * t0 + g10 * t1 + g20 * t2 + g30 * t3,
                d1 * t1 + g21 * t2 + g31 * t3,
                d2 * t2 + g32 * t3,
                d3 * t3,
            ];
        }
        done += BLOCK;
    }
    for i in done..m {
        let Some((row, tail)) = rest.split_at_checked(2 * i) else {
            break;
        };
        rest = tail;
        let ti = t.get(i).copied().unwrap_or(0.0);
        for (wj, &[_, g]) in w.iter_mut().zip(row.as_chunks::<2>().0) {
            *wj += g * ti;
        }
        if let (Some(wi), Some(&d)) = (w.get_mut(i), diagonal2.get(i)) {
            *wi = d * ti;
        }
    }
    w
}

/// `acc <- L1^-T acc` over the `L1` half of the pairs (its diagonal
/// inverted), last row first.
pub(crate) fn back_substitute_first<const M: usize>(
    packed: &[f32],
    inv_diagonal1: &[f32; M],
    acc: &mut [f32; M],
    m: usize,
) {
    let full_rows = m / BLOCK * BLOCK;
    let blocks_end = block_start(full_rows / BLOCK, 2);
    let rows_end = blocks_end + m * m.saturating_sub(1) - full_rows * full_rows.saturating_sub(1);
    let Some((mut blocks, mut rows)) = packed
        .get(..rows_end)
        .and_then(|p| p.split_at_checked(blocks_end))
    else {
        return;
    };
    for j in (full_rows..m).rev() {
        let Some(&inv) = inv_diagonal1.get(j) else {
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
        let r = *slot * inv;
        *slot = r;
        for (a, &[l, _]) in head.iter_mut().zip(row.as_chunks::<2>().0) {
            *a -= l * r;
        }
    }
    let diagonals = inv_diagonal1.as_chunks::<BLOCK>().0.iter().enumerate();
    for (b, d) in diagonals.take(full_rows / BLOCK).rev() {
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
        let (c1, _) = split_corner(corner);
        let [r0, r1, r2, r3] = corner_backward(*slots, c1, *d);
        *slots = [r0, r1, r2, r3];
        for (a, &[l0, _, l1, _, l2, _, l3, _]) in done.iter_mut().zip(main.as_chunks::<8>().0) {
            *a = *a - l0 * r0 - l1 * r1 - l2 * r2 - l3 * r3;
        }
    }
}

/// One row's rotation: the row of `I - G` (forgotten: `sqrt(lam) (I -
/// G)`) against the rotated vector's entry at its diagonal.
#[derive(Clone, Copy)]
struct Rotation {
    /// `cos * sqrt(lam)`: what a forgotten `G` entry keeps.
    keep: f32,
    /// `sin`: what it takes of the vector.
    take: f32,
    /// `cos`: what the vector keeps.
    cos: f32,
    /// `sin * sqrt(lam)`: what the vector takes of the forgotten `G` entry.
    give: f32,
}

impl Rotation {
    /// The rotation of a row whose stored diagonal is `d` (of `G`) against
    /// the vector entry `v`, with forgetting `scale = sqrt(lam)` and
    /// `shift = 1 - sqrt(lam)`; returns it and the row's new diagonal.
    ///
    /// The row of `F = I - G` has diagonal `f = scale (1 - d)` once
    /// forgotten; the rotation makes it `r = sqrt(f^2 + v^2)`, so `G`'s new
    /// diagonal is `1 - r = ((1 - f) (1 + f) - v^2) / (1 + r)` with `1 - f
    /// = shift + scale d` (small numbers only, no cancellation near 1).
    #[inline(always)]
    fn of(d: f32, v: f32, scale: f32, shift: f32) -> (Rotation, f32) {
        let f = scale * (1.0 - d);
        let (r, inv) = root_and_reciprocal(f * f + v * v + TINY);
        let (cos, sin) = (f * inv, v * inv);
        let diagonal = ((shift + scale * d) * (1.0 + f) - v * v) / (1.0 + r);
        // Also maps NaN to the floor (a comparison, no libm call).
        let diagonal = if diagonal > DIAGONAL_FLOOR {
            diagonal
        } else {
            DIAGONAL_FLOOR
        };
        (
            Rotation {
                keep: cos * scale,
                take: sin,
                cos,
                give: sin * scale,
            },
            diagonal,
        )
    }

    /// A `G` entry of the row and the vector's entry in its column, both
    /// rotated: `F' = cos F + sin v`, `v' = cos v - sin F` with `F = -G`.
    #[inline(always)]
    fn apply(self, g: f32, v: f32) -> (f32, f32) {
        (self.keep * g - self.take * v, self.cos * v + self.give * g)
    }
}

/// The rank-one update `(I - G')^T (I - G') = lam (I - G)^T (I - G) + v
/// v^T` by rotations of `sqrt(lam) (I - G)`'s rows, last row first, each
/// zeroing the entry of `v` at its diagonal; `scale = sqrt(lam)`, `shift
/// = 1 - sqrt(lam)` (computed without cancellation by the caller). `v` is
/// consumed.
pub(crate) fn rotate<const M: usize>(
    packed: &mut [f32],
    diagonal2: &mut [f32; M],
    v: &mut [f32; M],
    m: usize,
    scale: f32,
    shift: f32,
) {
    let full_rows = m / BLOCK * BLOCK;
    let blocks_end = block_start(full_rows / BLOCK, 2);
    let rows_end = blocks_end + m * m.saturating_sub(1) - full_rows * full_rows.saturating_sub(1);
    let Some((mut blocks, mut rows)) = packed
        .get_mut(..rows_end)
        .and_then(|p| p.split_at_mut_checked(blocks_end))
    else {
        return;
    };
    for i in (full_rows..m).rev() {
        let Some((before, row)) = rows
            .len()
            .checked_sub(2 * i)
            .and_then(|at| rows.split_at_mut_checked(at))
        else {
            break;
        };
        rows = before;
        let (Some(d), Some(&vi)) = (diagonal2.get_mut(i), v.get(i)) else {
            break;
        };
        let (rotation, diagonal) = Rotation::of(*d, vi, scale, shift);
        *d = diagonal;
        for (pair, vj) in row.as_chunks_mut::<2>().0.iter_mut().zip(v.iter_mut()) {
            (pair[1], *vj) = rotation.apply(pair[1], *vj);
        }
    }
    for b in (0..full_rows / BLOCK).rev() {
        let i0 = BLOCK * b;
        let Some((before, block)) = blocks.split_at_mut_checked(block_start(b, 2)) else {
            break;
        };
        blocks = before;
        let Some((main, corner)) = block.split_at_mut_checked(2 * BLOCK * i0) else {
            break;
        };
        let Some(corner) = corner.first_chunk_mut::<12>() else {
            break;
        };
        let (Some(d), Some((done, own))) = (
            diagonal2
                .get_mut(i0..)
                .and_then(|d| d.first_chunk_mut::<BLOCK>()),
            v.split_at_mut_checked(i0),
        ) else {
            break;
        };
        let Some(own) = own.first_chunk_mut::<BLOCK>() else {
            break;
        };
        let rotations = rotate_corner(corner, d, own, scale, shift);
        let [r0, r1, r2, r3] = rotations;
        for (vj, column) in done.iter_mut().zip(main.as_chunks_mut::<8>().0) {
            let x = *vj;
            let (g3, x) = r3.apply(column[7], x);
            let (g2, x) = r2.apply(column[5], x);
            let (g1, x) = r1.apply(column[3], x);
            let (g0, x) = r0.apply(column[1], x);
            (column[1], column[3], column[5], column[7]) = (g0, g1, g2, g3);
            *vj = x;
        }
    }
}

/// The rotations of a block's four rows, last first, applied to the
/// block's own corner (pairs `(L1, G)`, rows 1 to 3) and to the vector's
/// four entries there; the diagonal takes the new values. Returns the
/// rotations, first row first, for the columns before the block.
#[inline(always)]
fn rotate_corner(
    corner: &mut [f32; 12],
    d: &mut [f32; BLOCK],
    v: &mut [f32; BLOCK],
    scale: f32,
    shift: f32,
) -> [Rotation; BLOCK] {
    let [v0, v1, v2, v3] = *v;
    let (r3, d3) = Rotation::of(d[3], v3, scale, shift);
    let (g30, v0) = r3.apply(corner[7], v0);
    let (g31, v1) = r3.apply(corner[9], v1);
    let (g32, v2) = r3.apply(corner[11], v2);
    let (r2, d2) = Rotation::of(d[2], v2, scale, shift);
    let (g20, v0) = r2.apply(corner[3], v0);
    let (g21, v1) = r2.apply(corner[5], v1);
    let (r1, d1) = Rotation::of(d[1], v1, scale, shift);
    let (g10, v0) = r1.apply(corner[1], v0);
    let (r0, d0) = Rotation::of(d[0], v0, scale, shift);
    (corner[1], corner[3], corner[5]) = (g10, g20, g21);
    (corner[7], corner[9], corner[11]) = (g30, g31, g32);
    *d = [d0, d1, d2, d3];
    *v = [0.0; BLOCK];
    [r0, r1, r2, r3]
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::needless_range_loop)]
mod tests {
    use super::*;
    use crate::math::packed_index;
    use std::vec::Vec;

    const M: usize = 11;

    /// A dense f64 matrix of the test's size.
    type Dense = [[f64; M]; M];

    /// A lower-triangular `L1` (well conditioned) and a small `G`, both
    /// dense, and their packed storage.
    fn setup(m: usize) -> (Dense, Dense, Vec<f32>, [f32; M], [f32; M]) {
        let mut l1 = [[0.0f64; M]; M];
        let mut g = [[0.0f64; M]; M];
        let mut packed = std::vec![0.0f32; M * M];
        let mut inv1 = [0.0f32; M];
        let mut d2 = [0.0f32; M];
        for i in 0..m {
            for j in 0..=i {
                let h = ((3 * i + 7 * j) % 11) as f64 / 11.0 - 0.5;
                l1[i][j] = if i == j {
                    1.5 + 0.1 * i as f64
                } else {
                    0.3 * h
                };
                g[i][j] = if i == j {
                    0.05 + 0.01 * i as f64
                } else {
                    0.04 * h
                };
                l1[i][j] = f64::from(l1[i][j] as f32);
                g[i][j] = f64::from(g[i][j] as f32);
                if i == j {
                    inv1[i] = (1.0 / l1[i][i]) as f32;
                    d2[i] = g[i][i] as f32;
                } else {
                    packed[packed_index(i, j, 0, m, true)] = l1[i][j] as f32;
                    packed[packed_index(i, j, 1, m, true)] = g[i][j] as f32;
                }
            }
        }
        (l1, g, packed, inv1, d2)
    }

    fn forward(l: &[[f64; M]; M], k: &[f64], m: usize) -> Vec<f64> {
        let mut z = std::vec![0.0; m];
        for i in 0..m {
            let s: f64 = (0..i).map(|j| l[i][j] * z[j]).sum();
            z[i] = (k[i] - s) / l[i][i];
        }
        z
    }

    #[test]
    fn the_root_and_its_reciprocal_are_accurate() {
        let mut worst = 0.0f64;
        let mut a = 1e-37f32;
        while a < 1e37 {
            let (r, inv) = root_and_reciprocal(a);
            let exact = f64::from(a).sqrt();
            worst = worst.max((f64::from(r) / exact - 1.0).abs());
            worst = worst.max((f64::from(inv) * exact - 1.0).abs());
            a *= 1.37;
        }
        assert!(worst < 3e-7, "worst relative error {worst:e}");
        assert_eq!(root_and_reciprocal(0.0).0, 0.0);
    }

    #[test]
    fn solve_and_multiply_matches_dense_f64() {
        for m in 1..=M {
            let (l1, g, packed, inv1, d2) = setup(m);
            let k: [f32; M] = core::array::from_fn(|i| 0.7 - 0.11 * i as f32);
            let kd: Vec<f64> = k.iter().map(|&v| f64::from(v)).collect();
            let mut zu = [[0.0f32; 2]; M];
            let (n, s) = solve_and_multiply(&packed, &inv1, &d2, &k, m, &mut zu);
            let z = forward(&l1, &kd, m);
            let u: Vec<f64> = (0..m)
                .map(|i| (0..=i).map(|j| g[i][j] * z[j]).sum())
                .collect();
            let n64: f64 = z.iter().map(|v| v * v).sum();
            let s64: f64 = (0..m).map(|i| u[i] * (2.0 * z[i] - u[i])).sum();
            assert!((f64::from(n) - n64).abs() < 1e-5 * n64.max(1.0), "m {m}");
            assert!(
                (f64::from(s) - s64).abs() < 1e-5 * s64.abs().max(1e-3),
                "m {m}"
            );
            for i in 0..m {
                assert!((f64::from(zu[i][0]) - z[i]).abs() < 1e-5, "m {m} z {i}");
                assert!((f64::from(zu[i][1]) - u[i]).abs() < 1e-5, "m {m} u {i}");
            }
        }
    }

    #[test]
    fn transposed_product_and_back_substitution_match_dense_f64() {
        for m in 1..=M {
            let (l1, g, packed, inv1, d2) = setup(m);
            let t: [f32; M] = core::array::from_fn(|i| 0.3 + 0.17 * i as f32);
            let w = multiply_transposed(&packed, &d2, &t, m);
            for j in 0..m {
                let want: f64 = (j..m).map(|i| g[i][j] * f64::from(t[i])).sum();
                assert!((f64::from(w[j]) - want).abs() < 1e-5, "m {m} w {j}");
            }
            let mut acc = t;
            back_substitute_first(&packed, &inv1, &mut acc, m);
            // L1^T acc = t
            for j in 0..m {
                let back: f64 = (j..m).map(|i| l1[i][j] * f64::from(acc[i])).sum();
                assert!((back - f64::from(t[j])).abs() < 1e-4, "m {m} row {j}");
            }
        }
    }

    /// `(I - G')^T (I - G') = lam (I - G)^T (I - G) + v v^T`, `G'` lower
    /// triangular, the `L1` half untouched.
    #[test]
    fn rotations_give_the_rank_one_update() {
        for m in 1..=M {
            for lam in [1.0f64, 0.9] {
                let (_, g, mut packed, _, mut d2) = setup(m);
                let before = packed.clone();
                let v: [f32; M] =
                    core::array::from_fn(|i| if i < m { 0.2 - 0.05 * i as f32 } else { 0.0 });
                let mut w = v;
                let scale = lam.sqrt();
                let shift = (1.0 - lam) / (1.0 + scale);
                rotate(&mut packed, &mut d2, &mut w, m, scale as f32, shift as f32);
                let f = |gm: &dyn Fn(usize, usize) -> f64, i: usize, j: usize| {
                    if i == j {
                        1.0 - gm(i, j)
                    } else if j < i {
                        -gm(i, j)
                    } else {
                        0.0
                    }
                };
                let old = |i: usize, j: usize| g[i][j];
                let new = |i: usize, j: usize| -> f64 {
                    if i == j {
                        f64::from(d2[i])
                    } else if j < i {
                        f64::from(packed[packed_index(i, j, 1, m, true)])
                    } else {
                        0.0
                    }
                };
                for a in 0..m {
                    for b in 0..m {
                        let e_old: f64 = (0..m).map(|r| f(&old, r, a) * f(&old, r, b)).sum();
                        let e_new: f64 = (0..m).map(|r| f(&new, r, a) * f(&new, r, b)).sum();
                        let want = lam * e_old + f64::from(v[a]) * f64::from(v[b]);
                        assert!((e_new - want).abs() < 1e-5, "m {m} lam {lam} ({a}, {b})");
                    }
                }
                for i in 0..m {
                    for j in 0..i {
                        let at = packed_index(i, j, 0, m, true);
                        assert_eq!(packed[at], before[at], "L1 touched at ({i}, {j})");
                    }
                }
            }
        }
    }
}
