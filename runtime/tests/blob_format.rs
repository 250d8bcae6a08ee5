//! The blob is untrusted input: every way of damaging it must give an error.

mod common;

use common::{doc_spec, product_variance, random_spec};
use sgp_runtime::{
    Dimension, Error, Link, Model, ModelSpec, VarianceForm, MAGIC, NAME_CAPACITY, VERSION,
};

type Small = Model<8, 3, 3>;

fn small_blob() -> Vec<u8> {
    random_spec(7, 3, 2, 2, false, false, true, Link::Identity)
        .to_bytes()
        .unwrap()
}

/// Rewrites the CRC so that a deliberately edited body reaches the decoder.
fn reseal(blob: &mut [u8]) {
    let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
    let at = blob.len() - 4;
    let sum = crc.checksum(&blob[..at]);
    blob[at..].copy_from_slice(&sum.to_le_bytes());
}

#[test]
fn spec_round_trips_through_bytes() {
    for (seed, projected, per_basis, two) in [
        (1, false, false, true),
        (2, true, false, true),
        (3, false, true, false),
    ] {
        let g = if projected { 2 } else { 3 };
        let spec = random_spec(seed, 5, g, 3, projected, per_basis, two, Link::Identity);
        let bytes = spec.to_bytes().unwrap();
        assert_eq!(ModelSpec::from_bytes(&bytes).unwrap(), spec);
        assert!(Model::<5, 3, 3>::from_bytes(&bytes).is_ok());
    }
}

#[test]
fn same_spec_same_bytes() {
    let spec = random_spec(11, 4, 2, 2, false, false, true, Link::Identity);
    assert_eq!(spec.to_bytes().unwrap(), spec.clone().to_bytes().unwrap());
}

#[test]
fn blob_layout_matches_format_md() {
    let blob = small_blob();
    assert_eq!(&blob[..4], &MAGIC);
    // A blob whose outputs all have their own factors is version 5.
    assert_eq!(u16::from_le_bytes([blob[4], blob[5]]), 5);
    let body = u32::from_le_bytes(blob[6..10].try_into().unwrap()) as usize;
    assert_eq!(blob.len(), 10 + body + 4);
}

/// Asserts that flipping any single bit of `blob` is refused by the reader
/// and the device model.
fn assert_every_flipped_bit_is_an_error(blob: &[u8]) {
    for byte in 0..blob.len() {
        for bit in 0..8 {
            let mut bad = blob.to_vec();
            bad[byte] ^= 1 << bit;
            let result = Small::from_bytes(&bad);
            assert!(result.is_err(), "bit {bit} of byte {byte} went unnoticed");
            assert!(ModelSpec::from_bytes(&bad).is_err());
        }
    }
}

#[test]
fn every_flipped_bit_is_an_error() {
    assert_every_flipped_bit_is_an_error(&small_blob());
}

#[test]
fn every_flipped_bit_of_a_per_basis_blob_is_an_error() {
    // Per-basis widths and amplitudes: the layout VSGP exports.
    let spec = random_spec(8, 3, 2, 2, false, true, true, Link::Identity);
    assert_eq!(spec.shape.kind, sgp_runtime::ModelKind::Vsgp);
    let blob = spec.to_bytes().unwrap();
    assert!(Small::from_bytes(&blob).is_ok());
    assert_every_flipped_bit_is_an_error(&blob);
}

#[test]
fn every_truncation_is_an_error() {
    let blob = small_blob();
    for len in 0..blob.len() {
        let result = Small::from_bytes(&blob[..len]);
        match result {
            Err(Error::Truncated { found, .. }) => assert_eq!(found, len),
            Err(Error::BadMagic) if len == 0 => panic!("empty input should read as truncated"),
            other => panic!("length {len}: {other:?}"),
        }
    }
}

#[test]
fn each_kind_of_damage_has_its_own_error() {
    let blob = small_blob();
    let mut bad = blob.clone();
    bad[0] = b'X';
    assert_eq!(Small::from_bytes(&bad).unwrap_err(), Error::BadMagic);
    assert_eq!(
        Small::from_bytes(b"GIF89a........").unwrap_err(),
        Error::BadMagic
    );

    let mut bad = blob.clone();
    bad[4] = 10;
    assert_eq!(
        Small::from_bytes(&bad).unwrap_err(),
        Error::UnsupportedVersion { found: 10 }
    );

    let mut bad = blob.clone();
    bad.push(0);
    assert!(matches!(
        Small::from_bytes(&bad),
        Err(Error::TrailingBytes { .. })
    ));

    let mut bad = blob.clone();
    let middle = bad.len() / 2;
    bad[middle] ^= 0x10;
    assert!(matches!(
        Small::from_bytes(&bad),
        Err(Error::CrcMismatch { .. })
    ));
}

#[test]
fn capacity_too_small_is_reported_per_dimension() {
    let blob = random_spec(3, 6, 2, 4, true, false, true, Link::Identity)
        .to_bytes()
        .unwrap();
    assert_eq!(
        Model::<5, 2, 4>::from_bytes(&blob).unwrap_err(),
        Error::CapacityExceeded {
            dimension: Dimension::Basis,
            required: 6,
            capacity: 5
        }
    );
    assert_eq!(
        Model::<6, 1, 4>::from_bytes(&blob).unwrap_err(),
        Error::CapacityExceeded {
            dimension: Dimension::Feature,
            required: 2,
            capacity: 1
        }
    );
    assert_eq!(
        Model::<6, 2, 3>::from_bytes(&blob).unwrap_err(),
        Error::CapacityExceeded {
            dimension: Dimension::Input,
            required: 4,
            capacity: 3
        }
    );
    assert!(Model::<6, 2, 4>::from_bytes(&blob).is_ok());
}

/// Encodes a spec without the writer's validation, as a buggy or hostile
/// writer would, so the reader's own checks are exercised.
fn encode_unchecked(spec: &ModelSpec) -> Vec<u8> {
    let body = postcard::to_allocvec(spec).unwrap();
    let mut blob = MAGIC.to_vec();
    blob.extend_from_slice(&VERSION.to_le_bytes());
    blob.extend_from_slice(&(body.len() as u32).to_le_bytes());
    blob.extend_from_slice(&body);
    blob.extend_from_slice(&[0; 4]);
    reseal(&mut blob);
    blob
}

#[test]
fn bad_numbers_are_refused_by_writer_and_reader() {
    let good = random_spec(5, 3, 2, 2, false, false, true, Link::Identity);
    type Damage = Box<dyn Fn(&mut ModelSpec)>;
    let cases: Vec<(Damage, Error)> = vec![
        (
            Box::new(|s| s.beta[1] = f32::NAN),
            Error::NonFinite { field: "beta" },
        ),
        (
            Box::new(|s| s.centres[0] = f32::INFINITY),
            Error::NonFinite { field: "centres" },
        ),
        (
            Box::new(|s| s.y_scale = f32::NEG_INFINITY),
            Error::NonFinite { field: "y_scale" },
        ),
        (
            Box::new(|s| s.x_scale[0] = 0.0),
            Error::InvalidValue { field: "x_scale" },
        ),
        (
            Box::new(|s| s.widths[0] = -1.0),
            Error::InvalidValue { field: "widths" },
        ),
        (
            Box::new(|s| s.noise = -0.1),
            Error::InvalidValue { field: "noise" },
        ),
        (
            Box::new(|s| s.l1[2] = 0.0),
            Error::InvalidValue { field: "l1" },
        ),
        (
            Box::new(|s| s.l2[5] = -1.0),
            Error::InvalidValue { field: "l2" },
        ),
        (
            Box::new(|s| s.beta.push(1.0)),
            Error::InconsistentSizes {
                field: "beta",
                expected: 3,
                found: 4,
            },
        ),
        (
            Box::new(|s| s.l2.clear()),
            Error::InconsistentSizes {
                field: "l2",
                expected: 6,
                found: 0,
            },
        ),
        (
            Box::new(|s| s.shape.feature_dim = 1),
            Error::InconsistentSizes {
                field: "centres",
                expected: 2,
                found: 1,
            },
        ),
        (
            Box::new(|s| s.shape.n_basis = 0),
            Error::InvalidValue { field: "beta" },
        ),
        // A subnormal scale has an infinite reciprocal (the device stores
        // 1 / x_scale); a y_scale whose square overflows would make every
        // variance infinite.
        (
            Box::new(|s| s.x_scale[1] = 1e-40),
            Error::InvalidValue { field: "x_scale" },
        ),
        (
            Box::new(|s| s.y_scale = 1e20),
            Error::InvalidValue { field: "y_scale" },
        ),
        (
            Box::new(|s| s.x_min[1] = f32::NAN),
            Error::NonFinite { field: "x_min" },
        ),
        (
            Box::new(|s| s.x_max[1] = s.x_min[1] - 1.0),
            Error::InvalidValue { field: "x_max" },
        ),
        (
            Box::new(|s| {
                s.x_min.pop();
            }),
            Error::InconsistentSizes {
                field: "x_min",
                expected: 2,
                found: 1,
            },
        ),
        (
            Box::new(|s| s.x_max.clear()),
            Error::InconsistentSizes {
                field: "x_max",
                expected: 2,
                found: 0,
            },
        ),
    ];
    for (damage, expected) in cases {
        let mut spec = good.clone();
        damage(&mut spec);
        assert_eq!(spec.to_bytes().unwrap_err(), expected);
        let blob = encode_unchecked(&spec);
        assert_eq!(Small::from_bytes(&blob).unwrap_err(), expected);
        assert_eq!(ModelSpec::from_bytes(&blob).unwrap_err(), expected);
    }
}

#[test]
fn a_body_with_garbage_after_it_is_malformed() {
    let spec = random_spec(5, 3, 2, 2, false, false, true, Link::Identity);
    let mut blob = encode_unchecked(&spec);
    // Grow the body by one byte and fix up length and CRC.
    let body_len = u32::from_le_bytes(blob[6..10].try_into().unwrap()) + 1;
    blob.insert(blob.len() - 4, 0xAA);
    blob[6..10].copy_from_slice(&body_len.to_le_bytes());
    reseal(&mut blob);
    assert_eq!(Small::from_bytes(&blob).unwrap_err(), Error::Malformed);
    assert_eq!(ModelSpec::from_bytes(&blob).unwrap_err(), Error::Malformed);
}

/// The documentation examples read `tests/data/doc-model.sgp`; it must be
/// exactly what the current writer produces. `SGP_BLESS=1` rewrites it.
#[test]
fn doc_model_file_is_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/doc-model.sgp");
    let bytes = doc_spec().to_bytes().unwrap();
    if std::env::var_os("SGP_BLESS").is_some() {
        std::fs::write(path, &bytes).unwrap();
    }
    assert_eq!(
        std::fs::read(path).unwrap(),
        bytes,
        "run with SGP_BLESS=1 to regenerate"
    );
}

mod fuzz {
    //! Untrusted bytes, generated: the loaders return, never panic.
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = Small::from_bytes(&bytes);
            let _ = ModelSpec::from_bytes(&bytes);
        }

        /// Damage behind a valid preamble and CRC, so the body decoder
        /// itself sees garbage (the CRC would otherwise stop it first).
        #[test]
        fn resealed_random_edits_never_panic(
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        ) {
            let mut blob = small_blob();
            let body = 10..blob.len() - 4;
            for (at, value) in edits {
                let at = body.start + at % body.len();
                blob[at] = value;
            }
            reseal(&mut blob);
            let _ = Small::from_bytes(&blob);
            let _ = ModelSpec::from_bytes(&blob);
            if let Ok(model) = Small::from_bytes(&blob) {
                // Whatever loaded evaluates without panicking.
                let _ = model.predict(&[0.5, -0.5]);
            }
        }
    }
}

/// `tests/data/doc-model-v1.sgp` to `doc-model-v4.sgp` are the
/// documentation model as the version-1 writer (before `positive_class`),
/// the version-2 writer (before the input range), the version-3 writer
/// (before the variance form) and the version-4 writer (before the further
/// outputs and the class labels) wrote it: they must still load, with the
/// same numbers, `positive_class` read as 1 from version 1, no input range
/// before version 3, the solves, one output and no labels.
#[test]
fn version_1_to_4_blobs_still_load() {
    let new = Model::<4, 2, 2>::from_bytes(&doc_spec().to_bytes().unwrap()).unwrap();
    assert!(new.training_range().is_some());
    let fixtures: [(&[u8], u16, f32); 4] = [
        (include_bytes!("data/doc-model-v1.sgp"), 1, 1.0),
        (include_bytes!("data/doc-model-v2.sgp"), 2, 0.0),
        (include_bytes!("data/doc-model-v3.sgp"), 3, 0.0),
        (include_bytes!("data/doc-model-v4.sgp"), 4, 0.0),
    ];
    for (blob, version, positive_class) in fixtures {
        assert_eq!(u16::from_le_bytes([blob[4], blob[5]]), version);
        let mut expected = doc_spec();
        expected.positive_class = positive_class;
        if version < 3 {
            expected.x_min.clear();
            expected.x_max.clear();
        }
        assert_eq!(expected.variance, VarianceForm::Solves);
        assert_eq!(ModelSpec::from_bytes(blob).unwrap(), expected);
        let old = Model::<4, 2, 2>::from_bytes(blob).unwrap();
        for x in [[0.0, 0.0], [1.5, -0.7], [30.0, 9.0]] {
            assert_eq!(old.predict(&x).unwrap(), new.predict(&x).unwrap());
        }
        assert!(old.input_names() == ["speed", "load"]);
        assert_eq!(old.output_count(), 1);
        assert_every_flipped_bit_is_an_error(blob);
        // Re-encoded, it is a blob of the oldest version that holds it.
        let again = expected.to_bytes().unwrap();
        assert_eq!(u16::from_le_bytes([again[4], again[5]]), 5);
        assert_eq!(ModelSpec::from_bytes(&again).unwrap(), expected);
        let model = Model::<4, 2, 2>::from_bytes(&again).unwrap();
        if version < 3 {
            assert_eq!(old.training_range(), None);
            assert_eq!(
                old.in_training_range(&[0.0, 0.0]),
                Err(Error::NoTrainingRange)
            );
            assert_eq!(model.training_range(), None);
        } else {
            assert_eq!(old.training_range(), new.training_range());
        }
    }
}

/// The product form (version 4): one factor, and a variance byte that
/// names no form is no blob.
#[test]
fn the_variance_form_is_checked() {
    let mut spec = doc_spec();
    spec.variance = VarianceForm::Product;
    // Two factors cannot be a product.
    assert_eq!(
        spec.to_bytes().unwrap_err(),
        Error::InvalidValue { field: "variance" }
    );
    spec.shape.two_factors = false;
    spec.l2.clear();
    let mut blob = spec.to_bytes().unwrap();
    assert_eq!(ModelSpec::from_bytes(&blob).unwrap(), spec);
    let model = Small::from_bytes(&blob).unwrap();
    assert!(model.predict(&[0.5, -0.5]).is_ok());
    // The form is the body's last byte but the two empty sequences of
    // version 5: 1 (product).
    let at = blob.len() - 7;
    assert_eq!(blob[at], 1);
    blob[at] = 2;
    reseal(&mut blob);
    assert_eq!(Small::from_bytes(&blob).unwrap_err(), Error::Malformed);
    assert_eq!(ModelSpec::from_bytes(&blob).unwrap_err(), Error::Malformed);
    // A product claimed over a two-factor body.
    let mut two = doc_spec().to_bytes().unwrap();
    let at = two.len() - 7;
    two[at] = 1;
    reseal(&mut two);
    assert_eq!(
        Small::from_bytes(&two).unwrap_err(),
        Error::InvalidValue { field: "variance" }
    );
}

#[test]
fn versions_outside_1_to_9_are_unsupported_and_a_later_body_is_not_an_earlier_one() {
    assert_eq!(VERSION, 9);
    let blob = small_blob();
    for version in [0u16, 10, 0xffff] {
        let mut bad = blob.clone();
        bad[4..6].copy_from_slice(&version.to_le_bytes());
        reseal(&mut bad);
        let expected = Error::UnsupportedVersion { found: version };
        assert_eq!(Small::from_bytes(&bad).unwrap_err(), expected);
        assert_eq!(ModelSpec::from_bytes(&bad).unwrap_err(), expected);
    }
    // A v5 body labelled v4, v3, v2 or v1 has bytes (the outputs and
    // labels, the variance form, the range, positive_class) left over;
    // labelled v7, v8 or v9 it ends before the learning block.
    for version in [1u16, 2, 3, 4, 7, 8, 9] {
        let mut relabelled = blob.clone();
        relabelled[4..6].copy_from_slice(&version.to_le_bytes());
        reseal(&mut relabelled);
        assert_eq!(
            Small::from_bytes(&relabelled).unwrap_err(),
            Error::Malformed
        );
        assert_eq!(
            ModelSpec::from_bytes(&relabelled).unwrap_err(),
            Error::Malformed
        );
    }
}

#[test]
fn a_non_finite_positive_class_is_refused() {
    let mut spec = random_spec(5, 3, 2, 2, false, false, false, Link::Probit);
    spec.positive_class = f32::NAN;
    let expected = Error::NonFinite {
        field: "positive_class",
    };
    assert_eq!(spec.to_bytes().unwrap_err(), expected);
    let blob = encode_unchecked(&spec);
    assert_eq!(Small::from_bytes(&blob).unwrap_err(), expected);
    assert_eq!(ModelSpec::from_bytes(&blob).unwrap_err(), expected);
}

#[test]
fn every_flipped_bit_of_a_probit_single_factor_blob_is_an_error() {
    // The layout IVM exports: probit, one factor, shared widths.
    let mut spec = random_spec(9, 3, 2, 2, false, false, false, Link::Probit);
    spec.shape.kind = sgp_runtime::ModelKind::Ivm;
    spec.positive_class = 4.0;
    let blob = spec.to_bytes().unwrap();
    assert_eq!(ModelSpec::from_bytes(&blob).unwrap(), spec);
    assert!(Small::from_bytes(&blob)
        .unwrap()
        .probability(&[0.1, 0.2])
        .is_ok());
    assert_every_flipped_bit_is_an_error(&blob);
}

/// Replaces body bytes `at .. at + len` with `with`, fixing length and CRC.
fn edit_body(blob: &[u8], at: usize, len: usize, with: &[u8]) -> Vec<u8> {
    let body_len = u32::from_le_bytes(blob[6..10].try_into().unwrap()) as usize;
    let mut body = blob[10..10 + body_len].to_vec();
    body.splice(at..at + len, with.iter().copied());
    let mut out = blob[..6].to_vec();
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    out.extend_from_slice(&[0; 4]);
    reseal(&mut out);
    out
}

fn both_errors(blob: &[u8]) -> (Error, Error) {
    (
        Small::from_bytes(blob).unwrap_err(),
        ModelSpec::from_bytes(blob).unwrap_err(),
    )
}

#[test]
fn decoding_errors_are_malformed_as_format_md_says() {
    let blob = small_blob();
    // Body: kind, link, D, G, M, 3 bools, names count, len "x0", "x0", ...
    assert_eq!(&blob[10..18], &[1, 0, 2, 2, 3, 0, 0, 1]);
    let malformed = (Error::Malformed, Error::Malformed);
    // Enum index past the last variant (kind 8, link 4).
    assert_eq!(both_errors(&edit_body(&blob, 0, 1, &[8])), malformed);
    assert_eq!(both_errors(&edit_body(&blob, 1, 1, &[4])), malformed);
    // A bool other than 0 or 1.
    assert_eq!(both_errors(&edit_body(&blob, 5, 1, &[2])), malformed);
    // u16 varint: four bytes are overlong, a third byte above 0x03 too ...
    assert_eq!(
        both_errors(&edit_body(&blob, 2, 1, &[0x82, 0x80, 0x80, 0x00])),
        malformed
    );
    assert_eq!(
        both_errors(&edit_body(&blob, 2, 1, &[0x82, 0x80, 0x04])),
        malformed
    );
    // ... but redundant zero groups within three bytes are accepted.
    let padded = edit_body(&blob, 2, 1, &[0x82, 0x80, 0x00]);
    assert_eq!(
        ModelSpec::from_bytes(&padded).unwrap(),
        ModelSpec::from_bytes(&blob).unwrap()
    );
    assert!(Small::from_bytes(&padded).is_ok());
    // Invalid UTF-8 in a name.
    assert_eq!(&blob[20..22], b"x0");
    assert_eq!(both_errors(&edit_body(&blob, 10, 1, &[0xFF])), malformed);
    // A body that ends inside a value.
    let body_len = u32::from_le_bytes(blob[6..10].try_into().unwrap()) as usize;
    assert_eq!(
        both_errors(&edit_body(&blob, body_len - 2, 2, &[])),
        malformed
    );
}

#[test]
fn short_blobs_are_truncated_and_sizes_are_checked_in_the_documented_order() {
    for short in [&b""[..], b"SG", b"SGPM", b"SGPM\x03\x00\x00\x00"] {
        assert_eq!(
            Small::from_bytes(short).unwrap_err(),
            Error::Truncated {
                expected: 14,
                found: short.len()
            }
        );
    }
    assert_eq!(Small::from_bytes(b"SGPX").unwrap_err(), Error::BadMagic);
    // M = 0, D = 0, G = 0 each name their field; G != D names centres.
    let blob = small_blob();
    let cases = [
        (4, 0, Error::InvalidValue { field: "beta" }),
        (2, 0, Error::InvalidValue { field: "x_mean" }),
        (3, 0, Error::InvalidValue { field: "centres" }),
        (
            3,
            1,
            Error::InconsistentSizes {
                field: "centres",
                expected: 2,
                found: 1,
            },
        ),
    ];
    for (at, value, expected) in cases {
        let bad = edit_body(&blob, at, 1, &[value]);
        assert_eq!(both_errors(&bad), (expected, expected));
    }
}

#[test]
fn the_device_and_host_tools_both_count_the_names() {
    let mut spec = random_spec(5, 3, 2, 2, false, false, true, Link::Identity);
    spec.input_names.push("extra".into());
    let blob = encode_unchecked(&spec);
    let expected = Error::InconsistentSizes {
        field: "input_names",
        expected: 2,
        found: 3,
    };
    assert_eq!(both_errors(&blob), (expected, expected));
}

#[test]
fn the_device_keeps_the_names_and_refuses_one_longer_than_it_holds() {
    let mut spec = random_spec(5, 3, 2, 2, false, false, true, Link::Identity);
    spec.input_names = vec!["a".repeat(NAME_CAPACITY), "é".into()];
    spec.target_name = "target".into();
    let model = Small::from_bytes(&spec.to_bytes().unwrap()).unwrap();
    assert!(model.input_names() == [&"a".repeat(NAME_CAPACITY)[..], "é"]);
    assert_eq!(model.target_name(), "target");

    spec.input_names[1] = "b".repeat(NAME_CAPACITY + 1);
    let blob = spec.to_bytes().unwrap();
    assert_eq!(
        Small::from_bytes(&blob).unwrap_err(),
        Error::NameTooLong {
            input: Some(1),
            length: NAME_CAPACITY + 1,
            capacity: NAME_CAPACITY
        }
    );
    // Host tools have no such limit.
    assert_eq!(ModelSpec::from_bytes(&blob).unwrap(), spec);
    spec.input_names[1] = "b".into();
    // Bytes, not characters: 16 two-byte characters are 32 bytes.
    spec.target_name = "é".repeat(16);
    assert_eq!(
        Small::from_bytes(&spec.to_bytes().unwrap()).unwrap_err(),
        Error::NameTooLong {
            input: None,
            length: 32,
            capacity: NAME_CAPACITY
        }
    );
}

#[test]
fn a_failed_load_forgets_names_and_range() {
    let blob = small_blob();
    let mut model = Small::new();
    model.load(&blob).unwrap();
    assert_eq!(model.input_names().len(), 2);
    assert!(model.training_range().is_some());
    assert!(model.load(&blob[..blob.len() - 1]).is_err());
    assert!(model.input_names().is_empty());
    assert_eq!(model.target_name(), "");
    assert_eq!(model.training_range(), None);
}

#[test]
fn size_formula_of_format_md() {
    let mut spec = random_spec(1, 32, 4, 4, false, false, true, Link::Identity);
    spec.input_names = (0..4).map(|i| format!("x{i}")).collect();
    spec.target_name = "y".into();
    assert_eq!(spec.to_bytes().unwrap().len(), 5026);
    let mut ivm = random_spec(1, 32, 4, 4, false, false, false, Link::Probit);
    ivm.input_names = spec.input_names.clone();
    ivm.target_name = "y".into();
    assert_eq!(ivm.to_bytes().unwrap().len(), 2913);
    // The product form drops `l2`: the SPGP's blob is the IVM's size.
    let product = product_variance(spec, 1);
    assert_eq!(product.to_bytes().unwrap().len(), 2913);
}
