//! Issue 52 item 0, a host prototype of the updatable form the device
//! would hold instead of today's: a U-D factorisation of the whitened
//! posterior covariance itself, `S = U diag(D) U^T` (`U` unit upper
//! triangular, `D >= 0`), in f32 with the device's order of operations.
//! The predicted variance `prior - |z|^2 + sum D_i f_i^2` (`f = U^T z`)
//! adds non-negative terms, and Bierman's measurement update keeps `D >= 0`
//! by construction, so `S >= 0` holds whatever f32 rounds.
//!
//! On the six cases of `learning.rs`'s `the_defaults_...` test (each fit
//! cured as the export cures it): the export check (f32 form against the
//! fit's f64 predictions) and 20,000 updates against the f64 batch
//! posterior, same tolerance (5% of the sd, 5% of the variance); the same
//! algorithm in f64 beside it, and the export check with `z` solved in
//! f64, to tell the form's rounding from the solve's. Kernel values are
//! the trainer's, rounded to f32. Run with `--ignored --nocapture`
//! (release); the figures are in docs/src/learning.md.

use nalgebra::{DMatrix, DVector};
use sgp_trainer::fit::{fit, FitParams, SparseParams};
use sgp_trainer::model::inference::{Approximation, RuntimeForm};
use sgp_trainer::model::updatable::conditioned;
use sgp_trainer::model::TrainedModel;
use sgp_trainer::tools::drift::Shift;

/// `S = B^T B` with `B = L2^-1 L1`: `z^T S z = |L2^-1 k|^2`.
fn covariance(form: &RuntimeForm) -> DMatrix<f64> {
    let l2 = form.l2.as_ref().unwrap();
    let b = l2.clone().solve_lower_triangular(&form.l1).unwrap();
    let s = b.tr_mul(&b);
    (&s + s.transpose()) * 0.5
}

/// `S = U diag(D) U^T`, `U` unit upper, last column first, in f64; a
/// pivot rounding below zero is a direction `S` holds none of.
fn u_d(s: &DMatrix<f64>) -> (DMatrix<f64>, DVector<f64>) {
    let m = s.nrows();
    let mut u = DMatrix::<f64>::identity(m, m);
    let mut d = DVector::<f64>::zeros(m);
    for j in (0..m).rev() {
        let dj = s[(j, j)] - (j + 1..m).map(|k| u[(j, k)].powi(2) * d[k]).sum::<f64>();
        d[j] = dj.max(0.0);
        for i in 0..j {
            u[(i, j)] = if d[j] > 0.0 {
                (s[(i, j)]
                    - (j + 1..m)
                        .map(|k| u[(i, k)] * u[(j, k)] * d[k])
                        .sum::<f64>())
                    / d[j]
            } else {
                0.0
            };
        }
    }
    (u, d)
}

macro_rules! form {
    ($module:ident, $float:ty) => {
        mod $module {
            #![allow(dead_code)]
            use super::*;
            type F = $float;
            /// The F form: `L1` (lower, dense), `U` (upper, unit diagonal, dense),
            /// `D`, the whitened mean `a`, prior and noise (standardised units).
            pub struct Form {
                pub m: usize,
                pub l1: Vec<Vec<F>>,
                pub u: Vec<Vec<F>>,
                pub d: Vec<F>,
                pub a: Vec<F>,
                pub prior: F,
                pub noise: F,
                pub fitc: bool,
            }

            impl Form {
                pub fn of(form: &RuntimeForm, fitc: bool) -> Self {
                    let m = form.l1.nrows();
                    let (u, d) = u_d(&covariance(form));
                    let a = form.l1.tr_mul(&form.beta);
                    Form {
                        m,
                        l1: (0..m)
                            .map(|i| (0..m).map(|j| form.l1[(i, j)] as F).collect())
                            .collect(),
                        u: (0..m)
                            .map(|i| (0..m).map(|j| u[(i, j)] as F).collect())
                            .collect(),
                        d: d.iter().map(|&v| v as F).collect(),
                        a: a.iter().map(|&v| v as F).collect(),
                        prior: form.prior as F,
                        noise: form.noise_var as F,
                        fitc,
                    }
                }

                /// `z = L1^-1 k`, `f = U^T z`, `|z|^2`, `z . a`.
                pub fn solve(&self, k: &[F]) -> (Vec<F>, Vec<F>, F, F) {
                    let m = self.m;
                    let mut z = vec![0.0 as F; m];
                    for i in 0..m {
                        let mut s = k[i];
                        for j in 0..i {
                            s -= self.l1[i][j] * z[j];
                        }
                        z[i] = s / self.l1[i][i];
                    }
                    let f: Vec<F> = (0..m)
                        .map(|j| z[j] + (0..j).map(|i| self.u[i][j] * z[i]).sum::<F>())
                        .collect();
                    let n = z.iter().map(|v| v * v).sum();
                    let za = z.iter().zip(&self.a).map(|(z, a)| z * a).sum();
                    (z, f, n, za)
                }

                /// Latent mean and variance (standardised).
                pub fn predict(&self, k: &[F]) -> (F, F) {
                    let (_, f, n, za) = self.solve(k);
                    let zsz: F = f.iter().zip(&self.d).map(|(f, d)| d * f * f).sum();
                    (za, (self.prior - n + zsz).max(0.0))
                }

                /// Forgetting of coordinate `k` alone, an AR(1) step towards
                /// the prior with factor `mu`: `S <- P S P + (1 - mu) e_k e_k^T`,
                /// `P = I - (1 - sqrt(mu)) e_k e_k^T`, so `0 <= S <= I` stays
                /// true; the mean is kept. Over `M` updates, `k` cycling,
                /// exactly `S <- mu S + (1 - mu) I`. `P S P` scales row `k`
                /// of `U` by `sqrt(mu)`, its column by `1 / sqrt(mu)` and `D_k`
                /// by `mu`; the addition is the Agee-Turner rank-one update
                /// by `e_k`, columns `k` down to 0.
                pub fn forget(&mut self, k: usize, mu: F) {
                    let root = mu.sqrt();
                    for j in k + 1..self.m {
                        self.u[k][j] *= root;
                    }
                    for i in 0..k {
                        self.u[i][k] /= root;
                    }
                    self.d[k] *= mu;
                    let mut v = vec![0.0 as F; self.m];
                    v[k] = 1.0;
                    let mut c = 1.0 - mu;
                    for j in (0..=k).rev() {
                        let p = v[j];
                        let d = self.d[j] + c * p * p;
                        let b = c * p / d;
                        c *= self.d[j] / d;
                        self.d[j] = d;
                        for i in 0..j {
                            v[i] -= p * self.u[i][j];
                            self.u[i][j] += b * v[i];
                        }
                    }
                }

                /// Bierman's measurement update with target `y` (standardised).
                pub fn update(&mut self, k: &[F], y: F) {
                    let m = self.m;
                    let (_, f, n, za) = self.solve(k);
                    let residual = self.prior - n;
                    let gamma = if self.fitc && residual > 0.0 {
                        residual + self.noise
                    } else {
                        self.noise
                    };
                    // g = D f; the sweep over columns, first first, accumulating the
                    // unnormalised gain S z in `gain`.
                    let mut gain = vec![0.0 as F; m];
                    let mut alpha = gamma;
                    for j in 0..m {
                        let g = self.d[j] * f[j];
                        let before = alpha;
                        alpha += f[j] * g;
                        let lambda = -f[j] / before;
                        self.d[j] *= before / alpha;
                        for i in 0..j {
                            let uij = self.u[i][j];
                            self.u[i][j] = uij + lambda * gain[i];
                            gain[i] += g * uij;
                        }
                        gain[j] = g;
                    }
                    let step = (y - za) / alpha;
                    for (a, g) in self.a.iter_mut().zip(&gain) {
                        *a += g * step;
                    }
                }
            }
        }
    };
}
form!(single, f32);
form!(double, f64);
use single::Form;

/// `n` rows of `sin(x0) + 0.5 x1^2` (as `learning.rs`'s `bowl`).
fn bowl(n: usize, seed: u64) -> (DMatrix<f64>, DVector<f64>) {
    let mut state = seed;
    let mut uniform = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64 + 1e-17
    };
    let x = DMatrix::from_fn(n, 2, |_, _| 6.0 * uniform() - 3.0);
    let y = DVector::from_fn(n, |i, _| {
        let noise = (-2.0 * uniform().ln()).sqrt() * (std::f64::consts::TAU * uniform()).cos();
        x[(i, 0)].sin() + 0.5 * x[(i, 1)] * x[(i, 1)] + 0.1 * noise
    });
    (x, y)
}

fn column_f32(k: &DMatrix<f64>, c: usize) -> Vec<f32> {
    k.column(c).iter().map(|&v| v as f32).collect()
}

fn single_predict(form: &Form, k: &DMatrix<f64>, i: usize) -> (f64, f64) {
    let (m, v) = form.predict(&column_f32(k, i));
    (f64::from(m), f64::from(v))
}

fn column_f64(k: &DMatrix<f64>, c: usize) -> Vec<f64> {
    k.column(c).iter().copied().collect()
}

/// Worst mean error (in predictive sd) and relative variance error of
/// `form` (f32) against `reference` (f64, noise added to both) at the
/// standardised inputs `z`.
fn worst(
    predict: impl Fn(&DMatrix<f64>, usize) -> (f64, f64),
    reference: &RuntimeForm,
    z: &DMatrix<f64>,
) -> (f64, f64) {
    let want = reference.predict(z).unwrap();
    let k = reference.basis.eval(z);
    let (mut mean, mut var) = (0.0f64, 0.0f64);
    for i in 0..z.nrows() {
        let (m, v) = predict(&k, i);
        let v_want = want.var[i] + reference.noise_var;
        let v = v + reference.noise_var;
        mean = mean.max((m - want.mean[i]).abs() / v_want.sqrt());
        var = var.max((v - v_want).abs() / v_want);
    }
    (mean, var)
}

#[test]
#[ignore = "a measurement: run with --ignored --nocapture"]
fn the_covariance_u_d_form_holds_the_six_cases() {
    const UPDATES: usize = 20_000;
    const D: usize = 4;
    type Plant = fn(usize, u64) -> (DMatrix<f64>, DVector<f64>);
    let ridge1: Plant = |n, seed| sgp_trainer::tools::synth::synthetic(n, 1, seed);
    let drift: Plant = |n, seed| Shift::Gain.rows(n, D, seed > 11, 0.1, seed);
    let cases: [(Plant, usize, usize); 6] = [
        (ridge1, 60, 5),
        (bowl, 1000, 32),
        (ridge1, 300, 8),
        (bowl, 300, 16),
        (drift, 600, 64),
        (bowl, 1000, 128),
    ];
    let mut failures = Vec::new();
    for (plant, rows, m) in cases {
        let (x, y) = plant(rows, 11);
        let d = x.ncols();
        let names = (1..=d).map(|j| format!("x{j}")).collect();
        let data =
            sgp_trainer::data::Dataset::from_raw(x.clone(), y.clone(), names, "y".into()).unwrap();
        let params = FitParams::Spgp(SparseParams {
            m,
            restarts: 1,
            ..SparseParams::default()
        });
        let mut fitted = fit(&data, &params, &mut |_| {}).unwrap();
        // Cured as every export cures (jitter raised until the plain
        // blob passes): the model the updatable blob holds.
        let cure = sgp_trainer::export::export(&mut fitted, &x, false)
            .unwrap()
            .cure;
        println!("cure: {:?}", cure.map(|c| c.to_eps));
        let approximation = fitted.report.approximation.unwrap();
        let model: TrainedModel = fitted.set.members[0].clone();
        let fitc = approximation == Approximation::Fitc;
        let mut form = Form::of(&model.form, fitc);
        let mut exact = double::Form::of(&model.form, fitc);
        let far = DMatrix::from_fn(4, d, |i, j| if (i + j) % 2 == 0 { 9.0 } else { -7.0 });
        let check = DMatrix::from_rows(&x.row_iter().chain(far.row_iter()).collect::<Vec<_>>());
        let check = model.transform.apply_x(&check);
        let (export_mean, export_var) =
            worst(|k, i| single_predict(&form, k, i), &model.form, &check);
        // Diagnosis: z solved in f64 (then rounded), the rest in f32.
        let diag = worst(
            |k, i| {
                let (z64, _, n64, _) = exact.solve(&column_f64(k, i));
                let z: Vec<f32> = z64.iter().map(|&v| v as f32).collect();
                let f: Vec<f32> = (0..form.m)
                    .map(|j| z[j] + (0..j).map(|i| form.u[i][j] * z[i]).sum::<f32>())
                    .collect();
                let zsz: f32 = f.iter().zip(&form.d).map(|(f, d)| d * f * f).sum();
                let za: f32 = z.iter().zip(&form.a).map(|(z, a)| z * a).sum();
                (
                    f64::from(za),
                    (model.form.prior - n64 + f64::from(zsz)).max(0.0),
                )
            },
            &model.form,
            &check,
        );
        println!("  z in f64: {:.1e} sd, {:.1e}", diag.0, diag.1);
        let (new_x, new_y) = plant(UPDATES, 12);
        let new_z = model.transform.apply_x(&new_x);
        let new_t = model.transform.apply_y(&new_y);
        let k = model.form.basis.eval(&new_z);
        for t in 0..UPDATES {
            form.update(&column_f32(&k, t), new_t[t] as f32);
            exact.update(&column_f64(&k, t), new_t[t]);
        }
        let all_x = DMatrix::from_rows(&x.row_iter().chain(new_x.row_iter()).collect::<Vec<_>>());
        let all_y = DVector::from_iterator(all_x.nrows(), y.iter().chain(new_y.iter()).copied());
        let batch = conditioned(
            &model.form,
            &model.transform.apply_x(&all_x),
            &model.transform.apply_y(&all_y),
            approximation,
        )
        .unwrap();
        let (test_x, _) = plant(300, 13);
        let test_x =
            DMatrix::from_rows(&test_x.row_iter().chain(far.row_iter()).collect::<Vec<_>>());
        let test_z = model.transform.apply_x(&test_x);
        let (mean, var) = worst(|k, i| single_predict(&form, k, i), &batch, &test_z);
        let (mean64, var64) = worst(|k, i| exact.predict(&column_f64(k, i)), &batch, &test_z);
        let least = form.d.iter().copied().fold(f32::INFINITY, f32::min);
        println!(
            "M = {m}, {rows} rows ({approximation:?}): export mean {export_mean:.1e} sd, variance \
             {export_var:.1e}; after {UPDATES} updates mean {mean:.1e} sd, variance {var:.1e} \
             (f64: {mean64:.1e}, {var64:.1e}); least D {least:.1e}"
        );
        // Forgetting 0.999 a step (coordinate by coordinate, mu =
        // 0.999^M), from the fitted posterior: finite, and every latent
        // variance in [0, prior]; against the same algorithm in f64.
        let mut forgetful = Form::of(&model.form, fitc);
        let mut forgetful64 = double::Form::of(&model.form, fitc);
        let mu = 0.999f64.powi(m as i32);
        let (mut highest, mut apart) = (0.0f64, (0.0f64, 0.0f64));
        for t in 0..UPDATES {
            forgetful.forget(t % m, mu as f32);
            forgetful64.forget(t % m, mu);
            forgetful.update(&column_f32(&k, t), new_t[t] as f32);
            forgetful64.update(&column_f64(&k, t), new_t[t]);
        }
        let test_k = model.form.basis.eval(&test_z);
        for i in 0..test_z.nrows() {
            let (m32, v32) = single_predict(&forgetful, &test_k, i);
            let (m64, v64) = forgetful64.predict(&column_f64(&test_k, i));
            assert!(m32.is_finite() && v32.is_finite());
            highest = highest.max(v32 / model.form.prior);
            let sd = (v64 + model.form.noise_var).sqrt();
            apart.0 = apart.0.max((m32 - m64).abs() / sd);
            apart.1 = apart
                .1
                .max((v32 - v64).abs() / (v64 + model.form.noise_var));
        }
        println!(
            "  forgetting 0.999: highest variance / prior {highest:.3}, f32 against f64 mean \
             {:.1e} sd, variance {:.1e}",
            apart.0, apart.1
        );
        assert!(highest <= 1.0 + 1e-5, "M = {m}: a variance above the prior");
        if !(apart.0 < 5e-2
            && apart.1 < 5e-2
            && export_mean < 5e-2
            && export_var < 5e-2
            && mean < 5e-2
            && var < 5e-2)
        {
            failures.push(m);
        }
    }
    assert!(failures.is_empty(), "cases failing: M = {failures:?}");
}
