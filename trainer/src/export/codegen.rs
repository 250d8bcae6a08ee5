//! `sgp export`: a blob as source code, so that a model ships inside the
//! firmware image instead of being read from storage at run time.
//!
//! - [`Format::C`]: a header with the blob as an aligned
//!   `static const uint8_t NAME_blob[]` and `NAME_BLOB_LEN`, for `sgp.h`.
//! - [`Format::Rust`]: a file to `include!`, a module `NAME` with `BLOB`,
//!   `INPUTS` and `Model`, the `sgp_runtime::Model` type with exactly the
//!   blob's capacities.
//!
//! Output names (`NAME_output_names`, `OUTPUTS`) and class labels
//! (`NAME_class_labels`, `CLASSES`) follow when the blob has them. The
//! blob is aligned to `BLOB_ALIGN` bytes for CRC units, DMA and flash
//! programmed a double word at a time; the runtime itself needs none.

use std::fmt::Write;
use std::path::Path;

use sgp_runtime::{Link, ModelSpec, OutputSpec};

use super::artefact::{is_container, output_descriptions};

use crate::{Error, Result};

/// Alignment of the exported blob, in bytes.
#[cfg_attr(feature = "internals", visibility::make(pub))]
pub(crate) const BLOB_ALIGN: usize = 8;

/// Bytes per line of the generated array.
const BYTES_PER_LINE: usize = 16;

named_enum! {
    /// What `sgp export --format` writes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Format {
        /// A C header for the sgp C library (`sgp.h`).
        C = "c",
        /// A Rust file to `include!`, for `sgp-runtime`.
        Rust = "rust",
    }
}

/// `blob` as `format` source code whose identifiers derive from `name`
/// (see `check_name`); `source` names the blob file in the generated
/// comment.
///
/// # Errors
/// [`Error::BadInput`] for an unusable `name`; [`Error::Blob`] if `blob` is
/// not a valid model blob.
pub fn export_source(blob: &[u8], format: Format, name: &str, source: &str) -> Result<String> {
    check_name(name)?;
    let source = comment_safe(source);
    if is_container(blob) {
        let (view, what) = container_view(blob)?;
        return Ok(match format {
            Format::C => c_header(blob, &view, name, &source, Some(&what)),
            Format::Rust => rust_module(blob, &view, name, &source, Some(&what)),
        });
    }
    let spec = ModelSpec::from_bytes(blob)?;
    Ok(match format {
        Format::C => c_header(blob, &spec, name, &source, None),
        Format::Rust => rust_module(blob, &spec, name, &source, None),
    })
}

/// A container's members as one description for the generated names and
/// capacities: member 0's, the largest `M` and `G` of any member, and
/// every further member's name as an output (its numbers are not used);
/// and one line for people.
fn container_view(blob: &[u8]) -> Result<(ModelSpec, String)> {
    let specs = output_descriptions(blob)?;
    let (first, rest) = specs.split_first().ok_or(sgp_runtime::Error::Malformed)?;
    let mut view = first.clone();
    for spec in rest {
        view.shape.n_basis = view.shape.n_basis.max(spec.shape.n_basis);
        view.shape.feature_dim = view.shape.feature_dim.max(spec.shape.feature_dim);
        view.outputs.push(OutputSpec {
            name: spec.target_name.clone(),
            beta: Vec::new(),
            l1: Vec::new(),
            l2: Vec::new(),
            prior: spec.prior,
            noise: spec.noise,
            bias: spec.bias,
            y_mean: spec.y_mean,
            y_scale: spec.y_scale,
        });
    }
    let kinds: Vec<&str> = specs.iter().map(|s| s.shape.kind.name()).collect();
    let what = format!(
        "container of {} models, one per output ({}), M = {}, G = {}, D = {} at most",
        specs.len(),
        kinds.join(", "),
        view.shape.n_basis,
        view.shape.feature_dim,
        view.shape.input_dim
    );
    Ok((view, what))
}

/// Accepts a name that is a valid, lint-free identifier in both languages:
/// lowercase ASCII words of letters and digits joined by single
/// underscores, starting with a letter, and not a Rust keyword (it names a
/// Rust module and prefixes the C identifiers).
///
/// # Errors
/// [`Error::BadInput`] naming the rule broken.
pub(crate) fn check_name(name: &str) -> Result<()> {
    let words_ok = !name.is_empty()
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.split('_').all(|word| {
            !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        });
    if !words_ok {
        return Err(Error::BadInput(format!(
            "--name '{name}': expected lowercase letters and digits in words joined by single \
             underscores, starting with a letter (e.g. heater_model)"
        )));
    }
    if RUST_KEYWORDS.contains(&name) {
        return Err(Error::BadInput(format!(
            "--name '{name}' is a Rust keyword; pick another (e.g. {name}_model)"
        )));
    }
    Ok(())
}

/// The name `sgp export` uses without `--name`: the blob file's stem made
/// into an acceptable name (`Heater-v2.sgp` -> `heater_v2`).
pub fn default_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let words: Vec<&str> = stem
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|w| !w.is_empty())
        .collect();
    let name = words.join("_");
    if name.is_empty() {
        "model".into()
    } else if name.starts_with(|c: char| c.is_ascii_digit()) {
        format!("model_{name}")
    } else if RUST_KEYWORDS.contains(&name.as_str()) {
        format!("{name}_model")
    } else {
        name
    }
}

/// Strict and reserved keywords of Rust 2021 and 2024.
const RUST_KEYWORDS: [&str; 51] = [
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
    "pub", "ref", "return", "self", "static", "struct", "super", "trait", "true", "type", "unsafe",
    "use", "where", "while", "abstract", "become", "box", "do", "final", "macro", "override",
    "priv", "try", "typeof", "unsized", "virtual", "yield",
];

/// One line for people: kind, task and sizes.
fn describe(spec: &ModelSpec) -> String {
    let s = &spec.shape;
    let task = match s.link {
        Link::Identity => "regression",
        Link::Probit => "classifier",
        Link::OneVsRest | Link::Softmax => "multi-class classifier",
    };
    let outputs = match (s.link.is_multi_class(), spec.output_count()) {
        (true, k) => format!(" ({k} classes, {})", s.link.name()),
        (false, 1) => String::new(),
        (false, p) => format!(" with {p} outputs"),
    };
    format!(
        "{} {task} model{outputs}, M = {}, G = {}, D = {} (basis functions, features, inputs)",
        s.kind.name(),
        s.n_basis,
        s.feature_dim,
        s.input_dim
    )
}

/// Every output's name, in output order.
fn output_names(spec: &ModelSpec) -> Vec<&str> {
    std::iter::once(spec.target_name.as_str())
        .chain(spec.outputs.iter().map(|o| o.name.as_str()))
        .collect()
}

/// `text` as a C string literal: printable ASCII as it is, everything else
/// (quotes, backslashes, UTF-8 bytes) as octal escapes.
fn c_string(text: &str) -> String {
    let mut out = String::from("\"");
    for b in text.bytes() {
        if (b.is_ascii_graphic() || b == b' ') && b != b'"' && b != b'\\' && b != b'?' {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "\\{b:03o}");
        }
    }
    out.push('"');
    out
}

/// Text that cannot end a `/* */` comment or break a line comment.
fn comment_safe(text: &str) -> String {
    text.replace("*/", "* /")
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// The blob's per-input training minima and maxima as comma-separated
/// literals (each value the shortest that reads back as its f32, with
/// `suffix`), or `None` for blobs that record no range (format v1, v2).
fn training_range(spec: &ModelSpec, suffix: &str) -> Option<(String, String)> {
    if spec.x_min.is_empty() {
        return None;
    }
    let list = |values: &[f32]| -> String {
        values
            .iter()
            .map(|v| format!("{v:?}{suffix}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Some((list(&spec.x_min), list(&spec.x_max)))
}

/// The generated header's opening comment: what the model is, its inputs
/// and outputs, the capacities it needs and the call that loads it.
fn c_comment(spec: &ModelSpec, name: &str, source: &str, container: Option<&str>) -> String {
    let upper = name.to_ascii_uppercase();
    let s = &spec.shape;
    let inputs: Vec<String> = spec.input_names.iter().map(|n| comment_safe(n)).collect();
    let outputs: Vec<String> = output_names(spec).iter().map(|n| comment_safe(n)).collect();
    let p = outputs.len();
    let (what, load, predict, predict_all) = match container {
        Some(what) => (
            what.to_owned(),
            "sgp_artefact_load(&artefact, sizeof artefact",
            "sgp_artefact_predict_all",
            "sgp_artefact_predict_all",
        ),
        None => (
            describe(spec),
            "sgp_model_load(&model, sizeof model",
            "sgp_model_predict",
            "sgp_model_predict_all",
        ),
    };
    let outputs_are = if p == 1 {
        "target".to_owned()
    } else {
        format!("outputs, in the order {predict_all} returns them:")
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "/* Generated by `sgp export --format c` from {source}: do not edit, export again.\n\
         \x20*\n\
         \x20* {what}; {outputs_are} {}.\n\
         \x20* Inputs, in the order {predict} takes them: {}.\n\
         \x20*\n\
         \x20* For the sgp C library (sgp.h) built with SGP_CAPACITY_M >= {}, SGP_CAPACITY_G >= {},\n\
         \x20* SGP_CAPACITY_D >= {} and SGP_CAPACITY_P >= {p}:\n\
         \x20*     {load}, {name}_blob, {upper}_BLOB_LEN);\n\
         \x20* This header defines the arrays: include it in one .c file only. */",
        outputs.join(", "),
        inputs.join(", "),
        s.n_basis,
        s.feature_dim,
        s.input_dim,
    );
    out
}

/// `container`: the description of a container, which loads into an
/// `SgpArtefact` (a blob loads into an `SgpModel`).
fn c_header(
    blob: &[u8],
    spec: &ModelSpec,
    name: &str,
    source: &str,
    container: Option<&str>,
) -> String {
    let upper = name.to_ascii_uppercase();
    let s = &spec.shape;
    let p = output_names(spec).len();
    let predict_all = match container {
        Some(_) => "sgp_artefact_predict_all",
        None => "sgp_model_predict_all",
    };
    let mut out = c_comment(spec, name, source, container);
    let _ = writeln!(
        out,
        "#ifndef {upper}_SGP_BLOB_H\n#define {upper}_SGP_BLOB_H\n\n#include <stdint.h>\n"
    );
    let _ = writeln!(out, "#define {upper}_BLOB_LEN {}", blob.len());
    let _ = writeln!(out, "#define {upper}_N_BASIS {}", s.n_basis);
    let _ = writeln!(out, "#define {upper}_FEATURE_DIM {}", s.feature_dim);
    let _ = writeln!(out, "#define {upper}_INPUT_DIM {}\n", s.input_dim);
    if p > 1 {
        let names: Vec<String> = output_names(spec).iter().map(|n| c_string(n)).collect();
        let _ = writeln!(
            out,
            "/* The outputs, in the order {predict_all} returns them. */\n\
             #define {upper}_OUTPUTS {p}\n\
             static const char *const {name}_output_names[{upper}_OUTPUTS] = {{{}}};\n",
            names.join(", ")
        );
    }
    if !spec.class_labels.is_empty() {
        let labels: Vec<String> = spec.class_labels.iter().map(|n| c_string(n)).collect();
        let _ = writeln!(
            out,
            "/* The class labels, indexed by the class sgp_model_classify returns. */\n\
             #define {upper}_CLASSES {}\n\
             static const char *const {name}_class_labels[{upper}_CLASSES] = {{{}}};\n",
            labels.len(),
            labels.join(", ")
        );
    }
    if let Some((lows, highs)) = training_range(spec, "f") {
        let _ = writeln!(
            out,
            "/* Training-input range, per input in input order (raw units): outside it the\n\
             \x20* model extrapolates (sgp_model_in_training_range checks it on the device). */\n\
             static const float {name}_x_min[{upper}_INPUT_DIM] = {{{lows}}};\n\
             static const float {name}_x_max[{upper}_INPUT_DIM] = {{{highs}}};\n"
        );
    }
    let _ = writeln!(
        out,
        "/* Aligned for word-wise copies, CRC units and double-word flash programming;\n\
         \x20* the library itself reads bytes. */\n\
         #ifdef __cplusplus\n\
         alignas({BLOB_ALIGN})\n\
         #else\n\
         _Alignas({BLOB_ALIGN})\n\
         #endif\n\
         static const uint8_t {name}_blob[{upper}_BLOB_LEN] = {{"
    );
    for line in blob.chunks(BYTES_PER_LINE) {
        let bytes: Vec<String> = line.iter().map(|b| format!("0x{b:02x},")).collect();
        let _ = writeln!(out, "    {}", bytes.join(" "));
    }
    let _ = writeln!(out, "}};\n\n#endif /* {upper}_SGP_BLOB_H */");
    out
}

/// `container`: the description of a container, whose `Model` is an
/// `Artefact`.
fn rust_module(
    blob: &[u8],
    spec: &ModelSpec,
    name: &str,
    source: &str,
    container: Option<&str>,
) -> String {
    let s = &spec.shape;
    let (what, model) = match container {
        Some(what) => (what.to_owned(), "Artefact"),
        None => (describe(spec), "Model"),
    };
    let mut out = String::new();
    let _ =
        writeln!(
        out,
        "// Generated by `sgp export --format rust` from {source}: do not edit, export again.\n\n\
         /// {}; target `{}`.\n\
         ///\n\
         /// `Model::new()` in a `static`, then `load(BLOB)`; or `Model::from_bytes(BLOB)`.\n\
         pub mod {name} {{\n\
         \x20   /// `sgp_runtime::{model}` with exactly this model's capacities.\n\
         \x20   pub type Model = sgp_runtime::{model}<{}, {}, {}{}>;\n",
        what,
        output_names(spec).iter().map(|n| comment_safe(n)).collect::<Vec<_>>().join("`, `"),
        s.n_basis,
        s.feature_dim,
        s.input_dim,
        match (spec.output_count(), container) {
            (1, None) => String::new(),
            (p, _) => format!(", {p}"),
        },
    );
    if spec.output_count() > 1 {
        let names: Vec<String> = output_names(spec)
            .iter()
            .map(|n| format!("{n:?}"))
            .collect();
        let _ = writeln!(
            out,
            "    /// Output names, in the order `Model::predict_all` returns them.\n\
             \x20   pub const OUTPUTS: [&str; {}] = [{}];\n",
            names.len(),
            names.join(", ")
        );
    }
    if !spec.class_labels.is_empty() {
        let labels: Vec<String> = spec.class_labels.iter().map(|n| format!("{n:?}")).collect();
        let _ = writeln!(
            out,
            "    /// Class labels, indexed by the class `Model::classify` returns.\n\
             \x20   pub const CLASSES: [&str; {}] = [{}];\n",
            labels.len(),
            labels.join(", ")
        );
    }
    let names: Vec<String> = spec.input_names.iter().map(|n| format!("{n:?}")).collect();
    let _ = writeln!(
        out,
        "    /// Input names, in the order `Model::predict` takes the inputs.\n\
         \x20   pub const INPUTS: [&str; {}] = [{}];\n",
        names.len(),
        names.join(", ")
    );
    if let Some((lows, highs)) = training_range(spec, "") {
        let _ = writeln!(
            out,
            "    /// Training-input range per input, in input order (raw units): outside it\n\
             \x20   /// the model extrapolates (`Model::in_training_range` checks it).\n\
             \x20   pub const X_MIN: [f32; {d}] = [{lows}];\n\
             \x20   /// See [`X_MIN`].\n\
             \x20   pub const X_MAX: [f32; {d}] = [{highs}];\n",
            d = spec.input_names.len()
        );
    }
    let _ = writeln!(
        out,
        "    /// The blob ({} bytes), aligned to {BLOB_ALIGN} bytes for word-wise copies, CRC units\n\
         \x20   /// and double-word flash programming (the runtime itself reads bytes).\n\
         \x20   pub static BLOB: &[u8] = &ALIGNED.0;\n\n\
         \x20   #[repr(C, align({BLOB_ALIGN}))]\n\
         \x20   struct Aligned([u8; {}]);\n\n\
         \x20   static ALIGNED: Aligned = Aligned(*b\"\\",
        blob.len(),
        blob.len()
    );
    let lines: Vec<String> = blob
        .chunks(BYTES_PER_LINE)
        .map(|line| line.iter().map(|b| format!("\\x{b:02x}")).collect())
        .collect();
    let _ = writeln!(out, "        {}\");\n}}", lines.join("\\\n        "));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOB: &[u8] = include_bytes!("../../../runtime/tests/data/doc-model.sgp");

    #[test]
    fn names_must_be_lowercase_words_and_not_keywords() {
        for good in ["heater", "heater_v2", "m32", "a_1_b"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "", "Heater", "_x", "x_", "a__b", "2fast", "a-b", "héat", "x y",
        ] {
            let err = check_name(bad).unwrap_err().to_string();
            assert!(err.contains("lowercase"), "{bad}: {err}");
        }
        let err = check_name("type").unwrap_err().to_string();
        assert!(
            err.contains("Rust keyword") && err.contains("type_model"),
            "{err}"
        );
    }

    #[test]
    fn default_names_come_from_the_file_stem() {
        let name = |p: &str| default_name(Path::new(p));
        assert_eq!(name("dir/Heater-v2.sgp"), "heater_v2");
        assert_eq!(name("32.sgp"), "model_32");
        assert_eq!(name("type.sgp"), "type_model");
        assert_eq!(name("__.sgp"), "model");
        for p in [
            "dir/Heater-v2.sgp",
            "32.sgp",
            "type.sgp",
            "__.sgp",
            "ünï code.sgp",
        ] {
            assert!(check_name(&name(p)).is_ok(), "{p} -> {}", name(p));
        }
    }

    /// The bytes between the first `{` or `"\` after `start` and the end
    /// of the array, parsed back from the generated text.
    fn bytes_back(text: &str, start: &str, parse: impl Fn(&str) -> Vec<u8>) -> Vec<u8> {
        let from = text.find(start).expect("array start") + start.len();
        let to = from + text[from..].find(['}', '"']).expect("array end");
        parse(&text[from..to])
    }

    /// The bytes of the `doc_blob` array of a C header exported as `doc`.
    fn c_array_bytes(c: &str) -> Vec<u8> {
        bytes_back(c, "doc_blob[DOC_BLOB_LEN] = {", |s| {
            s.split(',')
                .map(str::trim)
                .filter(|b| !b.is_empty())
                .map(|b| u8::from_str_radix(b.trim_start_matches("0x"), 16).unwrap())
                .collect()
        })
    }

    #[test]
    fn c_header_holds_the_blob_its_length_and_the_sizes() {
        let c = export_source(BLOB, Format::C, "doc", "doc-model.sgp").unwrap();
        let back = c_array_bytes(&c);
        assert_eq!(back, BLOB);
        assert!(
            c.contains(&format!("#define DOC_BLOB_LEN {}\n", BLOB.len())),
            "{c}"
        );
        assert!(c.contains("#define DOC_N_BASIS 3\n"), "{c}");
        assert!(c.contains("_Alignas(8)"), "{c}");
        assert!(c.contains("from doc-model.sgp"), "{c}");
    }

    #[test]
    fn a_container_exports_for_the_c_librarys_artefact() {
        let container = crate::export::artefact::container(&[BLOB, BLOB]).unwrap();
        let c = export_source(&container, Format::C, "doc", "doc.sgp").unwrap();
        let back = c_array_bytes(&c);
        assert_eq!(back, container);
        assert!(
            c.contains("sgp_artefact_load(&artefact, sizeof artefact, doc_blob, DOC_BLOB_LEN);"),
            "{c}"
        );
        assert!(c.contains("container of 2 models, one per output"), "{c}");
        assert!(c.contains("SGP_CAPACITY_P >= 2"), "{c}");
        assert!(c.contains("#define DOC_OUTPUTS 2"), "{c}");
        assert!(
            c.contains("order sgp_artefact_predict_all returns them"),
            "{c}"
        );
        // A blob's header names the model calls, as before.
        let one = export_source(BLOB, Format::C, "doc", "doc.sgp").unwrap();
        assert!(
            one.contains("sgp_model_load(&model, sizeof model, doc_blob"),
            "{one}"
        );
        assert!(
            one.contains("in the order sgp_model_predict takes them"),
            "{one}"
        );
        let mut bad = container.clone();
        bad[20] ^= 1;
        assert!(matches!(
            export_source(&bad, Format::C, "doc", "x"),
            Err(Error::Blob(_))
        ));
    }

    #[test]
    fn rust_module_holds_the_blob_inputs_and_capacities() {
        let r = export_source(BLOB, Format::Rust, "doc", "doc-model.sgp").unwrap();
        let back = bytes_back(&r, "Aligned(*b\"", |s| {
            s.split("\\x")
                .map(|b| b.trim_end_matches(['\\', '\n', ' ']))
                .filter(|b| !b.is_empty())
                .map(|b| u8::from_str_radix(b, 16).unwrap())
                .collect()
        });
        assert_eq!(back, BLOB);
        assert!(r.contains("pub mod doc {"), "{r}");
        assert!(
            r.contains("pub type Model = sgp_runtime::Model<3, 2, 2>;"),
            "{r}"
        );
        assert!(r.contains("pub const INPUTS: [&str; 2] = ["), "{r}");
        assert!(r.contains("#[repr(C, align(8))]"), "{r}");
    }

    /// The doc model with a second output, as a two-class softmax model
    /// with labels.
    fn two_classes() -> Vec<u8> {
        let mut spec = ModelSpec::from_bytes(BLOB).unwrap();
        let mut second = spec.output(0).unwrap();
        second.name = "power".into();
        second.bias = 0.5;
        spec.outputs.push(second);
        spec.shape.link = Link::Softmax;
        spec.class_labels = vec!["cold".into(), "h\"ot\u{e9}".into()];
        spec.to_bytes().unwrap()
    }

    #[test]
    fn several_outputs_and_class_labels_are_named_in_order() {
        let blob = two_classes();
        let c = export_source(&blob, Format::C, "doc", "doc.sgp").unwrap();
        assert!(c.contains("#define DOC_OUTPUTS 2"), "{c}");
        assert!(
            c.contains("doc_output_names[DOC_OUTPUTS] = {\"torque\", \"power\"};"),
            "{c}"
        );
        // Quotes and UTF-8 as octal escapes: valid C whatever the label.
        assert!(
            c.contains("doc_class_labels[DOC_CLASSES] = {\"cold\", \"h\\042ot\\303\\251\"};"),
            "{c}"
        );
        assert!(c.contains("SGP_CAPACITY_P >= 2"), "{c}");
        assert!(c.contains("(2 classes, softmax)"), "{c}");
        let rust = export_source(&blob, Format::Rust, "doc", "doc.sgp").unwrap();
        assert!(rust.contains("sgp_runtime::Model<3, 2, 2, 2>;"), "{rust}");
        assert!(
            rust.contains("OUTPUTS: [&str; 2] = [\"torque\", \"power\"];"),
            "{rust}"
        );
        assert!(
            rust.contains("CLASSES: [&str; 2] = [\"cold\", \"h\\\"ot\u{e9}\"];"),
            "{rust}"
        );
        // A single output names neither.
        let one = export_source(BLOB, Format::Rust, "doc", "doc.sgp").unwrap();
        assert!(
            !one.contains("OUTPUTS") && !one.contains("CLASSES"),
            "{one}"
        );
        assert!(one.contains("sgp_runtime::Model<3, 2, 2>;"), "{one}");
    }

    #[test]
    fn names_and_paths_cannot_break_out_of_comments_or_strings() {
        let mut spec = ModelSpec::from_bytes(BLOB).unwrap();
        spec.input_names = vec!["a\"b\\c".into(), "end */ here\n".into()];
        let blob = spec.to_bytes().unwrap();
        let r = export_source(&blob, Format::Rust, "doc", "x */ y").unwrap();
        assert!(r.contains(r#"["a\"b\\c", "end */ here\n"]"#), "{r}");
        let c = export_source(&blob, Format::C, "doc", "x */ y").unwrap();
        assert_eq!(c.matches("*/").count(), c.matches("/*").count(), "{c}");
        assert!(
            c.contains("end * / here?") && c.contains("from x * / y"),
            "{c}"
        );
    }

    #[test]
    fn a_bad_blob_or_name_is_refused() {
        assert!(matches!(
            export_source(&BLOB[..BLOB.len() - 1], Format::C, "doc", "x"),
            Err(Error::Blob(_))
        ));
        assert!(matches!(
            export_source(BLOB, Format::Rust, "Doc", "x"),
            Err(Error::BadInput(_))
        ));
    }
}
