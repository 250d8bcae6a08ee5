//! `sgp predict`: a blob's predictions for a CSV or Parquet file, as CSV.

use std::io::Write;
use std::path::Path;

use nalgebra::DMatrix;
use sgp_runtime::ModelSpec;
use sgp_trainer::data::labels;
use sgp_trainer::export::artefact::output_descriptions;
use sgp_trainer::files::Input;
use sgp_trainer::Result;

use super::{in_file, read_blob, stdout_error};

pub(crate) fn predict_command(model: &Path, data: &Path) -> Result<()> {
    let model = Input::open(model)?;
    let data = Input::open(data)?;
    let (blob, spec) = read_blob(&model)?;
    let x = data.read_inputs(&spec.input_names)?;
    let named = in_file(data.name());
    if spec.shape.link != sgp_runtime::Link::Identity {
        return predict_classes(&blob, &spec, &x).map_err(&named);
    }
    let rows = sgp_trainer::model::device::predict_outputs(&blob, &x).map_err(&named)?;
    // One output: `mean,variance`; several: `NAME_mean,NAME_variance` each.
    let header: Vec<String> = match output_descriptions(&blob)?[..] {
        [_] => vec!["mean,variance".to_owned()],
        ref outputs => outputs
            .iter()
            .map(|o| format!("{0}_mean,{0}_variance", o.target_name))
            .collect(),
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let io = stdout_error;
    writeln!(out, "{}", header.join(",")).map_err(io)?;
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .map(|p| format!("{},{}", p.mean, p.variance))
            .collect();
        writeln!(out, "{}", cells.join(",")).map_err(io)?;
    }
    out.flush().map_err(io)
}

/// `sgp predict` of a classifier: the class (its label), one `p_LABEL`
/// per class, and for a binary one `probability` (of the positive class)
/// and the latent Gaussian.
pub(crate) fn predict_classes(blob: &[u8], spec: &ModelSpec, x: &DMatrix<f64>) -> Result<()> {
    let names = labels::blob_labels(spec);
    let classified = sgp_trainer::model::device::classify_all(blob, x)?;
    let latents = match spec.shape.link {
        sgp_runtime::Link::Probit => Some(sgp_trainer::model::device::predict_all(blob, x)?),
        _ => None,
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let io = stdout_error;
    let mut header = vec!["class".to_owned()];
    header.extend(names.iter().map(|n| format!("p_{n}")));
    if latents.is_some() {
        header.push("probability,latent_mean,latent_variance".to_owned());
    }
    writeln!(out, "{}", header.join(",")).map_err(io)?;
    for (i, (k, probabilities)) in classified.iter().enumerate() {
        let mut cells = vec![names.get(*k).cloned().unwrap_or_else(|| k.to_string())];
        cells.extend(probabilities.iter().map(|p| p.to_string()));
        if let Some(p) = latents.as_ref().and_then(|l| l.get(i)) {
            let probability = p.probability.unwrap_or(f32::NAN);
            cells.push(format!("{probability},{},{}", p.mean, p.variance));
        }
        writeln!(out, "{}", cells.join(",")).map_err(io)?;
    }
    out.flush().map_err(io)
}
