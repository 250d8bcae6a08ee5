//! The evaluator against answers known in closed form, and against an f64
//! evaluation of the same formulas.

mod common;

use common::{product_variance, random_spec, reference_latent};
use proptest::prelude::*;
use sgp_runtime::{Error, Kernel, Link, Model, ModelKind, ModelSpec, Shape, VarianceForm};

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
        x_min: vec![1.0],
        x_max: vec![3.0],
        variance: VarianceForm::Solves,
        outputs: vec![],
        class_labels: vec![],
        learning: None,
        kernel: sgp_runtime::Kernel::SquaredExponential,
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
fn matern_basis_functions_in_closed_form() {
    // z = 0.5 and w = 4: r = 1.
    let r: f64 = 1.0;
    let cases = [
        (Kernel::Matern12, (-r).exp()),
        (
            Kernel::Matern32,
            (1.0 + 3f64.sqrt() * r) * (-(3f64.sqrt()) * r).exp(),
        ),
        (
            Kernel::Matern52,
            (1.0 + 5f64.sqrt() * r + 5.0 * r * r / 3.0) * (-(5f64.sqrt()) * r).exp(),
        ),
    ];
    for (kernel, profile) in cases {
        let mut spec = one_basis(Link::Identity, false);
        spec.kernel = kernel;
        let model: Model<4, 2, 2> = load(&spec);
        let k = 1.5 * profile;
        let p = model.predict_latent(&[2.25]).unwrap();
        assert!(
            (p.mean as f64 - (1.0 + 3.0 * 0.8 * k)).abs() < 1e-5,
            "{kernel:?}"
        );
        // At the centre every kernel is its amplitude, and the gradient
        // (Matérn 1/2's symmetric one included) is finite.
        let at_centre = model.predict_with_gradient(&[2.0]).unwrap();
        assert!((at_centre.mean as f64 - (1.0 + 3.0 * 0.8 * 1.5)).abs() < 1e-5);
        assert!(at_centre.mean_gradient.iter().all(|g| g.is_finite()));
        assert!(at_centre.variance_gradient.iter().all(|g| g.is_finite()));
    }
}

/// A version-7 blob (written before the kernel field, version 8) loads as
/// the squared exponential, and predicts as the same model written now.
#[test]
fn a_version_7_blob_loads_as_the_squared_exponential() {
    let v7: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/doc-updatable.sgp"
    ));
    assert_eq!(u16::from_le_bytes([v7[4], v7[5]]), 7);
    let spec = ModelSpec::from_bytes(v7).unwrap();
    assert_eq!(spec.kernel, Kernel::SquaredExponential);
    assert_eq!(spec.version(), 7);
    assert_eq!(spec.to_bytes().unwrap(), v7);
    // The runtime's loader takes it too.
    Model::<4, 2, 2>::from_bytes(v7).unwrap();
}

#[test]
fn a_kernel_this_runtime_does_not_know_is_refused_by_name() {
    let mut spec = one_basis(Link::Identity, false);
    spec.kernel = Kernel::Matern32;
    let mut blob = spec.to_bytes().unwrap();
    assert_eq!(u16::from_le_bytes([blob[4], blob[5]]), 8);
    // The kernel is the body's last byte; 4 is no kernel of this runtime.
    let at = blob.len() - 5;
    assert_eq!(blob[at], 2);
    blob[at] = 4;
    let end = blob.len() - 4;
    let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(&blob[..end]);
    blob[end..].copy_from_slice(&crc.to_le_bytes());
    let refused = Err(Error::InvalidValue { field: "kernel" });
    assert_eq!(Model::<4, 2, 2>::from_bytes(&blob).map(|_| ()), refused);
    assert_eq!(ModelSpec::from_bytes(&blob).map(|_| ()), refused);
    // A squared-exponential model keeps the oldest version that holds it.
    assert_eq!(one_basis(Link::Identity, false).version(), 5);
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
        product in any::<bool>(),
        kernel in 0u32..4,
        x in proptest::collection::vec(-6.0f64..6.0, 3),
    ) {
        let g = if projected { 2 } else { 3 };
        let mut spec = random_spec(seed, m, g, 3, projected, per_basis, two_factors, Link::Identity);
        spec.kernel = Kernel::from_index(kernel).unwrap();
        let spec = if product { product_variance(spec, seed) } else { spec };
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

/// Two inputs, the second ignored (zero width: what the trainer exports for
/// a constant column) with a tiny scale, so a large raw value of it
/// standardises beyond f32's range; widths per basis function or shared.
fn ignored_second_input(per_basis: bool) -> ModelSpec {
    let mut spec = random_spec(3, 4, 2, 2, false, per_basis, true, Link::Identity);
    let g = 2;
    for (i, w) in spec.widths.iter_mut().enumerate() {
        if i % g == 1 {
            *w = 0.0;
        }
    }
    spec.x_scale[1] = 1e-30;
    spec
}

#[test]
fn an_input_that_overflows_standardisation_is_an_error_not_a_nan_mean() {
    // Per-basis widths: (1e10 - mean) / 1e-30 = inf, and the zero width
    // times inf is NaN.
    let spec = ignored_second_input(true);
    let model: Model<4, 2, 2> = load(&spec);
    let x = [spec.x_mean[0], 1e10];
    assert_eq!(model.predict(&x), Err(Error::InputOverflow));
    assert_eq!(model.mean(&x), Err(Error::InputOverflow));
    assert_eq!(model.predict_latent(&x), Err(Error::InputOverflow));
    // Within f32's range the ignored input changes nothing.
    let near = model
        .predict(&[spec.x_mean[0], spec.x_mean[1] + 1e-25])
        .unwrap();
    let at = model.predict(&[spec.x_mean[0], spec.x_mean[1]]).unwrap();
    assert!((near.mean - at.mean).abs() <= 1e-6 * at.mean.abs());
    // Shared widths are folded into the scales at load (a zero width makes
    // the input's scale 0): the ignored input cannot overflow, however
    // large, and changes nothing.
    let spec = ignored_second_input(false);
    let model: Model<4, 2, 2> = load(&spec);
    let huge = model.predict(&[spec.x_mean[0], 1e10]).unwrap();
    let at = model.predict(&[spec.x_mean[0], spec.x_mean[1]]).unwrap();
    assert_eq!(huge, at);
}

#[test]
fn a_projection_summing_inf_minus_inf_is_an_error_not_a_nan_mean() {
    // z_0 = s_0 + s_1 with s_0 = +inf and s_1 = -inf.
    let mut spec = random_spec(4, 3, 1, 2, true, false, true, Link::Identity);
    spec.projection = vec![1.0, 1.0];
    spec.x_scale = vec![1e-30, 1e-30];
    let model: Model<3, 1, 2> = load(&spec);
    assert_eq!(model.predict(&[1e10, -1e10]), Err(Error::InputOverflow));
    // One-sided, z = +inf overflowed f32 too: also an error.
    assert_eq!(model.predict(&[1e10, 1e10]), Err(Error::InputOverflow));
    // A feature that stays finite, however far, is simply far from every
    // basis function (its squared distance overflows to inf: k = 0).
    spec.x_scale = vec![1e-20, 1e-20];
    let model: Model<3, 1, 2> = load(&spec);
    let far = model.predict(&[1e10, 1e10]).unwrap();
    let expected = 4.0 * (1.3 + 0.05);
    assert!((far.variance - expected).abs() < 1e-5 * expected, "{far:?}");
}

#[test]
fn the_training_range_check() {
    let spec = one_basis(Link::Identity, false);
    let model: Model<4, 2, 2> = load(&spec);
    assert_eq!(model.training_range(), Some((&[1.0][..], &[3.0][..])));
    for (x, inside) in [
        (1.0, true),
        (2.0, true),
        (3.0, true),
        (0.999, false),
        (3.001, false),
        (f32::NAN, false),
        (f32::INFINITY, false),
    ] {
        assert_eq!(model.in_training_range(&[x]), Ok(inside), "x = {x}");
    }
    assert_eq!(
        model.in_training_range(&[2.0, 2.0]),
        Err(Error::InputLength {
            expected: 1,
            found: 2
        })
    );
    // A constant training column: any other value is outside.
    let mut constant = random_spec(6, 3, 2, 2, false, false, true, Link::Identity);
    constant.x_min[1] = 20.0;
    constant.x_max[1] = 20.0;
    let model: Model<3, 2, 2> = load(&constant);
    let x0 = constant.x_mean[0];
    assert_eq!(model.in_training_range(&[x0, 20.0]), Ok(true));
    assert_eq!(model.in_training_range(&[x0, 20.5]), Ok(false));
}

#[test]
fn predict_array_is_predict_and_a_narrower_blob_is_an_input_length_error() {
    let spec = random_spec(7, 5, 3, 3, false, false, true, Link::Identity);
    let model: Model<5, 3, 3> = load(&spec);
    let x = [0.1, -0.4, 2.0];
    assert_eq!(model.predict_array(&x), model.predict(&x));
    let wide: Model<5, 4, 4> = load(&spec);
    assert_eq!(
        wide.predict_array(&[0.1, -0.4, 2.0, 0.0]),
        Err(Error::InputLength {
            expected: 3,
            found: 4
        })
    );
}

/// Raw values from ordinary to the edge of f32.
fn any_magnitude() -> impl Strategy<Value = f32> {
    prop_oneof![
        -10.0f32..10.0,
        (-38i32..=38, any::<bool>()).prop_map(|(e, neg)| {
            let v = 10f32.powi(e);
            if neg {
                -v
            } else {
                v
            }
        }),
        Just(f32::MAX),
        Just(f32::MIN),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Huge inputs, tiny scales, ignored inputs (zero widths, zero
    /// projection columns): a prediction is finite or `InputOverflow`,
    /// never NaN or infinite with `Ok`.
    #[test]
    fn any_finite_input_gives_a_finite_answer_or_input_overflow(
        seed in 0u64..1000,
        projected in any::<bool>(),
        per_basis in any::<bool>(),
        ignore in 0usize..3,
        tiny in proptest::collection::vec(prop_oneof![Just(1.0f32), Just(1e-30), Just(f32::MIN_POSITIVE)], 3),
        x in proptest::collection::vec(any_magnitude(), 3),
    ) {
        let g = if projected { 2 } else { 3 };
        let mut spec = random_spec(seed, 4, g, 3, projected, per_basis, true, Link::Identity);
        spec.x_scale = tiny;
        if projected {
            for row in 0..g {
                spec.projection[row * 3 + ignore] = 0.0;
            }
        } else {
            let rows = if per_basis { 4 } else { 1 };
            for row in 0..rows {
                spec.widths[row * g + ignore] = 0.0;
            }
        }
        let model: Model<4, 3, 3> = load(&spec);
        match model.predict(&x) {
            Ok(p) => {
                prop_assert!(p.mean.is_finite(), "{p:?} at {x:?}");
                prop_assert!(p.variance.is_finite() && p.variance >= 0.0, "{p:?} at {x:?}");
                prop_assert_eq!(model.mean(&x), Ok(p.mean));
            }
            Err(e) => {
                prop_assert_eq!(e, Error::InputOverflow);
                prop_assert_eq!(model.mean(&x), Err(Error::InputOverflow));
            }
        }
    }
}
