//! Deterministic starting points: pseudo-input locations and data-scale
//! hyperparameters. Same data and seed, same result, on every platform
//! (ChaCha8 is portable and `rand` is only asked for `u64`/`f64` draws and
//! index samples).

use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::model::icf::kernel_icf;
use crate::model::kernel::KernelParams;
use crate::numerics::linalg::{dot, lane_sum, mat_ref, mul};
use crate::{Error, Result};

/// Initial log-space hyperparameters of an ARD squared-exponential kernel
/// with Gaussian noise; converted by the caller into the kernel's own type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InitialHyper {
    /// Natural log of each input's lengthscale.
    pub log_lengthscales: Vec<f64>,
    /// Natural log of the signal variance.
    pub log_signal_var: f64,
    /// Natural log of the noise variance.
    pub log_noise_var: f64,
}

fn check_m(x: &DMatrix<f64>, m: usize) -> Result<()> {
    if m == 0 {
        return Err(Error::BadInput("need at least one pseudo-input".into()));
    }
    if m > x.nrows() {
        return Err(Error::BadInput(format!(
            "{m} pseudo-inputs requested but the data have only {} rows",
            x.nrows()
        )));
    }
    Ok(())
}

/// `m` distinct rows of `x`, chosen uniformly at random.
pub fn random_subset(x: &DMatrix<f64>, m: usize, seed: u64) -> Result<DMatrix<f64>> {
    check_m(x, m)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let rows = rand::seq::index::sample(&mut rng, x.nrows(), m).into_vec();
    Ok(x.select_rows(&rows))
}

fn sq_dist(a: &[f64], b: &[f64]) -> f64 {
    lane_sum(a, b, |p, q| (p - q) * (p - q))
}

/// Rows of data per block of [`nearest_all`].
const ASSIGN_ROWS: usize = 512;

/// The nearest centre of every row of `x` (the first on a tie), the step
/// of a Lloyd iteration that costs N M D. The distances are expanded as
/// `|c|^2 - 2 x . c` (`|x|^2` is the same for every centre) so the work is
/// one matrix product per block of rows: a sixth of a 32-dimensional
/// SPGP fit was this step as a loop over pairs. Each block is computed on
/// its own, so the assignment is the same whatever the threads.
fn nearest_all(x: &DMatrix<f64>, centres: &[Vec<f64>]) -> Vec<usize> {
    let (n, m) = (x.nrows(), centres.len());
    let c = DMatrix::from_fn(m, x.ncols(), |k, t| centres[k][t]);
    let c_sq: Vec<f64> = centres.iter().map(|c| dot(c, c)).collect();
    let starts: Vec<usize> = (0..n).step_by(ASSIGN_ROWS).collect();
    starts
        .par_iter()
        .flat_map_iter(|&start| {
            let rows = x.rows(start, ASSIGN_ROWS.min(n - start)).into_owned();
            // m x rows: column i holds row i's products with every centre.
            let dots = mul(mat_ref(&c), mat_ref(&rows).transpose());
            let c_sq = &c_sq;
            (0..rows.nrows()).map(move |i| {
                let col = dots.column(i);
                (0..m)
                    .map(|k| (k, c_sq[k] - 2.0 * col[k]))
                    .fold(
                        (0, f64::INFINITY),
                        |best, cur| {
                            if cur.1 < best.1 {
                                cur
                            } else {
                                best
                            }
                        },
                    )
                    .0
            })
        })
        .collect()
}

/// `m` cluster centres of the rows of `x`: k-means++ seeding, then at most
/// `max_iter` Lloyd iterations (stopping early when no assignment changes).
/// A cluster that loses all its points is re-seeded at the point farthest
/// from its current centre, which keeps the result deterministic. If `x`
/// has fewer than `m` distinct rows some centres coincide.
pub(crate) fn kmeans(
    x: &DMatrix<f64>,
    m: usize,
    seed: u64,
    max_iter: usize,
) -> Result<DMatrix<f64>> {
    check_m(x, m)?;
    let points: Vec<Vec<f64>> = x.row_iter().map(|r| r.iter().copied().collect()).collect();
    let n = points.len();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);

    let mut chosen = vec![false; n];
    let first = rng.random_range(0..n);
    chosen[first] = true;
    let mut centres = vec![points[first].clone()];
    let mut d2: Vec<f64> = points.iter().map(|p| sq_dist(p, &centres[0])).collect();
    while centres.len() < m {
        let total: f64 = d2.iter().sum();
        let pick = if total > 0.0 && total.is_finite() {
            let mut r = rng.random::<f64>() * total;
            // Falls back to the last positive-weight point if rounding
            // leaves r just above the running sum.
            let mut idx = d2.iter().rposition(|&w| w > 0.0).unwrap_or(0);
            for (i, &w) in d2.iter().enumerate() {
                if w > 0.0 && r < w {
                    idx = i;
                    break;
                }
                r -= w;
            }
            idx
        } else {
            // Every point already sits on a centre: take an unused row.
            chosen.iter().position(|c| !c).unwrap_or(0)
        };
        chosen[pick] = true;
        let c = points[pick].clone();
        d2.par_iter_mut()
            .zip(points.par_iter())
            .for_each(|(d, p)| *d = d.min(sq_dist(p, &c)));
        centres.push(c);
    }

    let dim = x.ncols();
    let mut assign = vec![usize::MAX; n];
    for _ in 0..max_iter {
        let nearest_centres = nearest_all(x, &centres);
        if nearest_centres == assign {
            break;
        }
        assign = nearest_centres;
        let mut sums = vec![vec![0.0; dim]; m];
        let mut counts = vec![0usize; m];
        for (&k, p) in assign.iter().zip(&points) {
            counts[k] += 1;
            for (s, v) in sums[k].iter_mut().zip(p) {
                *s += v;
            }
        }
        for k in 0..m {
            if counts[k] > 0 {
                let c = counts[k] as f64;
                centres[k] = sums[k].iter().map(|s| s / c).collect();
            } else {
                let far = points
                    .iter()
                    .zip(&assign)
                    .enumerate()
                    .map(|(i, (p, &a))| (i, sq_dist(p, &centres[a])))
                    .fold(
                        (0, -1.0),
                        |best, cur| if cur.1 > best.1 { cur } else { best },
                    )
                    .0;
                centres[k] = points[far].clone();
                assign[far] = k;
            }
        }
    }

    Ok(DMatrix::from_row_iterator(
        m,
        dim,
        centres.into_iter().flatten(),
    ))
}

/// `m` rows of `x` chosen greedily by conditional variance under `kern`
/// (Burt et al. 2020): each next row is the one whose variance given the
/// rows chosen so far, `k(x,x) - k_m(x)^T K_mm^-1 k_m(x)`, is largest (the
/// lowest index on ties), i.e. the pivots of an incomplete Cholesky of
/// `K(x, x)` ([`kernel_icf`]). O(N m^2), no seed. Once every remaining
/// row duplicates a chosen one, the rest are the lowest unchosen rows.
pub(crate) fn greedy_variance(
    x: &DMatrix<f64>,
    m: usize,
    kern: &KernelParams,
) -> Result<DMatrix<f64>> {
    check_m(x, m)?;
    let mut rows = kernel_icf(kern, x, m, 0.0)?.pivots;
    let mut chosen = vec![false; x.nrows()];
    for &p in &rows {
        chosen[p] = true;
    }
    rows.extend((0..x.nrows()).filter(|&i| !chosen[i]).take(m - rows.len()));
    Ok(x.select_rows(&rows))
}

/// The kernel [`greedy_variance`] chooses by when it has only the inputs:
/// the data-scale length scales ([`default_hyperparameters`]) and a unit
/// signal (its scale does not change the choice).
pub(crate) fn data_scale_inputs_kernel(
    x: &DMatrix<f64>,
    kernel: sgp_runtime::Kernel,
) -> Result<KernelParams> {
    let h = default_hyperparameters(x, &[]);
    let l: Vec<f64> = h.log_lengthscales.iter().map(|v| libm::exp(*v)).collect();
    Ok(KernelParams::new(&l, 1.0, libm::exp(h.log_noise_var))?.with_kernel(kernel))
}

/// Data-scale starting hyperparameters for standardised data:
/// lengthscale of each input = half its range (the SPGP convention; about
/// 1.5–2 for standardised inputs), signal variance = sample variance of `y`
/// (1 after standardisation), noise variance = a tenth of it. Degenerate
/// spreads (constant or non-finite) fall back to 1.
pub(crate) fn default_hyperparameters(x: &DMatrix<f64>, y: &[f64]) -> InitialHyper {
    let log_lengthscales = x
        .column_iter()
        .map(|col| {
            let (lo, hi) = col
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                    (lo.min(v), hi.max(v))
                });
            let half_range = 0.5 * (hi - lo);
            if half_range.is_finite() && half_range > 0.0 {
                libm::log(half_range)
            } else {
                0.0
            }
        })
        .collect();
    let var_y = if y.len() >= 2 {
        let n = y.len() as f64;
        let mean = y.iter().sum::<f64>() / n;
        y.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0)
    } else {
        f64::NAN
    };
    let var_y = if var_y.is_finite() && var_y > 0.0 {
        var_y
    } else {
        1.0
    };
    InitialHyper {
        log_lengthscales,
        log_signal_var: libm::log(var_y),
        log_noise_var: libm::log(var_y / 10.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows_of(m: &DMatrix<f64>) -> Vec<Vec<f64>> {
        m.row_iter().map(|r| r.iter().copied().collect()).collect()
    }

    fn grid(n: usize) -> DMatrix<f64> {
        DMatrix::from_fn(n, 2, |i, j| (i * (j + 1)) as f64 * 0.1 + j as f64)
    }

    #[test]
    fn random_subset_is_distinct_deterministic_and_checked() {
        let x = grid(30);
        let a = random_subset(&x, 10, 3).unwrap();
        assert_eq!(a, random_subset(&x, 10, 3).unwrap());
        assert_ne!(a, random_subset(&x, 10, 4).unwrap());
        let rows = rows_of(&a);
        let all = rows_of(&x);
        for (i, r) in rows.iter().enumerate() {
            assert!(all.contains(r));
            assert!(!rows[..i].contains(r), "duplicate row {r:?}");
        }
        assert_eq!(random_subset(&x, 30, 0).unwrap().nrows(), 30);
        assert!(random_subset(&x, 31, 0).is_err());
        assert!(random_subset(&x, 0, 0).is_err());
    }

    #[test]
    fn kmeans_finds_well_separated_clusters() {
        // Three tight clusters around (0,0), (10,0), (0,10).
        let centres = [(0.0, 0.0), (10.0, 0.0), (0.0, 10.0)];
        let x = DMatrix::from_fn(60, 2, |i, j| {
            let (cx, cy) = centres[i % 3];
            let jitter = ((i / 3) as f64 - 10.0) * 0.01;
            if j == 0 {
                cx + jitter
            } else {
                cy - jitter
            }
        });
        let c = kmeans(&x, 3, 11, 50).unwrap();
        assert_eq!(c, kmeans(&x, 3, 11, 50).unwrap());
        let mut found: Vec<(f64, f64)> = c.row_iter().map(|r| (r[0], r[1])).collect();
        found.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let mut want = centres.to_vec();
        want.sort_by(|a, b| a.partial_cmp(b).unwrap());
        for (f, w) in found.iter().zip(&want) {
            assert!(
                (f.0 - w.0).abs() < 0.05 && (f.1 - w.1).abs() < 0.05,
                "{found:?}"
            );
        }
    }

    #[test]
    fn kmeans_handles_duplicates_and_m_equal_n() {
        let x = DMatrix::from_row_slice(4, 1, &[1.0, 1.0, 1.0, 5.0]);
        let c = kmeans(&x, 3, 0, 20).unwrap();
        assert_eq!(c.nrows(), 3);
        assert!(c.iter().all(|v| v.is_finite()));
        assert!(c.iter().any(|&v| v == 5.0));
        let g = grid(5);
        assert_eq!(kmeans(&g, 5, 1, 10).unwrap().nrows(), 5);
        assert!(kmeans(&g, 6, 1, 10).is_err());
        assert_eq!(kmeans(&g, 2, 1, 0).unwrap().nrows(), 2);
    }

    /// Conditional variance of row `i` of `x` given the rows `chosen`.
    fn conditional_variance(
        kern: &KernelParams,
        x: &DMatrix<f64>,
        chosen: &[usize],
        i: usize,
    ) -> f64 {
        let xi = x.rows(i, 1).into_owned();
        if chosen.is_empty() {
            return kern.cross(&xi, &xi)[(0, 0)];
        }
        let z = x.select_rows(chosen);
        let mut kzz = kern.cross(&z, &z);
        for d in 0..chosen.len() {
            kzz[(d, d)] += 1e-12;
        }
        let l = crate::numerics::linalg::cholesky(&kzz).expect("pd");
        let kzi = kern.cross(&z, &xi).column(0).into_owned();
        let v = crate::numerics::linalg::solve_lower_vec(&l, &kzi).expect("solve");
        kern.cross(&xi, &xi)[(0, 0)] - v.dot(&v)
    }

    /// Every pick is the row of largest conditional variance given the
    /// picks before it (the first of equals), over data seeds and shapes.
    #[test]
    fn greedy_picks_the_largest_conditional_variance_each_time() {
        for seed in 0..6 {
            let d = 1 + seed as usize % 3;
            let (x, _) = crate::model::inference::test_util::problem(seed, 60, d);
            let kern = data_scale_inputs_kernel(&x, sgp_runtime::Kernel::SquaredExponential)
                .expect("kernel");
            let z = greedy_variance(&x, 8, &kern).expect("greedy");
            assert_eq!(z, greedy_variance(&x, 8, &kern).expect("greedy"));
            let all = rows_of(&x);
            let mut chosen: Vec<usize> = Vec::new();
            for row in rows_of(&z) {
                let picked = all.iter().position(|r| *r == row).expect("a row of x");
                let cv: Vec<f64> = (0..x.nrows())
                    .map(|i| conditional_variance(&kern, &x, &chosen, i))
                    .collect();
                let best = cv.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                assert!(
                    cv[picked] >= best - 1e-9 * kern.signal_var(),
                    "seed {seed}: pick {} has {} against the best {best}",
                    chosen.len(),
                    cv[picked]
                );
                assert!(!chosen.contains(&picked));
                chosen.push(picked);
            }
        }
    }

    /// Well-separated clusters: one pick in each, whatever the jitter.
    #[test]
    fn greedy_covers_separated_clusters_and_fills_past_duplicates() {
        let centres = [(0.0, 0.0), (10.0, 0.0), (0.0, 10.0), (10.0, 10.0)];
        for seed in 0..5u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let x = DMatrix::from_fn(80, 2, |i, j| {
                let (cx, cy) = centres[i % 4];
                (if j == 0 { cx } else { cy }) + rng.random_range(-0.5..0.5)
            });
            let kern = KernelParams::new(&[1.0, 1.0], 1.0, 0.1).expect("kernel");
            let z = greedy_variance(&x, 4, &kern).expect("greedy");
            let mut hit: Vec<usize> = rows_of(&z)
                .iter()
                .map(|r| (r[0] > 5.0) as usize + 2 * (r[1] > 5.0) as usize)
                .collect();
            hit.sort_unstable();
            assert_eq!(hit, vec![0, 1, 2, 3], "seed {seed}: {z}");
        }
        // Three distinct rows, repeated: three picks, then the lowest
        // unchosen rows.
        let x = DMatrix::from_row_slice(6, 1, &[0.0, 5.0, 0.0, 10.0, 5.0, 0.0]);
        let kern = KernelParams::new(&[1.0], 1.0, 0.1).expect("kernel");
        let z = greedy_variance(&x, 5, &kern).expect("greedy");
        let mut first: Vec<f64> = z.rows(0, 3).iter().copied().collect();
        first.sort_by(f64::total_cmp);
        assert_eq!(first, vec![0.0, 5.0, 10.0]);
        assert_eq!(z.nrows(), 5);
        assert!(greedy_variance(&x, 7, &kern).is_err());
        assert!(greedy_variance(&x, 0, &kern).is_err());
        assert_eq!(greedy_variance(&x, 6, &kern).expect("all").nrows(), 6);
    }

    #[test]
    fn default_hyperparameters_follow_the_data_scale() {
        let x = DMatrix::from_row_slice(3, 2, &[-1.0, 0.0, 0.0, 0.0, 1.0, 4.0]);
        let y = [1.0, 2.0, 3.0];
        let h = default_hyperparameters(&x, &y);
        assert!((h.log_lengthscales[0] - 0.0).abs() < 1e-12); // half of 2
        assert!((h.log_lengthscales[1] - libm::log(2.0f64)).abs() < 1e-12); // half of 4
        assert!((h.log_signal_var - 0.0).abs() < 1e-12); // sample var 1
        assert!((h.log_noise_var - libm::log(0.1f64)).abs() < 1e-12);
        let flat = DMatrix::from_row_slice(2, 1, &[3.0, 3.0]);
        let h = default_hyperparameters(&flat, &[1.0]);
        assert_eq!(h.log_lengthscales, vec![0.0]);
        assert_eq!(h.log_signal_var, 0.0);
    }
}
