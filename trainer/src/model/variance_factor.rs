//! The one factor of the product form of the variance
//! ([`sgp_runtime::VarianceForm::Product`]): a lower-triangular `C` with
//! `W = C^T C`, so that `k^T W k = |C k|^2` costs the device one
//! triangular product (`M (M + 1) / 2` multiply-adds, rows independent)
//! instead of one or two forward substitutions.
//!
//! `W` is what the stored factors of the runtime form say:
//! `W = L1^-T L1^-1 - L2^-T L2^-1` (FITC-style models: `Kuu^-1 - Q^-1`) or
//! `W = L1^-T L1^-1` (IVM, exact GP: `(K_I + Pi^-1)^-1`). Everything here
//! is f64; whether the f32 product keeps the export's accuracy is the
//! export check's measurement ([`crate::export::check`]).

use nalgebra::DMatrix;

use crate::model::inference::RuntimeForm;
use crate::numerics::linalg::{cholesky, lower_inverse, mat_ref, mul, symmetrise};
use crate::Result;

/// Jitter added to `E = I - A^-1` when it is numerically singular, tried
/// in turn: it moves `k^T W k` by `delta k^T Kuu^-1 k <= delta prior`, so
/// even the largest is far below what the export check can see.
pub(crate) const JITTERS: [f64; 4] = [0.0, 1e-12, 1e-10, 1e-8];

/// The lower-triangular `C` with `C^T C = W`, or an error when `W` has no
/// such factor in f64 (then only the solves represent the model).
///
/// With one factor, `C = L1^-1` exactly. With two, `W = L1^-T E L1^-1` with
/// `E = I - A^-1` (eigenvalues in `[0, 1)`), formed at that scale because
/// the difference of two inverses as large as `Kuu^-1` rounds indefinite.
/// `E` is factorised upside down (`J E J = R R^T`, `J` the exchange
/// matrix, `U = J R J`) so that `C = U^T L1^-1` is lower triangular.
///
/// # Errors
/// [`crate::Error::Numerical`] if a factor is singular or `E` is not
/// positive semi-definite even with the largest of `JITTERS`.
pub(crate) fn product_factor(form: &RuntimeForm) -> Result<DMatrix<f64>> {
    let inv1 = lower_inverse(&form.l1)?;
    let Some(l2) = &form.l2 else {
        return Ok(inv1);
    };
    let inv_a = lower_inverse(&mul(mat_ref(&inv1), mat_ref(l2)))?;
    let m = inv1.nrows();
    let e = symmetrise(DMatrix::identity(m, m) - mul(mat_ref(&inv_a).transpose(), mat_ref(&inv_a)));
    let reversed_e = reversed(&e);
    let mut last = None;
    for delta in JITTERS {
        let jittered = &reversed_e + DMatrix::identity(m, m) * delta;
        match cholesky(&jittered) {
            Ok(r) => {
                let mut c = mul(mat_ref(&reversed(&r.transpose())), mat_ref(&inv1));
                c.fill_upper_triangle(0.0, 1);
                return Ok(c);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| crate::Error::Numerical("no jitter to try".into())))
}

/// `J A J`: rows and columns in reverse order.
fn reversed(a: &DMatrix<f64>) -> DMatrix<f64> {
    let (rows, cols) = a.shape();
    DMatrix::from_fn(rows, cols, |i, j| a[(rows - 1 - i, cols - 1 - j)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::features::{BasisWidths, RuntimeBasis};
    use nalgebra::DVector;

    fn lower(m: usize, seed: f64) -> DMatrix<f64> {
        DMatrix::from_fn(m, m, |i, j| match i.cmp(&j) {
            std::cmp::Ordering::Less => 0.0,
            std::cmp::Ordering::Equal => 1.0 + 0.1 * i as f64,
            std::cmp::Ordering::Greater => 0.2 * (libm::sin(seed * (i * 7 + j * 3) as f64)),
        })
    }

    fn form(l1: DMatrix<f64>, l2: Option<DMatrix<f64>>) -> RuntimeForm {
        let m = l1.nrows();
        RuntimeForm {
            basis: RuntimeBasis {
                centres: DMatrix::zeros(m, 1),
                widths: BasisWidths::Shared(vec![1.0]),
                amplitudes: vec![1.0; m],
                projection: None,
                kernel: sgp_runtime::Kernel::SquaredExponential,
            },
            beta: DVector::zeros(m),
            l1,
            l2,
            prior: 1.0,
            noise_var: 0.1,
        }
    }

    /// `C^T C` against the `W` the factors define, and `C` lower
    /// triangular, with one factor and with two (`L2 = 2 L1` keeps
    /// `W = 3/4 L1^-T L1^-1` positive definite).
    #[test]
    fn the_factor_reproduces_w() {
        let m = 7;
        let l1 = lower(m, 1.3);
        let inv = lower_inverse(&l1).unwrap();
        let w1 = inv.transpose() * &inv;
        for (l2, w) in [(None, w1.clone()), (Some(&l1 * 2.0), &w1 * 0.75)] {
            let c = product_factor(&form(l1.clone(), l2)).unwrap();
            for i in 0..m {
                for j in i + 1..m {
                    assert_eq!(c[(i, j)], 0.0, "upper entry ({i}, {j})");
                }
            }
            let err = (c.transpose() * &c - &w).abs().max();
            assert!(err < 1e-12 * w.abs().max(), "{err:e}");
        }
    }

    /// `L2 = L1 / 2`: `W = -3 L1^-T L1^-1`, negative definite, which no
    /// factor represents.
    #[test]
    fn an_indefinite_w_is_refused() {
        let l1 = lower(5, 0.7);
        assert!(product_factor(&form(l1.clone(), Some(&l1 * 0.5))).is_err());
    }
}
