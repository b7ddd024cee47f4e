//! The budget policy a context log is replayed through, read from TOML, and the hard input
//! limit it sets.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};

/// The budget policy: limits and per-source budgets.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Model context window, for calls whose log has none.
    pub model_limit: Option<i64>,
    /// Expected output tokens, for calls whose log has none.
    pub expected_output: Option<i64>,
    /// Reserved on top of the expected output.
    #[serde(default = "default_margin")]
    pub output_buffer: i64,
    /// Kept free below the model limit.
    #[serde(default = "default_margin")]
    pub safety_margin: i64,
    /// Soft limit as a share of the hard limit.
    #[serde(default = "default_soft")]
    pub soft_limit_ratio: f64,
    /// Cap on the whole input, below the hard limit (optional).
    pub global_budget: Option<i64>,
    /// Token budget per source (sources not listed are limited only by the global budget).
    #[serde(default)]
    pub budgets: BTreeMap<String, i64>,
}

fn default_margin() -> i64 {
    1000
}

fn default_soft() -> f64 {
    0.75
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            model_limit: None,
            expected_output: None,
            output_buffer: 1000,
            safety_margin: 1000,
            soft_limit_ratio: 0.75,
            global_budget: None,
            budgets: BTreeMap::new(),
        }
    }
}

/// The largest policy file read: a policy is a few lines of TOML.
pub const MAX_POLICY_BYTES: u64 = 1 << 20;

impl Policy {
    /// Checks the ranges: a soft-limit ratio in (0, 1], a positive model limit, no negative expected
    /// output, buffer, margin or budget.
    ///
    /// # Errors
    /// A value out of range, naming its key.
    pub fn validate(&self, path: &Path) -> Result<()> {
        let bad = |key: &str, problem: String| Error::Manifest {
            path: path.to_path_buf(),
            key: key.into(),
            problem,
            fix: "see `ablate context --help` for the policy keys".into(),
        };
        if !(self.soft_limit_ratio > 0.0 && self.soft_limit_ratio <= 1.0) {
            return Err(bad(
                "soft_limit_ratio",
                format!("{} is outside (0, 1]", self.soft_limit_ratio),
            ));
        }
        for (key, v) in [
            ("output_buffer", self.output_buffer),
            ("safety_margin", self.safety_margin),
        ] {
            if v < 0 {
                return Err(bad(key, format!("{v} is negative")));
            }
        }
        if let Some(m) = self.model_limit.filter(|m| *m <= 0) {
            return Err(bad(
                "model_limit",
                format!("{m} is not a positive token count"),
            ));
        }
        for (key, v) in [
            ("expected_output", self.expected_output),
            ("global_budget", self.global_budget),
        ] {
            if let Some(v) = v.filter(|v| *v < 0) {
                return Err(bad(key, format!("{v} is negative")));
            }
        }
        if let Some((source, b)) = self.budgets.iter().find(|(_, b)| **b < 0) {
            return Err(bad(
                &format!("budgets.{source}"),
                format!("{b} is negative"),
            ));
        }
        Ok(())
    }

    /// Reads a policy from TOML (a plain file of at most [`MAX_POLICY_BYTES`]).
    ///
    /// # Errors
    /// Unreadable file, bad TOML, unknown keys or wrong types (the message names the key).
    pub fn load(path: &Path) -> Result<Policy> {
        // A policy is a few lines of TOML: a file far larger is not one (and is not read whole).
        let len = crate::data::table_file::given_file(path, "--policy")?.len();
        if len > MAX_POLICY_BYTES {
            return Err(Error::Unreadable {
                path: path.to_path_buf(),
                problem: format!(
                    "holds {len} bytes; a policy file is a few lines of TOML (at most {MAX_POLICY_BYTES} bytes)"
                ),
                fix: "give --policy the budget policy's TOML file (see `ablate context --help`)"
                    .into(),
            });
        }
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Policy::from_bytes(&bytes, path)
    }

    /// Parses and validates the bytes of a policy file; `path` is used in error messages. What
    /// [`Policy::load`] does after reading the file, and what the fuzz target calls.
    ///
    /// # Errors
    /// As [`Policy::load`].
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Policy> {
        let text = std::str::from_utf8(bytes).map_err(|e| Error::Manifest {
            path: path.to_path_buf(),
            key: "(encoding)".into(),
            problem: format!("not UTF-8 text (byte {} is invalid)", e.valid_up_to() + 1),
            fix: "save the policy as UTF-8".into(),
        })?;
        let policy: Policy = toml::from_str(text).map_err(|e: toml::de::Error| Error::Manifest {
            path: path.to_path_buf(),
            key: "(policy)".into(),
            problem: e.message().to_string(),
            fix: "keys: model_limit, expected_output, output_buffer, safety_margin, soft_limit_ratio, global_budget, [budgets] source = tokens".into(),
        })?;
        policy.validate(path)?;
        Ok(policy)
    }
}

impl Policy {
    /// The input budget under a model limit and an expected output:
    /// model − (expected + output_buffer) − safety_margin (may be ≤ 0), in 128-bit arithmetic so
    /// that no limits, however large, overflow (a result below `i64::MIN` saturates there).
    pub fn hard(&self, model: i64, expected: i64) -> i64 {
        let h = i128::from(model)
            - (i128::from(expected) + i128::from(self.output_buffer))
            - i128::from(self.safety_margin);
        i64::try_from(h).unwrap_or(i64::MIN)
    }

    /// The soft limit of a call whose hard limit is `hard`: soft_limit_ratio × hard, rounded to 6
    /// decimals, as the SQL `ablate sql context` emits computes it (`ROUND(ratio * hard, 6)`).
    /// The ratio is a decimal the user wrote, and its binary value is not: 0.7 × 11000 is
    /// 7699.999999999999 in floating point, so a call of 7,700 tokens would cross the soft limit
    /// 7,700 it only meets. A call crosses when its size is above this.
    pub fn soft_limit(&self, hard: i64) -> f64 {
        (self.soft_limit_ratio * hard as f64 * 1e6).round() / 1e6
    }
}

/// The hard input limit of a call from its logged (or fallback) model limit and expected output:
/// model_limit − (expected_output + output_buffer) − safety_margin.
///
/// # Errors
/// No model limit; a limit that leaves no input budget.
pub fn hard_limit(
    model: Option<i64>,
    expected: Option<i64>,
    p: &Policy,
    path: &Path,
) -> Result<i64> {
    let m = model.ok_or_else(|| Error::Unsupported {
        what: format!("context analysis of {}", path.display()),
        reason: "a call has no model_limit, so its hard input limit is unknown".into(),
        fix: "log model_limit, or give --model-limit or a policy with model_limit".into(),
    })?;
    let h = p.hard(m, expected.unwrap_or(0));
    if h <= 0 {
        return Err(Error::Unsupported {
            what: format!("context analysis of {}", path.display()),
            reason: format!(
                "model_limit {m} leaves no input budget after expected output {}, output buffer {} and safety margin {}",
                expected.unwrap_or(0),
                p.output_buffer,
                p.safety_margin
            ),
            fix: "check the model limit, or lower the output buffer or safety margin".into(),
        });
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_is_the_ratio_as_written() {
        let p = Policy {
            soft_limit_ratio: 0.7,
            ..Policy::default()
        };
        assert!(
            p.soft_limit_ratio * 11000.0 < 7700.0,
            "the binary product falls short"
        );
        assert_eq!(p.soft_limit(11000), 7700.0);
        assert_eq!(p.soft_limit(10001), 7000.7);
    }

    #[test]
    fn a_hard_limit_never_overflows() {
        let p = Policy {
            output_buffer: i64::MAX,
            ..Policy::default()
        };
        assert_eq!(p.hard(100_000, i64::MAX), i64::MIN);
        let q = Policy::default();
        assert_eq!(q.hard(10_000, 500), 10_000 - 500 - 1000 - 1000);
    }
}
