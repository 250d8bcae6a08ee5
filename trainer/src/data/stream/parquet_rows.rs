//! Parquet rows, read as Arrow record batches of the selected columns.
//!
//! Every selected column must be numeric (integer or floating point, any
//! width, float16 included); integers are converted to f64 exactly up to
//! 2^53. A dictionary-encoded column (pandas' `category`) is read as its
//! values. The columns pandas writes from a DataFrame's index (named in its
//! `pandas` metadata) are not data: they are not offered as columns. A null, NaN
//! or infinite cell is refused with the file, the data row (1-based, over
//! all row groups) and the column, as a bad CSV cell is; Parquet has no
//! lines, so the place is the data row alone.
//!
//! Every file is untrusted: the footer's offsets and sizes are checked
//! against the file before the `parquet` crate follows them, and a panic
//! inside the crate all the same is caught at this one boundary
//! (`crate::files::catch_quietly`) and reported as an unreadable file.

use std::fs::File;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type,
    UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrowPrimitiveType, GenericStringArray, OffsetSizeTrait, PrimitiveArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::ParquetMetaData;

use super::{ChunkBuilder, Part, TableFile};
use crate::data::{Place, Table};
use crate::files::{catch_quietly, AtomicFile, Input};
use crate::{Error, Result};

/// Rows per Arrow batch: the batches are re-cut into the pass's chunks.
const BATCH_ROWS: usize = 8192;

fn builder(input: &Input) -> Result<ParquetRecordBatchReaderBuilder<File>> {
    let source = input.name();
    let file = input.handle()?;
    let builder = guarded(source, || {
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| parquet_error(source, &e))
    })?;
    check_metadata(builder.metadata(), input.bytes(), source)?;
    Ok(builder)
}

fn parquet_error(source: &str, e: &dyn std::fmt::Display) -> Error {
    Error::BadInput(format!("{source}: not a readable Parquet file: {e}"))
}

/// Runs a call into the `parquet` crate, turning its panic into an error.
fn guarded<T>(source: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_quietly(f).unwrap_or_else(|panic| {
        Err(Error::BadInput(format!(
            "{source}: not a readable Parquet file: the Parquet reader failed on it ({panic}); \
             is it corrupted or truncated?"
        )))
    })
}

/// Checks that every offset and size the footer gives is non-negative and
/// inside the file, before any is followed.
fn check_metadata(meta: &ParquetMetaData, file_bytes: u64, source: &str) -> Result<()> {
    let bad = |what: String| {
        Error::BadInput(format!(
            "{source}: not a readable Parquet file: its footer {what} ({file_bytes} bytes): is \
             it corrupted or truncated?"
        ))
    };
    let inside = |start: i64, len: i64| {
        u64::try_from(start)
            .ok()
            .zip(u64::try_from(len).ok())
            .is_some_and(|(s, l)| s.checked_add(l).is_some_and(|end| end <= file_bytes))
    };
    if meta.file_metadata().num_rows() < 0 {
        return Err(bad(format!(
            "gives a negative row count ({}) for the file",
            meta.file_metadata().num_rows()
        )));
    }
    for (g, group) in meta.row_groups().iter().enumerate() {
        if group.num_rows() < 0 {
            return Err(bad(format!("gives row group {g} a negative row count")));
        }
        for column in group.columns() {
            let name = column.column_path().string();
            let start = column
                .dictionary_page_offset()
                .unwrap_or(column.data_page_offset());
            let ranges = [
                Some(("data", start, column.compressed_size())),
                Some(("data", column.data_page_offset(), 0)),
                column
                    .column_index_offset()
                    .zip(column.column_index_length())
                    .map(|(o, l)| ("column index", o, i64::from(l))),
                column
                    .offset_index_offset()
                    .zip(column.offset_index_length())
                    .map(|(o, l)| ("offset index", o, i64::from(l))),
                column.bloom_filter_offset().map(|o| {
                    (
                        "bloom filter",
                        o,
                        i64::from(column.bloom_filter_length().unwrap_or(0)),
                    )
                }),
            ];
            for (what, at, len) in ranges.into_iter().flatten() {
                if !inside(at, len) {
                    return Err(bad(format!(
                        "places the {what} of column '{name}' (row group {g}) at bytes {at} to \
                         {at} + {len}, outside the file"
                    )));
                }
            }
            if column.num_values() < 0 || column.uncompressed_size() < 0 {
                return Err(bad(format!(
                    "gives column '{name}' (row group {g}) a negative size"
                )));
            }
        }
    }
    Ok(())
}

/// The columns pandas wrote from a DataFrame's index: the `index_columns`
/// of the file's `pandas` metadata that name a column (a plain range index
/// is described there, not stored).
fn pandas_index(builder: &ParquetRecordBatchReaderBuilder<File>) -> Vec<String> {
    let metadata = builder.metadata().file_metadata().key_value_metadata();
    metadata
        .into_iter()
        .flatten()
        .filter(|kv| kv.key == "pandas")
        .filter_map(|kv| serde_json::from_str::<serde_json::Value>(kv.value.as_deref()?).ok())
        .flat_map(|pandas| match pandas.get("index_columns") {
            Some(serde_json::Value::Array(columns)) => columns.clone(),
            _ => Vec::new(),
        })
        .filter_map(|c| c.as_str().map(str::to_owned))
        .collect()
}

/// The data columns: each top-level column's position in the schema, name
/// and Arrow type, pandas' index columns left out.
fn data_fields(
    builder: &ParquetRecordBatchReaderBuilder<File>,
) -> Vec<(usize, String, arrow_schema::DataType)> {
    let index = pandas_index(builder);
    builder
        .schema()
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| !index.contains(f.name()))
        .map(|(root, f)| (root, f.name().clone(), f.data_type().clone()))
        .collect()
}

/// The schema positions of the data columns `selected` (indices into
/// [`data_fields`]).
fn roots(builder: &ParquetRecordBatchReaderBuilder<File>, names: &[&str]) -> Vec<usize> {
    let fields = data_fields(builder);
    names
        .iter()
        .filter_map(|name| fields.iter().find(|(_, n, _)| n == name).map(|f| f.0))
        .collect()
}

/// The data columns: names and Arrow types.
pub(crate) fn fields(input: &Input) -> Result<Vec<(String, arrow_schema::DataType)>> {
    let builder = builder(input)?;
    Ok(data_fields(&builder)
        .into_iter()
        .map(|(_, name, t)| (name, t))
        .collect())
}

/// Whether a column of type `t` holds text (dictionary-encoded or not).
fn is_text(t: &arrow_schema::DataType) -> bool {
    use arrow_schema::DataType;
    match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, values) => is_text(values),
        _ => false,
    }
}

/// The data column names, which of them hold text, and the number of
/// data rows.
pub(crate) fn columns(input: &Input) -> Result<(Vec<String>, Vec<bool>, u64)> {
    let builder = builder(input)?;
    let (names, text) = data_fields(&builder)
        .into_iter()
        .map(|(_, name, t)| (name, is_text(&t)))
        .unzip();
    let rows = builder.metadata().file_metadata().num_rows();
    Ok((names, text, u64::try_from(rows).unwrap_or(0)))
}

/// Reads the columns `select` picks from the schema's names into a
/// [`Table`], as [`crate::data`] reads a CSV file whole; with
/// `last_as_text`, the last selected column is kept as text (a text
/// column's labels, or a numeric column's numbers as written).
pub(crate) fn read_table(
    input: &Input,
    last_as_text: bool,
    select: impl FnOnce(&[String]) -> Result<Vec<usize>>,
) -> Result<Table> {
    let source = input.name();
    let builder = builder(input)?;
    let header: Vec<String> = data_fields(&builder)
        .into_iter()
        .map(|(_, name, _)| name)
        .collect();
    crate::data::check_names(&header, source)?;
    let selected = select(&header)?;
    let names: Vec<String> = selected
        .iter()
        .filter_map(|&c| header.get(c).cloned())
        .collect();
    let named: Vec<&str> = names.iter().map(String::as_str).collect();
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots(&builder, &named));
    let mut reader = guarded(source, || {
        builder
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(|e| parquet_error(source, &e))
    })?;
    let numeric = names.len() - usize::from(last_as_text && !names.is_empty());
    let mut rows: Vec<Vec<f64>> = Vec::new();
    let mut last_cells = Vec::new();
    let mut last_places = Vec::new();
    let mut values: Vec<Vec<f64>> = vec![Vec::new(); numeric];
    let mut first_row = 0u64;
    while let Some(batch) = guarded(source, || {
        reader
            .next()
            .transpose()
            .map_err(|e| parquet_error(source, &e))
    })? {
        let column = |name: &str| {
            batch.column_by_name(name).ok_or_else(|| {
                Error::BadInput(format!(
                    "{source}: column '{name}' missing from a row group"
                ))
            })
        };
        let place = |offset: usize, name: &str| {
            let row = first_row + offset as u64 + 1;
            format!("{source}: data row {row}, column '{name}'")
        };
        for (out, name) in values.iter_mut().zip(&names) {
            to_f64(column(name)?.as_ref(), out)
                .map_err(|(i, why)| Error::BadInput(format!("{}: {why}", place(i, name))))?;
        }
        if let (true, Some(name)) = (last_as_text, names.last()) {
            let cells = to_text(column(name)?.as_ref())
                .map_err(|(i, why)| Error::BadInput(format!("{}: {why}", place(i, name))))?;
            for i in 0..cells.len() {
                last_places.push(Place {
                    line: None,
                    row: first_row + i as u64 + 1,
                });
            }
            last_cells.extend(cells);
        }
        for i in 0..batch.num_rows() {
            rows.push(
                values
                    .iter()
                    .map(|v| v.get(i).copied().unwrap_or(f64::NAN))
                    .collect(),
            );
        }
        first_row += batch.num_rows() as u64;
    }
    if rows.is_empty() {
        return Err(Error::BadInput(format!("{source}: no data rows")));
    }
    Ok(Table {
        names,
        rows,
        last_cells,
        last_places,
    })
}

/// A column as text: the strings of a text column, the numbers of a
/// numeric one as Rust writes them (a label `3`, or a value to parse).
fn to_text(array: &dyn Array) -> std::result::Result<Vec<String>, (usize, String)> {
    if let Some(d) = array.as_any_dictionary_opt() {
        let values = to_text(d.values().as_ref()).map_err(|(_, why)| (0, why))?;
        return undictionary(d, &values);
    }
    if let Some(a) = array.as_string_opt::<i32>() {
        return strings(a);
    }
    if let Some(a) = array.as_string_opt::<i64>() {
        return strings(a);
    }
    if let Some(a) = array.as_string_view_opt() {
        return (0..a.len())
            .map(|i| match a.is_null(i) {
                true => Err((i, EMPTY.to_owned())),
                false => Ok(a.value(i).to_owned()),
            })
            .collect();
    }
    let mut numbers = Vec::new();
    to_f64(array, &mut numbers)?;
    Ok(numbers.iter().map(|v| format!("{v}")).collect())
}

/// Reads the selected columns of `table`, validating every cell, into
/// `chunks`: a directory's files one after the other, each error naming
/// the file and its data row.
pub(crate) fn read(table: &TableFile, chunks: &mut ChunkBuilder<'_>) -> Result<()> {
    let mut bytes_before = 0;
    for part in &table.parts {
        read_part(table, part, bytes_before, chunks)?;
        bytes_before += part.input.bytes();
    }
    Ok(())
}

fn read_part(
    table: &TableFile,
    part: &Part,
    bytes_before: u64,
    chunks: &mut ChunkBuilder<'_>,
) -> Result<()> {
    let source = part.input.name();
    let builder = builder(&part.input)?;
    let named: Vec<&str> = table
        .selected
        .iter()
        .filter_map(|&c| table.columns.get(c).map(String::as_str))
        .collect();
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots(&builder, &named));
    let mut reader = guarded(source, || {
        builder
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(|e| parquet_error(source, &e))
    })?;
    let total_rows = part.rows.unwrap_or(0).max(1);
    let width = table.selected.len();
    let mut columns: Vec<Vec<f64>> = vec![Vec::new(); width];
    let mut row = vec![0.0; width];
    let mut first_row = 0u64;
    // The chunks' consumer runs outside the guard: only the crate's own
    // calls are caught.
    while let Some(batch) = guarded(source, || {
        reader
            .next()
            .transpose()
            .map_err(|e| parquet_error(source, &e))
    })? {
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
            let share = part.input.bytes() as f64 * done as f64 / total_rows as f64;
            chunks.push(&row, bytes_before + share as u64)?;
        }
        first_row += batch.num_rows() as u64;
    }
    Ok(())
}

/// Why a null cell is refused.
const EMPTY: &str = "empty cell (missing values are not supported)";

/// The cells of a dictionary-encoded column, its dictionary's `values`
/// read; a null is refused with its offset.
fn undictionary<T: Clone>(
    d: &dyn arrow_array::AnyDictionaryArray,
    values: &[T],
) -> std::result::Result<Vec<T>, (usize, String)> {
    let keys = d.normalized_keys();
    keys.iter()
        .enumerate()
        .map(|(i, &k)| match (d.keys().is_null(i), values.get(k)) {
            (false, Some(v)) => Ok(v.clone()),
            _ => Err((i, EMPTY.to_owned())),
        })
        .collect()
}

/// The cells of a text column; a null is refused with its offset.
fn strings<O: OffsetSizeTrait>(
    array: &GenericStringArray<O>,
) -> std::result::Result<Vec<String>, (usize, String)> {
    (0..array.len())
        .map(|i| {
            if array.is_null(i) {
                Err((i, EMPTY.to_owned()))
            } else {
                Ok(array.value(i).to_owned())
            }
        })
        .collect()
}

/// A numeric column as finite f64 values (replacing `out`'s contents), or
/// the offset of the first bad cell and why it is bad.
fn to_f64(array: &dyn Array, out: &mut Vec<f64>) -> std::result::Result<(), (usize, String)> {
    out.clear();
    if let Some(d) = array.as_any_dictionary_opt() {
        let mut values = Vec::new();
        to_f64(d.values().as_ref(), &mut values).map_err(|(_, why)| (0, why))?;
        *out = undictionary(d, &values)?;
        return Ok(());
    }
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
    if let Some(a) = array.as_primitive_opt::<Float16Type>() {
        return convert(a, out, |v| v.to_f64());
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
            return Err((i, EMPTY.to_owned()));
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
/// [`Error::Io`] if the file cannot be written (any earlier file at `path`
/// is then unchanged: `AtomicFile`).
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
    let file = AtomicFile::create(path)?;
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut writer =
        ArrowWriter::try_new(file, batch.schema(), Some(properties)).map_err(|e| written(&e))?;
    writer.write(&batch).map_err(|e| written(&e))?;
    // Writes the footer and hands back the file, not yet in place.
    let file = writer.into_inner().map_err(|e| written(&e))?;
    file.commit()
}
