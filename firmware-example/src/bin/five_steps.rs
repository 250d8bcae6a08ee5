//! The user guide's "Your own firmware in five steps"
//! (docs/src/five-steps.md), as a program: the lines between the
//! `five-steps` markers are the guide's snippet, character for character
//! (`tests/tests/readme.rs` checks), so the snippet is compiled and run
//! (run.sh, under QEMU) and cannot rot. Around it, what a real firmware
//! would have in its place: simulated sensors, a stand-in actuator, and a
//! `halt` that reports through semihosting.
#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m_semihosting::{debug, hprintln};
use panic_semihosting as _;

// five-steps: begin
use cortex_m_rt::entry;
use sgp_runtime::{Error, Model};
use static_cell::StaticCell;

/// The blob `sgp fit --out` wrote, embedded at build time.
static BLOB: &[u8] = include_bytes!("../../model/m32.sgp");
/// The sensors in the order this firmware reads them; the model must take
/// its inputs in the same order.
const SENSORS: [&str; 4] = ["x1", "x2", "x3", "x4"];
/// Act on the model only where its predictive standard deviation (target
/// units) is below this.
const MAX_STD: f32 = 0.5;
/// What to do where the model is not to be trusted.
const SAFE_COMMAND: f32 = 0.0;

/// The model lives here, in `.bss`: the linker checks it against RAM.
static MODEL: StaticCell<Model<32, 4, 4>> = StaticCell::new();

#[entry]
fn main() -> ! {
    // The one `&'static mut` to the model, without `unsafe` (a second call
    // would panic). `init_with` builds it in the static itself, where
    // `init(Model::new())` would build it on the stack and copy it; `load`
    // then fills it in place.
    let model = MODEL.init_with(Model::new);
    if let Err(e) = model.load(BLOB) {
        halt("model blob refused", Some(e));
    }
    let model: &Model<32, 4, 4> = model;
    if model.input_names() != SENSORS {
        halt("the model's inputs are not these sensors", None);
    }
    loop {
        let x: [f32; 4] = read_sensors();
        // Outside the training range the model extrapolates, whatever its
        // variance says; an error (a sensor fault) is not to be trusted either.
        let command = match (model.in_training_range(&x), model.predict_array(&x)) {
            (Ok(true), Ok(p)) if p.std_dev() < MAX_STD => p.mean,
            _ => SAFE_COMMAND,
        };
        actuate(command);
    }
}
// five-steps: end

/// Ticks simulated before the run reports and ends.
const TICKS: u32 = 100;
/// Ticks whose sensors leave the training box [-3, 3]^4: one input a little
/// (where the variance may not notice), then all four far.
const EXCURSIONS: [core::ops::RangeInclusive<u32>; 2] = [40..=44, 70..=74];

static TICK: AtomicU32 = AtomicU32::new(0);
static SAFE_IN_EXCURSIONS: AtomicU32 = AtomicU32::new(0);
static MODEL_IN_NOMINAL: AtomicU32 = AtomicU32::new(0);

fn in_excursion(tick: u32) -> bool {
    EXCURSIONS.iter().any(|r| r.contains(&tick))
}

/// A sweep inside the training data, with the excursions; after `TICKS`
/// ticks, reports and ends the run (exit status 0 only if every excursion
/// tick took the safe command and most nominal ticks the model's).
fn read_sensors() -> [f32; 4] {
    let tick = TICK.load(Ordering::Relaxed);
    if tick == TICKS {
        let safe = SAFE_IN_EXCURSIONS.load(Ordering::Relaxed);
        let model = MODEL_IN_NOMINAL.load(Ordering::Relaxed);
        let excursions = (0..TICKS).filter(|&t| in_excursion(t)).count() as u32;
        let nominal = TICKS - excursions;
        hprintln!(
            "five_steps: {} ticks; safe command on {}/{} excursion ticks, model on {}/{} nominal ticks",
            TICKS,
            safe,
            excursions,
            model,
            nominal
        );
        let ok = safe == excursions && 2 * model > nominal;
        debug::exit(if ok {
            debug::EXIT_SUCCESS
        } else {
            debug::EXIT_FAILURE
        });
    }
    let t = 2.0 * core::f32::consts::PI * tick as f32 / 32.0;
    let sweep = [
        2.0 * libm::sinf(t),
        2.0 * libm::sinf(1.3 * t + 0.5),
        2.0 * libm::cosf(0.7 * t),
        2.0 * libm::sinf(1.9 * t + 1.0),
    ];
    let [slight, far] = &EXCURSIONS;
    if slight.contains(&tick) {
        [3.5, sweep[1], sweep[2], sweep[3]]
    } else if far.contains(&tick) {
        [10.0, -10.0, 10.0, -10.0]
    } else {
        sweep
    }
}

/// Stands in for a DAC or PWM update; counts what the loop chose.
fn actuate(command: f32) {
    let tick = TICK.fetch_add(1, Ordering::Relaxed);
    let safe = command.to_bits() == SAFE_COMMAND.to_bits();
    if in_excursion(tick) && safe {
        SAFE_IN_EXCURSIONS.fetch_add(1, Ordering::Relaxed);
    } else if !in_excursion(tick) && !safe {
        MODEL_IN_NOMINAL.fetch_add(1, Ordering::Relaxed);
    }
}

/// Reports why the firmware cannot run and stops.
fn halt(why: &str, error: Option<Error>) -> ! {
    hprintln!("five_steps: {}: {:?}", why, error);
    debug::exit(debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}
