//! `sgp fit --data DIR`: a directory of Parquet files is one input, read
//! by the streamed fit (docs/src/cluster.md). Its blob is the blob of the
//! one file holding its rows in name order, byte for byte, wherever the
//! files end; what does not stream, and an output among its files, are
//! refused before any work.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use nalgebra::{DMatrix, DVector};
use sgp_trainer::data::stream::{write_parquet, TableFile};

fn sgp(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sgp"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("spawn sgp")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn ok(out: &Output, what: &str) {
    assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr(out));
}

fn refused(out: &Output, mentions: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for m in mentions {
        assert!(err.contains(m), "stderr should mention {m:?}:\n{err}");
    }
}

/// Every row of the file `path`.
fn rows(path: &Path) -> (DMatrix<f64>, DVector<f64>, Vec<String>) {
    let table = TableFile::open(path, None).unwrap();
    let (mut x, mut y) = (Vec::new(), Vec::new());
    table
        .for_each_chunk(65_536, &mut |c, _| {
            x.extend(c.x.transpose().iter().copied());
            y.extend(c.y.iter().copied());
            Ok(())
        })
        .unwrap();
    let d = table.input_names.len();
    (
        DMatrix::from_row_slice(y.len(), d, &x),
        DVector::from_vec(y),
        table.input_names,
    )
}

const FIT: [&str; 8] = [
    "--m",
    "8",
    "--max-iter",
    "20",
    "--restarts",
    "1",
    "--seed",
    "3",
];

#[test]
fn a_directory_fits_to_the_blob_of_the_one_file_of_its_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    ok(
        &sgp(
            dir,
            &[
                "synth",
                "--rows",
                "80000",
                "--dim",
                "2",
                "--parquet",
                "all.parquet",
            ],
        ),
        "synth",
    );
    let (x, y, names) = rows(&dir.join("all.parquet"));
    let parts: PathBuf = dir.join("parts");
    std::fs::create_dir(&parts).unwrap();
    // Ends that are not the pass's chunks' (65,536 rows), in name order.
    for (name, start, end) in [
        ("p-0", 0, 20_000),
        ("p-1", 20_000, 70_001),
        ("p-2", 70_001, 80_000),
    ] {
        let (xs, ys) = (
            x.rows(start, end - start).into_owned(),
            y.rows(start, end - start).into_owned(),
        );
        write_parquet(&parts.join(name), &xs, &ys, &names, "y").unwrap();
    }
    std::fs::write(parts.join("_SUCCESS"), "").unwrap();
    let fit = |data: &str, out: &str, extra: &[&str]| {
        let mut args = vec!["fit", "--data", data, "--out", out];
        args.extend(FIT);
        args.extend(extra);
        sgp(dir, &args)
    };
    ok(&fit("all.parquet", "one.sgp", &[]), "fit the file");
    ok(&fit("parts", "dir.sgp", &["--json"]), "fit the directory");
    assert_eq!(
        std::fs::read(dir.join("one.sgp")).unwrap(),
        std::fs::read(dir.join("dir.sgp")).unwrap(),
        "the directory's blob is not the one file's"
    );

    // Refused before any work: an output among or beside the files, a fit
    // that does not stream, a file that is not Parquet.
    let before = std::fs::read(parts.join("p-1")).unwrap();
    refused(&fit("parts", "parts/p-1", &[]), &["is the input parts/p-1"]);
    assert_eq!(std::fs::read(parts.join("p-1")).unwrap(), before);
    refused(
        &fit("parts", "parts/m.sgp", &[]),
        &["is inside the input directory parts"],
    );
    refused(
        &fit("parts", "m.sgp", &["--model", "svgp"]),
        &["--model svgp is a classifier and target column 'y' is continuous"],
    );
    refused(
        &fit("parts", "m.sgp", &["--task", "classification"]),
        &["target column 'y' is continuous"],
    );
    refused(
        &fit(
            "parts",
            "m.sgp",
            &["--target", "x1,y", "--task", "classification"],
        ),
        &["several targets stream as a regression only"],
    );
    // Several targets stream: one blob of both on one basis here.
    ok(
        &fit("parts", "two.sgp", &["--target", "x1,y"]),
        "two targets",
    );
    assert!(dir.join("two.sgp").exists());
    std::fs::write(parts.join("notes.txt"), "hello").unwrap();
    refused(
        &fit("parts", "m.sgp", &[]),
        &["parts/notes.txt: not a Parquet file"],
    );
    std::fs::remove_file(parts.join("notes.txt")).unwrap();
    for p in ["p-0", "p-1", "p-2"] {
        std::fs::remove_file(parts.join(p)).unwrap();
    }
    refused(
        &fit("parts", "m.sgp", &[]),
        &["no Parquet files in this directory"],
    );
    assert!(!dir.join("m.sgp").exists());
}
