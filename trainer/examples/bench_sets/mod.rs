//! What the classification benchmarks share: their arguments and the sets
//! `bench/classify/make_sets.py` wrote.

use std::path::{Path, PathBuf};

use sgp_trainer::{Error, Result};

/// `--only NAME` (repeatable) and `--m M` (default 128).
pub struct Args {
    /// Sets to run (all if empty).
    pub only: Vec<String>,
    /// Number of basis functions.
    pub m: usize,
}

/// Reads the command line.
pub fn args() -> Result<Args> {
    let mut parsed = Args {
        only: Vec::new(),
        m: 128,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--only", Some(name)) => parsed.only.push(name),
            ("--m", Some(v)) => {
                parsed.m = v.parse().map_err(|_| Error::BadInput(format!("--m {v}")))?
            }
            _ => return Err(Error::BadInput(format!("unknown argument {a}"))),
        }
    }
    Ok(parsed)
}

/// The folder `sub` of `bench/classify/data` and the names of the sets in
/// it (`NAME-train.csv`), sorted, those of `only` if it is not empty.
pub fn sets(sub: &str, only: &[String]) -> Result<(PathBuf, Vec<String>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../bench/classify/data")
        .join(sub);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| {
            Error::BadInput(format!(
                "{}: {e} (run python bench/classify/make_sets.py first)",
                dir.display()
            ))
        })?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix("-train.csv").map(str::to_owned)
        })
        .filter(|n| only.is_empty() || only.contains(n))
        .collect();
    names.sort();
    Ok((dir, names))
}
