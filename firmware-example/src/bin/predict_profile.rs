//! One prediction of the M = 32 SPGP model and one of the Matérn 3/2
//! model, each between marker calls, for `profile-update.sh predict` and
//! `profile-update.sh matern`: QEMU
//! traces every instruction executed and the script sums those between
//! the markers by the runtime function they belong to
//! (docs/src/firmware-example.md, "Cost per prediction").
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};
use panic_semihosting as _;
use sgp_firmware_example::model::{ModelM, BLOB_M32, BLOB_MATERN32_M32};

/// Where the traced prediction starts and ends (never inlined, and
/// different, or the linker folds them into one: the script finds them by
/// name).
#[inline(never)]
fn predict_starts() {
    core::hint::black_box(1u32);
}

#[inline(never)]
fn predict_ends() {
    core::hint::black_box(2u32);
}

#[inline(never)]
fn matern_starts() {
    core::hint::black_box(3u32);
}

#[inline(never)]
fn matern_ends() {
    core::hint::black_box(4u32);
}

#[entry]
fn main() -> ! {
    let se = cortex_m::singleton!(SE: ModelM<32> = ModelM::<32>::new());
    let matern = cortex_m::singleton!(MATERN: ModelM<32> = ModelM::<32>::new());
    let ok = match (se, matern) {
        (Some(se), Some(matern)) => {
            let loaded = se
                .load(BLOB_M32)
                .and_then(|()| matern.load(BLOB_MATERN32_M32));
            let x = core::hint::black_box([0.5f32, -1.0, 0.25, 1.5]);
            predict_starts();
            let p = se.predict(core::hint::black_box(&x));
            predict_ends();
            matern_starts();
            let q = matern.predict(core::hint::black_box(&x));
            matern_ends();
            loaded.is_ok() && core::hint::black_box(p).is_ok() && core::hint::black_box(q).is_ok()
        }
        _ => false,
    };
    if !ok {
        hprintln!("predict_profile: FAILED to load or predict");
    }
    debug::exit(if ok {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    loop {
        cortex_m::asm::wfi();
    }
}
