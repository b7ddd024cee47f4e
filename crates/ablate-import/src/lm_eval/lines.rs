//! One samples file's lines, taken: each line's score (by the chosen metric and filter), case
//! and texts, with the lines that cannot be taken counted or refused.

use super::*;

/// One sample line taken from a samples file.
pub(super) struct TakenLine {
    pub(super) line_no: usize,
    pub(super) score: f64,
    /// doc_id (or doc_hash with `--case-from doc_hash`).
    pub(super) case_id: String,
    pub(super) doc_hash: Option<String>,
    pub(super) prompt_hash: Option<String>,
    pub(super) strata: BTreeMap<String, String>,
    /// The prompt (the first request's first argument), cut for `samples`.
    pub(super) input: Option<String>,
    /// The model's first response, cut for `samples`.
    pub(super) output: Option<String>,
}

/// A line's prompt: the first request's first argument, in either layout lm-eval writes
/// (`{"gen_args_0": {"arg_0": …}}`, or `[[context, continuation], …]`).
pub(super) fn line_input(l: &Value) -> Option<String> {
    let first = match l.get("arguments")? {
        Value::Object(m) => m
            .iter()
            .min_by_key(|(k, _)| (k.len(), k.as_str()))
            .and_then(|(_, v)| v.get("arg_0"))?
            .clone(),
        Value::Array(a) => match a.first()? {
            Value::Array(args) => args.first()?.clone(),
            other => other.clone(),
        },
        _ => return None,
    };
    // A chat request's prompt is lm-eval's `JsonChatStr`, a one-field tuple written as a list
    // holding the messages as a JSON string.
    let text = match &first {
        Value::Array(one) if one.len() == 1 => one[0].as_str()?,
        other => other.as_str()?,
    };
    crate::import::sample_text(&crate::import::chat_text(text).unwrap_or_else(|| text.to_string()))
}

/// A line's output: its first raw response when it is text (generation), else its first
/// filtered response when that is (loglikelihood tasks log numbers, which are left out).
pub(super) fn line_output(l: &Value) -> Option<String> {
    let first_text = |v: Option<&Value>| -> Option<String> {
        let mut v = v?;
        while let Value::Array(a) = v {
            v = a.first()?;
        }
        v.as_str().and_then(crate::import::sample_text)
    };
    first_text(l.get("resps")).or_else(|| first_text(l.get("filtered_resps")))
}

/// The lines taken from one samples file, and its arm once known.
pub(super) struct Taken {
    /// Index into the files.
    pub(super) file: usize,
    pub(super) lines: Vec<TakenLine>,
    /// The filter chosen, when the task has several.
    pub(super) filter: Option<String>,
    pub(super) arm: String,
}

impl Taken {
    /// The prompt each doc was given (doc_id → prompt_hash), when the file records prompt hashes.
    pub(super) fn prompts(&self) -> Option<Prompts<'_>> {
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
pub(super) fn take_lines(
    index: usize,
    f: &File,
    metric: &str,
    opts: &ImportOptions,
    by_hash: bool,
    imp: &mut Imported,
) -> Result<Option<Taken>> {
    let (lines, without) = lines_by_filter(f, metric);
    if lines.is_empty() {
        imp.skipped.push(format!(
            "{}: task {} has no metric {metric}",
            f.path.display(),
            f.task
        ));
        return Ok(None);
    }
    let chosen_filter = match choose_filter(f, opts, &lines) {
        // A run without the chosen filter is skipped with --skip-invalid.
        Err(e) if opts.skip_invalid && opts.filter.is_some() => {
            imp.skipped.push(format!(
                "{}: skipped (--skip-invalid): {e}",
                f.path.display()
            ));
            return Ok(None);
        }
        other => other?,
    };
    let mut taken = Vec::new();
    let mut nonfinite_skipped = Vec::new();
    // The line each doc was first taken from: lm-eval writes a doc once per filter, so a second
    // line of one doc under the chosen filter is a copy (a file written twice, or edited), and
    // would count as a repeat that never ran.
    let mut first_line: BTreeMap<String, usize> = BTreeMap::new();
    for (line_no, l, filter) in lines {
        if chosen_filter.as_ref().is_some_and(|c| *c != filter) {
            continue;
        }
        let doc = l.get("doc_id").map(|v| v.to_string()).unwrap_or_default();
        if let Some(first) = first_line.insert(doc.clone(), line_no) {
            return Err(Error::BadValue {
                path: f.path.clone(),
                column: "doc_id".into(),
                row: Row(Some(line_no)),
                value: doc,
                problem: format!(
                    "this doc was written before, on line {first}, under the same filter; lm-eval writes each doc once per filter, and a second copy would count as a repeat that never ran"
                ),
                fix: "the file was written twice or edited: import the samples file lm-eval wrote, as it wrote it".into(),
            });
        }
        let Some(v) = l.get(metric) else {
            continue;
        };
        let Some(score) = line_score(f, metric, line_no, v, opts.skip_nonfinite)? else {
            nonfinite_skipped.push(line_no);
            continue;
        };
        taken.push(taken_line(f, metric, line_no, l, score, by_hash)?);
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

/// The lines with the metric, each with its filter: its `filter` key, else its position among
/// the lines of the same doc (lm-eval writes all of filter 1, then all of filter 2, …); and the
/// number of lines without the metric.
pub(super) fn lines_by_filter<'a>(
    f: &'a File,
    metric: &str,
) -> (Vec<(usize, &'a Value, String)>, usize) {
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
    (lines, without)
}

/// The filter to take: none when the task has one, else `--filter`, which is required and must
/// be one of the task's.
pub(super) fn choose_filter(
    f: &File,
    opts: &ImportOptions,
    lines: &[(usize, &Value, String)],
) -> Result<Option<String>> {
    let filters: BTreeSet<&String> = lines.iter().map(|(_, _, f)| f).collect();
    let list = filters
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    match (&opts.filter, filters.len()) {
        (_, 1) => Ok(None),
        (Some(want), _) if filters.contains(want) => Ok(Some(want.clone())),
        (Some(want), _) => Err(Error::Usage(format!(
            "--filter {want}: {} has no such filter; filters: {list}{}",
            f.path.display(),
            if opts.skip_invalid {
                ""
            } else {
                " (or pass --skip-invalid to skip the runs without it)"
            }
        ))),
        (None, _) => Err(Error::Usage(format!(
            "{}: task {} writes one line per filter ({list}); choose one with --filter",
            f.path.display(),
            f.task,
        ))),
    }
}

/// An error for the metric's value on one line.
pub(super) fn bad_line(
    f: &File,
    metric: &str,
    line_no: usize,
    value: String,
    problem: String,
    fix: &str,
) -> Error {
    Error::BadValue {
        path: f.path.clone(),
        column: metric.to_string(),
        row: Row(Some(line_no)),
        value,
        problem,
        fix: fix.into(),
    }
}

/// A line's score: a number, or a boolean as 0 or 1. `None` for a non-finite score skipped with
/// `--skip-nonfinite`; an error for a corpus metric (`[gold, pred]`), another non-finite score,
/// or a value that is not a number.
pub(super) fn line_score(
    f: &File,
    metric: &str,
    line_no: usize,
    v: &Value,
    skip_nonfinite: bool,
) -> Result<Option<f64>> {
    let bad = |value: String, problem: String, fix: &str| {
        bad_line(f, metric, line_no, value, problem, fix)
    };
    match v {
        Value::Number(n) => Ok(Some(n.as_f64().unwrap_or(f64::NAN))),
        Value::Bool(b) => Ok(Some(f64::from(u8::from(*b)))),
        Value::Array(_) => Err(bad(
            v.to_string(),
            format!(
                "`{metric}` is a corpus-level metric: lm-eval stores it per sample as [gold, pred] and computes it over the whole set, so a sample has no score of its own"
            ),
            "choose a per-sample metric with --score (e.g. acc or exact_match)",
        )),
        other => match nonfinite(other) {
            Some(_) if skip_nonfinite => Ok(None),
            Some(text) => Err(bad(
                text.to_string(),
                "the score is not finite".into(),
                "fix the run, choose another metric with --score, or pass --skip-nonfinite to leave such samples out (they are reported)",
            )),
            None => Err(bad(
                other.to_string(),
                "the score is not a number".into(),
                "choose a numeric metric with --score",
            )),
        },
    }
}

/// One scored line: its case id (doc_id, or doc_hash with `--case-from doc_hash`), its hashes,
/// and its doc's scalar fields as case columns, with doc_hash among them (`import --into` pairs
/// by it later).
pub(super) fn taken_line(
    f: &File,
    metric: &str,
    line_no: usize,
    l: &Value,
    score: f64,
    by_hash: bool,
) -> Result<TakenLine> {
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
        return Err(bad_line(
            f,
            metric,
            line_no,
            String::new(),
            format!(
                "the line has no {}",
                if by_hash { "doc_hash" } else { "doc_id" }
            ),
            "give samples files written by lm-eval --log_samples",
        ));
    };
    let mut strata = scalar_fields(l.get("doc"));
    if let Some(h) = text("doc_hash") {
        strata.insert("doc_hash".into(), h);
    }
    Ok(TakenLine {
        line_no,
        score,
        case_id,
        doc_hash: text("doc_hash"),
        prompt_hash: text("prompt_hash"),
        strata,
        input: line_input(l),
        output: line_output(l),
    })
}
