//! The checks an import applies to the samples before anything is written, so that it never writes
//! what `ablate check` then rejects: ids and labels, scores, tokens, and the `--strata` fields.

use std::path::PathBuf;

use super::Observation;
use crate::error::{Error, Result};

/// Longest text of a metadata value kept as a case column, in bytes: a stratum is a short label,
/// and a longer value (a document, a transcript) is refused rather than held in memory for every
/// case.
pub const MAX_CASE_TEXT: usize = 64 * 1024;

/// Case columns ablate gives a meaning of its own: a metadata field of that name is not a stratum.
pub(super) const RESERVED_CASE_COLUMNS: &[&str] = &["case_id", "stress", "cluster", "gold_rank"];

/// Refuses a `--strata` list that names a field twice or names a column ablate reserves.
pub(super) fn check_strata_option(strata: &[String]) -> Result<()> {
    for (i, s) in strata.iter().enumerate() {
        if strata[..i].contains(s) {
            return Err(Error::Usage(format!(
                "--strata {s} is given twice; name each field once"
            )));
        }
        if RESERVED_CASE_COLUMNS.contains(&s.as_str()) {
            return Err(Error::Usage(format!(
                "--strata {s}: `{s}` is a column of the cases table with its own meaning ({}), not a stratum; rename the metadata field in the logs, or choose another",
                RESERVED_CASE_COLUMNS.join(", ")
            )));
        }
    }
    Ok(())
}

/// The checks `check` applies to the tables an import writes, on the samples themselves, so that
/// an import never writes what `check` then rejects, and the message names the log and sample:
/// ids and arm labels without control characters, arm labels not empty, finite scores within ±[`MAX_SCORE`], input
/// tokens not negative, metadata values kept as case columns no longer than [`MAX_CASE_TEXT`].
///
/// [`MAX_SCORE`]: crate::io::results::MAX_SCORE
pub(super) fn check_observations(
    harness: &str,
    observations: &[Observation],
    arm_choice: &str,
) -> Result<()> {
    let (case_fix, arm_fix) = match harness {
        "promptfoo" => (
            "give the tests a description without control characters",
            "give the prompt a short label in the config (prompts: - label: NAME), or name the arms with --arm NAME=GLOB",
        ),
        "lm-eval" => (
            "import with --case-from doc_hash",
            "rename the task or the file the arm comes from, or name the arms with --arm NAME=GLOB",
        ),
        _ => (
            "give the samples ids without control characters in the harness, or import with --pair-by input",
            "rename the source (file, task argument) the arm comes from, choose another --arm-from, or name the arms with --arm NAME=GLOB",
        ),
    };
    let refuse = |o: &Observation, column: &str, value: String, problem: String, fix: &str| {
        Error::BadValue {
            path: PathBuf::from(&o.source),
            column: column.into(),
            row: crate::error::Row::none(),
            value,
            problem,
            fix: fix.into(),
        }
    };
    // Control characters and Unicode noncharacters, as the loaders refuse them in ids.
    let control = |t: &str| t.chars().any(crate::io::table::refused_in_id);
    for o in observations {
        if control(&o.case_id) {
            return Err(refuse(
                o,
                "case_id",
                format!("{:?}", o.case_id),
                "a case id with a control character (a line break, a tab, an escape code) or a Unicode noncharacter (U+FFFE, U+FFFF, U+FDD0..U+FDEF) cannot be told apart in tables and reports".into(),
                case_fix,
            ));
        }
        if o.arm.trim().is_empty() {
            return Err(refuse(
                o,
                "arm",
                format!("{:?}", o.arm),
                format!(
                    "an empty arm label (or one of spaces only) names no arm: it cannot be given to --baseline or --arm, and reads as a blank in tables and reports (arms from: {arm_choice})"
                ),
                arm_fix,
            ));
        }
        if control(&o.arm) {
            return Err(refuse(
                o,
                "arm",
                format!("{:?}", o.arm),
                "an arm label with a control character or a Unicode noncharacter (U+FFFE, U+FFFF, U+FDD0..U+FDEF) cannot be told apart in tables and reports"
                    .into(),
                arm_fix,
            ));
        }
        let max = crate::io::results::MAX_SCORE;
        if !(o.score.is_finite() && o.score.abs() <= max) {
            return Err(refuse(
                o,
                "score",
                format!("{:e}", o.score),
                format!("scores beyond ±{max:e} overflow the variance sums"),
                "check the scorer, or choose another score with --score",
            ));
        }
        if let Some(t) = o.tokens_in
            && t < 0
        {
            return Err(refuse(
                o,
                "tokens_in",
                t.to_string(),
                "input tokens must not be negative".into(),
                "check the usage the harness logged for this sample",
            ));
        }
    }
    Ok(())
}

/// Refuses a `--strata` field whose value in some sample is longer than [`MAX_CASE_TEXT`].
pub(super) fn check_strata_lengths(observations: &[Observation], strata: &[String]) -> Result<()> {
    for o in observations {
        for k in strata {
            if let Some(v) = o.strata.get(k).filter(|v| v.len() > MAX_CASE_TEXT) {
                return Err(Error::BadValue {
                    path: PathBuf::from(&o.source),
                    column: format!("metadata.{k}"),
                    row: crate::error::Row::none(),
                    value: format!("{} bytes", v.len()),
                    problem: format!(
                        "a metadata value kept as a case column may hold at most {MAX_CASE_TEXT} bytes; this one holds {}",
                        v.len()
                    ),
                    fix: "name only short fields (labels such as a topic or a difficulty) in --strata"
                        .into(),
                });
            }
        }
    }
    Ok(())
}
