//! What `sgp export --format rust` writes compiles (under `clippy -D
//! warnings` too, as CI runs it), loads into its own `Model` type and names
//! the inputs in order; the checked-in sample is what the exporter writes
//! today.

use sgp_runtime::ModelSpec;
use sgp_trainer::export::codegen::{export_source, Format, BLOB_ALIGN};

include!("data/doc_model.rs");

const BLOB_FILE: &[u8] = include_bytes!("../../runtime/tests/data/doc-model.sgp");

#[test]
fn exported_rust_loads_into_its_model_type_and_names_the_inputs() {
    assert_eq!(doc_model::BLOB, BLOB_FILE);
    assert_eq!(doc_model::BLOB.as_ptr() as usize % BLOB_ALIGN, 0);
    let model = doc_model::Model::from_bytes(doc_model::BLOB).unwrap();
    let spec = ModelSpec::from_bytes(BLOB_FILE).unwrap();
    assert_eq!(doc_model::INPUTS.to_vec(), spec.input_names);
    assert_eq!(model.input_dim(), doc_model::INPUTS.len());
    assert_eq!(usize::from(model.shape().n_basis), 3);
    assert!(model.predict(&[0.5, -1.0]).unwrap().variance > 0.0);
    assert_eq!(doc_model::X_MIN.to_vec(), spec.x_min);
    assert_eq!(doc_model::X_MAX.to_vec(), spec.x_max);
    let corner = doc_model::X_MAX;
    assert_eq!(model.in_training_range(&corner), Ok(true));
    let past = [corner[0] + 1.0, corner[1]];
    assert_eq!(model.in_training_range(&past), Ok(false));
}

#[test]
fn the_checked_in_sample_is_what_sgp_export_writes_now() {
    let now = export_source(
        BLOB_FILE,
        Format::Rust,
        "doc_model",
        "runtime/tests/data/doc-model.sgp",
    )
    .unwrap();
    assert!(
        now == include_str!("data/doc_model.rs"),
        "tests/tests/data/doc_model.rs is stale; from the repository root run\n  cargo run \
         --release -p sgp-cli -- export --model \
         runtime/tests/data/doc-model.sgp --format rust --name doc_model --out \
         tests/tests/data/doc_model.rs"
    );
}
