//! The byte form of a streamed fit's pass: the fitted basis a worker sums
//! its rows on ([`StreamedBasis`], [`ClassifierBasis`]) and a classifier's
//! sums ([`SiteSums`]), so that any engine's map and reduce (Python's
//! `fit_chunks`, Dask) can run the pass with the library's own code on each
//! worker. postcard; the bytes of one sgp version, decoded and checked.

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

use super::streamed_basis::StreamedBasis;
use super::streamed_classify::{ClassifierBasis, SiteSums};
use crate::data::Standardisation;
use crate::model::features::PseudoInputs;
use crate::model::inference::fitc::FitcConfig;
use crate::model::inference::svgp::{SvgpConfig, Variational};
use crate::model::inference::Approximation;
use crate::model::kernel::KernelParams;
use crate::numerics::linalg::JitterPolicy;
use crate::{Error, Result};

/// A column-major matrix: rows, columns, values.
type MatrixBytes = (usize, usize, Vec<f64>);

fn matrix_bytes(m: &DMatrix<f64>) -> MatrixBytes {
    (m.nrows(), m.ncols(), m.as_slice().to_vec())
}

fn from_matrix_bytes((rows, cols, values): MatrixBytes, what: &str) -> Result<DMatrix<f64>> {
    if Some(values.len()) != rows.checked_mul(cols) {
        return Err(corrupt(what));
    }
    Ok(DMatrix::from_vec(rows, cols, values))
}

fn corrupt(what: &str) -> Error {
    Error::BadInput(format!(
        "these bytes are no streamed fit's {what} (corrupted, or from another sgp version)"
    ))
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    postcard::to_allocvec(value).map_err(|e| Error::Numerical(format!("encoding: {e}")))
}

fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8], what: &str) -> Result<T> {
    postcard::from_bytes(bytes).map_err(|_| corrupt(what))
}

/// What every basis shares: pseudo-inputs, kernel, standardisation, the
/// raw row's shape. postcard writes a struct as its fields in order, so
/// the kernel, jitter and standardisation derive their own bytes (the
/// same as when they were listed here field by field; a test holds them
/// to that layout).
#[derive(Serialize, Deserialize)]
struct Common {
    z: MatrixBytes,
    kernel: KernelParams,
    jitter: JitterPolicy,
    transform: Standardisation,
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
    fn new(
        features: &PseudoInputs,
        k: &KernelParams,
        jitter: &JitterPolicy,
        t: &Standardisation,
        (keep, inputs, chunk_rows): (&[usize], usize, usize),
    ) -> Self {
        Common {
            z: matrix_bytes(features.z()),
            kernel: k.clone(),
            jitter: *jitter,
            transform: t.clone(),
            keep: keep.to_vec(),
            inputs,
            chunk_rows,
        }
    }

    fn decoded(self) -> Result<Decoded> {
        let z = from_matrix_bytes(self.z, "basis")?;
        Ok(Decoded {
            features: PseudoInputs::new(z)?,
            kernel: self.kernel,
            jitter: self.jitter,
            transform: self.transform,
            keep: self.keep,
            inputs: self.inputs,
            chunk_rows: self.chunk_rows,
        })
    }
}

/// Every field of a [`StreamedBasis`].
#[derive(Serialize, Deserialize)]
struct BasisBytes {
    common: Common,
    fitc_chunk_rows: usize,
    vfe: bool,
}

/// Every field of a [`ClassifierBasis`].
#[derive(Serialize, Deserialize)]
struct ClassifierBytes {
    common: Common,
    svgp_chunk_rows: usize,
    /// Each latent's `q(v)`: mean, factor, bias.
    qs: Vec<(Vec<f64>, MatrixBytes, f64)>,
    classes: Vec<f64>,
    known: Vec<f64>,
}

/// Every field of [`SiteSums`].
#[derive(Serialize, Deserialize)]
struct SiteBytes {
    rows: u64,
    precision: Vec<MatrixBytes>,
    shift: Vec<Vec<f64>>,
    expected_log_lik: f64,
    parts: Vec<(u64, u64)>,
}

impl StreamedBasis {
    /// The basis as bytes a worker of the pass decodes with
    /// [`StreamedBasis::from_bytes`].
    ///
    /// # Errors
    /// [`Error::Numerical`] if it cannot be encoded.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let shape = (self.keep.as_slice(), self.inputs, self.chunk_rows);
        encode(&BasisBytes {
            common: Common::new(
                &self.features,
                &self.kernel,
                &self.config.jitter,
                &self.transform,
                shape,
            ),
            fitc_chunk_rows: self.config.chunk_rows,
            vfe: self.config.approximation == Approximation::Vfe,
        })
    }

    /// The basis [`StreamedBasis::to_bytes`] wrote.
    ///
    /// # Errors
    /// [`Error::BadInput`] for bytes that are not one.
    pub fn from_bytes(bytes: &[u8]) -> Result<StreamedBasis> {
        let b: BasisBytes = decode(bytes, "basis")?;
        let d = b.common.decoded()?;
        Ok(StreamedBasis {
            features: d.features,
            kernel: d.kernel,
            config: FitcConfig {
                jitter: d.jitter,
                chunk_rows: b.fitc_chunk_rows,
                approximation: if b.vfe {
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

impl ClassifierBasis {
    /// The basis at its round's `q(u)` as bytes a worker of the pass
    /// decodes with [`ClassifierBasis::from_bytes`].
    ///
    /// # Errors
    /// [`Error::Numerical`] if it cannot be encoded.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let shape = (self.keep.as_slice(), self.inputs, self.chunk_rows);
        encode(&ClassifierBytes {
            common: Common::new(
                &self.features,
                &self.kernel,
                &self.config.jitter,
                &self.transform,
                shape,
            ),
            svgp_chunk_rows: self.config.chunk_rows,
            qs: self
                .qs
                .iter()
                .map(|q| (q.mean.as_slice().to_vec(), matrix_bytes(&q.sqrt), q.bias))
                .collect(),
            classes: self.classes.clone(),
            known: self.known.clone(),
        })
    }

    /// The basis [`ClassifierBasis::to_bytes`] wrote.
    ///
    /// # Errors
    /// [`Error::BadInput`] for bytes that are not one.
    pub fn from_bytes(bytes: &[u8]) -> Result<ClassifierBasis> {
        let b: ClassifierBytes = decode(bytes, "basis")?;
        let d = b.common.decoded()?;
        let m = d.features.z().nrows();
        let qs =
            b.qs.into_iter()
                .map(|(mean, sqrt, bias)| {
                    let sqrt = from_matrix_bytes(sqrt, "basis")?;
                    if mean.len() != m || sqrt.shape() != (m, m) {
                        return Err(corrupt("basis"));
                    }
                    Ok(Variational {
                        mean: DVector::from_vec(mean),
                        sqrt,
                        bias,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
        Ok(ClassifierBasis {
            features: d.features,
            kernel: d.kernel,
            config: SvgpConfig {
                jitter: d.jitter,
                chunk_rows: b.svgp_chunk_rows,
            },
            qs,
            classes: b.classes,
            known: b.known,
            transform: d.transform,
            keep: d.keep,
            inputs: d.inputs,
            chunk_rows: d.chunk_rows,
        })
    }
}

impl SiteSums {
    /// The sums as bytes, decoded by [`SiteSums::from_bytes`].
    ///
    /// # Errors
    /// [`Error::Numerical`] if they cannot be encoded.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        encode(&SiteBytes {
            rows: self.rows,
            precision: self.precision.iter().map(matrix_bytes).collect(),
            shift: self.shift.iter().map(|v| v.as_slice().to_vec()).collect(),
            expected_log_lik: self.expected_log_lik,
            parts: self.parts.clone(),
        })
    }

    /// The sums [`SiteSums::to_bytes`] wrote.
    ///
    /// # Errors
    /// [`Error::BadInput`] for bytes that are not sums.
    pub fn from_bytes(bytes: &[u8]) -> Result<SiteSums> {
        let s: SiteBytes = decode(bytes, "sums")?;
        Ok(SiteSums {
            rows: s.rows,
            precision: s
                .precision
                .into_iter()
                .map(|m| from_matrix_bytes(m, "sums"))
                .collect::<Result<_>>()?,
            shift: s.shift.into_iter().map(DVector::from_vec).collect(),
            expected_log_lik: s.expected_log_lik,
            parts: s.parts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sgp_runtime::Kernel;

    fn common() -> (PseudoInputs, KernelParams, Standardisation) {
        let z = DMatrix::from_fn(3, 2, |i, j| 0.3 * i as f64 - 0.7 * j as f64);
        let kernel = KernelParams::new(&[0.4, 1.3], 0.8, 0.05).unwrap();
        let transform = Standardisation {
            x_mean: vec![0.1, -2.0],
            x_scale: vec![1.5, 0.25],
            x_min: vec![-3.0, -4.0],
            x_max: vec![3.0, 1.0],
            y_mean: 0.5,
            y_scale: 2.0,
        };
        (PseudoInputs::new(z).unwrap(), kernel, transform)
    }

    #[test]
    fn a_regression_basis_comes_back_whole_and_garbage_is_refused() {
        let (features, kernel, transform) = common();
        let basis = StreamedBasis {
            features,
            kernel,
            config: FitcConfig {
                chunk_rows: 77,
                approximation: Approximation::Vfe,
                ..FitcConfig::default()
            },
            transform,
            keep: vec![0, 2],
            inputs: 3,
            chunk_rows: 500,
        };
        let bytes = basis.to_bytes().unwrap();
        assert_eq!(StreamedBasis::from_bytes(&bytes).unwrap(), basis);
        assert!(matches!(
            StreamedBasis::from_bytes(&bytes[..bytes.len() / 2]),
            Err(Error::BadInput(_))
        ));
    }

    #[test]
    fn a_classifier_basis_and_its_sums_come_back_whole() {
        let (features, kernel, transform) = common();
        let q = |s: f64| Variational {
            mean: DVector::from_fn(3, |i, _| s * i as f64),
            sqrt: DMatrix::from_fn(3, 3, |i, j| if i >= j { s + (i + j) as f64 } else { 0.0 }),
            bias: -s,
        };
        let basis = ClassifierBasis {
            features,
            kernel,
            config: SvgpConfig {
                jitter: JitterPolicy::default(),
                chunk_rows: 64,
            },
            qs: vec![q(0.5), q(-1.25)],
            classes: vec![1.0, 3.0],
            known: vec![1.0, 2.0, 3.0],
            transform,
            keep: vec![0, 1],
            inputs: 2,
            chunk_rows: 1000,
        };
        let bytes = basis.to_bytes().unwrap();
        assert_eq!(ClassifierBasis::from_bytes(&bytes).unwrap(), basis);
        let sums = SiteSums {
            rows: 12,
            precision: vec![DMatrix::from_fn(3, 3, |i, j| (i * 3 + j) as f64)],
            shift: vec![DVector::from_fn(3, |i, _| -(i as f64))],
            expected_log_lik: -4.5,
            parts: vec![(0, 2), (1, 2)],
        };
        assert_eq!(
            SiteSums::from_bytes(&sums.to_bytes().unwrap()).unwrap(),
            sums
        );
    }

    /// The basis's shared part as it was written before the kernel,
    /// jitter and standardisation derived their bytes: field by field.
    #[derive(Serialize)]
    struct ListedCommon {
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

    /// The derived bytes are the hand-listed ones: a basis an older build
    /// wrote still decodes.
    #[test]
    fn the_derived_common_bytes_are_the_listed_ones() {
        let (features, kernel, t) = common();
        let kernel = kernel.with_kernel(Kernel::Matern32);
        let jitter = JitterPolicy {
            initial: 1e-5,
            max: 0.25,
            factor: 7.0,
        };
        let derived = Common::new(&features, &kernel, &jitter, &t, (&[2, 0], 3, 400));
        let listed = ListedCommon {
            z: matrix_bytes(features.z()),
            log_lengthscales: kernel.log_lengthscales.clone(),
            log_signal_var: kernel.log_signal_var,
            log_noise_excess: kernel.log_noise_excess,
            noise_floor: kernel.noise_floor,
            kernel: kernel.kernel,
            jitter: (jitter.initial, jitter.max, jitter.factor),
            transform: (
                t.x_mean.clone(),
                t.x_scale.clone(),
                t.x_min.clone(),
                t.x_max.clone(),
                t.y_mean,
                t.y_scale,
            ),
            keep: vec![2, 0],
            inputs: 3,
            chunk_rows: 400,
        };
        assert_eq!(encode(&derived).unwrap(), encode(&listed).unwrap());
    }
}
