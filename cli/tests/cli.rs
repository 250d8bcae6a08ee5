//! End-to-end tests of the `sgp` binary: they run the real executable, so
//! they check what a user sees (exit codes, stdout, stderr), which the
//! library's unit tests cannot. Every test works in its own temporary
//! directory and runs the binary there, so file names in messages are the
//! short relative names written below.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A fresh directory per test, removed on drop (also when the test fails,
/// so a failing run leaves nothing behind). The name carries the test name
/// and the process id so parallel tests and concurrent runs never collide.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> Self {
        let path = std::env::temp_dir().join(format!("sgp-cli-{test}-{}", std::process::id()));
        // A leftover from an aborted run with a recycled pid would make the
        // test read stale files.
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn write(&self, name: &str, contents: impl AsRef<[u8]>) {
        fs::write(self.0.join(name), contents).expect("write test file");
    }

    fn read(&self, name: &str) -> Vec<u8> {
        fs::read(self.0.join(name)).expect("read test file")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Runs `sgp` with `args` inside `dir`.
fn sgp(dir: &TempDir, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sgp"))
        .args(args)
        .current_dir(dir.path())
        .output()
        .expect("spawn sgp")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts success and returns stdout; on failure shows stderr, which is
/// where the reason is.
fn ok(out: &Output, what: &str) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what} failed\nstderr:\n{}\nstdout:\n{}",
        stderr(out),
        stdout(out)
    );
    stdout(out)
}

/// Asserts the bad-input contract: exit code 2, one `sgp: error:` message
/// mentioning every string in `mentions` (the file, row, column...), no
/// panic, and no partial results on stdout.
fn assert_bad_input(out: &Output, mentions: &[&str]) {
    let err = stderr(out);
    assert!(!err.contains("panicked"), "sgp panicked:\n{err}");
    assert_eq!(
        out.status.code(),
        Some(2),
        "expected exit code 2 (bad input)\nstderr:\n{err}"
    );
    assert!(
        err.starts_with("sgp: error:"),
        "stderr should start with 'sgp: error:':\n{err}"
    );
    for m in mentions {
        assert!(err.contains(m), "stderr should mention {m:?}:\n{err}");
    }
    assert!(
        out.stdout.is_empty(),
        "a failed command should print no results, got:\n{}",
        stdout(out)
    );
}

/// Writes `sgp synth` output to `name`: the tests use the tool's own data
/// generator so the data are realistic and need no fixture files.
fn synth(dir: &TempDir, name: &str, rows: usize, dim: usize) {
    let rows = rows.to_string();
    let dim = dim.to_string();
    let out = sgp(dir, &["synth", "--rows", &rows, "--dim", &dim]);
    let csv = ok(&out, "synth");
    dir.write(name, csv);
}

/// Fits a small, quick SPGP (`--m 8`, 20 iterations) on `data` into `blob`.
fn fit_spgp(dir: &TempDir, data: &str, blob: &str, seed: &str) -> String {
    let out = sgp(
        dir,
        &[
            "fit",
            "--data",
            data,
            "--model",
            "spgp",
            "--m",
            "8",
            "--max-iter",
            "20",
            "--seed",
            seed,
            "--out",
            blob,
        ],
    );
    ok(&out, "fit")
}

/// Parses `predict` output: the header, then `mean,variance` rows.
fn parse_predictions(csv: &str) -> Vec<(f64, f64)> {
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("mean,variance"), "predict header");
    lines
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            assert_eq!(cells.len(), 2, "predict row {line:?}");
            let parse = |s: &str| -> f64 {
                s.parse()
                    .unwrap_or_else(|e| panic!("{s:?} in {line:?}: {e}"))
            };
            (parse(cells[0]), parse(cells[1]))
        })
        .collect()
}

/// Rewrites a CSV keeping only the columns `keep`, in that order: used to
/// reorder or drop columns of synthetic data.
fn select_columns(csv: &str, keep: &[&str]) -> String {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let idx: Vec<usize> = keep
        .iter()
        .map(|k| header.iter().position(|h| h == k).expect("column exists"))
        .collect();
    let mut out = keep.join(",") + "\n";
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        let picked: Vec<&str> = idx.iter().map(|&i| cells[i]).collect();
        out += &picked.join(",");
        out.push('\n');
    }
    out
}

#[test]
fn fit_predict_eval_inspect_end_to_end() {
    let dir = TempDir::new("end_to_end");
    synth(&dir, "data.csv", 120, 2);

    let summary = fit_spgp(&dir, "data.csv", "m.sgp", "0");
    // The runtime check is what guarantees the blob matches the f64 model;
    // a fit that silently skipped it must fail here.
    assert!(summary.contains("runtime check"), "fit summary:\n{summary}");
    assert!(!dir.read("m.sgp").is_empty(), "blob is empty");

    let predicted = ok(
        &sgp(&dir, &["predict", "--model", "m.sgp", "--data", "data.csv"]),
        "predict",
    );
    let rows = parse_predictions(&predicted);
    assert_eq!(rows.len(), 120, "one prediction per input row");
    for (i, (mean, var)) in rows.iter().enumerate() {
        assert!(mean.is_finite(), "row {i}: mean {mean}");
        assert!(var.is_finite() && *var > 0.0, "row {i}: variance {var}");
    }

    let eval = ok(
        &sgp(
            &dir,
            &["eval", "--model", "m.sgp", "--data", "data.csv", "--json"],
        ),
        "eval",
    );
    let eval: Value = serde_json::from_str(&eval).expect("eval --json is JSON");
    assert_eq!(eval["rows"], 120, "eval JSON: {eval}");
    let rmse = eval["rmse"].as_f64().expect("rmse is a number");
    assert!(rmse.is_finite() && rmse >= 0.0, "rmse {rmse}");
    // On its own smooth training data even a 20-iteration SPGP explains most
    // of the variance (SMSE ~0.03); a broken model or export is near 1.
    let smse = eval["smse"].as_f64().expect("smse is a number");
    assert!(
        smse < 0.5,
        "smse {smse} too large: the model learnt nothing"
    );

    let text = ok(&sgp(&dir, &["inspect", "m.sgp"]), "inspect");
    assert!(text.contains("spgp"), "inspect:\n{text}");
    assert!(text.contains("M = 8"), "inspect:\n{text}");

    let json = ok(
        &sgp(&dir, &["inspect", "m.sgp", "--json"]),
        "inspect --json",
    );
    let json: Value = serde_json::from_str(&json).expect("inspect --json is JSON");
    assert_eq!(json["kind"], "spgp", "inspect JSON: {json}");
    assert_eq!(json["n_basis"], 8, "inspect JSON: {json}");
    assert_eq!(json["inputs"], serde_json::json!(["x1", "x2"]));
    assert_eq!(json["target"], "y");
}

/// `sgp fit --target a,b,c`: one blob for several outputs (the shared
/// basis not weighed: `--no-held-out-choice`); `predict` prints each
/// output's mean and variance, `eval` each output's figures; bad target
/// lists and families that cannot share are clear errors.
#[test]
fn several_targets_fit_predict_eval() {
    let dir = TempDir::new("several_targets");
    let out = sgp(
        &dir,
        &["synth", "--system", "arm", "--rows", "200", "--seed", "3"],
    );
    dir.write("arm.csv", ok(&out, "synth --system"));
    let fit = |extra: &[&str]| {
        let mut args = vec![
            "fit",
            "--data",
            "arm.csv",
            "--m",
            "10",
            "--max-iter",
            "30",
            "--no-held-out-choice",
            "--out",
            "arm.sgp",
        ];
        args.extend_from_slice(extra);
        sgp(&dir, &args)
    };
    let text = ok(&fit(&["--target", "ex,ey,ez"]), "fit --target ex,ey,ez");
    assert!(text.contains("3 outputs on one basis"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("variance        one factor")),
        "{text}"
    );
    for name in ["ex ", "ey ", "ez "] {
        assert!(text.lines().any(|l| l.starts_with(name)), "{name}: {text}");
    }
    let json: Value =
        serde_json::from_str(&ok(&fit(&["--target", "ex,ey,ez", "--json"]), "fit --json"))
            .expect("JSON");
    assert_eq!(json["report"]["outputs"].as_array().map(Vec::len), Some(3));
    assert!(json["report"]["variance"]["tied"].is_boolean());
    assert_eq!(json["fidelities"].as_array().map(Vec::len), Some(3));

    let predicted = ok(
        &sgp(
            &dir,
            &["predict", "--model", "arm.sgp", "--data", "arm.csv"],
        ),
        "predict",
    );
    let mut lines = predicted.lines();
    assert_eq!(
        lines.next(),
        Some("ex_mean,ex_variance,ey_mean,ey_variance,ez_mean,ez_variance")
    );
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|c| c.parse().expect("number")).collect())
        .collect();
    assert_eq!(rows.len(), 200);
    assert!(rows
        .iter()
        .all(|r| r.len() == 6 && r[1] > 0.0 && r[3] > 0.0 && r[5] > 0.0));

    let evaluated = ok(
        &sgp(
            &dir,
            &["eval", "--model", "arm.sgp", "--data", "arm.csv", "--json"],
        ),
        "eval",
    );
    let json: Value = serde_json::from_str(&evaluated).expect("JSON");
    let outputs = json.as_array().expect("one entry per output");
    assert_eq!(outputs.len(), 3);
    for (entry, name) in outputs.iter().zip(["ex", "ey", "ez"]) {
        assert_eq!(entry["output"], name);
        let rmse = entry["rmse"].as_f64().expect("rmse");
        assert!(rmse > 0.0 && rmse < 0.2, "{name}: RMSE {rmse}");
    }

    assert_bad_input(
        &fit(&["--target", "ex,ex"]),
        &["arm.csv", "'ex' is named twice"],
    );
    assert_bad_input(&fit(&["--target", "ex,nope"]), &["no column named 'nope'"]);
    assert_bad_input(
        &fit(&["--target", "ex,ey", "--model", "gplasso"]),
        &["--model gplasso cannot fit several targets"],
    );
    dir.write("bad.csv", "a,b,c\n1,2,3\n2,NaN,4\n3,1,2\n");
    assert_bad_input(
        &sgp(
            &dir,
            &[
                "fit", "--data", "bad.csv", "--target", "b,c", "--out", "x.sgp",
            ],
        ),
        &["bad.csv", "line 3", "column 'b'"],
    );
}

/// `sgp fit --target a,b,c` weighs one basis against one model per
/// output on held-out rows and says which it kept: the arm's x, y, z get
/// one blob each, in one container (`--out`), outputs that share (one
/// quantity and twice it) one blob.
#[test]
fn several_targets_get_their_own_models_where_one_basis_loses() {
    let dir = TempDir::new("own_models");
    for system in ["arm", "doubled"] {
        let out = sgp(
            &dir,
            &["synth", "--system", system, "--rows", "600", "--seed", "1"],
        );
        dir.write(&format!("{system}.csv"), ok(&out, "synth --system"));
    }
    let fit = |data: &str, targets: &str| {
        let args = [
            "fit", "--data", data, "--target", targets, "--model", "spgp", "--m", "12", "--out",
            "m.sgp", "--json",
        ];
        let json: Value = serde_json::from_str(&ok(&sgp(&dir, &args), "fit --json")).expect("JSON");
        json
    };
    let json = fit("arm.csv", "ex,ey,ez");
    assert_eq!(json["basis"]["kept"], "separate", "{json}");
    assert_eq!(json["basis"]["rows"], 150, "{json}");
    let verdicts = json["basis"]["outputs"].as_array().expect("per output");
    assert!(verdicts
        .iter()
        .any(|v| v["separate_clearly_better"] == true));
    let separate = json["separate"].as_array().expect("one fit per output");
    for (fit, name) in separate.iter().zip(["ex", "ey", "ez"]) {
        assert_eq!(fit["blob"], "m.sgp");
        assert_eq!(fit["report"]["outputs"][0]["name"], name);
    }
    // One file either way: a container, read by predict, eval, inspect and
    // the Rust export as one model of three outputs.
    let container = std::fs::read(dir.path().join("m.sgp")).expect("one file");
    assert_eq!(&container[..4], b"SGPS");
    let predicted = ok(
        &sgp(&dir, &["predict", "--model", "m.sgp", "--data", "arm.csv"]),
        "predict",
    );
    assert_eq!(
        predicted.lines().next(),
        Some("ex_mean,ex_variance,ey_mean,ey_variance,ez_mean,ez_variance")
    );
    let evaluated = ok(
        &sgp(
            &dir,
            &["eval", "--model", "m.sgp", "--data", "arm.csv", "--json"],
        ),
        "eval",
    );
    let evaluated: Value = serde_json::from_str(&evaluated).expect("JSON");
    assert_eq!(evaluated.as_array().map(Vec::len), Some(3), "{evaluated}");
    let inspected = ok(&sgp(&dir, &["inspect", "m.sgp"]), "inspect");
    assert!(
        inspected.contains("container       3 models, one per output (ex, ey, ez)"),
        "{inspected}"
    );
    let rust = ok(
        &sgp(&dir, &["export", "--model", "m.sgp", "--format", "rust"]),
        "export",
    );
    assert!(
        rust.contains("pub type Model = sgp_runtime::Artefact<12, "),
        "{rust}"
    );
    assert!(rust.contains(", 3>;"), "{rust}");
    let c = ok(
        &sgp(&dir, &["export", "--model", "m.sgp", "--format", "c"]),
        "export --format c",
    );
    assert!(
        c.contains("sgp_artefact_load(&artefact, sizeof artefact, m_blob, M_BLOB_LEN);"),
        "{c}"
    );
    assert!(c.contains("#define M_OUTPUTS 3"), "{c}");
    assert!(!dir.path().join("m.ex.sgp").exists(), "no file per output");

    let json = fit("doubled.csv", "domega,twice");
    assert_eq!(json["basis"]["kept"], "shared", "{json}");
    assert_eq!(json["report"]["outputs"].as_array().map(Vec::len), Some(2));
    assert!(dir.path().join("m.sgp").exists());
}

/// `sgp sweep --target a,b,c`: one blob per grid point for every output,
/// each output's figures in the table and the JSON, ranked by their summed
/// NLPD; `sgp plot` of that blob: one row of panels per output.
#[test]
fn several_targets_sweep_and_plot() {
    let dir = TempDir::new("several_targets_sweep");
    let csv = ok(
        &sgp(
            &dir,
            &["synth", "--system", "arm", "--rows", "200", "--seed", "4"],
        ),
        "synth --system",
    );
    split_csv(&dir, &csv, 150);
    let grid = [
        "--target", "ex,ey,ez", "--models", "spgp", "--m", "4,8", "--out", "best.sgp",
    ];
    let text = ok(&sweep(&dir, &grid), "sweep --target ex,ey,ez");
    assert!(
        text.contains("3 outputs (ex, ey, ez) on one basis"),
        "{text}"
    );
    assert!(text.contains("lowest summed test NLPD"), "{text}");
    for name in ["ex ", "ey ", "ez "] {
        let rows = text
            .lines()
            .filter(|l| l.trim_start().starts_with(name))
            .count();
        assert_eq!(rows, 2, "{name}: {text}");
    }
    let (out, json) = sweep_json(&dir, &grid);
    ok(&out, "sweep --json");
    assert_eq!(json["targets"], serde_json::json!(["ex", "ey", "ez"]));
    for row in json["rows"].as_array().expect("rows") {
        let outputs = row["outputs"].as_array().expect("each output's figures");
        let sum: f64 = outputs.iter().map(|o| o["nlpd"].as_f64().unwrap()).sum();
        assert!((row["nlpd"].as_f64().unwrap() - sum).abs() < 1e-9, "{row}");
    }
    let evaluated = ok(
        &sgp(
            &dir,
            &[
                "eval", "--model", "best.sgp", "--data", "test.csv", "--json",
            ],
        ),
        "eval of the chosen blob",
    );
    let evaluated: Value = serde_json::from_str(&evaluated).expect("JSON");
    assert_eq!(evaluated.as_array().map(Vec::len), Some(3));
    assert_bad_input(
        &sweep(
            &dir,
            &["--target", "ex,ey", "--models", "gplasso", "--m", "4"],
        ),
        &["--models gplasso", "cannot fit the 2 targets on one basis"],
    );
    assert_bad_input(
        &sweep(&dir, &["--target", "ex,ey", "--link", "probit"]),
        &["several targets", "a classifier has one target column"],
    );

    let svg = plot(&dir, "best.sgp", "test.csv", "outputs.svg");
    assert_shows(
        &svg,
        &[
            "3 outputs",
            "output ex",
            "output ey",
            "output ez",
            "actual ez",
        ],
    );
    assert_eq!(svg.matches("calibration").count(), 3);
    assert_bad_input(
        &sgp(
            &dir,
            &[
                "plot", "--model", "best.sgp", "--data", "test.csv", "--target", "ex", "--out",
                "x.svg",
            ],
        ),
        &["--target does not apply to a multi-output blob"],
    );
}

#[test]
fn predict_picks_input_columns_by_name() {
    let dir = TempDir::new("columns_by_name");
    synth(&dir, "data.csv", 120, 2);
    fit_spgp(&dir, "data.csv", "m.sgp", "0");
    let csv = String::from_utf8(dir.read("data.csv")).expect("UTF-8 CSV");

    let reference = ok(
        &sgp(&dir, &["predict", "--model", "m.sgp", "--data", "data.csv"]),
        "predict",
    );

    // Columns swapped and the target dropped: predict needs only the inputs
    // and must match them by name, not by position.
    dir.write("reordered.csv", select_columns(&csv, &["x2", "x1"]));
    let reordered = ok(
        &sgp(
            &dir,
            &["predict", "--model", "m.sgp", "--data", "reordered.csv"],
        ),
        "predict on reordered columns",
    );
    assert_eq!(parse_predictions(&reordered).len(), 120);
    assert_eq!(reordered, reference, "column order changed the predictions");

    dir.write("missing.csv", select_columns(&csv, &["x1", "y"]));
    let out = sgp(
        &dir,
        &["predict", "--model", "m.sgp", "--data", "missing.csv"],
    );
    assert_bad_input(&out, &["missing.csv", "x2"]);
}

#[test]
fn exact_gp_on_a_subset() {
    let dir = TempDir::new("exact");
    synth(&dir, "data.csv", 120, 2);
    let out = sgp(
        &dir,
        &[
            "fit",
            "--data",
            "data.csv",
            "--model",
            "exact",
            "--max-points",
            "50",
            "--max-iter",
            "20",
            "--out",
            "e.sgp",
        ],
    );
    let summary = ok(&out, "exact fit");
    assert!(summary.contains("runtime check"), "fit summary:\n{summary}");
    // --max-points must cap the training set: an exact GP's basis is its
    // training rows, so M equals the subset size.
    assert!(summary.contains("M = 50"), "fit summary:\n{summary}");

    let text = ok(&sgp(&dir, &["inspect", "e.sgp"]), "inspect");
    assert!(text.contains("exact"), "inspect:\n{text}");
}

#[test]
fn same_data_and_seed_give_identical_blobs() {
    let dir = TempDir::new("deterministic");
    synth(&dir, "data.csv", 120, 2);
    fit_spgp(&dir, "data.csv", "a.sgp", "7");
    fit_spgp(&dir, "data.csv", "b.sgp", "7");
    let (a, b) = (dir.read("a.sgp"), dir.read("b.sgp"));
    assert!(!a.is_empty());
    assert!(a == b, "two fits with the same seed differ");

    // Guards against the identity above holding only because the seed is
    // ignored: another seed picks other pseudo-inputs.
    fit_spgp(&dir, "data.csv", "c.sgp", "8");
    assert!(a != dir.read("c.sgp"), "the seed has no effect on the blob");
}

/// Runs `fit` on a CSV with the given contents and asserts a bad-input
/// error that mentions `mentions`.
fn fit_rejects(dir: &TempDir, name: &str, contents: &str, extra: &[&str], mentions: &[&str]) {
    dir.write(name, contents);
    let mut args = vec!["fit", "--data", name, "--out", "o.sgp", "--quiet"];
    args.extend_from_slice(extra);
    let out = sgp(dir, &args);
    assert_bad_input(&out, mentions);
    assert!(
        !dir.path().join("o.sgp").exists(),
        "a failed fit wrote a blob"
    );
}

#[test]
fn bad_cells_are_reported_with_file_row_and_column() {
    let dir = TempDir::new("bad_cells");
    // The bad cell is on line 3 (data row 2) in column x2 in each file.
    for (name, cell) in [
        ("text.csv", "abc"),
        ("nan.csv", "NaN"),
        ("inf.csv", "inf"),
        ("neginf.csv", "-inf"),
    ] {
        let csv = format!("x1,x2,y\n1,2,3\n4,{cell},6\n7,8,9\n");
        fit_rejects(
            &dir,
            name,
            &csv,
            &["--m", "2"],
            &[name, "line 3", "x2", cell],
        );
    }
}

#[test]
fn ragged_row_is_reported() {
    let dir = TempDir::new("ragged");
    fit_rejects(
        &dir,
        "ragged.csv",
        "x1,x2,y\n1,2,3\n4,6\n7,8,9\n",
        &["--m", "2"],
        &["ragged.csv", "line 3"],
    );
}

#[test]
fn empty_and_header_only_files_are_rejected() {
    let dir = TempDir::new("empty");
    fit_rejects(&dir, "empty.csv", "", &["--m", "2"], &["empty.csv"]);
    fit_rejects(
        &dir,
        "header.csv",
        "x1,x2,y\n",
        &["--m", "2"],
        &["header.csv"],
    );
}

#[test]
fn unknown_target_column_is_rejected() {
    let dir = TempDir::new("unknown_target");
    synth(&dir, "data.csv", 30, 2);
    let out = sgp(
        &dir,
        &[
            "fit", "--data", "data.csv", "--target", "zz", "--m", "4", "--out", "o.sgp",
        ],
    );
    assert_bad_input(&out, &["data.csv", "zz"]);
}

#[test]
fn constant_input_column_is_fitted_ignored_and_named() {
    let dir = TempDir::new("constant");
    let rows = |x2: &str| {
        let mut csv = String::from("x1,x2,y\n");
        for i in 0..30 {
            let x = f64::from(i) / 5.0;
            // Deterministic "noise": a noiseless target leaves FITC on its
            // noise floor, where f32 cannot reproduce the tiny variance.
            let noise = 0.1 * libm::sin(37.0 * f64::from(i));
            csv += &format!("{x},{x2},{}\n", libm::sin(x) + noise);
        }
        csv
    };
    dir.write("const.csv", rows("5"));
    let out = sgp(
        &dir,
        &[
            "fit",
            "--data",
            "const.csv",
            "--m",
            "4",
            "--max-iter",
            "20",
            "--out",
            "c.sgp",
        ],
    );
    let summary = ok(&out, "fit with a constant input");
    let err = stderr(&out);
    assert!(
        err.contains("sgp: warning: input 'x2' is constant in the training data (value 5)"),
        "stderr:\n{err}"
    );
    assert!(err.contains("ignores it"), "stderr:\n{err}");
    assert!(
        summary.contains("ignored inputs  x2"),
        "summary:\n{summary}"
    );

    // On the device the column may hold anything: the predictions must be
    // those at the training constant.
    let predict = |name: &str| {
        ok(
            &sgp(&dir, &["predict", "--model", "c.sgp", "--data", name]),
            "predict",
        )
    };
    let reference = predict("const.csv");
    assert_eq!(parse_predictions(&reference).len(), 30);
    for value in ["1e4", "-3"] {
        dir.write("moved.csv", rows(value));
        assert_eq!(
            predict("moved.csv"),
            reference,
            "x2 = {value} changed the predictions"
        );
    }

    // A constant target is still an error.
    let mut csv = String::from("x1,x2,y\n");
    for i in 0..20 {
        csv += &format!("{i},{},7\n", i % 3);
    }
    fit_rejects(
        &dir,
        "ctarget.csv",
        &csv,
        &["--m", "4"],
        &["ctarget.csv", "'y'", "constant"],
    );
}

/// Issue 49, item 4: `-q` keeps the warnings and drops the summary;
/// `--json` lists them (the columns' with the fit's own) in its report.
#[test]
fn warnings_survive_quiet_and_json() {
    let dir = TempDir::new("quiet-warnings");
    let long = "a_column_name_longer_than_any_device_holds";
    let mut csv = format!("x1,{long},y\n");
    for i in 0..30 {
        let x = f64::from(i) / 5.0;
        let noise = 0.1 * libm::sin(37.0 * f64::from(i));
        csv += &format!("{x},{},{}\n", libm::cos(x), libm::sin(x) + noise);
    }
    dir.write("long.csv", csv);
    let fit = |extra: &[&str]| {
        let mut args = vec!["fit", "--data", "long.csv", "--m", "4", "--max-iter", "20"];
        args.extend_from_slice(extra);
        sgp(&dir, &args)
    };
    let quiet = fit(&["-q", "--force", "--out", "q.sgp"]);
    let said = ok(&quiet, "fit -q");
    assert!(said.trim().is_empty(), "-q printed a summary:\n{said}");
    let err = stderr(&quiet);
    assert!(
        err.contains("sgp: warning: column names longer than") && err.contains(long),
        "stderr under -q:\n{err}"
    );
    assert!(!err.contains("sgp: note"), "-q printed notes:\n{err}");
    assert!(dir.path().join("q.sgp").exists(), "-q wrote no blob");

    let json = fit(&["--json", "--force", "--out", "j.sgp"]);
    let report: serde_json::Value =
        serde_json::from_str(&ok(&json, "fit --json")).expect("fit --json prints JSON");
    let warnings = report["report"]["warnings"]
        .as_array()
        .expect("the report lists its warnings");
    let named = warnings
        .iter()
        .filter(|w| w.as_str().is_some_and(|w| w.contains(long)))
        .count();
    assert_eq!(named, 1, "warnings: {warnings:?}");
}

#[test]
fn bad_pseudo_input_counts_are_rejected() {
    let dir = TempDir::new("bad_m");
    synth(&dir, "small.csv", 5, 2);
    fit_rejects(
        &dir,
        "small.csv",
        &String::from_utf8(dir.read("small.csv")).expect("UTF-8"),
        &["--m", "8"],
        &["small.csv", "--m"],
    );
    // --m 0 is an argument error, not a data error: there is no file to
    // name, so the message must name the option instead.
    synth(&dir, "data.csv", 30, 2);
    let out = sgp(
        &dir,
        &["fit", "--data", "data.csv", "--m", "0", "--out", "o.sgp"],
    );
    assert_bad_input(&out, &["--m"]);
}

/// `--kernel auto` is no Matérn kernel: a family that takes the squared
/// exponential only keeps it and the report says why (docs/src/kernels.md),
/// while a Matérn kernel named for it is refused.
#[test]
fn kernel_auto_keeps_se_where_only_se_applies() {
    let dir = TempDir::new("kernel_auto_vsgp");
    synth(&dir, "data.csv", 120, 2);
    let fit = |kernel: &str| {
        let args = [
            "fit",
            "--data",
            "data.csv",
            "--model",
            "vsgp",
            "--m",
            "6",
            "--max-iter",
            "20",
            "--kernel",
            kernel,
            "--json",
            "--out",
            "v.sgp",
        ];
        sgp(&dir, &args)
    };
    let report: Value =
        serde_json::from_str(&ok(&fit("auto"), "vsgp --kernel auto")).expect("--json prints JSON");
    let said = report.to_string();
    assert!(said.contains("kernel se: not weighed"), "{said}");
    assert_bad_input(&fit("matern32"), &["--kernel does not apply to vsgp"]);
}

/// The summary says how long the held-out choices took (most of a
/// default fit's time on large data), and `--json` records it; a fit
/// without them says nothing of the kind.
#[test]
fn the_summary_says_what_the_held_out_choices_took() {
    let dir = TempDir::new("choice_seconds");
    synth(&dir, "data.csv", 120, 2);
    let fit = |extra: &[&str]| {
        let mut args = vec!["fit", "--data", "data.csv", "--m", "6", "--max-iter", "20"];
        args.extend_from_slice(extra);
        sgp(&dir, &args)
    };
    let text = ok(&fit(&["--out", "a.sgp"]), "default fit");
    let line = text
        .lines()
        .find(|l| l.contains("the held-out choices took"))
        .unwrap_or_else(|| panic!("no line on the choices' time in:\n{text}"));
    assert!(line.contains("--no-held-out-choice skips them"), "{line}");
    let json = ok(&fit(&["--json", "--out", "b.sgp"]), "default fit --json");
    let report: Value = serde_json::from_str(&json).expect("--json prints JSON");
    let seconds = report["report"]["choice"]["seconds"]
        .as_f64()
        .expect("choice.seconds");
    assert!(seconds > 0.0, "{seconds}");
    let none = ok(
        &fit(&["--no-held-out-choice", "--out", "c.sgp"]),
        "fit without held-out choices",
    );
    assert!(!none.contains("the held-out choices took"), "{none}");
}

/// Asserts that predict, eval and inspect all reject the blob `name` as
/// bad input naming the file.
fn blob_rejected_everywhere(dir: &TempDir, name: &str) {
    for args in [
        vec!["predict", "--model", name, "--data", "data.csv"],
        vec!["eval", "--model", name, "--data", "data.csv"],
        vec!["inspect", name],
        vec!["inspect", name, "--json"],
        vec!["export", "--model", name, "--format", "c"],
        vec!["export", "--model", name, "--format", "rust"],
    ] {
        let out = sgp(dir, &args);
        assert_bad_input(&out, &[name]);
    }
}

#[test]
fn random_bytes_are_not_a_blob() {
    let dir = TempDir::new("random_blob");
    synth(&dir, "data.csv", 20, 2);
    // A fixed pseudo-random sequence (xorshift) keeps the test reproducible
    // without a rand dependency.
    let mut s: u32 = 0x9e37_79b9;
    let junk: Vec<u8> = (0..300)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            s.to_le_bytes()[0]
        })
        .collect();
    dir.write("junk.sgp", junk);
    blob_rejected_everywhere(&dir, "junk.sgp");
    // A CSV passed where a blob belongs is a likely user mistake.
    blob_rejected_everywhere(&dir, "data.csv");
}

#[test]
fn truncated_blob_is_rejected() {
    let dir = TempDir::new("truncated_blob");
    synth(&dir, "data.csv", 60, 2);
    fit_spgp(&dir, "data.csv", "m.sgp", "0");
    let blob = dir.read("m.sgp");
    // Cut inside the preamble, inside the body and inside the CRC trailer.
    for len in [0, 10, blob.len() / 2, blob.len() - 1] {
        dir.write("cut.sgp", &blob[..len]);
        blob_rejected_everywhere(&dir, "cut.sgp");
    }
}

#[test]
fn blob_with_one_flipped_byte_is_rejected() {
    let dir = TempDir::new("flipped_blob");
    synth(&dir, "data.csv", 60, 2);
    fit_spgp(&dir, "data.csv", "m.sgp", "0");
    let blob = dir.read("m.sgp");
    // The magic, the header area, the body and the CRC trailer: every part
    // of the blob must be covered by some check.
    for at in [0, 8, blob.len() / 2, blob.len() - 1] {
        let mut bad = blob.clone();
        bad[at] ^= 0x10;
        dir.write("flipped.sgp", &bad);
        blob_rejected_everywhere(&dir, "flipped.sgp");
    }
}

#[test]
fn export_writes_c_and_rust_source_and_refuses_bad_options() {
    let dir = TempDir::new("export");
    synth(&dir, "data.csv", 80, 2);
    fit_spgp(&dir, "data.csv", "Heater-2.sgp", "0");
    let blob = dir.read("Heater-2.sgp");
    let export = |options: &[&str]| {
        let args = [&["export", "--model", "Heater-2.sgp"], options].concat();
        sgp(&dir, &args)
    };

    // C into a file; the name comes from the file's stem.
    assert!(ok(&export(&["--format", "c", "--out", "h.h"]), "export c").is_empty());
    let c = String::from_utf8(dir.read("h.h")).unwrap();
    for line in [
        "static const uint8_t heater_2_blob[HEATER_2_BLOB_LEN] = {",
        &format!("#define HEATER_2_BLOB_LEN {}\n", blob.len()),
        "Inputs, in the order sgp_model_predict takes them: x1, x2.",
    ] {
        assert!(c.contains(line), "{line}\n{c}");
    }

    // Rust on standard output, named.
    let rust = ok(
        &export(&["--format", "rust", "--name", "boiler"]),
        "export rust",
    );
    for line in [
        "pub mod boiler {",
        "pub const INPUTS: [&str; 2] = [\"x1\", \"x2\"];",
        "pub type Model = sgp_runtime::Model<8, 2, 2>;",
    ] {
        assert!(rust.contains(line), "{line}\n{rust}");
    }

    // An unknown format is a usage error (exit 2) naming the valid ones.
    let out = export(&["--format", "cpp"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // In the library's words, which Python's export_source uses too.
    assert!(
        err.contains("--format='cpp' is not one of: c, rust"),
        "{err}"
    );
    assert!(out.stdout.is_empty());

    let out = export(&["--format", "c", "--name", "Heater"]);
    assert_bad_input(&out, &["--name 'Heater'", "lowercase"]);
    let out = export(&["--format", "rust", "--name", "mod"]);
    assert_bad_input(&out, &["Rust keyword", "mod_model"]);
}

#[test]
fn missing_files_name_the_path() {
    let dir = TempDir::new("missing_file");
    synth(&dir, "data.csv", 60, 2);
    fit_spgp(&dir, "data.csv", "m.sgp", "0");
    for (args, path) in [
        (
            vec!["fit", "--data", "nope.csv", "--out", "o.sgp"],
            "nope.csv",
        ),
        (
            vec!["predict", "--model", "m.sgp", "--data", "nope.csv"],
            "nope.csv",
        ),
        (
            vec!["predict", "--model", "nope.sgp", "--data", "data.csv"],
            "nope.sgp",
        ),
        (vec!["inspect", "nope.sgp"], "nope.sgp"),
    ] {
        let out = sgp(&dir, &args);
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "sgp panicked:\n{err}");
        // An input that cannot be read is bad input (Error::Unreadable):
        // exit code 2, as the guide says.
        assert_eq!(out.status.code(), Some(2), "{args:?}\nstderr:\n{err}");
        assert!(err.starts_with("sgp: error:"), "{args:?}\nstderr:\n{err}");
        assert!(err.contains(path), "{args:?} should name {path}:\n{err}");
    }
}

#[test]
fn demo_compares_exact_gp_and_spgp() {
    let dir = TempDir::new("demo");
    let out = sgp(&dir, &["demo", "--json", "--out", "demo.sgp"]);
    let json: serde_json::Value = serde_json::from_str(&ok(&out, "demo --json")).expect("JSON");
    let rows = json["rows"].as_array().expect("rows");
    let names: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| {
            let field = |k: &str| r[k].as_str().unwrap_or_default();
            (field("experiment"), field("name"))
        })
        .collect();
    // Figure 1 first, its rows named by their objective, then the defaults.
    assert_eq!(
        names[..3],
        [
            ("figure1", "exact GP"),
            ("figure1", "FITC"),
            ("figure1", "PLV")
        ],
        "{names:?}"
    );
    assert!(names[3..].iter().all(|(e, _)| *e == "default"), "{names:?}");
    let number = |r: &serde_json::Value, k: &str| r[k].as_f64().expect(k);
    let defaults: Vec<&serde_json::Value> = rows[3..].iter().collect();
    let exact = defaults
        .iter()
        .find(|r| r["name"] == "exact GP")
        .expect("a default exact GP row");
    for r in &defaults {
        // The device (f32 runtime) reproduces the trainer's figures.
        let device = &r["device"];
        assert!(
            (number(r, "rmse") - number(device, "rmse")).abs() < 1e-3 * number(r, "rmse"),
            "RMSE f64 vs device: {r}"
        );
        assert!(
            (number(r, "nlpd") - number(device, "nlpd")).abs() < 1e-2,
            "NLPD f64 vs device: {r}"
        );
    }
    // The sparse default fit is a fraction of the exact GP's blob.
    let sparse = defaults
        .iter()
        .find(|r| r["name"] != "exact GP")
        .expect("sparse row");
    assert!(
        number(&sparse["device"], "blob_bytes") < 0.05 * number(&exact["device"], "blob_bytes"),
        "{sparse} vs {exact}"
    );
    // The words follow the same numbers: the table names both objectives.
    let text = ok(
        &sgp(&dir, &["demo", "--quiet", "--out", "demo.sgp"]),
        "demo",
    );
    for line in ["FITC: ", "PLV: "] {
        assert!(text.lines().any(|l| l.starts_with(line)), "{text}");
    }
    // The demo promises a blob users can inspect next.
    let text = ok(&sgp(&dir, &["inspect", "demo.sgp"]), "inspect demo blob");
    assert!(text.contains("spgp"), "inspect:\n{text}");
}

#[test]
fn inspect_reports_ram_for_a_given_capacity() {
    let dir = TempDir::new("capacity");
    synth(&dir, "data.csv", 60, 2);
    fit_spgp(&dir, "data.csv", "m.sgp", "1");
    let fits = ok(
        &sgp(&dir, &["inspect", "m.sgp", "--capacity", "16,2,2"]),
        "inspect",
    );
    assert!(fits.contains("for Model<16, 2, 2>"), "{fits}");
    assert!(!fits.contains("does not fit"), "{fits}");
    // Not fitting is an answer, not bad input: exit 1, so CI can gate on it.
    let small = sgp(&dir, &["inspect", "m.sgp", "--capacity", "4"]);
    assert_does_not_fit(&small, "does not fit a device Model<4, 2, 2>: M = 8 > 4");
    assert!(
        stdout(&small).contains("for Model<4, 2, 2> (too small"),
        "{}",
        stdout(&small)
    );
    assert_bad_input(
        &sgp(&dir, &["inspect", "m.sgp", "--capacity", "4,x"]),
        &["--capacity"],
    );
}

/// Writes the header and the first `train` data rows of `csv` to
/// `train.csv`, the header and the rest to `test.csv`.
fn split_csv(dir: &TempDir, csv: &str, train: usize) {
    let mut lines = csv.lines();
    let header = lines.next().expect("header");
    let body: Vec<&str> = lines.collect();
    let part = |rows: &[&str]| format!("{header}\n{}\n", rows.join("\n"));
    dir.write("train.csv", part(&body[..train]));
    dir.write("test.csv", part(&body[train..]));
}

/// `split_csv` of `sgp synth` data.
fn train_and_test(dir: &TempDir, rows: usize, dim: usize, train: usize) {
    let rows = rows.to_string();
    let dim = dim.to_string();
    let csv = ok(
        &sgp(dir, &["synth", "--rows", &rows, "--dim", &dim]),
        "synth",
    );
    split_csv(dir, &csv, train);
}

/// Runs `sgp sweep -q` on `train.csv` and `test.csv` with `extra` flags.
fn sweep(dir: &TempDir, extra: &[&str]) -> Output {
    let mut args = vec!["sweep", "--data", "train.csv", "--test", "test.csv", "-q"];
    args.extend_from_slice(extra);
    sgp(dir, &args)
}

/// [`sweep`] with `--json`, parsed.
fn sweep_json(dir: &TempDir, extra: &[&str]) -> (Output, Value) {
    let out = sweep(dir, &[&["--json"], extra].concat());
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("sweep JSON: {e}\nstderr:\n{}", stderr(&out)));
    (out, json)
}

#[test]
fn sweep_marks_the_best_model_within_the_budget_and_writes_its_blob() {
    let dir = TempDir::new("sweep");
    train_and_test(&dir, 200, 2, 140);
    let grid = ["--models", "spgp,vsgp", "--m", "3,8"];
    let (out, all) = sweep_json(&dir, &grid);
    ok(&out, "sweep");
    assert_eq!(all["task"], "regression");
    let rows = all["rows"].as_array().expect("rows");
    let labels: Vec<String> = rows
        .iter()
        .map(|r| format!("{} {}", r["model"].as_str().unwrap(), r["m"]))
        .collect();
    assert_eq!(labels, ["spgp 3", "spgp 8", "vsgp 3", "vsgp 8"]);
    for r in rows {
        assert_eq!(r["status"], "ok", "{r}");
        for key in [
            "nlpd",
            "rmse",
            "coverage_95",
            "fit_seconds",
            "blob_bytes",
            "ram_bytes",
            "instructions",
        ] {
            assert!(r[key].as_f64().is_some(), "{key} in {r}");
        }
        assert_eq!(r["feature_dim"], 2);
        assert_eq!(r["over_budget"], serde_json::json!([]));
    }
    let nlpd = |i: usize| rows[i]["nlpd"].as_f64().unwrap();
    let best = (0..4).min_by(|&a, &b| nlpd(a).total_cmp(&nlpd(b))).unwrap();
    assert_eq!(all["chosen"], best);
    let chosen: Vec<bool> = rows.iter().map(|r| r["chosen"] == true).collect();
    assert_eq!(chosen.iter().filter(|&&c| c).count(), 1);
    assert!(chosen[best]);

    // A flash budget that only the M = 3 blobs meet: the better of those.
    let blob = |i: usize| rows[i]["blob_bytes"].as_u64().unwrap();
    let small = blob(0).max(blob(2));
    assert!(small < blob(1).min(blob(3)));
    let flash = small.to_string();
    let budget = [&grid[..], &["--flash", &flash]].concat();
    let (out, within) = sweep_json(&dir, &[&budget[..], &["--out", "best.sgp"]].concat());
    ok(&out, "sweep with a budget");
    let rows = within["rows"].as_array().unwrap();
    assert_eq!(rows[1]["over_budget"], serde_json::json!(["flash"]));
    assert_eq!(rows[3]["over_budget"], serde_json::json!(["flash"]));
    let expected = if nlpd(0) <= nlpd(2) { 0 } else { 2 };
    assert_eq!(within["chosen"], expected);

    // The written blob is what `sgp fit` makes of that grid point with its
    // default settings, byte for byte.
    let model = rows[expected]["model"].as_str().unwrap();
    let fit = ["fit", "--data", "train.csv", "--model", model, "--m", "3"];
    ok(
        &sgp(&dir, &[&fit[..], &["--out", "fit.sgp", "-q"]].concat()),
        "fit",
    );
    assert_eq!(dir.read("best.sgp"), dir.read("fit.sgp"));

    // The table: a header, one line per row, the chosen one starred.
    let table = ok(&sweep(&dir, &budget), "sweep table");
    for column in [
        "kernel", "NLPD", "RMSE", "cover95", "fit s", "blob B", "RAM B", "instr",
    ] {
        assert!(table.contains(column), "{column}:\n{table}");
    }
    assert_eq!(table.matches("over: flash").count(), 2, "{table}");
    let starred: Vec<&str> = table.lines().filter(|l| l.starts_with('*')).collect();
    assert_eq!(starred.len(), 2, "{table}");
    assert!(starred[1].starts_with("* chosen: "), "{table}");
}

#[test]
fn sweep_with_a_budget_nothing_meets_prints_the_table_and_exits_3() {
    let dir = TempDir::new("sweep_budget");
    train_and_test(&dir, 80, 2, 60);
    let out = sweep(
        &dir,
        &[
            "--models",
            "spgp",
            "--m",
            "3",
            "--ram",
            "1K",
            "--instructions",
            "100",
            "--out",
            "none.sgp",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "stderr:\n{}", stderr(&out));
    let table = stdout(&out);
    assert!(table.contains("over: instructions"), "{table}");
    assert!(table.contains("no model chosen"), "{table}");
    let err = stderr(&out);
    assert!(err.contains("no model meets the budget"), "{err}");
    assert!(err.contains("fewest instructions"), "{err}");
    assert!(!dir.path().join("none.sgp").exists());
}

#[test]
fn sweep_rows_for_failed_grid_points_and_bad_input() {
    let dir = TempDir::new("sweep_bad");
    train_and_test(&dir, 50, 2, 30);
    // M = 40 is more than the 30 training rows: a failed row, not an abort.
    let (out, json) = sweep_json(&dir, &["--models", "spgp", "--m", "3,40"]);
    ok(&out, "sweep with one failing point");
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows[0]["status"], "ok");
    assert_eq!(rows[1]["status"], "failed");
    assert!(
        rows[1]["reason"].as_str().unwrap().contains("40"),
        "{}",
        rows[1]
    );
    // Every point failing on the input: exit 2, after the table.
    let all_failed = sweep(&dir, &["--m", "40"]);
    assert_eq!(all_failed.status.code(), Some(2));
    assert!(stdout(&all_failed).contains("failed after"));

    let unknown = sweep(&dir, &["--models", "spgp,gpx"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("gpx"), "{}", stderr(&unknown));
    assert_bad_input(
        &sweep(&dir, &["--models", "spgp", "--dim", "1"]),
        &[
            "--dim does not apply to spgp",
            "applies to spgp-dr, spgp-pca",
        ],
    );
    assert_bad_input(&sweep(&dir, &["--models", "spgp-dr"]), &["needs --dim"]);
    assert_bad_input(
        &sweep(&dir, &["--models", "spgp-dr", "--dim", "3"]),
        &["--dim 3"],
    );
    assert_bad_input(&sweep(&dir, &["--m", "0"]), &["at least 1"]);
    assert_bad_input(
        &sweep(&dir, &["--models", "spgp", "--link", "probit"]),
        &["--models ivm"],
    );
    let empty = sweep(&dir, &["--m", ""]);
    assert_eq!(empty.status.code(), Some(2));
    let bad_flash = sweep(&dir, &["--flash", "lots"]);
    assert_eq!(bad_flash.status.code(), Some(2));
    assert!(stderr(&bad_flash).contains("byte count"));
    // Test columns that differ from the training columns.
    let test = String::from_utf8(dir.read("test.csv")).unwrap();
    dir.write("test.csv", test.replacen("x2", "z2", 1));
    assert_bad_input(
        &sweep(&dir, &[]),
        &["test.csv", "missing 'x2'", "extra 'z2'"],
    );
}

#[test]
fn sweep_of_classifiers_ranks_by_error_rate() {
    let dir = TempDir::new("sweep_classes");
    split_csv(&dir, &classes_csv("0", "1", None), 80);
    let (out, json) = sweep_json(&dir, &["--link", "probit", "--m", "4,16"]);
    ok(&out, "classifier sweep");
    assert_eq!(json["task"], "classification");
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for r in rows {
        assert_eq!(r["model"], "svgp", "the default classifier, as sgp fit's");
        assert!(r["error_rate"].as_f64().is_some(), "{r}");
        assert!(r["log_loss"].as_f64().is_some(), "{r}");
    }
    let err = |i: usize| rows[i]["error_rate"].as_f64().unwrap();
    let chosen = json["chosen"].as_u64().unwrap() as usize;
    assert!(err(chosen) <= err(1 - chosen));
    let table = ok(
        &sweep(&dir, &["--link", "probit", "--m", "4"]),
        "classifier table",
    );
    assert!(
        table.contains("error") && table.contains("log loss"),
        "{table}"
    );
}

/// Runs `sgp plot` and returns the SVG it wrote, checked to be one.
fn plot(dir: &TempDir, model: &str, data: &str, out: &str) -> String {
    ok(
        &sgp(
            dir,
            &["plot", "--model", model, "--data", data, "--out", out],
        ),
        "plot",
    );
    let svg = String::from_utf8(dir.read(out)).expect("SVG is UTF-8");
    assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
    svg
}

/// Asserts that `svg` holds every one of `texts`.
fn assert_shows(svg: &str, texts: &[&str]) {
    for text in texts {
        assert!(svg.contains(text), "{text}");
    }
}

/// Counts the SVG elements named `tag` (`<tag ...`).
fn count_tags(svg: &str, tag: &str) -> usize {
    svg.matches(&format!("<{tag} ")).count()
}

#[test]
fn plot_one_input_shows_data_band_mean_and_basis() {
    let dir = TempDir::new("plot_1d");
    dir.write(
        "line.csv",
        ok(
            &sgp(&dir, &["synth", "--shape", "quadratic", "--rows", "60"]),
            "synth",
        ),
    );
    // VSGP's widths are bars, each a line and two end caps in the basis
    // markers' red; SPGP's shared widths are not drawn.
    for (model, what, width_bars) in [
        ("spgp", "6 pseudo-inputs", false),
        ("vsgp", "centre ± sqrt(width)", true),
    ] {
        ok(
            &sgp(
                &dir,
                &[
                    "fit",
                    "--data",
                    "line.csv",
                    "--model",
                    model,
                    "--m",
                    "6",
                    "--max-iter",
                    "20",
                    "--out",
                    "m.sgp",
                    "-q",
                ],
            ),
            "fit",
        );
        let svg = plot(&dir, "m.sgp", "line.csv", "fit.svg");
        assert!(svg.contains(&format!("{model} model, M = 6, on line.csv (60 rows)")));
        // One dot per data row (plus the legend's), the band, the mean.
        assert!(count_tags(&svg, "circle") >= 60, "circles");
        assert!(svg.contains("mean ± 2 sd (with noise)"));
        assert!(svg.contains("predictive mean (runtime, f32)"));
        // Basis markers are triangles, i.e. polygons like the band: the
        // band, six markers and the legend's, unless some basis function
        // sits off the plotted range, which the legend then says.
        let polygons = count_tags(&svg, "polygon");
        assert!(
            polygons == 1 + 6 + 1 || (polygons < 8 && svg.contains("off the plot")),
            "{polygons} polygons"
        );
        assert!(svg.contains(what), "{what}");
        let red_lines = svg
            .lines()
            .filter(|l| l.starts_with("<line ") && l.contains("#D62728"))
            .count();
        let shown = polygons - 2;
        assert_eq!(red_lines, if width_bars { 3 * shown } else { 0 }, "{model}");
    }
}

#[test]
fn plot_many_inputs_and_classifiers_and_mismatched_data() {
    let dir = TempDir::new("plot_nd");
    synth(&dir, "data.csv", 80, 3);
    fit_spgp(&dir, "data.csv", "m.sgp", "0");
    let svg = plot(&dir, "m.sgp", "data.csv", "nd.svg");
    assert_shows(
        &svg,
        &[
            "predicted against actual",
            "calibration",
            "Gaussian expectation",
            "actual y",
        ],
    );
    // The classifier: probabilities by class and the reliability diagram.
    dir.write("classes.csv", classes_csv("0", "1", None));
    ok(
        &sgp(
            &dir,
            &[
                "fit",
                "--data",
                "classes.csv",
                "--model",
                "ivm",
                "--link",
                "probit",
                "--m",
                "10",
                "--out",
                "c.sgp",
                "-q",
            ],
        ),
        "fit classifier",
    );
    let svg = plot(&dir, "c.sgp", "classes.csv", "c.svg");
    assert!(svg.contains("reliability") && svg.contains("P(label = 1)"));
    // Each class level is named once on the class axis.
    assert_eq!(svg.matches(">\nother\n<").count(), 1, "{svg}");
    // Data without one of the model's inputs, or without its target.
    dir.write(
        "fewer.csv",
        select_columns(
            &String::from_utf8(dir.read("data.csv")).unwrap(),
            &["x1", "x3", "y"],
        ),
    );
    assert_bad_input(
        &sgp(
            &dir,
            &[
                "plot",
                "--model",
                "m.sgp",
                "--data",
                "fewer.csv",
                "--out",
                "x.svg",
            ],
        ),
        &["fewer.csv", "x2"],
    );
    assert_bad_input(
        &sgp(
            &dir,
            &[
                "plot", "--model", "m.sgp", "--data", "data.csv", "--target", "t", "--out", "x.svg",
            ],
        ),
        &["'t'"],
    );
    assert!(!dir.path().join("x.svg").exists());
    dir.write("junk.sgp", b"not a blob");
    assert_bad_input(
        &sgp(
            &dir,
            &[
                "plot", "--model", "junk.sgp", "--data", "data.csv", "--out", "x.svg",
            ],
        ),
        &["junk.sgp"],
    );
}

#[test]
fn inspect_shows_the_training_range_and_names_a_device_cannot_hold() {
    let dir = TempDir::new("range-names");
    synth(&dir, "data.csv", 60, 2);
    let csv = String::from_utf8(dir.read("data.csv")).expect("UTF-8 CSV");
    let long = "x2_measured_at_the_far_end_of_the_pipe";
    dir.write("long.csv", csv.replacen("x2", long, 1));
    let out = sgp(
        &dir,
        &[
            "fit",
            "--data",
            "long.csv",
            "--m",
            "8",
            "--max-iter",
            "5",
            "--out",
            "m.sgp",
        ],
    );
    ok(&out, "fit");
    assert!(
        stderr(&out).contains(&format!(
            "longer than the 31 bytes a device Model holds: {long}"
        )),
        "{}",
        stderr(&out)
    );
    // Host tools still evaluate the blob.
    let predicted = ok(
        &sgp(&dir, &["predict", "--model", "m.sgp", "--data", "long.csv"]),
        "predict",
    );
    assert_eq!(parse_predictions(&predicted).len(), 60);
    let json = ok(&sgp(&dir, &["inspect", "m.sgp", "--json"]), "inspect");
    let json: Value = serde_json::from_str(&json).expect("inspect --json is JSON");
    let ranges = json["training_range"].as_array().expect("two ranges");
    assert_eq!(ranges.len(), 2, "{json}");
    for r in ranges {
        let (min, max) = (r["min"].as_f64().unwrap(), r["max"].as_f64().unwrap());
        // `sgp synth` draws inputs uniformly on [-3, 3].
        assert!(
            (-3.0..-2.5).contains(&min) && (2.5..=3.0).contains(&max),
            "{json}"
        );
    }
    assert_eq!(json["names_too_long"], serde_json::json!([long]));
    let text = ok(&sgp(&dir, &["inspect", "m.sgp"]), "inspect");
    assert!(text.contains("training range  per input"), "{text}");
    // The sizes fit, the names do not: no device loads this blob.
    let out = sgp(&dir, &["inspect", "m.sgp", "--capacity", "8"]);
    assert_does_not_fit(&out, "names longer than 31 bytes");
}

/// Asserts `inspect --capacity`'s answer for a model that does not fit:
/// exit 1 (not the 2 of bad input) and `why` in the message.
fn assert_does_not_fit(out: &Output, why: &str) {
    assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
    assert!(stderr(out).contains(why), "{}", stderr(out));
}

#[test]
fn fit_json_is_the_report_and_the_summary_labels_length_scales() {
    let dir = TempDir::new("fit-json");
    synth(&dir, "train.csv", 200, 3);
    let base = [
        "fit",
        "--data",
        "train.csv",
        "--m",
        "8",
        "--max-iter",
        "30",
        "--out",
        "m.sgp",
    ];
    let out = sgp(&dir, &[&base[..], &["--json", "--restarts", "2"]].concat());
    let json: Value = serde_json::from_str(&ok(&out, "fit --json")).expect("valid JSON");
    let report = &json["report"];
    // The default is auto: the family it chose, and why.
    assert_eq!(report["choice"]["asked"], "auto");
    assert_eq!(report["method"], report["choice"]["exported"]);
    assert!(report["approximation"].is_string());
    assert_eq!(report["inputs"], serde_json::json!(["x1", "x2", "x3"]));
    assert_eq!(report["lengthscales"].as_array().map(Vec::len), Some(3));
    assert_eq!(report["starts"].as_array().map(Vec::len), Some(2));
    assert!(report["optimiser"]["iterations"].as_u64().is_some());
    assert!(json["fidelity"]["worst_mean_ratio"]
        .as_f64()
        .is_some_and(|r| r <= 1.0));
    assert_eq!(
        json["blob_bytes"].as_u64(),
        Some(dir.read("m.sgp").len() as u64)
    );
    // The human summary names each length scale's column and says what to
    // do when the iteration budget ran out (30 iterations do not converge).
    let text = ok(&sgp(&dir, &base), "fit");
    for name in ["x1", "x2", "x3"] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(name)),
            "no length scale line for {name}:\n{text}"
        );
    }
    assert!(text.contains("try --max-iter 60"), "{text}");
}

#[test]
fn tol_stops_a_fit_whose_progress_stalled_and_is_validated() {
    let dir = TempDir::new("fit-tol");
    synth(&dir, "train.csv", 200, 2);
    let run = |tol: &str| {
        let tol = format!("--tol={tol}");
        let args = [
            "fit",
            "--data",
            "train.csv",
            "--m",
            "6",
            "--restarts",
            "1",
            "--max-iter",
            "80",
            "--out",
            "m.sgp",
            "--json",
            &tol,
        ];
        sgp(&dir, &args)
    };
    let optimiser = |out: &Output| {
        let json: Value = serde_json::from_str(&ok(out, "fit --tol")).expect("valid JSON");
        json["report"]["optimiser"].clone()
    };
    // One nat per row in 50 iterations is more than a fit gains once past
    // its first steep iterations: the test fires soon after its first
    // chance, iteration 51, well before the cap.
    let stalled = optimiser(&run("1"));
    assert_eq!(stalled["stop_reason"], "Stalled", "{stalled}");
    let used = stalled["iterations"].as_u64().unwrap_or(0);
    assert!((51..60).contains(&used), "{stalled}");
    assert_eq!(stalled["budget_exhausted"], false, "{stalled}");
    // Zero turns the test off: the run goes on to its cap (or converges).
    let off = optimiser(&run("0"));
    assert_ne!(off["stop_reason"], "Stalled", "{off}");
    assert!(off["iterations"].as_u64() > Some(51), "{off}");
    for bad in ["-0.1", "NaN"] {
        assert_bad_input(&run(bad), &["tolerance"]);
    }
}

#[test]
fn predict_into_a_closed_pipe_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let dir = TempDir::new("pipe");
    synth(&dir, "train.csv", 100, 2);
    fit_spgp(&dir, "train.csv", "m.sgp", "0");
    // Far more output than a pipe buffers, so sgp is still writing when the
    // reader goes away, as with `sgp predict ... | head -1`.
    synth(&dir, "many.csv", 20000, 2);
    let mut child = Command::new(env!("CARGO_BIN_EXE_sgp"))
        .args(["predict", "--model", "m.sgp", "--data", "many.csv"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn sgp");
    let mut first = String::new();
    let stdout = child.stdout.take().expect("piped");
    BufReader::new(stdout).read_line(&mut first).expect("read");
    assert_eq!(first.trim(), "mean,variance");
    // The reader (and with it the pipe) is gone here.
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(out.stderr.is_empty(), "stderr: {}", stderr(&out));
}

#[test]
fn spgp_hs_fit_reports_the_uncertainties_and_inspect_says_where_they_went() {
    let dir = TempDir::new("spgp-hs");
    let out = sgp(
        &dir,
        &["synth", "--shape", "heteroscedastic", "--rows", "150"],
    );
    dir.write("data.csv", ok(&out, "synth"));
    let fit_args = |blob: &'static str, json: bool| {
        let mut args = vec![
            "fit",
            "--data",
            "data.csv",
            "--model",
            "spgp-hs",
            "--m",
            "6",
            "--max-iter",
            "20",
            "--restarts",
            "2",
            "--init",
            "random",
            "--objective",
            "fitc",
            "--no-held-out-choice",
            "--out",
            blob,
        ];
        if json {
            args.push("--json");
        }
        args
    };
    let chosen = |blob, json| {
        let mut args = fit_args(blob, json);
        args.retain(|a| *a != "--no-held-out-choice");
        args
    };
    // Without --no-held-out-choice, 150 rows get the held-out comparison
    // with plain SPGP, and the prior's strength is chosen over folds of
    // them; the summary gives both.
    let text = ok(
        &sgp(&dir, &chosen("chosen.sgp", false)),
        "fit with the held-out choice",
    );
    assert!(text.contains("\nchoice          spgp-hs"), "fit:\n{text}");
    assert!(text.contains("prior on h      strength "), "fit:\n{text}");
    assert!(text.contains("folds of 150 rows"), "fit:\n{text}");
    // With it, neither: the prior's strength is the fixed default.
    let text = ok(&sgp(&dir, &fit_args("hs.sgp", false)), "fit");
    assert!(!text.contains("\nchoice "), "fit:\n{text}");
    assert!(text.contains("spgp-hs"), "fit:\n{text}");
    assert!(text.contains("uncertainties   h_m min"), "fit:\n{text}");
    assert!(
        text.contains("prior on h      strength 0.3 of SPGP's average noise (the default)"),
        "fit:\n{text}"
    );
    assert!(text.contains("--no-held-out-choice"), "fit:\n{text}");
    assert!(!text.contains("folds of"), "fit:\n{text}");
    assert!(!text.contains("on the noise floor"), "fit:\n{text}");
    let json: serde_json::Value =
        serde_json::from_str(&ok(&sgp(&dir, &fit_args("hs2.sgp", true)), "fit --json"))
            .expect("JSON report");
    assert_eq!(json["report"]["method"], "spgp-hs");
    let u = &json["report"]["uncertainties"];
    let (min, max) = (u["min"].as_f64().unwrap(), u["max"].as_f64().unwrap());
    assert!(0.0 < min && min <= max, "{u}");
    let prior = &json["report"]["h_prior"];
    assert_eq!(prior["strength"], 0.3, "{prior}");
    assert!(prior.get("tried").is_none(), "{prior}");
    let json: serde_json::Value =
        serde_json::from_str(&ok(&sgp(&dir, &chosen("hs3.sgp", true)), "fit --json"))
            .expect("JSON report");
    let prior = &json["report"]["h_prior"];
    let strength = prior["strength"].as_f64().expect("a strength");
    let tried = prior["tried"].as_array().expect("the strengths tried");
    assert!(tried.iter().any(|t| t["strength"] == strength), "{prior}");
    assert_eq!(prior["rows"], 150, "{prior}");
    let text = ok(&sgp(&dir, &["inspect", "hs.sgp"]), "inspect");
    assert!(text.contains("spgp-hs"), "inspect:\n{text}");
    assert!(text.contains("not stored"), "inspect:\n{text}");
}

/// A named family is the family fitted: SPGP+HS, weighed against SPGP
/// with either objective on the folds, is exported where SPGP predicts
/// held-out rows better, and the summary, stderr and `--json` say so with
/// the toughest rival's figures.
#[test]
fn a_named_family_that_spgp_beats_on_held_out_rows_is_fitted_and_says_so() {
    let dir = TempDir::new("lost-to");
    synth(&dir, "data.csv", 300, 2);
    let fit = |json: bool| {
        let mut args = vec![
            "fit",
            "--data",
            "data.csv",
            "--model",
            "spgp-hs",
            "--m",
            "6",
            "--max-iter",
            "20",
            "--out",
            "hs.sgp",
        ];
        if json {
            args.push("--json");
        }
        sgp(&dir, &args)
    };
    let out = fit(false);
    let text = ok(&out, "fit");
    let note = String::from_utf8_lossy(&out.stderr);
    for said in [&text, &note.to_string()] {
        assert!(said.contains("spgp-hs was fitted as asked"), "{said}");
        assert!(said.contains("--model auto would export spgp"), "{said}");
    }
    let json: Value = serde_json::from_str(&ok(&fit(true), "fit --json")).expect("JSON");
    assert_eq!(json["kind"], "spgp-hs");
    let choice = &json["report"]["choice"];
    assert_eq!(choice["exported"], "spgp-hs", "{choice}");
    let candidates = choice["candidates"].as_array().expect("candidates");
    assert_eq!(candidates.len(), 3, "{choice}");
    let nlpd = |name: &str| {
        candidates
            .iter()
            .find(|c| c["name"] == name)
            .and_then(|c| c["nlpd"].as_f64())
            .expect("scored")
    };
    let verdict = &candidates[2]["against"];
    assert_eq!(verdict["challenger"], "spgp-hs", "{choice}");
    assert_eq!(verdict["challenger_chosen"], false, "{choice}");
    // The toughest rival: the SPGP objective of lower held-out NLPD.
    let toughest = if nlpd("spgp (vfe)") < nlpd("spgp (fitc)") {
        "spgp (vfe)"
    } else {
        "spgp (fitc)"
    };
    assert_eq!(verdict["incumbent"], toughest, "{choice}");
}

/// `--model auto` weighs the families that apply on held-out rows and says
/// what it chose and why, on stderr and in `--json`, whose blob kind is the
/// family it names; on a classification it is the classifier.
#[test]
fn auto_says_which_family_it_chose_and_why() {
    let dir = TempDir::new("auto");
    let out = sgp(
        &dir,
        &["synth", "--shape", "heteroscedastic", "--rows", "200"],
    );
    dir.write("het.csv", ok(&out, "synth"));
    let fit = |data: &str, extra: &[&str]| {
        let mut args = vec![
            "fit",
            "--data",
            data,
            "--model",
            "auto",
            "--m",
            "8",
            "--max-iter",
            "30",
            "--out",
            "a.sgp",
            "--json",
        ];
        args.extend_from_slice(extra);
        sgp(&dir, &args)
    };
    let out = fit("het.csv", &[]);
    let json: Value = serde_json::from_str(&ok(&out, "fit --model auto")).expect("JSON");
    let choice = &json["report"]["choice"];
    assert_eq!(choice["asked"], "auto", "{choice}");
    assert_eq!(json["kind"], choice["exported"], "{json}");
    assert_eq!(json["report"]["method"], choice["exported"], "{json}");
    let names: Vec<&str> = choice["candidates"]
        .as_array()
        .expect("weighed")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    for family in ["spgp-hs", "vsgp", "gplasso"] {
        assert!(names.contains(&family), "{names:?}");
    }
    let note = String::from_utf8_lossy(&out.stderr);
    assert!(note.contains("sgp: note: auto chose"), "{note}");
    assert!(
        note.contains(choice["exported"].as_str().expect("a name")),
        "{note}"
    );

    synth(&dir, "data.csv", 120, 2);
    let labels: String = std::fs::read_to_string(dir.path().join("data.csv"))
        .expect("written")
        .lines()
        .enumerate()
        .map(|(i, line)| {
            if i == 0 {
                return format!("{line}\n");
            }
            let (inputs, y) = line.rsplit_once(',').expect("a target");
            let class = u8::from(y.parse::<f64>().expect("a number") > 0.0);
            format!("{inputs},{class}\n")
        })
        .collect();
    dir.write("classes.csv", labels);
    let json: Value =
        serde_json::from_str(&ok(&fit("classes.csv", &[]), "auto classifier")).expect("JSON");
    assert_eq!(json["kind"], "svgp", "{json}");
}

#[test]
fn projected_models_fit_and_inspect_with_their_projection() {
    let dir = TempDir::new("projected");
    synth(&dir, "data.csv", 80, 5);
    for (model, objective) in [("spgp-dr", "fitc"), ("spgp-pca", "vfe")] {
        let blob = format!("{model}.sgp");
        let out = sgp(
            &dir,
            &[
                "fit",
                "--data",
                "data.csv",
                "--model",
                model,
                "--m",
                "6",
                "--dim",
                "2",
                "--objective",
                objective,
                "--restarts",
                "2",
                "--init",
                "random",
                "--max-iter",
                "15",
                // The projection alone, without the held-out comparison with
                // SPGP (the choose layer has its own tests).
                "--no-held-out-choice",
                "--out",
                &blob,
            ],
        );
        // PCA's blob is the projected form: the kind differs, and is said to.
        let note = "the spgp-pca blob has kind spgp-dr";
        assert_eq!(stderr(&out).contains(note), model == "spgp-pca");
        let summary = ok(&out, model);
        assert!(
            summary.contains(&format!("model           {model}")),
            "{summary}"
        );
        assert!(summary.contains("projection      2 x 5"), "{summary}");
        assert!(!summary.contains("length scales"), "{summary}");
        let inspect = ok(&sgp(&dir, &["inspect", &blob]), "inspect");
        assert!(inspect.contains("kind            spgp-dr"), "{inspect}");
        if model == "spgp-pca" {
            let args = [
                "--model",
                model,
                "--m",
                "6",
                "--dim",
                "2",
                "--max-iter",
                "15",
            ];
            let json = sgp(
                &dir,
                &[
                    &["fit", "--data", "data.csv", "--out", "j.sgp", "--json"][..],
                    &args[..],
                ]
                .concat(),
            );
            let json: Value = serde_json::from_str(&ok(&json, "pca --json")).expect("JSON");
            assert_eq!(json["kind"], "spgp-dr", "{json}");
            assert!(
                json["kind_note"].as_str().is_some_and(|n| n.contains(note)),
                "{json}"
            );
        }
        assert!(inspect.contains("M = 6, G = 2, D = 5"), "{inspect}");
        assert!(inspect.contains("projection      2 x 5"), "{inspect}");
        assert!(!inspect.contains("length scales"), "{inspect}");
    }
    // On these 80 rows the projection loses to plain SPGP on held-out
    // rows; the fit says so and exports the projection asked for.
    let out = sgp(
        &dir,
        &[
            "fit",
            "--data",
            "data.csv",
            "--model",
            "spgp-dr",
            "--m",
            "6",
            "--dim",
            "2",
            "--restarts",
            "2",
            "--init",
            "random",
            "--max-iter",
            "15",
            "--out",
            "fallen.sgp",
        ],
    );
    let summary = ok(&out, "spgp-dr with the held-out choice");
    assert!(summary.contains("spgp-dr was fitted as asked"), "{summary}");
    let inspect = ok(&sgp(&dir, &["inspect", "fallen.sgp"]), "inspect");
    assert!(inspect.contains("G = 2, D = 5"), "{inspect}");
}

#[test]
fn bad_projection_dimensions_are_rejected() {
    let dir = TempDir::new("bad_dim");
    synth(&dir, "data.csv", 30, 3);
    let fit = |extra: &[&str]| {
        let mut args = vec!["fit", "--data", "data.csv", "--m", "5", "--out", "o.sgp"];
        args.extend_from_slice(extra);
        sgp(&dir, &args)
    };
    assert_bad_input(&fit(&["--model", "spgp-dr"]), &["--dim"]);
    assert_bad_input(&fit(&["--model", "spgp-pca", "--dim", "0"]), &["--dim"]);
    assert_bad_input(&fit(&["--model", "spgp-dr", "--dim", "4"]), &["--dim", "3"]);
    assert_bad_input(&fit(&["--model", "spgp", "--dim", "2"]), &["--dim", "spgp"]);
    assert_bad_input(&fit(&["--model", "vsgp", "--dim", "2"]), &["--dim"]);
}

#[test]
fn gplasso_fit_path_json_inspect_and_bad_settings() {
    let dir = TempDir::new("gplasso");
    synth(&dir, "data.csv", 120, 2);
    let fit = |extra: &[&str]| {
        let mut args = vec![
            "fit",
            "--data",
            "data.csv",
            "--model",
            "gplasso",
            "--max-iter",
            "20",
        ];
        args.extend_from_slice(extra);
        sgp(&dir, &args)
    };
    // On 120 rows GPLasso is weighed against plain SPGP on held-out rows;
    // here it loses, and the summary says so, with GPLasso exported.
    let text = ok(&fit(&["--m", "6", "--out", "d.sgp"]), "fit (default)");
    assert!(text.contains("gplasso was fitted as asked"), "{text}");
    assert!(text.contains("selected rows"), "{text}");
    // A named objective is kept.
    let text = ok(
        &fit(&[
            "--m",
            "6",
            "--objective",
            "vfe",
            "--no-held-out-choice",
            "--out",
            "v.sgp",
        ]),
        "fit --objective vfe",
    );
    assert!(text.contains("training rows, VFE)"), "{text}");
    // The path, then the summary with the selected rows (no choice: the
    // lasso's basis whatever the held-out rows say).
    let text = ok(
        &fit(&[
            "--m",
            "6",
            "--path",
            "--no-held-out-choice",
            "--out",
            "g.sgp",
        ]),
        "fit --path",
    );
    assert!(text.contains("val NLPD"), "{text}");
    assert!(text.contains("selected rows"), "{text}");
    assert!(text.contains("FITC with the basis points"), "{text}");
    assert!(text.contains("then the basis points moved"), "{text}");
    // The paper's procedure and the fixed basis say what they kept.
    let text = ok(
        &fit(&["--m", "6", "--fixed-hyperparameters", "--out", "p.sgp"]),
        "fit --fixed-hyperparameters",
    );
    assert!(text.contains("kept (--fixed-hyperparameters)"), "{text}");
    let text = ok(
        &fit(&["--m", "6", "--fixed-basis", "--out", "b.sgp"]),
        "fit --fixed-basis",
    );
    assert!(text.contains("(--fixed-basis)"), "{text}");
    // --json carries the rows (0-based data rows) and the path.
    let json: Value = serde_json::from_str(&ok(
        &fit(&[
            "--m",
            "6",
            "--json",
            "--path",
            "--no-held-out-choice",
            "--out",
            "g.sgp",
        ]),
        "json",
    ))
    .expect("JSON");
    let rows = json["report"]["gplasso"]["selected_rows"]
        .as_array()
        .expect("selected_rows");
    assert_eq!(rows.len(), 6);
    assert!(rows.iter().all(|r| r.as_u64().is_some_and(|r| r < 120)));
    assert!(json["path"].as_array().is_some_and(|p| !p.is_empty()));
    assert_eq!(json["report"]["method"], "gplasso");
    // inspect knows the kind and says where the row numbers are.
    let inspect = ok(&sgp(&dir, &["inspect", "g.sgp"]), "inspect");
    assert!(inspect.contains("gplasso"), "{inspect}");
    assert!(inspect.contains("selected_rows"), "{inspect}");
    // Bad settings: exit 2 with a message naming the option.
    assert_bad_input(
        &fit(&["--m", "121", "--out", "x.sgp"]),
        &["data.csv", "--m 121"],
    );
    assert_bad_input(
        &fit(&["--m", "5", "--rank", "0", "--out", "x.sgp"]),
        &["--rank"],
    );
    assert_bad_input(
        &fit(&[
            "--m",
            "5",
            "--objective",
            "vfe",
            "--fixed-basis",
            "--out",
            "x.sgp",
        ]),
        &["--objective", "FITC"],
    );
    assert_bad_input(
        &fit(&["--m", "30", "--rank", "20", "--out", "x.sgp"]),
        &["--m 30", "rank 20"],
    );
    // auto takes the settings of its candidates: --rank is gplasso's.
    assert_bad_input(
        &sgp(
            &dir,
            &["fit", "--data", "data.csv", "--rank", "5", "--out", "x.sgp"],
        ),
        &["gplasso: --m 20", "rank 5"],
    );
    assert_bad_input(
        &sgp(
            &dir,
            &[
                "fit",
                "--data",
                "data.csv",
                "--model",
                "spgp",
                "--fixed-basis",
                "--out",
                "x.sgp",
            ],
        ),
        &["--fixed-basis does not apply to spgp", "gplasso"],
    );
}

/// `sgp eval --json` of `blob` on `data`, parsed.
fn eval_json(dir: &TempDir, blob: &str, data: &str) -> Value {
    let out = sgp(dir, &["eval", "--model", blob, "--data", data, "--json"]);
    serde_json::from_str(&ok(&out, "eval")).unwrap()
}

/// Checks `sgp predict`'s output for a classifier of the classes `labels`:
/// the header (`class`, one `p_LABEL` each and, for two classes, the
/// positive class's `probability` and the latent Gaussian), probabilities
/// summing to 1, `class` the most probable one. Returns the rows.
fn check_class_predictions(predict: &str, labels: &[&str]) -> usize {
    let k = labels.len();
    let mut header = vec!["class".to_owned()];
    header.extend(labels.iter().map(|l| format!("p_{l}")));
    if k == 2 {
        header.push("probability,latent_mean,latent_variance".into());
    }
    let mut lines = predict.lines();
    assert_eq!(lines.next(), Some(header.join(",").as_str()));
    let mut rows = 0;
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        let v: Vec<f64> = cells[1..].iter().map(|v| v.parse().unwrap()).collect();
        assert_eq!(v.len(), if k == 2 { 5 } else { k }, "{line}");
        let p = &v[..k];
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-5, "{line}");
        let best = (0..k).fold(0, |b, j| if p[j] > p[b] { j } else { b });
        assert_eq!(cells[0], labels[best], "{line}");
        if k == 2 {
            assert_eq!(v[2], p[1], "{line}");
            assert!(v[4] >= 0.0, "{line}");
        }
        rows += 1;
    }
    rows
}

/// A small two-class CSV: label `hi` where `a + b > 1`, else `lo`; `extra`
/// adds a third label on every fifth row.
fn classes_csv(lo: &str, hi: &str, extra: Option<&str>) -> String {
    let mut csv = String::from("a,b,label\n");
    for i in 0..120 {
        let a = (i * 37 % 101) as f64 / 100.0;
        let b = (i * 53 % 97) as f64 / 96.0;
        let label = match extra {
            Some(third) if i % 5 == 0 => third,
            _ if a + b > 1.0 => hi,
            _ => lo,
        };
        csv.push_str(&format!("{a},{b},{label}\n"));
    }
    csv
}

#[test]
fn ivm_classifier_fit_predict_eval() {
    let dir = TempDir::new("ivm_classifier");
    dir.write("c.csv", classes_csv("2", "5", None));
    let fit = sgp(
        &dir,
        &[
            "fit", "--data", "c.csv", "--model", "ivm", "--m", "20", "--link", "probit", "--out",
            "c.sgp", "--json",
        ],
    );
    let report: Value = serde_json::from_str(&ok(&fit, "fit")).unwrap();
    assert_eq!(report["report"]["method"], "ivm");
    assert_eq!(
        report["report"]["ivm"]["active_rows"]
            .as_array()
            .unwrap()
            .len(),
        20
    );
    assert_eq!(report["report"]["ivm"]["posterior"], "AllRows");
    // The paper's posterior on request: the same active set.
    let paper = sgp(
        &dir,
        &[
            "fit",
            "--data",
            "c.csv",
            "--model",
            "ivm",
            "--m",
            "20",
            "--ivm-posterior",
            "active-set",
            "--out",
            "paper.sgp",
            "--json",
        ],
    );
    let paper: Value = serde_json::from_str(&ok(&paper, "fit")).unwrap();
    assert_eq!(paper["report"]["ivm"]["posterior"], "ActiveSet");
    assert_eq!(
        paper["report"]["ivm"]["active_rows"],
        report["report"]["ivm"]["active_rows"]
    );
    let predict = ok(
        &sgp(&dir, &["predict", "--model", "c.sgp", "--data", "c.csv"]),
        "predict",
    );
    check_class_predictions(&predict, &["2", "5"]);
    // The blob knows the positive class (5): eval needs no flag.
    let eval = ok(
        &sgp(
            &dir,
            &["eval", "--model", "c.sgp", "--data", "c.csv", "--json"],
        ),
        "eval",
    );
    let e: Value = serde_json::from_str(&eval).unwrap();
    assert!(e["error_rate"].as_f64().unwrap() < 0.1, "{e}");
    assert!(e["log_loss"].as_f64().unwrap() < 0.4, "{e}");
    let ece = e["ece"].as_f64().unwrap();
    assert!((0.0..0.2).contains(&ece), "{e}");
    let positives = e["true_positives"].as_u64().unwrap() + e["false_negatives"].as_u64().unwrap();
    let expected = classes_csv("2", "5", None)
        .lines()
        .filter(|l| l.ends_with(",5"))
        .count();
    assert_eq!(positives as usize, expected);
    let text = ok(
        &sgp(&dir, &["eval", "--model", "c.sgp", "--data", "c.csv"]),
        "eval",
    );
    assert!(
        text.contains("error rate") && text.contains("log loss") && text.contains("ECE"),
        "{text}"
    );
}

#[test]
fn ivm_one_vs_rest_and_bad_class_columns() {
    let dir = TempDir::new("ivm_bad_classes");
    let probit = ["--model", "ivm", "--m", "10", "--link", "probit"];
    // Three values without --positive.
    let three = classes_csv("0", "1", Some("7"));
    fit_rejects(
        &dir,
        "three.csv",
        &three,
        &probit,
        &["three.csv", "3 classes", "--model svgp", "--positive"],
    );
    // --positive naming a value that does not occur.
    let mut args = probit.to_vec();
    args.extend(["--positive", "4"]);
    fit_rejects(
        &dir,
        "three.csv",
        &three,
        &args,
        &["--positive 4 does not occur"],
    );
    // One class only.
    fit_rejects(
        &dir,
        "one.csv",
        &classes_csv("3", "3", None),
        &probit,
        &["constant"],
    );
    // A continuous column.
    let cont: String = std::iter::once("a,y\n".to_string())
        .chain((0..50).map(|i| format!("{},{}\n", i, f64::from(i) * 0.37)))
        .collect();
    fit_rejects(&dir, "cont.csv", &cont, &probit, &["continuous"]);
    // --m larger than N.
    let mut args = probit.to_vec();
    args[2..4].copy_from_slice(&["--m", "500"]);
    fit_rejects(
        &dir,
        "two.csv",
        &classes_csv("0", "1", None),
        &args,
        &["500"],
    );
    // Probit with another model.
    fit_rejects(
        &dir,
        "two.csv",
        &classes_csv("0", "1", None),
        &["--model", "spgp", "--link", "probit"],
        &["--model svgp, --model ivm or --model exact"],
    );
    // One-vs-rest: 7 against 0 and 1.
    dir.write("three.csv", &three);
    let mut args = vec!["fit", "--data", "three.csv", "--out", "t.sgp", "--quiet"];
    args.extend_from_slice(&probit);
    args.extend(["--positive", "7"]);
    ok(&sgp(&dir, &args), "one-vs-rest fit");
    let eval = ok(
        &sgp(
            &dir,
            &["eval", "--model", "t.sgp", "--data", "three.csv", "--json"],
        ),
        "eval",
    );
    let e: Value = serde_json::from_str(&eval).unwrap();
    let positives = e["true_positives"].as_u64().unwrap() + e["false_negatives"].as_u64().unwrap();
    assert_eq!(positives, 24);
}

/// A text target is a classification: the rarer label is positive unless
/// `--positive` names another, a regression on it is refused, and a text
/// input column is still an error naming its line and column.
#[test]
fn text_labels_are_classes() {
    let dir = TempDir::new("text_labels");
    dir.write("t.csv", classes_csv("ok", "fault", Some("ok")));
    let fit = |extra: &[&str]| {
        let mut args = vec!["fit", "--data", "t.csv", "--m", "8", "--out", "t.sgp"];
        args.extend_from_slice(extra);
        sgp(&dir, &args)
    };
    let out = fit(&["--restarts", "1"]);
    ok(&out, "fit");
    let err = stderr(&out);
    assert!(
        err.contains("positive class 'fault' against 'ok' (the rarer label"),
        "{err}"
    );
    let err = stderr(&fit(&["--restarts", "1", "--positive", "ok"]));
    assert!(
        err.contains("positive class 'ok' against 'fault' (--positive"),
        "{err}"
    );
    // The blob records the labels: predict names them, eval reads them.
    ok(&fit(&["--restarts", "1"]), "fit");
    let predict = ok(
        &sgp(&dir, &["predict", "--model", "t.sgp", "--data", "t.csv"]),
        "predict",
    );
    check_class_predictions(&predict, &["ok", "fault"]);
    let inspect = ok(&sgp(&dir, &["inspect", "t.sgp"]), "inspect");
    assert!(inspect.contains("classes         ok, fault"), "{inspect}");
    let e: Value = eval_json(&dir, "t.sgp", "t.csv");
    // Every fifth row is `ok` whatever its inputs: a 10% floor.
    assert!(e["error_rate"].as_f64().unwrap() < 0.25, "{e}");
    assert_eq!(e["rows"].as_u64(), Some(120), "{e}");
    dir.write("u.csv", "a,b,label\n0.1,0.2,ok\n0.3,0.9,okay\n");
    assert_bad_input(
        &sgp(&dir, &["eval", "--model", "t.sgp", "--data", "u.csv"]),
        &[
            "u.csv: line 3",
            "column 'label'",
            "'okay' is not a class",
            "ok, fault",
        ],
    );
    fit_rejects(
        &dir,
        "t.csv",
        &classes_csv("ok", "fault", None),
        &["--positive", "broken"],
        &["class 'broken'", "one of fault, ok"],
    );
    fit_rejects(
        &dir,
        "t.csv",
        &classes_csv("ok", "fault", None),
        &["--task", "regression"],
        &["text labels (fault, ok)", "regression needs numbers"],
    );
    fit_rejects(
        &dir,
        "x.csv",
        "a,b,label\n1,2,ok\n1,x,fault\n3,1,ok\n",
        &[],
        &["x.csv", "line 3", "column 'b'", "'x' is not a number"],
    );
}

/// A two-valued target is a classification unless told otherwise, fitted
/// by svgp; `--task` overrides; a regression model asked for by name fits
/// the values as numbers, and says so.
#[test]
fn two_valued_target_is_a_classification_by_default() {
    let dir = TempDir::new("two_valued_default");
    dir.write("c.csv", classes_csv("0", "1", None));
    let fit = |extra: &[&str]| {
        let mut args = vec![
            "fit", "--data", "c.csv", "--m", "10", "--out", "c.sgp", "--json",
        ];
        args.extend_from_slice(extra);
        let out = sgp(&dir, &args);
        let report: Value = serde_json::from_str(&ok(&out, "fit")).unwrap();
        (
            report["report"]["method"].as_str().unwrap().to_string(),
            stderr(&out),
        )
    };
    let (method, err) = fit(&[]);
    assert_eq!(method, "svgp");
    assert!(
        err.contains("binary classification, positive class '1' against '0' (the larger value"),
        "{err}"
    );
    let predict = ok(
        &sgp(&dir, &["predict", "--model", "c.sgp", "--data", "c.csv"]),
        "predict",
    );
    assert!(
        predict.starts_with("class,p_0,p_1,probability,"),
        "{predict}"
    );
    let e: Value = eval_json(&dir, "c.sgp", "c.csv");
    assert!(e["error_rate"].as_f64().unwrap() < 0.1, "{e}");
    assert_eq!(fit(&["--model", "ivm"]).0, "ivm");
    assert_eq!(fit(&["--task", "regression", "--model", "spgp"]).0, "spgp");
    let (method, err) = fit(&["--model", "spgp"]);
    assert_eq!(method, "spgp");
    assert!(err.contains("regression model"), "{err}");
    fit_rejects(
        &dir,
        "three.csv",
        &classes_csv("0", "1", Some("7")),
        &["--task", "classification", "--model", "exact"],
        &["3 classes", "--model svgp", "not --model exact"],
    );
    fit_rejects(
        &dir,
        "one.csv",
        &classes_csv("3", "3", None),
        &["--task", "classification"],
        &["constant"],
    );
    fit_rejects(
        &dir,
        "c.csv",
        &classes_csv("0", "1", None),
        &["--task", "regression", "--link", "probit"],
        &["disagree"],
    );
}

/// `sgp synth --parquet` writes the same numbers as its CSV; `sgp fit`
/// reads either and writes the same blob, for a file read whole and for
/// one large enough to be streamed (fitted on a growing subset, then
/// conditioned on every row: `report.streamed`).
#[test]
fn parquet_and_csv_give_the_same_blob_read_whole_or_streamed() {
    let dir = TempDir::new("parquet");
    for rows in ["300", "80000"] {
        let csv = format!("d{rows}.csv");
        let parquet = format!("d{rows}.parquet");
        dir.write(
            &csv,
            ok(
                &sgp(&dir, &["synth", "--rows", rows, "--dim", "2"]),
                "synth",
            ),
        );
        ok(
            &sgp(
                &dir,
                &["synth", "--rows", rows, "--dim", "2", "--parquet", &parquet],
            ),
            "synth --parquet",
        );
        let mut blobs = Vec::new();
        for data in [&csv, &parquet] {
            let blob = format!("{data}.blob");
            let out = sgp(
                &dir,
                &[
                    "fit",
                    "--data",
                    data,
                    "--m",
                    "8",
                    "--max-iter",
                    "20",
                    "--restarts",
                    "1",
                    "--out",
                    &blob,
                    "--json",
                ],
            );
            let report: Value = serde_json::from_str(&ok(&out, "fit")).unwrap();
            let streamed = &report["report"]["streamed"];
            assert_eq!(report["report"]["rows"], rows.parse::<u64>().unwrap());
            if rows == "300" {
                assert!(streamed.is_null(), "{streamed}");
            } else {
                assert_eq!(streamed["rows"], 80000);
                assert!(streamed["stages"][0]["rows"] == 8192, "{streamed}");
            }
            blobs.push(dir.read(&blob));
        }
        assert_eq!(
            blobs[0], blobs[1],
            "{rows} rows: CSV and Parquet blobs differ"
        );
    }
}

/// A bad cell in the last row of a file large enough to be streamed is
/// reported with its line and column, and nothing is fitted or written.
#[test]
fn a_bad_cell_at_the_end_of_a_streamed_file_stops_the_fit_before_it_starts() {
    let dir = TempDir::new("streamed-bad");
    let mut csv = ok(
        &sgp(&dir, &["synth", "--rows", "80000", "--dim", "2"]),
        "synth",
    );
    csv.push_str("0.5,NaN,1.0\n");
    dir.write("big.csv", csv);
    let out = sgp(
        &dir,
        &["fit", "--data", "big.csv", "--m", "8", "--out", "m.blob"],
    );
    assert_bad_input(
        &out,
        &[
            "big.csv: line 80002 (data row 80001), column 'x2'",
            "not a finite number",
        ],
    );
    assert!(!dir.path().join("m.blob").exists());
}

/// A text target of three labels is a classifier of three classes: predict
/// names the class and gives a probability per class summing to one, eval
/// scores it, inspect lists the classes; sweep and plot refuse it.
#[test]
fn three_text_classes_fit_predict_eval() {
    let dir = TempDir::new("three_classes");
    let mut csv = String::from("a,b,side\n");
    for i in 0..150 {
        let a = (i * 37 % 101) as f64 / 100.0;
        let b = (i * 53 % 97) as f64 / 96.0;
        let side = ["left", "mid", "right"][((a * 3.0) as usize).min(2)];
        csv.push_str(&format!("{a},{b},{side}\n"));
    }
    dir.write("c.csv", &csv);
    let fit = sgp(
        &dir,
        &["fit", "--data", "c.csv", "--m", "10", "--out", "c.sgp"],
    );
    ok(&fit, "fit");
    let err = stderr(&fit);
    assert!(
        err.contains("classification of 3 classes (left, mid, right)"),
        "{err}"
    );
    let predict = ok(
        &sgp(&dir, &["predict", "--model", "c.sgp", "--data", "c.csv"]),
        "predict",
    );
    assert_eq!(
        check_class_predictions(&predict, &["left", "mid", "right"]),
        150
    );
    let e: Value = eval_json(&dir, "c.sgp", "c.csv");
    assert!(e["error_rate"].as_f64().unwrap() < 0.15, "{e}");
    assert!(e["log_loss"].as_f64().unwrap() < 0.6, "{e}");
    assert!((0.0..=1.0).contains(&e["ece"].as_f64().unwrap()), "{e}");
    let inspect = ok(&sgp(&dir, &["inspect", "c.sgp"]), "inspect");
    assert!(
        inspect.contains("classes         left, mid, right"),
        "{inspect}"
    );
    assert_bad_input(
        &sgp(
            &dir,
            &[
                "plot", "--model", "c.sgp", "--data", "c.csv", "--out", "p.svg",
            ],
        ),
        &["3 classes", "sgp plot"],
    );
    let sweep = sgp(
        &dir,
        &[
            "sweep", "--data", "c.csv", "--test", "c.csv", "--link", "probit", "--models", "svgp",
        ],
    );
    assert_eq!(sweep.status.code(), Some(2));
    let err = stderr(&sweep);
    assert!(
        err.contains("3 classes: sgp sweep compares binary classifiers"),
        "{err}"
    );
}

/// One home for each default: `sgp sweep` fits a grid point as `sgp fit`
/// fits it with nothing but the grid's settings given, for a regression
/// and for a classification (the default classifier and seed included).
#[test]
fn sweep_and_fit_share_their_defaults() {
    let dir = TempDir::new("sweep_fit_defaults");
    split_csv(&dir, &classes_csv("0", "1", None), 80);
    let swept = sweep(&dir, &["--link", "probit", "--m", "6", "--out", "s.sgp"]);
    ok(&swept, "classifier sweep");
    let fit = [
        "fit",
        "--data",
        "train.csv",
        "--link",
        "probit",
        "--m",
        "6",
        "--out",
        "f.sgp",
        "-q",
    ];
    ok(&sgp(&dir, &fit), "classifier fit");
    assert_eq!(dir.read("s.sgp"), dir.read("f.sgp"), "classifier");

    train_and_test(&dir, 120, 2, 80);
    ok(
        &sweep(&dir, &["--models", "vsgp", "--m", "5", "--out", "s.sgp"]),
        "sweep",
    );
    let fit = [
        "fit",
        "--data",
        "train.csv",
        "--model",
        "vsgp",
        "--m",
        "5",
        "--out",
        "f.sgp",
        "-q",
    ];
    ok(&sgp(&dir, &fit), "fit");
    assert_eq!(dir.read("s.sgp"), dir.read("f.sgp"), "regression");
}

/// The part of `help` (a `--help` text) that describes `flag`.
fn described<'a>(help: &'a str, flag: &str) -> &'a str {
    help.split("\n\n")
        .find(|part| {
            let part = part.trim_start();
            part.starts_with(&format!("{flag} <")) || part.starts_with(&format!("{flag}\n"))
        })
        .unwrap_or_else(|| panic!("{flag} in\n{help}"))
}

/// Whether `text` holds `part`, whitespace aside (help wraps lines).
fn holds(text: &str, part: &str) -> bool {
    let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    words(text).contains(&words(part))
}

/// `sgp fit --help` states every setting of the library's table where its
/// flag is described: its line of help and its default.
#[test]
fn fit_help_states_the_settings_table() {
    let dir = TempDir::new("fit_help_settings");
    let help = ok(&sgp(&dir, &["fit", "--help"]), "fit --help");
    for setting in sgp_trainer::options::settings::SETTINGS {
        let flag = setting.flag;
        let described = described(&help, flag);
        assert!(holds(described, &setting.help()), "{flag}: {described}");
        if let Some(value) = setting.default() {
            assert!(
                described.contains(&format!("[default: {value}]")),
                "{flag}: {described}"
            );
        }
    }
}

/// `sgp sweep --help` states the table's line of help of the settings it
/// sweeps (`--m`, `--dim`: lists of their values, the grid's default) and
/// takes as `sgp fit` does (`--seed`, `--positive`, with the table's
/// default).
#[test]
fn sweep_help_states_the_settings_table() {
    let dir = TempDir::new("sweep_help_settings");
    let help = ok(&sgp(&dir, &["sweep", "--help"]), "sweep --help");
    for flag in ["--m", "--dim", "--seed", "--positive"] {
        let setting = sgp_trainer::options::settings::setting(flag).expect("a setting");
        let described = described(&help, flag);
        assert!(holds(described, &setting.help()), "{flag}: {described}");
        if let (Some(value), "--seed" | "--positive") = (setting.default(), flag) {
            assert!(
                described.contains(&format!("[default: {value}]")),
                "{flag}: {described}"
            );
        }
    }
}

/// `sgp replay` refuses settings out of range before any row, in the
/// words Python's `Model.update` uses.
#[test]
fn replay_refuses_settings_out_of_range_before_any_row() {
    let dir = TempDir::new("replay_settings");
    synth(&dir, "d.csv", 60, 1);
    // Only the settings are tested here: the blob's fidelity is not.
    let fit = "fit --data d.csv --m 5 --updatable --force --out u.sgp -q";
    let fit: Vec<&str> = fit.split(' ').collect();
    ok(&sgp(&dir, &fit), "updatable fit");
    let replay = |extra: &[&str]| {
        let args = [&["replay", "--model", "u.sgp", "--data", "d.csv"], extra].concat();
        sgp(&dir, &args)
    };
    let out = replay(&["--forgetting", "2"]);
    assert_bad_input(&out, &["--forgetting must be in (0, 1], not 2"]);
    assert!(!stderr(&out).contains("data row"), "{}", stderr(&out));
    assert_bad_input(&replay(&["--gate", "0"]), &["--gate must be above 0"]);
    assert_bad_input(
        &replay(&["--gate-run", "3"]),
        &["--gate-run needs a --gate"],
    );
    assert_bad_input(
        &replay(&["--noise-forgetting", "1.5"]),
        &["--noise-forgetting must be in (0, 1], not 1.5"],
    );
    ok(
        &replay(&["--forgetting", "0.99", "--gate", "3", "--gate-run", "4"]),
        "replay",
    );
    ok(&replay(&["--noise-forgetting", "0.999"]), "replay");
}

/// `sgp replay` of a container (one model per output): each member
/// replays its own output's column, exactly as it would alone, and
/// `--out` is the container of the members after the last row.
#[test]
fn replay_of_a_container_replays_every_member_as_alone() {
    let dir = TempDir::new("replay_container");
    synth(&dir, "d.csv", 60, 1);
    let fit = "fit --data d.csv --m 5 --updatable --force --out u.sgp -q";
    ok(
        &sgp(&dir, &fit.split(' ').collect::<Vec<_>>()),
        "updatable fit",
    );
    let one = dir.read("u.sgp");
    let both = sgp_trainer::export::artefact::container(&[&one, &one]).expect("container");
    dir.write("c.sgp", &both);
    let replay = |model: &str, out: &str| {
        let args = [
            "replay", "--model", model, "--data", "d.csv", "--gate", "3", "--out", out, "--json",
        ];
        let json: Value = serde_json::from_str(&ok(&sgp(&dir, &args), "replay")).expect("JSON");
        json
    };
    let alone = replay("u.sgp", "u2.sgp");
    let together = replay("c.sgp", "c2.sgp");
    let outputs = together["outputs"].as_array().expect("outputs");
    assert_eq!(outputs.len(), 2, "{together}");
    for output in outputs {
        assert_eq!(output, &alone["outputs"][0], "{together}");
    }
    assert_eq!(together["refused"], alone["refused"]);
    let after = dir.read("c2.sgp");
    let members = sgp_trainer::export::artefact::members(&after).expect("a container");
    assert_eq!(members, [dir.read("u2.sgp"), dir.read("u2.sgp")]);
    assert_ne!(members[0], one.as_slice(), "the replay learned");
    // A corrupt container is refused before any row.
    let mut bad = both.clone();
    bad[20] ^= 1;
    dir.write("bad.sgp", &bad);
    let out = sgp(&dir, &["replay", "--model", "bad.sgp", "--data", "d.csv"]);
    assert_bad_input(&out, &["bad.sgp", "CRC"]);
}

/// Issue 49 item 10, as a user meets it: an updatable fit of 60 rows at
/// M = 5 with the default restarts passes its own export check (the
/// whitened form of format version 7 was 3.5 off in variance) and writes
/// a version-9 blob that replays its data.
#[test]
fn a_small_updatable_fit_passes_its_own_check() {
    let dir = TempDir::new("updatable_small");
    synth(&dir, "d.csv", 60, 1);
    let fit: Vec<&str> = "fit --data d.csv --m 5 --updatable --out m.sgp"
        .split(' ')
        .collect();
    let summary = ok(&sgp(&dir, &fit), "updatable fit");
    assert!(summary.contains("variance form   covariance"), "{summary}");
    let blob = fs::read(dir.0.join("m.sgp")).expect("blob");
    assert_eq!(u16::from_le_bytes([blob[4], blob[5]]), 9);
    ok(
        &sgp(&dir, &["replay", "--model", "m.sgp", "--data", "d.csv"]),
        "replay",
    );
}
