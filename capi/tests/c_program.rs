//! The C library from C. The trainer fits small models, `sgp export
//! --format c`'s code writes them as headers, the trainer's f64 predictions
//! become golden values, and the system C compiler (`cc`) builds
//! `c/test_capi.c` and the example `c/example.c` (README and user guide) against the
//! generated `sgp.h` and the host `libsgp_capi.a` with `-Wall -Wextra
//! -Werror -pedantic`; then both run.
//!
//! Linux only: the link line names glibc's system libraries, which the Rust
//! standard library inside a hosted `libsgp_capi.a` needs.
#![cfg(target_os = "linux")]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use nalgebra::DMatrix;
use sgp_runtime::Link;
use sgp_trainer::data::Dataset;
use sgp_trainer::export::artefact::container;
use sgp_trainer::export::codegen::{export_source, Format};
use sgp_trainer::export::{check, export, golden_points, mean_tolerance, Fidelity};
use sgp_trainer::fit::ivm::IvmParams;
use sgp_trainer::fit::{fit, ExactParams, Fit, FitParams, ProjectedParams, SparseParams};
use sgp_trainer::model::likelihood::probit;
use sgp_trainer::model::multiclass::class_probabilities;
use sgp_trainer::model::{ModelSet, TrainedModel};
use sgp_trainer::numerics::optimise::OptimiseOptions;
use sgp_trainer::synth::{classification_dataset, ridge, ClassShape};

/// The capacities this build of the library has (`CAPACITY_M`, ...), from
/// the file its build script wrote.
mod capacity {
    #![allow(dead_code)]
    include!(concat!(env!("OUT_DIR"), "/capacity.rs"));
}

/// What `rustc --print native-static-libs` lists for a staticlib on
/// x86_64 Linux: the system libraries std needs.
const SYSTEM_LIBS: [&str; 7] = [
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];

/// Where the generated headers are: written once, shared by the tests.
fn headers() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c_program");
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("create the header directory");
        write_headers(&dir);
        dir
    })
    .as_path()
}

fn quick(max_iter: u64) -> OptimiseOptions {
    OptimiseOptions {
        max_iter,
        ..OptimiseOptions::default()
    }
}

fn sparse(m: usize) -> SparseParams {
    SparseParams {
        m,
        optimiser: quick(20),
        ..SparseParams::default()
    }
}

fn fitted(data: &Dataset, params: &FitParams) -> Fit {
    fit(data, params, &mut |_| {}).expect("fit")
}

/// The model's blob as `sgp fit` writes it: fidelity-checked (and cured if
/// need be) at the training rows.
fn exported(data: &Dataset, params: &FitParams) -> (TrainedModel, Vec<u8>) {
    let mut fitted = fitted(data, params);
    let exported = export(&mut fitted, &data.raw_x(), false).expect("export");
    (fitted.set.members.remove(0), exported.blob)
}

/// The blob of a set assembled by hand, which must pass its f32 check.
fn checked_blob(set: &ModelSet, x: &DMatrix<f64>) -> Vec<u8> {
    let exported = check(set, x).expect("a blob");
    assert!(
        exported.fidelity.passes(),
        "{}",
        exported.fidelity.describe()
    );
    exported.blob
}

/// A blob only meant to be refused: no fidelity check needed.
fn blob(data: &Dataset, params: &FitParams) -> Vec<u8> {
    let model = fitted(data, params).set.members.remove(0);
    model
        .to_spec()
        .and_then(|s| Ok(s.to_bytes()?))
        .expect("blob")
}

fn write_export(dir: &Path, name: &str, blob: &[u8]) {
    let header = export_source(blob, Format::C, name, &format!("{name}.sgp")).expect("export");
    fs::write(dir.join(format!("{name}.h")), header).expect("write header");
}

/// Rows of `x` as C float initialisers; the rows are rounded to f32 first
/// by the caller, so C sees exactly the points the trainer predicted at.
fn c_rows(x: &DMatrix<f64>) -> String {
    let rows: Vec<String> = x
        .row_iter()
        .map(|r| {
            let cells: Vec<String> = r.iter().map(|v| format!("{v:e}f")).collect();
            format!("    {{{}}},", cells.join(", "))
        })
        .collect();
    rows.join("\n")
}

fn c_numbers(values: impl Iterator<Item = f64>) -> String {
    values
        .map(|v| format!("{v:e}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn to_f32(x: &DMatrix<f64>) -> DMatrix<f64> {
    x.map(|v| f64::from(v as f32))
}

fn write_headers(dir: &Path) {
    let (m, g, d) = (
        capacity::CAPACITY_M,
        capacity::CAPACITY_G,
        capacity::CAPACITY_D,
    );

    let heater_data = ridge(300, 4, 1).to_dataset().expect("ridge data");
    let (heater, heater_blob) = exported(&heater_data, &FitParams::Spgp(sparse(16)));
    write_export(dir, "heater", &heater_blob);
    // The same data with the Matérn 3/2 kernel (format version 8).
    let matern_params = FitParams::Spgp(SparseParams {
        kernel: sgp_runtime::Kernel::Matern32,
        ..sparse(16)
    });
    let (matern, matern_blob) = exported(&heater_data, &matern_params);
    write_export(dir, "heater_matern32", &matern_blob);

    let class_data = classification_dataset(ClassShape::Moons, 200, 2)
        .and_then(|d| d.into_binary(None))
        .expect("moons");
    let ivm = FitParams::Ivm(IvmParams {
        m: 20,
        optimiser: quick(20),
        ..IvmParams::default()
    });
    let (classifier, classifier_blob) = exported(&class_data, &ivm);
    write_export(dir, "classifier", &classifier_blob);

    // Containers, one model per output, as `sgp fit --out` writes them
    // when the outputs separate: the heater's two fits; members taking
    // other inputs; one member more than SGP_CAPACITY_P.
    let pair = container(&[&heater_blob, &matern_blob]).expect("container");
    write_export(dir, "pair", &pair);
    // The guide's example of an artefact (c/example_artefact.c).
    write_export(dir, "arm", &pair);
    let mismatched = container(&[&heater_blob, &classifier_blob]).expect("container");
    write_export(dir, "mismatched_pair", &mismatched);
    let heaters = vec![heater_blob.as_slice(); capacity::CAPACITY_P + 1];
    write_export(
        dir,
        "too_many_members",
        &container(&heaters).expect("container"),
    );

    // Just over each capacity: an exact GP on M + 1 rows, G + 1 unprojected
    // inputs, D + 1 inputs projected to one feature.
    let rows = ridge(m + 1, 1, 3).to_dataset().expect("data");
    let exact = FitParams::Exact(ExactParams {
        optimiser: quick(5),
        ..ExactParams::default()
    });
    write_export(dir, "too_many_basis", &blob(&rows, &exact));
    let wide = ridge(60, g + 1, 4).to_dataset().expect("data");
    write_export(dir, "too_wide", &blob(&wide, &FitParams::Spgp(sparse(4))));
    let inputs = ridge(60, d + 1, 5).to_dataset().expect("data");
    let projected = FitParams::SpgpPca(ProjectedParams {
        sparse: sparse(4),
        dim: 1,
    });
    write_export(dir, "too_many_inputs", &blob(&inputs, &projected));

    fs::write(
        dir.join("golden.h"),
        golden_header(&heater, &heater_data, &classifier, &class_data)
            + &regression_golden("matern", &matern, &heater_data),
    )
    .expect("write golden.h");

    // Several outputs on the heater's basis: a second target on another
    // scale with its own weights, and three class latents.
    let x = heater_data.raw_x();
    let mut second = heater.clone();
    second.form.beta *= -0.5;
    second.transform.y_mean += 3.0;
    second.transform.y_scale *= 2.0;
    second.target_name = "power".into();
    let outputs = ModelSet {
        members: vec![heater.clone(), second],
        class_labels: vec![],
    };
    let blob = checked_blob(&outputs, &x);
    write_export(dir, "two_outputs", &blob);
    let classes = ModelSet {
        members: [0.0, 0.5, -0.5]
            .iter()
            .zip([1.0, -1.0, 0.3])
            .map(|(&bias, sign)| {
                let mut latent = heater.clone();
                latent.link = Link::Softmax;
                latent.bias = bias;
                latent.form.beta *= sign;
                latent
            })
            .collect(),
        class_labels: vec!["cold".into(), "warm".into(), "hot".into()],
    };
    let blob = checked_blob(&classes, &x);
    write_export(dir, "three_classes", &blob);
    fs::write(
        dir.join("golden_outputs.h"),
        golden_outputs_header(&outputs, &classes, &heater_data),
    )
    .expect("write golden_outputs.h");
}

/// The f64 trainer's predictions of every output of `outputs` and the class
/// probabilities of `classes`, at 6 training rows and 2 far points.
fn golden_outputs_header(outputs: &ModelSet, classes: &ModelSet, data: &Dataset) -> String {
    let x = to_f32(&golden_points(&outputs.members[0], &data.raw_x(), 6, 2));
    let predictions: Vec<_> = outputs
        .members
        .iter()
        .map(|m| (m, m.predict_raw(&x).expect("f64 prediction")))
        .collect();
    let (mut means, mut tolerances, mut variances) = (vec![], vec![], vec![]);
    for i in 0..x.nrows() {
        for (member, p) in &predictions {
            means.push(p.mean[i]);
            tolerances.push(mean_tolerance(p.var[i].sqrt(), member.transform.y_scale));
            variances.push(p.var[i]);
        }
    }
    let latents: Vec<_> = classes
        .members
        .iter()
        .map(|m| m.predict_raw(&x).expect("f64 prediction"))
        .collect();
    let probabilities = (0..x.nrows()).flat_map(|i| {
        let at: Vec<(f64, f64)> = latents.iter().map(|l| (l.mean[i], l.var[i])).collect();
        class_probabilities(Link::Softmax, &at)
    });
    format!(
        "/* The f64 trainer's predictions of several outputs, written by\n\
         \x20* capi/tests/c_program.rs: point by point, each point's outputs or classes. */\n\
         #define OUTPUTS_N {}\n\
         static const float outputs_x[OUTPUTS_N][TWO_OUTPUTS_INPUT_DIM] = {{\n{}\n}};\n\
         static const double outputs_mean[OUTPUTS_N * 2] = {{{}}};\n\
         static const double outputs_mean_tolerance[OUTPUTS_N * 2] = {{{}}};\n\
         static const double outputs_variance[OUTPUTS_N * 2] = {{{}}};\n\
         static const double classes_probability[OUTPUTS_N * 3] = {{{}}};\n",
        x.nrows(),
        c_rows(&x),
        c_numbers(means.into_iter()),
        c_numbers(tolerances.into_iter()),
        c_numbers(variances.into_iter()),
        c_numbers(probabilities),
    )
}

/// The f64 trainer's predictions: the regression model at 12 training rows
/// and 4 far points, with each point's mean tolerance; the classifier's
/// probability at 12 training rows and 4 far points.
/// Golden values of a regression model on the heater's inputs, as
/// `{prefix}_x`, `{prefix}_mean`, `{prefix}_mean_tolerance` and
/// `{prefix}_variance` (`{PREFIX}_N` points).
fn regression_golden(prefix: &str, model: &TrainedModel, data: &Dataset) -> String {
    let x = to_f32(&golden_points(model, &data.raw_x(), 12, 4));
    let p = model.predict_raw(&x).expect("f64 prediction");
    let y_scale = model.transform.y_scale;
    let tolerances = p.var.iter().map(|v| mean_tolerance(v.sqrt(), y_scale));
    let n = prefix.to_uppercase();
    format!(
        "\n#define {n}_N {}\n\
         static const float {prefix}_x[{n}_N][HEATER_INPUT_DIM] = {{\n{}\n}};\n\
         static const double {prefix}_mean[{n}_N] = {{{}}};\n\
         static const double {prefix}_mean_tolerance[{n}_N] = {{{}}};\n\
         static const double {prefix}_variance[{n}_N] = {{{}}};\n",
        x.nrows(),
        c_rows(&x),
        c_numbers(p.mean.iter().copied()),
        c_numbers(tolerances),
        c_numbers(p.var.iter().copied()),
    )
}

fn golden_header(
    heater: &TrainedModel,
    heater_data: &Dataset,
    classifier: &TrainedModel,
    class_data: &Dataset,
) -> String {
    let x = to_f32(&golden_points(heater, &heater_data.raw_x(), 12, 4));
    let p = heater.predict_raw(&x).expect("f64 prediction");
    let y_scale = heater.transform.y_scale;
    let tolerances = p.var.iter().map(|v| mean_tolerance(v.sqrt(), y_scale));
    let cx = to_f32(&golden_points(classifier, &class_data.raw_x(), 12, 4));
    let cp = classifier.predict_raw(&cx).expect("f64 prediction");
    let probabilities = cp
        .mean
        .iter()
        .zip(cp.var.iter())
        .map(|(m, v)| probit(*m, *v));
    const VARIANCE_TOLERANCE: f64 = Fidelity::VARIANCE;
    const PROBABILITY_TOLERANCE: f64 = Fidelity::PROBABILITY;
    format!(
        "/* The f64 trainer's predictions, written by capi/tests/c_program.rs. */\n\
         #define GOLDEN_N {}\n\
         #define GOLDEN_VARIANCE_TOLERANCE {VARIANCE_TOLERANCE:e}\n\
         static const float golden_x[GOLDEN_N][HEATER_INPUT_DIM] = {{\n{}\n}};\n\
         static const double golden_mean[GOLDEN_N] = {{{}}};\n\
         static const double golden_mean_tolerance[GOLDEN_N] = {{{}}};\n\
         static const double golden_variance[GOLDEN_N] = {{{}}};\n\n\
         #define CLASS_N {}\n\
         #define GOLDEN_PROBABILITY_TOLERANCE {PROBABILITY_TOLERANCE:e}\n\
         static const float class_x[CLASS_N][CLASSIFIER_INPUT_DIM] = {{\n{}\n}};\n\
         static const double class_probability[CLASS_N] = {{{}}};\n",
        x.nrows(),
        c_rows(&x),
        c_numbers(p.mean.iter().copied()),
        c_numbers(tolerances),
        c_numbers(p.var.iter().copied()),
        cx.nrows(),
        c_rows(&cx),
        c_numbers(probabilities),
    )
}

/// The host `libsgp_capi.a` cargo built for this test: beside the test
/// executable in `deps/`, the newest if builds with other feature sets left
/// more (they hold the same code; a capacity mismatch with `sgp.h` would
/// show as `SGP_STATUS_STORAGE_TOO_SMALL`, not as corruption).
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let deps = exe.parent().expect("deps directory");
    fs::read_dir(deps)
        .expect("read deps")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            name.is_some_and(|n| n.starts_with("libsgp_capi-") && n.ends_with(".a"))
        })
        .max_by_key(|p| fs::metadata(p).and_then(|m| m.modified()).ok())
        .expect("libsgp_capi-*.a beside the test executable (crate-type staticlib)")
}

/// Compiles `source` (relative to the crate) into an executable.
fn compile(source: &str, exe_name: &str) -> PathBuf {
    let dir = headers();
    let exe = dir.join(exe_name);
    let out = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg("-I")
        .arg(env!("OUT_DIR"))
        .arg("-I")
        .arg(dir)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(source))
        .arg(library())
        .args(SYSTEM_LIBS)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run cc (the system C compiler)");
    assert!(
        out.status.success(),
        "cc {source} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

fn run(exe: &Path, args: &[&str]) -> (Output, String) {
    let out = Command::new(exe).args(args).output().expect("run");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, text)
}

#[test]
fn c_program_matches_the_trainer_and_gets_every_status_code() {
    let exe = compile("c/test_capi.c", "test_capi");
    let (out, text) = run(&exe, &[]);
    println!("{text}");
    assert_eq!(out.status.code(), Some(0), "test_capi failed:\n{text}");
    assert!(text.contains("checks passed"), "{text}");

    // Moved by twice their tolerance, every golden value must fail:
    // 16 means and 16 variances, 16 probabilities; the Matérn model's 16
    // means and 16 variances; 8 points of two outputs' means and
    // variances, and of three class probabilities.
    let (out, text) = run(&exe, &["--perturb"]);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let failed = text.lines().filter(|l| l.starts_with("FAILED")).count();
    assert_eq!(failed, 48 + 32 + 32 + 24, "{text}");
}

#[test]
fn the_example_builds_runs_and_is_the_one_in_the_readme_and_the_guide() {
    let exe = compile("c/example.c", "example");
    let (out, text) = run(&exe, &[]);
    assert_eq!(out.status.code(), Some(0), "example failed:\n{text}");
    assert!(
        text.starts_with("mean ") && text.contains(", variance "),
        "{text}"
    );

    let example = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("c/example.c"))
        .expect("read example.c");
    for page in ["../README.md", "../docs/src/c-library.md"] {
        let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(page))
            .unwrap_or_else(|e| panic!("read {page}: {e}"));
        assert!(
            text.contains(&format!("```c\n{example}```\n")),
            "{page} must show capi/c/example.c verbatim in a ```c block"
        );
    }
}

#[test]
fn the_artefact_example_builds_runs_and_is_the_one_in_the_guide() {
    let exe = compile("c/example_artefact.c", "example_artefact");
    let (out, text) = run(&exe, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "example_artefact failed:\n{text}"
    );
    // The container of two models: a line per output.
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.lines().all(|l| l.contains(": mean ")), "{text}");
    let example =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("c/example_artefact.c"))
            .expect("read example_artefact.c");
    let page = "../docs/src/c-library.md";
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(page))
        .unwrap_or_else(|e| panic!("read {page}: {e}"));
    assert!(
        text.contains(&format!("```c\n{example}```\n")),
        "{page} must show capi/c/example_artefact.c verbatim in a ```c block"
    );
}
