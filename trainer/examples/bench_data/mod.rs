//! The benchmark data sets, shared by the suite and the GPLasso comparison:
//! generated shapes with known truth and the public CSVs that
//! `bench/fetch-public.sh` writes to `bench/data/` (skipped when absent).

// Each example compiles this module on its own and uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use sgp_trainer::data::multi_target::MultiTargetData;
use sgp_trainer::data::Dataset;
use sgp_trainer::model::TrainedModel;
use sgp_trainer::synth::{self, Shape};
use sgp_trainer::{Error, Result};

/// The generated data sets: shape and total rows (before the split).
pub const GENERATED: [(Shape, usize); 7] = synth::SUITE;

/// Seed of the generators and of the train/test split.
pub const SEED: u64 = 0;
/// Fraction of each data set held out for testing.
pub const TEST_FRACTION: f64 = 0.3;

/// One data set of the suite.
pub struct Bench {
    pub name: String,
    pub data: Dataset,
    /// The generating shape, for error against the truth.
    pub shape: Option<Shape>,
}

/// Where `bench/fetch-public.sh` writes its CSVs.
fn public_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/data")
}

/// The public CSVs present, sorted by name.
fn public_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(public_dir())
        .map(|dir| {
            dir.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "csv"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Every data set name: generated first, then the public CSVs.
pub fn dataset_names() -> Vec<String> {
    GENERATED
        .iter()
        .map(|(shape, _)| shape.name().to_owned())
        .chain(public_files().iter().map(|p| stem(p)))
        .collect()
}

pub fn load(name: &str) -> Result<Bench> {
    if let Some(&(shape, rows)) = GENERATED.iter().find(|(s, _)| s.name() == name) {
        return Ok(Bench {
            name: name.to_owned(),
            data: synth::dataset(shape, rows, SEED)?,
            shape: Some(shape),
        });
    }
    let path = public_files()
        .into_iter()
        .find(|p| stem(p) == name)
        .ok_or_else(|| Error::BadInput(format!("no data set '{name}'")))?;
    Ok(Bench {
        name: name.to_owned(),
        data: Dataset::from_csv(&path, None)?,
        shape: None,
    })
}

/// One group's summary line for rows of `[baseline NLPD, candidate NLPD,
/// baseline seconds, candidate seconds]`: the means, how often the
/// candidate is better or worse by more than 0.01, and the time ratio.
pub fn paired_summary(group: &str, baseline: &str, candidate: &str, rows: &[[f64; 4]]) {
    let n = rows.len().max(1) as f64;
    let mean = |k: usize| rows.iter().map(|r| r[k]).sum::<f64>() / n;
    let better = rows.iter().filter(|r| r[1] < r[0] - 0.01).count();
    let worse = rows.iter().filter(|r| r[1] > r[0] + 0.01).count();
    let worst = rows
        .iter()
        .map(|r| r[1] - r[0])
        .fold(f64::NEG_INFINITY, f64::max);
    println!(
        "{group}: {} fits; mean NLPD {baseline} {:.4}, {candidate} {:.4}; {candidate} better by > 0.01 \
         on {better}, worse by > 0.01 on {worse} (at most {worst:+.4}); time {candidate} / {baseline} {:.1}x",
        rows.len(),
        mean(0),
        mean(1),
        mean(3) / mean(2).max(1e-9)
    );
}

/// Runs `compare(label, train, test, m)` on every suite set at M = 10 and
/// 30 (the suite's fixed split) and collects its rows.
pub fn over_suite(
    mut compare: impl FnMut(&str, &Dataset, &Dataset, usize) -> Result<[f64; 4]>,
) -> Result<Vec<[f64; 4]>> {
    let mut rows = Vec::new();
    for name in dataset_names() {
        let (train, test) = load(&name)?.data.split(TEST_FRACTION, SEED)?;
        for m in [10, 30] {
            rows.push(compare(&format!("suite {name}"), &train, &test, m)?);
        }
    }
    Ok(rows)
}

/// Test NLPD (raw units) of the exact GP fitted on `train` as `sgp fit
/// --model exact --seed SEED` fits it (all the rows, a seeded random 1,000
/// of more): the data's limit a sparse fit's NLPD is read against.
pub fn exact_nlpd(train: &Dataset, test: &Dataset, seed: u64) -> Result<f64> {
    use sgp_trainer::fit::{fit, ExactParams, FitParams};
    let params = FitParams::Exact(ExactParams {
        seed,
        ..ExactParams::default()
    });
    test_nlpd(&fit(train, &params, &mut |_| {})?.set.members[0], test)
}

/// Test NLPD (raw units) of `model` on `test`.
pub fn test_nlpd(model: &TrainedModel, test: &Dataset) -> Result<f64> {
    let p = model.predict_raw(&test.raw_x())?;
    let e = sgp_trainer::evaluate::figures(
        p.mean.as_slice(),
        p.var.as_slice(),
        test.raw_y().as_slice(),
    );
    Ok(e.nlpd)
}

/// `exact_nlpd` of the split `label`, fitted at its first call and reused
/// after (a split fitted at several M), recorded in `acc` at every call so
/// that a group's mean weighs its fits.
pub fn exact_for(
    label: &str,
    train: &Dataset,
    test: &Dataset,
    seed: u64,
    acc: &mut Vec<(String, f64)>,
) -> Result<f64> {
    let v = match acc.iter().find(|(l, _)| l == label) {
        Some(&(_, v)) => v,
        None => exact_nlpd(train, test, seed)?,
    };
    acc.push((label.to_owned(), v));
    Ok(v)
}

/// One split's row of a paired comparison at `m` inducing points, printed
/// as `| set | M | baseline NLPD | candidate NLPD | candidate - baseline |
/// candidate's choice | baseline s | candidate s | exact GP NLPD |`: the
/// exact GP's test NLPD (`exact_for`), then, unless `--exact-only` (the
/// sparse columns `-`), the baseline's and the candidate's (test NLPD,
/// choice, seconds) that `pair` fits. Returns `[baseline NLPD, candidate
/// NLPD, baseline s, candidate s]` for `paired_summary` (NaN under
/// `--exact-only`).
pub fn paired_row(
    label: &str,
    m: usize,
    (train, test, seed): (&Dataset, &Dataset, u64),
    acc: &mut Vec<(String, f64)>,
    pair: impl FnOnce() -> Result<[(f64, String, f64); 2]>,
) -> Result<[f64; 4]> {
    let reference = exact_for(label, train, test, seed, acc)?;
    if exact_only() {
        println!("| {label} | {m} | - | - | - | - | - | - | {reference:.4} |");
        return Ok([f64::NAN; 4]);
    }
    let [(base, _, base_s), (cand, chosen, cand_s)] = pair()?;
    println!(
        "| {label} | {m} | {base:.4} | {cand:.4} | {:+.4} | {chosen} | {base_s:.2} | {cand_s:.2} | {reference:.4} |",
        cand - base
    );
    Ok([base, cand, base_s, cand_s])
}

/// Whether `--exact-only` is on the command line: print the exact GP's
/// figures alone (the sparse fits' columns are measured by a full run).
pub fn exact_only() -> bool {
    std::env::args().any(|a| a == "--exact-only")
}

/// One group's exact-GP line: the mean test NLPD over `fits` (one entry per
/// fit of the group, so it weighs the splits as the group's means do) with
/// its standard error over the distinct splits.
pub fn exact_summary(group: &str, fits: &[(String, f64)]) {
    let mut splits: Vec<f64> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (label, v) in fits {
        if !seen.contains(&label.as_str()) {
            seen.push(label);
            splits.push(*v);
        }
    }
    let n = fits.len().max(1) as f64;
    let mean = fits.iter().map(|(_, v)| v).sum::<f64>() / n;
    let k = splits.len() as f64;
    let m = splits.iter().sum::<f64>() / k.max(1.0);
    let var = splits.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (k - 1.0).max(1.0);
    println!(
        "{group}: exact GP mean NLPD {mean:.4} over {} fits ({} splits, standard error {:.4})",
        fits.len(),
        splits.len(),
        (var / k.max(1.0)).sqrt()
    );
}

/// The exact GP of every output of one multi-target split (each output
/// fitted alone, as `exact_nlpd`), added to `acc` under `set | output`.
pub fn exact_per_output(
    set: &str,
    seed: u64,
    train: &MultiTargetData,
    test: &MultiTargetData,
    acc: &mut Vec<(String, Vec<f64>)>,
) -> Result<()> {
    for (out, test_out) in train.outputs().iter().zip(test.outputs()) {
        let v = exact_nlpd(out, test_out, seed)?;
        eprintln!("seed {seed} {set} {}: exact GP {v:.4}", out.target_name);
        let key = format!("{set} | {}", out.target_name);
        match acc.iter_mut().find(|(k, _)| *k == key) {
            Some((_, vs)) => vs.push(v),
            None => acc.push((key, vec![v])),
        }
    }
    Ok(())
}

/// The table of `exact_per_output`'s figures: per set and output, the mean
/// test NLPD over the seeds with its standard error, and each seed's.
pub fn print_exact_per_output(acc: &[(String, Vec<f64>)]) {
    println!("\nexact GP, each output alone (all the training rows, a seeded 1,000 of more)\n");
    println!("| set | output | mean (se) | per seed |");
    println!("|---|---|---|---|");
    for (key, vs) in acc {
        let k = vs.len() as f64;
        let mean = vs.iter().sum::<f64>() / k;
        let var = vs.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (k - 1.0).max(1.0);
        let each: Vec<String> = vs.iter().map(|v| format!("{v:.3}")).collect();
        println!(
            "| {key} | {mean:.3} ({:.3}) | {} |",
            (var / k).sqrt(),
            each.join(", ")
        );
    }
}
