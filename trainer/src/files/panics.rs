//! The one boundary where a third-party reader's panic (the `parquet`
//! crate's, on a corrupted file) becomes an error: caught, and kept out of
//! standard error, where the default hook would print it.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

static HOOK: Once = Once::new();

/// Runs `f`; a panic inside it is returned as its message instead of
/// unwinding further, and printed nowhere. Panics elsewhere (other threads,
/// outside `f`) still reach the previous panic hook.
///
/// # Errors
/// The panic's message.
pub(crate) fn catch_quietly<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let was = QUIET.with(|q| q.replace(true));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    result.map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::catch_quietly;

    #[test]
    fn a_panic_inside_is_its_message_and_a_value_passes_through() {
        let caught = catch_quietly(|| -> u8 { panic!("bad footer") });
        assert_eq!(caught.unwrap_err(), "bad footer");
        assert_eq!(catch_quietly(|| 7), Ok(7));
    }
}
