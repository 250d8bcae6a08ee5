//! `sgp replay`: a log of observations through the device's own update,
//! the error over time, a picture, and the model it ends as.

use std::path::{Path, PathBuf};

use crate::tools::replay_plot::replay_svg;
use nalgebra::DMatrix;
use sgp_runtime::{Link, ModelSpec, UpdateSettings};
use sgp_trainer::evaluate::replay::{replay, Replay, Window};
use sgp_trainer::export::artefact;
use sgp_trainer::files::{check_outputs, Input};
use sgp_trainer::options::update::update_settings;
use sgp_trainer::{Error, Result};

use super::{read_blob, to_json, write_file};

#[derive(clap::Args)]
pub(crate) struct ReplayArgs {
    /// The model: a blob, or a container of one blob per output (each
    /// member replays its own output's column); it must learn on the
    /// device (`sgp fit --updatable`).
    #[arg(long)]
    model: PathBuf,
    /// CSV with a header: the model's inputs and target column(s) (picked
    /// by name), one observation per row in the order they came.
    #[arg(long)]
    data: PathBuf,
    /// Forgetting factor in (0, 1]: before each row the posterior drifts
    /// back towards the prior by this factor (1: nothing forgotten, the
    /// model is then the batch posterior of every row).
    #[arg(long, default_value_t = UpdateSettings::default().forgetting)]
    forgetting: f32,
    /// Refuse (do not learn) a row further than this many predictive
    /// standard deviations from the prediction (default: no gate).
    #[arg(long)]
    gate: Option<f32>,
    /// A run of this many rows in a row beyond the gate opens it (the
    /// plant moved; its last row and the rest of the run are learned);
    /// default: the gate never opens.
    #[arg(long)]
    gate_run: Option<u8>,
    /// Noise forgetting factor in (0, 1]: the noise variance follows the
    /// residuals of about the last 1 / (1 - this) rows, from 0.01 times the
    /// fitted one to 100 times it or the prior variance, the larger
    /// (default 1: the fitted noise; `--out` keeps the fitted noise too).
    #[arg(long)]
    noise_forgetting: Option<f32>,
    /// Rows per line of the error table (and per point of the picture's
    /// lower panel).
    #[arg(long, default_value_t = 100)]
    window: usize,
    /// Write a picture of the replay as SVG.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Write the model after the last row (a blob of the input's length; a
    /// container of the members after it).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// What `sgp replay --json` prints.
#[derive(serde::Serialize)]
struct ReplayOutput<'a> {
    rows: usize,
    refused: usize,
    forgetting: f32,
    gate: Option<f32>,
    /// Per output: its name and its windows.
    outputs: Vec<(&'a str, Vec<Window>)>,
    /// The whole log, per output.
    overall: Vec<Window>,
}

pub(crate) fn replay_command(args: &ReplayArgs) -> Result<()> {
    if args.window == 0 {
        return Err(Error::BadInput(
            "--window 0: a window holds at least one row; give --window 1 or more".into(),
        ));
    }
    let settings = update_settings(
        Some(args.forgetting),
        args.gate,
        args.gate_run,
        args.noise_forgetting,
    )?;
    let model = Input::open(&args.model)?;
    let data = Input::open(&args.data)?;
    let outputs: Vec<(&str, &Path)> = [("--out", &args.out), ("--svg", &args.svg)]
        .into_iter()
        .filter_map(|(flag, path)| path.as_deref().map(|p| (flag, p)))
        .collect();
    check_outputs(&outputs, &[&model, &data])?;
    let (blob, _) = read_blob(&model)?;
    // A container (one model per output): each member replays its own
    // output's column through its own update and gate, and `--out` is the
    // container of the members after the last row.
    let members = artefact::members(&blob)?;
    let mut replayed: Option<Replay> = None;
    let mut blobs = Vec::with_capacity(members.len());
    for member in members {
        let spec = ModelSpec::from_bytes(member)
            .map_err(|e| Error::BadInput(format!("{}: {e}", model.name())))?;
        let (x, y) = observations(&data, &spec)?;
        let one = replay(member, &x, &y, settings)
            .map_err(|e| Error::BadInput(format!("{}: {e}", data.name())))?;
        blobs.push(one.blob.clone());
        replayed = Some(match replayed {
            None => one,
            Some(all) if all.classifier != one.classifier => {
                return Err(Error::BadInput(format!(
                    "{}: a container of classifiers and regressions: sgp replay reads \
                     members of one kind",
                    model.name()
                )));
            }
            Some(mut all) => {
                all.outputs.extend(one.outputs);
                all
            }
        });
    }
    let mut replayed = replayed.ok_or(sgp_runtime::Error::Malformed)?;
    if artefact::is_container(&blob) {
        let blobs: Vec<&[u8]> = blobs.iter().map(Vec::as_slice).collect();
        replayed.blob = artefact::artefact(&blobs)?;
    }
    if let Some(out) = &args.out {
        write_file(out, &replayed.blob)?;
    }
    if let Some(path) = &args.svg {
        let source = args.data.display().to_string();
        let what = match args.gate {
            Some(gate) => format!("forgetting {}, gate {gate} sd", args.forgetting),
            None => format!("forgetting {}", args.forgetting),
        };
        write_file(
            path,
            replay_svg(&replayed, args.window, &source, &what)?.as_bytes(),
        )?;
    }
    report(args, &replayed)
}

/// The rows of `data` as the model `spec` reads them: its inputs, and its
/// outputs' target columns (a probit classifier's: 1 for the positive
/// class, 0 else).
fn observations(data: &Input, spec: &ModelSpec) -> Result<(DMatrix<f64>, DMatrix<f64>)> {
    if spec.shape.link == Link::Probit {
        let (x, truth) = data.read_classes(spec, &spec.target_name)?;
        let y = DMatrix::from_iterator(truth.len(), 1, truth.iter().map(|&k| k as f64));
        return Ok((x, y));
    }
    let names = std::iter::once(&spec.target_name).chain(spec.outputs.iter().map(|o| &o.name));
    let mut x = DMatrix::zeros(0, 0);
    let mut columns = Vec::with_capacity(spec.outputs.len() + 1);
    for name in names {
        let (inputs, target) = data.read_inputs_and_target(&spec.input_names, name)?;
        x = inputs;
        columns.push(target);
    }
    Ok((x, DMatrix::from_columns(&columns)))
}

fn report(args: &ReplayArgs, replayed: &Replay) -> Result<()> {
    let rows = replayed.outputs.first().map_or(0, |t| t.steps.len());
    let overall: Vec<Window> = (0..replayed.outputs.len())
        .filter_map(|p| replayed.windows(p, rows.max(1)).into_iter().next())
        .collect();
    if args.json {
        let output = ReplayOutput {
            rows,
            refused: replayed.refused(),
            forgetting: args.forgetting,
            gate: args.gate,
            outputs: replayed
                .outputs
                .iter()
                .enumerate()
                .map(|(p, t)| (t.name.as_str(), replayed.windows(p, args.window)))
                .collect(),
            overall,
        };
        println!("{}", to_json(&output)?);
        return Ok(());
    }
    println!(
        "rows            {rows} replayed through the device's update ({} refused by the gate)",
        replayed.refused()
    );
    let (loss, hits) = if replayed.classifier {
        ("log loss", "right")
    } else {
        ("NLPD", "95% cover")
    };
    for (p, trace) in replayed.outputs.iter().enumerate() {
        if replayed.outputs.len() > 1 {
            println!("output          {}", trace.name);
        }
        println!("rows                    RMSE      {loss:>8}  {hits}");
        let all = overall.get(p).into_iter();
        for w in replayed.windows(p, args.window).iter().chain(all) {
            let label = if w.start == 0 && w.end == rows && rows > args.window {
                "all".to_string()
            } else {
                format!("{}-{}", w.start + 1, w.end)
            };
            println!(
                "{label:<16} {:>12.6} {:>12.6}  {:.3}",
                w.rmse, w.nlpd, w.hits
            );
        }
    }
    if let Some(out) = &args.out {
        println!(
            "blob            {} ({} bytes)",
            out.display(),
            replayed.blob.len()
        );
    }
    Ok(())
}
