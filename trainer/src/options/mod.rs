//! One builder from user settings to a fit request.

#[macro_use]
mod named;

pub use named::{parse, Named};
