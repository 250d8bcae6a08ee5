//! The user's files: every input opened once and read as a stream
//! ([`Input`]), every output written whole or not at all ([`write_atomic`],
//! `AtomicFile`) and checked before any work ([`check_outputs`]), their
//! temporaries removed on an interruption
//! ([`remove_temporaries_on_interrupt`]), and the
//! one boundary where a third-party reader's panic becomes an error
//! (`catch_quietly`).

mod input;
mod output;
mod panics;
mod temporaries;

pub(crate) use input::FileId;
pub use input::Input;
pub(crate) use input::InputFormat;
pub use output::{check_outputs, write_atomic};
pub(crate) use output::{check_outside, AtomicFile};
pub(crate) use panics::catch_quietly;
pub use temporaries::{remove_temporaries, remove_temporaries_on_interrupt};
