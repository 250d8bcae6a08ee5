//! One artefact either way: `SgpArtefact` loads whichever file `sgp fit`
//! wrote, one blob (outputs on one basis) or a container of one blob per
//! output (`SGPS`), and `sgp_artefact_predict_all` predicts every output
//! alike, so C code does not depend on whether the outputs shared a basis.

use core::mem::{align_of, size_of};
use core::ptr::{addr_of, addr_of_mut};

use sgp_runtime::Artefact;

use super::capacity::{CAPACITY_D, CAPACITY_G, CAPACITY_M, CAPACITY_P, SGP_ARTEFACT_STORAGE_WORDS};
use super::{demo_reachable_panic, write_all, SgpPrediction, SgpStatus, LOADED};

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

/// What an `SgpArtefact` holds: the artefact, and whether a load succeeded.
#[repr(C)]
struct ArtefactSlot {
    /// [`LOADED`] after a successful load, anything else before. First, so
    /// that it can be read from any storage at least one word long.
    loaded: u32,
    artefact: DeviceArtefact,
}

// The header's storage must hold an `ArtefactSlot` and should not waste
// more than a few words (on 64-bit hosts each member's sizes are wider
// than the 32-bit formula counts, hence the allowance per output).
const _: () = {
    assert!(size_of::<ArtefactSlot>() <= size_of::<SgpArtefact>());
    assert!(size_of::<SgpArtefact>() - size_of::<ArtefactSlot>() <= 32 + 24 * CAPACITY_P);
    assert!(align_of::<ArtefactSlot>() <= align_of::<SgpArtefact>());
};

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
    if artefact.is_null() || bytes.is_null() {
        return SgpStatus::NullPointer;
    }
    if !artefact.is_aligned() {
        return SgpStatus::Misaligned;
    }
    if artefact_size < size_of::<SgpArtefact>() {
        return SgpStatus::StorageTooSmall;
    }
    let slot = artefact.cast::<ArtefactSlot>();
    // SAFETY: `slot` is non-null and aligned (an `ArtefactSlot` needs no
    // more than an `SgpArtefact`: asserted above), and the caller gives this
    // call alone at least `size_of::<SgpArtefact>() >=
    // size_of::<ArtefactSlot>()` writable bytes there (checked above).
    // Writing whole values reads nothing, so any previous contents are fine.
    let device = unsafe {
        addr_of_mut!((*slot).loaded).write(0);
        let device = addr_of_mut!((*slot).artefact);
        device.write(DeviceArtefact::new());
        &mut *device
    };
    // SAFETY: `bytes` is non-null, bytes need no alignment, and the caller
    // promises `bytes_len` readable bytes.
    let bytes = unsafe { core::slice::from_raw_parts(bytes, bytes_len) };
    let status = SgpStatus::from(device.load(bytes));
    if status == SgpStatus::Ok {
        // SAFETY: as for the writes above.
        unsafe { addr_of_mut!((*slot).loaded).write(LOADED) };
    }
    status
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
    // SAFETY: the caller's promise about `artefact`.
    let device = match unsafe { loaded(artefact) } {
        Ok(device) => device,
        Err(status) => return status,
    };
    if out.is_null() || x.is_null() {
        return SgpStatus::NullPointer;
    }
    if !out.is_aligned() || !x.is_aligned() {
        return SgpStatus::Misaligned;
    }
    // Before the slice is made: a C caller passing `sizeof x` (bytes) for
    // the count gets an error, not a read past its array.
    if x_len != device.input_dim() {
        return SgpStatus::InputLength;
    }
    // SAFETY: non-null and aligned; the caller promises `x_len` readable
    // floats, and `x_len` is at most `SGP_CAPACITY_D`.
    let x = unsafe { core::slice::from_raw_parts(x, x_len) };
    match device.predict_all(demo_reachable_panic(x)) {
        // SAFETY: `out` is non-null, aligned and holds `out_len` writable
        // predictions (the caller's promise).
        Ok(all) => unsafe {
            write_all(
                out,
                out_len,
                all.iter().map(|p| SgpPrediction {
                    mean: p.mean,
                    variance: p.variance,
                }),
                all.len(),
            )
        },
        Err(error) => SgpStatus::from_error(error),
    }
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

/// The artefact loaded in `artefact`, or why there is none.
///
/// # Safety
/// `artefact` must be NULL or point to an `SgpArtefact` that is
/// zero-initialised or was passed to `sgp_artefact_load`, and is not being
/// loaded meanwhile.
unsafe fn loaded<'a>(artefact: *const SgpArtefact) -> Result<&'a DeviceArtefact, SgpStatus> {
    if artefact.is_null() {
        return Err(SgpStatus::NullPointer);
    }
    if !artefact.is_aligned() {
        return Err(SgpStatus::Misaligned);
    }
    let slot = artefact.cast::<ArtefactSlot>();
    // SAFETY: non-null and aligned; `loaded` is the first word of any
    // `SgpArtefact` (at least one word long), and the caller's storage
    // holds one.
    if unsafe { addr_of!((*slot).loaded).read() } != LOADED {
        return Err(SgpStatus::NotLoaded);
    }
    // SAFETY: only `sgp_artefact_load` writes LOADED, after checking that
    // the storage holds an `ArtefactSlot` and loading a valid artefact into
    // it; nothing writes it while this borrow lives (the caller's promise).
    Ok(unsafe { &*addr_of!((*slot).artefact) })
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
