//! promptfoo `eval -o results.json` (results versions 2 and 3) and `-o results.jsonl` (one v3 row
//! per line).
//!
//! Mapping: arm = the prompt's label (else its id), with the provider's label (else id) after a
//! `|` when the rows have several providers; case = `testCase.description`, else a hash of
//! `vars` (never `testIdx`: every repeat of a test gets a new one); repeat = order of occurrence
//! per (case, arm), in `testIdx` order; score = `score`, or `namedScores[NAME]` with `--score`;
//! tokens_in = `response.tokenUsage.prompt`; strata = scalar `testCase.metadata` fields. A row
//! that failed with an error (`failureReason` 2; in version 2 files, `success: false` with an
//! `error` and no grading) is an error, not a score of 0: it is reported and skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result, Row};
use crate::import::{ImportOptions, Imported, Observation, Source, scalar_fields};

/// `failureReason` of a row that errored (promptfoo's `ResultFailureReason.ERROR`).
const FAILURE_ERROR: i64 = 2;

struct File {
    path: PathBuf,
    /// The file's SHA-256, from the same read as its rows.
    sha256: String,
    /// `results.version` (3 for .jsonl rows).
    version: i64,
    promptfoo: Option<String>,
    created: Option<String>,
    description: Option<String>,
    rows: Vec<Value>,
    /// Results version 2 keeps test descriptions out of the rows, in `table.body`: the vars id of
    /// each described test → its description.
    table_descriptions: BTreeMap<String, String>,
    /// The providers of the eval's config (`config.providers`), as written: named in a refusal
    /// of two providers sharing a name. Empty in a .jsonl file, which carries no config.
    providers: Vec<Value>,
}

fn unreadable(path: &Path, problem: String) -> Error {
    Error::Unreadable {
        path: path.to_path_buf(),
        problem,
        fix: "give the file promptfoo wrote with `promptfoo eval -o results.json` (or .jsonl)"
            .into(),
    }
}

fn read_file(path: &Path) -> Result<Option<File>> {
    let jsonl = path.extension().is_some_and(|e| e == "jsonl");
    let mut reader = std::io::BufReader::with_capacity(1 << 16, super::Hashed::open(path)?);
    if jsonl {
        let mut rows = Vec::new();
        for (i, line) in (&mut reader).lines().enumerate() {
            let line = super::log_line(path, i + 1, line)?;
            if line.trim().is_empty() {
                continue;
            }
            rows.push(
                serde_json::from_str(&line)
                    .map_err(|e| unreadable(path, format!("line {} is not JSON: {e}", i + 1)))?,
            );
        }
        return Ok(Some(File {
            path: path.to_path_buf(),
            sha256: reader.into_inner().sha256()?,
            version: 3,
            promptfoo: None,
            created: None,
            description: None,
            rows,
            table_descriptions: BTreeMap::new(),
            providers: Vec::new(),
        }));
    }
    let v: Value = serde_json::from_reader(&mut reader)
        .map_err(|e| unreadable(path, format!("not valid JSON: {e}")))?;
    let sha256 = reader.into_inner().sha256()?;
    let Some(results) = v.get("results").filter(|r| r.get("results").is_some()) else {
        return Ok(None);
    };
    let s = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    // A results version this importer was not written for may keep its scores, errors or test
    // ids elsewhere: refused by name rather than read as if it were version 2 or 3.
    let version = results.get("version");
    if let Some(v) = version
        && !matches!(v.as_i64(), Some(2 | 3))
    {
        return Err(Error::Unreadable {
            path: path.to_path_buf(),
            problem: format!(
                "its results.version is {v}; ablate reads promptfoo's results versions 2 and 3"
            ),
            fix: "write the results with a promptfoo that writes version 2 or 3 (`promptfoo eval -o results.json`), or report the version so that ablate can learn it".into(),
        });
    }
    Ok(Some(File {
        path: path.to_path_buf(),
        sha256,
        version: version.and_then(Value::as_i64).unwrap_or(0),
        promptfoo: s(v.get("metadata").and_then(|m| m.get("promptfooVersion"))),
        created: s(v.get("metadata").and_then(|m| m.get("evaluationCreatedAt")))
            .or_else(|| s(results.get("timestamp"))),
        description: s(v.get("config").and_then(|c| c.get("description"))),
        rows: results
            .get("results")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        table_descriptions: results
            .get("table")
            .and_then(|t| t.get("body"))
            .and_then(Value::as_array)
            .map(|body| {
                body.iter()
                    .filter_map(|b| {
                        let test = b.get("test");
                        let d = text_of(test.and_then(|t| t.get("description")))
                            .or_else(|| text_of(b.get("description")))?;
                        let vars = test.and_then(|t| t.get("vars"))?;
                        Some((vars_id(vars), d))
                    })
                    .collect()
            })
            .unwrap_or_default(),
        providers: v
            .get("config")
            .and_then(|c| c.get("providers"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
    }))
}

/// A row's test in its file: [`test_of`], with the description from the file's table when the
/// row carries none (results version 2).
fn test_in(f: &File, row: &Value) -> Test {
    let (description, vars, asserts) = test_of(row);
    let description = description.or_else(|| f.table_descriptions.get(&vars).cloned());
    (description, vars, asserts)
}

fn text_of(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Longest prompt label used as an arm's name as it is; a longer or multi-line one (a whole
/// template, a chat array) is named by its file or a hash, with the full text in `arms.prompt`.
const MAX_LABEL_CHARS: usize = 80;

/// A prompt's name, its full template (when the row gives one), and whether the name is the
/// rendered prompt.
///
/// The template is the label, else the display text (results version 2 before labels). Its
/// name: the template itself when it is one short printable line; else the file it came from
/// (promptfoo labels a file prompt `path: template`); else `prompt-` and the first 8 hex digits
/// of the template's SHA-256 (a chat array, a long template). Without a template: `prompt-` and
/// the row's `promptId`, else the raw text. `raw` is the prompt rendered with the test's vars, a
/// different text for every test, so it is the last resort.
fn prompt_name(row: &Value) -> (String, Option<String>, bool) {
    let p = row.get("prompt");
    if let Some(template) = text_of(p.and_then(|p| p.get("label")))
        .or_else(|| text_of(p.and_then(|p| p.get("display"))))
    {
        return (short_name(&template), Some(template), false);
    }
    if let Some(id) = text_of(row.get("promptId")) {
        return (
            format!("prompt-{}", id.chars().take(8).collect::<String>()),
            None,
            false,
        );
    }
    match text_of(p.and_then(|p| p.get("raw"))) {
        Some(raw) => (raw, None, true),
        None => ("(prompt)".into(), None, false),
    }
}

/// A short, stable, printable name for a prompt template (see [`prompt_name`]).
fn short_name(template: &str) -> String {
    let printable = |s: &str| !s.chars().any(char::is_control);
    if template.chars().count() <= MAX_LABEL_CHARS && printable(template) {
        return template.to_string();
    }
    if let Some((path, _)) = template.split_once(": ")
        && path.chars().count() <= MAX_LABEL_CHARS
        && printable(path)
        && !path.trim_start().starts_with(['[', '{'])
        && [
            ".txt", ".json", ".yaml", ".yml", ".md", ".j2", ".jinja", ".njk", ".py", ".js", ".ts",
        ]
        .iter()
        .any(|ext| path.to_ascii_lowercase().ends_with(ext))
    {
        return path.to_string();
    }
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(template.as_bytes());
    format!("prompt-{}", &crate::text::hex(&digest)[..8])
}

/// The row's own pass/fail: `success`, else `gradingResult.pass`.
fn passed_of(row: &Value) -> Option<bool> {
    row.get("success")
        .and_then(Value::as_bool)
        .or_else(|| row.get("gradingResult")?.get("pass")?.as_bool())
}

/// A provider's name: its label, else its id.
fn provider_name(row: &Value) -> String {
    match row.get("provider") {
        Some(Value::String(s)) => s.clone(),
        Some(p) => text_of(p.get("label"))
            .or_else(|| text_of(p.get("id")))
            .unwrap_or_else(|| "(provider)".into()),
        None => "(provider)".into(),
    }
}

/// The prompt a row sent: `prompt.raw`, its template rendered with the test's vars (text, or a
/// chat array). promptfoo's `promptId` is the SHA-256 of the label when there is one, so it stays
/// the same when the template under the label is edited; the rendered text does not.
fn rendered_of(row: &Value) -> Option<String> {
    match row.get("prompt")?.get("raw")? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(canonical(other)),
    }
}

/// Where a test's prompt was first sent in an arm: the file (its rank), the row, the SHA-256 of
/// the rendered prompt, and whether an --arm rule named the arm.
struct Sent {
    rank: usize,
    row: usize,
    sha256: String,
    named: bool,
}

/// "test `T` was sent "A…" in FILE (row R) but "B…" in FILE (row S)", for messages.
fn sent_differently(files: &[File], a: &Sent, b: &Sent, case: &str) -> String {
    let (fa, fb) = (&files[a.rank], &files[b.rank]);
    let text = |f: &File, row: usize| rendered_of(&f.rows[row]).unwrap_or_default();
    let (wa, wb) = crate::import::differing_excerpts(&text(fa, a.row), &text(fb, b.row));
    format!(
        "test `{case}` was sent {wa} in {} (row {}) but {wb} in {} (row {})",
        fa.path.display(),
        a.row + 1,
        fb.path.display(),
        b.row + 1
    )
}

/// The refusal of an arm whose rows sent one test two different prompts: a prompt edited under
/// its label between evals, or two prompts given one label.
fn two_prompts_one_label(files: &[File], a: &Sent, b: &Sent, arm: &str, case: &str) -> Error {
    let (ra, rb) = (&files[a.rank].rows[a.row], &files[b.rank].rows[b.row]);
    let label = prompt_name(ra).0;
    let short = |id: String| id.chars().take(12).collect::<String>();
    let ids = match (text_of(ra.get("promptId")), text_of(rb.get("promptId"))) {
        (Some(x), Some(y)) if x == y => format!(
            " (promptId {}… in both: promptfoo derives it from the label)",
            short(x)
        ),
        (Some(x), Some(y)) => format!(" (promptId {}… and {}…)", short(x), short(y)),
        _ => String::new(),
    };
    let fix = if a.rank == b.rank {
        format!("Give each prompt its own label in the config (prompts: - label: {label}-v2)")
    } else {
        format!(
            "Give each version its own label in the config (prompts: - label: {label}-v2), or name each file's arm with --arm NAME=GLOB (e.g. --arm before={} --arm after={}); to pool them on purpose, give the files one name with --arm",
            files[a.rank].path.display(),
            files[b.rank].path.display()
        )
    };
    Error::Usage(format!(
        "arm `{arm}` would hold two different prompts under the label `{label}`{ids}: {}. The prompt (or a file its vars read) changed between the evals, or two prompts share the label, and pooling them would average two prompts as repeats of one. {fix}",
        sent_differently(files, a, b, case)
    ))
}

/// The refusal of an arm that takes rows of two columns of one eval (`promptIdx`): providers that
/// share a name (the same id, no label) with different configs, whose answers would count as
/// repeats of one arm.
fn two_columns_one_arm(f: &File, arm: &str, columns: (i64, i64), provider: &str) -> Error {
    let configs: Vec<String> = f
        .providers
        .iter()
        .filter(|p| match p {
            Value::String(s) => s == provider,
            p => {
                text_of(p.get("label"))
                    .or_else(|| text_of(p.get("id")))
                    .as_deref()
                    == Some(provider)
            }
        })
        .map(|p| crate::text::cut_chars(&canonical(p), 161))
        .collect();
    let listed = if configs.len() > 1 {
        format!(" (config.providers: {})", configs.join(" and "))
    } else {
        String::new()
    };
    Error::Usage(format!(
        "{}: columns {} and {} of the eval (promptIdx) would both be arm `{arm}`: their providers share the name `{provider}`{listed}, and pooling them would count two providers' (or two configurations') answers as repeats of one arm. Give each provider its own `label:` in the promptfoo config and run the eval again, or run each provider in its own eval and name each file's arm with --arm NAME=GLOB",
        f.path.display(),
        columns.0,
        columns.1
    ))
}

/// The providers an eval's config lists (`config.providers`), by the name its rows carry
/// ([`provider_name`]: label, else id), each as canonical JSON. promptfoo takes a provider as
/// its id (`"openai:gpt-4o"`), as an object with an `id`, or as a one-key map from id to
/// options; all three are read as the object form, so one provider written two ways is one.
fn configured_providers(f: &File) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in &f.providers {
        let object = match p {
            Value::String(id) => serde_json::json!({ "id": id }),
            Value::Object(m) if !m.contains_key("id") && m.len() == 1 => {
                let (id, options) = m.iter().next().expect("one key");
                let mut o = options.as_object().cloned().unwrap_or_default();
                o.insert("id".into(), Value::String(id.clone()));
                Value::Object(o)
            }
            other => other.clone(),
        };
        let Some(name) = text_of(object.get("label")).or_else(|| text_of(object.get("id"))) else {
            continue;
        };
        out.entry(name).or_default().insert(canonical(&object));
    }
    out
}

/// One provider name is one configuration across the files: evals whose configs give a provider
/// of one name (label, else id) other settings (a temperature, a model version, another
/// endpoint) would pool two configurations' answers into one arm as repeats. Files an --arm rule
/// names are left to the rule. `.jsonl` files carry no config and are not compared.
///
/// # Errors
/// Two files whose configs give one provider name different settings.
fn one_config_per_provider(files: &[File], rules: &super::ArmNames) -> Result<()> {
    let mut first: BTreeMap<String, (usize, BTreeSet<String>)> = BTreeMap::new();
    for (i, f) in files.iter().enumerate() {
        if rules.name_of(&f.path)?.is_some() {
            continue;
        }
        for (name, configs) in configured_providers(f) {
            let Some((j, before)) = first.get(&name) else {
                first.insert(name, (i, configs));
                continue;
            };
            if *before == configs {
                continue;
            }
            let shown = |c: &BTreeSet<String>| {
                crate::text::cut_chars(&c.iter().cloned().collect::<Vec<_>>().join(" and "), 201)
            };
            return Err(Error::Usage(format!(
                "{} and {} both run provider `{name}`, with other settings ({} against {}: config.providers): their answers would pool into one arm as repeats of one configuration. Give each configuration its own `label:` in the promptfoo config and run again, or name each file's arm with --arm NAME=GLOB",
                files[*j].path.display(),
                f.path.display(),
                shown(before),
                shown(&configs)
            )));
        }
    }
    Ok(())
}

/// JSON with object keys sorted, so equal vars give equal text.
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, String> =
                m.iter().map(|(k, v)| (k, canonical(v))).collect();
            format!(
                "{{{}}}",
                sorted
                    .iter()
                    .map(|(k, v)| format!("{}:{v}", Value::String((*k).clone())))
                    .collect::<Vec<_>>()
                    .join(",")
            )
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

/// A test: its description, if any, the hash of its vars, and the hash of its assertions (`None`
/// when the row does not say: results version 2 rows without `testCase`).
type Test = (Option<String>, String, Option<String>);

/// A row's test: its description (when it has one), `vars-` with the first 12 hex digits of the
/// SHA-256 of its vars (canonical JSON), and [`asserts_id`].
fn test_of(row: &Value) -> Test {
    let test = row.get("testCase");
    let description = text_of(test.and_then(|t| t.get("description")))
        .or_else(|| text_of(row.get("description")));
    let vars = test
        .and_then(|t| t.get("vars"))
        .or_else(|| row.get("vars"))
        .cloned()
        .unwrap_or(Value::Null);
    (description, vars_id(&vars), asserts_id(row))
}

/// `vars-` and the first 12 hex digits of the SHA-256 of the vars (canonical JSON).
fn vars_id(vars: &Value) -> String {
    let hash = Sha256::digest(canonical(vars).as_bytes());
    format!("vars-{}", crate::io::output::hex(&hash[..6]))
}

/// `asserts-` and the first 12 hex digits of the SHA-256 of a row's test's assertions and pass
/// threshold (canonical JSON): what its score measures. No assertions, `[]` or left out, are one
/// set. `None` when the row carries no `testCase` (results version 2 before promptfoo wrote it),
/// which agrees with any.
fn asserts_id(row: &Value) -> Option<String> {
    let test = row.get("testCase").filter(|t| t.is_object())?;
    let part = |key: &str| match test.get(key) {
        Some(Value::Array(a)) if a.is_empty() => Value::Null,
        Some(v) => v.clone(),
        None => Value::Null,
    };
    let both = Value::Array(vec![part("assert"), part("threshold")]);
    let hash = Sha256::digest(canonical(&both).as_bytes());
    Some(format!("asserts-{}", crate::io::output::hex(&hash[..6])))
}

/// The assertions' hashes one file's rows carry for one test, each with its first row.
type AssertsInFile = BTreeMap<String, usize>;

/// Case ids for every test, and what the summary says about them.
struct CaseIds {
    /// Each test's case id.
    ids: BTreeMap<Test, String>,
    /// Descriptions shared by tests with different vars.
    shared: Vec<String>,
    /// Tests an eval holds several times with different assertions (by their id before the split).
    split: Vec<String>,
}

/// Case ids for every test: its description, else its vars hash. A description that several
/// tests with different vars share gets the vars hash too (`refund window [vars-1a2b3c4d5e6f]`).
/// A test an eval holds several times with different assertions gets the assertions' hash
/// (`refund window [asserts-0a1b2c3d4e5f]`). Those are different cases, not repeats of one.
///
/// # Errors
/// A test whose assertions differ between files (edited between the evals): its scores in the
/// two files measure different things.
fn case_ids(files: &[File]) -> Result<CaseIds> {
    let mut vars_by_description: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // (description, vars) → file index → its assertions' hashes
    let mut asserted: BTreeMap<(Option<String>, String), BTreeMap<usize, AssertsInFile>> =
        BTreeMap::new();
    let mut tests = BTreeSet::new();
    for (fi, f) in files.iter().enumerate() {
        for (ri, row) in f.rows.iter().enumerate() {
            let (description, vars, asserts) = test_in(f, row);
            if let Some(d) = &description {
                vars_by_description
                    .entry(d.clone())
                    .or_default()
                    .insert(vars.clone());
            }
            if let Some(a) = &asserts {
                asserted
                    .entry((description.clone(), vars.clone()))
                    .or_default()
                    .entry(fi)
                    .or_default()
                    .entry(a.clone())
                    .or_insert(ri);
            }
            tests.insert((description, vars, asserts));
        }
    }
    let shared: Vec<String> = vars_by_description
        .iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(d, _)| d.clone())
        .collect();
    let base = |description: &Option<String>, vars: &String| match description {
        Some(d) if shared.contains(d) => format!("{d} [{vars}]"),
        Some(d) => d.clone(),
        None => vars.clone(),
    };
    // Within one eval, several assertion sets are several tests; between evals the sets must
    // agree, or the test was edited.
    let mut split = BTreeSet::new();
    for ((description, vars), per_file) in &asserted {
        let mut each = per_file.iter();
        let Some((&fa, a)) = each.next() else {
            continue;
        };
        if let Some((&fb, b)) = each.find(|(_, b)| b.keys().ne(a.keys())) {
            return Err(edited_assertions(
                files,
                &base(description, vars),
                (fa, a),
                (fb, b),
            ));
        }
        if a.len() > 1 {
            split.insert((description.clone(), vars.clone()));
        }
    }
    let ids = tests
        .into_iter()
        .map(|(description, vars, asserts)| {
            let mut id = base(&description, &vars);
            if let Some(a) = &asserts
                && split.contains(&(description.clone(), vars.clone()))
            {
                id = format!("{id} [{a}]");
            }
            ((description, vars, asserts), id)
        })
        .collect();
    let split: Vec<String> = split.iter().map(|(d, v)| base(d, v)).collect();
    Ok(CaseIds { ids, shared, split })
}

/// A row's assertions in words (`contains "2+3", equals "5"`), for messages.
fn assert_words(row: &Value) -> String {
    let words: Vec<String> = row
        .get("testCase")
        .and_then(|t| t.get("assert"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|a| {
            let kind = a.get("type").and_then(Value::as_str).unwrap_or("assert");
            match a.get("value") {
                Some(Value::String(s)) => format!("{kind} {:?}", crate::text::cut_chars(s, 40)),
                Some(v) if !v.is_null() => {
                    format!("{kind} {}", crate::text::cut_chars(&v.to_string(), 40))
                }
                _ => kind.to_string(),
            }
        })
        .collect();
    if words.is_empty() {
        "no assertions".into()
    } else {
        words.join(", ")
    }
}

/// The refusal of a test scored by different assertions in two files: each file's index and
/// its assertions' hashes with their first rows.
fn edited_assertions(
    files: &[File],
    test: &str,
    a: (usize, &AssertsInFile),
    b: (usize, &AssertsInFile),
) -> Error {
    // An assertion set one file holds and the other lacks, then the other's first.
    let first_row = |set: &AssertsInFile| set.values().next().copied().unwrap_or(0);
    let (only, other) = match a.1.iter().find(|(h, _)| !b.1.contains_key(*h)) {
        Some((_, &row)) => ((a.0, row), (b.0, first_row(b.1))),
        None => {
            let row =
                b.1.iter()
                    .find(|(h, _)| !a.1.contains_key(*h))
                    .map_or(0, |(_, &r)| r);
            ((b.0, row), (a.0, first_row(a.1)))
        }
    };
    let shown = |(fi, row): (usize, usize)| {
        format!(
            "{} (row {}: {})",
            files[fi].path.display(),
            row + 1,
            assert_words(&files[fi].rows[row])
        )
    };
    Error::Usage(format!(
        "test `{test}` is scored by different assertions in {} and in {}: the tests were edited between the evals (or one eval ran only some of a test's variants, as with --filter), so the two files' scores of it measure different things, and pairing them as one case would compare them as if they did not. Run the earlier eval again with the current tests, or import the evals separately",
        shown(only),
        shown(other)
    ))
}

/// Whether a row failed with an error rather than a score.
fn is_error(row: &Value) -> bool {
    match row.get("failureReason").and_then(Value::as_i64) {
        Some(r) => r == FAILURE_ERROR,
        None => {
            row.get("success") == Some(&Value::Bool(false))
                && row.get("gradingResult").is_none_or(Value::is_null)
                && row.get("error").is_some_and(|e| !e.is_null())
        }
    }
}

fn is_results(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("json") | Some("jsonl")
    )
}

/// Reads promptfoo results files.
///
/// # Errors
/// Unreadable files; a `--score` name no row has; a score that is not a finite number; one test
/// sent two different prompts under one label (unless --arm names the files alike); a test
/// scored by different assertions in different files.
pub fn read(sources: &[PathBuf], opts: &ImportOptions) -> Result<Imported> {
    if opts.pair_by == crate::import::PairBy::Input {
        return Err(Error::Usage(
            "--pair-by input: promptfoo's cases are its tests, named by description or by a hash of their variables, so they pair by content already; drop --pair-by".into(),
        ));
    }
    let mut imp = Imported::default();
    let paths = crate::import::collect_files(
        sources,
        is_results,
        "promptfoo results (.json or .jsonl)",
        &mut imp.skipped,
    )?;
    let mut files = Vec::new();
    for p in paths {
        let Some(read) = crate::import::or_skip(read_file(&p), &p, "promptfoo", opts, &mut imp)?
        else {
            continue;
        };
        match read {
            Some(f) => files.push(f),
            None => imp.skipped.push(format!(
                "{}: a .json file that is not promptfoo output (no results.results)",
                p.display()
            )),
        }
    }
    if files.is_empty() {
        return Err(Error::Usage(format!(
            "no promptfoo results to import: {}",
            imp.skipped.join("; ")
        )));
    }
    let files = each_eval_once(files, &mut imp)?;
    let providers: BTreeSet<String> = files
        .iter()
        .flat_map(|f| f.rows.iter().map(provider_name))
        .collect();
    let with_provider = providers.len() > 1;
    imp.arm_choice = if with_provider {
        format!(
            "prompt label | provider, since the rows have {} providers ({})",
            providers.len(),
            providers.iter().cloned().collect::<Vec<_>>().join(", ")
        )
    } else {
        "the prompt's label (its template in results version 2 without labels), one provider; a label longer than a line is named by its file (file prompts) or prompt-<hash of the template>, the whole template in arms.prompt"
            .into()
    };
    let named_choice = choose_score(&files, opts, &mut imp)?;
    let cases = case_ids(&files)?;
    if !cases.shared.is_empty() {
        imp.notes.push(format!(
            "{} test description(s) are shared by tests with different vars ({}): each such test is its own case, named by its description and a hash of its vars",
            cases.shared.len(),
            cases.shared.join("; ")
        ));
    }
    if !cases.split.is_empty() {
        imp.notes.push(format!(
            "{} test(s) appear in one eval more than once with different assertions ({}): each is its own case, named with a hash of its assertions ([asserts-…]), not a repeat",
            cases.split.len(),
            cases.split.join("; ")
        ));
    }
    let paths: Vec<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
    let rules = super::ArmNames::for_files(&opts.arm_globs, &paths, "results file(s)")?;
    if rules.any() {
        imp.arm_choice = format!(
            "--arm rules for the files they match (with the prompt's label when a file holds several prompts); else {}",
            imp.arm_choice
        );
    }
    one_config_per_provider(&files, &rules)?;
    let taking = Taking {
        named_choice: named_choice.as_deref(),
        case_id_of: &cases.ids,
        with_provider,
    };
    let mut totals = Totals::default();
    for (rank, f) in files.iter().enumerate() {
        let named_by_rule = rules.name_of(&f.path)?;
        take_rows(&files, rank, named_by_rule, &taking, &mut imp, &mut totals)?;
    }
    imp.set = (totals.descriptions.len() == 1)
        .then(|| totals.descriptions.into_iter().next())
        .flatten();
    imp.model = Some(providers.into_iter().collect::<Vec<_>>().join(", "));
    imp.measured_at = totals.created.into_iter().next();
    if totals.raw_named > 0 {
        imp.notes.push(format!(
            "{} row(s) name no prompt label or template, only the rendered prompt: their arm is the rendered text, which differs per test; label the prompts in the config (prompts: [{{label: …}}])",
            totals.raw_named
        ));
    }
    imp.case_choice = "the test's description, else a hash of its vars (a description shared by tests with different vars gets the hash too); never testIdx, which counts repeats".into();
    imp.tokens_counted =
        "tokens_in = response.tokenUsage.prompt, as the provider reported it".into();
    Ok(imp)
}

/// Each eval once. promptfoo writes one eval as `results.json` and `results.jsonl` alike (`-o`
/// takes both), and every row carries the eval's own row `id`: a file whose row ids were all read
/// from an earlier file is that eval again, skipped and named (read twice, its rows had counted
/// as repeats that never ran); a file sharing only some of them holds part of an eval already
/// read, and is refused, as is a row id twice in one file.
///
/// # Errors
/// A row id twice in a file; two files sharing some row ids but not all.
fn each_eval_once(files: Vec<File>, imp: &mut Imported) -> Result<Vec<File>> {
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut kept = Vec::new();
    for f in files {
        let ids: Vec<String> = f
            .rows
            .iter()
            .filter_map(|r| r.get("id").and_then(Value::as_str).map(str::to_string))
            .collect();
        let mut own = BTreeSet::new();
        if let Some((i, dup)) = ids.iter().enumerate().find(|(_, id)| !own.insert(*id)) {
            return Err(Error::BadValue {
                path: f.path.clone(),
                column: "id".into(),
                row: crate::error::Row::at(i),
                value: dup.clone(),
                problem: "this row id appears twice in the file; promptfoo writes each row once, and a second copy would count as a repeat that never ran".into(),
                fix: "the file was edited or joined from two: import the files promptfoo wrote, each once".into(),
            });
        }
        let earlier: Vec<&PathBuf> = ids.iter().filter_map(|id| seen.get(id)).collect();
        if !ids.is_empty() && earlier.len() == ids.len() {
            imp.skipped.push(format!(
                "{}: the same eval as {} (every row id is there too), read once",
                f.path.display(),
                earlier[0].display()
            ));
            continue;
        }
        if let Some(first) = earlier.first() {
            return Err(Error::Usage(format!(
                "{} shares {} of its {} row ids with {} (e.g. {}): the two files hold parts of the same eval, and reading both would count its rows twice. Import each eval once, as promptfoo wrote it",
                f.path.display(),
                earlier.len(),
                ids.len(),
                first.display(),
                ids.iter()
                    .find(|id| seen.contains_key(*id))
                    .cloned()
                    .unwrap_or_default()
            )));
        }
        for id in ids {
            seen.insert(id, f.path.clone());
        }
        kept.push(f);
    }
    Ok(kept)
}

/// The score to import: promptfoo's `score` (the default), or a named score given with
/// `--score`; `None` for `score`.
fn choose_score(
    files: &[File],
    opts: &ImportOptions,
    imp: &mut Imported,
) -> Result<Option<String>> {
    let mut named = BTreeSet::new();
    for f in files {
        for r in &f.rows {
            if let Some(m) = r.get("namedScores").and_then(Value::as_object) {
                named.extend(m.keys().cloned());
            }
        }
    }
    imp.scores_found = std::iter::once("score".to_string())
        .chain(named.iter().cloned())
        .collect();
    Ok(match opts.score.as_deref() {
        None | Some("score") => {
            imp.score_choice = "score (promptfoo's weighted mean of the assertions)".into();
            None
        }
        Some(n) if named.contains(n) => {
            imp.score_choice = format!("namedScores.{n} (--score)");
            Some(n.to_string())
        }
        Some(n) => {
            return Err(Error::Usage(format!(
                "--score {n}: no row has that named score; scores found: {}",
                imp.scores_found.join(", ")
            )));
        }
    })
}

/// What every file's rows are read with.
struct Taking<'a> {
    /// The named score (`None`: promptfoo's `score`).
    named_choice: Option<&'a str>,
    /// Each test's case id.
    case_id_of: &'a BTreeMap<Test, String>,
    /// Whether arms are split by provider.
    with_provider: bool,
}

/// What the files read so far say about the import as a whole.
#[derive(Default)]
struct Totals {
    /// Rows named by their rendered prompt only.
    raw_named: usize,
    /// The days the runs were created.
    created: BTreeSet<String>,
    /// The runs' descriptions.
    descriptions: BTreeSet<String>,
    /// Where each (arm, case) was first sent its prompt: one test sent two different prompts in
    /// one arm means two prompts under one label.
    sent: BTreeMap<(String, String), Sent>,
    /// Arms named by --arm that pool different prompts (noted once each).
    pooled: BTreeSet<String>,
}

/// Turns one file's rows into observations (rows that failed with an error, or lack the score,
/// are counted in `imp.skipped`), and records the file as a source.
fn take_rows(
    files: &[File],
    rank: usize,
    named_by_rule: Option<String>,
    taking: &Taking<'_>,
    imp: &mut Imported,
    totals: &mut Totals,
) -> Result<()> {
    let f = &files[rank];
    let (named_choice, case_id_of, with_provider) =
        (taking.named_choice, taking.case_id_of, taking.with_provider);
    let prompts_in_file: BTreeSet<String> = f.rows.iter().map(|r| prompt_name(r).0).collect();
    let providers_in_file: BTreeSet<String> = f.rows.iter().map(provider_name).collect();
    if let Some(day) = f.created.as_deref().and_then(crate::import::date_prefix) {
        totals.created.insert(day.to_string());
    }
    if let Some(d) = &f.description {
        totals.descriptions.insert(d.clone());
    }
    let mut order: Vec<usize> = (0..f.rows.len()).collect();
    order.sort_by_key(|&i| (f.rows[i].get("testIdx").and_then(Value::as_i64), i));
    let (mut taken, mut errors, mut without) = (0usize, 0usize, 0usize);
    let mut arms = BTreeSet::new();
    // The column (`promptIdx`: one prompt run by one provider) each arm's rows came from in this
    // file: a second column is a second prompt or provider under one name, not a repeat.
    let mut column_of: BTreeMap<String, i64> = BTreeMap::new();
    let first = imp.observations.len();
    for (position, &i) in order.iter().enumerate() {
        let row = &f.rows[i];
        let case_id = case_id_of[&test_in(f, row)].clone();
        if is_error(row) {
            errors += 1;
            continue;
        }
        let Some(score) = row_score(f, i, row, named_choice)? else {
            without += 1;
            continue;
        };
        let (prompt, template, raw) = prompt_name(row);
        totals.raw_named += usize::from(raw);
        let mut arm = match &named_by_rule {
            Some(name) if prompts_in_file.len() == 1 => name.clone(),
            Some(name) => format!("{name} {prompt}"),
            None => prompt,
        };
        // Providers split arms, except within a file an --arm rule named whole.
        let split_by_provider = match &named_by_rule {
            Some(_) => providers_in_file.len() > 1,
            None => with_provider,
        };
        if split_by_provider {
            arm = format!("{arm} | {}", provider_name(row));
        }
        arms.insert(arm.clone());
        // One test, one prompt per arm: a second rendered text under the same label is another
        // prompt (edited between evals, or two prompts sharing a label).
        if let Some(text) = rendered_of(row) {
            let sent = Sent {
                rank,
                row: i,
                sha256: crate::text::hex(&Sha256::digest(text.as_bytes())),
                named: named_by_rule.is_some(),
            };
            let key = (arm.clone(), case_id.clone());
            match totals.sent.get(&key) {
                None => {
                    totals.sent.insert(key, sent);
                }
                Some(first) if first.sha256 == sent.sha256 => {}
                Some(first) if first.named && sent.named => {
                    if totals.pooled.insert(arm.clone()) {
                        imp.notes.push(format!(
                            "arm `{arm}` (named by --arm) pools prompts that differ: {}",
                            sent_differently(files, first, &sent, &case_id)
                        ));
                    }
                }
                Some(first) => {
                    return Err(two_prompts_one_label(files, first, &sent, &arm, &case_id));
                }
            }
        }
        // Checked after the prompts: two prompts under one label are named as such above (and
        // pooled when --arm named them alike).
        if let Some(column) = row.get("promptIdx").and_then(Value::as_i64)
            && !totals.pooled.contains(&arm)
        {
            let seen = *column_of.entry(arm.clone()).or_insert(column);
            if seen != column {
                return Err(two_columns_one_arm(
                    f,
                    &arm,
                    (seen.min(column), seen.max(column)),
                    &provider_name(row),
                ));
            }
        }
        if let Some(t) = template {
            imp.prompts.entry(arm.clone()).or_insert(t);
        }
        imp.observations
            .push(observation(f, i, case_id, arm, (rank, 0, position), score));
        taken += 1;
    }
    if errors > 0 {
        imp.skipped.push(format!(
            "{}: {errors} row(s) that failed with an error (failureReason 2), not a score of 0",
            f.path.display()
        ));
    }
    if without > 0 {
        imp.skipped.push(format!(
            "{}: {without} row(s) without the chosen score",
            f.path.display()
        ));
    }
    imp.sources.push(Source {
        file: f.path.display().to_string(),
        sha256: f.sha256.clone(),
        harness: "promptfoo".into(),
        version: f.promptfoo.clone(),
        taken: format!(
            "{taken} rows (results version {}) as arms {}",
            f.version,
            arms.iter().cloned().collect::<Vec<_>>().join(", ")
        ),
        run: None,
        arm: (arms.len() == 1)
            .then(|| arms.iter().next().cloned())
            .flatten(),
        config: None,
    });
    // One run per file and arm (a promptfoo eval runs every prompt of its config).
    for arm in &arms {
        let scores: Vec<f64> = imp.observations[first..]
            .iter()
            .filter(|o| &o.arm == arm)
            .map(|o| o.score)
            .collect();
        imp.runs.push(crate::io::runs::RunRow {
            run: f.path.display().to_string(),
            arm: arm.clone(),
            harness: "promptfoo".into(),
            file: f.path.display().to_string(),
            revision: None,
            model: None,
            started: f.created.clone(),
            samples: scores.len() as i64,
            errors: 0,
            mean_score: (!scores.is_empty()).then(|| crate::stats::moments::mean(&scores)),
            outlier: false,
        });
    }
    Ok(())
}

/// The observation of row `i` of `f`: its case, arm, order, score, and what the row says beside
/// them (prompt tokens, the test's metadata as strata, the rendered prompt and the output).
fn observation(
    f: &File,
    i: usize,
    case_id: String,
    arm: String,
    order: (usize, i64, usize),
    score: f64,
) -> Observation {
    let row = &f.rows[i];
    Observation {
        case_id,
        arm,
        order,
        score,
        tokens_in: row
            .get("response")
            .and_then(|r| r.get("tokenUsage"))
            .and_then(|t| t.get("prompt"))
            .and_then(Value::as_i64),
        strata: scalar_fields(
            row.get("testCase")
                .and_then(|t| t.get("metadata"))
                .or_else(|| row.get("metadata")),
        ),
        source: format!("{}, row {}", f.path.display(), i + 1),
        passed: passed_of(row),
        file: f.path.display().to_string(),
        input: row
            .get("prompt")
            .and_then(|p| p.get("raw"))
            .and_then(Value::as_str)
            .and_then(|raw| {
                crate::import::sample_text(
                    &crate::import::chat_text(raw).unwrap_or_else(|| raw.to_string()),
                )
            }),
        output: row
            .get("response")
            .and_then(|r| r.get("output"))
            .and_then(|o| match o {
                Value::String(s) => crate::import::sample_text(s),
                Value::Null => None,
                other => crate::import::sample_text(&other.to_string()),
            }),
    }
}

/// A row's score: `score`, or with `--score NAME` its `namedScores.NAME`; `None` when the row
/// has none, an error when it is not a finite number.
fn row_score(f: &File, i: usize, row: &Value, named: Option<&str>) -> Result<Option<f64>> {
    let value = match named {
        None => row.get("score"),
        Some(n) => row.get("namedScores").and_then(|m| m.get(n)),
    };
    let Some(value) = value else {
        return Ok(None);
    };
    let score = value
        .as_f64()
        .filter(|x| x.is_finite())
        .ok_or_else(|| Error::BadValue {
            path: f.path.clone(),
            column: named.map_or("score".into(), |n| format!("namedScores.{n}")),
            row: Row(Some(i + 1)),
            value: value.to_string(),
            problem: "the score is not a finite number".into(),
            fix: "check the assertions that produce it, or choose another score with --score"
                .into(),
        })?;
    Ok(Some(score))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn assertions_are_part_of_a_test_when_the_row_records_them() {
        let t = |assert: Value| json!({"testCase": {"vars": {"a": 1}, "assert": assert}});
        let equals = test_of(&t(json!([{"type": "equals", "value": "1"}])));
        let contains = test_of(&t(json!([{"type": "contains", "value": "1"}])));
        assert_eq!(equals.1, contains.1);
        assert_ne!(equals.2, contains.2);
        // No assertions, [] or left out, are one set; no testCase says nothing.
        assert_eq!(
            test_of(&t(json!([]))).2,
            test_of(&json!({"testCase": {"vars": {"a": 1}}})).2
        );
        assert!(test_of(&t(json!([]))).2.is_some());
        assert_eq!(test_of(&json!({"vars": {"a": 1}})).2, None);
    }

    #[test]
    fn cases_never_come_from_test_idx() {
        let a = json!({"testIdx": 0, "vars": {"b": 2, "a": 1}});
        let b = json!({"testIdx": 7, "vars": {"a": 1, "b": 2}});
        assert_eq!(test_of(&a), test_of(&b));
        assert_eq!(test_of(&a).0, None);
        let d = json!({"testIdx": 3, "testCase": {"description": "small sum", "vars": {}}});
        assert_eq!(test_of(&d).0.as_deref(), Some("small sum"));
    }

    #[test]
    fn errors_are_not_scores() {
        assert!(is_error(
            &json!({"success": false, "failureReason": 2, "score": 0})
        ));
        assert!(!is_error(
            &json!({"success": false, "failureReason": 1, "score": 0})
        ));
        assert!(is_error(
            &json!({"success": false, "error": "503", "score": 0})
        ));
        assert!(!is_error(
            &json!({"success": false, "error": "assert", "gradingResult": {"pass": false}})
        ));
    }
}
