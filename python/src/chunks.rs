//! The pass over every row of a streamed fit as bytes that pickle: a fitted
//! basis ([`StreamedBasis`]), the sums of a block of raw rows on it, and
//! their merge ([`PosteriorSums`]), so that any engine's map and reduce can
//! run the pass (the library's code on each worker; postcard between them).

use nalgebra::DMatrix;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde::{Deserialize, Serialize};
use sgp_runtime::Kernel;
use sgp_trainer::data::Standardisation;
use sgp_trainer::fit::streamed_basis::StreamedBasis;
use sgp_trainer::model::features::PseudoInputs;
use sgp_trainer::model::inference::fitc::FitcConfig;
use sgp_trainer::model::inference::Approximation;
use sgp_trainer::model::kernel::KernelParams;
use sgp_trainer::model::posterior_sums::PosteriorSums;
use sgp_trainer::numerics::linalg::JitterPolicy;

use crate::arrays::{matrix, vector};
use crate::errors::IntoPy;

/// Every field of a [`StreamedBasis`], and the names of a raw row's
/// columns.
#[derive(Serialize, Deserialize)]
pub(crate) struct BasisBytes {
    z: (usize, usize, Vec<f64>),
    log_lengthscales: Vec<f64>,
    log_signal_var: f64,
    log_noise_excess: f64,
    noise_floor: f64,
    kernel: Kernel,
    jitter: (f64, f64, f64),
    fitc_chunk_rows: usize,
    vfe: bool,
    transform: (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, f64, f64),
    keep: Vec<usize>,
    inputs: usize,
    chunk_rows: usize,
    /// Input columns of a raw row, in order, then the target column.
    pub(crate) names: (Vec<String>, String),
}

impl BasisBytes {
    pub(crate) fn new(b: &StreamedBasis, names: (Vec<String>, String)) -> Self {
        let z = b.features.z();
        let (k, c, t) = (&b.kernel, &b.config, &b.transform);
        BasisBytes {
            z: (z.nrows(), z.ncols(), z.as_slice().to_vec()),
            log_lengthscales: k.log_lengthscales.clone(),
            log_signal_var: k.log_signal_var,
            log_noise_excess: k.log_noise_excess,
            noise_floor: k.noise_floor,
            kernel: k.kernel,
            jitter: (c.jitter.initial, c.jitter.max, c.jitter.factor),
            fitc_chunk_rows: c.chunk_rows,
            vfe: c.approximation == Approximation::Vfe,
            transform: (
                t.x_mean.clone(),
                t.x_scale.clone(),
                t.x_min.clone(),
                t.x_max.clone(),
                t.y_mean,
                t.y_scale,
            ),
            keep: b.keep.clone(),
            inputs: b.inputs,
            chunk_rows: b.chunk_rows,
            names,
        }
    }

    pub(crate) fn basis(self) -> PyResult<StreamedBasis> {
        let (rows, cols, z) = self.z;
        if z.len() != rows * cols {
            return Err(corrupt("basis"));
        }
        let (x_mean, x_scale, x_min, x_max, y_mean, y_scale) = self.transform;
        let (initial, max, factor) = self.jitter;
        Ok(StreamedBasis {
            features: PseudoInputs::new(DMatrix::from_vec(rows, cols, z)).py_err()?,
            kernel: KernelParams {
                log_lengthscales: self.log_lengthscales,
                log_signal_var: self.log_signal_var,
                log_noise_excess: self.log_noise_excess,
                noise_floor: self.noise_floor,
                kernel: self.kernel,
            },
            config: FitcConfig {
                jitter: JitterPolicy {
                    initial,
                    max,
                    factor,
                },
                chunk_rows: self.fitc_chunk_rows,
                approximation: if self.vfe {
                    Approximation::Vfe
                } else {
                    Approximation::Fitc
                },
            },
            transform: Standardisation {
                x_mean,
                x_scale,
                x_min,
                x_max,
                y_mean,
                y_scale,
            },
            keep: self.keep,
            inputs: self.inputs,
            chunk_rows: self.chunk_rows,
        })
    }
}

fn corrupt(what: &str) -> PyErr {
    PyValueError::new_err(format!(
        "these bytes are no streamed fit's {what} (corrupted, or from another sgp version)"
    ))
}

pub(crate) fn encode<T: Serialize>(value: &T) -> PyResult<Vec<u8>> {
    postcard::to_allocvec(value).map_err(|e| PyValueError::new_err(format!("encoding: {e}")))
}

fn decode_sums(bytes: &[u8]) -> PyResult<PosteriorSums> {
    postcard::from_bytes(bytes).map_err(|_| corrupt("sums"))
}

/// The sums of the `n x d` raw rows `x` (the basis's input columns, in its
/// order) with targets `y`, on the basis `basis`, as bytes; labelled as
/// part `part` of the rows where given ([`PosteriorSums::of_part`]).
#[pyfunction]
#[pyo3(signature = (basis, x, n, d, y, part=None))]
pub(crate) fn basis_sums<'py>(
    py: Python<'py>,
    basis: &[u8],
    x: &[u8],
    n: usize,
    d: usize,
    y: &[u8],
    part: Option<u64>,
) -> PyResult<Bound<'py, PyBytes>> {
    let decoded: BasisBytes = postcard::from_bytes(basis).map_err(|_| corrupt("basis"))?;
    let basis = decoded.basis()?;
    let x = matrix(x, n, d, "X")?;
    let y = vector(y, n, "y")?;
    let mut sums = py.detach(|| basis.sums(&x, &y)).py_err()?;
    if let Some(part) = part {
        sums = sums.of_part(part);
    }
    Ok(PyBytes::new(py, &encode(&sums)?))
}

/// The sums of two disjoint sets of rows, merged: `a` then `b`.
#[pyfunction]
pub(crate) fn merge_sums<'py>(
    py: Python<'py>,
    a: &[u8],
    b: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let mut sums = decode_sums(a)?;
    sums.merge(&decode_sums(b)?).py_err()?;
    Ok(PyBytes::new(py, &encode(&sums)?))
}

/// Rows summed in the sums `sums`.
#[pyfunction]
pub(crate) fn sums_rows(sums: &[u8]) -> PyResult<u64> {
    Ok(decode_sums(sums)?.rows)
}

/// The sums `sums`, labelled as those of part `part` of the rows
/// ([`PosteriorSums::of_part`]).
#[pyfunction]
pub(crate) fn sums_of_part<'py>(
    py: Python<'py>,
    sums: &[u8],
    part: u64,
) -> PyResult<Bound<'py, PyBytes>> {
    let sums = decode_sums(sums)?.of_part(part);
    Ok(PyBytes::new(py, &encode(&sums)?))
}

/// Decodes the sums of a pass (for [`crate::streamed`]).
pub(crate) fn sums_from_bytes(bytes: &[u8]) -> PyResult<PosteriorSums> {
    decode_sums(bytes)
}
