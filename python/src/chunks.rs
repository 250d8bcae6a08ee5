//! The pass over every row of a streamed fit as bytes that pickle: a fitted
//! basis ([`PassBasis`]: a regression's [`StreamedBasis`], a classifier's
//! [`ClassifierBasis`] at its round's `q(u)`, or one basis per output of
//! several targets), the sums of a block of raw rows on it, and their merge
//! ([`PassSums`]), so that any engine's map and reduce can run the pass
//! (the library's code on each worker; postcard between them).

use nalgebra::{DMatrix, DVector};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde::{Deserialize, Serialize};
use sgp_trainer::fit::streamed_basis::StreamedBasis;
use sgp_trainer::fit::streamed_classify::{ClassifierBasis, SiteSums};
use sgp_trainer::model::posterior_sums::PosteriorSums;

use crate::arrays::matrix;
use crate::errors::{corrupt, IntoPy};

/// The basis of one pass over every row, whatever the fit.
#[derive(Serialize, Deserialize)]
pub(crate) enum PassBasis {
    /// One target's regression ([`StreamedBasis::to_bytes`]).
    Regression(Vec<u8>),
    /// A classifier, at the `q(u)` of its round (numbered from 0;
    /// [`ClassifierBasis::to_bytes`]).
    Classifier(Vec<u8>, u32),
    /// Several targets: each output's basis, in output order.
    Outputs(Vec<Vec<u8>>),
}

/// The sums of a block of rows on a [`PassBasis`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum PassSums {
    /// One target's regression.
    Regression(PosteriorSums),
    /// A classifier's round (numbered from 0).
    Classifier(SiteSums, u32),
    /// Several targets: each output's sums, in output order.
    Outputs(Vec<PosteriorSums>),
}

/// [`PassSums`] as bytes.
#[derive(Serialize, Deserialize)]
enum SumsBytes {
    Regression(PosteriorSums),
    Classifier(Vec<u8>, u32),
    Outputs(Vec<PosteriorSums>),
}

impl PassSums {
    fn bytes(&self) -> PyResult<SumsBytes> {
        Ok(match self {
            PassSums::Regression(s) => SumsBytes::Regression(s.clone()),
            PassSums::Outputs(s) => SumsBytes::Outputs(s.clone()),
            PassSums::Classifier(s, round) => SumsBytes::Classifier(s.to_bytes().py_err()?, *round),
        })
    }

    pub(crate) fn from_bytes(bytes: &[u8]) -> PyResult<PassSums> {
        let decoded: SumsBytes =
            postcard::from_bytes(bytes).map_err(|_| corrupt("streamed fit's sums"))?;
        Ok(match decoded {
            SumsBytes::Regression(s) => PassSums::Regression(s),
            SumsBytes::Outputs(s) => PassSums::Outputs(s),
            SumsBytes::Classifier(s, round) => {
                PassSums::Classifier(SiteSums::from_bytes(&s).py_err()?, round)
            }
        })
    }

    pub(crate) fn encode(&self) -> PyResult<Vec<u8>> {
        encode(&self.bytes()?)
    }

    /// Rows summed.
    pub(crate) fn rows(&self) -> u64 {
        match self {
            PassSums::Regression(s) => s.rows,
            PassSums::Classifier(s, _) => s.rows,
            PassSums::Outputs(s) => s.first().map_or(0, |s| s.rows),
        }
    }

    fn of_part(self, part: u64) -> PassSums {
        match self {
            PassSums::Regression(s) => PassSums::Regression(s.of_part(part)),
            PassSums::Classifier(s, round) => PassSums::Classifier(s.of_part(part), round),
            PassSums::Outputs(s) => {
                PassSums::Outputs(s.into_iter().map(|s| s.of_part(part)).collect())
            }
        }
    }

    fn merge(&mut self, other: &PassSums) -> sgp_trainer::Result<()> {
        match (self, other) {
            (PassSums::Regression(a), PassSums::Regression(b)) => a.merge(b),
            (PassSums::Classifier(a, r), PassSums::Classifier(b, q)) if r == q => a.merge(b),
            (PassSums::Classifier(_, r), PassSums::Classifier(_, q)) => {
                Err(sgp_trainer::Error::BadInput(format!(
                    "cannot merge a classifier's sums of round {r} with those of round {q}: \
                     every part of a round is summed on that round's basis"
                )))
            }
            (PassSums::Outputs(a), PassSums::Outputs(b)) if a.len() == b.len() => {
                a.iter_mut().zip(b).try_for_each(|(a, b)| a.merge(b))
            }
            _ => Err(sgp_trainer::Error::BadInput(
                "cannot merge the sums of two different fits (a regression's, a classifier's, \
                 several targets')"
                    .into(),
            )),
        }
    }
}

pub(crate) fn encode<T: Serialize>(value: &T) -> PyResult<Vec<u8>> {
    postcard::to_allocvec(value).map_err(|e| PyValueError::new_err(format!("encoding: {e}")))
}

/// The sums of the `n x d` raw rows `x` (the basis's input columns, in its
/// order) with targets `y` (`n x p`: a column per target), on the basis
/// `basis`, as bytes; labelled as part `part` of the rows where given
/// ([`PosteriorSums::of_part`]).
#[pyfunction]
#[pyo3(signature = (basis, x, n, d, y, part=None, p=1))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn basis_sums<'py>(
    py: Python<'py>,
    basis: &[u8],
    x: &[u8],
    n: usize,
    d: usize,
    y: &[u8],
    part: Option<u64>,
    p: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let decoded: PassBasis =
        postcard::from_bytes(basis).map_err(|_| corrupt("streamed fit's basis"))?;
    let x = matrix(x, n, d, "X")?;
    let y = matrix(y, n, p, "y")?;
    let one = |y: &DMatrix<f64>| -> PyResult<DVector<f64>> {
        if y.ncols() != 1 {
            return Err(PyValueError::new_err(format!(
                "y has {} columns; this fit has one target",
                y.ncols()
            )));
        }
        Ok(y.column(0).into_owned())
    };
    let mut sums = match decoded {
        PassBasis::Regression(b) => {
            let (basis, y) = (StreamedBasis::from_bytes(&b).py_err()?, one(&y)?);
            PassSums::Regression(py.detach(|| basis.sums(&x, &y)).py_err()?)
        }
        PassBasis::Classifier(b, round) => {
            let (basis, y) = (ClassifierBasis::from_bytes(&b).py_err()?, one(&y)?);
            PassSums::Classifier(py.detach(|| basis.sums(&x, &y)).py_err()?, round)
        }
        PassBasis::Outputs(bases) => {
            let bases = bases
                .into_iter()
                .map(|b| StreamedBasis::from_bytes(&b).py_err())
                .collect::<PyResult<Vec<_>>>()?;
            let bases: Vec<&StreamedBasis> = bases.iter().collect();
            PassSums::Outputs(
                py.detach(|| StreamedBasis::outputs_sums(&bases, &x, &y))
                    .py_err()?,
            )
        }
    };
    if let Some(part) = part {
        sums = sums.of_part(part);
    }
    Ok(PyBytes::new(py, &sums.encode()?))
}

/// The sums of two disjoint sets of rows, merged: `a` then `b`.
#[pyfunction]
pub(crate) fn merge_sums<'py>(
    py: Python<'py>,
    a: &[u8],
    b: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let mut sums = PassSums::from_bytes(a)?;
    sums.merge(&PassSums::from_bytes(b)?).py_err()?;
    Ok(PyBytes::new(py, &sums.encode()?))
}

/// Rows summed in the sums `sums`.
#[pyfunction]
pub(crate) fn sums_rows(sums: &[u8]) -> PyResult<u64> {
    Ok(PassSums::from_bytes(sums)?.rows())
}

/// The sums `sums`, labelled as those of part `part` of the rows
/// ([`PosteriorSums::of_part`]).
#[pyfunction]
pub(crate) fn sums_of_part<'py>(
    py: Python<'py>,
    sums: &[u8],
    part: u64,
) -> PyResult<Bound<'py, PyBytes>> {
    let sums = PassSums::from_bytes(sums)?.of_part(part);
    Ok(PyBytes::new(py, &sums.encode()?))
}
