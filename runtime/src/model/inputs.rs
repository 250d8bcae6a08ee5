//! What a device needs to know about a model's inputs besides their
//! numbers: their names, to check that it feeds them in the model's order,
//! and the range they were trained on, to tell when it is extrapolating.

use super::{set, Model};
use crate::error::Error;
use crate::format::{check_range_len, check_range_max_len, check_range_pair, Field, Reader};

/// Bytes a device [`Model`] holds per column name (UTF-8). With its one
/// length byte a [`Name`] takes 32 bytes of RAM; `sgp inspect --capacity`
/// and `sgp fit` say when a model's names are longer.
///
/// ```
/// use sgp_runtime::{Name, NAME_CAPACITY};
/// assert!(Name::try_from("a".repeat(NAME_CAPACITY).as_str()).is_ok());
/// assert!(Name::try_from("a".repeat(NAME_CAPACITY + 1).as_str()).is_err());
/// ```
pub const NAME_CAPACITY: usize = 31;

/// A column name as a device [`Model`] stores it: a fixed-capacity string
/// (no allocator), compared with `&str` directly.
///
/// ```
/// let name = sgp_runtime::Name::try_from("speed").unwrap();
/// assert_eq!(name, "speed");
/// assert_eq!(core::mem::size_of::<sgp_runtime::Name>(), 32);
/// ```
pub type Name = heapless::String<NAME_CAPACITY, u8>;

/// `text` as a stored name: input `input`'s (`None`: the target's).
fn name(text: &str, input: Option<usize>) -> Result<Name, Error> {
    Name::try_from(text).map_err(|_| Error::NameTooLong {
        input,
        length: text.len(),
        capacity: NAME_CAPACITY,
    })
}

// The two readers below take slices, not arrays of the capacity, and are
// never inlined: one copy serves every capacity (inlined into each
// `Model::load` they cost about 1 KB of flash per capacity).

/// Decodes the `d` input names into `slots` (another count is
/// `InconsistentSizes`) and returns the target's name.
#[inline(never)]
pub(super) fn read_names(
    reader: &mut Reader<'_>,
    slots: &mut [Name],
    d: usize,
) -> Result<Name, Error> {
    let found = reader.length()?;
    if found != d {
        return Err(Error::InconsistentSizes {
            field: "input_names",
            expected: d,
            found,
        });
    }
    for (i, slot) in slots.iter_mut().enumerate().take(d) {
        *slot = name(reader.value()?, Some(i))?;
    }
    name(reader.value()?, None)
}

/// Decodes the training range of format version 3 into `x_min` and
/// `x_max`; returns whether one is recorded (it may be empty).
#[inline(never)]
pub(super) fn read_range(
    reader: &mut Reader<'_>,
    d: usize,
    x_min: &mut [f32],
    x_max: &mut [f32],
) -> Result<bool, Error> {
    let n = reader.length()?;
    check_range_len(d, n)?;
    reader.elements(Field::XMin, n, |i, v| set(x_min, i, v))?;
    check_range_max_len(n, reader.length()?)?;
    reader.elements(Field::XMax, n, |i, v| {
        let min = x_min.get(i).copied().ok_or(Error::Malformed)?;
        set(x_max, i, check_range_pair(min, v)?)
    })?;
    Ok(n != 0)
}

impl<const M: usize, const G: usize, const D: usize, const P: usize> Model<M, G, D, P> {
    /// The input column names, in the order a prediction takes the inputs
    /// ([`Model::input_dim`] of them; none for an empty model). Checking
    /// them once after loading catches a blob fitted on another column order.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// assert!(model.input_names() == ["speed", "load"]);
    /// assert_eq!(model.input_names()[1], "load");
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn input_names(&self) -> &[Name] {
        self.input_names.get(..self.input_dim()).unwrap_or(&[])
    }

    /// The target column's name (empty for an empty model).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// assert_eq!(model.target_name(), "torque");
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn target_name(&self) -> &str {
        self.output_name(0).unwrap_or("")
    }

    /// The smallest and the largest training value of each input (raw
    /// units, [`Model::input_dim`] of each), or `None` when the blob records
    /// no range (format versions 1 and 2). For logging which input left its
    /// range; [`Model::in_training_range`] is the check itself.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// let (min, max) = model.training_range().unwrap();
    /// assert_eq!((min, max), (&[-3.0, -1.5][..], &[5.0, 0.5][..]));
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn training_range(&self) -> Option<(&[f32], &[f32])> {
        let d = self.input_dim();
        match (self.ranged, self.x_min.get(..d), self.x_max.get(..d)) {
            (true, Some(min), Some(max)) => Some((min, max)),
            _ => None,
        }
    }

    /// Whether every input lies within the range the model was trained on
    /// (`min_d <= x_d <= max_d`, raw units; a NaN is outside). Outside it the
    /// model extrapolates: its mean is a guess, and its variance need not
    /// say so (an input the fit found irrelevant has a length scale far
    /// wider than its range, so leaving the range barely raises the
    /// variance; an input the fit ignored altogether, a constant column,
    /// does not raise it at all).
    ///
    /// A separate call rather than a flag on [`crate::Prediction`], so that
    /// `predict` costs the same with or without it, and so that a control
    /// loop can check before predicting and skip the prediction when it
    /// would not use it. `O(D)` comparisons, the same for every input.
    ///
    /// The range is per input (a box): a combination of inputs never seen
    /// together in training can be inside it; the variance still covers
    /// that case.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Model::<16, 2, 2>::from_bytes(blob)?;
    /// assert_eq!(model.in_training_range(&[0.5, -1.0])?, true);
    /// assert_eq!(model.in_training_range(&[5.5, -1.0])?, false);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InputLength`] if `x` does not have [`Model::input_dim`]
    /// values; [`Error::NoTrainingRange`] if the blob records no range.
    pub fn in_training_range(&self, x: &[f32]) -> Result<bool, Error> {
        let d = self.input_dim();
        if x.len() != d {
            return Err(Error::InputLength {
                expected: d,
                found: x.len(),
            });
        }
        let (min, max) = self.training_range().ok_or(Error::NoTrainingRange)?;
        // `&`, not `all`: no early exit, the same work for every input.
        let inside = x
            .iter()
            .zip(min.iter().zip(max))
            .fold(true, |inside, (v, (lo, hi))| inside & (lo <= v) & (v <= hi));
        Ok(inside)
    }
}
