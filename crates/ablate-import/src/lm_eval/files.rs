//! An lm-evaluation-harness run on disk: its `results_*.json` (task, model, date) and the
//! `samples_*.jsonl` lines beside it.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{NOT_METRICS, nonfinite, parse};
use crate::error::{Error, Result};

/// A run's results file: what the samples files beside it share.
#[derive(Debug, Clone, Default)]
pub(super) struct RunInfo {
    pub(super) model: Option<String>,
    pub(super) version: Option<String>,
    /// Unix seconds.
    pub(super) date: Option<f64>,
    /// Task names it reports.
    pub(super) tasks: Vec<String>,
    /// Filter names per task, in order.
    pub(super) filters: BTreeMap<String, Vec<String>>,
    /// What the run was given beyond its task and the model's name ([`settings_of`]): two runs
    /// that differ in it are two configurations, not repeats.
    pub(super) settings: BTreeMap<String, String>,
}

/// A run's settings from its results file's `config`: each `model_args` entry (a checkpoint's
/// `revision=`, `dtype=`, a `peft=` adapter…) as `model_args.KEY` and each `gen_kwargs` entry
/// (`--gen_kwargs temperature=0.8`) as `gen_kwargs.KEY`, its value as text. lm-eval writes
/// either as a `k=v,k=v` string or as an object, depending on how it was given.
pub(super) fn settings_of(config: Option<&Value>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for key in ["model_args", "gen_kwargs"] {
        match config.and_then(|c| c.get(key)) {
            Some(Value::Object(m)) => {
                for (k, v) in m {
                    if !v.is_null() {
                        let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                        out.insert(format!("{key}.{k}"), text);
                    }
                }
            }
            Some(Value::String(text)) => {
                for kv in text.split(',').map(str::trim).filter(|kv| !kv.is_empty()) {
                    let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                    out.insert(format!("{key}.{}", k.trim()), v.trim().to_string());
                }
            }
            _ => {}
        }
    }
    out
}

/// The `date_id` suffix of a file name (`…_2026-11-30T03-26-41.079522`), if it has one.
pub(super) fn date_id(stem: &str) -> Option<&str> {
    let (_, tail) = stem.rsplit_once('_')?;
    let b = tail.as_bytes();
    (b.len() >= 19 && b[4] == b'-' && b[10] == b'T' && b[..4].iter().all(u8::is_ascii_digit))
        .then_some(tail)
}

pub(super) fn read_run(path: &Path) -> Result<RunInfo> {
    let text = crate::import::read_text(path)?;
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
        settings: settings_of(v.get("config")),
    })
}

/// The results file of a samples file: in the same folder with the same date_id,
/// `results_<date_id>.json`, or `<name>_<date_id>.json` when `--output_path` named a `.json` file
/// (lm-eval then writes `<name>_<date_id>.json` beside the samples); or `results.json` (≤0.4.2).
pub(super) fn results_of(samples: &Path) -> Option<PathBuf> {
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
pub(super) fn is_results_file(path: &Path) -> bool {
    if path.extension().is_none_or(|e| e != "json") {
        return false;
    }
    let Ok(text) = crate::import::read_text(path) else {
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
pub(super) fn run_key(path: &Path, task: &str, _run: &RunInfo) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    let id = date_id(stem)?;
    Some(format!("task {task}, run {id}"))
}

/// The task of a samples file: from its name, checked against the tasks its results report.
pub(super) fn task_of(path: &Path, run: &RunInfo) -> String {
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
pub(super) fn civil_date(unix_seconds: f64) -> Option<String> {
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
/// Returns the records with the file's SHA-256, from the same read.
pub(super) fn records(path: &Path) -> Result<(Vec<(usize, Value)>, String)> {
    let mut reader = BufReader::with_capacity(1 << 16, crate::import::Hashed::open(path)?);
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
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io(path, e))?;
        let text = crate::import::text_of(path, bytes)?;
        let v = parse(&text).map_err(|e| bad(None, e))?;
        let records = v
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, v)| (i + 1, v))
            .collect();
        return Ok((records, reader.into_inner().sha256()?));
    }
    let mut out = Vec::new();
    for (i, line) in (&mut reader).lines().enumerate() {
        let line = crate::import::log_line(path, i + 1, line)?;
        if line.trim().is_empty() {
            continue;
        }
        out.push((i + 1, parse(&line).map_err(|e| bad(Some(i + 1), e))?));
    }
    Ok((out, reader.into_inner().sha256()?))
}

/// The metrics a line offers: its `metrics` list, else its numeric or list-valued keys.
pub(super) fn metrics_of(line: &Value) -> Vec<String> {
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

pub(super) fn is_samples_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "jsonl")
}
