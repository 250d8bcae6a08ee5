//! Classifiers across the crates: a classification fit (trainer, f64) with
//! its class labels -> one v5 blob -> `Model::classify` (runtime, f32)
//! gives every class probability within the export's probability
//! tolerance (1e-3) of the trainer's, the same most probable class where
//! the trainer's margin exceeds that tolerance, and the labels the data
//! spelled.

use nalgebra::DMatrix;
use sgp_runtime::{Link, Model, ModelSpec};

use crate::data::labels::{binary_labels, default_positive};
use crate::data::Dataset;
use crate::export::{export, PROBABILITY_TOLERANCE};
use crate::fit::svgp::SvgpParams;
use crate::fit::{fit, FitParams};
use crate::model::multiclass::class_probabilities;
use crate::numerics::optimise::OptimiseOptions;

/// `rows` points on the unit square labelled by `label(a, b)`.
fn labelled(rows: usize, label: impl Fn(f64, f64) -> &'static str) -> Dataset {
    let mut csv = String::from("a,b,kind\n");
    for i in 0..rows {
        let a = (i * 37 % 101) as f64 / 100.0;
        let b = (i * 53 % 97) as f64 / 96.0;
        csv.push_str(&format!("{a},{b},{}\n", label(a, b)));
    }
    Dataset::from_reader(csv.as_bytes(), "classes.csv", None).unwrap()
}

fn params() -> SvgpParams {
    SvgpParams {
        m: 12,
        restarts: 1,
        optimiser: OptimiseOptions {
            max_iter: 80,
            ..SvgpParams::default().optimiser
        },
        ..SvgpParams::default()
    }
}

/// The runtime's classification of `blob` at every row of `x` against the
/// trainer's f64 probabilities `want` (row by row).
fn check_classify<const P: usize>(blob: &[u8], x: &DMatrix<f64>, want: &[Vec<f64>]) {
    let model = Model::<12, 2, 2, P>::from_bytes(blob).unwrap();
    for (i, want) in want.iter().enumerate() {
        let row: Vec<f32> = x.row(i).iter().map(|&v| v as f32).collect();
        let got = model.classify(&row).unwrap();
        assert_eq!(got.classes, want.len());
        for (k, &w) in want.iter().enumerate() {
            let g = f64::from(got.probabilities[k]);
            assert!(
                (g - w).abs() <= PROBABILITY_TOLERANCE,
                "row {i} class {k}: runtime {g}, trainer {w}"
            );
        }
        let mut sorted = want.clone();
        sorted.sort_by(|a, b| b.total_cmp(a));
        if sorted[0] - sorted[1] > 2.0 * PROBABILITY_TOLERANCE {
            assert_eq!(want[got.class], sorted[0], "row {i}: most probable class");
        }
    }
}

#[test]
fn three_text_classes_classify_on_the_device_as_in_the_trainer() {
    let data = labelled(180, |a, _| {
        ["left", "mid", "right"][((a * 3.0) as usize).min(2)]
    });
    let (test, train) = data.split(0.3, 5).unwrap();
    let classes = train.into_classes().unwrap();
    let mut fitted = fit(&classes, &FitParams::Svgp(params()), &mut |_| {}).unwrap();
    let blob = export(&mut fitted, &classes.raw_x(), false).unwrap().blob;
    let set = fitted.set;
    let spec = ModelSpec::from_bytes(&blob).unwrap();
    assert_eq!(spec.class_labels, ["left", "mid", "right"]);
    assert_eq!(spec.shape.link, Link::Softmax);

    let x = test.raw_x();
    let latents: Vec<_> = set
        .members
        .iter()
        .map(|m| m.predict_raw(&x).unwrap())
        .collect();
    let want: Vec<Vec<f64>> = (0..x.nrows())
        .map(|i| {
            let row: Vec<(f64, f64)> = latents.iter().map(|p| (p.mean[i], p.var[i])).collect();
            class_probabilities(Link::Softmax, &row)
        })
        .collect();
    check_classify::<3>(&blob, &x, &want);
}

#[test]
fn binary_text_labels_classify_on_the_device_as_in_the_trainer() {
    let data = labelled(160, |a, b| if a + b > 1.2 { "fault" } else { "ok" });
    let positive = default_positive(&data).unwrap();
    let labels = binary_labels(&data, positive);
    assert_eq!(labels, ["ok", "fault"]);
    let binary = data.into_binary(Some(positive)).unwrap();
    let (test, train) = binary.split(0.3, 5).unwrap();
    let mut fitted = fit(&train, &FitParams::Svgp(params()), &mut |_| {}).unwrap();
    fitted.set.class_labels = labels;
    let blob = export(&mut fitted, &train.raw_x(), false).unwrap().blob;
    let set = fitted.set;
    let spec = ModelSpec::from_bytes(&blob).unwrap();
    assert_eq!(spec.class_labels, ["ok", "fault"]);

    let x = test.raw_x();
    let latent = set.members[0].predict_raw(&x).unwrap();
    let want: Vec<Vec<f64>> = (0..x.nrows())
        .map(|i| {
            let p = class_probabilities(Link::Probit, &[(latent.mean[i], latent.var[i])])[0];
            vec![1.0 - p, p]
        })
        .collect();
    check_classify::<2>(&blob, &x, &want);
}
