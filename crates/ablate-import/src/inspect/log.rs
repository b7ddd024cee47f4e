//! Reading Inspect AI's logs: `.eval` zip archives (the header, the sample summaries and the
//! journal's batches, each entry bounded in size) and `.json` logs, into [`Log`]s.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufReader;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, Result};

/// Most bytes read from one entry of an `.eval` archive once decompressed (a zip's declared sizes
/// can lie, so the bytes are counted as they are read). The summaries of 10,000 samples take a few
/// MiB; a 200 KB log that inflates to 200 MiB of metadata is refused instead of needing 1.5 GB.
pub const MAX_ENTRY_BYTES: u64 = 64 << 20;

/// Fewest bytes ablate will inflate from one `.eval` archive over all the entries it reads (the
/// header, the summaries, the sample files), whatever the archive's size.
pub const MIN_ARCHIVE_BYTES: u64 = 256 << 20;

/// How many times its own size an `.eval` archive may inflate to over all the entries read, past
/// [`MIN_ARCHIVE_BYTES`]. Inspect's logs inflate 2 to 6 times; sixteen sample files of 60 MiB
/// each in a 1 MB archive had taken the import to 1.08 GB.
pub const ARCHIVE_RATIO: u64 = 100;

/// An `.eval` archive being read, with what it may still inflate to.
pub(super) struct Zip {
    archive: zip::ZipArchive<std::io::Cursor<Vec<u8>>>,
    /// Bytes the entries still to be read may inflate to, in all.
    left: u64,
    /// What `left` started at: the larger of [`MIN_ARCHIVE_BYTES`] and [`ARCHIVE_RATIO`] times
    /// the archive's size.
    budget: u64,
}

/// The header of a log: `header.json` (or `_journal/start.json`, or the top of a `.json` log).
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Header {
    #[serde(default)]
    pub(super) status: Option<String>,
    pub(super) eval: EvalSpec,
    #[serde(default)]
    pub(super) error: Option<Value>,
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
}

/// A sample summary (or a full sample: the fields read are the same).
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Sample {
    pub(super) id: Value,
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
    /// The model's output (full samples only; summaries carry none).
    #[serde(default)]
    pub(super) output: Option<Value>,
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

pub(super) fn unreadable(path: &Path, problem: impl Into<String>) -> Error {
    Error::Unreadable {
        path: path.to_path_buf(),
        problem: problem.into(),
        fix: "give an Inspect AI log (.eval, or a .json log written with --log-format json); if it was cut off while being copied, copy it again".into(),
    }
}

/// Reads one zip entry as JSON, streaming it through the decompressor: at most
/// [`MAX_ENTRY_BYTES`], and at most what is left of the archive's budget.
pub(super) fn entry<T: for<'de> Deserialize<'de>>(
    zip: &mut Zip,
    path: &Path,
    name: &str,
) -> Result<Option<T>> {
    let method = zip
        .archive
        .index_for_name(name)
        .and_then(|i| zip.archive.by_index_raw(i).ok().map(|f| f.compression()));
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
    let cap = MAX_ENTRY_BYTES.min(zip.left);
    let file = match zip.archive.by_name(name) {
        Ok(f) => f,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => {
            return Err(unreadable(
                path,
                format!("cannot read `{name}` in the archive: {e}"),
            ));
        }
    };
    let mut capped = std::io::Read::take(file, cap + 1);
    let parsed = serde_json::from_reader(BufReader::with_capacity(1 << 16, &mut capped));
    if capped.limit() == 0 && cap < MAX_ENTRY_BYTES {
        return Err(Error::Unreadable {
            path: path.to_path_buf(),
            problem: format!(
                "the entries ablate reads from it hold more than {} MiB once decompressed (the limit was reached in `{name}`); ablate inflates at most {ARCHIVE_RATIO} times a log's size, and at least {} MiB, from one log",
                zip.budget >> 20,
                MIN_ARCHIVE_BYTES >> 20
            ),
            fix: "Inspect's logs inflate a few times their size: this archive may be damaged or not written by Inspect. If it is a real log, log less per sample (long metadata or transcripts), or split the run into smaller logs".into(),
        });
    }
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
    zip.left -= cap + 1 - capped.limit();
    parsed.map(Some).map_err(|e| {
        unreadable(
            path,
            format!("`{name}` is not the JSON Inspect writes: {e}"),
        )
    })
}

/// The number of a journal batch `_journal/summaries/<n>.json`.
pub(super) fn journal_batch(name: &str) -> Option<u64> {
    name.strip_prefix("_journal/summaries/")?
        .strip_suffix(".json")?
        .parse()
        .ok()
}

/// The case id as Inspect keys it: `str(id)`.
pub(super) fn id_text(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub(super) fn read_eval(path: &Path) -> Result<Log> {
    // A zip is read by seeking, so the file is read into memory once and hashed there (logs
    // are compressed: tens of MB for thousands of samples).
    let (bytes, sha256) = crate::import::read_hashed(path)?;
    let budget = MIN_ARCHIVE_BYTES.max((bytes.len() as u64).saturating_mul(ARCHIVE_RATIO));
    let archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| unreadable(path, format!("not a readable zip archive ({e})")))?;
    let mut zip = Zip {
        archive,
        left: budget,
        budget,
    };
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
        return Ok(Log {
            path: path.to_path_buf(),
            sha256: sha256.clone(),
            header,
            samples,
            read_from: "summaries.json",
            usage_from_samples,
        });
    }
    let names: Vec<String> = zip.archive.file_names().map(str::to_string).collect();
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
        if let Some((id, epoch)) = seen.replace((id_text(&s.id), s.epoch)) {
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
            let name = format!("samples/{}_epoch_{}.json", id_text(&s.id), s.epoch);
            if zip.archive.index_for_name(&name).is_none() {
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
            let key = (id_text(&s.id), s.epoch);
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
    let log: JsonLog = match serde_json::from_reader(&mut reader) {
        Ok(l) => l,
        Err(e) if e.is_data() => return Ok(None),
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
        sha256: reader.into_inner().sha256()?,
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
pub(super) fn is_log(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("eval") | Some("json")
    )
}
