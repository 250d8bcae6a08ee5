//! Training files of any size, read in chunks of rows: CSV (`csv_rows`)
//! and Parquet (`parquet_rows`), validated as [`crate::data`] validates
//! a CSV file read whole, but never holding more than one chunk.
//!
//! A `TableFile` is a file whose header (or schema) has been read and
//! whose columns have been chosen as [`crate::data::Dataset::from_csv`]
//! chooses them. Its rows are read as often as needed
//! (`TableFile::for_each_chunk`), always in the same chunks whatever the
//! format, so sums over chunks ([`crate::model::posterior_sums`]) are bit
//! for bit the same from CSV and Parquet. `scan` is the first pass:
//! validation, standardisation and a random sample of rows.
//!
//! The format is recognised by content, not by name: a Parquet file starts
//! with the bytes `PAR1`, anything else is read as CSV. The file is opened
//! once ([`crate::files::Input`]; a pipe is copied to a temporary file) and
//! every pass reads that one open file from its start. A directory of
//! Parquet files (`directory`) is one table: its files' rows in name
//! order, cut into the same chunks as one file holding them all.
//!
//! ```no_run
//! use sgp_trainer::data::stream::TableFile;
//!
//! let table = TableFile::open("log.parquet", Some("power")).unwrap();
//! let mut rows = 0;
//! table
//!     .for_each_chunk(65_536, &mut |chunk, _| {
//!         rows += chunk.y.len();
//!         Ok(())
//!     })
//!     .unwrap();
//! println!("{rows} rows of {} inputs", table.input_names.len());
//! ```

pub(crate) mod csv_rows;
pub(crate) mod directory;
pub(crate) mod parquet_rows;
pub(crate) mod scan;

use std::path::Path;
use std::sync::{Arc, OnceLock};

use nalgebra::{DMatrix, DVector};

use crate::data::labels::LabelTally;
use crate::files::{Input, InputFormat};
use crate::{Error, Result};
pub use parquet_rows::write_parquet;
pub(crate) use scan::scan;
pub(crate) use scan::Scan;

/// Rows per chunk of the streamed passes: large enough that per-chunk
/// overhead vanishes and every core gets parallel work, small enough to
/// stay a few megabytes.
pub(crate) const DEFAULT_CHUNK_ROWS: usize = 65_536;

/// How a training file stores its rows.
pub(crate) type Format = InputFormat;

/// A training file with its columns chosen (module documentation).
#[derive(Clone, Debug)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct TableFile {
    /// The file, open; a directory's files in name order.
    parts: Vec<Part>,
    /// How it names itself in messages (the path as given).
    pub source: String,
    /// CSV or Parquet.
    pub(crate) format: Format,
    /// Input column names, in file order.
    pub input_names: Vec<String>,
    /// Target column name.
    pub target_name: String,
    /// Every column name of the file, in file order.
    columns: Vec<String>,
    /// Index in `columns` of each input, then of the target.
    selected: Vec<usize>,
    /// Data rows, when the format records them (Parquet).
    known_rows: Option<u64>,
    /// Which columns hold text, when the format records it (Parquet).
    text_columns: Vec<bool>,
    /// A text target's class labels, sorted ([`TableFile::with_labels`]):
    /// the passes read each target cell as its label's index.
    labels: Option<Arc<Vec<String>>>,
    /// Data rows of the first complete pass (every pass must agree).
    rows_read: Arc<OnceLock<u64>>,
    /// File size in bytes.
    bytes: u64,
}

/// One file of a table: a directory has several.
#[derive(Clone, Debug)]
pub(crate) struct Part {
    /// The file, open.
    pub(crate) input: Input,
    /// Its data rows, when the format records them (Parquet).
    pub(crate) rows: Option<u64>,
}

/// One chunk of rows in raw units.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct RawChunk {
    /// Inputs, rows x D, columns in the order of [`TableFile::input_names`].
    pub x: DMatrix<f64>,
    /// Targets.
    pub y: DVector<f64>,
    /// 0-based index among the file's data rows of the chunk's first row.
    pub first_row: u64,
}

/// How far a pass over a file has come.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReadProgress {
    /// Data rows read so far.
    pub rows: u64,
    /// Bytes of the file read so far (estimated from the rows for Parquet).
    pub bytes: u64,
    /// The file's size in bytes.
    pub total_bytes: u64,
}

impl TableFile {
    /// Opens `path`, reads its header (CSV) or schema (Parquet) and chooses
    /// the columns: `target` (default: the last column) and every other
    /// column as an input. A directory is read as Parquet files
    /// (`directory`).
    ///
    /// # Errors
    /// [`Error::Unreadable`] if the file cannot be read; [`Error::BadInput`]
    /// for an empty file, empty or duplicate column names, a missing target
    /// column, or a single column.
    pub fn open(path: impl AsRef<Path>, target: Option<&str>) -> Result<TableFile> {
        TableFile::open_columns(path, target, None)
    }

    /// As [`TableFile::open`], with `inputs` (if given) the input columns,
    /// in that order (`--inputs a,b,c`, Python's `inputs=`).
    ///
    /// # Errors
    /// As [`TableFile::open`], and for an input column named twice,
    /// missing, or the target.
    pub fn open_columns(
        path: impl AsRef<Path>,
        target: Option<&str>,
        inputs: Option<&[String]>,
    ) -> Result<TableFile> {
        let path = path.as_ref();
        if path.is_dir() {
            return directory::open(path, target, inputs);
        }
        TableFile::from_input_columns(&Input::open(path)?, target, inputs)
    }

    /// As [`TableFile::open`], for an input already open (it is shared,
    /// not reopened).
    ///
    /// # Errors
    /// As [`TableFile::open`].
    pub fn from_input(input: &Input, target: Option<&str>) -> Result<TableFile> {
        TableFile::from_input_columns(input, target, None)
    }

    /// As [`TableFile::open_columns`], for an input already open.
    ///
    /// # Errors
    /// As [`TableFile::open_columns`].
    pub fn from_input_columns(
        input: &Input,
        target: Option<&str>,
        inputs: Option<&[String]>,
    ) -> Result<TableFile> {
        let source = input.name().to_owned();
        let (format, columns, text_columns, known_rows) = match input.format()? {
            InputFormat::Parquet => {
                let (columns, text, rows) = parquet_rows::columns(input)?;
                (Format::Parquet, columns, text, Some(rows))
            }
            InputFormat::Csv => (Format::Csv, csv_rows::columns(input)?, Vec::new(), None),
        };
        crate::data::check_names(&columns, &source)?;
        let selected = crate::data::training_columns(&columns, target, inputs, &source)?;
        let mut names: Vec<String> = selected.iter().map(|&c| columns[c].clone()).collect();
        let target_name = names.pop().unwrap_or_default();
        Ok(TableFile {
            parts: vec![Part {
                input: input.clone(),
                rows: known_rows,
            }],
            source,
            format,
            input_names: names,
            target_name,
            columns,
            selected,
            known_rows,
            text_columns,
            labels: None,
            rows_read: Arc::new(OnceLock::new()),
            bytes: input.bytes(),
        })
    }

    /// The file's size in bytes (a directory's: its files').
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The files read: one, or a directory's in name order (to refuse an
    /// output that is one of them).
    pub fn inputs(&self) -> Vec<&Input> {
        self.parts.iter().map(|p| &p.input).collect()
    }

    /// Whether the target of the first data row is text rather than a
    /// number (a CSV of class labels, `ok`/`fault`), or the target is a
    /// text column of a Parquet file: class labels, which are read whole,
    /// never streamed.
    ///
    /// # Errors
    /// [`Error::Unreadable`] if the file cannot be read.
    pub(crate) fn target_is_text(&self) -> Result<bool> {
        match (self.format, self.selected.last()) {
            (Format::Csv, Some(&target)) => {
                csv_rows::first_cell_is_text(&self.parts[0].input, target)
            }
            (Format::Parquet, Some(&target)) => {
                Ok(self.text_columns.get(target).copied().unwrap_or(false))
            }
            _ => Ok(false),
        }
    }

    /// This table with its text target read as class labels: each target
    /// cell as its index in `labels` (sorted and distinct, as
    /// [`crate::data::labels`] codes a column read whole), a cell that is
    /// none of them refused naming its place.
    pub(crate) fn with_labels(mut self, labels: Vec<String>) -> Self {
        self.labels = Some(Arc::new(labels));
        self
    }

    /// The text target's class labels, sorted; empty for numbers.
    pub fn class_labels(&self) -> &[String] {
        self.labels.as_deref().map_or(&[], Vec::as_slice)
    }

    /// The text target's distinct class labels, sorted as
    /// [`crate::data::labels`] sorts a column read whole: a pass over the
    /// target column alone (its cells only, for Parquet), before the first
    /// pass, which then reads each label as its index.
    ///
    /// # Errors
    /// [`Error::BadInput`] as a column read whole is refused
    /// ([`LabelTally::labels`]); every error of reading.
    pub(crate) fn collect_labels(&self) -> Result<Vec<String>> {
        let mut tally = LabelTally::new(&self.target_name);
        match self.format {
            Format::Csv => csv_rows::target_cells(self, &mut |cell, at| {
                tally.add(cell, &self.source, &at);
                Ok(())
            })?,
            Format::Parquet => parquet_rows::target_cells(self, &mut |cell, source, at| {
                tally.add(cell, source, &at);
                Ok(())
            })?,
        }
        tally.labels()
    }

    /// The class index of the target cell `cell` at `place` (`line L (data
    /// row R)`, `data row R`) of the file `source`.
    ///
    /// # Errors
    /// [`Error::BadInput`] naming the file, the place and the column when
    /// `cell` is none of the labels.
    pub(crate) fn label_code(&self, cell: &str, source: &str, place: &str) -> Result<f64> {
        let labels = self.class_labels();
        labels
            .binary_search_by(|l| l.as_str().cmp(cell))
            .map(|k| k as f64)
            .map_err(|_| {
                Error::BadInput(unknown_label(
                    &format!("{source}: {place}, column '{}'", self.target_name),
                    cell,
                    labels,
                ))
            })
    }

    /// Whether the file has more than `rows` data rows: from the metadata
    /// for Parquet, by reading no further than row `rows + 1` for CSV, so
    /// that a small file is not read through before being read whole.
    ///
    /// # Errors
    /// [`Error::Unreadable`] if the file cannot be read.
    pub(crate) fn has_more_rows_than(&self, rows: u64) -> Result<bool> {
        match self.known_rows {
            Some(known) => Ok(known > rows),
            None => csv_rows::more_rows_than(&self.parts[0].input, rows),
        }
    }

    /// Reads every data row, validating each selected cell, and hands them
    /// to `f` in chunks of `chunk_rows` rows (the last one shorter), with
    /// how far the pass has come. Stops at the first bad cell or at the
    /// first error `f` returns.
    ///
    /// # Errors
    /// [`Error::BadInput`] naming the file, the place (CSV: line and data
    /// row; Parquet: data row) and the column of a bad cell, a ragged CSV
    /// row, a non-numeric Parquet column, or a file without data rows;
    /// whatever `f` returns.
    pub fn for_each_chunk(
        &self,
        chunk_rows: usize,
        f: &mut dyn FnMut(RawChunk, ReadProgress) -> Result<()>,
    ) -> Result<u64> {
        // Passes over a file that grows or shrinks meanwhile (a log still
        // being written) would disagree on the data: refused.
        let changed = |what: String| {
            Error::BadInput(format!(
                "{}: changed while it was read ({what}); fit a copy that is not being written",
                self.source
            ))
        };
        for part in &self.parts {
            let now = part.input.current_bytes()?;
            if now != part.input.bytes() {
                let was = part.input.bytes();
                let file = match self.parts.len() {
                    1 => String::new(),
                    _ => format!("{}: ", part.input.name()),
                };
                return Err(changed(format!("{file}{was} bytes, then {now}")));
            }
        }
        let mut chunks = ChunkBuilder::new(self, chunk_rows.max(1), f);
        match self.format {
            Format::Csv => csv_rows::read(self, &mut chunks)?,
            Format::Parquet => parquet_rows::read(self, &mut chunks)?,
        }
        let rows = chunks.finish()?;
        if rows == 0 {
            return Err(Error::BadInput(format!(
                "{}: no data rows after the header",
                self.source
            )));
        }
        let first = *self.rows_read.get_or_init(|| rows);
        if first != rows {
            return Err(changed(format!("{first} data rows, then {rows}")));
        }
        Ok(rows)
    }
}

/// Why a target cell is refused by a streamed classifier of text labels:
/// `at` says where (file, place, column).
pub(crate) fn unknown_label(at: &str, cell: &str, labels: &[String]) -> String {
    let listed: Vec<&str> = labels.iter().take(12).map(String::as_str).collect();
    format!(
        "{at}: label {} is none of the {} the first pass found ({}{}); the rows changed \
         since?",
        crate::data::quote(cell),
        labels.len(),
        listed.join(", "),
        if labels.len() > 12 { ", ..." } else { "" }
    )
}

/// Collects validated rows into chunks of a fixed size, whatever batches
/// the format delivers them in.
pub(crate) struct ChunkBuilder<'f> {
    d: usize,
    chunk_rows: usize,
    x: Vec<f64>,
    y: Vec<f64>,
    rows: u64,
    progress: ReadProgress,
    sink: &'f mut dyn FnMut(RawChunk, ReadProgress) -> Result<()>,
}

impl<'f> ChunkBuilder<'f> {
    fn new(
        table: &TableFile,
        chunk_rows: usize,
        sink: &'f mut dyn FnMut(RawChunk, ReadProgress) -> Result<()>,
    ) -> Self {
        let d = table.input_names.len();
        ChunkBuilder {
            d,
            chunk_rows,
            x: Vec::with_capacity(chunk_rows * d),
            y: Vec::with_capacity(chunk_rows),
            rows: 0,
            progress: ReadProgress {
                rows: 0,
                bytes: 0,
                total_bytes: table.bytes,
            },
            sink,
        }
    }

    /// Adds one row: the inputs, then the target, as selected.
    pub(crate) fn push(&mut self, row: &[f64], bytes_read: u64) -> Result<()> {
        let (inputs, target) = row.split_at(self.d);
        self.x.extend_from_slice(inputs);
        self.y.extend(target.first());
        self.rows += 1;
        self.progress.rows = self.rows;
        self.progress.bytes = bytes_read;
        if self.y.len() == self.chunk_rows {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        let n = self.y.len();
        if n == 0 {
            return Ok(());
        }
        let chunk = RawChunk {
            x: DMatrix::from_row_slice(n, self.d, &self.x),
            y: DVector::from_column_slice(&self.y),
            first_row: self.rows - n as u64,
        };
        self.x.clear();
        self.y.clear();
        (self.sink)(chunk, self.progress)
    }

    fn finish(mut self) -> Result<u64> {
        self.progress.bytes = self.progress.total_bytes;
        self.flush()?;
        Ok(self.rows)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::data::labels::MAX_TEXT_CLASSES;
    use crate::data::Dataset;

    /// 50 rows of two inputs and a target, as CSV text and as Parquet, in
    /// `dir`.
    fn both_formats(dir: &Path) -> (PathBuf, PathBuf, DMatrix<f64>, DVector<f64>) {
        let x = DMatrix::from_fn(50, 2, |i, j| (i * (j + 2)) as f64 * 0.37 - 3.0);
        let y = DVector::from_fn(50, |i, _| libm::sin(i as f64 * 0.3));
        let mut text = String::from("a,b,y\n");
        for i in 0..50 {
            text += &format!("{},{},{}\n", x[(i, 0)], x[(i, 1)], y[i]);
        }
        let csv = dir.join("d.csv");
        std::fs::write(&csv, text).unwrap();
        let parquet = dir.join("d.parquet");
        write_parquet(&parquet, &x, &y, &["a".into(), "b".into()], "y").unwrap();
        (csv, parquet, x, y)
    }

    fn chunks(path: &Path, target: Option<&str>, rows: usize) -> Result<Vec<RawChunk>> {
        let table = TableFile::open(path, target)?;
        let mut out = Vec::new();
        table.for_each_chunk(rows, &mut |c, _| {
            out.push(c);
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn csv_and_parquet_give_the_same_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let (csv, parquet, x, y) = both_formats(dir.path());
        let from_csv = chunks(&csv, None, 7).unwrap();
        let from_parquet = chunks(&parquet, None, 7).unwrap();
        assert_eq!(from_csv.len(), 8);
        assert_eq!(from_csv, from_parquet);
        assert_eq!(from_csv[7].first_row, 49);
        assert_eq!(from_csv[7].x, x.rows(49, 1).into_owned());
        assert_eq!(from_csv[0].y, y.rows(0, 7).into_owned());
        assert_eq!(
            TableFile::open(&parquet, None).unwrap().format,
            Format::Parquet
        );
        // A named target moves to the end; the other columns are inputs.
        let by_name = TableFile::open(&parquet, Some("a")).unwrap();
        assert_eq!(by_name.input_names, ["b", "y"]);
        assert_eq!(
            chunks(&parquet, Some("a"), 64).unwrap()[0].y,
            x.column(0).into_owned()
        );
    }

    #[test]
    fn counts_rows_only_up_to_the_question_and_sees_text_targets() {
        let dir = tempfile::tempdir().unwrap();
        let (csv, parquet, _, _) = both_formats(dir.path());
        // 50 rows: counted from the metadata for Parquet, read for CSV.
        for path in [&csv, &parquet] {
            let table = TableFile::open(path, None).unwrap();
            assert!(table.has_more_rows_than(49).unwrap());
            assert!(!table.has_more_rows_than(50).unwrap());
            assert!(!table.target_is_text().unwrap());
        }
        // Cells past the question are not read: a bad one does not answer it.
        let late = dir.path().join("late.csv");
        std::fs::write(&late, "a,y\n1,2\n3,4\n5,6\n7,oops\n").unwrap();
        assert!(TableFile::open(&late, None)
            .unwrap()
            .has_more_rows_than(2)
            .unwrap());
        let labels = dir.path().join("labels.csv");
        std::fs::write(&labels, "a,y\n1,ok\n3,fault\n").unwrap();
        let table = TableFile::open(&labels, None).unwrap();
        assert!(table.target_is_text().unwrap());
        assert!(!TableFile::open(&labels, Some("a"))
            .unwrap()
            .target_is_text()
            .unwrap());
    }

    /// The target column `y` (after an input `a`) as `dir/NAME.csv` and
    /// `dir/NAME.parquet`, a text column.
    fn text_target(dir: &Path, name: &str, cells: &[String]) -> [PathBuf; 2] {
        use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray};

        let csv = dir.join(format!("{name}.csv"));
        let rows: String = (0..cells.len())
            .map(|i| format!("{i},{}\n", cells[i]))
            .collect();
        std::fs::write(&csv, format!("a,y\n{rows}")).unwrap();
        let a: Vec<f64> = (0..cells.len()).map(|i| i as f64).collect();
        let batch = RecordBatch::try_from_iter([
            ("a", Arc::new(Float64Array::from(a)) as ArrayRef),
            ("y", Arc::new(StringArray::from(cells.to_vec())) as ArrayRef),
        ])
        .unwrap();
        let parquet = dir.join(format!("{name}.parquet"));
        let file = std::fs::File::create(&parquet).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        [csv, parquet]
    }

    /// Text labels are collected as a column read whole codes them, and
    /// the streamed and the in-memory readers refuse the same columns with
    /// the same words, CSV and Parquet alike.
    #[test]
    fn text_labels_are_collected_and_refused_as_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let column = |v: &[&str]| -> Vec<String> { v.iter().map(|c| (*c).to_owned()).collect() };
        let fine = column(&["ok", "fault", "ok", "b", "fault", "b"]);
        for path in text_target(dir.path(), "fine", &fine) {
            let ok = TableFile::open(&path, None)
                .unwrap()
                .collect_labels()
                .unwrap();
            assert_eq!(ok, ["b", "fault", "ok"]);
            let in_memory = Dataset::from_input(&Input::open(&path).unwrap(), None).unwrap();
            assert_eq!(in_memory.class_labels, ok);
        }
        // Numbers with seven words: bad cells, five named.
        let mut numbers: Vec<String> = (0..20).map(|i| format!("{}", i % 3)).collect();
        for (i, word) in [
            (1, "ok"),
            (4, "n/a"),
            (5, "x"),
            (8, "y"),
            (9, "z"),
            (12, "w"),
            (15, "v"),
        ] {
            numbers[i] = word.to_owned();
        }
        let once = column(&["ok", "fault", "ok", "okk", "fault", "typo", "ok"]);
        let many: Vec<String> = (0..=MAX_TEXT_CLASSES).map(|i| format!("w{i}")).collect();
        let cases = [
            (
                "numbers",
                numbers,
                "'ok' is not a number; the column holds numbers in 13 of 20",
            ),
            ("once", once, "label 'okk' appears in no other row; nor do "),
            ("many", many, "'w1000' makes more than 1000 distinct values"),
        ];
        for (name, cells, words) in cases {
            for path in text_target(dir.path(), name, &cells) {
                let streamed = TableFile::open(&path, None)
                    .unwrap()
                    .collect_labels()
                    .unwrap_err()
                    .to_string();
                let in_memory = Dataset::from_input(&Input::open(&path).unwrap(), None)
                    .unwrap_err()
                    .to_string();
                assert_eq!(streamed, in_memory);
                assert!(streamed.contains(words), "{streamed}");
            }
        }
    }

    #[test]
    fn a_whole_parquet_file_reads_as_the_same_csv_does() {
        let dir = tempfile::tempdir().unwrap();
        let (csv, parquet, _, _) = both_formats(dir.path());
        let whole = Dataset::from_csv(&csv, None).unwrap();
        let mut from_parquet = Dataset::from_input(&Input::open(&parquet).unwrap(), None).unwrap();
        from_parquet.source = whole.source.clone();
        assert_eq!(from_parquet, whole);
    }

    #[test]
    fn a_bad_cell_in_a_late_chunk_names_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::from("a,b,y\n");
        for i in 0..40 {
            let b = if i == 33 {
                "oops".to_string()
            } else {
                i.to_string()
            };
            text += &format!("{i},{b},{}\n", i % 3);
        }
        let path = dir.path().join("bad.csv");
        std::fs::write(&path, text).unwrap();
        let mut delivered = 0;
        let err = TableFile::open(&path, None)
            .unwrap()
            .for_each_chunk(5, &mut |c, _| {
                delivered += c.y.len();
                Ok(())
            })
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bad.csv: line 35 (data row 34), column 'b': 'oops' is not a number"),
            "{err}"
        );
        // The rows before it were read: a fit must validate first (scan).
        assert_eq!(delivered, 30);
        let ragged = dir.path().join("ragged.csv");
        std::fs::write(&ragged, "a,y\n1,2\n3\n").unwrap();
        let err = chunks(&ragged, None, 4).unwrap_err().to_string();
        assert!(
            err.contains("line 3 (data row 2): has 1 fields but the header has 2"),
            "{err}"
        );
        let empty = dir.path().join("empty.csv");
        std::fs::write(&empty, "").unwrap();
        assert!(TableFile::open(&empty, None)
            .unwrap_err()
            .to_string()
            .contains("empty file"));
        std::fs::write(&empty, "a,y\n").unwrap();
        let err = chunks(&empty, None, 4).unwrap_err().to_string();
        assert!(err.contains("no data rows"), "{err}");
        let err = TableFile::open(&ragged, Some("z")).unwrap_err().to_string();
        assert!(err.contains("no column named 'z'"), "{err}");
    }

    #[test]
    fn parquet_nulls_non_finite_and_text_columns_are_refused_with_their_place() {
        use std::sync::Arc;

        use arrow_array::{ArrayRef, Float64Array, Int32Array, RecordBatch, StringArray};

        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, extra: ArrayRef| {
            let batch = RecordBatch::try_from_iter([
                (
                    "a",
                    Arc::new(Int32Array::from(vec![1, 2, 3, 4])) as ArrayRef,
                ),
                ("y", extra),
            ])
            .unwrap();
            let path = dir.path().join(name);
            let file = std::fs::File::create(&path).unwrap();
            let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
            w.write(&batch).unwrap();
            w.close().unwrap();
            chunks(&path, None, 2).map_err(|e| e.to_string())
        };
        let null = Arc::new(Float64Array::from(vec![
            Some(1.0),
            Some(2.0),
            None,
            Some(0.0),
        ]));
        let err = write("null.parquet", null).unwrap_err();
        assert!(err.contains("data row 3, column 'y': empty cell"), "{err}");
        let nan = Arc::new(Float64Array::from(vec![1.0, f64::NAN, 0.0, 1.0]));
        let err = write("nan.parquet", nan).unwrap_err();
        assert!(
            err.contains("data row 2, column 'y': NaN is not a finite number"),
            "{err}"
        );
        let text = Arc::new(StringArray::from(vec!["x", "y", "z", "w"]));
        let err = write("text.parquet", text).unwrap_err();
        assert!(
            err.contains("column 'y': type Utf8 is not numeric"),
            "{err}"
        );
        // Integer columns are numbers.
        let fine = Arc::new(Float64Array::from(vec![1.0, 2.0, 0.5, 1.0]));
        let read = write("ints.parquet", fine).unwrap();
        assert_eq!(read[1].x, DMatrix::from_column_slice(2, 1, &[3.0, 4.0]));
    }

    #[test]
    fn scan_standardises_like_the_whole_file_reader_and_samples_by_seed() {
        let dir = tempfile::tempdir().unwrap();
        let (csv, parquet, _, _) = both_formats(dir.path());
        let whole = Dataset::from_csv(&csv, None).unwrap();
        let table = TableFile::open(&csv, None).unwrap();
        let mut calls = 0;
        let all = scan(&table, 100, 3, 8, &mut |_| calls += 1).unwrap();
        assert_eq!((all.rows, calls), (50, 7));
        let close = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(p, q)| (p - q).abs() < 1e-12);
        assert!(close(&all.transform.x_mean, &whole.transform.x_mean));
        assert!(close(&all.transform.x_scale, &whole.transform.x_scale));
        assert!((all.transform.y_scale - whole.transform.y_scale).abs() < 1e-12);
        assert_eq!(all.transform.x_min, whole.transform.x_min);
        // A file no larger than the sample is kept whole, in a random
        // order: a file sorted by anything (a log by time) must not give
        // a streamed fit's first stage its first rows only.
        let sorted = |x: &DMatrix<f64>| {
            let mut rows: Vec<_> = x.row_iter().map(|r| r.into_owned()).collect();
            rows.sort_by(|a, b| a[0].total_cmp(&b[0]));
            DMatrix::from_rows(&rows)
        };
        assert!((sorted(&all.sample_x) - sorted(&whole.raw_x())).amax() < 1e-12);
        assert!((&all.sample_x - whole.raw_x()).amax() > 1e-3);
        assert_eq!(all.target_values.len(), 3);
        let some = scan(&table, 10, 3, 8, &mut |_| {}).unwrap();
        let again = scan(
            &TableFile::open(&parquet, None).unwrap(),
            10,
            3,
            8,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(some.sample_x.nrows(), 10);
        assert_eq!(some.sample_x, again.sample_x);
        assert_ne!(some.sample_x, all.sample_x.rows(0, 10).into_owned());
    }

    #[test]
    fn a_file_that_grows_between_passes_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.csv");
        std::fs::write(&path, "a,y\n1,2\n3,4\n5,7\n").unwrap();
        let table = TableFile::open(&path, None).unwrap();
        assert_eq!(table.for_each_chunk(2, &mut |_, _| Ok(())).unwrap(), 3);
        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut log, b"7,9\n").unwrap();
        let err = table
            .for_each_chunk(2, &mut |_, _| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("log.csv: changed while it was read"), "{err}");
    }

    #[test]
    fn scan_refuses_a_constant_target_and_too_few_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("constant.csv");
        std::fs::write(&path, "a,y\n1,5\n2,5\n3,5\n").unwrap();
        let table = TableFile::open(&path, None).unwrap();
        let err = scan(&table, 10, 0, 2, &mut |_| {}).unwrap_err().to_string();
        assert!(err.contains("target column 'y' is constant"), "{err}");
        std::fs::write(&path, "a,y\n1,5\n").unwrap();
        let table = TableFile::open(&path, None).unwrap();
        let err = scan(&table, 10, 0, 2, &mut |_| {}).unwrap_err().to_string();
        assert!(err.contains("1 data row(s)"), "{err}");
    }
}
