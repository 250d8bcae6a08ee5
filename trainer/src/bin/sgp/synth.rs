//! `sgp synth`: generated data with known truth.

use std::io::Write;
use std::path::Path;

use sgp_trainer::data::stream::write_parquet;
use sgp_trainer::tools::synth::{self, Shape};
use sgp_trainer::{Error, Result};

use super::stdout_error;

pub(crate) fn synth_command(
    rows: usize,
    dim: usize,
    shape: Option<Shape>,
    system: Option<sgp_trainer::tools::dynamics::System>,
    seed: u64,
    parquet: Option<&Path>,
) -> Result<()> {
    if rows == 0 || dim == 0 {
        return Err(Error::BadInput(
            "--rows and --dim must be at least 1".into(),
        ));
    }
    if let Some(system) = system {
        if parquet.is_some() {
            return Err(Error::BadInput(
                "--parquet writes the --shape and ridge sets; --system writes CSV only".into(),
            ));
        }
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        system
            .write_csv(rows, seed, &mut out)
            .map_err(stdout_error)?;
        return out.flush().map_err(stdout_error);
    }
    let generated = match shape {
        Some(shape) => synth::generate(shape, rows, seed),
        None => synth::ridge(rows, dim, seed),
    };
    if let Some(path) = parquet {
        return write_parquet(
            path,
            &generated.x,
            &generated.y,
            &generated.input_names,
            &generated.target_name,
        );
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    generated.write_csv(&mut out).map_err(stdout_error)?;
    out.flush().map_err(stdout_error)
}
