//! The status codes C sees: one per runtime error, plus the C boundary's own.

use core::ffi::CStr;

use sgp_runtime::{Dimension, Error};

/// What every `sgp_` function returns: `SGP_STATUS_OK` (0) or the reason it
/// refused. Codes below 100 are the runtime's errors (one each; new ones are
/// appended), codes from 100 on are about the C call itself.
/// `sgp_status_message` gives a sentence for any code.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SgpStatus {
    /// Success.
    Ok = 0,
    /// The blob is shorter than its header says (or than any header).
    Truncated = 1,
    /// The blob does not start with the magic bytes `SGPM`.
    BadMagic = 2,
    /// The blob's format version is one this library cannot read.
    UnsupportedVersion = 3,
    /// The blob is longer than its header says.
    TrailingBytes = 4,
    /// The blob's CRC-32 does not match: it was corrupted.
    CrcMismatch = 5,
    /// The blob passed the CRC but its body does not decode.
    Malformed = 6,
    /// The model has more basis functions than `SGP_CAPACITY_M`.
    CapacityExceededBasis = 7,
    /// The model's feature dimension exceeds `SGP_CAPACITY_G`.
    CapacityExceededFeature = 8,
    /// The model's input dimension exceeds `SGP_CAPACITY_D`.
    CapacityExceededInput = 9,
    /// An array in the blob disagrees with the sizes in its header.
    InconsistentSizes = 10,
    /// A number in the blob is NaN or infinite.
    NonFinite = 11,
    /// A number in the blob is outside its valid range.
    InvalidValue = 12,
    /// The input vector's length is not the model's input dimension.
    InputLength = 13,
    /// An input value is NaN or infinite.
    NonFiniteInput = 14,
    /// A class probability was asked of a regression model.
    NotClassifier = 15,
    /// An input or target name in the blob is longer than the runtime keeps.
    NameTooLong = 16,
    /// An input so far from the training data that f32 overflows on it.
    InputOverflow = 17,
    /// The blob records no training-input range (format version 1 or 2).
    NoTrainingRange = 18,
    /// The model has more outputs (or classes) than `SGP_CAPACITY_P`.
    CapacityExceededOutput = 19,
    /// The model cannot learn on the device: its blob has no learning
    /// block (`sgp fit --updatable` writes one).
    NotUpdatable = 20,
    /// An update's target is NaN or infinite, or a classifier's label is
    /// neither 0 nor 1; the model is unchanged.
    InvalidTarget = 21,
    /// An update's target is beyond the residual gate (an outlier); the
    /// model is unchanged.
    Outlier = 22,
    /// An update setting is out of range (forgetting outside (0, 1], a gate
    /// that is not > 0).
    InvalidSetting = 23,
    /// The number of targets of `sgp_model_update_all` is not the model's
    /// output count.
    TargetLength = 24,
    /// The buffer given to `sgp_model_write_blob` is shorter than the blob.
    BufferTooSmall = 25,
    /// The source blob of `sgp_model_write_blob` is not one of this
    /// model's (another basis, sizes or names, or damaged).
    ForeignBlob = 26,
    /// The model's prediction at a Gaussian input has no closed form
    /// (a Matérn kernel or a learned projection).
    NoClosedForm = 27,
    /// The input covariance is not finite, symmetric and positive
    /// semi-definite.
    InvalidCovariance = 28,
    /// A member of a container takes other inputs than the first.
    MemberMismatch = 29,
    /// A pointer argument is NULL.
    NullPointer = 100,
    /// A pointer argument is not aligned for its type.
    Misaligned = 101,
    /// The storage passed to `sgp_model_load` is smaller than
    /// `SGP_MODEL_STORAGE_SIZE` (a header from another build of the library?).
    StorageTooSmall = 102,
    /// No blob has been loaded into this storage (or the last load failed).
    NotLoaded = 103,
    /// The array for the outputs or class probabilities is shorter than
    /// the model's output or class count.
    OutputTooSmall = 104,
}

impl SgpStatus {
    /// Every status, for looking one up by its code.
    pub(crate) const ALL: [SgpStatus; 35] = [
        SgpStatus::Ok,
        SgpStatus::Truncated,
        SgpStatus::BadMagic,
        SgpStatus::UnsupportedVersion,
        SgpStatus::TrailingBytes,
        SgpStatus::CrcMismatch,
        SgpStatus::Malformed,
        SgpStatus::CapacityExceededBasis,
        SgpStatus::CapacityExceededFeature,
        SgpStatus::CapacityExceededInput,
        SgpStatus::InconsistentSizes,
        SgpStatus::NonFinite,
        SgpStatus::InvalidValue,
        SgpStatus::InputLength,
        SgpStatus::NonFiniteInput,
        SgpStatus::NotClassifier,
        SgpStatus::NameTooLong,
        SgpStatus::InputOverflow,
        SgpStatus::NoTrainingRange,
        SgpStatus::CapacityExceededOutput,
        SgpStatus::NotUpdatable,
        SgpStatus::InvalidTarget,
        SgpStatus::Outlier,
        SgpStatus::InvalidSetting,
        SgpStatus::TargetLength,
        SgpStatus::BufferTooSmall,
        SgpStatus::ForeignBlob,
        SgpStatus::NoClosedForm,
        SgpStatus::InvalidCovariance,
        SgpStatus::MemberMismatch,
        SgpStatus::NullPointer,
        SgpStatus::Misaligned,
        SgpStatus::StorageTooSmall,
        SgpStatus::NotLoaded,
        SgpStatus::OutputTooSmall,
    ];

    /// The status with this code, if there is one.
    pub(crate) fn from_code(code: i32) -> Option<SgpStatus> {
        SgpStatus::ALL.into_iter().find(|s| *s as i32 == code)
    }

    /// The runtime error's code. Exhaustive on purpose (the runtime's
    /// `Error` is not `#[non_exhaustive]` for this): a new error variant
    /// does not compile here until it has a code of its own.
    pub(crate) fn from_error(error: Error) -> SgpStatus {
        match error {
            Error::Truncated { .. } => SgpStatus::Truncated,
            Error::BadMagic => SgpStatus::BadMagic,
            Error::UnsupportedVersion { .. } => SgpStatus::UnsupportedVersion,
            Error::TrailingBytes { .. } => SgpStatus::TrailingBytes,
            Error::CrcMismatch { .. } => SgpStatus::CrcMismatch,
            Error::Malformed => SgpStatus::Malformed,
            Error::CapacityExceeded { dimension, .. } => match dimension {
                Dimension::Basis => SgpStatus::CapacityExceededBasis,
                Dimension::Feature => SgpStatus::CapacityExceededFeature,
                Dimension::Input => SgpStatus::CapacityExceededInput,
                Dimension::Output => SgpStatus::CapacityExceededOutput,
            },
            Error::InconsistentSizes { .. } => SgpStatus::InconsistentSizes,
            Error::NonFinite { .. } => SgpStatus::NonFinite,
            Error::InvalidValue { .. } => SgpStatus::InvalidValue,
            Error::InputLength { .. } => SgpStatus::InputLength,
            Error::NonFiniteInput => SgpStatus::NonFiniteInput,
            Error::NotClassifier => SgpStatus::NotClassifier,
            Error::NameTooLong { .. } => SgpStatus::NameTooLong,
            Error::InputOverflow => SgpStatus::InputOverflow,
            Error::NoTrainingRange => SgpStatus::NoTrainingRange,
            Error::NotUpdatable => SgpStatus::NotUpdatable,
            Error::InvalidTarget => SgpStatus::InvalidTarget,
            Error::Outlier => SgpStatus::Outlier,
            Error::InvalidSetting => SgpStatus::InvalidSetting,
            Error::TargetLength { .. } => SgpStatus::TargetLength,
            Error::BufferTooSmall { .. } => SgpStatus::BufferTooSmall,
            Error::ForeignBlob => SgpStatus::ForeignBlob,
            Error::NoClosedForm => SgpStatus::NoClosedForm,
            Error::InvalidCovariance => SgpStatus::InvalidCovariance,
            Error::MemberMismatch { .. } => SgpStatus::MemberMismatch,
        }
    }

    /// One sentence for people; the user guide's error table (docs/src/c-library.md) says the same.
    pub(crate) fn message(self) -> &'static CStr {
        match self {
            SgpStatus::Ok => c"ok",
            SgpStatus::Truncated => c"blob truncated: shorter than its header says",
            SgpStatus::BadMagic => c"not an sgp model blob (bad magic bytes)",
            SgpStatus::UnsupportedVersion => c"unsupported blob format version",
            SgpStatus::TrailingBytes => c"blob has trailing bytes: longer than its header says",
            SgpStatus::CrcMismatch => c"blob corrupted: CRC-32 mismatch",
            SgpStatus::Malformed => c"blob body does not decode",
            SgpStatus::CapacityExceededBasis => {
                c"model has more basis functions than SGP_CAPACITY_M"
            }
            SgpStatus::CapacityExceededFeature => {
                c"model's feature dimension exceeds SGP_CAPACITY_G"
            }
            SgpStatus::CapacityExceededInput => c"model's input dimension exceeds SGP_CAPACITY_D",
            SgpStatus::InconsistentSizes => c"blob array length disagrees with its header",
            SgpStatus::NonFinite => c"blob holds NaN or infinity",
            SgpStatus::InvalidValue => c"blob holds a value outside its valid range",
            SgpStatus::InputLength => c"input length is not the model's input dimension",
            SgpStatus::NonFiniteInput => c"input holds NaN or infinity",
            SgpStatus::NotClassifier => c"class probability asked of a regression model",
            SgpStatus::NameTooLong => c"a name in the blob is longer than the runtime keeps",
            SgpStatus::InputOverflow => c"input so far out that f32 overflows on it",
            SgpStatus::NoTrainingRange => c"blob records no training-input range (format v1/v2)",
            SgpStatus::CapacityExceededOutput => c"model has more outputs than SGP_CAPACITY_P",
            SgpStatus::NotUpdatable => c"model cannot learn on the device (no learning block)",
            SgpStatus::InvalidTarget => c"update target is NaN, infinite, or not a 0/1 label",
            SgpStatus::Outlier => c"update target beyond the residual gate; model unchanged",
            SgpStatus::InvalidSetting => c"update setting out of range",
            SgpStatus::TargetLength => c"number of targets is not the model's output count",
            SgpStatus::BufferTooSmall => c"buffer shorter than the blob",
            SgpStatus::ForeignBlob => c"source blob is not this model's",
            SgpStatus::NoClosedForm => {
                c"no closed-form prediction at a Gaussian input for this model"
            }
            SgpStatus::InvalidCovariance => c"input covariance not finite, symmetric and PSD",
            SgpStatus::MemberMismatch => c"container member takes other inputs than the first",
            SgpStatus::NullPointer => c"null pointer argument",
            SgpStatus::Misaligned => c"misaligned pointer argument",
            SgpStatus::StorageTooSmall => {
                c"storage smaller than SGP_MODEL_STORAGE_SIZE (header from another build?)"
            }
            SgpStatus::NotLoaded => c"no model loaded in this storage",
            SgpStatus::OutputTooSmall => {
                c"output array shorter than the model's output or class count"
            }
        }
    }
}

impl From<Result<(), Error>> for SgpStatus {
    fn from(result: Result<(), Error>) -> SgpStatus {
        match result {
            Ok(()) => SgpStatus::Ok,
            Err(error) => SgpStatus::from_error(error),
        }
    }
}
