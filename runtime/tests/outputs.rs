//! Several outputs on one basis (format version 5): each output of a
//! multi-output blob predicts what the same numbers give as a blob of their
//! own, the basis evaluated once; the class probabilities of the
//! multi-class links; and every way such a blob can be wrong is refused.

mod common;

use common::{
    assert_every_damage_is_an_error, product_variance, random_spec, size_example_spec,
    unchecked_blob,
};
use sgp_runtime::{Dimension, Error, Link, Model, ModelSpec, OutputSpec, Prediction};

/// `count` outputs on the basis of `random_spec(seed, ...)`: output `p`
/// takes the weights, factors and scalars of the model drawn with seed
/// `seed + p`, so each has a single-output twin.
fn several(seed: u64, count: usize, two_factors: bool, link: Link) -> (ModelSpec, Vec<ModelSpec>) {
    let draw = |p: usize| {
        let single_link = if link.is_multi_class() {
            Link::Probit
        } else {
            link
        };
        let spec = random_spec(
            seed + p as u64,
            6,
            3,
            3,
            false,
            false,
            two_factors,
            single_link,
        );
        if two_factors {
            spec
        } else {
            product_variance(spec, seed + p as u64)
        }
    };
    let base = draw(0);
    let mut singles = vec![base.clone()];
    let mut joined = base;
    joined.shape.link = link;
    joined.positive_class = 0.0;
    for p in 1..count {
        let twin = draw(p);
        let mut single = joined.clone();
        single.outputs.clear();
        single.shape.link = singles[0].shape.link;
        single.positive_class = singles[0].positive_class;
        let out = OutputSpec {
            name: format!("y{p}"),
            beta: twin.beta.clone(),
            l1: twin.l1.clone(),
            l2: twin.l2.clone(),
            prior: twin.prior,
            noise: twin.noise * (p as f32 + 1.0),
            bias: twin.bias - 0.3 * p as f32,
            y_mean: twin.y_mean + p as f32,
            y_scale: twin.y_scale * (1.0 + 0.5 * p as f32),
        };
        single.target_name = out.name.clone();
        single.beta = out.beta.clone();
        single.l1 = out.l1.clone();
        single.l2 = out.l2.clone();
        (single.prior, single.noise, single.bias) = (out.prior, out.noise, out.bias);
        (single.y_mean, single.y_scale) = (out.y_mean, out.y_scale);
        joined.outputs.push(out);
        singles.push(single);
    }
    (joined, singles)
}

fn close(a: f32, b: f32, rtol: f32) -> bool {
    (a - b).abs() <= rtol * (1.0 + a.abs().max(b.abs()))
}

const INPUTS: [[f32; 3]; 4] = [
    [0.0, 0.0, 0.0],
    [1.5, -0.7, 2.0],
    [-3.0, 2.5, 0.1],
    [30.0, 9.0, -4.0],
];

#[test]
fn every_output_predicts_as_its_own_blob() {
    for two_factors in [false, true] {
        let (spec, singles) = several(3, 3, two_factors, Link::Identity);
        let blob = spec.to_bytes().unwrap();
        assert_eq!(ModelSpec::from_bytes(&blob).unwrap(), spec);
        let model = Model::<6, 3, 3, 3>::from_bytes(&blob).unwrap();
        assert_eq!(model.output_count(), 3);
        assert_eq!(model.output_name(2), Some("y2"));
        assert_eq!(model.output_name(3), None);
        for x in INPUTS {
            let all = model.predict_all(&x).unwrap();
            assert_eq!(all.len(), 3);
            // The first output is the single-output call, bit for bit.
            assert_eq!(all[0], model.predict(&x).unwrap());
            let gradients = model.predict_all_with_gradient(&x).unwrap();
            assert_eq!(gradients[0], model.predict_with_gradient(&x).unwrap());
            for (p, single) in singles.iter().enumerate() {
                let alone = Model::<6, 3, 3>::from_bytes(&single.to_bytes().unwrap()).unwrap();
                let Prediction { mean, variance } = alone.predict(&x).unwrap();
                assert!(close(all[p].mean, mean, 1e-5), "output {p} at {x:?}");
                assert!(
                    close(all[p].variance, variance, 1e-5),
                    "output {p} at {x:?}"
                );
                let g = alone.predict_with_gradient(&x).unwrap();
                assert!(close(gradients[p].mean, g.mean, 1e-5));
                for j in 0..3 {
                    assert!(close(
                        gradients[p].mean_gradient[j],
                        g.mean_gradient[j],
                        1e-4
                    ));
                    assert!(close(
                        gradients[p].variance_gradient[j],
                        g.variance_gradient[j],
                        1e-4
                    ));
                }
            }
        }
    }
}

#[test]
fn a_capacity_with_too_few_outputs_says_so() {
    let (spec, _) = several(5, 3, false, Link::Identity);
    let blob = spec.to_bytes().unwrap();
    let refused = Error::CapacityExceeded {
        dimension: Dimension::Output,
        required: 3,
        capacity: 2,
    };
    assert_eq!(Model::<6, 3, 3, 2>::from_bytes(&blob).unwrap_err(), refused);
    assert!(matches!(
        Model::<6, 3, 3>::from_bytes(&blob),
        Err(Error::CapacityExceeded {
            dimension: Dimension::Output,
            required: 3,
            capacity: 1
        })
    ));
    // A failed load leaves an empty model.
    let mut model = Model::<6, 3, 3, 2>::new();
    assert!(model.load(&blob).is_err());
    assert_eq!(model.output_count(), 0);
    assert!(model.predict_all(&INPUTS[0]).is_err());
}

#[test]
fn outputs_and_labels_must_fit_the_link() {
    let (mut spec, _) = several(9, 2, false, Link::Identity);
    spec.class_labels = vec!["a".into(), "b".into()];
    let labels = Error::InconsistentSizes {
        field: "class_labels",
        expected: 0,
        found: 2,
    };
    assert_eq!(spec.to_bytes().unwrap_err(), labels);
    // The device finds the same fault in a blob written without checks.
    let blob = unchecked(&spec);
    assert_eq!(ModelSpec::from_bytes(&blob).unwrap_err(), labels);
    assert_eq!(Model::<6, 3, 3, 2>::from_bytes(&blob).unwrap_err(), labels);

    let outputs = Error::InvalidValue { field: "outputs" };
    spec.class_labels.clear();
    spec.shape.link = Link::Probit;
    assert_eq!(spec.to_bytes().unwrap_err(), outputs);
    assert_eq!(
        Model::<6, 3, 3, 2>::from_bytes(&unchecked(&spec)).unwrap_err(),
        outputs
    );

    let (mut classes, _) = several(9, 3, false, Link::Softmax);
    classes.class_labels = vec!["a".into(), "b".into()];
    let three = Error::InconsistentSizes {
        field: "class_labels",
        expected: 3,
        found: 2,
    };
    assert_eq!(classes.to_bytes().unwrap_err(), three);
    assert_eq!(
        Model::<6, 3, 3, 3>::from_bytes(&unchecked(&classes)).unwrap_err(),
        three
    );
    classes.class_labels.push("c".into());
    assert!(Model::<6, 3, 3, 3>::from_bytes(&classes.to_bytes().unwrap()).is_ok());
    classes.outputs.clear();
    classes.class_labels.clear();
    assert_eq!(classes.to_bytes().unwrap_err(), outputs);

    // A further output's numbers are checked as the first's.
    let (mut bad, _) = several(9, 2, false, Link::Identity);
    bad.outputs[0].beta.pop();
    let short = Error::InconsistentSizes {
        field: "beta",
        expected: 6,
        found: 5,
    };
    assert_eq!(bad.to_bytes().unwrap_err(), short);
    assert_eq!(
        Model::<6, 3, 3, 2>::from_bytes(&unchecked(&bad)).unwrap_err(),
        short
    );
    let (mut bad, _) = several(9, 2, false, Link::Identity);
    bad.outputs[0].y_scale = 0.0;
    let scale = Error::InvalidValue { field: "y_scale" };
    assert_eq!(bad.to_bytes().unwrap_err(), scale);
    assert_eq!(
        Model::<6, 3, 3, 2>::from_bytes(&unchecked(&bad)).unwrap_err(),
        scale
    );
    let (mut bad, _) = several(9, 2, false, Link::Identity);
    bad.outputs[0].l1[0] = -1.0;
    let diagonal = Error::InvalidValue { field: "l1" };
    assert_eq!(bad.to_bytes().unwrap_err(), diagonal);
    assert_eq!(
        Model::<6, 3, 3, 2>::from_bytes(&unchecked(&bad)).unwrap_err(),
        diagonal
    );
    let (mut bad, _) = several(9, 2, false, Link::Identity);
    bad.outputs[0].name = "n".repeat(40);
    assert!(bad.to_bytes().is_ok());
    assert_eq!(
        Model::<6, 3, 3, 2>::from_bytes(&bad.to_bytes().unwrap()).unwrap_err(),
        Error::NameTooLong {
            input: None,
            length: 40,
            capacity: 31
        }
    );
}

fn unchecked(spec: &ModelSpec) -> Vec<u8> {
    unchecked_blob(spec, sgp_runtime::VERSION)
}

#[test]
fn every_damaged_multi_output_blob_is_an_error() {
    let (mut spec, _) = several(13, 3, false, Link::OneVsRest);
    spec.class_labels = vec!["cat".into(), "dog".into(), "emu".into()];
    let blob = spec.to_bytes().unwrap();
    assert_every_damage_is_an_error(&blob, |b| Model::<6, 3, 3, 3>::from_bytes(b).map(|_| ()));
}

/// The probabilities of FORMAT.md in f64, from the separate latents.
fn reference_probabilities(link: Link, latents: &[Prediction]) -> Vec<f64> {
    let scores: Vec<f64> = latents
        .iter()
        .map(|l| {
            let (t, v) = (f64::from(l.mean), f64::from(l.variance));
            match link {
                Link::Softmax => t / (1.0 + std::f64::consts::PI * v / 8.0).sqrt(),
                _ => 0.5 * libm::erfc(-t / (1.0 + v).sqrt() / std::f64::consts::SQRT_2),
            }
        })
        .collect();
    let weights: Vec<f64> = match link {
        Link::Softmax => {
            let top = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            scores.iter().map(|s| (s - top).exp()).collect()
        }
        _ => scores,
    };
    let total: f64 = weights.iter().sum();
    weights.iter().map(|w| w / total).collect()
}

#[test]
fn multi_class_links_spread_probability_over_the_classes() {
    for link in [Link::OneVsRest, Link::Softmax] {
        let (spec, singles) = several(21, 4, false, link);
        let model = Model::<6, 3, 3, 4>::from_bytes(&spec.to_bytes().unwrap()).unwrap();
        for x in INPUTS {
            let c = model.classify(&x).unwrap();
            assert_eq!(c.classes, 4);
            let latents: Vec<Prediction> = singles
                .iter()
                .map(|s| {
                    Model::<6, 3, 3>::from_bytes(&s.to_bytes().unwrap())
                        .unwrap()
                        .predict(&x)
                        .unwrap()
                })
                .collect();
            let expected = reference_probabilities(link, &latents);
            let sum: f32 = c.probabilities().iter().sum();
            assert!((sum - 1.0).abs() < 1e-5, "{link:?} sums to {sum}");
            for (p, e) in c.probabilities().iter().zip(&expected) {
                assert!((f64::from(*p) - e).abs() < 1e-5, "{link:?} {p} against {e}");
            }
            let best = (0..4).fold(0, |b, k| if expected[k] > expected[b] { k } else { b });
            assert_eq!(c.class, best);
        }
        // A model with one output fewer than classes cannot hold them.
        assert!(matches!(
            Model::<6, 3, 3, 3>::from_bytes(&spec.to_bytes().unwrap()),
            Err(Error::CapacityExceeded {
                dimension: Dimension::Output,
                ..
            })
        ));
    }
}

#[test]
fn a_probit_model_classifies_into_two_classes() {
    let (spec, _) = several(17, 1, false, Link::Probit);
    let blob = spec.to_bytes().unwrap();
    let pair = Model::<6, 3, 3, 2>::from_bytes(&blob).unwrap();
    let x = INPUTS[1];
    let c = pair.classify(&x).unwrap();
    let p = pair.probability(&x).unwrap();
    assert_eq!(c.probabilities(), &[1.0 - p, p]);
    assert_eq!(c.class, usize::from(p > 0.5));
    let one = Model::<6, 3, 3>::from_bytes(&blob).unwrap();
    assert_eq!(
        one.classify(&x).unwrap_err(),
        Error::CapacityExceeded {
            dimension: Dimension::Output,
            required: 2,
            capacity: 1
        }
    );
    let (regression, _) = several(17, 2, false, Link::Identity);
    let model = Model::<6, 3, 3, 2>::from_bytes(&regression.to_bytes().unwrap()).unwrap();
    assert_eq!(model.classify(&x).unwrap_err(), Error::NotClassifier);
}

#[test]
fn size_formula_of_format_md_for_two_outputs() {
    let base = size_example_spec();
    let mut spec = base.clone();
    spec.outputs.push(OutputSpec {
        name: "y2".into(),
        beta: base.beta.clone(),
        l1: base.l1.clone(),
        l2: vec![],
        prior: 1.0,
        noise: 0.1,
        bias: 0.0,
        y_mean: 0.0,
        y_scale: 1.0,
    });
    assert_eq!(spec.to_bytes().unwrap().len(), 5180);
}
