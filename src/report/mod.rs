//! Output for people and scripts: human tables and JSON. Renderers read only the output structs
//! of [`crate::analysis`]; they never compute statistics.

pub mod budget;
pub mod charts;
pub mod check;
pub mod document;
pub mod escape;
pub mod interactions;
pub mod live;
pub mod reweight;
pub mod sweep;
pub mod text;
pub mod variance;

use serde::Serialize;

use crate::error::{Error, Result};

/// Serialises an output struct as pretty JSON with a trailing newline. Key order is the struct's
/// field order, so the same output always gives the same bytes.
///
/// # Errors
/// Only if the struct cannot be serialised (a bug).
pub fn json<T: Serialize>(value: &T) -> Result<String> {
    let mut s = serde_json::to_string_pretty(value)
        .map_err(|e| Error::Usage(format!("internal: cannot serialise output: {e}")))?;
    s.push('\n');
    Ok(s)
}
