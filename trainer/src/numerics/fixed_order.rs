//! Dense products and triangular solves that compute every entry by the same
//! sequence of IEEE operations on every CPU, at every SIMD width and thread
//! count: a fit's arithmetic, and so its blob, does not depend on the machine.
//!
//! Entry `(i, j)` of `C = alpha op(A) op(B)` is `alpha * s`, `s` summed in
//! increasing `k` from `+0`, each term a rounded multiply then a rounded add
//! (never a fused multiply-add), then added to the old `C_ij`; exact-zero
//! terms of a triangular factor may be skipped. Vectors run across entries,
//! never across a sum, so the register tile changes the speed only.
//! Substitutions follow the same rule.

use nalgebra::DMatrix;
use pulp::{Arch, Simd, WithSimd};

/// A read-only strided view of an `f64` matrix (column-major storage, or
/// its transpose, or a block of rows of either).
#[derive(Clone, Copy, Debug)]
pub struct MatRef<'a> {
    data: &'a [f64],
    offset: usize,
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: usize,
}

impl<'a> MatRef<'a> {
    /// A view of `rows x cols` column-major storage.
    ///
    /// # Panics
    /// If `data` is shorter than `rows * cols` (a caller bug).
    pub(crate) fn from_column_major(data: &'a [f64], rows: usize, cols: usize) -> Self {
        assert!(data.len() >= rows * cols, "matrix view past its storage");
        Self {
            data,
            offset: 0,
            rows,
            cols,
            row_stride: 1,
            col_stride: rows,
        }
    }

    /// A view of a nalgebra matrix's storage.
    pub fn of(m: &'a DMatrix<f64>) -> Self {
        Self::from_column_major(m.as_slice(), m.nrows(), m.ncols())
    }

    /// Rows.
    pub fn nrows(&self) -> usize {
        self.rows
    }

    /// Columns.
    pub fn ncols(&self) -> usize {
        self.cols
    }

    /// The transposed view (no copy).
    pub fn transpose(self) -> Self {
        Self {
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
            ..self
        }
    }

    /// Rows `start..start + n` (no copy).
    ///
    /// # Panics
    /// If they are not all rows of `self` (a caller bug).
    pub(crate) fn subrows(self, start: usize, n: usize) -> Self {
        assert!(
            start + n <= self.rows,
            "rows {start}..{} of {}",
            start + n,
            self.rows
        );
        Self {
            offset: self.offset + start * self.row_stride,
            rows: n,
            ..self
        }
    }

    /// Rows `i0..i0 + rows` and columns `j0..j0 + cols` (no copy).
    ///
    /// # Panics
    /// If they are not all inside `self` (a caller bug).
    pub fn block(self, i0: usize, j0: usize, rows: usize, cols: usize) -> Self {
        assert!(
            i0 + rows <= self.rows && j0 + cols <= self.cols,
            "block past the matrix's end"
        );
        Self {
            offset: self.offset + i0 * self.row_stride + j0 * self.col_stride,
            rows,
            cols,
            ..self
        }
    }

    /// The storage from the view's first entry, its shape and its strides:
    /// `(data, rows, cols, row_stride, col_stride)`.
    pub fn parts(&self) -> (&'a [f64], usize, usize, usize, usize) {
        let data = &self.data[self.offset.min(self.data.len())..];
        (data, self.rows, self.cols, self.row_stride, self.col_stride)
    }

    /// Entry `(i, j)`.
    #[inline(always)]
    pub fn at(&self, i: usize, j: usize) -> f64 {
        self.data[self.offset + i * self.row_stride + j * self.col_stride]
    }

    /// The entries of column `j`, top to bottom.
    #[inline(always)]
    pub fn column(&self, j: usize) -> impl Iterator<Item = f64> + 'a {
        let (start, stride, data) = (
            self.offset + j * self.col_stride,
            self.row_stride,
            self.data,
        );
        (0..self.rows).map(move |i| data[start + i * stride])
    }
}

/// Which entries of a square-ish operand or result can be non-zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Triangle {
    /// Every entry.
    Rectangular,
    /// Entries `(i, j)` with `i >= j`; the rest is not read (operands) or
    /// zero (results).
    TriangularLower,
    /// Entries `(i, j)` with `i <= j`; as above.
    TriangularUpper,
}

impl Triangle {
    #[inline(always)]
    fn holds(self, i: usize, j: usize) -> bool {
        match self {
            Triangle::Rectangular => true,
            Triangle::TriangularLower => i >= j,
            Triangle::TriangularUpper => i <= j,
        }
    }
}

/// A product's operands, their shapes and what to do with the result.
#[derive(Clone, Copy)]
pub struct Product<'a> {
    /// `op(A)`, `m x k`, and which of its entries are read.
    pub lhs: (MatRef<'a>, Triangle),
    /// `op(B)`, `k x n`, likewise.
    pub rhs: (MatRef<'a>, Triangle),
    /// Which entries of `C` are computed; the others are left (when
    /// accumulating) or set to zero.
    pub out: Triangle,
    /// `C += alpha A B` instead of `C = alpha A B`.
    pub accumulate: bool,
    /// The scale of the product.
    pub alpha: f64,
}

/// `dst` (`m x n`, column-major) `= alpha A B` or `+= alpha A B`, per
/// [`Product`], in the fixed order of the module's contract.
///
/// # Panics
/// If the shapes do not chain or `dst` has not `m n` entries (a caller bug).
pub fn gemm(dst: &mut [f64], p: Product<'_>) {
    let (m, n) = (p.lhs.0.nrows(), p.rhs.0.ncols());
    assert_eq!(dst.len(), m * n, "product's destination is not {m}x{n}");
    gemm_strided(dst, m, p);
}

/// [`gemm`] into a block of a larger column-major matrix: entry `(i, j)` of
/// the result at `dst[j ld + i]`.
fn gemm_strided(dst: &mut [f64], ld: usize, p: Product<'_>) {
    let (m, k, n) = (p.lhs.0.nrows(), p.lhs.0.ncols(), p.rhs.0.ncols());
    assert_eq!(
        p.rhs.0.nrows(),
        k,
        "product of {m}x{k} and {}x{n}",
        p.rhs.0.nrows()
    );
    if m == 0 || n == 0 {
        return;
    }
    if m * n * k <= SMALL_PRODUCT {
        return gemm_small(dst, ld, &p);
    }
    assert!(
        ld >= m && dst.len() >= (n - 1) * ld + m,
        "product's destination is too small"
    );
    Arch::new().dispatch(Tiled { dst, ld, p: &p });
}

/// Products of at most this many multiply-adds skip the packing and the
/// vector tiles: the same sums, one entry at a time.
const SMALL_PRODUCT: usize = 2048;

/// [`gemm`] entry by entry, in the contract's order.
fn gemm_small(dst: &mut [f64], ld: usize, p: &Product<'_>) {
    let ((a, a_shape), (b, b_shape)) = (p.lhs, p.rhs);
    for j in 0..b.ncols() {
        for i in 0..a.nrows() {
            let o = &mut dst[j * ld + i];
            if !p.out.holds(i, j) {
                if !p.accumulate {
                    *o = 0.0;
                }
                continue;
            }
            let mut s = 0.0;
            for kk in 0..a.ncols() {
                if a_shape.holds(i, kk) && b_shape.holds(kk, j) {
                    s += a.at(i, kk) * b.at(kk, j);
                }
            }
            let v = p.alpha * s;
            *o = if p.accumulate { *o + v } else { v };
        }
    }
}

/// [`gemm`] on the CPU's widest vectors: a register tile of a few vectors
/// of rows by a few columns, chosen for the number of vector registers.
struct Tiled<'d, 'p, 'a> {
    dst: &'d mut [f64],
    ld: usize,
    p: &'p Product<'a>,
}

impl WithSimd for Tiled<'_, '_, '_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        match S::F64_LANES {
            // AVX-512: 16 of 32 registers accumulate.
            8 => gemm_tiled::<S, 2, 8>(simd, self.dst, self.ld, self.p),
            // AVX2: 12 of 16.
            4 => gemm_tiled::<S, 3, 4>(simd, self.dst, self.ld, self.p),
            // NEON: 16 of 32; scalar (SSE2): as many as fit.
            _ => gemm_tiled::<S, 4, 4>(simd, self.dst, self.ld, self.p),
        }
    }
}

/// [`gemm`] with a register tile of `RV` vectors of rows (`MR = RV` times
/// the lanes) by `NR` columns. `A` is packed once into blocks of `MR` rows
/// (`MR` values per `k`, contiguous), zeros where its triangle holds nothing
/// or the matrix ends. `B` is read in place when its columns are contiguous
/// (column-major) or `NR` of its rows are (a transposed view), else from a
/// packed panel.
#[inline(always)]
fn gemm_tiled<S: Simd, const RV: usize, const NR: usize>(
    simd: S,
    dst: &mut [f64],
    ld: usize,
    p: &Product<'_>,
) {
    let mr = RV * S::F64_LANES;
    let ((a, a_shape), (b, b_shape)) = (p.lhs, p.rhs);
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    let mut scratch = Scratch::take();
    let a_len = m.div_ceil(mr) * mr * k;
    let buffer = scratch.zeroed(a_len + NR * k + mr * NR);
    let (a_pack, rest) = buffer.split_at_mut(a_len);
    let (b_pack, sums) = rest.split_at_mut(NR * k);
    pack_a(a, mr, a_shape, a_pack);
    let a_pack = &*a_pack;
    for j0 in (0..n).step_by(NR) {
        let j1 = (j0 + NR).min(n);
        let rectangular = b_shape == Triangle::Rectangular;
        // Column-major: `NR` columns read in place (past the end, the
        // last again; those sums are dropped), unless enough blocks of
        // rows share the panel that packing it pays.
        let in_place = rectangular && b.row_stride == 1 && m <= 4 * mr;
        let columns: Option<[&[f64]; NR]> = in_place.then(|| {
            std::array::from_fn(|c| {
                let start = b.offset + (j0 + c).min(n - 1) * b.col_stride;
                &b.data[start..start + k]
            })
        });
        let b_panel: (&[f64], usize) = if rectangular && b.col_stride == 1 && j1 - j0 == NR {
            (&b.data[b.offset + j0..], b.row_stride)
        } else if columns.is_some() {
            (&[], NR)
        } else {
            pack_b_panel::<NR>(b, b_shape, j0, b_pack);
            (b_pack, NR)
        };
        for i0 in (0..m).step_by(mr) {
            let i1 = (i0 + mr).min(m);
            let skip = match p.out {
                Triangle::Rectangular => false,
                Triangle::TriangularLower => i1 <= j0,
                Triangle::TriangularUpper => i0 >= j1,
            };
            let (lo, hi) = k_range((a_shape, b_shape), (i0, i1), (j0, j1), k);
            // The last block computes only the vectors it has rows for.
            let vectors = (i1 - i0).div_ceil(S::F64_LANES).min(RV);
            let height = vectors * S::F64_LANES;
            if skip || lo == hi {
                sums.fill(0.0);
            } else {
                let a_block = &a_pack[(i0 / mr) * mr * k..][..mr * k];
                let a_src = (&a_block[lo * mr..hi * mr], mr);
                let b_src = match &columns {
                    Some(cols) => BSource::Columns(cols.map(|c| &c[lo..hi])),
                    None => BSource::Rows(&b_panel.0[lo * b_panel.1..], b_panel.1, hi - lo),
                };
                // Whole vectors of rows of a rectangular result go straight
                // to `dst`; the rest through `sums`, entry by entry.
                let out = if p.out == Triangle::Rectangular && i1 - i0 == height {
                    Out::Direct {
                        dst: &mut *dst,
                        ld,
                        at: (i0, j0),
                        cols: j1 - j0,
                        alpha: p.alpha,
                        accumulate: p.accumulate,
                    }
                } else {
                    Out::Sums(&mut *sums)
                };
                let direct = matches!(out, Out::Direct { .. });
                match vectors {
                    1 => tile::<S, 1, NR>(simd, a_src, b_src, out),
                    2 => tile::<S, 2, NR>(simd, a_src, b_src, out),
                    3 => tile::<S, 3, NR>(simd, a_src, b_src, out),
                    _ => tile::<S, RV, NR>(simd, a_src, b_src, out),
                }
                if direct {
                    continue;
                }
            }
            for (c, col) in sums.chunks_exact(height).enumerate().take(j1 - j0) {
                let j = j0 + c;
                let out = &mut dst[j * ld + i0..j * ld + i1];
                write_column(out, &col[..i1 - i0], p, (i0, j));
            }
        }
    }
}

thread_local! {
    static SCRATCH: std::cell::Cell<Vec<f64>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A thread's packing buffer, kept between products (fresh pages for each
/// are costly); a nested product finds it taken and uses a buffer of its own.
struct Scratch(Vec<f64>);

impl Scratch {
    fn take() -> Self {
        Scratch(SCRATCH.with(|s| s.take()))
    }

    /// `len` zeros.
    fn zeroed(&mut self, len: usize) -> &mut [f64] {
        self.0.clear();
        self.0.resize(len, 0.0);
        &mut self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let buffer = std::mem::take(&mut self.0);
        SCRATCH.with(|s| s.set(buffer));
    }
}

/// Where a tile reads `B`'s `NR` columns for its steps.
enum BSource<'a, const NR: usize> {
    /// Entry `(kk, c)` at `data[kk step + c]`, `len` steps.
    Rows(&'a [f64], usize, usize),
    /// Entry `(kk, c)` at `columns[c][kk]`, all of the same length.
    Columns([&'a [f64]; NR]),
}

/// Where a tile's sums go.
enum Out<'d> {
    /// `MR x NR`, column-major.
    Sums(&'d mut [f64]),
    /// Columns `at.1..at.1 + cols` of `dst` (leading dimension `ld`), every
    /// row of the tile from `at.0` on: `alpha s`, added to the entry when
    /// `accumulate` (the same operations as [`write_column`]).
    Direct {
        dst: &'d mut [f64],
        ld: usize,
        at: (usize, usize),
        cols: usize,
        alpha: f64,
        accumulate: bool,
    },
}

/// Packs `B`'s columns `j0..j0 + NR` into `out` (`NR` values per `k`),
/// zeros past the last column and outside `B`'s triangle.
fn pack_b_panel<const NR: usize>(b: MatRef<'_>, shape: Triangle, j0: usize, out: &mut [f64]) {
    let cols = NR.min(b.ncols() - j0);
    let k = b.nrows();
    if cols < NR {
        out.fill(0.0);
    }
    if b.row_stride == 1 {
        // Column-major: `NR` columns read side by side.
        let mut columns: [std::slice::Iter<'_, f64>; NR] = std::array::from_fn(|c| {
            let start = b.offset + (j0 + c.min(cols - 1)) * b.col_stride;
            b.data[start..start + k].iter()
        });
        for row in out.chunks_exact_mut(NR) {
            for (v, column) in row.iter_mut().zip(columns.iter_mut()).take(cols) {
                *v = column.next().copied().unwrap_or(0.0);
            }
        }
    } else {
        for (kk, row) in out.chunks_exact_mut(NR).enumerate() {
            for (c, v) in row.iter_mut().enumerate().take(cols) {
                *v = b.at(kk, j0 + c);
            }
        }
    }
    if shape != Triangle::Rectangular {
        for (kk, row) in out.chunks_exact_mut(NR).enumerate() {
            for (c, v) in row.iter_mut().enumerate().take(cols) {
                if !shape.holds(kk, j0 + c) {
                    *v = 0.0;
                }
            }
        }
    }
}

/// `A` (`m x k`) in blocks of `mr` rows, `mr` values per `k` (row `i`,
/// column `kk` at `(i / mr) mr k + kk mr + i % mr`), zeros past the last
/// row and outside the triangle `shape`.
#[inline(always)]
fn pack_a(a: MatRef<'_>, mr: usize, shape: Triangle, out: &mut [f64]) {
    let (m, k) = (a.nrows(), a.ncols());
    if k == 0 {
        return;
    }
    for (block, packed) in out.chunks_exact_mut(mr * k).enumerate() {
        let i0 = block * mr;
        let rows = mr.min(m - i0);
        if a.row_stride == 1 {
            for (kk, dst) in packed.chunks_exact_mut(mr).enumerate() {
                let start = a.offset + kk * a.col_stride + i0;
                dst[..rows].copy_from_slice(&a.data[start..start + rows]);
            }
        } else {
            for r in 0..rows {
                let start = a.offset + (i0 + r) * a.row_stride;
                let row = a.data[start..].iter().step_by(a.col_stride.max(1));
                for (dst, v) in packed[r..].iter_mut().step_by(mr).zip(row) {
                    *dst = *v;
                }
            }
        }
        if shape != Triangle::Rectangular {
            for (kk, dst) in packed.chunks_exact_mut(mr).enumerate() {
                for (r, v) in dst.iter_mut().enumerate().take(rows) {
                    if !shape.holds(i0 + r, kk) {
                        *v = 0.0;
                    }
                }
            }
        }
    }
}

/// Writes a tile's column `sums` (rows `i0..`, column `j`) into `out` per
/// the product's scale, accumulation and result triangle.
#[inline(always)]
fn write_column(out: &mut [f64], sums: &[f64], p: &Product<'_>, (i0, j): (usize, usize)) {
    match (p.out, p.accumulate) {
        (Triangle::Rectangular, false) => {
            for (o, s) in out.iter_mut().zip(sums) {
                *o = p.alpha * s;
            }
        }
        (Triangle::Rectangular, true) => {
            for (o, s) in out.iter_mut().zip(sums) {
                *o += p.alpha * s;
            }
        }
        (shape, accumulate) => {
            for (r, (o, s)) in out.iter_mut().zip(sums).enumerate() {
                if shape.holds(i0 + r, j) {
                    let v = p.alpha * s;
                    *o = if accumulate { *o + v } else { v };
                } else if !accumulate {
                    *o = 0.0;
                }
            }
        }
    }
}

/// `sums = sum_kk a_kk b_kk^T` (`RV` vectors of rows by `NR` columns,
/// column-major) over the steps of `b`, `a_kk` the `RV` vectors at
/// `a.0[kk a.1..]`, from `+0`, one multiply and one add per term, the
/// accumulators in registers.
// Constant index loops below on purpose (see the comment there).
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn tile<S: Simd, const RV: usize, const NR: usize>(
    simd: S,
    a: (&[f64], usize),
    b: BSource<'_, NR>,
    out: Out<'_>,
) {
    let mr = RV * S::F64_LANES;
    let mut acc = [[simd.splat_f64s(0.0); RV]; NR];
    let (a, a_step) = a;
    let (b, b_step, len) = match b {
        BSource::Rows(data, step, len) => (data, step, len),
        BSource::Columns(cols) => {
            let len = cols[0].len();
            let a = &a[..len * a_step];
            for (kk, a_k) in a.chunks_exact(a_step).enumerate() {
                let row: [f64; NR] = std::array::from_fn(|c| cols[c][kk]);
                add_products::<S, RV, NR>(simd, &mut acc, &a_k[..mr], row);
            }
            (&[][..], NR, 0)
        }
    };
    // Operands cut to exactly `len` steps, so that each loop has one exit
    // and the accumulators stay in registers.
    if len == 0 {
        // Nothing to add: the sums stay +0.
    } else if a_step == mr && b_step == NR {
        let (a, b) = (&a[..len * mr], &b[..len * NR]);
        for (a_k, b_k) in a.chunks_exact(mr).zip(b.chunks_exact(NR)) {
            let row: &[f64; NR] = b_k.try_into().expect("NR values");
            add_products::<S, RV, NR>(simd, &mut acc, a_k, *row);
        }
    } else {
        let (a, b) = (&a[..len * a_step], &b[..(len - 1) * b_step + NR]);
        for (a_k, b_k) in a.chunks(a_step).zip(b.chunks(b_step)) {
            let row: &[f64; NR] = b_k[..NR].try_into().expect("NR values");
            add_products::<S, RV, NR>(simd, &mut acc, &a_k[..mr], *row);
        }
    }
    // Loops of constant trip count over the accumulators: with a constant
    // index each stays a register (a dynamic one spills them all to memory).
    match out {
        Out::Sums(sums) => {
            let (out, _) = S::as_mut_simd_f64s(sums);
            for c in 0..NR {
                for v in 0..RV {
                    out[c * RV + v] = acc[c][v];
                }
            }
        }
        Out::Direct {
            dst,
            ld,
            at: (i0, j0),
            cols,
            alpha,
            accumulate,
        } => {
            let alpha = simd.splat_f64s(alpha);
            for c in 0..NR {
                if c < cols {
                    let start = (j0 + c) * ld + i0;
                    let (out, _) = S::as_mut_simd_f64s(&mut dst[start..start + mr]);
                    for v in 0..RV {
                        let x = simd.mul_f64s(alpha, acc[c][v]);
                        out[v] = if accumulate {
                            simd.add_f64s(out[v], x)
                        } else {
                            x
                        };
                    }
                }
            }
        }
    }
}

/// `acc[c] += a b[c]`: one step of [`tile`] (a function, not a closure, so
/// that it is compiled with the caller's vector instructions).
#[inline(always)]
fn add_products<S: Simd, const RV: usize, const NR: usize>(
    simd: S,
    acc: &mut [[S::f64s; RV]; NR],
    a: &[f64],
    b: [f64; NR],
) {
    let (av, _) = S::as_simd_f64s(a);
    for (col, bj) in acc.iter_mut().zip(b) {
        let bv = simd.splat_f64s(bj);
        for (s, ai) in col.iter_mut().zip(av) {
            *s = simd.add_f64s(*s, simd.mul_f64s(*ai, bv));
        }
    }
}

/// The `k` outside which a triangular operand holds only zeros for the tile
/// of rows `i0..i1` and columns `j0..j1`.
fn k_range(
    (a_shape, b_shape): (Triangle, Triangle),
    (i0, i1): (usize, usize),
    (j0, j1): (usize, usize),
    k: usize,
) -> (usize, usize) {
    let (mut lo, mut hi) = (0, k);
    match a_shape {
        Triangle::Rectangular => {}
        Triangle::TriangularLower => hi = hi.min(i1),
        Triangle::TriangularUpper => lo = lo.max(i0),
    }
    match b_shape {
        Triangle::Rectangular => {}
        Triangle::TriangularLower => lo = lo.max(j0),
        Triangle::TriangularUpper => hi = hi.min(j1),
    }
    (lo, hi.max(lo))
}

/// Rows of a triangular factor solved at a time. Fixed, so the order of
/// every operation is the same on every CPU.
const SOLVE_BLOCK: usize = 32;

/// Overwrites `b` (`m x n`, column-major) with `L^{-1} b`, `l` (`m x m`,
/// column-major) lower triangular with no zero on its diagonal. Rows go in
/// blocks of `SOLVE_BLOCK`, all of it products of [`gemm`]: a block's
/// rows are multiplied by the inverse of the factor's diagonal block (by
/// substitution on the identity), then every later row loses the block's
/// contribution.
pub(crate) fn solve_lower_in_place(l: &[f64], m: usize, b: &mut [f64]) {
    solve_blocked(l, m, b, Direction::Forward);
}

/// Overwrites `b` with `L^{-T} b` (back substitution against the
/// transpose), blocked as [`solve_lower_in_place`] from the last block up.
pub(crate) fn solve_lower_t_in_place(l: &[f64], m: usize, b: &mut [f64]) {
    solve_blocked(l, m, b, Direction::Backward);
}

#[derive(Clone, Copy, PartialEq)]
enum Direction {
    /// `L x = b`, blocks in increasing order.
    Forward,
    /// `L^T x = b`, blocks in decreasing order.
    Backward,
}

fn solve_blocked(l: &[f64], m: usize, b: &mut [f64], dir: Direction) {
    assert_eq!(l.len(), m * m, "factor is not {m}x{m}");
    if m == 0 {
        return;
    }
    assert_eq!(b.len() % m, 0, "right-hand side is not {m} rows");
    let n = b.len() / m;
    let factor = MatRef::from_column_major(l, m, m);
    let mut starts: Vec<usize> = (0..m).step_by(SOLVE_BLOCK).collect();
    if dir == Direction::Backward {
        starts.reverse();
    }
    let mut rhs = vec![0.0; SOLVE_BLOCK.min(m) * n];
    let mut solved = vec![0.0; SOLVE_BLOCK.min(m) * n];
    for k0 in starts {
        let k1 = (k0 + SOLVE_BLOCK).min(m);
        let nb = k1 - k0;
        let (rhs, solved) = (&mut rhs[..nb * n], &mut solved[..nb * n]);
        for (col, dst) in b.chunks_exact(m).zip(rhs.chunks_exact_mut(nb)) {
            dst.copy_from_slice(&col[k0..k1]);
        }
        let inverse = diagonal_block_inverse(factor, k0, nb);
        let inverse = MatRef::from_column_major(&inverse, nb, nb);
        let (inverse, shape) = match dir {
            Direction::Forward => (inverse, Triangle::TriangularLower),
            Direction::Backward => (inverse.transpose(), Triangle::TriangularUpper),
        };
        gemm(
            solved,
            Product {
                lhs: (inverse, shape),
                rhs: (MatRef::from_column_major(rhs, nb, n), Triangle::Rectangular),
                out: Triangle::Rectangular,
                accumulate: false,
                alpha: 1.0,
            },
        );
        for (col, src) in b.chunks_exact_mut(m).zip(solved.chunks_exact(nb)) {
            col[k0..k1].copy_from_slice(src);
        }
        let (first, lhs) = match dir {
            Direction::Forward => (k1, factor.block(k1, k0, m - k1, nb)),
            Direction::Backward => (0, factor.block(k0, 0, nb, k0).transpose()),
        };
        if lhs.nrows() > 0 {
            gemm_strided(
                &mut b[first..],
                m,
                Product {
                    lhs: (lhs, Triangle::Rectangular),
                    rhs: (
                        MatRef::from_column_major(solved, nb, n),
                        Triangle::Rectangular,
                    ),
                    out: Triangle::Rectangular,
                    accumulate: true,
                    alpha: -1.0,
                },
            );
        }
    }
}

/// The inverse of the factor's diagonal block at rows and columns
/// `k0..k0 + nb` (lower triangular, column-major), by forward substitution
/// on the identity: `x_i = (e_i - l_{i,0} x_0 - ... - l_{i,i-1} x_{i-1}) /
/// l_ii`, block-relative indices, subtracting in increasing order.
fn diagonal_block_inverse(factor: MatRef<'_>, k0: usize, nb: usize) -> Vec<f64> {
    let mut inv = vec![0.0; nb * nb];
    for (c, col) in inv.chunks_exact_mut(nb).enumerate() {
        for i in c..nb {
            let mut x = if i == c { 1.0 } else { 0.0 };
            for (q, xq) in col.iter().enumerate().take(i).skip(c) {
                x -= factor.at(k0 + i, k0 + q) * xq;
            }
            col[i] = x / factor.at(k0 + i, k0 + i);
        }
    }
    inv
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The contract's order, one entry at a time.
    fn reference(p: &Product<'_>, old: &[f64]) -> Vec<f64> {
        let ((a, sa), (b, sb)) = (p.lhs, p.rhs);
        let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
        let mut out = vec![0.0; m * n];
        for j in 0..n {
            for i in 0..m {
                let mut s = 0.0;
                for kk in 0..k {
                    if sa.holds(i, kk) && sb.holds(kk, j) {
                        s += a.at(i, kk) * b.at(kk, j);
                    }
                }
                let o = old[j * m + i];
                out[j * m + i] = match (p.out.holds(i, j), p.accumulate) {
                    (true, true) => o + p.alpha * s,
                    (true, false) => p.alpha * s,
                    (false, true) => o,
                    (false, false) => 0.0,
                };
            }
        }
        out
    }

    fn values(len: usize, seed: u64) -> Vec<f64> {
        // Fractions with long mantissas, so any change of order shows.
        (0..len)
            .map(|i| libm::sin((i as f64 + 1.0) * 0.618_033_988_749 + seed as f64) * 1.7)
            .collect()
    }

    /// Every tile size, shape and edge gives exactly the contract's bits.
    #[test]
    fn products_are_bit_identical_to_the_sequential_sum() {
        let shapes = [
            Triangle::Rectangular,
            Triangle::TriangularLower,
            Triangle::TriangularUpper,
        ];
        for &(m, k, n) in &[(1, 1, 1), (3, 0, 2), (17, 9, 13), (33, 40, 21), (8, 64, 8)] {
            let a = values(m * k, 1);
            let b = values(k * n, 2);
            let at = values(k * m, 3);
            let old = values(m * n, 4);
            for &a_shape in &shapes {
                for &b_shape in &shapes {
                    for &out in &shapes {
                        for (accumulate, alpha) in [(false, 1.0), (true, -0.75)] {
                            for lhs in [
                                MatRef::from_column_major(&a, m, k),
                                MatRef::from_column_major(&at, k, m).transpose(),
                            ] {
                                let p = Product {
                                    lhs: (lhs, a_shape),
                                    rhs: (MatRef::from_column_major(&b, k, n), b_shape),
                                    out,
                                    accumulate,
                                    alpha,
                                };
                                let want = reference(&p, &old);
                                let mut got = old.clone();
                                gemm(&mut got, p);
                                assert_eq!(got, want);
                                let mut got = old.clone();
                                gemm_tiled::<_, 3, 5>(pulp::Scalar::new(), &mut got, m, &p);
                                assert_eq!(got, want);
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn solves_invert_the_factor() {
        let m = 11;
        let mut l = values(m * m, 5);
        for j in 0..m {
            for i in 0..m {
                if i < j {
                    l[j * m + i] = 0.0;
                } else if i == j {
                    l[j * m + i] = 2.0 + l[j * m + i].abs();
                }
            }
        }
        let b = values(m * 6, 6);
        let lm = DMatrix::from_column_slice(m, m, &l);
        let bm = DMatrix::from_column_slice(m, 6, &b);
        let mut x = b.clone();
        solve_lower_in_place(&l, m, &mut x);
        let back = &lm * DMatrix::from_column_slice(m, 6, &x);
        assert!((back - &bm).amax() < 1e-12);
        let mut x = b.clone();
        solve_lower_t_in_place(&l, m, &mut x);
        let back = lm.transpose() * DMatrix::from_column_slice(m, 6, &x);
        assert!((back - &bm).amax() < 1e-12);
    }
}
