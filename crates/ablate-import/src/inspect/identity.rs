//! What makes two Inspect samples the same case: their dataset input, target and choices, as
//! the dataset gave them (before any solver ran). Inspect keys samples by `id` within one task,
//! but two tasks may number different questions 1, 2, 3…: a shared id is not a shared sample.
//!
//! The identity is a hash of the input (each chat message's role and text; never the message
//! ids, which Inspect draws fresh each run), the target and the choices. Each text counts up to
//! [`THINNED_CHARS`] characters, where Inspect's summaries cut it, so a log read from its
//! summaries and one read from its sample files give the same identity.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use sha2::Digest as _;

use super::log::{Log, Sample};
use crate::error::{Error, Result};
use crate::import::{Imported, PairBy};

/// Characters of a text Inspect keeps in a sample summary (`thin_input`, `thin_target`).
pub(super) const THINNED_CHARS: usize = 5_120;

/// The case column that holds each sample's identity (a later `--into` checks it, as it checks
/// lm-eval's `doc_hash`).
pub(super) const INPUT_HASH: &str = "input_hash";

/// A text as it counts for the identity: without the summary's truncation note, at most
/// [`THINNED_CHARS`] characters.
fn counted(text: &str) -> String {
    let text = text
        .strip_suffix("...\n(content truncated)")
        .unwrap_or(text);
    text.chars().take(THINNED_CHARS).collect()
}

/// A message's content as counted text (its text parts; an image or other part by its type).
fn content(c: &Value) -> Value {
    match c {
        Value::String(s) => Value::String(counted(s)),
        Value::Array(parts) => Value::Array(
            parts
                .iter()
                .map(|p| match p.get("text").and_then(Value::as_str) {
                    Some(t) => Value::String(counted(t)),
                    None => p.get("type").cloned().unwrap_or(Value::Null),
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The identity of a sample's dataset entry: the first 16 hex digits of the SHA-256 of its
/// input (`[role, text]` per chat message, or the text), target and choices; `None` when the
/// log carries no input.
pub(super) fn identity(s: &Sample) -> Option<String> {
    let input = match s.input.as_ref()? {
        Value::Array(messages) => Value::Array(
            messages
                .iter()
                .map(|m| {
                    serde_json::json!([
                        m.get("role").cloned().unwrap_or(Value::Null),
                        m.get("content").map(content).unwrap_or(Value::Null)
                    ])
                })
                .collect(),
        ),
        Value::Null => return None,
        other => content(other),
    };
    let target = match &s.target {
        Some(Value::Array(t)) => Value::Array(t.iter().map(content).collect()),
        Some(t) => content(t),
        None => Value::Null,
    };
    let choices = s.choices.clone().unwrap_or(Value::Null);
    let canonical = serde_json::json!([input, target, choices]).to_string();
    let digest = sha2::Sha256::digest(canonical.as_bytes());
    Some(crate::text::hex(&digest)[..16].to_string())
}

/// The first words of a sample's input, for messages.
fn first_words(text: Option<&str>) -> String {
    let words: Vec<&str> = text.unwrap_or("").split_whitespace().take(8).collect();
    if words.is_empty() {
        "(no input logged)".into()
    } else {
        format!("\"{}…\"", words.join(" "))
    }
}

/// Pairs the samples across arms. By id (the default): samples that share an id must share
/// their identity, or the import is refused naming the ids and both inputs' first words. By
/// input: each sample's case is its identity (`input-<hash>`); one log may not hold two
/// samples with the same input (they would read as repeats).
///
/// # Errors
/// As above; `--pair-by input` on logs that carry no input.
pub(super) fn pair(imp: &mut Imported, logs: &[Log], pair_by: PairBy) -> Result<String> {
    match pair_by {
        PairBy::Id => refuse_shared_ids(imp, logs).map(|()| {
            "the sample id; samples that share an id hold the same input and target (checked)"
                .to_string()
        }),
        PairBy::Input => by_input(imp).map(|()| {
            "the sample's input and target (--pair-by input): input-<hash of input, target and choices>".to_string()
        }),
    }
}

/// Where a sample of one identity was first seen: its arm, its file and its input's first words.
type Seen<'a> = (&'a str, &'a str, String);

/// Refuses ids that hold different samples in different arms (or logs), naming what tells the
/// two samples apart ([`told_apart`]).
fn refuse_shared_ids(imp: &Imported, logs: &[Log]) -> Result<()> {
    // case id → identity → where it was first seen
    let mut seen: BTreeMap<&str, BTreeMap<&str, Seen<'_>>> = BTreeMap::new();
    for o in &imp.observations {
        let Some(h) = o.strata.get(INPUT_HASH) else {
            continue;
        };
        seen.entry(&o.case_id)
            .or_default()
            .entry(h)
            .or_insert_with(|| (&o.arm, &o.file, first_words(o.input.as_deref())));
    }
    let clashes: Vec<(&str, Vec<(&str, &Seen<'_>)>)> = seen
        .iter()
        .filter(|(_, ids)| ids.len() > 1)
        .map(|(id, ids)| (*id, ids.iter().map(|(h, s)| (*h, s)).collect()))
        .collect();
    let Some((id, first)) = clashes.first() else {
        return Ok(());
    };
    let ((ha, a), (hb, b)) = (first[0], first[1]);
    let ids: Vec<&str> = clashes.iter().take(10).map(|(id, _)| *id).collect();
    let told = match (sample_of(logs, a.1, id, ha), sample_of(logs, b.1, id, hb)) {
        (Some(sa), Some(sb)) => told_apart(sa, sb),
        _ => ("input", a.2.clone(), b.2.clone()),
    };
    let differ = match told {
        ("input", wa, wb) => format!(
            "Id {id} is {wa} in arm `{}` ({}) but {wb} in arm `{}` ({})",
            a.0, a.1, b.0, b.1
        ),
        (what, wa, wb) => format!(
            "Id {id} holds the same input ({}) in both, but {what} {wa} in arm `{}` ({}) and {what} {wb} in arm `{}` ({})",
            a.2, a.0, a.1, b.0, b.1
        ),
    };
    Err(Error::Usage(format!(
        "{} sample id(s) hold different samples in different logs, so pairing by id would compare different questions (ids {}{}). {differ}. Pair by content with --pair-by input (the hash of each sample's input and target), or import the logs that share a dataset separately",
        clashes.len(),
        ids.join(", "),
        if clashes.len() > ids.len() {
            ", …"
        } else {
            ""
        },
    )))
}

/// The sample read from `file` under `id` whose identity is `hash` (for messages).
fn sample_of<'a>(logs: &'a [Log], file: &str, id: &str, hash: &str) -> Option<&'a Sample> {
    logs.iter()
        .filter(|l| l.path.display().to_string() == file)
        .flat_map(|l| &l.samples)
        .find(|s| s.id == id && identity(s).as_deref() == Some(hash))
}

/// What tells two samples of one id apart, for messages: their inputs when they differ (the
/// first words, or the words where they part), else their targets, else their choices. Returns
/// what differs (`input`, `target`, `choices`) and how it reads in each.
fn told_apart(a: &Sample, b: &Sample) -> (&'static str, String, String) {
    let input = |s: &Sample| {
        s.input
            .as_ref()
            .and_then(super::input_text)
            .unwrap_or_default()
    };
    let (ia, ib) = (input(a), input(b));
    if ia != ib {
        let (wa, wb) = crate::import::differing_excerpts(&ia, &ib);
        return ("input", wa, wb);
    }
    // The value as text, and as shown.
    let text = |v: Option<&Value>| match v {
        None | Some(Value::Null) => (String::new(), "(none)".to_string()),
        Some(Value::String(s)) => (s.clone(), format!("{s:?}")),
        Some(v) => (v.to_string(), v.to_string()),
    };
    for (what, va, vb) in [
        ("target", a.target.as_ref(), b.target.as_ref()),
        ("choices", a.choices.as_ref(), b.choices.as_ref()),
    ] {
        let ((ta, sa), (tb, sb)) = (text(va), text(vb));
        if ta != tb {
            if sa.chars().count() <= 62 && sb.chars().count() <= 62 {
                return (what, sa, sb);
            }
            let (wa, wb) = crate::import::differing_excerpts(&ta, &tb);
            return (what, wa, wb);
        }
    }
    // Nothing with text tells them apart (an image part): as before.
    ("input", first_words(Some(&ia)), first_words(Some(&ib)))
}

/// Makes each sample's case its identity; refuses a log with two samples of one identity.
fn by_input(imp: &mut Imported) -> Result<()> {
    let mut in_file: BTreeMap<(&str, &str, i64), &str> = BTreeMap::new();
    let mut without = BTreeSet::new();
    for o in &imp.observations {
        let Some(h) = o.strata.get(INPUT_HASH) else {
            without.insert(o.file.as_str());
            continue;
        };
        if let Some(other) = in_file.insert((&o.file, h, o.order.1), &o.case_id)
            && other != o.case_id
        {
            return Err(Error::Usage(format!(
                "{}: samples {other} and {} hold the same input and target, so --pair-by input cannot tell them apart (they would count as repeats of one case); pair by id (drop --pair-by input), or remove the duplicate from the dataset",
                o.file, o.case_id
            )));
        }
    }
    if let Some(f) = without.first() {
        return Err(Error::Usage(format!(
            "{f}: the samples carry no input, so --pair-by input has nothing to pair by; pair by id (drop --pair-by input)"
        )));
    }
    for o in &mut imp.observations {
        if let Some(h) = o.strata.get(INPUT_HASH) {
            o.case_id = format!("input-{h}");
        }
    }
    Ok(())
}
