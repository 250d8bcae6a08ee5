//! The models evaluated on target: `sgp_runtime::Model`s loaded from the blobs
//! the host `sgp` tool wrote (embedded by build.rs), kept in statics.
//!
//! Three sizes of the same problem (M = 16, 32, 64 basis functions, D = 4) so
//! the firmware can show how the cost grows with M; the control loop uses
//! [`CONTROL_M`]. Each `Model` type's capacity equals its blob's M exactly:
//! the runtime zero-fills and walks arrays of the *capacity*, so a larger
//! capacity would inflate the instruction counts.

pub use sgp_runtime::{Error, Model, Prediction};

/// Raw inputs (and feature dimensions: SPGP has no projection) of every model.
pub const INPUT_DIM: usize = 4;

/// A model with `M` basis functions over the `INPUT_DIM` inputs.
pub type ModelM<const M: usize> = Model<M, INPUT_DIM, INPUT_DIM>;
pub type Model16 = ModelM<16>;
pub type Model32 = ModelM<32>;
pub type Model64 = ModelM<64>;

/// Basis-function count of the model the control loop runs (the target).
pub const CONTROL_M: usize = 32;

/// Blobs written by the host tool to `model/m{M}.sgp` (see run.sh).
pub static BLOB_M16: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/m16.sgp"));
pub static BLOB_M32: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/m32.sgp"));
pub static BLOB_M64: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/m64.sgp"));

/// The three loaded models.
pub struct Models {
    pub m16: &'static Model16,
    pub m32: &'static Model32,
    pub m64: &'static Model64,
}

/// Which blob failed to load, and why.
#[derive(Clone, Copy, Debug)]
pub struct LoadError {
    pub m: usize,
    pub error: Error,
}

/// Loads every blob into its static; call once (a second call returns
/// `None`, since each static can be handed out mutably only once).
///
/// Statics rather than locals in `main`: the 27.3 KB of models then show up
/// in `.bss`, which the linker checks against RAM at build time, instead of
/// in a stack whose overflow would only show at run time. Each static starts
/// as the all-zero [`Model::new`] and [`Model::load`] decodes the blob into
/// it in place, so no model is ever built on the stack (main.rs measures the
/// loading step's stack).
pub fn load() -> Option<Result<Models, LoadError>> {
    // `singleton!` is cortex-m's safe wrapper around a `static mut`: it hands
    // out the `&'static mut` once, inside a critical section. `Model::new()`
    // is all-zero bits, so the static stays in `.bss` and initialising it is
    // a zero-fill, not a copy of a template.
    let m16 = cortex_m::singleton!(MODEL_M16: Model16 = Model16::new())?;
    let m32 = cortex_m::singleton!(MODEL_M32: Model32 = Model32::new())?;
    let m64 = cortex_m::singleton!(MODEL_M64: Model64 = Model64::new())?;
    Some(load_into(m16, m32, m64))
}

/// Decodes each blob into its model; the first failure is returned (no
/// `unwrap`: that would be a panic path). A model that failed to load is left
/// empty by the runtime, and is not handed out.
fn load_into(
    m16: &'static mut Model16,
    m32: &'static mut Model32,
    m64: &'static mut Model64,
) -> Result<Models, LoadError> {
    m16.load(BLOB_M16)
        .map_err(|error| LoadError { m: 16, error })?;
    m32.load(BLOB_M32)
        .map_err(|error| LoadError { m: 32, error })?;
    m64.load(BLOB_M64)
        .map_err(|error| LoadError { m: 64, error })?;
    Ok(Models { m16, m32, m64 })
}

/// (mean, variance) at `x`, with any error mapped to (NaN, +inf): the control
/// loop treats that as "unsure" (fallback) and the golden check as a failure,
/// so an error can never pass for a confident prediction.
#[inline]
pub fn predict<const M: usize>(model: &ModelM<M>, x: &[f32]) -> (f32, f32) {
    match model.predict(x) {
        Ok(p) => (p.mean, p.variance),
        Err(_) => (f32::NAN, f32::INFINITY),
    }
}

/// Mean only, any error mapped to NaN.
#[inline]
pub fn mean<const M: usize>(model: &ModelM<M>, x: &[f32]) -> f32 {
    model.mean(x).unwrap_or(f32::NAN)
}
