//! Bad and awkward inputs, as a hostile but ordinary user gives them, run
//! through the real `sgp` binary: every output that is an input is refused
//! before any work and the input survives; a failed write leaves the old
//! file; pipes, FIFOs and `-` are read once; a corrupted Parquet file, a
//! stray word in a column of numbers, a headerless file and absurd sizes
//! are errors naming what is wrong (exit 2), never a panic, a hang or a
//! silent change of task; flags that do not apply are refused.

#![cfg(unix)]

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use tempfile::TempDir;

fn sgp_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sgp"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("spawn sgp")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit code 2, one `sgp: error:` line naming every string of `mentions`,
/// no panic.
fn refused(out: &Output, mentions: &[&str]) {
    let err = stderr(out);
    assert!(!err.contains("panicked"), "sgp panicked:\n{err}");
    assert_eq!(out.status.code(), Some(2), "expected exit 2:\n{err}");
    assert!(err.starts_with("sgp: error:"), "{err}");
    for m in mentions {
        assert!(err.contains(m), "stderr should mention {m:?}:\n{err}");
    }
}

fn succeeded(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "failed:\n{}", stderr(out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A directory with `d.csv` (200 rows of the ridge data) and `m.sgp`, a
/// quick fit of it.
fn workspace() -> TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let csv = succeeded(&sgp_in(
        dir.path(),
        &["synth", "--rows", "200", "--dim", "2"],
    ));
    fs::write(dir.path().join("d.csv"), csv).unwrap();
    succeeded(&run(
        dir.path(),
        &quick(&["fit", "--data", "d.csv", "--out", "m.sgp", "--quiet"]),
    ));
    dir
}

const QUICK: &[&str] = &["--m", "5", "--restarts", "1", "--max-iter", "15"];

fn quick(args: &[&str]) -> Vec<String> {
    args.iter().chain(QUICK).map(|s| (*s).to_owned()).collect()
}

fn run(dir: &Path, args: &[String]) -> Output {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    sgp_in(dir, &refs)
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_survives() {
    let dir = workspace();
    let d = dir.path();
    let data = fs::read(d.join("d.csv")).unwrap();
    let blob = fs::read(d.join("m.sgp")).unwrap();
    std::os::unix::fs::symlink(d.join("d.csv"), d.join("link.csv")).unwrap();
    fs::hard_link(d.join("d.csv"), d.join("hard.csv")).unwrap();
    for out in ["d.csv", "./d.csv", "link.csv", "hard.csv"] {
        let o = run(d, &quick(&["fit", "--data", "d.csv", "--out", out]));
        refused(&o, &[&format!("--out {out}"), "is the input d.csv"]);
        let o = run(
            d,
            &quick(&["fit", "--data", "d.csv", "--out", "n.sgp", "--golden", out]),
        );
        refused(&o, &[&format!("--golden {out}"), "is the input"]);
    }
    for args in [
        vec![
            "export", "--model", "m.sgp", "--format", "c", "--out", "m.sgp",
        ],
        vec![
            "plot", "--model", "m.sgp", "--data", "d.csv", "--out", "d.csv",
        ],
        vec![
            "plot", "--model", "m.sgp", "--data", "d.csv", "--out", "./m.sgp",
        ],
        vec![
            "sweep", "--data", "d.csv", "--test", "hard.csv", "--m", "4", "--out", "link.csv",
        ],
    ] {
        refused(&sgp_in(d, &args), &["is the input"]);
    }
    assert_eq!(fs::read(d.join("d.csv")).unwrap(), data);
    assert_eq!(fs::read(d.join("m.sgp")).unwrap(), blob);
    assert!(
        !d.join("n.sgp").exists(),
        "nothing is written when an output is refused"
    );
}

#[test]
fn output_paths_are_checked_before_the_fit() {
    let dir = workspace();
    let d = dir.path();
    fs::create_dir(d.join("sub")).unwrap();
    let o = run(d, &quick(&["fit", "--data", "d.csv", "--out", "sub"]));
    refused(&o, &["--out sub", "is a directory"]);
    let o = run(
        d,
        &quick(&[
            "fit",
            "--data",
            "d.csv",
            "--out",
            "a.sgp",
            "--golden",
            "nodir/g.rs",
        ]),
    );
    refused(
        &o,
        &["--golden nodir/g.rs", "directory 'nodir' does not exist"],
    );
    assert!(
        !d.join("a.sgp").exists(),
        "the blob is not written before --golden is refused"
    );
    let o = run(
        d,
        &quick(&[
            "fit", "--data", "d.csv", "--out", "a.sgp", "--golden", "a.sgp",
        ]),
    );
    refused(&o, &["--golden a.sgp", "is also --out"]);
    refused(
        &sgp_in(d, &["synth", "--rows", "9", "--parquet", "nodir/p.parquet"]),
        &["--parquet nodir/p.parquet"],
    );
    refused(&sgp_in(d, &["demo", "--out", "sub"]), &["--out sub"]);
}

/// A write that fails (here: a file-size limit smaller than the SVG) leaves
/// the old file as it was and no temporary file beside it.
#[test]
fn a_failed_write_leaves_the_old_file_intact() {
    let dir = workspace();
    let d = dir.path();
    fs::write(d.join("p.svg"), "old").unwrap();
    let sgp = env!("CARGO_BIN_EXE_sgp");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -f 2 && exec '{sgp}' plot --model m.sgp --data d.csv --out p.svg"
        ))
        .current_dir(d)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("p.svg") && err.contains("not written"),
        "{err}"
    );
    assert_eq!(fs::read(d.join("p.svg")).unwrap(), b"old");
    let left: Vec<_> = fs::read_dir(d)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("sgp-tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
    // Without the limit the same command replaces it whole.
    succeeded(&sgp_in(
        d,
        &[
            "plot", "--model", "m.sgp", "--data", "d.csv", "--out", "p.svg",
        ],
    ));
    assert!(fs::read_to_string(d.join("p.svg"))
        .unwrap()
        .starts_with("<svg"));
}

#[test]
fn pipes_fifos_and_standard_input_are_read_once() {
    let dir = workspace();
    let d = dir.path();
    let csv = fs::read(d.join("d.csv")).unwrap();
    let piped = |args: &[&str]| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sgp"))
            .args(args)
            .current_dir(d)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let data = csv.clone();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&data);
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        out
    };
    for data in ["-", "/dev/stdin"] {
        let args = quick(&["fit", "--data", data, "--out", "p.sgp", "--quiet"]);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        succeeded(&piped(&refs));
        let out = succeeded(&piped(&["predict", "--model", "m.sgp", "--data", data]));
        assert_eq!(out.lines().count(), 201, "{out}");
    }
    let fifo = d.join("f.csv");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let writer = {
        let (fifo, csv) = (fifo.clone(), csv.clone());
        std::thread::spawn(move || fs::write(fifo, csv).unwrap())
    };
    succeeded(&run(
        d,
        &quick(&["fit", "--data", "f.csv", "--out", "f.sgp", "--quiet"]),
    ));
    writer.join().unwrap();
    // A terminal or nothing on standard input is not data.
    refused(
        &sgp_in(d, &["predict", "--model", "m.sgp", "--data", "-"]),
        &["standard input"],
    );
}

#[test]
fn parquet_is_read_everywhere_and_a_corrupted_one_is_an_error() {
    let dir = workspace();
    let d = dir.path();
    succeeded(&sgp_in(
        d,
        &[
            "synth",
            "--rows",
            "60",
            "--dim",
            "2",
            "--parquet",
            "p.parquet",
        ],
    ));
    let csv = succeeded(&sgp_in(
        d,
        &["predict", "--model", "m.sgp", "--data", "d.csv"],
    ));
    let parquet = succeeded(&sgp_in(
        d,
        &["predict", "--model", "m.sgp", "--data", "p.parquet"],
    ));
    assert_eq!(csv.lines().next(), parquet.lines().next());
    assert_eq!(parquet.lines().count(), 61);
    let eval = succeeded(&sgp_in(
        d,
        &["eval", "--model", "m.sgp", "--data", "p.parquet"],
    ));
    assert!(eval.starts_with("rows        60"), "{eval}");
    // Every single flipped bit of the footer: a fit, or an error naming the
    // file with exit 2, never a panic (the bit 0 of byte 2106 among
    // them).
    let good = fs::read(d.join("p.parquet")).unwrap();
    for at in (good.len() - 450..good.len() - 8).step_by(3) {
        let mut bad = good.clone();
        bad[at] ^= 1;
        fs::write(d.join("bad.parquet"), &bad).unwrap();
        let out = sgp_in(d, &["predict", "--model", "m.sgp", "--data", "bad.parquet"]);
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "byte {at}: {err}");
        if out.status.code() != Some(0) {
            refused(&out, &["bad.parquet"]);
        }
    }
}

fn write_target(d: &Path, name: &str, cells: &[String]) {
    let mut text = String::from("x1,x2,y\n");
    for (i, c) in cells.iter().enumerate() {
        text += &format!("{},{},{c}\n", libm::sin(i as f64 * 0.37), (i % 7) as f64);
    }
    fs::write(d.join(name), text).unwrap();
}

#[test]
fn one_bad_cell_never_changes_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut numbers: Vec<String> = (0..300)
        .map(|i| format!("{}", libm::cos(i as f64 * 0.1)))
        .collect();
    numbers[77] = "oops".into();
    write_target(d, "oops.csv", &numbers);
    refused(
        &run(d, &quick(&["fit", "--data", "oops.csv", "--out", "o.sgp"])),
        &["oops.csv: line 79 (data row 78), column 'y': 'oops' is not a number"],
    );
    let mut classes: Vec<String> = (0..300).map(|i| format!("{}", i % 5)).collect();
    classes[10] = "n/a".into();
    write_target(d, "na.csv", &classes);
    refused(
        &run(d, &quick(&["fit", "--data", "na.csv", "--out", "o.sgp"])),
        &["line 12 (data row 11), column 'y': 'n/a' is not a number"],
    );
    // A label seen once is named; classes are named with their counts.
    let mut labels: Vec<String> = (0..60)
        .map(|i| if i % 3 == 0 { "fault" } else { "ok" }.to_owned())
        .collect();
    labels[7] = "okk".into();
    write_target(d, "labels.csv", &labels);
    refused(
        &run(
            d,
            &quick(&["fit", "--data", "labels.csv", "--out", "o.sgp"]),
        ),
        &["line 9 (data row 8), column 'y': label 'okk' appears in no other row"],
    );
    labels[7] = "ok".into();
    write_target(d, "labels.csv", &labels);
    let out = run(
        d,
        &quick(&["fit", "--data", "labels.csv", "--out", "o.sgp"]),
    );
    succeeded(&out);
    assert!(
        stderr(&out)
            .contains("positive class 'fault' against 'ok' (the rarer label; 20 and 40 rows"),
        "{}",
        stderr(&out)
    );
    write_target(d, "text.csv", &vec!["ok".to_owned(); 40]);
    refused(
        &run(d, &quick(&["fit", "--data", "text.csv", "--out", "o.sgp"])),
        &["holds the one label 'ok' in every row"],
    );
}

#[test]
fn fit_and_sweep_infer_the_same_task() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bits: Vec<String> = (0..120)
        .map(|i| format!("{}", usize::from(libm::sin(i as f64 * 0.37) > 0.0)))
        .collect();
    write_target(d, "b.csv", &bits);
    let fit = run(d, &quick(&["fit", "--data", "b.csv", "--out", "b.sgp"]));
    succeeded(&fit);
    assert!(
        stderr(&fit).contains("binary classification"),
        "{}",
        stderr(&fit)
    );
    let sweep = sgp_in(
        d,
        &["sweep", "--data", "b.csv", "--test", "b.csv", "--m", "4"],
    );
    let table = succeeded(&sweep);
    assert!(
        stderr(&sweep).contains("binary classification"),
        "{}",
        stderr(&sweep)
    );
    assert!(table.contains("error"), "a classifier's table: {table}");
}

#[test]
fn headerless_files_extreme_values_and_tiny_spreads_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("nohead.csv"), "0.5,1.5,2\n0.7,1.1,3\n0.2,0.4,1\n").unwrap();
    refused(
        &run(
            d,
            &quick(&["fit", "--data", "nohead.csv", "--out", "o.sgp"]),
        ),
        &["nohead.csv: line 1 (0.5,1.5,2) is all numbers", "header"],
    );
    fs::write(d.join("semi.csv"), "x1;x2;y\n0,5;1;2\n").unwrap();
    refused(
        &run(d, &quick(&["fit", "--data", "semi.csv", "--out", "o.sgp"])),
        &["semi.csv: line 1 has no comma but 2 ';'"],
    );
    fs::write(d.join("d.csv.gz"), [0x1f, 0x8b, 8, 0, 0, 0]).unwrap();
    refused(
        &run(d, &quick(&["fit", "--data", "d.csv.gz", "--out", "o.sgp"])),
        &["d.csv.gz: a gzip-compressed file"],
    );
    fs::write(d.join("latin.csv"), b"temp\xe9,y\n1,2\n2,3\n").unwrap();
    refused(
        &run(d, &quick(&["fit", "--data", "latin.csv", "--out", "o.sgp"])),
        &["latin.csv: line 1, field 1: not UTF-8 text"],
    );
    let tiny: Vec<String> = (0..50)
        .map(|i| format!("{:e}", 1e-300 * (1.0 + i as f64 * 0.01)))
        .collect();
    write_target(d, "tiny.csv", &tiny);
    refused(
        &run(d, &quick(&["fit", "--data", "tiny.csv", "--out", "o.sgp"])),
        &["target column 'y'", "too close together to standardise"],
    );
    let mut far: Vec<String> = (0..80)
        .map(|i| format!("{}", libm::sin(i as f64 * 0.2)))
        .collect();
    far[5] = "1e15".into();
    write_target(d, "far.csv", &far);
    let out = run(d, &quick(&["fit", "--data", "far.csv", "--out", "o.sgp"]));
    assert!(!stderr(&out).contains("panicked"));
    assert!(
        stderr(&out)
            .contains("warning: target 'y', data row 6: 1.000e15 is far from every other row"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn flags_that_do_not_apply_are_refused_by_name() {
    let dir = workspace();
    let d = dir.path();
    let cases: [(&[&str], &str); 5] = [
        (
            &["--model", "spgp", "--ivm-posterior", "active-set"],
            "--ivm-posterior does not apply to spgp",
        ),
        (
            &["--model", "exact", "--m", "5"],
            "--m does not apply to exact",
        ),
        (
            &["--model", "gplasso", "--init", "random"],
            "--init does not apply to gplasso",
        ),
        (
            &["--model", "ivm", "--tol", "0.1"],
            "--tol does not apply to ivm",
        ),
        (
            &["--model", "exact", "--restarts", "2"],
            "--restarts does not apply to exact",
        ),
    ];
    for (extra, message) in cases {
        let mut args = vec!["fit", "--data", "d.csv", "--out", "o.sgp"];
        args.extend_from_slice(extra);
        refused(&sgp_in(d, &args), &[message]);
    }
    fs::write(d.join("b.csv"), {
        let mut t = String::from("a,b,y\n");
        for i in 0..40 {
            t += &format!("{i},{},{}\n", i % 3, i % 2);
        }
        t
    })
    .unwrap();
    refused(
        &sgp_in(
            d,
            &[
                "fit",
                "--data",
                "b.csv",
                "--model",
                "svgp",
                "--objective",
                "vfe",
                "--out",
                "o.sgp",
            ],
        ),
        &["--objective does not apply to svgp"],
    );
    // With no model named, the settings are checked against the family
    // the task defaults to (auto's candidates for a regression).
    refused(
        &sgp_in(
            d,
            &[
                "fit",
                "--data",
                "d.csv",
                "--ivm-posterior",
                "active-set",
                "--out",
                "o.sgp",
            ],
        ),
        &["--ivm-posterior does not apply to spgp, vsgp"],
    );
    refused(
        &sgp_in(d, &["fit", "--data", "d.csv", "--path", "--out", "o.sgp"]),
        &["--path does not apply"],
    );
    refused(
        &sgp_in(d, &["synth", "--shape", "linear", "--dim", "3"]),
        &["--dim does not apply to --shape"],
    );
    refused(
        &sgp_in(
            d,
            &["sweep", "--data", "d.csv", "--test", "d.csv", "--dim", "2"],
        ),
        &["--dim does not apply to spgp, vsgp"],
    );
    assert!(!d.join("o.sgp").exists());
}

#[test]
fn absurd_sizes_and_bad_targets_are_refused() {
    let dir = workspace();
    let d = dir.path();
    refused(
        &sgp_in(d, &["synth", "--rows", "1000000000000000000"]),
        &["--rows", "bytes"],
    );
    refused(
        &sgp_in(
            d,
            &["synth", "--rows", "10", "--dim", "1000000000000000000"],
        ),
        &["--dim"],
    );
    refused(
        &sgp_in(
            d,
            &[
                "fit",
                "--data",
                "d.csv",
                "--out",
                "o.sgp",
                "--restarts",
                "1000000000",
            ],
        ),
        &["--restarts 1000000000"],
    );
    refused(
        &sgp_in(d, &["demo", "--m", "1000000000", "--out", "o.sgp"]),
        &["--m 1000000000"],
    );
    refused(
        &sgp_in(d, &["inspect", "m.sgp", "--capacity", "100000000000"]),
        &["--capacity"],
    );
    refused(
        &sgp_in(d, &["inspect", "m.sgp", "--capacity", "70000,2,2"]),
        &["--capacity"],
    );
    refused(
        &sgp_in(
            d,
            &[
                "eval", "--model", "m.sgp", "--data", "d.csv", "--target", "x1",
            ],
        ),
        &["target column 'x1' is one of the model's inputs"],
    );
    fs::write(d.join("huge.csv"), "x1,x2\n0.5,0.5\n1e39,0\n").unwrap();
    refused(
        &sgp_in(d, &["predict", "--model", "m.sgp", "--data", "huge.csv"]),
        &["huge.csv: data row 2, column 'x1': 1e39 is beyond the range of f32"],
    );
    for args in [
        vec!["fit", "--data", "nope.csv", "--out", "o.sgp"],
        vec!["predict", "--model", "nope.sgp", "--data", "d.csv"],
        vec!["eval", "--model", "m.sgp", "--data", "nope.csv"],
        vec!["fit", "--data", ".", "--out", "o.sgp"],
    ] {
        let out = sgp_in(d, &args);
        refused(&out, &[]);
    }
}

/// Standard output closed before `sgp` writes a line (`sgp ... | head -0`):
/// a quiet exit 0, not a panic, for every subcommand that prints.
#[test]
fn a_closed_standard_output_ends_quietly() {
    let dir = workspace();
    let d = dir.path();
    for args in [
        vec!["inspect", "m.sgp"],
        vec!["eval", "--model", "m.sgp", "--data", "d.csv"],
        vec![
            "fit",
            "--data",
            "d.csv",
            "--out",
            "c.sgp",
            "--m",
            "4",
            "--max-iter",
            "5",
        ],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_sgp"))
            .args(&args)
            .current_dir(d)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    assert!(
        d.join("c.sgp").exists(),
        "the blob is written before the summary"
    );
}
