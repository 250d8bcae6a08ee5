//! The ARD Matérn covariances (nu = 1/2, 3/2, 5/2) and their chain rule,
//! the counterparts of `se::se_cross` and
//! `se::se_cross_grad`:
//! `K[i, j] = s2 kappa(r_ij)`, `r_ij^2 = sum_t (inv_l_t (a_it - b_jt))^2`.
//!
//! Distances come from direct differences, not the SE's expanded form: the
//! square root of a cancelled `r^2` of 1e-16 is an error of 1e-8 in `r`.
//! At `r = 0` Matérn 1/2's gradient takes the symmetric derivative (zero),
//! never NaN.

use nalgebra::{DMatrix, Dyn, Matrix, Storage};
use rayon::prelude::*;
use sgp_runtime::Kernel;

use super::scaled::{CrossGrad, KernelGrad, Scaled, PAR_MIN_ENTRIES};

/// Below this squared distance Matérn 1/2 counts as at its kink.
const KINK_R2: f64 = f64::MIN_POSITIVE;

/// `kappa(r)` and `-2 d kappa / d r^2 = -(1 / r) d kappa / d r` at the
/// scaled squared distance `r2`.
///
/// # Panics
/// For the squared exponential (a caller bug: it has its own path).
pub fn profile(kernel: Kernel, r2: f64) -> (f64, f64) {
    let r = libm::sqrt(r2);
    match kernel {
        Kernel::Matern12 => {
            let e = libm::exp(-r);
            (e, if r2 < KINK_R2 { 0.0 } else { e / r })
        }
        Kernel::Matern32 => {
            let u = libm::sqrt(3.0) * r;
            let e = libm::exp(-u);
            ((1.0 + u) * e, 3.0 * e)
        }
        Kernel::Matern52 => {
            let u = libm::sqrt(5.0) * r;
            let e = libm::exp(-u);
            ((1.0 + u + u * u / 3.0) * e, 5.0 / 3.0 * (1.0 + u) * e)
        }
        Kernel::SquaredExponential => panic!("the squared exponential has its own path"),
    }
}

/// `|inv_l o (a_i - b_j)|^2`.
fn squared_distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Rows of `x` times the inverse length scales, one point per row as a
/// contiguous vector.
fn scaled_rows<S: Storage<f64, Dyn, Dyn>>(
    x: &Matrix<f64, Dyn, Dyn, S>,
    inv_l: &[f64],
) -> Vec<Vec<f64>> {
    (0..x.nrows())
        .map(|i| {
            inv_l
                .iter()
                .enumerate()
                .map(|(t, il)| x[(i, t)] * il)
                .collect()
        })
        .collect()
}

/// The Matérn cross-covariance between the rows of `a` (P x T) and `b`
/// (Q x T), with `scaled`'s T inverse length scales and signal variance.
///
/// # Panics
/// If the dimensions disagree, or for the squared exponential (caller
/// bugs).
pub(crate) fn matern_cross<SA, SB>(
    scaled: &Scaled,
    a: &Matrix<f64, Dyn, Dyn, SA>,
    b: &Matrix<f64, Dyn, Dyn, SB>,
) -> DMatrix<f64>
where
    SA: Storage<f64, Dyn, Dyn>,
    SB: Storage<f64, Dyn, Dyn>,
{
    let Scaled { kernel, inv_l, s2 } = *scaled;
    assert!(a.ncols() == inv_l.len() && b.ncols() == inv_l.len());
    let (p, q) = (a.nrows(), b.nrows());
    let mut out = DMatrix::<f64>::zeros(p, q);
    if p == 0 || q == 0 {
        return out;
    }
    let (sa, sb) = (scaled_rows(a, inv_l), scaled_rows(b, inv_l));
    let fill = |(j, col): (usize, &mut [f64])| {
        for (o, ai) in col.iter_mut().zip(&sa) {
            *o = s2 * profile(kernel, squared_distance(ai, &sb[j])).0;
        }
    };
    if p * q < PAR_MIN_ENTRIES {
        out.as_mut_slice().chunks_mut(p).enumerate().for_each(fill);
    } else {
        out.as_mut_slice()
            .par_chunks_mut(p)
            .enumerate()
            .for_each(fill);
    }
    out
}

/// One column block's share of the chain rule: `dF/da` (summed over the
/// block's columns), the block's rows of `dF/db`, and `dF/dlog l`.
struct Partial {
    ga: Vec<f64>,
    gb: Vec<(usize, Vec<f64>)>,
    gl: Vec<f64>,
}

/// Chain rule through `K = matern_cross(scaled, a, b)`, as
/// [`crate::model::kernel::se_cross_grad`]: with `G_ij = adj_ij s2
/// g(r_ij)` (`g` the second value of [`profile`]) and `u = a o inv_l`,
/// `v = b o inv_l`: `dF/du_it = -sum_j G_ij (u_it - v_jt)`, `dF/dv_jt =
/// sum_i G_ij (u_it - v_jt)`, `dF/dlog l_t = sum_ij G_ij (u_it -
/// v_jt)^2`, `dF/dlog s2 = sum adj o K`, and `dF/da = dF/du o inv_l`.
///
/// # Panics
/// On dimension mismatch, or for the squared exponential (caller bugs).
pub(crate) fn matern_cross_grad<SA, SB>(
    scaled: &Scaled,
    a: &Matrix<f64, Dyn, Dyn, SA>,
    b: &Matrix<f64, Dyn, Dyn, SB>,
    k: &DMatrix<f64>,
    adj: &DMatrix<f64>,
    want_a: bool,
    want_b: bool,
) -> CrossGrad
where
    SA: Storage<f64, Dyn, Dyn>,
    SB: Storage<f64, Dyn, Dyn>,
{
    let Scaled { kernel, inv_l, s2 } = *scaled;
    let d = inv_l.len();
    assert!(a.ncols() == d && b.ncols() == d);
    let (p, q) = (a.nrows(), b.nrows());
    assert_eq!(k.shape(), (p, q), "covariance shape");
    assert_eq!(adj.shape(), (p, q), "adjoint shape");
    let gs: f64 = adj.iter().zip(k.iter()).map(|(a, k)| a * k).sum();
    let (sa, sb) = (scaled_rows(a, inv_l), scaled_rows(b, inv_l));
    let block = |cols: std::ops::Range<usize>| {
        let mut part = Partial {
            ga: vec![0.0; p * d],
            gb: Vec::with_capacity(cols.len()),
            gl: vec![0.0; d],
        };
        let mut diff = vec![0.0; d];
        for j in cols {
            let mut gbj = vec![0.0; d];
            for (i, ai) in sa.iter().enumerate() {
                let w = adj[(i, j)];
                if w == 0.0 {
                    continue;
                }
                for ((dt, x), y) in diff.iter_mut().zip(ai).zip(&sb[j]) {
                    *dt = x - y;
                }
                let r2: f64 = diff.iter().map(|v| v * v).sum();
                let g = w * s2 * profile(kernel, r2).1;
                for t in 0..d {
                    let gd = g * diff[t];
                    part.ga[i * d + t] -= gd;
                    gbj[t] += gd;
                    part.gl[t] += gd * diff[t];
                }
            }
            part.gb.push((j, gbj));
        }
        part
    };
    let merge = |mut x: Partial, y: Partial| {
        for (a, b) in x.ga.iter_mut().zip(&y.ga) {
            *a += b;
        }
        for (a, b) in x.gl.iter_mut().zip(&y.gl) {
            *a += b;
        }
        x.gb.extend(y.gb);
        x
    };
    let total = if p * q < PAR_MIN_ENTRIES {
        block(0..q)
    } else {
        let cols = (PAR_MIN_ENTRIES / 4 / p.max(1)).max(1);
        (0..q.div_ceil(cols))
            .into_par_iter()
            .map(|c| block(c * cols..((c + 1) * cols).min(q)))
            .reduce_with(merge)
            .unwrap_or_else(|| block(0..0))
    };
    let ga = want_a.then(|| DMatrix::from_fn(p, d, |i, t| total.ga[i * d + t] * inv_l[t]));
    let gb = want_b.then(|| {
        let mut gb = DMatrix::zeros(q, d);
        for (j, row) in &total.gb {
            for t in 0..d {
                gb[(*j, t)] = row[t] * inv_l[t];
            }
        }
        gb
    });
    CrossGrad {
        a: ga,
        b: gb,
        kernel: KernelGrad {
            log_lengthscales: total.gl,
            log_signal_var: gs,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::kernel::random_matrix;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    const MATERNS: [Kernel; 3] = [Kernel::Matern12, Kernel::Matern32, Kernel::Matern52];

    /// `F = sum adj o K`, the scalar whose gradient `matern_cross_grad` gives.
    fn objective(
        kernel: Kernel,
        a: &DMatrix<f64>,
        b: &DMatrix<f64>,
        inv_l: &[f64],
        s2: f64,
        adj: &DMatrix<f64>,
    ) -> f64 {
        matern_cross(&Scaled { kernel, inv_l, s2 }, a, b)
            .component_mul(adj)
            .sum()
    }

    #[test]
    fn cross_matches_the_closed_forms_and_the_parallel_path() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let (a, inv_l) = (random_matrix(&mut rng, 300, 2), [0.7, 1.9]);
        let b = random_matrix(&mut rng, 260, 2);
        for kernel in MATERNS {
            let scaled = Scaled {
                kernel,
                inv_l: &inv_l,
                s2: 1.3,
            };
            let k = matern_cross(&scaled, &a, &b);
            for (i, j) in [(0, 0), (17, 250), (299, 3)] {
                let r = (0..2)
                    .map(|t| (inv_l[t] * (a[(i, t)] - b[(j, t)])).powi(2))
                    .sum::<f64>()
                    .sqrt();
                let expected = 1.3
                    * match kernel {
                        Kernel::Matern12 => libm::exp(-r),
                        Kernel::Matern32 => (1.0 + 3f64.sqrt() * r) * libm::exp(-(3f64.sqrt()) * r),
                        _ => {
                            let u = 5f64.sqrt() * r;
                            (1.0 + u + u * u / 3.0) * libm::exp(-u)
                        }
                    };
                assert!((k[(i, j)] - expected).abs() < 1e-14, "{kernel:?}");
            }
            let small = matern_cross(&scaled, &a.rows(0, 5), &b.rows(0, 4));
            assert_eq!(small, k.view((0, 0), (5, 4)).into_owned());
        }
    }

    /// Every gradient against central differences, for points in general
    /// position and for a pseudo-input exactly on a data point (Matérn
    /// 1/2's kink, where the symmetric derivative 0 is the central
    /// difference), serial and parallel.
    #[test]
    fn cross_grad_matches_finite_differences_even_at_the_kink() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for (p, q) in [(4, 6), (70, 1000)] {
            let a = random_matrix(&mut rng, p, 3);
            let mut b = random_matrix(&mut rng, q, 3);
            for t in 0..3 {
                b[(1, t)] = a[(2, t)];
            }
            let adj = random_matrix(&mut rng, p, q);
            let (inv_l, s2) = (vec![0.8, 1.7, 2.5], 1.4);
            for kernel in MATERNS {
                let scaled = Scaled {
                    kernel,
                    inv_l: &inv_l,
                    s2,
                };
                let k = matern_cross(&scaled, &a, &b);
                let g = matern_cross_grad(&scaled, &a, &b, &k, &adj, true, true);
                let f = |a: &DMatrix<f64>, b: &DMatrix<f64>, inv_l: &[f64], s2: f64| {
                    objective(kernel, a, b, inv_l, s2, &adj)
                };
                let h = 1e-6;
                let tol = |fd: f64| 1e-5 * (1.0 + fd.abs());
                let (ga, gb) = (g.a.as_ref().unwrap(), g.b.as_ref().unwrap());
                for (i, t) in [(2, 0), (2, 2), (0, 1), (p - 1, 2)] {
                    let (mut up, mut down) = (a.clone(), a.clone());
                    up[(i, t)] += h;
                    down[(i, t)] -= h;
                    let fd = (f(&up, &b, &inv_l, s2) - f(&down, &b, &inv_l, s2)) / (2.0 * h);
                    assert!(ga[(i, t)].is_finite() && (ga[(i, t)] - fd).abs() < tol(fd));
                }
                for (j, t) in [(1, 0), (1, 1), (q - 1, 2)] {
                    let (mut up, mut down) = (b.clone(), b.clone());
                    up[(j, t)] += h;
                    down[(j, t)] -= h;
                    let fd = (f(&a, &up, &inv_l, s2) - f(&a, &down, &inv_l, s2)) / (2.0 * h);
                    assert!(gb[(j, t)].is_finite() && (gb[(j, t)] - fd).abs() < tol(fd));
                }
                for t in 0..3 {
                    // d/dlog l_t with inv_l_t = exp(-log l_t).
                    let (mut up, mut down) = (inv_l.clone(), inv_l.clone());
                    up[t] *= libm::exp(-h);
                    down[t] *= libm::exp(h);
                    let fd = (f(&a, &b, &up, s2) - f(&a, &b, &down, s2)) / (2.0 * h);
                    let got = g.kernel.log_lengthscales[t];
                    assert!((got - fd).abs() < tol(fd), "{kernel:?} l{t}: {got} vs {fd}");
                }
                let fd = (f(&a, &b, &inv_l, s2 * libm::exp(h))
                    - f(&a, &b, &inv_l, s2 * libm::exp(-h)))
                    / (2.0 * h);
                assert!((g.kernel.log_signal_var - fd).abs() < tol(fd));
            }
        }
    }

    #[test]
    fn a_pseudo_input_on_a_data_point_has_a_zero_not_nan_gradient() {
        let a = DMatrix::from_row_slice(1, 2, &[0.3, -0.2]);
        let adj = DMatrix::from_element(1, 1, 1.0);
        for kernel in MATERNS {
            let scaled = Scaled {
                kernel,
                inv_l: &[1.0, 2.0],
                s2: 1.0,
            };
            let k = matern_cross(&scaled, &a, &a);
            assert_eq!(k[(0, 0)], 1.0);
            let g = matern_cross_grad(&scaled, &a, &a, &k, &adj, true, true);
            let ga = g.a.unwrap();
            assert!(ga.iter().all(|v| *v == 0.0), "{kernel:?}: {ga}");
            assert!(g.kernel.log_lengthscales.iter().all(|v| *v == 0.0));
        }
    }
}
