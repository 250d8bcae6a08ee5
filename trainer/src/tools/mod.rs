//! Generated data (synthetic shapes, dynamical systems, drift), the demo's
//! data, describing a blob, and replaying a log through the device's
//! update: what the command line, Python and the tests share.

pub mod demo;
pub mod drift;
pub mod dynamics;
pub mod inspect;
pub mod replay;
pub mod synth;
