//! A Gaussian state pushed through a learned model 20 steps, by moment
//! matching (`sgp_runtime::Uncertain`: each step's output mean and
//! covariance are the next state's) and by Monte Carlo through the same
//! runtime model (particles through `predict_all`'s mean plus a draw of
//! its predictive noise). The model: a two-output SPGP (one basis,
//! M = 32) of a damped pendulum's next state (angle, angular velocity)
//! from its state, fitted on noisy transitions from random states and
//! exported as `sgp fit` exports it. Prints per step both means and sds
//! and their relative differences; writes the angle's mean +/- 2 sd bands
//! as an SVG. A demonstration, not a test:
//! `cargo run --release -p sgp-trainer --example propagate [-- PLOT.svg]`
//! (default `propagate.svg`).

use std::fmt::Write as _;
use std::path::PathBuf;

use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use sgp_runtime::{Model, Uncertain};
use sgp_trainer::data::multi_target::MultiTargetData;
use sgp_trainer::export::export;
use sgp_trainer::files::write_atomic;
use sgp_trainer::fit::{fit, FitParams, SparseParams};
use sgp_trainer::synth::dynamics::System;

/// Transitions in the training set.
const ROWS: usize = 3000;
/// The state box the transitions start in: angle (rad), angular velocity
/// (rad/s); wide enough to hold every state the propagated one reaches.
const BOX: [(f64, f64); 2] = [(-2.2, 2.2), (-5.5, 5.5)];
/// Measurement noise sd of the next state, per coordinate.
const NOISE: [f64; 2] = [0.01, 0.02];
/// The initial state: mean and covariance (row-major).
const MEAN0: [f32; 2] = [1.5, 0.0];
const COV0: [f32; 4] = [0.0225, 0.006, 0.006, 0.04];
const STEPS: usize = 20;
const PARTICLES: usize = 20_000;

/// The true next state: the library's pendulum (100 ms, no torque).
fn step(theta: f64, omega: f64) -> [f64; 2] {
    let d = System::Pendulum.truth(&[theta, omega, 0.0]);
    [theta + d[0], omega + d[1]]
}

fn data(rng: &mut ChaCha8Rng) -> sgp_trainer::Result<MultiTargetData> {
    let mut x = DMatrix::zeros(ROWS, 2);
    let mut y = DMatrix::zeros(ROWS, 2);
    for i in 0..ROWS {
        let s: Vec<f64> = BOX
            .iter()
            .map(|&(lo, hi)| rng.random_range(lo..hi))
            .collect();
        let next = step(s[0], s[1]);
        for c in 0..2 {
            x[(i, c)] = s[c];
            let z: f64 = rng.sample(StandardNormal);
            y[(i, c)] = next[c] + NOISE[c] * z;
        }
    }
    let names = |a: &str, b: &str| vec![a.to_string(), b.to_string()];
    MultiTargetData::from_raw(x, y, names("theta", "omega"), &names("theta1", "omega1"))
}

/// Mean, covariance (row-major) and per-coordinate skewness of particles.
fn moments(particles: &[[f32; 2]]) -> ([f64; 2], [f64; 4], [f64; 2]) {
    let n = particles.len() as f64;
    let mut mean = [0.0; 2];
    for p in particles {
        for c in 0..2 {
            mean[c] += f64::from(p[c]) / n;
        }
    }
    let mut cov = [0.0; 4];
    let mut third = [0.0; 2];
    for p in particles {
        let d = [f64::from(p[0]) - mean[0], f64::from(p[1]) - mean[1]];
        for a in 0..2 {
            third[a] += d[a].powi(3) / n;
            for b in 0..2 {
                cov[2 * a + b] += d[a] * d[b] / (n - 1.0);
            }
        }
    }
    let skew = [0, 1].map(|a| third[a] / (cov[3 * a] * cov[3 * a].sqrt()));
    (mean, cov, skew)
}

/// One row per step: mean and sd of angle and angular velocity, MC then
/// moment-matched, and the MC skewness.
type Row = ([f64; 2], [f64; 2], [f64; 2], [f64; 2], [f64; 2]);

fn svg(rows: &[Row]) -> String {
    let (w, h, pad) = (640.0, 360.0, 40.0);
    let band = |r: &Row, mc: bool, k: f64| {
        if mc {
            r.0[0] + k * r.1[0]
        } else {
            r.2[0] + k * r.3[0]
        }
    };
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for r in rows {
        for mc in [true, false] {
            lo = lo.min(band(r, mc, -2.0));
            hi = hi.max(band(r, mc, 2.0));
        }
    }
    let px = |t: usize| pad + (w - 2.0 * pad) * t as f64 / (rows.len() - 1) as f64;
    let py = |v: f64| h - pad - (h - 2.0 * pad) * (v - lo) / (hi - lo);
    let line = |mc: bool, k: f64| -> String {
        rows.iter()
            .enumerate()
            .map(|(t, r)| format!("{:.1},{:.1}", px(t), py(band(r, mc, k))))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    // The Monte Carlo band filled: upper edge forward, lower edge back.
    let upper = line(true, 2.0);
    let mut back: Vec<String> = rows
        .iter()
        .enumerate()
        .map(|(t, r)| format!("{:.1},{:.1}", px(t), py(band(r, true, -2.0))))
        .collect();
    back.reverse();
    let _ = writeln!(
        s,
        r##"<polygon points="{upper} {}" fill="#9ecae1" fill-opacity="0.6" stroke="none"/>"##,
        back.join(" ")
    );
    let _ = writeln!(
        s,
        r##"<polyline points="{}" fill="none" stroke="#08519c" stroke-width="2"/>"##,
        line(true, 0.0)
    );
    for k in [-2.0, 0.0, 2.0] {
        let _ = writeln!(
            s,
            r##"<polyline points="{}" fill="none" stroke="#d94801" stroke-width="1.5" stroke-dasharray="5,3"/>"##,
            line(false, k)
        );
    }
    let axis = h - pad;
    let _ = writeln!(
        s,
        r#"<line x1="{pad}" y1="{axis}" x2="{}" y2="{axis}" stroke="black"/>"#,
        w - pad
    );
    let _ = writeln!(
        s,
        r#"<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{axis}" stroke="black"/>"#
    );
    for t in (0..rows.len()).step_by(5) {
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{t}</text>"#,
            px(t),
            axis + 16.0
        );
    }
    for v in [lo, (lo + hi) / 2.0, hi] {
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{v:.2}</text>"#,
            pad - 4.0,
            py(v) + 4.0
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="20">angle (rad) +/- 2 sd by step: Monte Carlo (blue), moment matching (orange dashes)</text>"##,
        pad
    );
    s.push_str("</svg>\n");
    s
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "propagate.svg".into()),
    );
    let mut rng = ChaCha8Rng::seed_from_u64(53);
    let train = data(&mut rng)?;
    let params = FitParams::Spgp(SparseParams {
        m: 32,
        ..SparseParams::default()
    });
    let mut fitted = fit(&train, &params, &mut |_| {})?;
    let blob = export(&mut fitted, &train.first().raw_x(), false)?.blob;
    let model = Model::<32, 2, 2, 2>::from_bytes(&blob)?;
    let uncertain: Uncertain<32, 2, 2> = model.uncertain()?;
    println!(
        "two-output SPGP, M = 32, {ROWS} transitions, blob {} bytes; {PARTICLES} particles\n",
        blob.len()
    );

    // Cholesky factor of the 2 x 2 initial covariance.
    let l00 = COV0[0].sqrt();
    let l10 = COV0[2] / l00;
    let l11 = (COV0[3] - l10 * l10).sqrt();
    let mut particles: Vec<[f32; 2]> = (0..PARTICLES)
        .map(|_| {
            let (z0, z1): (f32, f32) = (rng.sample(StandardNormal), rng.sample(StandardNormal));
            [MEAN0[0] + l00 * z0, MEAN0[1] + l10 * z0 + l11 * z1]
        })
        .collect();
    let (mut mean, mut cov) = (MEAN0, COV0);
    let sd = |c: &[f32; 4], i: usize| f64::from(c[3 * i]).sqrt();
    let mut rows: Vec<Row> = Vec::new();
    for t in 0..=STEPS {
        if t > 0 {
            let y = uncertain.predict(&mean, &cov)?;
            mean = y.mean;
            cov = [
                y.covariance[0][0],
                y.covariance[0][1],
                y.covariance[1][0],
                y.covariance[1][1],
            ];
            for p in particles.iter_mut() {
                let all = model.predict_all(p)?;
                for (c, o) in all.iter().enumerate() {
                    let z: f32 = rng.sample(StandardNormal);
                    p[c] = o.mean + o.variance.sqrt() * z;
                }
            }
        }
        let (m, c, skew) = moments(&particles);
        rows.push((
            m,
            [c[0].sqrt(), c[3].sqrt()],
            [f64::from(mean[0]), f64::from(mean[1])],
            [sd(&cov, 0), sd(&cov, 1)],
            skew,
        ));
    }

    println!(
        "| step | angle MC mean | MM mean | MC sd | MM sd | mean diff | sd diff | MC skew | \
         velocity MC mean | MM mean | MC sd | MM sd | mean diff | sd diff | MC skew |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (t, (mc, mc_sd, mm, mm_sd, skew)) in rows.iter().enumerate() {
        let mut line = format!("| {t} |");
        for c in 0..2 {
            let _ = write!(
                line,
                " {:.4} | {:.4} | {:.4} | {:.4} | {:+.1}% | {:+.1}% | {:+.2} |",
                mc[c],
                mm[c],
                mc_sd[c],
                mm_sd[c],
                100.0 * (mm[c] - mc[c]) / mc_sd[c],
                100.0 * (mm_sd[c] / mc_sd[c] - 1.0),
                skew[c]
            );
        }
        println!("{line}");
    }
    println!(
        "\nMC: Monte Carlo, MM: moment matching; mean diff = (MM mean - MC mean) / MC sd; \
         sd diff = MM sd / MC sd - 1; MC skew: the particles' skewness (0 for a Gaussian)"
    );
    write_atomic(&out, svg(&rows).as_bytes())?;
    println!("plot: {}", out.display());
    Ok(())
}
