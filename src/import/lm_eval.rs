//! lm-evaluation-harness `--log_samples` output.
//!
//! Each run writes `results_<date_id>.json` and, per task, `samples_<task>_<date_id>.jsonl` (one
//! JSON object per line; 0.4.0–0.4.2 wrote one pretty-printed JSON array instead, in
//! `<model_args>_<task>.jsonl` beside `results.json`). The results file beside a samples file
//! gives the model, the harness version, the date and the task's filters.
//!
//! Mapping: case = `doc_id` where `doc_hash` agrees across files (a doc_id holding different
//! documents becomes one case per document, `doc_id#hash`; `--case-from doc_hash` keys by content);
//! arm = the task, split into one arm per prompt when runs of the task gave different prompts
//! (`prompt_hash`, doc by doc), named by the folder that tells the runs apart, else the run's
//! date_id (`--arm-from file` for the file name, `--arm NAME=GLOB` to choose); repeat = runs with
//! identical prompts in the order of their results' dates; score = a metric key (listed in
//! `metrics` since 0.4.7, else the numeric top-level keys). Python writes bare `NaN` and
//! `Infinity`: they are read, and a non-finite score is an error naming the line (or skipped with
//! `--skip-nonfinite`). Corpus metrics (f1, bleu, …) are stored per sample as `[gold, pred]` and
//! are refused as scores. A task with several filters writes one line per filter: `--filter`
//! chooses one.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Result, Row};
use crate::import::{
    ArmNames, ImportOptions, Imported, Observation, Source, scalar_fields, sha256_file,
};

/// Keys of a sample line that are not metrics.
const NOT_METRICS: &[&str] = &[
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "doc_hash",
    "prompt_hash",
    "target_hash",
];

/// Parses one JSON value as Python writes it: strict JSON first, then JSON5 (which accepts bare
/// `NaN`, `Infinity` and `-Infinity`).
///
/// JSON nested deeper than [`MAX_JSON_DEPTH`](super::MAX_JSON_DEPTH) is refused before the JSON5
/// parser sees it: that parser recurses without a limit, and a line nested 30,000 deep overflowed
/// the stack.
fn parse(text: &str) -> std::result::Result<Value, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => Ok(v),
        Err(strict) if super::json_depth(text) > super::MAX_JSON_DEPTH => Err(format!(
            "{strict} (arrays and objects nested more than {} deep; lm-eval's lines are shallow)",
            super::MAX_JSON_DEPTH
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
enum Json5Value {
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
const NONFINITE: &str = "$nonfinite";

/// A non-finite number read from Python's JSON, as its text.
fn nonfinite(v: &Value) -> Option<&str> {
    v.as_object()
        .filter(|m| m.len() == 1)
        .and_then(|m| m.get(NONFINITE))
        .and_then(Value::as_str)
}

/// A run's results file: what the samples files beside it share.
#[derive(Debug, Clone, Default)]
struct RunInfo {
    model: Option<String>,
    version: Option<String>,
    /// Unix seconds.
    date: Option<f64>,
    /// Task names it reports.
    tasks: Vec<String>,
    /// Filter names per task, in order.
    filters: BTreeMap<String, Vec<String>>,
}

/// The `date_id` suffix of a file name (`…_2026-11-30T03-26-41.079522`), if it has one.
fn date_id(stem: &str) -> Option<&str> {
    let (_, tail) = stem.rsplit_once('_')?;
    let b = tail.as_bytes();
    (b.len() >= 19 && b[4] == b'-' && b[10] == b'T' && b[..4].iter().all(u8::is_ascii_digit))
        .then_some(tail)
}

fn read_run(path: &Path) -> Result<RunInfo> {
    let text = super::read_text(path)?;
    let v = parse(&text).map_err(|e| Error::Unreadable {
        path: path.to_path_buf(),
        problem: format!("not the JSON lm-eval writes: {e}"),
        fix: "give the results_<date>.json that lm-eval wrote beside the samples files".into(),
    })?;
    let model = v
        .get("model_name")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| {
            let args = v.get("config")?.get("model_args")?;
            let pick = |k: &str| -> Option<String> {
                match args {
                    Value::Object(m) => m.get(k).and_then(Value::as_str).map(str::to_string),
                    Value::String(s) => s
                        .split(',')
                        .find_map(|kv| kv.strip_prefix(&format!("{k}=")).map(str::to_string)),
                    _ => None,
                }
            };
            ["peft", "delta", "pretrained", "model", "path", "engine"]
                .iter()
                .find_map(|k| pick(k))
        });
    let tasks = v
        .get("results")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let filters = v
        .get("configs")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(task, cfg)| {
                    let names = cfg
                        .get("filter_list")
                        .and_then(Value::as_array)
                        .map(|l| {
                            l.iter()
                                .filter_map(|f| f.get("name").and_then(Value::as_str))
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default();
                    (task.clone(), names)
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(RunInfo {
        model,
        version: v
            .get("lm_eval_version")
            .and_then(Value::as_str)
            .map(str::to_string),
        date: v.get("date").and_then(Value::as_f64),
        tasks,
        filters,
    })
}

/// The results file of a samples file: in the same folder with the same date_id,
/// `results_<date_id>.json`, or `<name>_<date_id>.json` when `--output_path` named a `.json` file
/// (lm-eval then writes `<name>_<date_id>.json` beside the samples); or `results.json` (≤0.4.2).
fn results_of(samples: &Path) -> Option<PathBuf> {
    let dir = samples.parent()?;
    let stem = samples.file_stem()?.to_str()?;
    if let Some(id) = date_id(stem) {
        let p = dir.join(format!("results_{id}.json"));
        if p.is_file() {
            return Some(p);
        }
        let suffix = format!("_{id}.json");
        let mut named: Vec<PathBuf> = std::fs::read_dir(dir)
            .ok()?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.is_file()
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.ends_with(&suffix) && !n.starts_with("samples_"))
            })
            .collect();
        named.sort();
        if let Some(p) = named.into_iter().next() {
            return Some(p);
        }
    }
    let p = dir.join("results.json");
    p.is_file().then_some(p)
}

/// Whether a `.json` file given as a source is a run's results (scores per task, no samples):
/// an object with `results` and `configs` or `lm_eval_version`.
fn is_results_file(path: &Path) -> bool {
    if path.extension().is_none_or(|e| e != "json") {
        return false;
    }
    let Ok(text) = super::read_text(path) else {
        return false;
    };
    parse(&text).is_ok_and(|v| {
        v.get("results").is_some_and(Value::is_object)
            && (v.get("configs").is_some() || v.get("lm_eval_version").is_some())
    })
}

/// What identifies a run of a task: its date_id (from the file name, to the microsecond) and the
/// task. Two samples files with the same key are one run copied (with or without its results
/// file beside it); identical bytes alone are not (deterministic runs write byte-identical
/// samples).
fn run_key(path: &Path, task: &str, _run: &RunInfo) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    let id = date_id(stem)?;
    Some(format!("task {task}, run {id}"))
}

/// The task of a samples file: from its name, checked against the tasks its results report.
fn task_of(path: &Path, run: &RunInfo) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let core = match date_id(&stem) {
        Some(id) => stem[..stem.len() - id.len() - 1].to_string(),
        None => stem.clone(),
    };
    let mut known: Vec<&String> = run
        .tasks
        .iter()
        .filter(|t| core == **t || core.ends_with(&format!("_{t}")))
        .collect();
    known.sort_by_key(|t| std::cmp::Reverse(t.len()));
    match known.first() {
        Some(t) => (*t).clone(),
        None => core.strip_prefix("samples_").unwrap_or(&core).to_string(),
    }
}

/// Days since 1970-01-01 to a civil date (proleptic Gregorian; H. Hinnant's algorithm), for
/// times from 1970 to 9999; `None` for anything else (a `date` of 1e300 is no date).
fn civil_date(unix_seconds: f64) -> Option<String> {
    if !(0.0..253_402_300_800.0).contains(&unix_seconds) {
        return None;
    }
    let z = (unix_seconds / 86_400.0).floor() as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    Some(format!("{y:04}-{m:02}-{d:02}"))
}

/// The sample records of a file: JSON Lines, or (≤0.4.2) one JSON array. Each with its 1-based
/// line number (the array's index + 1 for the old format).
fn records(path: &Path) -> Result<Vec<(usize, Value)>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let first = reader
        .fill_buf()
        .map_err(|e| Error::io(path, e))?
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .copied();
    let bad = |line: Option<usize>, e: String| Error::Unreadable {
        path: path.to_path_buf(),
        problem: format!(
            "{}is not the JSON lm-eval writes: {e}",
            line.map(|l| format!("line {l} ")).unwrap_or_default()
        ),
        fix: "give the samples_<task>_<date>.jsonl files lm-eval wrote with --log_samples".into(),
    };
    if first == Some(b'[') {
        let text = super::read_text(path)?;
        let v = parse(&text).map_err(|e| bad(None, e))?;
        return Ok(v
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, v)| (i + 1, v))
            .collect());
    }
    let mut out = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = super::log_line(path, i + 1, line)?;
        if line.trim().is_empty() {
            continue;
        }
        out.push((i + 1, parse(&line).map_err(|e| bad(Some(i + 1), e))?));
    }
    Ok(out)
}

/// The metrics a line offers: its `metrics` list, else its numeric or list-valued keys.
fn metrics_of(line: &Value) -> Vec<String> {
    if let Some(l) = line.get("metrics").and_then(Value::as_array) {
        return l
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
    }
    line.as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, v)| {
                    !NOT_METRICS.contains(&k.as_str())
                        && (v.is_number()
                            || v.is_array()
                            || v.is_boolean()
                            || nonfinite(v).is_some())
                })
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default()
}

fn is_samples_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "jsonl")
}

struct File {
    path: PathBuf,
    task: String,
    run: RunInfo,
    results: Option<PathBuf>,
    lines: Vec<(usize, Value)>,
}

/// The prompt each doc of a run was given: doc_id → prompt_hash.
type Prompts<'a> = BTreeMap<&'a str, &'a str>;

/// One sample line taken from a samples file.
struct TakenLine {
    line_no: usize,
    score: f64,
    /// doc_id (or doc_hash with `--case-from doc_hash`).
    case_id: String,
    doc_hash: Option<String>,
    prompt_hash: Option<String>,
    strata: BTreeMap<String, String>,
}

/// The lines taken from one samples file, and its arm once known.
struct Taken {
    /// Index into the files.
    file: usize,
    lines: Vec<TakenLine>,
    /// The filter chosen, when the task has several.
    filter: Option<String>,
    arm: String,
}

impl Taken {
    /// The prompt each doc was given (doc_id → prompt_hash), when the file records prompt hashes.
    fn prompts(&self) -> Option<Prompts<'_>> {
        let map: BTreeMap<&str, &str> = self
            .lines
            .iter()
            .filter_map(|l| Some((l.case_id.as_str(), l.prompt_hash.as_deref()?)))
            .collect();
        (!map.is_empty()).then_some(map)
    }
}

/// The lines of one samples file under the chosen metric and filter; `None` (reported in
/// `skipped`) when no line has the metric.
fn take_lines(
    index: usize,
    f: &File,
    metric: &str,
    opts: &ImportOptions,
    by_hash: bool,
    imp: &mut Imported,
) -> Result<Option<Taken>> {
    // Which filter each line belongs to: its `filter` key, else its position among the lines of
    // the same doc (lm-eval writes all of filter 1, then all of filter 2, …).
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut without = 0usize;
    let filter_names = f.run.filters.get(&f.task).cloned().unwrap_or_default();
    let mut lines = Vec::new();
    for (line_no, l) in &f.lines {
        let doc = l.get("doc_id").map(|v| v.to_string()).unwrap_or_default();
        let k = seen.entry(doc).or_insert(0);
        let filter = match l.get("filter").and_then(Value::as_str) {
            Some(name) => name.to_string(),
            None => filter_names
                .get(*k)
                .cloned()
                .unwrap_or_else(|| format!("#{}", *k + 1)),
        };
        *k += 1;
        if l.get(metric).is_none() {
            without += 1;
            continue;
        }
        lines.push((*line_no, l, filter));
    }
    if lines.is_empty() {
        imp.skipped.push(format!(
            "{}: task {} has no metric {metric}",
            f.path.display(),
            f.task
        ));
        return Ok(None);
    }
    let filters: BTreeSet<&String> = lines.iter().map(|(_, _, f)| f).collect();
    let list = |filters: &BTreeSet<&String>| {
        filters
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let chosen_filter: Option<String> = match (&opts.filter, filters.len()) {
        (_, 1) => None,
        (Some(want), _) => {
            if !filters.contains(want) {
                return Err(Error::Usage(format!(
                    "--filter {want}: {} has no such filter; filters: {}",
                    f.path.display(),
                    list(&filters)
                )));
            }
            Some(want.clone())
        }
        (None, _) => {
            return Err(Error::Usage(format!(
                "{}: task {} writes one line per filter ({}); choose one with --filter",
                f.path.display(),
                f.task,
                list(&filters)
            )));
        }
    };
    let mut taken = Vec::new();
    let mut nonfinite_skipped = Vec::new();
    for (line_no, l, filter) in lines {
        if chosen_filter.as_ref().is_some_and(|c| *c != filter) {
            continue;
        }
        let Some(v) = l.get(metric) else {
            continue;
        };
        let bad = |value: String, problem: String, fix: &str| Error::BadValue {
            path: f.path.clone(),
            column: metric.to_string(),
            row: Row(Some(line_no)),
            value,
            problem,
            fix: fix.into(),
        };
        let score = match v {
            Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
            Value::Bool(b) => f64::from(u8::from(*b)),
            Value::Array(_) => {
                return Err(bad(
                    v.to_string(),
                    format!(
                        "`{metric}` is a corpus-level metric: lm-eval stores it per sample as [gold, pred] and computes it over the whole set, so a sample has no score of its own"
                    ),
                    "choose a per-sample metric with --score (e.g. acc or exact_match)",
                ));
            }
            other => match nonfinite(other) {
                Some(text) => {
                    if opts.skip_nonfinite {
                        nonfinite_skipped.push(line_no);
                        continue;
                    }
                    return Err(bad(
                        text.to_string(),
                        "the score is not finite".into(),
                        "fix the run, choose another metric with --score, or pass --skip-nonfinite to leave such samples out (they are reported)",
                    ));
                }
                None => {
                    return Err(bad(
                        other.to_string(),
                        "the score is not a number".into(),
                        "choose a numeric metric with --score",
                    ));
                }
            },
        };
        let text = |key: &str| l.get(key).and_then(Value::as_str).map(str::to_string);
        let case_id = if by_hash {
            text("doc_hash")
        } else {
            l.get("doc_id").map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
        };
        let Some(case_id) = case_id else {
            return Err(bad(
                String::new(),
                format!(
                    "the line has no {}",
                    if by_hash { "doc_hash" } else { "doc_id" }
                ),
                "give samples files written by lm-eval --log_samples",
            ));
        };
        taken.push(TakenLine {
            line_no,
            score,
            case_id,
            doc_hash: text("doc_hash"),
            prompt_hash: text("prompt_hash"),
            strata: {
                // doc_hash rides along as a case column: `import --into` pairs by it later.
                let mut m = scalar_fields(l.get("doc"));
                if let Some(h) = text("doc_hash") {
                    m.insert("doc_hash".into(), h);
                }
                m
            },
        });
    }
    if without > 0 {
        imp.skipped.push(format!(
            "{}: {without} line(s) without the metric {metric} (task {})",
            f.path.display(),
            f.task
        ));
    }
    if !nonfinite_skipped.is_empty() {
        imp.skipped.push(format!(
            "{}: {} sample(s) with a non-finite {metric} (--skip-nonfinite), lines {}",
            f.path.display(),
            nonfinite_skipped.len(),
            nonfinite_skipped
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(Some(Taken {
        file: index,
        lines: taken,
        filter: chosen_filter,
        arm: String::new(),
    }))
}

/// Default arm names, per file index, and how they were formed.
struct DefaultArms {
    names: Vec<String>,
    how: String,
}

/// The arms the logs suggest: the file's name with `--arm-from file`; else the task, with runs of
/// one task split where their prompts differ (prompt_hash, doc by doc). Such prompt versions are
/// named by the folder that tells their runs apart (`run-a`, `run-b`), else by the run's
/// date_id; prefixed by the task when several tasks are imported.
fn default_arms(files: &[File], taken: &[Taken], by_file: bool) -> DefaultArms {
    let mut names = vec![String::new(); files.len()];
    let stem = |f: &File| {
        f.path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    if by_file {
        for t in taken {
            names[t.file] = stem(&files[t.file]);
        }
        return DefaultArms {
            names,
            how: "the samples file's name (--arm-from file)".into(),
        };
    }
    let tasks: BTreeSet<&str> = taken.iter().map(|t| files[t.file].task.as_str()).collect();
    let mut split_notes = Vec::new();
    for task in &tasks {
        // Prompt versions of this task, in run order: runs identical doc by doc are one version.
        let runs: Vec<&Taken> = taken
            .iter()
            .filter(|t| files[t.file].task == *task)
            .collect();
        // A run joins a version when their prompts agree on every doc both have (and they share
        // one): a run over fewer docs (--limit, skipped lines) is no new prompt.
        let mut versions: Vec<(Option<Prompts<'_>>, Vec<usize>)> = Vec::new();
        for t in &runs {
            let p = t.prompts();
            match versions
                .iter_mut()
                .find(|(q, _)| same_prompts(q.as_ref(), p.as_ref()))
            {
                Some((q, members)) => {
                    if let (Some(q), Some(p)) = (q.as_mut(), p) {
                        q.extend(p);
                    }
                    members.push(t.file);
                }
                None => versions.push((p, vec![t.file])),
            }
        }
        if versions.len() == 1 {
            for f in &versions[0].1 {
                names[*f] = (*task).to_string();
            }
            continue;
        }
        let firsts: Vec<&File> = versions.iter().map(|(_, m)| &files[m[0]]).collect();
        let (labels, by_folder) = version_labels(&firsts);
        for ((_, members), label) in versions.iter().zip(&labels) {
            let name = if tasks.len() > 1 {
                format!("{task} {label}")
            } else {
                label.clone()
            };
            for f in members {
                names[*f] = name.clone();
            }
        }
        split_notes.push(format!(
            "task {task}'s runs were given {} different prompts (prompt_hash differs doc by doc), so each prompt is its own arm, named by {} ({}); runs with identical prompts are repeats",
            versions.len(),
            if by_folder { "the folder that tells the runs apart" } else { "the run's date" },
            labels.join(", ")
        ));
    }
    let mut how = if tasks.len() > 1 {
        "the task (the tasks differ)".to_string()
    } else {
        format!(
            "the task {}",
            tasks.iter().next().copied().unwrap_or_default()
        )
    };
    if split_notes.is_empty() {
        how.push_str("; every run of a task was given the same prompts doc by doc (prompt_hash), so its runs are repeats");
    } else {
        how = format!("{how}; {}", split_notes.join("; "));
    }
    DefaultArms { names, how }
}

/// Whether two runs gave the same prompts: both without prompt hashes, or hashes that agree on
/// every doc both have, with at least one doc in common.
fn same_prompts(a: Option<&Prompts<'_>>, b: Option<&Prompts<'_>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            let mut shared = 0usize;
            for (doc, h) in b {
                if let Some(g) = a.get(doc) {
                    if g != h {
                        return false;
                    }
                    shared += 1;
                }
            }
            shared > 0
        }
        _ => false,
    }
}

/// Names for prompt versions, from their first runs: the part of the folder path that differs
/// between them (`run-a`, `run-b`), else the run's date_id, else the file name. Returns the names
/// and whether they came from folders.
fn version_labels(firsts: &[&File]) -> (Vec<String>, bool) {
    let comps: Vec<Vec<String>> = firsts
        .iter()
        .map(|f| {
            f.path
                .parent()
                .map(|p| {
                    p.components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect();
    let shortest = comps.iter().map(Vec::len).min().unwrap_or(0);
    let prefix = (0..shortest)
        .take_while(|&i| comps.iter().all(|c| c[i] == comps[0][i]))
        .count();
    let suffix = (0..shortest - prefix)
        .take_while(|&i| {
            comps
                .iter()
                .all(|c| c[c.len() - 1 - i] == comps[0][comps[0].len() - 1 - i])
        })
        .count();
    let folders: Vec<String> = comps
        .iter()
        .map(|c| c[prefix..c.len() - suffix].join("/"))
        .collect();
    let distinct = |v: &[String]| {
        v.iter().all(|s| !s.is_empty()) && v.iter().collect::<BTreeSet<_>>().len() == v.len()
    };
    if distinct(&folders) {
        return (folders, true);
    }
    let dated: Vec<String> = firsts
        .iter()
        .map(|f| {
            let stem = f
                .path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            date_id(&stem).map(str::to_string).unwrap_or(stem)
        })
        .collect();
    if distinct(&dated) {
        return (dated, false);
    }
    (
        dated
            .iter()
            .enumerate()
            .map(|(i, d)| format!("{d} #{}", i + 1))
            .collect(),
        false,
    )
}

/// Arms that hold runs of one task given different prompts (possible only when `--arm` named
/// them so): arm → task.
fn pooled_prompts(files: &[File], taken: &[Taken]) -> Vec<(String, String)> {
    let mut seen: BTreeMap<(&str, &str), Vec<Option<Prompts<'_>>>> = BTreeMap::new();
    for t in taken {
        let v = seen
            .entry((t.arm.as_str(), files[t.file].task.as_str()))
            .or_default();
        let p = t.prompts();
        if !v.contains(&p) {
            v.push(p);
        }
    }
    seen.into_iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|((a, t), _)| (a.to_string(), t.to_string()))
        .collect()
}

/// doc_ids that hold different documents in different lines (more than one doc_hash).
fn conflicting_doc_ids(taken: &[Taken]) -> BTreeSet<String> {
    let mut hashes: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for t in taken {
        for l in &t.lines {
            if let Some(h) = &l.doc_hash {
                hashes.entry(l.case_id.as_str()).or_default().insert(h);
            }
        }
    }
    hashes
        .into_iter()
        .filter(|(_, h)| h.len() > 1)
        .map(|(d, _)| d.to_string())
        .collect()
}

/// Reads lm-evaluation-harness samples files.
///
/// # Errors
/// Unreadable files; several metrics and no `--score`; a corpus metric as the score; a
/// non-finite score (unless `--skip-nonfinite`); several filters and no `--filter`.
pub fn read(sources: &[PathBuf], opts: &ImportOptions) -> Result<Imported> {
    let mut imp = Imported::default();
    let paths = crate::import::collect_files(
        sources,
        is_samples_file,
        "lm-eval samples (.jsonl)",
        &mut imp.skipped,
    )?;
    let mut files = Vec::new();
    // A run's results file is shared by its tasks' samples files: read each once.
    let mut runs: BTreeMap<PathBuf, RunInfo> = BTreeMap::new();
    for path in paths {
        if is_results_file(&path) {
            return Err(Error::Unreadable {
                path: path.clone(),
                problem: "a results file (each task's aggregate scores), not a samples file: it holds no per-sample scores".into(),
                fix: format!(
                    "give the samples_<task>_<date>.jsonl files beside it (written with --log_samples), or their folder {}",
                    path.parent().map(|p| p.display().to_string()).unwrap_or_default()
                ),
            });
        }
        let results = results_of(&path);
        let run = match &results {
            Some(r) => match runs.get(r) {
                Some(run) => run.clone(),
                None => {
                    let run = read_run(r)?;
                    runs.insert(r.clone(), run.clone());
                    run
                }
            },
            None => RunInfo::default(),
        };
        let task = task_of(&path, &run);
        // The same run's samples file twice (a copy in another folder): read once.
        if let Some(key) = run_key(&path, &task, &run)
            && let Some(first) = files
                .iter()
                .find(|f: &&File| run_key(&f.path, &f.task, &f.run).as_ref() == Some(&key))
        {
            imp.skipped.push(format!(
                "{}: the same run as {} ({key}), read once",
                path.display(),
                first.path.display()
            ));
            continue;
        }
        let lines = records(&path)?;
        files.push(File {
            path,
            task,
            run,
            results,
            lines,
        });
    }

    // The score.
    let mut found = BTreeSet::new();
    for f in &files {
        for (_, l) in &f.lines {
            found.extend(metrics_of(l));
        }
    }
    imp.scores_found = found.iter().cloned().collect();
    let metric = match &opts.score {
        Some(m) if found.contains(m) => {
            imp.score_choice = format!("{m} (--score)");
            m.clone()
        }
        Some(m) => {
            return Err(Error::Usage(format!(
                "--score {m}: no sample line has that metric; metrics found: {}",
                imp.scores_found.join(", ")
            )));
        }
        None if found.len() == 1 => {
            let only = found.iter().next().cloned().unwrap_or_default();
            imp.score_choice = format!("{only} (the only metric in the samples)");
            only
        }
        None => {
            return Err(Error::Usage(format!(
                "the samples have several metrics; choose one with --score: {}",
                imp.scores_found.join(", ")
            )));
        }
    };
    let by_hash = match opts.case_from.as_deref() {
        None | Some("doc_id") => false,
        Some("doc_hash") => true,
        Some(other) => {
            return Err(Error::Usage(format!(
                "--case-from {other}: use doc_id (the default) or doc_hash"
            )));
        }
    };
    let by_file = match opts.arm_from.as_deref() {
        None | Some("task") => false,
        Some("file") => true,
        Some(other) => {
            return Err(Error::Usage(format!(
                "--arm-from {other}: use task (the default) or file"
            )));
        }
    };

    // Runs in date order: repeats are numbered in it.
    files.sort_by(|a, b| {
        (a.run.date.unwrap_or(f64::INFINITY), &a.path)
            .partial_cmp(&(b.run.date.unwrap_or(f64::INFINITY), &b.path))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let mut models = BTreeSet::new();
    let mut dates = BTreeSet::new();
    let mut taken_files: Vec<Taken> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        if let Some(m) = &f.run.model {
            models.insert(m.clone());
        }
        if let Some(d) = f.run.date.and_then(civil_date) {
            dates.insert(d);
        }
        if let Some(t) = take_lines(i, f, &metric, opts, by_hash, &mut imp)? {
            taken_files.push(t);
        }
    }

    // Arms: --arm rules, the file, or the task split by prompt (a doc whose prompt_hash differs
    // between runs is in a different arm; runs identical doc by doc are repeats).
    let file_paths: Vec<PathBuf> = taken_files
        .iter()
        .map(|t| files[t.file].path.clone())
        .collect();
    let rules = ArmNames::for_files(&opts.arm_globs, &file_paths, "samples file(s)")?;
    let mut arm_of: Vec<Option<String>> = Vec::with_capacity(taken_files.len());
    for p in &file_paths {
        arm_of.push(rules.name_of(p)?);
    }
    let defaults = default_arms(&files, &taken_files, by_file);
    let mut how = Vec::new();
    if rules.any() {
        how.push("--arm rules for the files they match".to_string());
    }
    how.push(defaults.how.clone());
    imp.arm_choice = how.join("; ");
    for (t, named) in taken_files.iter_mut().zip(arm_of) {
        t.arm = named.unwrap_or_else(|| defaults.names[t.file].clone());
    }
    // An arm named by --arm that pools different prompts of one task is the user's choice: said.
    for (arm, tasks) in pooled_prompts(&files, &taken_files) {
        imp.notes.push(format!(
            "arm `{arm}` (named by --arm) pools runs of task {tasks} whose prompts differ"
        ));
    }

    // Cases: doc_id, split where the same doc_id holds different documents (doc_hash differs).
    let split = if by_hash {
        imp.case_choice =
            "doc_hash (--case-from doc_hash): the document's content, whatever its id".into();
        BTreeSet::new()
    } else {
        let split = conflicting_doc_ids(&taken_files);
        imp.case_choice = if split.is_empty() {
            "doc_id; documents are paired across arms by doc_id, and their doc_hash agrees wherever the logs carry one".into()
        } else {
            format!(
                "doc_id where doc_hash agrees; {} doc_id(s) hold different documents in different files (doc_hash differs: {}), so each document is its own case, named doc_id#doc_hash",
                split.len(),
                split.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
            )
        };
        split
    };
    for (rank, t) in taken_files.iter().enumerate() {
        let f = &files[t.file];
        for l in &t.lines {
            let case_id = match (&l.doc_hash, split.contains(&l.case_id)) {
                (Some(h), true) => format!("{}#{h}", l.case_id),
                _ => l.case_id.clone(),
            };
            imp.observations.push(Observation {
                case_id,
                arm: t.arm.clone(),
                order: (rank, 0, l.line_no),
                score: l.score,
                tokens_in: None,
                strata: l.strata.clone(),
                source: format!("{}, line {}", f.path.display(), l.line_no),
                passed: None,
                file: f.path.display().to_string(),
            });
        }
        let mut taken_text = format!(
            "{} samples of task {} as arm {}, metric {metric}",
            t.lines.len(),
            f.task,
            t.arm
        );
        if let Some(c) = &t.filter {
            taken_text.push_str(&format!(", filter {c}"));
        }
        if let Some(r) = &f.results {
            taken_text.push_str(&format!("; run info from {}", r.display()));
        }
        imp.sources.push(Source {
            file: f.path.display().to_string(),
            sha256: sha256_file(&f.path)?,
            harness: "lm-eval".into(),
            version: f.run.version.clone(),
            taken: taken_text,
            run: run_key(&f.path, &f.task, &f.run),
            arm: Some(t.arm.clone()),
            config: None,
        });
    }
    imp.model = (!models.is_empty()).then(|| models.into_iter().collect::<Vec<_>>().join(", "));
    imp.measured_at = dates.into_iter().next();
    imp.tokens_counted = "lm-eval logs no token counts: tokens_in is left out".into();
    Ok(imp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_nonfinite_numbers_are_read() {
        let v = parse(r#"{"a": NaN, "b": -Infinity, "c": 1.5, "d": [0, 1]}"#).unwrap();
        assert_eq!(nonfinite(&v["a"]), Some("NaN"));
        assert_eq!(nonfinite(&v["b"]), Some("-Infinity"));
        assert_eq!(v["c"], 1.5);
        assert!(parse("{not json").is_err());
    }

    #[test]
    fn dates_and_date_ids() {
        assert_eq!(civil_date(0.0).unwrap(), "1970-01-01");
        assert_eq!(civil_date(1_796_008_765.28).unwrap(), "2026-11-30");
        assert_eq!(civil_date(951_782_400.0).unwrap(), "2000-02-29");
        assert_eq!(civil_date(1e300), None);
        assert_eq!(civil_date(-1.0), None);
        assert_eq!(civil_date(f64::NAN), None);
        assert_eq!(
            date_id("samples_arith_gen_full_2026-11-30T03-26-41.079522"),
            Some("2026-11-30T03-26-41.079522")
        );
        assert_eq!(date_id("model__fixture-a,skill__a_arith_mc"), None);
    }
}
