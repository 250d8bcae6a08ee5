//! Parquet rows, read column by column with the `parquet` crate's typed
//! column readers, one row group and [`BATCH_ROWS`] rows at a time.
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

use std::fmt;
use std::fs::File;
use std::path::Path;

use parquet::basic::{ConvertedType, LogicalType, Repetition, Type as Physical};
use parquet::column::reader::ColumnReader;
use parquet::data_type::{ByteArray, FixedLenByteArray};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::schema::types::{ColumnDescriptor, Type as Field};

use super::{ChunkBuilder, Part, TableFile};
use crate::data::{Place, Table};
use crate::files::{catch_quietly, AtomicFile, Input};
use crate::{Error, Result};

/// Rows read from each column at a time: the batches are re-cut into the
/// pass's chunks, so memory is bounded whatever a row group's size.
const BATCH_ROWS: usize = 8192;

fn open(input: &Input) -> Result<SerializedFileReader<File>> {
    let source = input.name();
    let file = input.handle()?;
    let reader = guarded(source, || {
        SerializedFileReader::new(file).map_err(|e| parquet_error(source, &e))
    })?;
    check_metadata(reader.metadata(), input.bytes(), source)?;
    Ok(reader)
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
fn pandas_index(meta: &ParquetMetaData) -> Vec<String> {
    meta.file_metadata()
        .key_value_metadata()
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

/// What a column's cells are, as far as reading them goes; shown with
/// Arrow's names, which pandas and polars users meet.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Kind {
    Float64,
    Float32,
    /// IEEE half precision (fixed-length bytes, logical type FLOAT16).
    Float16,
    /// An integer of `bits` bits (8 to 64), stored as INT32 or INT64.
    Int {
        bits: u8,
        signed: bool,
    },
    /// UTF-8 strings.
    Text,
    /// Anything else (booleans, dates, decimals, bytes, nested columns):
    /// not read; the description names it in messages.
    Other(String),
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Float64 => f.write_str("Float64"),
            Kind::Float32 => f.write_str("Float32"),
            Kind::Float16 => f.write_str("Float16"),
            Kind::Int { bits, signed } => {
                write!(f, "{}Int{bits}", if *signed { "" } else { "U" })
            }
            Kind::Text => f.write_str("Utf8"),
            Kind::Other(what) => f.write_str(what),
        }
    }
}

impl Kind {
    /// The kind of a top-level schema field.
    fn of(field: &Field) -> Kind {
        let info = field.get_basic_info();
        if field.is_group() {
            return Kind::Other(format!("group {}", field.name()));
        }
        if info.has_repetition() && info.repetition() == Repetition::REPEATED {
            return Kind::Other("repeated (a list)".into());
        }
        let physical = field.get_physical_type();
        let (logical, converted) = (info.logical_type_ref(), info.converted_type());
        let int = |bits, signed| Kind::Int { bits, signed };
        use ConvertedType as C;
        match (physical, logical, converted) {
            (Physical::DOUBLE, None, _) => Kind::Float64,
            (Physical::FLOAT, None, _) => Kind::Float32,
            (Physical::FIXED_LEN_BYTE_ARRAY, Some(LogicalType::Float16), _) => Kind::Float16,
            (Physical::INT32, None, C::NONE | C::INT_32) => int(32, true),
            (Physical::INT64, None, C::NONE | C::INT_64) => int(64, true),
            (Physical::INT32, None, C::INT_8) => int(8, true),
            (Physical::INT32, None, C::INT_16) => int(16, true),
            (Physical::INT32, None, C::UINT_8) => int(8, false),
            (Physical::INT32, None, C::UINT_16) => int(16, false),
            (Physical::INT32, None, C::UINT_32) => int(32, false),
            (Physical::INT64, None, C::UINT_64) => int(64, false),
            (Physical::INT32, Some(LogicalType::Integer(t)), _)
                if matches!(t.bit_width, 8 | 16 | 32) =>
            {
                int(t.bit_width as u8, t.is_signed)
            }
            (Physical::INT64, Some(LogicalType::Integer(t)), _) if t.bit_width == 64 => {
                int(64, t.is_signed)
            }
            (Physical::BYTE_ARRAY, Some(LogicalType::String | LogicalType::Json), _)
            | (Physical::BYTE_ARRAY, None, C::UTF8 | C::JSON) => Kind::Text,
            (_, Some(logical), _) => Kind::Other(format!("{physical} ({logical:?})")),
            (_, None, C::NONE) => Kind::Other(physical.to_string()),
            (_, None, converted) => Kind::Other(format!("{physical} ({converted})")),
        }
    }

    fn is_numeric(&self) -> bool {
        matches!(
            self,
            Kind::Float64 | Kind::Float32 | Kind::Float16 | Kind::Int { .. }
        )
    }
}

/// A data column: its leaf in the schema (when it is one), name and kind.
struct Column {
    leaf: Option<usize>,
    name: String,
    kind: Kind,
}

/// The data columns, in schema order, pandas' index columns left out.
fn data_columns(reader: &SerializedFileReader<File>) -> Vec<Column> {
    let meta = reader.metadata();
    let index = pandas_index(meta);
    let schema = meta.file_metadata().schema_descr();
    let leaf_of = |root: usize| {
        (0..schema.num_columns()).find(|&leaf| schema.get_column_root_idx(leaf) == root)
    };
    schema
        .root_schema()
        .get_fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| !index.iter().any(|i| i == f.name()))
        .map(|(root, f)| Column {
            leaf: leaf_of(root).filter(|_| f.is_primitive()),
            name: f.name().to_owned(),
            kind: Kind::of(f),
        })
        .collect()
}

/// The data columns: names and kinds.
pub(crate) fn fields(input: &Input) -> Result<Vec<(String, Kind)>> {
    let reader = open(input)?;
    Ok(data_columns(&reader)
        .into_iter()
        .map(|c| (c.name, c.kind))
        .collect())
}

/// The data column names, which of them hold text, and the number of
/// data rows.
pub(crate) fn columns(input: &Input) -> Result<(Vec<String>, Vec<bool>, u64)> {
    let reader = open(input)?;
    let (names, text) = data_columns(&reader)
        .into_iter()
        .map(|c| (c.name, c.kind == Kind::Text))
        .unzip();
    let rows = reader.metadata().file_metadata().num_rows();
    Ok((names, text, u64::try_from(rows).unwrap_or(0)))
}

/// Why a null cell is refused.
const EMPTY: &str = "empty cell (missing values are not supported)";

/// One column of a batch: numbers, or (read as text) strings.
enum Cells {
    Numbers(Vec<f64>),
    Text(Vec<String>),
}

/// The columns `names` of the file, read a batch of rows at a time; the
/// last as text when `last_as_text` (a text column's labels, or a
/// numeric column's numbers as Rust writes them). Each batch goes to
/// `each` with the 0-based data row of its first row, outside the guard:
/// only the crate's own calls are caught.
fn for_each_batch(
    input: &Input,
    names: &[&str],
    last_as_text: bool,
    each: &mut dyn FnMut(u64, &[Cells]) -> Result<()>,
) -> Result<()> {
    let source = input.name();
    let reader = open(input)?;
    let all = data_columns(&reader);
    let mut wanted = Vec::with_capacity(names.len());
    for (k, &name) in names.iter().enumerate() {
        let as_text = last_as_text && k + 1 == names.len();
        let column = all
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| Error::BadInput(format!("{source}: no column named '{name}'")))?;
        let readable = column.kind.is_numeric() || (as_text && column.kind == Kind::Text);
        match column.leaf {
            Some(leaf) if readable => wanted.push((leaf, column, as_text)),
            _ => {
                return Err(Error::BadInput(format!(
                    "{source}: column '{name}': type {} is not numeric (only integer and \
                     floating-point columns can be read)",
                    column.kind
                )))
            }
        }
    }
    let schema = reader.metadata().file_metadata().schema_descr_ptr();
    let mut first_row = 0u64;
    let mut batch: Vec<Cells> = Vec::with_capacity(wanted.len());
    for g in 0..reader.num_row_groups() {
        let group_rows = reader.metadata().row_group(g).num_rows();
        let group_rows = u64::try_from(group_rows).unwrap_or(0);
        let group = guarded(source, || {
            reader
                .get_row_group(g)
                .map_err(|e| parquet_error(source, &e))
        })?;
        let mut readers = Vec::with_capacity(wanted.len());
        for &(leaf, _, _) in &wanted {
            readers.push(guarded(source, || {
                group
                    .get_column_reader(leaf)
                    .map_err(|e| parquet_error(source, &e))
            })?);
        }
        let mut done = 0u64;
        while done < group_rows {
            let rows = (group_rows - done).min(BATCH_ROWS as u64) as usize;
            batch.clear();
            for (reader, &(leaf, column, as_text)) in readers.iter_mut().zip(&wanted) {
                let descr = schema.column(leaf);
                let cells = guarded(source, || {
                    read_cells(reader, &descr, &column.kind, as_text, rows)
                        .map_err(|e| parquet_error(source, &e))
                })?
                .map_err(|(offset, why)| {
                    let row = first_row + done + offset as u64 + 1;
                    Error::BadInput(format!(
                        "{source}: data row {row}, column '{}': {why}",
                        column.name
                    ))
                })?;
                let got = match &cells {
                    Cells::Numbers(v) => v.len(),
                    Cells::Text(v) => v.len(),
                };
                if got != rows {
                    return Err(parquet_error(
                        source,
                        &format!(
                            "column '{}' of row group {g} holds fewer rows than the group",
                            column.name
                        ),
                    ));
                }
                batch.push(cells);
            }
            each(first_row + done, &batch)?;
            done += rows as u64;
        }
        first_row += group_rows;
    }
    Ok(())
}

/// A bad cell: its offset in the batch and why it is bad.
type BadCell = (usize, String);

/// Reads up to `rows` rows of one column into [`Cells`]; the outer error
/// is the crate's (an unreadable page), the inner one a bad cell.
fn read_cells(
    reader: &mut ColumnReader,
    descr: &ColumnDescriptor,
    kind: &Kind,
    as_text: bool,
    rows: usize,
) -> parquet::errors::Result<std::result::Result<Cells, BadCell>> {
    let nullable = descr.max_def_level() > 0;
    let mut levels = Vec::new();
    let defs = nullable.then_some(&mut levels);
    let numbers: Vec<f64> = match reader {
        ColumnReader::DoubleColumnReader(r) => {
            let mut v = Vec::with_capacity(rows);
            r.read_records(rows, defs, None, &mut v)?;
            v
        }
        ColumnReader::FloatColumnReader(r) => {
            let mut v = Vec::with_capacity(rows);
            r.read_records(rows, defs, None, &mut v)?;
            v.into_iter().map(f64::from).collect()
        }
        ColumnReader::Int32ColumnReader(r) => {
            let mut v = Vec::with_capacity(rows);
            r.read_records(rows, defs, None, &mut v)?;
            let signed = !matches!(kind, Kind::Int { signed: false, .. });
            // An unsigned column stores its values' bits in an i32.
            v.into_iter()
                .map(|x| if signed { f64::from(x) } else { f64::from(x as u32) })
                .collect()
        }
        ColumnReader::Int64ColumnReader(r) => {
            let mut v = Vec::with_capacity(rows);
            r.read_records(rows, defs, None, &mut v)?;
            let signed = !matches!(kind, Kind::Int { signed: false, .. });
            v.into_iter()
                .map(|x| if signed { x as f64 } else { x as u64 as f64 })
                .collect()
        }
        ColumnReader::FixedLenByteArrayColumnReader(r) => {
            let mut v: Vec<FixedLenByteArray> = Vec::with_capacity(rows);
            r.read_records(rows, defs, None, &mut v)?;
            let mut out = Vec::with_capacity(v.len());
            for (i, cell) in v.iter().enumerate() {
                match <[u8; 2]>::try_from(cell.data()) {
                    Ok(bytes) => out.push(half::f16::from_le_bytes(bytes).to_f64()),
                    Err(_) => return Ok(Err((i, "a float16 cell is not 2 bytes long".into()))),
                }
            }
            out
        }
        ColumnReader::ByteArrayColumnReader(r) => {
            let mut v: Vec<ByteArray> = Vec::with_capacity(rows);
            r.read_records(rows, defs, None, &mut v)?;
            if let Some(i) = first_null(&levels, descr) {
                return Ok(Err((i, EMPTY.to_owned())));
            }
            let mut out = Vec::with_capacity(v.len());
            for (i, cell) in v.iter().enumerate() {
                match cell.as_utf8() {
                    Ok(s) => out.push(s.to_owned()),
                    Err(_) => return Ok(Err((i, "a text cell is not UTF-8".into()))),
                }
            }
            return Ok(Ok(Cells::Text(out)));
        }
        ColumnReader::BoolColumnReader(_) | ColumnReader::Int96ColumnReader(_) => {
            return Ok(Err((
                0,
                format!("type {kind} is not numeric (only integer and floating-point columns can be read)"),
            )))
        }
    };
    if let Some(i) = first_null(&levels, descr) {
        return Ok(Err((i, EMPTY.to_owned())));
    }
    if let Some(i) = numbers.iter().position(|v| !v.is_finite()) {
        return Ok(Err((
            i,
            format!(
                "{} is not a finite number (NaN and infinity are not allowed)",
                numbers[i]
            ),
        )));
    }
    Ok(Ok(match as_text {
        true => Cells::Text(numbers.iter().map(|v| format!("{v}")).collect()),
        false => Cells::Numbers(numbers),
    }))
}

/// The offset of the first null among a batch's definition levels.
fn first_null(levels: &[i16], descr: &ColumnDescriptor) -> Option<usize> {
    levels.iter().position(|&d| d < descr.max_def_level())
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
    let header: Vec<String> = data_columns(&open(input)?)
        .into_iter()
        .map(|c| c.name)
        .collect();
    crate::data::check_names(&header, source)?;
    let selected = select(&header)?;
    let names: Vec<String> = selected
        .iter()
        .filter_map(|&c| header.get(c).cloned())
        .collect();
    let named: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut rows: Vec<Vec<f64>> = Vec::new();
    let mut last_cells = Vec::new();
    let mut last_places = Vec::new();
    for_each_batch(input, &named, last_as_text, &mut |first_row, batch| {
        let (numbers, text) = split_batch(batch);
        let n = numbers.first().map_or(0, |v| v.len());
        let n = text.map_or(n, Vec::len);
        for i in 0..n {
            rows.push(numbers.iter().map(|v| v[i]).collect());
        }
        if let Some(cells) = text {
            last_places.extend((0..cells.len()).map(|i| Place {
                line: None,
                row: first_row + i as u64 + 1,
            }));
            last_cells.extend(cells.iter().cloned());
        }
        Ok(())
    })?;
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

/// A batch's numeric columns, and its text column (the last) if any.
fn split_batch(batch: &[Cells]) -> (Vec<&[f64]>, Option<&Vec<String>>) {
    let mut numbers = Vec::with_capacity(batch.len());
    let mut text = None;
    for cells in batch {
        match cells {
            Cells::Numbers(v) => numbers.push(v.as_slice()),
            Cells::Text(v) => text = Some(v),
        }
    }
    (numbers, text)
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
    let named: Vec<&str> = table
        .selected
        .iter()
        .filter_map(|&c| table.columns.get(c).map(String::as_str))
        .collect();
    let total_rows = part.rows.unwrap_or(0).max(1);
    let mut row = vec![0.0; named.len()];
    let labelled = !table.class_labels().is_empty();
    let source = part.input.name();
    for_each_batch(&part.input, &named, labelled, &mut |first_row, batch| {
        let (columns, text) = split_batch(batch);
        let n = text.map_or_else(|| columns.first().map_or(0, |v| v.len()), Vec::len);
        for i in 0..n {
            for (cell, values) in row.iter_mut().zip(&columns) {
                *cell = values[i];
            }
            if let (Some(cells), Some(last)) = (text, row.last_mut()) {
                let place = format!("data row {}", first_row + i as u64 + 1);
                *last = table.label_code(&cells[i], source, &place)?;
            }
            let done = first_row + i as u64 + 1;
            let share = part.input.bytes() as f64 * done as f64 / total_rows as f64;
            chunks.push(&row, bytes_before + share as u64)?;
        }
        Ok(())
    })
}

/// Hands every data row's target cell, as text, to `f` with its file and
/// place: a directory's files one after the other.
pub(crate) fn target_cells(
    table: &TableFile,
    f: &mut dyn FnMut(&str, &str, Place) -> Result<()>,
) -> Result<()> {
    let target = [table.target_name.as_str()];
    for part in &table.parts {
        let source = part.input.name();
        for_each_batch(&part.input, &target, true, &mut |first_row, batch| {
            let (_, text) = split_batch(batch);
            for (i, cell) in text.into_iter().flatten().enumerate() {
                let at = Place {
                    line: None,
                    row: first_row + i as u64 + 1,
                };
                f(cell, source, at)?;
            }
            Ok(())
        })?;
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

    use parquet::basic::Compression;
    use parquet::data_type::DoubleType;
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;

    if input_names.len() != x.ncols() || x.nrows() != y.len() {
        return Err(Error::BadInput(format!(
            "{} input names for {} columns, {} targets for {} rows",
            input_names.len(),
            x.ncols(),
            y.len(),
            x.nrows()
        )));
    }
    let written = |e: &dyn fmt::Display| Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    };
    let names: Vec<&str> = input_names
        .iter()
        .map(String::as_str)
        .chain(std::iter::once(target_name))
        .collect();
    let fields = names
        .iter()
        .map(|name| {
            Field::primitive_type_builder(name, Physical::DOUBLE)
                .with_repetition(Repetition::REQUIRED)
                .build()
                .map(Arc::new)
        })
        .collect::<parquet::errors::Result<Vec<_>>>()
        .map_err(|e| written(&e))?;
    let schema = Field::group_type_builder("schema")
        .with_fields(fields)
        .build()
        .map_err(|e| written(&e))?;
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let file = AtomicFile::create(path)?;
    let mut writer = SerializedFileWriter::new(file, Arc::new(schema), Arc::new(properties))
        .map_err(|e| written(&e))?;
    let mut group = writer.next_row_group().map_err(|e| written(&e))?;
    let columns = x
        .column_iter()
        .map(|c| c.iter().copied().collect::<Vec<f64>>())
        .chain(std::iter::once(y.as_slice().to_vec()));
    for values in columns {
        let mut column = group
            .next_column()
            .map_err(|e| written(&e))?
            .ok_or_else(|| written(&"the schema has fewer columns than the data"))?;
        column
            .typed::<DoubleType>()
            .write_batch(&values, None, None)
            .map_err(|e| written(&e))?;
        column.close().map_err(|e| written(&e))?;
    }
    group.close().map_err(|e| written(&e))?;
    // Writes the footer and hands back the file, not yet in place.
    let file = writer.into_inner().map_err(|e| written(&e))?;
    file.commit()
}
