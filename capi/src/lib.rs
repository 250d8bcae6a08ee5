//! `sgp-capi`: the C ABI of `sgp-runtime`, built as a static library
//! (`libsgp_capi.a`) with a C header (`sgp.h`) that cbindgen generates from
//! this crate at build time.
//!
//! The model lives in storage the caller provides (`SgpModel`, sized for
//! the capacities `SGP_CAPACITY_M`, `SGP_CAPACITY_G`, `SGP_CAPACITY_D`,
//! `SGP_CAPACITY_P` fixed when the library is built: see `build.rs`). Every function checks its
//! pointers and lengths and answers with an `SgpStatus`; nothing allocates
//! and nothing panics. On a bare-metal target that is proved at link time
//! (`panic_proof`); on a hosted target std's panic runtime is linked, and a
//! panic (there is none to reach) would abort at the `extern "C"` boundary.
//!
//! The crate is `no_std`: std is linked on hosted targets only to supply the
//! panic runtime, because the Rust tests link this crate into std programs,
//! where a panic handler of its own would clash with std's.
#![no_std]
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
#![deny(missing_docs)]
#![warn(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

#[cfg(not(target_os = "none"))]
extern crate std;

/// The capacities and storage size `build.rs` derived from the
/// `SGP_CAPACITY_*` variables.
mod capacity {
    include!(concat!(env!("OUT_DIR"), "/capacity.rs"));
}
mod artefact;
#[cfg(target_os = "none")]
mod panic_proof;
mod slot;
mod status;

use core::ffi::c_char;

pub use artefact::SgpArtefact;
use capacity::{
    CAPACITY_D, CAPACITY_G, CAPACITY_M, CAPACITY_P, SGP_MODEL_STORAGE_WORDS,
    SGP_UNCERTAIN_STORAGE_WORDS,
};
use sgp_runtime::{Error, Innovation, Model, Outputs, Prediction, Uncertain, UpdateSettings};
use slot::{loaded, loaded_mut, Storage};
pub use status::SgpStatus;

/// Storage for one model of the capacities the library was built with.
/// Declare it `static` (zero-initialised, so it reads as "not loaded"
/// until `sgp_model_load` succeeds) and pass `sizeof` of it to
/// `sgp_model_load`. Its contents are private to the library.
#[repr(C)]
pub struct SgpModel {
    words: [u64; SGP_MODEL_STORAGE_WORDS],
}

/// A predictive distribution. Regression: mean and variance of the target
/// in raw units, noise included. Classifier: of the latent function.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SgpPrediction {
    /// Predictive mean.
    pub mean: f32,
    /// Predictive variance: never negative, never NaN.
    pub variance: f32,
}

/// How `sgp_model_update` treats an observation (see
/// `sgp_model_set_update_settings`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SgpUpdateSettings {
    /// In (0, 1]: before each observation the posterior drifts back towards
    /// the prior by this factor (1: nothing is forgotten).
    pub forgetting: f32,
    /// Largest |residual| / predictive standard deviation accepted (regression);
    /// INFINITY accepts every finite target.
    pub gate: f32,
}

/// What an update saw: the prediction at its input just before it (as
/// `sgp_model_predict` gives it, forgetting applied) and the residual,
/// target minus mean (a classifier: label minus P(y = +1)).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SgpInnovation {
    /// The prediction the observation corrected.
    pub prediction: SgpPrediction,
    /// Target minus predicted mean, raw units.
    pub residual: f32,
}

impl From<Innovation> for SgpInnovation {
    fn from(seen: Innovation) -> Self {
        SgpInnovation {
            prediction: SgpPrediction {
                mean: seen.prediction.mean,
                variance: seen.prediction.variance,
            },
            residual: seen.residual,
        }
    }
}

type DeviceModel = Model<CAPACITY_M, CAPACITY_G, CAPACITY_D, CAPACITY_P>;

// SAFETY: `init` writes a whole model.
unsafe impl Storage for SgpModel {
    type Value = DeviceModel;
    const SPARE: usize = 32;

    unsafe fn init(place: *mut DeviceModel) {
        // SAFETY: the caller's promise: `place` is aligned and writable.
        unsafe { place.write(DeviceModel::new()) }
    }
}

/// Storage for predictions at a Gaussian input of a model of the library's
/// capacities (`sgp_uncertain_prepare`): declare it `static`
/// (zero-initialised) and pass `sizeof` of it. Its contents are private to
/// the library.
#[repr(C)]
pub struct SgpUncertain {
    words: [u64; SGP_UNCERTAIN_STORAGE_WORDS],
}

type DeviceUncertain = Uncertain<CAPACITY_M, CAPACITY_D, CAPACITY_P>;

/// What an `SgpUncertain` holds once prepared.
#[repr(C)]
struct PreparedUncertain {
    /// The model's input and output counts (the compact layout of the
    /// answers).
    inputs: usize,
    outputs: usize,
    uncertain: DeviceUncertain,
}

// SAFETY: `init` zeroes a whole value, and all zero bytes are a valid
// `PreparedUncertain`: integers, and an `Uncertain` whose `new()` is
// all-zero bits (floats, sizes and `false`).
unsafe impl Storage for SgpUncertain {
    type Value = PreparedUncertain;
    const SPARE: usize = 32;

    unsafe fn init(place: *mut PreparedUncertain) {
        // SAFETY: the caller's promise: `place` is aligned and writable.
        // Zeroing in place builds nothing on the stack.
        unsafe { core::ptr::write_bytes(place, 0, 1) }
    }
}

/// Loads and checks a blob (the bytes are untrusted) into `model`.
///
/// `model_size` is `sizeof` the storage. On failure the storage holds no
/// model: predictions return `SGP_STATUS_NOT_LOADED` until a load succeeds.
///
/// # Safety
/// `model` must be NULL or point to `model_size` writable bytes, and `blob`
/// NULL or to `blob_len` readable bytes; no other `sgp_` call may use the
/// same storage while this one runs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_model_load(
    model: *mut SgpModel,
    model_size: usize,
    blob: *const u8,
    blob_len: usize,
) -> SgpStatus {
    // SAFETY: this function's contract is `load_slot`'s.
    unsafe { slot::load_slot(model, model_size, blob, blob_len, DeviceModel::load) }
}

/// Predictive mean and variance at `x` (`x_len` raw inputs, in the order
/// the model was trained with) into `out`: `O(M G + M^2)`.
///
/// # Safety
/// `model` must be NULL or point to an `SgpModel` that is zero-initialised
/// or was passed to `sgp_model_load`, and is not being loaded meanwhile; `x`
/// NULL or pointing to `x_len` readable floats; `out` NULL or writable.
/// `out` is written only on success.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_model_predict(
    model: *const SgpModel,
    x: *const f32,
    x_len: usize,
    out: *mut SgpPrediction,
) -> SgpStatus {
    // SAFETY: this function's contract is `evaluate`'s.
    unsafe {
        evaluate(model, x, x_len, out, |device, x| {
            let p = device.predict(x)?;
            Ok(SgpPrediction {
                mean: p.mean,
                variance: p.variance,
            })
        })
    }
}

/// Predictive mean only, at `x` into `out`: `O(M G)`, no variance work.
///
/// # Safety
/// As `sgp_model_predict`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_model_mean(
    model: *const SgpModel,
    x: *const f32,
    x_len: usize,
    out: *mut f32,
) -> SgpStatus {
    // SAFETY: this function's contract is `evaluate`'s.
    unsafe { evaluate(model, x, x_len, out, |device, x| device.mean(x)) }
}

/// Class probability `P(y = +1 | x)` of a classifier (probit link) into
/// `out`; `SGP_STATUS_NOT_CLASSIFIER` for a regression model.
///
/// # Safety
/// As `sgp_model_predict`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_model_probability(
    model: *const SgpModel,
    x: *const f32,
    x_len: usize,
    out: *mut f32,
) -> SgpStatus {
    // SAFETY: this function's contract is `evaluate`'s.
    unsafe { evaluate(model, x, x_len, out, |device, x| device.probability(x)) }
}

/// Whether every value of `x` lies within the training range of its input
/// (into `out`): `false` means the model is extrapolating, whatever its
/// variance says. `SGP_STATUS_NO_TRAINING_RANGE` for blobs of format
/// versions 1 and 2, which record no range.
///
/// # Safety
/// As `sgp_model_predict`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_model_in_training_range(
    model: *const SgpModel,
    x: *const f32,
    x_len: usize,
    out: *mut bool,
) -> SgpStatus {
    // SAFETY: this function's contract is `evaluate`'s.
    unsafe {
        evaluate(model, x, x_len, out, |device, x| {
            device.in_training_range(x)
        })
    }
}

/// Every output's predictive mean and variance at `x` (`x_len` raw
/// inputs) into `out[0 .. sgp_model_output_count(model)]`, the basis
/// evaluated once for all of them (each as `sgp_model_predict` gives a
/// single output's; a classifier's: each class latent).
/// `SGP_STATUS_OUTPUT_TOO_SMALL` if `out_len` is less than the output
/// count.
///
/// # Safety
/// As `sgp_model_predict`, with `out` NULL or pointing to `out_len`
/// writable `SgpPrediction`s. `out` is written only on success.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_model_predict_all(
    model: *const SgpModel,
    x: *const f32,
    x_len: usize,
    out: *mut SgpPrediction,
    out_len: usize,
) -> SgpStatus {
    // SAFETY: this function's contract is `predict_all`'s.
    unsafe { predict_all(model, x, x_len, out, out_len) }
}

/// The class of `x` (an index into the model's class labels) into
/// `class_out`, and the probability of each class into
/// `probabilities[0 .. sgp_model_class_count(model)]` (summing to 1):
/// one-vs-rest or softmax over the class latents of a multi-class model, or
/// `[1 - P(y = +1), P(y = +1)]` for a probit classifier (which needs
/// `SGP_CAPACITY_P >= 2`). `SGP_STATUS_NOT_CLASSIFIER` for a regression
/// model, `SGP_STATUS_OUTPUT_TOO_SMALL` if `probabilities_len` is less than
/// the class count.
///
/// # Safety
/// As `sgp_model_predict`, with `class_out` NULL or writable and
/// `probabilities` NULL or pointing to `probabilities_len` writable floats.
/// Both are written only on success.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_model_classify(
    model: *const SgpModel,
    x: *const f32,
    x_len: usize,
    class_out: *mut usize,
    probabilities: *mut f32,
    probabilities_len: usize,
) -> SgpStatus {
    if class_out.is_null() {
        return SgpStatus::NullPointer;
    }
    if !class_out.is_aligned() {
        return SgpStatus::Misaligned;
    }
    // SAFETY: this function's contract is `prepared`'s and `write_all`'s;
    // `class_out` is non-null, aligned and writable (checked above, and the
    // caller's promise).
    unsafe {
        let (device, x) = match prepared(model, x, x_len, probabilities) {
            Ok(ready) => ready,
            Err(status) => return status,
        };
        match device.classify(x) {
            Ok(c) => {
                let p = c.probabilities();
                let status =
                    write_all(probabilities, probabilities_len, p.iter().copied(), p.len());
                if status == SgpStatus::Ok {
                    class_out.write(c.class);
                }
                status
            }
            Err(error) => SgpStatus::from_error(error),
        }
    }
}

/// Number of outputs of the loaded model (a multi-output regression's
/// targets, a multi-class model's classes; 1 for a single-output model);
/// 0 if `model` is NULL or holds no loaded model.
///
/// # Safety
/// As `sgp_model_predict` for `model`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_model_output_count(model: *const SgpModel) -> usize {
    // SAFETY: this function's contract is `loaded`'s.
    unsafe { loaded(model) }.map_or(0, DeviceModel::output_count)
}

/// Number of classes `sgp_model_classify` gives: a multi-class model's
/// output count, 2 for a probit classifier, 0 for a regression model or if
/// `model` is NULL or holds no loaded model.
///
/// # Safety
/// As `sgp_model_predict` for `model`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_model_class_count(model: *const SgpModel) -> usize {
    // SAFETY: this function's contract is `loaded`'s.
    let Ok(device) = (unsafe { loaded(model) }) else {
        return 0;
    };
    let link = device.shape().link;
    if link.is_multi_class() {
        device.output_count()
    } else if link.classifies() {
        2
    } else {
        0
    }
}

/// Number of raw inputs a prediction takes; 0 if `model` is NULL or holds
/// no loaded model.
///
/// # Safety
/// As `sgp_model_predict` for `model`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_model_input_dim(model: *const SgpModel) -> usize {
    // SAFETY: this function's contract is `loaded`'s.
    unsafe { loaded(model) }.map_or(0, DeviceModel::input_dim)
}

/// Conditions the model on one observation (learning on the device): target
/// `y` (raw units; a classifier's label: 0 or 1) at `x` (`x_len` raw inputs),
/// with the model's update settings, in O(M^2). Writes what the model
/// predicted at `x` just before into `out`, unless `out` is NULL. On any
/// error the model is unchanged: `SGP_STATUS_NOT_UPDATABLE` (no learning
/// block), `SGP_STATUS_INVALID_TARGET`, `SGP_STATUS_OUTLIER` (beyond the gate),
/// `SGP_STATUS_TARGET_LENGTH` (a model of several outputs: use
/// `sgp_model_update_all`), and the input errors of `sgp_model_predict`.
///
/// # Safety
/// `model` as for `sgp_model_load` (not used by another call meanwhile);
/// `x` NULL or pointing to `x_len` readable floats; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_model_update(
    model: *mut SgpModel,
    x: *const f32,
    x_len: usize,
    y: f32,
    out: *mut SgpInnovation,
) -> SgpStatus {
    // SAFETY: this function's contract is `update_all`'s with one target
    // and an output array of one (or none).
    unsafe { update_all(model, x, x_len, &y, 1, out, usize::from(!out.is_null())) }
}

/// Conditions every output on one observation: `y[p]` is output `p`'s
/// target at `x` (`y_len` must be `sgp_model_output_count(model)`:
/// `SGP_STATUS_TARGET_LENGTH` otherwise). All or nothing: on any error no
/// output changes. Writes each output's innovation into `out[0 .. y_len]`
/// unless `out` is NULL (`SGP_STATUS_OUTPUT_TOO_SMALL` if `out_len` is
/// less than the output count).
///
/// # Safety
/// As `sgp_model_update`, with `y` NULL or pointing to `y_len` readable
/// floats and `out` NULL or pointing to `out_len` writable innovations.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_model_update_all(
    model: *mut SgpModel,
    x: *const f32,
    x_len: usize,
    y: *const f32,
    y_len: usize,
    out: *mut SgpInnovation,
    out_len: usize,
) -> SgpStatus {
    // SAFETY: this function's contract is `update_all`'s.
    unsafe { update_all(model, x, x_len, y, y_len, out, out_len) }
}

/// Sets the update settings `sgp_model_update` uses from now on (a load
/// keeps them; the defaults are forgetting 1, gate INFINITY).
/// `SGP_STATUS_INVALID_SETTING` if the forgetting factor is outside (0, 1]
/// or the gate is not > 0 (the settings are then unchanged).
///
/// # Safety
/// As `sgp_model_update` for `model`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_model_set_update_settings(
    model: *mut SgpModel,
    settings: SgpUpdateSettings,
) -> SgpStatus {
    // SAFETY: the caller's promise about `model`.
    match unsafe { loaded_mut(model) } {
        Ok(device) => SgpStatus::from(device.set_update_settings(UpdateSettings {
            forgetting: settings.forgetting,
            gate: settings.gate,
            ..UpdateSettings::default()
        })),
        Err(status) => status,
    }
}

/// The model's update settings into `out`.
///
/// # Safety
/// As `sgp_model_predict` for `model`; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_model_update_settings(
    model: *const SgpModel,
    out: *mut SgpUpdateSettings,
) -> SgpStatus {
    // SAFETY: the caller's promise about `model`.
    let device = match unsafe { loaded(model) } {
        Ok(device) => device,
        Err(status) => return status,
    };
    if out.is_null() {
        return SgpStatus::NullPointer;
    }
    if !out.is_aligned() {
        return SgpStatus::Misaligned;
    }
    let settings = device.update_settings();
    // SAFETY: non-null, aligned, and writable (the caller's promise).
    unsafe {
        out.write(SgpUpdateSettings {
            forgetting: settings.forgetting,
            gate: settings.gate,
        });
    }
    SgpStatus::Ok
}

/// Whether the loaded model can learn on the device (its blob has a
/// learning block); false if `model` is NULL or holds no loaded model.
///
/// # Safety
/// As `sgp_model_predict` for `model`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_model_is_updatable(model: *const SgpModel) -> bool {
    // SAFETY: this function's contract is `loaded`'s.
    unsafe { loaded(model) }.is_ok_and(DeviceModel::is_updatable)
}

/// Writes the model, with everything it has learned, as a blob into `out`
/// (`out_len` bytes), for firmware to keep in flash and load after a reset:
/// `source` (`source_len` bytes: the blob it was loaded from, or one it
/// wrote since) with its learned numbers replaced and its CRC recomputed,
/// `source_len` bytes long; the length goes to `written`.
/// `SGP_STATUS_FOREIGN_BLOB` if `source` is not this model's,
/// `SGP_STATUS_BUFFER_TOO_SMALL` if `out_len < source_len`,
/// `SGP_STATUS_NOT_UPDATABLE` for a model without a learning block.
///
/// # Safety
/// As `sgp_model_predict` for `model`; `source` NULL or pointing to
/// `source_len` readable bytes, `out` NULL or to `out_len` writable bytes
/// (not overlapping `source`), `written` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_model_write_blob(
    model: *const SgpModel,
    source: *const u8,
    source_len: usize,
    out: *mut u8,
    out_len: usize,
    written: *mut usize,
) -> SgpStatus {
    // SAFETY: the caller's promise about `model`.
    let device = match unsafe { loaded(model) } {
        Ok(device) => device,
        Err(status) => return status,
    };
    if source.is_null() || out.is_null() || written.is_null() {
        return SgpStatus::NullPointer;
    }
    if !written.is_aligned() {
        return SgpStatus::Misaligned;
    }
    // SAFETY: non-null byte pointers (no alignment needed) to the lengths
    // the caller promises, not overlapping (the caller's promise).
    let (source, out) = unsafe {
        (
            core::slice::from_raw_parts(source, source_len),
            core::slice::from_raw_parts_mut(out, out_len),
        )
    };
    match device.write_blob(source, out) {
        Ok(len) => {
            // SAFETY: non-null, aligned, writable (the caller's promise).
            unsafe { written.write(len) };
            SgpStatus::Ok
        }
        Err(error) => SgpStatus::from_error(error),
    }
}

/// Makes `uncertain` ready for predictions at a Gaussian input of the
/// loaded `model` (it keeps what it needs; the model may change
/// afterwards): the basis in feature units and each output's variance
/// matrix, `O(M^3)` once. `SGP_STATUS_NO_CLOSED_FORM` for a Matérn kernel
/// or a learned projection. On failure `uncertain` holds nothing.
///
/// # Safety
/// `uncertain` must be NULL or point to `uncertain_size` writable bytes
/// not used by another call meanwhile; `model` as for `sgp_model_predict`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_uncertain_prepare(
    uncertain: *mut SgpUncertain,
    uncertain_size: usize,
    model: *const SgpModel,
) -> SgpStatus {
    // SAFETY: the caller's promise about `model`.
    let device = match unsafe { loaded(model) } {
        Ok(device) => device,
        Err(status) => return status,
    };
    let prepare = |prepared: &mut PreparedUncertain| {
        (prepared.inputs, prepared.outputs) = (device.input_dim(), device.output_count());
        SgpStatus::from(prepared.uncertain.prepare(device))
    };
    // SAFETY: the caller's promise about `uncertain`.
    unsafe { slot::fill_slot(uncertain, uncertain_size, prepare) }
}

/// The moments of every output at a raw input `x ~ N(mean, cov)` (`cov`
/// the `d x d` covariance, row-major, `d = mean_len` the model's input
/// count; its symmetric part is used): `out_mean[P]`, `out_covariance[P *
/// P]` (noise on the diagonal, as `sgp_model_predict`'s variance),
/// `out_input_output[d * P]` (`Cov[x_i, y_a]` at `i * P + a`), for the
/// model's `P` outputs; `outputs_len` must be at least `P`. Constant time,
/// `O(M^2 (D + P^2))`, f32 (see the guide's "Prediction at an uncertain
/// input"). `SGP_STATUS_INVALID_COVARIANCE` for a covariance that is not
/// `d x d`, finite and positive semi-definite.
///
/// # Safety
/// `uncertain` NULL or passed to `sgp_uncertain_prepare` (or zeroed), not
/// being prepared meanwhile; `mean` and `cov` NULL or pointing to
/// `mean_len` and `cov_len` readable floats; the three outputs NULL or
/// writable as above. The outputs are written only on success.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the C signature: pointer and length pairs
pub unsafe extern "C" fn sgp_uncertain_predict(
    uncertain: *const SgpUncertain,
    mean: *const f32,
    mean_len: usize,
    cov: *const f32,
    cov_len: usize,
    out_mean: *mut f32,
    out_covariance: *mut f32,
    out_input_output: *mut f32,
    outputs_len: usize,
) -> SgpStatus {
    // SAFETY: the caller's promise about `uncertain`.
    let slot = match unsafe { loaded(uncertain) } {
        Ok(prepared) => prepared,
        Err(status) => return status,
    };
    let pointers = [mean, cov, out_mean, out_covariance, out_input_output];
    if pointers.iter().any(|p| p.is_null()) {
        return SgpStatus::NullPointer;
    }
    if !pointers.iter().all(|p| p.is_aligned()) {
        return SgpStatus::Misaligned;
    }
    let (d, p) = (slot.inputs, slot.outputs);
    if mean_len != d {
        return SgpStatus::InputLength;
    }
    if cov_len != d * d {
        return SgpStatus::from_error(Error::InvalidCovariance);
    }
    if outputs_len < p {
        return SgpStatus::OutputTooSmall;
    }
    // SAFETY: non-null and aligned; the caller promises `mean_len <=
    // SGP_CAPACITY_D` and `cov_len` readable floats.
    let (mean, cov) = unsafe {
        (
            core::slice::from_raw_parts(mean, mean_len),
            core::slice::from_raw_parts(cov, cov_len),
        )
    };
    let y = match slot.uncertain.predict(demo_reachable_panic(mean), cov) {
        Ok(y) => y,
        Err(error) => return SgpStatus::from_error(error),
    };
    let covariance = y
        .covariance
        .iter()
        .take(p)
        .flat_map(|row| row.iter().take(p));
    let input_output = y
        .input_output
        .iter()
        .take(d)
        .flat_map(|row| row.iter().take(p));
    // SAFETY: each output is non-null and aligned and holds `P`, `P * P`
    // and `d * P` floats (the caller's promise, `P <= outputs_len`).
    unsafe {
        let _ = write_all(out_mean, p, y.mean.iter().take(p).copied(), p);
        let _ = write_all(out_covariance, p * p, covariance.copied(), p * p);
        let _ = write_all(out_input_output, d * p, input_output.copied(), d * p);
    }
    SgpStatus::Ok
}

/// A sentence describing `status` (any value: unknown codes get one too).
/// The string is static and NUL-terminated.
#[unsafe(no_mangle)]
pub extern "C" fn sgp_status_message(status: i32) -> *const c_char {
    SgpStatus::from_code(status)
        .map_or(c"unknown sgp status code", SgpStatus::message)
        .as_ptr()
}

/// `sgp_model_update_all` (and `sgp_model_update`, one target).
///
/// # Safety
/// As `sgp_model_update_all`.
unsafe fn update_all(
    model: *mut SgpModel,
    x: *const f32,
    x_len: usize,
    y: *const f32,
    y_len: usize,
    out: *mut SgpInnovation,
    out_len: usize,
) -> SgpStatus {
    // SAFETY: the caller's promise about `model`.
    let device = match unsafe { loaded_mut(model) } {
        Ok(device) => device,
        Err(status) => return status,
    };
    if x.is_null() || y.is_null() {
        return SgpStatus::NullPointer;
    }
    if !x.is_aligned() || !y.is_aligned() || !out.is_aligned() {
        return SgpStatus::Misaligned;
    }
    if x_len != device.input_dim() {
        return SgpStatus::InputLength;
    }
    let count = device.output_count();
    if y_len != count {
        return SgpStatus::TargetLength;
    }
    if !out.is_null() && out_len < count {
        return SgpStatus::OutputTooSmall;
    }
    // SAFETY: non-null and aligned; the caller promises `x_len` and
    // `y_len` readable floats, both at most a capacity (checked above).
    let (x, y) = unsafe {
        (
            core::slice::from_raw_parts(x, x_len),
            core::slice::from_raw_parts(y, y_len),
        )
    };
    match device.update_all(demo_reachable_panic(x), y) {
        Ok(all) if out.is_null() => {
            let _ = all;
            SgpStatus::Ok
        }
        // SAFETY: `out` is non-null, aligned and holds `out_len >= count`
        // innovations (checked above, and the caller's promise).
        Ok(all) => unsafe {
            write_all(
                out,
                out_len,
                all.iter().map(|&i| SgpInnovation::from(i)),
                all.len(),
            )
        },
        Err(error) => SgpStatus::from_error(error),
    }
}

/// The checks every evaluation makes, then `f` on the model and the input,
/// its answer written to `out`.
///
/// # Safety
/// `model` as for [`loaded`]; `x` NULL or pointing to `x_len` readable
/// floats; `out` NULL or writable.
unsafe fn evaluate<T>(
    model: *const SgpModel,
    x: *const f32,
    x_len: usize,
    out: *mut T,
    f: impl FnOnce(&DeviceModel, &[f32]) -> Result<T, Error>,
) -> SgpStatus {
    // SAFETY: the caller's promises are `prepared`'s.
    let (device, x) = match unsafe { prepared(model, x, x_len, out) } {
        Ok(ready) => ready,
        Err(status) => return status,
    };
    match f(device, x) {
        Ok(value) => {
            // SAFETY: non-null, aligned (checked by `prepared`) and writable
            // (the caller's promise).
            unsafe { out.write(value) };
            SgpStatus::Ok
        }
        Err(error) => SgpStatus::from_error(error),
    }
}

/// What the C calls ask alike of a loaded model and a loaded artefact.
trait Evaluator {
    /// Number of raw inputs a prediction takes.
    fn input_dim(&self) -> usize;
    /// Every output's prediction at `x`.
    fn predict_all(&self, x: &[f32]) -> Result<Outputs<Prediction, CAPACITY_P>, Error>;
}

impl Evaluator for DeviceModel {
    fn input_dim(&self) -> usize {
        DeviceModel::input_dim(self)
    }
    fn predict_all(&self, x: &[f32]) -> Result<Outputs<Prediction, CAPACITY_P>, Error> {
        DeviceModel::predict_all(self, x)
    }
}

/// `sgp_model_predict_all` and `sgp_artefact_predict_all`.
///
/// # Safety
/// As `sgp_model_predict_all`, for storage of either kind.
unsafe fn predict_all<S: Storage<Value: Evaluator>>(
    storage: *const S,
    x: *const f32,
    x_len: usize,
    out: *mut SgpPrediction,
    out_len: usize,
) -> SgpStatus {
    // SAFETY: this function's contract is `prepared`'s and `write_all`'s.
    unsafe {
        let (device, x) = match prepared(storage, x, x_len, out) {
            Ok(ready) => ready,
            Err(status) => return status,
        };
        match device.predict_all(x) {
            Ok(all) => write_all(
                out,
                out_len,
                all.iter().map(|p| SgpPrediction {
                    mean: p.mean,
                    variance: p.variance,
                }),
                all.len(),
            ),
            Err(error) => SgpStatus::from_error(error),
        }
    }
}

/// The checks every evaluation makes, in order: something loaded in
/// `storage`, non-null and aligned `x` and `out`, `x_len` the input count;
/// then what is loaded and the input as a slice.
///
/// # Safety
/// `storage` as for [`loaded`]; `x` NULL or pointing to `x_len` readable
/// floats.
unsafe fn prepared<'a, S: Storage<Value: Evaluator>, T>(
    storage: *const S,
    x: *const f32,
    x_len: usize,
    out: *mut T,
) -> Result<(&'a S::Value, &'a [f32]), SgpStatus> {
    // SAFETY: the caller's promise about `storage`.
    let device = unsafe { loaded(storage) }?;
    if out.is_null() || x.is_null() {
        return Err(SgpStatus::NullPointer);
    }
    if !out.is_aligned() || !x.is_aligned() {
        return Err(SgpStatus::Misaligned);
    }
    // Before the slice is made: a C caller passing `sizeof x` (bytes) for
    // the count gets an error, not a read past its array.
    if x_len != device.input_dim() {
        return Err(SgpStatus::InputLength);
    }
    // SAFETY: non-null and aligned; the caller promises `x_len` readable
    // floats, and `x_len` is at most `SGP_CAPACITY_D`, so the size cannot
    // overflow.
    let x = unsafe { core::slice::from_raw_parts(x, x_len) };
    Ok((device, demo_reachable_panic(x)))
}

/// Writes the `count` `values` to `out` if it holds them (`out_len`).
///
/// # Safety
/// `out` non-null, aligned and pointing to `out_len` writable `T`s.
unsafe fn write_all<T>(
    out: *mut T,
    out_len: usize,
    values: impl Iterator<Item = T>,
    count: usize,
) -> SgpStatus {
    if out_len < count {
        return SgpStatus::OutputTooSmall;
    }
    for (i, value) in values.take(count).enumerate() {
        // SAFETY: `i < count <= out_len` elements the caller made writable.
        unsafe { out.add(i).write(value) };
    }
    SgpStatus::Ok
}

/// With feature `demo-reachable-panic`, slices the input with a length the
/// optimiser cannot know, i.e. a bounds check that can fail: capi's
/// panic-proof.sh checks that the proof then fails, so that its passing is
/// not vacuous. Without the feature this is the identity.
#[inline(always)]
#[allow(clippy::indexing_slicing)]
fn demo_reachable_panic(x: &[f32]) -> &[f32] {
    if cfg!(feature = "demo-reachable-panic") {
        &x[..core::hint::black_box(x.len() + 1)]
    } else {
        x
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use std::boxed::Box;
    use std::collections::BTreeSet;
    use std::ffi::CStr;
    use std::format;
    use std::string::String;
    use std::vec::Vec;

    use sgp_runtime::Dimension;

    use super::*;

    const BLOB: &[u8] = include_bytes!("../../runtime/tests/data/doc-model.sgp");
    const HEADER: &str = include_str!(concat!(env!("OUT_DIR"), "/sgp.h"));

    fn load(blob: &[u8]) -> (Box<SgpModel>, SgpStatus) {
        let mut model = Box::new(SgpModel {
            words: [0; SGP_MODEL_STORAGE_WORDS],
        });
        // SAFETY: a whole, exclusively owned `SgpModel`, and `blob`.
        let status = unsafe {
            sgp_model_load(
                &mut *model,
                size_of::<SgpModel>(),
                blob.as_ptr(),
                blob.len(),
            )
        };
        (model, status)
    }

    fn message(status: i32) -> &'static str {
        // SAFETY: the library returns static NUL-terminated strings.
        unsafe { CStr::from_ptr(sgp_status_message(status)) }
            .to_str()
            .unwrap()
    }

    #[test]
    fn every_runtime_error_has_a_status_of_its_own() {
        let errors = [
            Error::Truncated {
                expected: 1,
                found: 0,
            },
            Error::BadMagic,
            Error::UnsupportedVersion { found: 9 },
            Error::TrailingBytes {
                expected: 0,
                found: 1,
            },
            Error::CrcMismatch {
                stored: 0,
                computed: 1,
            },
            Error::Malformed,
            Error::CapacityExceeded {
                dimension: Dimension::Basis,
                required: 2,
                capacity: 1,
            },
            Error::CapacityExceeded {
                dimension: Dimension::Feature,
                required: 2,
                capacity: 1,
            },
            Error::CapacityExceeded {
                dimension: Dimension::Input,
                required: 2,
                capacity: 1,
            },
            Error::CapacityExceeded {
                dimension: Dimension::Output,
                required: 2,
                capacity: 1,
            },
            Error::InconsistentSizes {
                field: "beta",
                expected: 1,
                found: 2,
            },
            Error::NonFinite { field: "beta" },
            Error::InvalidValue { field: "beta" },
            Error::InputLength {
                expected: 1,
                found: 2,
            },
            Error::NonFiniteInput,
            Error::NotClassifier,
            Error::NameTooLong {
                input: Some(0),
                length: 40,
                capacity: 31,
            },
            Error::InputOverflow,
            Error::NoTrainingRange,
            Error::NotUpdatable,
            Error::InvalidTarget,
            Error::Outlier,
            Error::InvalidSetting,
            Error::TargetLength {
                expected: 1,
                found: 2,
            },
            Error::BufferTooSmall {
                required: 2,
                capacity: 1,
            },
            Error::ForeignBlob,
            Error::NoClosedForm,
            Error::InvalidCovariance,
            Error::MemberMismatch { member: 1 },
        ];
        let codes: BTreeSet<i32> = errors
            .iter()
            .map(|e| SgpStatus::from_error(*e) as i32)
            .collect();
        assert_eq!(codes.len(), errors.len());
        assert!(codes.iter().all(|&c| (1..100).contains(&c)), "{codes:?}");
    }

    #[test]
    fn every_code_has_its_own_message_and_unknown_codes_get_one() {
        let codes: BTreeSet<i32> = SgpStatus::ALL.iter().map(|s| *s as i32).collect();
        assert_eq!(codes.len(), SgpStatus::ALL.len());
        let messages: BTreeSet<&str> = codes.iter().map(|&c| message(c)).collect();
        assert_eq!(messages.len(), codes.len());
        for status in SgpStatus::ALL {
            assert_eq!(SgpStatus::from_code(status as i32), Some(status));
        }
        for unknown in [-1, 30, 99, 105, i32::MAX] {
            assert_eq!(message(unknown), "unknown sgp status code");
        }
    }

    #[test]
    fn the_header_and_the_guide_list_every_status() {
        let listed: Vec<(String, i32)> = HEADER
            .lines()
            .filter_map(|l| l.trim().strip_prefix("SGP_STATUS_"))
            .filter_map(|l| {
                let (name, code) = l.trim_end_matches(',').split_once(" = ")?;
                Some((format!("SGP_STATUS_{name}"), code.parse().ok()?))
            })
            .collect();
        let codes: Vec<i32> = listed.iter().map(|(_, c)| *c).collect();
        let all: Vec<i32> = SgpStatus::ALL.iter().map(|s| *s as i32).collect();
        assert_eq!(codes, all, "{HEADER}");
        let chapter = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../docs/src/c-library.md"
        ))
        .unwrap();
        for (name, code) in &listed {
            let row = format!("| {code} | `{name}` | {} |", message(*code));
            assert!(
                chapter.contains(&row),
                "docs/src/c-library.md lacks the row\n{row}"
            );
        }
    }

    #[test]
    fn uncertain_answers_are_the_runtimes() {
        let (model, status) = load(BLOB);
        assert_eq!(status, SgpStatus::Ok);
        let mut storage = Box::new(SgpUncertain {
            words: [0; SGP_UNCERTAIN_STORAGE_WORDS],
        });
        let (x, s) = ([0.5f32, -1.0], [0.04f32, 0.01, 0.01, 0.09]);
        let predict = |u: &SgpUncertain, x: &[f32], s: &[f32], outputs: usize| {
            let (mut m, mut c, mut io) = ([0.0f32; 1], [0.0f32; 1], [0.0f32; 2]);
            // SAFETY: live slices and outputs of the sizes passed.
            let status = unsafe {
                sgp_uncertain_predict(
                    u,
                    x.as_ptr(),
                    x.len(),
                    s.as_ptr(),
                    s.len(),
                    m.as_mut_ptr(),
                    c.as_mut_ptr(),
                    io.as_mut_ptr(),
                    outputs,
                )
            };
            (status, m, c, io)
        };
        assert_eq!(predict(&storage, &x, &s, 1).0, SgpStatus::NotLoaded);
        // SAFETY: an exclusively owned `SgpUncertain` and a loaded model.
        let prepare =
            |u: &mut SgpUncertain, size: usize| unsafe { sgp_uncertain_prepare(u, size, &*model) };
        assert_eq!(prepare(&mut storage, 8), SgpStatus::StorageTooSmall);
        assert_eq!(
            prepare(&mut storage, size_of::<SgpUncertain>()),
            SgpStatus::Ok
        );
        let runtime = Model::<16, 2, 2>::from_bytes(BLOB).unwrap();
        let want = runtime.uncertain().unwrap().predict(&x, &s).unwrap();
        let (status, m, c, io) = predict(&storage, &x, &s, 1);
        assert_eq!(status, SgpStatus::Ok);
        let close = |a: f32, b: f32| (a - b).abs() <= 1e-5 * (1.0 + b.abs());
        assert!(close(m[0], want.mean[0]), "{m:?} {want:?}");
        assert!(close(c[0], want.covariance[0][0]), "{c:?} {want:?}");
        assert!(close(io[0], want.input_output[0][0]) && close(io[1], want.input_output[1][0]));
        assert_eq!(predict(&storage, &x[..1], &s, 1).0, SgpStatus::InputLength);
        assert_eq!(
            predict(&storage, &x, &s[..3], 1).0,
            SgpStatus::InvalidCovariance
        );
        assert_eq!(
            predict(&storage, &x, &[-1.0, 0.0, 0.0, 0.1], 1).0,
            SgpStatus::InvalidCovariance
        );
        assert_eq!(predict(&storage, &x, &s, 0).0, SgpStatus::OutputTooSmall);
    }

    #[test]
    fn answers_are_the_runtimes() {
        let (model, status) = load(BLOB);
        assert_eq!(status, SgpStatus::Ok);
        let runtime = Model::<3, 2, 2>::from_bytes(BLOB).unwrap();
        // SAFETY: a loaded model.
        assert_eq!(unsafe { sgp_model_input_dim(&*model) }, 2);
        for x in [[0.0f32, 0.0], [0.5, -1.0], [1e6, -1e6]] {
            let mut p = SgpPrediction {
                mean: f32::NAN,
                variance: f32::NAN,
            };
            let mut mean = f32::NAN;
            let mut probability = 0.0;
            // SAFETY: a loaded model, two readable floats, writable outputs.
            unsafe {
                assert_eq!(
                    sgp_model_predict(&*model, x.as_ptr(), 2, &mut p),
                    SgpStatus::Ok
                );
                assert_eq!(
                    sgp_model_mean(&*model, x.as_ptr(), 2, &mut mean),
                    SgpStatus::Ok
                );
                assert_eq!(
                    sgp_model_probability(&*model, x.as_ptr(), 2, &mut probability),
                    SgpStatus::NotClassifier
                );
            }
            let expected = runtime.predict(&x).unwrap();
            assert_eq!((p.mean, p.variance), (expected.mean, expected.variance));
            assert_eq!(mean, runtime.mean(&x).unwrap());
            assert_eq!(probability, 0.0, "written on failure");
        }
    }

    /// C cannot make a misaligned pointer without undefined behaviour of its
    /// own, so this side of the checks is tested from Rust.
    #[test]
    fn misaligned_pointers_are_refused() {
        let (model, _) = load(BLOB);
        let mut words = [0u64; SGP_MODEL_STORAGE_WORDS + 1];
        let shifted = words
            .as_mut_ptr()
            .cast::<u8>()
            .wrapping_add(4)
            .cast::<SgpModel>();
        let floats = [0.0f32; 3];
        let odd = floats.as_ptr().cast::<u8>().wrapping_add(1).cast::<f32>();
        let mut out = [0.0f32; 2];
        let odd_out = out.as_mut_ptr().cast::<u8>().wrapping_add(1).cast::<f32>();
        // SAFETY: every pointer covers enough memory; only alignment is off,
        // which the functions check before using them.
        unsafe {
            assert_eq!(
                sgp_model_load(shifted, size_of::<SgpModel>(), BLOB.as_ptr(), BLOB.len()),
                SgpStatus::Misaligned
            );
            assert_eq!(
                sgp_model_mean(shifted, floats.as_ptr(), 2, out.as_mut_ptr()),
                SgpStatus::Misaligned
            );
            assert_eq!(sgp_model_input_dim(shifted), 0);
            assert_eq!(
                sgp_model_mean(&*model, odd, 2, out.as_mut_ptr()),
                SgpStatus::Misaligned
            );
            assert_eq!(
                sgp_model_mean(&*model, floats.as_ptr(), 2, odd_out),
                SgpStatus::Misaligned
            );
        }
    }
}
