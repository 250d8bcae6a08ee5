//! Numerical building blocks the models and fits share: dense linear
//! algebra (and its fixed-order form for reproducible fits), LARS, and the
//! L-BFGS wrapper.

pub(crate) mod fixed_order;
pub mod lars;
mod lbfgs;
pub mod linalg;
pub mod optimise;
#[cfg(feature = "internals")]
pub mod reproducible;
#[cfg(not(feature = "internals"))]
pub(crate) mod reproducible;
