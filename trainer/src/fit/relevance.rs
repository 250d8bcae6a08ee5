//! Which inputs a classifier's labels depend on, by counting: the
//! G-test of the labels against each input's quantile bins, and against
//! each pair's bins beyond the first input's own. A start that knows the
//! relevant inputs leaves the base-rate plateau where a start whose
//! length scales weigh every input alike stays on it (docs/src/
//! classification.md, "svgp").

use nalgebra::DMatrix;

/// Quantile bins of an input in the one-input test.
const SINGLE_BINS: usize = 8;

/// Quantile bins of each input of a pair.
const PAIR_BINS: usize = 4;

/// How far (in standard deviations of its null distribution, chi-squared)
/// a G statistic must lie above its degrees of freedom to count: far
/// enough that 2,016 pairs of 64 noise inputs rarely pass one.
const RELEVANT_Z: f64 = 6.0;

/// Most inputs whose pairs are tested (`D (D - 1) / 2` tests of `N`
/// rows each); beyond it only single inputs are.
const MAX_PAIR_INPUTS: usize = 64;

/// Whether each input of `x` (standardised rows) is relevant to some
/// column of the -1/+1 labels `y`: its bins alone, or jointly with
/// another input beyond that input's own bins, explain more of the labels
/// than chance would.
pub(crate) fn relevant_inputs(x: &DMatrix<f64>, y: &DMatrix<f64>) -> Vec<bool> {
    let d = x.ncols();
    let fine: Vec<Vec<usize>> = (0..d).map(|j| bins(x, j, SINGLE_BINS)).collect();
    let coarse: Vec<Vec<usize>> = (0..d).map(|j| bins(x, j, PAIR_BINS)).collect();
    let mut relevant: Vec<bool> = fine
        .iter()
        .map(|b| {
            y.column_iter()
                .any(|col| significant(g_test(b, col.as_slice())))
        })
        .collect();
    if d > MAX_PAIR_INPUTS {
        return relevant;
    }
    for a in 0..d {
        for b in 0..d {
            if a == b || relevant[b] {
                continue;
            }
            let cells: Vec<usize> = coarse[a]
                .iter()
                .zip(&coarse[b])
                .map(|(i, j)| i * PAIR_BINS + j)
                .collect();
            relevant[b] = y.column_iter().any(|col| {
                let (g_pair, df_pair) = g_test(&cells, col.as_slice());
                let (g_a, df_a) = g_test(&coarse[a], col.as_slice());
                significant((g_pair - g_a, df_pair.saturating_sub(df_a)))
            });
        }
    }
    relevant
}

/// Each row's quantile bin of input `j` among `count`: the rank of its
/// value's first occurrence, so tied values share a bin.
fn bins(x: &DMatrix<f64>, j: usize, count: usize) -> Vec<usize> {
    let col = x.column(j);
    let mut sorted: Vec<f64> = col.iter().copied().collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len().max(1);
    col.iter()
        .map(|v| {
            let below = sorted.partition_point(|s| s.total_cmp(v).is_lt());
            (below * count / n).min(count - 1)
        })
        .collect()
}

/// The G statistic of the +1/-1 `labels` against the cells `cell` (one
/// per row) and its degrees of freedom (occupied cells less one).
fn g_test(cell: &[usize], labels: &[f64]) -> (f64, usize) {
    let cells = cell.iter().max().map_or(0, |m| m + 1);
    let mut counts = vec![(0usize, 0usize); cells];
    for (&c, &l) in cell.iter().zip(labels) {
        if let Some(slot) = counts.get_mut(c) {
            slot.0 += 1;
            slot.1 += usize::from(l > 0.0);
        }
    }
    let n = labels.len() as f64;
    let p = labels.iter().filter(|&&l| l > 0.0).count() as f64 / n;
    let term = |observed: f64, expected: f64| {
        if observed > 0.0 && expected > 0.0 {
            observed * libm::log(observed / expected)
        } else {
            0.0
        }
    };
    let mut g = 0.0;
    let mut occupied = 0;
    for &(rows, positive) in &counts {
        if rows == 0 {
            continue;
        }
        occupied += 1;
        let (rows, positive) = (rows as f64, positive as f64);
        g += term(positive, rows * p) + term(rows - positive, rows * (1.0 - p));
    }
    (2.0 * g, occupied.max(1) - 1)
}

/// Whether a G statistic with `df` degrees of freedom lies
/// [`RELEVANT_Z`] standard deviations above its null mean.
fn significant((g, df): (f64, usize)) -> bool {
    df > 0 && g > df as f64 + RELEVANT_Z * (2.0 * df as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{classification, ClassShape};

    fn labels(y: &nalgebra::DVector<f64>) -> DMatrix<f64> {
        DMatrix::from_fn(y.len(), 1, |i, _| if y[i] > 0.5 { 1.0 } else { -1.0 })
    }

    /// The ring's two inputs and no other, over seeds; XOR's two inputs,
    /// which only their pair reveals (each alone says nothing).
    #[test]
    fn finds_the_ring_and_the_xor_inputs_and_no_other() {
        for seed in 0..4 {
            let (x, y) = classification(ClassShape::Ring, 2000, seed);
            let found = relevant_inputs(&x, &labels(&y));
            assert_eq!(found, [true, true, false, false, false, false], "{seed}");
            let (x, y) = classification(ClassShape::Xor, 1000, seed);
            let noise = DMatrix::from_fn(1000, 2, |i, j| {
                (libm::sin((i * 2 + j) as f64 * 12.9898) * 43758.55).fract()
            });
            let x = DMatrix::from_fn(
                1000,
                4,
                |i, j| {
                    if j < 2 {
                        x[(i, j)]
                    } else {
                        noise[(i, j - 2)]
                    }
                },
            );
            let single: Vec<bool> = (0..4)
                .map(|j| significant(g_test(&bins(&x, j, SINGLE_BINS), labels(&y).as_slice())))
                .collect();
            assert_eq!(single, [false; 4], "{seed}");
            let found = relevant_inputs(&x, &labels(&y));
            assert_eq!(found, [true, true, false, false], "{seed}");
        }
    }
}
