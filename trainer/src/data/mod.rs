//! Reading, validating and standardising tabular data (docs/src/data.md).
//!
//! Files are CSV with a header row, or Parquet (recognised by content),
//! each opened once ([`crate::files::Input`]). Every problem is an
//! [`Error::BadInput`] naming the file, the place (`line L (data row R)`:
//! the editor's line and the spreadsheet's row) and the column.
//! Standardisation uses the *sample* standard deviation (N − 1), as the
//! original SPGP code. A constant input is kept with scale 1 and listed in
//! [`Dataset::constant_inputs`], which the fits leave out; a constant
//! target is an error.

pub mod extremes;
pub mod labels;
pub mod multi_target;
pub mod stream;

mod csv_cells;
mod read;

pub(crate) use csv_cells::{
    cell_value, check_names, csv_reader, find_column, for_each_record, quote, read_header, Lines,
};
use read::{read_csv_table, read_table};
pub(crate) use read::{read_inputs_and_targets, training_columns, Place, Table};

use std::io::Read;
use std::path::Path;

use nalgebra::{DMatrix, DVector};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::data::labels::TargetColumn;
use crate::files::{Input, InputFormat};
use crate::{Error, Result};

/// The affine maps between raw units and the standardised units the models
/// are trained in: `standardised = (raw - mean) / scale`, per input column
/// and for the target; and the range of the inputs they were computed from,
/// which the blob records so that a device can tell when it extrapolates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct Standardisation {
    /// Mean of each input column (raw units).
    pub x_mean: Vec<f64>,
    /// Sample standard deviation of each input column (raw units), > 0;
    /// 1 for a constant input.
    pub x_scale: Vec<f64>,
    /// Smallest value of each input column (raw units).
    pub x_min: Vec<f64>,
    /// Largest value of each input column (raw units).
    pub x_max: Vec<f64>,
    /// Mean of the target (raw units).
    pub y_mean: f64,
    /// Sample standard deviation of the target (raw units), > 0.
    pub y_scale: f64,
}

impl Standardisation {
    /// Raw inputs (N x D) to standardised inputs.
    ///
    /// The caller guarantees `x.ncols()` equals the number of inputs;
    /// [`Input::read_inputs`] ensures this for files.
    pub fn apply_x(&self, x: &DMatrix<f64>) -> DMatrix<f64> {
        let mut out = x.clone();
        for ((mut col, m), s) in out.column_iter_mut().zip(&self.x_mean).zip(&self.x_scale) {
            col.apply(|v| *v = (*v - m) / s);
        }
        out
    }

    /// Standardised inputs back to raw units.
    pub fn unapply_x(&self, x: &DMatrix<f64>) -> DMatrix<f64> {
        let mut out = x.clone();
        for ((mut col, m), s) in out.column_iter_mut().zip(&self.x_mean).zip(&self.x_scale) {
            col.apply(|v| *v = *v * s + m);
        }
        out
    }

    /// Raw targets to standardised targets.
    pub fn apply_y(&self, y: &DVector<f64>) -> DVector<f64> {
        y.map(|v| (v - self.y_mean) / self.y_scale)
    }

    /// Standardised targets (or predictive means) back to raw units.
    pub(crate) fn unapply_y(&self, y: &DVector<f64>) -> DVector<f64> {
        y.map(|v| v * self.y_scale + self.y_mean)
    }

    /// A predictive variance in standardised units back to raw units.
    pub fn unapply_var(&self, var: f64) -> f64 {
        var * self.y_scale * self.y_scale
    }
}

/// What the target column holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TargetKind {
    /// A continuous quantity, standardised (regression).
    Continuous,
    /// Class labels kept as -1/+1 (no standardisation: the transform's
    /// `y_mean` is 0 and `y_scale` 1); `positive` is the raw target value
    /// mapped to +1, every other value is -1.
    Binary {
        /// Raw target value of the positive class.
        positive: f64,
    },
    /// `count` classes (3 to `MAX_CLASSES`), kept as their raw values
    /// ([`Dataset::into_classes`]).
    Classes {
        /// Number of classes.
        count: usize,
    },
}

/// Most classes a multi-class classifier takes (each is a latent function
/// with its own `M x M` factor).
pub(crate) const MAX_CLASSES: usize = 100;

/// Whether a raw target value is the class `positive`, allowing for the
/// rounding of a label through standardisation and through the f32 the blob
/// stores it in.
pub fn is_class(value: f64, positive: f64) -> bool {
    (value - positive).abs() <= 1e-6 * positive.abs().max(1.0)
}

/// A validated, standardised regression or classification data set.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// Standardised inputs, one row per example (N x D).
    pub x: DMatrix<f64>,
    /// Standardised targets (length N), or -1/+1 labels
    /// ([`TargetKind::Binary`]).
    pub y: DVector<f64>,
    /// Continuous or binary target.
    pub target: TargetKind,
    /// Input column names, in the column order of `x`.
    pub input_names: Vec<String>,
    /// Target column name.
    pub target_name: String,
    /// The map from raw to standardised units; shared by a train/test split.
    #[cfg(feature = "internals")]
    pub transform: Standardisation,
    #[cfg(not(feature = "internals"))]
    pub(crate) transform: Standardisation,
    /// Where the data came from (file path or a label), for messages.
    pub source: String,
    /// Indices of the input columns that are constant in the data the
    /// transform was computed from (ascending). Their scale is 1 and their
    /// standardised values are zero; models ignore them.
    pub constant_inputs: Vec<usize>,
    /// The text labels of a target column that holds text, sorted: raw
    /// target value `k` is label `k` ([`crate::data::labels`]). Empty for numbers.
    pub class_labels: Vec<String>,
}

impl Dataset {
    /// Reads and validates a CSV or Parquet file (recognised by content);
    /// `target` names the target column (default: the last column) and
    /// every other column is an input.
    pub fn from_csv(path: impl AsRef<Path>, target: Option<&str>) -> Result<Dataset> {
        Dataset::from_input(&Input::open(path)?, target)
    }

    /// As [`Dataset::from_csv`], from an input already open.
    pub fn from_input(input: &Input, target: Option<&str>) -> Result<Dataset> {
        Dataset::from_input_columns(input, target, None)
    }

    /// As [`Dataset::from_input`], with `inputs` (if given) the input
    /// columns, in that order (`--inputs a,b,c`).
    pub fn from_input_columns(
        input: &Input,
        target: Option<&str>,
        inputs: Option<&[String]>,
    ) -> Result<Dataset> {
        let source = input.name();
        let table = read_table(input, true, |header| {
            training_columns(header, target, inputs, source)
        })?;
        Dataset::from_table(table, source)
    }

    /// As [`Dataset::from_csv`], reading CSV text from any reader; `source`
    /// names it in messages.
    pub fn from_reader(reader: impl Read, source: &str, target: Option<&str>) -> Result<Dataset> {
        let table = read_csv_table(reader, source, true, |header| {
            training_columns(header, target, None, source)
        })?;
        Dataset::from_table(table, source)
    }

    fn from_table(table: Table, source: &str) -> Result<Dataset> {
        let x_raw = table.inputs(table.names.len().saturating_sub(1));
        let mut names = table.names;
        let target_name = names.pop().unwrap_or_default();
        let (y_raw, class_labels) =
            match TargetColumn::parse(&table.last_cells, &table.last_places, source, &target_name)?
            {
                TargetColumn::Numbers(y) => (y, Vec::new()),
                TargetColumn::Labels { codes, names } => (codes, names),
            };
        if let [only] = class_labels.as_slice() {
            return Err(Error::BadInput(format!(
                "{source}: target column '{target_name}' holds the one label '{only}' in every \
                 row: there is nothing to learn"
            )));
        }
        let mut data = build(source, x_raw, DVector::from_vec(y_raw), names, target_name)?;
        data.class_labels = class_labels;
        Ok(data)
    }

    /// Builds a data set from values in raw units (e.g. generated demo
    /// data), with the same validation as a file: matching shapes, finite
    /// values, at least two rows, a target that is not constant.
    pub fn from_raw(
        x_raw: DMatrix<f64>,
        y_raw: DVector<f64>,
        input_names: Vec<String>,
        target_name: String,
    ) -> Result<Dataset> {
        const SOURCE: &str = "in-memory data";
        if x_raw.nrows() != y_raw.len() {
            return Err(Error::BadInput(format!(
                "{SOURCE}: {} input rows but {} targets",
                x_raw.nrows(),
                y_raw.len()
            )));
        }
        if x_raw.ncols() != input_names.len() {
            return Err(Error::BadInput(format!(
                "{SOURCE}: {} input columns but {} names",
                x_raw.ncols(),
                input_names.len()
            )));
        }
        let mut all_names = input_names.clone();
        all_names.push(target_name.clone());
        check_names(&all_names, SOURCE)?;
        for (j, col) in x_raw.column_iter().chain([y_raw.column(0)]).enumerate() {
            if let Some(i) = col.iter().position(|v| !v.is_finite()) {
                return Err(Error::BadInput(format!(
                    "{SOURCE}: data row {}, column '{}': value {} is not finite",
                    i + 1,
                    all_names.get(j).map_or("", String::as_str),
                    col.get(i).copied().unwrap_or(f64::NAN)
                )));
            }
        }
        build(SOURCE, x_raw, y_raw, input_names, target_name)
    }

    /// The same rows as a binary classification problem (`--link probit`):
    /// targets become -1/+1 labels. With `positive`, that value is the
    /// positive class and every other value negative (one-vs-rest);
    /// without, the column must hold exactly two distinct values and the
    /// larger is positive.
    ///
    /// # Errors
    /// [`Error::BadInput`] for a continuous column, more than two values and
    /// no `positive`, a `positive` that does not occur, or a single class.
    pub fn into_binary(self, positive: Option<f64>) -> Result<Dataset> {
        if let TargetKind::Binary { .. } = self.target {
            return Ok(self);
        }
        let raw = self.raw_y();
        let classes = distinct_values(raw.as_slice());
        let name = &self.target_name;
        let source = &self.source;
        let listed = |values: &[f64]| {
            let mut shown: Vec<String> = values.iter().take(10).map(|v| format!("{v}")).collect();
            if values.len() > 10 {
                shown.push(format!("... ({} in all)", values.len()));
            }
            shown.join(", ")
        };
        // A value within rounding of an integer is that integer.
        let snap = |v: f64| if is_class(v, v.round()) { v.round() } else { v };
        let integral = classes.iter().all(|v| is_class(*v, v.round()));
        if classes.len() > 2 && !integral {
            return Err(Error::BadInput(format!(
                "{source}: target column '{name}' is continuous ({} distinct values, not all integers: {}): --link probit needs class labels",
                classes.len(),
                listed(&classes)
            )));
        }
        let positive = match positive {
            Some(p) => classes
                .iter()
                .copied()
                .find(|&v| is_class(v, p))
                .map(snap)
                .ok_or_else(|| {
                    Error::BadInput(format!(
                        "{source}: --positive {p} does not occur in target column '{name}' (values: {})",
                        listed(&classes)
                    ))
                })?,
            None if classes.len() == 2 => snap(classes[1]),
            None => {
                return Err(Error::BadInput(format!(
                    "{source}: target column '{name}' holds {} distinct values ({}): --link probit needs exactly two, or --positive VALUE to name the positive class (every other value is negative)",
                    classes.len(),
                    listed(&classes)
                )))
            }
        };
        let y = raw.map(|v| if is_class(v, positive) { 1.0 } else { -1.0 });
        if y.iter().all(|&v| v == y[0]) {
            return Err(Error::BadInput(format!(
                "{source}: target column '{name}': every row is in one class: nothing to learn"
            )));
        }
        let mut data = self;
        data.y = y;
        data.transform.y_mean = 0.0;
        data.transform.y_scale = 1.0;
        data.target = TargetKind::Binary { positive };
        Ok(data)
    }

    /// The same data as a classification of its target's distinct values,
    /// each a class (one latent each, against the rest).
    ///
    /// # Errors
    /// [`Error::BadInput`] for fewer than 3 or more than `MAX_CLASSES`
    /// values, or values that are not all integers.
    pub fn into_classes(self) -> Result<Dataset> {
        let classes = self.target_classes();
        let integral = classes.iter().all(|v| is_class(*v, v.round()));
        if classes.len() < 3 || !integral || classes.len() > MAX_CLASSES {
            return Err(Error::BadInput(format!(
                "{}: target column '{}' holds {} distinct values{}: a multi-class classifier \
                 needs 3 to {MAX_CLASSES} class labels (two: the binary classifier)",
                self.source,
                self.target_name,
                classes.len(),
                if integral { "" } else { ", not all integers" }
            )));
        }
        Ok(Dataset {
            target: TargetKind::Classes {
                count: classes.len(),
            },
            ..self
        })
    }

    /// The distinct raw target values, ascending (values within
    /// [`is_class`] of each other counted once): two for a column that can
    /// be a binary classification without `--positive`.
    pub fn target_classes(&self) -> Vec<f64> {
        distinct_values(self.raw_y().as_slice())
    }

    /// Number of examples N.
    pub fn n_rows(&self) -> usize {
        self.x.nrows()
    }

    /// Number of inputs D.
    pub fn n_inputs(&self) -> usize {
        self.x.ncols()
    }

    /// Inputs in raw units.
    pub fn raw_x(&self) -> DMatrix<f64> {
        self.transform.unapply_x(&self.x)
    }

    /// Targets in raw units.
    pub fn raw_y(&self) -> DVector<f64> {
        self.transform.unapply_y(&self.y)
    }

    /// Fails unless there are at least `min` rows; `what` says who needs
    /// them, e.g. `require_rows(m, "20 pseudo-inputs")`.
    pub(crate) fn require_rows(&self, min: usize, what: &str) -> Result<()> {
        if self.n_rows() >= min {
            Ok(())
        } else {
            Err(Error::BadInput(format!(
                "{}: {} data rows, but {what} needs at least {min}",
                self.source,
                self.n_rows()
            )))
        }
    }

    /// The rows at `indices` (in that order), keeping this data set's
    /// transform; an index out of range is an error.
    pub fn subset(&self, indices: &[usize]) -> Result<Dataset> {
        let n = self.n_rows();
        if let Some(&bad) = indices.iter().find(|&&i| i >= n) {
            return Err(Error::BadInput(format!(
                "{}: row index {bad} out of range (data set has {n} rows)",
                self.source
            )));
        }
        Ok(Dataset {
            x: self.x.select_rows(indices),
            y: self.y.select_rows(indices),
            target: self.target,
            input_names: self.input_names.clone(),
            target_name: self.target_name.clone(),
            transform: self.transform.clone(),
            source: self.source.clone(),
            constant_inputs: self.constant_inputs.clone(),
            class_labels: self.class_labels.clone(),
        })
    }

    /// A random subset of at most `max_points` rows (all rows if fewer), in
    /// this data set's own standardisation so its model exports unchanged.
    pub(crate) fn at_most_rows(&self, max_points: usize, seed: u64) -> Result<Dataset> {
        if self.n_rows() <= max_points {
            return Ok(self.clone());
        }
        let mut rows: Vec<usize> = (0..self.n_rows()).collect();
        rows.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        rows.truncate(max_points);
        rows.sort_unstable();
        self.subset(&rows)
    }

    /// The data set without the input columns `drop` (indices, any order):
    /// what the fitting procedures see when [`Self::constant_inputs`] are
    /// left out. The transform loses those columns too.
    ///
    /// # Errors
    /// [`Error::BadInput`] for an index out of range or when no input would
    /// be left.
    pub(crate) fn without_inputs(&self, drop: &[usize]) -> Result<Dataset> {
        let d = self.n_inputs();
        if let Some(&bad) = drop.iter().find(|&&j| j >= d) {
            return Err(Error::BadInput(format!(
                "{}: input index {bad} out of range ({d} inputs)",
                self.source
            )));
        }
        let keep: Vec<usize> = (0..d).filter(|j| !drop.contains(j)).collect();
        if keep.is_empty() {
            return Err(Error::BadInput(format!(
                "{}: no input column left to learn from",
                self.source
            )));
        }
        let pick = |v: &[f64]| keep.iter().filter_map(|&j| v.get(j).copied()).collect();
        Ok(Dataset {
            x: self.x.select_columns(&keep),
            y: self.y.clone(),
            target: self.target,
            input_names: keep
                .iter()
                .filter_map(|&j| self.input_names.get(j).cloned())
                .collect(),
            target_name: self.target_name.clone(),
            transform: Standardisation {
                x_mean: pick(&self.transform.x_mean),
                x_scale: pick(&self.transform.x_scale),
                x_min: pick(&self.transform.x_min),
                x_max: pick(&self.transform.x_max),
                ..self.transform.clone()
            },
            source: self.source.clone(),
            constant_inputs: keep
                .iter()
                .enumerate()
                .filter(|(_, j)| self.constant_inputs.contains(j))
                .map(|(new, _)| new)
                .collect(),
            class_labels: self.class_labels.clone(),
        })
    }

    /// Random train/test split, deterministic in `seed`. The training part
    /// is re-standardised from its own rows and the test part uses the
    /// TRAINING transform, so nothing about the test data leaks into
    /// training. `test_fraction` is in (0, 1); both parts must be non-empty
    /// and the training part needs at least two rows. Rows keep their
    /// original order within each part.
    pub fn split(&self, test_fraction: f64, seed: u64) -> Result<(Dataset, Dataset)> {
        if !(test_fraction > 0.0 && test_fraction < 1.0) {
            return Err(Error::BadInput(format!(
                "test fraction must be strictly between 0 and 1, got {test_fraction}"
            )));
        }
        let n = self.n_rows();
        // Rounding a fraction of a small N can give 0 or N; the checks below
        // turn that into a message instead of an empty part.
        let n_test = (test_fraction * n as f64).round() as usize;
        if n_test == 0 || n_test + 2 > n {
            return Err(Error::BadInput(format!(
                "{}: a test fraction of {test_fraction} of {n} rows leaves {n_test} test rows \
                 and {} training rows; need at least 1 and 2",
                self.source,
                n.saturating_sub(n_test)
            )));
        }
        let order = self.shuffled(seed);
        let (test_idx, train_idx) = order.split_at(n_test);
        self.split_at_rows(test_idx, train_idx)
    }

    /// `k` train/test pairs that hold out every row once: the rows in a
    /// seeded random order, fold `i` testing on every `k`-th from the
    /// `i`-th. Each part is made as [`Self::split`] makes its parts.
    ///
    /// # Errors
    /// [`Error::BadInput`] if `k < 2` or a fold would leave fewer than two
    /// training rows or no test row.
    pub fn folds(&self, k: usize, seed: u64) -> Result<Vec<(Dataset, Dataset)>> {
        let n = self.n_rows();
        if k < 2 || n < k + 2 {
            return Err(Error::BadInput(format!(
                "{}: cannot make {k} cross-validation folds of {n} rows (need k >= 2 and at \
                 least k + 2 rows)",
                self.source
            )));
        }
        let order = self.shuffled(seed);
        (0..k)
            .map(|i| {
                let test_idx: Vec<usize> = order.iter().copied().skip(i).step_by(k).collect();
                let train_idx: Vec<usize> = order
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| j % k != i)
                    .map(|(_, &r)| r)
                    .collect();
                self.split_at_rows(&test_idx, &train_idx)
            })
            .collect()
    }

    fn shuffled(&self, seed: u64) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.n_rows()).collect();
        order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        order
    }

    /// The (training, test) parts with these rows (kept in their original
    /// order); the training part is re-standardised from its own rows.
    fn split_at_rows(&self, test_idx: &[usize], train_idx: &[usize]) -> Result<(Dataset, Dataset)> {
        let mut test_idx = test_idx.to_vec();
        let mut train_idx = train_idx.to_vec();
        test_idx.sort_unstable();
        train_idx.sort_unstable();

        let raw_x = self.raw_x();
        let raw_y = self.raw_y();
        let mut train = build(
            &format!("{} (training part)", self.source),
            raw_x.select_rows(&train_idx),
            raw_y.select_rows(&train_idx),
            self.input_names.clone(),
            self.target_name.clone(),
        )?;
        train.class_labels = self.class_labels.clone();
        if let TargetKind::Binary { .. } = self.target {
            // Labels stay -1/+1: undo the standardisation `build` applied.
            train.y = raw_y.select_rows(&train_idx);
            train.transform.y_mean = 0.0;
            train.transform.y_scale = 1.0;
            train.target = self.target;
        }
        if let TargetKind::Classes { .. } = self.target {
            train.target = self.target;
        }
        let test = Dataset {
            x: train.transform.apply_x(&raw_x.select_rows(&test_idx)),
            y: train.transform.apply_y(&raw_y.select_rows(&test_idx)),
            target: self.target,
            input_names: self.input_names.clone(),
            target_name: self.target_name.clone(),
            transform: train.transform.clone(),
            source: format!("{} (test part)", self.source),
            constant_inputs: train.constant_inputs.clone(),
            class_labels: self.class_labels.clone(),
        };
        Ok((train, test))
    }
}

/// Refuses a column whose mean or standard deviation double precision
/// cannot hold: values so large that their squares overflow, or so close
/// together (1e-300 apart) that they underflow to a spread of zero.
pub(crate) fn unstandardisable(
    source: &str,
    role: &str,
    name: &str,
    (lo, hi): (f64, f64),
    mean: f64,
    std: f64,
) -> Result<()> {
    if std.is_finite() && std > 0.0 && mean.is_finite() {
        return Ok(());
    }
    let why = if std.is_finite() && mean.is_finite() {
        "too close together to standardise: their spread underflows double precision"
    } else {
        "too large to standardise: their spread overflows double precision"
    };
    Err(Error::BadInput(format!(
        "{source}: {role} column '{name}': values from {lo:e} to {hi:e} are {why}; rescale \
         the column (to units in which it varies by about 1)"
    )))
}

/// The smallest and the largest value of each column of `x`.
pub(crate) fn column_ranges(x: &DMatrix<f64>) -> (Vec<f64>, Vec<f64>) {
    x.column_iter().map(|c| (c.min(), c.max())).unzip()
}

/// Sample mean and standard deviation (divisor n − 1); needs n >= 2.
fn mean_and_std<'a>(values: impl Iterator<Item = &'a f64> + Clone) -> (f64, f64) {
    let n = values.clone().count() as f64;
    let mean = values.clone().sum::<f64>() / n;
    let ss: f64 = values.map(|v| (v - mean) * (v - mean)).sum();
    (mean, (ss / (n - 1.0)).sqrt())
}

/// The distinct values of `values`, ascending, values within [`is_class`]
/// of each other counted once.
fn distinct_values(values: &[f64]) -> Vec<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut out: Vec<f64> = Vec::new();
    for v in sorted {
        if out.last().is_none_or(|&last| !is_class(v, last)) {
            out.push(v);
        }
    }
    out
}

/// Checks the data have enough rows, a target that is not constant and at
/// least one input that is not, then standardises (a constant input gets
/// scale 1 and is recorded). Values are already known to be finite.
pub(crate) fn build(
    source: &str,
    x_raw: DMatrix<f64>,
    y_raw: DVector<f64>,
    input_names: Vec<String>,
    target_name: String,
) -> Result<Dataset> {
    let n = y_raw.len();
    if n < 2 {
        return Err(Error::BadInput(format!(
            "{source}: {n} data row(s); at least 2 are needed to standardise the data"
        )));
    }
    // None for a constant column.
    let scale_of = |values: Vec<f64>, name: &str, role: &str| -> Result<Option<(f64, f64)>> {
        let first = values.first().copied().unwrap_or(0.0);
        if values.iter().all(|&v| v == first) {
            return Ok(None);
        }
        let (mean, std) = mean_and_std(values.iter());
        let (lo, hi) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            });
        unstandardisable(source, role, name, (lo, hi), mean, std)?;
        Ok(Some((mean, std)))
    };
    let mut x_mean = Vec::with_capacity(input_names.len());
    let mut x_scale = Vec::with_capacity(input_names.len());
    let mut constant_inputs = Vec::new();
    for (j, (col, name)) in x_raw.column_iter().zip(&input_names).enumerate() {
        let (m, s) = match scale_of(col.iter().copied().collect(), name, "input")? {
            Some(ms) => ms,
            None => {
                constant_inputs.push(j);
                (col.get(0).copied().unwrap_or(0.0), 1.0)
            }
        };
        x_mean.push(m);
        x_scale.push(s);
    }
    if !input_names.is_empty() && constant_inputs.len() == input_names.len() {
        return Err(Error::BadInput(format!(
            "{source}: every input column ({}) is constant: there is nothing to learn from",
            input_names.join(", ")
        )));
    }
    let Some((y_mean, y_scale)) =
        scale_of(y_raw.iter().copied().collect(), &target_name, "target")?
    else {
        return Err(Error::BadInput(format!(
            "{source}: target column '{target_name}' is constant (every row is {}): \
             there is nothing to learn",
            y_raw.get(0).copied().unwrap_or(0.0)
        )));
    };
    let (x_min, x_max) = column_ranges(&x_raw);
    let transform = Standardisation {
        x_mean,
        x_scale,
        x_min,
        x_max,
        y_mean,
        y_scale,
    };
    Ok(Dataset {
        x: transform.apply_x(&x_raw),
        y: transform.apply_y(&y_raw),
        target: TargetKind::Continuous,
        input_names,
        target_name,
        transform,
        source: source.to_owned(),
        constant_inputs,
        class_labels: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, target: Option<&str>) -> Result<Dataset> {
        Dataset::from_reader(text.as_bytes(), "t.csv", target)
    }

    fn bad(text: &str, target: Option<&str>) -> String {
        match parse(text, target) {
            Err(Error::BadInput(m)) => m,
            other => panic!("expected BadInput, got {other:?}"),
        }
    }

    fn input(text: &str) -> Input {
        Input::from_bytes(text.as_bytes(), "p.csv").unwrap()
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    const GOOD: &str = "a,b,y\n1,10,0.5\n2,20,1.5\n3,40,2.5\n4,30,4.5\n";

    #[test]
    fn a_huge_cell_is_quoted_short() {
        let huge = "x".repeat(1 << 20);
        let m = bad(&format!("a,y\n1,2\n{huge},3\n4,5\n"), None);
        assert!(m.len() < 300, "{} bytes", m.len());
        assert!(
            m.contains(&format!(
                "'{}...' (1048576 bytes) is not a number",
                &huge[..60]
            )),
            "{m}"
        );
    }

    /// A bad cell on editor line `line`, whatever the line endings, with
    /// blank lines and a quoted two-line cell before it.
    #[test]
    fn lines_are_the_editors_whatever_the_line_endings() {
        for end in ["\n", "\r\n", "\r"] {
            let mut text = format!("a,b,y{end}");
            for i in 0..40 {
                text += &format!("{i},{},{}{end}", i * 2, i % 7);
            }
            text += &format!("{end}{end}\"5\",\"1{end}\",3{end}");
            for i in 0..10 {
                text += &format!("{i},{},{}{end}", i * 3, i % 5);
            }
            text += &format!("7,oops,1{end}9,1,2{end}");
            // header 1, rows 2-41, blanks 42-43, quoted 44-45, rows 46-55.
            let m = bad(&text, None);
            assert!(m.contains("line 56 (data row 52)"), "{end:?}: {m}");
        }
    }

    #[test]
    fn reads_and_standardises_with_sample_std() {
        let ds = parse(GOOD, None).unwrap();
        assert_eq!(ds.input_names, names(&["a", "b"]));
        assert_eq!(ds.target_name, "y");
        assert_eq!((ds.n_rows(), ds.n_inputs()), (4, 2));
        // a = 1..4: mean 2.5, sample variance 5/3.
        assert!((ds.transform.x_mean[0] - 2.5).abs() < 1e-12);
        assert!((ds.transform.x_scale[0] - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        for col in ds.x.column_iter() {
            let (m, s) = mean_and_std(col.iter());
            assert!(m.abs() < 1e-12 && (s - 1.0).abs() < 1e-12);
        }
        let (m, s) = mean_and_std(ds.y.iter());
        assert!(m.abs() < 1e-12 && (s - 1.0).abs() < 1e-12);
        assert!((ds.raw_x()[(2, 1)] - 40.0).abs() < 1e-12);
        assert!((ds.raw_y()[3] - 4.5).abs() < 1e-12);
    }

    #[test]
    fn named_target_can_be_any_column_and_whitespace_is_trimmed() {
        let ds = parse("a, y ,b\n1, 0.5,10\n2,1.5,20\n3,2.5,40\n", Some("y")).unwrap();
        assert_eq!(ds.input_names, names(&["a", "b"]));
        assert!((ds.raw_y()[1] - 1.5).abs() < 1e-12);
        assert!((ds.raw_x()[(2, 1)] - 40.0).abs() < 1e-12);
    }

    #[test]
    fn non_numeric_cell_names_file_line_and_column() {
        let m = bad("a,b,y\n1,2,3\n4,x7,6\n", None);
        assert!(m.contains("t.csv"), "{m}");
        assert!(m.contains("line 3 (data row 2)"), "{m}");
        assert!(m.contains("column 'b'"), "{m}");
        assert!(m.contains("'x7' is not a number"), "{m}");
    }

    #[test]
    fn nan_and_inf_cells_are_rejected() {
        for cell in ["nan", "NaN", "inf", "-inf", "infinity", "1e999"] {
            let m = bad(&format!("a,y\n1,2\n{cell},3\n5,1\n"), None);
            assert!(m.contains("line 3 (data row 2), column 'a'"), "{m}");
            assert!(m.contains("not a finite number"), "{m}");
        }
    }

    #[test]
    fn empty_cell_is_rejected() {
        let m = bad("a,y\n1,2\n,3\n", None);
        assert!(m.contains("column 'a'") && m.contains("empty cell"), "{m}");
    }

    #[test]
    fn ragged_row_is_rejected() {
        let m = bad("a,b,y\n1,2,3\n4,5\n7,8,9\n", None);
        assert!(m.contains("line 3 (data row 2)"), "{m}");
        assert!(m.contains("2 fields but the header has 3"), "{m}");
    }

    #[test]
    fn empty_file_and_header_only_are_rejected() {
        assert!(bad("", None).contains("empty file"));
        assert!(bad("a,b,y\n", None).contains("no data rows"));
    }

    #[test]
    fn unknown_target_lists_available_columns() {
        let m = bad(GOOD, Some("z"));
        assert!(m.contains("no column named 'z'"), "{m}");
        assert!(m.contains("a, b, y"), "{m}");
    }

    #[test]
    fn duplicate_and_empty_column_names_are_rejected() {
        let m = bad("a,b,a\n1,2,3\n4,5,6\n", None);
        assert!(
            m.contains("duplicate column name 'a' (columns 1 and 3)"),
            "{m}"
        );
        let m = bad("a,,y\n1,2,3\n4,5,6\n", None);
        assert!(m.contains("column 2 has an empty name"), "{m}");
    }

    #[test]
    fn constant_input_column_is_kept_with_scale_one_and_recorded() {
        let ds = parse("a,b,c,y\n1,7,0,1\n2,7,0,2\n3,7,0,4\n", None).unwrap();
        assert_eq!(ds.constant_inputs, vec![1, 2]);
        assert_eq!(ds.transform.x_mean[1], 7.0);
        assert_eq!(ds.transform.x_scale[1], 1.0);
        assert!(ds.x.column(1).iter().all(|&v| v == 0.0));
        assert!((ds.raw_x()[(2, 1)] - 7.0).abs() < 1e-12);
        // Every input constant: nothing to learn from.
        let m = bad("a,b,y\n1,7,1\n1,7,2\n1,7,4\n", None);
        assert!(m.contains("every input column (a, b) is constant"), "{m}");
    }

    #[test]
    fn without_inputs_drops_columns_and_their_transform() {
        let ds = parse("a,b,c,y\n1,7,5,1\n2,7,6,2\n3,7,9,4\n", None).unwrap();
        let used = ds.without_inputs(&ds.constant_inputs).unwrap();
        assert_eq!(used.input_names, names(&["a", "c"]));
        assert_eq!(used.x.ncols(), 2);
        assert_eq!(used.x.column(1), ds.x.column(2));
        assert_eq!(used.transform.x_mean, vec![2.0, ds.transform.x_mean[2]]);
        assert_eq!(used.transform.x_scale.len(), 2);
        assert_eq!(
            (used.transform.y_mean, used.y.clone()),
            (ds.transform.y_mean, ds.y.clone())
        );
        assert!(used.constant_inputs.is_empty());
        // Keeping a constant column keeps its (re-indexed) record.
        assert_eq!(ds.without_inputs(&[0]).unwrap().constant_inputs, vec![0]);
        assert!(ds.without_inputs(&[3]).is_err());
        assert!(ds.without_inputs(&[0, 1, 2]).is_err());
    }

    #[test]
    fn subset_and_split_carry_constant_inputs() {
        let n = 20;
        let x = DMatrix::from_fn(n, 2, |i, j| if j == 0 { i as f64 } else { 3.0 });
        let y = DVector::from_fn(n, |i, _| (i * i) as f64);
        let ds = Dataset::from_raw(x, y, names(&["x", "k"]), "y".into()).unwrap();
        assert_eq!(ds.constant_inputs, vec![1]);
        assert_eq!(ds.subset(&[0, 5]).unwrap().constant_inputs, vec![1]);
        let (train, test) = ds.split(0.25, 1).unwrap();
        assert_eq!(train.constant_inputs, vec![1]);
        assert_eq!(test.constant_inputs, vec![1]);
    }

    #[test]
    fn the_input_range_is_the_training_rows_in_raw_units() {
        let n = 20;
        let x = DMatrix::from_fn(n, 2, |i, j| if j == 0 { i as f64 - 4.5 } else { 3.0 });
        let y = DVector::from_fn(n, |i, _| (i * i) as f64);
        let ds = Dataset::from_raw(x, y, names(&["x", "k"]), "y".into()).unwrap();
        assert_eq!(ds.transform.x_min, vec![-4.5, 3.0]);
        assert_eq!(ds.transform.x_max, vec![14.5, 3.0]);
        let used = ds.without_inputs(&[1]).unwrap();
        assert_eq!(
            (used.transform.x_min, used.transform.x_max),
            (vec![-4.5], vec![14.5])
        );
        // A split's training part has its own range; its test part is
        // described by the training part's transform.
        let (train, test) = ds.split(0.5, 1).unwrap();
        let raw = train.raw_x();
        let (lo, hi) = (raw.column(0).min(), raw.column(0).max());
        assert!((train.transform.x_min[0] - lo).abs() < 1e-12);
        assert!((train.transform.x_max[0] - hi).abs() < 1e-12);
        assert_eq!(test.transform, train.transform);
    }

    #[test]
    fn constant_target_is_rejected() {
        let m = bad("a,y\n1,5\n2,5\n3,5\n", None);
        assert!(m.contains("target column 'y' is constant"), "{m}");
    }

    #[test]
    fn single_column_and_single_row_are_rejected() {
        assert!(bad("y\n1\n2\n", None).contains("at least one input column"));
        assert!(bad("a,y\n1,2\n", None).contains("at least 2"));
    }

    #[test]
    fn require_rows_names_the_requirement() {
        let ds = parse(GOOD, None).unwrap();
        assert!(ds.require_rows(4, "4 pseudo-inputs").is_ok());
        match ds.require_rows(5, "5 pseudo-inputs") {
            Err(Error::BadInput(m)) => {
                assert!(
                    m.contains("t.csv: 4 data rows, but 5 pseudo-inputs needs at least 5"),
                    "{m}"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn from_raw_validates_like_a_file() {
        let x = DMatrix::from_row_slice(3, 2, &[1.0, 5.0, 2.0, 6.0, 3.0, 8.0]);
        let y = DVector::from_vec(vec![1.0, 2.0, 4.0]);
        let ds = Dataset::from_raw(x.clone(), y.clone(), names(&["p", "q"]), "y".into()).unwrap();
        assert!((ds.raw_x() - &x).amax() < 1e-12);
        assert!((ds.raw_y() - &y).amax() < 1e-12);

        let mut x_nan = x.clone();
        x_nan[(1, 1)] = f64::NAN;
        let m = format!(
            "{:?}",
            Dataset::from_raw(x_nan, y.clone(), names(&["p", "q"]), "y".into())
        );
        assert!(m.contains("data row 2, column 'q'"), "{m}");
        assert!(Dataset::from_raw(x.clone(), y.clone(), names(&["p"]), "y".into()).is_err());
        let short = DVector::from_vec(vec![1.0, 2.0]);
        assert!(Dataset::from_raw(x, short, names(&["p", "q"]), "y".into()).is_err());
    }

    /// `--inputs` picks and orders the inputs; a column named twice,
    /// missing or a target is refused, naming it.
    #[test]
    fn input_columns_are_picked_in_the_order_named() {
        let header: Vec<String> = ["a", "b", "c", "y"].iter().map(|s| s.to_string()).collect();
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let cols = training_columns(&header, Some("y"), Some(&names(&["c", "a"])), "t.csv");
        assert_eq!(cols.unwrap(), vec![2, 0, 3]);
        assert_eq!(
            training_columns(&header, None, None, "t.csv").unwrap(),
            vec![0, 1, 2, 3]
        );
        for (list, says) in [
            (&["a", "a"][..], "names column 'a' twice"),
            (&["a", "d"][..], "no column named 'd'"),
            (&["a", "y"][..], "column 'y' is a target"),
            (&[][..], "names no column"),
        ] {
            let err = training_columns(&header, None, Some(&names(list)), "t.csv").unwrap_err();
            assert!(err.to_string().contains(says), "{err}");
        }
        let text = "a,b,c,y\n1,2,3,4\n2,3,4,5\n3,5,4,1\n";
        let data = Dataset::from_input_columns(
            &Input::from_bytes(text.as_bytes(), "t.csv").unwrap(),
            None,
            Some(&names(&["b"])),
        );
        assert_eq!(data.unwrap().input_names, vec!["b".to_string()]);
    }

    #[test]
    fn from_csv_reads_a_file_and_reports_a_missing_one() {
        let path = std::env::temp_dir().join(format!("sgp-data-test-{}.csv", std::process::id()));
        std::fs::write(&path, GOOD).unwrap();
        let ds = Dataset::from_csv(&path, None);
        let _ = std::fs::remove_file(&path);
        let ds = ds.unwrap();
        assert_eq!(ds.n_rows(), 4);
        assert!(ds.source.contains("sgp-data-test"));
        assert!(matches!(
            Dataset::from_csv(&path, None),
            Err(Error::Unreadable { .. })
        ));
    }

    #[test]
    fn subset_keeps_the_transform_and_checks_indices() {
        let ds = parse(GOOD, None).unwrap();
        let sub = ds.subset(&[3, 1]).unwrap();
        assert_eq!(sub.transform, ds.transform);
        assert_eq!(sub.raw_y().as_slice(), &[4.5, 1.5]);
        assert!(ds.subset(&[4]).is_err());
    }

    #[test]
    fn split_is_deterministic_disjoint_and_uses_the_training_transform() {
        let n = 20;
        let x = DMatrix::from_fn(n, 1, |i, _| i as f64);
        let y = DVector::from_fn(n, |i, _| (i * i) as f64);
        let ds = Dataset::from_raw(x, y, names(&["x"]), "y".into()).unwrap();
        let (train, test) = ds.split(0.25, 7).unwrap();
        let (train2, test2) = ds.split(0.25, 7).unwrap();
        assert_eq!(train, train2);
        assert_eq!(test, test2);
        assert_eq!((train.n_rows(), test.n_rows()), (15, 5));
        assert_eq!(test.transform, train.transform);
        assert_ne!(train.transform, ds.transform);
        let (m, s) = mean_and_std(train.x.iter());
        assert!(m.abs() < 1e-12 && (s - 1.0).abs() < 1e-12);
        let mut all: Vec<f64> = train
            .raw_x()
            .iter()
            .chain(test.raw_x().iter())
            .copied()
            .collect();
        all.sort_by(f64::total_cmp);
        let expected: Vec<f64> = (0..n).map(|i| i as f64).collect();
        for (a, b) in all.iter().zip(&expected) {
            assert!((a - b).abs() < 1e-9);
        }
        let (_, other) = ds.split(0.25, 8).unwrap();
        assert_ne!(other.raw_x(), test.raw_x());
    }

    #[test]
    fn split_rejects_degenerate_fractions() {
        let ds = parse(GOOD, None).unwrap();
        for f in [0.0, 1.0, -0.5, f64::NAN, 0.01, 0.9] {
            assert!(ds.split(f, 1).is_err(), "{f}");
        }
    }

    /// Every row is held out by exactly one fold, each fold's training
    /// part is the rest, standardised from its own rows as `split`'s is;
    /// the folds depend on the seed only.
    #[test]
    fn folds_hold_out_every_row_once() {
        let ds = crate::synth::dataset(crate::synth::Shape::Linear, 23, 0).expect("valid");
        let folds = ds.folds(4, 7).expect("folds");
        assert_eq!(folds.len(), 4);
        let raw_y = ds.raw_y();
        let mut held: Vec<f64> = Vec::new();
        for (train, test) in &folds {
            assert_eq!(train.n_rows() + test.n_rows(), 23);
            assert!((5..=6).contains(&test.n_rows()), "{}", test.n_rows());
            assert!(train.y.mean().abs() < 1e-12, "re-standardised");
            assert_eq!(test.transform, train.transform);
            held.extend(test.raw_y().iter());
        }
        held.sort_by(f64::total_cmp);
        let mut all: Vec<f64> = raw_y.iter().copied().collect();
        all.sort_by(f64::total_cmp);
        assert_eq!(held.len(), all.len());
        for (a, b) in held.iter().zip(&all) {
            assert!((a - b).abs() < 1e-9 * b.abs().max(1.0), "{a} vs {b}");
        }
        let again = ds.folds(4, 7).expect("folds");
        let other = ds.folds(4, 8).expect("folds");
        assert_eq!(again[0].1.raw_y(), folds[0].1.raw_y());
        assert_ne!(other[0].1.raw_y(), folds[0].1.raw_y());
        for (k, n) in [(1, 23), (4, 5)] {
            let small = crate::synth::dataset(crate::synth::Shape::Linear, n, 0).expect("valid");
            let err = small.folds(k, 0).expect_err("too few");
            assert!(err.to_string().contains("folds"), "{err}");
        }
    }

    #[test]
    fn read_inputs_picks_columns_by_name_in_any_order() {
        let text = "id,y,b,a\nfoo,1,10,1\nbar,2,20,2\n";
        let x = input(text).read_inputs(&names(&["a", "b"])).unwrap();
        assert_eq!(x, DMatrix::from_row_slice(2, 2, &[1.0, 10.0, 2.0, 20.0]));
        let (x, y) = input(text)
            .read_inputs_and_target(&names(&["b"]), "y")
            .unwrap();
        assert_eq!(x.as_slice(), &[10.0, 20.0]);
        assert_eq!(y.as_slice(), &[1.0, 2.0]);
    }

    #[test]
    fn read_inputs_reports_missing_columns_and_bad_cells() {
        let text = "a,c\n1,2\n";
        let e = input(text).read_inputs(&names(&["a", "b"]));
        let m = format!("{:?}", e);
        assert!(
            m.contains("p.csv: no column named 'b'; available columns: a, c"),
            "{m}"
        );
        let e = input(text).read_inputs_and_target(&names(&["a"]), "y");
        assert!(format!("{e:?}").contains("no column named 'y'"));
        let e = input("a\n1\ninf\n").read_inputs(&names(&["a"]));
        assert!(format!("{e:?}").contains("line 3 (data row 2), column 'a'"));
        let e = input("a\n").read_inputs(&names(&["a"]));
        assert!(format!("{e:?}").contains("no data rows"));
    }

    #[test]
    fn transform_round_trips() {
        let ds = parse(GOOD, None).unwrap();
        let t = &ds.transform;
        assert!((t.unapply_x(&t.apply_x(&ds.raw_x())) - ds.raw_x()).amax() < 1e-12);
        assert!((t.unapply_var(1.0) - t.y_scale * t.y_scale).abs() < 1e-12);
    }
}
