//! `sgp-trainer`: fits sparse Gaussian-process models on the host (f64) and
//! exports them in the single runtime form that `sgp-runtime` evaluates on a
//! microcontroller (f32).
//!
//! The modules follow the path of one number:
//! `data` (CSV → validated, standardised [`data::Dataset`]) → `fit` (one of
//! the fitting procedures, built from `kernel`, `features`, `inference` and
//! `optimise`) → `model` (a [`model::TrainedModel`] in runtime form, which can
//! predict itself in f64) → `export` (blob bytes plus the f32 fidelity check)
//! → `metrics`; `codegen` writes a blob as C or Rust source for firmware.
//! `synth` generates data with known truth for tests and benchmarks.
//! `sweep` fits a grid of models and picks one for a device's budget
//! (`cost` estimates its instructions per prediction); `plot` draws a
//! blob's predictions.

pub mod codegen;
pub mod cost;
pub mod cure;
pub mod data;
pub mod demo;
pub mod device;
pub mod dynamics;
pub mod error;
pub mod evaluate;
pub mod export;
pub mod features;
pub mod fit;
pub mod gradient;
pub mod icf;
pub mod inference;
pub mod init;
pub mod inspect;
pub mod kernel;
pub mod lars;
pub mod likelihood;
pub mod linalg;
pub mod metrics;
pub mod model;
pub mod multi_target;
pub mod optimise;
pub mod plot;
pub mod precision;
pub mod sweep;
pub mod synth;
pub mod variance_factor;

pub use error::{Error, Result};
