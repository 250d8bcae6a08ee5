//! The trainer's errors as Python exceptions, with the trainer's messages.
//!
//! Bad input and unreadable blobs are `ValueError`s (what scikit-learn and
//! numpy users catch) and a file that cannot be written an `OSError`; a
//! blob whose f32 predictions drift from the f64 fit is an
//! `sgp.ExportError`, a failed factorisation an `sgp.NumericalError`, both
//! subclasses of `sgp.SgpError` (itself a `RuntimeError`).

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use sgp_trainer::Error;

create_exception!(
    sgp,
    SgpError,
    PyRuntimeError,
    "Base of the errors sgp raises beyond bad input."
);
create_exception!(
    sgp,
    ExportError,
    SgpError,
    "The f32 blob does not reproduce the f64 model within the export check's tolerance."
);
create_exception!(
    sgp,
    NumericalError,
    SgpError,
    "A numerical procedure failed beyond recovery (e.g. a Cholesky factorisation)."
);

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("SgpError", py.get_type::<SgpError>())?;
    m.add("ExportError", py.get_type::<ExportError>())?;
    m.add("NumericalError", py.get_type::<NumericalError>())?;
    Ok(())
}

/// The trainer's message in the words of the Python API: a command-line
/// flag `--max-points` is the parameter `max_points`, `--force` is
/// `force=True`.
fn pythonic(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("--") {
        out.push_str(&rest[..at]);
        let flag = &rest[at + 2..];
        let len = flag
            .find(|c: char| !(c.is_ascii_lowercase() || c == '-'))
            .unwrap_or(flag.len());
        match &flag[..len] {
            "" => out.push_str("--"),
            "force" => out.push_str("force=True"),
            name => out.push_str(&name.replace('-', "_")),
        }
        rest = &flag[len..];
    }
    out.push_str(rest);
    out
}

/// The exception for a trainer error.
pub(crate) fn to_py(error: Error) -> PyErr {
    let message = pythonic(&error.to_string());
    match error {
        Error::BadInput(_) | Error::Unreadable { .. } | Error::Blob(_) | Error::DoesNotFit(_) => {
            PyValueError::new_err(message)
        }
        Error::Fidelity(_) => ExportError::new_err(message),
        Error::Numerical(_) => NumericalError::new_err(message),
        // A file that could not be written (`save`): what Python's own
        // `open` raises.
        Error::Io { .. } => PyOSError::new_err(message),
        Error::OverBudget(_) => SgpError::new_err(message),
    }
}

/// `Result` of the trainer into `PyResult`.
pub(crate) trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for sgp_trainer::Result<T> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
