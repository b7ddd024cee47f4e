//! The `runs` table `ablate import` writes: one row per harness run (an Inspect log, an lm-eval
//! samples file, a promptfoo results file), so that every run behind an arm's repeats is
//! visible: its code revision, model, start, samples, errors and mean score, and whether its mean
//! stands out from the arm's other runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::Serialize;

use crate::warning::Warning;

/// One harness run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRow {
    /// The run's id (Inspect's eval id, else the file).
    pub run: String,
    /// The arm its samples went to.
    pub arm: String,
    /// inspect, lm-eval or promptfoo.
    pub harness: String,
    /// The file it was read from.
    pub file: String,
    /// The code revision the task ran from (Inspect: the git commit, `+dirty` when the tree had
    /// changes), when the harness records one.
    pub revision: Option<String>,
    /// The model.
    pub model: Option<String>,
    /// When it started, as the harness wrote it.
    pub started: Option<String>,
    /// Samples scored.
    pub samples: i64,
    /// Samples that failed with an error (not scored).
    pub errors: i64,
    /// Mean score of its scored samples.
    pub mean_score: Option<f64>,
    /// Whether the run stands out from its arm's other runs ([`flag_outliers`]).
    pub outlier: bool,
}

/// The `runs` table, read.
#[derive(Debug, Clone)]
pub struct Runs {
    /// The file it was read from.
    pub path: PathBuf,
    /// Its rows, in file order.
    pub rows: Vec<RunRow>,
}

/// Flags the runs that stand out from their arm's other runs: a run that failed on every sample
/// (every sample errored, or its mean is the lowest score `floor` while another run of its arm
/// scored above it), or a mean further than max(3.5 × 1.4826 × MAD, 0.25 × `range`) from the
/// median of the arm's other runs that did not fail, when there are two or more (MAD: their
/// median absolute deviation; `range`: the scores' range, so that small differences are never
/// called outliers).
pub fn flag_outliers(rows: &mut [RunRow], floor: f64, range: f64) {
    let mut by_arm: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        by_arm.entry(r.arm.clone()).or_default().push(i);
    }
    let median = |mut v: Vec<f64>| -> f64 {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    };
    for members in by_arm.values() {
        if members.len() < 2 {
            continue;
        }
        // First the runs that failed on every sample; the others are then compared with the
        // arm's other runs that did not (five failed runs of nine must not make the median 0).
        let failed: Vec<bool> = members
            .iter()
            .map(|&i| {
                let r = &rows[i];
                let others_above = members
                    .iter()
                    .filter(|&&j| j != i)
                    .any(|&j| rows[j].mean_score.is_some_and(|m| m > floor));
                (r.samples == 0 && r.errors > 0) || (r.mean_score == Some(floor) && others_above)
            })
            .collect();
        for (k, &i) in members.iter().enumerate() {
            let others: Vec<f64> = members
                .iter()
                .enumerate()
                .filter(|&(l, &j)| l != k && !failed[l] && j != i)
                .filter_map(|(_, &j)| rows[j].mean_score)
                .collect();
            let far = match rows[i].mean_score {
                Some(m) if !failed[k] && others.len() >= 2 => {
                    let centre = median(others.clone());
                    let mad = median(others.iter().map(|x| (x - centre).abs()).collect());
                    (m - centre).abs() > (3.5 * 1.4826 * mad).max(0.25 * range)
                }
                _ => false,
            };
            rows[i].outlier = failed[k] || far;
        }
    }
}

/// What the runs say an analyst should know: arms that pool runs of several code revisions
/// (`runs.mixed_revisions`) or models (`runs.mixed_models`), and the runs that stand out
/// (`runs.outlier`).
pub fn run_notes(rows: &[RunRow]) -> Vec<Warning> {
    let mut notes = Vec::new();
    let mut revisions: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut models: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for r in rows {
        if let Some(rev) = &r.revision {
            revisions.entry(&r.arm).or_default().insert(rev);
        }
        if let Some(m) = &r.model {
            models.entry(&r.arm).or_default().insert(m);
        }
    }
    for (arm, revs) in &revisions {
        if revs.len() > 1 {
            notes.push(Warning::new(
                "runs.mixed_revisions",
                format!(
                    "arm `{arm}` pools runs of {} code revisions ({}): its repeats may not be the same prompt",
                    revs.len(),
                    revs.iter().copied().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    }
    for (arm, ms) in &models {
        if ms.len() > 1 {
            notes.push(Warning::new(
                "runs.mixed_models",
                format!(
                    "arm `{arm}` pools runs of {} models ({})",
                    ms.len(),
                    ms.iter().copied().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    }
    for r in rows.iter().filter(|r| r.outlier) {
        notes.push(Warning::new(
            "runs.outlier",
            format!(
                "run {} of arm `{}` ({}) stands out from the arm's other runs: mean {} over {} sample(s), {} error(s); if it failed (a broken setup, a missing tool), leave its file out and import again",
                r.run,
                r.arm,
                r.file,
                r.mean_score.map_or("undefined".to_string(), |m| format!("{m:.3}")),
                r.samples,
                r.errors
            ),
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(arm: &str, mean: Option<f64>, samples: i64, errors: i64) -> RunRow {
        RunRow {
            run: format!("{arm}-{mean:?}"),
            arm: arm.into(),
            harness: "inspect".into(),
            file: "f".into(),
            revision: None,
            model: None,
            started: None,
            samples,
            errors,
            mean_score: mean,
            outlier: false,
        }
    }

    #[test]
    fn a_run_that_failed_every_sample_is_flagged_and_ordinary_spread_is_not() {
        // statik's January runs: 4 revisions scored, 5 scored 0 on every sample.
        let mut rows: Vec<RunRow> = [0.56, 0.44, 0.89, 0.67, 0.0, 0.0]
            .iter()
            .map(|&m| row("t", Some(m), 9, 0))
            .collect();
        rows.push(row("other", Some(0.5), 9, 0));
        rows.push(row("other", Some(0.6), 9, 0));
        flag_outliers(&mut rows, 0.0, 1.0);
        let flags: Vec<bool> = rows.iter().map(|r| r.outlier).collect();
        assert_eq!(
            flags,
            [false, false, false, false, true, true, false, false]
        );
        // Every sample errored: flagged even with one other run.
        let mut two = vec![row("a", None, 0, 4), row("a", Some(0.7), 4, 0)];
        flag_outliers(&mut two, 0.0, 1.0);
        assert!(two[0].outlier && !two[1].outlier);
        // Far from the others by the robust rule: 0.1 against 0.80, 0.82, 0.85 (MAD 0.02, so
        // the bound is max(0.104, 0.25) = 0.25).
        let mut far: Vec<RunRow> = [0.8, 0.82, 0.85, 0.1]
            .iter()
            .map(|&m| row("b", Some(m), 10, 0))
            .collect();
        flag_outliers(&mut far, -1.0, 1.0);
        assert_eq!(
            far.iter().map(|r| r.outlier).collect::<Vec<_>>(),
            [false, false, false, true]
        );
    }

    #[test]
    fn failed_runs_do_not_set_the_centre_for_the_others() {
        // statik's troubleshooter: 4 revisions scored, 5 failed everywhere.
        let mut rows: Vec<RunRow> = [0.556, 0.444, 0.889, 0.667, 0.0, 0.0, 0.0, 0.0, 0.0]
            .iter()
            .map(|&m| row("t", Some(m), 9, 0))
            .collect();
        flag_outliers(&mut rows, 0.0, 1.0);
        let flags: Vec<bool> = rows.iter().map(|r| r.outlier).collect();
        assert_eq!(
            flags,
            [false, false, false, false, true, true, true, true, true]
        );
    }

    #[test]
    fn notes_name_mixed_revisions_and_models() {
        let mut a = row("x", Some(0.5), 3, 0);
        a.revision = Some("e0143d1".into());
        let mut b = a.clone();
        b.revision = Some("24049c3".into());
        let notes = run_notes(&[a, b]);
        assert_eq!(notes.len(), 1);
        assert_eq!(notes[0].code, "runs.mixed_revisions");
        assert!(
            notes[0]
                .message
                .contains("2 code revisions (24049c3, e0143d1)")
        );
    }
}
