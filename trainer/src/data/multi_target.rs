//! Data with several target columns (`sgp fit --target a,b,c`): one
//! [`Dataset`] per target, all with the same rows, inputs and input
//! standardisation, each with its own target mean and scale.

use std::path::Path;

use nalgebra::{DMatrix, DVector};

use crate::data::{build, read_inputs_and_targets, Dataset};
use crate::files::Input;
use crate::{Error, Result};

/// The targets of a multi-output regression, each a [`Dataset`] over the
/// same inputs (so the same `x` and x-standardisation).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct MultiTargetData {
    outputs: Vec<Dataset>,
}

impl MultiTargetData {
    /// Reads a CSV file: the columns `targets` are the outputs, in that
    /// order, and every other column is an input. A bad cell in any of
    /// them is an error naming the file, line and column.
    ///
    /// # Errors
    /// [`Error::BadInput`] for fewer than one target, a target named twice
    /// or missing, and every error of [`Dataset::from_csv`].
    pub fn from_csv(path: impl AsRef<Path>, targets: &[String]) -> Result<Self> {
        Self::from_input(&Input::open(path)?, targets)
    }

    /// As [`MultiTargetData::from_csv`], from an input already open (CSV or
    /// Parquet).
    ///
    /// # Errors
    /// As [`MultiTargetData::from_csv`].
    pub fn from_input(input: &Input, targets: &[String]) -> Result<Self> {
        Self::from_input_columns(input, targets, None)
    }

    /// As [`MultiTargetData::from_input`], with `inputs` (if given) the
    /// input columns, in that order (`--inputs a,b,c`).
    ///
    /// # Errors
    /// As [`MultiTargetData::from_csv`], and for `inputs` as
    /// [`Dataset::from_input_columns`].
    pub fn from_input_columns(
        input: &Input,
        targets: &[String],
        inputs: Option<&[String]>,
    ) -> Result<Self> {
        let source = input.name().to_owned();
        check_target_names(&source, targets)?;
        let (names, x, y) = read_inputs_and_targets(input, targets, inputs)?;
        Self::per_target(targets, &y, |name, col| {
            build(&source, x.clone(), col, names.clone(), name)
        })
    }

    /// Builds the data from values in raw units (N x D inputs, N x P
    /// targets), validated as [`Dataset::from_raw`] validates one target.
    ///
    /// # Errors
    /// As [`Dataset::from_raw`], and for target names that do not match the
    /// columns of `y` or repeat.
    pub fn from_raw(
        x: DMatrix<f64>,
        y: DMatrix<f64>,
        input_names: Vec<String>,
        target_names: &[String],
    ) -> Result<Self> {
        const SOURCE: &str = "in-memory data";
        check_target_names(SOURCE, target_names)?;
        if y.ncols() != target_names.len() {
            return Err(Error::BadInput(format!(
                "{SOURCE}: {} target columns but {} names",
                y.ncols(),
                target_names.len()
            )));
        }
        Self::per_target(target_names, &y, |name, col| {
            Dataset::from_raw(x.clone(), col, input_names.clone(), name)
        })
    }

    /// One data set per target column of `y`, made by `make(name, column)`.
    fn per_target(
        targets: &[String],
        y: &DMatrix<f64>,
        make: impl Fn(String, DVector<f64>) -> Result<Dataset>,
    ) -> Result<Self> {
        let outputs = targets
            .iter()
            .zip(y.column_iter())
            .map(|(name, col)| make(name.clone(), col.into_owned()))
            .collect::<Result<_>>()?;
        Ok(MultiTargetData { outputs })
    }

    /// The data of one output per target, in target order.
    pub fn outputs(&self) -> &[Dataset] {
        &self.outputs
    }

    /// The first output's data (inputs, names and x-standardisation are
    /// those of every output).
    pub fn first(&self) -> &Dataset {
        // `from_csv` and `from_raw` refuse an empty list of targets.
        &self.outputs[0]
    }

    /// Number of outputs `P`.
    pub fn n_outputs(&self) -> usize {
        self.outputs.len()
    }

    /// The target names, in output order.
    pub fn target_names(&self) -> Vec<String> {
        self.outputs.iter().map(|d| d.target_name.clone()).collect()
    }

    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.first().n_rows()
    }

    /// Every output split as [`Dataset::split`] splits one: the same rows
    /// go to the same part for every output.
    ///
    /// # Errors
    /// As [`Dataset::split`].
    pub fn split(&self, test_fraction: f64, seed: u64) -> Result<(Self, Self)> {
        let parts: Vec<(Dataset, Dataset)> = self
            .outputs
            .iter()
            .map(|d| d.split(test_fraction, seed))
            .collect::<Result<_>>()?;
        let (train, test) = parts.into_iter().unzip();
        Ok((
            MultiTargetData { outputs: train },
            MultiTargetData { outputs: test },
        ))
    }
}

/// The outputs of a fit: data sets over the same inputs, one per target (a
/// single [`Dataset`] is one output). What `crate::fit::fit` takes.
pub trait Outputs {
    /// The data of each output, in output order.
    fn outputs(&self) -> &[Dataset];
}

impl Outputs for Dataset {
    fn outputs(&self) -> &[Dataset] {
        std::slice::from_ref(self)
    }
}

impl Outputs for [Dataset] {
    fn outputs(&self) -> &[Dataset] {
        self
    }
}

impl Outputs for Vec<Dataset> {
    fn outputs(&self) -> &[Dataset] {
        self
    }
}

impl Outputs for MultiTargetData {
    fn outputs(&self) -> &[Dataset] {
        MultiTargetData::outputs(self)
    }
}

/// Splits `--target a,b,c` into names, trimmed.
pub fn parse_target_list(list: &str) -> Vec<String> {
    list.split(',').map(|t| t.trim().to_string()).collect()
}

pub(crate) fn check_target_names(source: &str, targets: &[String]) -> Result<()> {
    if targets.is_empty() {
        return Err(Error::BadInput(format!("{source}: no target column named")));
    }
    for (i, name) in targets.iter().enumerate() {
        if name.is_empty() {
            return Err(Error::BadInput(format!(
                "{source}: target {} of the list is an empty name (--target a,b,c)",
                i + 1
            )));
        }
        if targets[..i].contains(name) {
            return Err(Error::BadInput(format!(
                "{source}: target '{name}' is named twice"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// A CSV file in the temporary directory, removed when dropped.
    struct Csv(PathBuf);

    impl Csv {
        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Csv {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn csv(text: &str) -> Csv {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("sgp-multi-target-{}-{n}.csv", std::process::id()));
        std::fs::write(&path, text).unwrap();
        Csv(path)
    }

    fn names(list: &str) -> Vec<String> {
        parse_target_list(list)
    }

    #[test]
    fn reads_targets_in_the_order_asked_and_the_rest_as_inputs() {
        let f = csv("a,u,b,v\n1,10,2,5\n2,20,1,7\n3,30,4,6\n");
        let data = MultiTargetData::from_csv(f.path(), &names("v, a")).unwrap();
        assert_eq!(data.n_outputs(), 2);
        assert_eq!(data.target_names(), names("v,a"));
        assert_eq!(data.first().input_names, names("u,b"));
        assert_eq!(data.outputs()[0].raw_y().as_slice(), &[5.0, 7.0, 6.0]);
        assert_eq!(data.outputs()[1].raw_y().as_slice(), &[1.0, 2.0, 3.0]);
        assert_eq!(data.outputs()[0].x, data.outputs()[1].x);
        assert_eq!(data.n_rows(), 3);
    }

    #[test]
    fn a_bad_cell_in_any_target_names_file_line_and_column() {
        let f = csv("x,a,b\n1,2,3\n2,3,NaN\n3,1,2\n");
        let err = MultiTargetData::from_csv(f.path(), &names("a,b")).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("line 3") && msg.contains("column 'b'"),
            "{msg}"
        );
        assert!(msg.contains(&f.path().display().to_string()), "{msg}");
    }

    #[test]
    fn bad_target_lists_are_clear_errors() {
        let f = csv("x,a,b\n1,2,3\n2,3,1\n3,1,2\n");
        for (list, expected) in [
            ("a,a", "named twice"),
            ("a,,b", "empty name"),
            ("a,c", "no column named 'c'"),
            ("x,a,b", "need at least one input"),
        ] {
            let err = MultiTargetData::from_csv(f.path(), &names(list)).unwrap_err();
            assert!(err.to_string().contains(expected), "{list}: {err}");
        }
        let f = csv("x,a,b\n1,2,3\n2,2,1\n3,2,2\n");
        let err = MultiTargetData::from_csv(f.path(), &names("a,b")).unwrap_err();
        assert!(err.to_string().contains("'a'"), "{err}");
    }

    #[test]
    fn split_sends_each_row_to_the_same_part_for_every_output() {
        let x = DMatrix::from_fn(20, 1, |i, _| i as f64);
        let y = DMatrix::from_fn(20, 2, |i, j| (i * (j + 1)) as f64 + 0.5 * j as f64);
        let data = MultiTargetData::from_raw(x, y, names("x"), &names("p,q")).unwrap();
        let (train, test) = data.split(0.25, 3).unwrap();
        assert_eq!(test.n_rows(), 5);
        for part in [&train, &test] {
            let (a, b) = (&part.outputs()[0], &part.outputs()[1]);
            assert_eq!(a.raw_x(), b.raw_x());
            for (xa, yb) in a.raw_x().iter().zip(b.raw_y().iter()) {
                assert!((2.0 * xa + 0.5 - yb).abs() < 1e-9);
            }
        }
    }
}
