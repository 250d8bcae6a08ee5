//! Class labels: a target column that holds text (`ok`/`fault`) or numbers,
//! coded as numbers for the fit, and the names a classifier reports its
//! classes by.
//!
//! A text column is coded by its distinct labels in sorted order: label `k`
//! is the value `k`. A numeric column keeps its values and its classes are
//! named by them (`0`, `1`, `2.5`). Either way the fit sees numbers, so the
//! rest of the trainer treats both alike.

use std::collections::BTreeMap;

use nalgebra::DMatrix;

use crate::data::{is_class, Dataset, Place};
use crate::files::Input;
use crate::{Error, Result};
use sgp_runtime::{Link, ModelSpec};

/// More distinct text labels than this are taken for a numeric column
/// with a typing error, not for classes.
pub(crate) const MAX_TEXT_CLASSES: usize = 1000;

/// A target column, read from its cells.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TargetColumn {
    /// Every cell is a finite number.
    Numbers(Vec<f64>),
    /// At least one cell is text: each row's label as its index in
    /// `names` (sorted, distinct).
    Labels {
        /// The label index of each row.
        codes: Vec<f64>,
        /// The distinct labels, sorted.
        names: Vec<String>,
    },
}

impl TargetColumn {
    /// Reads the cells of a target column (one per data row, each a finite
    /// number or text: the readers refused empty and non-finite cells),
    /// with where each is, in the file `source`, column `column`.
    ///
    /// A column of numbers stays numbers; a column with text is class
    /// labels, refused as [`LabelTally::labels`] refuses them.
    ///
    /// # Errors
    /// [`Error::BadInput`] as [`LabelTally::labels`].
    pub fn parse(
        cells: &[String],
        places: &[Place],
        source: &str,
        column: &str,
    ) -> Result<TargetColumn> {
        if cells.iter().all(|c| is_number(c)) {
            return Ok(TargetColumn::Numbers(
                cells
                    .iter()
                    .map(|c| c.parse::<f64>().unwrap_or(f64::NAN))
                    .collect(),
            ));
        }
        let mut tally = LabelTally::new(column);
        for (cell, at) in cells.iter().zip(places) {
            tally.add(cell, source, at);
        }
        let names = tally.labels()?;
        let codes: Vec<f64> = cells
            .iter()
            .map(|c| names.binary_search(c).map_or(f64::NAN, |k| k as f64))
            .collect();
        Ok(TargetColumn::Labels { codes, names })
    }
}

/// Whether a target cell is a finite number.
fn is_number(cell: &str) -> bool {
    cell.parse::<f64>().is_ok_and(f64::is_finite)
}

/// A cell of a target column as the label messages show it: where it is
/// (`source`, `line L (data row R)` or `data row R`) and what it says.
#[derive(Clone, Debug)]
struct Shown {
    source: String,
    at: String,
    cell: String,
}

impl Shown {
    /// `source: PLACE, column 'NAME': 'CELL'`.
    fn full(&self, column: &str) -> String {
        format!(
            "{}: {}, column '{column}': {}",
            self.source,
            self.at,
            crate::data::quote(&self.cell)
        )
    }

    /// `PLACE 'CELL'` (the file too where it is not `first`'s: a directory
    /// of files).
    fn short(&self, first: &Shown) -> String {
        let cell = crate::data::quote(&self.cell);
        match self.source == first.source {
            true => format!("{} {cell}", self.at),
            false => format!("{}: {} {cell}", self.source, self.at),
        }
    }
}

/// A distinct cell of a target column: its rows, and its first row.
#[derive(Debug)]
struct Label {
    rows: u64,
    first: u64,
    shown: Shown,
}

/// The cells of a target column with text, tallied as they are read:
/// the one home of the class-label rules of a column read whole
/// ([`TargetColumn::parse`]) and of one streamed
/// (`TableFile::collect_labels`), holding at most [`MAX_TEXT_CLASSES`]
/// labels however long the column.
#[derive(Debug)]
pub(crate) struct LabelTally {
    column: String,
    /// Each distinct cell (numbers as written too), sorted.
    seen: BTreeMap<String, Label>,
    numbers: u64,
    texts: u64,
    /// The first five cells that are not numbers.
    bad: Vec<Shown>,
    /// The first cell past [`MAX_TEXT_CLASSES`] distinct values.
    past_max: Option<Shown>,
}

impl LabelTally {
    /// An empty tally of the target column `column`.
    pub(crate) fn new(column: &str) -> Self {
        LabelTally {
            column: column.to_owned(),
            seen: BTreeMap::new(),
            numbers: 0,
            texts: 0,
            bad: Vec::new(),
            past_max: None,
        }
    }

    /// Counts the next row's cell `cell`, at `at` in the file `source`.
    pub(crate) fn add(&mut self, cell: &str, source: &str, at: &Place) {
        let order = self.numbers + self.texts;
        let shown = || Shown {
            source: source.to_owned(),
            at: at.describe(),
            cell: cell.to_owned(),
        };
        if is_number(cell) {
            self.numbers += 1;
        } else {
            self.texts += 1;
            if self.bad.len() < 5 {
                self.bad.push(shown());
            }
        }
        let distinct = self.seen.len();
        match self.seen.get_mut(cell) {
            Some(label) => label.rows += 1,
            None if distinct >= MAX_TEXT_CLASSES => {
                self.past_max.get_or_insert_with(shown);
            }
            None => {
                let label = Label {
                    rows: 1,
                    first: order,
                    shown: shown(),
                };
                self.seen.insert(cell.to_owned(), label);
            }
        }
    }

    /// The column's distinct labels, sorted.
    ///
    /// A column of mostly numbers with some text is numbers with bad cells
    /// (a typing error must not turn a regression into a classification);
    /// otherwise text makes it class labels, at most [`MAX_TEXT_CLASSES`]
    /// of them, each of which must appear at least twice (a label seen
    /// once cannot be learned).
    ///
    /// # Errors
    /// [`Error::BadInput`] naming the bad cells of a column of numbers (up
    /// to five, with their places), the cell past [`MAX_TEXT_CLASSES`]
    /// distinct values, or the labels seen once (up to five) with every
    /// label's count.
    pub(crate) fn labels(self) -> Result<Vec<String>> {
        let (numbers, texts) = (self.numbers, self.texts);
        if let (true, Some(first)) = (numbers > texts, self.bad.first()) {
            let others: Vec<String> = self.bad[1..].iter().map(|b| b.short(first)).collect();
            let more = texts.saturating_sub(5);
            return Err(Error::BadInput(format!(
                "{} is not a number; the column holds numbers in {numbers} of {} rows, so it \
                 is a column of numbers with {texts} bad cell{}{}{}",
                first.full(&self.column),
                numbers + texts,
                if texts == 1 { "" } else { "s" },
                if others.is_empty() {
                    String::new()
                } else {
                    format!(" (also {})", others.join(", "))
                },
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                },
            )));
        }
        if let Some(past) = &self.past_max {
            return Err(Error::BadInput(format!(
                "{} makes more than {MAX_TEXT_CLASSES} distinct values: too many to be class \
                 labels",
                past.full(&self.column)
            )));
        }
        let mut once: Vec<&Label> = self.seen.values().filter(|l| l.rows == 1).collect();
        once.sort_by_key(|l| l.first);
        let Some(first) = once.first().map(|l| &l.shown) else {
            return Ok(self.seen.into_keys().collect());
        };
        let others: Vec<String> = once[1..]
            .iter()
            .take(4)
            .map(|l| l.shown.short(first))
            .collect();
        let listed: Vec<String> = self
            .seen
            .iter()
            .take(12)
            .map(|(n, l)| format!("{} x{}", crate::data::quote(n), l.rows))
            .collect();
        let at = format!("{}: {}, column '{}'", first.source, first.at, self.column);
        Err(Error::BadInput(format!(
            "{at}: label {} appears in no other row{} (labels: {}{}): a classifier needs every \
             class in at least two rows; a typing error?",
            crate::data::quote(&first.cell),
            if others.is_empty() {
                String::new()
            } else {
                format!("; nor do {}", others.join(", "))
            },
            listed.join(", "),
            if self.seen.len() > 12 { ", ..." } else { "" },
        )))
    }
}

/// The name of class value `value` of `data`: its text label, or the
/// number as written.
pub(crate) fn class_name(data: &Dataset, value: f64) -> String {
    // Standardising and back leaves code 0 at about -1e-16: round first.
    let code = value.round();
    let text = (code >= 0.0 && is_class(value, code))
        .then(|| data.class_labels.get(code as usize))
        .flatten();
    match text {
        Some(label) => label.clone(),
        // An integer class as written ("0", not "1.1e-16" or "-0").
        None if is_class(value, code) => format!("{}", code + 0.0),
        None => format!("{value}"),
    }
}

/// The class value `label` names in `data`: a text label of the column, or
/// a number.
///
/// # Errors
/// [`Error::BadInput`] listing the labels when `label` is neither.
pub(crate) fn class_value(data: &Dataset, label: &str) -> Result<f64> {
    if let Some(k) = data.class_labels.iter().position(|l| l == label) {
        return Ok(k as f64);
    }
    if data.class_labels.is_empty() {
        if let Ok(v) = label.parse::<f64>() {
            if v.is_finite() {
                return Ok(v);
            }
        }
    }
    let listed: Vec<&str> = data
        .class_labels
        .iter()
        .take(10)
        .map(String::as_str)
        .collect();
    let hint = if listed.is_empty() {
        "a number".to_owned()
    } else {
        format!("one of {}", listed.join(", "))
    };
    Err(Error::BadInput(format!(
        "{}: class '{label}' is not a value of target column '{}' (expected {hint})",
        data.source, data.target_name
    )))
}

/// The positive class a binary classification takes without `--positive`:
/// for numbers the larger value (0/1 and -1/+1 targets predict `P(1)`); for
/// text the rarer label (a fault, a gesture: the event the device looks
/// for), the later in sorted order on a tie.
///
/// # Errors
/// [`Error::BadInput`] unless the target holds exactly two classes.
pub(crate) fn default_positive(data: &Dataset) -> Result<f64> {
    let classes = data.target_classes();
    let [low, high] = classes[..] else {
        if data.class_labels.is_empty() {
            // Its message tells a continuous column from too many classes.
            data.clone().into_binary(None)?;
        }
        return Err(Error::BadInput(format!(
            "{}: target column '{}' holds {} classes; a binary classifier needs two, or \
             --positive LABEL to name one class against the rest",
            data.source,
            data.target_name,
            classes.len()
        )));
    };
    if data.class_labels.is_empty() {
        return Ok(high);
    }
    let raw = data.raw_y();
    let count = |c: f64| raw.iter().filter(|&&v| is_class(v, c)).count();
    Ok(if count(low) < count(high) { low } else { high })
}

/// The labels `[negative, positive]` of the binary classification of
/// `data` (its target not yet made binary) with class value `positive`:
/// the other class's name when there are two classes, `other` when the
/// positive class is one against several.
pub(crate) fn binary_labels(data: &Dataset, positive: f64) -> Vec<String> {
    let classes = data.target_classes();
    let mut others = classes.iter().filter(|&&v| !is_class(v, positive));
    let negative = match (others.next(), others.next()) {
        (Some(&only), None) => class_name(data, only),
        _ => "other".to_owned(),
    };
    vec![negative, class_name(data, positive)]
}

/// The negative class of a binary classifier of one class against several:
/// every class but the positive one.
pub(crate) const OTHER: &str = "other";

/// The class labels of a classifier's blob, in class order: those it
/// records, else (a blob older than format v5, or written without labels)
/// `[other, POSITIVE]` for a probit model and the class indices for `K`
/// classes. Empty for a regression.
pub fn blob_labels(spec: &ModelSpec) -> Vec<String> {
    if !spec.class_labels.is_empty() {
        return spec.class_labels.clone();
    }
    match spec.shape.link {
        Link::Identity => Vec::new(),
        Link::Probit => vec![OTHER.to_owned(), format!("{}", spec.positive_class)],
        Link::OneVsRest | Link::Softmax => {
            (0..spec.output_count()).map(|k| k.to_string()).collect()
        }
    }
}

/// The class index (into `labels`) of each cell of a test target, given
/// with where it is: a cell that spells a label, or a number equal to a
/// numeric label (`1.0` is class `1`). For a binary classifier of one class
/// against the rest (`[other, POSITIVE]`) every other value is `other`.
///
/// # Errors
/// [`Error::BadInput`] naming the first cell that is none of the labels,
/// and listing them.
pub(crate) fn class_indices(cells: &[(String, String)], labels: &[String]) -> Result<Vec<usize>> {
    let against_rest = labels.len() == 2 && labels.first().is_some_and(|l| l == OTHER);
    let number = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite());
    cells
        .iter()
        .map(|(cell, place)| {
            let spelled = labels.iter().position(|l| l == cell);
            let valued = || {
                let v = number(cell)?;
                labels
                    .iter()
                    .position(|l| number(l).is_some_and(|w| is_class(v, w)))
            };
            match spelled.or_else(valued) {
                Some(k) => Ok(k),
                None if against_rest => Ok(0),
                None => Err(Error::BadInput(format!(
                    "{place}: '{cell}' is not a class of the model (its classes: {})",
                    labels.join(", ")
                ))),
            }
        })
        .collect()
}

impl Input {
    /// The model's inputs (RAW units, picked by name) and the class index
    /// of each cell of the `target` column among the blob's labels
    /// ([`blob_labels`]): a cell that spells a label, or a number equal to
    /// a numeric label; for a binary classifier of one class against the
    /// rest every other value is its `other` class.
    ///
    /// # Errors
    /// As [`Input::read_inputs_and_labels`], and [`Error::BadInput`] naming
    /// the first cell that is none of the labels, and listing them.
    pub fn read_classes(
        &self,
        spec: &ModelSpec,
        target: &str,
    ) -> Result<(DMatrix<f64>, Vec<usize>)> {
        let (x, cells) = self.read_inputs_and_labels(&spec.input_names, target)?;
        Ok((x, class_indices(&cells, &blob_labels(spec))?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    fn data(text: &str) -> Dataset {
        Dataset::from_reader(text.as_bytes(), "t.csv", None).unwrap()
    }

    fn data_err(text: &str) -> String {
        Dataset::from_reader(text.as_bytes(), "t.csv", None)
            .unwrap_err()
            .to_string()
    }

    fn places(n: usize) -> Vec<Place> {
        (1..=n as u64)
            .map(|row| Place {
                line: Some(row + 1),
                row,
            })
            .collect()
    }

    fn parse(v: &[&str]) -> Result<TargetColumn> {
        TargetColumn::parse(&cells(v), &places(v.len()), "t.csv", "y")
    }

    #[test]
    fn numbers_stay_numbers_and_text_is_coded_in_sorted_order() {
        assert_eq!(
            parse(&["1", "0", "2.5"]).unwrap(),
            TargetColumn::Numbers(vec![1.0, 0.0, 2.5])
        );
        assert_eq!(
            parse(&["ok", "fault", "ok", "3", "fault", "3"]).unwrap(),
            TargetColumn::Labels {
                codes: vec![2.0, 1.0, 2.0, 0.0, 1.0, 0.0],
                names: cells(&["3", "fault", "ok"])
            }
        );
    }

    #[test]
    fn a_few_words_among_numbers_are_bad_cells_named_by_line() {
        let mut column: Vec<String> = (0..300).map(|i| format!("{}", i % 5)).collect();
        column[77] = "oops".into();
        let refs: Vec<&str> = column.iter().map(String::as_str).collect();
        let err = parse(&refs).unwrap_err().to_string();
        assert!(
            err.contains("t.csv: line 79 (data row 78), column 'y': 'oops' is not a number"),
            "{err}"
        );
        assert!(err.contains("numbers in 299 of 300 rows"), "{err}");
        column[10] = "n/a".into();
        let refs: Vec<&str> = column.iter().map(String::as_str).collect();
        let err = parse(&refs).unwrap_err().to_string();
        assert!(
            err.contains("line 12 (data row 11), column 'y': 'n/a'"),
            "{err}"
        );
        assert!(
            err.contains("2 bad cells (also line 79 (data row 78) 'oops')"),
            "{err}"
        );
    }

    #[test]
    fn a_label_seen_once_is_refused_with_its_line_and_the_labels() {
        let err = parse(&["ok", "fault", "ok", "okk", "fault"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 5 (data row 4), column 'y': label 'okk' appears in no other row"),
            "{err}"
        );
        assert!(err.contains("'fault' x2, 'ok' x2, 'okk' x1"), "{err}");
    }

    #[test]
    fn one_label_in_every_row_is_nothing_to_learn() {
        let err = data_err("x,y\n1,ok\n2,ok\n3,ok\n");
        assert!(err.contains("the one label 'ok' in every row"), "{err}");
    }

    #[test]
    fn empty_and_non_finite_target_cells_name_their_line() {
        let err = data_err("x,y\n1,ok\n2,\n");
        assert!(
            err.contains("line 3 (data row 2), column 'y': empty"),
            "{err}"
        );
        let err = data_err("x,y\n1,ok\n2,inf\n");
        assert!(err.contains("line 3 (data row 2), column 'y'"), "{err}");
        assert!(err.contains("not a finite number"), "{err}");
    }

    #[test]
    fn a_column_of_distinct_words_is_refused_as_labels() {
        let mut text = String::from("x,y\n");
        for i in 0..=MAX_TEXT_CLASSES {
            let y = if i == 7 {
                "1.2x".to_owned()
            } else {
                format!("{i}.5")
            };
            text.push_str(&format!("{i},{y}\n"));
        }
        let err = data_err(&text);
        assert!(err.contains("line 9 (data row 8), column 'y'"), "{err}");
        assert!(err.contains("'1.2x' is not a number"), "{err}");
        // Distinct words, none a number: too many to be labels.
        let words: String = (0..=MAX_TEXT_CLASSES)
            .map(|i| format!("{i},w{i}\n"))
            .collect();
        let err = data_err(&format!("x,y\n{words}"));
        assert!(err.contains("too many to be class labels"), "{err}");
    }

    #[test]
    fn the_rare_text_label_or_the_larger_number_is_positive() {
        let text = data("x,state\n1,ok\n2,fault\n3,ok\n4,ok\n5,fault\n6,ok\n");
        let positive = default_positive(&text).unwrap();
        assert_eq!(class_name(&text, positive), "fault");
        assert_eq!(class_value(&text, "ok").unwrap(), 1.0);
        assert_eq!(binary_labels(&text, positive), cells(&["ok", "fault"]));
        assert_eq!(class_name(&text, -1e-16), "fault");
        let numbers = data("x,y\n1,0\n2,1\n3,1\n");
        assert_eq!(default_positive(&numbers).unwrap(), 1.0);
        assert_eq!(class_value(&numbers, "0").unwrap(), 0.0);
        assert_eq!(binary_labels(&numbers, 1.0), cells(&["0", "1"]));
        // Standardised and back, class 0 is named as written.
        assert_eq!(class_name(&numbers, 1.1102230246251565e-16), "0");
        assert_eq!(class_name(&numbers, -1e-16), "0");
        assert_eq!(class_name(&numbers, 0.5), "0.5");
    }

    #[test]
    fn test_cells_map_to_the_blob_labels_by_name_or_value() {
        let at = |v: &[&str]| -> Vec<(String, String)> {
            v.iter()
                .enumerate()
                .map(|(i, c)| ((*c).to_owned(), format!("t.csv: line {}", i + 2)))
                .collect()
        };
        let names = cells(&["fault", "ok"]);
        assert_eq!(
            class_indices(&at(&["ok", "fault", "ok"]), &names).unwrap(),
            vec![1, 0, 1]
        );
        let err = class_indices(&at(&["ok", "okay"]), &names)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("t.csv: line 3: 'okay' is not a class"),
            "{err}"
        );
        assert!(err.contains("fault, ok"), "{err}");
        let numbers = cells(&["0", "1", "2"]);
        assert_eq!(
            class_indices(&at(&["2.0", "0", "1"]), &numbers).unwrap(),
            vec![2, 0, 1]
        );
        assert!(class_indices(&at(&["3"]), &numbers).is_err());
        let rest = cells(&[OTHER, "3"]);
        assert_eq!(
            class_indices(&at(&["3", "1", "2"]), &rest).unwrap(),
            vec![1, 0, 0]
        );
    }

    #[test]
    fn an_unknown_class_lists_the_labels_and_one_of_three_is_against_other() {
        let three = data("x,c\n1,a\n2,b\n3,c\n4,a\n5,b\n6,c\n");
        let err = class_value(&three, "d").unwrap_err().to_string();
        assert!(err.contains("one of a, b, c"), "{err}");
        assert!(default_positive(&three).is_err());
        assert_eq!(binary_labels(&three, 1.0), cells(&["other", "b"]));
    }
}
