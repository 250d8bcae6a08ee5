//! One artefact either way: a container of single-output blobs (the fit
//! that gave each output its own model), and [`Artefact`], which loads a
//! container or one blob of several outputs and predicts them all alike.
//!
//! A container is `SGPS`, a `u16` version (LE), a `u16` member count, each
//! member as a `u32` length (LE) and a blob verbatim (its own preamble, body
//! and CRC), then a CRC-32 of every byte before it. `runtime/FORMAT.md`
//! describes it byte by byte.

use crate::error::Error;
use crate::format::{CRC, TRAILER_LEN};
use crate::model::{ram_bytes, ram_bytes_with_outputs, Model, Name, Outputs, Prediction};

/// The four bytes every container starts with.
pub const CONTAINER_MAGIC: [u8; 4] = *b"SGPS";
/// The container version this runtime reads and writes.
pub const CONTAINER_VERSION: u16 = 1;
/// Bytes before the first member: magic, version (u16 LE), count (u16 LE).
const HEADER_LEN: usize = 8;
/// Bytes before each member: its length (u32 LE).
const LENGTH_LEN: usize = 4;

/// A checked container of single-output blobs: its magic, version, member
/// lengths and CRC are right. The members themselves are checked when a
/// model loads them.
///
/// ```
/// use sgp_runtime::Container;
/// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
/// let mut bytes = [0u8; 4096];
/// let len = Container::write(&[blob, blob], &mut bytes)?;
/// let container = Container::parse(&bytes[..len])?;
/// assert_eq!(container.len(), 2);
/// assert_eq!(container.member(1), Some(blob));
/// # Ok::<(), sgp_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Container<'a> {
    /// The members with their lengths, the header and CRC cut off.
    members: &'a [u8],
    count: usize,
}

impl<'a> Container<'a> {
    /// Whether `bytes` start as a container does (its magic), before any
    /// check: how a loader tells a container from a blob (`SGPM`).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// assert!(!sgp_runtime::Container::is_container(blob));
    /// assert!(sgp_runtime::Container::is_container(b"SGPS"));
    /// ```
    pub fn is_container(bytes: &[u8]) -> bool {
        bytes.get(..CONTAINER_MAGIC.len()) == Some(&CONTAINER_MAGIC[..])
    }

    /// Checks `bytes` as a container: magic, version, a member count of at
    /// least one, member lengths that end exactly at the CRC, and the CRC.
    ///
    /// ```
    /// use sgp_runtime::{Container, Error};
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let mut bytes = [0u8; 4096];
    /// let len = Container::write(&[blob], &mut bytes)?;
    /// assert!(Container::parse(&bytes[..len]).is_ok());
    /// assert!(matches!(Container::parse(&bytes[..len - 1]), Err(Error::Truncated { .. })));
    /// bytes[20] ^= 1;
    /// assert!(matches!(Container::parse(&bytes[..len]), Err(Error::CrcMismatch { .. })));
    /// assert_eq!(Container::parse(blob), Err(Error::BadMagic));
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::BadMagic`], [`Error::UnsupportedVersion`],
    /// [`Error::Malformed`] (no member), [`Error::Truncated`] and
    /// [`Error::TrailingBytes`] (the lengths and the bytes disagree), or
    /// [`Error::CrcMismatch`].
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        let found = bytes.len();
        let magic = bytes.get(..CONTAINER_MAGIC.len()).unwrap_or(bytes);
        if magic
            != CONTAINER_MAGIC
                .get(..magic.len())
                .unwrap_or(&CONTAINER_MAGIC)
        {
            return Err(Error::BadMagic);
        }
        let (Some(version), Some(count)) = (le_u16(bytes, 4), le_u16(bytes, 6)) else {
            return Err(Error::Truncated {
                expected: HEADER_LEN + TRAILER_LEN,
                found,
            });
        };
        if version != CONTAINER_VERSION {
            return Err(Error::UnsupportedVersion { found: version });
        }
        if count == 0 {
            return Err(Error::Malformed);
        }
        let mut end = HEADER_LEN;
        for _ in 0..count {
            let Some(len) = le_u32(bytes, end) else {
                return Err(Error::Truncated {
                    expected: end.saturating_add(LENGTH_LEN + TRAILER_LEN),
                    found,
                });
            };
            end = usize::try_from(len)
                .ok()
                .and_then(|len| end.checked_add(LENGTH_LEN)?.checked_add(len))
                .unwrap_or(usize::MAX);
        }
        let expected = end.saturating_add(TRAILER_LEN);
        if found < expected {
            return Err(Error::Truncated { expected, found });
        }
        if found > expected {
            return Err(Error::TrailingBytes { expected, found });
        }
        let (Some(covered), Some(stored)) = (bytes.get(..end), le_u32(bytes, end)) else {
            return Err(Error::Truncated { expected, found });
        };
        let computed = CRC.checksum(covered);
        if stored != computed {
            return Err(Error::CrcMismatch { stored, computed });
        }
        Ok(Container {
            members: covered.get(HEADER_LEN..).ok_or(Error::Malformed)?,
            count: usize::from(count),
        })
    }

    /// The number of members (at least one).
    ///
    /// ```
    /// # use sgp_runtime::Container;
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// # let mut bytes = [0u8; 8192];
    /// let len = Container::write(&[blob, blob, blob], &mut bytes)?;
    /// assert_eq!(Container::parse(&bytes[..len])?.len(), 3);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    #[allow(clippy::len_without_is_empty)] // never empty: parse refuses it
    pub fn len(&self) -> usize {
        self.count
    }

    /// Member `i`'s bytes (a blob, as the separate fit wrote it), or `None`
    /// past the last.
    ///
    /// ```
    /// # use sgp_runtime::Container;
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// # let mut bytes = [0u8; 4096];
    /// let len = Container::write(&[blob], &mut bytes)?;
    /// let container = Container::parse(&bytes[..len])?;
    /// assert_eq!(container.member(0), Some(blob));
    /// assert_eq!(container.member(1), None);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn member(&self, i: usize) -> Option<&'a [u8]> {
        self.members().nth(i)
    }

    /// Every member's bytes, in output order.
    ///
    /// ```
    /// # use sgp_runtime::Container;
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// # let mut bytes = [0u8; 4096];
    /// let len = Container::write(&[blob, blob], &mut bytes)?;
    /// assert!(Container::parse(&bytes[..len])?.members().all(|m| m == blob));
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn members(&self) -> Members<'a> {
        Members {
            rest: self.members,
            left: self.count,
        }
    }

    /// The bytes of a container of `members`, or `None` when it would
    /// not be one (no member, more than `u16::MAX`, one over `u32::MAX`
    /// bytes).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// // 12 bytes of header and CRC, 4 of length per member.
    /// assert_eq!(sgp_runtime::Container::encoded_len(&[blob, blob]), Some(12 + 2 * (4 + blob.len())));
    /// assert_eq!(sgp_runtime::Container::encoded_len(&[]), None);
    /// ```
    pub fn encoded_len(members: &[&[u8]]) -> Option<usize> {
        if members.is_empty() || u16::try_from(members.len()).is_err() {
            return None;
        }
        members.iter().try_fold(HEADER_LEN + TRAILER_LEN, |len, m| {
            u32::try_from(m.len()).ok()?;
            len.checked_add(LENGTH_LEN)?.checked_add(m.len())
        })
    }

    /// Writes the container of `members` (each a blob, copied verbatim)
    /// into `out` and returns its length. The members are not checked.
    ///
    /// ```
    /// use sgp_runtime::{Container, Error};
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let mut small = [0u8; 16];
    /// assert!(matches!(Container::write(&[blob], &mut small), Err(Error::BufferTooSmall { .. })));
    /// ```
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`], or [`Error::Malformed`] when
    /// [`Container::encoded_len`] says there is no such container.
    pub fn write(members: &[&[u8]], out: &mut [u8]) -> Result<usize, Error> {
        let len = Self::encoded_len(members).ok_or(Error::Malformed)?;
        let capacity = out.len();
        let out = out.get_mut(..len).ok_or(Error::BufferTooSmall {
            required: len,
            capacity,
        })?;
        let count = u16::try_from(members.len()).map_err(|_| Error::Malformed)?;
        let mut at = 0;
        let mut put = |bytes: &[u8]| -> Result<(), Error> {
            let end = at + bytes.len();
            out.get_mut(at..end)
                .ok_or(Error::Malformed)?
                .copy_from_slice(bytes);
            at = end;
            Ok(())
        };
        put(&CONTAINER_MAGIC)?;
        put(&CONTAINER_VERSION.to_le_bytes())?;
        put(&count.to_le_bytes())?;
        for member in members {
            let member_len = u32::try_from(member.len()).map_err(|_| Error::Malformed)?;
            put(&member_len.to_le_bytes())?;
            put(member)?;
        }
        let crc_at = len - TRAILER_LEN;
        let crc = CRC.checksum(out.get(..crc_at).ok_or(Error::Malformed)?);
        out.get_mut(crc_at..)
            .ok_or(Error::Malformed)?
            .copy_from_slice(&crc.to_le_bytes());
        Ok(len)
    }
}

/// The members of a [`Container`], from [`Container::members`].
///
/// ```
/// # use sgp_runtime::Container;
/// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
/// # let mut bytes = [0u8; 4096];
/// let len = Container::write(&[blob, blob], &mut bytes)?;
/// let members: sgp_runtime::Members<'_> = Container::parse(&bytes[..len])?.members();
/// assert_eq!(members.count(), 2);
/// # Ok::<(), sgp_runtime::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Members<'a> {
    rest: &'a [u8],
    left: usize,
}

impl<'a> Iterator for Members<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        self.left = self.left.checked_sub(1)?;
        let len = usize::try_from(le_u32(self.rest, 0)?).ok()?;
        let end = LENGTH_LEN.checked_add(len)?;
        let member = self.rest.get(LENGTH_LEN..end)?;
        self.rest = self.rest.get(end..)?;
        Some(member)
    }
}

fn le_u16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        bytes.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn le_u32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        bytes.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// What an [`Artefact`] holds: one blob's model, or a container's members.
/// `repr(u32)`: a tag word before the larger variant, so that
/// [`artefact_ram_bytes`] is its size exactly.
#[derive(Debug, Clone)]
#[repr(u32)]
enum Form<const M: usize, const G: usize, const D: usize, const P: usize> {
    Shared(Model<M, G, D, P>),
    Separate {
        members: [Model<M, G, D>; P],
        count: usize,
    },
}

/// Bytes of RAM an [`Artefact<M, G, D, P>`] occupies on a 32-bit target:
/// a tag word and the larger of one `Model<M, G, D, P>` and `P`
/// `Model<M, G, D>` with their count. Exactly `size_of` there (checked at
/// compile time on 32-bit targets).
///
/// ```
/// use sgp_runtime::{artefact_ram_bytes, ram_bytes};
/// // The arm's three outputs at M = 32: three single-output models.
/// assert_eq!(artefact_ram_bytes(32, 4, 4, 3), 3 * ram_bytes(32, 4, 4) + 8);
/// ```
pub const fn artefact_ram_bytes(m: usize, g: usize, d: usize, p: usize) -> usize {
    let shared = ram_bytes_with_outputs(m, g, d, p);
    let separate = p * ram_bytes(m, g, d) + 4;
    4 + if shared > separate { shared } else { separate }
}

// On 32-bit targets (the devices) the formula is the layout, exactly.
#[cfg(target_pointer_width = "32")]
const _: () = {
    use core::mem::size_of;
    assert!(size_of::<Artefact<32, 4, 4, 3>>() == artefact_ram_bytes(32, 4, 4, 3));
    assert!(size_of::<Artefact<7, 3, 5, 2>>() == artefact_ram_bytes(7, 3, 5, 2));
    assert!(size_of::<Artefact<33, 16, 16, 1>>() == artefact_ram_bytes(33, 16, 16, 1));
};

/// Up to `P` outputs in `D` inputs, loaded from whichever artefact `sgp
/// fit` wrote: one blob of outputs on one basis (a `Model<M, G, D, P>`), or
/// a [`Container`] of one blob per output (`P` `Model<M, G, D>`, each
/// member `M`, `G` and `D` at most). Either way [`Artefact::predict_all`]
/// predicts every output, so device code does not depend on which the
/// fit kept. Its RAM is the larger form's ([`artefact_ram_bytes`]).
///
/// ```
/// use sgp_runtime::{Artefact, Container};
/// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
/// let mut container = [0u8; 4096];
/// let len = Container::write(&[blob, blob], &mut container)?;
/// let x = [0.5, -1.0];
/// let mut model = Artefact::<16, 2, 2, 3>::new();
/// model.load(blob)?;
/// assert_eq!(model.output_count(), 1);
/// let one = model.predict_all(&x)?[0];
/// model.load(&container[..len])?;
/// assert_eq!(model.output_count(), 2);
/// assert_eq!(&model.predict_all(&x)?[..], &[one, one]);
/// # Ok::<(), sgp_runtime::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Artefact<const M: usize, const G: usize, const D: usize, const P: usize> {
    form: Form<M, G, D, P>,
}

impl<const M: usize, const G: usize, const D: usize, const P: usize> Default
    for Artefact<M, G, D, P>
{
    /// As [`Artefact::new`].
    ///
    /// ```
    /// let model: sgp_runtime::Artefact<4, 1, 1, 2> = Default::default();
    /// assert_eq!(model.output_count(), 0);
    /// ```
    fn default() -> Self {
        Self::new()
    }
}

impl<const M: usize, const G: usize, const D: usize, const P: usize> Artefact<M, G, D, P> {
    /// An empty artefact: no output; every prediction fails with
    /// [`Error::InputLength`] until a load succeeds.
    ///
    /// ```
    /// static MODEL: sgp_runtime::Artefact<8, 2, 2, 3> = sgp_runtime::Artefact::new();
    /// assert!(MODEL.predict_all(&[0.0, 0.0]).is_err());
    /// ```
    pub const fn new() -> Self {
        Artefact {
            form: Form::Shared(Model::new()),
        }
    }

    /// Loads a blob or a container (told apart by their magic).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Artefact::<16, 2, 2, 2>::from_bytes(blob)?;
    /// assert_eq!(model.output_name(0), Some("torque"));
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Artefact::load`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let mut artefact = Self::new();
        artefact.load(bytes)?;
        Ok(artefact)
    }

    /// Loads a blob into the one model, or a container's members into one
    /// model each, in place. On error the artefact is left empty.
    ///
    /// ```
    /// use sgp_runtime::{Artefact, Container, Dimension, Error};
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let mut container = [0u8; 8192];
    /// let len = Container::write(&[blob, blob, blob], &mut container)?;
    /// let mut model = Artefact::<16, 2, 2, 2>::new();
    /// assert_eq!(
    ///     model.load(&container[..len]),
    ///     Err(Error::CapacityExceeded { dimension: Dimension::Output, required: 3, capacity: 2 })
    /// );
    /// assert_eq!(model.output_count(), 0);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// A blob's: as [`Model::load`]. A container's: as [`Container::parse`];
    /// [`Error::CapacityExceeded`] for more members than `P`; a member's
    /// [`Model::load`] error (one of several outputs is
    /// [`Error::CapacityExceeded`] for [`crate::Dimension::Output`]); or
    /// [`Error::MemberMismatch`] when a member takes other inputs than the
    /// first.
    pub fn load(&mut self, bytes: &[u8]) -> Result<(), Error> {
        if !Container::is_container(bytes) {
            if !matches!(self.form, Form::Shared(_)) {
                self.form = Form::Shared(Model::new());
            }
            return match &mut self.form {
                Form::Shared(model) => model.load(bytes),
                Form::Separate { .. } => Err(Error::Malformed),
            };
        }
        match &mut self.form {
            Form::Separate { count, .. } => *count = 0,
            Form::Shared(_) => {
                self.form = Form::Separate {
                    members: [const { Model::new() }; P],
                    count: 0,
                }
            }
        }
        let Form::Separate { members, count } = &mut self.form else {
            return Err(Error::Malformed);
        };
        let container = Container::parse(bytes)?;
        if container.len() > P {
            return Err(Error::CapacityExceeded {
                dimension: crate::Dimension::Output,
                required: container.len(),
                capacity: P,
            });
        }
        for (model, member) in members.iter_mut().zip(container.members()) {
            model.load(member)?;
        }
        let (first, further) = members.split_first().ok_or(Error::Malformed)?;
        for (i, model) in further.iter().take(container.len() - 1).enumerate() {
            if model.input_dim() != first.input_dim() || model.input_names() != first.input_names()
            {
                return Err(Error::MemberMismatch { member: i + 1 });
            }
        }
        *count = container.len();
        Ok(())
    }

    /// Whether the loaded artefact is a container (one model per output)
    /// rather than one blob.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Artefact::<16, 2, 2, 2>::from_bytes(blob)?;
    /// assert!(!model.is_separate());
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn is_separate(&self) -> bool {
        matches!(self.form, Form::Separate { .. })
    }

    /// The loaded models, each predicting its own outputs: the one blob's,
    /// or each member's (empty before a load succeeds).
    fn models(&self) -> (&[Model<M, G, D, P>], &[Model<M, G, D>]) {
        match &self.form {
            Form::Shared(model) => (core::slice::from_ref(model), &[]),
            Form::Separate { members, count } => (&[], members.get(..*count).unwrap_or(&[])),
        }
    }

    /// Number of outputs (0 for an empty artefact), as
    /// [`Model::output_count`] counts a blob's.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Artefact::<16, 2, 2, 2>::from_bytes(blob)?;
    /// assert_eq!(model.output_count(), 1);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn output_count(&self) -> usize {
        match self.models() {
            ([shared], _) => shared.output_count(),
            (_, members) => members.len(),
        }
    }

    /// The name of output `p` (its target column), or `None` past the last.
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Artefact::<16, 2, 2, 2>::from_bytes(blob)?;
    /// assert_eq!(model.output_name(0), Some("torque"));
    /// assert_eq!(model.output_name(1), None);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn output_name(&self, p: usize) -> Option<&str> {
        match self.models() {
            ([shared], _) => shared.output_name(p),
            (_, members) => members.get(p)?.output_name(0),
        }
    }

    /// Number of raw inputs a prediction takes (0 for an empty artefact).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Artefact::<16, 2, 2, 2>::from_bytes(blob)?;
    /// assert_eq!(model.input_dim(), 2);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn input_dim(&self) -> usize {
        match self.models() {
            ([shared], _) => shared.input_dim(),
            (_, [first, ..]) => first.input_dim(),
            _ => 0,
        }
    }

    /// The input columns' names, in the order a prediction takes them
    /// (every member's are the same).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Artefact::<16, 2, 2, 2>::from_bytes(blob)?;
    /// assert_eq!(model.input_names().len(), 2);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    pub fn input_names(&self) -> &[Name] {
        match self.models() {
            ([shared], _) => shared.input_names(),
            (_, [first, ..]) => first.input_names(),
            _ => &[],
        }
    }

    /// Predictions of every output at `x`: a blob's as
    /// [`Model::predict_all`] gives them (the basis evaluated once), a
    /// container's as each member's [`Model::predict`] (one basis pass per
    /// output).
    ///
    /// ```
    /// # let blob: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp"));
    /// let model = sgp_runtime::Artefact::<16, 2, 2, 2>::from_bytes(blob)?;
    /// let all = model.predict_all(&[0.5, -1.0])?;
    /// assert_eq!(all.len(), 1);
    /// assert!(all[0].variance > 0.0);
    /// # Ok::<(), sgp_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Model::predict`] ([`Error::InputLength`] for an empty
    /// artefact).
    pub fn predict_all(&self, x: &[f32]) -> Result<Outputs<Prediction, P>, Error> {
        let members = match self.models() {
            ([shared], _) => return shared.predict_all(x),
            (_, members) => members,
        };
        if members.is_empty() {
            return Err(Error::InputLength {
                expected: 0,
                found: x.len(),
            });
        }
        let empty = Prediction {
            mean: 0.0,
            variance: 0.0,
        };
        let mut all = Outputs::filled(empty, members.len());
        for (slot, member) in all.values.iter_mut().zip(members) {
            *slot = member.predict(x)?;
        }
        Ok(all)
    }
}
