//! Reading the columns a job names from a CSV or Parquet file: the
//! training columns, inputs alone, inputs with labels or several targets,
//! each cell placed by line and data row for the messages.

use std::io::Read;

use nalgebra::{DMatrix, DVector};

use super::*;

/// The columns of a training file: its inputs ([`input_columns`]), then
/// the target (`target`, default the last column).
pub(crate) fn training_columns(
    header: &[String],
    target: Option<&str>,
    inputs: Option<&[String]>,
    source: &str,
) -> Result<Vec<usize>> {
    let t = match target {
        Some(name) => find_column(header, name, source)?,
        None => header.len().saturating_sub(1),
    };
    if header.len() < 2 {
        return Err(Error::BadInput(format!(
            "{source}: only one column ('{}'); need at least one input column besides the target",
            header.first().map_or("", String::as_str)
        )));
    }
    let mut cols = input_columns(header, &[t], inputs, source)?;
    cols.push(t);
    Ok(cols)
}

/// The input columns of a training file whose targets are the columns
/// `targets`: `inputs` (`--inputs a,b,c`, Python's `inputs=`) in that
/// order, or without them every other column in file order.
///
/// # Errors
/// [`Error::BadInput`] for an empty list, a column named twice, missing,
/// or also a target.
pub(crate) fn input_columns(
    header: &[String],
    targets: &[usize],
    inputs: Option<&[String]>,
    source: &str,
) -> Result<Vec<usize>> {
    let Some(names) = inputs else {
        return Ok((0..header.len()).filter(|c| !targets.contains(c)).collect());
    };
    if names.is_empty() {
        return Err(Error::BadInput(format!(
            "{source}: --inputs names no column; name at least one input column"
        )));
    }
    let mut cols: Vec<usize> = Vec::with_capacity(names.len());
    for name in names {
        let c = find_column(header, name, source)?;
        if targets.contains(&c) {
            return Err(Error::BadInput(format!(
                "{source}: column '{name}' is a target and cannot be one of --inputs too"
            )));
        }
        if cols.contains(&c) {
            return Err(Error::BadInput(format!(
                "{source}: --inputs names column '{name}' twice"
            )));
        }
        cols.push(c);
    }
    Ok(cols)
}

impl Input {
    /// Reads the named input columns of a CSV or Parquet file in RAW units
    /// (N x D, columns in the order of `input_names`). Other columns, including
    /// the target, may be present in any order and are ignored (they need not
    /// be numeric).
    pub fn read_inputs(&self, input_names: &[String]) -> Result<DMatrix<f64>> {
        let table = read_named(self, input_names, None, Columns::Named)?;
        Ok(table.inputs(input_names.len()))
    }
}

impl Input {
    /// Reads the named inputs and the `target` column of a CSV or Parquet
    /// file, both in RAW units; columns are picked by name as in
    /// [`Input::read_inputs`]. The target may not be one of the inputs.
    pub fn read_inputs_and_target(
        &self,
        input_names: &[String],
        target: &str,
    ) -> Result<(DMatrix<f64>, DVector<f64>)> {
        let table = read_named(self, input_names, Some(target), Columns::Named)?;
        Ok(table.inputs_and_last(input_names.len()))
    }
}

/// A cell as text and where it is (`source: line L (data row R), column
/// 'NAME'`).
pub(crate) type PlacedCell = (String, String);

impl Input {
    /// The named inputs (RAW units) and the cells of the `target` column of a
    /// CSV or Parquet file, as text (class labels, or numbers as written),
    /// each with where it is (`source: line L (data row R), column 'NAME'`).
    ///
    /// # Errors
    /// As [`Input::read_inputs_and_target`], except that a target cell may be text.
    pub fn read_inputs_and_labels(
        &self,
        input_names: &[String],
        target: &str,
    ) -> Result<(DMatrix<f64>, Vec<PlacedCell>)> {
        let source = self.name();
        let table = read_named(self, input_names, Some(target), Columns::TargetAsText)?;
        let x = table.inputs(input_names.len());
        let places = table
            .last_places
            .iter()
            .map(|p| format!("{source}: {}, column '{target}'", p.describe()));
        Ok((x, table.last_cells.into_iter().zip(places).collect()))
    }
}

/// Reads a CSV or Parquet file whose columns `targets` are targets and
/// every other column an input (a multi-output regression): the input
/// names in file order, the raw inputs (N x D) and the raw targets (N x P,
/// columns in the order of `targets`), validated cell by cell as
/// [`Dataset::from_csv`] validates one target.
pub(crate) fn read_inputs_and_targets(
    input: &Input,
    targets: &[String],
    inputs: Option<&[String]>,
) -> Result<(Vec<String>, DMatrix<f64>, DMatrix<f64>)> {
    let source = input.name();
    let table = read_table(input, false, |header| {
        let wanted: Vec<usize> = targets
            .iter()
            .map(|t| find_column(header, t, source))
            .collect::<Result<_>>()?;
        let mut cols = input_columns(header, &wanted, inputs, source)?;
        if cols.is_empty() {
            return Err(Error::BadInput(format!(
                "{source}: every column is a target; need at least one input column"
            )));
        }
        cols.extend(wanted);
        Ok(cols)
    })?;
    let (n, p) = (table.rows.len(), targets.len());
    let d = table.names.len().saturating_sub(p);
    let x = table.inputs(d);
    let y = DMatrix::from_row_iterator(
        n,
        p,
        table.rows.iter().flat_map(|r| r.iter().skip(d).copied()),
    );
    let mut names = table.names;
    names.truncate(d);
    Ok((names, x, y))
}

impl Input {
    /// As [`Input::read_inputs_and_target`], but the file must hold exactly those
    /// columns (in any order): a test set for a model fitted on another file,
    /// where an extra or a missing column means the two files do not match.
    ///
    /// # Errors
    /// [`Error::BadInput`] naming the missing and the extra columns, and every
    /// error of [`Input::read_inputs_and_target`].
    pub fn read_same_columns(
        &self,
        input_names: &[String],
        target: &str,
    ) -> Result<(DMatrix<f64>, DVector<f64>)> {
        let table = read_named(self, input_names, Some(target), Columns::Exactly)?;
        Ok(table.inputs_and_last(input_names.len()))
    }
}

/// How [`read_named`] treats the file's columns.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Columns {
    /// Picks the named ones, ignoring the others.
    Named,
    /// As `Named`, keeping the target's cells as text (class labels).
    TargetAsText,
    /// The file must hold the named columns and no other.
    Exactly,
}

/// The columns `input_names`, then `target` if any, picked by name: the
/// one reading path of files whose columns a model names. A target that
/// is one of the inputs is refused: its predictions would be scored
/// against an input (`sgp eval --target x1`).
fn read_named(
    input: &Input,
    input_names: &[String],
    target: Option<&str>,
    columns: Columns,
) -> Result<Table> {
    let source = input.name();
    if let Some(target) = target.filter(|t| input_names.iter().any(|n| n == t)) {
        return Err(Error::BadInput(format!(
            "{source}: target column '{target}' is one of the model's inputs ({}): predictions \
             would be scored against an input; name the column that holds the target",
            input_names.join(", ")
        )));
    }
    let wanted: Vec<&str> = input_names
        .iter()
        .map(String::as_str)
        .chain(target)
        .collect();
    read_table(input, columns == Columns::TargetAsText, |header| {
        if columns == Columns::Exactly {
            let missing: Vec<&str> = wanted
                .iter()
                .copied()
                .filter(|w| !header.iter().any(|h| h == w))
                .collect();
            let extra: Vec<&str> = header
                .iter()
                .map(String::as_str)
                .filter(|h| !wanted.contains(h))
                .collect();
            if !missing.is_empty() || !extra.is_empty() {
                let differences: Vec<String> = [("missing", &missing), ("extra", &extra)]
                    .into_iter()
                    .filter(|(_, names)| !names.is_empty())
                    .map(|(what, names)| {
                        let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
                        format!("{what} {}", quoted.join(", "))
                    })
                    .collect();
                return Err(Error::BadInput(format!(
                    "{source}: its columns differ from the training data's (inputs {}, target \
                     '{}'): {}",
                    input_names.join(", "),
                    target.unwrap_or_default(),
                    differences.join("; ")
                )));
            }
        }
        wanted
            .iter()
            .map(|name| find_column(header, name, source))
            .collect()
    })
}

/// Where a cell is: its 1-based line in a text file (none in Parquet) and
/// its 1-based index among the data rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    /// Line in the file (the header is line 1); `None` for Parquet.
    pub line: Option<u64>,
    /// Data row.
    pub row: u64,
}

impl Place {
    /// `line L (data row R)`, or `data row R` where there are no lines.
    pub fn describe(&self) -> String {
        match self.line {
            Some(line) => format!("line {line} (data row {})", self.row),
            None => format!("data row {}", self.row),
        }
    }
}

/// The selected columns of a table: their names and, per data row, their
/// values in the selection order.
pub(crate) struct Table {
    pub(crate) names: Vec<String>,
    pub(crate) rows: Vec<Vec<f64>>,
    /// The cells of the last selected column as text, when asked for
    /// (a target that may hold labels); `rows` then leave it out.
    pub(crate) last_cells: Vec<String>,
    /// Where each of those cells is.
    pub(crate) last_places: Vec<Place>,
}

impl Table {
    /// The first `d` selected columns (N x D).
    pub(super) fn inputs(&self, d: usize) -> DMatrix<f64> {
        DMatrix::from_row_iterator(
            self.rows.len(),
            d,
            self.rows.iter().flat_map(|r| r.iter().take(d).copied()),
        )
    }

    /// The first `d` selected columns and the last.
    pub(super) fn inputs_and_last(&self, d: usize) -> (DMatrix<f64>, DVector<f64>) {
        let last = self.rows.iter().filter_map(|r| r.last().copied());
        (
            self.inputs(d),
            DVector::from_iterator(self.rows.len(), last),
        )
    }
}

/// Reads a CSV or Parquet input, letting `select` choose column indices
/// from the header (or schema), as [`read_csv_table`] does.
pub(super) fn read_table(
    input: &Input,
    last_as_text: bool,
    select: impl FnOnce(&[String]) -> Result<Vec<usize>>,
) -> Result<Table> {
    match input.format()? {
        InputFormat::Csv => read_csv_table(input.reader()?, input.name(), last_as_text, select),
        InputFormat::Parquet => stream::parquet_rows::read_table(input, last_as_text, select),
    }
}

/// Parses CSV text, letting `select` choose column indices from the header.
/// Only selected cells must be numbers, so unrelated columns (ids, labels)
/// do not get in the way of reading inputs by name.
pub(super) fn read_csv_table<R: Read>(
    reader: R,
    source: &str,
    last_as_text: bool,
    select: impl FnOnce(&[String]) -> Result<Vec<usize>>,
) -> Result<Table> {
    let mut csv = csv_reader(reader);
    let header = read_header(&mut csv, source)?;
    check_names(&header, source)?;
    let selected = select(&header)?;
    let names: Vec<String> = selected
        .iter()
        .filter_map(|&c| header.get(c).cloned())
        .collect();

    let numeric = selected.len() - usize::from(last_as_text && !selected.is_empty());
    let mut rows = Vec::new();
    let mut last_cells = Vec::new();
    let mut last_places = Vec::new();
    for_each_record(&mut csv, source, header.len(), |record, at| {
        if let (true, Some(&c)) = (last_as_text, selected.last()) {
            let cell = record.get(c).unwrap_or("");
            // Missing and non-finite values are refused as in any column;
            // other text is a class label, or a bad cell in a column of
            // numbers (TargetColumn::parse tells which).
            if cell.is_empty() || cell.parse::<f64>().is_ok() {
                cell_value(record, c, &header, source, at)?;
            }
            last_cells.push(cell.to_owned());
            last_places.push(at);
        }
        let row = selected.iter().take(numeric);
        rows.push(
            row.map(|&c| cell_value(record, c, &header, source, at))
                .collect::<Result<Vec<f64>>>()?,
        );
        Ok(())
    })?;
    if rows.is_empty() {
        return Err(Error::BadInput(format!(
            "{source}: no data rows after the header"
        )));
    }
    Ok(Table {
        names,
        rows,
        last_cells,
        last_places,
    })
}
