//! `sgp replay --svg`: a replay ([`sgp_trainer::evaluate::replay`]) as a picture.
//! Top: each observation of the first output and what the device
//! predicted for it just before learning it (mean and a band of two
//! predictive standard deviations; a classifier: `P(y = +1)` against the
//! 0/1 labels), refused rows marked. Bottom: the error over time, mean
//! NLPD (log loss) per window of rows.

use plotters::prelude::*;

use crate::tools::plot::{Area, Chart};
use sgp_trainer::evaluate::replay::{Replay, Step, Trace};
use sgp_trainer::{Error, Result};

const WIDTH: u32 = 1000;
const HEIGHT: u32 = 720;
const MEAN: RGBColor = RGBColor(31, 119, 180);
const DATA: RGBColor = RGBColor(70, 70, 70);
const REFUSED: RGBColor = RGBColor(214, 39, 40);
const FONT: &str = "sans-serif";

fn drawing<E: std::fmt::Debug>(e: E) -> Error {
    Error::Numerical(format!("drawing the SVG: {e:?}"))
}

/// The picture of `replay` (windows of `window` rows in the lower panel);
/// `source` names the log in the title. Returns the SVG text.
///
/// # Errors
/// A replay of no rows, or a failure of the drawing backend.
pub fn replay_svg(replay: &Replay, window: usize, source: &str, settings: &str) -> Result<String> {
    let trace = replay
        .outputs
        .first()
        .filter(|t| !t.steps.is_empty())
        .ok_or_else(|| Error::BadInput("sgp replay: no row to draw".into()))?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        let title = format!(
            "{source}: {} rows replayed through the device's update ({settings})",
            trace.steps.len()
        );
        let root = root.titled(&title, (FONT, 20)).map_err(drawing)?;
        let (top, bottom) = root.split_vertically(HEIGHT * 3 / 5);
        draw_trace(&top, trace, replay.classifier)?;
        draw_losses(&bottom, replay, window, trace.steps.len() as f64)?;
        root.present().map_err(drawing)?;
    }
    Ok(svg)
}

/// The top panel: each observation, the mean predicted before learning
/// it and (a regression) its band of two predictive sd.
fn draw_trace(area: &Area<'_>, trace: &Trace, classifier: bool) -> Result<()> {
    let n = trace.steps.len() as f64;
    let band = |s: &Step| 2.0 * s.variance.max(0.0).sqrt();
    let values = trace
        .steps
        .iter()
        .flat_map(|s| [s.target, s.mean - band(s), s.mean + band(s)]);
    let what = if classifier {
        "P(y = +1) and label"
    } else {
        trace.name.as_str()
    };
    let mut chart = panel(area, n, values, (0.05, 1.0), what)?;
    if !classifier {
        let upper = trace
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| (i as f64, s.mean + band(s)));
        let lower = trace
            .steps
            .iter()
            .enumerate()
            .rev()
            .map(|(i, s)| (i as f64, s.mean - band(s)));
        chart
            .draw_series(std::iter::once(Polygon::new(
                upper.chain(lower).collect::<Vec<_>>(),
                MEAN.mix(0.2).filled(),
            )))
            .map_err(drawing)?
            .label("2 predictive sd before learning the row")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 18, y + 5)], MEAN.mix(0.2).filled()));
    }
    chart
        .draw_series(LineSeries::new(
            trace
                .steps
                .iter()
                .enumerate()
                .map(|(i, s)| (i as f64, s.mean)),
            MEAN.stroke_width(2),
        ))
        .map_err(drawing)?
        .label("predicted before learning the row")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], MEAN.stroke_width(2)));
    chart
        .draw_series(trace.steps.iter().enumerate().map(|(i, s)| {
            let color = if s.learned { DATA } else { REFUSED };
            Circle::new((i as f64, s.target), 2, color.filled())
        }))
        .map_err(drawing)?
        .label("observed (red: refused by the gate)")
        .legend(|(x, y)| Circle::new((x + 9, y), 3, DATA.filled()));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(DATA.mix(0.4))
        .label_font((FONT, 13))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(drawing)?;
    Ok(())
}

/// The bottom panel: mean NLPD (log loss) per window of `window` rows.
fn draw_losses(area: &Area<'_>, replay: &Replay, window: usize, n: f64) -> Result<()> {
    let losses: Vec<(f64, f64)> = replay
        .windows(0, window)
        .iter()
        .map(|w| (0.5 * (w.start + w.end) as f64, w.nlpd))
        .collect();
    let loss = if replay.classifier {
        format!("log loss per {window} rows")
    } else {
        format!("mean NLPD per {window} rows")
    };
    let values = losses.iter().map(|&(_, v)| v);
    let mut chart = panel(area, n, values, (0.1, 0.5), &loss)?;
    chart
        .draw_series(LineSeries::new(
            losses.iter().copied(),
            MEAN.stroke_width(2),
        ))
        .map_err(drawing)?;
    chart
        .draw_series(losses.iter().map(|&p| Circle::new(p, 3, MEAN.filled())))
        .map_err(drawing)?;
    Ok(())
}

/// A panel over rows `0..n` and the finite `values`, padded by `pad` of
/// their span (`flat` without one; 0 to 1 without any), its axes drawn.
fn panel<'a, 'b>(
    area: &'a Area<'b>,
    n: f64,
    values: impl Iterator<Item = f64>,
    (pad, flat): (f64, f64),
    y_desc: &str,
) -> Result<Chart<'a, 'b>> {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let pad = if hi > lo { pad * (hi - lo) } else { flat };
    let mut chart = ChartBuilder::on(area)
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..n, (lo - pad)..(hi + pad))
        .map_err(drawing)?;
    chart
        .configure_mesh()
        .x_desc("row")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_desc(y_desc)
        .axis_desc_style((FONT, 15))
        .label_style((FONT, 12))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(drawing)?;
    Ok(chart)
}
