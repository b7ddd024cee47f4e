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
        .map_err(|e| Error::Invariant(format!("cannot serialise output: {e}")))?;
    s.push('\n');
    Ok(s)
}

/// An output as JSON with a top-level `warnings` array holding `extra` (the loader's warnings)
/// followed by the output's own, each once.
///
/// # Errors
/// The output cannot be serialised (a bug).
pub fn with_warnings<T: Serialize>(value: &T, extra: &[String]) -> Result<serde_json::Value> {
    let mut v = serde_json::to_value(value)
        .map_err(|e| Error::Invariant(format!("cannot serialise output: {e}")))?;
    if let serde_json::Value::Object(map) = &mut v {
        let own: Vec<serde_json::Value> = match map.remove("warnings") {
            Some(serde_json::Value::Array(a)) => a,
            _ => Vec::new(),
        };
        let mut all: Vec<serde_json::Value> = Vec::with_capacity(extra.len() + own.len());
        for w in extra
            .iter()
            .map(|w| serde_json::Value::String(w.clone()))
            .chain(own)
        {
            if !all.contains(&w) {
                all.push(w);
            }
        }
        map.insert("warnings".into(), serde_json::Value::Array(all));
    }
    Ok(v)
}
