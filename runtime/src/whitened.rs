//! The kernels of the updatable variance forms. The covariance form
//! ([`crate::VarianceForm::Covariance`], format version 9) holds `S = W^T
//! diag(D) W` in the same layout as the whitened form below (`W - I` where
//! `G` is, `D` where `d` is): [`covariance_term`], Bierman's
//! [`covariance_update`] and [`forget_coordinate`].
//!
//! The whitened form ([`crate::VarianceForm::Whitened`], format version 7):
//! `L1 = chol(K_M)` and, for the covariance `S` of the whitened inducing
//! values, `I - S = (I - G)^T (I - diag(d)) (I - G)` with `G` strictly
//! lower triangular and `d` a vector (a U-D factorisation of `I - S`,
//! written through its complements), interleaved in the two-factor layout
//! of `math::packed_index`: `L1`'s diagonal stored as its reciprocal, `d`
//! where the second factor's diagonal goes.
//!
//! A well-determined direction has a small `S`, hence small `G` and `d`,
//! held to f32's relative precision (a factor of `I - S` would hold it as
//! the difference of two numbers near 1). Forgetting towards the prior,
//! `S <- lam S + (1 - lam) I`, is `1 - d <- lam (1 - d)`: the diagonal
//! alone. A rank-one update of `I - S` is Bierman's: two multiply-adds per
//! entry of `G` and no square root.

use crate::math::{block_start, corner_backward, corner_forward, split_corner, BLOCK};

/// The smallest `d` an update leaves: a diagonal must be `> 0` in a blob.
/// `S` moves by at most this much.
pub(crate) const DIAGONAL_FLOOR: f32 = 1e-30;

/// Added to a row's new `1 - d`: a row that carries no information and
/// takes none gives zero, not NaN.
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
/// `(|z|^2, z^T S z, z . a)`, the second summed as `u . (2 z - u) + d .
/// t^2` with `t = z - u` (small numbers only), the third the latent mean
/// of the whitened posterior mean `a`.
pub(crate) fn solve_and_multiply<const M: usize>(
    packed: &[f32],
    inv_diagonal1: &[f32; M],
    diagonal2: &[f32; M],
    mean: &[f32; M],
    k: &[f32; M],
    m: usize,
    zu: &mut [[f32; 2]; M],
) -> (f32, f32, f32) {
    solve_and_multiply_with(
        packed,
        inv_diagonal1,
        diagonal2,
        mean,
        k,
        m,
        zu,
        |z, u, d| (quadratic(z, u, d), u),
    )
}

/// [`solve_and_multiply`] with `term(z_i, u_i, d_i)` giving each row's
/// term of the second sum and the number kept beside `z_i` in `zu` (`u_i`
/// itself, or what the form's next step reads: [`covariance_term`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve_and_multiply_with<const M: usize>(
    packed: &[f32],
    inv_diagonal1: &[f32; M],
    diagonal2: &[f32; M],
    mean: &[f32; M],
    k: &[f32; M],
    m: usize,
    zu: &mut [[f32; 2]; M],
    term: impl Fn(f32, f32, f32) -> (f32, f32),
) -> (f32, f32, f32) {
    let (mut n, mut s, mut za) = (0.0f32, 0.0f32, 0.0f32);
    let mut rest = packed;
    let inputs = k
        .as_chunks::<BLOCK>()
        .0
        .iter()
        .zip(inv_diagonal1.as_chunks::<BLOCK>().0)
        .zip(diagonal2.as_chunks::<BLOCK>().0)
        .zip(mean.as_chunks::<BLOCK>().0);
    let mut solved = 0;
    for (((ks, d1), d2), a) in inputs.take(m / BLOCK) {
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
        let u = corner_product([b0, b1, b2, b3], c2, z);
        let [z0, z1, z2, z3] = z;
        let [u0, u1, u2, u3] = u;
        let [e0, e1, e2, e3] = *d2;
        let [m0, m1, m2, m3] = *a;
        n += (z0 * z0 + z1 * z1) + (z2 * z2 + z3 * z3);
        let ((s0, v0), (s1, v1)) = (term(z0, u0, e0), term(z1, u1, e1));
        let ((s2, v2), (s3, v3)) = (term(z2, u2, e2), term(z3, u3, e3));
        s += (s0 + s1) + (s2 + s3);
        za += (z0 * m0 + z1 * m1) + (z2 * m2 + z3 * m3);
        if let Some(slots) = todo.first_chunk_mut::<BLOCK>() {
            *slots = [[z0, v0], [z1, v1], [z2, v2], [z3, v3]];
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
        let u = dot2;
        n += z * z;
        let (t, v) = term(z, u, at(diagonal2));
        s += t;
        za += z * at(mean);
        if let Some(slot) = zu.get_mut(i) {
            *slot = [z, v];
        }
    }
    (n, s, za)
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

/// One row's part of `z^T S z`: `u (2 z - u) + d t^2`, `t = z - u`.
#[inline(always)]
pub(crate) fn quadratic(z: f32, u: f32, d: f32) -> f32 {
    let t = z - u;
    u * (z + t) + d * t * t
}

/// A block's part of `G z` from its own corner (strictly lower), added to
/// the sums over the columns before it.
#[inline(always)]
fn corner_product(
    [b0, b1, b2, b3]: [f32; BLOCK],
    [g10, g20, g21, g30, g31, g32]: [f32; 6],
    [z0, z1, z2, _]: [f32; BLOCK],
) -> [f32; BLOCK] {
    [
        b0,
        b1 + g10 * z0,
        b2 + g20 * z0 + g21 * z1,
        b3 + g30 * z0 + g31 * z1 + g32 * z2,
    ]
}

/// `pairs[j][0] += (G^T t)_j` with `t_i = pairs[i][1]`, over the `G` half
/// of the factors' pairs (strictly lower), each pair first replaced by
/// `prepare(pair, d_i)` (in the same sweep: before its row is used).
#[inline(always)]
pub(crate) fn add_transposed<const M: usize>(
    packed: &[f32],
    pairs: &mut [[f32; 2]; M],
    diagonal2: &[f32; M],
    m: usize,
    mut prepare: impl FnMut([f32; 2], f32) -> [f32; 2],
) {
    let mut rest = packed;
    let mut done = 0;
    let mut diagonals = diagonal2.as_chunks::<BLOCK>().0.iter();
    while done + BLOCK <= m {
        let Some((main, tail)) = rest.split_at_checked(2 * BLOCK * done) else {
            break;
        };
        let Some((corner, tail)) = tail.split_first_chunk::<12>() else {
            break;
        };
        rest = tail;
        let Some((before, own)) = pairs.split_at_mut_checked(done) else {
            break;
        };
        let (Some([w0, w1, w2, w3]), Some(&[d0, d1, d2, d3])) =
            (own.first_chunk_mut::<BLOCK>(), diagonals.next())
        else {
            break;
        };
        (*w0, *w1, *w2, *w3) = (
            prepare(*w0, d0),
            prepare(*w1, d1),
            prepare(*w2, d2),
            prepare(*w3, d3),
        );
        let t = [w0[1], w1[1], w2[1], w3[1]];
        let [_, t1, t2, t3] = t;
        // One chain of multiply-adds per column, onto its sum; four
        // columns a step (done is a multiple of four: no tails).
        let columns = main.as_chunks::<8>().0.as_chunks::<BLOCK>().0;
        for (ws, gs) in before.as_chunks_mut::<BLOCK>().0.iter_mut().zip(columns) {
            let [c0, c1, c2, c3] = gs;
            let [v0, v1, v2, v3] = ws;
            add_column(v0, c0, t);
            add_column(v1, c1, t);
            add_column(v2, c2, t);
            add_column(v3, c3, t);
        }
        let [_, g10, _, g20, _, g21, _, g30, _, g31, _, g32] = *corner;
        w0[0] = w0[0] + g10 * t1 + g20 * t2 + g30 * t3;
        w1[0] = w1[0] + g21 * t2 + g31 * t3;
        w2[0] += g32 * t3;
        done += BLOCK;
    }
    for i in done..m {
        let Some((row, tail)) = rest.split_at_checked(2 * i) else {
            break;
        };
        rest = tail;
        let Some((before, own)) = pairs.split_at_mut_checked(i) else {
            break;
        };
        let Some(pair) = own.first_mut() else {
            break;
        };
        *pair = prepare(*pair, diagonal2.get(i).copied().unwrap_or(0.0));
        let ti = pair[1];
        for (wj, &[_, g]) in before.iter_mut().zip(row.as_chunks::<2>().0) {
            wj[0] += g * ti;
        }
    }
}

/// `w[0] += g . t` over a column's four `G` entries (the odd ones).
#[inline(always)]
fn add_column(
    w: &mut [f32; 2],
    &[_, g0, _, g1, _, g2, _, g3]: &[f32; 8],
    [t0, t1, t2, t3]: [f32; 4],
) {
    w[0] = w[0] + g0 * t0 + g1 * t1 + g2 * t2 + g3 * t3;
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

/// One row's step of Bierman's rank-one update of `I - S = U^T D U` (`U
/// = I - G`, `D = I - diag(d)`) by `weight v v^T`, rows last first: the
/// row's `p = v_i`, and what each entry of its `G` and the vector's entry
/// in that column become.
#[derive(Clone, Copy)]
pub(crate) struct Step {
    /// The vector's entry at the diagonal.
    p: f32,
    /// `weight p / D'_i`, with the row's new `D'_i = D_i + weight p^2`.
    beta: f32,
}

/// One row's step of a rank-one U-D update swept rows last first
/// ([`update`]): the factor's diagonal as stored, and how each entry of the
/// row and the vector's entry in its column change.
pub(crate) trait RowStep: Copy {
    /// The step of a row whose stored diagonal is `d`, against the
    /// vector's entry `p` at the diagonal and the weight left, forgotten by
    /// `lam` where the form forgets so; returns it, the row's new stored
    /// diagonal, and the weight left for the rows above.
    fn of(d: f32, p: f32, weight: f32, lam: f32) -> (Self, f32, f32);

    /// A stored entry `g` of the row and the vector's entry `v` in its
    /// column, updated.
    fn apply(self, g: f32, v: f32) -> (f32, f32);
}

impl RowStep for Step {
    /// The step of a row whose stored `d` is `d` (its `D` is `1 - d`),
    /// forgotten by `lam` (`D <- lam D`, `d <- (1 - lam) + lam d`), against
    /// `p`; returns it, the row's new `d`, and the weight left for the rows
    /// above (`weight D_i / D'_i`).
    #[inline(always)]
    fn of(d: f32, p: f32, weight: f32, lam: f32) -> (Step, f32, f32) {
        let taken = weight * p * p;
        let big = lam * (1.0 - d);
        let inv = 1.0 / (big + taken + TINY);
        let d = ((1.0 - lam) + lam * d) - taken;
        // Also maps NaN to the floor (a comparison, no libm call).
        let d = if d > DIAGONAL_FLOOR {
            d
        } else {
            DIAGONAL_FLOOR
        };
        (
            Step {
                p,
                beta: weight * p * inv,
            },
            d,
            weight * big * inv,
        )
    }

    /// An entry `g` of the row's `G` and the vector's entry `v` in its
    /// column: `v <- v - p U_ij = v + p g`, then `U_ij <- U_ij + beta v`.
    #[inline(always)]
    fn apply(self, g: f32, v: f32) -> (f32, f32) {
        let v = v + self.p * g;
        (g - self.beta * v, v)
    }
}

/// A rank-one update of a U-D factor held in the second half of the
/// pairs (its diagonal in `d`) by `weight v v^T`, rows last first, each
/// row's step an `S`; `v` is consumed, `L1` is untouched. With [`Step`]:
/// the whitened form's `I - S <- lam (I - S) + weight v v^T`, forgetting
/// (`D <- lam D`), then Bierman's U-D update.
#[inline(always)]
pub(crate) fn update<const M: usize, S: RowStep, E: Lead>(
    packed: &mut [f32],
    d: &mut [f32; M],
    v: &mut [E; M],
    weight: f32,
    lam: f32,
    m: usize,
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
    let mut weight = weight;
    for i in (full_rows..m).rev() {
        let Some((before, row)) = rows
            .len()
            .checked_sub(2 * i)
            .and_then(|at| rows.split_at_mut_checked(at))
        else {
            break;
        };
        rows = before;
        let (Some(di), Some(vi)) = (d.get_mut(i), v.get(i).map(Lead::lead)) else {
            break;
        };
        let (step, new_d, left) = S::of(*di, vi, weight, lam);
        (*di, weight) = (new_d, left);
        for (pair, vj) in row.as_chunks_mut::<2>().0.iter_mut().zip(v.iter_mut()) {
            (pair[1], *vj.lead_mut()) = step.apply(pair[1], vj.lead());
        }
    }
    for b in (0..full_rows / BLOCK).rev() {
        let i0 = BLOCK * b;
        // The last block left: its columns before it and its corner.
        let Some((before, block)) = blocks
            .len()
            .checked_sub(2 * BLOCK * i0 + 12)
            .and_then(|at| blocks.split_at_mut_checked(at))
        else {
            break;
        };
        blocks = before;
        let Some((main, corner)) = block.split_at_mut_checked(2 * BLOCK * i0) else {
            break;
        };
        let (Some(corner), Some(db), Some((done_v, own_v))) = (
            corner.first_chunk_mut::<12>(),
            d.get_mut(i0..).and_then(|d| d.first_chunk_mut::<BLOCK>()),
            v.split_at_mut_checked(i0),
        ) else {
            break;
        };
        let Some(own_v) = own_v.first_chunk_mut::<BLOCK>() else {
            break;
        };
        let [_, c1, _, c3, _, c5, _, c7, _, c9, _, c11] = *corner;
        let (steps, g) =
            update_corner::<S, E>([c1, c3, c5, c7, c9, c11], db, own_v, &mut weight, lam);
        let [g10, g20, g21, g30, g31, g32] = g;
        (
            corner[1], corner[3], corner[5], corner[7], corner[9], corner[11],
        ) = (g10, g20, g21, g30, g31, g32);
        // Four columns a step (i0 is a multiple of four: no tails).
        let columns = main.as_chunks_mut::<8>().0.as_chunks_mut::<BLOCK>().0;
        for (vs, gs) in done_v.as_chunks_mut::<BLOCK>().0.iter_mut().zip(columns) {
            let [v0, v1, v2, v3] = vs;
            let [c0, c1, c2, c3] = gs;
            update_column(v0, c0, steps);
            update_column(v1, c1, steps);
            update_column(v2, c2, steps);
            update_column(v3, c3, steps);
        }
    }
}

/// An entry of the vector of [`update`]: a number, or the first of a pair
/// (the whitened form's `S z` beside its scratch).
pub(crate) trait Lead {
    /// The entry.
    fn lead(&self) -> f32;
    /// The entry, to write.
    fn lead_mut(&mut self) -> &mut f32;
}

impl Lead for f32 {
    #[inline(always)]
    fn lead(&self) -> f32 {
        *self
    }
    #[inline(always)]
    fn lead_mut(&mut self) -> &mut f32 {
        self
    }
}

impl Lead for [f32; 2] {
    #[inline(always)]
    fn lead(&self) -> f32 {
        self[0]
    }
    #[inline(always)]
    fn lead_mut(&mut self) -> &mut f32 {
        &mut self[0]
    }
}

/// A column's four `G` entries (the odd ones of `column`) and the
/// vector's entry there through a block's steps, last row first.
#[inline(always)]
fn update_column<S: RowStep, E: Lead>(
    v: &mut E,
    column: &mut [f32; 8],
    [s0, s1, s2, s3]: [S; BLOCK],
) {
    let [_, g0, _, g1, _, g2, _, g3] = *column;
    let (g3, x) = s3.apply(g3, v.lead());
    let (g2, x) = s2.apply(g2, x);
    let (g1, x) = s1.apply(g1, x);
    let (g0, x) = s0.apply(g0, x);
    (column[1], column[3], column[5], column[7]) = (g0, g1, g2, g3);
    *v.lead_mut() = x;
}

/// The steps of a block's four rows, last first, applied to the block's
/// own corner of `G` (`[g10, g20, g21, g30, g31, g32]`) and the vector's
/// four entries there (read, not consumed: no row reads them again); `d`
/// takes the new values and `weight` what is left.
/// Returns the steps, first row first, and the new corner.
#[inline(always)]
fn update_corner<S: RowStep, E: Lead>(
    [g10, g20, g21, g30, g31, g32]: [f32; 6],
    d: &mut [f32; BLOCK],
    [v0, v1, v2, v3]: &[E; BLOCK],
    weight: &mut f32,
    lam: f32,
) -> ([S; BLOCK], [f32; 6]) {
    let [v0, v1, v2, v3] = [v0.lead(), v1.lead(), v2.lead(), v3.lead()];
    let (s3, d3, w) = S::of(d[3], v3, *weight, lam);
    let (g30, v0) = s3.apply(g30, v0);
    let (g31, v1) = s3.apply(g31, v1);
    let (g32, v2) = s3.apply(g32, v2);
    let (s2, d2, w) = S::of(d[2], v2, w, lam);
    let (g20, v0) = s2.apply(g20, v0);
    let (g21, v1) = s2.apply(g21, v1);
    let (s1, d1, w) = S::of(d[1], v1, w, lam);
    let (g10, v0) = s1.apply(g10, v0);
    let (s0, d0, w) = S::of(d[0], v0, w, lam);
    *d = [d0, d1, d2, d3];
    *weight = w;
    ([s0, s1, s2, s3], [g10, g20, g21, g30, g31, g32])
}

/// One row's part of `z^T S z` in the covariance form
/// ([`crate::VarianceForm::Covariance`]): `D f^2` with `f = z + u` the
/// row's entry of `W z` (`u` the strictly lower part's), and `f`, which
/// the pairs keep in place of `u`: Bierman's sweep and the gradient read
/// it (one load and no addition a row).
#[inline(always)]
pub(crate) fn covariance_term(z: f32, u: f32, d: f32) -> (f32, f32) {
    let f = z + u;
    (d * f * f, f)
}

/// One row's step of the covariance form's rank-one addition `S <- S +
/// weight v v^T` (Agee and Turner's), `S = W^T diag(D) W`, `W = I + H`
/// with `H` stored where the whitened form keeps `G` and `D` where it
/// keeps `d`.
#[derive(Clone, Copy)]
struct Added {
    /// The vector's entry at the diagonal.
    p: f32,
    /// `weight p / D'_i`, the row's new `D'_i = D_i + weight p^2`.
    beta: f32,
}

impl RowStep for Added {
    /// `lam` is unused: the covariance form forgets before the sweep.
    /// No floor: `D'_i = D_i + weight p^2 >= D_i` (`weight >= 0`, and
    /// f32's rounding is monotone), so a row keeps the floor its `D_i` had
    /// (Bierman's sweep and the load hold it), and the forgotten row, whose
    /// `D_k` was scaled by `mu`, gains `1 - mu` (its `p` is 1).
    #[inline(always)]
    fn of(d: f32, p: f32, weight: f32, _lam: f32) -> (Added, f32, f32) {
        let new = d + weight * p * p;
        let inv = 1.0 / (new + TINY);
        let left = weight * d * inv;
        (
            Added {
                p,
                beta: weight * p * inv,
            },
            new,
            left,
        )
    }

    /// `v <- v - p W_ji`, then `W_ji <- W_ji + beta v`.
    #[inline(always)]
    fn apply(self, h: f32, v: f32) -> (f32, f32) {
        let v = v - self.p * h;
        (h + self.beta * v, v)
    }
}

/// The covariance form's forgetting of whitened coordinate `k` alone by
/// `mu` in `(0, 1]`: `S <- P S P + (1 - mu) e_k e_k^T` with `P` scaling
/// coordinate `k` by `sqrt(mu)`, which keeps `0 <= S <= I` if it held;
/// `k` cycling over the `m` coordinates, `m` such steps are exactly `S <-
/// mu S + (1 - mu) I`. `P S P` scales row `k` of `W` by `1 / sqrt(mu)`,
/// its column by `sqrt(mu)` and `D_k` by `mu`; the addition is one sweep
/// of every row (the same work for every `k`, if `packed` is the whole
/// `M x M` storage: see `scale_row_and_column`). The sweep's vector is
/// `scratch`, which must be zero in its first `m` entries (the caller
/// clears it where it reads it last: no clearing pass here), and is
/// consumed.
pub(crate) fn forget_coordinate<const M: usize>(
    packed: &mut [f32],
    d: &mut [f32; M],
    k: usize,
    mu: f32,
    m: usize,
    scratch: &mut [f32; M],
) {
    let (root, inv_root) = root_and_reciprocal(mu);
    scale_row_and_column(packed, k, inv_root, root, m);
    if let Some(dk) = d.get_mut(k) {
        *dk *= mu;
    }
    if let Some(vk) = scratch.get_mut(k) {
        *vk = 1.0;
    }
    update::<M, Added, f32>(packed, d, scratch, 1.0 - mu, 1.0, m);
}

/// Scales the strictly lower entries of row `k` of the second factor by
/// `row` and those of column `k` by `column`: `m - 1` entries, each the
/// same work for every `k` (whole blocks: a block of four entries of the
/// row or the column for every other block, three in the own corner). A
/// block whose window does not fit in `packed` is scaled entry by entry,
/// which costs more; the caller's whole `M x M` storage holds every
/// window of an `m = M` model (the device's constant-time check measures
/// it).
fn scale_row_and_column(packed: &mut [f32], k: usize, row: f32, column: f32, m: usize) {
    fn scale(packed: &mut [f32], at: usize, by: f32) {
        if let Some(h) = packed.get_mut(at) {
            *h *= by;
        }
    }
    if !m.is_multiple_of(BLOCK) {
        for j in 0..m {
            let (i, c, by) = match j.cmp(&k) {
                core::cmp::Ordering::Less => (k, j, row),
                core::cmp::Ordering::Greater => (j, k, column),
                core::cmp::Ordering::Equal => continue,
            };
            scale(packed, crate::math::packed_index(i, c, 1, m, true), by);
        }
        return;
    }
    // Which of the two each step scales is chosen by conditional moves, not
    // by a branch, and both positions advance every step: the same
    // instructions for every `k`.
    let (b, t) = (k / BLOCK, k % BLOCK);
    let own = block_start(b, 2);
    // Row k's entries in the columns of block `n` (stride 8), and column
    // k's in the rows of block `n + 1` (stride 2), whose start moves by
    // `block_start(n + 2) - block_start(n + 1)`.
    let mut in_row = own + 2 * t + 1;
    let mut in_column = block_start(1, 2) + 2 * BLOCK * k + 1;
    let mut column_step = block_start(2, 2) - block_start(1, 2);
    for n in 0..(m / BLOCK).saturating_sub(1) {
        let (first, stride, by) = if n < b {
            (in_row, 2 * BLOCK, row)
        } else {
            (in_column, 2, column)
        };
        // The four entries in one window, checked once (offsets from
        // constants, not `stride * i`: LLVM then re-rolled it into a loop
        // with its checks). The caller's whole `M x M` storage holds every
        // window of an `m = M` model (the last block's column window ends
        // at most 6 numbers past its factor's M (M - 1)).
        let (o1, o2, o3) = if n < b { (8, 16, 24) } else { (2, 4, 6) };
        match packed
            .get_mut(first..)
            .and_then(|p| p.first_chunk_mut::<25>())
        {
            Some(window) => {
                let [h0, ..] = window;
                *h0 *= by;
                if let Some(h) = window.get_mut(o1) {
                    *h *= by;
                }
                if let Some(h) = window.get_mut(o2) {
                    *h *= by;
                }
                if let Some(h) = window.get_mut(o3) {
                    *h *= by;
                }
            }
            None => {
                scale(packed, first, by);
                scale(packed, first + stride, by);
                scale(packed, first + 2 * stride, by);
                scale(packed, first + 3 * stride, by);
            }
        }
        in_row += 2 * BLOCK * BLOCK;
        in_column += column_step;
        column_step += 2 * BLOCK * BLOCK;
    }
    let corner = own + 2 * BLOCK * BLOCK * b;
    for n in 0..BLOCK - 1 {
        let other = n + usize::from(n >= t);
        let before = usize::from(other < t);
        // Row k's entry in column `other`, or column k's in row `other`.
        let (r, c) = (
            before * t + (1 - before) * other,
            before * other + (1 - before) * t,
        );
        let by = if before == 1 { row } else { column };
        scale(packed, corner + r * r.saturating_sub(1) + 2 * c + 1, by);
    }
}

/// One row's step of Bierman's measurement update of the covariance form
/// (first row first), on the gain scaled by the running sum (`tau = b /
/// alpha`, `b` Bierman's running `S z`): with `f` the row's entry of `W
/// z`, `W_ji <- W_ji - f tau_i`, then `tau_i <- tau_i + g W_ji` (the
/// entry after) with `g = D f / alpha'`: two multiply-adds in place per
/// entry, where Bierman's own recurrence needs the entry before.
#[derive(Clone, Copy)]
struct Measured {
    f: f32,
    g: f32,
}

impl Measured {
    /// An entry `h` of the row's `H` (`W_ji`, `i < j`) and the scaled
    /// gain's entry `tau` in its column, updated.
    #[inline(always)]
    fn apply(self, h: f32, tau: f32) -> (f32, f32) {
        let h = h - self.f * tau;
        (h, tau + self.g * h)
    }
}

/// The running sum `alpha = row + sum D_j f_j^2` of Bierman's sweep.
#[derive(Clone, Copy)]
struct Running {
    alpha: f32,
}

impl Running {
    /// Row `j`'s step for its `D` (`d`, replaced by `D alpha_before /
    /// alpha`, which stays in `[0, D]`) and `f`; one division.
    #[inline(always)]
    fn step(&mut self, d: &mut f32, f: f32) -> Measured {
        let g = *d * f;
        let alpha = self.alpha + f * g;
        let inv = 1.0 / alpha;
        let step = Measured { f, g: g * inv };
        let new = *d * self.alpha * inv;
        // Also maps NaN to the floor.
        *d = if new > DIAGONAL_FLOOR {
            new
        } else {
            DIAGONAL_FLOOR
        };
        self.alpha = alpha;
        step
    }
}

/// Bierman's measurement update of the covariance form, `S <- S - (S
/// z)(S z)^T / (row + z^T S z)`, rows first first, from the pairs `(z,
/// W z)` of [`solve_and_multiply_with`] with [`covariance_term`]; `S z` (before the
/// update) divided by the returned sum `row + z^T S z` into `tau`;
/// `row > 0` is the observation's own variance. `D` only shrinks, by
/// factors in `(0, 1]`: `S >= 0` whatever f32 rounds.
pub(crate) fn covariance_update<const M: usize>(
    packed: &mut [f32],
    d: &mut [f32; M],
    zu: &[[f32; 2]; M],
    tau: &mut [f32; M],
    row: f32,
    m: usize,
) -> f32 {
    let mut running = Running { alpha: row };
    let mut rest = packed;
    let mut done = 0;
    while done + BLOCK <= m {
        let Some((main, tail)) = core::mem::take(&mut rest).split_at_mut_checked(2 * BLOCK * done)
        else {
            break;
        };
        let Some((corner, tail)) = tail.split_first_chunk_mut::<12>() else {
            break;
        };
        rest = tail;
        let (Some(ds), Some(fs)) = (
            d.get_mut(done..).and_then(|d| d.first_chunk_mut::<BLOCK>()),
            zu.get(done..).and_then(|z| z.first_chunk::<BLOCK>()),
        ) else {
            break;
        };
        let [d0, d1, d2, d3] = ds;
        let [[_, f0], [_, f1], [_, f2], [_, f3]] = *fs;
        let steps = [
            running.step(d0, f0),
            running.step(d1, f1),
            running.step(d2, f2),
            running.step(d3, f3),
        ];
        let [s0, s1, s2, s3] = steps;
        let Some((before, own)) = tau.split_at_mut_checked(done) else {
            break;
        };
        // Four columns a step (done is a multiple of four: no tails),
        // each over the block's four rows in row order.
        let columns = main.as_chunks_mut::<8>().0.as_chunks_mut::<BLOCK>().0;
        for (ts, hs) in before.as_chunks_mut::<BLOCK>().0.iter_mut().zip(columns) {
            let [t0, t1, t2, t3] = ts;
            let [c0, c1, c2, c3] = hs;
            measure_column(t0, c0, steps);
            measure_column(t1, c1, steps);
            measure_column(t2, c2, steps);
            measure_column(t3, c3, steps);
        }
        let Some(own) = own.first_chunk_mut::<BLOCK>() else {
            break;
        };
        let [_, h10, _, h20, _, h21, _, h30, _, h31, _, h32] = *corner;
        let (h10, x0) = s1.apply(h10, s0.g);
        let (h20, x0) = s2.apply(h20, x0);
        let (h21, x1) = s2.apply(h21, s1.g);
        let (h30, x0) = s3.apply(h30, x0);
        let (h31, x1) = s3.apply(h31, x1);
        let (h32, x2) = s3.apply(h32, s2.g);
        (
            corner[1], corner[3], corner[5], corner[7], corner[9], corner[11],
        ) = (h10, h20, h21, h30, h31, h32);
        *own = [x0, x1, x2, s3.g];
        done += BLOCK;
    }
    for i in done..m {
        let Some((row, tail)) = core::mem::take(&mut rest).split_at_mut_checked(2 * i) else {
            break;
        };
        rest = tail;
        let (Some(di), Some(&[_, f])) = (d.get_mut(i), zu.get(i)) else {
            break;
        };
        let step = running.step(di, f);
        for (pair, t) in row.as_chunks_mut::<2>().0.iter_mut().zip(tau.iter_mut()) {
            (pair[1], *t) = step.apply(pair[1], *t);
        }
        if let Some(t) = tau.get_mut(i) {
            *t = step.g;
        }
    }
    running.alpha
}

/// A column's four `H` entries (the odd ones of `column`) and the scaled
/// gain's entry there through a block's steps, first row first.
#[inline(always)]
fn measure_column(tau: &mut f32, column: &mut [f32; 8], [s0, s1, s2, s3]: [Measured; BLOCK]) {
    let [_, h0, _, h1, _, h2, _, h3] = *column;
    let (h0, x) = s0.apply(h0, *tau);
    let (h1, x) = s1.apply(h1, x);
    let (h2, x) = s2.apply(h2, x);
    let (h3, x) = s3.apply(h3, x);
    (column[1], column[3], column[5], column[7]) = (h0, h1, h2, h3);
    *tau = x;
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

    /// A lower-triangular `L1` (well conditioned), a small strictly lower
    /// `G` and a small `d`, dense, and their packed storage.
    fn setup(m: usize) -> (Dense, Dense, Vec<f32>, [f32; M], [f32; M]) {
        let mut l1 = [[0.0f64; M]; M];
        let mut g = [[0.0f64; M]; M];
        let mut packed = std::vec![0.0f32; M * M];
        let mut inv1 = [0.0f32; M];
        let mut d = [0.0f32; M];
        for i in 0..m {
            for j in 0..=i {
                let h = ((3 * i + 7 * j) % 11) as f64 / 11.0 - 0.5;
                l1[i][j] = f64::from(
                    (if i == j {
                        1.5 + 0.1 * i as f64
                    } else {
                        0.3 * h
                    }) as f32,
                );
                if i == j {
                    inv1[i] = (1.0 / l1[i][i]) as f32;
                    d[i] = 0.05 + 0.01 * i as f32;
                } else {
                    g[i][j] = f64::from((0.04 * h) as f32);
                    packed[packed_index(i, j, 0, m, true)] = l1[i][j] as f32;
                    packed[packed_index(i, j, 1, m, true)] = g[i][j] as f32;
                }
            }
        }
        (l1, g, packed, inv1, d)
    }

    fn forward(l: &[[f64; M]; M], k: &[f64], m: usize) -> Vec<f64> {
        let mut z = std::vec![0.0; m];
        for i in 0..m {
            let s: f64 = (0..i).map(|j| l[i][j] * z[j]).sum();
            z[i] = (k[i] - s) / l[i][i];
        }
        z
    }

    /// `I - S = (I - G)^T (I - diag(d)) (I - G)`, dense.
    fn complement(g: &dyn Fn(usize, usize) -> f64, d: &[f32], m: usize) -> Vec<Vec<f64>> {
        let u = |i: usize, j: usize| {
            if i == j {
                1.0
            } else if j < i {
                -g(i, j)
            } else {
                0.0
            }
        };
        (0..m)
            .map(|a| {
                (0..m)
                    .map(|b| {
                        (0..m)
                            .map(|r| u(r, a) * (1.0 - f64::from(d[r])) * u(r, b))
                            .sum()
                    })
                    .collect()
            })
            .collect()
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
            let (l1, g, packed, inv1, d) = setup(m);
            let k: [f32; M] = core::array::from_fn(|i| 0.7 - 0.11 * i as f32);
            let kd: Vec<f64> = k.iter().map(|&v| f64::from(v)).collect();
            let a: [f32; M] = core::array::from_fn(|i| 0.25 * i as f32 - 1.0);
            let mut zu = [[0.0f32; 2]; M];
            let (n, s, za) = solve_and_multiply(&packed, &inv1, &d, &a, &k, m, &mut zu);
            let z = forward(&l1, &kd, m);
            let za64: f64 = (0..m).map(|i| z[i] * f64::from(a[i])).sum();
            assert!(
                (f64::from(za) - za64).abs() < 1e-5 * za64.abs().max(1.0),
                "m {m}"
            );
            let u: Vec<f64> = (0..m)
                .map(|i| (0..i).map(|j| g[i][j] * z[j]).sum())
                .collect();
            let n64: f64 = z.iter().map(|v| v * v).sum();
            // z^T S z = |z|^2 - z^T (I - S) z.
            let c = complement(&|i, j| g[i][j], &d, m);
            let s64 = n64
                - (0..m)
                    .map(|a| (0..m).map(|b| z[a] * c[a][b] * z[b]).sum::<f64>())
                    .sum::<f64>();
            assert!((f64::from(n) - n64).abs() < 1e-5 * n64.max(1.0), "m {m}");
            assert!(
                (f64::from(s) - s64).abs() < 1e-5 * s64.abs().max(1e-3),
                "m {m}: {s} {s64}"
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
            let (l1, g, packed, inv1, _) = setup(m);
            let t: [f32; M] = core::array::from_fn(|i| 0.3 + 0.17 * i as f32);
            let mut pairs: [[f32; 2]; M] = core::array::from_fn(|i| [0.5, t[i]]);
            let mut prepared = 0;
            let d: [f32; M] = core::array::from_fn(|i| i as f32);
            add_transposed(&packed, &mut pairs, &d, m, |[w, t], di| {
                // Each row once, in order, before it is used.
                assert_eq!(di, prepared as f32);
                prepared += 1;
                [w - 1.0, 2.0 * t]
            });
            assert_eq!(prepared, m);
            for j in 0..m {
                let want: f64 = -0.5
                    + (j + 1..m)
                        .map(|i| g[i][j] * 2.0 * f64::from(t[i]))
                        .sum::<f64>();
                assert!((f64::from(pairs[j][0]) - want).abs() < 1e-5, "m {m} w {j}");
            }
            let mut acc = t;
            back_substitute_first(&packed, &inv1, &mut acc, m);
            for j in 0..m {
                let back: f64 = (j..m).map(|i| l1[i][j] * f64::from(acc[i])).sum();
                assert!((back - f64::from(t[j])).abs() < 1e-4, "m {m} row {j}");
            }
        }
    }

    /// `S = W^T diag(D) W`, `W = I + H`, dense.
    fn covariance(h: &dyn Fn(usize, usize) -> f64, d: &[f32], m: usize) -> Vec<Vec<f64>> {
        let w = |r: usize, a: usize| {
            if r == a {
                1.0
            } else if a < r {
                h(r, a)
            } else {
                0.0
            }
        };
        (0..m)
            .map(|a| {
                (0..m)
                    .map(|b| (0..m).map(|r| w(r, a) * f64::from(d[r]) * w(r, b)).sum())
                    .collect()
            })
            .collect()
    }

    /// The covariance form's factors after an update, dense.
    fn covariance_after(packed: &[f32], d: &[f32], m: usize) -> Vec<Vec<f64>> {
        let at = |i: usize, j: usize| f64::from(packed[packed_index(i, j, 1, m, true)]);
        covariance(&|i, j| at(i, j), d, m)
    }

    /// Bierman's sweep gives `S z` (as `alpha tau`) and `S' = S - (S z)(S z)^T / (row + z^T
    /// S z)`, `L1` untouched.
    #[test]
    fn the_covariance_update_is_the_measurement_update() {
        for m in 1..=M {
            let (_, h, mut packed, _, mut d) = setup(m);
            let before = packed.clone();
            let s = covariance(&|i, j| h[i][j], &d, m);
            let z: Vec<f64> = (0..m).map(|i| 0.6 - 0.13 * i as f64).collect();
            let zu: [[f32; 2]; M] = core::array::from_fn(|i| {
                if i < m {
                    let u: f64 = (0..i).map(|j| h[i][j] * z[j]).sum();
                    [z[i] as f32, (z[i] + u) as f32]
                } else {
                    [0.0; 2]
                }
            });
            let row = 0.3f32;
            let mut tau = [9.0f32; M];
            let alpha = covariance_update(&mut packed, &mut d, &zu, &mut tau, row, m);
            let want: Vec<f64> = (0..m)
                .map(|a| (0..m).map(|b| s[a][b] * z[b]).sum())
                .collect();
            let zsz: f64 = (0..m).map(|a| z[a] * want[a]).sum();
            let sum = f64::from(row) + zsz;
            assert!((f64::from(alpha) - sum).abs() < 1e-5 * sum, "m {m} alpha");
            let after = covariance_after(&packed, &d, m);
            for a in 0..m {
                let sz = f64::from(alpha) * f64::from(tau[a]);
                assert!((sz - want[a]).abs() < 1e-5, "m {m} S z {a}");
                for b in 0..m {
                    let exact = s[a][b] - want[a] * want[b] / (f64::from(row) + zsz);
                    assert!((after[a][b] - exact).abs() < 1e-5, "m {m} ({a}, {b})");
                }
            }
            for j in 0..m {
                for i in j + 1..m {
                    let at = packed_index(i, j, 0, m, true);
                    assert_eq!(packed[at], before[at], "L1 touched at ({i}, {j})");
                }
            }
        }
    }

    /// Row `k` of the second factor scaled by one number and column `k`
    /// by another, nothing else touched, whether the blocks' windows fit
    /// in the storage or not.
    #[test]
    fn scaling_row_and_column_touches_them_alone() {
        // The whole `M x M` storage (every window fits) and the factors'
        // own `m (m - 1)` numbers (the last blocks' windows do not: entry
        // by entry).
        for (m, len) in (4..=64)
            .step_by(4)
            .flat_map(|m| [(m, m * m), (m, m * (m - 1))])
        {
            for k in 0..m {
                let mut packed = std::vec![1.0f32; len];
                scale_row_and_column(&mut packed, k, 2.0, 3.0, m);
                let mut expected = std::vec![1.0f32; len];
                for i in 0..m {
                    for j in 0..i {
                        let at = packed_index(i, j, 1, m, true);
                        expected[at] = if i == k {
                            2.0
                        } else if j == k {
                            3.0
                        } else {
                            1.0
                        };
                    }
                }
                assert_eq!(packed, expected, "m {m} k {k}");
            }
        }
    }

    /// Forgetting coordinate `k` is `S <- P S P + (1 - mu) e_k e_k^T`.
    #[test]
    fn forgetting_a_coordinate_moves_it_towards_the_prior() {
        for m in 1..=M {
            for k in 0..m {
                let (_, h, mut packed, _, mut d) = setup(m);
                let s = covariance(&|i, j| h[i][j], &d, m);
                let mu = 0.81f32;
                forget_coordinate(&mut packed, &mut d, k, mu, m, &mut [0.0; M]);
                let after = covariance_after(&packed, &d, m);
                let scale = |i: usize| if i == k { 0.9 } else { 1.0 };
                for a in 0..m {
                    for b in 0..m {
                        let prior = if a == k && b == k { 0.19 } else { 0.0 };
                        let exact = scale(a) * s[a][b] * scale(b) + prior;
                        assert!(
                            (after[a][b] - exact).abs() < 1e-5,
                            "m {m} k {k} ({a}, {b}): {} {exact}",
                            after[a][b]
                        );
                    }
                }
            }
        }
    }

    /// `I - S' = (I - S) + weight v v^T` with `G'` strictly lower, and
    /// `L1` untouched.
    #[test]
    fn the_update_is_the_rank_one_update() {
        for m in 1..=M {
            let (_, g, mut packed, _, mut d) = setup(m);
            let before = packed.clone();
            let d_before = d;
            let v: [f32; M] =
                core::array::from_fn(|i| if i < m { 0.2 - 0.05 * i as f32 } else { 0.0 });
            let mut consumed: [[f32; 2]; M] = core::array::from_fn(|i| [v[i], 9.0]);
            let weight = 0.7;
            update::<M, Step, [f32; 2]>(&mut packed, &mut d, &mut consumed, weight, 1.0, m);
            let old = complement(&|i, j| g[i][j], &d_before, m);
            let at = |i: usize, j: usize| f64::from(packed[packed_index(i, j, 1, m, true)]);
            let new = complement(&|i, j| if j < i { at(i, j) } else { 0.0 }, &d, m);
            for a in 0..m {
                for b in 0..m {
                    let want = old[a][b] + f64::from(weight) * f64::from(v[a]) * f64::from(v[b]);
                    assert!((new[a][b] - want).abs() < 1e-5, "m {m} ({a}, {b})");
                }
            }
            for j in 0..m {
                for i in j + 1..m {
                    let at = packed_index(i, j, 0, m, true);
                    assert_eq!(packed[at], before[at], "L1 touched at ({i}, {j})");
                }
            }
        }
    }
}
