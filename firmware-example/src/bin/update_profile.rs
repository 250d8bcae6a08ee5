//! One update of the M = 32 updatable model between two marker calls, for
//! `profile-update.sh`: QEMU traces every instruction executed and the
//! script sums those between the markers by the runtime function they
//! belong to (docs/src/learning.md, "Cost on the device").
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};
use panic_semihosting as _;
use sgp_firmware_example::model::ModelM;
use sgp_runtime::UpdateSettings;

static BLOB: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/learn_m32.sgp"));

/// Where the traced update starts and ends (never inlined, and different,
/// or the linker folds them into one: the script finds them by name).
#[inline(never)]
fn update_starts() {
    core::hint::black_box(1u32);
}

#[inline(never)]
fn update_ends() {
    core::hint::black_box(2u32);
}

#[entry]
fn main() -> ! {
    let ok = match cortex_m::singleton!(MODEL: ModelM<32> = ModelM::<32>::new()) {
        Some(model) => {
            let settings = UpdateSettings {
                forgetting: 0.99,
                ..UpdateSettings::default()
            };
            let loaded = model
                .load(BLOB)
                .and_then(|()| model.set_update_settings(settings));
            // A warm-up update, then the traced one: the same work.
            let x = core::hint::black_box([0.5f32, -1.0, 0.25, 1.5]);
            let warm = loaded.and_then(|()| model.update(&x, 1.0));
            update_starts();
            let seen = model.update(core::hint::black_box(&x), 0.5);
            update_ends();
            warm.is_ok() && core::hint::black_box(seen).is_ok()
        }
        None => false,
    };
    if !ok {
        hprintln!("update_profile: FAILED to load or update the model");
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
