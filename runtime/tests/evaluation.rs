//! The evaluator against answers known in closed form, and against an f64
//! evaluation of the same formulas.

mod common;

use common::{random_spec, reference_latent};
use proptest::prelude::*;
use sgp_runtime::{Error, Link, Model, ModelKind, ModelSpec, Shape};

/// One basis function at the origin of a 1-D standardised input.
fn one_basis(link: Link, two_factors: bool) -> ModelSpec {
    ModelSpec {
        shape: Shape {
            kind: ModelKind::Exact,
            link,
            input_dim: 1,
            feature_dim: 1,
            n_basis: 1,
            projected: false,
            per_basis: false,
            two_factors,
        },
        input_names: vec!["x".into()],
        target_name: "y".into(),
        x_mean: vec![2.0],
        x_scale: vec![0.5],
        projection: vec![],
        centres: vec![0.0],
        widths: vec![4.0],
        amplitudes: vec![1.5],
        beta: vec![0.8],
        l1: vec![2.0],
        l2: if two_factors { vec![4.0] } else { vec![] },
        prior: 1.5,
        noise: 0.1,
        bias: 0.0,
        y_mean: 1.0,
        y_scale: 3.0,
        positive_class: 0.0,
    }
}

fn load<const M: usize, const G: usize, const D: usize>(spec: &ModelSpec) -> Model<M, G, D> {
    Model::from_bytes(&spec.to_bytes().unwrap()).unwrap()
}

#[test]
fn one_basis_function_in_closed_form() {
    let model: Model<4, 2, 2> = load(&one_basis(Link::Identity, false));
    // x = 2.25 standardises to z = 0.5; k = 1.5 exp(-0.5 * 4 * 0.25).
    let k = 1.5 * (-0.5f64).exp();
    let latent_var = 1.5 - (k / 2.0).powi(2);
    let p = model.predict(&[2.25]).unwrap();
    assert!((p.mean as f64 - (1.0 + 3.0 * 0.8 * k)).abs() < 1e-5);
    assert!((p.variance as f64 - 9.0 * (latent_var + 0.1)).abs() < 1e-5);
    let latent = model.predict_latent(&[2.25]).unwrap();
    assert!((latent.variance as f64 - 9.0 * latent_var).abs() < 1e-5);
}

#[test]
fn second_factor_adds_back_variance() {
    let model: Model<1, 1, 1> = load(&one_basis(Link::Identity, true));
    let k = 1.5 * (-0.5f64).exp();
    let latent_var = 1.5 - (k / 2.0).powi(2) + (k / 4.0).powi(2);
    let p = model.predict_latent(&[2.25]).unwrap();
    assert!((p.variance as f64 - 9.0 * latent_var).abs() < 1e-5);
}

#[test]
fn far_away_input_gives_prior_plus_noise() {
    for seed in 0..4 {
        let spec = random_spec(seed, 6, 3, 3, false, seed % 2 == 0, true, Link::Identity);
        let model: Model<6, 3, 3> = load(&spec);
        let p = model.predict(&[1e4, -1e4, 1e4]).unwrap();
        let expected = 4.0 * (1.3 + 0.05);
        assert!((p.variance - expected).abs() < 1e-5 * expected, "{p:?}");
        assert!(
            (p.mean - 10.0).abs() < 1e-5,
            "far mean is the target mean: {p:?}"
        );
    }
}

#[test]
fn probit_of_zero_mean_is_one_half() {
    let mut spec = one_basis(Link::Probit, false);
    spec.beta = vec![0.0];
    let model: Model<1, 1, 1> = load(&spec);
    assert_eq!(model.probability(&[2.0]).unwrap(), 0.5);
    spec.bias = 1.0;
    let model: Model<1, 1, 1> = load(&spec);
    // Far away: v = prior, so P = Phi(b / sqrt(1 + prior)).
    let p = model.probability(&[1e6]).unwrap();
    let expected = 0.5 * libm::erfc(-(1.0 / (2.5f64).sqrt()) / 2f64.sqrt());
    assert!((p as f64 - expected).abs() < 1e-6, "{p} vs {expected}");
}

#[test]
fn probability_of_a_regression_model_is_an_error() {
    let model: Model<1, 1, 1> = load(&one_basis(Link::Identity, false));
    assert_eq!(model.probability(&[0.0]), Err(Error::NotClassifier));
}

#[test]
fn wrong_input_length_is_an_error() {
    let model: Model<4, 2, 2> = load(&one_basis(Link::Identity, false));
    let expected = Err(Error::InputLength {
        expected: 1,
        found: 2,
    });
    assert_eq!(model.predict(&[1.0, 2.0]), expected);
    assert_eq!(model.mean(&[1.0, 2.0]), expected.map(|p| p.mean));
    assert!(model.predict(&[]).is_err());
}

#[test]
fn non_finite_input_is_an_error_not_a_plausible_answer() {
    let model: Model<4, 2, 2> = load(&one_basis(Link::Identity, false));
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        assert_eq!(model.predict(&[bad]), Err(Error::NonFiniteInput));
        assert_eq!(model.mean(&[bad]), Err(Error::NonFiniteInput));
    }
}

#[test]
fn a_failed_load_leaves_an_empty_model() {
    let blob = one_basis(Link::Identity, false).to_bytes().unwrap();
    let mut model = Model::<4, 2, 2>::new();
    model.load(&blob).unwrap();
    assert!(model.predict(&[2.0]).is_ok());
    let mut bad = blob.clone();
    bad[20] ^= 1;
    assert!(model.load(&bad).is_err());
    assert!(matches!(
        model.predict(&[2.0]),
        Err(Error::InputLength { expected: 0, .. })
    ));
}

#[test]
fn variance_is_clamped_not_negative_or_nan() {
    // A first factor far too small makes prior - |L1^-1 k|^2 hugely negative.
    let mut spec = one_basis(Link::Identity, false);
    spec.l1 = vec![1e-3];
    let model: Model<1, 1, 1> = load(&spec);
    let p = model.predict_latent(&[2.0]).unwrap();
    assert_eq!(p.variance, 0.0);
}

#[test]
fn model_is_sync_and_send() {
    fn assert_sync<T: Sync + Send>() {}
    assert_sync::<Model<8, 2, 2>>();
}

fn tolerance_check(
    spec: &ModelSpec,
    model_predict: impl Fn(&[f32]) -> (f32, f32),
    x: &[f64],
) -> Result<(), TestCaseError> {
    let (mean, var) = reference_latent(spec, x);
    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    let (m32, v32) = model_predict(&x32);
    let y_scale = spec.y_scale as f64;
    prop_assert!(
        (m32 as f64 - mean).abs() <= 1e-4 * y_scale * (1.0 + mean.abs() / y_scale),
        "mean {m32} vs {mean}"
    );
    // Absolute variance tolerance relative to the prior scale: cancellation
    // in prior - |L1^-1 k|^2 bounds what f32 can do.
    prop_assert!(
        (v32 as f64 - var).abs() <= 1e-4 * y_scale * y_scale * spec.prior as f64,
        "var {v32} vs {var}"
    );
    prop_assert!(v32 >= 0.0 && v32.is_finite());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn f32_runtime_matches_f64_reference(
        seed in 0u64..1000,
        m in 1usize..12,
        projected in any::<bool>(),
        per_basis in any::<bool>(),
        two_factors in any::<bool>(),
        x in proptest::collection::vec(-6.0f64..6.0, 3),
    ) {
        let g = if projected { 2 } else { 3 };
        let spec = random_spec(seed, m, g, 3, projected, per_basis, two_factors, Link::Identity);
        let model: Model<12, 3, 3> = load(&spec);
        tolerance_check(&spec, |x| {
            let p = model.predict_latent(x).unwrap();
            (p.mean, p.variance)
        }, &x)?;
        let p = model.predict(&x.iter().map(|&v| v as f32).collect::<Vec<_>>()).unwrap();
        let latent = model.predict_latent(&x.iter().map(|&v| v as f32).collect::<Vec<_>>()).unwrap();
        prop_assert_eq!(p.mean, latent.mean);
        prop_assert!((p.variance - latent.variance - model.noise_variance()).abs() <= 1e-5 * p.variance.max(1.0));
    }

    #[test]
    fn probit_matches_f64_reference(seed in 0u64..1000, m in 1usize..8, x in proptest::collection::vec(-4.0f64..4.0, 2)) {
        let spec = random_spec(seed, m, 2, 2, false, false, false, Link::Probit);
        let model: Model<8, 2, 2> = load(&spec);
        let (mean, var) = reference_latent(&spec, &x);
        let expected = 0.5 * libm::erfc(-mean / (1.0 + var).sqrt() / 2f64.sqrt());
        let p = model.probability(&[x[0] as f32, x[1] as f32]).unwrap();
        prop_assert!((p as f64 - expected).abs() < 1e-5, "{p} vs {expected}");
    }
}
