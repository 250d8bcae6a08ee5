//! The blob format's version numbers, apart from the format itself so that
//! an error can name the versions this runtime reads without the error type
//! and the format depending on each other.

/// The newest format version this runtime reads and writes. It reads every
/// version from [`OLDEST_VERSION`] on, and writes the oldest version that
/// holds a blob: 9 only for an updatable model's
/// [`crate::VarianceForm::Covariance`] form, 8 for a kernel other than the squared exponential, 7
/// for a model that learns on the device, 6 when an output shares the
/// first output's variance, else 5 (so a runtime of version 5 still reads
/// every other blob).
pub const VERSION: u16 = 9;
/// The oldest format version this runtime reads. Each version appends
/// fields to the body of the one before: version 2 adds `positive_class`
/// (read as `1` from version 1), version 3 the training-input range
/// `x_min`, `x_max` (none recorded before it), version 4 the
/// [`crate::VarianceForm`] (read as `solves` before it), version 5
/// the further outputs and the class labels (none before it: one output),
/// version 6 further outputs without factors of their own (an empty `l1`:
/// the first output's variance, scaled by the ratio of the priors), version
/// 7 the [`crate::VarianceForm::Whitened`] form and the learning block of a
/// model that updates itself on the device, version 8 the
/// [`crate::Kernel`] (the squared exponential before it), version 9 the
/// [`crate::VarianceForm::Covariance`] form.
pub const OLDEST_VERSION: u16 = 1;
