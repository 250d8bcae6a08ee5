//! `sgp plot`: a blob's predictions on a data set, as SVG ([`plot_svg`]).
//!
//! Every prediction drawn comes from the blob through the runtime
//! ([`sgp_trainer::model::device`]), i.e. what the device computes. One input:
//! the data, the mean, a band of two predictive standard deviations and
//! where the basis functions sit (a classifier: `P(y = +1)`). More inputs:
//! predicted against actual and a calibration curve (a classifier: its
//! probabilities by class and a reliability diagram). One row of panels
//! per output.

use nalgebra::{DMatrix, DVector};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use sgp_runtime::{Link, ModelKind, ModelSpec};

use sgp_trainer::data::is_class;
use sgp_trainer::model::device::{predict_all, DevicePrediction};
use sgp_trainer::{Error, Result};

/// Points along the input axis at which the one-input curves are drawn.
const CURVE_POINTS: usize = 400;
/// Most points drawn with error bars in the predicted-against-actual panel:
/// beyond that the bars hide one another.
const MAX_ERROR_BARS: usize = 500;
/// Size of the one-input figure and of each panel of the two-panel one.
const WIDTH: u32 = 900;
const HEIGHT: u32 = 560;
const PANEL_WIDTH: u32 = 640;

/// Room above the data for the legend of a one-input plot, as a fraction
/// of the data's span: four entries fit without covering a point.
const LEGEND_ROOM: f64 = 0.32;

const MEAN: RGBColor = RGBColor(31, 119, 180);
const DATA: RGBColor = RGBColor(70, 70, 70);
const BASIS: RGBColor = RGBColor(214, 39, 40);
const POSITIVE: RGBColor = RGBColor(230, 120, 10);
const FONT: &str = "sans-serif";

/// One output of a model to plot: its single-output blob (from
/// [`sgp_trainer::export::output_blob::output_specs`] for a multi-output blob),
/// its spec and its raw targets.
#[derive(Clone, Copy, Debug)]
pub struct OutputPlot<'a> {
    /// The output's blob.
    pub blob: &'a [u8],
    /// Its spec.
    pub spec: &'a ModelSpec,
    /// Its raw targets, one per row of the inputs.
    pub y: &'a DVector<f64>,
}

/// Draws the plot of `outputs` on raw inputs `x` (columns in the blob's
/// input order): one row of panels per output, titled with the output's
/// name when there are several; `source` names the data in the title.
/// Returns the SVG text.
///
/// # Errors
/// [`Error::BadInput`] for no output, or when `x` does not have an
/// output's inputs or its targets' rows; the runtime's refusal of a blob or
/// of an input.
pub fn plot_svg(outputs: &[OutputPlot], x: &DMatrix<f64>, source: &str) -> Result<String> {
    let first = outputs
        .first()
        .ok_or_else(|| Error::BadInput("sgp plot: no output to draw".into()))?;
    for output in outputs {
        check_shapes(output, x, source)?;
    }
    let d = x.ncols();
    let rows = outputs.len();
    let mut svg = String::new();
    {
        let width = if d == 1 { WIDTH } else { 2 * PANEL_WIDTH };
        let size = (width, HEIGHT * u32::try_from(rows).unwrap_or(u32::MAX));
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        let what = if rows > 1 {
            format!(", {rows} outputs")
        } else {
            String::new()
        };
        let title = format!(
            "{} model, M = {}{what}, on {source} ({} rows)",
            first.spec.shape.kind.name(),
            first.spec.shape.n_basis,
            first.y.len()
        );
        let root = root.titled(&title, (FONT, 22)).map_err(drawing)?;
        for (output, mut area) in outputs.iter().zip(root.split_evenly((rows, 1))) {
            if rows > 1 {
                let caption = format!("output {}", output.spec.target_name);
                area = area.titled(&caption, (FONT, 18)).map_err(drawing)?;
            }
            draw_output(&area, output, x)?;
        }
        root.present().map_err(drawing)?;
    }
    Ok(svg)
}

fn check_shapes(output: &OutputPlot, x: &DMatrix<f64>, source: &str) -> Result<()> {
    let d = usize::from(output.spec.shape.input_dim);
    if x.ncols() != d || x.nrows() != output.y.len() || output.y.is_empty() {
        return Err(Error::BadInput(format!(
            "{source}: {} rows of {} inputs and {} targets do not match the model's {d} inputs",
            x.nrows(),
            x.ncols(),
            output.y.len()
        )));
    }
    Ok(())
}

/// One output's figure in `root`: the curve along a single input, or the
/// two judging panels side by side.
fn draw_output(root: &Area, output: &OutputPlot, x: &DMatrix<f64>) -> Result<()> {
    let OutputPlot { blob, spec, y } = *output;
    let predictions = predict_all(blob, x)?;
    match (x.ncols(), spec.shape.link) {
        (1, Link::Identity) => one_input(root, blob, spec, x, y),
        (1, Link::Probit) => one_input_classifier(root, blob, spec, x, y),
        (_, Link::Identity) => {
            let (left, right) = root.split_horizontally(PANEL_WIDTH);
            predicted_against_actual(&left, spec, y, &predictions)?;
            calibration(&right, y, &predictions)
        }
        (_, Link::OneVsRest | Link::Softmax) => Err(Error::BadInput(
            "sgp plot draws single-output models; this blob is a multi-class classifier".into(),
        )),
        (_, Link::Probit) => {
            let labels = labels(spec, y);
            let prob = probabilities(&predictions)?;
            let (left, right) = root.split_horizontally(PANEL_WIDTH);
            probabilities_by_class(&left, spec, &labels, &prob)?;
            reliability(&right, &labels, &prob)
        }
    }
}

fn drawing(e: impl std::fmt::Display) -> Error {
    Error::Numerical(format!("drawing the plot: {e}"))
}

pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// `(lo, hi)` of `values`, widened by `pad` of the span on each side (a
/// unit span around a single value).
fn range(values: impl Iterator<Item = f64>, pad: f64) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if !lo.is_finite() {
        return (-1.0, 1.0);
    }
    let span = if hi > lo { hi - lo } else { 1.0 };
    (lo - pad * span, hi + pad * span)
}

/// Where the basis functions sit on the single raw input, with their
/// half-widths `sqrt(Delta)` in raw units when they have their own (VSGP).
/// A projected model's centres live in the projected coordinate, mapped
/// back through its 1 x 1 projection.
fn basis_locations(spec: &ModelSpec) -> Vec<(f64, Option<f64>)> {
    let (mean, scale) = (
        f64::from(spec.x_mean.first().copied().unwrap_or(0.0)),
        f64::from(spec.x_scale.first().copied().unwrap_or(1.0)),
    );
    let p = if spec.shape.projected {
        f64::from(spec.projection.first().copied().unwrap_or(0.0))
    } else {
        1.0
    };
    if p == 0.0 {
        return Vec::new();
    }
    spec.centres
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let width = (spec.shape.per_basis && !spec.shape.projected)
                .then(|| spec.widths.get(i).copied())
                .flatten()
                .filter(|&w| w > 0.0)
                .map(|w| scale / f64::from(w).sqrt());
            (mean + scale * f64::from(c) / p, width)
        })
        .collect()
}

pub(crate) type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// An empty chart over `x` and `y` on `area`, with room for the tick
/// labels, and a caption unless it is empty.
fn chart<'a, 'b>(
    area: &'a Area<'b>,
    caption: &str,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
) -> Result<Chart<'a, 'b>> {
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(70);
    if !caption.is_empty() {
        builder.caption(caption, (FONT, 18));
    }
    builder.build_cartesian_2d(x, y).map_err(drawing)
}

/// The axes, their descriptions and a grid of the major ticks only;
/// `y_ticks` writes the y tick labels (blank where a strip holds no values).
fn axes(
    chart: &mut Chart,
    x_desc: &str,
    y_desc: &str,
    y_ticks: Option<&dyn Fn(&f64) -> String>,
) -> Result<()> {
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(x_desc)
        .y_desc(y_desc)
        .axis_desc_style((FONT, 16))
        .label_style((FONT, 13))
        .light_line_style(WHITE.mix(0.0));
    if let Some(format) = y_ticks {
        mesh.y_label_formatter(format);
    }
    mesh.draw().map_err(drawing)
}

/// The legend of every labelled series.
fn legend<'a, 'b: 'a>(chart: &mut Chart<'a, 'b>, position: SeriesLabelPosition) -> Result<()> {
    chart
        .configure_series_labels()
        .position(position)
        .label_font((FONT, 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()
        .map_err(drawing)
}

/// A dashed grey reference line through `points`, in the legend if
/// `label` is not empty.
fn reference(chart: &mut Chart, points: Vec<(f64, f64)>, label: &str) -> Result<()> {
    let series = chart
        .draw_series(DashedLineSeries::new(
            points,
            6,
            4,
            BLACK.mix(0.5).stroke_width(1),
        ))
        .map_err(drawing)?;
    if !label.is_empty() {
        series.label(label).legend(|(x, y)| {
            DashedPathElement::new(vec![(x, y), (x + 20, y)], 5, 3, BLACK.mix(0.5))
        });
    }
    Ok(())
}

/// A solid curve of what the model predicts, in the legend.
fn curve(
    chart: &mut Chart,
    points: impl IntoIterator<Item = (f64, f64)>,
    colour: RGBColor,
    label: &str,
) -> Result<()> {
    chart
        .draw_series(LineSeries::new(points, colour.stroke_width(2)))
        .map_err(drawing)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
    Ok(())
}

/// Small dots, in the legend if `label` is not empty.
fn dots(
    chart: &mut Chart,
    points: impl IntoIterator<Item = (f64, f64)>,
    colour: RGBColor,
    label: &str,
) -> Result<()> {
    let series = chart
        .draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 2, colour.mix(0.7).filled())),
        )
        .map_err(drawing)?;
    if !label.is_empty() {
        series
            .label(label)
            .legend(move |(x, y)| Circle::new((x + 10, y), 3, colour.filled()));
    }
    Ok(())
}

/// The single input's axis: the data's range, the points the curves are
/// drawn at, and the basis functions inside the range.
struct InputAxis {
    lo: f64,
    hi: f64,
    grid: DMatrix<f64>,
    basis: Vec<(f64, Option<f64>)>,
    off_plot: usize,
}

impl InputAxis {
    fn new(spec: &ModelSpec, x: &DMatrix<f64>) -> InputAxis {
        let (lo, hi) = range(x.iter().copied(), 0.05);
        let all = basis_locations(spec);
        let basis: Vec<(f64, Option<f64>)> = all
            .iter()
            .copied()
            .filter(|(c, _)| (lo..=hi).contains(c))
            .collect();
        InputAxis {
            lo,
            hi,
            grid: DMatrix::from_fn(CURVE_POINTS, 1, |i, _| {
                lo + (hi - lo) * i as f64 / (CURVE_POINTS - 1) as f64
            }),
            off_plot: all.len() - basis.len(),
            basis,
        }
    }

    fn points(&self) -> std::iter::Copied<std::slice::Iter<'_, f64>> {
        self.grid.as_slice().iter().copied()
    }

    fn name(spec: &ModelSpec) -> &str {
        spec.input_names.first().map_or("x", String::as_str)
    }

    /// The basis-function markers in the strip `(bottom, bottom + strip)`
    /// below the data: a triangle at each centre, and for per-basis widths
    /// a bar of ± the width, staggered over four rows so that neighbours
    /// stay apart; and a faint line between the strip and the data.
    fn draw_basis(
        &self,
        chart: &mut Chart,
        spec: &ModelSpec,
        bottom: f64,
        strip: f64,
    ) -> Result<()> {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(self.lo, bottom + strip), (self.hi, bottom + strip)],
                BLACK.mix(0.25),
            )))
            .map_err(drawing)?;
        let shown = &self.basis;
        let what = match spec.shape.kind {
            ModelKind::Exact => "training inputs (basis)",
            ModelKind::GpLasso => "selected training inputs",
            ModelKind::Ivm => "active training inputs",
            _ if shown.iter().any(|(_, w)| w.is_some()) => "basis functions: centre ± sqrt(width)",
            _ => "pseudo-inputs",
        };
        let total = shown.len() + self.off_plot;
        let label = match self.off_plot {
            0 => format!("{total} {what}"),
            hidden => format!("{total} {what} ({hidden} off the plot)"),
        };
        let mut order: Vec<usize> = (0..shown.len()).collect();
        order.sort_by(|&a, &b| shown[a].0.total_cmp(&shown[b].0));
        let height = |rank: usize| bottom + strip * (0.2 + 0.2 * (rank % 4) as f64);
        chart
            .draw_series(order.iter().enumerate().filter_map(|(rank, &i)| {
                let (c, w) = shown[i];
                w.map(|w| {
                    ErrorBar::new_horizontal(height(rank), c - w, c, c + w, BASIS.mix(0.6), 6)
                })
            }))
            .map_err(drawing)?;
        chart
            .draw_series(order.iter().enumerate().map(|(rank, &i)| {
                TriangleMarker::new((shown[i].0, height(rank)), 5, BASIS.filled())
            }))
            .map_err(drawing)?
            .label(label)
            .legend(|(x, y)| TriangleMarker::new((x + 10, y), 5, BASIS.filled()));
        Ok(())
    }
}

fn one_input(
    root: &Area,
    blob: &[u8],
    spec: &ModelSpec,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
) -> Result<()> {
    let axis = InputAxis::new(spec, x);
    let along = predict_all(blob, &axis.grid)?;
    let band = |sign: f64| {
        along
            .iter()
            .map(move |p| f64::from(p.mean) + sign * 2.0 * f64::from(p.variance).sqrt())
    };
    let (y_lo, y_hi) = range(y.iter().copied().chain(band(1.0)).chain(band(-1.0)), 0.05);
    // A strip below the data for the basis-function markers, and room
    // above it for the legend, so that neither hides a data point.
    let strip = 0.16 * (y_hi - y_lo);
    let headroom = LEGEND_ROOM * (y_hi - y_lo);
    let mut chart = chart(
        root,
        "",
        axis.lo..axis.hi,
        (y_lo - strip)..(y_hi + headroom),
    )?;
    let decimals = tick_decimals(y_hi - y_lo);
    let y_ticks = |v: &f64| {
        if *v < y_lo || *v > y_hi {
            String::new()
        } else {
            format!("{v:.decimals$}")
        }
    };
    axes(
        &mut chart,
        InputAxis::name(spec),
        &spec.target_name,
        Some(&y_ticks),
    )?;
    let upper: Vec<(f64, f64)> = axis.points().zip(band(1.0)).collect();
    let lower: Vec<(f64, f64)> = axis.points().zip(band(-1.0)).rev().collect();
    let band_style = MEAN.mix(0.2).filled();
    chart
        .draw_series(std::iter::once(Polygon::new(
            [upper, lower].concat(),
            band_style,
        )))
        .map_err(drawing)?
        .label("mean ± 2 sd (with noise)")
        .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 20, y + 6)], band_style));
    dots(
        &mut chart,
        x.iter().copied().zip(y.iter().copied()),
        DATA,
        "data",
    )?;
    curve(
        &mut chart,
        axis.points().zip(along.iter().map(|p| f64::from(p.mean))),
        MEAN,
        "predictive mean (runtime, f32)",
    )?;
    axis.draw_basis(&mut chart, spec, y_lo - strip, strip)?;
    legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

/// Decimals of the ticks plotters puts on a span: about ten, at a step of
/// 1, 2 or 5 times a power of ten.
fn tick_decimals(span: f64) -> usize {
    let step = (span / 10.0).max(f64::MIN_POSITIVE);
    let mut exponent = libm::log10(step).floor();
    if step / libm::pow(10f64, exponent) > 5.0 {
        exponent += 1.0;
    }
    (-exponent).max(0.0) as usize
}

/// ±1 labels of raw targets: the blob's positive class is +1.
fn labels(spec: &ModelSpec, y: &DVector<f64>) -> Vec<bool> {
    let positive = f64::from(spec.positive_class);
    y.iter().map(|&v| is_class(v, positive)).collect()
}

fn probabilities(predictions: &[DevicePrediction]) -> Result<Vec<f64>> {
    predictions
        .iter()
        .map(|p| p.probability.map(f64::from))
        .collect::<Option<Vec<f64>>>()
        .ok_or(Error::Blob(sgp_runtime::Error::NotClassifier))
}

/// A small deterministic vertical offset per point, so that points of one
/// class at the same height do not hide one another.
fn jitter(i: usize) -> f64 {
    0.006 * ((i * 7) % 9) as f64 - 0.024
}

fn one_input_classifier(
    root: &Area,
    blob: &[u8],
    spec: &ModelSpec,
    x: &DMatrix<f64>,
    y: &DVector<f64>,
) -> Result<()> {
    let axis = InputAxis::new(spec, x);
    let along = probabilities(&predict_all(blob, &axis.grid)?)?;
    let labels = labels(spec, y);
    // The strip for the basis markers below 0, the legend's room above 1.
    let (bottom, top, strip) = (-0.05, 1.05, 0.2);
    let mut chart = chart(
        root,
        "",
        axis.lo..axis.hi,
        (bottom - strip)..(top + LEGEND_ROOM * (top - bottom + strip)),
    )?;
    let y_ticks = |v: &f64| {
        if *v < bottom || *v > top {
            String::new()
        } else {
            format!("{v:.1}")
        }
    };
    let p_name = format!("P({} = {})", spec.target_name, spec.positive_class);
    axes(&mut chart, InputAxis::name(spec), &p_name, Some(&y_ticks))?;
    reference(&mut chart, vec![(axis.lo, 0.5), (axis.hi, 0.5)], "")?;
    for (class, colour, name) in [
        (true, POSITIVE, format!("class {}", spec.positive_class)),
        (false, MEAN, "other classes".to_string()),
    ] {
        let level = if class { 1.0 } else { 0.0 };
        let points = x
            .iter()
            .zip(&labels)
            .enumerate()
            .filter(|(_, (_, &l))| l == class)
            .map(|(i, (&a, _))| (a, level + jitter(i)));
        dots(&mut chart, points, colour, &name)?;
    }
    curve(
        &mut chart,
        axis.points().zip(along),
        BLACK,
        &format!("{p_name} (runtime, f32)"),
    )?;
    axis.draw_basis(&mut chart, spec, bottom - strip, strip)?;
    legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

/// Every k-th row so that at most [`MAX_ERROR_BARS`] are drawn.
fn thinned(n: usize) -> Vec<usize> {
    let step = n.div_ceil(MAX_ERROR_BARS).max(1);
    (0..n).step_by(step).collect()
}

fn predicted_against_actual(
    area: &Area,
    spec: &ModelSpec,
    y: &DVector<f64>,
    predictions: &[DevicePrediction],
) -> Result<()> {
    let rows = thinned(y.len());
    let bar = |i: usize| {
        let p = &predictions[i];
        let (m, sd) = (f64::from(p.mean), f64::from(p.variance).sqrt());
        (m - 2.0 * sd, m, m + 2.0 * sd)
    };
    let (lo, hi) = range(
        rows.iter().flat_map(|&i| {
            let (below, _, above) = bar(i);
            [y[i], below, above]
        }),
        0.03,
    );
    let caption = if rows.len() < y.len() {
        format!(
            "predicted against actual ({} of {} rows)",
            rows.len(),
            y.len()
        )
    } else {
        "predicted against actual".to_string()
    };
    let mut chart = chart(area, &caption, lo..hi, lo..hi)?;
    let name = &spec.target_name;
    axes(
        &mut chart,
        &format!("actual {name}"),
        &format!("predicted {name}"),
        None,
    )?;
    reference(&mut chart, vec![(lo, lo), (hi, hi)], "predicted = actual")?;
    chart
        .draw_series(rows.iter().map(|&i| {
            let (below, m, above) = bar(i);
            ErrorBar::new_vertical(y[i], below, m, above, MEAN.mix(0.35), 4)
        }))
        .map_err(drawing)?
        .label("mean ± 2 sd (runtime, f32)")
        .legend(|(x, y)| PathElement::new(vec![(x + 10, y - 6), (x + 10, y + 6)], MEAN));
    dots(&mut chart, rows.iter().map(|&i| (y[i], bar(i).1)), MEAN, "")?;
    legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

/// Fraction of `|y - mean| <= k sd` for k on [0, 3], and what a Gaussian
/// predictive promises there, `erf(k / sqrt 2)`.
pub(crate) fn calibration_curve(y: &[f64], mean: &[f64], var: &[f64]) -> Vec<(f64, f64, f64)> {
    let z: Vec<f64> = y
        .iter()
        .zip(mean)
        .zip(var)
        .map(|((y, m), v)| {
            let sd = v.max(0.0).sqrt();
            if sd > 0.0 {
                (y - m).abs() / sd
            } else if y == m {
                0.0
            } else {
                f64::INFINITY
            }
        })
        .collect();
    (0..=60)
        .map(|i| {
            let k = 0.05 * f64::from(i);
            let inside = z.iter().filter(|&&z| z <= k).count() as f64 / z.len().max(1) as f64;
            (k, inside, libm::erf(k / std::f64::consts::SQRT_2))
        })
        .collect()
}

fn calibration(area: &Area, y: &DVector<f64>, predictions: &[DevicePrediction]) -> Result<()> {
    let mean: Vec<f64> = predictions.iter().map(|p| f64::from(p.mean)).collect();
    let var: Vec<f64> = predictions.iter().map(|p| f64::from(p.variance)).collect();
    let points = calibration_curve(y.as_slice(), &mean, &var);
    let mut chart = chart(area, "calibration", 0.0..3.0, 0.0..1.02)?;
    axes(
        &mut chart,
        "k (predictive standard deviations)",
        "fraction of rows within k sd",
        None,
    )?;
    reference(
        &mut chart,
        points
            .iter()
            .map(|&(k, _, expected)| (k, expected))
            .collect(),
        "Gaussian expectation",
    )?;
    curve(
        &mut chart,
        points.iter().map(|&(k, inside, _)| (k, inside)),
        MEAN,
        "this model (runtime, f32)",
    )?;
    legend(&mut chart, SeriesLabelPosition::LowerRight)
}

fn probabilities_by_class(
    area: &Area,
    spec: &ModelSpec,
    labels: &[bool],
    prob: &[f64],
) -> Result<()> {
    let mut chart = chart(
        area,
        "predicted probability by actual class",
        0.0..1.0,
        -0.5..1.5,
    )?;
    let positive = spec.positive_class;
    // Only the ticks at the two class levels are named: a band around
    // each level named every tick in it ("1 1 1", "other other other").
    let y_ticks = |v: &f64| {
        if (v - 1.0).abs() < 1e-6 {
            format!("{positive}")
        } else if v.abs() < 1e-6 {
            "other".into()
        } else {
            String::new()
        }
    };
    axes(
        &mut chart,
        &format!("P({} = {positive}) (runtime, f32)", spec.target_name),
        "actual class",
        Some(&y_ticks),
    )?;
    for (class, colour) in [(true, POSITIVE), (false, MEAN)] {
        let level = if class { 1.0 } else { 0.0 };
        let points = prob
            .iter()
            .zip(labels)
            .enumerate()
            .filter(|(_, (_, &l))| l == class)
            .map(|(i, (&p, _))| (p, level + 8.0 * jitter(i)));
        dots(&mut chart, points, colour, "")?;
    }
    reference(&mut chart, vec![(0.5, -0.5), (0.5, 1.5)], "")
}

/// Rows binned by predicted probability (ten bins of 0.1): per non-empty
/// bin, the mean predicted probability, the fraction actually positive and
/// the count.
pub(crate) fn reliability_bins(labels: &[bool], prob: &[f64]) -> Vec<(f64, f64, usize)> {
    let mut bins = [(0.0, 0usize, 0usize); 10];
    for (&p, &l) in prob.iter().zip(labels) {
        let b = ((p * 10.0) as usize).min(9);
        bins[b].0 += p;
        bins[b].1 += usize::from(l);
        bins[b].2 += 1;
    }
    bins.iter()
        .filter(|b| b.2 > 0)
        .map(|&(sum, positives, n)| (sum / n as f64, positives as f64 / n as f64, n))
        .collect()
}

fn reliability(area: &Area, labels: &[bool], prob: &[f64]) -> Result<()> {
    let bins = reliability_bins(labels, prob);
    let mut chart = chart(area, "reliability", 0.0..1.0, 0.0..1.02)?;
    axes(
        &mut chart,
        "mean predicted probability (bins of 0.1)",
        "fraction positive",
        None,
    )?;
    reference(&mut chart, vec![(0.0, 0.0), (1.0, 1.0)], "calibrated")?;
    curve(
        &mut chart,
        bins.iter().map(|&(p, f, _)| (p, f)),
        MEAN,
        "this model",
    )?;
    chart
        .draw_series(
            bins.iter()
                .map(|&(p, f, _)| Circle::new((p, f), 4, MEAN.filled())),
        )
        .map_err(drawing)?;
    legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calibrated_predictive_follows_the_gaussian_expectation() {
        // Residuals at evenly spaced Gaussian quantiles: exactly calibrated.
        let n = 2000;
        let y: Vec<f64> = (0..n)
            .map(|i| {
                let u = (i as f64 + 0.5) / n as f64;
                std::f64::consts::SQRT_2 * inverse_erf(2.0 * u - 1.0)
            })
            .collect();
        let curve = calibration_curve(&y, &vec![0.0; n], &vec![1.0; n]);
        assert_eq!(curve.len(), 61);
        for &(k, inside, expected) in &curve {
            assert!(
                (inside - expected).abs() < 2e-3,
                "k {k}: {inside} vs {expected}"
            );
        }
        // Twice too confident: at k = 1 only erf(0.5 / sqrt 2) = 38% inside.
        let narrow = calibration_curve(&y, &vec![0.0; n], &vec![0.25; n]);
        let at_one = narrow.iter().find(|c| (c.0 - 1.0).abs() < 1e-9).unwrap();
        assert!((at_one.1 - 0.383).abs() < 5e-3, "{at_one:?}");
    }

    /// Bisection on `erf`: enough for a test's quantiles.
    fn inverse_erf(v: f64) -> f64 {
        let (mut lo, mut hi) = (-6.0, 6.0);
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if libm::erf(mid) < v {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        0.5 * (lo + hi)
    }

    #[test]
    fn reliability_bins_count_positives_per_probability_decile() {
        let prob = [0.05, 0.07, 0.55, 0.58, 0.52, 0.99, 1.0];
        let labels = [false, true, true, false, true, true, true];
        let bins = reliability_bins(&labels, &prob);
        assert_eq!(bins.len(), 3);
        assert_eq!(bins[0].2, 2);
        assert!((bins[0].1 - 0.5).abs() < 1e-12);
        assert!((bins[1].0 - 0.55).abs() < 1e-12 && (bins[1].1 - 2.0 / 3.0).abs() < 1e-12);
        // P = 1 falls in the last bin, not past it.
        assert_eq!(bins[2], (0.995, 1.0, 2));
    }
}
