//! An Inspect AI `.eval` log's zip archive, read entry by entry as JSON with a cap on what it may
//! inflate to (one entry, and the archive as a whole): a small archive that inflates to gigabytes
//! is refused, not read.

use std::io::BufReader;
use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::harness::python_json;

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
pub struct EvalZip {
    archive: zip::ZipArchive<std::io::Cursor<Vec<u8>>>,
    /// Bytes the entries still to be read may inflate to, in all.
    left: u64,
    /// What `left` started at: the larger of [`MIN_ARCHIVE_BYTES`] and [`ARCHIVE_RATIO`] times
    /// the archive's size.
    budget: u64,
}

impl EvalZip {
    /// Opens the archive held in `bytes` (the file at `path`, read once).
    ///
    /// # Errors
    /// Not a zip archive.
    pub fn new(path: &Path, bytes: Vec<u8>) -> Result<EvalZip> {
        let budget = MIN_ARCHIVE_BYTES.max((bytes.len() as u64).saturating_mul(ARCHIVE_RATIO));
        let archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
            .map_err(|e| unreadable(path, format!("not a readable zip archive ({e})")))?;
        Ok(EvalZip {
            archive,
            left: budget,
            budget,
        })
    }

    /// The names of the archive's entries, in the archive's order.
    pub fn names(&self) -> Vec<String> {
        self.archive.file_names().map(str::to_string).collect()
    }

    /// Whether the archive has an entry `name`.
    pub fn has(&self, name: &str) -> bool {
        self.archive.index_for_name(name).is_some()
    }
}

pub fn unreadable(path: &Path, problem: impl Into<String>) -> Error {
    Error::Unreadable {
        path: path.to_path_buf(),
        problem: problem.into(),
        fix: "give an Inspect AI log (.eval, or a .json log written with --log-format json); if it was cut off while being copied, copy it again".into(),
    }
}

/// Reads one zip entry as JSON, streaming it through the decompressor: at most
/// [`MAX_ENTRY_BYTES`], and at most what is left of the archive's budget.
pub fn entry<T: for<'de> Deserialize<'de>>(
    zip: &mut EvalZip,
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
    let mut bytes = Vec::new();
    let read = std::io::Read::read_to_end(
        &mut BufReader::with_capacity(1 << 16, &mut capped),
        &mut bytes,
    );
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
    if let Err(e) = read {
        return Err(unreadable(path, format!("cannot read `{name}`: {e}")));
    }
    python_json_as(&bytes).map(Some).map_err(|e| {
        unreadable(
            path,
            format!("`{name}` is not the JSON Inspect writes: {e}"),
        )
    })
}

/// `bytes` as JSON the way Python writes it: strict JSON first; when that fails on its syntax,
/// through [`python_json::parse`], which reads the bare `NaN` and `Infinity` Python writes for a
/// non-finite float (a scorer's `float('nan')`) and keeps them as
/// [`python_json::nonfinite`] markers for the caller to judge.
///
/// # Errors
/// Neither parser reads it, or its shape is not `T`'s (strict JSON's message).
pub fn python_json_as<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> serde_json::Result<T> {
    match serde_json::from_slice::<T>(bytes) {
        Err(strict) if strict.is_syntax() => {
            let Some(value) = std::str::from_utf8(bytes)
                .ok()
                .filter(|t| t.contains("NaN") || t.contains("Infinity"))
                .and_then(|t| python_json::parse(t).ok())
            else {
                return Err(strict);
            };
            serde_json::from_value(value)
        }
        parsed => parsed,
    }
}
