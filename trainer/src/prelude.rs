//! The library in one page: read a table, fit what the options ask (the
//! same builder `sgp fit` and Python use), export the blob the device runs
//! (checked against the f64 model), evaluate it on held-out rows.
//!
//! ```
//! use sgp_trainer::prelude::*;
//!
//! # fn main() -> sgp_trainer::Result<()> {
//! // Dataset::from_csv("train.csv", Some("y")) reads a file the same way.
//! let (x, y) = synthetic(240, 2, 7);
//! let data = Dataset::from_raw(x, y, vec!["a".into(), "b".into()], "y".into())?;
//! let (train, test) = data.split(0.25, 0)?;
//!
//! // `sgp fit --model spgp --m 10`; no model named: `auto` for a regression.
//! let options = Options {
//!     model: Some(ModelChoice::parse("spgp")?),
//!     m: Some(10),
//!     ..Options::default()
//! };
//! let mut fitted = fit(&train, &options.request(&train)?, &mut |_| {})?;
//! let exported = options.export(&mut fitted, &train.raw_x(), false)?;
//!
//! // Through the runtime itself, in f32, as the device predicts.
//! let figures = evaluate_blob(&exported.blob, &test.raw_x(), &test.raw_y())?;
//! assert!(figures.smse < 0.5, "{figures:?}");
//! # Ok(())
//! # }
//! ```

pub use crate::choose::fit;
pub use crate::data::Dataset;
pub use crate::evaluate::{evaluate_blob, Evaluation};
pub use crate::export::Exported;
pub use crate::fit::{Fit, Method};
pub use crate::job::{Job, Source};
pub use crate::options::{ModelChoice, Options};
pub use crate::synth::synthetic;
pub use crate::{Error, Result};
