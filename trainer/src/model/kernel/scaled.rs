//! The vocabulary the two forms of covariance share: a covariance function
//! with explicit scales, and the gradients its chain rule returns.

use nalgebra::DMatrix;
use sgp_runtime::Kernel;

/// Below this many output entries a covariance matrix is built serially:
/// spawning rayon tasks costs more than the work.
pub(crate) const PAR_MIN_ENTRIES: usize = 1 << 16;

/// Gradient of a scalar with respect to the kernel's log hyperparameters
/// (noise excluded: covariance matrices of the latent function do not depend
/// on it).
#[derive(Clone, Debug, PartialEq)]
pub struct KernelGrad {
    /// d/d log l_d.
    pub log_lengthscales: Vec<f64>,
    /// d/d log s2.
    pub log_signal_var: f64,
}

impl KernelGrad {
    /// A zero gradient for a `dim`-dimensional kernel.
    pub fn zeros(dim: usize) -> Self {
        Self {
            log_lengthscales: vec![0.0; dim],
            log_signal_var: 0.0,
        }
    }

    /// Adds `other` into `self`.
    pub(crate) fn add_assign(&mut self, other: &KernelGrad) {
        for (a, b) in self
            .log_lengthscales
            .iter_mut()
            .zip(&other.log_lengthscales)
        {
            *a += b;
        }
        self.log_signal_var += other.log_signal_var;
    }
}

/// The result of [`KernelParams::cross_grad`].
#[derive(Clone, Debug)]
pub(crate) struct CrossGrad {
    /// Gradient with respect to the rows of `a` (same shape as `a`), if asked.
    pub a: Option<DMatrix<f64>>,
    /// Gradient with respect to the rows of `b` (same shape as `b`), if asked.
    pub b: Option<DMatrix<f64>>,
    /// Gradient with respect to the log hyperparameters.
    pub kernel: KernelGrad,
}

/// A covariance function with explicit inverse length scales `inv_l` and
/// signal variance `s2` (SPGP+DR's projected space has unit scales).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scaled<'a> {
    pub kernel: Kernel,
    pub inv_l: &'a [f64],
    pub s2: f64,
}
