//! Learning on the device (format version 7's whitened form and version
//! 9's covariance form): the update against an f64 Kalman filter and the
//! batch posterior, its guarantees (variance in `(0,
//! prior + noise]`, errors that leave the model unchanged), the written
//! blob, and the learning block's format checks.

mod common;

use common::{
    as_covariance, batch_posterior, covariance, covariance_of_factor, dense, doc_updatable_spec,
    fitted_spec, forward, quadratic, reference_basis, rows_for, unchecked_blob, with_posterior,
};
use sgp_runtime::{Error, Learning, Model, ModelSpec, Observation, UpdateSettings, VarianceForm};

type Small = Model<8, 3, 3>;

/// A dense f64 filter of the same model: whitened mean `alpha`, covariance
/// `S`, forgetting towards the prior, then the observation.
struct Reference {
    spec: ModelSpec,
    l1: Vec<Vec<f64>>,
    alpha: Vec<f64>,
    s: Vec<Vec<f64>>,
}

impl Reference {
    fn of(spec: &ModelSpec) -> Self {
        let m = spec.shape.n_basis as usize;
        let learning = spec.learning.as_ref().unwrap();
        Reference {
            spec: spec.clone(),
            l1: dense(&spec.l1, m),
            alpha: learning.means[0].iter().map(|&v| f64::from(v)).collect(),
            s: if spec.variance == VarianceForm::Covariance {
                covariance_of_factor(&dense(&spec.l2, m))
            } else {
                covariance(&dense(&spec.l2, m))
            },
        }
    }

    /// The forgetting of update `t` with factor `lam`: the whitened
    /// form's drift before the observation ([`Reference::forget`]), or,
    /// after it, the covariance form's of one coordinate, `S <- P S P +
    /// (1 - mu) e_k e_k^T` (`k = t mod m`, `mu = lam^m`, `P` scaling
    /// coordinate `k` by `sqrt(mu)`), the mean kept.
    fn forget_at(&mut self, t: usize, lam: f64, before: bool) {
        let covariance = self.spec.variance == VarianceForm::Covariance;
        if before && !covariance {
            self.forget(lam);
        } else if !before && covariance {
            let m = self.alpha.len();
            let k = t % m;
            let mu = lam.powi(m as i32);
            for (i, row) in self.s.iter_mut().enumerate() {
                for (j, v) in row.iter_mut().enumerate() {
                    let scale = |a: usize| if a == k { mu.sqrt() } else { 1.0 };
                    *v *= scale(i) * scale(j);
                    if i == k && j == k {
                        *v += 1.0 - mu;
                    }
                }
            }
        }
    }

    fn z(&self, x: &[f64]) -> Vec<f64> {
        forward(&self.l1, &reference_basis(&self.spec, x))
    }

    /// Mean and variance of the target (raw units, noise included).
    fn predict(&self, x: &[f64]) -> (f64, f64) {
        let z = self.z(x);
        let n: f64 = z.iter().map(|v| v * v).sum();
        let spec = &self.spec;
        let mean: f64 = z.iter().zip(&self.alpha).map(|(a, b)| a * b).sum();
        let latent = (f64::from(spec.prior) - n + quadratic(&self.s, &z)).max(0.0);
        let scale = f64::from(spec.y_scale);
        (
            f64::from(spec.y_mean) + scale * mean,
            scale * scale * (latent + f64::from(spec.noise)),
        )
    }

    /// The drift towards the prior before an observation.
    fn forget(&mut self, lam: f64) {
        for (i, row) in self.s.iter_mut().enumerate() {
            for (j, v) in row.iter_mut().enumerate() {
                *v = lam * *v + if i == j { 1.0 - lam } else { 0.0 };
            }
        }
        for a in &mut self.alpha {
            *a *= lam.sqrt();
        }
    }

    /// The Kalman step of one observation.
    fn observe(&mut self, x: &[f64], y: f64) {
        let m = self.alpha.len();
        let z = self.z(x);
        let n: f64 = z.iter().map(|v| v * v).sum();
        let spec = &self.spec;
        let (prior, noise) = (f64::from(spec.prior), f64::from(spec.noise));
        let gamma = match spec.learning.as_ref().unwrap().observation {
            Observation::Fitc => (prior - n).max(0.0) + noise,
            _ => noise,
        };
        let sz: Vec<f64> = (0..m)
            .map(|i| (0..m).map(|j| self.s[i][j] * z[j]).sum())
            .collect();
        let d = gamma + z.iter().zip(&sz).map(|(a, b)| a * b).sum::<f64>();
        let y = (y - f64::from(spec.y_mean)) / f64::from(spec.y_scale);
        let r = y - z.iter().zip(&self.alpha).map(|(a, b)| a * b).sum::<f64>();
        for i in 0..m {
            self.alpha[i] += sz[i] * r / d;
            for j in 0..m {
                self.s[i][j] -= sz[i] * sz[j] / d;
            }
        }
    }
}

impl Reference {
    /// The probit label's assumed-density step: the moments of the tilted
    /// posterior, in f64 (`erfc`-free: the labels here keep `t` moderate).
    fn observe_probit(&mut self, x: &[f64], label: f64) -> (f64, f64) {
        let m = self.alpha.len();
        let z = self.z(x);
        let n: f64 = z.iter().map(|v| v * v).sum();
        let bias = f64::from(self.spec.bias);
        let mean = z.iter().zip(&self.alpha).map(|(a, b)| a * b).sum::<f64>() + bias;
        let var = (f64::from(self.spec.prior) - n).max(0.0) + quadratic(&self.s, &z);
        let sign = if label == 1.0 { 1.0 } else { -1.0 };
        let c = 1.0 + var;
        let t = sign * mean / c.sqrt();
        let pdf = (-0.5 * t * t).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let cdf = 0.5 * (1.0 + erf(t / std::f64::consts::SQRT_2));
        let rho = pdf / cdf;
        let sz: Vec<f64> = (0..m)
            .map(|i| (0..m).map(|j| self.s[i][j] * z[j]).sum())
            .collect();
        for i in 0..m {
            self.alpha[i] += sz[i] * sign * rho / c.sqrt();
            for j in 0..m {
                self.s[i][j] -= rho * (t + rho) / c * sz[i] * sz[j];
            }
        }
        (mean, var)
    }
}

/// `erf` by its series (|x| < 3 here), in f64.
fn erf(x: f64) -> f64 {
    let mut term = x;
    let mut sum = x;
    for k in 1..80 {
        let k = f64::from(k);
        term *= -x * x / k;
        sum += term / (2.0 * k + 1.0);
    }
    2.0 / std::f64::consts::PI.sqrt() * sum
}

fn f32s(x: &[f64]) -> Vec<f32> {
    x.iter().map(|&v| v as f32).collect()
}

/// `tests/data/doc-updatable.sgp`, which the documentation examples read,
/// is exactly what the current writer produces. `SGP_BLESS=1` rewrites it.
#[test]
fn doc_updatable_file_is_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-updatable.sgp");
    let bytes = doc_updatable_spec().to_bytes().unwrap();
    assert_eq!(u16::from_le_bytes([bytes[4], bytes[5]]), 7);
    if std::env::var_os("SGP_BLESS").is_some() {
        std::fs::write(path, &bytes).unwrap();
    }
    assert_eq!(
        std::fs::read(path).unwrap(),
        bytes,
        "run with SGP_BLESS=1 to regenerate"
    );
}

/// The whitened and covariance forms predict what the solves of the same
/// posterior do, with the same gradients; their blobs are versions 7 and
/// 9 and read back as written.
#[test]
fn the_updatable_forms_predict_as_the_solves() {
    let whitened = doc_updatable_spec();
    for (updatable, version) in [(as_covariance(&whitened), 9), (whitened, 7)] {
        let blob = updatable.to_bytes().unwrap();
        assert_eq!(u16::from_le_bytes([blob[4], blob[5]]), version);
        assert_eq!(ModelSpec::from_bytes(&blob).unwrap(), updatable);
        predicts_as_the_solves(&blob);
    }
}

fn predicts_as_the_solves(blob: &[u8]) {
    let solves = common::doc_spec();
    let a = Model::<4, 2, 2>::from_bytes(&solves.to_bytes().unwrap()).unwrap();
    let b = Model::<4, 2, 2>::from_bytes(blob).unwrap();
    assert!(b.is_updatable() && !a.is_updatable());
    assert_eq!(b.observation(), Some(Observation::Fitc));
    for x in [[0.0, 0.0], [1.5, -0.7], [3.0, 0.2], [30.0, 9.0]] {
        let (p, q) = (a.predict(&x).unwrap(), b.predict(&x).unwrap());
        assert!((p.mean - q.mean).abs() < 1e-5, "{x:?}: {p:?} {q:?}");
        assert!(
            (p.variance - q.variance).abs() < 1e-5 * p.variance,
            "{x:?}: {p:?} {q:?}"
        );
        let (g, h) = (
            a.predict_with_gradient(&x).unwrap(),
            b.predict_with_gradient(&x).unwrap(),
        );
        assert_eq!(b.mean(&x).unwrap(), q.mean);
        assert_eq!((h.mean, h.variance), (q.mean, q.variance));
        for j in 0..2 {
            let tol = 1e-4 * (1.0 + g.variance_gradient[j].abs());
            assert!(
                (g.variance_gradient[j] - h.variance_gradient[j]).abs() < tol,
                "{x:?} {j}"
            );
            let tol = 1e-4 * (1.0 + g.mean_gradient[j].abs());
            assert!(
                (g.mean_gradient[j] - h.mean_gradient[j]).abs() < tol,
                "{x:?} {j}: mean gradient"
            );
        }
    }
}

/// After updates with forgetting, in either form, the gradients (the
/// mean's weights solved for from the learned means) are the derivatives
/// of the mean and the variance: central differences.
#[test]
fn the_gradients_follow_the_learned_posterior() {
    let settings = UpdateSettings {
        forgetting: 0.95,
        ..Default::default()
    };
    for spec in [doc_updatable_spec(), as_covariance(&doc_updatable_spec())] {
        let mut model = Model::<4, 2, 2>::from_bytes(&spec.to_bytes().unwrap()).unwrap();
        for (t, x) in [[0.3, -0.2], [1.0, 0.5], [-0.8, 1.2]].iter().enumerate() {
            model.update_with(x, 2.0 - t as f32, settings).unwrap();
        }
        for x in [[0.0f32, 0.0], [0.7, -0.4], [1.5, 1.0]] {
            let g = model.predict_with_gradient(&x).unwrap();
            for j in 0..2 {
                let h = 1e-2f32;
                let (mut up, mut down) = (x, x);
                up[j] += h;
                down[j] -= h;
                let (pu, pd) = (model.predict(&up).unwrap(), model.predict(&down).unwrap());
                assert_eq!(model.mean(&up).unwrap(), pu.mean);
                for (fd, analytic) in [
                    ((pu.mean - pd.mean) / (2.0 * h), g.mean_gradient[j]),
                    (
                        (pu.variance - pd.variance) / (2.0 * h),
                        g.variance_gradient[j],
                    ),
                ] {
                    assert!(
                        (fd - analytic).abs() < 1e-2 * (1.0 + fd.abs()),
                        "{:?} {x:?} {j}: {fd} {analytic}",
                        spec.variance
                    );
                }
            }
        }
    }
}

/// Every update (FITC and VFE rows, with and without forgetting) against
/// the f64 filter, at inputs in and beyond the data.
#[test]
fn updates_follow_an_f64_kalman_filter() {
    let forms: [fn(&ModelSpec) -> ModelSpec; 2] = [Clone::clone, as_covariance];
    for (observation, form) in [Observation::Fitc, Observation::Vfe]
        .into_iter()
        .flat_map(|o| forms.map(|f| (o, f)))
    {
        for lam in [1.0f32, 0.99] {
            let base = fitted_spec(3, 7, 3, &[], observation);
            let rows = rows_for(&base, 60, 11, 0.1);
            let spec = form(&fitted_spec(3, 7, 3, &rows, observation));
            let mut model = Small::from_bytes(&spec.to_bytes().unwrap()).unwrap();
            let mut reference = Reference::of(&spec);
            let settings = UpdateSettings {
                forgetting: lam,
                ..Default::default()
            };
            for (t, (x, y)) in rows_for(&spec, 300, 12, 0.1).into_iter().enumerate() {
                let seen = model.update_with(&f32s(&x), y as f32, settings).unwrap();
                reference.forget_at(t, f64::from(lam), true);
                let (mean, var) = reference.predict(&x);
                let p = seen.prediction;
                assert!(
                    (f64::from(p.mean) - mean).abs() < 1e-3 * var.sqrt(),
                    "{p:?} {mean}"
                );
                assert!(
                    (f64::from(p.variance) - var).abs() < 1e-3 * var,
                    "{p:?} {var}"
                );
                assert!((f64::from(seen.residual) - (y - mean)).abs() < 1e-3 * var.sqrt());
                reference.observe(&x, y);
                reference.forget_at(t, f64::from(lam), false);
            }
            for (x, _) in rows_for(&spec, 20, 13, 0.0)
                .iter()
                .chain(&[(vec![40.0, -40.0, 40.0], 0.0)])
            {
                let p = model.predict(&f32s(x)).unwrap();
                let (mean, var) = reference.predict(x);
                let sd = var.sqrt();
                assert!(
                    (f64::from(p.mean) - mean).abs() < 1e-3 * sd,
                    "{observation:?} {:?} lam {lam}: mean {} vs {mean} (sd {sd})",
                    spec.variance,
                    p.mean
                );
                assert!(
                    (f64::from(p.variance) - var).abs() < 1e-3 * var,
                    "{observation:?} {:?} lam {lam}: variance {} vs {var}",
                    spec.variance,
                    p.variance
                );
            }
        }
    }
}

/// A binary probit classifier learns a label by one assumed-density step,
/// as an f64 reference of the same step does; a label other than 0 or 1
/// is an error.
#[test]
fn a_probit_label_takes_an_assumed_density_step() {
    let mut spec = fitted_spec(3, 7, 3, &[], Observation::Fitc);
    spec.shape.link = sgp_runtime::Link::Probit;
    spec.bias = 0.2;
    spec.learning.as_mut().unwrap().observation = Observation::Probit;
    for spec in [spec.clone(), as_covariance(&spec)] {
        probit_steps(&spec);
    }
}

fn probit_steps(spec: &ModelSpec) {
    let mut model = Small::from_bytes(&spec.to_bytes().unwrap()).unwrap();
    let mut reference = Reference::of(spec);
    for lam in [1.0f32, 0.995] {
        let settings = UpdateSettings {
            forgetting: lam,
            ..Default::default()
        };
        // The covariance form's coordinates advance only when it forgets.
        for (t, (x, y)) in rows_for(spec, 200, 21, 0.1).into_iter().enumerate() {
            let label = if y > f64::from(spec.y_mean) { 1.0 } else { 0.0 };
            let seen = model
                .update_with(&f32s(&x), label as f32, settings)
                .unwrap();
            reference.forget_at(t, f64::from(lam), true);
            let (mean, var) = reference.observe_probit(&x, label);
            reference.forget_at(t, f64::from(lam), false);
            let p = seen.prediction;
            assert!(
                (f64::from(p.mean) - mean).abs() < 1e-3 * var.sqrt().max(1.0),
                "{p:?} {mean}"
            );
            assert!(
                (f64::from(p.variance) - var).abs() < 1e-3 * var.max(1e-3),
                "{p:?} {var}"
            );
        }
    }
    let before = model.predict(&[0.1, 0.2, 0.3]).unwrap();
    assert_eq!(
        model.update(&[0.1, 0.2, 0.3], 0.5),
        Err(Error::InvalidTarget)
    );
    assert_eq!(model.predict(&[0.1, 0.2, 0.3]).unwrap(), before);
}

/// Without forgetting, updates reproduce the batch posterior of every row
/// (the blob's and the new ones).
#[test]
fn without_forgetting_updates_give_the_batch_posterior() {
    let base = fitted_spec(5, 8, 3, &[], Observation::Vfe);
    let first = rows_for(&base, 100, 21, 0.05);
    let fitted = fitted_spec(5, 8, 3, &first, Observation::Vfe);
    for spec in [fitted.clone(), as_covariance(&fitted)] {
        batch_of_every_row(&spec, &first);
    }
}

fn batch_of_every_row(spec: &ModelSpec, first: &[(Vec<f64>, f64)]) {
    let mut model = Small::from_bytes(&spec.to_bytes().unwrap()).unwrap();
    let more = rows_for(spec, 1000, 22, 0.05);
    for (x, y) in &more {
        model.update(&f32s(x), *y as f32).unwrap();
    }
    let all: Vec<_> = first.iter().chain(&more).cloned().collect();
    let (alpha, s) = batch_posterior(spec, &all, Observation::Vfe);
    let batch = with_posterior(spec, &alpha, &s, Observation::Vfe);
    let reference = Reference::of(&batch);
    for (x, _) in rows_for(spec, 50, 23, 0.0) {
        let p = model.predict(&f32s(&x)).unwrap();
        let (mean, var) = reference.predict(&x);
        assert!(
            (f64::from(p.mean) - mean).abs() < 1e-2 * var.sqrt(),
            "mean {} vs {mean}",
            p.mean
        );
        assert!(
            (f64::from(p.variance) - var).abs() < 2e-2 * var,
            "var {} vs {var}",
            p.variance
        );
    }
}

/// A NaN or infinite input or target, an outlier, a bad setting: an error,
/// and every prediction is as before, bit for bit.
#[test]
fn a_refused_update_changes_nothing() {
    let spec = doc_updatable_spec();
    let blob = spec.to_bytes().unwrap();
    let mut model = Model::<4, 2, 2>::from_bytes(&blob).unwrap();
    let probe = [[0.0, 0.0], [1.5, -0.7], [3.0, 0.2]];
    let before: Vec<_> = probe.iter().map(|x| model.predict(x).unwrap()).collect();
    let strict = UpdateSettings {
        gate: 3.0,
        ..Default::default()
    };
    let far = model.predict(&[0.0, 0.0]).unwrap().mean + 1e3;
    let cases: [(&[f32], f32, UpdateSettings, Error); 7] = [
        (
            &[f32::NAN, 0.0],
            1.0,
            UpdateSettings::default(),
            Error::NonFiniteInput,
        ),
        (
            &[0.0, f32::INFINITY],
            1.0,
            UpdateSettings::default(),
            Error::NonFiniteInput,
        ),
        (
            &[0.0, 0.0],
            f32::NAN,
            UpdateSettings::default(),
            Error::InvalidTarget,
        ),
        (
            &[0.0, 0.0],
            f32::NEG_INFINITY,
            UpdateSettings::default(),
            Error::InvalidTarget,
        ),
        (&[0.0, 0.0], far, strict, Error::Outlier),
        (
            &[0.0, 0.0],
            1.0,
            UpdateSettings {
                forgetting: 0.0,
                ..Default::default()
            },
            Error::InvalidSetting,
        ),
        (
            &[0.0],
            1.0,
            UpdateSettings::default(),
            Error::InputLength {
                expected: 2,
                found: 1,
            },
        ),
    ];
    for (x, y, settings, error) in cases {
        assert_eq!(model.update_with(x, y, settings), Err(error), "{x:?} {y}");
        let after: Vec<_> = probe.iter().map(|x| model.predict(x).unwrap()).collect();
        assert_eq!(after, before, "{error:?} changed the model");
    }
    assert_eq!(
        model.update_all(&[0.0, 0.0], &[1.0, 2.0]),
        Err(Error::TargetLength {
            expected: 1,
            found: 2
        })
    );
    // The same target within the gate is taken.
    assert!(model.update_with(&[0.0, 0.0], far - 999.0, strict).is_ok());
    // A model without a learning block does not learn.
    let mut fixed = Model::<4, 2, 2>::from_bytes(&common::doc_spec().to_bytes().unwrap()).unwrap();
    assert_eq!(fixed.update(&[0.0, 0.0], 1.0), Err(Error::NotUpdatable));
}

/// Every variance stays in `(0, prior + noise]` over 100,000 updates with
/// forgetting, including long stretches that never visit most of the
/// inputs, and far from the data the prediction is the prior.
#[test]
fn a_hundred_thousand_updates_keep_every_variance_in_range() {
    let base = fitted_spec(9, 8, 3, &[], Observation::Fitc);
    let fitted = fitted_spec(9, 8, 3, &rows_for(&base, 200, 31, 0.02), Observation::Fitc);
    for spec in [fitted.clone(), as_covariance(&fitted)] {
        variances_in_range(&spec);
    }
}

fn variances_in_range(spec: &ModelSpec) {
    let mut model = Small::from_bytes(&spec.to_bytes().unwrap()).unwrap();
    model
        .set_update_settings(UpdateSettings {
            forgetting: 0.999,
            ..Default::default()
        })
        .unwrap();
    let ceiling = model.prior_variance() + model.noise_variance();
    let probes = rows_for(spec, 12, 32, 0.0);
    let stream = rows_for(spec, 1000, 33, 0.02);
    for t in 0..100_000 {
        // Ten thousand updates at one point, then the whole stream again.
        let (x, y) = if (t / 10_000) % 2 == 1 {
            &stream[0]
        } else {
            &stream[t % 1000]
        };
        model.update(&f32s(x), *y as f32).unwrap();
        if t % 997 == 0 {
            for (p, _) in &probes {
                let v = model.predict(&f32s(p)).unwrap().variance;
                assert!(
                    v > 0.0 && v <= ceiling * (1.0 + 1e-6),
                    "update {t}: variance {v}, ceiling {ceiling}"
                );
            }
        }
    }
    let far = model.predict(&[1e3, 1e3, 1e3]).unwrap();
    assert!((far.variance - ceiling).abs() <= 1e-6 * ceiling);
}

/// The model writes itself back as a blob of the source's length that
/// loads, on the device and on the host, to the same predictions; a blob
/// of another model, a damaged one and a short buffer are refused.
#[test]
fn the_model_writes_itself_back() {
    let spec = doc_updatable_spec();
    let blob = spec.to_bytes().unwrap();
    let mut model = Model::<4, 2, 2>::from_bytes(&blob).unwrap();
    for (i, x) in [[0.0f32, 0.0], [1.5, -0.7], [3.0, 0.2]].iter().enumerate() {
        model.update(x, 1.0 + i as f32).unwrap();
    }
    let mut out = vec![0u8; blob.len()];
    assert_eq!(model.write_blob(&blob, &mut out), Ok(blob.len()));
    let again = Model::<4, 2, 2>::from_bytes(&out).unwrap();
    let host = ModelSpec::from_bytes(&out).unwrap();
    assert_eq!(
        host.learning.as_ref().unwrap().observation,
        Observation::Fitc
    );
    for x in [[0.0, 0.0], [1.5, -0.7], [30.0, 9.0]] {
        assert_eq!(again.predict(&x).unwrap(), model.predict(&x).unwrap());
    }
    // Written again from the blob it wrote: the same bytes.
    let mut twice = vec![0u8; blob.len()];
    assert_eq!(model.write_blob(&out, &mut twice), Ok(blob.len()));
    assert_eq!(twice, out);
    // Updates continue from the reloaded state exactly.
    let mut reloaded = again;
    model.update(&[1.0, 0.0], 2.0).unwrap();
    reloaded.update(&[1.0, 0.0], 2.0).unwrap();
    assert_eq!(reloaded.predict(&[0.5, 0.5]), model.predict(&[0.5, 0.5]));
    assert_eq!(
        model.write_blob(&blob, &mut out[..10]),
        Err(Error::BufferTooSmall {
            required: blob.len(),
            capacity: 10
        })
    );
    let mut other = spec.clone();
    other.centres[0] += 0.5;
    assert_eq!(
        model.write_blob(&other.to_bytes().unwrap(), &mut out),
        Err(Error::ForeignBlob)
    );
    let mut damaged = blob.clone();
    damaged[20] ^= 1;
    assert_eq!(
        model.write_blob(&damaged, &mut out),
        Err(Error::ForeignBlob)
    );
    let fixed = Model::<4, 2, 2>::from_bytes(&common::doc_spec().to_bytes().unwrap()).unwrap();
    assert_eq!(fixed.write_blob(&blob, &mut out), Err(Error::NotUpdatable));
    // The reset: loading the factory blob again returns to its posterior.
    let factory = Model::<4, 2, 2>::from_bytes(&blob).unwrap();
    model.load(&blob).unwrap();
    for x in [[0.0, 0.0], [1.5, -0.7], [30.0, 9.0]] {
        assert_eq!(model.predict(&x).unwrap(), factory.predict(&x).unwrap());
    }
}

/// The learning block is checked as FORMAT.md says, with the same error
/// from the device and the host.
#[test]
fn the_learning_block_is_checked() {
    let good = doc_updatable_spec();
    let mut cases: Vec<(ModelSpec, Error)> = Vec::new();
    let mut no_block = good.clone();
    no_block.learning = None;
    cases.push((no_block, Error::InvalidValue { field: "learning" }));
    let mut solves = good.clone();
    solves.variance = VarianceForm::Solves;
    cases.push((solves, Error::InvalidValue { field: "learning" }));
    let mut probit = good.clone();
    probit.learning.as_mut().unwrap().observation = Observation::Probit;
    cases.push((probit, Error::InvalidValue { field: "learning" }));
    let mut noiseless = good.clone();
    noiseless.noise = 0.0;
    cases.push((noiseless, Error::InvalidValue { field: "noise" }));
    let mut two = good.clone();
    two.learning.as_mut().unwrap().means.push(vec![0.0; 3]);
    cases.push((
        two,
        Error::InconsistentSizes {
            field: "learning",
            expected: 1,
            found: 2,
        },
    ));
    let mut short = good.clone();
    short.learning.as_mut().unwrap().means[0].pop();
    cases.push((
        short,
        Error::InconsistentSizes {
            field: "learning",
            expected: 3,
            found: 2,
        },
    ));
    let mut nan = good.clone();
    nan.learning.as_mut().unwrap().means[0][1] = f32::NAN;
    cases.push((nan, Error::NonFinite { field: "learning" }));
    let mut one = good.clone();
    one.l2.clear();
    one.shape.two_factors = false;
    cases.push((one, Error::InvalidValue { field: "variance" }));
    for (spec, error) in cases {
        assert_eq!(spec.to_bytes().unwrap_err(), error);
        let blob = unchecked_blob(&spec, 7);
        assert_eq!(
            Model::<4, 2, 2>::from_bytes(&blob).unwrap_err(),
            error,
            "{error:?}"
        );
        assert_eq!(
            ModelSpec::from_bytes(&blob).unwrap_err(),
            error,
            "{error:?}"
        );
    }
    // A whitened form in a blob of an older version: an unknown enum value.
    let blob = unchecked_blob(&Learning::strip(&good), 6);
    assert_eq!(
        Model::<4, 2, 2>::from_bytes(&blob).unwrap_err(),
        Error::Malformed
    );
    assert_eq!(ModelSpec::from_bytes(&blob).unwrap_err(), Error::Malformed);
    common::assert_every_damage_is_an_error(&good.to_bytes().unwrap(), |b| {
        Model::<4, 2, 2>::from_bytes(b).map(|_| ())
    });
}

trait Strip {
    fn strip(spec: &ModelSpec) -> ModelSpec;
}

impl Strip for Learning {
    /// The spec without its learning block, the whitened form kept.
    fn strip(spec: &ModelSpec) -> ModelSpec {
        let mut spec = spec.clone();
        spec.learning = None;
        spec
    }
}

/// A model that has not learned writes its source back byte for byte,
/// however often it is asked (a refused update changes nothing either).
#[test]
fn an_unchanged_model_writes_its_source_back() {
    let blob = doc_updatable_spec().to_bytes().unwrap();
    let mut model = Model::<4, 2, 2>::from_bytes(&blob).unwrap();
    let mut out = vec![0u8; blob.len()];
    model.write_blob(&blob, &mut out).unwrap();
    assert_eq!(out, blob);
    let strict = UpdateSettings {
        gate: 1.0,
        ..Default::default()
    };
    assert_eq!(
        model.update_with(&[0.0, 0.0], 1e6, strict),
        Err(Error::Outlier)
    );
    model.write_blob(&blob, &mut out).unwrap();
    assert_eq!(out, blob);
    model.update(&[0.0, 0.0], 1.0).unwrap();
    model.write_blob(&blob, &mut out).unwrap();
    assert_ne!(out, blob);
}

/// A gate with a run (`gate_run`): isolated outliers are refused however
/// often they come, while a plant that steps far beyond the gate is
/// learned from the run's last row on.
#[test]
fn a_run_beyond_the_gate_opens_it() {
    for spec in [doc_updatable_spec(), as_covariance(&doc_updatable_spec())] {
        let blob = spec.to_bytes().unwrap();
        let mut model = Model::<4, 2, 2>::from_bytes(&blob).unwrap();
        let settings = UpdateSettings {
            gate: 3.0,
            gate_run: 3,
            ..Default::default()
        };
        model.set_update_settings(settings).unwrap();
        let inputs = [[0.0f32, 0.0], [0.5, -0.3], [-0.4, 0.6], [0.2, 0.9]];
        for x in inputs.iter().cycle().take(12) {
            let p = model.predict(x).unwrap();
            // A spike, refused, then an ordinary reading, learned: the run
            // never reaches 3.
            assert_eq!(model.update(x, p.mean + 1e3), Err(Error::Outlier));
            model.update(x, p.mean).unwrap();
        }
        // The plant steps 50 predictive sd up: two rows refused, the third
        // and the rest learned.
        let step = |model: &Model<4, 2, 2>, x: &[f32; 2]| {
            let p = model.predict(x).unwrap();
            p.mean + 50.0 * p.std_dev()
        };
        for (t, x) in inputs.iter().cycle().take(8).enumerate() {
            let target = step(&model, x);
            let seen = model.update(x, target);
            if t < 2 {
                assert_eq!(seen, Err(Error::Outlier), "row {t}");
            } else {
                assert!(seen.is_ok(), "row {t}: {seen:?}");
            }
        }
    }
}

/// With `noise_forgetting`, the noise variance moves with the residuals
/// and stays within its bounds: targets on the mean take it to the floor,
/// far ones to the ceiling (both forms, several seeds), the prediction far
/// from the data is the prior plus the learned noise, and 0 is refused.
/// (How well it follows a plant's noise: sgp-tests' learning tests.)
#[test]
fn the_learned_noise_stays_within_its_bounds() {
    let base = fitted_spec(9, 8, 3, &[], Observation::Fitc);
    for seed in 40..44 {
        let fitted = fitted_spec(
            seed,
            8,
            3,
            &rows_for(&base, 200, seed, 0.02),
            Observation::Fitc,
        );
        for spec in [fitted.clone(), as_covariance(&fitted)] {
            let mut model = Small::from_bytes(&spec.to_bytes().unwrap()).unwrap();
            let fitted_noise = model.noise_variance();
            let fast = UpdateSettings {
                noise_forgetting: 0.5,
                ..Default::default()
            };
            let rows = rows_for(&spec, 100, seed, 0.0);
            for (x, _) in &rows {
                let x = f32s(x);
                let mean = model.predict(&x).unwrap().mean;
                model.update_with(&x, mean, fast).unwrap();
            }
            let floor = sgp_runtime::NOISE_FLOOR * fitted_noise;
            assert!((model.noise_variance() - floor).abs() <= 1e-5 * floor);
            for (x, _) in &rows {
                let x = f32s(x);
                let mean = model.predict(&x).unwrap().mean;
                model.update_with(&x, mean + 1e3, fast).unwrap();
            }
            let prior = model.prior_variance();
            let ceiling = (sgp_runtime::NOISE_CEILING * fitted_noise).max(prior);
            assert!((model.noise_variance() - ceiling).abs() <= 1e-5 * ceiling);
            let far = model.predict(&[1e3, 1e3, 1e3]).unwrap();
            assert!((far.variance - prior - ceiling).abs() <= 1e-5 * far.variance);
            let zero = UpdateSettings {
                noise_forgetting: 0.0,
                ..Default::default()
            };
            assert_eq!(model.set_update_settings(zero), Err(Error::InvalidSetting));
        }
    }
}

/// The covariance form's forgetting power kept with the stored settings
/// (set before a load of another size, which recomputes it) is the one an
/// update with the same settings for that call computes: the same
/// innovations and predictions, bit for bit.
#[test]
fn stored_settings_forget_as_the_same_settings_per_call() {
    let settings = UpdateSettings {
        forgetting: 0.9,
        ..Default::default()
    };
    let smaller = as_covariance(&fitted_spec(3, 4, 3, &[], Observation::Fitc));
    let spec = as_covariance(&fitted_spec(3, 7, 3, &[], Observation::Fitc));
    let blob = spec.to_bytes().unwrap();
    let mut stored = Small::from_bytes(&smaller.to_bytes().unwrap()).unwrap();
    stored.set_update_settings(settings).unwrap();
    stored.load(&blob).unwrap();
    let mut per_call = Small::from_bytes(&blob).unwrap();
    for (x, y) in rows_for(&spec, 30, 14, 0.1) {
        let x = f32s(&x);
        let a = stored.update(&x, y as f32).unwrap();
        let b = per_call.update_with(&x, y as f32, settings).unwrap();
        assert_eq!(a, b);
    }
    for (x, _) in rows_for(&spec, 10, 15, 0.0) {
        let x = f32s(&x);
        assert_eq!(stored.predict(&x).unwrap(), per_call.predict(&x).unwrap());
    }
}
