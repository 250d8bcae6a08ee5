//! Option values by the names `sgp`'s command line accepts.

use pyo3::PyResult;
use sgp_trainer::options::{parse, Named};

use crate::errors::IntoPy;

/// A value of one of the library's named enums, for the parameter `what`
/// (`init_hyper`); the error, in the parameter's words, lists the names.
pub(crate) fn choice<T: Named>(value: &str, what: &str) -> PyResult<T> {
    parse(value, &format!("--{}", what.replace('_', "-"))).py_err()
}
