//! A directory of Parquet files as one table (a dataset written by Spark,
//! Dask or pyarrow): its files in name order (byte order of the names;
//! pad numbers, `part-00010`), their rows one after the other, cut into
//! chunks as one file holding them all would be. So a directory's fit is
//! bit for bit the fit of that one file, wherever its files end.
//!
//! Names starting with `.` or `_` are skipped, as pyarrow and Spark skip
//! them (`_SUCCESS`, `.crc`); every other entry must be a Parquet file
//! with the columns and column types of the first, else the error names
//! the file and how it differs. A subdirectory (a partitioned dataset) is
//! refused.

use std::path::{Path, PathBuf};

use super::{parquet_rows, Part, TableFile};
use crate::files::{Input, InputFormat};
use crate::{Error, Result};

/// The directory `dir` as one table (module documentation); `target` as
/// [`TableFile::open`] chooses it.
///
/// # Errors
/// [`Error::Unreadable`] if the directory or a file cannot be read;
/// [`Error::BadInput`] for a directory without Parquet files, a file that
/// is not Parquet, a subdirectory, or a file whose columns differ from the
/// first file's; every error of [`TableFile::from_input`] on the first.
pub(crate) fn open(
    dir: &Path,
    target: Option<&str>,
    inputs: Option<&[String]>,
) -> Result<TableFile> {
    let files = listing(dir)?;
    let shown = dir.display().to_string();
    let mut parts = Vec::with_capacity(files.len());
    for path in &files {
        let input = Input::open(path)?;
        if input.format()? != InputFormat::Parquet {
            return Err(Error::BadInput(format!(
                "{}: not a Parquet file; every file of the input directory {shown} must be \
                 Parquet (names starting with '.' or '_' are skipped)",
                input.name()
            )));
        }
        parts.push(input);
    }
    let Some(first) = parts.first() else {
        return Err(Error::BadInput(format!(
            "{shown}: no Parquet files in this directory"
        )));
    };
    let mut table = TableFile::from_input_columns(first, target, inputs)?;
    let expected = parquet_rows::fields(first)?;
    let mut rows = table.known_rows.unwrap_or(0);
    for input in parts.iter().skip(1) {
        same_columns(&expected, first.name(), input)?;
        let (_, _, n) = parquet_rows::columns(input)?;
        rows += n;
        table.parts.push(Part {
            input: input.clone(),
            rows: Some(n),
        });
    }
    table.known_rows = Some(rows);
    table.bytes = parts.iter().map(Input::bytes).sum();
    table.source = shown;
    Ok(table)
}

/// The directory's data files, sorted by name.
fn listing(dir: &Path) -> Result<Vec<PathBuf>> {
    let unreadable = |source| Error::Unreadable {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let entry = entry.map_err(unreadable)?;
        let name = entry.file_name();
        let skipped = name
            .as_encoded_bytes()
            .first()
            .is_some_and(|b| matches!(b, b'.' | b'_'));
        if skipped {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            return Err(Error::BadInput(format!(
                "{}: a directory inside the input directory; a partitioned dataset is not \
                 read (give a directory of Parquet files)",
                path.display()
            )));
        }
        files.push(path);
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    Ok(files)
}

/// Refuses `input` unless its columns are `expected` (the first file's).
fn same_columns(
    expected: &[(String, parquet_rows::Kind)],
    first: &str,
    input: &Input,
) -> Result<()> {
    let found = parquet_rows::fields(input)?;
    let differ = |how: String| {
        Err(Error::BadInput(format!(
            "{}: {how}; every file of a directory must have the same columns, in the same \
             order, of the same types",
            input.name()
        )))
    };
    let names = |f: &[(String, parquet_rows::Kind)]| {
        f.iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if found.len() != expected.len() || found.iter().zip(expected).any(|(a, b)| a.0 != b.0) {
        return differ(format!(
            "its columns ({}) differ from those of {first} ({})",
            names(&found),
            names(expected)
        ));
    }
    for ((name, got), (_, want)) in found.iter().zip(expected) {
        if got != want {
            return differ(format!(
                "column '{name}' is of type {got}, where {first} has {want}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use nalgebra::{DMatrix, DVector};

    use super::super::{write_parquet, RawChunk};
    use super::*;

    fn chunks(table: &TableFile, rows: usize) -> Vec<RawChunk> {
        let mut out = Vec::new();
        table
            .for_each_chunk(rows, &mut |c, _| {
                out.push(c);
                Ok(())
            })
            .unwrap();
        out
    }

    fn data(n: usize) -> (DMatrix<f64>, DVector<f64>, Vec<String>) {
        let x = DMatrix::from_fn(n, 2, |i, j| (i * (j + 3)) as f64 * 0.29 - 1.0);
        let y = DVector::from_fn(n, |i, _| libm::cos(i as f64 * 0.1));
        (x, y, vec!["a".into(), "b".into()])
    }

    #[test]
    fn a_directory_reads_as_the_one_file_holding_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let (x, y, names) = data(100);
        let whole = dir.path().join("whole.parquet");
        write_parquet(&whole, &x, &y, &names, "y").unwrap();
        let parts = dir.path().join("parts");
        std::fs::create_dir(&parts).unwrap();
        // Name order, not creation order; files of uneven sizes.
        for (name, start, len) in [("p-2", 40, 60), ("p-0", 0, 13), ("p-1", 13, 27)] {
            let (xs, ys) = (
                x.rows(start, len).into_owned(),
                y.rows(start, len).into_owned(),
            );
            write_parquet(&parts.join(name), &xs, &ys, &names, "y").unwrap();
        }
        std::fs::write(parts.join("_SUCCESS"), "").unwrap();
        std::fs::write(parts.join(".p-0.crc"), "junk").unwrap();
        let table = TableFile::open(&parts, None).unwrap();
        let one = TableFile::open(&whole, None).unwrap();
        assert_eq!(table.inputs().len(), 3);
        assert_eq!(table.input_names, one.input_names);
        assert!(table.has_more_rows_than(99).unwrap() && !table.has_more_rows_than(100).unwrap());
        // Chunks run across the files' ends: the same chunks, so the same sums.
        assert_eq!(chunks(&table, 16), chunks(&one, 16));
        let a = super::super::scan(&table, 30, 7, 16, &mut |_| {}).unwrap();
        let b = super::super::scan(&one, 30, 7, 16, &mut |_| {}).unwrap();
        assert_eq!((a.sample_x, a.transform), (b.sample_x, b.transform));
    }

    #[test]
    fn a_directory_that_is_not_one_table_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let (x, y, names) = data(20);
        let err = |path: &Path| TableFile::open(path, None).unwrap_err().to_string();
        assert!(err(dir.path()).contains("no Parquet files in this directory"));
        write_parquet(&dir.path().join("a.parquet"), &x, &y, &names, "y").unwrap();
        std::fs::write(dir.path().join("b.csv"), "a,b,y\n1,2,3\n").unwrap();
        let e = err(dir.path());
        assert!(e.contains("b.csv: not a Parquet file"), "{e}");
        std::fs::remove_file(dir.path().join("b.csv")).unwrap();
        let other = vec!["a".to_string(), "c".to_string()];
        write_parquet(&dir.path().join("b.parquet"), &x, &y, &other, "y").unwrap();
        let e = err(dir.path());
        assert!(
            e.contains("b.parquet: its columns (a, c, y) differ from those of")
                && e.contains("a.parquet (a, b, y)"),
            "{e}"
        );
        std::fs::remove_file(dir.path().join("b.parquet")).unwrap();
        let float32 = {
            use std::sync::Arc;

            use arrow_array::{ArrayRef, Float32Array, Float64Array, RecordBatch};
            let col = |v: Vec<f64>| Arc::new(Float64Array::from(v)) as ArrayRef;
            RecordBatch::try_from_iter([
                ("a", col(vec![1.0, 2.0])),
                (
                    "b",
                    Arc::new(Float32Array::from(vec![1.0f32, 2.0])) as ArrayRef,
                ),
                ("y", col(vec![0.0, 1.0])),
            ])
            .unwrap()
        };
        let file = std::fs::File::create(dir.path().join("c.parquet")).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, float32.schema(), None).unwrap();
        w.write(&float32).unwrap();
        w.close().unwrap();
        let e = err(dir.path());
        assert!(
            e.contains("c.parquet: column 'b' is of type Float32, where")
                && e.contains("has Float64"),
            "{e}"
        );
        std::fs::remove_file(dir.path().join("c.parquet")).unwrap();
        std::fs::create_dir(dir.path().join("year=2024")).unwrap();
        let e = err(dir.path());
        assert!(
            e.contains("year=2024: a directory inside the input directory"),
            "{e}"
        );
    }
}
