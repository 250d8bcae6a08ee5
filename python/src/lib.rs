//! `sgp._native`: the trainer library and the f32 runtime, for Python.
//!
//! Thin on purpose: the estimators, input validation and numpy handling
//! live in the Python package (`python/sgp/`); this module fits, exports
//! and evaluates blobs. Arrays cross the boundary as little-endian `f64`
//! bytes with their shape, which needs neither numpy's C API nor a
//! particular Python version (the module is built for the stable ABI).

mod arrays;
mod choice;
mod chunks;
mod convert;
mod device;
mod errors;
mod fit;
mod state;
mod streamed;
mod uncertain;

use pyo3::prelude::*;

/// mimalloc for the trainer's allocations, as the `sgp` binary has it: the
/// sparse objectives allocate and free blocks of a few hundred KB every
/// evaluation, which the system allocator hands back to the kernel and
/// faults in again (the same fit took twice the CLI's time without it).
/// Python's own objects keep Python's allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<device::Model>()?;
    m.add_function(wrap_pyfunction!(fit::fit, m)?)?;
    m.add_function(wrap_pyfunction!(fit::defaults, m)?)?;
    m.add_function(wrap_pyfunction!(fit::settings, m)?)?;
    m.add_function(wrap_pyfunction!(fit::spoken, m)?)?;
    m.add_function(wrap_pyfunction!(state::predict_state, m)?)?;
    m.add_function(wrap_pyfunction!(state::predict_cov, m)?)?;
    m.add_function(wrap_pyfunction!(device::export_source, m)?)?;
    m.add_function(wrap_pyfunction!(device::write_file, m)?)?;
    m.add_function(wrap_pyfunction!(device::artefact, m)?)?;
    m.add_function(wrap_pyfunction!(device::output_blob, m)?)?;
    m.add_function(wrap_pyfunction!(device::inspect_container_json, m)?)?;
    m.add_function(wrap_pyfunction!(convert::exact_blob, m)?)?;
    m.add_function(wrap_pyfunction!(convert::inducing_blob, m)?)?;
    m.add_function(wrap_pyfunction!(convert::variational_blob, m)?)?;
    m.add_class::<streamed::StreamedFit>()?;
    m.add_function(wrap_pyfunction!(streamed::fit_file, m)?)?;
    m.add_function(wrap_pyfunction!(streamed::start_file, m)?)?;
    m.add_function(wrap_pyfunction!(chunks::basis_sums, m)?)?;
    m.add_function(wrap_pyfunction!(chunks::merge_sums, m)?)?;
    m.add_function(wrap_pyfunction!(chunks::sums_rows, m)?)?;
    m.add_function(wrap_pyfunction!(chunks::sums_of_part, m)?)?;
    Ok(())
}
