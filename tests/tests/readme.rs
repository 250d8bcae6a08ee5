//! The README's firmware snippet is the code of a firmware binary that
//! `firmware-example/run.sh` builds and runs under QEMU; this test keeps the
//! two the same text, so the snippet can never stop compiling unnoticed.

use std::path::Path;

fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines strictly between the line `start` and the next line `end`.
fn between<'a>(text: &'a str, start: &str, end: &str) -> Vec<&'a str> {
    let mut lines = text.lines().skip_while(|l| l.trim() != start);
    assert!(lines.next().is_some(), "no line '{start}'");
    let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != end).collect();
    assert!(!block.is_empty(), "nothing between '{start}' and '{end}'");
    block
}

#[test]
fn the_five_step_snippet_is_the_five_steps_binary() {
    let program = read("firmware-example/src/bin/five_steps.rs");
    let code = between(&program, "// five-steps: begin", "// five-steps: end");
    let readme = read("README.md");
    let marked = between(
        &readme,
        "<!-- five-steps: firmware-example/src/bin/five_steps.rs -->",
        "<!-- five-steps: end -->",
    );
    // The marked part of the README is one fenced Rust block.
    assert_eq!(marked.first().copied(), Some("```rust"), "{marked:?}");
    assert_eq!(marked.last().copied(), Some("```"), "{marked:?}");
    let snippet = &marked[1..marked.len() - 1];
    assert_eq!(
        snippet.join("\n"),
        code.join("\n"),
        "README.md's five-step snippet differs from firmware-example/src/bin/five_steps.rs"
    );
}
