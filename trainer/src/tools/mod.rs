//! What the `sgp` subcommands do beyond fitting and exporting: generated
//! data, the demo, inspecting a blob, sweeping a grid of models against a
//! device budget (with its instruction cost model), plotting, and
//! replaying a log through the device's update.

pub mod cost;
pub mod demo;
pub mod drift;
pub mod dynamics;
pub mod inspect;
pub mod plot;
pub mod replay;
pub mod replay_plot;
pub mod sweep;
pub mod synth;
