//! Evaluation through `sgp-runtime` itself, in f32: what the device would
//! compute. Used by the export fidelity check and by `sgp predict`/`eval`.
//!
//! The runtime's capacities are const generics, so the host picks the
//! smallest of a few capacity classes that holds the blob. A
//! `Model<M, G, D>` lives on the stack of a dedicated thread sized for it:
//! the largest class is far beyond a default thread stack.

use sgp_runtime::{ram_bytes, Model, ModelSpec, Prediction};

use crate::inspect::names_too_long;
use crate::{Error, Result};

/// What the host needs from a loaded runtime model of any capacity.
pub trait DeviceModel {
    /// [`Model::predict`].
    fn predict(&self, x: &[f32]) -> std::result::Result<Prediction, sgp_runtime::Error>;
    /// [`Model::probability`].
    fn probability(&self, x: &[f32]) -> std::result::Result<f32, sgp_runtime::Error>;
}

impl<const M: usize, const G: usize, const D: usize> DeviceModel for Model<M, G, D> {
    fn predict(&self, x: &[f32]) -> std::result::Result<Prediction, sgp_runtime::Error> {
        Model::predict(self, x)
    }
    fn probability(&self, x: &[f32]) -> std::result::Result<f32, sgp_runtime::Error> {
        Model::probability(self, x)
    }
}

/// Basis-function capacity classes.
const BASIS_CLASSES: [usize; 5] = [32, 128, 512, 2048, 4096];
/// Input/feature dimension classes (G and D share one class).
const DIM_CLASSES: [usize; 3] = [8, 32, 128];

/// Loads `blob` into the runtime and runs `f` on it, on a thread whose
/// stack holds the model.
///
/// # Errors
/// The runtime's refusal of the blob, or [`Error::BadInput`] when the model
/// is larger than the largest capacity class.
pub fn with_device_model<R: Send>(
    blob: &[u8],
    f: impl FnOnce(&dyn DeviceModel) -> R + Send,
) -> Result<R> {
    let spec = ModelSpec::from_bytes(blob)?;
    // A device refuses names longer than it holds (`sgp fit` warns, `sgp
    // inspect --capacity` says the model does not fit); the host evaluates
    // the same numbers with the names left out, so that host tools still
    // work on such a blob.
    let unnamed;
    let blob = if names_too_long(&spec.input_names, &spec.target_name).is_empty() {
        blob
    } else {
        let mut spec = spec.clone();
        spec.input_names.iter_mut().for_each(String::clear);
        spec.target_name.clear();
        unnamed = spec.to_bytes()?;
        &unnamed
    };
    let m = usize::from(spec.shape.n_basis);
    let dim = usize::from(spec.shape.input_dim.max(spec.shape.feature_dim));
    let class = |classes: &[usize], need: usize, what: &str| {
        classes.iter().copied().find(|&c| c >= need).ok_or_else(|| {
            Error::BadInput(format!(
                "{what} = {need} exceeds the host evaluator's largest capacity {}",
                classes.last().copied().unwrap_or(0)
            ))
        })
    };
    let m_class = class(&BASIS_CLASSES, m, "number of basis functions")?;
    let d_class = class(&DIM_CLASSES, dim, "input dimension")?;
    // from_bytes builds the model and moves it out: allow a few copies.
    let stack = 4 * ram_bytes(m_class, d_class, d_class) + (8 << 20);
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("sgp-device".into())
            .stack_size(stack)
            .spawn_scoped(scope, move || dispatch(blob, m_class, d_class, f))
            .map_err(|e| Error::Numerical(format!("cannot start the evaluator thread: {e}")))?;
        worker
            .join()
            .map_err(|_| Error::Numerical("the runtime evaluator thread panicked".into()))?
    })
}

/// One capacity class; never inlined so that the caller's frame does not
/// reserve room for every class's model at once.
#[inline(never)]
fn load_and_run<const M: usize, const D: usize, R>(
    blob: &[u8],
    f: impl FnOnce(&dyn DeviceModel) -> R,
) -> Result<R> {
    let model = Model::<M, D, D>::from_bytes(blob)?;
    Ok(f(&model))
}

fn dispatch<R>(
    blob: &[u8],
    m: usize,
    d: usize,
    f: impl FnOnce(&dyn DeviceModel) -> R,
) -> Result<R> {
    macro_rules! classes {
        ($(($m:literal, $d:literal)),*) => {
            match (m, d) {
                $(($m, $d) => load_and_run::<$m, $d, R>(blob, f),)*
                _ => Err(Error::Numerical(format!("no evaluator for capacity class ({m}, {d})"))),
            }
        };
    }
    classes!(
        (32, 8),
        (32, 32),
        (32, 128),
        (128, 8),
        (128, 32),
        (128, 128),
        (512, 8),
        (512, 32),
        (512, 128),
        (2048, 8),
        (2048, 32),
        (2048, 128),
        (4096, 8),
        (4096, 32),
        (4096, 128)
    )
}

/// The runtime's prediction at every row of `x` (raw inputs): mean and
/// variance, plus the class probability for probit models.
///
/// # Errors
/// The runtime's refusal of the blob or of an input.
pub fn predict_all(blob: &[u8], x: &nalgebra::DMatrix<f64>) -> Result<Vec<DevicePrediction>> {
    let rows: Vec<Vec<f32>> = x
        .row_iter()
        .map(|r| r.iter().map(|&v| v as f32).collect())
        .collect();
    with_device_model(blob, |device| {
        rows.iter()
            .map(|row| {
                let p = device.predict(row)?;
                // The runtime itself says whether the model classifies; no
                // second decode of the blob to find out.
                let probability = match device.probability(row) {
                    Ok(probability) => Some(probability),
                    Err(sgp_runtime::Error::NotClassifier) => None,
                    Err(e) => return Err(e),
                };
                Ok(DevicePrediction {
                    mean: p.mean,
                    variance: p.variance,
                    probability,
                })
            })
            .collect::<std::result::Result<Vec<_>, sgp_runtime::Error>>()
    })?
    .map_err(Error::from)
}

/// One prediction of the runtime, in f32 as the device computes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DevicePrediction {
    /// Predictive mean (regression: of `y`; probit: of the latent).
    pub mean: f32,
    /// Predictive variance (regression: of `y`, noise included).
    pub variance: f32,
    /// `P(y = +1)` for probit models.
    pub probability: Option<f32>,
}
