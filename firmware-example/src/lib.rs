//! Shared pieces of the example firmware: instruction counting, stack painting,
//! the golden-value check, and model loading. Kept in a library so the
//! `panic_free` binary proves things about exactly the code `main` runs.
#![no_std]

pub mod golden;
pub mod instructions;
pub mod model;
pub mod stack;
