//! The Rust blocks of the README and the guide, compiled as doctests
//! (`cargo test --doc -p sgp-tests`), so an example cannot drift from the
//! runtime's API. A page's `include_bytes!("NAME.sgp")` finds a real blob
//! in `tests/src/pages/` (links to `runtime/tests/data/doc-model.sgp`);
//! the examples are compiled, and run only where they load nothing.
//! cli/tests/docs.rs holds every Rust block of the README and the guide to
//! this list, or to a reason it is compiled elsewhere or not at all.

#[doc = include_str!("../../../README.md")]
pub struct Readme;

/// The guide's pages with Rust blocks.
pub mod guide {
    #[doc = include_str!("../../../docs/src/runtime.md")]
    pub struct Runtime;
    #[doc = include_str!("../../../docs/src/gradients.md")]
    pub struct Gradients;
    #[doc = include_str!("../../../docs/src/learning.md")]
    pub struct Learning;
    #[doc = include_str!("../../../docs/src/multi-output.md")]
    pub struct MultiOutput;
    #[doc = include_str!("../../../docs/src/uncertain-input.md")]
    pub struct UncertainInput;
}
