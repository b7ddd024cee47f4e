//! `ablate import … --into EXP`: new logs added to an experiment that `import` wrote, in place.
//!
//! New arms, new repeats (numbered after those the experiment holds for the same case and arm)
//! and new cases are appended to `results`, `cases`, `arms` and `sources`; rows already there are
//! kept as they are, so edits to them survive. A log whose SHA-256 is already in `sources`, or
//! that holds a run `sources` already names (an Inspect log and its converted copy), is skipped
//! and named. experiment.toml, the watch state and every other file are carried over untouched
//! ([`FolderUpdate`]), and the whole update is atomic like every other write.
//!
//! What differs stays apart: another harness is refused; an Inspect log of a configuration the
//! experiment holds joins that configuration's arm, and a new configuration may not take an
//! existing arm's name, not even one given with `--arm`; lm-eval logs need `--arm` (no record
//! says which prompt an arm had); a doc_id whose doc_hash differs from the experiment's is a new
//! case. The tables are rewritten as Parquet, so an experiment that keeps one as CSV is refused
//! before anything is written.

use std::collections::BTreeSet;
use std::path::Path;

use polars::prelude::*;

use super::{ArmSummary, ImportOptions, ImportSummary, Imported, Observation, Plan, Prior};
use crate::error::{Error, Result};
use crate::io::output::FolderUpdate;

/// The tables an experiment written by `import` holds.
struct Existing {
    results: DataFrame,
    cases: DataFrame,
    arms: DataFrame,
    sources: DataFrame,
    /// Its samples, when it has them (folders imported before `samples` existed do not).
    samples: Option<DataFrame>,
    /// Its runs, when it has them (folders imported before `runs` existed do not).
    runs: Option<DataFrame>,
    /// Its results, as observations (order = (0, repeat, 0)).
    observations: Vec<Observation>,
    baseline: String,
    /// Its threshold_drop, when agreed.
    threshold: Option<f64>,
}

fn read(path: &Path) -> Result<DataFrame> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let unreadable = |why: String| Error::Unreadable {
        path: path.to_path_buf(),
        problem: format!("not a Parquet file ablate can read ({why})"),
        fix: "--into appends to an experiment folder that `ablate import` wrote".into(),
    };
    // A damaged footer can panic in polars-parquet (exit 101): refused as bad input instead.
    crate::io::table::no_panic(|| ParquetReader::new(file).finish())
        .map_err(&unreadable)?
        .map_err(|e| unreadable(e.to_string()))
}

fn text_column(df: &DataFrame, name: &str, path: &Path) -> Result<Vec<Option<String>>> {
    let col = df.column(name).map_err(|_| Error::Unreadable {
        path: path.to_path_buf(),
        problem: format!("has no column `{name}`"),
        fix: "--into appends to an experiment folder that `ablate import` wrote".into(),
    })?;
    let col = col
        .cast(&DataType::String)
        .map_err(|e| super::building(name, e))?;
    Ok(col
        .str()
        .map_err(|e| super::building(name, e))?
        .iter()
        .map(|v| v.map(str::to_string))
        .collect())
}

impl Existing {
    fn load(dir: &Path) -> Result<Existing> {
        let manifest = dir.join("experiment.toml");
        let need = [
            "results.parquet",
            "cases.parquet",
            "arms.parquet",
            "sources.parquet",
        ];
        if !manifest.is_file() || need.iter().any(|n| !dir.join(n).is_file()) {
            return Err(Error::Usage(format!(
                "--into {}: not an experiment folder that `ablate import` wrote (it needs experiment.toml and {}); import into a new folder with --out",
                dir.display(),
                need.join(", ")
            )));
        }
        // The append writes each table it grows as Parquet: beside a CSV of the same table the
        // folder would hold it twice, which every verb refuses (`table::find` also refuses a
        // table kept in both formats already).
        for stem in ["results", "cases", "arms", "sources", "samples", "runs"] {
            if let Some(t) = crate::io::table::find(dir, stem)?
                && t.format == crate::io::table::Format::Csv
            {
                return Err(Error::Output {
                    path: t.path,
                    problem: format!(
                        "the experiment keeps its {stem} table as CSV, and --into writes {stem}.parquet: the folder would hold the table twice, which every verb refuses"
                    ),
                    fix: format!(
                        "convert {stem}.csv to {stem}.parquet (or move it out of the folder) and import again; nothing was written"
                    ),
                });
            }
        }
        let text = std::fs::read_to_string(&manifest).map_err(|e| Error::io(&manifest, e))?;
        let toml: toml::Value = toml::from_str(&text).map_err(|e| Error::Manifest {
            path: manifest.clone(),
            key: String::new(),
            problem: format!("not valid TOML ({e})"),
            fix: "fix experiment.toml first; `ablate check` says what is wrong".into(),
        })?;
        let baseline = toml
            .get("baseline_arm")
            .and_then(toml::Value::as_str)
            .unwrap_or("baseline")
            .to_string();
        let results_path = dir.join("results.parquet");
        let results = read(&results_path)?;
        let case = text_column(&results, "case_id", &results_path)?;
        let arm = text_column(&results, "arm", &results_path)?;
        let repeat: Vec<Option<i64>> = results
            .column("repeat")
            .and_then(|c| c.cast(&DataType::Int64))
            .and_then(|c| c.i64().map(|c| c.iter().collect()))
            .map_err(|e| super::building("results.repeat", e))?;
        let score: Vec<Option<f64>> = results
            .column("score")
            .and_then(|c| c.cast(&DataType::Float64))
            .and_then(|c| c.f64().map(|c| c.iter().collect()))
            .map_err(|e| super::building("results.score", e))?;
        let tokens: Option<Vec<Option<i64>>> = match results.column("tokens_in") {
            Ok(c) => Some(
                c.cast(&DataType::Int64)
                    .and_then(|c| c.i64().map(|c| c.iter().collect()))
                    .map_err(|e| super::building("results.tokens_in", e))?,
            ),
            Err(_) => None,
        };
        let observations = (0..results.height())
            .map(|i| Observation {
                case_id: case[i].clone().unwrap_or_default(),
                arm: arm[i].clone().unwrap_or_default(),
                order: (0, repeat[i].unwrap_or(0), 0),
                score: score[i].unwrap_or(f64::NAN),
                tokens_in: tokens.as_ref().and_then(|t| t[i]),
                strata: Default::default(),
                source: results_path.display().to_string(),
                passed: None,
                file: String::new(),
                input: None,
                output: None,
            })
            .collect();
        Ok(Existing {
            results,
            cases: read(&dir.join("cases.parquet"))?,
            arms: read(&dir.join("arms.parquet"))?,
            sources: read(&dir.join("sources.parquet"))?,
            samples: match dir.join("samples.parquet") {
                p if p.is_file() => Some(read(&p)?),
                _ => None,
            },
            runs: match dir.join("runs.parquet") {
                p if p.is_file() => Some(read(&p)?),
                _ => None,
            },
            observations,
            baseline,
            threshold: toml
                .get("threshold_drop")
                .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64))),
        })
    }
}

impl Existing {
    /// The (arm, case_id, repeat) keys of the samples table (none without one).
    ///
    /// # Errors
    /// A key column that is missing or of another type.
    fn sample_keys(&self, into: &Path) -> Result<Vec<(String, String, i64)>> {
        let Some(samples) = &self.samples else {
            return Ok(Vec::new());
        };
        let path = into.join("samples.parquet");
        let case = text_column(samples, "case_id", &path)?;
        let arm = text_column(samples, "arm", &path)?;
        let repeat: Vec<Option<i64>> = samples
            .column("repeat")
            .and_then(|c| c.cast(&DataType::Int64))
            .and_then(|c| c.i64().map(|c| c.iter().collect()))
            .map_err(|e| super::building("samples.repeat", e))?;
        Ok(arm
            .into_iter()
            .zip(case)
            .zip(repeat)
            .filter_map(|((a, c), r)| Some((a?, c?, r?)))
            .collect())
    }
}

/// Inspect logs of a configuration (task, model, task arguments) the experiment already holds go
/// to that configuration's arm, unless `--arm` rules name the arms; a new configuration may not
/// take an existing arm's name, whether its own or one given with `--arm` (an arm is one
/// configuration: `--arm full=v1.eval` of another model had joined the baseline's arm).
fn place_by_config(
    existing: &Existing,
    sources_path: &Path,
    opts: &ImportOptions,
    imp: &mut Imported,
) -> Result<()> {
    if existing.sources.column("config").is_err() {
        return Ok(());
    }
    let named = !opts.arm_globs.is_empty();
    let configs = text_column(&existing.sources, "config", sources_path)?;
    let arms = text_column(&existing.sources, "arm", sources_path)?;
    let mut arm_of: std::collections::BTreeMap<String, String> = Default::default();
    let mut configs_of: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for (c, a) in configs.into_iter().zip(arms) {
        if let (Some(c), Some(a)) = (c, a) {
            configs_of.entry(a.clone()).or_default().insert(c.clone());
            arm_of.insert(c, a);
        }
    }
    let existing_arms: BTreeSet<&str> = existing
        .observations
        .iter()
        .map(|o| o.arm.as_str())
        .collect();
    let new_arms: BTreeSet<String> = imp.sources.iter().filter_map(|s| s.arm.clone()).collect();
    let mut renamed: std::collections::BTreeMap<String, String> = Default::default();
    for s in &mut imp.sources {
        let (Some(config), Some(arm)) = (&s.config, &s.arm) else {
            continue;
        };
        match arm_of.get(config) {
            Some(old) if !named => {
                renamed.insert(s.file.clone(), old.clone());
                s.arm = Some(old.clone());
            }
            _ if existing_arms.contains(arm.as_str())
                && configs_of
                    .get(arm.as_str())
                    .is_none_or(|c| !c.contains(config)) =>
            {
                let theirs = configs_of.get(arm.as_str()).map_or_else(
                    || "not recorded".to_string(),
                    |c| c.iter().cloned().collect::<Vec<_>>().join("; "),
                );
                return Err(Error::Usage(format!(
                    "{}: its arm would be `{arm}`, but the experiment's `{arm}` was run with a different configuration ({theirs}; this log: {config}). An arm is one configuration: give the new logs their own arm with --arm NAME=GLOB",
                    s.file
                )));
            }
            // One new configuration alone is named after nothing that tells it apart (its task):
            // ask for a name rather than make up an arm.
            None if !named && new_arms.len() < 2 && opts.arm_from.is_none() => {
                return Err(Error::Usage(format!(
                    "{}: a configuration the experiment does not hold ({config}), and nothing among the new logs tells what it varies; name its arm with --arm NAME=GLOB",
                    s.file
                )));
            }
            _ => {}
        }
    }
    for o in &mut imp.observations {
        if let Some(a) = renamed.get(&o.file) {
            o.arm = a.clone();
        }
    }
    // The runs table names the arm its results went to (it had kept the name the new logs
    // alone would have given, an arm the experiment does not have).
    for r in &mut imp.runs {
        if let Some(a) = renamed.get(&r.file) {
            r.arm = a.clone();
        }
    }
    if !renamed.is_empty() {
        imp.arm_choice.push_str(
            "; logs of a configuration the experiment holds join that configuration's arm",
        );
    }
    Ok(())
}

/// The experiment's case ids and their `column` (`input_hash`, `doc_hash`) from `cases`, in
/// row order; `None` when the cases carry no such column.
#[allow(clippy::type_complexity)]
fn case_hashes(
    existing: &Existing,
    into: &Path,
    column: &str,
) -> Result<Option<(Vec<Option<String>>, Vec<Option<String>>)>> {
    if existing.cases.column(column).is_err() {
        return Ok(None);
    }
    let path = into.join("cases.parquet");
    let ids = text_column(&existing.cases, "case_id", &path)?;
    let hashes = text_column(&existing.cases, column, &path)?;
    Ok(Some((ids, hashes)))
}

/// Refuses new samples keyed otherwise than the experiment's cases: an experiment imported with
/// `--pair-by input` names every case `input-<input_hash>`, one imported by id does not; mixing
/// them would hold each question twice, as two cases.
fn refuse_other_pairing(existing: &Existing, into: &Path, imp: &Imported) -> Result<()> {
    let Some((ids, hashes)) = case_hashes(existing, into, "input_hash")? else {
        return Ok(());
    };
    let by_input_before = ids
        .iter()
        .zip(&hashes)
        .all(|(i, h)| matches!((i, h), (Some(i), Some(h)) if *i == format!("input-{h}")));
    let by_input_now = imp.observations.iter().any(|o| {
        o.strata
            .get("input_hash")
            .is_some_and(|h| o.case_id == format!("input-{h}"))
    });
    if by_input_before != by_input_now && !imp.observations.is_empty() {
        let (before, now) = if by_input_before {
            ("by content (--pair-by input)", "by id")
        } else {
            ("by sample id", "by content (--pair-by input)")
        };
        return Err(Error::Usage(format!(
            "{}: the experiment's cases were paired {before}, and these logs would be paired {now}, so each question would be two cases; import with the same --pair-by as the experiment",
            into.display()
        )));
    }
    Ok(())
}

/// Refuses a new Inspect sample whose id the experiment holds for a different question (its
/// `input_hash` differs from the one in `cases`): pairing them would compare different questions.
fn refuse_changed_samples(existing: &Existing, into: &Path, imp: &Imported) -> Result<()> {
    let Some((ids, hashes)) = case_hashes(existing, into, "input_hash")? else {
        return Ok(());
    };
    let known: std::collections::BTreeMap<String, String> = ids
        .into_iter()
        .zip(hashes)
        .filter_map(|(i, h)| Some((i?, h?)))
        .collect();
    if let Some(o) = imp.observations.iter().find(|o| {
        matches!((known.get(&o.case_id), o.strata.get("input_hash")), (Some(old), Some(new)) if old != new)
    }) {
        return Err(Error::Usage(format!(
            "{}: sample {} holds a different question than the experiment's case {} (their input and target differ), so adding it would pair different questions; import these logs into a new experiment, or import every log again with --pair-by input",
            o.source, o.case_id, o.case_id
        )));
    }
    Ok(())
}

/// A new sample whose case id the experiment holds for a different document (its `doc_hash`
/// differs from the one in `cases`) is a different case: `id#doc_hash`.
fn split_changed_documents(existing: &Existing, into: &Path, imp: &mut Imported) -> Result<()> {
    refuse_changed_samples(existing, into, imp)?;
    let Some((ids, hashes)) = case_hashes(existing, into, "doc_hash")? else {
        return Ok(());
    };
    let known: std::collections::BTreeMap<String, String> = ids
        .into_iter()
        .zip(hashes)
        .filter_map(|(i, h)| Some((i?, h?)))
        .collect();
    let mut split = 0usize;
    for o in &mut imp.observations {
        if let (Some(old), Some(new)) = (known.get(&o.case_id), o.strata.get("doc_hash"))
            && old != new
        {
            o.case_id = format!("{}#{new}", o.case_id);
            split += 1;
        }
    }
    if split > 0 {
        imp.case_choice.push_str(&format!(
            "; {split} sample(s) hold a different document than the experiment's case of the same id (doc_hash differs): each is its own case, doc_id#doc_hash"
        ));
    }
    Ok(())
}

/// `new` stacked under `existing`: columns either lacks are added as nulls, and `new`'s columns
/// are cast to `existing`'s types, in `existing`'s order.
fn stack(what: &str, existing: &DataFrame, new: &DataFrame) -> Result<DataFrame> {
    let mut old = existing.clone();
    let mut add = new.clone();
    for c in new.columns() {
        if old.column(c.name()).is_err() {
            old.with_column(Column::full_null(c.name().clone(), old.height(), c.dtype()))
                .map_err(|e| super::building(what, e))?;
        }
    }
    for c in old.columns().to_vec() {
        match add.column(c.name()) {
            Ok(mine) => {
                let cast = mine
                    .strict_cast(c.dtype())
                    .map_err(|_| {
                        Error::Usage(format!(
                            "--into: the experiment's {what} column `{}` is {}, and the new logs' values do not all convert to it; import into a new folder, or make the column text",
                            c.name(),
                            c.dtype()
                        ))
                    })?;
                add.with_column(cast)
                    .map_err(|e| super::building(what, e))?;
            }
            Err(_) => {
                add.with_column(Column::full_null(c.name().clone(), add.height(), c.dtype()))
                    .map_err(|e| super::building(what, e))?;
            }
        }
    }
    let names: Vec<PlSmallStr> = old.get_column_names().into_iter().cloned().collect();
    let add = add.select(names).map_err(|e| super::building(what, e))?;
    old.vstack(&add).map_err(|e| super::building(what, e))
}

/// `--baseline`, `--threshold-drop`, `--set` and `--strata` would change experiment.toml, which an
/// append keeps: refused.
fn refuse_manifest_options(opts: &ImportOptions) -> Result<()> {
    for (given, flag) in [
        (opts.baseline.is_some(), "--baseline"),
        (opts.threshold.is_some(), "--threshold-drop"),
        (opts.set.is_some(), "--set"),
        (!opts.strata.is_empty(), "--strata"),
    ] {
        if given {
            return Err(Error::Usage(format!(
                "{flag} with --into: the experiment's experiment.toml is kept as it is; change it there"
            )));
        }
    }
    Ok(())
}

/// Refuses logs of another harness (their case ids mean different things), and lm-eval logs
/// without `--arm` (the experiment does not record which prompt each arm was given).
fn check_same_harness(
    existing: &Existing,
    sources_path: &Path,
    harness: &str,
    opts: &ImportOptions,
    into: &Path,
) -> Result<()> {
    let harnesses: BTreeSet<String> = text_column(&existing.sources, "harness", sources_path)?
        .into_iter()
        .flatten()
        .collect();
    if let Some(other) = harnesses.iter().find(|h| *h != harness) {
        return Err(Error::Usage(format!(
            "--into {}: the experiment holds {other} logs, and these are {harness}: their case ids mean different things. Import them into a new folder",
            into.display()
        )));
    }
    if harness == "lm-eval" && opts.arm_globs.is_empty() {
        return Err(Error::Usage(format!(
            "--into {} with lm-eval logs needs --arm NAME=GLOB: the experiment does not record which prompt each arm was given, so ablate cannot tell whether a new run repeats an arm or is a new prompt. Name an existing arm to add repeats to it, or a new name for a new prompt",
            into.display()
        )));
    }
    Ok(())
}

/// Leaves out the files the experiment already holds: a file that names its run when the run is
/// known (deterministic runs write byte-identical files), one that does not when its bytes are;
/// refuses an append with nothing new.
fn drop_known_sources(
    existing: &Existing,
    sources_path: &Path,
    into: &Path,
    imp: &mut Imported,
) -> Result<()> {
    let known_sha: BTreeSet<String> = text_column(&existing.sources, "sha256", sources_path)?
        .into_iter()
        .flatten()
        .collect();
    let runs_of_sources: Vec<Option<String>> = match existing.sources.column("run") {
        Ok(_) => text_column(&existing.sources, "run", sources_path)?,
        Err(_) => vec![None; existing.sources.height()],
    };
    let known_runs: BTreeSet<String> = runs_of_sources.iter().flatten().cloned().collect();
    // Sources written before runs were recorded are matched by their bytes.
    let unkeyed_sha: BTreeSet<String> = text_column(&existing.sources, "sha256", sources_path)?
        .into_iter()
        .zip(&runs_of_sources)
        .filter(|(_, r)| r.is_none())
        .filter_map(|(h, _)| h)
        .collect();
    // lm-eval names a run by its task and date_id alone: the same run over other bytes is an
    // edited copy, not the run the experiment holds (Inspect's runs may be rewritten whole, as
    // by `inspect log convert`, so only lm-eval's are held to their bytes).
    let shas = text_column(&existing.sources, "sha256", sources_path)?;
    let mut sha_of_run: std::collections::BTreeMap<&str, BTreeSet<&str>> = Default::default();
    for (r, h) in runs_of_sources.iter().zip(&shas) {
        if let (Some(r), Some(h)) = (r, h) {
            sha_of_run.entry(r.as_str()).or_default().insert(h.as_str());
        }
    }
    if let Some(s) = imp.sources.iter().find(|s| {
        s.harness == "lm-eval"
            && s.run
                .as_deref()
                .and_then(|r| sha_of_run.get(r))
                .is_some_and(|known| !known.contains(s.sha256.as_str()))
    }) {
        return Err(Error::Usage(format!(
            "{}: {} already holds this run ({}) from a file with other contents (its SHA-256 differs): one of them was edited or cut short. Add the file lm-eval wrote, or import into a new experiment",
            s.file,
            into.display(),
            s.run.as_deref().unwrap_or_default()
        )));
    }
    refuse_rescored_known_runs(existing, sources_path, into, imp)?;
    let mut dropped = BTreeSet::new();
    imp.sources.retain(|s| {
        // A file that names its run is a duplicate when the run is known (deterministic runs
        // write byte-identical files); one that does not, when its bytes are.
        let why = match &s.run {
            Some(r) if known_runs.contains(r) => {
                Some(format!("the experiment already holds this run ({r})"))
            }
            Some(_) => unkeyed_sha
                .contains(&s.sha256)
                .then(|| "its SHA-256 is already in sources".to_string()),
            None => known_sha
                .contains(&s.sha256)
                .then(|| "its SHA-256 is already in sources".to_string()),
        };
        match why {
            Some(why) => {
                imp.skipped
                    .push(format!("{}: already in {}: {why}", s.file, into.display()));
                dropped.insert(s.file.clone());
                false
            }
            None => true,
        }
    });
    imp.observations.retain(|o| !dropped.contains(&o.file));
    if imp.observations.is_empty() {
        return Err(Error::Usage(format!(
            "nothing new to add to {}: {}",
            into.display(),
            if imp.skipped.is_empty() {
                "no scored sample in the logs".to_string()
            } else {
                imp.skipped.join("; ")
            }
        )));
    }
    Ok(())
}

/// Refuses an Inspect log of a run the experiment holds whose scores differ from the ones it
/// holds: a re-scored or edited copy (`inspect score`, `edit_score`) keeps the eval id, and had
/// been dropped as "already held". Each sample is matched by its place in the log (`sample ID
/// epoch N`, from the experiment's `samples.source`); an experiment without `samples` cannot be
/// compared and keeps the old rule.
fn refuse_rescored_known_runs(
    existing: &Existing,
    sources_path: &Path,
    into: &Path,
    imp: &Imported,
) -> Result<()> {
    let Some(samples) = &existing.samples else {
        return Ok(());
    };
    if existing.sources.column("run").is_err() {
        return Ok(());
    }
    let runs = text_column(&existing.sources, "run", sources_path)?;
    let files = text_column(&existing.sources, "file", sources_path)?;
    let samples_path = into.join("samples.parquet");
    let source = text_column(samples, "source", &samples_path)?;
    // The experiment's score of each result row, by (case_id, arm, repeat).
    let score_of: std::collections::BTreeMap<(&str, &str, i64), f64> = existing
        .observations
        .iter()
        .map(|o| ((o.case_id.as_str(), o.arm.as_str(), o.order.1), o.score))
        .collect();
    let keys = (
        text_column(samples, "case_id", &samples_path)?,
        text_column(samples, "arm", &samples_path)?,
        samples
            .column("repeat")
            .and_then(|c| c.cast(&DataType::Int64))
            .and_then(|c| c.i64().map(|c| c.iter().collect::<Vec<_>>()))
            .map_err(|e| super::building("samples.repeat", e))?,
    );
    let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
    for s in imp.sources.iter().filter(|s| s.harness == "inspect") {
        let Some(run) = &s.run else { continue };
        let held: BTreeSet<&str> = runs
            .iter()
            .zip(&files)
            .filter(|(r, _)| r.as_deref() == Some(run.as_str()))
            .filter_map(|(_, f)| f.as_deref())
            .collect();
        if held.is_empty() {
            continue;
        }
        // The held scores of this run, by `sample ID epoch N`.
        let mut before: std::collections::BTreeMap<&str, f64> = Default::default();
        for (i, src) in source.iter().enumerate() {
            let Some(src) = src.as_deref() else { continue };
            let Some(place) = held
                .iter()
                .find_map(|f| src.strip_prefix(f).and_then(|r| r.strip_prefix(", ")))
            else {
                continue;
            };
            let (Some(c), Some(a), Some(r)) = (&keys.0[i], &keys.1[i], keys.2[i]) else {
                continue;
            };
            if let Some(&x) = score_of.get(&(c.as_str(), a.as_str(), r)) {
                before.insert(place, x);
            }
        }
        if before.is_empty() {
            continue;
        }
        let prefix = format!("{}, ", s.file);
        let differ = imp
            .observations
            .iter()
            .filter(|o| o.file == s.file)
            .filter_map(|o| Some((o.source.strip_prefix(&prefix)?, o.score)))
            .find_map(|(place, now)| match before.get(place) {
                Some(&was) if same(was, now) => None,
                Some(&was) => Some(format!(
                    "{place}: {was} in the experiment, {now} in this file"
                )),
                None => Some(format!("{place} is in this file only")),
            });
        if let Some(differ) = differ {
            return Err(Error::Usage(format!(
                "{}: {} already holds this run ({run}, from {}), with other scores: {differ}. This file is a re-scored or edited copy (`inspect score`, `edit_score`), not the run again: import it into a new experiment, or re-import the run from the copy you mean to keep",
                s.file,
                into.display(),
                held.iter().copied().collect::<Vec<_>>().join(", ")
            )));
        }
    }
    Ok(())
}

/// The six tables an append rewrites, with what the summary says about them.
struct Merged {
    results: DataFrame,
    cases: DataFrame,
    arms: DataFrame,
    sources: DataFrame,
    samples: DataFrame,
    runs: DataFrame,
    /// Arms the experiment did not have.
    added: Vec<String>,
    /// Cases the experiment did not have.
    new_cases: usize,
    /// New rows of (case, arm) cells the experiment held: more repeats (a rerun, more epochs).
    more_repeats: usize,
    /// Notes for the summary.
    notes: Vec<String>,
}

/// The experiment's tables with the new rows stacked under them: results (without `passed`
/// unless both sides carry it), the new cases and arms only, and every source. Also returns the
/// new arms and the notes to add to the summary.
fn merged_tables(existing: &Existing, plan: &Plan, into: &Path) -> Result<Merged> {
    let mut new_results = plan.results_frame()?;
    let mut results = existing.results.clone();
    // `passed` must be on every row or on none.
    let had = results.column("passed").is_ok();
    let has = new_results.column("passed").is_ok();
    let mut notes = Vec::new();
    if had != has {
        results = results.drop("passed").unwrap_or(results);
        new_results = new_results.drop("passed").unwrap_or(new_results);
        notes.push(
            "the `passed` column is dropped: the experiment's rows and the new rows do not both carry the harness's pass/fail, so score ≥ pass_mark decides passes".to_string(),
        );
    }
    let results = stack("results", &results, &new_results)?;

    let old_cases: BTreeSet<String> =
        text_column(&existing.cases, "case_id", &into.join("cases.parquet"))?
            .into_iter()
            .flatten()
            .collect();
    let new_cases = plan.cases_frame()?;
    let fresh = new_cases
        .column("case_id")
        .and_then(|c| {
            c.str().map(|s| {
                s.iter()
                    .map(|v| !old_cases.contains(v.unwrap_or_default()))
                    .collect::<BooleanChunked>()
            })
        })
        .map_err(|e| super::building("cases", e))?;
    let new_cases = new_cases
        .filter(&fresh)
        .map_err(|e| super::building("cases", e))?;
    let cases = stack("cases", &existing.cases, &new_cases)?;
    // The experiment's cases come in clusters and the logs say nothing of the new ones': said,
    // since each is then a cluster of its own in every interval and in `watch`'s order.
    if existing.cases.column("cluster").is_ok() && new_cases.height() > 0 {
        let unclustered = match new_cases.column("cluster") {
            Ok(c) => c.null_count(),
            Err(_) => new_cases.height(),
        };
        if unclustered > 0 {
            notes.push(format!(
                "{unclustered} new case(s) have no cluster, though the experiment's cases come in clusters: each counts as a cluster of its own (in every interval, and in `watch`'s order); set their `cluster` in cases.parquet before analysing if they share one with others"
            ));
        }
    }

    let old_arms: BTreeSet<String> =
        text_column(&existing.arms, "arm", &into.join("arms.parquet"))?
            .into_iter()
            .flatten()
            .collect();
    let added: BTreeSet<String> = plan
        .imp
        .observations
        .iter()
        .map(|o| o.arm.clone())
        .filter(|a| !old_arms.contains(a))
        .collect();
    let added: Vec<String> = added.into_iter().collect();
    // What the batch adds besides arms: cases the experiment did not hold, and repeats of
    // (case, arm) cells it held, counted as rows.
    let old_cases: BTreeSet<&str> = existing
        .observations
        .iter()
        .map(|o| o.case_id.as_str())
        .collect();
    let old_cells: BTreeSet<(&str, &str)> = existing
        .observations
        .iter()
        .map(|o| (o.case_id.as_str(), o.arm.as_str()))
        .collect();
    let new = &plan.imp.observations;
    let new_cases = new
        .iter()
        .map(|o| o.case_id.as_str())
        .filter(|c| !old_cases.contains(c))
        .collect::<BTreeSet<_>>()
        .len();
    let more_repeats = new
        .iter()
        .filter(|o| old_cells.contains(&(o.case_id.as_str(), o.arm.as_str())))
        .count();
    let names: Vec<&str> = added.iter().map(String::as_str).collect();
    let arms = stack("arms", &existing.arms, &plan.arms_frame(&names)?)?;
    let sources = stack("sources", &existing.sources, &plan.sources_frame()?)?;
    let new_samples = plan.samples_frame()?;
    let samples = match &existing.samples {
        Some(old) => stack("samples", old, &new_samples)?,
        None => new_samples,
    };
    let new_runs = plan.runs_frame()?;
    let runs = match &existing.runs {
        Some(old) => stack("runs", old, &new_runs)?,
        None => new_runs,
    };

    Ok(Merged {
        results,
        cases,
        arms,
        sources,
        samples,
        runs,
        added,
        new_cases,
        more_repeats,
        notes,
    })
}

/// Appends `imp` to the experiment `into` and returns the summary of the whole experiment.
///
/// # Errors
/// `into` is not an experiment `import` wrote; `--baseline`, `--threshold-drop`, `--set` or `--strata`
/// given (experiment.toml is kept: edit it there); nothing new to add; the checks of a new
/// import; a write failure.
pub fn append(
    harness: &str,
    mut imp: Imported,
    opts: &ImportOptions,
    into: &Path,
) -> Result<ImportSummary> {
    refuse_manifest_options(opts)?;
    // Held from the first read to the commit: a second import into the same folder waits, then
    // reads what this one wrote (two imports at once had both reported success, and one arm was
    // lost).
    let _lock = crate::io::output::FolderLock::exclusive(into)?;
    let existing = Existing::load(into)?;
    let sources_path = into.join("sources.parquet");
    check_same_harness(&existing, &sources_path, harness, opts, into)?;
    drop_known_sources(&existing, &sources_path, into, &mut imp)?;
    place_by_config(&existing, &sources_path, opts, &mut imp)?;
    refuse_other_pairing(&existing, into, &imp)?;
    split_changed_documents(&existing, into, &mut imp)?;
    let sample_keys = existing.sample_keys(into)?;
    let prior = Prior {
        observations: &existing.observations,
        baseline: &existing.baseline,
        sample_keys: &sample_keys,
    };
    let plan = Plan::new(harness, imp, opts, Some(&prior))?;

    let Merged {
        mut results,
        mut cases,
        mut arms,
        mut sources,
        mut samples,
        mut runs,
        added,
        new_cases,
        more_repeats,
        notes,
    } = merged_tables(&existing, &plan, into)?;
    let update = FolderUpdate::start(into)?;
    let mut written = Vec::new();
    for (name, df) in [
        ("results.parquet", &mut results),
        ("cases.parquet", &mut cases),
        ("arms.parquet", &mut arms),
        ("sources.parquet", &mut sources),
        ("samples.parquet", &mut samples),
        ("runs.parquet", &mut runs),
    ] {
        crate::io::write::parquet(df, &update.path(name))?;
        written.push(name.to_string());
    }
    let committed = update.commit()?;

    let mut all: Vec<Observation> = existing.observations.clone();
    all.extend(plan.imp.observations.iter().cloned());
    all.sort_by(|a, b| (&a.arm, &a.case_id).cmp(&(&b.arm, &b.case_id)));
    let arm_summary: Vec<ArmSummary> = super::arm_summaries(&all);
    let rows = results.height();
    let n_cases = cases.height();
    let mut summary = plan.summary(
        committed.display().to_string(),
        arm_summary,
        n_cases,
        rows,
        opts,
        written,
    );
    if !notes.is_empty() {
        summary.passed_disagreements = None;
    }
    summary.notes.extend(notes);
    summary.threshold_drop = existing.threshold;
    summary.notes.insert(
        0,
        format!(
            "added to {}: {} new arm(s){}, {new_cases} new case(s), {more_repeats} more repeat(s) of (case, arm) cells it held; experiment.toml and every other file were kept",
            committed.display(),
            added.len(),
            if added.is_empty() {
                String::new()
            } else {
                format!(" ({})", added.join(", "))
            }
        ),
    );
    Ok(summary)
}
