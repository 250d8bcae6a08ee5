//! CSV rows, one record at a time: the same dialect
//! (`crate::data::csv_reader`), checks and messages as [`crate::data`]
//! (places given as `line L (data row R)`).

use std::fs::File;
use std::io::BufReader;

use super::{ChunkBuilder, TableFile};
use crate::data::Place;
use crate::files::Input;
use crate::Result;

fn reader(input: &Input) -> Result<csv::Reader<crate::data::Lines<BufReader<&File>>>> {
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
    let mut row = Vec::with_capacity(table.selected.len());
    let (inputs, target) = table.selected.split_at(table.selected.len() - 1);
    let labelled = !table.class_labels().is_empty();
    crate::data::for_each_record(&mut csv, source, width, |record, at| {
        row.clear();
        for &c in inputs {
            row.push(crate::data::cell_value(
                record,
                c,
                &table.columns,
                source,
                at,
            )?);
        }
        for &c in target {
            row.push(match labelled {
                true => table.label_code(record.get(c).unwrap_or(""), source, &at.describe())?,
                false => crate::data::cell_value(record, c, &table.columns, source, at)?,
            });
        }
        chunks.push(&row, record.position().map_or(0, |p| p.byte()))
    })
}

/// Hands every data row's target cell, as written, to `f` with its place.
pub(crate) fn target_cells(
    table: &TableFile,
    f: &mut dyn FnMut(&str, Place) -> Result<()>,
) -> Result<()> {
    let source = table.source.as_str();
    let mut csv = reader(&table.parts[0].input)?;
    let width = crate::data::read_header(&mut csv, source)?.len();
    let target = table.selected.last().copied().unwrap_or(0);
    crate::data::for_each_record(&mut csv, source, width, |record, at| {
        f(record.get(target).unwrap_or(""), at)
    })
}
