//! A trained model in runtime form, with the metadata a blob carries.

pub mod device;
pub mod features;
pub mod icf;
pub mod inference;
pub mod kernel;
pub mod likelihood;
pub mod multiclass;
pub mod posterior_sums;
pub(crate) mod state;
pub use state::SetPrediction;
pub(crate) mod precision;
pub(crate) mod shared_variance;
pub mod updatable;
pub(crate) mod variance_factor;

use nalgebra::{DMatrix, DVector};
use sgp_runtime::{Link, ModelKind, ModelSpec, OutputSpec, Shape, VarianceForm};

use crate::data::Standardisation;
use crate::model::features::BasisWidths;
use crate::model::inference::RuntimeForm;
use crate::{Error, Result};

/// The outcome of any fitting procedure: the runtime form of MATH.md in f64
/// and standardised units, plus what is needed to map raw units in and out.
/// It predicts itself in f64: the reference the exported f32 blob is held to.
#[derive(Clone, Debug)]
pub struct TrainedModel {
    /// Which procedure produced it.
    pub kind: ModelKind,
    /// Regression or probit classification.
    pub link: Link,
    /// Basis functions, weights, factors, prior and noise (standardised).
    #[cfg(feature = "internals")]
    pub form: RuntimeForm,
    #[cfg(not(feature = "internals"))]
    pub(crate) form: RuntimeForm,
    /// Raw to standardised units.
    #[cfg(feature = "internals")]
    pub transform: Standardisation,
    #[cfg(not(feature = "internals"))]
    pub(crate) transform: Standardisation,
    /// Input column names, in input order.
    pub input_names: Vec<String>,
    /// Target column name.
    pub target_name: String,
    /// Probit offset `b` (0 for regression).
    pub bias: f64,
    /// Raw target value of the positive class (probit; 0 for regression).
    pub positive_class: f64,
}

/// Several models on one basis: the `P` outputs of a multi-output
/// regression, or the `K` latent functions of a classifier, exported as one
/// blob that evaluates the basis vector once.
///
/// Every member has the same `form.basis` (bit for bit: a fit folds each
/// output's own signal variance into its `beta`, factors and `prior`) and
/// the same input standardisation; each keeps its own target scaling,
/// noise, weights, factors and probit offset. A single-output model is a set
/// of one ([`ModelSet::single`]).
#[derive(Clone, Debug)]
pub struct ModelSet {
    /// The outputs (regression) or class latents, in output order.
    pub members: Vec<TrainedModel>,
    /// Class labels as the data spelled them, in class order: empty for
    /// regression, `[negative, positive]` for a binary classifier (one
    /// member), one per member for `K > 2` classes.
    pub class_labels: Vec<String>,
}

impl ModelSet {
    /// A set of one model, with the class labels of a binary classifier
    /// (empty for regression).
    pub fn single(model: TrainedModel, class_labels: Vec<String>) -> Self {
        ModelSet {
            members: vec![model],
            class_labels,
        }
    }
}

impl ModelSet {
    /// The link of the set's blob: the members' (they must agree).
    /// Several probit members are a multi-class classifier, which needs a
    /// rule to turn their latents into probabilities: the fit sets every
    /// member's link to [`Link::OneVsRest`] or [`Link::Softmax`] (each
    /// member still predicts its latent `f + b`, as a probit model does).
    ///
    /// # Errors
    /// [`Error::BadInput`] for an empty set, members with different links,
    /// several probit members, or one member with a multi-class link.
    pub fn link(&self) -> Result<Link> {
        let first = self
            .members
            .first()
            .ok_or_else(|| Error::BadInput("a model set needs at least one member".into()))?;
        let link = first.link;
        if let Some((p, other)) = self
            .members
            .iter()
            .enumerate()
            .find(|(_, m)| m.link != link)
        {
            return Err(Error::BadInput(format!(
                "the members of a model set share one link: member 0 is {}, member {p} {}",
                link.name(),
                other.link.name()
            )));
        }
        let count = self.members.len();
        match link {
            Link::Probit if count > 1 => Err(Error::BadInput(format!(
                "{count} probit members: a multi-class classifier's members take the {} or the \
                 {} link, the rule that turns their latents into class probabilities",
                Link::OneVsRest.name(),
                Link::Softmax.name()
            ))),
            Link::OneVsRest | Link::Softmax if count < 2 => Err(Error::BadInput(format!(
                "the {} link needs one member per class, at least two; a binary classifier \
                 is one probit member",
                link.name()
            ))),
            _ => Ok(link),
        }
    }

    /// The blob description of the whole set (every member in the solves
    /// form, as [`TrainedModel::to_spec`]): the first member's spec with
    /// the others' own numbers as its further outputs.
    ///
    /// # Errors
    /// As [`ModelSet::link`] and [`TrainedModel::to_spec`], and
    /// [`Error::BadInput`] when a member does not share the first one's
    /// basis and input scaling.
    pub fn to_spec(&self) -> Result<ModelSpec> {
        self.join(TrainedModel::to_spec)
    }

    /// [`ModelSet::to_spec`] with every member in the product form of the
    /// variance ([`TrainedModel::to_product_spec`]).
    ///
    /// # Errors
    /// As [`ModelSet::to_spec`], and [`Error::Numerical`] when a member's
    /// `W` has no such factor in f64.
    pub fn to_product_spec(&self) -> Result<ModelSpec> {
        self.join(TrainedModel::to_product_spec)
    }

    /// [`ModelSet::to_spec`] in the whitened form of an updatable blob
    /// (format version 7, [`TrainedModel::to_whitened_spec`]), every
    /// member's mean in the learning block.
    ///
    /// # Errors
    /// As [`ModelSet::to_spec`] and [`updatable::whitened_factor`].
    pub(crate) fn to_whitened_spec(
        &self,
        observation: sgp_runtime::Observation,
    ) -> Result<ModelSpec> {
        self.join(|member| member.to_whitened_spec(observation))
    }

    /// Each member's spec by `member_spec`, joined into one.
    fn join(&self, member_spec: impl Fn(&TrainedModel) -> Result<ModelSpec>) -> Result<ModelSpec> {
        let link = self.link()?;
        let mut specs = self.members.iter().map(member_spec);
        let mut joined = specs
            .next()
            .ok_or_else(|| Error::BadInput("a model set needs at least one member".into()))??;
        joined.shape.link = link;
        if link.is_multi_class() {
            joined.positive_class = 0.0;
        }
        let first_form = self.members.first().map(|m| &m.form);
        for (p, (spec, member)) in specs.zip(self.members.iter().skip(1)).enumerate() {
            let mut spec = spec?;
            spec.shape.link = link;
            if first_form.is_some_and(|f| shared_variance::shares_first_variance(f, &member.form)) {
                // Format version 6: no factors, the first output's variance.
                spec.l1.clear();
                spec.l2.clear();
            }
            if let (Some(joined), Some(own)) = (&mut joined.learning, &spec.learning) {
                joined.means.extend(own.means.iter().cloned());
            }
            if let Some(field) = basis_difference(&joined, &spec) {
                return Err(Error::BadInput(format!(
                    "member {} of the model set does not share member 0's basis: its {field} \
                     differs",
                    p + 1
                )));
            }
            joined.outputs.push(OutputSpec {
                name: spec.target_name,
                beta: spec.beta,
                l1: spec.l1,
                l2: spec.l2,
                prior: spec.prior,
                noise: spec.noise,
                bias: spec.bias,
                y_mean: spec.y_mean,
                y_scale: spec.y_scale,
            });
        }
        joined.class_labels.clone_from(&self.class_labels);
        joined.validate()?;
        Ok(joined)
    }
}

/// The first field (name as in FORMAT.md) in which `b` does not share the
/// basis, inputs and variance form of `a`, if any.
fn basis_difference(a: &ModelSpec, b: &ModelSpec) -> Option<&'static str> {
    let fields: [(&'static str, bool); 11] = [
        ("shape", a.shape == b.shape),
        ("input_names", a.input_names == b.input_names),
        ("x_mean", a.x_mean == b.x_mean),
        ("x_scale", a.x_scale == b.x_scale),
        ("projection", a.projection == b.projection),
        ("centres", a.centres == b.centres),
        ("widths", a.widths == b.widths),
        ("amplitudes", a.amplitudes == b.amplitudes),
        ("x_min", a.x_min == b.x_min),
        ("x_max", a.x_max == b.x_max),
        ("variance", a.variance == b.variance),
    ];
    fields
        .into_iter()
        .find(|(_, same)| !same)
        .map(|(name, _)| name)
}

/// Predictions in raw target units.
#[derive(Clone, Debug, PartialEq)]
pub struct RawPrediction {
    /// Predictive mean of `y` (regression) or of the latent `f + b` (probit).
    pub mean: DVector<f64>,
    /// Predictive variance of `y`, noise included (regression) or of the
    /// latent (probit).
    pub var: DVector<f64>,
}

impl TrainedModel {
    /// A regression model of `kind` in `data`'s units.
    pub(crate) fn regression(
        kind: ModelKind,
        form: RuntimeForm,
        data: &crate::data::Dataset,
    ) -> Self {
        TrainedModel {
            kind,
            link: Link::Identity,
            form,
            transform: data.transform.clone(),
            input_names: data.input_names.clone(),
            target_name: data.target_name.clone(),
            bias: 0.0,
            positive_class: 0.0,
        }
    }

    /// A probit classifier of `kind` whose latent `f + bias` says yes to
    /// the raw target value `positive`, in `data`'s input units.
    pub(crate) fn classifier(
        kind: ModelKind,
        form: RuntimeForm,
        data: &crate::data::Dataset,
        (bias, positive): (f64, f64),
    ) -> Self {
        let mut transform = data.transform.clone();
        transform.y_mean = 0.0;
        transform.y_scale = 1.0;
        TrainedModel {
            kind,
            link: Link::Probit,
            form,
            transform,
            input_names: data.input_names.clone(),
            target_name: data.target_name.clone(),
            bias,
            positive_class: positive,
        }
    }

    /// Number of basis functions `M`.
    pub fn n_basis(&self) -> usize {
        self.form.basis.len()
    }

    /// Predicts at raw inputs (rows of `x`), in f64, through the same
    /// runtime formulas the device evaluates.
    pub fn predict_raw(&self, x: &DMatrix<f64>) -> Result<RawPrediction> {
        if x.ncols() != self.input_names.len() {
            return Err(Error::BadInput(format!(
                "inputs have {} columns, the model expects {}",
                x.ncols(),
                self.input_names.len()
            )));
        }
        let p = self.form.predict(&self.transform.apply_x(x))?;
        Ok(match self.link {
            Link::Identity => RawPrediction {
                mean: self.transform.unapply_y(&p.mean),
                var: p.var_y().map(|v| self.transform.unapply_var(v)),
            },
            Link::Probit | Link::OneVsRest | Link::Softmax => RawPrediction {
                mean: p.mean.add_scalar(self.bias),
                var: p.var,
            },
        })
    }

    /// The blob description, numbers rounded to f32.
    ///
    /// # Errors
    /// [`Error::Blob`] when a size does not fit the format (more than 65535
    /// basis functions or inputs).
    pub fn to_spec(&self) -> Result<ModelSpec> {
        let basis = &self.form.basis;
        let m = basis.len();
        let g = basis.centres.ncols();
        let d = self.input_names.len();
        let size = |n: usize, field: &'static str| {
            u16::try_from(n).map_err(|_| {
                Error::BadInput(format!(
                    "{field} = {n} is more than a blob can hold (65535)"
                ))
            })
        };
        let (widths, per_basis) = match &basis.widths {
            BasisWidths::Shared(w) => (f32s(w.iter()), false),
            BasisWidths::PerBasis(w) => (row_major(w), true),
        };
        let amplitudes = if per_basis {
            f32s(basis.amplitudes.iter())
        } else {
            f32s(basis.amplitudes.iter().take(1))
        };
        let (y_mean, y_scale) = match self.link {
            Link::Identity => (self.transform.y_mean, self.transform.y_scale),
            Link::Probit | Link::OneVsRest | Link::Softmax => (0.0, 1.0),
        };
        Ok(ModelSpec {
            shape: Shape {
                kind: self.kind,
                link: self.link,
                input_dim: size(d, "input dimension")?,
                feature_dim: size(g, "feature dimension")?,
                n_basis: size(m, "number of basis functions")?,
                projected: basis.projection.is_some(),
                per_basis,
                two_factors: self.form.l2.is_some(),
            },
            input_names: self.input_names.clone(),
            target_name: self.target_name.clone(),
            x_mean: f32s(self.transform.x_mean.iter()),
            x_scale: f32s(self.transform.x_scale.iter()),
            projection: basis.projection.as_ref().map(row_major).unwrap_or_default(),
            centres: row_major(&basis.centres),
            widths,
            amplitudes,
            beta: f32s(self.form.beta.iter()),
            l1: packed_lower(&self.form.l1),
            l2: self.form.l2.as_ref().map(packed_lower).unwrap_or_default(),
            prior: self.form.prior as f32,
            noise: self.form.noise_var as f32,
            bias: self.bias as f32,
            y_mean: y_mean as f32,
            y_scale: y_scale as f32,
            positive_class: match self.link {
                Link::Identity | Link::OneVsRest | Link::Softmax => 0.0,
                Link::Probit => self.positive_class as f32,
            },
            // Rounding to f32 keeps order, so every training input, as the
            // device reads it in f32, is inside the rounded range.
            x_min: f32s(self.transform.x_min.iter()),
            x_max: f32s(self.transform.x_max.iter()),
            variance: VarianceForm::Solves,
            outputs: Vec::new(),
            class_labels: Vec::new(),
            learning: None,
            kernel: basis.kernel,
        })
    }

    /// [`TrainedModel::to_spec`] with the product form of the variance
    /// (one factor `C`, `W = C^T C`, see `crate::model::variance_factor`).
    ///
    /// # Errors
    /// As [`TrainedModel::to_spec`], and [`Error::Numerical`] when `W` has
    /// no such factor in f64.
    pub fn to_product_spec(&self) -> Result<ModelSpec> {
        let factor = crate::model::variance_factor::product_factor(&self.form)?;
        let mut spec = self.to_spec()?;
        spec.l1 = packed_lower(&factor);
        spec.l2 = Vec::new();
        spec.shape.two_factors = false;
        spec.variance = VarianceForm::Product;
        Ok(spec)
    }
}

fn f32s<'a>(values: impl Iterator<Item = &'a f64>) -> Vec<f32> {
    values.map(|&v| v as f32).collect()
}

fn row_major(m: &DMatrix<f64>) -> Vec<f32> {
    m.row_iter().flat_map(|row| f32s(row.iter())).collect()
}

/// The lower triangle, row by row (FORMAT.md).
fn packed_lower(l: &DMatrix<f64>) -> Vec<f32> {
    (0..l.nrows())
        .flat_map(|i| (0..=i).map(move |j| l[(i, j)] as f32))
        .collect()
}
