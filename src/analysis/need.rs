//! `ablate need`: the needed context fraction (seed 000).
//!
//! Per main-set case i, needed tokens = Σ over blocks of the tokens its rule keeps:
//! - `always`: every unit of the block;
//! - `needed_units`: the block's units except those removed by a measured arm, within the block,
//!   whose sweep verdict is removable-on-this-set;
//! - `through_gold_rank`: units with rank ≤ the case's gold_rank (all of them when gold was not
//!   retrieved, or for a unit without a rank);
//! - `when:col=val`: every unit when the case's `col` equals `val`, else none.
//!
//! Unit tokens come from `case_units` when present (the unit's mean from `units` fills a missing
//! cell), else from `units.tokens`; total = Σ unit tokens. value = mean needed / mean total over
//! the main set. With a production mix, value_production = (Σ_h W_h·mean_h needed) /
//! (Σ_h W_h·mean_h total). `oracle` is true when a block uses through_gold_rank: gold labels are
//! not available at serve time, so the fraction is an upper bound on what any selector can save.
//! A block with no rule in experiment.toml counts as `always` (conservative), with a warning.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::Config;
use crate::analysis::paired::{CaseSet, Paired};
use crate::analysis::reweight;
use crate::analysis::sweep::{self, Verdict};
use crate::error::{Error, Result};
use crate::io::{Experiment, NeedRule};
use crate::stats::moments::{self, Neumaier};

/// The note attached to an oracle fraction.
pub const ORACLE_NOTE: &str =
    "passage need computed from labelled gold_rank; not available at serve time";

/// Needed and total tokens of one block.
#[derive(Debug, Clone, Serialize)]
pub struct BlockNeed {
    /// Mean needed tokens per case.
    pub needed_tokens_mean: f64,
    /// Mean tokens sent per case.
    pub total_tokens_mean: f64,
    /// The rule used.
    pub rule: String,
}

/// What `ablate need` reports.
#[derive(Debug, Clone, Serialize)]
pub struct NeedOutput {
    /// Mean needed tokens per case.
    pub needed_tokens_mean: f64,
    /// Mean tokens sent per case.
    pub total_tokens_mean: f64,
    /// needed / total.
    pub value: f64,
    /// The same, post-stratified to the production mix (null without a mix).
    pub value_production: Option<f64>,
    /// True when some need comes from gold labels (an upper bound on deployable savings).
    pub oracle: bool,
    /// Why the fraction is an oracle figure (null when it is not).
    pub oracle_note: Option<String>,
    /// Per block.
    pub by_block: BTreeMap<String, BlockNeed>,
    /// Units of `needed_units` blocks judged removable, with the arm that showed it.
    pub removable_units: BTreeMap<String, String>,
    /// Main-set cases used.
    pub cases: usize,
    /// Production share with no eval case, left out of value_production.
    pub unmeasured_share: Option<f64>,
    /// Notes.
    pub warnings: Vec<String>,
}

/// Computes the needed context fraction.
///
/// # Errors
/// No units table; mix problems (as `reweight`), including production strata with no eval case
/// unless `allow_unmeasured`.
pub fn run(exp: &Experiment, allow_unmeasured: bool) -> Result<NeedOutput> {
    let units = exp.units.as_ref().ok_or_else(|| Error::NotFound {
        path: exp.dir.join("units.parquet"),
        fix:
            "`need` adds up unit tokens per block: add a units table (unit, block, tokens[, rank])"
                .into(),
    })?;
    let paired = Paired::new(exp, CaseSet::Main);
    let mut warnings = Vec::new();

    // Units shown removable by a measured arm within their block.
    let verdicts = sweep::run(
        exp,
        &Config {
            bootstrap: 0,
            ..Config::default()
        },
    );
    let mut removable_units: BTreeMap<String, String> = BTreeMap::new();
    for arm in verdicts
        .arms
        .iter()
        .filter(|a| a.verdict == Verdict::Removable)
    {
        let blocks: Vec<&str> = arm
            .removed
            .iter()
            .filter_map(|u| units.index.get(u).map(|&i| units.specs[i].block.as_str()))
            .collect();
        let within_one_block = !blocks.is_empty()
            && blocks.len() == arm.removed.len()
            && blocks.iter().all(|b| *b == blocks[0])
            && exp
                .manifest
                .blocks
                .iter()
                .any(|b| b.name == blocks[0] && b.need == NeedRule::NeededUnits);
        if within_one_block {
            for u in &arm.removed {
                removable_units
                    .entry(u.clone())
                    .or_insert_with(|| arm.arm.clone());
            }
        }
    }

    // Per-case unit tokens.
    let mut tokens: Vec<Vec<f64>> =
        vec![units.specs.iter().map(|u| u.tokens).collect(); exp.cases.len()];
    if let Some(cu) = &exp.case_units {
        let mut seen = vec![vec![false; units.specs.len()]; exp.cases.len()];
        for &(case, unit, t) in &cu.rows {
            tokens[case as usize][unit as usize] = t;
            seen[case as usize][unit as usize] = true;
        }
        let missing = paired
            .cases
            .iter()
            .map(|&c| seen[c].iter().filter(|s| !**s).count())
            .sum::<usize>();
        if missing > 0 {
            warnings.push(format!(
                "{missing} (case, unit) pairs are missing from case_units; the unit's mean tokens fill them"
            ));
        }
    }

    let rule_of = |block: &str| {
        exp.manifest
            .blocks
            .iter()
            .find(|b| b.name == block)
            .map(|b| &b.need)
    };
    for block in units.blocks() {
        if rule_of(&block).is_none() {
            warnings.push(format!(
                "block \"{block}\" has no need rule in experiment.toml; counted as always needed"
            ));
        }
    }
    let gold = exp.cases.gold_rank.as_ref();
    let needed_of = |case: usize, unit: usize| -> bool {
        let spec = &units.specs[unit];
        match rule_of(&spec.block) {
            None | Some(NeedRule::Always) => true,
            Some(NeedRule::NeededUnits) => !removable_units.contains_key(&spec.unit),
            Some(NeedRule::ThroughGoldRank) => match (spec.rank, gold.and_then(|g| g[case])) {
                (Some(rank), Some(g)) => rank <= g,
                _ => true,
            },
            Some(NeedRule::When { column, value }) => exp
                .cases
                .attributes
                .get(column)
                .and_then(|v| v[case].as_deref())
                .is_some_and(|v| v == value),
        }
    };

    let blocks = units.blocks();
    let mut needed_case = Vec::with_capacity(paired.cases.len());
    let mut total_case = Vec::with_capacity(paired.cases.len());
    let mut block_needed = vec![Neumaier::default(); blocks.len()];
    let mut block_total = vec![Neumaier::default(); blocks.len()];
    for &c in &paired.cases {
        let (mut need, mut total) = (Neumaier::default(), Neumaier::default());
        for (u, spec) in units.specs.iter().enumerate() {
            let t = tokens[c][u];
            let b = blocks.iter().position(|x| *x == spec.block).unwrap_or(0);
            total.add(t);
            block_total[b].add(t);
            if needed_of(c, u) {
                need.add(t);
                block_needed[b].add(t);
            }
        }
        needed_case.push(need.total());
        total_case.push(total.total());
    }
    let n = paired.cases.len().max(1) as f64;
    let needed_mean = moments::mean(&needed_case);
    let total_mean = moments::mean(&total_case);

    let production = reweight::production_strata(exp, &paired, allow_unmeasured)?;
    if let Some(p) = production.as_ref().filter(|p| p.unmeasured_share > 0.0) {
        warnings.push(format!(
            "{:.1}% of production traffic is in strata with no eval case; value_production leaves it out",
            100.0 * p.unmeasured_share
        ));
    }
    let value_production = production.as_ref().and_then(|p| {
        let (num, _) = reweight::post_stratified(&needed_case, &p.stratum, &p.share);
        let (den, _) = reweight::post_stratified(&total_case, &p.stratum, &p.share);
        match (num, den) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        }
    });
    let oracle = exp
        .manifest
        .blocks
        .iter()
        .any(|b| b.need == NeedRule::ThroughGoldRank);
    let by_block = blocks
        .iter()
        .enumerate()
        .map(|(b, name)| {
            (
                name.clone(),
                BlockNeed {
                    needed_tokens_mean: block_needed[b].total() / n,
                    total_tokens_mean: block_total[b].total() / n,
                    rule: rule_of(name).map_or("always (no rule given)".into(), |r| r.to_string()),
                },
            )
        })
        .collect();
    Ok(NeedOutput {
        needed_tokens_mean: needed_mean,
        total_tokens_mean: total_mean,
        value: if total_mean > 0.0 {
            needed_mean / total_mean
        } else {
            f64::NAN
        },
        value_production,
        oracle,
        oracle_note: oracle.then(|| ORACLE_NOTE.to_string()),
        by_block,
        removable_units,
        cases: paired.cases.len(),
        unmeasured_share: production.map(|p| p.unmeasured_share),
        warnings,
    })
}
