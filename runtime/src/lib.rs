//! (stub, replaced by the real runtime)
#![no_std]
/// Errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error { /// stub
 Stub }
impl core::fmt::Display for Error { fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result { write!(f, "stub") } }
impl core::error::Error for Error {}
