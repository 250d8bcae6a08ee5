//! The one error type of the runtime.

use core::fmt;

/// Which size of a model a [`Error::CapacityExceeded`] or
/// [`Error::InconsistentSizes`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Dimension {
    /// Number of basis functions `M`.
    Basis,
    /// Dimension `G` of the space the basis functions live in (after the
    /// optional projection; equal to the input dimension without one).
    Feature,
    /// Raw input dimension `D`.
    Input,
    /// Number of outputs (or class latents) `P` (format version 5).
    Output,
}

impl fmt::Display for Dimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dimension::Basis => "basis functions (M)",
            Dimension::Feature => "feature dimension (G)",
            Dimension::Input => "input dimension (D)",
            Dimension::Output => "outputs (P)",
        })
    }
}

/// Everything that can go wrong when loading a blob or predicting.
///
/// Each kind of malformed blob has its own variant, so a device can report
/// precisely why a model was refused.
///
/// ```
/// use sgp_runtime::{Error, Model};
/// let err = Model::<4, 2, 2>::from_bytes(b"not a model").unwrap_err();
/// assert_eq!(err, Error::BadMagic);
/// ```
///
/// Not `#[non_exhaustive]`: the C ABI (`sgp-capi`) gives every variant a
/// status code of its own in an exhaustive `match`, so a new variant fails
/// to compile there until it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Error {
    /// The blob is shorter than its header says (or than any header).
    Truncated {
        /// Bytes the header announces (or the minimum blob size).
        expected: usize,
        /// Bytes actually given.
        found: usize,
    },
    /// The blob does not start with the magic bytes `SGPM`.
    BadMagic,
    /// The blob was written in a format version this runtime cannot read.
    UnsupportedVersion {
        /// The version found in the blob.
        found: u16,
    },
    /// The blob is longer than its header says.
    TrailingBytes {
        /// Bytes the header announces.
        expected: usize,
        /// Bytes actually given.
        found: usize,
    },
    /// The CRC-32 does not match: the blob was corrupted.
    CrcMismatch {
        /// The checksum stored in the blob.
        stored: u32,
        /// The checksum of the bytes received.
        computed: u32,
    },
    /// The body passed the CRC but does not decode (a writer bug or a
    /// blob from an incompatible tool).
    Malformed,
    /// The model is larger than the capacity this `Model` type was built with.
    CapacityExceeded {
        /// Which size.
        dimension: Dimension,
        /// What the blob needs.
        required: usize,
        /// What the `Model` type holds.
        capacity: usize,
    },
    /// A column name in the blob is longer than a device `Model` holds
    /// ([`crate::NAME_CAPACITY`] bytes). Host tools (`ModelSpec`) accept it.
    NameTooLong {
        /// Which name: `Some(i)` for input `i`, `None` for the target.
        input: Option<usize>,
        /// Its length in bytes (UTF-8).
        length: usize,
        /// What a `Model` holds per name.
        capacity: usize,
    },
    /// An array's length disagrees with the sizes in the header.
    InconsistentSizes {
        /// The array (field name in `FORMAT.md`).
        field: &'static str,
        /// Length the header implies.
        expected: usize,
        /// Length found.
        found: usize,
    },
    /// A number in the blob is NaN or infinite.
    NonFinite {
        /// The field (name in `FORMAT.md`).
        field: &'static str,
    },
    /// A number is finite but outside its valid range (e.g. a zero scale, a
    /// negative width or a zero on a triangular factor's diagonal).
    InvalidValue {
        /// The field (name in `FORMAT.md`).
        field: &'static str,
    },
    /// The input vector passed to a prediction has the wrong length.
    InputLength {
        /// The model's input dimension.
        expected: usize,
        /// The length given.
        found: usize,
    },
    /// An input value is NaN or infinite.
    NonFiniteInput,
    /// An input is so far from the training data that f32 arithmetic
    /// overflowed on it (its standardised value, or its distance to a basis
    /// function, beyond `3.4e38`): there is no finite prediction to give.
    /// A sensor fault, in practice.
    InputOverflow,
    /// [`crate::Model::in_training_range`] was asked of a model whose blob
    /// records no training-input range (format versions 1 and 2).
    NoTrainingRange,
    /// A class probability was asked of a regression model.
    NotClassifier,
    /// [`crate::Model::update`] was asked of a model that cannot learn on
    /// the device: its blob has no learning block (format version 7; the
    /// trainer writes one with `sgp fit --updatable`).
    NotUpdatable,
    /// An update's target is NaN or infinite, or a classifier's label is
    /// neither 0 (the negative class) nor 1 (the positive one). The model
    /// is unchanged.
    InvalidTarget,
    /// An update's target is further from the prediction than the residual
    /// gate allows ([`crate::UpdateSettings::gate`] predictive standard
    /// deviations): the observation is taken for an outlier and the model
    /// is unchanged.
    Outlier,
    /// An update setting is out of range: the forgetting factor outside
    /// `(0, 1]`, or a gate that is not `> 0`.
    InvalidSetting,
    /// [`crate::Model::update_all`] was given another number of targets
    /// than the model has outputs.
    TargetLength {
        /// The model's number of outputs.
        expected: usize,
        /// The number of targets given.
        found: usize,
    },
    /// The buffer given to [`crate::Model::write_blob`] is shorter than
    /// the blob.
    BufferTooSmall {
        /// Bytes the blob needs.
        required: usize,
        /// Bytes the buffer has.
        capacity: usize,
    },
    /// The blob given to [`crate::Model::write_blob`] as its source is not
    /// one of this model's (the one it was loaded from, or one it wrote):
    /// its basis, sizes or names differ, or its bytes are damaged.
    ForeignBlob,
    /// [`crate::Model::uncertain`] was asked of a model whose prediction at
    /// a Gaussian input has no closed form here: a Matérn kernel or a
    /// learned projection (SPGP+DR).
    NoClosedForm,
    /// An input covariance given to [`crate::Uncertain::predict`] is not
    /// finite, symmetric and positive semi-definite, or has the wrong
    /// length.
    InvalidCovariance,
    /// A member of a container ([`crate::Container`]) takes other inputs
    /// than the first member (their number or names differ), so one input
    /// vector cannot feed them all.
    MemberMismatch {
        /// The member's index.
        member: usize,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::Truncated { expected, found } => {
                write!(f, "blob truncated: expected {expected} bytes, got {found}")
            }
            Error::BadMagic => f.write_str("not an sgp model blob (bad magic bytes)"),
            Error::UnsupportedVersion { found } => write!(
                f,
                "unsupported blob format version {found} (this runtime reads versions {} to {})",
                crate::version::OLDEST_VERSION,
                crate::version::VERSION
            ),
            Error::TrailingBytes { expected, found } => write!(
                f,
                "blob has trailing bytes: expected {expected} bytes, got {found}"
            ),
            Error::CrcMismatch { stored, computed } => write!(
                f,
                "blob corrupted: CRC-32 is {computed:#010x}, blob says {stored:#010x}"
            ),
            Error::Malformed => f.write_str("blob body does not decode"),
            Error::CapacityExceeded {
                dimension,
                required,
                capacity,
            } => write!(
                f,
                "model needs {required} {dimension}, capacity is {capacity}"
            ),
            Error::NameTooLong {
                input,
                length,
                capacity,
            } => {
                match input {
                    Some(i) => write!(f, "the name of input {i}")?,
                    None => f.write_str("the target's name")?,
                }
                write!(
                    f,
                    " is {length} bytes long; a device model holds names of up to {capacity} bytes"
                )
            }
            Error::InconsistentSizes {
                field,
                expected,
                found,
            } => write!(
                f,
                "field `{field}` has {found} numbers, the header implies {expected}"
            ),
            Error::NonFinite { field } => write!(f, "field `{field}` holds NaN or infinity"),
            Error::InvalidValue { field } => write!(f, "field `{field}` holds an invalid value"),
            Error::InputLength { expected, found } => {
                write!(f, "input has {found} values, the model expects {expected}")
            }
            Error::NonFiniteInput => f.write_str("input holds NaN or infinity"),
            Error::InputOverflow => f.write_str(
                "input so far from the training data that f32 overflows on it (a sensor fault?)",
            ),
            Error::NoTrainingRange => f.write_str(
                "the blob records no training-input range (format version 1 or 2: re-export it)",
            ),
            Error::NotClassifier => f.write_str("class probability asked of a regression model"),
            Error::NotUpdatable => f.write_str(
                "the model cannot learn on the device: its blob has no learning block \
                 (export it with `sgp fit --updatable`)",
            ),
            Error::InvalidTarget => f.write_str(
                "update target is NaN or infinite, or a class label other than 0 or 1; \
                 the model is unchanged",
            ),
            Error::Outlier => f.write_str(
                "update target is beyond the residual gate (an outlier); the model is unchanged",
            ),
            Error::InvalidSetting => f.write_str(
                "update setting out of range: forgetting must be in (0, 1], the gate > 0",
            ),
            Error::TargetLength { expected, found } => {
                write!(
                    f,
                    "update has {found} targets, the model has {expected} outputs"
                )
            }
            Error::BufferTooSmall { required, capacity } => write!(
                f,
                "blob needs {required} bytes, the buffer holds {capacity}"
            ),
            Error::ForeignBlob => f.write_str(
                "the source blob is not this model's (another basis, sizes or names, or damaged)",
            ),
            Error::NoClosedForm => f.write_str(
                "no closed-form prediction at a Gaussian input for this model (Matérn kernel or projection)",
            ),
            Error::InvalidCovariance => f.write_str(
                "input covariance is not a finite, symmetric, positive semi-definite d x d matrix",
            ),
            Error::MemberMismatch { member } => write!(
                f,
                "member {member} of the container takes other inputs than member 0"
            ),
        }
    }
}

impl core::error::Error for Error {}
