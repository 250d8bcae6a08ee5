//! The README and the user guide: the guide's firmware snippet
//! (docs/src/five-steps.md) is the code of a firmware binary that
//! `firmware-example/run.sh` builds and runs under QEMU, kept the same text
//! so the snippet can never stop compiling unnoticed; the README stays a
//! front door; every chapter is in the book's summary; no link is broken.

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
    let chapter = read("docs/src/five-steps.md");
    let marked = between(
        &chapter,
        "<!-- five-steps: firmware-example/src/bin/five_steps.rs -->",
        "<!-- five-steps: end -->",
    );
    // The marked part of the chapter is one fenced Rust block.
    assert_eq!(marked.first().copied(), Some("```rust"), "{marked:?}");
    assert_eq!(marked.last().copied(), Some("```"), "{marked:?}");
    let snippet = &marked[1..marked.len() - 1];
    assert_eq!(
        snippet.join("\n"),
        code.join("\n"),
        "docs/src/five-steps.md's five-step snippet differs from firmware-example/src/bin/five_steps.rs"
    );
}

/// The README is the front door: what it is, two commands, a tour, links.
/// Longer material belongs in the user guide.
#[test]
fn the_readme_is_at_most_400_lines() {
    let lines = read("README.md").lines().count();
    assert!(
        lines <= 400,
        "README.md has {lines} lines; move detail to docs/src/"
    );
}

fn guide_chapters() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src");
    let mut chapters: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .collect();
    chapters.sort();
    chapters
}

/// The relative link targets of a Markdown text (no web addresses, no
/// anchors within the page), without their `#anchor`.
fn relative_links(text: &str) -> Vec<&str> {
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &text[at + 2..];
            let target = &rest[..rest.find(')')?];
            let target = target.split('#').next()?;
            let web = target.contains("://") || target.starts_with("mailto:");
            (!web && !target.is_empty() && !target.contains(' ')).then_some(target)
        })
        .collect()
}

#[test]
fn every_guide_chapter_is_in_the_summary() {
    let summary = read("docs/src/SUMMARY.md");
    let linked = relative_links(&summary);
    for chapter in guide_chapters() {
        if chapter != "SUMMARY.md" {
            assert!(
                linked.contains(&chapter.as_str()),
                "docs/src/{chapter} is not linked from docs/src/SUMMARY.md"
            );
        }
    }
}

#[test]
fn relative_links_of_the_readme_and_the_guide_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut pages = vec![("README.md".to_string(), root.clone())];
    for chapter in guide_chapters() {
        pages.push((format!("docs/src/{chapter}"), root.join("docs/src")));
    }
    let mut broken = Vec::new();
    for (page, base) in &pages {
        for target in relative_links(&read(page)) {
            if !base.join(target).exists() {
                broken.push(format!("{page} -> {target}"));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_finder_sees_relative_links_only() {
    let text = "[a](x.md) [b](https://e.org/y) [c](#here) [d](docs/z.md#part) `f(x)`";
    assert_eq!(relative_links(text), ["x.md", "docs/z.md"]);
}
