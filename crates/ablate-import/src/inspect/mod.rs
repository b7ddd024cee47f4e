//! Inspect AI logs: `.eval` archives and the older single-file `.json` logs.
//!
//! A `.eval` file is a zip archive whose entries are DEFLATE (Inspect before 0.3.206) or
//! Zstandard (zip method 93, the default since). Scores come from the sample summaries, never from
//! the samples' message histories: `summaries.json` in a finished log, else the journal batches
//! `_journal/summaries/<n>.json` in order, the last copy of a (id, epoch) winning, as Inspect's
//! own reader does; only when neither exists are the sample files read (`samples/<id>_epoch_<n>.json`,
//! or the chunked `samples/<id>_epoch_<n>/sample.json` with its `metadata.json`). Entries are
//! decompressed as a stream into the JSON parser; the archive is never inflated into memory.
//!
//! Mapping: case = sample `id` (as text: `1` and `"1"` are the same case, as in Inspect); repeat =
//! `epoch`; score = `scores[<scorer>].value` through [`value_to_float`] (a dict or list value
//! needs `--score scorer.key`); tokens_in = Σ over models of `input_tokens` + cache reads and
//! writes; strata = scalar `metadata` fields. The arm is what differs between the logs: a task
//! argument, else the task, the model or the tags (`--arm-from task_arg:NAME|task|model|tag|file`).
//! Logs whose status is not `success`, samples with an `error` or a `limit` and samples the user
//! invalidated (`invalidation`, read from the sample files when the header says `invalidated`)
//! are reported and skipped.

mod log;
pub use ablate_io::harness::eval_zip::{ARCHIVE_RATIO, MAX_ENTRY_BYTES, MIN_ARCHIVE_BYTES};
use log::{EvalSpec, Log, Sample, Usage, is_log, read_eval, read_json};
mod tokens;
use tokens::{TokenTally, input_tokens, tokens_sentence};
mod identity;
use identity::{INPUT_HASH, identity};
mod arms;
use arms::{ArmFrom, arm_from, arm_labels, e_version, run_key};

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use ablate_io::harness::python_json::nonfinite;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::import::{
    ImportOptions, Imported, Observation, Source, content_text, scalar_text, value_to_float,
};

/// The score choices a sample offers: each scorer, and `scorer.key` for dict or list values.
fn choices(sample: &Sample, out: &mut BTreeSet<String>) {
    for (name, s) in sample.scores.iter().flatten() {
        match &s.value {
            v if nonfinite(v).is_some() => {
                out.insert(name.clone());
            }
            Value::Object(m) => out.extend(m.keys().map(|k| format!("{name}.{k}"))),
            Value::Array(a) => out.extend((0..a.len()).map(|i| format!("{name}.{i}"))),
            _ => {
                out.insert(name.clone());
            }
        }
    }
}

/// The score of a sample under `choice` (`scorer` or `scorer.key`).
fn score_of(
    sample: &Sample,
    choice: &str,
) -> std::result::Result<Option<(f64, Option<bool>)>, String> {
    let scores = sample.scores.as_ref();
    let (scorer, key) = match scores.and_then(|s| s.get(choice)) {
        Some(_) => (choice, None),
        None => match choice.split_once('.') {
            Some((s, k)) => (s, Some(k)),
            None => (choice, None),
        },
    };
    let Some(score) = scores.and_then(|s| s.get(scorer)) else {
        return Ok(None);
    };
    let value = match (key, &score.value) {
        (None, v) if nonfinite(v).is_some() => v.clone(),
        (None, v @ (Value::Object(_) | Value::Array(_))) => {
            return Err(format!(
                "scorer `{scorer}` gives a {} value; choose one part with --score {scorer}.KEY",
                if v.is_object() { "dict" } else { "list" }
            ));
        }
        (None, v) => v.clone(),
        (Some(k), Value::Object(m)) => match m.get(k) {
            Some(v) => v.clone(),
            None => return Ok(None),
        },
        (Some(k), Value::Array(a)) => match k.parse::<usize>().ok().and_then(|i| a.get(i)) {
            Some(v) => v.clone(),
            None => return Ok(None),
        },
        (Some(k), _) => {
            return Err(format!(
                "scorer `{scorer}` gives a single value; use --score {scorer}, not {scorer}.{k}"
            ));
        }
    };
    // Python's NaN or ±Infinity (a scorer's `float('nan')`), read as such: the caller refuses or
    // skips it.
    match nonfinite(&value) {
        Some("NaN") => return Ok(Some((f64::NAN, None))),
        Some(text) if text.starts_with('-') => return Ok(Some((f64::NEG_INFINITY, None))),
        Some(_) => return Ok(Some((f64::INFINITY, None))),
        None => {}
    }
    // The scorer's own verdict: C (correct) passes, I (incorrect) fails; other values say nothing.
    let passed = match value.as_str() {
        Some("C") => Some(true),
        Some("I") => Some(false),
        _ => None,
    };
    value_to_float(&value)
        .map(|x| Some((x, passed)))
        .ok_or_else(|| {
            format!(
                "score value {value} of `{choice}` is not a number, C/I/P/N, yes/no or true/false"
            )
        })
}

/// A sample's error message, first line.
fn error_text(e: Option<&Value>) -> String {
    let text = match e {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string()),
        None => String::new(),
    };
    text.lines().next().unwrap_or_default().to_string()
}

/// What the logs read so far say about the import as a whole.
#[derive(Default)]
struct Totals {
    models: BTreeSet<String>,
    tasks: BTreeSet<String>,
    dates: BTreeSet<String>,
    /// Whether any sample logged cache reads or writes.
    cache_tokens: bool,
    tally: TokenTally,
    /// Logs whose usage was summed from the samples (no usage in the summaries).
    usage_files: Vec<String>,
}

/// Reads Inspect logs.
///
/// # Errors
/// A file that cannot be read as a log; no log found; several scores and no `--score`; a score
/// value that is not a number; conflicting options.
pub fn read(sources: &[PathBuf], opts: &ImportOptions) -> Result<Imported> {
    let mut imp = Imported::default();
    let files = crate::import::collect_files(
        sources,
        is_log,
        "Inspect log (.eval or .json)",
        &mut imp.skipped,
    )?;
    let logs = finished_logs(&files, opts, &mut imp)?;
    let choice = choose_score(&logs, opts, &mut imp)?;
    let labels = arm_names(&logs, opts, &mut imp)?;
    let mut totals = Totals::default();
    for (rank, log) in logs.iter().enumerate() {
        take_samples(
            log,
            rank,
            &labels[rank],
            &choice,
            opts.skip_nonfinite,
            &mut imp,
            &mut totals,
        )?;
    }
    imp.set = (totals.tasks.len() == 1)
        .then(|| totals.tasks.iter().next().cloned())
        .flatten();
    imp.model = Some(totals.models.into_iter().collect::<Vec<_>>().join(", "));
    imp.measured_at = totals.dates.into_iter().next();
    imp.case_choice = format!(
        "{}; {}",
        identity::pair(&mut imp, &logs, opts.pair_by)?,
        repeats_are(&logs, &labels)
    );
    imp.tokens_counted = tokens_sentence(totals.cache_tokens, &totals.tally, &totals.usage_files);
    Ok(imp)
}

/// What the repeats of a case are: epochs within a log, runs (logs) of one arm, or both.
fn repeats_are(logs: &[Log], labels: &[String]) -> String {
    let epochs = logs
        .iter()
        .filter_map(|l| l.header.eval.config.as_ref()?.get("epochs")?.as_i64())
        .max()
        .unwrap_or(1);
    let mut per_arm: BTreeMap<&str, usize> = BTreeMap::new();
    for l in labels {
        *per_arm.entry(l).or_default() += 1;
    }
    let runs = per_arm.values().copied().max().unwrap_or(1);
    match (epochs > 1, runs > 1) {
        (true, true) => format!(
            "repeats are epochs (up to {epochs} per log) and runs (up to {runs} logs of one arm)"
        ),
        (true, false) => format!("repeats are epochs (up to {epochs} per log, one log per arm)"),
        (false, true) => format!(
            "repeats are runs: up to {runs} logs of one arm, each with epochs = 1 (see the runs table)"
        ),
        (false, false) => "one repeat per case (epochs = 1, one log per arm)".into(),
    }
}

/// Reads every file as a log and keeps the finished ones, each run once (a `.eval` and its
/// `inspect log convert` copy are one run); says in `imp.skipped` why any other was left out.
fn finished_logs(files: &[PathBuf], opts: &ImportOptions, imp: &mut Imported) -> Result<Vec<Log>> {
    let mut logs = Vec::new();
    for path in files {
        let read = if path.extension().is_some_and(|e| e == "eval") {
            read_eval(path).map(Some)
        } else {
            read_json(path)
        };
        let Some(log) = crate::import::or_skip(read, path, "inspect", opts, imp)? else {
            continue;
        };
        let Some(log) = log else {
            imp.skipped.push(format!(
                "{}: a .json file that is not an Inspect log (no `eval` header)",
                path.display()
            ));
            continue;
        };
        let status = log
            .header
            .status
            .clone()
            .unwrap_or_else(|| "success".into());
        if status != "success" {
            let why = match status.as_str() {
                "started" => {
                    "unfinished (status started: the run was stopped or is still going)".to_string()
                }
                "error" => format!(
                    "status error{}",
                    log.header
                        .error
                        .as_ref()
                        .and_then(|e| e.get("message"))
                        .and_then(Value::as_str)
                        .map(|m| format!(": {}", m.lines().next().unwrap_or_default()))
                        .unwrap_or_default()
                ),
                other => format!("status {other}"),
            };
            imp.skipped.push(format!(
                "{}: the whole log ({} samples), {why}; rerun or resume it with `inspect eval-retry`",
                path.display(),
                log.samples.len()
            ));
            continue;
        }
        logs.push(log);
    }
    if logs.is_empty() {
        return Err(Error::Usage(format!(
            "no finished Inspect log to import: {}",
            imp.skipped.join("; ")
        )));
    }
    // The same run in two files (a .eval and its `inspect log convert` .json): read once, when
    // the copies agree on every score; a re-scored or edited copy (`inspect score`,
    // `edit_score`) keeps the eval id, and which of the two was read had followed the files'
    // names.
    let mut kept: BTreeMap<String, usize> = BTreeMap::new();
    let mut once: Vec<Log> = Vec::with_capacity(logs.len());
    for l in logs {
        let Some(key) = run_key(&l.header.eval) else {
            once.push(l);
            continue;
        };
        let Some(&first) = kept.get(&key) else {
            kept.insert(key, once.len());
            once.push(l);
            continue;
        };
        let first = &once[first];
        if let Some(differ) = first_score_difference(first, &l) {
            return Err(Error::Usage(format!(
                "{} and {} hold the same run ({key}), but their scores differ: {differ}. One is a re-scored or edited copy (`inspect score`, `edit_score`), not the run read twice: import one of them",
                first.path.display(),
                l.path.display()
            )));
        }
        imp.skipped.push(format!(
            "{}: the same run as {} ({key}), with the same scores, read once",
            l.path.display(),
            first.path.display()
        ));
    }
    let logs = once;
    if logs.iter().all(|l| l.samples.is_empty()) {
        return Err(Error::Usage(format!(
            "the logs hold no samples, only their headers and aggregate scores ({}): ablate needs each sample's score. Run the eval again with samples logged (Inspect logs them unless --no-log-samples or log_samples=False is set)",
            logs.iter()
                .map(|l| l.path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }

    Ok(logs)
}

/// The first (id, epoch, scorer) whose score differs between two copies of one run, in words
/// (a sample held by one copy only, or invalidated in one only, counts); `None` when they agree.
fn first_score_difference(a: &Log, b: &Log) -> Option<String> {
    fn by_key(l: &Log) -> BTreeMap<(String, i64), &Sample> {
        l.samples
            .iter()
            .map(|s| ((s.id.clone(), s.epoch), s))
            .collect()
    }
    let (sa, sb) = (by_key(a), by_key(b));
    let (na, nb) = (a.path.display(), b.path.display());
    let same = |x: &Value, y: &Value| {
        x == y || matches!((x.as_f64(), y.as_f64()), (Some(p), Some(q)) if p == q)
    };
    let shown = |s: &Sample, scorer: &str| {
        s.scores
            .as_ref()
            .and_then(|m| m.get(scorer))
            .map_or_else(|| "no score".to_string(), |v| v.value.to_string())
    };
    let keys: BTreeSet<&(String, i64)> = sa.keys().chain(sb.keys()).collect();
    for key in keys {
        let (id, epoch) = key;
        let (x, y): (&Sample, &Sample) = match (sa.get(key), sb.get(key)) {
            (Some(x), Some(y)) => (*x, *y),
            (Some(_), None) => {
                return Some(format!("sample {id} epoch {epoch} is in {na} only"));
            }
            (None, _) => return Some(format!("sample {id} epoch {epoch} is in {nb} only")),
        };
        let invalid = |s: &Sample| s.invalidation.as_ref().is_some_and(|v| !v.is_null());
        if invalid(x) != invalid(y) {
            return Some(format!(
                "sample {id} epoch {epoch} is invalidated in {} only",
                if invalid(x) { &na } else { &nb }
            ));
        }
        let scorers: BTreeSet<&String> = x
            .scores
            .iter()
            .flatten()
            .chain(y.scores.iter().flatten())
            .map(|(name, _)| name)
            .collect();
        for scorer in scorers {
            let (vx, vy) = (
                x.scores.as_ref().and_then(|m| m.get(scorer)),
                y.scores.as_ref().and_then(|m| m.get(scorer)),
            );
            let agree = match (vx, vy) {
                (Some(p), Some(q)) => same(&p.value, &q.value),
                (None, None) => true,
                _ => false,
            };
            if !agree {
                return Some(format!(
                    "sample {id} epoch {epoch}, scores.{scorer}: {} in {na}, {} in {nb}",
                    shown(x, scorer.as_str()),
                    shown(y, scorer.as_str())
                ));
            }
        }
    }
    None
}

/// The score to import: `--score`, else the only one the samples have.
fn choose_score(logs: &[Log], opts: &ImportOptions, imp: &mut Imported) -> Result<String> {
    let mut found = BTreeSet::new();
    for l in logs {
        for s in &l.samples {
            choices(s, &mut found);
        }
    }
    imp.scores_found = found.iter().cloned().collect();
    Ok(match &opts.score {
        Some(c) => {
            let scorer = c.split_once('.').map_or(c.as_str(), |(s, _)| s);
            if !found.contains(c)
                && !found.iter().any(|f| f.starts_with(&format!("{scorer}.")))
                && !found.contains(scorer)
            {
                return Err(Error::Usage(format!(
                    "--score {c}: no sample has that score; scores found: {}",
                    imp.scores_found.join(", ")
                )));
            }
            imp.score_choice = format!("{c} (--score)");
            c.clone()
        }
        None if found.len() == 1 => {
            let only = found.iter().next().cloned().unwrap_or_default();
            imp.score_choice = format!("{only} (the only score in the logs)");
            only
        }
        None if found.is_empty()
            && logs
                .iter()
                .all(|l| l.header.eval.scorers.as_ref().is_none_or(Vec::is_empty)) =>
        {
            return Err(Error::Usage(format!(
                "the eval had no scorer, so no sample has a score ({}): score the logs with `inspect score LOG --scorer SCORER` (e.g. match, includes, model_graded_fact), then import the scored logs",
                logs.iter()
                    .map(|l| l.path.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        None if found.is_empty() => {
            let errored = logs
                .iter()
                .flat_map(|l| l.samples.iter().map(move |s| (l, s)))
                .find(|(_, s)| s.error.as_ref().is_some_and(|e| !e.is_null()));
            return Err(Error::Usage(match errored {
                Some((l, s)) => format!(
                    "no sample in the logs has a score: the samples failed. {}, sample {} epoch {}: {}. Fix the error and rerun (or resume with `inspect eval-retry`)",
                    l.path.display(),
                    s.id,
                    s.epoch,
                    error_text(s.error.as_ref())
                ),
                None => "no sample in the logs has a score; score the logs (`inspect score`) and import again".into(),
            }));
        }
        None => {
            return Err(Error::Usage(format!(
                "the logs have several scores; choose one with --score: {}",
                imp.scores_found.join(", ")
            )));
        }
    })
}

/// Each log's arm: from `--arm-from` (or the task arguments, model or file that tell the logs
/// apart), one model per arm unless asked otherwise, then the `--arm` rules.
fn arm_names(logs: &[Log], opts: &ImportOptions, imp: &mut Imported) -> Result<Vec<String>> {
    let (how, why) = arm_from(logs, opts.arm_from.as_deref())?;
    imp.arm_choice = why;
    let (mut labels, as_json) = arm_labels(logs, &how);
    if as_json {
        imp.arm_choice.push_str(
            "; the values that differ only in type are written as JSON (\"1\" is text, 1 a number)",
        );
    }
    // Never two models in one arm unless asked (--arm-from, --arm).
    let all_models: BTreeSet<&str> = logs.iter().map(|l| l.header.eval.model.as_str()).collect();
    if opts.arm_from.is_none() && how != ArmFrom::Model && all_models.len() > 1 {
        for (label, log) in labels.iter_mut().zip(logs) {
            *label = format!("{label} | {}", log.header.eval.model);
        }
        imp.arm_choice.push_str(&format!(
            "; the logs come from {} models ({}), so each arm is one model's: `… | model`",
            all_models.len(),
            all_models.iter().copied().collect::<Vec<_>>().join(", ")
        ));
    }
    let paths: Vec<PathBuf> = logs.iter().map(|l| l.path.clone()).collect();
    let rules = super::ArmNames::for_files(&opts.arm_globs, &paths, "log(s)")?;
    // Whether each log's arm was named by the user (--arm-from, or an --arm rule).
    let mut named = vec![opts.arm_from.is_some(); logs.len()];
    if rules.any() {
        for ((label, log), named) in labels.iter_mut().zip(logs).zip(&mut named) {
            if let Some(name) = rules.name_of(&log.path)? {
                *label = name;
                *named = true;
            }
        }
        imp.arm_choice = format!(
            "--arm rules for the logs they match; else {}",
            imp.arm_choice
        );
    }
    let mut models_of_arm: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (label, log) in labels.iter().zip(logs) {
        models_of_arm
            .entry(label.as_str())
            .or_default()
            .insert(log.header.eval.model.as_str());
    }
    for (arm, models) in &models_of_arm {
        if models.len() > 1 {
            imp.notes.push(format!(
                "arm `{arm}` holds {} models ({}), as asked with --arm-from or --arm",
                models.len(),
                models.iter().copied().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    one_configuration_per_arm(logs, &labels, &named, imp)?;

    Ok(labels)
}

/// An arm is one configuration: logs whose arm was chosen automatically must agree on the task,
/// the task arguments, the solver and its arguments, the generation settings and the plan
/// ([`arms::differences`]), or the import is refused naming two of them and what differs; logs
/// the user put in one arm (--arm-from, --arm) are pooled as asked, with a note.
fn one_configuration_per_arm(
    logs: &[Log],
    labels: &[String],
    named: &[bool],
    imp: &mut Imported,
) -> Result<()> {
    let arm_of: Vec<&str> = labels.iter().map(String::as_str).collect();
    let refused = crate::arms::first_unasked_mismatch(
        &arm_of,
        named,
        |a, b| arms::differences(&logs[a], &logs[b]),
        |m| {
            imp.notes.push(format!(
                "arm `{}` pools logs run with different configurations ({}: {} and {}), as asked with --arm-from or --arm",
                m.arm,
                m.differ.join("; "),
                logs[m.first].path.display(),
                logs[m.other].path.display()
            ));
        },
    );
    let Some(m) = refused else {
        return Ok(());
    };
    Err(Error::Usage(format!(
        "{} and {} would both be arm `{}`, but they ran different configurations: {}. An arm is one configuration, and pooling them would average different prompts as repeats of one: name each configuration's arm with --arm NAME=GLOB (or --arm-from file: one arm per log); to pool them on purpose, give them one name with --arm",
        logs[m.first].path.display(),
        logs[m.other].path.display(),
        m.arm,
        m.differ.join("; ")
    )))
}

/// Turns one log's samples into observations of arm `arm` (errored, limited and unscored
/// samples are counted in `imp.skipped`), and records the log as a source.
fn take_samples(
    log: &Log,
    rank: usize,
    arm: &str,
    choice: &str,
    skip_nonfinite: bool,
    imp: &mut Imported,
    totals: &mut Totals,
) -> Result<()> {
    if log.usage_from_samples {
        totals.usage_files.push(log.path.display().to_string());
    }
    let version = e_version(log);
    let e = &log.header.eval;
    totals.models.insert(e.model.clone());
    totals.tasks.insert(e.task.clone());
    if let Some(day) = crate::import::date_prefix(&e.created) {
        totals.dates.insert(day.to_string());
    }
    let arm = arm.to_string();
    let first = imp.observations.len();
    let (mut taken, mut errored, mut limited, mut unscored) = (0usize, 0usize, 0usize, 0usize);
    let mut invalidated = 0usize;
    // Samples whose score is NaN or infinite, left out by --skip-nonfinite.
    let mut nonfinite_skipped: Vec<String> = Vec::new();
    // Why they were invalidated (`invalidation.reason`), each once.
    let mut reasons: BTreeSet<String> = BTreeSet::new();
    let mut epochs = BTreeSet::new();
    for s in &log.samples {
        let case = s.id.clone();
        // Invalidated by its user (`invalidate_samples`): its score is disowned, never read.
        if let Some(inv) = s.invalidation.as_ref().filter(|v| !v.is_null()) {
            invalidated += 1;
            if let Some(reason) = inv.get("reason").and_then(Value::as_str) {
                let reason = reason.lines().next().unwrap_or_default().trim();
                if !reason.is_empty() {
                    reasons.insert(reason.to_string());
                }
            }
            continue;
        }
        if s.error.as_ref().is_some_and(|e| !e.is_null()) {
            errored += 1;
            continue;
        }
        if s.limit.as_ref().is_some_and(|l| !l.is_null()) {
            limited += 1;
            continue;
        }
        let score = score_of(s, choice).map_err(|problem| Error::BadValue {
            path: log.path.clone(),
            column: format!("scores.{choice}"),
            row: crate::error::Row::none(),
            value: format!("sample {case} epoch {}", s.epoch),
            problem,
            fix: format!(
                "choose another score with --score (scores found: {})",
                imp.scores_found.join(", ")
            ),
        })?;
        let Some((score, passed)) = score else {
            unscored += 1;
            continue;
        };
        if !score.is_finite() {
            if skip_nonfinite {
                nonfinite_skipped.push(format!("{case} epoch {}", s.epoch));
                continue;
            }
            return Err(Error::BadValue {
                path: log.path.clone(),
                column: format!("scores.{choice}"),
                row: crate::error::Row::none(),
                value: format!("sample {case} epoch {}", s.epoch),
                problem: format!(
                    "the score is {} (Python's float('{}')), which no mean or interval can use",
                    if score.is_nan() { "NaN" } else if score > 0.0 { "Infinity" } else { "-Infinity" },
                    if score.is_nan() { "nan" } else if score > 0.0 { "inf" } else { "-inf" },
                ),
                fix: "fix the scorer and score the log again (`inspect score`), choose another score with --score, or pass --skip-nonfinite to leave such samples out (they are reported)".into(),
            });
        }
        let source = format!("{}, sample {case} epoch {}", log.path.display(), s.epoch);
        let tokens_in = sample_tokens(log, s, &case, version.as_deref(), totals)?;
        let mut strata: BTreeMap<String, String> = s
            .metadata
            .iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), scalar_text(v)?)))
            .collect();
        if let Some(h) = identity(s) {
            strata.insert(INPUT_HASH.into(), h);
        }
        epochs.insert(s.epoch);
        imp.observations.push(Observation {
            case_id: case,
            arm: arm.clone(),
            order: (rank, s.epoch, 0),
            score,
            tokens_in,
            strata,
            source,
            passed,
            file: log.path.display().to_string(),
            input: s.input.as_ref().and_then(input_text),
            output: s.output.as_ref().and_then(output_text),
        });
        taken += 1;
    }
    if log.samples.is_empty() {
        imp.skipped.push(format!(
            "{}: no samples, only the header and aggregate scores, so arm `{arm}` has no results from it; run it again with samples logged (Inspect logs them unless --no-log-samples)",
            log.path.display()
        ));
    } else if let Some(expected) = expected_samples(e)
        && log.samples.len() < expected
    {
        // Said as a note: ablate left nothing out; the log itself lacks them.
        imp.notes.push(format!(
            "{}: holds {} of the {expected} sample-epochs its header lists (its dataset's sample ids × epochs); the rest are missing from the log",
            log.path.display(),
            log.samples.len()
        ));
    }
    if invalidated > 0 {
        imp.skipped.push(format!(
            "{}: {invalidated} sample(s) invalidated ({}), not scored",
            log.path.display(),
            if reasons.is_empty() {
                "no reason given".to_string()
            } else {
                format!(
                    "reason: {}",
                    reasons.iter().cloned().collect::<Vec<_>>().join("; ")
                )
            }
        ));
    }
    if !nonfinite_skipped.is_empty() {
        imp.skipped.push(format!(
            "{}: {} sample(s) with a non-finite {choice} (--skip-nonfinite): {}",
            log.path.display(),
            nonfinite_skipped.len(),
            nonfinite_skipped.join(", ")
        ));
    }
    for (n, what) in [
        (errored, "with an error (not scored by Inspect)"),
        (limited, "that hit a limit (token, message, time…)"),
        (unscored, "without the chosen score"),
    ] {
        if n > 0 {
            imp.skipped
                .push(format!("{}: {n} sample(s) {what}", log.path.display()));
        }
    }
    imp.sources
        .push(source_of(log, taken, epochs.len(), &arm, choice)?);
    imp.runs.push(crate::io::runs::RunRow {
        run: e
            .eval_id
            .clone()
            .unwrap_or_else(|| log.path.display().to_string()),
        arm,
        harness: "inspect".into(),
        file: log.path.display().to_string(),
        revision: e.revision.as_ref().and_then(|r| {
            let c = r.commit.clone()?;
            Some(if r.dirty == Some(true) {
                format!("{c}+dirty")
            } else {
                c
            })
        }),
        model: Some(e.model.clone()),
        started: Some(e.created.clone()).filter(|c| !c.is_empty()),
        samples: taken as i64,
        errors: errored as i64,
        mean_score: crate::import::mean_since(&imp.observations, first),
        outlier: false,
    });
    Ok(())
}

/// The sample-epochs a log's header says the eval ran: its dataset's `sample_ids` times its
/// `epochs` (`None` when the header lists no ids).
fn expected_samples(e: &EvalSpec) -> Option<usize> {
    let ids = e.dataset.as_ref()?.get("sample_ids")?.as_array()?.len();
    let epochs = e
        .config
        .as_ref()
        .and_then(|c| c.get("epochs"))
        .and_then(Value::as_u64)
        .unwrap_or(1);
    ids.checked_mul(usize::try_from(epochs).ok()?)
}

/// A sample's input as text: the string, or each chat message as "role: text" on its own
/// lines; cut for `samples`.
fn input_text(input: &Value) -> Option<String> {
    let text = match input {
        Value::Array(messages) => messages
            .iter()
            .filter_map(|m| {
                let role = m.get("role").and_then(Value::as_str).unwrap_or("message");
                Some(format!("{role}: {}", content_text(m.get("content")?)?))
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => content_text(other)?,
    };
    crate::import::sample_text(&text)
}

/// A sample's output as text: `completion`, else the first choice's message content; cut for
/// `samples`.
fn output_text(output: &Value) -> Option<String> {
    let text = output
        .get("completion")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| {
            content_text(
                output
                    .get("choices")?
                    .get(0)?
                    .get("message")?
                    .get("content")?,
            )
        })?;
    crate::import::sample_text(&text)
}

/// A sample's input tokens over its models (with cache reads and writes), or `None` when it
/// logged no usage; an error when the counts are negative or overflow.
fn sample_tokens(
    log: &Log,
    s: &Sample,
    case: &str,
    version: Option<&str>,
    totals: &mut Totals,
) -> Result<Option<i64>> {
    Ok(match s.model_usage.as_ref().filter(|u| !u.is_empty()) {
        None => None,
        Some(u) => {
            totals.cache_tokens |= u.values().any(|m| {
                m.input_tokens_cache_read.is_some() || m.input_tokens_cache_write.is_some()
            });
            Some(input_tokens(u, version, &mut totals.tally).ok_or_else(|| Error::BadValue {
                    path: log.path.clone(),
                    column: "model_usage".into(),
                    row: crate::error::Row::none(),
                    value: format!("sample {case} epoch {}", s.epoch),
                    problem: "the input token counts (input_tokens plus cache reads and writes, over models) are negative or overflow a 64-bit count".into(),
                    fix: "check the usage this sample logged; the log may be damaged".into(),
                })?)
        }
    })
}

/// A short digest of what a log ran beyond its task, model and task arguments
/// ([`arms::setup`]): logs added with `--into` join an arm only when it matches too.
fn setup_digest(log: &Log) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(arms::setup(log).to_string().as_bytes());
    crate::text::hex(&digest)[..12].to_string()
}

/// The provenance of one log: what was taken from it, as which arm, under which task and model.
fn source_of(log: &Log, taken: usize, epochs: usize, arm: &str, choice: &str) -> Result<Source> {
    let e = &log.header.eval;
    Ok(Source {
        file: log.path.display().to_string(),
        sha256: log.sha256.clone(),
        harness: "inspect".into(),
        version: e.packages.get("inspect_ai").cloned(),
        taken: format!(
            "{taken} samples ({} epochs) of task {} as arm {arm}, score {choice}, from {}",
            epochs, e.task, log.read_from
        ),
        run: run_key(e),
        arm: Some(arm.to_string()),
        config: Some(format!(
            "task {}, model {}, task args {}, setup {}",
            e.task,
            e.model,
            serde_json::to_string(&e.task_args).unwrap_or_default(),
            setup_digest(log)
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::log::*;
    use super::tokens::*;
    use super::*;

    #[test]
    fn journal_batches_are_numbered() {
        assert_eq!(journal_batch("_journal/summaries/12.json"), Some(12));
        assert_eq!(journal_batch("_journal/start.json"), None);
        assert_eq!(journal_batch("summaries.json"), None);
    }

    #[test]
    fn cache_reads_follow_the_totals_else_the_provider_and_version() {
        let u = |i, r, o, t| Usage {
            input_tokens: Some(i),
            input_tokens_cache_read: Some(r),
            output_tokens: o,
            total_tokens: t,
            ..Usage::default()
        };
        // The log's totals decide whatever the version says.
        let inc = u(120, 64, Some(3), Some(123));
        let exc = u(56, 64, Some(3), Some(123));
        assert_eq!(
            cache_rule("openai/x", &inc, Some("0.3.285")),
            (CacheRule::Includes, true)
        );
        assert_eq!(
            cache_rule("anthropic/x", &exc, Some("0.3.100")),
            (CacheRule::Excludes, true)
        );
        // No totals: OpenAI-family input included reads before 0.3.184 (dev builds of 0.3.184
        // too), Google before 0.3.208; Anthropic never.
        let bare = u(120, 64, None, None);
        for (model, v, rule) in [
            ("openai/gpt-4o", "0.3.95", CacheRule::Includes),
            ("openai/gpt-4o", "0.3.184.dev7+gabc", CacheRule::Includes),
            ("openai/gpt-4o", "0.3.184", CacheRule::Excludes),
            ("openrouter/x/y", "0.3.150", CacheRule::Includes),
            ("google/gemini", "0.3.207", CacheRule::Includes),
            ("google/gemini", "0.3.208", CacheRule::Excludes),
            ("anthropic/claude", "0.3.95", CacheRule::Excludes),
        ] {
            assert_eq!(
                cache_rule(model, &bare, Some(v)),
                (rule, false),
                "{model} {v}"
            );
        }
        let mut tally = TokenTally::default();
        let usage: BTreeMap<String, Usage> =
            [("openai/gpt-4o".to_string(), u(15_235, 9_088, None, None))].into();
        assert_eq!(
            input_tokens(&usage, Some("0.3.95"), &mut tally),
            Some(15_235)
        );
        let usage: BTreeMap<String, Usage> =
            [("anthropic/c".to_string(), u(100, 50, None, None))].into();
        assert_eq!(input_tokens(&usage, Some("0.3.95"), &mut tally), Some(150));
    }

    #[test]
    fn ids_key_as_inspect_does() {
        let id = |json: &str| {
            serde_json::from_str::<Sample>(&format!(r#"{{"id": {json}, "epoch": 1}}"#))
                .unwrap()
                .id
        };
        assert_eq!(id("1"), "1");
        assert_eq!(id("\"1\""), "1");
        assert_eq!(id("\"q4\""), "q4");
        assert_eq!(id("-7"), "-7");
        // Beyond 64 bits: digit for digit, never one float for two ids.
        assert_eq!(id("18446744073709551616"), "18446744073709551616");
        assert_ne!(id("18446744073709551616"), id("18446744073709551617"));
    }
}
