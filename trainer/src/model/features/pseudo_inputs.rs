//! SPGP pseudo-inputs: M free points in the (standardised) input space.

use nalgebra::{DMatrix, DMatrixView, DVector};

use super::{
    constant_kdiag_grad, row_major, set_row_major, BasisWidths, FeatureGrad, InducingFeatures,
    RuntimeBasis,
};
use crate::model::kernel::KernelParams;
use crate::{Error, Result};

/// Pseudo-inputs `Z` (M x D) of plain SPGP.
///
/// Parameter layout: row-major, `p[m * D + d] = Z[m, d]`, so one
/// pseudo-input's coordinates are contiguous.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) struct PseudoInputs {
    z: DMatrix<f64>,
}

impl PseudoInputs {
    /// Pseudo-inputs at the rows of `z`; fails on an empty or non-finite `z`.
    pub fn new(z: DMatrix<f64>) -> Result<Self> {
        if z.nrows() == 0 || z.ncols() == 0 {
            return Err(Error::BadInput("no pseudo-inputs".into()));
        }
        if z.iter().any(|v| !v.is_finite()) {
            return Err(Error::BadInput("pseudo-inputs must be finite".into()));
        }
        Ok(Self { z })
    }

    /// The pseudo-inputs, M x D.
    pub fn z(&self) -> &DMatrix<f64> {
        &self.z
    }
}

impl InducingFeatures for PseudoInputs {
    fn num_inducing(&self) -> usize {
        self.z.nrows()
    }

    fn input_dim(&self) -> usize {
        self.z.ncols()
    }

    fn num_params(&self) -> usize {
        self.z.len()
    }

    fn params(&self) -> Vec<f64> {
        row_major(&[&self.z])
    }

    fn set_params(&mut self, p: &[f64]) -> Result<()> {
        set_row_major(&mut [&mut self.z], p, "pseudo-inputs")
    }

    fn kuu(&self, kern: &KernelParams) -> DMatrix<f64> {
        kern.cross(&self.z, &self.z)
    }

    fn kuf(&self, kern: &KernelParams, x: DMatrixView<'_, f64>) -> DMatrix<f64> {
        kern.cross(&self.z, &x)
    }

    fn grad_kuu(&self, kern: &KernelParams, kuu: &DMatrix<f64>, adj: &DMatrix<f64>) -> FeatureGrad {
        let g = kern.cross_grad(&self.z, &self.z, kuu, adj, true, true);
        let gz = match (g.a, g.b) {
            (Some(a), Some(b)) => a + b,
            // cross_grad returns both when both are asked for.
            _ => DMatrix::zeros(self.z.nrows(), self.z.ncols()),
        };
        FeatureGrad {
            feature: row_major(&[&gz]),
            kernel: g.kernel,
        }
    }

    fn grad_kuf(
        &self,
        kern: &KernelParams,
        x: DMatrixView<'_, f64>,
        kuf: &DMatrix<f64>,
        adj_kuf: &DMatrix<f64>,
        adj_kdiag: &DVector<f64>,
    ) -> FeatureGrad {
        let g = kern.cross_grad(&self.z, &x, kuf, adj_kuf, true, false);
        let mut kernel = g.kernel;
        kernel.log_signal_var += constant_kdiag_grad(kern, adj_kdiag);
        let feature = match g.a {
            Some(a) => row_major(&[&a]),
            None => vec![0.0; self.z.len()],
        };
        FeatureGrad { feature, kernel }
    }

    fn runtime_basis(&self, kern: &KernelParams) -> RuntimeBasis {
        RuntimeBasis {
            projection: None,
            centres: self.z.clone(),
            widths: BasisWidths::Shared(kern.inv_sq_lengthscales()),
            amplitudes: vec![kern.signal_var(); self.z.nrows()],
            kernel: kern.kernel,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_unpack_round_trip_is_row_major() {
        let z = DMatrix::from_row_slice(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let mut f = PseudoInputs::new(z.clone()).expect("valid");
        assert_eq!(f.params(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        f.set_params(&[6.0, 5.0, 4.0, 3.0, 2.0, 1.0])
            .expect("right length");
        assert_eq!(f.z()[(0, 2)], 4.0);
        assert!(f.set_params(&[1.0]).is_err());
        assert!(PseudoInputs::new(DMatrix::zeros(0, 2)).is_err());
    }

    #[test]
    fn runtime_basis_reproduces_kuf() {
        let kern = KernelParams::new(&[0.5, 2.0], 1.3, 0.1).expect("valid");
        let z = DMatrix::from_row_slice(2, 2, &[0.0, 1.0, -1.0, 0.5]);
        let x = DMatrix::from_row_slice(3, 2, &[0.1, 0.2, 2.0, -1.0, 0.0, 0.0]);
        let f = PseudoInputs::new(z).expect("valid");
        let diff = f.runtime_basis(&kern).eval(&x) - f.kuf(&kern, x.as_view());
        assert!(diff.amax() < 1e-14);
    }
}
