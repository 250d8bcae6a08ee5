//! `sgp demo`: prints what `sgp_trainer::demo` computed.

use std::path::Path;

use sgp_trainer::demo::{run_demo, Demo, DemoRow, Experiment};
use sgp_trainer::files::check_outputs;
use sgp_trainer::Result;

use super::{to_json, write_file};

pub(crate) fn demo_command(out: &Path, m: usize, seed: u64, json: bool) -> Result<()> {
    check_outputs(&[("--out", out)], &[])?;
    let demo = run_demo(seed, m)?;
    write_file(out, &demo.blob)?;
    if json {
        println!("{}", to_json(&demo)?);
        return Ok(());
    }
    print_demo(&demo, m);
    println!(
        "the {} blob is written to {} — try `sgp inspect {}`",
        demo.rows.last().map_or("", |r| r.name.as_str()),
        out.display(),
        out.display()
    );
    Ok(())
}

fn print_demo(demo: &Demo, m: usize) {
    let [lo, hi] = demo.data_range;
    println!(
        "demo: {} noisy samples of one draw of a GP on [0, 6] (squared exponential, length \
         scale {}, signal variance {}, noise std {}), {} test points",
        demo.train_rows, demo.lengthscale, demo.signal_variance, demo.noise_std, demo.test_rows
    );
    let figure1: Vec<&DemoRow> = demo
        .rows
        .iter()
        .filter(|r| r.experiment == Experiment::Figure1)
        .collect();
    println!();
    println!(
        "Figure 1 of the SPGP paper: the hyperparameters at their true values, only the {m} \
         pseudo-inputs learned, from a start bunched at the left of the data"
    );
    println!(
        "{:<12} {:>7} {:>10} {:>8} {:>8}",
        "model", "fit s", "NLML", "RMSE", "NLPD"
    );
    for r in &figure1 {
        println!(
            "{:<12} {:>7.2} {:>10.3} {:>8.4} {:>8.4}",
            r.name, r.seconds, r.nlml, r.rmse, r.nlpd
        );
    }
    println!();
    println!("pseudo-inputs, data on [{lo:.2}, {hi:.2}]");
    println!("  {:<17} {}", "start (bunched):", positions(&demo.start));
    for r in figure1.iter().filter(|r| !r.pseudo_inputs.is_empty()) {
        println!(
            "  {:<17} {}",
            format!("{}:", r.name),
            positions(&r.pseudo_inputs)
        );
    }
    if let Some((exact, fits)) = figure1.split_first() {
        println!();
        println!("{}", figure1_words(demo, exact.nlpd, fits));
    }
    println!();
    println!("The fits `sgp fit` makes of these data by default (everything learned):");
    println!(
        "{:<16} {:>6} {:>7} {:>10} {:>10} {:>10} {:>12} {:>12} {:>8}",
        "model",
        "M",
        "fit s",
        "NLML",
        "RMSE f64",
        "NLPD f64",
        "RMSE device",
        "NLPD device",
        "blob B"
    );
    for r in demo
        .rows
        .iter()
        .filter(|r| r.experiment == Experiment::Default)
    {
        let Some(d) = &r.device else { continue };
        println!(
            "{:<16} {:>6} {:>7.2} {:>10.3} {:>10.4} {:>10.4} {:>12.4} {:>12.4} {:>8}",
            r.name, r.m, r.seconds, r.nlml, r.rmse, r.nlpd, d.rmse, d.nlpd, d.blob_bytes
        );
    }
}

/// The widest stretch of data without a pseudo-input, in true length
/// scales, that a fit may leave and still be said to cover the data: the
/// prior correlation across half of it is still above 0.6.
const COVERED_LENGTH_SCALES: f64 = 2.0;

/// Positions as printed (two decimals).
fn positions(z: &[f64]) -> String {
    z.iter()
        .map(|p| format!("{p:.2}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Figure 1's closing sentences, one per sparse fit, from the numbers
/// printed: how many of its pseudo-inputs lie in the demo's data range,
/// the widest stretch of the data without one in true length scales (a
/// fit whose stretch exceeds [`COVERED_LENGTH_SCALES`] has left part of
/// the function unmodelled: it is stuck), and whether its test NLPD is
/// within [`Demo::match_nlpd`] of the exact GP's `exact_nlpd`.
fn figure1_words(demo: &Demo, exact_nlpd: f64, fits: &[&DemoRow]) -> String {
    let [lo, hi] = demo.data_range;
    fits.iter()
        .map(|fit| {
            let z = &fit.pseudo_inputs;
            let inside: Vec<f64> = z.iter().map(|p| p.clamp(lo, hi)).collect();
            let widest = std::iter::once(lo)
                .chain(inside.iter().copied())
                .zip(inside.iter().copied().chain(std::iter::once(hi)))
                .map(|(a, b)| b - a)
                .fold(0.0, f64::max);
            let scales = widest / demo.lengthscale;
            let within = z.iter().filter(|p| (lo..=hi).contains(*p)).count();
            let placed = if scales <= COVERED_LENGTH_SCALES {
                format!(
                    "spreads {within} of its {} pseudo-inputs over the data (widest stretch \
                     without one: {scales:.1} length scales)",
                    z.len()
                )
            } else {
                format!(
                    "its pseudo-inputs are stuck: the widest stretch of the data without \
                     one is {scales:.1} length scales"
                )
            };
            let verdict = if fit.nlpd <= exact_nlpd + demo.match_nlpd {
                "matches the exact GP"
            } else {
                "falls short of the exact GP"
            };
            format!(
                "{}: {placed}; {verdict} (test NLPD {:.4} vs {exact_nlpd:.4}).",
                fit.name, fit.nlpd
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, z: &[f64], nlpd: f64) -> DemoRow {
        DemoRow {
            experiment: Experiment::Figure1,
            name: name.into(),
            nlml: 0.0,
            rmse: 0.3,
            nlpd,
            m: z.len(),
            pseudo_inputs: z.to_vec(),
            seconds: 0.0,
            device: None,
        }
    }

    #[test]
    fn spread_and_stuck_fits_are_told_apart_by_their_widest_gap() {
        let spread = row(
            "FITC",
            &[0.2, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.6],
            0.3,
        );
        let stuck = row("PLV", &[0.1, 0.3, 0.6, 1.0, 1.6], 0.9);
        let demo = Demo {
            seed: 1,
            train_rows: 200,
            test_rows: 400,
            lengthscale: 0.8,
            signal_variance: 0.7,
            noise_std: 0.25,
            match_nlpd: 0.05,
            data_range: [0.0, 6.0],
            start: Vec::new(),
            rows: Vec::new(),
            blob: Vec::new(),
        };
        let words = figure1_words(&demo, 0.28, &[&spread, &stuck]);
        let lines: Vec<&str> = words.lines().collect();
        assert_eq!(lines.len(), 2, "{words}");
        assert!(
            lines[0].starts_with("FITC: spreads 11 of its 11"),
            "{words}"
        );
        assert!(lines[0].contains("matches the exact GP"), "{words}");
        assert!(
            lines[1].contains("PLV: its pseudo-inputs are stuck"),
            "{words}"
        );
        assert!(lines[1].contains("is 5.5 length scales"), "{words}");
        assert!(lines[1].contains("falls short"), "{words}");
    }
}
