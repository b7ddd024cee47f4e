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
//! Logs whose status is not `success` and samples with an `error` or a `limit` are reported and
//! skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufReader;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::import::{
    ImportOptions, Imported, Observation, Source, scalar_text, sha256_file, value_to_float,
};

/// The header of a log: `header.json` (or `_journal/start.json`, or the top of a `.json` log).
#[derive(Debug, Clone, Deserialize)]
struct Header {
    #[serde(default)]
    status: Option<String>,
    eval: EvalSpec,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Clone, Deserialize)]
struct EvalSpec {
    #[serde(default)]
    task: String,
    #[serde(default)]
    task_args: BTreeMap<String, Value>,
    #[serde(default)]
    model: String,
    #[serde(default)]
    created: String,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    packages: BTreeMap<String, String>,
    /// The eval's own id (0.3.1xx on); the same run in two formats shares it.
    #[serde(default)]
    eval_id: Option<String>,
    /// The run's id: every task and model of one `eval()` call shares it.
    #[serde(default)]
    run_id: Option<String>,
}

/// A sample summary (or a full sample: the fields read are the same).
#[derive(Debug, Clone, Deserialize)]
struct Sample {
    id: Value,
    epoch: i64,
    #[serde(default)]
    scores: Option<BTreeMap<String, Score>>,
    #[serde(default)]
    model_usage: Option<BTreeMap<String, Usage>>,
    #[serde(default)]
    metadata: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    limit: Option<Value>,
}

#[derive(Debug, Clone, Deserialize)]
struct Score {
    #[serde(default)]
    value: Value,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct Usage {
    #[serde(default)]
    output_tokens: Option<i64>,
    #[serde(default)]
    total_tokens: Option<i64>,
    #[serde(default)]
    input_tokens: Option<i64>,
    #[serde(default)]
    input_tokens_cache_read: Option<i64>,
    #[serde(default)]
    input_tokens_cache_write: Option<i64>,
}

/// A single-file `.json` log: the header's fields and every sample inline.
#[derive(Debug, Deserialize)]
struct JsonLog {
    #[serde(default)]
    status: Option<String>,
    eval: EvalSpec,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    samples: Option<Vec<Sample>>,
}

/// One log, read.
struct Log {
    path: PathBuf,
    header: Header,
    samples: Vec<Sample>,
    /// Where the scores came from, in words.
    read_from: &'static str,
    /// Whether the usage came from the sample files (the summaries carry none).
    usage_from_samples: bool,
}

fn unreadable(path: &Path, problem: impl Into<String>) -> Error {
    Error::Unreadable {
        path: path.to_path_buf(),
        problem: problem.into(),
        fix: "give an Inspect AI log (.eval, or a .json log written with --log-format json); if it was cut off while being copied, copy it again".into(),
    }
}

/// Reads one zip entry as JSON, streaming it through the decompressor.
fn entry<T: for<'de> Deserialize<'de>>(
    zip: &mut zip::ZipArchive<std::fs::File>,
    path: &Path,
    name: &str,
) -> Result<Option<T>> {
    let method = zip
        .index_for_name(name)
        .and_then(|i| zip.by_index_raw(i).ok().map(|f| f.compression()));
    if let Some(m) = method
        && !matches!(
            m,
            zip::CompressionMethod::Stored
                | zip::CompressionMethod::Deflated
                | zip::CompressionMethod::Zstd
        )
    {
        return Err(Error::Unreadable {
            path: path.to_path_buf(),
            problem: format!(
                "`{name}` is compressed with the zip method {m}, which ablate does not read (it reads stored, DEFLATE and zstd entries, the methods Inspect writes)"
            ),
            fix: "re-save the log with Inspect (`inspect log convert`), or unzip and re-zip it with DEFLATE".into(),
        });
    }
    let file = match zip.by_name(name) {
        Ok(f) => f,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => {
            return Err(unreadable(
                path,
                format!("cannot read `{name}` in the archive: {e}"),
            ));
        }
    };
    let mut capped = std::io::Read::take(file, MAX_ENTRY_BYTES + 1);
    let parsed = serde_json::from_reader(BufReader::with_capacity(1 << 16, &mut capped));
    if capped.limit() == 0 {
        return Err(Error::Unreadable {
            path: path.to_path_buf(),
            problem: format!(
                "`{name}` holds more than {} MiB once decompressed; ablate reads at most that much of one entry",
                MAX_ENTRY_BYTES >> 20
            ),
            fix: "a log this large usually carries long metadata or transcripts in its summaries: log less per sample, or import the samples that matter from a smaller log".into(),
        });
    }
    parsed.map(Some).map_err(|e| {
        unreadable(
            path,
            format!("`{name}` is not the JSON Inspect writes: {e}"),
        )
    })
}

/// Most bytes read from one entry of an `.eval` archive once decompressed (a zip's declared sizes
/// can lie, so the bytes are counted as they are read). The summaries of 10,000 samples take a few
/// MiB; a 200 KB log that inflates to 200 MiB of metadata is refused instead of needing 1.5 GB.
pub const MAX_ENTRY_BYTES: u64 = 64 << 20;

/// How a model's `input_tokens` relate to its cache reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum CacheRule {
    /// input_tokens excludes cache reads: add them.
    Excludes,
    /// input_tokens already includes cache reads (OpenAI-family providers before Inspect
    /// 0.3.184, Google before 0.3.208): do not add them again.
    Includes,
}

/// Inspect providers built on OpenAI's chat API, whose `input_tokens` included cache reads until
/// Inspect 0.3.184 (PR #3341, February 2026).
const OPENAI_FAMILY: &[&str] = &[
    "openai",
    "openai-api",
    "openrouter",
    "vllm",
    "sglang",
    "grok",
    "together",
    "fireworks",
    "sambanova",
    "ollama",
    "llama-cpp-python",
    "perplexity",
];

/// An Inspect version as (major, minor, patch, release), where a pre-release (`0.3.184.dev3`)
/// sorts before its release; `None` when it is not one.
fn version_key(v: &str) -> Option<(u64, u64, u64, bool)> {
    let mut parts = v.split(['.', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch_text = parts.next()?;
    let digits: String = patch_text
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let patch = digits.parse().ok()?;
    let release = digits.len() == patch_text.len()
        && parts
            .next()
            .is_none_or(|p| !p.starts_with("dev") && !p.starts_with("rc"));
    Some((major, minor, patch, release))
}

/// The rule for one model's usage, and whether the log's own totals decided it: when
/// `total_tokens` equals input + output (with cache reads logged), input includes the reads;
/// when it equals input + reads + writes + output, it excludes them. Otherwise the provider and
/// the Inspect version decide, as Inspect's own source did.
fn cache_rule(model: &str, u: &Usage, version: Option<&str>) -> (CacheRule, bool) {
    let read = u.input_tokens_cache_read.unwrap_or(0);
    if read > 0
        && let (Some(i), Some(o), Some(t)) = (u.input_tokens, u.output_tokens, u.total_tokens)
    {
        let write = u.input_tokens_cache_write.unwrap_or(0);
        if i.checked_add(o).and_then(|x| x.checked_add(write)) == Some(t) {
            return (CacheRule::Includes, true);
        }
        if i.checked_add(read)
            .and_then(|x| x.checked_add(write))
            .and_then(|x| x.checked_add(o))
            == Some(t)
        {
            return (CacheRule::Excludes, true);
        }
    }
    let provider = model.split('/').next().unwrap_or_default();
    let v = version.and_then(version_key);
    let before = |patch: u64| {
        v.is_some_and(|(a, b, c, release)| {
            (a, b, c) < (0, 3, patch) || ((a, b, c) == (0, 3, patch) && !release)
        })
    };
    let includes =
        (OPENAI_FAMILY.contains(&provider) && before(184)) || (provider == "google" && before(208));
    (
        if includes {
            CacheRule::Includes
        } else {
            CacheRule::Excludes
        },
        false,
    )
}

/// How a log's input tokens were counted, tallied over samples and models.
#[derive(Debug, Default)]
struct TokenTally {
    /// (rule, decided by the totals) → model entries counted that way.
    rules: BTreeMap<(CacheRule, bool), usize>,
}

/// Σ over models of the input tokens the model was sent: input_tokens + cache writes, plus cache
/// reads unless input_tokens already includes them ([`cache_rule`]), with checked arithmetic:
/// `None` when a count is negative or the sum overflows.
fn input_tokens(
    usage: &BTreeMap<String, Usage>,
    version: Option<&str>,
    tally: &mut TokenTally,
) -> Option<i64> {
    let mut total = 0i64;
    for (model, m) in usage {
        let (rule, by_totals) = cache_rule(model, m, version);
        if m.input_tokens_cache_read.is_some_and(|r| r > 0) {
            *tally.rules.entry((rule, by_totals)).or_insert(0) += 1;
        }
        let read = match rule {
            CacheRule::Excludes => m.input_tokens_cache_read,
            CacheRule::Includes => Some(0),
        };
        for n in [m.input_tokens, read, m.input_tokens_cache_write] {
            let n = n.unwrap_or(0);
            if n < 0 {
                return None;
            }
            total = total.checked_add(n)?;
        }
    }
    Some(total)
}

/// The number of a journal batch `_journal/summaries/<n>.json`.
fn journal_batch(name: &str) -> Option<u64> {
    name.strip_prefix("_journal/summaries/")?
        .strip_suffix(".json")?
        .parse()
        .ok()
}

/// The case id as Inspect keys it: `str(id)`.
fn id_text(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn read_eval(path: &Path) -> Result<Log> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut zip = zip::ZipArchive::new(file)
        .map_err(|e| unreadable(path, format!("not a readable zip archive ({e})")))?;
    let header: Option<Header> = entry(&mut zip, path, "header.json")?;
    let header = match header {
        Some(h) => h,
        None => {
            // An unfinished log: no header yet, only the journal's start record.
            let start: Header = entry(&mut zip, path, "_journal/start.json")?.ok_or_else(|| {
                unreadable(
                    path,
                    "the archive has neither header.json nor _journal/start.json",
                )
            })?;
            Header {
                status: Some("started".into()),
                ..start
            }
        }
    };
    if let Some(mut samples) = entry::<Vec<Sample>>(&mut zip, path, "summaries.json")? {
        // Summaries before Inspect 0.3.93 carry no usage; each sample's own file does.
        let mut usage_from_samples = false;
        if !samples.is_empty() && samples.iter().all(|s| s.model_usage.is_none()) {
            for s in &mut samples {
                let name = format!("samples/{}_epoch_{}.json", id_text(&s.id), s.epoch);
                if zip.index_for_name(&name).is_none() {
                    continue;
                }
                if let Some(full) = entry::<Sample>(&mut zip, path, &name)?
                    && full.model_usage.is_some()
                {
                    s.model_usage = full.model_usage;
                    usage_from_samples = true;
                }
            }
        }
        return Ok(Log {
            path: path.to_path_buf(),
            header,
            samples,
            read_from: "summaries.json",
            usage_from_samples,
        });
    }
    let names: Vec<String> = zip.file_names().map(str::to_string).collect();
    let mut batches: Vec<(u64, &String)> = names
        .iter()
        .filter_map(|n| Some((journal_batch(n)?, n)))
        .collect();
    if !batches.is_empty() {
        batches.sort();
        // Later batches win for the same (id, epoch), as in Inspect's reader.
        let mut by_key: BTreeMap<(String, i64), Sample> = BTreeMap::new();
        let mut order: Vec<(String, i64)> = Vec::new();
        for (_, name) in batches {
            let batch: Vec<Sample> = entry(&mut zip, path, name)?.unwrap_or_default();
            for s in batch {
                let key = (id_text(&s.id), s.epoch);
                if by_key.insert(key.clone(), s).is_none() {
                    order.push(key);
                }
            }
        }
        let samples = order
            .into_iter()
            .filter_map(|k| by_key.remove(&k))
            .collect();
        return Ok(Log {
            path: path.to_path_buf(),
            header,
            samples,
            read_from: "_journal/summaries",
            usage_from_samples: false,
        });
    }
    // No summaries at all: the sample files, monolithic or chunked.
    let mut samples = Vec::new();
    for name in &names {
        let Some(rest) = name.strip_prefix("samples/") else {
            continue;
        };
        if !rest.contains('/') && rest.ends_with(".json") {
            if let Some(s) = entry::<Sample>(&mut zip, path, name)? {
                samples.push(s);
            }
        } else if let Some(dir) = rest.strip_suffix("/sample.json")
            && let Some(mut s) = entry::<Sample>(&mut zip, path, name)?
        {
            if s.metadata.is_none() {
                s.metadata = entry(&mut zip, path, &format!("samples/{dir}/metadata.json"))?;
            }
            samples.push(s);
        }
    }
    Ok(Log {
        path: path.to_path_buf(),
        header,
        samples,
        read_from: "samples/",
        usage_from_samples: false,
    })
}

fn read_json(path: &Path) -> Result<Option<Log>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let log: JsonLog = match serde_json::from_reader(BufReader::with_capacity(1 << 16, file)) {
        Ok(l) => l,
        Err(e) if e.is_data() => return Ok(None),
        Err(e) => {
            return Err(unreadable(path, format!("not valid JSON: {e}")));
        }
    };
    Ok(Some(Log {
        path: path.to_path_buf(),
        header: Header {
            status: log.status,
            eval: log.eval,
            error: log.error,
        },
        samples: log.samples.unwrap_or_default(),
        read_from: "samples[] of the .json log",
        usage_from_samples: false,
    }))
}

/// Whether a file looks like an Inspect log by its name.
fn is_log(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("eval") | Some("json")
    )
}

/// How the arm of a log is named.
#[derive(Debug, Clone, PartialEq)]
enum ArmFrom {
    TaskArgs(Vec<String>),
    Task,
    Model,
    Tag,
    File,
    Single,
}

fn arm_from(logs: &[Log], asked: Option<&str>) -> Result<(ArmFrom, String)> {
    let differ = |f: &dyn Fn(&Log) -> String| logs.iter().map(f).collect::<BTreeSet<_>>().len() > 1;
    if let Some(a) = asked {
        return match a {
            "task" => Ok((ArmFrom::Task, "--arm-from task".into())),
            "model" => Ok((ArmFrom::Model, "--arm-from model".into())),
            "tag" => Ok((ArmFrom::Tag, "--arm-from tag".into())),
            "file" => Ok((ArmFrom::File, "--arm-from file".into())),
            other => match other.strip_prefix("task_arg:") {
                Some(name) if !name.is_empty() => {
                    if let Some(l) = logs
                        .iter()
                        .find(|l| !l.header.eval.task_args.contains_key(name))
                    {
                        return Err(Error::Usage(format!(
                            "--arm-from {other}: {} has no task argument `{name}`; its arguments: {}",
                            l.path.display(),
                            l.header
                                .eval
                                .task_args
                                .keys()
                                .cloned()
                                .collect::<Vec<_>>()
                                .join(", ")
                        )));
                    }
                    Ok((
                        ArmFrom::TaskArgs(vec![name.to_string()]),
                        format!("--arm-from {other}"),
                    ))
                }
                _ => Err(Error::Usage(format!(
                    "--arm-from {other}: use task_arg:NAME, task, model, tag or file"
                ))),
            },
        };
    }
    let keys: BTreeSet<&String> = logs
        .iter()
        .flat_map(|l| l.header.eval.task_args.keys())
        .collect();
    let varying: Vec<String> = keys
        .into_iter()
        .filter(|k| {
            differ(&|l: &Log| {
                l.header
                    .eval
                    .task_args
                    .get(*k)
                    .map(|v| v.to_string())
                    .unwrap_or_default()
            })
        })
        .cloned()
        .collect();
    if !varying.is_empty() {
        let why = format!(
            "the task argument{} that {} between the logs: {}",
            if varying.len() > 1 { "s" } else { "" },
            if varying.len() > 1 {
                "differ"
            } else {
                "differs"
            },
            varying.join(", ")
        );
        return Ok((ArmFrom::TaskArgs(varying), why));
    }
    if differ(&|l| l.header.eval.task.clone()) {
        return Ok((
            ArmFrom::Task,
            "the task, which differs between the logs".into(),
        ));
    }
    if differ(&|l| l.header.eval.model.clone()) {
        return Ok((
            ArmFrom::Model,
            "the model, which differs between the logs".into(),
        ));
    }
    if differ(&|l| l.header.eval.tags.join(",")) {
        return Ok((
            ArmFrom::Tag,
            "the tags, which differ between the logs".into(),
        ));
    }
    Ok((
        ArmFrom::Single,
        "one arm: nothing (task arguments, task, model, tags) differs between the logs; they are repeats of one configuration".into(),
    ))
}

/// The labels of the logs' arms. Task-argument values are written as text (`1`, `full`); when two
/// logs' values differ but read the same as text (the number `1` and the string `"1"`), every
/// value is written as JSON instead (`1`, `"1"`), so that different configurations never merge
/// into one arm. Returns the labels and whether JSON was needed.
fn arm_labels(logs: &[Log], how: &ArmFrom) -> (Vec<String>, bool) {
    let plain: Vec<String> = logs.iter().map(|l| arm_label(l, how, false)).collect();
    let ArmFrom::TaskArgs(keys) = how else {
        return (plain, false);
    };
    let config = |l: &Log| -> Vec<Option<Value>> {
        keys.iter()
            .map(|k| l.header.eval.task_args.get(k).cloned())
            .collect()
    };
    let mut seen: BTreeMap<&String, Vec<Option<Value>>> = BTreeMap::new();
    let clash = logs.iter().zip(&plain).any(|(l, label)| {
        let c = config(l);
        seen.entry(label).or_insert_with(|| c.clone()) != &c
    });
    if clash {
        (logs.iter().map(|l| arm_label(l, how, true)).collect(), true)
    } else {
        (plain, false)
    }
}

fn arm_label(log: &Log, how: &ArmFrom, json: bool) -> String {
    let e = &log.header.eval;
    let text = |v: &Value| {
        if json {
            v.to_string()
        } else {
            scalar_text(v).unwrap_or_else(|| v.to_string())
        }
    };
    match how {
        ArmFrom::TaskArgs(keys) if keys.len() == 1 => e
            .task_args
            .get(&keys[0])
            .map(text)
            .unwrap_or_else(|| "(none)".into()),
        ArmFrom::TaskArgs(keys) => keys
            .iter()
            .map(|k| {
                let v = e.task_args.get(k).cloned().unwrap_or(Value::Null);
                format!("{k}={}", text(&v))
            })
            .collect::<Vec<_>>()
            .join(","),
        ArmFrom::Task | ArmFrom::Single => e.task.clone(),
        ArmFrom::Model => e.model.clone(),
        ArmFrom::Tag => {
            if e.tags.is_empty() {
                "(untagged)".into()
            } else {
                e.tags.join(",")
            }
        }
        ArmFrom::File => log
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    }
}

/// The score choices a sample offers: each scorer, and `scorer.key` for dict or list values.
fn choices(sample: &Sample, out: &mut BTreeSet<String>) {
    for (name, s) in sample.scores.iter().flatten() {
        match &s.value {
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

/// What identifies a run across files: the eval id (else the run id) with the task, model and
/// task arguments. One `eval()` call shares a run id across its tasks and models; a log and its
/// `inspect log convert` copy share the eval id too.
fn run_key(e: &EvalSpec) -> Option<String> {
    let id = match (
        e.eval_id.as_deref().filter(|s| !s.is_empty()),
        e.run_id.as_deref().filter(|s| !s.is_empty()),
    ) {
        (Some(id), _) => format!("eval_id {id}"),
        (None, Some(run)) => format!("run_id {run}"),
        (None, None) => return None,
    };
    Some(format!(
        "{id}, task {}, model {}, task args {}",
        e.task,
        e.model,
        serde_json::to_string(&e.task_args).unwrap_or_default()
    ))
}

/// The Inspect version a log records.
fn e_version(log: &Log) -> Option<String> {
    log.header.eval.packages.get("inspect_ai").cloned()
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

/// The import summary's sentence on how tokens_in was counted.
fn tokens_sentence(cache_tokens: bool, tally: &TokenTally, usage_files: &[String]) -> String {
    let mut s = if cache_tokens {
        "tokens_in = Σ over models of the input tokens sent: input_tokens + input_tokens_cache_write, plus input_tokens_cache_read where input_tokens excludes the reads".to_string()
    } else {
        "tokens_in = Σ over models of input_tokens (no cache reads or writes were logged)"
            .to_string()
    };
    if !tally.rules.is_empty() {
        let parts: Vec<String> = tally
            .rules
            .iter()
            .map(|((rule, by_totals), n)| {
                format!(
                    "{n} model usage(s) {} cache reads, {}",
                    match rule {
                        CacheRule::Includes => "whose input_tokens already include",
                        CacheRule::Excludes => "plus their",
                    },
                    if *by_totals {
                        "as their total_tokens show"
                    } else {
                        "by the provider and Inspect version (OpenAI-family input included cache reads before 0.3.184, Google before 0.3.208)"
                    }
                )
            })
            .collect();
        s.push_str(&format!(" ({})", parts.join("; ")));
    }
    s.push_str(&if usage_files.is_empty() {
        "; from each sample's model_usage".to_string()
    } else {
        format!(
            "; from each sample's model_usage, read from the sample files for {} (their summaries carry no usage)",
            usage_files.join(", ")
        )
    });
    s
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
    let mut logs = Vec::new();
    for path in &files {
        let log = if path.extension().is_some_and(|e| e == "eval") {
            Some(read_eval(path)?)
        } else {
            read_json(path)?
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
    // The same run in two files (a .eval and its `inspect log convert` .json): read once.
    let mut kept: BTreeMap<String, PathBuf> = BTreeMap::new();
    logs.retain(|l| {
        let Some(key) = run_key(&l.header.eval) else {
            return true;
        };
        match kept.get(&key) {
            Some(first) => {
                imp.skipped.push(format!(
                    "{}: the same run as {} ({key}), read once",
                    l.path.display(),
                    first.display()
                ));
                false
            }
            None => {
                kept.insert(key, l.path.clone());
                true
            }
        }
    });
    if logs.iter().all(|l| l.samples.is_empty()) {
        return Err(Error::Usage(format!(
            "the logs hold no samples, only their headers and aggregate scores ({}): ablate needs each sample's score. Run the eval again with samples logged (Inspect logs them unless --no-log-samples or log_samples=False is set)",
            logs.iter()
                .map(|l| l.path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }

    // The score.
    let mut found = BTreeSet::new();
    for l in &logs {
        for s in &l.samples {
            choices(s, &mut found);
        }
    }
    imp.scores_found = found.iter().cloned().collect();
    let choice = match &opts.score {
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
        None if found.is_empty() => {
            let errored = logs
                .iter()
                .flat_map(|l| l.samples.iter().map(move |s| (l, s)))
                .find(|(_, s)| s.error.as_ref().is_some_and(|e| !e.is_null()));
            return Err(Error::Usage(match errored {
                Some((l, s)) => format!(
                    "no sample in the logs has a score: the samples failed. {}, sample {} epoch {}: {}. Fix the error and rerun (or resume with `inspect eval-retry`)",
                    l.path.display(),
                    id_text(&s.id),
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
    };

    let (how, why) = arm_from(&logs, opts.arm_from.as_deref())?;
    imp.arm_choice = why;
    let (mut labels, as_json) = arm_labels(&logs, &how);
    if as_json {
        imp.arm_choice.push_str(
            "; values are written as JSON (\"1\" is text, 1 a number), since some differ only in type",
        );
    }
    // Never two models in one arm unless asked (--arm-from, --arm).
    let all_models: BTreeSet<&str> = logs.iter().map(|l| l.header.eval.model.as_str()).collect();
    if opts.arm_from.is_none() && how != ArmFrom::Model && all_models.len() > 1 {
        for (label, log) in labels.iter_mut().zip(&logs) {
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
    if rules.any() {
        for (label, log) in labels.iter_mut().zip(&logs) {
            if let Some(name) = rules.name_of(&log.path)? {
                *label = name;
            }
        }
        imp.arm_choice = format!(
            "--arm rules for the logs they match; else {}",
            imp.arm_choice
        );
    }
    let mut models_of_arm: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (label, log) in labels.iter().zip(&logs) {
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

    let mut models = BTreeSet::new();
    let mut tasks = BTreeSet::new();
    let mut dates = BTreeSet::new();
    let mut cache_tokens = false;
    let mut tally = TokenTally::default();
    let mut usage_files = Vec::new();
    for (rank, log) in logs.iter().enumerate() {
        if log.usage_from_samples {
            usage_files.push(log.path.display().to_string());
        }
        let version = e_version(log);
        let e = &log.header.eval;
        models.insert(e.model.clone());
        tasks.insert(e.task.clone());
        if let Some(day) = super::date_prefix(&e.created) {
            dates.insert(day.to_string());
        }
        let arm = labels[rank].clone();
        let (mut taken, mut errored, mut limited, mut unscored) = (0usize, 0usize, 0usize, 0usize);
        let mut epochs = BTreeSet::new();
        for s in &log.samples {
            let case = id_text(&s.id);
            if s.error.as_ref().is_some_and(|e| !e.is_null()) {
                errored += 1;
                continue;
            }
            if s.limit.as_ref().is_some_and(|l| !l.is_null()) {
                limited += 1;
                continue;
            }
            let score = score_of(s, &choice).map_err(|problem| Error::BadValue {
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
            let source = format!("{}, sample {case} epoch {}", log.path.display(), s.epoch);
            let usage = s.model_usage.as_ref();
            let tokens_in = match usage.filter(|u| !u.is_empty()) {
                None => None,
                Some(u) => {
                    cache_tokens |= u.values().any(|m| {
                        m.input_tokens_cache_read.is_some() || m.input_tokens_cache_write.is_some()
                    });
                    Some(input_tokens(u, version.as_deref(), &mut tally).ok_or_else(|| Error::BadValue {
                        path: log.path.clone(),
                        column: "model_usage".into(),
                        row: crate::error::Row::none(),
                        value: format!("sample {case} epoch {}", s.epoch),
                        problem: "the input token counts (input_tokens plus cache reads and writes, over models) are negative or overflow a 64-bit count".into(),
                        fix: "check the usage this sample logged; the log may be damaged".into(),
                    })?)
                }
            };
            let strata = s
                .metadata
                .iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.clone(), scalar_text(v)?)))
                .collect();
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
            });
            taken += 1;
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
        imp.sources.push(Source {
            file: log.path.display().to_string(),
            sha256: sha256_file(&log.path)?,
            harness: "inspect".into(),
            version: e.packages.get("inspect_ai").cloned(),
            taken: format!(
                "{taken} samples ({} epochs) of task {} as arm {arm}, score {choice}, from {}",
                epochs.len(),
                e.task,
                log.read_from
            ),
            run: run_key(e),
            arm: Some(arm.clone()),
            config: Some(format!(
                "task {}, model {}, task args {}",
                e.task,
                e.model,
                serde_json::to_string(&e.task_args).unwrap_or_default()
            )),
        });
    }
    imp.set = (tasks.len() == 1)
        .then(|| tasks.iter().next().cloned())
        .flatten();
    imp.model = Some(models.into_iter().collect::<Vec<_>>().join(", "));
    imp.measured_at = dates.into_iter().next();
    imp.case_choice = "the sample id; epochs are repeats".into();
    imp.tokens_counted = tokens_sentence(cache_tokens, &tally, &usage_files);
    Ok(imp)
}

#[cfg(test)]
mod tests {
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
        assert_eq!(id_text(&Value::from(1)), "1");
        assert_eq!(id_text(&Value::from("1")), "1");
        assert_eq!(id_text(&Value::from("q4")), "q4");
    }
}
