//! One error type for the trainer; the CLI maps it to exit codes.

use std::path::PathBuf;

/// Everything that can go wrong while reading data, fitting or exporting.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user's input (data file, arguments, model file) is unusable.
    /// The message names the file, row and column where there is one.
    #[error("{0}")]
    BadInput(String),
    /// An input file (data, model) cannot be opened or read: bad input,
    /// as a bad cell is.
    #[error("{path}: cannot read: {source}")]
    Unreadable {
        /// The file involved.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// Writing a file failed (or reading one the tools made themselves).
    #[error("{path}: {source}")]
    Io {
        /// The file involved.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A numerical procedure failed beyond recovery (e.g. Cholesky failed
    /// even at the largest jitter).
    #[error("numerical failure: {0}")]
    Numerical(String),
    /// A model blob could not be built or read.
    #[error("model blob: {0}")]
    Blob(#[from] sgp_runtime::Error),
    /// The exported f32 model deviates from the f64 trainer beyond tolerance.
    #[error("export fidelity check failed: {0}")]
    Fidelity(String),
    /// No model of a sweep meets the flash, RAM or instruction budget.
    #[error("{0}")]
    OverBudget(String),
    /// A model does not fit the device capacity asked about (`sgp inspect
    /// --capacity`): not bad input, an answer CI can gate on (exit 1).
    #[error("{0}")]
    DoesNotFit(String),
}

impl Error {
    /// Process exit code: 2 for bad input (an unreadable input file
    /// included), 3 for a sweep whose budget no model meets, 1 for every
    /// other failure.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::BadInput(_) | Error::Unreadable { .. } => 2,
            Error::Blob(_) => 2,
            Error::OverBudget(_) => 3,
            _ => 1,
        }
    }
}

/// Result alias for the trainer.
pub type Result<T, E = Error> = std::result::Result<T, E>;
