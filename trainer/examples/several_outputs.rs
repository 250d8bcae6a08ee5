//! `sgp fit --target a,b,c` before and after the choice between one basis
//! for every output and one model per output
//! ([`sgp_trainer::choose::outputs`]), against each output's own fit, at
//! default settings: per seed, set and output the test NLPD of the output's
//! own fit (`sgp fit --target ex`), of the shared fit (before: what
//! `sgp fit --target ex,ey,ez` exported until the choice) and of what the
//! fit keeps now (after), with the blob bytes against the separate blobs
//! and against the separate blobs of the shared fit's own family and
//! objective (the measure of the 0.6 blob bar); every model exported
//! (checked, cured where needed) before it predicts, as `sgp fit` does.
//! Where the shared fit is kept, after is before (the same fit). A
//! measurement, not a test:
//! `cargo run --release -p sgp-trainer --example several_outputs [-- M [SEEDS [SETS]]]`
//! (default `32 0,1,2 arm,doubled`; a set is a [`System`] name). Last, the
//! exact GP of each output alone on the same splits (all the training
//! rows, a seeded 1,000 of more); `--exact-only` prints it alone.

use sgp_trainer::choose::outputs::fit_outputs;
use sgp_trainer::data::Dataset;
use sgp_trainer::evaluate::metrics::mean_nlpd;
use sgp_trainer::fit::Fit;
use sgp_trainer::model::TrainedModel;
use sgp_trainer::options::{ModelChoice, Options};
use sgp_trainer::synth::dynamics::System;

#[path = "bench_data/mod.rs"]
mod bench_data;

const TRAIN: usize = 1500;
const TEST: usize = 1000;

fn nlpd(model: &TrainedModel, test: &Dataset) -> sgp_trainer::Result<f64> {
    let p = model.predict_raw(&test.raw_x())?;
    Ok(mean_nlpd(
        p.mean.as_slice(),
        p.var.as_slice(),
        test.raw_y().as_slice(),
    ))
}

/// The fit exported as `sgp fit` exports it: its blob's bytes.
fn bytes(
    options: &Options,
    fit: &mut Fit,
    x: &nalgebra::DMatrix<f64>,
) -> sgp_trainer::Result<usize> {
    Ok(options.export(fit, x, true)?.blob.len())
}

fn main() -> sgp_trainer::Result<()> {
    let args: Vec<String> = std::env::args().filter(|a| a != "--exact-only").collect();
    let m: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(32);
    let list = |i: usize, default: &str| -> Vec<String> {
        args.get(i)
            .map_or(default, String::as_str)
            .split(',')
            .map(|s| s.trim().to_string())
            .collect()
    };
    let seeds: Vec<u64> = list(2, "0,1,2")
        .iter()
        .filter_map(|s| s.parse().ok())
        .collect();
    let sets: Vec<System> = list(3, "arm,doubled")
        .iter()
        .filter_map(|n| System::ALL.iter().copied().find(|s| s.name() == n))
        .collect();
    let options = Options {
        m: Some(m),
        ..Options::default()
    };
    println!("M = {m}, {TRAIN} training and {TEST} test rows, default settings otherwise\n");
    println!(
        "| seed | set | output | own fit NLPD | shared (before) | kept (after) | before - own | \
         after - own | kept |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut sizes = Vec::new();
    let mut worst: Vec<(String, f64, f64)> = Vec::new();
    let mut exact = Vec::new();
    for &system in &sets {
        for &seed in &seeds {
            let data = system.data(TRAIN + TEST, seed)?;
            let (train, test) = data.split(TEST as f64 / (TRAIN + TEST) as f64, 5)?;
            bench_data::exact_per_output(system.name(), seed, &train, &test, &mut exact)?;
            if bench_data::exact_only() {
                continue;
            }
            let x = train.first().raw_x();
            let request = options.request(&train)?;
            let after = fit_outputs(&train, &request, &mut |_| {})?;
            let basis = after.basis.as_ref().expect("several outputs are weighed");
            let separate = basis.separate();
            let mut own_fits = Vec::new();
            for out in train.outputs() {
                let single = options.request(out)?;
                own_fits.push(sgp_trainer::choose::fit(out, &single, &mut |_| {})?);
            }
            let mut before = sgp_trainer::choose::fit(&train, &request, &mut |_| {})?;
            let mut after_fits = after.fits;
            let mut own_bytes = 0;
            let mut families = Vec::new();
            for fit in &mut own_fits {
                let b = bytes(&options, fit, &x)?;
                own_bytes += b;
                families.push(format!("{} {b} B", fit.report.method.name()));
            }
            let variance = before
                .report
                .variance
                .as_ref()
                .map_or("-".into(), |v| v.describe());
            eprintln!(
                "seed {seed} {}: own fits {}; shared {} ({variance}); {}",
                system.name(),
                families.join(", "),
                before.report.method.name(),
                basis.reason
            );
            // The separate blobs of the shared fit's family and objective
            // (what the choice weighs, and what sharing saves bytes on).
            let same = Options {
                model: Some(ModelChoice::Family(before.report.method)),
                objective: before.report.approximation,
                ..options.clone()
            };
            let mut same_bytes = 0;
            for out in train.outputs() {
                let mut fit = sgp_trainer::choose::fit(out, &same.request(out)?, &mut |_| {})?;
                same_bytes += bytes(&same, &mut fit, &x)?;
            }
            let before_bytes = bytes(&options, &mut before, &x)?;
            let mut after_bytes = 0;
            for fit in &mut after_fits {
                after_bytes += bytes(&options, fit, &x)?;
            }
            for (p, test_out) in test.outputs().iter().enumerate() {
                let own = nlpd(&own_fits[p].set.members[0], test_out)?;
                let shared = nlpd(&before.set.members[p], test_out)?;
                let kept = if separate {
                    nlpd(&after_fits[p].set.members[0], test_out)?
                } else {
                    nlpd(&after_fits[0].set.members[p], test_out)?
                };
                println!(
                    "| {seed} | {} | {} | {own:.3} | {shared:.3} | {kept:.3} | {:+.3} | {:+.3} | {} |",
                    system.name(),
                    test_out.target_name,
                    shared - own,
                    kept - own,
                    basis.kept
                );
                let key = format!("{} | {}", system.name(), test_out.target_name);
                match worst.iter_mut().find(|(k, _, _)| *k == key) {
                    Some((_, b, a)) => {
                        *b = b.max(shared - own);
                        *a = a.max(kept - own);
                    }
                    None => worst.push((key, shared - own, kept - own)),
                }
            }
            sizes.push((
                system.name(),
                seed,
                own_bytes,
                same_bytes,
                before_bytes,
                after_bytes,
                families.join(", "),
            ));
        }
    }
    bench_data::print_exact_per_output(&exact);
    if bench_data::exact_only() {
        return Ok(());
    }
    println!("\nworst over seeds {seeds:?}, test NLPD minus the output's own fit's\n");
    println!("| set | output | before | after |");
    println!("|---|---|---|---|");
    for (key, b, a) in &worst {
        println!("| {key} | {b:+.3} | {a:+.3} |");
    }
    println!(
        "\n| seed | set | separate blobs (bytes) | before (bytes, ratio) | after (bytes, ratio) | \
         own fits | same-family separate blobs (bytes) | after / same-family |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (set, seed, own, same, before, after, families) in sizes {
        println!(
            "| {seed} | {set} | {own} | {before} ({:.2}) | {after} ({:.2}) | {families} | {same} | \
             {:.2} |",
            before as f64 / own as f64,
            after as f64 / own as f64,
            after as f64 / same as f64
        );
    }
    Ok(())
}
