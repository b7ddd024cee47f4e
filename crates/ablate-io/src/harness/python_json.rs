//! Python's JSON as lm-evaluation-harness writes it: strict JSON first, then JSON5 for the bare
//! `NaN` and `Infinity` that strict JSON rejects, with non-finite numbers kept as text.

use std::collections::BTreeMap;

use serde_json::Value;

/// Parses one JSON value as Python writes it: strict JSON first, then JSON5 (which accepts bare
/// `NaN`, `Infinity` and `-Infinity`).
///
/// JSON nested deeper than [`MAX_JSON_DEPTH`] is refused before the JSON5
/// parser sees it: that parser recurses without a limit, and a line nested 30,000 deep overflowed
/// the stack.
pub fn parse(text: &str) -> std::result::Result<Value, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => Ok(v),
        Err(strict) if json_depth(text) > MAX_JSON_DEPTH => Err(format!(
            "{strict} (arrays and objects nested more than {} deep; lm-eval's lines are shallow)",
            MAX_JSON_DEPTH
        )),
        Err(strict) => json5::from_str::<Json5Value>(text)
            .map(Json5Value::into_json)
            .map_err(|_| strict.to_string()),
    }
}

/// A JSON value that can hold non-finite numbers (serde_json's cannot): they are kept as
/// strings `"NaN"`, `"Infinity"`, `"-Infinity"` in a one-key object `{"$nonfinite": …}`.
#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
pub enum Json5Value {
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
pub const NONFINITE: &str = "$nonfinite";

/// A non-finite number read from Python's JSON, as its text.
pub fn nonfinite(v: &Value) -> Option<&str> {
    v.as_object()
        .filter(|m| m.len() == 1)
        .and_then(|m| m.get(NONFINITE))
        .and_then(Value::as_str)
}

/// Deepest nesting JSON may have in a log (serde_json's own limit).
pub const MAX_JSON_DEPTH: usize = 128;

/// How deeply the arrays and objects of a JSON or JSON5 text nest, counting the brackets the
/// JSON5 parser would see: outside strings in double or single quotes (a backslash escapes the
/// next character) and outside `//` and `/* */` comments. Counting only outside double-quoted
/// strings let `[']',` 50,000 times through at depth 1, and the JSON5 parser overflowed the
/// stack. Where the text is not JSON5 the parser stops there, so a wrong guess past that point
/// never lets a deeper text through.
pub fn json_depth(text: &str) -> usize {
    #[derive(Clone, Copy)]
    enum In {
        Code,
        Str(char),
        LineComment,
        BlockComment,
    }
    let (mut depth, mut max, mut state) = (0usize, 0usize, In::Code);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match state {
            In::Str(quote) => {
                if c == '\\' {
                    chars.next();
                } else if c == quote {
                    state = In::Code;
                }
            }
            In::LineComment => {
                if matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}') {
                    state = In::Code;
                }
            }
            In::BlockComment => {
                if c == '*' && chars.next_if_eq(&'/').is_some() {
                    state = In::Code;
                }
            }
            In::Code => match c {
                '"' | '\'' => state = In::Str(c),
                '/' if chars.next_if_eq(&'/').is_some() => state = In::LineComment,
                '/' if chars.next_if_eq(&'*').is_some() => state = In::BlockComment,
                '[' | '{' => {
                    depth += 1;
                    max = max.max(depth);
                }
                ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::json_depth;

    #[test]
    fn brackets_in_json5_strings_and_comments_do_not_count() {
        assert_eq!(json_depth(r#"[[1], {"a": "]]"}]"#), 2);
        assert_eq!(json_depth("[']',[']',[1]]]"), 3);
        assert_eq!(json_depth(r"['\']',[2]]"), 2);
        assert_eq!(json_depth("[/*]*/[/*]]*/[3]]]"), 3);
        assert_eq!(json_depth("[// ]]]\n[4]]"), 2);
        assert_eq!(json_depth(&"[']',".repeat(50_000)), 50_000);
    }
}
