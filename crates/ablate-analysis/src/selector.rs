//! `ablate selector`: replay a reranker-threshold selector over the retrieved passages.
//!
//! At threshold t a main-set case keeps the passages whose reranker score is ≥ t. Per case:
//! saving = full − kept passage tokens; oracle saving = full − tokens of the passages with
//! rank ≤ gold_rank, the deepest gold passage (none saved when gold was not retrieved). recovery
//! = mean saving / mean oracle saving: the share of the oracle's saving the deployable selector
//! gets. gold_miss_rate = the share of cases with a gold passage of which the threshold drops one
//! (the cases it puts at risk). Where an arm was run with that `selector_threshold`, its
//! measured drop (sweep) is shown beside the replay. Thresholds: 0.00, 0.05, …, 1.00 and every
//! measured selector_threshold (in place of a grid value within 10⁻¹² of it).
//!
//! The oracle saving is an upper bound: a selector that cannot read gold labels can only keep
//! more than the oracle (saving less) or drop the gold passage (costing score).

use serde::Serialize;

use crate::analysis::sweep::SweepOutput;
use crate::error::{Error, Result};
use crate::io::{Experiment, Passages};
use crate::stats::moments::{self, Neumaier};

/// One threshold of the replay.
#[derive(Debug, Clone, Serialize)]
pub struct SelectorPoint {
    /// Reranker score threshold.
    pub threshold: f64,
    /// Mean passage tokens kept per case.
    pub kept_tokens_mean: f64,
    /// Mean tokens saved per case.
    pub saving_mean: f64,
    /// saving_mean / oracle_saving_mean.
    pub recovery: Option<f64>,
    /// Share of cases with a gold passage whose gold passage is dropped.
    pub gold_miss_rate: Option<f64>,
    /// Drop measured by an arm run at this threshold, if any.
    pub measured_drop: Option<f64>,
    /// That arm.
    pub measured_arm: Option<String>,
}

/// What `ablate selector` reports.
#[derive(Debug, Clone, Serialize)]
pub struct SelectorOutput {
    /// Mean passage tokens per case (the full retrieval).
    pub full_tokens_mean: f64,
    /// Mean oracle saving per case: null when no case has a gold passage labelled (`gold`, or
    /// the cases' `gold_rank`), with `selector.no_gold`.
    pub oracle_saving_mean: Option<f64>,
    /// Main-set cases with passages.
    pub cases: usize,
    /// The replay, by increasing threshold.
    pub points: Vec<SelectorPoint>,
    /// Reranker scores outside the thresholds' range [0, 1] (`selector.scores_outside_grid`):
    /// the grid's thresholds then keep or drop every such passage alike.
    pub warnings: Vec<crate::warning::Warning>,
}

/// The passages of each main-set case (indexed by case): rank, tokens, reranker score, gold.
fn passages_by_case(exp: &Experiment, passages: &Passages) -> Vec<Vec<(i64, f64, f64, bool)>> {
    let mut by_case: Vec<Vec<(i64, f64, f64, bool)>> = vec![Vec::new(); exp.cases.len()];
    for p in &passages.rows {
        let c = p.case as usize;
        if exp.cases.stress[c] {
            continue;
        }
        let gold = match (p.gold, exp.cases.gold_rank.as_ref()) {
            (Some(g), _) => g,
            (None, Some(ranks)) => ranks[c] == Some(p.rank),
            (None, None) => false,
        };
        by_case[c].push((p.rank, p.tokens, p.score, gold));
    }
    by_case
}

/// Where both are given, the main-set cases' `gold` flags agree with `cases.gold_rank`: the
/// deepest passage flagged gold is at gold_rank (no flag when it is null, gold not retrieved).
/// The oracle keeps every passage up to gold_rank and the miss rate reads the flags, so flags
/// that name a deeper or a shallower passage would make the two contradict each other. A case
/// may have several gold passages (multi-hop, chunked retrieval): the oracle keeps them all, and
/// the threshold misses when it drops any.
///
/// # Errors
/// The first case (in the passages' order) whose deepest flag differs from its gold_rank.
fn check_gold(exp: &Experiment, passages: &Passages) -> Result<()> {
    let Some(gold_rank) = exp.cases.gold_rank.as_ref() else {
        return Ok(());
    };
    if passages.rows.iter().all(|p| p.gold.is_none()) {
        return Ok(());
    }
    /// A case's first passage's row, and its deepest flagged rank with that rank's row.
    type Seen = (Option<usize>, Option<(i64, usize)>);
    let mut seen: Vec<Seen> = vec![(None, None); exp.cases.len()];
    for (row, p) in passages.rows.iter().enumerate() {
        let c = p.case as usize;
        if exp.cases.stress[c] {
            continue;
        }
        seen[c].0.get_or_insert(row);
        if p.gold == Some(true) && seen[c].1.is_none_or(|(r, _)| p.rank > r) {
            seen[c].1 = Some((p.rank, row));
        }
    }
    let first_bad = passages.rows.iter().find_map(|p| {
        let c = p.case as usize;
        let (Some(first_row), deepest) = seen[c] else {
            return None;
        };
        (deepest.map(|d| d.0) != gold_rank[c]).then_some((c, first_row, deepest))
    });
    let Some((c, first_row, deepest)) = first_bad else {
        return Ok(());
    };
    Err(Error::BadValue {
        path: passages.path.clone(),
        column: "gold".into(),
        row: crate::error::Row::at(deepest.map_or(first_row, |d| d.1)),
        value: format!(
            "case \"{}\": {}, the cases table's gold_rank is {}",
            exp.cases.ids[c],
            deepest.map_or_else(
                || "no passage is flagged gold".to_string(),
                |(r, _)| format!("the deepest passage flagged gold is rank {r}")
            ),
            gold_rank[c].map_or_else(|| "null (not retrieved)".to_string(), |r| r.to_string())
        ),
        problem: "the passages' gold flags and the cases' gold_rank name different gold passages (the selector's oracle saving keeps the passages up to gold_rank, its gold miss rate reads the flags)".into(),
        fix: format!(
            "make them agree (gold_rank is the deepest gold passage's rank, null when none was retrieved), or drop one of the two: the `gold` column of {} or `gold_rank` of {}",
            passages.path.display(),
            exp.cases.path.display()
        ),
    })
}

/// The measured selector arms: (threshold, arm, the sweep's drop).
fn measured_arms(exp: &Experiment, sweep: &SweepOutput) -> Vec<(f64, String, f64)> {
    exp.arms
        .iter()
        .flat_map(|a| a.specs.iter())
        .filter_map(|s| {
            let t = s.selector_threshold?;
            let arm = sweep.arms.iter().find(|a| a.arm == s.arm)?;
            Some((t, s.arm.clone(), arm.drop))
        })
        .collect()
}

/// Replays the selector.
///
/// # Errors
/// No passages table.
pub fn run(exp: &Experiment, sweep: &SweepOutput) -> Result<SelectorOutput> {
    let passages = exp.passages.as_ref().ok_or_else(|| Error::NotFound {
        path: exp.dir.join("passages.parquet"),
        fix: "the selector replay needs the retrieved passages: case_id, rank, tokens, score (reranker)[, gold]".into(),
    })?;
    let by_case = passages_by_case(exp, passages);
    let cases: Vec<usize> = (0..exp.cases.len())
        .filter(|&c| !by_case[c].is_empty())
        .collect();
    check_gold(exp, passages)?;
    if cases.is_empty() {
        return Err(Error::Unsupported {
            what: format!("the selector replay of {}", passages.path.display()),
            reason: "no main-set case has passages (the stress slice's are left out, as from every figure of the main set)".into(),
            fix: "add the retrieved passages of the main-set cases".into(),
        });
    }
    let full: Vec<f64> = cases
        .iter()
        .map(|&c| moments::sum(by_case[c].iter().map(|p| p.1)))
        .collect();
    let oracle_saving: Vec<f64> = cases
        .iter()
        .zip(&full)
        .map(|(&c, f)| {
            let gold_rank = exp
                .cases
                .gold_rank
                .as_ref()
                .and_then(|g| g[c])
                .or_else(|| by_case[c].iter().filter(|p| p.3).map(|p| p.0).max());
            match gold_rank {
                Some(g) => f - moments::sum(by_case[c].iter().filter(|p| p.0 <= g).map(|p| p.1)),
                None => 0.0,
            }
        })
        .collect();
    let oracle_mean = moments::mean(&oracle_saving);
    let labelled = cases.iter().any(|&c| {
        exp.cases.gold_rank.as_ref().is_some_and(|g| g[c].is_some())
            || by_case[c].iter().any(|p| p.3)
    });

    let measured = measured_arms(exp, sweep);
    // The grid, with a measured arm's own threshold in place of a grid value it rounds to (an
    // arm run at 0.1 + 0.2 is replayed at 0.30000000000000004, where it ran, not at 0.3).
    let mut thresholds: Vec<f64> = measured.iter().map(|m| m.0).collect();
    thresholds.extend(
        (0..=20)
            .map(|i| i as f64 / 20.0)
            .filter(|g| !measured.iter().any(|m| (m.0 - g).abs() < 1e-12)),
    );
    thresholds.sort_by(f64::total_cmp);
    thresholds.dedup();

    let points = thresholds
        .into_iter()
        .map(|t| {
            let mut kept = Neumaier::default();
            let (mut with_gold, mut missed) = (0usize, 0usize);
            for &c in &cases {
                for p in &by_case[c] {
                    if p.2 >= t {
                        kept.add(p.1);
                    }
                }
                let mut gold = by_case[c].iter().filter(|p| p.3).peekable();
                if gold.peek().is_some() {
                    with_gold += 1;
                    if gold.any(|g| g.2 < t) {
                        missed += 1;
                    }
                }
            }
            let n = cases.len().max(1) as f64;
            let kept_mean = kept.total() / n;
            let saving = moments::mean(&full) - kept_mean;
            let hit = measured.iter().find(|m| m.0 == t);
            SelectorPoint {
                threshold: t,
                kept_tokens_mean: kept_mean,
                saving_mean: saving,
                recovery: (oracle_mean > 0.0).then(|| saving / oracle_mean),
                gold_miss_rate: (with_gold > 0).then(|| missed as f64 / with_gold as f64),
                measured_drop: hit.map(|m| m.2),
                measured_arm: hit.map(|m| m.1.clone()),
            }
        })
        .collect();
    Ok(SelectorOutput {
        full_tokens_mean: moments::mean(&full),
        oracle_saving_mean: labelled.then_some(oracle_mean),
        cases: cases.len(),
        points,
        warnings: scale_warning(&by_case)
            .into_iter()
            .chain(shared_threshold_warning(&measured))
            .chain((!labelled).then(|| crate::warning::Warning::new(
                "selector.no_gold",
                "no case has a gold passage labelled (a `gold` column in passages, or `gold_rank` in cases): the oracle saving, recovery and gold miss rate are undefined (null)",
            )))
            .collect(),
    })
}

/// A warning when two measured arms ran at one threshold: the replay's row at it pairs with the
/// first in the arms table's order, and the others' drops are not shown there.
fn shared_threshold_warning(measured: &[(f64, String, f64)]) -> Option<crate::warning::Warning> {
    let shared: Vec<String> = measured
        .iter()
        .enumerate()
        .filter(|(i, m)| measured[..*i].iter().any(|e| e.0 == m.0))
        .map(|(_, m)| {
            let first = measured.iter().find(|e| e.0 == m.0).map(|e| e.1.as_str());
            format!(
                "{} ran at threshold {}, as {} did",
                m.1,
                crate::text::float_text(m.0),
                first.unwrap_or_default()
            )
        })
        .collect();
    (!shared.is_empty()).then(|| {
        crate::warning::Warning::new(
            "selector.shared_threshold",
            format!(
                "{}: the replay's row at such a threshold shows the first arm's drop (`sweep` has every arm's own)",
                shared.join(", ")
            ),
        )
    })
}

/// A warning when the main set's reranker scores leave [0, 1], the range of the replay's
/// thresholds: scores on a 0–100 scale are all kept at every threshold, and the replay reads as a
/// selector that saves nothing.
fn scale_warning(by_case: &[Vec<(i64, f64, f64, bool)>]) -> Option<crate::warning::Warning> {
    let scores = || by_case.iter().flatten().map(|p| p.2);
    let (lo, hi) = (
        scores().fold(f64::INFINITY, f64::min),
        scores().fold(f64::NEG_INFINITY, f64::max),
    );
    (lo < 0.0 || hi > 1.0).then(|| {
        crate::warning::Warning::new(
            "selector.scores_outside_grid",
            format!(
                "the reranker scores run from {} to {}, outside [0, 1] where the replay's thresholds lie (0.00, 0.05, …, 1.00): every passage scored above 1 is kept and every one below 0 dropped at every threshold; rescale the scores to [0, 1] (for a 0–100 scale, divide by 100) in the passages table and the arms' selector_threshold",
                crate::text::float_text(lo),
                crate::text::float_text(hi)
            ),
        )
    })
}
