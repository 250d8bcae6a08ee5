//! `sgp plot`: a blob's predictions as SVG.

use std::path::Path;

use sgp_trainer::tools::plot::plot_svg;
use sgp_trainer::{Error, Result};

use super::{read_blob, write_file, BlobAndData, BlobOnData};

pub(crate) fn plot_command(input: &BlobAndData, out: &Path) -> Result<()> {
    let (_, spec) = read_blob(&input.model)?;
    if spec.output_count() > 1 {
        let what = match spec.shape.link {
            sgp_runtime::Link::Identity => "outputs",
            _ => "classes",
        };
        return Err(Error::BadInput(format!(
            "{}: a model of {} {what}: sgp plot draws one output or a binary classifier",
            input.model.display(),
            spec.output_count()
        )));
    }
    let BlobOnData { blob, spec, x, y } = input.read()?;
    let svg = plot_svg(&blob, &spec, &x, &y, &input.data.display().to_string())?;
    write_file(out, svg.as_bytes())
}
