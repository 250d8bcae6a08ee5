//! The storage a C caller declares for the library's state (`SgpModel`,
//! `SgpArtefact`, `SgpUncertain`): opaque words holding a [`Slot`], a flag
//! that says whether a load succeeded, then the value loaded. Filling one
//! and reading one back make the same checks whatever the value, so they
//! and their safety argument are written here once.

use core::mem::{align_of, size_of};
use core::ptr::{addr_of, addr_of_mut};

use sgp_runtime::Error;

use super::SgpStatus;

/// The flag of a slot whose value is loaded. Anything else reads as "not
/// loaded", so zero-initialised storage holds nothing.
const LOADED: u32 = u32::from_le_bytes(*b"SGPL");

/// What storage of a [`Storage`] type holds.
#[repr(C)]
struct Slot<V> {
    /// [`LOADED`] after a successful load, anything else before. First, so
    /// that it can be read from any storage at least one word long.
    loaded: u32,
    value: V,
}

/// Storage a C caller declares (zero-initialised) for one
/// `Slot<Self::Value>`: its size and alignment are checked against the slot
/// when the library is built.
///
/// # Safety
/// `init` must leave a valid `Self::Value` at its `place`.
pub(crate) unsafe trait Storage {
    /// What a load leaves in the storage.
    type Value;

    /// How many bytes of the storage a slot may leave unused: the header's
    /// size formula should not waste more than a few words.
    const SPARE: usize;

    /// Writes a fresh value to `place`, reading nothing there.
    ///
    /// # Safety
    /// `place` must be non-null, aligned and writable for one `Self::Value`.
    unsafe fn init(place: *mut Self::Value);
}

/// Whether storage of type `S` holds a slot (the build fails otherwise,
/// rather than C storage being overrun) with at most `S::SPARE` bytes over.
const fn holds_slot<S: Storage>() -> bool {
    size_of::<Slot<S::Value>>() <= size_of::<S>()
        && size_of::<S>() - size_of::<Slot<S::Value>>() <= S::SPARE
        && align_of::<Slot<S::Value>>() <= align_of::<S>()
}

/// The checks every load makes, in order: `storage` non-null
/// (`SGP_STATUS_NULL_POINTER`), aligned (`SGP_STATUS_MISALIGNED`) and at
/// least `sizeof` its type (`SGP_STATUS_STORAGE_TOO_SMALL`); then a fresh
/// value marked "not loaded", `fill` on it, and the mark "loaded" if `fill`
/// answers `Ok`. On failure the storage holds nothing loaded.
///
/// # Safety
/// `storage` must be NULL or point to `size` writable bytes that no other
/// call uses while this one runs.
pub(crate) unsafe fn fill_slot<S: Storage>(
    storage: *mut S,
    size: usize,
    fill: impl FnOnce(&mut S::Value) -> SgpStatus,
) -> SgpStatus {
    const { assert!(holds_slot::<S>()) };
    if storage.is_null() {
        return SgpStatus::NullPointer;
    }
    if !storage.is_aligned() {
        return SgpStatus::Misaligned;
    }
    if size < size_of::<S>() {
        return SgpStatus::StorageTooSmall;
    }
    let slot = storage.cast::<Slot<S::Value>>();
    // SAFETY: `slot` is non-null and aligned (a slot needs no more than its
    // storage: asserted above), and the caller gives this call alone at
    // least `size_of::<S>() >= size_of::<Slot<_>>()` writable bytes there
    // (checked above). The flag and the value are written whole, reading
    // nothing, so any previous contents are fine.
    let value = unsafe {
        addr_of_mut!((*slot).loaded).write(0);
        let value = addr_of_mut!((*slot).value);
        S::init(value);
        &mut *value
    };
    let status = fill(value);
    if status == SgpStatus::Ok {
        // SAFETY: as for the writes above; the flag is not the value's.
        unsafe { addr_of_mut!((*slot).loaded).write(LOADED) };
    }
    status
}

/// [`fill_slot`] with a value that `load` reads from `bytes` (`bytes_len`
/// of them, untrusted); `SGP_STATUS_NULL_POINTER` for NULL `bytes` too.
///
/// # Safety
/// As [`fill_slot`], and `bytes` must be NULL or point to `bytes_len`
/// readable bytes.
pub(crate) unsafe fn load_slot<S: Storage>(
    storage: *mut S,
    size: usize,
    bytes: *const u8,
    bytes_len: usize,
    load: impl FnOnce(&mut S::Value, &[u8]) -> Result<(), Error>,
) -> SgpStatus {
    if bytes.is_null() {
        return SgpStatus::NullPointer;
    }
    let fill = |value: &mut S::Value| {
        // SAFETY: `bytes` is non-null, bytes need no alignment, and the
        // caller promises `bytes_len` readable bytes.
        let bytes = unsafe { core::slice::from_raw_parts(bytes, bytes_len) };
        SgpStatus::from(load(value, bytes))
    };
    // SAFETY: the caller's promise about `storage`.
    unsafe { fill_slot(storage, size, fill) }
}

/// The value loaded in `storage`, or why there is none.
///
/// # Safety
/// `storage` must be NULL or point to an `S` that is zero-initialised or
/// was passed to [`fill_slot`], and is not being filled meanwhile.
pub(crate) unsafe fn loaded<'a, S: Storage>(storage: *const S) -> Result<&'a S::Value, SgpStatus> {
    const { assert!(holds_slot::<S>()) };
    if storage.is_null() {
        return Err(SgpStatus::NullPointer);
    }
    if !storage.is_aligned() {
        return Err(SgpStatus::Misaligned);
    }
    let slot = storage.cast::<Slot<S::Value>>();
    // SAFETY: non-null and aligned; the flag is the first word of any `S`
    // (which holds a slot, so at least one word), and the caller's storage
    // holds one.
    if unsafe { addr_of!((*slot).loaded).read() } != LOADED {
        return Err(SgpStatus::NotLoaded);
    }
    // SAFETY: only `fill_slot` writes LOADED, after checking that the
    // storage holds a slot and writing a valid value into it; nothing
    // writes it while this borrow lives (the caller's promise).
    Ok(unsafe { &*addr_of!((*slot).value) })
}

/// The value loaded in `storage`, mutably, or why there is none.
///
/// # Safety
/// As [`loaded`], and no other call may use the storage meanwhile.
pub(crate) unsafe fn loaded_mut<'a, S: Storage>(
    storage: *mut S,
) -> Result<&'a mut S::Value, SgpStatus> {
    // SAFETY: the caller's promise; `loaded` checks null, alignment and the
    // flag.
    unsafe { loaded(storage) }?;
    let slot = storage.cast::<Slot<S::Value>>();
    // SAFETY: as in `loaded`, and the caller gives this call exclusive use
    // of the storage, so no other reference to the value exists.
    Ok(unsafe { &mut *addr_of_mut!((*slot).value) })
}
