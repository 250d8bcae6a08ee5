//! The user's files: every input opened once and read as a stream
//! ([`Input`]), every output written whole or not at all ([`write_atomic`],
//! [`AtomicFile`]) and checked before any work ([`check_outputs`]), and the
//! one boundary where a third-party reader's panic becomes an error
//! ([`catch_quietly`]).

mod input;
mod output;
mod panics;

pub use input::{FileId, Input, InputFormat};
pub use output::{check_outputs, check_outside, separate_path, write_atomic, AtomicFile};
pub use panics::catch_quietly;
