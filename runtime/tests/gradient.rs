//! `predict_with_gradient` and `probability_with_gradient` against finite
//! differences: of the runtime's own f32 predictions on hand-made models,
//! and of the f64 evaluation of the same numbers (`reference_latent`) on
//! random models of every shape. Every comparison is shown to reject a
//! gradient with a flipped sign.

mod common;

use common::{doc_spec, product_variance, random_spec, reference_latent};
use proptest::prelude::*;
use sgp_runtime::{Error, Link, Model, ModelSpec};

fn load<const M: usize, const G: usize, const D: usize>(spec: &ModelSpec) -> Model<M, G, D> {
    Model::from_bytes(&spec.to_bytes().unwrap()).unwrap()
}

/// Worst `|analytic_j - reference_j| / (rtol * (max_j |reference_j| + floor))`:
/// at most 1 passes. Relative to the gradient's largest component, since
/// f32 rounding errors scale with the terms summed, not with each
/// component (a component near zero is a difference of large terms).
fn worst_ratio(analytic: &[f32], reference: &[f64], rtol: f64, floor: f64) -> f64 {
    let size = reference.iter().fold(0.0f64, |a, g| a.max(g.abs())) + floor;
    analytic
        .iter()
        .zip(reference)
        .map(|(&a, &r)| (f64::from(a) - r).abs() / (rtol * size))
        .fold(0.0, f64::max)
}

/// Asserts the analytic gradient passes and its negation fails: a check
/// that could not tell the sign would prove nothing.
fn assert_close(what: &str, analytic: &[f32], reference: &[f64], rtol: f64, floor: f64) {
    let ratio = worst_ratio(analytic, reference, rtol, floor);
    assert!(
        ratio <= 1.0,
        "{what}: {analytic:?} vs {reference:?} ({ratio:.2} x tolerance)"
    );
    if reference.iter().any(|g| g.abs() > 10.0 * rtol * floor) {
        let flipped: Vec<f32> = analytic.iter().map(|g| -g).collect();
        assert!(
            worst_ratio(&flipped, reference, rtol, floor) > 1.0,
            "{what}: a sign-flipped gradient passed"
        );
    }
}

/// Central differences of `f` (an R^d -> R^n map) at `x`, step `h`.
fn central<T: Copy + Into<f64>>(
    x: &[T],
    h: T,
    shift: impl Fn(T, T, bool) -> T,
    f: impl Fn(&[T]) -> Vec<f64>,
) -> Vec<Vec<f64>> {
    (0..x.len())
        .map(|j| {
            let at = |up| {
                let mut y = x.to_vec();
                y[j] = shift(y[j], h, up);
                f(&y)
            };
            let (plus, minus) = (at(true), at(false));
            let width = shift(x[j], h, true).into() - shift(x[j], h, false).into();
            plus.iter()
                .zip(&minus)
                .map(|(p, m)| (p - m) / width)
                .collect()
        })
        .collect()
}

/// Column `i` of per-input rows: the gradient of output `i`.
fn column(rows: &[Vec<f64>], i: usize) -> Vec<f64> {
    rows.iter().map(|r| r[i]).collect()
}

/// f32 finite differences of the runtime's own `predict` (mean and
/// variance) and, for probit models, `probability`.
fn f32_differences<const M: usize, const G: usize, const D: usize>(
    model: &Model<M, G, D>,
    x: &[f32],
    h: f32,
) -> Vec<Vec<f64>> {
    let probit = model.shape().link == Link::Probit;
    central(
        x,
        h,
        |v, h, up| if up { v + h } else { v - h },
        |y| {
            let p = model.predict(y).unwrap();
            let mut out = vec![f64::from(p.mean), f64::from(p.variance)];
            if probit {
                out.push(f64::from(model.probability(y).unwrap()));
            }
            out
        },
    )
}

/// The hand-made models: the documentation model, and small random ones
/// with a projection, per-basis widths, one factor, and a probit link.
fn hand_made() -> Vec<(&'static str, ModelSpec)> {
    vec![
        ("doc", doc_spec()),
        (
            "projected",
            random_spec(3, 5, 2, 3, true, false, true, Link::Identity),
        ),
        (
            "per-basis, one factor",
            random_spec(4, 6, 3, 3, false, true, false, Link::Identity),
        ),
        (
            "probit",
            random_spec(5, 6, 3, 3, false, false, false, Link::Probit),
        ),
    ]
}

/// f32 all the way: the analytic gradient against central differences of
/// the runtime's own predictions, step 1e-2 in raw units (inputs are of
/// order 1-3, widths of order 1): truncation (h/l)^2 ~ 1e-4 relative,
/// f32 rounding ~ 1e-7 |f| / h ~ 1e-5 |f|. Tolerance 1e-3 of the
/// gradient's largest component (+ 0.1 y_scale for the mean, 0.1 y_scale^2
/// for the variance, where the gradient is near zero).
#[test]
fn gradient_matches_f32_finite_differences_of_predict() {
    for (name, spec) in hand_made() {
        let model: Model<8, 3, 3> = load(&spec);
        let d = usize::from(spec.shape.input_dim);
        let y = f64::from(spec.y_scale);
        let probit = spec.shape.link == Link::Probit;
        let (mean_floor, var_floor) = if probit {
            (0.1, 0.1)
        } else {
            (0.1 * y, 0.1 * y * y)
        };
        for point in 0..12 {
            let x: Vec<f32> = (0..d)
                .map(|j| {
                    spec.x_mean[j] + 0.4 * spec.x_scale[j] * ((point * (j + 2)) % 7) as f32 - 1.2
                })
                .collect();
            let g = model.predict_with_gradient(&x).unwrap();
            let fd = f32_differences(&model, &x, 1e-2);
            let what = format!("{name} at {x:?}");
            assert_close(
                &format!("{what} mean"),
                &g.mean_gradient[..d],
                &column(&fd, 0),
                1e-3,
                mean_floor,
            );
            assert_close(
                &format!("{what} variance"),
                &g.variance_gradient[..d],
                &column(&fd, 1),
                1e-3,
                var_floor,
            );
            if probit {
                let p = model.probability_with_gradient(&x).unwrap();
                assert_close(
                    &format!("{what} probability"),
                    &p.gradient[..d],
                    &column(&fd, 2),
                    1e-3,
                    1e-2,
                );
            }
        }
    }
}

/// f64 central differences (step 1e-5: truncation ~1e-10, rounding
/// ~1e-11 relative) of the f64 evaluation of the same stored numbers.
fn f64_differences(spec: &ModelSpec, x: &[f64]) -> Vec<Vec<f64>> {
    central(
        x,
        1e-5,
        |v, h, up| if up { v + h } else { v - h },
        |y| {
            let (mean, var) = reference_latent(spec, y);
            vec![
                mean,
                var,
                0.5 * libm::erfc(-mean / (1.0 + var).sqrt() / 2f64.sqrt()),
            ]
        },
    )
}

/// Seed, M, and the switches (projection, per-basis widths, two factors,
/// probit, product form of the variance) of a random model with 3 inputs.
/// The last number is the kernel's wire index.
type RandomShape = (u64, usize, bool, bool, bool, bool, bool, u32);

fn shapes() -> impl Strategy<Value = RandomShape> {
    (
        0u64..1000,
        1usize..12,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        0u32..4,
    )
}

fn random_model(
    (seed, m, projected, per_basis, two_factors, probit, product, kernel): RandomShape,
) -> (ModelSpec, Model<12, 3, 3>) {
    let g = if projected { 2 } else { 3 };
    let link = if probit { Link::Probit } else { Link::Identity };
    let mut spec = random_spec(seed, m, g, 3, projected, per_basis, two_factors, link);
    spec.kernel = sgp_runtime::Kernel::from_index(kernel).unwrap();
    let spec = if product {
        product_variance(spec, seed)
    } else {
        spec
    };
    let model = load(&spec);
    (spec, model)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Every shape the runtime serves (projection or not, shared or
    /// per-basis widths, one or two factors, regression or probit) against
    /// the f64 reference. What is left is f32 evaluation error alone;
    /// tolerance 1e-4 of the gradient's largest component (+ 1e-2 y_scale,
    /// 1e-2 y_scale^2 prior for the variance, 1e-3 for the probability).
    #[test]
    fn gradient_matches_f64_differences_of_the_reference(
        shape in shapes(),
        x in proptest::collection::vec(-4.0f64..4.0, 3),
    ) {
        let (spec, model) = random_model(shape);
        let probit = spec.shape.link == Link::Probit;
        let x: Vec<f64> = x.iter().map(|&v| f64::from(v as f32)).collect();
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let grad = model.predict_with_gradient(&x32).unwrap();
        let fd = f64_differences(&spec, &x);
        let (y, prior) = (f64::from(spec.y_scale), f64::from(spec.prior));
        let (mean_floor, var_floor) = if probit { (1e-2, 1e-2 * prior) } else { (1e-2 * y, 1e-2 * y * y * prior) };
        let mean_ratio = worst_ratio(&grad.mean_gradient, &column(&fd, 0), 1e-4, mean_floor);
        prop_assert!(mean_ratio <= 1.0, "mean {:?} vs {:?}", grad.mean_gradient, column(&fd, 0));
        let var_ratio = worst_ratio(&grad.variance_gradient, &column(&fd, 1), 1e-4, var_floor);
        prop_assert!(var_ratio <= 1.0, "variance {:?} vs {:?}", grad.variance_gradient, column(&fd, 1));
        if probit {
            let p = model.probability_with_gradient(&x32).unwrap();
            let ratio = worst_ratio(&p.gradient, &column(&fd, 2), 1e-4, 1e-3);
            prop_assert!(ratio <= 1.0, "probability {:?} vs {:?}", p.gradient, column(&fd, 2));
        }
    }

    /// The value part is `predict`'s (and `probability`'s) bit for bit: the
    /// same code computes it.
    #[test]
    fn values_are_predicts_bit_for_bit(
        shape in shapes(),
        x in proptest::collection::vec(-1e3f32..1e3, 3),
    ) {
        let (spec, model) = random_model(shape);
        let probit = spec.shape.link == Link::Probit;
        for x in [x.clone(), x.iter().map(|v| v * 1e-3).collect()] {
            let p = model.predict(&x).unwrap();
            let g = model.predict_with_gradient(&x).unwrap();
            prop_assert_eq!(g.mean.to_bits(), p.mean.to_bits());
            prop_assert_eq!(g.variance.to_bits(), p.variance.to_bits());
            if probit {
                let q = model.probability_with_gradient(&x).unwrap();
                prop_assert_eq!(q.probability.to_bits(), model.probability(&x).unwrap().to_bits());
            }
        }
    }
}

/// Entries past the model's input dimension are zero, also after a larger
/// model left its numbers in the same storage.
#[test]
fn entries_past_the_input_dimension_are_zero() {
    let mut model = Model::<8, 5, 5>::new();
    let large = random_spec(8, 6, 5, 5, false, false, true, Link::Identity);
    model.load(&large.to_bytes().unwrap()).unwrap();
    let wide = model.predict_with_gradient(&[0.5; 5]).unwrap();
    assert!(wide.mean_gradient.iter().all(|g| *g != 0.0), "{wide:?}");
    for (spec, x) in [
        (
            random_spec(9, 4, 2, 2, false, false, true, Link::Identity),
            vec![0.3, -0.2],
        ),
        (
            random_spec(10, 4, 2, 3, true, true, true, Link::Identity),
            vec![0.3, -0.2, 1.0],
        ),
    ] {
        model.load(&spec.to_bytes().unwrap()).unwrap();
        let g = model.predict_with_gradient(&x).unwrap();
        let d = x.len();
        assert!(g.mean_gradient[..d].iter().all(|v| *v != 0.0), "{g:?}");
        assert!(
            g.mean_gradient[d..]
                .iter()
                .chain(&g.variance_gradient[d..])
                .all(|v| *v == 0.0),
            "{g:?}"
        );
    }
}

/// Where the variance is clamped at zero its gradient is zero: the
/// function is constant there.
#[test]
fn a_clamped_variance_has_a_zero_gradient() {
    let mut spec = doc_spec();
    spec.l1 = vec![1e-2, 0.0, 1e-2, 0.0, 0.0, 1e-2];
    let model: Model<4, 2, 2> = load(&spec);
    let x = [1.0, -0.5];
    let g = model.predict_with_gradient(&x).unwrap();
    assert_eq!(model.predict_latent(&x).unwrap().variance, 0.0);
    assert_eq!(g.variance_gradient, [0.0; 2]);
    assert!(g.mean_gradient.iter().any(|v| *v != 0.0));
}

/// Far from every basis function both gradients vanish (the basis values
/// bottom out at `e^-87`, not at zero).
#[test]
fn far_away_the_gradients_vanish() {
    let model: Model<4, 2, 2> = load(&doc_spec());
    let g = model.predict_with_gradient(&[1e4, -1e4]).unwrap();
    let mut all = g.mean_gradient.iter().chain(&g.variance_gradient);
    assert!(all.all(|v| v.abs() < 1e-30), "{g:?}");
}

#[test]
fn bad_inputs_are_errors_as_for_predict() {
    let model: Model<4, 2, 2> = load(&doc_spec());
    assert_eq!(
        model.predict_with_gradient(&[1.0]),
        Err(Error::InputLength {
            expected: 2,
            found: 1
        })
    );
    assert_eq!(
        model.predict_with_gradient(&[f32::NAN, 0.0]),
        Err(Error::NonFiniteInput)
    );
    assert_eq!(
        model.probability_with_gradient(&[0.0, 0.0]),
        Err(Error::NotClassifier)
    );
    assert!(Model::<4, 2, 2>::new()
        .predict_with_gradient(&[0.0])
        .is_err());
}
