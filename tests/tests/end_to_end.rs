//! Trainer -> blob -> runtime -> same answers, for every model the trainer
//! exports, within the QUALITY.md tolerances (mean within 1% of the f64
//! predictive sd, at least 1e-4 y_scale; variance within 1% relative, never
//! negative or NaN).

use nalgebra::{DMatrix, DVector};
use sgp_runtime::{Model, ModelKind, ModelSpec};
use sgp_tests::{data, fitted, params};
use sgp_trainer::data::Dataset;
use sgp_trainer::export::{check, compare, far_points};
use sgp_trainer::fit::gplasso::GplassoRefit;
use sgp_trainer::fit::{fit, FitParams, Method};
use sgp_trainer::model::device::predict_all;
use sgp_trainer::model::{ModelSet, TrainedModel};
use sgp_trainer::synth::synthetic;

/// `model` as a set of one.
fn one(model: &TrainedModel) -> ModelSet {
    ModelSet::single(model.clone(), Vec::new())
}

fn assert_runtime_matches(model: &TrainedModel) {
    let held_out = data(200, 3, 99);
    let exported = check(&one(model), &held_out.raw_x()).unwrap();
    let f = &exported.fidelity;
    assert!(f.passes(), "{f:?}");
    assert_eq!(f.points, 200 + 16);
    // The check itself must be able to fail: a blob of another model
    // compared against this one does.
    let mut other = model.clone();
    other.form.beta *= 1.5;
    let wrong = compare(&one(&other), &exported.blob, &held_out.raw_x()).unwrap();
    assert!(
        !wrong[0].passes(),
        "a wrong blob passed the fidelity check: {wrong:?}"
    );
}

#[test]
fn spgp_runtime_matches_trainer() {
    let (_, model) = fitted(Method::Spgp, 15, 1);
    assert_runtime_matches(&model);
}

#[test]
fn dr_and_pca_runtime_matches_trainer() {
    for method in [Method::SpgpDr, Method::SpgpPca] {
        let (_, model) = fitted(method, 15, 1);
        let shape = model.to_spec().unwrap().shape;
        assert!(shape.projected && shape.feature_dim == 2 && shape.input_dim == 3);
        assert_runtime_matches(&model);
    }
}

#[test]
fn vsgp_runtime_matches_trainer() {
    let (_, model) = fitted(Method::Vsgp, 15, 1);
    assert!(model.to_spec().unwrap().shape.per_basis);
    assert_runtime_matches(&model);
}

#[test]
fn spgp_hs_runtime_matches_trainer() {
    let (_, model) = fitted(Method::SpgpHs, 15, 1);
    let spec = model.to_spec().unwrap();
    assert_eq!(spec.shape.kind, ModelKind::SpgpHs);
    assert!(!spec.shape.per_basis && !spec.shape.projected);
    assert_runtime_matches(&model);
}

#[test]
fn every_flipped_bit_of_a_vsgp_blob_is_an_error() {
    let (_, model) = fitted(Method::Vsgp, 6, 7);
    let blob = model.to_spec().unwrap().to_bytes().unwrap();
    assert_eq!(
        ModelSpec::from_bytes(&blob).unwrap().shape.kind,
        ModelKind::Vsgp
    );
    assert!(Model::<6, 3, 3>::from_bytes(&blob).is_ok());
    for byte in 0..blob.len() {
        for bit in 0..8 {
            let mut bad = blob.clone();
            bad[byte] ^= 1 << bit;
            assert!(
                Model::<6, 3, 3>::from_bytes(&bad).is_err(),
                "bit {bit} of byte {byte} went unnoticed"
            );
            assert!(ModelSpec::from_bytes(&bad).is_err());
        }
    }
}

#[test]
fn gplasso_runtime_matches_trainer() {
    // The default moves the basis points from the selected inputs; the
    // paper's procedure and --fixed-basis keep them on training inputs.
    let (train, model) = fitted(Method::Gplasso, 15, 1);
    let off_the_data = |model: &TrainedModel| {
        let centres = train.transform.unapply_x(&model.form.basis.centres);
        let raw = train.raw_x();
        centres
            .row_iter()
            .map(|c| {
                raw.row_iter()
                    .map(|r| (r - c).amax())
                    .fold(f64::INFINITY, f64::min)
            })
            .fold(0.0, f64::max)
    };
    assert!(off_the_data(&model) > 1e-3);
    for refit in [
        GplassoRefit::Everything,
        GplassoRefit::Hyperparameters,
        GplassoRefit::Nothing,
    ] {
        let mut p = params(Method::Gplasso, 15, 1, 60);
        if let FitParams::Gplasso(g) = &mut p {
            g.refit = refit;
        }
        let model = fit(&train, &p, &mut |_| {}).unwrap().set.members.remove(0);
        let spec = model.to_spec().unwrap();
        assert_eq!(spec.shape.kind, ModelKind::GpLasso);
        assert!(!spec.shape.per_basis);
        if refit != GplassoRefit::Everything {
            let off = off_the_data(&model);
            assert!(off < 1e-9, "{refit:?}: basis point off the data by {off}");
        }
        assert_runtime_matches(&model);
    }
}

#[test]
fn exact_runtime_matches_trainer() {
    let (_, model) = fitted(Method::Exact, 0, 2);
    assert_runtime_matches(&model);
}

#[test]
fn far_from_the_data_the_device_predicts_prior_plus_noise() {
    let (train, model) = fitted(Method::Spgp, 15, 3);
    let blob = model.to_spec().unwrap().to_bytes().unwrap();
    let device = Model::<16, 3, 3>::from_bytes(&blob).unwrap();
    let far = far_points(&model, 8, 5);
    let t = &train.transform;
    let expected = t.unapply_var(model.form.prior + model.form.noise_var);
    for row in far.row_iter() {
        let x: Vec<f32> = row.iter().map(|&v| v as f32).collect();
        let p = device.predict(&x).unwrap();
        assert!(
            ((p.variance as f64) - expected).abs() < 1e-4 * expected,
            "{p:?} vs {expected}"
        );
        assert!(((p.mean as f64) - t.y_mean).abs() < 1e-4 * t.y_scale);
    }
}

#[test]
fn same_data_same_seed_same_blob() {
    let a = fitted(Method::Spgp, 10, 4)
        .1
        .to_spec()
        .unwrap()
        .to_bytes()
        .unwrap();
    let b = fitted(Method::Spgp, 10, 4)
        .1
        .to_spec()
        .unwrap()
        .to_bytes()
        .unwrap();
    assert_eq!(a, b);
    let c = fitted(Method::Spgp, 10, 5)
        .1
        .to_spec()
        .unwrap()
        .to_bytes()
        .unwrap();
    assert_ne!(a, c, "another seed should give another model");
}

#[test]
fn blob_carries_names_and_transform() {
    let (train, model) = fitted(Method::Spgp, 8, 6);
    let spec = ModelSpec::from_bytes(&model.to_spec().unwrap().to_bytes().unwrap()).unwrap();
    assert_eq!(spec.input_names, vec!["x1", "x2", "x3"]);
    assert_eq!(spec.target_name, "y");
    let y_mean = DVector::from_element(1, train.transform.y_mean);
    assert_eq!(spec.y_mean, y_mean[0] as f32);
}

/// Training data whose middle input is constant (5), and held-out inputs
/// with that column at 5, 1e4 and -3.
fn with_constant_middle_input() -> (Dataset, [DMatrix<f64>; 3]) {
    let widen = |x: &DMatrix<f64>, value: f64| {
        DMatrix::from_fn(x.nrows(), 3, |i, j| match j {
            0 => x[(i, 0)],
            1 => value,
            _ => x[(i, 1)],
        })
    };
    let (x, y) = synthetic(200, 2, 11);
    let train = Dataset::from_raw(
        widen(&x, 5.0),
        y,
        vec!["x1".into(), "still".into(), "x3".into()],
        "y".into(),
    )
    .unwrap();
    assert_eq!(train.constant_inputs, vec![1]);
    let (held_out, _) = synthetic(50, 2, 12);
    let probes = [5.0, 1e4, -3.0].map(|v| widen(&held_out, v));
    (train, probes)
}

#[test]
fn constant_inputs_are_fitted_and_ignored_in_f64_and_on_the_device() {
    let (train, probes) = with_constant_middle_input();
    for method in [Method::Spgp, Method::Exact] {
        let fitted = fit(&train, &params(method, 10, 0, 30), &mut |_| {}).unwrap();
        let (mut set, report) = (fitted.set, fitted.report);
        let model = set.members.remove(0);
        assert_eq!(report.ignored_inputs, vec!["still"]);
        assert_eq!(report.lengthscales.len(), 2);
        let json = serde_json::to_value(&report).unwrap();
        let scales = json["lengthscales"].as_array().unwrap();
        assert!(scales.iter().all(|l| l.is_f64()), "{json}");
        assert_eq!(model.input_names, vec!["x1", "still", "x3"]);

        let exported = check(&one(&model), &probes[0]).unwrap();
        assert!(exported.fidelity.passes(), "{:?}", exported.fidelity);
        let reference = model.predict_raw(&probes[0]).unwrap();
        let device = predict_all(&exported.blob, &probes[0]).unwrap();
        for probe in &probes[1..] {
            assert_eq!(
                model.predict_raw(probe).unwrap(),
                reference,
                "{method:?} f64"
            );
            assert_eq!(
                predict_all(&exported.blob, probe).unwrap(),
                device,
                "{method:?} f32"
            );
        }
    }
}

/// The blob records each input's training range in raw units, the
/// constant (ignored) input included, and the device checks it.
#[test]
fn the_blob_records_the_training_range_and_the_device_checks_it() {
    let (train, probes) = with_constant_middle_input();
    let raw = train.raw_x();
    let rows: Vec<Vec<f32>> = raw
        .row_iter()
        .map(|r| r.iter().map(|&v| v as f32).collect())
        .collect();
    for method in [Method::Spgp, Method::SpgpDr] {
        let model = fit(&train, &params(method, 10, 0, 20), &mut |_| {})
            .unwrap()
            .set
            .members
            .remove(0);
        let blob = model.to_spec().unwrap().to_bytes().unwrap();
        let spec = ModelSpec::from_bytes(&blob).unwrap();
        for j in [0, 2] {
            let column = raw.column(j);
            assert_eq!(spec.x_min[j], column.min() as f32, "{method:?}");
            assert_eq!(spec.x_max[j], column.max() as f32, "{method:?}");
        }
        assert_eq!((spec.x_min[1], spec.x_max[1]), (5.0, 5.0));

        let device = Model::<10, 3, 3>::from_bytes(&blob).unwrap();
        for row in &rows {
            assert_eq!(device.in_training_range(row), Ok(true), "{row:?}");
        }
        // The ignored input at 1e4 changes no prediction, but the device
        // can tell it is not what the model was trained on.
        for row in probes[1].row_iter() {
            let x: Vec<f32> = row.iter().map(|&v| v as f32).collect();
            assert_eq!(device.in_training_range(&x), Ok(false), "{x:?}");
        }
    }
}

#[test]
fn ivm_regression_runtime_matches_trainer() {
    let (_, model) = fitted(Method::Ivm, 25, 1);
    assert_eq!(model.kind, ModelKind::Ivm);
    assert!(model.form.l2.is_none());
    assert_runtime_matches(&model);
}

/// An IVM classifier through the whole path: fit, blob, runtime
/// probabilities within `Fidelity::PROBABILITY` of the trainer's at held-out
/// and far points, the positive class in the blob, every bit flip refused.
#[test]
fn ivm_classifier_fit_to_blob_to_runtime_probability() {
    use sgp_trainer::export::Fidelity;
    use sgp_trainer::model::likelihood::probit;
    use sgp_trainer::synth::{classification, classification_dataset, ClassShape};
    // Labels 3 and 7: the larger is the positive class.
    let (x, y) = classification(ClassShape::Moons, 300, 11);
    let y = y.map(|v| if v > 0.5 { 7.0 } else { 3.0 });
    let train = Dataset::from_raw(x, y, vec!["x1".into(), "x2".into()], "class".into())
        .unwrap()
        .into_binary(None)
        .unwrap();
    let mut fitted = fit(&train, &params(Method::Ivm, 40, 1, 60), &mut |_| {}).unwrap();
    let model = fitted.set.members.remove(0);
    let held_out = classification_dataset(ClassShape::Moons, 200, 12).unwrap();
    let exported = check(&one(&model), &held_out.raw_x()).unwrap();
    assert!(exported.fidelity.passes(), "{:?}", exported.fidelity);
    let spec = ModelSpec::from_bytes(&exported.blob).unwrap();
    assert_eq!(spec.shape.link, sgp_runtime::Link::Probit);
    assert_eq!(spec.positive_class, 7.0);
    let points = DMatrix::from_rows(
        &held_out
            .raw_x()
            .row_iter()
            .chain(far_points(&model, 16, 3).row_iter())
            .collect::<Vec<_>>(),
    );
    let reference = model.predict_raw(&points).unwrap();
    let device = predict_all(&exported.blob, &points).unwrap();
    let mut wrong = 0;
    for (i, p) in device.iter().enumerate() {
        let p64 = probit(reference.mean[i], reference.var[i]);
        let p32 = f64::from(p.probability.unwrap());
        assert!((p32 - p64).abs() <= Fidelity::PROBABILITY, "{p32} vs {p64}");
        if i < held_out.n_rows() && (p32 >= 0.5) != (held_out.y[i] > 0.0) {
            wrong += 1;
        }
    }
    assert!(wrong < 30, "{wrong} of 200 held-out rows misclassified");
    // Far from the data the latent reverts to the prior: P(+1) = Phi(b / sqrt(1 + s2)).
    let far = device.last().unwrap().probability.unwrap();
    let s2 = model.form.prior;
    assert!((f64::from(far) - probit(model.bias, s2)).abs() < 1e-3);
    for byte in 0..exported.blob.len() {
        for bit in 0..8 {
            let mut bad = exported.blob.clone();
            bad[byte] ^= 1 << bit;
            assert!(
                Model::<64, 2, 2>::from_bytes(&bad).is_err(),
                "byte {byte} bit {bit}"
            );
        }
    }
}
