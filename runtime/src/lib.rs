//! `sgp-runtime`: evaluates sparse Gaussian-process models on a
//! microcontroller. `no_std`, no allocator, no panics on the predict path,
//! constant time per prediction.
//!
//! Every model the `sgp` trainer fits (SPGP, SPGP+HS, SPGP+DR, VSGP,
//! GPLasso, IVM, exact GP) is exported to one form, so one evaluator serves
//! them all:
//!
//! 1. `z = (x - x_mean) / x_scale`, then optionally `z = P z`;
//! 2. `k_i = a_i exp(-1/2 sum_g w_ig (z_g - c_ig)^2)` for `i < M` (or a
//!    Matérn 1/2, 3/2, 5/2 profile of the same distance: [`Kernel`],
//!    format version 8);
//! 3. mean `m = beta . k`;
//! 4. variance `v = max(0, prior - |L1 k|^2)` by one triangular product
//!    ([`VarianceForm::Product`], format version 4), or
//!    `v = max(0, prior - |L1^-1 k|^2 + |L2^-1 k|^2)` by forward
//!    substitution ([`VarianceForm::Solves`]; the second term only for
//!    FITC-style models), where f32 needs it;
//! 5. regression: `y_mean + y_scale m`, `y_scale^2 (v + noise)`;
//!    probit: `P(y = +1) = Phi((m + b) / sqrt(1 + v))`.
//!
//! A blob may hold several outputs on one basis (format version 5): a
//! `Model<M, G, D, P>` holds up to `P` of them, [`Model::predict_all`]
//! evaluates the basis once and predicts them all, and a multi-class model
//! ([`Link::OneVsRest`], [`Link::Softmax`]: one latent per class)
//! gives its class and probabilities with [`Model::classify`].
//!
//! [`Model::predict_with_gradient`] also gives the gradients of the mean
//! and variance with respect to the raw inputs (and
//! [`Model::probability_with_gradient`] the class probability's), for
//! controllers and filters that linearise the model.
//!
//! Capacities are const generics: `Model<M, G, D>` holds at most `M` basis
//! functions in `G` feature dimensions with `D` raw inputs; a blob may be
//! smaller, never larger. The blob format is in `FORMAT.md`.
//!
//! ```
//! use sgp_runtime::Model;
//! # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
//! let model = Model::<16, 2, 2>::from_bytes(blob)?;
//! let p = model.predict(&[0.5, -1.0])?;
//! let sigma = p.std_dev();
//! assert!(sigma > 0.0 && p.mean.is_finite());
//! # Ok::<(), sgp_runtime::Error>(())
//! ```
//!
//! A model also carries its column names ([`Model::input_names`]) and,
//! from format version 3 on, the range of its training inputs
//! ([`Model::in_training_range`]), so a device can check that it feeds the
//! inputs in the right order and tell when it is extrapolating.
//!
//! Features: `micromath` swaps the built-in branch-free `exp` for
//! micromath's approximation (not recommended: see the README's figures);
//! `alloc` adds `ModelSpec`, the owned form the trainer encodes; `defmt`
//! derives `defmt::Format` for [`Error`] and the other public types, for
//! firmware that logs with defmt.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(test)]
extern crate std;

mod artefact;
mod error;
mod format;
mod math;
mod model;
mod version;
mod whitened;

pub use artefact::{
    artefact_ram_bytes, Artefact, Container, Members, CONTAINER_MAGIC, CONTAINER_VERSION,
};
pub use error::{Dimension, Error};
pub use format::{
    Field, Kernel, Link, ModelKind, Observation, Shape, VarianceForm, MAGIC, PREAMBLE_LEN,
    TRAILER_LEN,
};
#[cfg(feature = "alloc")]
pub use format::{Learning, ModelSpec, OutputSpec};
pub use model::{
    fixed_point_supports, fixed_ram_bytes, ram_bytes, ram_bytes_with_outputs, Classification,
    FixedError, FixedModel, Innovation, Model, Name, Outputs, Prediction, PredictionWithGradient,
    ProbabilityWithGradient, Uncertain, UncertainDerivatives, UncertainPrediction, UpdateSettings,
    NAME_CAPACITY, NOISE_CEILING, NOISE_FLOOR,
};
pub use version::{OLDEST_VERSION, VERSION};
