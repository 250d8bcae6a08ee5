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
use sgp_runtime::Kernel;
use sgp_trainer::data::Standardisation;
use sgp_trainer::fit::streamed_basis::StreamedBasis;
use sgp_trainer::fit::streamed_classify::{ClassifierBasis, SiteSums};
use sgp_trainer::model::features::PseudoInputs;
use sgp_trainer::model::inference::fitc::FitcConfig;
use sgp_trainer::model::inference::svgp::{SvgpConfig, Variational};
use sgp_trainer::model::inference::Approximation;
use sgp_trainer::model::kernel::KernelParams;
use sgp_trainer::model::posterior_sums::PosteriorSums;
use sgp_trainer::numerics::linalg::JitterPolicy;
use sgp_trainer::options::streamed_outputs::outputs_sums;

use crate::arrays::matrix;
use crate::errors::IntoPy;

/// A column-major matrix: rows, columns, values.
type MatrixBytes = (usize, usize, Vec<f64>);

fn matrix_bytes(m: &DMatrix<f64>) -> MatrixBytes {
    (m.nrows(), m.ncols(), m.as_slice().to_vec())
}

fn from_matrix_bytes((rows, cols, values): MatrixBytes, what: &str) -> PyResult<DMatrix<f64>> {
    if values.len() != rows * cols {
        return Err(corrupt(what));
    }
    Ok(DMatrix::from_vec(rows, cols, values))
}

/// What every basis shares: pseudo-inputs, kernel, standardisation, the
/// raw row's shape.
#[derive(Serialize, Deserialize)]
struct Common {
    z: MatrixBytes,
    log_lengthscales: Vec<f64>,
    log_signal_var: f64,
    log_noise_excess: f64,
    noise_floor: f64,
    kernel: Kernel,
    jitter: (f64, f64, f64),
    transform: (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, f64, f64),
    keep: Vec<usize>,
    inputs: usize,
    chunk_rows: usize,
}

/// The parts of [`Common`], decoded.
struct Decoded {
    features: PseudoInputs,
    kernel: KernelParams,
    jitter: JitterPolicy,
    transform: Standardisation,
    keep: Vec<usize>,
    inputs: usize,
    chunk_rows: usize,
}

impl Common {
    #[allow(clippy::too_many_arguments)]
    fn new(
        features: &PseudoInputs,
        k: &KernelParams,
        jitter: &JitterPolicy,
        t: &Standardisation,
        (keep, inputs, chunk_rows): (&[usize], usize, usize),
    ) -> Self {
        Common {
            z: matrix_bytes(features.z()),
            log_lengthscales: k.log_lengthscales.clone(),
            log_signal_var: k.log_signal_var,
            log_noise_excess: k.log_noise_excess,
            noise_floor: k.noise_floor,
            kernel: k.kernel,
            jitter: (jitter.initial, jitter.max, jitter.factor),
            transform: (
                t.x_mean.clone(),
                t.x_scale.clone(),
                t.x_min.clone(),
                t.x_max.clone(),
                t.y_mean,
                t.y_scale,
            ),
            keep: keep.to_vec(),
            inputs,
            chunk_rows,
        }
    }

    fn decoded(self) -> PyResult<Decoded> {
        let z = from_matrix_bytes(self.z, "basis")?;
        let (x_mean, x_scale, x_min, x_max, y_mean, y_scale) = self.transform;
        let (initial, max, factor) = self.jitter;
        Ok(Decoded {
            features: PseudoInputs::new(z).py_err()?,
            kernel: KernelParams {
                log_lengthscales: self.log_lengthscales,
                log_signal_var: self.log_signal_var,
                log_noise_excess: self.log_noise_excess,
                noise_floor: self.noise_floor,
                kernel: self.kernel,
            },
            jitter: JitterPolicy {
                initial,
                max,
                factor,
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

/// Every field of a [`StreamedBasis`].
#[derive(Serialize, Deserialize)]
pub(crate) struct BasisBytes {
    common: Common,
    fitc_chunk_rows: usize,
    vfe: bool,
}

impl BasisBytes {
    pub(crate) fn new(b: &StreamedBasis) -> Self {
        let shape = (b.keep.as_slice(), b.inputs, b.chunk_rows);
        BasisBytes {
            common: Common::new(
                &b.features,
                &b.kernel,
                &b.config.jitter,
                &b.transform,
                shape,
            ),
            fitc_chunk_rows: b.config.chunk_rows,
            vfe: b.config.approximation == Approximation::Vfe,
        }
    }

    fn basis(self) -> PyResult<StreamedBasis> {
        let d = self.common.decoded()?;
        Ok(StreamedBasis {
            features: d.features,
            kernel: d.kernel,
            config: FitcConfig {
                jitter: d.jitter,
                chunk_rows: self.fitc_chunk_rows,
                approximation: if self.vfe {
                    Approximation::Vfe
                } else {
                    Approximation::Fitc
                },
            },
            transform: d.transform,
            keep: d.keep,
            inputs: d.inputs,
            chunk_rows: d.chunk_rows,
        })
    }
}

/// Every field of a [`ClassifierBasis`].
#[derive(Serialize, Deserialize)]
pub(crate) struct ClassifierBytes {
    common: Common,
    svgp_chunk_rows: usize,
    /// Each latent's `q(v)`: mean, factor, bias.
    qs: Vec<(Vec<f64>, MatrixBytes, f64)>,
    classes: Vec<f64>,
    known: Vec<f64>,
}

impl ClassifierBytes {
    pub(crate) fn new(b: &ClassifierBasis) -> Self {
        let shape = (b.keep.as_slice(), b.inputs, b.chunk_rows);
        ClassifierBytes {
            common: Common::new(
                &b.features,
                &b.kernel,
                &b.config.jitter,
                &b.transform,
                shape,
            ),
            svgp_chunk_rows: b.config.chunk_rows,
            qs: b
                .qs
                .iter()
                .map(|q| (q.mean.as_slice().to_vec(), matrix_bytes(&q.sqrt), q.bias))
                .collect(),
            classes: b.classes.clone(),
            known: b.known.clone(),
        }
    }

    pub(crate) fn basis(self) -> PyResult<ClassifierBasis> {
        let d = self.common.decoded()?;
        let qs = self
            .qs
            .into_iter()
            .map(|(mean, sqrt, bias)| {
                Ok(Variational {
                    mean: DVector::from_vec(mean),
                    sqrt: from_matrix_bytes(sqrt, "basis")?,
                    bias,
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(ClassifierBasis {
            features: d.features,
            kernel: d.kernel,
            config: SvgpConfig {
                jitter: d.jitter,
                chunk_rows: self.svgp_chunk_rows,
            },
            qs,
            classes: self.classes,
            known: self.known,
            transform: d.transform,
            keep: d.keep,
            inputs: d.inputs,
            chunk_rows: d.chunk_rows,
        })
    }
}

/// The basis of one pass over every row, whatever the fit.
#[derive(Serialize, Deserialize)]
pub(crate) enum PassBasis {
    /// One target's regression.
    Regression(BasisBytes),
    /// A classifier, at the `q(u)` of its round (numbered from 0).
    Classifier(ClassifierBytes, u32),
    /// Several targets: each output's basis, in output order.
    Outputs(Vec<BasisBytes>),
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

/// [`SiteSums`] as bytes.
#[derive(Serialize, Deserialize)]
struct SiteBytes {
    rows: u64,
    precision: Vec<MatrixBytes>,
    shift: Vec<Vec<f64>>,
    expected_log_lik: f64,
    parts: Vec<(u64, u64)>,
}

/// [`PassSums`] as bytes.
#[derive(Serialize, Deserialize)]
enum SumsBytes {
    Regression(PosteriorSums),
    Classifier(SiteBytes, u32),
    Outputs(Vec<PosteriorSums>),
}

impl PassSums {
    fn bytes(&self) -> SumsBytes {
        match self {
            PassSums::Regression(s) => SumsBytes::Regression(s.clone()),
            PassSums::Outputs(s) => SumsBytes::Outputs(s.clone()),
            PassSums::Classifier(s, round) => SumsBytes::Classifier(
                SiteBytes {
                    rows: s.rows,
                    precision: s.precision.iter().map(matrix_bytes).collect(),
                    shift: s.shift.iter().map(|v| v.as_slice().to_vec()).collect(),
                    expected_log_lik: s.expected_log_lik,
                    parts: s.parts.clone(),
                },
                *round,
            ),
        }
    }

    pub(crate) fn from_bytes(bytes: &[u8]) -> PyResult<PassSums> {
        let decoded: SumsBytes = postcard::from_bytes(bytes).map_err(|_| corrupt("sums"))?;
        Ok(match decoded {
            SumsBytes::Regression(s) => PassSums::Regression(s),
            SumsBytes::Outputs(s) => PassSums::Outputs(s),
            SumsBytes::Classifier(s, round) => PassSums::Classifier(
                SiteSums {
                    rows: s.rows,
                    precision: s
                        .precision
                        .into_iter()
                        .map(|m| from_matrix_bytes(m, "sums"))
                        .collect::<PyResult<_>>()?,
                    shift: s.shift.into_iter().map(DVector::from_vec).collect(),
                    expected_log_lik: s.expected_log_lik,
                    parts: s.parts,
                },
                round,
            ),
        })
    }

    pub(crate) fn encode(&self) -> PyResult<Vec<u8>> {
        encode(&self.bytes())
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

fn corrupt(what: &str) -> PyErr {
    PyValueError::new_err(format!(
        "these bytes are no streamed fit's {what} (corrupted, or from another sgp version)"
    ))
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
    let decoded: PassBasis = postcard::from_bytes(basis).map_err(|_| corrupt("basis"))?;
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
            let (basis, y) = (b.basis()?, one(&y)?);
            PassSums::Regression(py.detach(|| basis.sums(&x, &y)).py_err()?)
        }
        PassBasis::Classifier(b, round) => {
            let (basis, y) = (b.basis()?, one(&y)?);
            PassSums::Classifier(py.detach(|| basis.sums(&x, &y)).py_err()?, round)
        }
        PassBasis::Outputs(bases) => {
            let bases = bases
                .into_iter()
                .map(BasisBytes::basis)
                .collect::<PyResult<Vec<_>>>()?;
            let bases: Vec<&StreamedBasis> = bases.iter().collect();
            PassSums::Outputs(py.detach(|| outputs_sums(&bases, &x, &y)).py_err()?)
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
