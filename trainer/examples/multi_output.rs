//! Several outputs on one basis against one model per output, on
//! generated dynamical systems whose truth is known
//! ([`sgp_trainer::synth::dynamics`]): a cart-pole's one-step velocity changes (6
//! inputs, 2 outputs), a pendulum's one-step state change (3 inputs, 2
//! outputs) and a 3-link arm's end-effector position (4 inputs, 3
//! outputs). For each output: test NLPD and RMSE of its own single-output
//! fit, of the shared fit with one variance factor per output and of the
//! shared fit with one factor for all (the noise-to-signal ratio tied) at
//! the same M (f64 trainer predictions, raw units), which of the two
//! `sgp fit` keeps, and the blob bytes of the separate models together
//! against each shared blob (each exported as `sgp fit` exports it, cure
//! included). A measurement, not a test:
//! `cargo run --release -p sgp-trainer --example multi_output [-- M [MODEL [SEEDS]]]`
//! with MODEL one of spgp (default), vsgp, spgp-dr, exact, and SEEDS the
//! data seeds, comma-separated (default 17): one row per seed, system and
//! output, then each system's and output's mean and worst difference over
//! the seeds. A fourth argument picks the systems, comma-separated, each
//! optionally with its input box shrunk to a fraction of its width
//! (`arm@0.5`; default every system, whole box). The `floor` column is the
//! single fit's test RMSE over the noise standard deviation (1: the noise
//! floor). Last, the exact GP of each output alone on the same splits (all
//! the training rows, a seeded 1,000 of more); `--exact-only` prints it
//! alone.

use sgp_trainer::evaluate::metrics::{mean_nlpd, rmse};
use sgp_trainer::export::export;
use sgp_trainer::fit::sparse::TIE_TOLERANCE;
use sgp_trainer::fit::{
    fit, ExactParams, Fit, FitParams, ProjectedParams, SparseParams, VarianceSharing,
};
use sgp_trainer::model::TrainedModel;
use sgp_trainer::synth::dynamics::{noise_sd, System};

#[path = "bench_data/mod.rs"]
mod bench_data;

const TRAIN: usize = 1500;
const TEST: usize = 1000;

fn params(model: &str, m: usize) -> FitParams {
    let sparse = SparseParams {
        m,
        ..SparseParams::default()
    };
    match model {
        "vsgp" => FitParams::Vsgp(sparse),
        "spgp-dr" => FitParams::SpgpDr(ProjectedParams { sparse, dim: 3 }),
        "exact" => FitParams::Exact(ExactParams {
            max_points: m,
            ..ExactParams::default()
        }),
        _ => FitParams::Spgp(sparse),
    }
}

fn scores(
    model: &TrainedModel,
    x: &nalgebra::DMatrix<f64>,
    y: &[f64],
) -> sgp_trainer::Result<(f64, f64)> {
    let p = model.predict_raw(x)?;
    Ok((
        mean_nlpd(p.mean.as_slice(), p.var.as_slice(), y),
        rmse(p.mean.as_slice(), y),
    ))
}

/// The shared fit as `sharing` asks, and its blob's bytes.
fn shared_fit(
    train: &sgp_trainer::data::multi_target::MultiTargetData,
    params: &FitParams,
    sharing: VarianceSharing,
) -> sgp_trainer::Result<(Fit, usize)> {
    let mut params = params.clone();
    if let Some(sparse) = params.sparse_mut() {
        sparse.sharing = sharing;
    }
    let mut fitted = fit(train, &params, &mut |_| {})?;
    let bytes = export(&mut fitted, &train.first().raw_x(), true)?
        .blob
        .len();
    Ok((fitted, bytes))
}

/// The system's name, with its box fraction when shrunk.
fn system_label(system: System, fraction: f64) -> String {
    if fraction == 1.0 {
        system.name().to_string()
    } else {
        format!("{}@{fraction}", system.name())
    }
}

fn main() -> sgp_trainer::Result<()> {
    let args: Vec<String> = std::env::args().filter(|a| a != "--exact-only").collect();
    let m: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(32);
    let model = args.get(2).map_or("spgp", String::as_str);
    let seeds: Vec<u64> = args.get(3).map_or(vec![17], |list| {
        list.split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect()
    });
    let systems: Vec<(System, f64)> = match args.get(4) {
        Some(list) => list
            .split(',')
            .filter_map(|item| {
                let (name, fraction) = item.split_once('@').unwrap_or((item, "1"));
                let system = System::ALL
                    .iter()
                    .copied()
                    .find(|s| s.name() == name.trim())?;
                Some((system, fraction.parse().ok()?))
            })
            .collect(),
        None => System::ALL.iter().copied().map(|s| (s, 1.0)).collect(),
    };
    let params = params(model, m);
    println!("model {model}, M = {m}, {TRAIN} training and {TEST} test rows per system\n");
    println!(
        "| seed | system | output | single NLPD | own factors NLPD | one factor NLPD | one \
         factor - single | single RMSE | own factors RMSE | one factor RMSE | floor |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut sizes = Vec::new();
    let mut diffs: Vec<(String, Vec<f64>, Vec<f64>)> = Vec::new();
    let mut exact = Vec::new();
    for (system, fraction, seed) in systems
        .iter()
        .flat_map(|&(system, f)| seeds.iter().map(move |&seed| (system, f, seed)))
    {
        let data = system.data_in(TRAIN + TEST, seed, fraction)?;
        let floors = noise_sd(&system.generate_in(TRAIN + TEST, seed, fraction).2);
        let (train, test) = data.split(TEST as f64 / (TRAIN + TEST) as f64, 5)?;
        let label = system_label(system, fraction);
        bench_data::exact_per_output(&label, seed, &train, &test, &mut exact)?;
        if bench_data::exact_only() {
            continue;
        }
        let (own, own_bytes) = shared_fit(&train, &params, VarianceSharing::Separate)?;
        let (tied, tied_bytes) = shared_fit(&train, &params, VarianceSharing::Tied)?;
        let x = test.first().raw_x();
        let mut single_bytes = 0;
        for ((((out, test_out), member), one), floor) in train
            .outputs()
            .iter()
            .zip(test.outputs())
            .zip(&own.set.members)
            .zip(&tied.set.members)
            .zip(&floors)
        {
            let mut single = fit(out, &params, &mut |_| {})?;
            single_bytes += export(&mut single, &out.raw_x(), true)?.blob.len();
            let y = test_out.raw_y();
            let (ns, rs) = scores(&single.set.members[0], &x, y.as_slice())?;
            let (nm, rm) = scores(member, &x, y.as_slice())?;
            let (nt, rt) = scores(one, &x, y.as_slice())?;
            println!(
                "| {seed} | {} | {} | {ns:.3} | {nm:.3} | {nt:.3} | {:+.3} | {rs:.4} | {rm:.4} | \
                 {rt:.4} | {:.2} |",
                system_label(system, fraction),
                out.target_name,
                nt - ns,
                rs / floor
            );
            let key = format!("{} | {}", system_label(system, fraction), out.target_name);
            match diffs.iter_mut().find(|(k, _, _)| *k == key) {
                Some((_, own, one)) => {
                    own.push(nm - ns);
                    one.push(nt - ns);
                }
                None => diffs.push((key, vec![nm - ns], vec![nt - ns])),
            }
        }
        let kept = match &tied.report.variance {
            Some(r) => match r.tied_nlml {
                Some(t) => {
                    let per_row = (t - r.untied_nlml) / r.rows as f64;
                    let choice = if per_row <= TIE_TOLERANCE {
                        "one"
                    } else {
                        "own"
                    };
                    format!("{per_row:+.4} ({choice})")
                }
                None => "tied fit failed (own)".into(),
            },
            None => "-".into(),
        };
        sizes.push((
            system_label(system, fraction),
            seed,
            single_bytes,
            own_bytes,
            tied_bytes,
            kept,
        ));
    }
    bench_data::print_exact_per_output(&exact);
    if bench_data::exact_only() {
        return Ok(());
    }
    println!("\nshared - single test NLPD over seeds {seeds:?} (own factors; one factor)\n");
    println!("| system | output | own mean | own worst | one mean | one worst |");
    println!("|---|---|---|---|---|---|");
    for (key, own, one) in &diffs {
        let mean = |d: &[f64]| d.iter().sum::<f64>() / d.len() as f64;
        let worst = |d: &[f64]| d.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        println!(
            "| {key} | {:+.3} | {:+.3} | {:+.3} | {:+.3} |",
            mean(own),
            worst(own),
            mean(one),
            worst(one)
        );
    }
    println!(
        "\n| seed | system | separate blobs (bytes) | own factors (bytes, ratio) | one factor \
         (bytes, ratio) | tied - untied objective per row and output (`sgp fit` keeps) |"
    );
    println!("|---|---|---|---|---|---|");
    for (system, seed, single, own, tied, kept) in sizes {
        println!(
            "| {seed} | {system} | {single} | {own} ({:.2}) | {tied} ({:.2}) | {kept} |",
            own as f64 / single as f64,
            tied as f64 / single as f64
        );
    }
    Ok(())
}
