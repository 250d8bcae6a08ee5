//! CSV records, cells and headers: the reader every CSV path shares, its
//! places (line and data row) and its messages.

use std::io::Read;

use super::*;

/// Reads each data record of `csv`, whose header is `width` columns wide,
/// and hands it to `f` with its place; a ragged record is refused with its
/// place and widths.
pub(crate) fn for_each_record<R: Read>(
    csv: &mut csv::Reader<Lines<R>>,
    source: &str,
    width: usize,
    mut f: impl FnMut(&csv::StringRecord, Place) -> Result<()>,
) -> Result<()> {
    let mut record = csv::StringRecord::new();
    let mut row = 0u64;
    while csv
        .read_record(&mut record)
        .map_err(|e| csv_error(source, &e))?
    {
        row += 1;
        let line = Some(record_line(csv, &record));
        let at = Place { line, row };
        if record.len() != width {
            return Err(Error::BadInput(format!(
                "{source}: {}: has {} fields but the header has {width} columns",
                at.describe(),
                record.len()
            )));
        }
        f(&record, at)?;
    }
    Ok(())
}

/// The line (as an editor counts, whatever the line endings) where the
/// record just read begins. The csv crate's own count is one short after a
/// `\r\n` line end (it counts the `\n` with the next record) and after
/// blank lines, so lines are counted here: the record's last byte read (its
/// terminator, or its last cell at the end of the file) is on the line
/// after every line break before it, less the breaks inside its quoted cells.
fn record_line<R: Read>(csv: &mut csv::Reader<Lines<R>>, record: &csv::StringRecord) -> u64 {
    let start = record.position().map_or(0, csv::Position::byte);
    let end = csv.position().byte().saturating_sub(1);
    let lines = csv.get_mut();
    let first = lines.line_at(start);
    let last = lines.line_at(end);
    let inside = if last > first {
        record
            .iter()
            .map(|cell| cell.matches('\n').count() as u64)
            .sum()
    } else {
        0
    };
    last.saturating_sub(inside)
}

/// A reader that notes where each line break it passes on is, to tell the
/// line of a byte ([`Lines::line_at`]); it keeps only those not yet asked past.
pub(crate) struct Lines<R> {
    inner: R,
    /// Bytes read so far.
    read: u64,
    /// Where the line breaks not yet asked past are.
    ahead: std::collections::VecDeque<u64>,
    /// Line breaks asked past.
    passed: u64,
    /// A `\r` just read: a line break unless a `\n` follows.
    cr: Option<u64>,
}

impl<R> Lines<R> {
    /// The 1-based line of byte `at`; calls ask for bytes in order.
    fn line_at(&mut self, at: u64) -> u64 {
        while self.ahead.front().is_some_and(|&n| n < at) {
            self.ahead.pop_front();
            self.passed += 1;
        }
        self.passed + 1
    }
}

impl<R: Read> Read for Lines<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        for (i, &b) in buf.get(..n).unwrap_or_default().iter().enumerate() {
            let at = self.read + i as u64;
            // A line ends at `\n`, or at a `\r` not followed by one.
            if let Some(cr) = self.cr.take() {
                if b != b'\n' {
                    self.ahead.push_back(cr);
                }
            }
            match b {
                b'\n' => self.ahead.push_back(at),
                b'\r' => self.cr = Some(at),
                _ => {}
            }
        }
        self.read += n as u64;
        Ok(n)
    }
}

/// The number in cell `c` of a record at `at`; a bad cell is an error
/// naming the file, the place and the column (`header[c]`).
pub(crate) fn cell_value(
    record: &csv::StringRecord,
    c: usize,
    header: &[String],
    source: &str,
    at: Place,
) -> Result<f64> {
    parse_cell(record.get(c).unwrap_or("")).map_err(|why| {
        let name = header.get(c).map_or("", String::as_str);
        Error::BadInput(format!(
            "{source}: {}, column '{name}': {why}",
            at.describe()
        ))
    })
}

/// The one CSV dialect of training files, whether read whole or streamed:
/// a header row and cells trimmed of spaces. Rows of any width are let
/// through so that a ragged row is reported with its line and widths
/// rather than the csv crate's terse message.
pub(crate) fn csv_reader<R: Read>(reader: R) -> csv::Reader<Lines<R>> {
    csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(Lines {
            inner: reader,
            read: 0,
            ahead: std::collections::VecDeque::new(),
            passed: 0,
            cr: None,
        })
}

/// The column names of a CSV header row; an empty file is an error.
pub(crate) fn read_header<R: Read>(csv: &mut csv::Reader<R>, source: &str) -> Result<Vec<String>> {
    let header: Vec<String> = csv
        .headers()
        .map_err(|e| csv_error(source, &e))?
        .iter()
        .map(str::to_owned)
        .collect();
    if header.is_empty() || (header.len() == 1 && header.first().is_some_and(String::is_empty)) {
        return Err(Error::BadInput(format!(
            "{source}: empty file (expected a header row of column names)"
        )));
    }
    if let [only] = header.as_slice() {
        if let Some(sep) = [';', '\t', '|'].into_iter().find(|&c| only.contains(c)) {
            return Err(Error::BadInput(format!(
                "{source}: line 1 has no comma but {} '{}': sgp reads comma-separated values \
                 (export the file with commas)",
                only.matches(sep).count(),
                sep.escape_default()
            )));
        }
    }
    if header.iter().all(|h| parse_cell(h).is_ok()) {
        let shown: Vec<&str> = header.iter().take(4).map(String::as_str).collect();
        return Err(Error::BadInput(format!(
            "{source}: line 1 ({}{}) is all numbers: the first line must be a header naming \
             the columns (e.g. x1,x2,y); the file seems to have none",
            shown.join(","),
            if header.len() > 4 { ",..." } else { "" }
        )));
    }
    Ok(header)
}

pub(crate) fn csv_error(source: &str, e: &csv::Error) -> Error {
    if let csv::ErrorKind::Utf8 { pos, err } = e.kind() {
        let line = pos.as_ref().map_or(0, |p| p.line());
        return Error::BadInput(format!(
            "{source}: line {line}, field {}: not UTF-8 text (save the file as UTF-8; sgp reads \
             CSV as UTF-8 text, or Parquet)",
            err.field() + 1
        ));
    }
    match e.position() {
        Some(p) => Error::BadInput(format!("{source}: line {}: {e}", p.line())),
        None => Error::BadInput(format!("{source}: {e}")),
    }
}

/// A cell as quoted in a message: `'TEXT'`, a long one cut to its first
/// 60 characters (a 30 MB cell is not a message).
pub(crate) fn quote(cell: &str) -> String {
    const SHOWN: usize = 60;
    match cell.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("'{}...' ({} bytes)", &cell[..cut], cell.len()),
        None => format!("'{cell}'"),
    }
}

/// Parses one cell. Rust's `f64::from_str` accepts "nan", "inf" and
/// "infinity" and overflows "1e999" to infinity; none of those can be
/// trained on, so anything non-finite is refused with its own message.
pub(crate) fn parse_cell(cell: &str) -> std::result::Result<f64, String> {
    if cell.is_empty() {
        return Err("empty cell (missing values are not supported)".into());
    }
    match cell.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err(format!(
            "{} is not a finite number (NaN and infinity are not allowed)",
            quote(cell)
        )),
        Err(_) => Err(format!("{} is not a number", quote(cell))),
    }
}

pub(crate) fn check_names(names: &[String], source: &str) -> Result<()> {
    for (j, name) in names.iter().enumerate() {
        if name.is_empty() {
            return Err(Error::BadInput(format!(
                "{source}: column {} has an empty name in the header",
                j + 1
            )));
        }
        if let Some(k) = names.iter().take(j).position(|other| other == name) {
            return Err(Error::BadInput(format!(
                "{source}: duplicate column name '{name}' (columns {} and {})",
                k + 1,
                j + 1
            )));
        }
    }
    Ok(())
}

pub(crate) fn find_column(header: &[String], name: &str, source: &str) -> Result<usize> {
    header.iter().position(|h| h == name).ok_or_else(|| {
        Error::BadInput(format!(
            "{source}: no column named '{name}'; available columns: {}",
            header.join(", ")
        ))
    })
}
