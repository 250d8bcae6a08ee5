//! The benchmark data sets, shared by the suite and the GPLasso comparison:
//! generated shapes with known truth and the public CSVs that
//! `bench/fetch-public.sh` writes to `bench/data/` (skipped when absent).

// Each example compiles this module on its own and uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use sgp_trainer::data::Dataset;
use sgp_trainer::synth::{self, Shape};
use sgp_trainer::{Error, Result};

/// The generated data sets: shape and total rows (before the split).
pub const GENERATED: [(Shape, usize); 7] = [
    (Shape::Chirp, 600),
    (Shape::Heteroscedastic, 600),
    (Shape::Periodic, 500),
    (Shape::OneOfEight, 800),
    (Shape::Varying2d, 800),
    (Shape::Ridge, 800),
    (Shape::FewDirections, 1000),
];

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
