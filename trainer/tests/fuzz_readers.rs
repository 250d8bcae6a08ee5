//! The CSV and Parquet readers on untrusted bytes, fuzzed as the blob reader
//! is (runtime/tests/blob_format.rs): every flipped bit of a Parquet file,
//! random edits and truncations of valid CSV and Parquet files, and
//! arbitrary bytes, through every way a file is read (whole, by name,
//! streamed in chunks). Each read returns, as data or as an error naming
//! the file; none panics, hangs or aborts.
//!
//! Bounded in time: `SGP_FUZZ_CASES` (default 256) random cases per
//! property; the bit flips are exhaustive over a small file.

use std::panic::{catch_unwind, AssertUnwindSafe};

use nalgebra::{DMatrix, DVector};
use proptest::prelude::*;
use sgp_trainer::data::stream::{write_parquet, TableFile};
use sgp_trainer::data::Dataset;
use sgp_trainer::files::Input;

const NAME: &str = "fuzzed.dat";

/// A small valid Parquet file: 40 rows of two inputs and a target.
fn parquet_bytes() -> Vec<u8> {
    let x = DMatrix::from_fn(40, 2, |i, j| (i * (j + 3)) as f64 * 0.25 - 2.0);
    let y = DVector::from_fn(40, |i, _| libm::sin(i as f64 * 0.4));
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("p.parquet");
    write_parquet(&path, &x, &y, &["a".into(), "b".into()], "y").expect("written");
    std::fs::read(&path).expect("read back")
}

/// A small valid CSV file with a text column and a label target.
fn csv_bytes() -> Vec<u8> {
    let mut text = String::from("id,a,b,y\n");
    for i in 0..30 {
        let label = if i % 3 == 0 { "fault" } else { "ok" };
        text += &format!("r{i},{},{},{label}\n", i as f64 * 0.5, (i * i) % 7);
    }
    text.into_bytes()
}

/// Reads `bytes` every way `sgp` does; panics (failing the test) only if a
/// reader panicked, or an error does not name the file.
fn read_every_way(bytes: &[u8]) {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let input = Input::from_bytes(bytes, NAME).expect("spooled");
        let mut errors = Vec::new();
        errors.extend(Dataset::from_input(&input, None).err());
        errors.extend(Dataset::from_input(&input, Some("a")).err());
        errors.extend(input.read_inputs(&["a".into(), "b".into()]).err());
        match TableFile::from_input(&input, None) {
            Ok(table) => {
                let mut rows = 0usize;
                let streamed = table.for_each_chunk(7, &mut |chunk, _| {
                    rows += chunk.y.len();
                    Ok(())
                });
                errors.extend(streamed.err());
            }
            Err(e) => errors.push(e),
        }
        errors
    }));
    let errors = match outcome {
        Ok(errors) => errors,
        Err(_) => panic!("a reader panicked on {} bytes: {bytes:02x?}", bytes.len()),
    };
    for e in errors {
        let message = e.to_string();
        assert!(
            message.contains(NAME) || message.starts_with("--"),
            "error without the file's name: {message}"
        );
    }
}

fn cases() -> u32 {
    std::env::var("SGP_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

#[test]
fn every_flipped_bit_of_a_parquet_file_is_read_or_refused() {
    let good = parquet_bytes();
    read_every_way(&good);
    for at in 0..good.len() {
        for bit in 0..8 {
            let mut bad = good.clone();
            bad[at] ^= 1 << bit;
            read_every_way(&bad);
        }
    }
}

#[test]
fn every_truncation_of_a_parquet_file_is_refused() {
    let good = parquet_bytes();
    for len in 0..good.len() {
        read_every_way(&good[..len]);
    }
}

#[test]
fn the_issue_s_flipped_footer_bit_is_an_error_naming_the_file() {
    // The footer's column start, made negative: once a panic in the crate.
    let good = parquet_bytes();
    for at in good.len().saturating_sub(600)..good.len() {
        let mut bad = good.clone();
        bad[at] ^= 1;
        let input = Input::from_bytes(&bad, NAME).unwrap();
        if let Err(e) = Dataset::from_input(&input, None) {
            let m = e.to_string();
            assert!(m.starts_with(NAME), "{m}");
            assert_eq!(e.exit_code(), 2, "{m}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        read_every_way(&bytes);
        let mut parquet = b"PAR1".to_vec();
        parquet.extend(&bytes);
        parquet.extend(b"PAR1");
        read_every_way(&parquet);
    }

    #[test]
    fn edited_parquet_files_never_panic(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        cut in any::<usize>(),
    ) {
        let mut bytes = parquet_bytes();
        for (at, value) in edits {
            let at = at % bytes.len();
            bytes[at] = value;
        }
        read_every_way(&bytes);
        let keep = cut % bytes.len();
        // A cut inside the file, keeping its last 8 bytes (footer length
        // and magic) so that the footer is found and parsed.
        let mut cut_file = bytes[..keep].to_vec();
        cut_file.extend(&bytes[bytes.len() - 8..]);
        read_every_way(&cut_file);
    }

    #[test]
    fn edited_csv_files_never_panic(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        cut in any::<usize>(),
    ) {
        let mut bytes = csv_bytes();
        for (at, value) in edits {
            let at = at % bytes.len();
            bytes[at] = value;
        }
        read_every_way(&bytes);
        read_every_way(&bytes[..cut % bytes.len()]);
    }

    #[test]
    fn csv_of_random_cells_never_panics(
        rows in proptest::collection::vec(
            proptest::collection::vec(
                prop_oneof![
                    Just(String::new()),
                    "[a-z]{1,3}",
                    "-?[0-9]{1,4}(\\.[0-9]{0,3})?(e-?[0-9]{1,3})?",
                    Just("nan".to_owned()),
                    Just("1e999".to_owned()),
                    Just("\"a,b\"".to_owned()),
                    Just("\"".to_owned()),
                ],
                1..5,
            ),
            0..12,
        )
    ) {
        let mut text = String::from("a,b,y\n");
        for row in rows {
            text += &row.join(",");
            text.push('\n');
        }
        read_every_way(text.as_bytes());
    }
}
