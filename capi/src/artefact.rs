//! One artefact either way: `SgpArtefact` loads whichever file `sgp fit`
//! wrote, one blob (outputs on one basis) or a container of one blob per
//! output (`SGPS`), and `sgp_artefact_predict_all` predicts every output
//! alike, so C code does not depend on whether the outputs shared a basis.

use sgp_runtime::{Artefact, Error, Outputs, Prediction};

use super::capacity::{CAPACITY_D, CAPACITY_G, CAPACITY_M, CAPACITY_P, SGP_ARTEFACT_STORAGE_WORDS};
use super::slot::{self, loaded, Storage};
use super::{predict_all, Evaluator, SgpPrediction, SgpStatus};

/// Storage for one artefact of the capacities the library was built with:
/// a blob of up to `SGP_CAPACITY_P` outputs, or a container of up to
/// `SGP_CAPACITY_P` single-output blobs (each within `SGP_CAPACITY_M`,
/// `SGP_CAPACITY_G`, `SGP_CAPACITY_D`). Declare it `static`
/// (zero-initialised, so it reads as "not loaded" until `sgp_artefact_load`
/// succeeds) and pass `sizeof` of it to `sgp_artefact_load`. Its contents
/// are private to the library.
#[repr(C)]
pub struct SgpArtefact {
    words: [u64; SGP_ARTEFACT_STORAGE_WORDS],
}

type DeviceArtefact = Artefact<CAPACITY_M, CAPACITY_G, CAPACITY_D, CAPACITY_P>;

// SAFETY: `init` writes a whole artefact.
unsafe impl Storage for SgpArtefact {
    type Value = DeviceArtefact;
    // On 64-bit hosts each member's sizes are wider than the 32-bit formula
    // counts, hence the allowance per output.
    const SPARE: usize = 32 + 24 * CAPACITY_P;

    unsafe fn init(place: *mut DeviceArtefact) {
        // SAFETY: the caller's promise: `place` is aligned and writable.
        unsafe { place.write(DeviceArtefact::new()) }
    }
}

impl Evaluator for DeviceArtefact {
    fn input_dim(&self) -> usize {
        DeviceArtefact::input_dim(self)
    }
    fn predict_all(&self, x: &[f32]) -> Result<Outputs<Prediction, CAPACITY_P>, Error> {
        DeviceArtefact::predict_all(self, x)
    }
}

/// Loads and checks `bytes` (untrusted) into `artefact`: a blob, or a
/// container of blobs, one per output, told apart by their first four bytes.
/// A container's statuses are a blob's (`SGP_STATUS_TRUNCATED`,
/// `SGP_STATUS_CRC_MISMATCH`, ...), `SGP_STATUS_CAPACITY_EXCEEDED_OUTPUT`
/// for more members than `SGP_CAPACITY_P`, any member's own, and
/// `SGP_STATUS_MEMBER_MISMATCH` when a member takes other inputs than the
/// first. `artefact_size` is `sizeof` the storage. On failure the storage
/// holds nothing: predictions return `SGP_STATUS_NOT_LOADED`.
///
/// # Safety
/// `artefact` must be NULL or point to `artefact_size` writable bytes, and
/// `bytes` NULL or to `bytes_len` readable bytes; no other `sgp_` call may
/// use the same storage while this one runs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_artefact_load(
    artefact: *mut SgpArtefact,
    artefact_size: usize,
    bytes: *const u8,
    bytes_len: usize,
) -> SgpStatus {
    // SAFETY: this function's contract is `load_slot`'s.
    unsafe {
        slot::load_slot(
            artefact,
            artefact_size,
            bytes,
            bytes_len,
            DeviceArtefact::load,
        )
    }
}

/// Every output's predictive mean and variance at `x` (`x_len` raw inputs)
/// into `out[0 .. sgp_artefact_output_count(artefact)]`: a blob's as
/// `sgp_model_predict_all` gives them, a container's as each member's
/// `sgp_model_predict` (bit for bit). `SGP_STATUS_OUTPUT_TOO_SMALL` if
/// `out_len` is less than the output count.
///
/// # Safety
/// `artefact` must be NULL or point to an `SgpArtefact` that is
/// zero-initialised or was passed to `sgp_artefact_load`, and is not being
/// loaded meanwhile; `x` NULL or pointing to `x_len` readable floats; `out`
/// NULL or pointing to `out_len` writable `SgpPrediction`s, written only on
/// success.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_artefact_predict_all(
    artefact: *const SgpArtefact,
    x: *const f32,
    x_len: usize,
    out: *mut SgpPrediction,
    out_len: usize,
) -> SgpStatus {
    // SAFETY: this function's contract is `predict_all`'s.
    unsafe { predict_all(artefact, x, x_len, out, out_len) }
}

/// Number of outputs of the loaded artefact (a blob's outputs or a
/// container's members); 0 if `artefact` is NULL or holds nothing loaded.
///
/// # Safety
/// As `sgp_artefact_predict_all` for `artefact`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_artefact_output_count(artefact: *const SgpArtefact) -> usize {
    // SAFETY: this function's contract is `loaded`'s.
    unsafe { loaded(artefact) }.map_or(0, DeviceArtefact::output_count)
}

/// Number of raw inputs a prediction takes; 0 if `artefact` is NULL or
/// holds nothing loaded.
///
/// # Safety
/// As `sgp_artefact_predict_all` for `artefact`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_artefact_input_dim(artefact: *const SgpArtefact) -> usize {
    // SAFETY: this function's contract is `loaded`'s.
    unsafe { loaded(artefact) }.map_or(0, DeviceArtefact::input_dim)
}

/// Whether the loaded artefact is a container (one model per output)
/// rather than one blob; false if `artefact` is NULL or holds nothing
/// loaded.
///
/// # Safety
/// As `sgp_artefact_predict_all` for `artefact`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sgp_artefact_is_separate(artefact: *const SgpArtefact) -> bool {
    // SAFETY: this function's contract is `loaded`'s.
    unsafe { loaded(artefact) }.is_ok_and(DeviceArtefact::is_separate)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use std::boxed::Box;
    use std::vec;

    use sgp_runtime::Container;

    use super::*;

    const BLOB: &[u8] = include_bytes!("../../runtime/tests/data/doc-model.sgp");

    fn storage() -> Box<SgpArtefact> {
        Box::new(SgpArtefact {
            words: [0; SGP_ARTEFACT_STORAGE_WORDS],
        })
    }

    /// The C calls give the runtime's `Artefact` answers, bit for bit.
    #[test]
    fn a_container_predicts_as_the_runtimes_artefact() {
        let mut bytes = vec![0u8; 4096];
        let len = Container::write(&[BLOB, BLOB], &mut bytes).unwrap();
        let bytes = &bytes[..len];
        let mut artefact = storage();
        // SAFETY: a whole, exclusively owned `SgpArtefact`, and `bytes`.
        let status = unsafe {
            sgp_artefact_load(
                &mut *artefact,
                size_of::<SgpArtefact>(),
                bytes.as_ptr(),
                bytes.len(),
            )
        };
        assert_eq!(status, SgpStatus::Ok);
        let runtime = Artefact::<3, 2, 2, 2>::from_bytes(bytes).unwrap();
        let x = [0.5f32, -1.0];
        let mut out = [SgpPrediction {
            mean: f32::NAN,
            variance: f32::NAN,
        }; 2];
        // SAFETY: a loaded artefact, two floats, two predictions.
        unsafe {
            assert_eq!(sgp_artefact_output_count(&*artefact), 2);
            assert!(sgp_artefact_is_separate(&*artefact));
            assert_eq!(
                sgp_artefact_predict_all(&*artefact, x.as_ptr(), 2, out.as_mut_ptr(), 2),
                SgpStatus::Ok
            );
        }
        for (got, want) in out.iter().zip(runtime.predict_all(&x).unwrap().iter()) {
            assert_eq!((got.mean, got.variance), (want.mean, want.variance));
        }
    }

    /// C cannot make a misaligned pointer without undefined behaviour of
    /// its own, so this side of the checks is tested from Rust.
    #[test]
    fn misaligned_storage_is_refused() {
        let mut words = vec![0u64; SGP_ARTEFACT_STORAGE_WORDS + 1];
        let shifted = words
            .as_mut_ptr()
            .cast::<u8>()
            .wrapping_add(4)
            .cast::<SgpArtefact>();
        // SAFETY: the pointer covers enough memory; only alignment is off,
        // which the functions check before using it.
        unsafe {
            assert_eq!(
                sgp_artefact_load(shifted, size_of::<SgpArtefact>(), BLOB.as_ptr(), BLOB.len()),
                SgpStatus::Misaligned
            );
            assert_eq!(sgp_artefact_output_count(shifted), 0);
            assert_eq!(sgp_artefact_input_dim(shifted), 0);
        }
    }
}
