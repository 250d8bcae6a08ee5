//! Fixes the model capacity of this build of the library and generates the
//! C header that describes it.
//!
//! The capacity (`Model<M, G, D, P>` in the runtime) is read from the
//! environment variables `SGP_CAPACITY_M`, `SGP_CAPACITY_G`,
//! `SGP_CAPACITY_D` and `SGP_CAPACITY_P` (defaults below). The header `sgp.h` is generated at
//! build time rather than checked in because it carries this build's
//! capacities and storage size, which also depend on the target's pointer
//! width: a checked-in header could describe one configuration only, and a
//! C program compiled against it would declare storage of the wrong size
//! for any other. It is written to OUT_DIR and copied beside
//! `libsgp_capi.a` (`target/<triple>/<profile>/sgp.h`).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

/// Capacities when the variables are unset: a Cortex-M4-sized model of up
/// to four outputs or classes (about 25 KB of RAM; 7 KB with
/// `SGP_CAPACITY_P=1`).
const DEFAULT_M: usize = 32;
const DEFAULT_G: usize = 8;
const DEFAULT_D: usize = 8;
const DEFAULT_P: usize = 4;

fn main() {
    let m = capacity("SGP_CAPACITY_M", DEFAULT_M);
    let g = capacity("SGP_CAPACITY_G", DEFAULT_G);
    let d = capacity("SGP_CAPACITY_D", DEFAULT_D);
    let p = capacity("SGP_CAPACITY_P", DEFAULT_P);
    let pointer_bytes: usize = env::var("CARGO_CFG_TARGET_POINTER_WIDTH")
        .ok()
        .and_then(|w| w.parse::<usize>().ok())
        .map(|bits| bits / 8)
        .expect("cargo sets CARGO_CFG_TARGET_POINTER_WIDTH");
    let words = storage_words(m, g, d, p, pointer_bytes);
    let uncertain_words = uncertain_storage_words(m, d, p, pointer_bytes);
    let artefact_words = artefact_storage_words(m, g, d, p, pointer_bytes);
    let bytes = words * 8;
    // The largest object the target can address is isize::MAX bytes there.
    let target_max = (1u128 << (8 * pointer_bytes - 1)) - 1;
    if bytes as u128 > target_max {
        panic!(
            "a model of capacity M = {m}, G = {g}, D = {d}, P = {p} needs {bytes} bytes, more \
             than this target can address; lower SGP_CAPACITY_M/G/D/P"
        );
    }

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::write(
        out.join("capacity.rs"),
        format!(
            "/// Basis functions `M` (`SGP_CAPACITY_M`).\n\
             pub const CAPACITY_M: usize = {m};\n\
             /// Feature dimension `G` (`SGP_CAPACITY_G`).\n\
             pub const CAPACITY_G: usize = {g};\n\
             /// Raw input dimension `D` (`SGP_CAPACITY_D`).\n\
             pub const CAPACITY_D: usize = {d};\n\
             /// Outputs (or classes) `P` (`SGP_CAPACITY_P`).\n\
             pub const CAPACITY_P: usize = {p};\n\
             /// 8-byte words of an `SgpModel`.\n\
             pub const SGP_MODEL_STORAGE_WORDS: usize = {words};\n\
             /// 8-byte words of an `SgpUncertain`.\n\
             pub const SGP_UNCERTAIN_STORAGE_WORDS: usize = {uncertain_words};\n\
             /// 8-byte words of an `SgpArtefact`.\n\
             pub const SGP_ARTEFACT_STORAGE_WORDS: usize = {artefact_words};\n"
        ),
    )
    .expect("write capacity.rs");

    let defines = format!(
        "/* This build of the library: models of at most SGP_CAPACITY_M basis functions in\n\
         \x20* SGP_CAPACITY_G feature dimensions with SGP_CAPACITY_D raw inputs and\n\
         \x20* SGP_CAPACITY_P outputs or classes (set by the environment variables of the\n\
         \x20* same names when the library was built). */\n\
         #define SGP_CAPACITY_M {m}\n\
         #define SGP_CAPACITY_G {g}\n\
         #define SGP_CAPACITY_D {d}\n\
         #define SGP_CAPACITY_P {p}\n\
         /* Size and alignment of an SgpModel, for storage placed by hand. */\n\
         #define SGP_MODEL_STORAGE_WORDS {words}\n\
         #define SGP_MODEL_STORAGE_SIZE {bytes}\n\
         #define SGP_MODEL_STORAGE_ALIGN 8\n\
         /* Size of an SgpUncertain (predictions at a Gaussian input). */\n\
         #define SGP_UNCERTAIN_STORAGE_WORDS {uncertain_words}\n\
         #define SGP_UNCERTAIN_STORAGE_SIZE {}\n\
         /* Size of an SgpArtefact: a blob of up to SGP_CAPACITY_P outputs or a container of\n\
         \x20* up to SGP_CAPACITY_P single-output blobs, whichever is larger. */\n\
         #define SGP_ARTEFACT_STORAGE_WORDS {artefact_words}\n\
         #define SGP_ARTEFACT_STORAGE_SIZE {}\n",
        uncertain_words * 8,
        artefact_words * 8
    );
    let mut config = cbindgen::Config::from_file("cbindgen.toml").expect("read cbindgen.toml");
    config.after_includes = Some(defines);
    let header = out.join("sgp.h");
    cbindgen::Builder::new()
        .with_config(config)
        .with_src("src/lib.rs")
        .generate()
        .expect("cbindgen: generate sgp.h")
        .write_to_file(&header);
    if let Some(beside_library) = profile_dir(&out) {
        copy_atomically(&header, &beside_library.join("sgp.h"));
    }

    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    for var in [
        "SGP_CAPACITY_M",
        "SGP_CAPACITY_G",
        "SGP_CAPACITY_D",
        "SGP_CAPACITY_P",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
}

/// A capacity from the environment, or `default`. Blob sizes are 16-bit,
/// so larger capacities could never be used.
fn capacity(var: &str, default: usize) -> usize {
    match env::var(var) {
        Err(env::VarError::NotPresent) => default,
        Ok(text) => match text.trim().parse::<usize>() {
            Ok(n) if (1..=usize::from(u16::MAX)).contains(&n) => n,
            _ => panic!("{var}={text:?}: expected a whole number from 1 to 65535"),
        },
        Err(e) => panic!("{var}: {e}"),
    }
}

/// 8-byte words of storage for a loaded flag and a `Model<M, G, D, P>`:
/// `ram_bytes_with_outputs` (the runtime's own formula, for 32-bit targets) plus a
/// flag word and, on 64-bit targets, room for the model's two `usize`
/// sizes and their padding. The crate asserts at compile time that this
/// holds the model and wastes at most 32 bytes.
fn storage_words(m: usize, g: usize, d: usize, p: usize, pointer_bytes: usize) -> usize {
    let wide_sizes = if pointer_bytes >= 8 { 24 } else { 0 };
    (sgp_runtime::ram_bytes_with_outputs(m, g, d, p) + 4 + wide_sizes).div_ceil(8)
}

/// 8-byte words of an `SgpArtefact`: a flag word beside an `Artefact<M,
/// G, D, P>` (`artefact_ram_bytes`, the runtime's formula for 32-bit
/// targets) and, on 64-bit targets, room for each model's wider sizes and
/// the member count. The crate asserts at compile time that this holds it.
fn artefact_storage_words(m: usize, g: usize, d: usize, p: usize, pointer_bytes: usize) -> usize {
    let wide_sizes = if pointer_bytes >= 8 { 24 * p + 16 } else { 0 };
    (sgp_runtime::artefact_ram_bytes(m, g, d, p) + 4 + wide_sizes).div_ceil(8)
}

/// 8-byte words of an `SgpUncertain`: a `u32` flag and two sizes beside
/// an `Uncertain<M, D, P>`, whose fields (its documented RAM) are summed
/// here; lib.rs asserts at compile time that this holds it with at most
/// 32 bytes to spare.
fn uncertain_storage_words(m: usize, d: usize, p: usize, pointer_bytes: usize) -> usize {
    let fields =
        20 * p * m * m + 4 * (2 * m * d + m + 2 * d + p * m + 5 * p) + 3 * pointer_bytes + 2;
    (8 + 2 * pointer_bytes + fields).div_ceil(8) + 1
}

/// `target/<triple>/<profile>` (where the library lands) from OUT_DIR
/// (`<that>/build/sgp-capi-<hash>/out`), if the layout is the usual one.
fn profile_dir(out: &Path) -> Option<PathBuf> {
    let build = out.parent()?.parent()?;
    if build.file_name()? != "build" {
        return None;
    }
    build.parent().map(Path::to_path_buf)
}

/// Builds of different profiles or hashes may run at once: a reader never
/// sees a half-written header.
fn copy_atomically(from: &Path, to: &Path) {
    let partial = to.with_extension(format!("h.{}", std::process::id()));
    fs::copy(from, &partial).expect("copy sgp.h beside the library");
    fs::rename(&partial, to).expect("move sgp.h beside the library");
}
