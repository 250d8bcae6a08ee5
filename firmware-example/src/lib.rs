//! Shared pieces of the example firmware: instruction counting, stack painting,
//! the golden-value check, and model loading. Kept in a library so the
//! `panic_free` binary proves things about exactly the code `main` runs.
#![no_std]

pub mod fixed_golden;
pub mod golden;
pub mod instructions;
pub mod model;
// Needs atomic read-modify-write, which the Cortex-M0 (thumbv6m) lacks.
#[cfg(target_has_atomic = "ptr")]
pub mod stack;
