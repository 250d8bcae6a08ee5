//! Arrays across the boundary: C-ordered little-endian `f64` bytes plus a
//! shape, checked here so that a caller bypassing the Python package gets
//! an error, not a wrong matrix.

use nalgebra::{DMatrix, DVector};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

const F64: usize = std::mem::size_of::<f64>();

fn values(bytes: &[u8], expected: usize, what: &str) -> PyResult<Vec<f64>> {
    if bytes.len() != expected * F64 {
        return Err(PyValueError::new_err(format!(
            "{what}: {} bytes, expected {expected} float64 values ({} bytes)",
            bytes.len(),
            expected * F64
        )));
    }
    Ok(bytes
        .chunks_exact(F64)
        .map(|c| {
            let mut word = [0u8; F64];
            word.copy_from_slice(c);
            f64::from_le_bytes(word)
        })
        .collect())
}

/// A row-major `rows x cols` matrix.
pub(crate) fn matrix(bytes: &[u8], rows: usize, cols: usize, what: &str) -> PyResult<DMatrix<f64>> {
    let v = values(bytes, rows * cols, what)?;
    Ok(DMatrix::from_row_slice(rows, cols, &v))
}

/// A vector of `len` values.
pub(crate) fn vector(bytes: &[u8], len: usize, what: &str) -> PyResult<DVector<f64>> {
    Ok(DVector::from_vec(values(bytes, len, what)?))
}

/// Mean, variance and (classifiers) probability, as float64 bytes.
pub(crate) type Predictions<'py> = (
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Option<Bound<'py, PyBytes>>,
);

/// `values` as little-endian `f64` bytes, for `numpy.frombuffer`.
pub(crate) fn to_bytes<'py>(
    py: Python<'py>,
    values: impl Iterator<Item = f64>,
) -> Bound<'py, PyBytes> {
    let bytes: Vec<u8> = values.flat_map(f64::to_le_bytes).collect();
    PyBytes::new(py, &bytes)
}
