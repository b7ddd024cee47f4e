//! Validating an import before anything is written, and numbering its repeats: the [`Plan`].

use std::collections::{BTreeMap, BTreeSet};

use polars::prelude::*;

use super::checks::{
    MAX_CASE_TEXT, RESERVED_CASE_COLUMNS, check_observations, check_strata_lengths,
    check_strata_option,
};
use super::{ArmSummary, ImportOptions, ImportSummary, Imported, Observation, building};
use crate::error::{Error, Result};

/// An import ready to write: validated observations with their repeat numbers, the baseline,
/// the case columns, and what the summary says about them.
pub(crate) struct Plan {
    pub(crate) harness: String,
    pub(crate) imp: Imported,
    /// Repeat number of each observation (same order).
    pub(crate) repeats: Vec<i64>,
    pub(crate) baseline: String,
    pub(crate) baseline_choice: String,
    /// Whether every observation carries the harness's pass/fail.
    pub(crate) passed_column: bool,
    pub(crate) passed_disagreements: Option<usize>,
    /// Case columns written to `cases`.
    pub(crate) strata: Vec<String>,
    /// The lowest and highest score imported.
    pub(crate) score_range: (f64, f64),
}

/// The lowest and highest score of `imp`'s observations (there is at least one). Flags the runs
/// that stand out from their arm's others, and notes what the runs and the scale say: arms that
/// pool code revisions or models, outlier runs, and scores outside 0–1, where the pass mark and
/// the threshold must be set on the score's own scale.
fn review_scores_and_runs(imp: &mut Imported) -> (f64, f64) {
    // A number as short as it reads: 10, 0.5, 2.75.
    let short = |x: f64| format!("{}", (x * 1e6).round() / 1e6);
    let (lo, hi) = imp
        .observations
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), o| {
            (lo.min(o.score), hi.max(o.score))
        });
    crate::io::runs::flag_outliers(&mut imp.runs, lo, hi - lo);
    imp.notes.extend(
        crate::io::runs::run_notes(&imp.runs)
            .into_iter()
            .map(|w| w.message),
    );
    if lo < 0.0 || hi > 1.0 {
        imp.notes.push(format!(
            "the scores run from {} to {}, not 0–1: a pass is score ≥ pass_mark (experiment.toml, 0.5 unless set), and --threshold-drop is in the same score points; set pass_mark on this scale (e.g. pass_mark = {} for the midpoint) and give --threshold-drop in the same units (on a 0–10 scale, 0.5 is 5% of the range)",
            short(lo),
            short(hi),
            short((lo + hi) / 2.0)
        ));
    }
    (lo, hi)
}

/// What an experiment already holds when logs are appended to it (`--into`).
pub(crate) struct Prior<'a> {
    /// Its results, as observations (order = (0, repeat, 0)).
    pub(crate) observations: &'a [Observation],
    /// Its baseline arm.
    pub(crate) baseline: &'a str,
    /// The (arm, case_id, repeat) keys of its samples table: a sample whose result row was
    /// dropped still holds its number, which a new repeat must not take (the samples table
    /// would hold the key twice, and every verb refuse the folder).
    pub(crate) sample_keys: &'a [(String, String, i64)],
}

impl Plan {
    /// Validates `imp` and numbers its repeats: 1, 2, … per (case, arm) in the order the harness
    /// ran them, after the repeats `prior` already holds.
    ///
    /// # Errors
    /// Nothing scored; a bad threshold or strata option; bad observations; a baseline that is not
    /// an arm; arms sharing no case with the baseline.
    pub(crate) fn new(
        harness: &str,
        mut imp: Imported,
        opts: &ImportOptions,
        prior: Option<&Prior<'_>>,
    ) -> Result<Plan> {
        if imp.observations.is_empty() {
            return Err(Error::Usage(format!(
                "no scored sample in the {harness} logs{}; nothing to import",
                if imp.skipped.is_empty() {
                    String::new()
                } else {
                    format!(" (skipped: {})", imp.skipped.join("; "))
                }
            )));
        }
        if let Some(t) = opts.threshold
            && !(t.is_finite() && t >= 0.0)
        {
            return Err(Error::Usage(format!(
                "--threshold-drop {t}: a drop threshold is a finite number, 0 or more (e.g. 0.02)"
            )));
        }
        check_strata_option(&opts.strata)?;
        check_observations(harness, &imp.observations, &imp.arm_choice)?;
        imp.observations
            .sort_by(|a, b| (&a.arm, &a.case_id, a.order).cmp(&(&b.arm, &b.case_id, b.order)));
        let repeats = repeat_numbers(&imp.observations, prior);
        let score_range = review_scores_and_runs(&mut imp);

        let (baseline, baseline_choice, arms) = match prior {
            None => {
                let arms = arm_summaries(&imp.observations);
                let (b, why) = choose_baseline(&arms, opts.baseline.as_deref())?;
                (b, why, arms)
            }
            Some(p) => {
                let mut all: Vec<Observation> = p.observations.to_vec();
                all.extend(imp.observations.iter().cloned());
                all.sort_by(|a, b| a.arm.cmp(&b.arm));
                (
                    p.baseline.to_string(),
                    "baseline_arm of the experiment's experiment.toml".into(),
                    arm_summaries(&all),
                )
            }
        };
        match prior {
            None => check_comparable(&imp.observations, &arms, &baseline)?,
            Some(p) => {
                let mut all: Vec<Observation> = p.observations.to_vec();
                all.extend(imp.observations.iter().cloned());
                check_comparable(&all, &arms, &baseline)?;
            }
        }
        if arms.len() < 2 {
            imp.notes.insert(0, format!(
                "NOTHING TO COMPARE YET: the logs make one arm only (`{baseline}`), so `ablate check` refuses the folder until it holds an arm to compare. Import the arms' logs together with the baseline's, or name the arms of the files with --arm NAME=GLOB (e.g. --arm before='runs/before/**' --arm after='runs/after/**')"
            ));
        }
        let (passed_column, passed_disagreements) = passed_flags(&mut imp);
        let strata = case_columns(&mut imp, opts)?;
        Ok(Plan {
            harness: harness.to_string(),
            imp,
            repeats,
            baseline,
            baseline_choice,
            passed_column,
            passed_disagreements,
            strata,
            score_range,
        })
    }

    /// The first value each case's metadata gives, by case id.
    fn per_case(&self) -> BTreeMap<&str, &BTreeMap<String, String>> {
        let mut per_case: BTreeMap<&str, &BTreeMap<String, String>> = BTreeMap::new();
        for o in &self.imp.observations {
            per_case.entry(o.case_id.as_str()).or_insert(&o.strata);
        }
        per_case
    }

    /// The results table of the new observations.
    pub(crate) fn results_frame(&self) -> Result<DataFrame> {
        let obs = &self.imp.observations;
        let mut columns = self.keys();
        columns.push(Column::new(
            "score".into(),
            obs.iter().map(|o| o.score).collect::<Vec<_>>(),
        ));
        if obs.iter().any(|o| o.tokens_in.is_some()) {
            columns.push(Column::new(
                "tokens_in".into(),
                obs.iter().map(|o| o.tokens_in).collect::<Vec<_>>(),
            ));
        }
        if self.passed_column {
            columns.push(Column::new(
                "passed".into(),
                obs.iter()
                    .map(|o| o.passed.unwrap_or(false))
                    .collect::<Vec<_>>(),
            ));
        }
        DataFrame::new(obs.len(), columns).map_err(|e| building("results", e))
    }

    /// The samples table of the new observations: case_id, arm and repeat as in the results, the
    /// input and output each harness logs (cut to [`crate::import::SAMPLE_TEXT_CHARS`]) and the
    /// source (the log file and the sample in it).
    pub(crate) fn samples_frame(&self) -> Result<DataFrame> {
        let obs = &self.imp.observations;
        let mut columns = self.keys();
        columns.extend([
            Column::new(
                "input".into(),
                obs.iter().map(|o| o.input.as_deref()).collect::<Vec<_>>(),
            ),
            Column::new(
                "output".into(),
                obs.iter().map(|o| o.output.as_deref()).collect::<Vec<_>>(),
            ),
            Column::new(
                "source".into(),
                obs.iter().map(|o| o.source.as_str()).collect::<Vec<_>>(),
            ),
        ]);
        DataFrame::new(obs.len(), columns).map_err(|e| building("samples", e))
    }

    /// The key columns of results and samples: case_id, arm and repeat per observation.
    fn keys(&self) -> Vec<Column> {
        let obs = &self.imp.observations;
        vec![
            Column::new(
                "case_id".into(),
                obs.iter().map(|o| o.case_id.as_str()).collect::<Vec<_>>(),
            ),
            Column::new(
                "arm".into(),
                obs.iter().map(|o| o.arm.as_str()).collect::<Vec<_>>(),
            ),
            Column::new("repeat".into(), self.repeats.clone()),
        ]
    }

    /// The cases table of the new observations' cases.
    pub(crate) fn cases_frame(&self) -> Result<DataFrame> {
        let per_case = self.per_case();
        let ids: Vec<&str> = per_case.keys().copied().collect();
        let mut columns = vec![Column::new("case_id".into(), ids.clone())];
        for s in &self.strata {
            columns.push(Column::new(
                s.as_str().into(),
                ids.iter()
                    .map(|id| per_case[id].get(s).cloned())
                    .collect::<Vec<Option<String>>>(),
            ));
        }
        DataFrame::new(ids.len(), columns).map_err(|e| building("cases", e))
    }

    /// The arms table of `names` (nothing removed: imported arms are prompt variants).
    pub(crate) fn arms_frame(&self, names: &[&str]) -> Result<DataFrame> {
        let empty: Vec<Series> = names
            .iter()
            .map(|_| Series::new_empty("".into(), &DataType::String))
            .collect();
        let removed = Series::new("removed".into(), empty);
        DataFrame::new(
            names.len(),
            vec![
                Column::new("arm".into(), names.to_vec()),
                removed.into_column(),
                Column::new(
                    "imported_from".into(),
                    names
                        .iter()
                        .map(|_| self.imp.arm_choice.as_str())
                        .collect::<Vec<_>>(),
                ),
                Column::new(
                    "prompt".into(),
                    names
                        .iter()
                        .map(|n| self.imp.prompts.get(*n).map(String::as_str))
                        .collect::<Vec<_>>(),
                ),
            ],
        )
        .map_err(|e| building("arms", e))
    }

    /// The sources table of the files read.
    pub(crate) fn sources_frame(&self) -> Result<DataFrame> {
        let src = &self.imp.sources;
        DataFrame::new(
            src.len(),
            vec![
                Column::new(
                    "file".into(),
                    src.iter().map(|s| s.file.as_str()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "sha256".into(),
                    src.iter().map(|s| s.sha256.as_str()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "harness".into(),
                    src.iter().map(|s| s.harness.as_str()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "version".into(),
                    src.iter().map(|s| s.version.clone()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "taken".into(),
                    src.iter().map(|s| s.taken.as_str()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "run".into(),
                    src.iter().map(|s| s.run.clone()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "arm".into(),
                    src.iter().map(|s| s.arm.clone()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "config".into(),
                    src.iter().map(|s| s.config.clone()).collect::<Vec<_>>(),
                ),
            ],
        )
        .map_err(|e| building("sources", e))
    }

    /// The runs table: one row per harness run.
    pub(crate) fn runs_frame(&self) -> Result<DataFrame> {
        let r = &self.imp.runs;
        let strs = |f: fn(&crate::io::runs::RunRow) -> &str| r.iter().map(f).collect::<Vec<_>>();
        let opts =
            |f: fn(&crate::io::runs::RunRow) -> Option<&str>| r.iter().map(f).collect::<Vec<_>>();
        DataFrame::new(
            r.len(),
            vec![
                Column::new("run".into(), strs(|x| &x.run)),
                Column::new("arm".into(), strs(|x| &x.arm)),
                Column::new("harness".into(), strs(|x| &x.harness)),
                Column::new("file".into(), strs(|x| &x.file)),
                Column::new("revision".into(), opts(|x| x.revision.as_deref())),
                Column::new("model".into(), opts(|x| x.model.as_deref())),
                Column::new("started".into(), opts(|x| x.started.as_deref())),
                Column::new(
                    "samples".into(),
                    r.iter().map(|x| x.samples).collect::<Vec<_>>(),
                ),
                Column::new(
                    "errors".into(),
                    r.iter().map(|x| x.errors).collect::<Vec<_>>(),
                ),
                Column::new(
                    "mean_score".into(),
                    r.iter().map(|x| x.mean_score).collect::<Vec<_>>(),
                ),
                Column::new(
                    "outlier".into(),
                    r.iter().map(|x| x.outlier).collect::<Vec<_>>(),
                ),
            ],
        )
        .map_err(|e| building("runs", e))
    }

    /// The summary, given the folder written, its arms and cases, and the files written.
    pub(crate) fn summary(
        self,
        out: String,
        arms: Vec<ArmSummary>,
        cases: usize,
        rows: usize,
        opts: &ImportOptions,
        written: Vec<String>,
    ) -> ImportSummary {
        ImportSummary {
            out,
            harness: self.harness,
            files: self
                .imp
                .sources
                .iter()
                .filter(|s| !s.taken.starts_with("skipped"))
                .count(),
            cases,
            rows,
            arms,
            baseline: self.baseline,
            baseline_choice: self.baseline_choice,
            scores_found: self.imp.scores_found,
            score_choice: self.imp.score_choice,
            arm_choice: self.imp.arm_choice,
            case_choice: self.imp.case_choice,
            tokens_counted: self.imp.tokens_counted,
            passed_disagreements: self.passed_disagreements,
            case_columns: self.strata,
            strata: opts.strata.clone(),
            threshold_drop: opts.threshold,
            skipped: self.imp.skipped,
            notes: self.imp.notes,
            score_min: self.score_range.0,
            score_max: self.score_range.1,
            runs: self.imp.runs,
            written,
        }
    }
}

/// Each (sorted) observation's repeat number: 1, 2, … within its (arm, case), after the repeats
/// the experiment already holds when importing `--into` it (in its results or its samples).
fn repeat_numbers(observations: &[Observation], prior: Option<&Prior<'_>>) -> Vec<i64> {
    let mut last: BTreeMap<(&str, &str), i64> = BTreeMap::new();
    for o in prior.map(|p| p.observations).unwrap_or_default() {
        let r = last
            .entry((o.arm.as_str(), o.case_id.as_str()))
            .or_insert(0);
        *r = (*r).max(o.order.1);
    }
    for (arm, case, repeat) in prior.map(|p| p.sample_keys).unwrap_or_default() {
        let r = last.entry((arm.as_str(), case.as_str())).or_insert(0);
        *r = (*r).max(*repeat);
    }
    let mut repeats = Vec::with_capacity(observations.len());
    for (i, o) in observations.iter().enumerate() {
        let same = i > 0 && {
            let p = &observations[i - 1];
            p.arm == o.arm && p.case_id == o.case_id
        };
        repeats.push(if same {
            repeats[i - 1] + 1
        } else {
            last.get(&(o.arm.as_str(), o.case_id.as_str()))
                .copied()
                .unwrap_or(0)
                + 1
        });
    }

    repeats
}

/// The harness's pass/fail: a `passed` column when every row has one (with a note when only
/// some do), and how many rows it decides otherwise than score ≥ the default pass mark.
fn passed_flags(imp: &mut Imported) -> (bool, Option<usize>) {
    // The harness's pass/fail: a `passed` column when every row has one.
    let with_flag = imp
        .observations
        .iter()
        .filter(|o| o.passed.is_some())
        .count();
    let passed_column = with_flag == imp.observations.len();
    if with_flag > 0 && !passed_column {
        imp.notes.push(format!(
            "{with_flag} of {} rows carry the harness's pass/fail and the others do not: no `passed` column is written, and score ≥ pass_mark decides passes",
            imp.observations.len()
        ));
    }
    let passed_disagreements = passed_column.then(|| {
        imp.observations
            .iter()
            .filter(|o| o.passed != Some(o.score >= DEFAULT_PASS_MARK))
            .count()
    });
    (passed_column, passed_disagreements)
}

/// Case columns: the --strata fields, or every scalar metadata field every case has. Only
/// --strata become the manifest's `strata` (reweighting crosses them all).
fn case_columns(imp: &mut Imported, opts: &ImportOptions) -> Result<Vec<String>> {
    let mut per_case: BTreeMap<&str, &BTreeMap<String, String>> = BTreeMap::new();
    for o in &imp.observations {
        per_case.entry(o.case_id.as_str()).or_insert(&o.strata);
    }
    if !opts.strata.is_empty() {
        check_strata_lengths(&imp.observations, &opts.strata)?;
        for s in &opts.strata {
            if let Some((case, (v0, s0), (v1, s1))) = disagreement(&imp.observations, s) {
                return Err(Error::Usage(format!(
                    "--strata {s}: case {case} has {s} = \"{v0}\" in {s0} and \"{v1}\" in {s1}, and a stratum is one value per case; mend the logs' metadata, or choose another field"
                )));
            }
            if !per_case.values().any(|m| m.contains_key(s)) {
                let found: BTreeSet<&String> = per_case.values().flat_map(|m| m.keys()).collect();
                return Err(Error::Usage(format!(
                    "--strata {s}: no sample has a scalar metadata field `{s}`; fields found: {}",
                    if found.is_empty() {
                        "none".to_string()
                    } else {
                        found.into_iter().cloned().collect::<Vec<_>>().join(", ")
                    }
                )));
            }
        }
        // The columns that say which question a case is stay whatever --strata names:
        // `import --into` checks each new sample against them.
        let mut columns = opts.strata.clone();
        for id in IDENTITY_COLUMNS {
            if !columns.iter().any(|c| c == id) && per_case.values().all(|m| m.contains_key(*id)) {
                columns.push((*id).to_string());
            }
        }
        return Ok(columns);
    }
    let mut common: Option<BTreeSet<&String>> = None;
    for m in per_case.values() {
        let keys: BTreeSet<&String> = m.keys().collect();
        common = Some(match common {
            None => keys,
            Some(c) => c.intersection(&keys).copied().collect(),
        });
    }
    let mut kept: Vec<String> = common
        .unwrap_or_default()
        .into_iter()
        .filter(|k| !RESERVED_CASE_COLUMNS.contains(&k.as_str()))
        .cloned()
        .collect();
    // A field with a long value somewhere is text, not a stratum: left out, and said. So is one
    // that gives a case two values in different samples (not an attribute of the case).
    let mut notes = Vec::new();
    kept.retain(|k| match disagreement(&imp.observations, k) {
        Some((case, (v0, s0), (v1, s1))) => {
            notes.push(format!(
                "metadata field `{k}` is left out of the cases table: case {case} has \"{v0}\" in {s0} and \"{v1}\" in {s1}, not one value per case"
            ));
            false
        }
        None => true,
    });
    kept.retain(|k| {
        let long = per_case
            .values()
            .any(|m| m.get(k).is_some_and(|v| v.len() > MAX_CASE_TEXT));
        if long {
            notes.push(format!(
                "metadata field `{k}` is left out of the cases table: some values are longer than {MAX_CASE_TEXT} bytes (text, not a stratum)"
            ));
        }
        !long
    });
    imp.notes.extend(notes);
    Ok(kept)
}

/// Case columns that say which question a case is: kept in `cases` whatever `--strata` names,
/// since `import --into` refuses a new sample whose id the experiment holds for another question.
const IDENTITY_COLUMNS: &[&str] = &["input_hash", "doc_hash"];

/// The first case whose samples give metadata `field` two values: the case, and each value with
/// the sample it came from.
#[allow(clippy::type_complexity)]
fn disagreement<'a>(
    obs: &'a [Observation],
    field: &str,
) -> Option<(&'a str, (&'a str, &'a str), (&'a str, &'a str))> {
    let mut first: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
    for o in obs {
        let Some(v) = o.strata.get(field) else {
            continue;
        };
        match first.get(o.case_id.as_str()) {
            None => {
                first.insert(&o.case_id, (v, &o.source));
            }
            Some(&(v0, s0)) if v0 != v.as_str() => {
                return Some((&o.case_id, (v0, s0), (v, &o.source)));
            }
            Some(_) => {}
        }
    }
    None
}

/// The pass mark an import judges `passed` flags against (experiment.toml's default).
const DEFAULT_PASS_MARK: f64 = 0.5;

/// Refuses an import whose arms cannot be compared: an arm that shares no case with the baseline
/// (different documents under the same ids, or different tasks). A single arm is written with a
/// note, and `ablate check` refuses it until another arm is added.
fn check_comparable(obs: &[Observation], arms: &[ArmSummary], baseline: &str) -> Result<()> {
    let base_cases: BTreeSet<&str> = obs
        .iter()
        .filter(|o| o.arm == baseline)
        .map(|o| o.case_id.as_str())
        .collect();
    let mut shared: BTreeMap<&str, bool> = arms
        .iter()
        .filter(|a| a.arm != baseline)
        .map(|a| (a.arm.as_str(), false))
        .collect();
    for o in obs {
        if o.arm != baseline && base_cases.contains(o.case_id.as_str()) {
            shared.insert(o.arm.as_str(), true);
        }
    }
    let alone: Vec<&str> = shared
        .iter()
        .filter(|(_, s)| !**s)
        .map(|(a, _)| *a)
        .collect();
    if !alone.is_empty() {
        return Err(Error::Usage(format!(
            "arm{} {} share{} no case with the baseline `{baseline}`: the ids may match, but the documents differ (or the arms ran on different sets), so nothing can be paired. Import arms that ran on the same cases, choose another baseline with --baseline, or import each set on its own",
            if alone.len() > 1 { "s" } else { "" },
            alone
                .iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(", "),
            if alone.len() > 1 { "" } else { "s" },
        )));
    }
    Ok(())
}

/// Cases, repeats, mean score and tokens per arm (observations sorted by arm).
pub(crate) fn arm_summaries(obs: &[Observation]) -> Vec<ArmSummary> {
    let mut out: Vec<ArmSummary> = Vec::new();
    let mut i = 0;
    while i < obs.len() {
        let arm = &obs[i].arm;
        let mut j = i;
        let mut case_scores: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        while j < obs.len() && obs[j].arm == *arm {
            case_scores
                .entry(obs[j].case_id.as_str())
                .or_default()
                .push(obs[j].score);
            j += 1;
        }
        // The arm's score as every verb defines it: the mean over cases of each case's mean
        // over its repeats (a row mean weighs a case by its repeats when they differ).
        let case_means: Vec<f64> = case_scores
            .values()
            .map(|s| crate::stats::moments::mean(s))
            .collect();
        let tokens: Vec<f64> = obs[i..j]
            .iter()
            .filter_map(|o| o.tokens_in.map(|t| t as f64))
            .collect();
        out.push(ArmSummary {
            arm: arm.clone(),
            cases: case_scores.len(),
            repeats_min: case_scores.values().map(Vec::len).min().unwrap_or(0),
            repeats_max: case_scores.values().map(Vec::len).max().unwrap_or(0),
            mean_score: crate::stats::moments::mean(&case_means),
            tokens_in_mean: (!tokens.is_empty()).then(|| crate::stats::moments::mean(&tokens)),
        });
        i = j;
    }
    out
}

/// The baseline: the one asked for; else an arm named `baseline` or `full`; else the arm with
/// the most input tokens (the full prompt sends the most); else the only arm.
pub(super) fn choose_baseline(
    arms: &[ArmSummary],
    asked: Option<&str>,
) -> Result<(String, String)> {
    let names = || {
        arms.iter()
            .map(|a| a.arm.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(b) = asked {
        return if arms.iter().any(|a| a.arm == b) {
            Ok((b.to_string(), "--baseline".into()))
        } else {
            Err(Error::Usage(format!(
                "--baseline {b} is not an arm of these logs; arms: {}",
                names()
            )))
        };
    }
    for name in ["baseline", "full"] {
        if arms.iter().any(|a| a.arm == name) {
            return Ok((name.to_string(), format!("the arm named `{name}`")));
        }
    }
    if arms.len() == 1 {
        return Ok((arms[0].arm.clone(), "the only arm".into()));
    }
    let with_tokens: Vec<&ArmSummary> =
        arms.iter().filter(|a| a.tokens_in_mean.is_some()).collect();
    if with_tokens.len() == arms.len() {
        let mut sorted = with_tokens.clone();
        sorted.sort_by(|a, b| {
            b.tokens_in_mean
                .partial_cmp(&a.tokens_in_mean)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        if sorted[0].tokens_in_mean > sorted[1].tokens_in_mean {
            return Ok((
                sorted[0].arm.clone(),
                format!(
                    "the arm with the most input tokens ({:.0} a sample): the full prompt sends the most; use --baseline to choose another",
                    sorted[0].tokens_in_mean.unwrap_or(0.0)
                ),
            ));
        }
    }
    Err(Error::Usage(format!(
        "cannot tell which arm is the baseline (the full prompt): none is named `baseline` or `full`, and input tokens do not single one out. Give --baseline ARM; arms: {}",
        names()
    )))
}
