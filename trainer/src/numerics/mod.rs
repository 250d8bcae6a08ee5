//! Numerical building blocks the models and fits share: dense linear
//! algebra, the pivoted incomplete Cholesky, LARS, and the L-BFGS wrapper.

pub mod lars;
pub mod linalg;
pub mod optimise;
