//! The models evaluated on target: `sgp_runtime::Model`s loaded from the blobs
//! the host `sgp` tool wrote (embedded by build.rs), kept in statics.
//!
//! Three sizes of the same problem (M = 16, 32, 64 basis functions, D = 4) so
//! the firmware can show how the cost grows with M, plus a VSGP model
//! (per-basis widths and amplitudes) and a GPLasso model (basis = selected
//! training inputs) at M = 32 on the same data, to show what those cost next
//! to SPGP's shared widths; an SPGP+DR model (16 inputs projected to 4) and a
//! plain SPGP model on the same 16 inputs, to price the projection; an IVM
//! probit classifier (M = 32 active training inputs, one triangular factor)
//! on the same 4 inputs, to price classification; the
//! control loop uses the SPGP model at [`CONTROL_M`]. Each `Model` type's capacity equals its blob's M exactly:
//! the runtime zero-fills and walks arrays of the *capacity*, so a larger
//! capacity would inflate the instruction counts.

pub use sgp_runtime::{Error, Model, Prediction, PredictionWithGradient};

/// Raw inputs (and feature dimensions: neither SPGP nor VSGP has a
/// projection) of every model.
pub const INPUT_DIM: usize = 4;

/// A model with `M` basis functions over the `INPUT_DIM` inputs.
pub type ModelM<const M: usize> = Model<M, INPUT_DIM, INPUT_DIM>;
pub type Model16 = ModelM<16>;
pub type Model32 = ModelM<32>;
pub type Model64 = ModelM<64>;

/// Raw inputs `D` and projected dimension `G` of the SPGP+DR model: a
/// 16-channel sensor vector projected to 4 dimensions.
pub const DR_INPUT_DIM: usize = 16;
pub const DR_FEATURE_DIM: usize = 4;
/// The SPGP+DR model type, M = 32.
pub type ModelDr32 = Model<32, DR_FEATURE_DIM, DR_INPUT_DIM>;
/// Plain SPGP on the DR model's 16 inputs (no projection: G = D = 16), M = 32.
pub type ModelD16x32 = Model<32, DR_INPUT_DIM, DR_INPUT_DIM>;

/// Basis-function count of the model the control loop runs (the target).
pub const CONTROL_M: usize = 32;

/// Blobs written by the host tool to `model/m{M}.sgp` (see run.sh).
pub static BLOB_M16: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/m16.sgp"));
pub static BLOB_M32: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/m32.sgp"));
pub static BLOB_M64: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/m64.sgp"));
/// The VSGP blob, `model/vsgp_m32.sgp`. It loads into the same `Model32`
/// type as the SPGP one: the runtime always stores a width per basis
/// function and dimension, and expands SPGP's shared widths at load.
pub static BLOB_VSGP_M32: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/vsgp_m32.sgp"));
/// The SPGP+DR blob, `model/dr_m32.sgp` (D = 16, G = 4, fitted on its own
/// 16-D data).
pub static BLOB_DR_M32: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/dr_m32.sgp"));
/// The GPLasso blob, `model/gplasso_m32.sgp` (D = 4, the SPGP models' data):
/// shared widths and two factors like SPGP, so it loads into `Model32` too.
pub static BLOB_GPLASSO_M32: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/gplasso_m32.sgp"));
/// Plain SPGP on the SPGP+DR model's 16-D data, `model/spgp_d16_m32.sgp`.
pub static BLOB_SPGP_D16_M32: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/spgp_d16_m32.sgp"));
/// SPGP with the Matérn 3/2 kernel on the SPGP models' data,
/// `model/matern32_m32.sgp`: the same layout, so it loads into `Model32`.
pub static BLOB_MATERN32_M32: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/matern32_m32.sgp"));
/// The IVM probit classifier, `model/ivm_m32.sgp` (D = 4, the SPGP models'
/// inputs, classes = sign of their target): shared widths and one factor,
/// so it loads into `Model32` as well (its second factor stays unused).
pub static BLOB_IVM_M32: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/ivm_m32.sgp"));
/// The SVGP probit classifier on the IVM's data, `model/svgp_m32.sgp`:
/// shared widths and two factors, so it loads into `Model32` too.
pub static BLOB_SVGP_M32: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/svgp_m32.sgp"));

/// The loaded models: SPGP at three sizes, VSGP, GPLasso, SPGP+DR and
/// SPGP on 16 inputs at M = 32, and the IVM and SVGP classifiers at M = 32.
pub struct Models {
    pub m16: &'static Model16,
    pub m32: &'static Model32,
    pub m64: &'static Model64,
    pub vsgp_m32: &'static Model32,
    pub gplasso_m32: &'static Model32,
    pub dr_m32: &'static ModelDr32,
    pub spgp_d16_m32: &'static ModelD16x32,
    pub ivm_m32: &'static Model32,
    pub svgp_m32: &'static Model32,
    pub matern32_m32: &'static Model32,
}

/// Which blob failed to load (e.g. "spgp M=32"), and why.
#[derive(Clone, Copy, Debug)]
pub struct LoadError {
    pub blob: &'static str,
    pub error: Error,
}

/// Loads every blob into its static; call once (a second call returns
/// `None`, since each static can be handed out mutably only once).
///
/// Statics rather than locals in `main`: the 60.6 KB of models then show up
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
    let vsgp_m32 = cortex_m::singleton!(MODEL_VSGP_M32: Model32 = Model32::new())?;
    let gplasso_m32 = cortex_m::singleton!(MODEL_GPLASSO_M32: Model32 = Model32::new())?;
    let dr_m32 = cortex_m::singleton!(MODEL_DR_M32: ModelDr32 = ModelDr32::new())?;
    let spgp_d16_m32 = cortex_m::singleton!(MODEL_SPGP_D16_M32: ModelD16x32 = ModelD16x32::new())?;
    let ivm_m32 = cortex_m::singleton!(MODEL_IVM_M32: Model32 = Model32::new())?;
    let svgp_m32 = cortex_m::singleton!(MODEL_SVGP_M32: Model32 = Model32::new())?;
    let matern32_m32 = cortex_m::singleton!(MODEL_MATERN32_M32: Model32 = Model32::new())?;
    Some(load_into(Slots {
        m16,
        m32,
        m64,
        vsgp_m32,
        gplasso_m32,
        dr_m32,
        spgp_d16_m32,
        ivm_m32,
        svgp_m32,
        matern32_m32,
    }))
}

/// The statics [`load`] fills, each handed out mutably once.
struct Slots {
    m16: &'static mut Model16,
    m32: &'static mut Model32,
    m64: &'static mut Model64,
    vsgp_m32: &'static mut Model32,
    gplasso_m32: &'static mut Model32,
    dr_m32: &'static mut ModelDr32,
    spgp_d16_m32: &'static mut ModelD16x32,
    ivm_m32: &'static mut Model32,
    svgp_m32: &'static mut Model32,
    matern32_m32: &'static mut Model32,
}

/// Decodes each blob into its model; the first failure is returned (no
/// `unwrap`: that would be a panic path). A model that failed to load is left
/// empty by the runtime, and is not handed out.
fn load_into(s: Slots) -> Result<Models, LoadError> {
    let err = |blob| move |error| LoadError { blob, error };
    s.m16.load(BLOB_M16).map_err(err("spgp M=16"))?;
    s.m32.load(BLOB_M32).map_err(err("spgp M=32"))?;
    s.m64.load(BLOB_M64).map_err(err("spgp M=64"))?;
    s.vsgp_m32.load(BLOB_VSGP_M32).map_err(err("vsgp M=32"))?;
    s.gplasso_m32
        .load(BLOB_GPLASSO_M32)
        .map_err(err("gplasso M=32"))?;
    s.dr_m32.load(BLOB_DR_M32).map_err(err("spgp-dr M=32"))?;
    s.spgp_d16_m32
        .load(BLOB_SPGP_D16_M32)
        .map_err(err("spgp D=16 M=32"))?;
    s.ivm_m32.load(BLOB_IVM_M32).map_err(err("ivm M=32"))?;
    s.svgp_m32.load(BLOB_SVGP_M32).map_err(err("svgp M=32"))?;
    s.matern32_m32
        .load(BLOB_MATERN32_M32)
        .map_err(err("matern32 M=32"))?;
    Ok(Models {
        m16: s.m16,
        m32: s.m32,
        m64: s.m64,
        vsgp_m32: s.vsgp_m32,
        gplasso_m32: s.gplasso_m32,
        dr_m32: s.dr_m32,
        spgp_d16_m32: s.spgp_d16_m32,
        ivm_m32: s.ivm_m32,
        svgp_m32: s.svgp_m32,
        matern32_m32: s.matern32_m32,
    })
}

/// (mean, variance) at `x`, with any error mapped to (NaN, +inf): the control
/// loop treats that as "unsure" (fallback) and the golden check as a failure,
/// so an error can never pass for a confident prediction.
#[inline]
pub fn predict<const M: usize, const G: usize, const D: usize>(
    model: &Model<M, G, D>,
    x: &[f32],
) -> (f32, f32) {
    pair(model.predict(x))
}

/// [`predict`] of exactly `D` inputs ([`Model::predict_array`]).
#[inline]
pub fn predict_array<const M: usize, const G: usize, const D: usize>(
    model: &Model<M, G, D>,
    x: &[f32; D],
) -> (f32, f32) {
    pair(model.predict_array(x))
}

#[inline]
fn pair(prediction: Result<Prediction, Error>) -> (f32, f32) {
    match prediction {
        Ok(p) => (p.mean, p.variance),
        Err(_) => (f32::NAN, f32::INFINITY),
    }
}

/// Class probability P(+1) of a probit model, any error (e.g. a regression
/// model) mapped to NaN.
#[inline]
pub fn probability<const M: usize, const G: usize, const D: usize>(
    model: &Model<M, G, D>,
    x: &[f32],
) -> f32 {
    model.probability(x).unwrap_or(f32::NAN)
}

/// Mean only, any error mapped to NaN.
#[inline]
pub fn mean<const M: usize, const G: usize, const D: usize>(
    model: &Model<M, G, D>,
    x: &[f32],
) -> f32 {
    model.mean(x).unwrap_or(f32::NAN)
}

/// `predict_with_gradient` at `x`, any error mapped to NaN values and
/// gradients (an infinite variance), which every check treats as a failure.
#[inline]
pub fn predict_with_gradient<const M: usize, const G: usize, const D: usize>(
    model: &Model<M, G, D>,
    x: &[f32],
) -> PredictionWithGradient<D> {
    model
        .predict_with_gradient(x)
        .unwrap_or(PredictionWithGradient {
            mean: f32::NAN,
            variance: f32::INFINITY,
            mean_gradient: [f32::NAN; D],
            variance_gradient: [f32::NAN; D],
        })
}
