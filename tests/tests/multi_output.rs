//! Several outputs on one basis, across the crates: a multi-output fit
//! (trainer, f64) -> one v5 blob -> `Model::predict_all` (runtime, f32)
//! gives every output's answers within the export tolerances (QUALITY.md:
//! mean within 1% of the predictive sd or 1e-4 of the target's scale,
//! variance within 1%), on held-out points, for every family that shares
//! its basis.

use nalgebra::DMatrix;
use sgp_runtime::{Model, ModelSpec};
use sgp_trainer::export::{export, mean_tolerance, Fidelity};
use sgp_trainer::fit::{fit, ExactParams, FitParams, ProjectedParams, SparseParams};
use sgp_trainer::numerics::optimise::OptimiseOptions;
use sgp_trainer::synth::dynamics::System;

fn sparse(m: usize) -> SparseParams {
    SparseParams {
        m,
        restarts: 2,
        optimiser: OptimiseOptions {
            max_iter: 60,
            ..OptimiseOptions::default()
        },
        ..SparseParams::default()
    }
}

fn check_round_trip(system: System, params: &FitParams) {
    let data = system.data(400, 21).unwrap();
    let (train, test) = data.split(0.25, 2).unwrap();
    let mut fitted = fit(&train, params, &mut |_| {}).unwrap();
    let raw_x = train.first().raw_x();
    let blob = export(&mut fitted, &raw_x, false).unwrap().blob;

    let spec = ModelSpec::from_bytes(&blob).unwrap();
    assert_eq!(spec.outputs.len() + 1, system.outputs().len());
    let names: Vec<String> = std::iter::once(spec.target_name.clone())
        .chain(spec.outputs.iter().map(|o| o.name.clone()))
        .collect();
    assert_eq!(names, system.outputs());

    let model = Model::<32, 8, 8, 4>::from_bytes(&blob).unwrap();
    assert_eq!(model.output_count(), system.outputs().len());
    let x: DMatrix<f64> = test.first().raw_x();
    let reference: Vec<_> = fitted
        .set
        .members
        .iter()
        .map(|m| m.predict_raw(&x).unwrap())
        .collect();
    for i in 0..x.nrows() {
        let row: Vec<f32> = x.row(i).iter().map(|&v| v as f32).collect();
        let all = model.predict_all(&row).unwrap();
        assert_eq!(all.len(), reference.len());
        for (p, (got, want)) in all.iter().zip(&reference).enumerate() {
            let member = &fitted.set.members[p];
            let (mean, var) = (want.mean[i], want.var[i]);
            let tol = mean_tolerance(var.sqrt(), member.transform.y_scale);
            assert!(
                (f64::from(got.mean) - mean).abs() <= tol,
                "{:?} output {p} row {i}: mean {} vs {mean} (tolerance {tol})",
                params.method(),
                got.mean
            );
            assert!(
                (f64::from(got.variance) - var).abs() <= Fidelity::VARIANCE * var,
                "{:?} output {p} row {i}: variance {} vs {var}",
                params.method(),
                got.variance
            );
        }
    }
}

#[test]
fn spgp_outputs_match_the_trainer_through_one_blob() {
    check_round_trip(System::Arm, &FitParams::Spgp(sparse(16)));
}

#[test]
fn vsgp_outputs_match_the_trainer_through_one_blob() {
    check_round_trip(System::Pendulum, &FitParams::Vsgp(sparse(12)));
}

#[test]
fn dr_outputs_match_the_trainer_through_one_blob() {
    let params = FitParams::SpgpDr(ProjectedParams {
        sparse: sparse(12),
        dim: 3,
    });
    check_round_trip(System::CartPole, &params);
}

#[test]
fn exact_outputs_match_the_trainer_through_one_blob() {
    let params = FitParams::Exact(ExactParams {
        max_points: 32,
        ..ExactParams::default()
    });
    check_round_trip(System::Arm, &params);
}
