//! Reading Inspect AI's logs: `.eval` zip archives (the header, the sample summaries and the
//! journal's batches, each entry bounded in size) and `.json` logs, into [`Log`]s.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufReader;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use ablate_io::harness::eval_zip::{EvalZip as Zip, entry, python_json_as, unreadable};

use crate::error::{Error, Result};

/// The header of a log: `header.json` (or `_journal/start.json`, or the top of a `.json` log).
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Header {
    #[serde(default)]
    pub(super) status: Option<String>,
    pub(super) eval: EvalSpec,
    #[serde(default)]
    pub(super) error: Option<Value>,
    /// The solver steps the eval ran, with their parameters (a system message's template…).
    #[serde(default)]
    pub(super) plan: Option<Value>,
    /// Whether some of its samples were invalidated (`inspect_ai.log.invalidate_samples`); which
    /// ones, each sample's `invalidation` says (in its sample file: the summaries omit it).
    #[serde(default)]
    pub(super) invalidated: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct EvalSpec {
    #[serde(default)]
    pub(super) task: String,
    #[serde(default)]
    pub(super) task_args: BTreeMap<String, Value>,
    #[serde(default)]
    pub(super) model: String,
    #[serde(default)]
    pub(super) created: String,
    #[serde(default)]
    pub(super) tags: Vec<String>,
    #[serde(default)]
    pub(super) packages: BTreeMap<String, String>,
    /// The eval's own id (0.3.1xx on); the same run in two formats shares it.
    #[serde(default)]
    pub(super) eval_id: Option<String>,
    /// The run's id: every task and model of one `eval()` call shares it.
    #[serde(default)]
    pub(super) run_id: Option<String>,
    /// The scorers the eval ran (`null` or empty: none).
    #[serde(default)]
    pub(super) scorers: Option<Vec<Value>>,
    /// The code revision the task ran from (`{type, origin, commit, dirty}`), when its folder
    /// was in git.
    #[serde(default)]
    pub(super) revision: Option<Revision>,
    /// The eval's settings (`epochs`, `limit`, …).
    #[serde(default)]
    pub(super) config: Option<serde_json::Map<String, Value>>,
    /// The dataset (`name`, `samples`, `sample_ids`: the ids the eval ran).
    #[serde(default)]
    pub(super) dataset: Option<Value>,
    /// The solver given on the command line (`--solver`), when not the task's own.
    #[serde(default)]
    pub(super) solver: Option<Value>,
    /// Its arguments (`-S`).
    #[serde(default)]
    pub(super) solver_args: Option<Value>,
    /// The generation settings (`--temperature`, `--system-message`, …).
    #[serde(default)]
    pub(super) model_generate_config: Option<Value>,
    /// The model's own arguments (`-M`: a local model's `model_path`, a server's settings); part
    /// of which model ran.
    #[serde(default)]
    pub(super) model_args: Option<Value>,
    /// The server the model was called at (`--model-base-url`).
    #[serde(default)]
    pub(super) model_base_url: Option<Value>,
    /// The other models the eval used, by role (a grader…).
    #[serde(default)]
    pub(super) model_roles: Option<Value>,
}

/// The code revision a log's task ran from.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Revision {
    #[serde(default)]
    pub(super) commit: Option<String>,
    #[serde(default)]
    pub(super) dirty: Option<bool>,
}

/// A sample summary (or a full sample: the fields read are the same).
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Sample {
    /// The id as Inspect keys it, `str(id)` ([`id_text`]): `1` and `"1"` are one case, and a
    /// number keeps its digits however large.
    #[serde(deserialize_with = "id_as_text")]
    pub(super) id: String,
    pub(super) epoch: i64,
    #[serde(default)]
    pub(super) scores: Option<BTreeMap<String, Score>>,
    #[serde(default)]
    pub(super) model_usage: Option<BTreeMap<String, Usage>>,
    #[serde(default)]
    pub(super) metadata: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    pub(super) error: Option<Value>,
    #[serde(default)]
    pub(super) limit: Option<Value>,
    /// The input: text, or chat messages (summaries carry it too).
    #[serde(default)]
    pub(super) input: Option<Value>,
    /// The dataset's target: text or a list of texts.
    #[serde(default)]
    pub(super) target: Option<Value>,
    /// The dataset's choices (multiple choice), when it has them.
    #[serde(default)]
    pub(super) choices: Option<Value>,
    /// The model's output (full samples only; summaries carry none).
    #[serde(default)]
    pub(super) output: Option<Value>,
    /// Why the sample was invalidated (`{reason, author, timestamp…}`), when it was: its score is
    /// not to be used. Full samples only; the summaries omit it.
    #[serde(default)]
    pub(super) invalidation: Option<Value>,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct Score {
    #[serde(default)]
    pub(super) value: Value,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct Usage {
    #[serde(default)]
    pub(super) output_tokens: Option<i64>,
    #[serde(default)]
    pub(super) total_tokens: Option<i64>,
    #[serde(default)]
    pub(super) input_tokens: Option<i64>,
    #[serde(default)]
    pub(super) input_tokens_cache_read: Option<i64>,
    #[serde(default)]
    pub(super) input_tokens_cache_write: Option<i64>,
}

/// A single-file `.json` log: the header's fields and every sample inline.
#[derive(Debug, Deserialize)]
pub(super) struct JsonLog {
    #[serde(default)]
    pub(super) status: Option<String>,
    pub(super) eval: EvalSpec,
    #[serde(default)]
    pub(super) error: Option<Value>,
    #[serde(default)]
    pub(super) plan: Option<Value>,
    #[serde(default)]
    pub(super) invalidated: Option<bool>,
    #[serde(default)]
    pub(super) samples: Option<Vec<Sample>>,
}

/// One log, read.
pub(super) struct Log {
    pub(super) path: PathBuf,
    /// The log's SHA-256, from the same read as its contents.
    pub(super) sha256: String,
    pub(super) header: Header,
    pub(super) samples: Vec<Sample>,
    /// Where the scores came from, in words.
    pub(super) read_from: &'static str,
    /// Whether the usage came from the sample files (the summaries carry none).
    pub(super) usage_from_samples: bool,
}

/// The number of a journal batch `_journal/summaries/<n>.json`.
pub(super) fn journal_batch(name: &str) -> Option<u64> {
    name.strip_prefix("_journal/summaries/")?
        .strip_suffix(".json")?
        .parse()
        .ok()
}

/// The case id as Inspect keys it, `str(id)`, from the id's JSON as the log wrote it: a string's
/// text, a number digit for digit. Python's ints have no size limit; read as a u64, i64 or f64,
/// an id beyond 64 bits became a float, and 2^64 and 2^64 + 1 the same id.
fn id_text(raw: &str) -> String {
    let raw = raw.trim();
    if raw.starts_with('"') {
        serde_json::from_str::<String>(raw).unwrap_or_else(|_| raw.to_string())
    } else if raw.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        raw.to_string()
    } else {
        serde_json::from_str::<Value>(raw).map_or_else(|_| raw.to_string(), |v| v.to_string())
    }
}

/// Reads a sample's `id` as [`id_text`] keeps it.
fn id_as_text<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<String, D::Error> {
    let raw: Box<serde_json::value::RawValue> = serde::Deserialize::deserialize(d)?;
    Ok(id_text(raw.get()))
}

pub(super) fn read_eval(path: &Path) -> Result<Log> {
    // A zip is read by seeking, so the file is read into memory once and hashed there (logs
    // are compressed: tens of MB for thousands of samples).
    let (bytes, sha256) = crate::import::read_hashed(path)?;
    let mut zip = Zip::new(path, bytes)?;
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
        // Before the sample files are read for usage: each (id, epoch) names one file, so each
        // is inflated once (a summary repeated 60 times had inflated its file 60 times).
        refuse_repeats(path, &samples, "summaries.json")?;
        let usage_from_samples = usage_from_sample_files(&mut zip, path, &mut samples)?;
        if header.invalidated == Some(true) {
            invalidation_from_sample_files(&mut zip, path, &mut samples)?;
        }
        return Ok(Log {
            path: path.to_path_buf(),
            sha256: sha256.clone(),
            header,
            samples,
            read_from: "summaries.json",
            usage_from_samples,
        });
    }
    let names = zip.names();
    if let Some(samples) = journal_samples(&mut zip, path, &names)? {
        return Ok(Log {
            path: path.to_path_buf(),
            sha256: sha256.clone(),
            header,
            samples,
            read_from: "_journal/summaries",
            usage_from_samples: false,
        });
    }
    let samples = sample_files(&mut zip, path, &names)?;
    refuse_repeats(path, &samples, "the sample files samples/")?;
    Ok(Log {
        path: path.to_path_buf(),
        sha256,
        header,
        samples,
        read_from: "samples/",
        usage_from_samples: false,
    })
}

/// Refuses a log that holds one (id, epoch) twice. Inspect writes each sample once per epoch, so
/// a second copy means the log was edited or joined from two logs; read as it is, it would count
/// as a repeat that never ran (a baseline's mean moved from 0.75 to 0.79).
fn refuse_repeats(path: &Path, samples: &[Sample], held_in: &str) -> Result<()> {
    let mut seen = BTreeSet::new();
    for s in samples {
        if let Some((id, epoch)) = seen.replace((s.id.clone(), s.epoch)) {
            return Err(Error::BadValue {
                path: path.to_path_buf(),
                column: "id, epoch".into(),
                row: crate::error::Row::none(),
                value: format!("sample {id} epoch {epoch}"),
                problem: format!(
                    "appears more than once in {held_in}; Inspect writes each sample once per epoch, and a second copy would count as a repeat that never ran"
                ),
                fix: "the log was edited, or joined from two logs: import the original logs, each as its own file, or keep one copy of each sample".into(),
            });
        }
    }
    Ok(())
}

/// Summaries before Inspect 0.3.93 carry no usage; each sample's own file does. Fills it in from
/// there, and says whether any sample's usage came from its file.
fn usage_from_sample_files(zip: &mut Zip, path: &Path, samples: &mut [Sample]) -> Result<bool> {
    let mut usage_from_samples = false;
    if !samples.is_empty() && samples.iter().all(|s| s.model_usage.is_none()) {
        for s in samples.iter_mut() {
            let name = format!("samples/{}_epoch_{}.json", s.id, s.epoch);
            if !zip.has(&name) {
                continue;
            }
            if let Some(full) = entry::<Sample>(zip, path, &name)?
                && full.model_usage.is_some()
            {
                s.model_usage = full.model_usage;
                usage_from_samples = true;
            }
        }
    }
    Ok(usage_from_samples)
}

/// A log some of whose samples were invalidated names them only in their sample files (the
/// summaries omit `invalidation`): fills it in from there. A sample without a file cannot be
/// told valid, so the log is refused rather than averaged with a score its user disowned.
fn invalidation_from_sample_files(
    zip: &mut Zip,
    path: &Path,
    samples: &mut [Sample],
) -> Result<()> {
    for s in samples.iter_mut() {
        if s.invalidation.is_some() {
            continue;
        }
        let names = [
            format!("samples/{}_epoch_{}.json", s.id, s.epoch),
            format!("samples/{}_epoch_{}/sample.json", s.id, s.epoch),
        ];
        let Some(name) = names.iter().find(|n| zip.has(n)) else {
            return Err(unreadable(
                path,
                format!(
                    "its header says samples were invalidated (`invalidated: true`), but sample {} epoch {} has no sample file (samples/{}_epoch_{}.json) to say whether it is one of them",
                    s.id, s.epoch, s.id, s.epoch
                ),
            ));
        };
        if let Some(full) = entry::<Sample>(zip, path, name)? {
            s.invalidation = full.invalidation;
        }
    }
    Ok(())
}

/// The samples of an unfinished log's journal batches (`None` without any); later batches win
/// for the same (id, epoch), as in Inspect's reader.
fn journal_samples(zip: &mut Zip, path: &Path, names: &[String]) -> Result<Option<Vec<Sample>>> {
    let mut batches: Vec<(u64, &String)> = names
        .iter()
        .filter_map(|n| Some((journal_batch(n)?, n)))
        .collect();
    if batches.is_empty() {
        return Ok(None);
    }
    batches.sort();
    let mut by_key: BTreeMap<(String, i64), Sample> = BTreeMap::new();
    let mut order: Vec<(String, i64)> = Vec::new();
    for (_, name) in batches {
        let batch: Vec<Sample> = entry(zip, path, name)?.unwrap_or_default();
        for s in batch {
            let key = (s.id.clone(), s.epoch);
            if by_key.insert(key.clone(), s).is_none() {
                order.push(key);
            }
        }
    }
    Ok(Some(
        order
            .into_iter()
            .filter_map(|k| by_key.remove(&k))
            .collect(),
    ))
}

/// No summaries at all: the sample files, monolithic (`samples/ID_epoch_N.json`) or chunked
/// (`samples/DIR/sample.json` with its `metadata.json`).
fn sample_files(zip: &mut Zip, path: &Path, names: &[String]) -> Result<Vec<Sample>> {
    let mut samples = Vec::new();
    for name in names {
        let Some(rest) = name.strip_prefix("samples/") else {
            continue;
        };
        if !rest.contains('/') && rest.ends_with(".json") {
            if let Some(s) = entry::<Sample>(zip, path, name)? {
                samples.push(s);
            }
        } else if let Some(dir) = rest.strip_suffix("/sample.json")
            && let Some(mut s) = entry::<Sample>(zip, path, name)?
        {
            if s.metadata.is_none() {
                s.metadata = entry(zip, path, &format!("samples/{dir}/metadata.json"))?;
            }
            samples.push(s);
        }
    }
    Ok(samples)
}

pub(super) fn read_json(path: &Path) -> Result<Option<Log>> {
    let mut reader = BufReader::with_capacity(1 << 16, crate::import::Hashed::open(path)?);
    let mut sha256 = None;
    let parsed = match serde_json::from_reader::<_, JsonLog>(&mut reader) {
        // Python's bare `NaN` or `Infinity` (a scorer's `float('nan')`) is not JSON: read the
        // whole file again with Python's rules, the non-finite numbers kept as markers.
        Err(e) if e.is_syntax() => {
            let (bytes, sha) = crate::import::read_hashed(path)?;
            sha256 = Some(sha);
            python_json_as::<JsonLog>(&bytes).map_err(|_| e)
        }
        parsed => parsed,
    };
    let log: JsonLog = match parsed {
        Ok(l) => l,
        // JSON of another shape: not an Inspect log, unless it has Inspect's `eval` header, in
        // which case a field of it is damaged (a count written as 20.0, a sample's epoch
        // missing) and the log is refused, not skipped as "not a log".
        Err(e) if e.is_data() => {
            return if has_eval_header(path)? {
                Err(unreadable(
                    path,
                    format!(
                        "an Inspect log (it has an `eval` header) with a field that cannot be read: {e}"
                    ),
                ))
            } else {
                Ok(None)
            };
        }
        Err(e) => {
            return Err(unreadable(path, format!("not valid JSON: {e}")));
        }
    };
    refuse_repeats(
        path,
        log.samples.as_deref().unwrap_or_default(),
        "samples[]",
    )?;
    Ok(Some(Log {
        path: path.to_path_buf(),
        sha256: match sha256 {
            Some(sha) => sha,
            None => reader.into_inner().sha256()?,
        },
        header: Header {
            status: log.status,
            eval: log.eval,
            error: log.error,
            plan: log.plan,
            invalidated: log.invalidated,
        },
        samples: log.samples.unwrap_or_default(),
        read_from: "samples[] of the .json log",
        usage_from_samples: false,
    }))
}

/// Whether a JSON file's top level is an object with an `eval` object: the mark of an Inspect log.
fn has_eval_header(path: &Path) -> Result<bool> {
    let bytes = std::fs::read(path).map_err(|e| unreadable(path, e.to_string()))?;
    let value: Value =
        python_json_as(&bytes).map_err(|e| unreadable(path, format!("not valid JSON: {e}")))?;
    Ok(value.get("eval").is_some_and(Value::is_object))
}

/// Whether a file looks like an Inspect log by its name.
pub(super) fn is_log(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("eval") | Some("json")
    )
}
