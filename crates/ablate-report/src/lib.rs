//! Output for people and scripts: human tables, JSON and the report. One module per verb turns
//! that verb's output into text for a terminal and into [`section::Section`]s for the report;
//! renderers read only the output structs of [`crate::analysis`] and never compute statistics.

// Errors carry the file, column, row, value and a fix as owned text (see ablate-core).
#![allow(clippy::result_large_err)]

// The layers below, under the names the modules use. This crate has no Polars and writes no
// file: it hands each file it makes to the caller (`document::Files`).
use crate as report;
use ablate_analysis as analysis;
use ablate_core::{error, warning};
use ablate_stats as stats;

pub mod charts;
pub mod check;
pub mod context;
pub mod curve;
pub mod decision;
pub mod document;
pub mod drill;
pub use ablate_core::escape;
pub mod export;
pub mod interactions;
pub mod need;
pub mod plan;
pub mod record;
pub mod reweight;
pub mod section;
pub mod selector;
pub mod sequential;
pub mod shadow;
pub mod stress;
pub mod sweep;
/// Number formats and display widths, shared with the analyses' messages.
pub use ablate_core::text;
pub mod variance;

use serde::Serialize;

use crate::error::{Error, Result};

/// The version of every JSON document ablate writes (each verb's `--json`, the report's
/// `analysis.json` and `record.json`, and `ablate schema`), as their first key `schema_version`.
/// Bumped when a key changes meaning or disappears; a new key does not bump it.
///
/// - 1: the documents before the key existed.
/// - 2: every interval is four flat keys `<name>_low`, `_high`, `_level`, `_method`
///   (`ci_family_low` was `ci_low_family`; `cs_low` was `lower`; `ci_main_low` was `ci_main[0]`).
/// - 3: `plan`'s `cases_needed` is `cases_to_detect`; the decision's `settleable` may be null
///   (nothing to settle, or the cases cannot be estimated); `stress`'s `ci_main_*` is the
///   family interval that judges the main-set verdict.
/// - 4: `stress`'s family intervals say so in their names, as everywhere else: `ci_main_*` is
///   `ci_main_family_*`, `ci_stress_*` is `ci_stress_family_*` (a `ci_*` is an estimate's own
///   interval in every other table).
pub const SCHEMA_VERSION: u32 = 4;

/// A share as a whole percentage (`0.42` → `42%`); `undefined` when it is not a number (a
/// fraction of nothing), never `NaN%`.
pub(crate) fn percent(share: f64) -> String {
    if share.is_finite() {
        format!("{:.0}%", 100.0 * share)
    } else {
        "undefined".into()
    }
}

/// Serialises an output struct as pretty JSON with a trailing newline, `schema_version` first.
/// Key order is the struct's field order, so the same output always gives the same bytes.
///
/// # Errors
/// Only if the struct cannot be serialised (a bug).
pub fn json<T: Serialize>(value: &T) -> Result<String> {
    #[derive(Serialize)]
    struct Versioned<'a, T> {
        schema_version: u32,
        #[serde(flatten)]
        output: &'a T,
    }
    let value = Versioned {
        schema_version: SCHEMA_VERSION,
        output: value,
    };
    let mut s = serde_json::to_string_pretty(&value)
        .map_err(|e| Error::Invariant(format!("cannot serialise output: {e}")))?;
    s.push('\n');
    Ok(s)
}

/// An output as JSON with a top-level `warnings` array holding `extra` (the loader's warnings)
/// followed by the output's own, each once.
///
/// # Errors
/// The output cannot be serialised (a bug).
pub fn with_warnings<T: Serialize>(
    value: &T,
    extra: &[crate::warning::Warning],
) -> Result<serde_json::Value> {
    let mut v = serde_json::to_value(value)
        .map_err(|e| Error::Invariant(format!("cannot serialise output: {e}")))?;
    if let serde_json::Value::Object(map) = &mut v {
        let own: Vec<serde_json::Value> = match map.remove("warnings") {
            Some(serde_json::Value::Array(a)) => a,
            _ => Vec::new(),
        };
        let mut all: Vec<serde_json::Value> = Vec::with_capacity(extra.len() + own.len());
        let extra = extra
            .iter()
            .map(|w| serde_json::json!({"code": w.code, "message": w.message}));
        for w in extra.chain(own) {
            if !all.contains(&w) {
                all.push(w);
            }
        }
        map.insert("warnings".into(), serde_json::Value::Array(all));
    }
    Ok(v)
}
