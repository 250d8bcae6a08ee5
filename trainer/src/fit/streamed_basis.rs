//! The pass over every row of a streamed fit, as a statistic any engine can
//! map and reduce: the fitted basis, kernel and standardisation
//! ([`StreamedBasis`]), and the sums of raw rows it gives
//! ([`crate::model::posterior_sums::PosteriorSums`], merged by addition).
//!
//! [`StreamedBasis::sums`] standardises a block of raw rows and sums it in
//! chunks of [`StreamedBasis::chunk_rows`] rows folded in order, exactly as
//! [`StreamedBasis::pass`] sums a file; so the sums of the rows `0..k` and
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
    pub features: PseudoInputs,
    /// The fitted kernel and noise.
    pub kernel: KernelParams,
    /// FITC or VFE, and the jitter.
    pub config: FitcConfig,
    /// Raw to standardised units, of the kept inputs.
    pub transform: Standardisation,
    /// Indices of the inputs the model reads (the non-constant ones).
    pub keep: Vec<usize>,
    /// Inputs of a raw row (constant ones included).
    pub inputs: usize,
    /// Rows per chunk of the sums.
    pub chunk_rows: usize,
}

impl StreamedBasis {
    /// The model that sums chunks on this basis.
    ///
    /// # Errors
    /// [`Error::Numerical`] if `Kuu` cannot be factorised.
    pub(crate) fn chunk_model(&self) -> Result<ChunkModel<'_, PseudoInputs>> {
        ChunkModel::new(&self.features, &self.kernel, &self.config)
    }

    /// The sums of the raw rows `x` (N x [`StreamedBasis::inputs`], file
    /// column order) and targets `y`.
    ///
    /// # Errors
    /// [`Error::BadInput`] for a wrong shape or a non-finite value.
    pub fn sums(&self, x: &DMatrix<f64>, y: &DVector<f64>) -> Result<PosteriorSums> {
        if x.ncols() != self.inputs || x.nrows() != y.len() {
            return Err(Error::BadInput(format!(
                "rows to sum are {}x{} with {} targets; the basis reads {} inputs per row",
                x.nrows(),
                x.ncols(),
                y.len(),
                self.inputs
            )));
        }
        if x.iter().chain(y.iter()).any(|v| !v.is_finite()) {
            return Err(Error::BadInput(
                "rows to sum hold a missing or non-finite value".into(),
            ));
        }
        let model = self.chunk_model()?;
        let mut sums = PosteriorSums::zeros(self.features.num_inducing());
        for (_, xc, yc) in raw_chunks(x, y, self.chunk_rows) {
            self.add_chunk(&model, &mut sums, &xc, &yc)?;
        }
        Ok(sums)
    }

    /// The sums of every row of `table`, read in chunks of
    /// [`StreamedBasis::chunk_rows`]; `progress` after each.
    ///
    /// # Errors
    /// Every error of reading the file.
    pub fn pass(
        &self,
        table: &TableFile,
        progress: &mut dyn FnMut(ReadProgress),
    ) -> Result<PosteriorSums> {
        let model = self.chunk_model()?;
        let mut sums = PosteriorSums::zeros(self.features.num_inducing());
        table.for_each_chunk(self.chunk_rows, &mut |chunk, at| {
            self.add_chunk(&model, &mut sums, &chunk.x, &chunk.y)?;
            progress(at);
            Ok(())
        })?;
        Ok(sums)
    }

    fn add_chunk(
        &self,
        model: &ChunkModel<'_, PseudoInputs>,
        sums: &mut PosteriorSums,
        x: &DMatrix<f64>,
        y: &DVector<f64>,
    ) -> Result<()> {
        let xs = self.transform.apply_x(&x.select_columns(&self.keep));
        let ys = self.transform.apply_y(y);
        sums.merge(&model.sums(xs.as_view(), ys.as_slice())?)
    }
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
