//! `ablate import`: the logs of the harness an analyst already runs (Inspect AI, lm-evaluation-
//! harness, promptfoo) turned into an experiment folder that every verb reads.
//!
//! Each reader ([`inspect`], [`lm_eval`], [`promptfoo`]) turns its files into [`Observation`]s:
//! one scored sample each, with its case, arm, an ordering key for repeats, tokens and strata. It
//! reports every file it read ([`Source`], with its SHA-256) and everything it skipped, and why.
//! [`write`] then numbers the repeats (1, 2, … per case and arm, in the order the harness ran
//! them), chooses the baseline, and writes `results`, `cases`, `arms` and `sources` as Parquet
//! with `experiment.toml`, atomically, into a folder ablate may write.

pub mod append;
pub mod inspect;
pub mod lm_eval;
pub mod promptfoo;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use polars::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::io::manifest::THRESHOLD_PLACEHOLDER;
use crate::io::output::AtomicDir;

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
    /// lm-eval: skip samples whose score is NaN or infinite instead of failing.
    pub skip_nonfinite: bool,
    /// `--arm NAME=GLOB`, in order: the arm of every source file matching GLOB is NAME (a folder
    /// matches everything under it).
    pub arm_globs: Vec<(String, String)>,
}

/// `--arm NAME=GLOB` rules, compiled: which arm name a source file gets.
#[derive(Debug, Default)]
pub struct ArmNames {
    rules: Vec<(String, String, globset::GlobMatcher)>,
}

impl ArmNames {
    /// Compiles the rules. A GLOB that is an existing folder matches every file under it
    /// (`runs/before` is `runs/before/**`); `*` does not cross `/`, `**` does.
    ///
    /// # Errors
    /// A rule that is not `NAME=GLOB`, an empty name, or a pattern globset cannot read.
    pub fn new(rules: &[(String, String)]) -> Result<ArmNames> {
        let mut out = Vec::new();
        for (name, glob) in rules {
            let pattern = normalise_path(glob);
            let pattern = if Path::new(glob).is_dir() {
                format!("{}/**", pattern.trim_end_matches('/'))
            } else {
                pattern
            };
            let matcher = globset::GlobBuilder::new(&pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| {
                    Error::Usage(format!(
                        "--arm {name}={glob}: not a pattern ablate can read ({e}); e.g. --arm before=runs/before/** (quote it so the shell leaves it alone)"
                    ))
                })?
                .compile_matcher();
            out.push((name.clone(), glob.clone(), matcher));
        }
        Ok(ArmNames { rules: out })
    }

    /// Compiles the rules and checks them against the files read: a rule that matches none of
    /// them is a typo (or files left out), refused by name. `what` names the files (e.g. "logs").
    ///
    /// # Errors
    /// As [`ArmNames::new`], and a rule that matches no file.
    pub fn for_files(
        rules: &[(String, String)],
        files: &[PathBuf],
        what: &str,
    ) -> Result<ArmNames> {
        let names = ArmNames::new(rules)?;
        let unmatched = names.unmatched(files);
        if !unmatched.is_empty() {
            return Err(Error::Usage(format!(
                "--arm {}: matches none of the {} {what} read ({}); check the pattern (quote it so the shell leaves it alone)",
                unmatched.join(", --arm "),
                files.len(),
                files
                    .iter()
                    .take(3)
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        Ok(names)
    }

    /// Whether any rule was given.
    pub fn any(&self) -> bool {
        !self.rules.is_empty()
    }

    /// The arm a file belongs to by the rules, `None` when no rule matches.
    ///
    /// # Errors
    /// A file that rules with different names both match.
    pub fn name_of(&self, file: &Path) -> Result<Option<String>> {
        let path = normalise_path(&file.to_string_lossy());
        let hits: Vec<&(String, String, globset::GlobMatcher)> = self
            .rules
            .iter()
            .filter(|(_, _, m)| m.is_match(&path))
            .collect();
        let names: BTreeSet<&String> = hits.iter().map(|(n, _, _)| n).collect();
        match names.len() {
            0 => Ok(None),
            1 => Ok(Some(hits[0].0.clone())),
            _ => Err(Error::Usage(format!(
                "{}: matched by --arm rules naming different arms ({}); make the patterns exclusive",
                file.display(),
                hits.iter()
                    .map(|(n, g, _)| format!("{n}={g}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// The rules no file matched, as `NAME=GLOB` (a typo, or files left out).
    pub fn unmatched(&self, files: &[PathBuf]) -> Vec<String> {
        self.rules
            .iter()
            .filter(|(_, _, m)| {
                !files
                    .iter()
                    .any(|f| m.is_match(normalise_path(&f.to_string_lossy())))
            })
            .map(|(n, g, _)| format!("{n}={g}"))
            .collect()
    }
}

/// A path as rules match it: `/` separators, no leading `./`.
fn normalise_path(p: &str) -> String {
    let p = p.replace('\\', "/");
    let mut s = p.as_str();
    while let Some(rest) = s.strip_prefix("./") {
        s = rest;
    }
    s.to_string()
}

/// Parses one `--arm NAME=GLOB` value.
///
/// # Errors
/// No `=`, or an empty name or pattern.
pub fn parse_arm_rule(text: &str) -> std::result::Result<(String, String), String> {
    match text.split_once('=') {
        Some((n, g)) if !n.trim().is_empty() && !g.is_empty() => {
            Ok((n.trim().to_string(), g.to_string()))
        }
        _ => Err(format!(
            "`{text}` is not NAME=GLOB; e.g. --arm before='runs/before/**'"
        )),
    }
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
    /// Mean score over every sample.
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
    /// Files written, relative to `out`.
    pub written: Vec<String>,
}

pub use crate::io::output::sha256_file;

/// The date at the start of a timestamp (`2026-11-30T…` → `2026-11-30`), when the first ten
/// characters are one: four digits, `-`, two digits, `-`, two digits. Never slices inside a
/// character.
pub fn date_prefix(stamp: &str) -> Option<&str> {
    let day = stamp.get(..10)?;
    let b = day.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    (digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10)).then_some(day)
}

/// Deepest nesting JSON may have in a log (serde_json's own limit).
pub const MAX_JSON_DEPTH: usize = 128;

/// How deeply the arrays and objects of a JSON text nest, counting brackets outside strings.
pub fn json_depth(text: &str) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in text.as_bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// A file's text, or a refusal naming the first line that is not UTF-8 (exit 2).
///
/// # Errors
/// The file cannot be read; it is not UTF-8 text.
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        not_utf8(path, line)
    })
}

/// The refusal for a line that is not UTF-8 text.
pub fn not_utf8(path: &Path, line: usize) -> Error {
    Error::Unreadable {
        path: path.to_path_buf(),
        problem: format!("line {line} is not UTF-8 text"),
        fix: "the harnesses write UTF-8: the file may be damaged, or re-encoded by another tool; save it as UTF-8".into(),
    }
}

/// A line read from a log, with a line that is not UTF-8 refused as bad input (exit 2) rather than
/// reported as a failed read.
///
/// # Errors
/// The line is not UTF-8; the file cannot be read.
pub fn log_line(path: &Path, number: usize, line: std::io::Result<String>) -> Result<String> {
    line.map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidData {
            not_utf8(path, number)
        } else {
            Error::io(path, e)
        }
    })
}

/// The files to read: each given file, and every file under each given folder (recursively)
/// whose name `wanted` accepts, sorted by path so the same folder always imports the same way.
/// Symbolic links inside a folder are not followed (a link may lead out of the folder, or in a
/// circle); each one is named in the import summary's `skipped`, which this adds to.
///
/// # Errors
/// A source that does not exist; no file found (naming what was looked for).
pub fn collect_files(
    sources: &[PathBuf],
    wanted: impl Fn(&Path) -> bool,
    what: &str,
    skipped: &mut Vec<String>,
) -> Result<Vec<PathBuf>> {
    fn walk(
        dir: &Path,
        wanted: &dyn Fn(&Path) -> bool,
        out: &mut Vec<PathBuf>,
        links: &mut Vec<PathBuf>,
    ) -> Result<()> {
        let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            let path = entry.path();
            let kind = entry.file_type().map_err(|e| Error::io(&path, e))?;
            if kind.is_symlink() {
                links.push(path);
            } else if kind.is_dir() {
                walk(&path, wanted, out, links)?;
            } else if kind.is_file() && wanted(&path) {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    let mut links = Vec::new();
    for s in sources {
        if s.is_dir() {
            let mut found = Vec::new();
            walk(s, &wanted, &mut found, &mut links)?;
            found.sort();
            files.extend(found);
        } else if s.is_file() {
            files.push(s.clone());
        } else {
            return Err(Error::NotFound {
                path: s.clone(),
                fix: format!("give {what} files, or folders holding them"),
            });
        }
    }
    links.sort();
    for link in &links {
        skipped.push(format!(
            "{}: a symbolic link inside a source folder, not followed (give its target as a source to import it)",
            link.display()
        ));
    }
    let mut seen = BTreeSet::new();
    files.retain(|f| seen.insert(f.clone()));
    if files.is_empty() {
        let given: Vec<String> = sources.iter().map(|s| s.display().to_string()).collect();
        return Err(Error::Usage(format!(
            "{}: no {what} file there{}; give the files themselves, or a folder holding them (the harness given first to `ablate import` decides what is looked for)",
            given.join(", "),
            if links.is_empty() {
                String::new()
            } else {
                format!(" ({} symbolic link(s) not followed)", links.len())
            }
        )));
    }
    Ok(files)
}

/// A score value as Inspect's `value_to_float` reads it: `C` (correct) 1, `I` (incorrect) 0,
/// `P` (partial) 0.5, `N` (no answer) 0; `yes`/`true` 1 and `no`/`false` 0 (any case); a
/// numeric string as its number; booleans 1/0; numbers as they are. `None` for anything else.
pub fn value_to_float(v: &serde_json::Value) -> Option<f64> {
    match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        serde_json::Value::String(s) => match s.as_str() {
            "C" => Some(1.0),
            "I" | "N" => Some(0.0),
            "P" => Some(0.5),
            other => match other.to_ascii_lowercase().as_str() {
                "yes" | "true" => Some(1.0),
                "no" | "false" => Some(0.0),
                t => t.parse::<f64>().ok().filter(|x| x.is_finite()),
            },
        },
        _ => None,
    }
}

/// A scalar JSON value (text, number, boolean) as text; `None` for null, lists and objects.
pub fn scalar_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The scalar fields of a JSON object (metadata, a dataset row) as text, candidate stratum
/// columns; fields whose name starts with `_` are the harness's own and are left out.
pub fn scalar_fields(v: Option<&serde_json::Value>) -> BTreeMap<String, String> {
    v.and_then(serde_json::Value::as_object)
        .map(|m| {
            m.iter()
                .filter(|(k, _)| !k.starts_with('_'))
                .filter_map(|(k, v)| Some((k.clone(), scalar_text(v)?)))
                .collect()
        })
        .unwrap_or_default()
}

/// Longest text of a metadata value kept as a case column, in bytes: a stratum is a short label,
/// and a longer value (a document, a transcript) is refused rather than held in memory for every
/// case.
pub const MAX_CASE_TEXT: usize = 64 * 1024;

/// Case columns ablate gives a meaning of its own: a metadata field of that name is not a stratum.
const RESERVED_CASE_COLUMNS: &[&str] = &["case_id", "stress", "cluster", "gold_rank"];

/// Refuses a `--strata` list that names a field twice or names a column ablate reserves.
fn check_strata_option(strata: &[String]) -> Result<()> {
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
/// ids and arm labels without control characters, finite scores within ±[`MAX_SCORE`], input
/// tokens not negative, metadata values kept as case columns no longer than [`MAX_CASE_TEXT`].
///
/// [`MAX_SCORE`]: crate::io::results::MAX_SCORE
fn check_observations(observations: &[Observation]) -> Result<()> {
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
    let control = |t: &str| t.chars().any(char::is_control);
    for o in observations {
        if control(&o.case_id) {
            return Err(refuse(
                o,
                "case_id",
                format!("{:?}", o.case_id),
                "a case id with a control character (a line break, a tab, an escape code) cannot be told apart in tables and reports".into(),
                "give the samples ids without control characters in the harness, or import with another --case-from",
            ));
        }
        if control(&o.arm) {
            return Err(refuse(
                o,
                "arm",
                format!("{:?}", o.arm),
                "an arm label with a control character cannot be told apart in tables and reports"
                    .into(),
                "rename the source (file, task argument) the arm comes from, or choose another --arm-from",
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
fn check_strata_lengths(observations: &[Observation], strata: &[String]) -> Result<()> {
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

/// An import ready to write: validated observations with their repeat numbers, the baseline,
/// the case columns, and what the summary says about them.
pub(crate) struct Plan {
    pub(crate) harness: String,
    pub(crate) imp: Imported,
    /// Repeat number of each observation (same order).
    pub(crate) repeats: Vec<i64>,
    pub(crate) baseline: String,
    pub(crate) baseline_choice: String,
    /// Whether every observation carries the harness's pass/fail.
    pub(crate) passed_column: bool,
    pub(crate) passed_disagreements: Option<usize>,
    /// Case columns written to `cases`.
    pub(crate) strata: Vec<String>,
}

/// What an experiment already holds when logs are appended to it (`--into`).
pub(crate) struct Prior<'a> {
    /// Its results, as observations (order = (0, repeat, 0)).
    pub(crate) observations: &'a [Observation],
    /// Its baseline arm.
    pub(crate) baseline: &'a str,
}

impl Plan {
    /// Validates `imp` and numbers its repeats: 1, 2, … per (case, arm) in the order the harness
    /// ran them, after the repeats `prior` already holds.
    ///
    /// # Errors
    /// Nothing scored; a bad threshold or strata option; bad observations; a baseline that is not
    /// an arm; arms sharing no case with the baseline.
    pub(crate) fn new(
        harness: &str,
        mut imp: Imported,
        opts: &ImportOptions,
        prior: Option<&Prior<'_>>,
    ) -> Result<Plan> {
        if imp.observations.is_empty() {
            return Err(Error::Usage(format!(
                "no scored sample in the {harness} logs{}; nothing to import",
                if imp.skipped.is_empty() {
                    String::new()
                } else {
                    format!(" (skipped: {})", imp.skipped.join("; "))
                }
            )));
        }
        if let Some(t) = opts.threshold
            && !(t.is_finite() && t >= 0.0)
        {
            return Err(Error::Usage(format!(
                "--threshold {t}: a drop threshold is a finite number, 0 or more (e.g. 0.02)"
            )));
        }
        check_strata_option(&opts.strata)?;
        check_observations(&imp.observations)?;
        imp.observations
            .sort_by(|a, b| (&a.arm, &a.case_id, a.order).cmp(&(&b.arm, &b.case_id, b.order)));
        let mut last: BTreeMap<(&str, &str), i64> = BTreeMap::new();
        for o in prior.map(|p| p.observations).unwrap_or_default() {
            let r = last
                .entry((o.arm.as_str(), o.case_id.as_str()))
                .or_insert(0);
            *r = (*r).max(o.order.1);
        }
        let mut repeats = Vec::with_capacity(imp.observations.len());
        for (i, o) in imp.observations.iter().enumerate() {
            let same = i > 0 && {
                let p = &imp.observations[i - 1];
                p.arm == o.arm && p.case_id == o.case_id
            };
            repeats.push(if same {
                repeats[i - 1] + 1
            } else {
                last.get(&(o.arm.as_str(), o.case_id.as_str()))
                    .copied()
                    .unwrap_or(0)
                    + 1
            });
        }

        let (baseline, baseline_choice, arms) = match prior {
            None => {
                let arms = arm_summaries(&imp.observations);
                let (b, why) = choose_baseline(&arms, opts.baseline.as_deref())?;
                (b, why, arms)
            }
            Some(p) => {
                let mut all: Vec<Observation> = p.observations.to_vec();
                all.extend(imp.observations.iter().cloned());
                all.sort_by(|a, b| a.arm.cmp(&b.arm));
                (
                    p.baseline.to_string(),
                    "baseline_arm of the experiment's experiment.toml".into(),
                    arm_summaries(&all),
                )
            }
        };
        match prior {
            None => check_comparable(&imp.observations, &arms, &baseline)?,
            Some(p) => {
                let mut all: Vec<Observation> = p.observations.to_vec();
                all.extend(imp.observations.iter().cloned());
                check_comparable(&all, &arms, &baseline)?;
            }
        }
        if arms.len() < 2 {
            imp.notes.insert(0, format!(
                "NOTHING TO COMPARE YET: the logs make one arm only (`{baseline}`), so `ablate check` refuses the folder until it holds an arm to compare. Import the arms' logs together with the baseline's, or name the arms of the files with --arm NAME=GLOB (e.g. --arm before='runs/before/**' --arm after='runs/after/**')"
            ));
        }
        // The harness's pass/fail: a `passed` column when every row has one.
        let with_flag = imp
            .observations
            .iter()
            .filter(|o| o.passed.is_some())
            .count();
        let passed_column = with_flag == imp.observations.len();
        if with_flag > 0 && !passed_column {
            imp.notes.push(format!(
                "{with_flag} of {} rows carry the harness's pass/fail and the others do not: no `passed` column is written, and score ≥ pass_mark decides passes",
                imp.observations.len()
            ));
        }
        let passed_disagreements = passed_column.then(|| {
            imp.observations
                .iter()
                .filter(|o| o.passed != Some(o.score >= DEFAULT_PASS_MARK))
                .count()
        });
        let strata = case_columns(&mut imp, opts)?;
        Ok(Plan {
            harness: harness.to_string(),
            imp,
            repeats,
            baseline,
            baseline_choice,
            passed_column,
            passed_disagreements,
            strata,
        })
    }

    /// The first value each case's metadata gives, by case id.
    fn per_case(&self) -> BTreeMap<&str, &BTreeMap<String, String>> {
        let mut per_case: BTreeMap<&str, &BTreeMap<String, String>> = BTreeMap::new();
        for o in &self.imp.observations {
            per_case.entry(o.case_id.as_str()).or_insert(&o.strata);
        }
        per_case
    }

    /// The results table of the new observations.
    pub(crate) fn results_frame(&self) -> Result<DataFrame> {
        let obs = &self.imp.observations;
        let mut columns = vec![
            Column::new(
                "case_id".into(),
                obs.iter().map(|o| o.case_id.as_str()).collect::<Vec<_>>(),
            ),
            Column::new(
                "arm".into(),
                obs.iter().map(|o| o.arm.as_str()).collect::<Vec<_>>(),
            ),
            Column::new("repeat".into(), self.repeats.clone()),
            Column::new(
                "score".into(),
                obs.iter().map(|o| o.score).collect::<Vec<_>>(),
            ),
        ];
        if obs.iter().any(|o| o.tokens_in.is_some()) {
            columns.push(Column::new(
                "tokens_in".into(),
                obs.iter().map(|o| o.tokens_in).collect::<Vec<_>>(),
            ));
        }
        if self.passed_column {
            columns.push(Column::new(
                "passed".into(),
                obs.iter()
                    .map(|o| o.passed.unwrap_or(false))
                    .collect::<Vec<_>>(),
            ));
        }
        DataFrame::new(obs.len(), columns).map_err(|e| building("results", e))
    }

    /// The cases table of the new observations' cases.
    pub(crate) fn cases_frame(&self) -> Result<DataFrame> {
        let per_case = self.per_case();
        let ids: Vec<&str> = per_case.keys().copied().collect();
        let mut columns = vec![Column::new("case_id".into(), ids.clone())];
        for s in &self.strata {
            columns.push(Column::new(
                s.as_str().into(),
                ids.iter()
                    .map(|id| per_case[id].get(s).cloned())
                    .collect::<Vec<Option<String>>>(),
            ));
        }
        DataFrame::new(ids.len(), columns).map_err(|e| building("cases", e))
    }

    /// The arms table of `names` (nothing removed: imported arms are prompt variants).
    pub(crate) fn arms_frame(&self, names: &[&str]) -> Result<DataFrame> {
        let empty: Vec<Series> = names
            .iter()
            .map(|_| Series::new_empty("".into(), &DataType::String))
            .collect();
        let removed = Series::new("removed".into(), empty);
        DataFrame::new(
            names.len(),
            vec![
                Column::new("arm".into(), names.to_vec()),
                removed.into_column(),
                Column::new(
                    "imported_from".into(),
                    names
                        .iter()
                        .map(|_| self.imp.arm_choice.as_str())
                        .collect::<Vec<_>>(),
                ),
            ],
        )
        .map_err(|e| building("arms", e))
    }

    /// The sources table of the files read.
    pub(crate) fn sources_frame(&self) -> Result<DataFrame> {
        let src = &self.imp.sources;
        DataFrame::new(
            src.len(),
            vec![
                Column::new(
                    "file".into(),
                    src.iter().map(|s| s.file.as_str()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "sha256".into(),
                    src.iter().map(|s| s.sha256.as_str()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "harness".into(),
                    src.iter().map(|s| s.harness.as_str()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "version".into(),
                    src.iter().map(|s| s.version.clone()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "taken".into(),
                    src.iter().map(|s| s.taken.as_str()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "run".into(),
                    src.iter().map(|s| s.run.clone()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "arm".into(),
                    src.iter().map(|s| s.arm.clone()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "config".into(),
                    src.iter().map(|s| s.config.clone()).collect::<Vec<_>>(),
                ),
            ],
        )
        .map_err(|e| building("sources", e))
    }

    /// The summary, given the folder written, its arms and cases, and the files written.
    pub(crate) fn summary(
        self,
        out: String,
        arms: Vec<ArmSummary>,
        cases: usize,
        rows: usize,
        opts: &ImportOptions,
        written: Vec<String>,
    ) -> ImportSummary {
        ImportSummary {
            out,
            harness: self.harness,
            files: self.imp.sources.len(),
            cases,
            rows,
            arms,
            baseline: self.baseline,
            baseline_choice: self.baseline_choice,
            scores_found: self.imp.scores_found,
            score_choice: self.imp.score_choice,
            arm_choice: self.imp.arm_choice,
            case_choice: self.imp.case_choice,
            tokens_counted: self.imp.tokens_counted,
            passed_disagreements: self.passed_disagreements,
            case_columns: self.strata,
            strata: opts.strata.clone(),
            threshold_drop: opts.threshold,
            skipped: self.imp.skipped,
            notes: self.imp.notes,
            written,
        }
    }
}

/// A Polars error while building a table.
pub(crate) fn building(what: &str, e: PolarsError) -> Error {
    Error::Polars {
        context: format!("building {what}"),
        source: e,
    }
}

/// Case columns: the --strata fields, or every scalar metadata field every case has. Only
/// --strata become the manifest's `strata` (reweighting crosses them all).
fn case_columns(imp: &mut Imported, opts: &ImportOptions) -> Result<Vec<String>> {
    let mut per_case: BTreeMap<&str, &BTreeMap<String, String>> = BTreeMap::new();
    for o in &imp.observations {
        per_case.entry(o.case_id.as_str()).or_insert(&o.strata);
    }
    if !opts.strata.is_empty() {
        check_strata_lengths(&imp.observations, &opts.strata)?;
        for s in &opts.strata {
            if !per_case.values().any(|m| m.contains_key(s)) {
                let found: BTreeSet<&String> = per_case.values().flat_map(|m| m.keys()).collect();
                return Err(Error::Usage(format!(
                    "--strata {s}: no sample has a scalar metadata field `{s}`; fields found: {}",
                    if found.is_empty() {
                        "none".to_string()
                    } else {
                        found.into_iter().cloned().collect::<Vec<_>>().join(", ")
                    }
                )));
            }
        }
        return Ok(opts.strata.clone());
    }
    let mut common: Option<BTreeSet<&String>> = None;
    for m in per_case.values() {
        let keys: BTreeSet<&String> = m.keys().collect();
        common = Some(match common {
            None => keys,
            Some(c) => c.intersection(&keys).copied().collect(),
        });
    }
    let mut kept: Vec<String> = common
        .unwrap_or_default()
        .into_iter()
        .filter(|k| !RESERVED_CASE_COLUMNS.contains(&k.as_str()))
        .cloned()
        .collect();
    // A field with a long value somewhere is text, not a stratum: left out, and said.
    let mut notes = Vec::new();
    kept.retain(|k| {
        let long = per_case
            .values()
            .any(|m| m.get(k).is_some_and(|v| v.len() > MAX_CASE_TEXT));
        if long {
            notes.push(format!(
                "metadata field `{k}` is left out of the cases table: some values are longer than {MAX_CASE_TEXT} bytes (text, not a stratum)"
            ));
        }
        !long
    });
    imp.notes.extend(notes);
    Ok(kept)
}

/// Writes the experiment folder for `imp` into `out` and returns the summary.
///
/// # Errors
/// Nothing scored; a baseline that is not an arm; a folder ablate may not write; a write failure.
pub fn write(
    harness: &str,
    imp: Imported,
    opts: &ImportOptions,
    out: &Path,
) -> Result<ImportSummary> {
    let plan = Plan::new(harness, imp, opts, None)?;
    let dir = AtomicDir::create(out)?;
    let mut written = Vec::new();
    put_parquet(
        &dir,
        &mut written,
        "results.parquet",
        &mut plan.results_frame()?,
    )?;
    let mut cases = plan.cases_frame()?;
    put_parquet(&dir, &mut written, "cases.parquet", &mut cases)?;
    let arms = arm_summaries(&plan.imp.observations);
    let names: Vec<&str> = arms.iter().map(|a| a.arm.as_str()).collect();
    put_parquet(
        &dir,
        &mut written,
        "arms.parquet",
        &mut plan.arms_frame(&names)?,
    )?;
    put_parquet(
        &dir,
        &mut written,
        "sources.parquet",
        &mut plan.sources_frame()?,
    )?;

    let set = opts
        .set
        .clone()
        .or(plan.imp.set.clone())
        .unwrap_or_else(|| format!("{harness}-import"));
    let manifest = manifest_text(
        harness,
        &set,
        &plan.imp,
        &plan.baseline,
        opts.threshold,
        &opts.strata,
    );
    let path = dir.path("experiment.toml");
    std::fs::write(&path, manifest).map_err(|e| Error::io(&path, e))?;
    written.push("experiment.toml".into());
    written.sort();
    let committed = dir.commit()?;
    let rows = plan.imp.observations.len();
    Ok(plan.summary(
        committed.display().to_string(),
        arms,
        cases.height(),
        rows,
        opts,
        written,
    ))
}

pub(crate) fn put_parquet(
    dir: &AtomicDir,
    written: &mut Vec<String>,
    name: &str,
    df: &mut DataFrame,
) -> Result<()> {
    crate::io::write::parquet(df, &dir.path(name))?;
    written.push(name.to_string());
    Ok(())
}

/// The pass mark an import judges `passed` flags against (experiment.toml's default).
const DEFAULT_PASS_MARK: f64 = 0.5;

/// Refuses an import whose arms cannot be compared: an arm that shares no case with the baseline
/// (different documents under the same ids, or different tasks). A single arm is written with a
/// note, and `ablate check` refuses it until another arm is added.
fn check_comparable(obs: &[Observation], arms: &[ArmSummary], baseline: &str) -> Result<()> {
    let base_cases: BTreeSet<&str> = obs
        .iter()
        .filter(|o| o.arm == baseline)
        .map(|o| o.case_id.as_str())
        .collect();
    let mut shared: BTreeMap<&str, bool> = arms
        .iter()
        .filter(|a| a.arm != baseline)
        .map(|a| (a.arm.as_str(), false))
        .collect();
    for o in obs {
        if o.arm != baseline && base_cases.contains(o.case_id.as_str()) {
            shared.insert(o.arm.as_str(), true);
        }
    }
    let alone: Vec<&str> = shared
        .iter()
        .filter(|(_, s)| !**s)
        .map(|(a, _)| *a)
        .collect();
    if !alone.is_empty() {
        return Err(Error::Usage(format!(
            "arm{} {} share{} no case with the baseline `{baseline}`: the ids may match, but the documents differ (or the arms ran on different sets), so nothing can be paired. Import arms that ran on the same cases, choose another baseline with --baseline, or import each set on its own",
            if alone.len() > 1 { "s" } else { "" },
            alone
                .iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(", "),
            if alone.len() > 1 { "" } else { "s" },
        )));
    }
    Ok(())
}

/// Cases, repeats, mean score and tokens per arm (observations sorted by arm).
pub(crate) fn arm_summaries(obs: &[Observation]) -> Vec<ArmSummary> {
    let mut out: Vec<ArmSummary> = Vec::new();
    let mut i = 0;
    while i < obs.len() {
        let arm = &obs[i].arm;
        let mut j = i;
        let mut per_case: BTreeMap<&str, usize> = BTreeMap::new();
        while j < obs.len() && obs[j].arm == *arm {
            *per_case.entry(obs[j].case_id.as_str()).or_insert(0) += 1;
            j += 1;
        }
        let scores = obs[i..j].iter().map(|o| o.score);
        let tokens: Vec<f64> = obs[i..j]
            .iter()
            .filter_map(|o| o.tokens_in.map(|t| t as f64))
            .collect();
        out.push(ArmSummary {
            arm: arm.clone(),
            cases: per_case.len(),
            repeats_min: per_case.values().copied().min().unwrap_or(0),
            repeats_max: per_case.values().copied().max().unwrap_or(0),
            mean_score: crate::stats::moments::mean(&scores.collect::<Vec<_>>()),
            tokens_in_mean: (!tokens.is_empty()).then(|| crate::stats::moments::mean(&tokens)),
        });
        i = j;
    }
    out
}

/// The baseline: the one asked for; else an arm named `baseline` or `full`; else the arm with
/// the most input tokens (the full prompt sends the most); else the only arm.
fn choose_baseline(arms: &[ArmSummary], asked: Option<&str>) -> Result<(String, String)> {
    let names = || {
        arms.iter()
            .map(|a| a.arm.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(b) = asked {
        return if arms.iter().any(|a| a.arm == b) {
            Ok((b.to_string(), "--baseline".into()))
        } else {
            Err(Error::Usage(format!(
                "--baseline {b} is not an arm of these logs; arms: {}",
                names()
            )))
        };
    }
    for name in ["baseline", "full"] {
        if arms.iter().any(|a| a.arm == name) {
            return Ok((name.to_string(), format!("the arm named `{name}`")));
        }
    }
    if arms.len() == 1 {
        return Ok((arms[0].arm.clone(), "the only arm".into()));
    }
    let with_tokens: Vec<&ArmSummary> =
        arms.iter().filter(|a| a.tokens_in_mean.is_some()).collect();
    if with_tokens.len() == arms.len() {
        let mut sorted = with_tokens.clone();
        sorted.sort_by(|a, b| {
            b.tokens_in_mean
                .partial_cmp(&a.tokens_in_mean)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        if sorted[0].tokens_in_mean > sorted[1].tokens_in_mean {
            return Ok((
                sorted[0].arm.clone(),
                format!(
                    "the arm with the most input tokens ({:.0} a sample): the full prompt sends the most; use --baseline to choose another",
                    sorted[0].tokens_in_mean.unwrap_or(0.0)
                ),
            ));
        }
    }
    Err(Error::Usage(format!(
        "cannot tell which arm is the baseline (the full prompt): none is named `baseline` or `full`, and input tokens do not single one out. Give --baseline ARM; arms: {}",
        names()
    )))
}

/// A TOML string literal.
fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// experiment.toml for an import.
fn manifest_text(
    harness: &str,
    set: &str,
    imp: &Imported,
    baseline: &str,
    threshold: Option<f64>,
    strata: &[String],
) -> String {
    let mut s = format!(
        "# Written by `ablate import {harness}` from {} file(s); see sources.parquet for each file and its SHA-256.\n",
        imp.sources.len()
    );
    s.push_str(&format!("set = {}\n", toml_str(set)));
    if let Some(m) = &imp.model {
        s.push_str(&format!("model = {}\n", toml_str(m)));
    }
    if let Some(d) = &imp.measured_at {
        s.push_str(&format!("measured_at = {}\n", toml_str(d)));
    }
    s.push_str(&format!("baseline_arm = {}\n", toml_str(baseline)));
    match threshold {
        Some(t) => s.push_str(&format!("threshold_drop = {t:?}\n")),
        None => {
            s.push_str("# PLACEHOLDER: agree the smallest drop that matters before reading the results, and\n# write it here as a number (e.g. threshold_drop = 0.02). Every verb refuses this placeholder.\n");
            s.push_str(&format!(
                "threshold_drop = {}\n",
                toml_str(THRESHOLD_PLACEHOLDER)
            ));
        }
    }
    if !strata.is_empty() {
        s.push_str(&format!(
            "strata = [{}]\n",
            strata
                .iter()
                .map(|x| toml_str(x))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
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
