//! lm-evaluation-harness `--log_samples` output.
//!
//! Each run writes `results_<date_id>.json` and, per task, `samples_<task>_<date_id>.jsonl` (one
//! JSON object per line; 0.4.0–0.4.2 wrote one pretty-printed JSON array instead, in
//! `<model_args>_<task>.jsonl` beside `results.json`). The results file beside a samples file
//! gives the model, the harness version, the date and the task's filters.
//!
//! Mapping: case = `doc_id` where `doc_hash` agrees across files (a doc_id holding different
//! documents becomes one case per document, `doc_id#hash`; `--case-from doc_hash` keys by content);
//! arm = the task, split into one arm per prompt when runs of the task gave different prompts
//! (`prompt_hash`, doc by doc), named by the folder that tells the runs apart, else the run's
//! date_id (`--arm-from file` for the file name, `--arm NAME=GLOB` to choose); repeat = runs with
//! identical prompts in the order of their results' dates; score = a metric key (listed in
//! `metrics` since 0.4.7, else the numeric top-level keys). Python writes bare `NaN` and
//! `Infinity`: they are read, and a non-finite score is an error naming the line (or skipped with
//! `--skip-nonfinite`). Corpus metrics (f1, bleu, …) are stored per sample as `[gold, pred]` and
//! are refused as scores. A task with several filters writes one line per filter: `--filter`
//! chooses one.

use ablate_io::harness::python_json::{nonfinite, parse};
mod files;
use files::{
    RunInfo, civil_date, date_id, is_results_file, is_samples_file, metrics_of, read_run, records,
    results_of, run_key, task_of,
};
mod arms;
mod lines;
use arms::{conflicting_doc_ids, default_arms, pooled_models, pooled_prompts};
use lines::{Taken, take_lines};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::Value;

use crate::error::{Error, Result, Row};
use crate::import::{ArmNames, ImportOptions, Imported, Observation, Source, scalar_fields};

/// Keys of a sample line that are not metrics.
const NOT_METRICS: &[&str] = &[
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "doc_hash",
    "prompt_hash",
    "target_hash",
];

struct File {
    path: PathBuf,
    /// The file's SHA-256, from the same read as its lines.
    sha256: String,
    task: String,
    run: RunInfo,
    results: Option<PathBuf>,
    lines: Vec<(usize, Value)>,
}

/// The prompt each doc of a run was given: doc_id → prompt_hash.
type Prompts<'a> = BTreeMap<&'a str, &'a str>;

/// Reads lm-evaluation-harness samples files.
///
/// # Errors
/// Unreadable files; several metrics and no `--score`; a corpus metric as the score; a
/// non-finite score (unless `--skip-nonfinite`); several filters and no `--filter`.
pub fn read(sources: &[PathBuf], opts: &ImportOptions) -> Result<Imported> {
    let mut imp = Imported::default();
    let paths = crate::import::collect_files(
        sources,
        is_samples_file,
        "lm-eval samples (.jsonl)",
        &mut imp.skipped,
    )?;
    let mut files = samples_files(paths, opts, &mut imp)?;
    let metric = choose_metric(&files, opts, &mut imp)?;
    let (by_hash, by_file) = case_and_arm_options(opts)?;

    // Runs in date order: repeats are numbered in it.
    files.sort_by(|a, b| {
        (a.run.date.unwrap_or(f64::INFINITY), &a.path)
            .partial_cmp(&(b.run.date.unwrap_or(f64::INFINITY), &b.path))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let mut models = BTreeSet::new();
    let mut dates = BTreeSet::new();
    let mut taken_files: Vec<Taken> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        if let Some(m) = &f.run.model {
            models.insert(m.clone());
        }
        if let Some(d) = f.run.date.and_then(civil_date) {
            dates.insert(d);
        }
        if let Some(t) = take_lines(i, f, &metric, opts, by_hash, &mut imp)? {
            taken_files.push(t);
        }
    }
    name_arms(&files, &mut taken_files, opts, by_file, &mut imp)?;
    let split = split_doc_ids(&taken_files, by_hash, &mut imp);
    add_observations(&files, &taken_files, &split, &metric, &mut imp)?;
    imp.model = (!models.is_empty()).then(|| models.into_iter().collect::<Vec<_>>().join(", "));
    imp.measured_at = dates.into_iter().next();
    imp.tokens_counted = "lm-eval logs no token counts: tokens_in is left out".into();
    Ok(imp)
}

/// Reads each samples file once (a run's copy in another folder is skipped), with the run
/// information of the results file beside it, read once per run.
fn samples_files(
    paths: Vec<PathBuf>,
    opts: &ImportOptions,
    imp: &mut Imported,
) -> Result<Vec<File>> {
    let mut files = Vec::new();
    // A run's results file is shared by its tasks' samples files: read each once.
    let mut runs: BTreeMap<PathBuf, Option<RunInfo>> = BTreeMap::new();
    for path in paths {
        if is_results_file(&path) {
            return Err(Error::Unreadable {
                path: path.clone(),
                problem: "a results file (each task's aggregate scores), not a samples file: it holds no per-sample scores".into(),
                fix: format!(
                    "give the samples_<task>_<date>.jsonl files beside it (written with --log_samples), or their folder {}",
                    path.parent().map(|p| p.display().to_string()).unwrap_or_default()
                ),
            });
        }
        let results = results_of(&path);
        let run = match &results {
            Some(r) => {
                if !runs.contains_key(r) {
                    let run = crate::import::or_skip(read_run(r), r, "lm-eval", opts, imp)?;
                    runs.insert(r.clone(), run);
                }
                match &runs[r] {
                    Some(run) => run.clone(),
                    None => {
                        imp.skipped.push(format!(
                            "{}: skipped (--skip-invalid): its run's results file {} cannot be read",
                            path.display(),
                            r.display()
                        ));
                        continue;
                    }
                }
            }
            None => RunInfo::default(),
        };
        let task = task_of(&path, &run);
        // The same run's samples file twice (a copy in another folder): read once when the copy
        // is identical byte for byte; refused when the copies differ (one was edited, cut short
        // or written again), since ablate cannot tell which holds the run.
        if let Some(key) = run_key(&path, &task, &run)
            && let Some(first) = files
                .iter()
                .find(|f: &&File| run_key(&f.path, &f.task, &f.run).as_ref() == Some(&key))
        {
            let sha256 = crate::import::sha256_file(&path)?;
            if sha256 != first.sha256 {
                return Err(Error::Usage(format!(
                    "{} and {} hold the same run ({key}) but differ (SHA-256 {}… against {}…): one of them was edited, cut short or written again, and ablate cannot tell which is the run lm-eval wrote. Keep one copy (move the other out of the folders given) and import again",
                    first.path.display(),
                    path.display(),
                    first.sha256.chars().take(12).collect::<String>(),
                    sha256.chars().take(12).collect::<String>()
                )));
            }
            imp.skipped.push(format!(
                "{}: the same run as {} ({key}), an identical copy (same SHA-256), read once",
                path.display(),
                first.path.display()
            ));
            continue;
        }
        let Some((lines, sha256)) =
            crate::import::or_skip(records(&path), &path, "lm-eval", opts, imp)?
        else {
            continue;
        };
        files.push(File {
            path,
            sha256,
            task,
            run,
            results,
            lines,
        });
    }

    Ok(files)
}

/// The metric to import: `--score`, else the only one the sample lines have.
fn choose_metric(files: &[File], opts: &ImportOptions, imp: &mut Imported) -> Result<String> {
    let mut found = BTreeSet::new();
    for f in files {
        for (_, l) in &f.lines {
            found.extend(metrics_of(l));
        }
    }
    imp.scores_found = found.iter().cloned().collect();
    Ok(match &opts.score {
        Some(m) if found.contains(m) => {
            imp.score_choice = format!("{m} (--score)");
            m.clone()
        }
        Some(m) => {
            return Err(Error::Usage(format!(
                "--score {m}: no sample line has that metric; metrics found: {}",
                imp.scores_found.join(", ")
            )));
        }
        None if found.len() == 1 => {
            let only = found.iter().next().cloned().unwrap_or_default();
            imp.score_choice = format!("{only} (the only metric in the samples)");
            only
        }
        None => {
            return Err(Error::Usage(format!(
                "the samples have several metrics; choose one with --score: {}",
                imp.scores_found.join(", ")
            )));
        }
    })
}

/// `--case-from` (doc_id, or doc_hash: whether cases are documents by content) and
/// `--arm-from` (task, or file: whether each file is its own arm).
fn case_and_arm_options(opts: &ImportOptions) -> Result<(bool, bool)> {
    let by_hash = match (opts.case_from.as_deref(), opts.pair_by) {
        (Some("doc_id"), crate::import::PairBy::Input) => {
            return Err(Error::Usage(
                "--case-from doc_id and --pair-by input disagree: --pair-by input pairs lm-eval's documents by doc_hash; give one of them".into(),
            ));
        }
        (None | Some("doc_id"), crate::import::PairBy::Id) => false,
        (None | Some("doc_hash"), crate::import::PairBy::Input) | (Some("doc_hash"), _) => true,
        (Some(other), _) => {
            return Err(Error::Usage(format!(
                "--case-from {other}: use doc_id (the default) or doc_hash"
            )));
        }
    };
    let by_file = match opts.arm_from.as_deref() {
        None | Some("task") => false,
        Some("file") => true,
        Some(other) => {
            return Err(Error::Usage(format!(
                "--arm-from {other}: use task (the default) or file"
            )));
        }
    };

    Ok((by_hash, by_file))
}

/// Each taken file's arm: `--arm` rules, the file, or the task split by prompt (a doc whose
/// prompt_hash differs between runs is in a different arm; runs identical doc by doc are
/// repeats).
fn name_arms(
    files: &[File],
    taken_files: &mut [Taken],
    opts: &ImportOptions,
    by_file: bool,
    imp: &mut Imported,
) -> Result<()> {
    let file_paths: Vec<PathBuf> = taken_files
        .iter()
        .map(|t| files[t.file].path.clone())
        .collect();
    let rules = ArmNames::for_files(&opts.arm_globs, &file_paths, "samples file(s)")?;
    let mut arm_of: Vec<Option<String>> = Vec::with_capacity(taken_files.len());
    for p in &file_paths {
        arm_of.push(rules.name_of(p)?);
    }
    refuse_unknown_models(files, taken_files, &arm_of, by_file)?;
    let named: Vec<bool> = arm_of.iter().map(Option::is_some).collect();
    let defaults = default_arms(files, taken_files, by_file);
    let mut how = Vec::new();
    if rules.any() {
        how.push("--arm rules for the files they match".to_string());
    }
    how.push(defaults.how.clone());
    imp.arm_choice = how.join("; ");
    for (t, named) in taken_files.iter_mut().zip(arm_of) {
        t.arm = named.unwrap_or_else(|| defaults.names[t.file].clone());
    }
    // An arm named by --arm that pools different prompts or models is the user's choice: said.
    for (arm, tasks) in pooled_prompts(files, taken_files) {
        imp.notes.push(format!(
            "arm `{arm}` (named by --arm) pools runs of task {tasks} whose prompts differ"
        ));
    }
    for (arm, models) in pooled_models(files, taken_files) {
        imp.notes.push(format!(
            "arm `{arm}` (named by --arm) pools runs of {} models ({})",
            models.len(),
            models.join(", ")
        ));
    }
    one_setting_per_arm(files, taken_files, &named, imp)?;

    Ok(())
}

/// What two runs' settings ([`files::settings_of`]) differ in, in words (`model_args.revision
/// (step1000 against step143000)`); empty when they agree.
fn setting_differences(a: &RunInfo, b: &RunInfo) -> Vec<String> {
    let keys: BTreeSet<&String> = a.settings.keys().chain(b.settings.keys()).collect();
    keys.into_iter()
        .filter(|k| a.settings.get(*k) != b.settings.get(*k))
        .map(|k| crate::arms::differing(k, a.settings.get(k).cloned(), b.settings.get(k).cloned()))
        .collect()
}

/// An arm is one model with one configuration: runs that would share an arm without --arm naming
/// it must agree on their model arguments (`revision=`: another checkpoint) and generation
/// settings (`--gen_kwargs`), or the import is refused naming two of them and what differs
/// (lm-eval derives `model_name` from `pretrained=` alone, and `prompt_hash` covers the prompt
/// alone, so both checkpoints and both temperatures had been pooled as repeats). Runs the user
/// named alike with --arm are pooled as asked, with a note.
fn one_setting_per_arm(
    files: &[File],
    taken_files: &[Taken],
    named: &[bool],
    imp: &mut Imported,
) -> Result<()> {
    let arm_of: Vec<&str> = taken_files.iter().map(|t| t.arm.as_str()).collect();
    let file = |i: usize| &files[taken_files[i].file];
    let refused = crate::arms::first_unasked_mismatch(
        &arm_of,
        named,
        |a, b| setting_differences(&file(a).run, &file(b).run),
        |m| {
            imp.notes.push(format!(
                "arm `{}` (named by --arm) pools runs given different settings ({}: {} and {})",
                m.arm,
                m.differ.join(", "),
                file(m.first).path.display(),
                file(m.other).path.display()
            ));
        },
    );
    let Some(m) = refused else {
        return Ok(());
    };
    Err(Error::Usage(format!(
        "{} and {} would both be arm `{}`, but their runs were given different settings: {} (config.model_args, config.gen_kwargs of their results files). An arm is one model with one configuration, and pooling them would count another checkpoint or other generation settings as repeats of one: name each run's arm with --arm NAME=GLOB (or --arm-from file: one arm per samples file); to pool them on purpose, give them one name with --arm",
        file(m.first).path.display(),
        file(m.other).path.display(),
        m.arm,
        m.differ.join(", ")
    )))
}

/// Refuses a run whose model is unknown (a samples file without the results file lm-eval writes
/// beside it) among runs of its task that record one, unless an --arm rule names it: its arm
/// cannot be told. Taken as the only model recorded, a run of another model had become a repeat
/// of it. With `--arm-from file` each file is its own arm, and nothing is refused.
fn refuse_unknown_models(
    files: &[File],
    taken_files: &[Taken],
    named: &[Option<String>],
    by_file: bool,
) -> Result<()> {
    if by_file {
        return Ok(());
    }
    for (t, named) in taken_files.iter().zip(named) {
        let f = &files[t.file];
        if named.is_some() || f.run.model.is_some() {
            continue;
        }
        let recorded: BTreeSet<&str> = taken_files
            .iter()
            .map(|o| &files[o.file])
            .filter(|o| o.task == f.task)
            .filter_map(|o| o.run.model.as_deref())
            .collect();
        if !recorded.is_empty() {
            return Err(Error::Usage(format!(
                "{}: no results file beside it (lm-eval writes results_<date>.json next to the samples), so its model is unknown, while other runs of task {} record {} ({}): ablate cannot tell whether it is a repeat of theirs or another model's run. Copy its results file beside it, or name its arm with --arm NAME=GLOB",
                f.path.display(),
                f.task,
                if recorded.len() == 1 {
                    "a model"
                } else {
                    "models"
                },
                recorded.into_iter().collect::<Vec<_>>().join(", ")
            )));
        }
    }
    Ok(())
}

/// Cases are doc_ids, split where the same doc_id holds different documents (doc_hash differs):
/// the doc_ids to split, and the summary's sentence on it.
fn split_doc_ids(taken_files: &[Taken], by_hash: bool, imp: &mut Imported) -> BTreeSet<String> {
    if by_hash {
        imp.case_choice =
            "doc_hash (--case-from doc_hash): the document's content, whatever its id".into();
        BTreeSet::new()
    } else {
        let split = conflicting_doc_ids(taken_files);
        imp.case_choice = if split.is_empty() {
            "doc_id; documents are paired across arms by doc_id, and their doc_hash agrees wherever the logs carry one".into()
        } else {
            format!(
                "doc_id where doc_hash agrees; {} doc_id(s) hold different documents in different files (doc_hash differs: {}), so each document is its own case, named doc_id#doc_hash",
                split.len(),
                split.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
            )
        };
        split
    }
}

/// One observation per taken line, and each file as a source.
fn add_observations(
    files: &[File],
    taken_files: &[Taken],
    split: &BTreeSet<String>,
    metric: &str,
    imp: &mut Imported,
) -> Result<()> {
    for (rank, t) in taken_files.iter().enumerate() {
        let f = &files[t.file];
        let first = imp.observations.len();
        for l in &t.lines {
            let case_id = match (&l.doc_hash, split.contains(&l.case_id)) {
                (Some(h), true) => format!("{}#{h}", l.case_id),
                _ => l.case_id.clone(),
            };
            imp.observations.push(Observation {
                case_id,
                arm: t.arm.clone(),
                order: (rank, 0, l.line_no),
                score: l.score,
                tokens_in: None,
                strata: l.strata.clone(),
                source: format!("{}, line {}", f.path.display(), l.line_no),
                passed: None,
                file: f.path.display().to_string(),
                input: l.input.clone(),
                output: l.output.clone(),
            });
        }
        let mut taken_text = format!(
            "{} samples of task {} as arm {}, metric {metric}",
            t.lines.len(),
            f.task,
            t.arm
        );
        if let Some(c) = &t.filter {
            taken_text.push_str(&format!(", filter {c}"));
        }
        if let Some(r) = &f.results {
            taken_text.push_str(&format!("; run info from {}", r.display()));
        }
        imp.sources.push(Source {
            file: f.path.display().to_string(),
            sha256: f.sha256.clone(),
            harness: "lm-eval".into(),
            version: f.run.version.clone(),
            taken: taken_text,
            run: run_key(&f.path, &f.task, &f.run),
            arm: Some(t.arm.clone()),
            config: None,
        });
        let stem = f.path.file_stem().map(|s| s.to_string_lossy().into_owned());
        imp.runs.push(crate::io::runs::RunRow {
            run: stem.as_deref().and_then(date_id).map_or_else(
                || f.path.display().to_string(),
                |d| format!("{} {d}", f.task),
            ),
            arm: t.arm.clone(),
            harness: "lm-eval".into(),
            file: f.path.display().to_string(),
            revision: None,
            model: f.run.model.clone(),
            started: stem.as_deref().and_then(date_id).map(str::to_string),
            samples: t.lines.len() as i64,
            errors: 0,
            mean_score: crate::import::mean_since(&imp.observations, first),
            outlier: false,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_nonfinite_numbers_are_read() {
        let v = parse(r#"{"a": NaN, "b": -Infinity, "c": 1.5, "d": [0, 1]}"#).unwrap();
        assert_eq!(nonfinite(&v["a"]), Some("NaN"));
        assert_eq!(nonfinite(&v["b"]), Some("-Infinity"));
        assert_eq!(v["c"], 1.5);
        assert!(parse("{not json").is_err());
    }

    #[test]
    fn dates_and_date_ids() {
        assert_eq!(civil_date(0.0).unwrap(), "1970-01-01");
        assert_eq!(civil_date(1_796_008_765.28).unwrap(), "2026-11-30");
        assert_eq!(civil_date(951_782_400.0).unwrap(), "2000-02-29");
        assert_eq!(civil_date(1e300), None);
        assert_eq!(civil_date(-1.0), None);
        assert_eq!(civil_date(f64::NAN), None);
        assert_eq!(
            date_id("samples_arith_gen_full_2026-11-30T03-26-41.079522"),
            Some("2026-11-30T03-26-41.079522")
        );
        assert_eq!(date_id("model__fixture-a,skill__a_arith_mc"), None);
    }

    /// model_args and gen_kwargs as a `k=v` string or as an object are the same settings; a
    /// checkpoint or a temperature tells two runs apart.
    #[test]
    fn run_settings_read_either_form_and_name_what_differs() {
        let run = |config: serde_json::Value| RunInfo {
            settings: files::settings_of(Some(&config)),
            ..RunInfo::default()
        };
        let string = run(serde_json::json!({
            "model_args": "pretrained=EleutherAI/pythia-160m, revision=step1000",
            "gen_kwargs": null
        }));
        let object = run(serde_json::json!({
            "model_args": {"pretrained": "EleutherAI/pythia-160m", "revision": "step1000"},
            "gen_kwargs": {}
        }));
        assert!(setting_differences(&string, &object).is_empty());
        let other = run(serde_json::json!({
            "model_args": "pretrained=EleutherAI/pythia-160m,revision=step143000",
            "gen_kwargs": "temperature=0.8"
        }));
        assert_eq!(
            setting_differences(&string, &other),
            vec![
                "gen_kwargs.temperature (not set against 0.8)".to_string(),
                "model_args.revision (step1000 against step143000)".to_string(),
            ]
        );
        assert!(files::settings_of(None).is_empty());
    }
}
