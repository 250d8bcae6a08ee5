//! Option values by the names `sgp`'s command line accepts.

use pyo3::exceptions::PyValueError;
use pyo3::PyResult;

/// A value of one of the CLI's option enums, by the name typed after the
/// flag; the error lists the names accepted.
pub(crate) fn choice<T: clap::ValueEnum>(value: &str, what: &str) -> PyResult<T> {
    T::from_str(value, false).map_err(|_| {
        let names: Vec<String> = T::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value().map(|p| p.get_name().to_string()))
            .collect();
        PyValueError::new_err(format!(
            "{what}='{value}' is not one of: {}",
            names.join(", ")
        ))
    })
}
