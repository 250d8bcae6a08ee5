//! One artefact either way: a container of single-output blobs predicts
//! what each member does alone, a shared blob through an `Artefact` what
//! its `Model` does, and every damaged container is refused with its error.

mod common;

use common::random_spec;
use sgp_runtime::{Artefact, Container, Dimension, Error, Link, Model, ModelSpec};

/// `count` single-output models on the same three inputs, differing in
/// everything else (basis size, widths, factors, form), named `y0`, `y1`, ...
fn members(seed: u64, count: usize) -> Vec<ModelSpec> {
    (0..count)
        .map(|p| {
            let mut spec = random_spec(
                seed + p as u64,
                4 + 2 * p,
                3,
                3,
                false,
                p % 2 == 1,
                p % 2 == 0,
                Link::Identity,
            );
            spec.target_name = format!("y{p}");
            spec
        })
        .collect()
}

fn container(blobs: &[Vec<u8>]) -> Vec<u8> {
    let members: Vec<&[u8]> = blobs.iter().map(Vec::as_slice).collect();
    let mut out = vec![0; Container::encoded_len(&members).unwrap()];
    assert_eq!(Container::write(&members, &mut out).unwrap(), out.len());
    out
}

fn blobs(specs: &[ModelSpec]) -> Vec<Vec<u8>> {
    specs.iter().map(|s| s.to_bytes().unwrap()).collect()
}

const INPUTS: [[f32; 3]; 3] = [[0.0, 0.0, 0.0], [1.5, -0.7, 2.0], [-3.0, 4.0, 0.5]];

type Three = Artefact<16, 4, 4, 3>;

#[test]
fn a_containers_predictions_are_its_members_bit_for_bit() {
    for seed in 0..5 {
        let blobs = blobs(&members(100 * seed, 3));
        let artefact = Three::from_bytes(&container(&blobs)).unwrap();
        assert!(artefact.is_separate());
        assert_eq!(artefact.output_count(), 3);
        assert_eq!(artefact.input_dim(), 3);
        for p in 0..blobs.len() {
            let name = format!("y{p}");
            assert_eq!(artefact.output_name(p), Some(name.as_str()));
        }
        assert_eq!(artefact.output_name(3), None);
        for x in INPUTS {
            let all = artefact.predict_all(&x).unwrap();
            assert_eq!(all.len(), 3);
            for (p, blob) in blobs.iter().enumerate() {
                let alone = Model::<16, 4, 4>::from_bytes(blob).unwrap();
                assert_eq!(all[p], alone.predict(&x).unwrap(), "seed {seed} output {p}");
            }
        }
    }
}

#[test]
fn a_shared_blob_predicts_through_an_artefact_as_its_model_does() {
    let mut spec = members(7, 1).remove(0);
    let second = members(8, 1).remove(0);
    spec.outputs.push(sgp_runtime::OutputSpec {
        name: "z".into(),
        beta: spec.beta.iter().map(|b| -b).collect(),
        l1: spec.l1.clone(),
        l2: spec.l2.clone(),
        prior: spec.prior,
        noise: second.noise,
        bias: 0.0,
        y_mean: 1.0,
        y_scale: 3.0,
    });
    let blob = spec.to_bytes().unwrap();
    let model = Model::<16, 4, 4, 3>::from_bytes(&blob).unwrap();
    // Loaded after a container, in place: the form switches back.
    let mut artefact = Three::from_bytes(&container(&blobs(&members(0, 3)))).unwrap();
    artefact.load(&blob).unwrap();
    assert!(!artefact.is_separate());
    assert_eq!(artefact.output_count(), 2);
    assert_eq!(artefact.output_name(1), Some("z"));
    for x in INPUTS {
        assert_eq!(
            artefact.predict_all(&x).unwrap(),
            model.predict_all(&x).unwrap()
        );
    }
}

#[test]
fn a_damaged_container_is_refused_with_its_error() {
    let blobs = blobs(&members(3, 2));
    let good = container(&blobs);
    let load = |bytes: &[u8]| Three::from_bytes(bytes).map(|_| ());
    assert_eq!(load(&good), Ok(()));
    let crc_at = good.len() - 4;

    // The CRC itself, and a byte inside a member.
    for at in [crc_at, 8 + 4 + 20] {
        let mut bad = good.clone();
        bad[at] ^= 0x10;
        assert!(
            matches!(load(&bad), Err(Error::CrcMismatch { .. })),
            "byte {at}"
        );
    }
    // The last member's length one more or one less: the lengths no
    // longer end at the CRC.
    let at = 8 + 4 + blobs[0].len();
    for (delta, truncated) in [(1i64, true), (-1, false)] {
        let mut bad = good.clone();
        let len = u32::from_le_bytes(bad[at..at + 4].try_into().unwrap()) as i64 + delta;
        bad[at..at + 4].copy_from_slice(&(len as u32).to_le_bytes());
        let err = load(&bad).unwrap_err();
        if truncated {
            assert!(matches!(err, Error::Truncated { .. }), "{err:?}");
        } else {
            assert!(matches!(err, Error::TrailingBytes { .. }), "{err:?}");
        }
    }
    // The count: one more runs past the end, one fewer leaves bytes over,
    // none is no container.
    let with_count = |count: u16| {
        let mut bad = good.clone();
        bad[6..8].copy_from_slice(&count.to_le_bytes());
        load(&bad).unwrap_err()
    };
    assert!(matches!(with_count(3), Error::Truncated { .. }));
    assert!(matches!(with_count(1), Error::TrailingBytes { .. }));
    assert_eq!(with_count(0), Error::Malformed);
    // The version.
    let mut bad = good.clone();
    bad[4] = 2;
    assert_eq!(load(&bad), Err(Error::UnsupportedVersion { found: 2 }));
    // More members than the capacity.
    let four = container(&self::blobs(&members(3, 4)));
    assert_eq!(
        load(&four),
        Err(Error::CapacityExceeded {
            dimension: Dimension::Output,
            required: 4,
            capacity: 3
        })
    );
    // A member that is not a blob.
    let junk = container(&[blobs[0].clone(), b"not a blob".to_vec()]);
    assert_eq!(load(&junk), Err(Error::BadMagic));
}

#[test]
fn every_truncation_and_bit_flip_of_a_container_is_refused_without_panic() {
    let good = container(&blobs(&members(11, 2)));
    let mut artefact = Three::new();
    for cut in 0..good.len() {
        assert!(artefact.load(&good[..cut]).is_err(), "cut at {cut}");
        assert_eq!(artefact.output_count(), 0, "cut at {cut}");
        assert!(artefact.predict_all(&INPUTS[0]).is_err());
    }
    for byte in 0..good.len() {
        for bit in 0..8 {
            let mut bad = good.clone();
            bad[byte] ^= 1 << bit;
            assert!(artefact.load(&bad).is_err(), "byte {byte} bit {bit}");
        }
    }
    artefact.load(&good).unwrap();
    assert_eq!(artefact.output_count(), 2);
}

#[test]
fn members_on_other_inputs_or_of_several_outputs_are_refused() {
    let mut specs = members(5, 2);
    specs[1].input_names[2] = "other".into();
    let renamed = container(&blobs(&specs));
    assert_eq!(
        Three::from_bytes(&renamed).map(|_| ()),
        Err(Error::MemberMismatch { member: 1 })
    );
    let fewer = random_spec(9, 4, 2, 2, false, false, true, Link::Identity);
    let narrower = container(&[
        members(5, 1)[0].to_bytes().unwrap(),
        fewer.to_bytes().unwrap(),
    ]);
    assert_eq!(
        Three::from_bytes(&narrower).map(|_| ()),
        Err(Error::MemberMismatch { member: 1 })
    );
    // A member must be one output: a shared blob inside is refused.
    let mut shared = members(5, 1).remove(0);
    shared.outputs.push(sgp_runtime::OutputSpec {
        name: "z".into(),
        beta: shared.beta.clone(),
        l1: shared.l1.clone(),
        l2: shared.l2.clone(),
        prior: shared.prior,
        noise: shared.noise,
        bias: 0.0,
        y_mean: 0.0,
        y_scale: 1.0,
    });
    let nested = container(&[shared.to_bytes().unwrap()]);
    assert!(matches!(
        Three::from_bytes(&nested),
        Err(Error::CapacityExceeded {
            dimension: Dimension::Output,
            ..
        })
    ));
}
