//! `sgp inspect`: what a blob holds and whether it fits a device.

use std::path::Path;

use sgp_runtime::ModelSpec;
use sgp_trainer::export::artefact::is_container;
use sgp_trainer::export::inspect::{summarise, summarise_container};
use sgp_trainer::files::Input;
use sgp_trainer::{Error, Result};

use super::{read_blob, to_json};

pub(crate) fn inspect_command(model: &Path, json: bool, capacity: Option<&str>) -> Result<()> {
    let (blob, spec) = read_blob(&Input::open(model)?)?;
    let capacity = capacity.map(|c| parse_capacity(c, &spec)).transpose()?;
    if is_container(&blob) {
        return inspect_container(model, &blob, json, capacity);
    }
    let mut summary = summarise(&spec, blob.len(), capacity);
    summary.measure_fixed_point(&blob)?;
    let misfit = summary.misfit();
    print_summary(model, &summary, json, misfit.filter(|_| capacity.is_some()))
}

/// Prints `summary` (as JSON with `json`), then refuses the model with
/// `misfit`, why it does not fit the capacities asked for, if given.
fn print_summary(
    model: &Path,
    summary: &(impl serde::Serialize + std::fmt::Display),
    json: bool,
    misfit: Option<String>,
) -> Result<()> {
    if json {
        println!("{}", to_json(summary)?);
    } else {
        println!("{summary}");
    }
    match misfit {
        Some(why) => Err(Error::DoesNotFit(format!("{}: {why}", model.display()))),
        None => Ok(()),
    }
}

/// `sgp inspect` of a container: each member's description, and the RAM
/// of the `Artefact` that loads them all.
fn inspect_container(
    model: &Path,
    blob: &[u8],
    json: bool,
    capacity: Option<(usize, usize, usize)>,
) -> Result<()> {
    let summary = summarise_container(blob, capacity)?;
    let misfit = summary.misfit();
    print_summary(model, &summary, json, misfit.filter(|_| capacity.is_some()))
}

/// Parses a `--capacity` value: `M` or `M,G,D`. With `M` alone, `G` and
/// `D` are the model's own.
///
/// # Errors
/// [`Error::BadInput`] for anything else.
fn parse_capacity(text: &str, spec: &ModelSpec) -> Result<(usize, usize, usize)> {
    let bad = || {
        Error::BadInput(format!(
            "--capacity '{text}': expected M or M,G,D (positive whole numbers)"
        ))
    };
    let numbers: Vec<usize> = text
        .split(',')
        .map(|part| {
            part.trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(bad)
        })
        .collect::<Result<_>>()?;
    // The blob format holds each size in 16 bits: a larger capacity is
    // never needed, and its RAM would overflow the arithmetic.
    if let Some(&n) = numbers.iter().find(|&&n| n > usize::from(u16::MAX)) {
        return Err(Error::BadInput(format!(
            "--capacity '{text}': {n} is larger than any model holds (each size is at most {})",
            u16::MAX
        )));
    }
    let own = &spec.shape;
    match numbers.as_slice() {
        [m] => Ok((*m, usize::from(own.feature_dim), usize::from(own.input_dim))),
        [m, g, d] => Ok((*m, *g, *d)),
        _ => Err(bad()),
    }
}
