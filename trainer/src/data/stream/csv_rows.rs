//! CSV rows, one record at a time: the same dialect
//! (`crate::data::csv_reader`), checks and messages as [`crate::data`]
//! (places given as `line L (data row R)`).

use std::fs::File;
use std::io::BufReader;

use super::{ChunkBuilder, TableFile};
use crate::files::Input;
use crate::{Error, Result};

fn reader(input: &Input) -> Result<csv::Reader<BufReader<&File>>> {
    Ok(crate::data::csv_reader(input.reader()?))
}

/// Whether `path` has more than `rows` data rows, reading no further than
/// the row after them (cells are not parsed). A record the csv crate
/// cannot read before then counts as the end: the file is then read whole,
/// and that reader reports it with its place.
pub(crate) fn more_rows_than(input: &Input, rows: u64) -> Result<bool> {
    let mut csv = reader(input)?;
    let mut record = csv::ByteRecord::new();
    let mut seen = 0u64;
    while seen <= rows {
        match csv.read_byte_record(&mut record) {
            Ok(true) => seen += 1,
            Ok(false) | Err(_) => return Ok(false),
        }
    }
    Ok(true)
}

/// Whether the first data row's cell in column `target` is text rather
/// than a number (class labels). A missing or unreadable first row is not:
/// the validating pass reports it.
pub(crate) fn first_cell_is_text(input: &Input, target: usize) -> Result<bool> {
    let mut csv = reader(input)?;
    let mut record = csv::StringRecord::new();
    Ok(match csv.read_record(&mut record) {
        Ok(true) => record
            .get(target)
            .is_some_and(|cell| !cell.is_empty() && cell.parse::<f64>().is_err()),
        Ok(false) | Err(_) => false,
    })
}

/// The column names of the header row.
pub(crate) fn columns(input: &Input) -> Result<Vec<String>> {
    crate::data::read_header(&mut reader(input)?, input.name())
}

/// Reads every record of `table`, validating its selected cells, into
/// `chunks`.
pub(crate) fn read(table: &TableFile, chunks: &mut ChunkBuilder<'_>) -> Result<()> {
    let source = table.source.as_str();
    let mut csv = reader(&table.parts[0].input)?;
    let width = crate::data::read_header(&mut csv, source)?.len();
    let mut record = csv::StringRecord::new();
    let mut row = Vec::with_capacity(table.selected.len());
    let mut data_row = 0u64;
    while csv
        .read_record(&mut record)
        .map_err(|e| crate::data::csv_error(source, &e))?
    {
        data_row += 1;
        let place = || {
            let line = record.position().map_or(0, |p| p.line());
            format!("{source}: line {line} (data row {data_row})")
        };
        if record.len() != width {
            return Err(Error::BadInput(format!(
                "{}: has {} fields but the header has {width} columns",
                place(),
                record.len()
            )));
        }
        row.clear();
        for &c in &table.selected {
            let cell = record.get(c).unwrap_or("");
            let value = crate::data::parse_cell(cell).map_err(|why| {
                let name = table.columns.get(c).map_or("", String::as_str);
                Error::BadInput(format!("{}, column '{name}': {why}", place()))
            })?;
            row.push(value);
        }
        let bytes = record.position().map_or(0, |p| p.byte());
        chunks.push(&row, bytes)?;
    }
    Ok(())
}
