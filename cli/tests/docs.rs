//! The README and the guide cannot drift from the program: every shell
//! block of theirs runs here, page by page in a scratch directory with
//! `sgp` this build's binary, unless the line before its fence says why not;
//! and every output block a page shows is checked against what the
//! program prints, or says that its figures are illustrative.
//!
//! The markers, HTML comments on the line just before a fence (neither
//! GitHub nor mdBook shows them):
//!
//! - `<!-- not run: REASON -->`: a shell block left out (peers, hardware,
//!   hours of benchmark), with the reason;
//! - `<!-- run after: COMMANDS -->`: a shell block run after `COMMANDS`
//!   (the data a page takes for granted, made small);
//! - `<!-- output: checked -->`: the output of the page's shell block
//!   before it; `<!-- output of `COMMAND`: checked -->`: of `COMMAND`.
//!   Checked means the words match, every number standing for any number:
//!   figures follow the machine, wording and layout must not drift;
//! - `<!-- output: illustrative: REASON -->`: an output shown, not checked.
//!
//! A Python block's output marked `checked` is checked by
//! python/tests/test_docs.py, which runs the block.
//!
//! An untyped or `text` block after a shell block that runs, with no
//! heading between them, is that block's output and needs an `output`
//! marker.
//!
//! Rust and C blocks are compiled elsewhere: a page's Rust blocks as
//! doctests of `sgp-tests` (its page listed in tests/src/pages/mod.rs), the
//! five-step firmware as `firmware-example`'s binary, the C example as
//! capi/c/example.c (capi/tests/c_program.rs). Any other Rust or C block is
//! `ignore`d and says why after `<!-- not compiled: -->`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One fenced block of a page.
struct Block {
    /// The line of its opening fence, from 1.
    line: usize,
    /// The fence's info string (`sh`, `text`, ``).
    info: String,
    /// The HTML comment on the line before the fence, without `<!--`, `-->`.
    marker: Option<String>,
    /// Whether a heading stands between it and the block before.
    after_heading: bool,
    body: String,
}

impl Block {
    fn is_shell(&self) -> bool {
        matches!(self.info.as_str(), "sh" | "bash")
    }

    fn is_output(&self) -> bool {
        matches!(self.info.as_str(), "" | "text")
    }

    fn marker_after(&self, prefix: &str) -> Option<&str> {
        self.marker.as_deref().and_then(|m| m.strip_prefix(prefix))
    }
}

fn blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut after_heading = false;
    let mut i = 0;
    while i < lines.len() {
        let Some(info) = lines[i].strip_prefix("```") else {
            after_heading |= lines[i].starts_with('#');
            i += 1;
            continue;
        };
        let marker = i
            .checked_sub(1)
            .map(|p| lines[p].trim())
            .and_then(|l| l.strip_prefix("<!--"))
            .and_then(|l| l.strip_suffix("-->"))
            .map(|m| m.trim().to_owned());
        let start = i;
        i += 1;
        let mut body = String::new();
        while i < lines.len() && !lines[i].starts_with("```") {
            body.push_str(lines[i]);
            body.push('\n');
            i += 1;
        }
        found.push(Block {
            line: start + 1,
            info: info.trim().to_owned(),
            marker,
            after_heading,
            body,
        });
        after_heading = false;
        i += 1;
    }
    found
}

/// The text with every number (sign, digits, separators, decimals,
/// exponent) replaced by `#` and every run of blanks by one space, line
/// by line, blank lines dropped: what must not drift in an output.
fn words(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| {
            let chars: Vec<char> = line.chars().collect();
            let mut out = String::new();
            let mut i = 0;
            while i < chars.len() {
                let c = chars[i];
                let signed = (c == '-' || c == '+')
                    && chars.get(i + 1).is_some_and(char::is_ascii_digit)
                    && (i == 0 || !chars[i - 1].is_alphanumeric());
                if c.is_ascii_digit() || signed {
                    i += 1;
                    while i < chars.len() {
                        let d = chars[i];
                        let exponent = (d == 'e' || d == 'E')
                            && chars
                                .get(i + 1)
                                .is_some_and(|n| n.is_ascii_digit() || *n == '-' || *n == '+');
                        let inner = (d == '.' || d == ',')
                            && chars.get(i + 1).is_some_and(char::is_ascii_digit);
                        if d.is_ascii_digit() || inner {
                            i += 1;
                        } else if exponent {
                            i += 2;
                        } else {
                            break;
                        }
                    }
                    out.push('#');
                } else {
                    out.push(c);
                    i += 1;
                }
            }
            out.split_whitespace().collect::<Vec<_>>().join(" ")
        })
        .filter(|l| !l.is_empty())
        .collect()
}

/// Runs `script` with bash in `dir`, `sgp` this build's binary; returns
/// its standard output, or panics naming `place`.
fn run(dir: &Path, script: &str, place: &str) -> String {
    let body: String = script
        .lines()
        .filter(|l| !l.trim_start().starts_with("alias sgp="))
        .map(|l| format!("{l}\n"))
        .collect();
    let started = std::time::Instant::now();
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -eo pipefail\nsgp() {{ \"$SGP\" \"$@\"; }}\n{body}"
        ))
        .env("SGP", env!("CARGO_BIN_EXE_sgp"))
        .current_dir(dir)
        .output()
        .expect("spawn bash");
    assert!(
        out.status.success(),
        "{place}: the block failed ({})\n{body}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{place}: {:.1} s", started.elapsed().as_secs_f64());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Checks one page; returns how many blocks ran and outputs were checked.
fn check_page(page: &Path) -> (usize, usize) {
    let text = fs::read_to_string(page).expect("read page");
    let name = page.display().to_string();
    let dir = std::env::temp_dir().join(format!(
        "sgp-docs-{}-{}",
        std::process::id(),
        page.file_stem().and_then(|s| s.to_str()).unwrap_or("page")
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch directory");
    let (mut ran, mut checked) = (0, 0);
    // The output of the last shell block run, until the next shell block.
    let mut last: Option<String> = None;
    // Whether the block before was Python's (checked by the Python tests).
    let mut python_before = false;
    for block in blocks(&text) {
        let place = format!("{name}:{}", block.line);
        if block.after_heading {
            last = None;
        }
        let after_python = std::mem::replace(&mut python_before, block.info == "python");
        if block.is_shell() {
            last = None;
            if let Some(reason) = block.marker_after("not run:") {
                assert!(!reason.trim().is_empty(), "{place}: say why it is not run");
                continue;
            }
            let setup = block.marker_after("run after:").unwrap_or("");
            last = Some(run(&dir, &format!("{setup}\n{}", block.body), &place));
            ran += 1;
        } else if block.is_output() {
            let expected = if let Some(rest) = block.marker_after("output of `") {
                let (command, tail) = rest
                    .split_once('`')
                    .unwrap_or_else(|| panic!("{place}: unclosed command"));
                assert_eq!(tail.trim(), ": checked", "{place}: {rest}");
                Some(run(&dir, command, &place))
            } else if block.marker_after("output: checked").is_some() {
                if after_python {
                    // python/tests/test_docs.py runs the block and checks it.
                    continue;
                }
                Some(last.clone().unwrap_or_else(|| {
                    panic!("{place}: `output: checked` follows no shell block that ran")
                }))
            } else {
                let illustrative = block
                    .marker_after("output: illustrative:")
                    .is_some_and(|r| !r.trim().is_empty());
                assert!(
                    last.is_none() || illustrative,
                    "{place}: the output of the shell block before it needs \
                     `<!-- output: checked -->` or `<!-- output: illustrative: REASON -->`"
                );
                None
            };
            if let Some(printed) = expected {
                assert_eq!(
                    words(&block.body),
                    words(&printed),
                    "{place}: the page shows other words than the program prints \
                     (numbers stand for any number)"
                );
                checked += 1;
            }
            last = None;
        }
    }
    let _ = fs::remove_dir_all(&dir);
    (ran, checked)
}

/// Where a Rust or C block of `page` is compiled, or panics naming it.
fn compiled_where(
    page: &Path,
    block: &Block,
    doctest_pages: &str,
    c_examples: &[String],
) -> &'static str {
    let place = format!("{}:{}", page.display(), block.line);
    let file = page.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if let Some(reason) = block.marker_after("not compiled:") {
        assert!(
            !reason.trim().is_empty(),
            "{place}: say why it is not compiled"
        );
        assert!(
            block.info.contains("ignore") || block.info == "c",
            "{place}: a block not compiled is `rust,ignore`"
        );
        return "not compiled";
    }
    if block.info == "c" {
        assert!(
            c_examples.contains(&block.body),
            "{place}: a C block is capi/c/example.c or example_artefact.c (both compiled and \
             run by capi/tests/c_program.rs) or says `<!-- not compiled: REASON -->`:\n{}",
            block.body
        );
        return "capi/c/example*.c";
    }
    if block.marker_after("five-steps:").is_some() {
        return "firmware-example";
    }
    let listed = match file {
        "README.md" => "../../../README.md\")".to_string(),
        page => format!("../../../docs/src/{page}\")"),
    };
    assert!(
        !block.info.contains("ignore") && doctest_pages.contains(&listed),
        "{place}: a Rust block compiles as a doctest (list its page in tests/src/pages/mod.rs) \
         or says `<!-- not compiled: REASON -->`"
    );
    "doctest"
}

#[test]
fn every_rust_and_c_block_is_compiled_or_says_why_not() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let doctest_pages = fs::read_to_string(root.join("tests/src/pages/mod.rs")).expect("pages");
    let c_examples: Vec<String> = ["capi/c/example.c", "capi/c/example_artefact.c"]
        .iter()
        .map(|f| fs::read_to_string(root.join(f)).expect("a C example"))
        .collect();
    let mut doctests = 0;
    for page in pages() {
        let text = fs::read_to_string(&page).expect("read page");
        for block in blocks(&text) {
            let rust = block.info.split(',').next() == Some("rust");
            if rust || block.info == "c" {
                let at = compiled_where(&page, &block, &doctest_pages, &c_examples);
                doctests += usize::from(at == "doctest");
            }
        }
    }
    // The README's and the runtime chapter's examples at least.
    assert!(
        doctests >= 6,
        "only {doctests} Rust blocks compile as doctests"
    );
}

fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut pages = vec![root.join("README.md")];
    let mut guide: Vec<PathBuf> = fs::read_dir(root.join("docs/src"))
        .expect("docs/src")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    guide.sort();
    pages.extend(guide);
    pages
}

#[test]
fn every_shell_block_runs_or_says_why_not() {
    // Pages in parallel: each has its own scratch directory.
    let pages = pages();
    let counts: Vec<(usize, usize)> = std::thread::scope(|scope| {
        let runs: Vec<_> = pages
            .iter()
            .map(|page| scope.spawn(|| check_page(page)))
            .collect();
        runs.into_iter()
            .map(|r| r.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let ran: usize = counts.iter().map(|c| c.0).sum();
    let checked: usize = counts.iter().map(|c| c.1).sum();
    // The user's first pages run: a marker cannot switch the check off.
    assert!(ran >= 12, "only {ran} blocks ran");
    assert!(checked >= 3, "only {checked} outputs checked");
}

#[test]
fn words_keep_the_wording_and_drop_the_figures() {
    assert_eq!(
        words("spgp   8  -0.4125  1,022 B  (2.6e-3 x sd)\n\n"),
        ["spgp # # # B (# x sd)"]
    );
    assert_ne!(words("blob 437 bytes"), words("blob 437 B"));
    assert_eq!(words("x1 -1 M=32"), ["x# # M=#"]);
}
