//! One artefact either way (the guide's "Several outputs"): the file `sgp
//! fit --out` writes is one blob when the outputs share a basis (or there
//! is one output), else a container (`sgp_runtime::Container`) of each
//! output's own blob, verbatim. Host tools read either through here.

use sgp_runtime::{Container, ModelSpec};

use super::output_blob::output_specs;
use crate::Result;

/// Whether `bytes` are a container rather than one blob (by its magic).
pub fn is_container(bytes: &[u8]) -> bool {
    Container::is_container(bytes)
}

/// The container of `blobs` (each output's own blob, in output order).
///
/// # Errors
/// [`crate::Error::Blob`] for no blob, or more than a container holds.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) fn container(blobs: &[&[u8]]) -> Result<Vec<u8>> {
    let len = Container::encoded_len(blobs).ok_or(sgp_runtime::Error::Malformed)?;
    let mut out = vec![0; len];
    Container::write(blobs, &mut out)?;
    Ok(out)
}

/// The one artefact of `blobs`, one per output: the blob itself when there
/// is one, else their container.
///
/// # Errors
/// As `container`.
pub fn artefact(blobs: &[&[u8]]) -> Result<Vec<u8>> {
    match blobs {
        [one] => Ok(one.to_vec()),
        several => container(several),
    }
}

/// The blobs an artefact holds: a container's members (checked as a
/// container, not yet as blobs), or the one blob itself.
///
/// # Errors
/// The runtime's refusal of the container.
pub fn members(bytes: &[u8]) -> Result<Vec<&[u8]>> {
    if is_container(bytes) {
        Ok(Container::parse(bytes)?.members().collect())
    } else {
        Ok(vec![bytes])
    }
}

/// Each output of an artefact as a single-output description, in output
/// order: a container's members, or a blob's outputs
/// ([`output_specs`]: the shared basis with each output's own numbers).
///
/// # Errors
/// The runtime's refusal of the container or of a blob.
pub fn output_descriptions(bytes: &[u8]) -> Result<Vec<ModelSpec>> {
    if is_container(bytes) {
        members(bytes)?
            .into_iter()
            .map(|m| Ok(ModelSpec::from_bytes(m)?))
            .collect()
    } else {
        Ok(output_specs(&ModelSpec::from_bytes(bytes)?))
    }
}

/// Output `p`'s own blob: a container's member `p` verbatim, or for a
/// blob of several outputs the one-output blob of that output alone (`p =
/// 0` of a one-output blob is the blob itself). `None` past the last.
///
/// # Errors
/// The runtime's refusal of the artefact.
pub fn output_blob(bytes: &[u8], p: usize) -> Result<Option<Vec<u8>>> {
    if is_container(bytes) {
        return Ok(members(bytes)?.get(p).map(|m| m.to_vec()));
    }
    let spec = ModelSpec::from_bytes(bytes)?;
    if spec.outputs.is_empty() {
        return Ok((p == 0).then(|| bytes.to_vec()));
    }
    output_specs(&spec)
        .get(p)
        .map(|s| Ok(s.to_bytes()?))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOB: &[u8] = include_bytes!("../../../runtime/tests/data/doc-model.sgp");

    #[test]
    fn a_container_holds_its_members_verbatim_and_one_blob_is_itself() {
        assert_eq!(artefact(&[BLOB]).unwrap(), BLOB);
        let two = artefact(&[BLOB, BLOB]).unwrap();
        assert!(is_container(&two) && !is_container(BLOB));
        assert_eq!(two.len(), BLOB.len() * 2 + 12 + 8);
        assert_eq!(members(&two).unwrap(), vec![BLOB, BLOB]);
        assert_eq!(output_blob(&two, 1).unwrap().as_deref(), Some(BLOB));
        assert_eq!(output_blob(&two, 2).unwrap(), None);
        assert_eq!(output_blob(BLOB, 0).unwrap().as_deref(), Some(BLOB));
        assert_eq!(output_descriptions(&two).unwrap().len(), 2);
        let mut bad = two.clone();
        bad[20] ^= 1;
        assert!(members(&bad).is_err());
    }
}
