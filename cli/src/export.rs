//! `sgp export`: a blob as C or Rust source.

use std::io::Write;
use std::path::Path;

use sgp_trainer::export::codegen::{default_name, export_source, Format};
use sgp_trainer::files::{check_outputs, Input};
use sgp_trainer::Result;

use super::{read_blob, stdout_error, write_file};

pub(crate) fn export_command(
    model: &Path,
    format: Format,
    out: Option<&Path>,
    name: Option<&str>,
) -> Result<()> {
    let input = Input::open(model)?;
    if let Some(path) = out {
        check_outputs(&[("--out", path)], &[&input])?;
    }
    let (blob, _) = read_blob(&input)?;
    let name = name.map_or_else(|| default_name(model), str::to_string);
    let source = export_source(&blob, format, &name, &model.display().to_string())?;
    match out {
        Some(path) => write_file(path, source.as_bytes()),
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(source.as_bytes()).map_err(stdout_error)?;
            stdout.flush().map_err(stdout_error)
        }
    }
}
