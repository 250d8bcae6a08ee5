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
