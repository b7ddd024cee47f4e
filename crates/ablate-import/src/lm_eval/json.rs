//! Python's JSON as lm-evaluation-harness writes it: strict JSON first, then JSON5 for the bare
//! `NaN` and `Infinity` that strict JSON rejects, with non-finite numbers kept as text.

use std::collections::BTreeMap;

use serde_json::Value;

/// Parses one JSON value as Python writes it: strict JSON first, then JSON5 (which accepts bare
/// `NaN`, `Infinity` and `-Infinity`).
///
/// JSON nested deeper than [`MAX_JSON_DEPTH`](crate::import::MAX_JSON_DEPTH) is refused before the JSON5
/// parser sees it: that parser recurses without a limit, and a line nested 30,000 deep overflowed
/// the stack.
pub(super) fn parse(text: &str) -> std::result::Result<Value, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => Ok(v),
        Err(strict) if crate::import::json_depth(text) > crate::import::MAX_JSON_DEPTH => {
            Err(format!(
                "{strict} (arrays and objects nested more than {} deep; lm-eval's lines are shallow)",
                crate::import::MAX_JSON_DEPTH
            ))
        }
        Err(strict) => json5::from_str::<Json5Value>(text)
            .map(Json5Value::into_json)
            .map_err(|_| strict.to_string()),
    }
}

/// A JSON value that can hold non-finite numbers (serde_json's cannot): they are kept as
/// strings `"NaN"`, `"Infinity"`, `"-Infinity"` in a one-key object `{"$nonfinite": …}`.
#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
pub(super) enum Json5Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Json5Value>),
    Map(BTreeMap<String, Json5Value>),
}

impl Json5Value {
    fn into_json(self) -> Value {
        match self {
            Json5Value::Null => Value::Null,
            Json5Value::Bool(b) => Value::Bool(b),
            Json5Value::Int(i) => Value::from(i),
            Json5Value::Float(f) if f.is_finite() => Value::from(f),
            Json5Value::Float(f) => {
                let text = if f.is_nan() {
                    "NaN"
                } else if f > 0.0 {
                    "Infinity"
                } else {
                    "-Infinity"
                };
                serde_json::json!({ NONFINITE: text })
            }
            Json5Value::Str(s) => Value::String(s),
            Json5Value::List(l) => Value::Array(l.into_iter().map(Json5Value::into_json).collect()),
            Json5Value::Map(m) => {
                Value::Object(m.into_iter().map(|(k, v)| (k, v.into_json())).collect())
            }
        }
    }
}

/// The key marking a non-finite number read from Python's JSON.
pub(super) const NONFINITE: &str = "$nonfinite";

/// A non-finite number read from Python's JSON, as its text.
pub(super) fn nonfinite(v: &Value) -> Option<&str> {
    v.as_object()
        .filter(|m| m.len() == 1)
        .and_then(|m| m.get(NONFINITE))
        .and_then(Value::as_str)
}
