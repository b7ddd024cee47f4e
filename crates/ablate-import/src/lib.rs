//! `ablate import`: the logs of the harness an analyst already runs (Inspect AI, lm-evaluation-
//! harness, promptfoo) turned into an experiment folder that every verb reads.
//!
//! Each reader ([`inspect`], [`lm_eval`], [`promptfoo`]) turns its files into [`Observation`]s:
//! one scored sample each, with its case, arm, an ordering key for repeats, tokens and strata. It
//! reports every file it read ([`Source`], with its SHA-256) and everything it skipped, and why.
//! [`write()`] then numbers the repeats (1, 2, … per case and arm, in the order the harness ran
//! them), chooses the baseline, and writes `results`, `cases`, `arms` and `sources` as Parquet
//! with `experiment.toml`, atomically, into a folder ablate may write.

// Errors carry the file, column, row, value and a fix as owned text (see ablate-core).
#![allow(clippy::result_large_err)]

// The layers below, under the names the modules use.
use crate as import;
use ablate_core::{error, text};
use ablate_io as io;
use ablate_stats as stats;

pub mod simulate;

pub mod append;
mod arms;
mod checks;
mod files;
pub mod inspect;
pub mod lm_eval;
mod plan;
pub mod promptfoo;
mod write;
pub use ablate_io::harness::python_json::{MAX_JSON_DEPTH, json_depth};
pub use arms::{ArmNames, parse_arm_rule};
pub use checks::MAX_CASE_TEXT;
pub(crate) use files::differing_excerpts;
pub use files::{
    Hashed, chat_text, collect_files, content_text, date_prefix, log_line, not_utf8, read_hashed,
    read_text, scalar_fields, scalar_text, text_of, value_to_float,
};
pub(crate) use plan::arm_summaries;
pub(crate) use plan::{Plan, Prior};
pub(crate) use write::building;
pub use write::write;

use std::collections::BTreeMap;

use crate::error::{Error, Result};

use serde::Serialize;

/// Settings of an import, shared by the three readers (each uses those that apply to it).
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// The score to take: a scorer (`match`), a key of a scorer's dict value (`scorer.key`), a
    /// metric (lm-eval) or a named score (promptfoo). `None`: the only one there is.
    pub score: Option<String>,
    /// Where the arm comes from (harness-specific, e.g. `task_arg:NAME`, `model`, `tag`, `file`).
    pub arm_from: Option<String>,
    /// Where the case id comes from (lm-eval: `doc_id` or `doc_hash`).
    pub case_from: Option<String>,
    /// What pairs a sample across arms: its id (the default; samples under one id must be the
    /// same sample) or its input (the hash of its dataset input and target).
    pub pair_by: PairBy,
    /// Skip files that cannot be read (and lm-eval runs without the chosen `--filter`), listing
    /// each with its reason, instead of stopping.
    pub skip_invalid: bool,
    /// Metadata fields to keep as stratum columns of `cases` (empty: every scalar field).
    pub strata: Vec<String>,
    /// `threshold_drop` for experiment.toml; `None` writes a placeholder every verb refuses.
    pub threshold: Option<f64>,
    /// The baseline arm; `None`: an arm named `baseline` or `full`, else the one with the most
    /// input tokens.
    pub baseline: Option<String>,
    /// The set name; `None`: from the logs.
    pub set: Option<String>,
    /// lm-eval: the filter whose lines to take when several filters repeat a doc_id.
    pub filter: Option<String>,
    /// lm-eval and Inspect: skip samples whose score is NaN or infinite instead of failing.
    pub skip_nonfinite: bool,
    /// `--arm NAME=GLOB`, in order: the arm of every source file matching GLOB is NAME (a folder
    /// matches everything under it).
    pub arm_globs: Vec<(String, String)>,
}

/// What pairs a sample across arms (`--pair-by`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PairBy {
    /// The harness's sample id (Inspect `id`, lm-eval `doc_id`); samples that share an id must
    /// be the same sample, or the import is refused.
    #[default]
    Id,
    /// The hash of the sample's dataset input and target (Inspect), or `doc_hash` (lm-eval):
    /// the same question is one case whatever its id.
    Input,
}

/// One scored sample.
#[derive(Debug, Clone)]
pub struct Observation {
    /// Case id (the sample's id in the harness).
    pub case_id: String,
    /// Arm label.
    pub arm: String,
    /// Order in which the harness ran it, among the same case and arm: repeats are numbered by
    /// it. (file rank, epoch or run, position within the file).
    pub order: (usize, i64, usize),
    /// The score, finite.
    pub score: f64,
    /// Input tokens of the sample, when the harness logged them.
    pub tokens_in: Option<i64>,
    /// Scalar metadata of the sample, as text: candidate stratum columns.
    pub strata: BTreeMap<String, String>,
    /// Where it was read: the log file and the sample in it (for messages).
    pub source: String,
    /// The harness's own pass/fail, when it records one (promptfoo `success`, Inspect `C`/`I`).
    pub passed: Option<bool>,
    /// The file it came from, as [`Source::file`] names it.
    pub file: String,
    /// The sample's input (prompt or question), cut to [`SAMPLE_TEXT_CHARS`], when logged.
    pub input: Option<String>,
    /// The model's output, cut to [`SAMPLE_TEXT_CHARS`], when logged.
    pub output: Option<String>,
}

/// Most characters of a sample's input or output an import keeps in `samples` (the report shows
/// at most 600 of them); longer text is cut with "…".
pub const SAMPLE_TEXT_CHARS: usize = 2_000;

/// A sample's text as `samples` keeps it: cut to [`SAMPLE_TEXT_CHARS`]; none when empty.
pub fn sample_text(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| crate::text::cut_chars(text, SAMPLE_TEXT_CHARS))
}

/// A file that was read.
#[derive(Debug, Clone, Serialize)]
pub struct Source {
    /// Its path as given (or found under a given folder).
    pub file: String,
    /// SHA-256 of its bytes, in hex.
    pub sha256: String,
    /// inspect, lm-eval or promptfoo.
    pub harness: String,
    /// The harness version the file records, when it does.
    pub version: Option<String>,
    /// What was taken from it, in words.
    pub taken: String,
    /// The run it holds, when the harness names runs (Inspect: eval id, task, model and
    /// arguments): a later `--into` reads the same run once, whatever file holds it.
    pub run: Option<String>,
    /// The arm the file's samples went to, when it is one arm.
    pub arm: Option<String>,
    /// What makes the file's arm what it is, when the harness says (Inspect: task, model and
    /// task arguments): a later `--into` puts logs of the same configuration in the same arm,
    /// and never a different configuration under an existing arm's name.
    pub config: Option<String>,
}

/// What a reader found.
#[derive(Debug, Clone, Default)]
pub struct Imported {
    /// The scored samples.
    pub observations: Vec<Observation>,
    /// Every file read.
    pub sources: Vec<Source>,
    /// What was left out, and why (a cancelled log, an errored sample, …).
    pub skipped: Vec<String>,
    /// Scores found (scorers, metrics or named scores).
    pub scores_found: Vec<String>,
    /// The score taken, and why.
    pub score_choice: String,
    /// Where arms came from, and why.
    pub arm_choice: String,
    /// How cases were formed (which id, and when ids were split because their content differs).
    pub case_choice: String,
    /// How tokens_in was counted, and from where.
    pub tokens_counted: String,
    /// Set name from the logs.
    pub set: Option<String>,
    /// Model from the logs.
    pub model: Option<String>,
    /// When the logs were made (a date).
    pub measured_at: Option<String>,
    /// Other things to know (e.g. what tokens_in counts).
    pub notes: Vec<String>,
    /// Each arm's full prompt template, when the harness records one (promptfoo): the arms
    /// table's `prompt` column.
    pub prompts: BTreeMap<String, String>,
    /// One row per harness run read: the `runs` table.
    pub runs: Vec<crate::io::runs::RunRow>,
}

/// A file's read, under `--skip-invalid`: a file that cannot be read as the harness's (bad input,
/// exit code 2) is skipped, listed in `imp.skipped` and as a `sources` row with its reason, and
/// `None` is returned; without the option the error is returned with a pointer to it. Internal
/// failures are returned either way.
///
/// # Errors
/// As above.
pub(crate) fn or_skip<T>(
    r: Result<T>,
    path: &std::path::Path,
    harness: &str,
    opts: &ImportOptions,
    imp: &mut Imported,
) -> Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.exit_code() != 2 => Err(e),
        Err(e) if opts.skip_invalid => {
            let text = e.to_string();
            let shown = format!("{}: ", path.display());
            let reason = text
                .strip_prefix(&shown)
                .unwrap_or(&text)
                .lines()
                .next()
                .unwrap_or_default()
                .to_string();
            imp.skipped.push(format!(
                "{}: skipped (--skip-invalid): {reason}",
                path.display()
            ));
            imp.sources.push(Source {
                file: path.display().to_string(),
                sha256: sha256_file(path).unwrap_or_default(),
                harness: harness.into(),
                version: None,
                taken: format!("skipped (--skip-invalid): {reason}"),
                run: None,
                arm: None,
                config: None,
            });
            Ok(None)
        }
        Err(e) => Err(with_skip_hint(e)),
    }
}

/// The error with "or pass --skip-invalid" added to what it says to do.
fn with_skip_hint(e: Error) -> Error {
    const HINT: &str =
        "; or pass --skip-invalid to skip the files that cannot be read (each is listed)";
    match e {
        Error::Unreadable { path, problem, fix } => Error::Unreadable {
            path,
            problem,
            fix: fix + HINT,
        },
        Error::BadValue {
            path,
            column,
            row,
            value,
            problem,
            fix,
        } => Error::BadValue {
            path,
            column,
            row,
            value,
            problem,
            fix: fix + HINT,
        },
        other => other,
    }
}

/// The mean of the scores of the observations from `from` on (those one run just added), `None`
/// when it added none.
pub(crate) fn mean_since(observations: &[Observation], from: usize) -> Option<f64> {
    let added = &observations[from..];
    (!added.is_empty())
        .then(|| crate::stats::moments::mean(&added.iter().map(|o| o.score).collect::<Vec<_>>()))
}

/// One arm of the imported experiment.
#[derive(Debug, Clone, Serialize)]
pub struct ArmSummary {
    /// Label.
    pub arm: String,
    /// Cases with at least one scored sample.
    pub cases: usize,
    /// Fewest repeats of a case.
    pub repeats_min: usize,
    /// Most repeats of a case.
    pub repeats_max: usize,
    /// The arm's score: the mean over its cases of each case's mean over its repeats (as
    /// `sweep` defines an arm's score, over the arm's own cases).
    pub mean_score: f64,
    /// Mean input tokens, when logged.
    pub tokens_in_mean: Option<f64>,
}

/// What `ablate import` reports.
#[derive(Debug, Clone, Serialize)]
pub struct ImportSummary {
    /// The experiment folder written.
    pub out: String,
    /// inspect, lm-eval or promptfoo.
    pub harness: String,
    /// Files read.
    pub files: usize,
    /// Distinct cases.
    pub cases: usize,
    /// Result rows written.
    pub rows: usize,
    /// Per arm: cases, repeats, mean score.
    pub arms: Vec<ArmSummary>,
    /// The baseline arm.
    pub baseline: String,
    /// Why it is the baseline.
    pub baseline_choice: String,
    /// Scores found.
    pub scores_found: Vec<String>,
    /// The score taken, and why.
    pub score_choice: String,
    /// Where arms came from, and why.
    pub arm_choice: String,
    /// How cases were formed.
    pub case_choice: String,
    /// How tokens_in was counted, and from where.
    pub tokens_counted: String,
    /// Rows whose `passed` flag (the harness's own pass/fail) disagrees with score ≥ pass_mark
    /// (0.5); `None` when the logs carry no pass/fail. The flag decides lost cases, churn and
    /// McNemar.
    pub passed_disagreements: Option<usize>,
    /// Metadata columns written to `cases`.
    pub case_columns: Vec<String>,
    /// Stratum columns named in experiment.toml (`--strata`).
    pub strata: Vec<String>,
    /// threshold_drop, or null when a placeholder was written.
    pub threshold_drop: Option<f64>,
    /// What was skipped, and why.
    pub skipped: Vec<String>,
    /// Other things to know.
    pub notes: Vec<String>,
    /// The lowest score imported.
    pub score_min: f64,
    /// The highest score imported.
    pub score_max: f64,
    /// One row per harness run read, with the runs that stand out flagged.
    pub runs: Vec<crate::io::runs::RunRow>,
    /// Files written, relative to `out`.
    pub written: Vec<String>,
}

pub use crate::io::output::sha256_file;

#[cfg(test)]
mod tests {
    use super::plan::choose_baseline;
    use super::*;
    use serde_json::json;

    #[test]
    fn inspect_values_map_like_value_to_float() {
        for (v, want) in [
            (json!("C"), Some(1.0)),
            (json!("I"), Some(0.0)),
            (json!("P"), Some(0.5)),
            (json!("N"), Some(0.0)),
            (json!(true), Some(1.0)),
            (json!(false), Some(0.0)),
            (json!("yes"), Some(1.0)),
            (json!("0.25"), Some(0.25)),
            (json!(0.75), Some(0.75)),
            (json!(3), Some(3.0)),
            (json!({"a": 1}), None),
            (json!([1, 2]), None),
            (json!("maybe"), None),
            (json!(null), None),
        ] {
            assert_eq!(value_to_float(&v), want, "{v}");
        }
    }

    fn arm(name: &str, tokens: Option<f64>) -> ArmSummary {
        ArmSummary {
            arm: name.into(),
            cases: 1,
            repeats_min: 1,
            repeats_max: 1,
            mean_score: 0.5,
            tokens_in_mean: tokens,
        }
    }

    #[test]
    fn baseline_is_named_or_the_longest_prompt() {
        let arms = vec![arm("a", Some(100.0)), arm("full", Some(50.0))];
        assert_eq!(choose_baseline(&arms, None).unwrap().0, "full");
        let arms = vec![arm("a", Some(100.0)), arm("b", Some(150.0))];
        assert_eq!(choose_baseline(&arms, None).unwrap().0, "b");
        assert_eq!(choose_baseline(&arms, Some("a")).unwrap().0, "a");
        assert!(choose_baseline(&arms, Some("zzz")).is_err());
        let arms = vec![arm("a", None), arm("b", None)];
        assert!(choose_baseline(&arms, None).is_err());
    }
}
