//! The LARS-lasso path on the diabetes data of the LARS paper (Efron et al.
//! 2004), against scikit-learn's `lars_path(X, y, method="lasso")`.
//!
//! Inputs centred and scaled to unit norm (as scikit-learn's
//! `load_diabetes()` and the paper do), target centred. The reference
//! numbers were computed once with scikit-learn 1.9.1 from this very CSV
//! (`lambda = alpha * n`: scikit-learn divides the squared error by `n`);
//! they are embedded here, so the test needs no Python.

use super::{lasso_path, LarsAction, LarsOptions};
use nalgebra::{DMatrix, DVector};

fn diabetes() -> (DMatrix<f64>, DVector<f64>) {
    let text = include_str!("../../tests/data/diabetes.csv");
    let rows: Vec<Vec<f64>> = text
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(',').map(|v| v.trim().parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 442);
    let n = rows.len();
    let mut x = DMatrix::from_fn(n, 10, |i, j| rows[i][j]);
    for mut col in x.column_iter_mut() {
        let mean = col.mean();
        col.add_scalar_mut(-mean);
        let norm = col.norm();
        col /= norm;
    }
    let mut y = DVector::from_fn(n, |i, _| rows[i][10]);
    let mean = y.mean();
    y.add_scalar_mut(-mean);
    (x, y)
}

/// scikit-learn's breakpoints, `alphas * n`.
const LAMBDAS: [f64; 13] = [
    949.435260384038,
    889.313785360489,
    452.895700526729,
    316.073378948709,
    130.129537096428,
    88.784299350593,
    68.964790189541,
    19.981165359644,
    5.477536366336,
    5.088236293704,
    2.182266843616,
    1.310441339963,
    0.0,
];

/// scikit-learn's coefficients at breakpoints 3, 6, 9 and 12 (the last is
/// the least-squares fit).
const COEFS: [(usize, [f64; 10]); 4] = [
    (
        3,
        [
            0.0,
            0.0,
            434.760893882853,
            79.233837432025,
            0.0,
            0.0,
            0.0,
            0.0,
            374.915641087625,
            0.0,
        ],
    ),
    (
        6,
        [
            0.0,
            -111.976714799221,
            512.048518894516,
            252.523065717224,
            0.0,
            0.0,
            -196.044183889454,
            0.0,
            452.391339463491,
            12.079576637553,
        ],
    ),
    (
        9,
        [
            0.0,
            -227.17497178963,
            526.394759444118,
            314.945627652005,
            -237.447697936199,
            33.714581432924,
            -134.552128958837,
            111.395981323906,
            545.52087275051,
            64.60826228654,
        ],
    ),
    (
        12,
        [
            -10.00986629981,
            -239.815643672422,
            519.845920054462,
            324.384645502322,
            -792.175638552139,
            476.739021005187,
            101.043267937992,
            177.06323767133,
            751.273699557072,
            67.626692183705,
        ],
    ),
];

#[test]
fn lasso_path_on_the_diabetes_data_matches_scikit_learn() {
    let (x, y) = diabetes();
    let path = lasso_path(&x, &y, &LarsOptions::until_nonzeros(11)).unwrap();
    let lambdas: Vec<f64> = path.points.iter().map(|p| p.lambda).collect();
    assert_eq!(lambdas.len(), LAMBDAS.len(), "{lambdas:?}");
    for (ours, theirs) in lambdas.iter().zip(LAMBDAS) {
        assert!((ours - theirs).abs() < 1e-9 * 949.0, "{ours} vs {theirs}");
    }
    // The paper's order of entry (bmi, s5, bp, s3, sex, s6, s1, s4, s2,
    // age), then s3 leaves (the lasso modification) and re-enters.
    let actions: Vec<LarsAction> = path.points.iter().skip(1).map(|p| p.action).collect();
    use LarsAction::{Enter, Leave};
    assert_eq!(
        actions,
        vec![
            Enter(8),
            Enter(3),
            Enter(6),
            Enter(1),
            Enter(9),
            Enter(4),
            Enter(7),
            Enter(5),
            Enter(0),
            Leave(6),
            Enter(6),
            LarsAction::End,
        ]
    );
    assert_eq!(path.points[1].coef[0].0, 2, "bmi first");
    for (k, expected) in COEFS {
        let b = path.coef_at(path.points[k].lambda).unwrap();
        for j in 0..10 {
            assert!(
                (b[j] - expected[j]).abs() < 1e-8 * 800.0,
                "breakpoint {k}, variable {j}: {} vs {}",
                b[j],
                expected[j]
            );
        }
    }
}
