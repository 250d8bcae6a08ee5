//! The blob format's version numbers, apart from the format itself so that
//! an error can name the versions this runtime reads without the error type
//! and the format depending on each other.

/// The format version this runtime writes. It also reads every version from
/// [`OLDEST_VERSION`] on.
pub const VERSION: u16 = 5;
/// The oldest format version this runtime reads. Each version appends
/// fields to the body of the one before: version 2 adds `positive_class`
/// (read as `1` from version 1), version 3 the training-input range
/// `x_min`, `x_max` (none recorded before it), version 4 the
/// [`crate::VarianceForm`] (read as `solves` before it), version 5
/// the further outputs and the class labels (none before it: one output).
pub const OLDEST_VERSION: u16 = 1;
