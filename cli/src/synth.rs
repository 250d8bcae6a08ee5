//! `sgp synth`: generated data with known truth.

use std::io::Write;
use std::path::Path;

use sgp_trainer::data::stream::write_parquet;
use sgp_trainer::files::check_outputs;
use sgp_trainer::synth::dynamics::System;
use sgp_trainer::synth::{self, check_size, ClassShape, Shape};
use sgp_trainer::{Error, Result};

use super::stdout_error;

/// What `sgp synth` was asked for.
pub(crate) struct SynthArgs<'a> {
    pub(crate) rows: usize,
    pub(crate) dim: usize,
    pub(crate) shape: Option<Shape>,
    pub(crate) system: Option<System>,
    pub(crate) classes: Option<ClassShape>,
    pub(crate) seed: u64,
    pub(crate) parquet: Option<&'a Path>,
}

pub(crate) fn synth_command(args: SynthArgs<'_>, given: &[&str]) -> Result<()> {
    let (rows, dim, shape, seed) = (args.rows, args.dim, args.shape, args.seed);
    let (system, parquet) = (args.system, args.parquet);
    let classes = args.classes;
    if given.contains(&"--dim") && (shape.is_some() || system.is_some() || classes.is_some()) {
        return Err(Error::BadInput(
            "--dim does not apply to --shape, --system or --classes: it is the input dimension \
             of the ridge data; each shape, system and class set has its own inputs"
                .into(),
        ));
    }
    let columns = match (shape, system, classes) {
        (Some(shape), _, _) => shape.n_inputs() + 1,
        (_, Some(system), _) => system.inputs().len() + system.outputs().len(),
        (_, _, Some(classes)) => classes.n_inputs() + 1,
        (None, None, None) => dim,
    };
    check_size(rows, columns)?;
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
    if let Some(path) = parquet {
        check_outputs(&[("--parquet", path)], &[])?;
    }
    if let Some(classes) = classes {
        let (x, y) = synth::classification(classes, rows, seed);
        let names = classes.input_names();
        if let Some(path) = parquet {
            return write_parquet(path, &x, &y, &names, "class");
        }
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        return synth::write_csv((&x, &y), &names, "class", &mut out).map_err(stdout_error);
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
