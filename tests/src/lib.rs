//! Cross-crate tests live in `tests/`; this library holds the fits they
//! share, and the README's and guide's Rust blocks as doctests.

#[cfg(doctest)]
pub mod pages;

use sgp_trainer::data::Dataset;
use sgp_trainer::fit::{fit, FitParams, Method};
use sgp_trainer::model::TrainedModel;
use sgp_trainer::numerics::optimise::OptimiseOptions;
use sgp_trainer::options::Options;
use sgp_trainer::synth::synthetic;

/// `n` rows of the synthetic regression data in `d` inputs, columns
/// `x1..xd` and target `y`.
pub fn data(n: usize, d: usize, seed: u64) -> Dataset {
    let (x, y) = synthetic(n, d, seed);
    let names = (1..=d).map(|j| format!("x{j}")).collect();
    Dataset::from_raw(x, y, names, "y".into()).unwrap()
}

/// A quick fit (60 iterations) of `method` with `m` basis functions to 300
/// rows of 3-input data, and that data.
pub fn fitted(method: Method, m: usize, seed: u64) -> (Dataset, TrainedModel) {
    let train = data(300, 3, seed);
    let mut fitted = fit(&train, &params(method, m, seed, 60), &mut |_| {}).unwrap();
    (train, fitted.set.members.remove(0))
}

/// The defaults of `method` with `m` basis functions, `seed`, and at most
/// `max_iter` optimiser iterations (SPGP+DR and PCA: 2 dimensions).
pub fn params(method: Method, m: usize, seed: u64, max_iter: u64) -> FitParams {
    let mut params = Options::defaults(method, m, 2, seed).unwrap();
    *params.optimiser_mut() = OptimiseOptions {
        max_iter,
        ..OptimiseOptions::default()
    };
    params
}
