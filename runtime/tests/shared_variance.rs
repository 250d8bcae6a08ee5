//! Outputs that share the first output's variance (format version 6): an
//! output without factors of its own predicts what its explicit factors
//! (the first output's, scaled) give, costs no factor bytes, needs
//! version 6 and a positive first prior, and a damaged blob is an error.

mod common;

use common::{
    assert_every_damage_is_an_error, product_variance, random_spec, size_example_spec,
    unchecked_blob,
};
use sgp_runtime::{Error, Link, Model, ModelSpec, OutputSpec, VarianceForm};

/// Output `p`'s prior is `ratio` times the first output's.
const RATIOS: [f32; 3] = [1.0, 2.5, 0.4];

/// A three-output blob whose further outputs share the first output's
/// variance (`shared`) or carry the first output's factors scaled so that
/// their variance is the same (`explicit`).
fn pair(seed: u64, two_factors: bool) -> (ModelSpec, ModelSpec) {
    let base = random_spec(seed, 6, 3, 3, false, false, two_factors, Link::Identity);
    let base = if two_factors {
        base
    } else {
        product_variance(base, seed)
    };
    let mut shared = base.clone();
    let mut explicit = base.clone();
    for (p, &ratio) in RATIOS.iter().enumerate().skip(1) {
        let twin = random_spec(
            seed + p as u64,
            6,
            3,
            3,
            false,
            false,
            two_factors,
            Link::Identity,
        );
        // W -> ratio W: the product's L scales by sqrt(ratio), the solves'
        // by its reciprocal.
        let scale = match base.variance {
            VarianceForm::Product => ratio.sqrt(),
            VarianceForm::Solves => 1.0 / ratio.sqrt(),
            VarianceForm::Whitened | VarianceForm::Covariance => {
                unreachable!("these tests build the solves and the product")
            }
        };
        let output = OutputSpec {
            name: format!("y{p}"),
            beta: twin.beta.clone(),
            l1: vec![],
            l2: vec![],
            prior: ratio * base.prior,
            noise: twin.noise,
            bias: 0.0,
            y_mean: twin.y_mean,
            y_scale: twin.y_scale * (1.0 + p as f32),
        };
        explicit.outputs.push(OutputSpec {
            l1: base.l1.iter().map(|v| v * scale).collect(),
            l2: base.l2.iter().map(|v| v * scale).collect(),
            ..output.clone()
        });
        shared.outputs.push(output);
    }
    (shared, explicit)
}

fn close(a: f32, b: f32, rtol: f32) -> bool {
    (a - b).abs() <= rtol * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn an_output_without_factors_predicts_as_its_scaled_factors() {
    for two_factors in [false, true] {
        let (shared, explicit) = pair(7, two_factors);
        let blob = shared.to_bytes().unwrap();
        assert_eq!(u16::from_le_bytes([blob[4], blob[5]]), 6);
        assert_eq!(shared.version(), 6);
        assert_eq!(ModelSpec::from_bytes(&blob).unwrap(), shared);
        let other = explicit.to_bytes().unwrap();
        assert_eq!(u16::from_le_bytes([other[4], other[5]]), 5);
        let a = Model::<6, 3, 3, 3>::from_bytes(&blob).unwrap();
        let b = Model::<6, 3, 3, 3>::from_bytes(&other).unwrap();
        for x in [
            [0.0, 0.0, 0.0],
            [1.5, -0.7, 2.0],
            [-3.0, 2.5, 0.1],
            [30.0, 9.0, -4.0],
        ] {
            let (all_a, all_b) = (a.predict_all(&x).unwrap(), b.predict_all(&x).unwrap());
            assert_eq!(all_a[0], a.predict(&x).unwrap());
            let (ga, gb) = (
                a.predict_all_with_gradient(&x).unwrap(),
                b.predict_all_with_gradient(&x).unwrap(),
            );
            for p in 0..3 {
                assert_eq!(all_a[p].mean, all_b[p].mean, "output {p} at {x:?}");
                assert!(
                    close(all_a[p].variance, all_b[p].variance, 1e-5),
                    "output {p} at {x:?}: {} vs {}",
                    all_a[p].variance,
                    all_b[p].variance
                );
                assert_eq!(ga[p].prediction().mean, all_a[p].mean);
                assert!(close(ga[p].variance, all_a[p].variance, 1e-6));
                for j in 0..3 {
                    assert!(close(ga[p].mean_gradient[j], gb[p].mean_gradient[j], 1e-4));
                    assert!(
                        close(ga[p].variance_gradient[j], gb[p].variance_gradient[j], 1e-4),
                        "output {p} input {j} at {x:?}"
                    );
                }
            }
        }
    }
}

/// The variance of a shared output is the ratio times the first output's
/// latent variance, plus its own noise: the relation FORMAT.md states,
/// checked on the outputs' own numbers.
#[test]
fn the_shared_variance_is_the_ratio_times_the_first_latent_variance() {
    let (shared, _) = pair(11, false);
    let model = Model::<6, 3, 3, 3>::from_bytes(&shared.to_bytes().unwrap()).unwrap();
    let x = [0.3, -0.2, 0.9];
    let all = model.predict_all(&x).unwrap();
    let first_latent = all[0].variance / (shared.y_scale * shared.y_scale) - shared.noise;
    for (p, o) in shared.outputs.iter().enumerate() {
        let latent = all[p + 1].variance / (o.y_scale * o.y_scale) - o.noise;
        let ratio = o.prior / shared.prior;
        assert!(
            close(latent, ratio * first_latent, 1e-4),
            "output {}",
            p + 1
        );
    }
}

#[test]
fn sharing_needs_version_6_a_positive_first_prior_and_no_second_factor() {
    let (shared, _) = pair(3, true);
    let m = 6 * 7 / 2;
    let before = unchecked_blob(&shared, 5);
    let refused = Error::InconsistentSizes {
        field: "l1",
        expected: m,
        found: 0,
    };
    assert_eq!(
        Model::<6, 3, 3, 3>::from_bytes(&before).unwrap_err(),
        refused
    );
    assert_eq!(ModelSpec::from_bytes(&before).unwrap_err(), refused);

    let mut zero = shared.clone();
    zero.prior = 0.0;
    let blob = unchecked_blob(&zero, 6);
    let refused = Error::InvalidValue { field: "prior" };
    assert_eq!(Model::<6, 3, 3, 3>::from_bytes(&blob).unwrap_err(), refused);
    assert_eq!(ModelSpec::from_bytes(&blob).unwrap_err(), refused);
    assert_eq!(zero.to_bytes().unwrap_err(), refused);

    let mut second = shared.clone();
    second.outputs[0].l2 = shared.l2.clone();
    let blob = unchecked_blob(&second, 6);
    let refused = Error::InconsistentSizes {
        field: "l2",
        expected: 0,
        found: m,
    };
    assert_eq!(Model::<6, 3, 3, 3>::from_bytes(&blob).unwrap_err(), refused);
    assert_eq!(ModelSpec::from_bytes(&blob).unwrap_err(), refused);
}

#[test]
fn every_damaged_shared_blob_is_an_error() {
    let (shared, _) = pair(5, false);
    let blob = shared.to_bytes().unwrap();
    assert_every_damage_is_an_error(&blob, |b| Model::<6, 3, 3, 3>::from_bytes(b).map(|_| ()));
}

/// FORMAT.md "Size": a shared output adds its name, three length varints
/// and `4 (M + 5)` bytes.
#[test]
fn size_formula_of_format_md_for_shared_outputs() {
    let base = size_example_spec();
    let mut spec = base.clone();
    for (p, total) in [(2, 3067), (3, 3221)] {
        spec.outputs.push(OutputSpec {
            name: format!("y{p}"),
            beta: base.beta.clone(),
            l1: vec![],
            l2: vec![],
            prior: 2.0 * base.prior,
            noise: 0.1,
            bias: 0.0,
            y_mean: 0.0,
            y_scale: 1.0,
        });
        assert_eq!(spec.to_bytes().unwrap().len(), total);
    }
}
