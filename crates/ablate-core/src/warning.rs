//! A warning: a stable code a script can match, and the message a person reads. In JSON each
//! warning is `{"code": …, "message": …}`; on the terminal it is its message, on one line, with
//! control characters replaced.
//!
//! Codes are `<where>.<what>` in snake case (`sweep.no_spread`, `load.arm_without_results`) and
//! never change meaning; a new situation gets a new code. The list, with what each means, is in
//! docs/tables.md under `warnings`.

use serde::Serialize;

/// One warning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// Stable identifier, `<where>.<what>`.
    pub code: &'static str,
    /// What happened and what it means, for people.
    pub message: String,
}

impl Warning {
    /// A warning with its code and message.
    pub fn new(code: &'static str, message: impl Into<String>) -> Warning {
        Warning {
            code,
            message: message.into(),
        }
    }
}

/// The message for a terminal: a value from the data in it (a stratum, a source) cannot move
/// the cursor, recolour the screen or reorder the text ([`crate::escape::plain`]), nor break
/// the warning's line.
impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::escape::plain(&self.message).replace('\n', " "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_is_one_line_without_control_characters() {
        let w = Warning::new(
            "shadow.no_spread",
            "stratum \u{1b}[31mred\nnext \u{202e}gnp",
        );
        assert_eq!(w.to_string(), "stratum \u{fffd}[31mred next \u{fffd}gnp");
        assert!(
            w.message.contains('\u{1b}'),
            "the JSON keeps the data as it is"
        );
    }
}
