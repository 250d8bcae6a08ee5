//! The panic handler of the bare-metal library, and with it a link-time
//! proof that no panic is reachable.
//!
//! The handler calls a function that is defined nowhere. Built with the
//! `capi` profile (LTO), the library is one object in which the handler is
//! internal: if no panic is reachable from the exported functions, LTO
//! deletes it and the archive references `sgp_capi_panic_is_reachable`
//! nowhere, which `capi/panic-proof.sh` checks. If a panic were reachable,
//! every C program linking the library would fail to link with that
//! symbol undefined: the library cannot ship a panic silently.

use core::panic::PanicInfo;

extern "C" {
    /// Deliberately undefined: see the module docs.
    fn sgp_capi_panic_is_reachable() -> !;
}

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    // SAFETY: never runs: a program that could reach it does not link.
    unsafe { sgp_capi_panic_is_reachable() }
}
