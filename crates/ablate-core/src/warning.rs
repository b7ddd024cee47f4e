//! A warning: a stable code a script can match, and the message a person reads. In JSON each
//! warning is `{"code": …, "message": …}`; on the terminal it is its message.
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

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}
