//! Blob format v7 (and v1 to v6, still read): the single definition of what
//! the trainer writes and the device reads. `runtime/FORMAT.md` describes the
//! same layout byte by byte.
//!
//! A blob is a fixed 10-byte preamble (magic, version, body length), a body
//! encoded with postcard, and a CRC-32 trailer. The preamble is fixed-width
//! rather than postcard so that a reader can reject foreign or truncated
//! bytes before decoding anything.

use serde::{Deserialize, Serialize};

use crate::error::{Dimension, Error};
use crate::version::{OLDEST_VERSION, VERSION};

/// The four bytes every blob starts with.
pub const MAGIC: [u8; 4] = *b"SGPM";
/// Bytes before the body: magic, version (u16 LE), body length (u32 LE).
pub const PREAMBLE_LEN: usize = 10;
/// Bytes after the body: CRC-32 (LE).
pub const TRAILER_LEN: usize = 4;

/// CRC-32/ISO-HDLC (the zlib/PNG CRC), bitwise: it runs once per load, so a
/// 1 KiB table in flash would buy nothing.
pub(crate) const CRC: crc::Crc<u32, crc::NoTable> =
    crc::Crc::<u32, crc::NoTable>::new(&crc::CRC_32_ISO_HDLC);

/// Which fitting procedure produced a model. The runtime evaluates all of
/// them the same way; the kind is metadata for tools and logs.
///
/// ```
/// use sgp_runtime::ModelKind;
/// assert_eq!(ModelKind::Spgp.name(), "spgp");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ModelKind {
    /// Exact GP on (a subset of) the training data.
    Exact,
    /// SPGP / FITC with pseudo-inputs.
    Spgp,
    /// SPGP with per-pseudo-input uncertainty (heteroscedastic).
    SpgpHs,
    /// SPGP with a learned linear projection of the inputs.
    SpgpDr,
    /// Variable-sigma GP: multiscale basis functions.
    Vsgp,
    /// GPLasso: l1-sparse weights over training inputs.
    GpLasso,
    /// Informative vector machine: greedy active set.
    Ivm,
    /// Sparse variational GP classifier: learned inducing inputs.
    Svgp,
}

impl ModelKind {
    /// Short lowercase name, as used on the `sgp` command line.
    ///
    /// ```
    /// assert_eq!(sgp_runtime::ModelKind::GpLasso.name(), "gplasso");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            ModelKind::Exact => "exact",
            ModelKind::Spgp => "spgp",
            ModelKind::SpgpHs => "spgp-hs",
            ModelKind::SpgpDr => "spgp-dr",
            ModelKind::Vsgp => "vsgp",
            ModelKind::GpLasso => "gplasso",
            ModelKind::Ivm => "ivm",
            ModelKind::Svgp => "svgp",
        }
    }
}

/// How the latent functions map to the outputs. The variants' order is
/// their wire index: new ones are appended, so an older blob keeps its
/// meaning.
///
/// ```
/// use sgp_runtime::Link;
/// assert_ne!(Link::Identity, Link::Probit);
/// assert!(Link::Softmax.classifies() && !Link::Identity.classifies());
/// assert!(Link::OneVsRest.is_multi_class() && !Link::Probit.is_multi_class());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Link {
    /// Regression: Gaussian noise, outputs in the target's raw units.
    Identity,
    /// Binary classification: `P(y = +1) = Phi((m + b) / sqrt(1 + v))`.
    Probit,
    /// `K >= 2` classes, one latent per class (format version 5):
    /// `q_k = Phi((m_k + b_k) / sqrt(1 + v_k))`, `p_k = q_k / sum_j q_j`.
    OneVsRest,
    /// `K >= 2` classes, one latent per class (format version 5): `p_k`
    /// proportional to `exp((m_k + b_k) / sqrt(1 + pi v_k / 8))`.
    Softmax,
}

impl Link {
    /// Whether the outputs are class latents (every link but
    /// [`Link::Identity`]): their predictions are the latent `f + b`, not
    /// target units, and `noise`, `y_mean`, `y_scale` are unused.
    ///
    /// ```
    /// assert!(sgp_runtime::Link::Probit.classifies());
    /// ```
    pub const fn classifies(self) -> bool {
        !matches!(self, Link::Identity)
    }

    /// Whether the link spreads probability over one latent per class
    /// ([`Link::OneVsRest`], [`Link::Softmax`]).
    ///
    /// ```
    /// assert!(!sgp_runtime::Link::Probit.is_multi_class());
    /// ```
    pub const fn is_multi_class(self) -> bool {
        matches!(self, Link::OneVsRest | Link::Softmax)
    }

    /// Short lowercase name, as the trainer reports it.
    ///
    /// ```
    /// assert_eq!(sgp_runtime::Link::OneVsRest.name(), "one-vs-rest");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            Link::Identity => "identity",
            Link::Probit => "probit",
            Link::OneVsRest => "one-vs-rest",
            Link::Softmax => "softmax",
        }
    }

    /// Accepts `outputs` outputs and `labels` class labels for this link
    /// (FORMAT.md, "Several outputs"): regression takes any number of
    /// outputs and no labels; probit one output and no labels or two; a
    /// multi-class link at least two outputs and no labels or one per
    /// output.
    pub(crate) fn check_outputs(self, outputs: usize) -> Result<(), Error> {
        let fits = match self {
            Link::Identity => outputs >= 1,
            Link::Probit => outputs == 1,
            Link::OneVsRest | Link::Softmax => outputs >= 2,
        };
        if fits {
            Ok(())
        } else {
            Err(Error::InvalidValue {
                field: OUTPUTS_FIELD,
            })
        }
    }

    /// Accepts `labels` class labels for a model with `outputs` outputs.
    pub(crate) fn check_labels(self, outputs: usize, labels: usize) -> Result<(), Error> {
        let expected = match self {
            Link::Identity => 0,
            Link::Probit => 2,
            Link::OneVsRest | Link::Softmax => outputs,
        };
        if labels == 0 || labels == expected {
            Ok(())
        } else {
            Err(Error::InconsistentSizes {
                field: LABELS_FIELD,
                expected,
                found: labels,
            })
        }
    }
}

/// The name of the sequence of further outputs in error messages.
const OUTPUTS_FIELD: &str = "outputs";
/// The name of the sequence of class labels in error messages.
const LABELS_FIELD: &str = "class_labels";

/// How the variance term `k^T W k` is stored in `l1` (and `l2`).
///
/// ```
/// use sgp_runtime::VarianceForm;
/// assert_eq!(VarianceForm::default(), VarianceForm::Solves);
/// assert_eq!(VarianceForm::Product.name(), "product");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum VarianceForm {
    /// `k^T W k = |L1^-1 k|^2 - |L2^-1 k|^2`: one forward substitution per
    /// stored factor (the second only with [`Shape::two_factors`]). The
    /// only form before format version 4.
    #[default]
    Solves,
    /// `k^T W k = |L1 k|^2` with `W = L1^T L1`: one triangular
    /// matrix-vector product, `M (M + 1) / 2` multiply-adds whose rows do
    /// not wait on each other, and no `l2` (format version 4).
    Product,
    /// `L1 = chol(K_M)` and, in `l2`, a strictly lower `G` and a diagonal
    /// `d` that give the posterior of the whitened inducing values `L1^-1
    /// u` its covariance `S`, `I - S = (I - G)^T (I - diag(d)) (I - G)`:
    /// `k^T W k = |z|^2 - z^T S z`, `z = L1^-1 k` (format version 7). The form a model learns on the device in
    /// ([`crate::Model::update`]); the blob then carries a
    /// [`Field::Learning`] block. A version-7 or -8 blob's form: they load
    /// and learn as before; the trainer now writes
    /// [`VarianceForm::Covariance`].
    Whitened,
    /// As [`VarianceForm::Whitened`], but `l2` factors the covariance `S`
    /// itself: `S = W^T diag(D) W` with `W` unit lower triangular (its
    /// strictly lower part in `l2`, `D >= 0` on the diagonal), so `z^T S z
    /// = sum D_i ((W z)_i)^2` adds non-negative terms and an update keeps
    /// `S >= 0` by construction (format version 9).
    ///
    /// ```
    /// use sgp_runtime::VarianceForm;
    /// assert_eq!(VarianceForm::Covariance.name(), "covariance");
    /// assert!(VarianceForm::Covariance.learns() && VarianceForm::Whitened.learns());
    /// ```
    Covariance,
}

impl VarianceForm {
    /// Short lowercase name, as the trainer reports it.
    ///
    /// ```
    /// assert_eq!(sgp_runtime::VarianceForm::Solves.name(), "solves");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            VarianceForm::Solves => "solves",
            VarianceForm::Product => "product",
            VarianceForm::Whitened => "whitened",
            VarianceForm::Covariance => "covariance",
        }
    }

    /// Whether a model of this form learns on the device: its blob carries
    /// a [`Field::Learning`] block and its `L1` is `chol(K_M)`.
    ///
    /// ```
    /// assert!(!sgp_runtime::VarianceForm::Solves.learns());
    /// ```
    pub const fn learns(self) -> bool {
        matches!(self, VarianceForm::Whitened | VarianceForm::Covariance)
    }

    /// Accepts this form for `shape` in a blob of format `version`: the
    /// product has one factor, the whitened form two and format version 7
    /// (an older reader does not know it: `Malformed`, as any enum index
    /// past its last variant).
    pub(crate) fn check(self, shape: &Shape, version: u16) -> Result<Self, Error> {
        let fits = match self {
            VarianceForm::Solves => true,
            VarianceForm::Product => !shape.two_factors,
            VarianceForm::Whitened if version < LEARNING_VERSION => return Err(Error::Malformed),
            VarianceForm::Covariance if version < COVARIANCE_VERSION => {
                return Err(Error::Malformed)
            }
            VarianceForm::Whitened | VarianceForm::Covariance => shape.two_factors,
        };
        if fits {
            Ok(self)
        } else {
            Err(Error::InvalidValue {
                field: Field::Variance.name(),
            })
        }
    }
}

/// The covariance function of the basis, with `r^2 = sum_g w_g (z_g -
/// c_g)^2` the scaled squared distance (field 32, format version 8; blobs
/// before it are [`Kernel::SquaredExponential`]):
///
/// - [`Kernel::SquaredExponential`]: `a exp(-r^2 / 2)`;
/// - [`Kernel::Matern12`]: `a exp(-r)`;
/// - [`Kernel::Matern32`]: `a (1 + sqrt3 r) exp(-sqrt3 r)`;
/// - [`Kernel::Matern52`]: `a (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r)`.
///
/// ```
/// use sgp_runtime::Kernel;
/// assert_eq!(Kernel::default(), Kernel::SquaredExponential);
/// assert_eq!(Kernel::Matern32.name(), "matern32");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Kernel {
    /// Squared exponential (infinitely smooth).
    #[default]
    SquaredExponential,
    /// Matérn with `nu = 1/2` (continuous, not differentiable).
    Matern12,
    /// Matérn with `nu = 3/2` (once differentiable).
    Matern32,
    /// Matérn with `nu = 5/2` (twice differentiable).
    Matern52,
}

impl Kernel {
    /// Every kernel, in wire order.
    pub const ALL: [Kernel; 4] = [
        Kernel::SquaredExponential,
        Kernel::Matern12,
        Kernel::Matern32,
        Kernel::Matern52,
    ];

    /// Short lowercase name, as used on the `sgp` command line.
    ///
    /// ```
    /// assert_eq!(sgp_runtime::Kernel::SquaredExponential.name(), "se");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            Kernel::SquaredExponential => "se",
            Kernel::Matern12 => "matern12",
            Kernel::Matern32 => "matern32",
            Kernel::Matern52 => "matern52",
        }
    }

    /// The kernel of wire index `index`; an index this runtime does not
    /// know (a kernel added by a newer writer) is `InvalidValue {field:
    /// "kernel"}`.
    ///
    /// ```
    /// use sgp_runtime::{Error, Kernel};
    /// assert_eq!(Kernel::from_index(2), Ok(Kernel::Matern32));
    /// assert_eq!(Kernel::from_index(9), Err(Error::InvalidValue { field: "kernel" }));
    /// ```
    pub fn from_index(index: u32) -> Result<Self, Error> {
        usize::try_from(index)
            .ok()
            .and_then(|i| Self::ALL.get(i).copied())
            .ok_or(Error::InvalidValue {
                field: Field::Kernel.name(),
            })
    }

    /// `sqrt(2 nu)`, the factor of `r` in the exponent, for a Matérn
    /// kernel; `None` for the squared exponential.
    pub(crate) fn rate(self) -> Option<f32> {
        match self {
            Kernel::SquaredExponential => None,
            Kernel::Matern12 => Some(1.0),
            Kernel::Matern32 => Some(1.732_050_8),
            Kernel::Matern52 => Some(2.236_068),
        }
    }
}

/// The format version that added the [`VarianceForm::Whitened`] form and
/// the [`Field::Learning`] block.
pub(crate) const LEARNING_VERSION: u16 = 7;

/// The format version that added the [`Field::Kernel`].
pub(crate) const KERNEL_VERSION: u16 = 8;

/// The format version that added the [`VarianceForm::Covariance`] form.
pub(crate) const COVARIANCE_VERSION: u16 = 9;

/// How an updatable model ([`VarianceForm::Whitened`], format version 7)
/// conditions on one new observation `y` at `x`, with `z = L1^-1 k(x)`:
///
/// - [`Observation::Fitc`]: `y = f + e`, `e ~ N(0, prior - |z|^2 +
///   noise)`, FITC's row variance (the trainer's default objective);
/// - [`Observation::Vfe`]: `e ~ N(0, noise)`, VFE's (Titsias');
/// - [`Observation::Probit`]: a class label, `P(y = +1) = Phi(f + bias)`,
///   by one step of assumed-density filtering (a classifier).
///
/// ```
/// assert_eq!(sgp_runtime::Observation::Vfe.name(), "vfe");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Observation {
    /// Gaussian noise plus FITC's diagonal correction.
    Fitc,
    /// Gaussian noise alone (VFE, DTC).
    Vfe,
    /// A probit classifier's label.
    Probit,
}

impl Observation {
    /// Short lowercase name, as the trainer reports it.
    ///
    /// ```
    /// assert_eq!(sgp_runtime::Observation::Fitc.name(), "fitc");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            Observation::Fitc => "fitc",
            Observation::Vfe => "vfe",
            Observation::Probit => "probit",
        }
    }

    /// Accepts this observation model for a blob of link `link`: the
    /// Gaussian ones for regression, the probit one for a binary
    /// classifier; a multi-class model does not learn on the device.
    pub(crate) fn check(self, link: Link) -> Result<Self, Error> {
        let fits = match self {
            Observation::Fitc | Observation::Vfe => link == Link::Identity,
            Observation::Probit => link == Link::Probit,
        };
        if fits {
            Ok(self)
        } else {
            Err(Error::InvalidValue {
                field: Field::Learning.name(),
            })
        }
    }
}

/// Accepts whether a blob carries a [`Field::Learning`] block: exactly
/// when its variance form [`VarianceForm::learns`].
pub(crate) fn check_learning_present(variance: VarianceForm, present: bool) -> Result<(), Error> {
    if present == variance.learns() {
        Ok(())
    } else {
        Err(Error::InvalidValue {
            field: Field::Learning.name(),
        })
    }
}

/// Accepts a Gaussian observation model's noise: the update divides by a
/// variance no smaller than it, so it must be `> 0`.
pub(crate) fn check_learning_noise(observation: Observation, noise: f32) -> Result<(), Error> {
    if observation == Observation::Probit || noise > 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidValue {
            field: Field::Noise.name(),
        })
    }
}

/// The sizes and switches of a model: everything needed to know how long
/// each array in the body is.
///
/// ```
/// use sgp_runtime::{Link, ModelKind, Shape};
/// let shape = Shape {
///     kind: ModelKind::Spgp, link: Link::Identity,
///     input_dim: 3, feature_dim: 3, n_basis: 10,
///     projected: false, per_basis: false, two_factors: true,
/// };
/// assert!(shape.validate().is_ok());
/// assert_eq!(shape.expected_len(sgp_runtime::Field::L1), 55);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Shape {
    /// Fitting procedure that produced the model.
    pub kind: ModelKind,
    /// Output link.
    pub link: Link,
    /// Raw input dimension `D`.
    pub input_dim: u16,
    /// Dimension `G` the basis functions live in; equals `D` unless projected.
    pub feature_dim: u16,
    /// Number of basis functions `M`.
    pub n_basis: u16,
    /// A `G x D` projection follows standardisation (SPGP+DR).
    pub projected: bool,
    /// Amplitudes and widths are per basis function (VSGP, exact) rather
    /// than shared.
    pub per_basis: bool,
    /// The variance uses a second factor `L2` (FITC-style models).
    pub two_factors: bool,
}

/// The numeric fields of the body, in wire order. Used in error messages and
/// to look up each field's length and valid range.
///
/// ```
/// assert_eq!(sgp_runtime::Field::XScale.name(), "x_scale");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Field {
    /// Per-input mean subtracted before scaling (`D`).
    XMean,
    /// Per-input scale divided by (`D`, positive).
    XScale,
    /// Projection matrix, row-major `G x D` (empty unless projected).
    Projection,
    /// Basis centres, row-major `M x G`.
    Centres,
    /// Inverse squared widths, `G` (shared) or row-major `M x G`; non-negative.
    Widths,
    /// Amplitudes, `1` (shared) or `M`; non-negative.
    Amplitudes,
    /// Mean weights (`M`).
    Beta,
    /// First factor, lower triangle packed row-major, `M (M + 1) / 2`:
    /// solved against ([`VarianceForm::Solves`]) or multiplied by
    /// ([`VarianceForm::Product`]).
    L1,
    /// Second factor, same packing, or empty.
    L2,
    /// Latent prior variance at any input.
    Prior,
    /// Noise variance in standardised units (regression).
    Noise,
    /// Latent offset `b` of the probit link.
    Bias,
    /// Target mean.
    YMean,
    /// Target scale (positive).
    YScale,
    /// Raw target value of the positive class (probit; format version 2).
    PositiveClass,
    /// Smallest training value of each input, raw units (`D`, or none when
    /// no range is recorded; format version 3).
    XMin,
    /// Largest training value of each input, raw units (as many as
    /// [`Field::XMin`], none below its minimum; format version 3).
    XMax,
    /// The [`VarianceForm`] of `l1` and `l2` (format version 4).
    Variance,
    /// What an updatable model learns with (format version 7): its
    /// [`Observation`] model and, per output, the whitened posterior mean
    /// `L1^T beta`.
    Learning,
    /// The [`Kernel`] of the basis (format version 8).
    Kernel,
}

impl Field {
    /// The field's name in `FORMAT.md`.
    ///
    /// ```
    /// assert_eq!(sgp_runtime::Field::L2.name(), "l2");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            Field::XMean => "x_mean",
            Field::XScale => "x_scale",
            Field::Projection => "projection",
            Field::Centres => "centres",
            Field::Widths => "widths",
            Field::Amplitudes => "amplitudes",
            Field::Beta => "beta",
            Field::L1 => "l1",
            Field::L2 => "l2",
            Field::Prior => "prior",
            Field::Noise => "noise",
            Field::Bias => "bias",
            Field::YMean => "y_mean",
            Field::YScale => "y_scale",
            Field::PositiveClass => "positive_class",
            Field::XMin => "x_min",
            Field::XMax => "x_max",
            Field::Variance => "variance",
            Field::Learning => "learning",
            Field::Kernel => "kernel",
        }
    }

    /// Accepts `value` if it is finite and in this field's range.
    ///
    /// Scales must be normal numbers, not only positive: the device stores
    /// `1 / x_scale` (infinite for a subnormal scale) and multiplies
    /// variances by `y_scale^2` (so that square must be a finite, non-zero
    /// normal number too).
    ///
    /// ```
    /// use sgp_runtime::{Error, Field};
    /// assert_eq!(Field::XScale.check(0.0), Err(Error::InvalidValue { field: "x_scale" }));
    /// assert!(Field::XScale.check(1e-40).is_err()); // subnormal
    /// assert!(Field::YScale.check(1e20).is_err()); // its square overflows
    /// assert_eq!(Field::Beta.check(f32::NAN), Err(Error::NonFinite { field: "beta" }));
    /// assert_eq!(Field::Beta.check(-2.0), Ok(-2.0));
    /// ```
    pub fn check(self, value: f32) -> Result<f32, Error> {
        if !value.is_finite() {
            return Err(Error::NonFinite { field: self.name() });
        }
        let valid = match self {
            Field::XScale => value > 0.0 && value.is_normal(),
            Field::YScale => value > 0.0 && (value * value).is_normal(),
            Field::Widths | Field::Amplitudes | Field::Prior | Field::Noise => value >= 0.0,
            _ => true,
        };
        if valid {
            Ok(value)
        } else {
            Err(Error::InvalidValue { field: self.name() })
        }
    }
}

/// Accepts a diagonal element of a triangular factor: the forward
/// substitution divides by it, so it must be strictly positive.
pub(crate) fn check_diagonal(field: Field, value: f32) -> Result<f32, Error> {
    if value > 0.0 {
        Ok(value)
    } else {
        Err(Error::InvalidValue {
            field: field.name(),
        })
    }
}

/// The factor by which an output that shares the first output's variance
/// (format version 6: no `l1` of its own) scales it: `prior / first_prior`,
/// which must be finite (so the first output's prior must be `> 0`).
pub(crate) fn shared_variance_ratio(first_prior: f32, prior: f32) -> Result<f32, Error> {
    let ratio = prior / first_prior;
    if first_prior > 0.0 && ratio.is_finite() {
        Ok(ratio)
    } else {
        Err(Error::InvalidValue {
            field: Field::Prior.name(),
        })
    }
}

/// Checks the number of means in a [`Field::Learning`] block: one per
/// output.
pub(crate) fn check_means_len(outputs: usize, found: usize) -> Result<(), Error> {
    check_learning_len(outputs, found)
}

/// Checks the length of one output's mean in a [`Field::Learning`] block:
/// `M`.
pub(crate) fn check_mean_len(m: usize, found: usize) -> Result<(), Error> {
    check_learning_len(m, found)
}

fn check_learning_len(expected: usize, found: usize) -> Result<(), Error> {
    if found == expected {
        Ok(())
    } else {
        Err(Error::InconsistentSizes {
            field: Field::Learning.name(),
            expected,
            found,
        })
    }
}

/// Checks the length of `x_min`: `D`, or 0 when no range is recorded.
pub(crate) fn check_range_len(input_dim: usize, found: usize) -> Result<(), Error> {
    if found == 0 || found == input_dim {
        Ok(())
    } else {
        Err(Error::InconsistentSizes {
            field: Field::XMin.name(),
            expected: input_dim,
            found,
        })
    }
}

/// Checks the length of `x_max`: that of `x_min`.
pub(crate) fn check_range_max_len(min_len: usize, found: usize) -> Result<(), Error> {
    if found == min_len {
        Ok(())
    } else {
        Err(Error::InconsistentSizes {
            field: Field::XMax.name(),
            expected: min_len,
            found,
        })
    }
}

/// Accepts the maximum `max` of an input whose minimum is `min`.
pub(crate) fn check_range_pair(min: f32, max: f32) -> Result<f32, Error> {
    if max >= min {
        Ok(max)
    } else {
        Err(Error::InvalidValue {
            field: Field::XMax.name(),
        })
    }
}

/// Number of stored elements of an `m x m` lower triangle.
pub(crate) const fn packed_len(m: usize) -> usize {
    m * (m + 1) / 2
}

impl Shape {
    /// Checks that the sizes are non-zero and agree with each other.
    ///
    /// ```
    /// use sgp_runtime::{Link, ModelKind, Shape};
    /// let mut shape = Shape {
    ///     kind: ModelKind::Spgp, link: Link::Identity,
    ///     input_dim: 3, feature_dim: 2, n_basis: 10,
    ///     projected: false, per_basis: false, two_factors: true,
    /// };
    /// assert!(shape.validate().is_err()); // G != D without a projection
    /// shape.projected = true;
    /// assert!(shape.validate().is_ok());
    /// ```
    pub fn validate(&self) -> Result<(), Error> {
        let nonzero = [
            (self.n_basis, Field::Beta),
            (self.input_dim, Field::XMean),
            (self.feature_dim, Field::Centres),
        ];
        for (size, field) in nonzero {
            if size == 0 {
                return Err(Error::InvalidValue {
                    field: field.name(),
                });
            }
        }
        if !self.projected && self.feature_dim != self.input_dim {
            return Err(Error::InconsistentSizes {
                field: Field::Centres.name(),
                expected: usize::from(self.input_dim),
                found: usize::from(self.feature_dim),
            });
        }
        Ok(())
    }

    /// Checks the sizes against a `Model`'s capacities.
    pub(crate) fn fits(&self, m: usize, g: usize, d: usize) -> Result<(), Error> {
        let checks = [
            (Dimension::Basis, usize::from(self.n_basis), m),
            (Dimension::Feature, usize::from(self.feature_dim), g),
            (Dimension::Input, usize::from(self.input_dim), d),
        ];
        for (dimension, required, capacity) in checks {
            if required > capacity {
                return Err(Error::CapacityExceeded {
                    dimension,
                    required,
                    capacity,
                });
            }
        }
        Ok(())
    }

    /// Number of values `field` holds for this shape.
    pub fn expected_len(&self, field: Field) -> usize {
        let m = usize::from(self.n_basis);
        let g = usize::from(self.feature_dim);
        let d = usize::from(self.input_dim);
        match field {
            Field::XMean | Field::XScale | Field::XMin | Field::XMax => d,
            Field::Projection if self.projected => g * d,
            Field::Projection => 0,
            Field::Centres => m * g,
            Field::Widths if self.per_basis => m * g,
            Field::Widths => g,
            Field::Amplitudes if self.per_basis => m,
            Field::Amplitudes => 1,
            Field::Beta => m,
            Field::L1 => packed_len(m),
            Field::L2 if self.two_factors => packed_len(m),
            Field::L2 => 0,
            Field::Prior
            | Field::Noise
            | Field::Bias
            | Field::YMean
            | Field::YScale
            | Field::PositiveClass
            | Field::Variance
            | Field::Kernel => 1,
            Field::Learning => m,
        }
    }
}

/// Checks the preamble, length and CRC of a blob and returns its format
/// version and its body.
pub(crate) fn open(bytes: &[u8]) -> Result<(u16, &[u8]), Error> {
    let found = bytes.len();
    let magic = bytes.get(..MAGIC.len()).unwrap_or(bytes);
    if magic != MAGIC.get(..magic.len()).unwrap_or(&MAGIC) {
        return Err(Error::BadMagic);
    }
    let (Some(version), Some(body_len)) = (le_bytes::<2>(bytes, 4), le_bytes::<4>(bytes, 6)) else {
        return Err(Error::Truncated {
            expected: PREAMBLE_LEN + TRAILER_LEN,
            found,
        });
    };
    let version = u16::from_le_bytes(version);
    if !(OLDEST_VERSION..=VERSION).contains(&version) {
        return Err(Error::UnsupportedVersion { found: version });
    }
    let expected = usize::try_from(u32::from_le_bytes(body_len))
        .ok()
        .and_then(|len| len.checked_add(PREAMBLE_LEN + TRAILER_LEN))
        .unwrap_or(usize::MAX);
    if found < expected {
        return Err(Error::Truncated { expected, found });
    }
    if found > expected {
        return Err(Error::TrailingBytes { expected, found });
    }
    let crc_at = expected - TRAILER_LEN;
    let (Some(covered), Some(stored)) = (bytes.get(..crc_at), le_bytes::<4>(bytes, crc_at)) else {
        return Err(Error::Truncated { expected, found });
    };
    let stored = u32::from_le_bytes(stored);
    let computed = CRC.checksum(covered);
    if stored != computed {
        return Err(Error::CrcMismatch { stored, computed });
    }
    let body = covered.get(PREAMBLE_LEN..).ok_or(Error::Malformed)?;
    Ok((version, body))
}

/// `N` bytes at `at`, if the blob has them.
fn le_bytes<const N: usize>(bytes: &[u8], at: usize) -> Option<[u8; N]> {
    bytes.get(at..at.checked_add(N)?)?.try_into().ok()
}

/// Streams values out of a blob body in wire order.
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
    len: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(body: &'a [u8]) -> Self {
        Reader {
            rest: body,
            len: body.len(),
        }
    }

    /// Where the next value starts, in bytes from the blob's first byte
    /// (the body starts after the preamble).
    pub(crate) fn position(&self) -> usize {
        PREAMBLE_LEN + self.len - self.rest.len()
    }

    /// Decodes one postcard value.
    pub(crate) fn value<T: Deserialize<'a>>(&mut self) -> Result<T, Error> {
        let (value, rest) = postcard::take_from_bytes(self.rest).map_err(|_| Error::Malformed)?;
        self.rest = rest;
        Ok(value)
    }

    /// Decodes a postcard sequence of `f32` of the length `shape` implies,
    /// checking each value, and hands them to `sink` with their index.
    pub(crate) fn numbers(
        &mut self,
        shape: &Shape,
        field: Field,
        sink: impl FnMut(usize, f32) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.sized(field, shape.expected_len(field), sink)
    }

    /// [`Reader::numbers`] for a sequence of `expected` values.
    pub(crate) fn sized(
        &mut self,
        field: Field,
        expected: usize,
        sink: impl FnMut(usize, f32) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let found = self.length()?;
        if found != expected {
            return Err(Error::InconsistentSizes {
                field: field.name(),
                expected,
                found,
            });
        }
        self.elements(field, found, sink)
    }

    /// A further output's `l1` (format version 6 on): the sequence length
    /// the shape implies, or none (the output shares the first output's
    /// variance); `sink` takes the values. Returns whether it shares.
    pub(crate) fn own_or_shared_factor(
        &mut self,
        shape: &Shape,
        sink: impl FnMut(usize, f32) -> Result<(), Error>,
    ) -> Result<bool, Error> {
        let expected = shape.expected_len(Field::L1);
        let found = self.length()?;
        if found == 0 {
            return Ok(true);
        }
        if found != expected {
            return Err(Error::InconsistentSizes {
                field: Field::L1.name(),
                expected,
                found,
            });
        }
        self.elements(Field::L1, found, sink)?;
        Ok(false)
    }

    /// Decodes the length of a postcard sequence.
    pub(crate) fn length(&mut self) -> Result<usize, Error> {
        let found: u32 = self.value()?;
        usize::try_from(found).map_err(|_| Error::Malformed)
    }

    /// Decodes `n` values of `field`, checking each, and hands them to
    /// `sink` with their index.
    pub(crate) fn elements(
        &mut self,
        field: Field,
        n: usize,
        mut sink: impl FnMut(usize, f32) -> Result<(), Error>,
    ) -> Result<(), Error> {
        for index in 0..n {
            sink(index, field.check(self.value()?)?)?;
        }
        Ok(())
    }

    /// A scalar field.
    pub(crate) fn scalar(&mut self, field: Field) -> Result<f32, Error> {
        field.check(self.value()?)
    }

    /// Fails unless the whole body was consumed.
    pub(crate) fn finish(self) -> Result<(), Error> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(Error::Malformed)
        }
    }
}

#[cfg(feature = "alloc")]
pub use owned::{Learning, ModelSpec, OutputSpec};

#[cfg(feature = "alloc")]
mod owned {
    use alloc::string::String;
    use alloc::vec::Vec;

    use super::*;

    /// An owned model in runtime form: what the trainer fills and encodes
    /// with [`ModelSpec::to_bytes`], and what host tools decode with
    /// [`ModelSpec::from_bytes`] (a device uses [`crate::Model`] instead).
    /// Field order is wire order.
    ///
    /// ```
    /// use sgp_runtime::{Kernel, Link, Model, ModelKind, ModelSpec, Shape, VarianceForm};
    /// let spec = ModelSpec {
    ///     shape: Shape { kind: ModelKind::Exact, link: Link::Identity, input_dim: 1,
    ///         feature_dim: 1, n_basis: 1, projected: false, per_basis: false,
    ///         two_factors: false },
    ///     input_names: vec!["x".into()], target_name: "y".into(),
    ///     x_mean: vec![0.0], x_scale: vec![1.0], projection: vec![],
    ///     centres: vec![0.0], widths: vec![1.0], amplitudes: vec![1.0],
    ///     beta: vec![0.5], l1: vec![1.0], l2: vec![],
    ///     prior: 1.0, noise: 0.1, bias: 0.0, y_mean: 0.0, y_scale: 1.0,
    ///     positive_class: 0.0, x_min: vec![-2.0], x_max: vec![3.0],
    ///     variance: VarianceForm::Solves, outputs: vec![], class_labels: vec![],
    ///     learning: None, kernel: Kernel::SquaredExponential,
    /// };
    /// let bytes = spec.to_bytes().unwrap();
    /// assert_eq!(ModelSpec::from_bytes(&bytes).unwrap(), spec);
    /// let model = Model::<4, 1, 1>::from_bytes(&bytes).unwrap();
    /// assert_eq!(model.mean(&[0.0]).unwrap(), 0.5);
    /// ```
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct ModelSpec {
        /// Sizes and switches.
        pub shape: Shape,
        /// Names of the input columns, in input order (`D`).
        pub input_names: Vec<String>,
        /// Name of the target column.
        pub target_name: String,
        /// See [`Field::XMean`].
        pub x_mean: Vec<f32>,
        /// See [`Field::XScale`].
        pub x_scale: Vec<f32>,
        /// See [`Field::Projection`].
        pub projection: Vec<f32>,
        /// See [`Field::Centres`].
        pub centres: Vec<f32>,
        /// See [`Field::Widths`].
        pub widths: Vec<f32>,
        /// See [`Field::Amplitudes`].
        pub amplitudes: Vec<f32>,
        /// See [`Field::Beta`].
        pub beta: Vec<f32>,
        /// See [`Field::L1`].
        pub l1: Vec<f32>,
        /// See [`Field::L2`].
        pub l2: Vec<f32>,
        /// See [`Field::Prior`].
        pub prior: f32,
        /// See [`Field::Noise`].
        pub noise: f32,
        /// See [`Field::Bias`].
        pub bias: f32,
        /// See [`Field::YMean`].
        pub y_mean: f32,
        /// See [`Field::YScale`].
        pub y_scale: f32,
        /// See [`Field::PositiveClass`]: the raw target value that
        /// `P(y = +1)` is the probability of (probit); writers put `0` in
        /// regression blobs, readers ignore it there.
        pub positive_class: f32,
        /// See [`Field::XMin`]: each input's smallest training value (raw
        /// units), or empty when no range is recorded (what version 1 and 2
        /// blobs read as).
        pub x_min: Vec<f32>,
        /// See [`Field::XMax`]: each input's largest training value, as many
        /// as [`ModelSpec::x_min`].
        pub x_max: Vec<f32>,
        /// See [`Field::Variance`]: what `l1` holds ([`VarianceForm::Solves`]
        /// for blobs before version 4).
        pub variance: VarianceForm,
        /// The second to `P`-th outputs, on the same basis, with the first
        /// one's sizes and [`VarianceForm`] (format version 5; empty before
        /// it and for a single-output model).
        pub outputs: Vec<OutputSpec>,
        /// Class labels as the training data spelled them (format version
        /// 5): none, or `[negative, positive]` for a probit model, or one
        /// per output for a multi-class link ([`Link::is_multi_class`]).
        pub class_labels: Vec<String>,
        /// What an updatable model learns with (format version 7): present
        /// exactly when [`ModelSpec::variance`] [`VarianceForm::learns`].
        pub learning: Option<Learning>,
        /// See [`Field::Kernel`] ([`Kernel::SquaredExponential`] before
        /// format version 7).
        pub kernel: Kernel,
    }

    /// The [`Field::Learning`] block of an updatable blob (format version
    /// 7): how the model conditions on a new observation, and each
    /// output's whitened posterior mean `L1^T beta` (the state the device
    /// updates; `beta` itself is kept for the predictions).
    ///
    /// ```
    /// use sgp_runtime::{Learning, Observation};
    /// let learning = Learning { observation: Observation::Fitc, means: vec![vec![0.5, -1.0]] };
    /// assert_eq!(learning.means[0].len(), 2);
    /// ```
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Learning {
        /// How a new observation enters.
        pub observation: Observation,
        /// One `M`-vector per output, in output order.
        pub means: Vec<Vec<f32>>,
    }

    impl Learning {
        /// Checks the block against the blob it belongs to, in the order a
        /// device reads it (FORMAT.md, "Order of the checks", field 31).
        pub(crate) fn validate(&self, spec: &ModelSpec) -> Result<(), Error> {
            self.observation.check(spec.shape.link)?;
            check_learning_noise(self.observation, spec.noise)?;
            for output in &spec.outputs {
                check_learning_noise(self.observation, output.noise)?;
            }
            check_means_len(spec.output_count(), self.means.len())?;
            let m = usize::from(spec.shape.n_basis);
            for mean in &self.means {
                check_mean_len(m, mean.len())?;
                for &value in mean {
                    Field::Learning.check(value)?;
                }
            }
            Ok(())
        }
    }

    /// One further output of a [`ModelSpec`]: its own name, weights,
    /// factors, prior, noise, probit offset and target scaling; everything
    /// else (basis, inputs, sizes, variance form) is the first output's.
    ///
    /// ```
    /// use sgp_runtime::{ModelSpec, OutputSpec};
    /// # let spec = ModelSpec::from_bytes(include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"))).unwrap();
    /// let first: OutputSpec = spec.output(0).unwrap();
    /// assert_eq!(first.name, spec.target_name);
    /// assert_eq!(first.beta, spec.beta);
    /// assert!(spec.output(1).is_none());
    /// ```
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct OutputSpec {
        /// The output's (target column's) name.
        pub name: String,
        /// See [`Field::Beta`].
        pub beta: Vec<f32>,
        /// See [`Field::L1`].
        pub l1: Vec<f32>,
        /// See [`Field::L2`].
        pub l2: Vec<f32>,
        /// See [`Field::Prior`].
        pub prior: f32,
        /// See [`Field::Noise`].
        pub noise: f32,
        /// See [`Field::Bias`].
        pub bias: f32,
        /// See [`Field::YMean`].
        pub y_mean: f32,
        /// See [`Field::YScale`].
        pub y_scale: f32,
    }

    impl OutputSpec {
        /// Whether the output has no factors of its own (an empty `l1`,
        /// format version 6): its latent variance is then the first
        /// output's times `prior / first prior`.
        ///
        /// ```
        /// # let spec = sgp_runtime::ModelSpec::from_bytes(include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"))).unwrap();
        /// assert!(!spec.output(0).unwrap().shares_variance());
        /// ```
        pub fn shares_variance(&self) -> bool {
            self.l1.is_empty()
        }

        /// The numeric fields with their values, in wire order.
        fn fields(&self) -> [(Field, &[f32]); 8] {
            [
                (Field::Beta, &self.beta),
                (Field::L1, &self.l1),
                (Field::L2, &self.l2),
                (Field::Prior, core::slice::from_ref(&self.prior)),
                (Field::Noise, core::slice::from_ref(&self.noise)),
                (Field::Bias, core::slice::from_ref(&self.bias)),
                (Field::YMean, core::slice::from_ref(&self.y_mean)),
                (Field::YScale, core::slice::from_ref(&self.y_scale)),
            ]
        }
    }

    /// The fields versions 2 to 5 append, in wire order, each version's
    /// after the one before; what a version lacks keeps its default.
    fn read_appended(
        version: u16,
        reader: &mut Reader<'_>,
        spec: &mut ModelSpec,
    ) -> Result<(), Error> {
        if version >= 2 {
            spec.positive_class = reader.value()?;
        }
        if version >= 3 {
            spec.x_min = reader.value()?;
            spec.x_max = reader.value()?;
        }
        if version >= 4 {
            spec.variance = reader.value()?;
        }
        if version >= 5 {
            spec.outputs = reader.value()?;
            spec.class_labels = reader.value()?;
        }
        if version >= LEARNING_VERSION {
            spec.learning = reader.value()?;
        }
        if version >= KERNEL_VERSION {
            spec.kernel = Kernel::from_index(reader.value()?)?;
        }
        Ok(())
    }

    /// Checks lengths, then values, of `fields`, then the diagonals of the
    /// factors among them.
    fn check_fields(shape: &Shape, fields: &[(Field, &[f32])]) -> Result<(), Error> {
        for &(field, values) in fields {
            let expected = shape.expected_len(field);
            if values.len() != expected {
                return Err(Error::InconsistentSizes {
                    field: field.name(),
                    expected,
                    found: values.len(),
                });
            }
            for &value in values {
                field.check(value)?;
            }
        }
        for &(field, factor) in fields {
            if matches!(field, Field::L1 | Field::L2) {
                for row in 0..factor_rows(factor.len()) {
                    let diagonal = factor.get(packed_len(row + 1) - 1).copied();
                    check_diagonal(field, diagonal.unwrap_or(0.0))?;
                }
            }
        }
        Ok(())
    }

    /// The fields every format version has, in wire order: the whole body
    /// of a version-1 blob. Later versions append fields to it.
    #[derive(Deserialize)]
    struct Common {
        shape: Shape,
        input_names: Vec<String>,
        target_name: String,
        x_mean: Vec<f32>,
        x_scale: Vec<f32>,
        projection: Vec<f32>,
        centres: Vec<f32>,
        widths: Vec<f32>,
        amplitudes: Vec<f32>,
        beta: Vec<f32>,
        l1: Vec<f32>,
        l2: Vec<f32>,
        prior: f32,
        noise: f32,
        bias: f32,
        y_mean: f32,
        y_scale: f32,
    }

    impl Common {
        /// The full description, with what the version that wrote it lacks:
        /// `positive_class = 1` and no input range.
        fn into_spec(self) -> ModelSpec {
            ModelSpec {
                shape: self.shape,
                input_names: self.input_names,
                target_name: self.target_name,
                x_mean: self.x_mean,
                x_scale: self.x_scale,
                projection: self.projection,
                centres: self.centres,
                widths: self.widths,
                amplitudes: self.amplitudes,
                beta: self.beta,
                l1: self.l1,
                l2: self.l2,
                prior: self.prior,
                noise: self.noise,
                bias: self.bias,
                y_mean: self.y_mean,
                y_scale: self.y_scale,
                positive_class: 1.0,
                x_min: Vec::new(),
                x_max: Vec::new(),
                variance: VarianceForm::Solves,
                outputs: Vec::new(),
                class_labels: Vec::new(),
                learning: None,
                kernel: Kernel::SquaredExponential,
            }
        }
    }

    impl ModelSpec {
        /// The numeric fields with their values, in wire order.
        fn fields(&self) -> [(Field, &[f32]); 15] {
            [
                (Field::XMean, &self.x_mean),
                (Field::XScale, &self.x_scale),
                (Field::Projection, &self.projection),
                (Field::Centres, &self.centres),
                (Field::Widths, &self.widths),
                (Field::Amplitudes, &self.amplitudes),
                (Field::Beta, &self.beta),
                (Field::L1, &self.l1),
                (Field::L2, &self.l2),
                (Field::Prior, core::slice::from_ref(&self.prior)),
                (Field::Noise, core::slice::from_ref(&self.noise)),
                (Field::Bias, core::slice::from_ref(&self.bias)),
                (Field::YMean, core::slice::from_ref(&self.y_mean)),
                (Field::YScale, core::slice::from_ref(&self.y_scale)),
                (
                    Field::PositiveClass,
                    core::slice::from_ref(&self.positive_class),
                ),
            ]
        }

        /// Applies every check a device applies when loading, so that a
        /// blob the trainer writes is one the device accepts.
        ///
        /// # Errors
        /// The same [`Error`] a device would return.
        pub fn validate(&self) -> Result<(), Error> {
            self.shape.validate()?;
            let names = self.input_names.len();
            let d = usize::from(self.shape.input_dim);
            if names != d {
                return Err(Error::InconsistentSizes {
                    field: "input_names",
                    expected: d,
                    found: names,
                });
            }
            check_fields(&self.shape, &self.fields())?;
            self.variance.check(&self.shape, self.version())?;
            check_range_len(d, self.x_min.len())?;
            check_range_max_len(self.x_min.len(), self.x_max.len())?;
            for (&min, &max) in self.x_min.iter().zip(&self.x_max) {
                Field::XMin.check(min)?;
                check_range_pair(min, Field::XMax.check(max)?)?;
            }
            let link = self.shape.link;
            link.check_outputs(self.output_count())?;
            for output in &self.outputs {
                if output.shares_variance() {
                    // No factors: the fields' checks with both empty.
                    let fields = output.fields();
                    let own = fields
                        .iter()
                        .filter(|(f, _)| !matches!(f, Field::L1 | Field::L2));
                    for &(field, values) in own {
                        check_fields(&self.shape, &[(field, values)])?;
                    }
                    if !output.l2.is_empty() {
                        return Err(Error::InconsistentSizes {
                            field: Field::L2.name(),
                            expected: 0,
                            found: output.l2.len(),
                        });
                    }
                    shared_variance_ratio(self.prior, output.prior)?;
                } else {
                    check_fields(&self.shape, &output.fields())?;
                }
            }
            link.check_labels(self.output_count(), self.class_labels.len())?;
            check_learning_present(self.variance, self.learning.is_some())?;
            match &self.learning {
                Some(learning) => learning.validate(self),
                None => Ok(()),
            }
        }

        /// The format version [`ModelSpec::to_bytes`] writes: the oldest
        /// that holds the model, 9 for the [`VarianceForm::Covariance`]
        /// form, 8 for a kernel other than the squared
        /// exponential, 7 for an updatable model (the
        /// [`VarianceForm::Whitened`] form, a [`Learning`] block), 6 when an
        /// output shares the first output's variance
        /// ([`OutputSpec::shares_variance`]), else 5.
        ///
        /// ```
        /// # let spec = sgp_runtime::ModelSpec::from_bytes(include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"))).unwrap();
        /// assert_eq!(spec.version(), 5);
        /// ```
        pub fn version(&self) -> u16 {
            if self.variance == VarianceForm::Covariance {
                COVARIANCE_VERSION
            } else if self.kernel != Kernel::SquaredExponential {
                KERNEL_VERSION
            } else if self.variance == VarianceForm::Whitened || self.learning.is_some() {
                LEARNING_VERSION
            } else if self.outputs.iter().any(OutputSpec::shares_variance) {
                6
            } else {
                5
            }
        }

        /// Number of outputs `P` (class latents `K` for a multi-class link):
        /// the first and [`ModelSpec::outputs`].
        ///
        /// ```
        /// # let spec = sgp_runtime::ModelSpec::from_bytes(include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"))).unwrap();
        /// assert_eq!(spec.output_count(), 1);
        /// ```
        pub fn output_count(&self) -> usize {
            1 + self.outputs.len()
        }

        /// Output `p` (`0` is the first, kept in the body's own fields),
        /// or `None` past the last.
        ///
        /// ```
        /// # let spec = sgp_runtime::ModelSpec::from_bytes(include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"))).unwrap();
        /// assert_eq!(spec.output(0).unwrap().prior, spec.prior);
        /// ```
        pub fn output(&self, p: usize) -> Option<OutputSpec> {
            match p.checked_sub(1) {
                None => Some(OutputSpec {
                    name: self.target_name.clone(),
                    beta: self.beta.clone(),
                    l1: self.l1.clone(),
                    l2: self.l2.clone(),
                    prior: self.prior,
                    noise: self.noise,
                    bias: self.bias,
                    y_mean: self.y_mean,
                    y_scale: self.y_scale,
                }),
                Some(rest) => self.outputs.get(rest).cloned(),
            }
        }

        /// Encodes the model as a blob of format [`ModelSpec::version`].
        ///
        /// # Errors
        /// [`ModelSpec::validate`]'s, or [`Error::Malformed`] if the body
        /// does not fit the 32-bit length field.
        pub fn to_bytes(&self) -> Result<Vec<u8>, Error> {
            self.validate()?;
            let body = self.body().map_err(|_| Error::Malformed)?;
            let body_len = u32::try_from(body.len()).map_err(|_| Error::Malformed)?;
            let mut blob = Vec::with_capacity(PREAMBLE_LEN + body.len() + TRAILER_LEN);
            blob.extend_from_slice(&MAGIC);
            blob.extend_from_slice(&self.version().to_le_bytes());
            blob.extend_from_slice(&body_len.to_le_bytes());
            blob.extend_from_slice(&body);
            let crc = CRC.checksum(&blob);
            blob.extend_from_slice(&crc.to_le_bytes());
            Ok(blob)
        }

        /// The body of a blob of format [`ModelSpec::version`]: the fields
        /// in wire order, each version's appended fields after the ones
        /// before (as [`read_appended`] reads them).
        fn body(&self) -> postcard::Result<Vec<u8>> {
            let version = self.version();
            let shape_to_amplitudes = (
                &self.shape,
                &self.input_names,
                &self.target_name,
                &self.x_mean,
                &self.x_scale,
                &self.projection,
                &self.centres,
                &self.widths,
                &self.amplitudes,
            );
            let beta_to_y_scale = (
                &self.beta,
                &self.l1,
                &self.l2,
                self.prior,
                self.noise,
                self.bias,
                self.y_mean,
                self.y_scale,
            );
            let mut body = postcard::to_allocvec(&shape_to_amplitudes)?;
            body = postcard::to_extend(&beta_to_y_scale, body)?;
            body = postcard::to_extend(&self.positive_class, body)?;
            body = postcard::to_extend(&(&self.x_min, &self.x_max), body)?;
            body = postcard::to_extend(&self.variance, body)?;
            body = postcard::to_extend(&(&self.outputs, &self.class_labels), body)?;
            if version >= LEARNING_VERSION {
                body = postcard::to_extend(&self.learning, body)?;
            }
            if version >= KERNEL_VERSION {
                body = postcard::to_extend(&self.kernel, body)?;
            }
            Ok(body)
        }

        /// Decodes and validates a blob of any version this runtime reads
        /// (a version-1 blob gets `positive_class = 1`; version 1 and 2
        /// blobs get no input range; blobs before version 4 the
        /// [`VarianceForm::Solves`]; blobs before version 5 one output and
        /// no class labels).
        ///
        /// # Errors
        /// Any [`Error`] describing a malformed blob.
        pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
            let (version, body) = open(bytes)?;
            // Postcard writes a struct as its fields one after the other, so
            // each version's body is the one before it plus its new fields.
            let mut reader = Reader::new(body);
            let mut spec = reader.value::<Common>()?.into_spec();
            read_appended(version, &mut reader, &mut spec)?;
            reader.finish()?;
            let known = match spec.variance {
                VarianceForm::Whitened => LEARNING_VERSION,
                VarianceForm::Covariance => COVARIANCE_VERSION,
                _ => 0,
            };
            if version < known {
                // An enum index a reader of that version does not know.
                return Err(Error::Malformed);
            }
            if version < 6 {
                // Before version 6 every output has factors of its own.
                if let Some(shared) = spec.outputs.iter().find(|o| o.shares_variance()) {
                    return Err(Error::InconsistentSizes {
                        field: Field::L1.name(),
                        expected: spec.shape.expected_len(Field::L1),
                        found: shared.l1.len(),
                    });
                }
            }
            spec.validate()?;
            Ok(spec)
        }
    }

    /// Rows of a packed lower triangle with `len` elements.
    fn factor_rows(len: usize) -> usize {
        let mut rows = 0;
        while packed_len(rows + 1) <= len {
            rows += 1;
        }
        rows
    }
}
