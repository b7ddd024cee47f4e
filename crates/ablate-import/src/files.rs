//! What the three readers share about log files: reading text, collecting files under a folder,
//! bounded JSON depth, and JSON scalars as numbers or text.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The date at the start of a timestamp (`2026-11-30T…` → `2026-11-30`), when the first ten
/// characters are one: four digits, `-`, two digits, `-`, two digits. Never slices inside a
/// character.
pub fn date_prefix(stamp: &str) -> Option<&str> {
    let day = stamp.get(..10)?;
    let b = day.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    (digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10)).then_some(day)
}

/// A file opened for reading that hashes (SHA-256) every byte read from it, so that a log is
/// read once for its records and its provenance hash, not once for each.
pub struct Hashed {
    path: PathBuf,
    file: std::fs::File,
    hasher: sha2::Sha256,
}

impl Hashed {
    /// Opens `path`.
    ///
    /// # Errors
    /// The file cannot be opened.
    pub fn open(path: &Path) -> Result<Hashed> {
        use sha2::Digest as _;
        Ok(Hashed {
            path: path.to_path_buf(),
            file: std::fs::File::open(path).map_err(|e| Error::io(path, e))?,
            hasher: sha2::Sha256::new(),
        })
    }

    /// The hex SHA-256 of the whole file: the bytes read so far, then the rest (a parser may
    /// stop before the end, at trailing white space).
    ///
    /// # Errors
    /// The rest of the file cannot be read.
    pub fn sha256(mut self) -> Result<String> {
        use sha2::Digest as _;
        std::io::copy(&mut self, &mut std::io::sink()).map_err(|e| Error::io(&self.path, e))?;
        Ok(crate::io::output::hex(&self.hasher.finalize()))
    }
}

impl std::io::Read for Hashed {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use sha2::Digest as _;
        let n = self.file.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// A file's bytes and their hex SHA-256, from one read.
///
/// # Errors
/// The file cannot be read.
pub fn read_hashed(path: &Path) -> Result<(Vec<u8>, String)> {
    use sha2::Digest as _;
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let sha = crate::io::output::hex(&sha2::Sha256::digest(&bytes));
    Ok((bytes, sha))
}

/// A file's text, or a refusal naming the first line that is not UTF-8 (exit 2).
///
/// # Errors
/// The file cannot be read; it is not UTF-8 text.
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    text_of(path, bytes)
}

/// `bytes` as text, or a refusal naming the first line of `path` that is not UTF-8 (exit 2).
///
/// # Errors
/// The bytes are not UTF-8 text.
pub fn text_of(path: &Path, bytes: Vec<u8>) -> Result<String> {
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
    // A file named twice (given twice, or inside a folder also given) is read once, and said.
    let mut seen = BTreeSet::new();
    let mut twice = BTreeSet::new();
    files.retain(|f| {
        let first = seen.insert(f.clone());
        if !first {
            twice.insert(f.clone());
        }
        first
    });
    for f in &twice {
        skipped.push(format!(
            "{}: given more than once (as a file, or inside a folder also given); read once",
            f.display()
        ));
    }
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

/// Two different texts as short quoted excerpts that show where they differ, for messages: their
/// first 8 words when those differ, else 8 words from the word where the texts first part
/// (`"…nothing else.…"`); "…" marks text left out, as elsewhere in the import's messages.
pub(crate) fn differing_excerpts(a: &str, b: &str) -> (String, String) {
    fn quote(text: &str, from: usize) -> String {
        let rest: String = text.chars().skip(from).collect();
        let words: Vec<&str> = rest.split_whitespace().take(8).collect();
        if words.is_empty() {
            return "(nothing more)".into();
        }
        format!(
            "\"{}{}…\"",
            if from > 0 { "…" } else { "" },
            words.join(" ")
        )
    }
    let (qa, qb) = (quote(a, 0), quote(b, 0));
    if qa != qb {
        return (qa, qb);
    }
    let chars: Vec<char> = a.chars().collect();
    let same = chars
        .iter()
        .zip(b.chars())
        .take_while(|(x, y)| **x == *y)
        .count();
    // Back to the start of the word the difference falls in.
    let mut from = same;
    while from > 0 && !chars[from - 1].is_whitespace() {
        from -= 1;
    }
    let (qa, qb) = (quote(a, from), quote(b, from));
    if qa != qb {
        return (qa, qb);
    }
    // Texts that differ in their spacing alone: shown as written.
    let raw = |t: &str| {
        format!(
            "{:?}",
            crate::text::cut_chars(&t.chars().skip(from).collect::<String>(), 60)
        )
    };
    (raw(a), raw(b))
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

/// A chat prompt written as JSON (`[{"role": …, "content": …}, …]`) as "role: content" lines;
/// `None` when the text is not such a list.
pub fn chat_text(text: &str) -> Option<String> {
    if !text.trim_start().starts_with('[') {
        return None;
    }
    let Value::Array(messages) = serde_json::from_str::<Value>(text).ok()? else {
        return None;
    };
    let lines: Option<Vec<String>> = messages
        .iter()
        .map(|m| {
            let role = m.get("role")?.as_str()?;
            let content = match m.get("content")? {
                c @ (Value::String(_) | Value::Array(_)) => content_text(c).unwrap_or_default(),
                _ => return None,
            };
            Some(format!("{role}: {content}"))
        })
        .collect();
    lines.filter(|l| !l.is_empty()).map(|l| l.join("\n"))
}

/// A message's or a content list's text: a string as it is, a list of content parts as their
/// `text` fields (images and tool calls are left out).
pub fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_show_where_texts_part() {
        assert_eq!(
            differing_excerpts("What is 2+3?", "What is 3*5?"),
            ("\"What is 2+3?…\"".into(), "\"What is 3*5?…\"".into())
        );
        let a = "What is 2+3? Give the answer as one number, nothing else.";
        let b = "What is 2+3? Give the answer as one number, with your working.";
        assert_eq!(
            differing_excerpts(a, b),
            (
                "\"…nothing else.…\"".into(),
                "\"…with your working.…\"".into()
            )
        );
    }
}
