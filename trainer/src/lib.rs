//! `sgp-trainer`: fits sparse Gaussian-process models on the host (f64) and
//! exports them in the single runtime form that `sgp-runtime` evaluates on a
//! microcontroller (f32).
//!
//! The directories follow the path of one number: `data` (CSV or Parquet
//! → validated, standardised [`data::Dataset`]; class labels, several
//! targets, streaming) → `model` (kernel, likelihoods, inducing features,
//! inference, and [`model::TrainedModel`]: the runtime form in f64, which
//! predicts itself) → `evaluate` (the blob on the device: RMSE, NLPD,
//! error rate, calibration, a log replayed through its update) → `fit`
//! (the procedures behind `--model`) → `choose` → `options` → `export`
//! (blob bytes, the f32 fidelity check and its cure, generated source, a
//! blob's description). `numerics` holds the linear algebra, LARS and the
//! optimiser they share; `synth` the generated data and `demo` the demo's
//! fits; `files` the user's files (inputs opened once, outputs
//! replaced whole). [`options`] turns user settings into a fit request and
//! [`choose`] fits it (the choices left open decided on held-out rows and
//! reported). [`job::Job`] is the front door `sgp fit`, `sgp sweep` and
//! Python call: settings and a source read, fitted (in memory or
//! streamed) and exported. Start with the [`prelude`]: one page from a
//! table to a blob.
//!
//! # The public API
//!
//! What a user holds is the [`prelude`], [`job::Job`] and the types their
//! signatures name; the other public paths are those the `sgp` command line
//! and the Python package call. The cargo feature `internals` (the
//! project's own examples, benchmarks and tests turn it on) makes public,
//! at the same paths, the procedures and measurements those need and the
//! API does not (`fit::sparse::fit_sparse`, `numerics::linalg::mul`, ...):
//! without it they are `pub(crate)`, so nothing a user can call depends on
//! them. They carry no stability promise.

// Without `internals`, the items only the project's examples and tests use
// are crate-private and may be unused here; the build with the feature (every
// test, example and clippy run) still checks everything else for dead code.
#![cfg_attr(not(feature = "internals"), allow(dead_code, unused_imports))]

#[macro_use]
pub mod options;
pub mod choose;
pub mod data;
pub mod demo;
pub mod error;
pub mod evaluate;
pub mod export;
pub mod files;
pub mod fit;
pub mod job;
pub mod model;
pub mod numerics;
pub mod prelude;
pub mod synth;

pub use error::{Error, Result};
