//! `sgp inspect`: what a blob holds and whether it fits a device.

use std::path::Path;

use sgp_trainer::export::fixed::fixed_point_error;
use sgp_trainer::files::Input;
use sgp_trainer::tools::inspect::{parse_capacity, summarise};
use sgp_trainer::{Error, Result};

use super::{read_blob, to_json};

pub(crate) fn inspect_command(model: &Path, json: bool, capacity: Option<&str>) -> Result<()> {
    let (blob, spec) = read_blob(&Input::open(model)?)?;
    let capacity = capacity.map(|c| parse_capacity(c, &spec)).transpose()?;
    let mut summary = summarise(&spec, blob.len(), capacity);
    summary.fixed_point = Some(fixed_point_error(&blob)?);
    if json {
        println!("{}", to_json(&summary)?);
    } else {
        println!("{summary}");
    }
    match summary.misfit() {
        Some(why) if capacity.is_some() => {
            Err(Error::DoesNotFit(format!("{}: {why}", model.display())))
        }
        _ => Ok(()),
    }
}
