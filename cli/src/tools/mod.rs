//! What only the command line does with fitted blobs: sweeping a grid of
//! models against a device budget (with its instruction cost model), and
//! drawing blobs and replays as SVG.

pub mod cost;
pub mod plot;
pub mod replay_plot;
pub mod sweep;
