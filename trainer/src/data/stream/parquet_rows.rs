//! Parquet rows, read as Arrow record batches of the selected columns.
//!
//! Every selected column must be numeric (integer or floating point, any
//! width); integers are converted to f64 exactly up to 2^53. A null, NaN
//! or infinite cell is refused with the file, the data row (1-based, over
//! all row groups) and the column, as a bad CSV cell is; Parquet has no
//! lines, so the place is the data row alone.

use std::fs::File;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrowPrimitiveType, PrimitiveArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use super::{ChunkBuilder, TableFile};
use crate::{Error, Result};

/// Rows per Arrow batch: the batches are re-cut into the pass's chunks.
const BATCH_ROWS: usize = 8192;

fn builder(path: &Path, source: &str) -> Result<ParquetRecordBatchReaderBuilder<File>> {
    let file = File::open(path).map_err(|e| Error::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| parquet_error(source, &e))
}

fn parquet_error(source: &str, e: &dyn std::fmt::Display) -> Error {
    Error::BadInput(format!("{source}: not a readable Parquet file: {e}"))
}

/// The top-level column names and the number of data rows.
pub(crate) fn columns(path: &Path, source: &str) -> Result<(Vec<String>, u64)> {
    let builder = builder(path, source)?;
    let names = builder
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let rows = builder.metadata().file_metadata().num_rows();
    Ok((names, u64::try_from(rows).unwrap_or(0)))
}

/// Reads the selected columns of `table`, validating every cell, into
/// `chunks`.
pub(crate) fn read(table: &TableFile, chunks: &mut ChunkBuilder<'_>) -> Result<()> {
    let source = table.source.as_str();
    let builder = builder(&table.path, source)?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), table.selected.iter().copied());
    let reader = builder
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(|e| parquet_error(source, &e))?;
    let total_rows = table.known_rows.unwrap_or(0).max(1);
    let width = table.selected.len();
    let mut columns: Vec<Vec<f64>> = vec![Vec::new(); width];
    let mut row = vec![0.0; width];
    let mut first_row = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| parquet_error(source, &e))?;
        for (values, &c) in columns.iter_mut().zip(&table.selected) {
            let name = table.columns.get(c).map_or("", String::as_str);
            let array = batch.column_by_name(name).ok_or_else(|| {
                Error::BadInput(format!(
                    "{source}: column '{name}' missing from a row group"
                ))
            })?;
            to_f64(array.as_ref(), values).map_err(|(offset, why)| {
                let data_row = first_row + offset as u64 + 1;
                Error::BadInput(format!(
                    "{source}: data row {data_row}, column '{name}': {why}"
                ))
            })?;
        }
        for i in 0..batch.num_rows() {
            for (cell, values) in row.iter_mut().zip(&columns) {
                *cell = values[i];
            }
            let done = first_row + i as u64 + 1;
            let bytes = (table.bytes as f64 * done as f64 / total_rows as f64) as u64;
            chunks.push(&row, bytes)?;
        }
        first_row += batch.num_rows() as u64;
    }
    Ok(())
}

/// A numeric column as finite f64 values (replacing `out`'s contents), or
/// the offset of the first bad cell and why it is bad.
fn to_f64(array: &dyn Array, out: &mut Vec<f64>) -> std::result::Result<(), (usize, String)> {
    out.clear();
    macro_rules! numeric {
        ($($t:ty),*) => {
            $(if let Some(a) = array.as_primitive_opt::<$t>() {
                return convert(a, out, |v| v as f64);
            })*
        };
    }
    numeric!(
        Float64Type,
        Int64Type,
        Int32Type,
        Int16Type,
        Int8Type,
        UInt64Type,
        UInt32Type
    );
    numeric!(UInt16Type, UInt8Type);
    if let Some(a) = array.as_primitive_opt::<Float32Type>() {
        return convert(a, out, f64::from);
    }
    Err((
        0,
        format!(
            "type {} is not numeric (only integer and floating-point columns can be read)",
            array.data_type()
        ),
    ))
}

fn convert<T: ArrowPrimitiveType>(
    array: &PrimitiveArray<T>,
    out: &mut Vec<f64>,
    as_f64: impl Fn(T::Native) -> f64,
) -> std::result::Result<(), (usize, String)> {
    for i in 0..array.len() {
        if array.is_null(i) {
            return Err((i, "empty cell (missing values are not supported)".into()));
        }
        let v = as_f64(array.value(i));
        if !v.is_finite() {
            return Err((
                i,
                format!("{v} is not a finite number (NaN and infinity are not allowed)"),
            ));
        }
        out.push(v);
    }
    Ok(())
}

/// Writes inputs `x` (rows x D, columns named `input_names`) and the
/// target `y` (named `target_name`, last) as a Parquet file of f64
/// columns, snappy-compressed: `sgp synth --parquet`, tests and
/// benchmarks.
///
/// # Errors
/// [`Error::BadInput`] if the names do not match the columns;
/// [`Error::Io`] if the file cannot be written.
pub fn write_parquet(
    path: &Path,
    x: &nalgebra::DMatrix<f64>,
    y: &nalgebra::DVector<f64>,
    input_names: &[String],
    target_name: &str,
) -> Result<()> {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Float64Array, RecordBatch};
    use parquet::arrow::ArrowWriter;
    use parquet::basic::Compression;
    use parquet::file::properties::WriterProperties;

    if input_names.len() != x.ncols() || x.nrows() != y.len() {
        return Err(Error::BadInput(format!(
            "{} input names for {} columns, {} targets for {} rows",
            input_names.len(),
            x.ncols(),
            y.len(),
            x.nrows()
        )));
    }
    let columns = x
        .column_iter()
        .map(|c| c.iter().copied().collect::<Vec<f64>>())
        .chain(std::iter::once(y.as_slice().to_vec()));
    let named = input_names
        .iter()
        .map(String::as_str)
        .chain(std::iter::once(target_name))
        .zip(columns)
        .map(|(name, values)| (name, Arc::new(Float64Array::from(values)) as ArrayRef));
    let written = |e: &dyn std::fmt::Display| Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    };
    let batch = RecordBatch::try_from_iter(named).map_err(|e| written(&e))?;
    let file = File::create(path).map_err(|e| Error::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut writer =
        ArrowWriter::try_new(file, batch.schema(), Some(properties)).map_err(|e| written(&e))?;
    writer.write(&batch).map_err(|e| written(&e))?;
    writer.close().map_err(|e| written(&e))?;
    Ok(())
}
