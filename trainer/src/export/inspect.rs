//! A human- and JSON-readable description of a blob (`sgp inspect`).
//!
//! Only what the blob holds: an SPGP+HS model's uncertainties `h_m` are
//! folded into its factors `L1`, `L2` and not stored, so they cannot be
//! shown here; `sgp fit` prints their spread (and `--json` reports it).

use serde::Serialize;
use sgp_runtime::{ram_bytes_with_outputs, Link, ModelSpec, NAME_CAPACITY};

use crate::fit::WidthSpread;
use crate::model::device::names_too_long;

/// What `sgp inspect` prints: a blob's description (its `Display`, or
/// serialised), built by [`summarise`].
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Fitting procedure.
    pub(crate) kind: &'static str,
    /// `regression` or `classification`.
    pub(crate) task: &'static str,
    /// Basis functions `M`.
    pub(crate) n_basis: usize,
    /// Feature dimension `G`.
    pub(crate) feature_dim: usize,
    /// Input dimension `D`.
    pub(crate) input_dim: usize,
    /// Input column names.
    pub(crate) inputs: Vec<String>,
    /// Target column name (the first output's).
    pub(crate) target: String,
    /// Every output (the first included) of a blob with several: a
    /// multi-output regression's targets, a multi-class model's class
    /// latents. Empty for a single output.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) outputs: Vec<OutputSummary>,
    /// How a multi-class model turns its latents into probabilities
    /// (`one-vs-rest` or `softmax`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) class_rule: Option<&'static str>,
    /// Class labels as the training data spelled them, in class order
    /// (format version 5; empty when the blob records none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) class_labels: Vec<String>,
    /// Smallest and largest training value of each input, raw units
    /// (format version 3; absent from older blobs).
    pub(crate) training_range: Option<Vec<InputRange>>,
    /// Column names longer than a device `Model` holds
    /// ([`NAME_CAPACITY`] bytes): such a blob loads on no device.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) names_too_long: Vec<String>,
    /// Length scales in raw input units (shared-width, unprojected models).
    pub(crate) lengthscales: Option<Vec<f64>>,
    /// Spread of the per-basis widths (VSGP), one entry per input, as
    /// length scales in raw input units: `sqrt(Delta) * x_scale`, i.e.
    /// `x_scale / sqrt(w)` for the blob's inverse squared widths `w`.
    /// Absent for shared-width or projected models.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) basis_widths: Option<Vec<WidthSpread>>,
    /// A projected model's projection (SPGP+DR, PCA): its size and singular
    /// values, in place of length scales. Absent for unprojected models.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) projection: Option<crate::fit::ProjectionReport>,
    /// Where the basis points come from, when the blob alone cannot say
    /// (GPLasso: selected training rows, listed by `sgp fit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) basis_note: Option<&'static str>,
    /// Latent prior (signal) variance in raw target units.
    pub(crate) signal_variance: f64,
    /// Noise variance in raw target units (regression).
    pub(crate) noise_variance: f64,
    /// How the model learns on the device (`fitc`, `vfe` or `probit`
    /// rows: format version 7, `sgp fit --updatable`); absent for a model
    /// that does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) learns: Option<&'static str>,
    /// The covariance function (`se`, `matern12`, `matern32`, `matern52`).
    pub(crate) kernel: &'static str,
    /// Size of the blob in bytes (flash for the model's numbers).
    pub(crate) blob_bytes: usize,
    /// The capacities `(M, G, D)` of the `Model` type the RAM figure is for
    /// (the model's own sizes unless asked otherwise).
    pub(crate) capacity: (usize, usize, usize),
    /// RAM of `Model<M, G, D, P>` with those capacities and the blob's
    /// output count `P` on a 32-bit device.
    pub(crate) ram_bytes: usize,
    /// Whether the model fits those capacities (and its names a device
    /// `Model`'s).
    pub(crate) fits: bool,
    /// The fixed-point form's error against f64 on the training range
    /// ([`Summary::measure_fixed_point`]), when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fixed_point: Option<crate::export::fixed::FixedPoint>,
}

/// One output of a multi-output blob.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct OutputSummary {
    /// Its (target column's) name.
    pub name: String,
    /// Latent prior (signal) variance in raw target units.
    pub signal_variance: f64,
    /// Noise variance in raw target units (regression).
    pub noise_variance: f64,
    /// Probit offset `b` (classifiers).
    pub bias: f64,
    /// Whether it has no variance factor of its own (format version 6):
    /// its latent variance is the first output's times the ratio of
    /// their signal variances.
    pub shares_first_variance: bool,
}

/// One input's training range, raw units, as the blob stores it (f32:
/// printed in its shortest exact form).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct InputRange {
    /// Smallest training value.
    pub min: f32,
    /// Largest training value.
    pub max: f32,
}

/// What `sgp inspect` prints of a container (one model per output): each
/// member's [`Summary`], and the RAM of the [`sgp_runtime::Artefact`] that
/// loads it.
#[derive(Clone, Debug, Serialize)]
pub struct ContainerSummary {
    /// Size of the container in bytes (the members' and 12 + 4 per member).
    pub container_bytes: usize,
    /// The capacities `(M, G, D)` the RAM figure is for: the members'
    /// largest unless asked otherwise.
    pub capacity: (usize, usize, usize),
    /// RAM of `Artefact<M, G, D, P>` with those capacities, `P` the members.
    pub ram_bytes: usize,
    /// Each member's summary, in output order.
    pub members: Vec<Summary>,
}

/// Describes the members of the container `container` (each measured in
/// fixed point, as [`Summary::measure_fixed_point`]); the RAM figure is for
/// an `Artefact` of `capacity` `(M, G, D)`, or of the members' largest
/// sizes.
///
/// # Errors
/// A container or member blob that does not decode.
pub fn summarise_container(
    container: &[u8],
    capacity: Option<(usize, usize, usize)>,
) -> crate::Result<ContainerSummary> {
    let blobs = crate::export::artefact::members(container)?;
    let specs = blobs
        .iter()
        .map(|m| Ok(ModelSpec::from_bytes(m)?))
        .collect::<crate::Result<Vec<_>>>()?;
    let largest = specs.iter().fold((0, 0, 0), |(m, g, d), spec| {
        let s = &spec.shape;
        (
            m.max(usize::from(s.n_basis)),
            g.max(usize::from(s.feature_dim)),
            d.max(usize::from(s.input_dim)),
        )
    });
    let capacity = capacity.unwrap_or(largest);
    let (cm, cg, cd) = capacity;
    let mut members = Vec::with_capacity(blobs.len());
    for (spec, blob) in specs.iter().zip(&blobs) {
        let mut member = summarise(spec, blob.len(), Some(capacity));
        member.measure_fixed_point(blob)?;
        members.push(member);
    }
    Ok(ContainerSummary {
        container_bytes: container.len(),
        capacity,
        ram_bytes: sgp_runtime::artefact_ram_bytes(cm, cg, cd, blobs.len()),
        members,
    })
}

impl ContainerSummary {
    /// Why some member does not fit the capacities, if one does not.
    pub fn misfit(&self) -> Option<String> {
        self.members
            .iter()
            .find_map(|m| m.misfit().map(|why| format!("output {}: {why}", m.target)))
    }
}

impl std::fmt::Display for ContainerSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.members.iter().map(|m| m.target.as_str()).collect();
        writeln!(
            f,
            "container       {} models, one per output ({}): {} bytes (flash)",
            self.members.len(),
            names.join(", "),
            self.container_bytes
        )?;
        let (m, g, d) = self.capacity;
        write!(
            f,
            "RAM             {} bytes for Artefact<{m}, {g}, {d}, {}>",
            self.ram_bytes,
            self.members.len()
        )?;
        for member in &self.members {
            write!(f, "\n\noutput          {}\n{member}", member.target)?;
        }
        Ok(())
    }
}

/// Describes `spec`, encoded in `blob_bytes` bytes; the RAM figure is for a
/// `Model` of `capacity` `(M, G, D)`, or of the model's own sizes.
pub fn summarise(
    spec: &ModelSpec,
    blob_bytes: usize,
    capacity: Option<(usize, usize, usize)>,
) -> Summary {
    let s = &spec.shape;
    let (m, g, d) = (
        usize::from(s.n_basis),
        usize::from(s.feature_dim),
        usize::from(s.input_dim),
    );
    let y_var = f64::from(spec.y_scale).powi(2);
    let lengthscales = (!s.per_basis && !s.projected).then(|| {
        spec.widths
            .iter()
            .zip(&spec.x_scale)
            .map(|(&w, &scale)| f64::from(scale) / f64::from(w).sqrt())
            .collect()
    });
    let basis_widths = (s.per_basis && !s.projected && m > 0).then(|| basis_widths(spec, m, g));
    // The projection acts on standardised inputs; stored row-major, G x D.
    let projection = s.projected.then(|| {
        crate::fit::ProjectionReport::of(&nalgebra::DMatrix::from_row_iterator(
            g,
            d,
            spec.projection.iter().map(|&v| f64::from(v)),
        ))
    });
    let mut summary = Summary {
        kind: s.kind.name(),
        task: match s.link {
            Link::Identity => "regression",
            Link::Probit | Link::OneVsRest | Link::Softmax => "classification",
        },
        n_basis: m,
        feature_dim: g,
        input_dim: d,
        inputs: spec.input_names.clone(),
        target: spec.target_name.clone(),
        outputs: output_summaries(spec),
        class_rule: s.link.is_multi_class().then(|| s.link.name()),
        class_labels: spec.class_labels.clone(),
        training_range: (!spec.x_min.is_empty()).then(|| {
            spec.x_min
                .iter()
                .zip(&spec.x_max)
                .map(|(&min, &max)| InputRange { min, max })
                .collect()
        }),
        names_too_long: names_too_long(&spec.input_names, &spec.target_name)
            .into_iter()
            .chain(
                spec.outputs
                    .iter()
                    .filter(|o| o.name.len() > NAME_CAPACITY)
                    .map(|o| o.name.clone()),
            )
            .collect(),
        lengthscales,
        basis_widths,
        projection,
        basis_note: (s.kind == sgp_runtime::ModelKind::GpLasso).then_some(
            "training inputs selected by the lasso path; the blob holds their coordinates, not \
             their row numbers, which `sgp fit` prints (`--json`: report.gplasso.selected_rows)",
        ),
        signal_variance: f64::from(spec.prior) * y_var,
        noise_variance: f64::from(spec.noise) * y_var,
        learns: spec.learning.as_ref().map(|l| l.observation.name()),
        kernel: spec.kernel.name(),
        blob_bytes,
        capacity: capacity.unwrap_or((m, g, d)),
        ram_bytes: {
            let (cm, cg, cd) = capacity.unwrap_or((m, g, d));
            ram_bytes_with_outputs(cm, cg, cd, spec.output_count())
        },
        fits: true,
        fixed_point: None,
    };
    summary.fits = summary.misfit().is_none();
    summary
}

/// Each output's variances and bias in raw units, when there are several.
fn output_summaries(spec: &ModelSpec) -> Vec<OutputSummary> {
    if spec.output_count() <= 1 {
        return Vec::new();
    }
    (0..spec.output_count())
        .filter_map(|p| spec.output(p))
        .map(|o| {
            let y_var = f64::from(o.y_scale).powi(2);
            OutputSummary {
                shares_first_variance: o.shares_variance(),
                name: o.name,
                signal_variance: f64::from(o.prior) * y_var,
                noise_variance: f64::from(o.noise) * y_var,
                bias: f64::from(o.bias),
            }
        })
        .collect()
}

/// The spread over the basis of each input's raw-unit length scale; the
/// per-basis widths are stored row-major, M x G (G = D unprojected).
fn basis_widths(spec: &ModelSpec, m: usize, g: usize) -> Vec<WidthSpread> {
    (0..g)
        .map(|t| {
            let scale = f64::from(spec.x_scale[t]);
            WidthSpread::of(
                (0..m)
                    .map(|i| scale / f64::from(spec.widths[i * g + t]).sqrt())
                    .collect(),
            )
        })
        .collect()
}

impl Summary {
    /// Measures the fixed-point form's error against f64 on the training
    /// range of `blob` (the blob summarised) and adds it to the summary.
    ///
    /// # Errors
    /// A blob that does not decode.
    pub fn measure_fixed_point(&mut self, blob: &[u8]) -> crate::Result<()> {
        self.fixed_point = Some(crate::export::fixed::fixed_point_error(blob)?);
        Ok(())
    }

    /// Why the model does not fit `Model<M, G, D>` of the capacities summarised
    /// (a size over capacity, or a name over [`NAME_CAPACITY`] bytes), or
    /// `None` when it fits.
    pub fn misfit(&self) -> Option<String> {
        let (cm, cg, cd) = self.capacity;
        let sizes = [
            ("M", self.n_basis, cm),
            ("G", self.feature_dim, cg),
            ("D", self.input_dim, cd),
        ];
        let mut why: Vec<String> = sizes
            .iter()
            .filter(|(_, need, have)| need > have)
            .map(|(what, need, have)| format!("{what} = {need} > {have}"))
            .collect();
        if !self.names_too_long.is_empty() {
            why.push(format!(
                "names longer than {NAME_CAPACITY} bytes: {}",
                self.names_too_long.join(", ")
            ));
        }
        (!why.is_empty()).then(|| {
            format!(
                "does not fit a device Model<{cm}, {cg}, {cd}>: {}",
                why.join("; ")
            )
        })
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "kind            {} ({})", self.kind, self.task)?;
        writeln!(f, "kernel          {}", self.kernel)?;
        writeln!(
            f,
            "sizes           M = {}, G = {}, D = {}",
            self.n_basis, self.feature_dim, self.input_dim
        )?;
        writeln!(f, "inputs          {}", self.inputs.join(", "))?;
        self.write_outputs(f)?;
        if !self.class_labels.is_empty() {
            writeln!(f, "classes         {}", self.class_labels.join(", "))?;
        }
        self.write_inputs(f)?;
        if self.kind == sgp_runtime::ModelKind::SpgpHs.name() {
            writeln!(
                f,
                "uncertainties   h_m folded into L1, L2, not stored (see `sgp fit`'s summary)"
            )?;
        }
        if let Some(p) = &self.projection {
            let s: Vec<String> = p
                .singular_values
                .iter()
                .map(|v| format!("{v:.4}"))
                .collect();
            writeln!(
                f,
                "projection      {} x {} on standardised inputs; singular values {}",
                p.rows,
                p.cols,
                s.join(", ")
            )?;
        }
        if let Some(note) = self.basis_note {
            writeln!(f, "basis points    {note}")?;
        }
        writeln!(f, "signal variance {:.6}", self.signal_variance)?;
        writeln!(f, "noise variance  {:.6}", self.noise_variance)?;
        if let Some(rows) = self.learns {
            writeln!(
                f,
                "learning        on the device ({rows} rows; sgp_runtime::Model::update)"
            )?;
        }
        if let Some(fixed) = &self.fixed_point {
            writeln!(f, "fixed point     {fixed}")?;
        }
        writeln!(f, "blob            {} bytes (flash)", self.blob_bytes)?;
        let (m, g, d) = self.capacity;
        let p = match self.outputs.len() {
            0 | 1 => String::new(),
            p => format!(", {p}"),
        };
        write!(
            f,
            "RAM             {} bytes for Model<{m}, {g}, {d}{p}>{}",
            self.ram_bytes,
            match (self.fits, self.names_too_long.is_empty()) {
                (true, _) => "",
                (false, true) => " (too small: this model does not fit)",
                (false, false) => " (the names do not fit)",
            }
        )
    }
}

impl Summary {
    /// The target, or the outputs (or class latents) with their variances
    /// and how they share the variance factor.
    fn write_outputs(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.outputs.is_empty() {
            writeln!(f, "target          {}", self.target)?;
        } else {
            let what = match self.class_rule {
                Some(rule) => format!("class latents ({rule})"),
                None => "outputs".into(),
            };
            writeln!(f, "{what:<15} {}, on one basis:", self.outputs.len())?;
            for o in &self.outputs {
                writeln!(
                    f,
                    "  {:<13} signal variance {:.6}, noise variance {:.6}, bias {:.4}",
                    o.name, o.signal_variance, o.noise_variance, o.bias
                )?;
            }
            let sharing = self
                .outputs
                .iter()
                .filter(|o| o.shares_first_variance)
                .count();
            let factors = match sharing {
                0 => "one variance factor per output".to_string(),
                n if n + 1 == self.outputs.len() => {
                    "one variance factor for all outputs (the first's, scaled by each output's \
                 signal variance)"
                        .to_string()
                }
                n => format!("{n} outputs share the first's variance factor, scaled"),
            };
            writeln!(f, "variance        {factors}")?;
        }
        Ok(())
    }

    /// The training range, over-long names, length scales and basis widths.
    fn write_inputs(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.training_range {
            Some(ranges) => {
                writeln!(f, "training range  per input, raw units:")?;
                for (name, r) in self.inputs.iter().zip(ranges) {
                    writeln!(f, "  {name:<13} {} to {}", r.min, r.max)?;
                }
            }
            None => writeln!(
                f,
                "training range  not recorded (format version 1 or 2: refit to record it)"
            )?,
        }
        if !self.names_too_long.is_empty() {
            writeln!(
                f,
                "names           longer than the {NAME_CAPACITY} bytes a device Model holds \
             (it will refuse the blob): {}",
                self.names_too_long.join(", ")
            )?;
        }
        if let Some(l) = &self.lengthscales {
            let l: Vec<String> = l.iter().map(|v| format!("{v:.4}")).collect();
            writeln!(f, "length scales   {}", l.join(", "))?;
        }
        if let Some(w) = &self.basis_widths {
            writeln!(
                f,
                "basis widths    per input, as raw-unit length scales sqrt(Delta) * x_scale:"
            )?;
            for (name, s) in self.inputs.iter().zip(w) {
                writeln!(
                    f,
                    "  {name:<13} min {:.4}  median {:.4}  max {:.4}",
                    s.min, s.median, s.max
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_outputs_and_their_classes_are_listed() {
        let blob = include_bytes!("../../../runtime/tests/data/doc-model.sgp");
        let mut spec = ModelSpec::from_bytes(blob).unwrap();
        let one = summarise(&spec, blob.len(), None);
        assert!(one.outputs.is_empty() && one.class_labels.is_empty());
        let mut second = spec.output(0).unwrap();
        second.name = "power".into();
        second.bias = -0.25;
        spec.outputs.push(second);
        spec.shape.link = Link::OneVsRest;
        spec.class_labels = vec!["cold".into(), "hot".into()];
        let two = summarise(&spec, 0, None);
        let names: Vec<&str> = two.outputs.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["torque", "power"]);
        assert_eq!(two.class_rule, Some("one-vs-rest"));
        assert_eq!(two.ram_bytes, ram_bytes_with_outputs(3, 2, 2, 2));
        let text = two.to_string();
        assert!(
            text.contains("class latents (one-vs-rest) 2, on one basis:"),
            "{text}"
        );
        assert!(
            text.contains("  power") && text.contains("bias -0.2500"),
            "{text}"
        );
        assert!(text.contains("classes         cold, hot"), "{text}");
        assert!(text.contains("Model<3, 2, 2, 2>"), "{text}");
        assert!(
            text.contains("variance        one variance factor per output"),
            "{text}"
        );
    }

    #[test]
    fn outputs_sharing_one_variance_factor_are_shown() {
        let blob = include_bytes!("../../../runtime/tests/data/doc-model.sgp");
        let mut spec = ModelSpec::from_bytes(blob).unwrap();
        let mut second = spec.output(0).unwrap();
        second.name = "power".into();
        second.l1.clear();
        second.l2.clear();
        assert!(second.shares_variance());
        spec.outputs.push(second);
        let two = summarise(&spec, 0, None);
        let shares: Vec<bool> = two
            .outputs
            .iter()
            .map(|o| o.shares_first_variance)
            .collect();
        assert_eq!(shares, [false, true]);
        let text = two.to_string();
        assert!(
            text.contains("variance        one variance factor for all outputs"),
            "{text}"
        );
    }

    #[test]
    fn width_spread_is_min_median_max() {
        let s = WidthSpread::of(vec![3.0, 1.0, 2.0, 10.0]);
        assert_eq!((s.min, s.median, s.max), (1.0, 2.5, 10.0));
        let s = WidthSpread::of(vec![5.0, 1.0, 2.0]);
        assert_eq!((s.min, s.median, s.max), (1.0, 2.0, 5.0));
    }
}
