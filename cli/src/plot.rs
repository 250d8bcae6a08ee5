//! `sgp plot`: a blob's predictions as SVG.

use std::io::Write;
use std::path::Path;

use crate::tools::plot::{plot_svg, OutputPlot};
use nalgebra::DVector;
use sgp_trainer::export::artefact::{is_container, output_descriptions};
use sgp_trainer::{Error, Result};

use super::{in_file, stdout_error, write_file, BlobAndData, BlobOnData, Opened};

pub(crate) fn plot_command(input: &BlobAndData, out: &Path) -> Result<()> {
    let to_stdout = out == Path::new("-");
    let opened = input.open((!to_stdout).then_some(("--out", out)))?;
    let source = opened.data.name().to_owned();
    let outputs = if is_container(&opened.blob) {
        usize::MAX
    } else {
        opened.spec.output_count()
    };
    let svg = match (outputs, opened.spec.shape.link) {
        (1, sgp_runtime::Link::Probit) => {
            // Labels as eval reads them (text or numbers), as the plot's
            // classes: the positive class's value, or another.
            let spec = &opened.spec;
            let target = input.target.as_deref().unwrap_or(&spec.target_name);
            let (x, truth) = opened.data.read_classes(spec, target)?;
            let positive = f64::from(spec.positive_class);
            let y = DVector::from_iterator(
                truth.len(),
                truth
                    .iter()
                    .map(|&k| if k == 1 { positive } else { positive + 1.0 }),
            );
            let output = OutputPlot {
                blob: &opened.blob,
                spec,
                y: &y,
            };
            plot_svg(&[output], &x, &source).map_err(in_file(&source))?
        }
        (1, _) => {
            let BlobOnData { blob, spec, x, y } = opened.read(input.target.as_deref())?;
            let output = OutputPlot {
                blob: &blob,
                spec: &spec,
                y: &y,
            };
            plot_svg(&[output], &x, &source).map_err(in_file(&source))?
        }
        (_, sgp_runtime::Link::Identity) => {
            plot_outputs(input, &opened, &source).map_err(in_file(&source))?
        }
        (classes, _) => {
            return Err(Error::BadInput(format!(
                "{}: a model of {classes} classes: sgp plot draws regression outputs or a \
                 binary classifier",
                input.model.display(),
            )))
        }
    };
    if out == Path::new("-") {
        let mut stdout = std::io::stdout().lock();
        return stdout
            .write_all(svg.as_bytes())
            .and_then(|()| stdout.flush())
            .map_err(stdout_error);
    }
    write_file(out, svg.as_bytes())
}

/// One row of panels per output of a multi-output regression (one blob or
/// a container), each output against the column of its own name.
fn plot_outputs(input: &BlobAndData, opened: &Opened, source: &str) -> Result<String> {
    input.refuse_target("plotted")?;
    let specs = output_descriptions(&opened.blob)?;
    let mut read = Vec::with_capacity(specs.len());
    for output in &specs {
        let (x, y) = opened
            .data
            .read_inputs_and_target(&output.input_names, &output.target_name)?;
        read.push((output.to_bytes()?, x, y));
    }
    let x = match read.first() {
        Some((_, x, _)) => x.clone(),
        None => return Err(Error::BadInput("the blob has no output".into())),
    };
    let outputs: Vec<OutputPlot> = read
        .iter()
        .zip(&specs)
        .map(|((blob, _, y), spec)| OutputPlot { blob, spec, y })
        .collect();
    plot_svg(&outputs, &x, source)
}
