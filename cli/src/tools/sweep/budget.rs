//! The device budget a sweep's models must fit: flash, RAM, instructions.

use super::*;

/// Device limits; `None` is no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Budget {
    /// Largest blob, bytes (flash).
    pub flash: Option<usize>,
    /// Largest `Model<M, G, D>`, bytes (RAM).
    pub ram: Option<usize>,
    /// Most Cortex-M4 instructions per prediction.
    pub instructions: Option<u64>,
}

/// One of a [`Budget`]'s limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    /// `--flash`.
    Flash,
    /// `--ram`.
    Ram,
    /// `--instructions`.
    Instructions,
}

impl Limit {
    pub(super) fn name(self) -> &'static str {
        match self {
            Limit::Flash => "flash",
            Limit::Ram => "ram",
            Limit::Instructions => "instructions",
        }
    }
}

impl Budget {
    /// Whether any limit is set.
    pub(crate) fn is_set(&self) -> bool {
        *self != Budget::default()
    }

    /// The limits a model with these figures exceeds.
    pub(crate) fn exceeded(
        &self,
        blob_bytes: usize,
        ram_bytes: usize,
        instructions: u64,
    ) -> Vec<Limit> {
        let over = |limit: Option<u64>, value: u64| limit.is_some_and(|l| value > l);
        [
            (
                Limit::Flash,
                over(self.flash.map(to_u64), to_u64(blob_bytes)),
            ),
            (Limit::Ram, over(self.ram.map(to_u64), to_u64(ram_bytes))),
            (Limit::Instructions, over(self.instructions, instructions)),
        ]
        .into_iter()
        .filter_map(|(limit, over)| over.then_some(limit))
        .collect()
    }

    pub(super) fn describe(&self) -> String {
        let parts: Vec<String> = [
            self.flash.map(|b| format!("flash <= {b} B")),
            self.ram.map(|b| format!("RAM <= {b} B")),
            self.instructions
                .map(|n| format!("<= {n} instructions per prediction")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    }
}

pub(super) fn to_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// Parses a byte count: a whole number, optionally followed by `K` (1024)
/// or `M` (1024 * 1024), e.g. `65536`, `64K`, `1M`.
///
/// # Errors
/// [`Error::BadInput`] for anything else.
pub fn parse_bytes(text: &str) -> Result<usize> {
    let bad = || {
        Error::BadInput(format!(
            "'{text}' is not a byte count (a whole number, optionally with K or M: 65536, 64K, 1M)"
        ))
    };
    let t = text.trim();
    let (digits, unit) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1024),
        Some((i, 'm' | 'M')) => (&t[..i], 1024 * 1024),
        _ => (t, 1),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(bad)
}
