//! The `sgp` binary under hostile but realistic conditions: a full disk on
//! standard output or error, a reader that closes the pipe, an interruption
//! (SIGINT, SIGTERM) at any moment of a write, and the Parquet files pandas,
//! pyarrow, polars and Spark write.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, DictionaryArray, Float64Array, RecordBatch, StringArray};
use parquet::arrow::ArrowWriter;
use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::WriterProperties;

/// A fresh directory per test, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(test: &str) -> Self {
        let path = std::env::temp_dir().join(format!("sgp-robust-{test}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).expect("create temp dir");
        Dir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_sgp"));
        c.args(args).current_dir(&self.0);
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("spawn sgp")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    /// The names of the files left in the directory.
    fn files(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&self.0)
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A training set, a fitted blob and one that learns on the device.
fn fitted(dir: &Dir) {
    let csv = dir.ok(&["synth", "--rows", "200", "--dim", "1"]);
    fs::write(dir.path().join("t.csv"), csv).expect("write");
    let fit = ["fit", "--data", "t.csv", "--m", "6", "-q"];
    dir.ok(&[&fit[..], &["--out", "m.sgp"]].concat());
    dir.ok(&[&fit[..], &["--out", "u.sgp", "--updatable"]].concat());
}

/// Every subcommand, and clap's own output (help, version).
const EVERY: &[&[&str]] = &[
    &["fit", "--data", "t.csv", "--m", "5", "--out", "f.sgp"],
    &[
        "fit", "--data", "t.csv", "--m", "5", "--out", "f.sgp", "--json",
    ],
    &["predict", "--model", "m.sgp", "--data", "t.csv"],
    &["eval", "--model", "m.sgp", "--data", "t.csv"],
    &["eval", "--model", "m.sgp", "--data", "t.csv", "--json"],
    &["inspect", "m.sgp"],
    &["inspect", "m.sgp", "--json"],
    &["export", "--model", "m.sgp", "--format", "c"],
    &["synth", "--rows", "20"],
    &[
        "sweep", "--data", "t.csv", "--test", "t.csv", "--m", "4", "--models", "spgp",
    ],
    &[
        "plot", "--model", "m.sgp", "--data", "t.csv", "--out", "p.svg",
    ],
    &[
        "replay", "--model", "u.sgp", "--data", "t.csv", "--window", "50",
    ],
    &["demo", "--out", "d.sgp", "--m", "8"],
    &["--help"],
    &["fit", "--help"],
    &["--version"],
];

/// `> /dev/full`, `2> /dev/full`: a command that prints on the stream exits
/// 1 (standard output: saying `sgp: error: <stdout>: ...` on standard
/// error), never panics; one that prints nothing there is unaffected.
#[cfg(target_os = "linux")]
#[test]
fn a_failed_write_is_an_error_in_every_subcommand() {
    let dir = Dir::new("full");
    fitted(&dir);
    let full = || {
        File::options()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full")
    };
    for args in EVERY {
        let normal = dir.run(args);
        assert_eq!(
            normal.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&normal.stderr)
        );
        let out = dir
            .command(args)
            .stdout(full())
            .output()
            .expect("spawn sgp");
        let err = text(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?} > /dev/full: {err}");
        if normal.stdout.is_empty() {
            assert_eq!(out.status.code(), Some(0), "{args:?} > /dev/full: {err}");
        } else {
            assert_eq!(out.status.code(), Some(1), "{args:?} > /dev/full: {err}");
            assert!(
                err.contains("sgp: error: <stdout>: No space left on device"),
                "{args:?} > /dev/full: {err}"
            );
        }
        let out = dir
            .command(args)
            .stderr(full())
            .output()
            .expect("spawn sgp");
        let expected = if normal.stderr.is_empty() { 0 } else { 1 };
        assert_eq!(out.status.code(), Some(expected), "{args:?} 2> /dev/full");
    }
    // A usage error keeps its exit code when it cannot be said.
    let out = dir
        .command(&["fit", "--m", "-1"])
        .stderr(full())
        .output()
        .expect("spawn sgp");
    assert_eq!(out.status.code(), Some(2));
}

/// A reader that closes the pipe early (`| head -1`) ends the command
/// quietly with exit 0, before or after a write.
#[cfg(unix)]
#[test]
fn a_closed_pipe_stays_quiet() {
    let dir = Dir::new("pipe");
    fitted(&dir);
    let big = dir.ok(&["synth", "--rows", "20000", "--dim", "1"]);
    fs::write(dir.path().join("big.csv"), big).expect("write");
    for args in [
        &["predict", "--model", "m.sgp", "--data", "big.csv"][..],
        &["inspect", "m.sgp"],
        &["--help"],
        &["synth", "--rows", "100000"],
    ] {
        let mut child = dir
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sgp");
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("wait");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(out.stderr.is_empty(), "{args:?}: {}", text(&out.stderr));
    }
}

/// Sends `signal` to `child` after `delay`, and waits for it.
#[cfg(unix)]
fn interrupt(mut child: std::process::Child, delay: Duration, signal: libc::c_int) {
    std::thread::sleep(delay);
    let pid = libc::pid_t::try_from(child.id()).expect("pid");
    // SAFETY: a signal to the child this test started and has not reaped.
    unsafe { libc::kill(pid, signal) };
    child.wait().expect("wait");
}

/// SIGINT and SIGTERM at many moments of a fit and of `synth --parquet`
/// (from start to past the end, spread over the run's own duration) leave
/// the old file or a whole new one, and no temporary file.
#[cfg(unix)]
#[test]
fn an_interruption_leaves_no_temporary_file() {
    let dir = Dir::new("interrupt");
    fitted(&dir);
    let runs: [&[&str]; 2] = [
        &["fit", "--data", "t.csv", "--m", "6", "-q", "--out", "m.sgp"],
        &["synth", "--rows", "300000", "--parquet", "s.parquet"],
    ];
    let before = dir.files();
    for args in runs {
        let started = Instant::now();
        dir.ok(args);
        let took = started.elapsed();
        let out = args.last().expect("an output");
        let whole = fs::read(dir.path().join(out)).expect("written");
        let points = 10u32;
        for i in 0..points {
            for signal in [libc::SIGINT, libc::SIGTERM] {
                let child = dir
                    .command(args)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("spawn sgp");
                interrupt(child, took * (i + 1) / points * 6 / 5, signal);
                let left: Vec<String> = dir
                    .files()
                    .into_iter()
                    .filter(|f| !before.contains(f) && f != out)
                    .collect();
                assert!(
                    left.is_empty(),
                    "{args:?}, signal {signal} at {i}: left {left:?}"
                );
                let now = fs::read(dir.path().join(out)).expect("still there");
                // The same seed writes the same bytes: old or new, it is whole.
                assert!(now == whole, "{args:?}: {out} changed by an interruption");
            }
        }
    }
}

/// Writes `columns` to `name` as Parquet with `compression` and, if given,
/// pandas' metadata.
fn write_parquet(
    dir: &Dir,
    name: &str,
    columns: Vec<(&str, ArrayRef)>,
    compression: Compression,
    pandas: Option<&str>,
) {
    let batch = RecordBatch::try_from_iter(columns).expect("batch");
    let mut schema = batch.schema().as_ref().clone();
    if let Some(pandas) = pandas {
        schema
            .metadata
            .insert("pandas".to_owned(), pandas.to_owned());
    }
    // pyarrow writes pandas' metadata in the footer's key-value metadata.
    let footer = pandas.map(|p| {
        vec![parquet::file::metadata::KeyValue::new(
            "pandas".to_owned(),
            p.to_owned(),
        )]
    });
    let props = WriterProperties::builder()
        .set_compression(compression)
        .set_key_value_metadata(footer)
        .build();
    let file = File::create(dir.path().join(name)).expect("create");
    let mut writer = ArrowWriter::try_new(file, Arc::new(schema), Some(props)).expect("writer");
    writer.write(&batch).expect("write");
    writer.close().expect("close");
}

fn column(n: usize, f: impl Fn(f64) -> f64) -> ArrayRef {
    Arc::new(Float64Array::from_iter_values(
        (0..n).map(|i| f(i as f64 / n as f64)),
    ))
}

/// `sgp inspect --json` of `blob`: its input names and target name.
fn names(dir: &Dir, blob: &str) -> (Vec<String>, String) {
    let json: serde_json::Value =
        serde_json::from_str(&dir.ok(&["inspect", blob, "--json"])).expect("JSON");
    let inputs = json["inputs"]
        .as_array()
        .expect("inputs")
        .iter()
        .map(|v| v.as_str().expect("name").to_owned())
        .collect();
    (inputs, json["target"].as_str().expect("target").to_owned())
}

/// Every codec pandas, pyarrow, polars and Spark write is read.
#[test]
fn every_common_parquet_codec_is_read() {
    let dir = Dir::new("codecs");
    for (name, codec) in [
        ("gzip", Compression::GZIP(GzipLevel::default())),
        ("brotli", Compression::BROTLI(BrotliLevel::default())),
        ("zstd", Compression::ZSTD(ZstdLevel::default())),
        ("snappy", Compression::SNAPPY),
        ("lz4", Compression::LZ4_RAW),
        ("none", Compression::UNCOMPRESSED),
    ] {
        let file = format!("{name}.parquet");
        let x = column(80, |t| t * 6.0);
        let y = column(80, |t| libm::sin(t * 6.0));
        write_parquet(&dir, &file, vec![("x", x), ("y", y)], codec, None);
        dir.ok(&["fit", "--data", &file, "--m", "5", "-q", "--out", "m.sgp"]);
    }
}

/// pandas' named index (written as a column, listed in its metadata) is
/// not data: the target stays the last data column, and the summary names
/// it.
#[test]
fn a_pandas_index_is_not_the_target() {
    let dir = Dir::new("pandas");
    let pandas = r#"{"index_columns": ["x1"], "column_indexes": [], "columns": []}"#;
    let columns = vec![
        ("x2", column(80, |t| t * 3.0)),
        ("y", column(80, |t| libm::sin(t * 6.0))),
        ("x1", column(80, |t| t * 9.0)),
    ];
    write_parquet(
        &dir,
        "p.parquet",
        columns,
        Compression::SNAPPY,
        Some(pandas),
    );
    let summary = dir.ok(&["fit", "--data", "p.parquet", "--m", "5", "--out", "m.sgp"]);
    assert_eq!(
        names(&dir, "m.sgp"),
        (vec!["x2".to_owned()], "y".to_owned())
    );
    assert!(summary.contains("target"), "{summary}");
    assert!(summary.contains("'y'"), "{summary}");
    // Read whole alike.
    let summary = dir.ok(&[
        "fit",
        "--data",
        "p.parquet",
        "--m",
        "5",
        "--out",
        "m.sgp",
        "--in-memory",
    ]);
    assert!(summary.contains("'y'"), "{summary}");
}

/// A pandas `category` target (dictionary-encoded strings) is read as its
/// labels, as a plain string target is; a float16 column as numbers.
#[test]
fn dictionary_and_float16_columns_are_read() {
    let dir = Dir::new("dictionary");
    let n = 120;
    let x = column(n, |t| t * 6.0);
    let labels: Vec<&str> = (0..n)
        .map(|i| if i * 2 < n { "ok" } else { "fault" })
        .collect();
    let category: DictionaryArray<arrow_array::types::Int8Type> = labels.iter().copied().collect();
    write_parquet(
        &dir,
        "c.parquet",
        vec![("x", x.clone()), ("state", Arc::new(category))],
        Compression::SNAPPY,
        None,
    );
    write_parquet(
        &dir,
        "s.parquet",
        vec![("x", x), ("state", Arc::new(StringArray::from(labels)))],
        Compression::SNAPPY,
        None,
    );
    for file in ["c.parquet", "s.parquet"] {
        dir.ok(&["fit", "--data", file, "--m", "5", "-q", "--out", "k.sgp"]);
        let (_, target) = names(&dir, "k.sgp");
        assert_eq!(target, "state");
        dir.ok(&["eval", "--model", "k.sgp", "--data", file]);
    }
    let half: Vec<half::f16> = (0..n)
        .map(|i| half::f16::from_f64(i as f64 / 20.0))
        .collect();
    write_parquet(
        &dir,
        "h.parquet",
        vec![
            ("x", Arc::new(arrow_array::Float16Array::from(half))),
            ("y", column(n, |t| libm::sin(t * 6.0))),
        ],
        Compression::SNAPPY,
        None,
    );
    dir.ok(&[
        "fit",
        "--data",
        "h.parquet",
        "--m",
        "5",
        "-q",
        "--out",
        "h.sgp",
    ]);
}
