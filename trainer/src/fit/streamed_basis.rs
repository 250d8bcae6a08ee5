//! The pass over every row of a streamed fit, as a statistic any engine can
//! map and reduce: the fitted basis, kernel and standardisation
//! ([`StreamedBasis`]), and the sums of raw rows it gives
//! ([`crate::model::posterior_sums::PosteriorSums`], merged by addition).
//!
//! [`StreamedBasis::sums`] standardises a block of raw rows and sums it in
//! chunks of the basis's `chunk_rows` rows folded in order, exactly as
//! `StreamedBasis::pass` sums a file; so the sums of the rows `0..k` and
//! `k..n`, merged, are the file's bit for bit when `k..n` is the file's
//! last chunk (the same additions in the same order). Any other split
//! reassociates the sum: the same up to rounding (relative 1e-16 per
//! addition); a fixed split and merge order always gives the same bits.

use nalgebra::{DMatrix, DVector};

use crate::data::stream::{ReadProgress, TableFile};
use crate::data::Standardisation;
use crate::model::features::{InducingFeatures, PseudoInputs};
use crate::model::inference::fitc::FitcConfig;
use crate::model::kernel::KernelParams;
use crate::model::posterior_sums::{ChunkModel, PosteriorSums};
use crate::{Error, Result};

/// What a worker of the pass over every row needs (module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct StreamedBasis {
    /// The fitted pseudo-inputs (standardised units, kept inputs only).
    pub(crate) features: PseudoInputs,
    /// The fitted kernel and noise.
    pub(crate) kernel: KernelParams,
    /// FITC or VFE, and the jitter.
    pub(crate) config: FitcConfig,
    /// Raw to standardised units, of the kept inputs.
    pub(crate) transform: Standardisation,
    /// Indices of the inputs the model reads (the non-constant ones).
    pub(crate) keep: Vec<usize>,
    /// Inputs of a raw row (constant ones included).
    pub(crate) inputs: usize,
    /// Rows per chunk of the sums.
    pub(crate) chunk_rows: usize,
}

impl StreamedBasis {
    /// The model that sums chunks on this basis.
    ///
    /// # Errors
    /// [`Error::Numerical`] if `Kuu` cannot be factorised.
    pub(crate) fn chunk_model(&self) -> Result<ChunkModel<'_, PseudoInputs>> {
        ChunkModel::new(&self.features, &self.kernel, &self.config)
    }

    /// The sums of the raw rows `x` (N x the basis's `inputs`, file
    /// column order) and targets `y`.
    ///
    /// # Errors
    /// [`Error::BadInput`] for a wrong shape or a non-finite value.
    pub fn sums(&self, x: &DMatrix<f64>, y: &DVector<f64>) -> Result<PosteriorSums> {
        sums_of(self, x, y)
    }

    /// The sums of every row of `table`, read in chunks of
    /// the basis's `chunk_rows`; `progress` after each.
    ///
    /// # Errors
    /// Every error of reading the file.
    pub(crate) fn pass(
        &self,
        table: &TableFile,
        progress: &mut dyn FnMut(ReadProgress),
    ) -> Result<PosteriorSums> {
        pass_of(self, table, progress)
    }
}

impl RowPass for StreamedBasis {
    type Sums = PosteriorSums;
    type Prepared<'a> = ChunkModel<'a, PseudoInputs>;

    fn shape(&self) -> (usize, usize) {
        (self.inputs, self.chunk_rows)
    }

    fn prepare(&self) -> Result<Self::Prepared<'_>> {
        self.chunk_model()
    }

    fn zeros(&self) -> PosteriorSums {
        PosteriorSums::zeros(self.features.num_inducing())
    }

    fn merge(sums: &mut PosteriorSums, other: &PosteriorSums) -> Result<()> {
        sums.merge(other)
    }

    fn chunk_sums(
        &self,
        model: &Self::Prepared<'_>,
        x: &DMatrix<f64>,
        y: &DVector<f64>,
        _first_row: u64,
    ) -> Result<PosteriorSums> {
        let xs = self.transform.apply_x(&x.select_columns(&self.keep));
        let ys = self.transform.apply_y(y);
        model.sums(xs.as_view(), ys.as_slice())
    }
}

/// A basis whose pass over rows is a sum of chunk statistics merged in
/// order: the regression's ([`StreamedBasis`]) and the classifier's
/// (`super::streamed_classify::ClassifierBasis`). One home for how raw
/// rows are checked, cut into chunks and folded, so every engine's parts
/// merge to the file's bits.
pub(crate) trait RowPass {
    /// What a pass sums (merged by addition).
    type Sums;
    /// What every chunk of one pass shares (a factor of `Kuu`).
    type Prepared<'a>
    where
        Self: 'a;
    /// Inputs of a raw row, and rows per chunk.
    fn shape(&self) -> (usize, usize);
    /// # Errors
    /// [`Error::Numerical`] if `Kuu` cannot be factorised.
    fn prepare(&self) -> Result<Self::Prepared<'_>>;
    /// The sums of no rows.
    fn zeros(&self) -> Self::Sums;
    /// Adds the sums of other rows.
    ///
    /// # Errors
    /// [`Error::BadInput`] for sums of another shape.
    fn merge(sums: &mut Self::Sums, other: &Self::Sums) -> Result<()>;
    /// The sums of one chunk of finite raw rows, its first row `first_row`
    /// of the file (for messages).
    ///
    /// # Errors
    /// Whatever the basis refuses of a row.
    fn chunk_sums(
        &self,
        prepared: &Self::Prepared<'_>,
        x: &DMatrix<f64>,
        y: &DVector<f64>,
        first_row: u64,
    ) -> Result<Self::Sums>;
}

/// The sums of the raw rows `x` (file column order) and targets `y`, in
/// chunks as a pass reads a file.
///
/// # Errors
/// [`Error::BadInput`] for a wrong shape or a non-finite value, and every
/// refusal of [`RowPass::chunk_sums`].
pub(crate) fn sums_of<B: RowPass>(
    basis: &B,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
) -> Result<B::Sums> {
    let (inputs, chunk_rows) = basis.shape();
    if x.ncols() != inputs || x.nrows() != y.len() {
        return Err(Error::BadInput(format!(
            "rows to sum are {}x{} with {} targets; the basis reads {} inputs per row",
            x.nrows(),
            x.ncols(),
            y.len(),
            inputs
        )));
    }
    if x.iter().chain(y.iter()).any(|v| !v.is_finite()) {
        return Err(Error::BadInput(
            "rows to sum hold a missing or non-finite value".into(),
        ));
    }
    let prepared = basis.prepare()?;
    let mut sums = basis.zeros();
    for (start, xc, yc) in raw_chunks(x, y, chunk_rows) {
        B::merge(
            &mut sums,
            &basis.chunk_sums(&prepared, &xc, &yc, start as u64)?,
        )?;
    }
    Ok(sums)
}

/// The sums of every row of `table` (whose reader refuses non-finite
/// values); `progress` after each chunk.
///
/// # Errors
/// Every error of reading the file and of [`RowPass::chunk_sums`].
pub(crate) fn pass_of<B: RowPass>(
    basis: &B,
    table: &TableFile,
    progress: &mut dyn FnMut(ReadProgress),
) -> Result<B::Sums> {
    let prepared = basis.prepare()?;
    let mut sums = basis.zeros();
    table.for_each_chunk(basis.shape().1, &mut |chunk, at| {
        B::merge(
            &mut sums,
            &basis.chunk_sums(&prepared, &chunk.x, &chunk.y, chunk.first_row)?,
        )?;
        progress(at);
        Ok(())
    })?;
    Ok(sums)
}

/// The rows `x`, `y` cut into chunks of `chunk_rows` (the last shorter),
/// as a pass cuts a file: each chunk's first row, inputs and targets.
pub(crate) fn raw_chunks<'a>(
    x: &'a DMatrix<f64>,
    y: &'a DVector<f64>,
    chunk_rows: usize,
) -> impl Iterator<Item = (usize, DMatrix<f64>, DVector<f64>)> + 'a {
    let step = chunk_rows.max(1);
    (0..y.len()).step_by(step).map(move |start| {
        let len = step.min(y.len() - start);
        (
            start,
            x.rows(start, len).into_owned(),
            y.rows(start, len).into_owned(),
        )
    })
}

/// What the tests of every [`RowPass`] share.
#[cfg(test)]
pub(crate) mod split {
    use nalgebra::{DMatrix, DVector};

    use super::{sums_of, RowPass};
    use crate::data::stream::TableFile;

    /// Every row of `table`, in one block.
    pub(crate) fn rows_of(table: &TableFile) -> (DMatrix<f64>, DVector<f64>) {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        table
            .for_each_chunk(4096, &mut |chunk, _| {
                x.extend(chunk.x.row_iter().map(|r| r.into_owned()));
                y.extend(chunk.y.iter().copied());
                Ok(())
            })
            .unwrap();
        (DMatrix::from_rows(&x), DVector::from_vec(y))
    }

    /// The rows `..cut` and `cut..` summed apart, as two workers do, and
    /// merged in order.
    pub(crate) fn split_sums<B: RowPass>(
        basis: &B,
        (x, y): (&DMatrix<f64>, &DVector<f64>),
        cut: usize,
    ) -> B::Sums {
        let part = |at: usize, len: usize| {
            sums_of(
                basis,
                &x.rows(at, len).into_owned(),
                &y.rows(at, len).into_owned(),
            )
            .unwrap()
        };
        let mut sums = part(0, cut);
        B::merge(&mut sums, &part(cut, y.len() - cut)).unwrap();
        sums
    }

    /// Whether two regression sums of the same rows agree to rounding
    /// (another chunking sums in another order).
    pub(crate) fn sums_close(
        a: &crate::model::posterior_sums::PosteriorSums,
        b: &crate::model::posterior_sums::PosteriorSums,
    ) -> bool {
        let close = |a: &[f64], b: &[f64]| {
            a.iter()
                .zip(b)
                .all(|(p, q)| (p - q).abs() <= 1e-12 * (1.0 + q.abs()))
        };
        close(&a.a, &b.a) && close(&a.b, &b.b)
    }
}
