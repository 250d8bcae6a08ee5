//! Evaluation through `sgp-runtime` itself, in f32: what the device would
//! compute. Used by the export fidelity check and by `sgp predict`/`eval`.
//!
//! The runtime's capacities are const generics, so the host picks the
//! smallest of a few capacity classes that holds the blob. A
//! `Model<M, G, D, P>` lives on the stack of a dedicated thread sized for
//! it: the largest class is far beyond a default thread stack.

use sgp_runtime::{
    ram_bytes_with_outputs, Innovation, Model, ModelSpec, Prediction, UpdateSettings,
};

use crate::{Error, Result};
use sgp_runtime::NAME_CAPACITY;

/// What the host needs from a loaded runtime model of any capacity.
pub trait DeviceModel {
    /// [`Model::predict`].
    fn predict(&self, x: &[f32]) -> std::result::Result<Prediction, sgp_runtime::Error>;
    /// [`Model::mean`].
    fn mean(&self, x: &[f32]) -> std::result::Result<f32, sgp_runtime::Error>;
    /// [`Model::probability`].
    fn probability(&self, x: &[f32]) -> std::result::Result<f32, sgp_runtime::Error>;
    /// [`Model::predict_all`].
    fn predict_all(&self, x: &[f32]) -> std::result::Result<Vec<Prediction>, sgp_runtime::Error>;
    /// [`Model::classify`]: the class and the class probabilities.
    fn classify(&self, x: &[f32]) -> std::result::Result<(usize, Vec<f32>), sgp_runtime::Error>;
    /// [`Model::update_all_with`]: one innovation per output.
    fn update_with(
        &mut self,
        x: &[f32],
        y: &[f32],
        settings: UpdateSettings,
    ) -> std::result::Result<Vec<Innovation>, sgp_runtime::Error>;
    /// [`Model::write_blob`] from `source` (the bytes the model was loaded
    /// from, or wrote since) into a new vector.
    fn write_blob(&self, source: &[u8]) -> std::result::Result<Vec<u8>, sgp_runtime::Error>;
    /// [`sgp_runtime::FixedModel::predict`] at every input, or why the
    /// model has no fixed-point form.
    fn fixed_predict_all(&self, x: &[Vec<f32>]) -> FixedPredictions;
}

impl<const M: usize, const G: usize, const D: usize, const P: usize> DeviceModel
    for Model<M, G, D, P>
{
    fn predict(&self, x: &[f32]) -> std::result::Result<Prediction, sgp_runtime::Error> {
        Model::predict(self, x)
    }
    fn mean(&self, x: &[f32]) -> std::result::Result<f32, sgp_runtime::Error> {
        Model::mean(self, x)
    }
    fn probability(&self, x: &[f32]) -> std::result::Result<f32, sgp_runtime::Error> {
        Model::probability(self, x)
    }
    fn predict_all(&self, x: &[f32]) -> std::result::Result<Vec<Prediction>, sgp_runtime::Error> {
        Ok(Model::predict_all(self, x)?.to_vec())
    }
    fn classify(&self, x: &[f32]) -> std::result::Result<(usize, Vec<f32>), sgp_runtime::Error> {
        let c = Model::classify(self, x)?;
        Ok((c.class, c.probabilities().to_vec()))
    }
    fn update_with(
        &mut self,
        x: &[f32],
        y: &[f32],
        settings: UpdateSettings,
    ) -> std::result::Result<Vec<Innovation>, sgp_runtime::Error> {
        Ok(Model::update_all_with(self, x, y, settings)?.to_vec())
    }
    fn write_blob(&self, source: &[u8]) -> std::result::Result<Vec<u8>, sgp_runtime::Error> {
        let mut out = vec![0; source.len()];
        let len = Model::write_blob(self, source, &mut out)?;
        out.truncate(len);
        Ok(out)
    }
    fn fixed_predict_all(&self, x: &[Vec<f32>]) -> FixedPredictions {
        let fixed = sgp_runtime::FixedModel::<M, G>::from_model(self).map_err(|e| e.to_string())?;
        x.iter()
            .map(|xi| fixed.predict(xi).map_err(|e| e.to_string()))
            .collect()
    }
}

/// The fixed-point predictions of every point, or why there are none.
pub(crate) type FixedPredictions = std::result::Result<Vec<Prediction>, String>;

/// Basis-function capacity classes.
const BASIS_CLASSES: [usize; 5] = [32, 128, 512, 2048, 4096];
/// Input/feature dimension classes (G and D share one class): few, as each
/// class compiles the whole runtime again, and `M x D` is small beside the
/// `M x M` factors.
const DIM_CLASSES: [usize; 2] = [32, 128];
/// Output capacity classes: one output, or up to 16 (multi-output
/// regression, classes of a classifier). Several outputs hold several
/// `M x M` factors, so they stop at [`MULTI_OUTPUT_BASIS_LIMIT`].
const OUTPUT_CLASSES: [usize; 2] = [1, 16];
/// The largest number of basis functions the host evaluates with several
/// outputs (16 factors of 512 x 512 are 16 MB of stack).
const MULTI_OUTPUT_BASIS_LIMIT: usize = 512;

/// Loads `blob` into the runtime and runs `f` on it, on a thread whose
/// stack holds the model.
///
/// # Errors
/// The runtime's refusal of the blob, or [`Error::BadInput`] when the model
/// is larger than the largest capacity class.
pub(crate) fn with_device_model<R: Send>(
    blob: &[u8],
    f: impl FnOnce(&dyn DeviceModel) -> R + Send,
) -> Result<R> {
    with_device_model_mut(blob, |model, _| f(model))
}

/// [`with_device_model`] with the model mutable (to update it), and the
/// bytes it was loaded from: `blob`, or `blob` without its names when
/// they are longer than a device holds (then [`restore_names`] puts them
/// back into what the model writes).
///
/// # Errors
/// As [`with_device_model`].
pub(crate) fn with_device_model_mut<R: Send>(
    blob: &[u8],
    f: impl FnOnce(&mut dyn DeviceModel, &[u8]) -> R + Send,
) -> Result<R> {
    let mut loaded = LoadedModel::load(blob)?;
    let LoadedModel { device, source, .. } = &mut loaded;
    Ok(f(device.as_mut(), source))
}

/// A blob loaded into the runtime once and kept: every call then runs on
/// the caller's thread with no decode (the Python `sgp.Model`'s one-row
/// calls). The runtime's calls need `O(M)` stack; only loading needs room
/// for a whole model, on a thread of its own.
pub struct LoadedModel {
    device: Box<dyn DeviceModel + Send>,
    /// The blob's description as loaded: its names, shape and link, which
    /// updates do not change (its posterior may be older than the model's).
    spec: ModelSpec,
    /// The bytes the model was loaded from: the blob, or the blob without
    /// its names when they are longer than a device holds.
    source: Vec<u8>,
    /// The blob as given, whose names what the model writes keeps.
    original: Vec<u8>,
}

impl LoadedModel {
    /// Every output's prediction at the rows of `x`, in f32 on the device
    /// as it is now (after any update: a noise it learned included, which
    /// its blob does not hold); as [`predict_outputs`] of its blob.
    ///
    /// # Errors
    /// As [`predict_outputs`].
    pub fn predict_outputs(
        &self,
        x: &nalgebra::DMatrix<f64>,
    ) -> Result<Vec<Vec<DevicePrediction>>> {
        predict_outputs_loaded(self, x)
    }

    /// Decodes `blob` into the smallest capacity class that holds it.
    ///
    /// # Errors
    /// The runtime's refusal of the blob, or [`Error::BadInput`] when the
    /// model is larger than the largest capacity class.
    pub fn load(blob: &[u8]) -> Result<Self> {
        let spec = ModelSpec::from_bytes(blob)?;
        // A device refuses names longer than it holds (`sgp fit` warns, `sgp
        // inspect --capacity` says the model does not fit); the host evaluates
        // the same numbers with the names left out, so that host tools still
        // work on such a blob.
        let outputs_fit = spec
            .outputs
            .iter()
            .all(|output| output.name.len() <= sgp_runtime::NAME_CAPACITY);
        let source =
            if names_too_long(&spec.input_names, &spec.target_name).is_empty() && outputs_fit {
                blob.to_vec()
            } else {
                let mut spec = spec.clone();
                spec.input_names.iter_mut().for_each(String::clear);
                spec.target_name.clear();
                spec.outputs
                    .iter_mut()
                    .for_each(|output| output.name.clear());
                spec.to_bytes()?
            };
        let (m_class, d_class, p_class) = capacity_class(&spec)?;
        let spec = spec.clone();
        // from_bytes builds the model and moves it out: allow a few copies.
        let stack = 4 * ram_bytes_with_outputs(m_class, d_class, d_class, p_class) + (8 << 20);
        let device = std::thread::scope(|scope| {
            let source = &source;
            let worker = std::thread::Builder::new()
                .name("sgp-device".into())
                .stack_size(stack)
                .spawn_scoped(scope, move || dispatch(source, m_class, d_class, p_class))
                .map_err(|e| Error::Numerical(format!("cannot start the evaluator thread: {e}")))?;
            worker
                .join()
                .map_err(|_| Error::Numerical("the runtime evaluator thread panicked".into()))?
        })?;
        Ok(LoadedModel {
            device,
            spec,
            source,
            original: blob.to_vec(),
        })
    }

    /// The blob's names, shape and link (not its posterior: see
    /// [`LoadedModel::to_bytes`]).
    pub fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    /// The runtime model.
    pub fn device(&self) -> &dyn DeviceModel {
        self.device.as_ref()
    }

    /// The runtime model, to update it.
    pub fn device_mut(&mut self) -> &mut dyn DeviceModel {
        self.device.as_mut()
    }

    /// The blob of the model as it is now (after any update), with the
    /// names it was loaded with: byte for byte the loaded blob until an
    /// update changes it.
    ///
    /// # Errors
    /// The runtime's refusal to write (a model that does not learn).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let written = self.device.write_blob(&self.source)?;
        restore_names(&written, &self.original)
    }
}

/// The capacity class `(M, D, P)` that holds `spec`.
///
/// # Errors
/// [`Error::BadInput`] when the model is larger than the largest class.
fn capacity_class(spec: &ModelSpec) -> Result<(usize, usize, usize)> {
    let m = usize::from(spec.shape.n_basis);
    let dim = usize::from(spec.shape.input_dim.max(spec.shape.feature_dim));
    let class = |classes: &[usize], need: usize, what: &str, advice: &str| {
        classes.iter().copied().find(|&c| c >= need).ok_or_else(|| {
            let cap = classes.last().copied().unwrap_or(0);
            Error::BadInput(format!(
                "{what} = {need} exceeds the host evaluator's largest capacity {cap}: {}",
                advice.replace("{cap}", &cap.to_string())
            ))
        })
    };
    let m_class = class(
        &BASIS_CLASSES,
        m,
        "number of basis functions",
        "give --m {cap} or fewer",
    )?;
    let d_class = class(
        &DIM_CLASSES,
        dim,
        "input dimension",
        "keep at most {cap} input columns in the file (a projection, --model spgp-dr or \
         spgp-pca, still reads every input)",
    )?;
    let p_class = class(
        &OUTPUT_CLASSES,
        spec.output_count(),
        "number of outputs",
        "fit at most {cap} targets in one model (split them over several fits), or at most \
         {cap} classes (merge rare ones)",
    )?;
    if p_class > 1 && m > MULTI_OUTPUT_BASIS_LIMIT {
        return Err(Error::BadInput(format!(
            "a model with {} outputs and {m} basis functions exceeds the host evaluator's \
             largest multi-output capacity ({MULTI_OUTPUT_BASIS_LIMIT} basis functions)",
            spec.output_count()
        )));
    }
    Ok((m_class, d_class, p_class))
}

/// One capacity class, on the heap; never inlined so that the caller's
/// frame does not reserve room for every class's model at once.
#[inline(never)]
fn load_boxed<const M: usize, const D: usize, const P: usize>(
    blob: &[u8],
) -> Result<Box<dyn DeviceModel + Send>> {
    Ok(Box::new(Model::<M, D, D, P>::from_bytes(blob)?))
}

/// `written` (a blob a device model wrote from `original` with its names
/// left out, [`with_device_model_mut`]) with `original`'s names back.
///
/// # Errors
/// If either blob does not decode.
pub(crate) fn restore_names(written: &[u8], original: &[u8]) -> Result<Vec<u8>> {
    let named = ModelSpec::from_bytes(original)?;
    let mut spec = ModelSpec::from_bytes(written)?;
    if spec.input_names == named.input_names
        && spec.target_name == named.target_name
        && spec
            .outputs
            .iter()
            .zip(&named.outputs)
            .all(|(a, b)| a.name == b.name)
    {
        return Ok(written.to_vec());
    }
    spec.input_names = named.input_names;
    spec.target_name = named.target_name;
    for (output, name) in spec.outputs.iter_mut().zip(named.outputs) {
        output.name = name.name;
    }
    Ok(spec.to_bytes()?)
}

fn dispatch(blob: &[u8], m: usize, d: usize, p: usize) -> Result<Box<dyn DeviceModel + Send>> {
    macro_rules! classes {
        ($(($m:literal, $d:literal, $p:literal)),*) => {
            match (m, d, p) {
                $(($m, $d, $p) => load_boxed::<$m, $d, $p>(blob),)*
                _ => Err(Error::Numerical(format!(
                    "no evaluator for capacity class ({m}, {d}, {p})"
                ))),
            }
        };
    }
    classes!(
        (32, 32, 1),
        (32, 128, 1),
        (128, 32, 1),
        (128, 128, 1),
        (512, 32, 1),
        (512, 128, 1),
        (2048, 32, 1),
        (2048, 128, 1),
        (4096, 32, 1),
        (4096, 128, 1),
        (32, 32, 16),
        (32, 128, 16),
        (128, 32, 16),
        (128, 128, 16),
        (512, 32, 16),
        (512, 128, 16)
    )
}

/// The first output of [`predict_outputs`] at every row of `x` (raw
/// inputs): a one-output model's mean and variance, plus `P(y = +1)` for a
/// probit model.
///
/// # Errors
/// As [`predict_outputs`].
pub fn predict_all(blob: &[u8], x: &nalgebra::DMatrix<f64>) -> Result<Vec<DevicePrediction>> {
    Ok(predict_outputs(blob, x)?
        .into_iter()
        .filter_map(|row| row.into_iter().next())
        .collect())
}

/// The runtime's prediction of every output at every row of `x` (raw
/// inputs) of a blob or a container: `[row][output]`, each with the class probability of that
/// output's class for a classifier (a probit model's one output: `P(y =
/// +1)`).
///
/// # Errors
/// The runtime's refusal of the blob or of an input.
pub fn predict_outputs(
    blob: &[u8],
    x: &nalgebra::DMatrix<f64>,
) -> Result<Vec<Vec<DevicePrediction>>> {
    if !sgp_runtime::Container::is_container(blob) {
        return predict_outputs_loaded(&LoadedModel::load(blob)?, x);
    }
    // A container: each member's one output, side by side.
    let mut rows = vec![Vec::new(); x.nrows()];
    for member in sgp_runtime::Container::parse(blob)?.members() {
        let each = predict_outputs_loaded(&LoadedModel::load(member)?, x)?;
        for (row, mut predictions) in rows.iter_mut().zip(each) {
            row.append(&mut predictions);
        }
    }
    Ok(rows)
}

/// [`predict_outputs`] of a model kept loaded, as it is now (after any
/// update: a noise it learned included, which its blob does not hold).
///
/// # Errors
/// As [`predict_outputs`].
pub(crate) fn predict_outputs_loaded(
    loaded: &LoadedModel,
    x: &nalgebra::DMatrix<f64>,
) -> Result<Vec<Vec<DevicePrediction>>> {
    let rows = f32_rows(&loaded.original, x)?;
    let device = loaded.device();
    let predictions: std::result::Result<Vec<_>, sgp_runtime::Error> = rows
        .iter()
        .map(|row| {
            let all = device.predict_all(row)?;
            let probabilities = match device.classify(row) {
                Ok((_, p)) if p.len() == all.len() => Some(p),
                // A probit model's two classes: its output is the second.
                Ok((_, p)) => p.get(1).map(|&positive| vec![positive]),
                Err(sgp_runtime::Error::NotClassifier) => None,
                Err(sgp_runtime::Error::CapacityExceeded { .. }) => {
                    Some(vec![device.probability(row)?])
                }
                Err(e) => return Err(e),
            };
            Ok(all
                .iter()
                .enumerate()
                .map(|(p, prediction)| DevicePrediction {
                    mean: prediction.mean,
                    variance: prediction.variance,
                    probability: probabilities.as_ref().and_then(|q| q.get(p).copied()),
                })
                .collect())
        })
        .collect();
    predictions.map_err(Error::from)
}

/// The runtime's class and class probabilities at every row of `x` (raw
/// inputs) of a classifier's blob (a probit model's two classes:
/// `[negative, positive]`).
///
/// # Errors
/// The runtime's refusal of the blob or of an input
/// (`NotClassifier` for a regression blob).
pub fn classify_all(blob: &[u8], x: &nalgebra::DMatrix<f64>) -> Result<Vec<(usize, Vec<f32>)>> {
    let rows = f32_rows(blob, x)?;
    with_device_model(blob, |device| {
        rows.iter()
            .map(|row| match device.classify(row) {
                // A probit blob in a one-output capacity: its two classes.
                Err(sgp_runtime::Error::CapacityExceeded { .. }) => {
                    let p = device.probability(row)?;
                    Ok((usize::from(p > 0.5), vec![1.0 - p, p]))
                }
                other => other,
            })
            .collect::<std::result::Result<Vec<_>, sgp_runtime::Error>>()
    })?
    .map_err(Error::from)
}

/// The rows of `x` in f32, as a device reads its inputs.
///
/// # Errors
/// [`Error::BadInput`] naming the data row and the input column (by its
/// name in `blob`) of a value beyond the range of f32.
fn f32_rows(blob: &[u8], x: &nalgebra::DMatrix<f64>) -> Result<Vec<Vec<f32>>> {
    x.row_iter()
        .enumerate()
        .map(|(i, r)| {
            r.iter()
                .enumerate()
                .map(|(j, &v)| {
                    let single = v as f32;
                    if single.is_finite() || !v.is_finite() {
                        return Ok(single);
                    }
                    let name = ModelSpec::from_bytes(blob)
                        .ok()
                        .and_then(|s| s.input_names.get(j).cloned())
                        .unwrap_or_else(|| format!("input {}", j + 1));
                    Err(Error::BadInput(format!(
                        "data row {}, column '{name}': {v:e} is beyond the range of f32 (about \
                         ±3.4e38), the numbers the device computes in",
                        i + 1
                    )))
                })
                .collect()
        })
        .collect()
}

/// One prediction of the runtime, in f32 as the device computes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DevicePrediction {
    /// Predictive mean (regression: of `y`; probit: of the latent).
    pub mean: f32,
    /// Predictive variance (regression: of `y`, noise included).
    pub variance: f32,
    /// `P(y = +1)` for probit models; the probability of this output's
    /// class for a multi-class model.
    pub probability: Option<f32>,
}

/// The column names (inputs, then the target) longer than the
/// [`NAME_CAPACITY`] bytes a device `Model` holds per name.
pub(crate) fn names_too_long<'a>(
    input_names: impl IntoIterator<Item = &'a String>,
    target_name: &'a str,
) -> Vec<String> {
    input_names
        .into_iter()
        .map(String::as_str)
        .chain([target_name])
        .filter(|name| name.len() > NAME_CAPACITY)
        .map(str::to_owned)
        .collect()
}
