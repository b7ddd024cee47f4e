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
//!
//! Marginal is not joint (seed 000): what `need` drops must be jointly removable. For a measured
//! cut S, let C_S be the main-set cases for which `need` drops every unit of S (for a
//! needed_units block that is every case; for through_gold_rank or when: rules, the cases the rule
//! drops them for). The cut contradicts `need` when its mean drop over C_S is at or above
//! threshold_drop. While one does, the contradicting cut with the fewest units (then the largest
//! such drop, then the smaller label) sends back to needed, for every case, its unit with the
//! largest own drop (the drop of the arm removing only that unit; a unit without one counts as
//! −∞; ties: the smaller unit name), and the check repeats. A cut that removes a unit `need`
//! always keeps has an empty C_S and says nothing. `forced_needed` names each unit and the cut
//! that forced it; `joint_cut_measured` says whether one measured arm removed exactly the units
//! `need` drops for some case.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::paired::{CaseSet, Paired};
use crate::analysis::reweight;
use crate::analysis::sweep::SweepOutput;
use crate::analysis::vocab::Verdict;
use crate::error::{Error, Result};
use crate::io::{Experiment, NeedRule};
use crate::stats::moments::{self, Neumaier};
use crate::stats::survey;

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

/// A unit that a needed joint cut sent back to needed.
#[derive(Debug, Clone, Serialize)]
pub struct ForcedUnit {
    /// The unit.
    pub unit: String,
    /// The measured cut whose units need dropped together and that was needed.
    pub cut: String,
    /// That cut's mean drop over the cases where need drops all its units (≥ threshold_drop).
    pub cut_drop: f64,
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
    /// Units `need` drops for at least one case, after the joint-cut check.
    pub jointly_removable: Vec<String>,
    /// Units sent back to needed because a measured cut of units need drops together was needed
    /// on the cases where it drops them.
    pub forced_needed: Vec<ForcedUnit>,
    /// Whether one measured arm removes exactly `jointly_removable` (always true when it is
    /// empty). When false the fraction rests on the untested assumption that those units can go
    /// together.
    pub joint_cut_measured: bool,
    /// Main-set cases used.
    pub cases: usize,
    /// Production share with no eval case, left out of value_production.
    pub unmeasured_share: Option<f64>,
    /// Notes.
    pub warnings: Vec<String>,
}

/// Settings of `ablate need`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NeedOptions {
    /// Leave production strata with no eval case out of `value_production` instead of failing.
    pub allow_unmeasured: bool,
}

/// Computes the needed context fraction.
///
/// # Errors
/// No units table; mix problems (as `reweight`), including production strata with no eval case
/// unless `allow_unmeasured`.
pub fn run(exp: &Experiment, sweep: &SweepOutput, opts: &NeedOptions) -> Result<NeedOutput> {
    let allow_unmeasured = opts.allow_unmeasured;
    let units = exp.units.as_ref().ok_or_else(|| Error::NotFound {
        path: exp.dir.join("units.parquet"),
        fix:
            "`need` adds up unit tokens per block: add a units table (unit, block, tokens[, rank])"
                .into(),
    })?;
    let paired = Paired::new(exp, CaseSet::Main);
    let mut warnings = Vec::new();

    // Units shown removable by a measured arm within their block (verdicts are the point rule,
    // so any bootstrap count gives the same ones).
    let verdicts = sweep;
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
    // Units a needed joint cut forced back to needed (unit → the cut that did it).
    let mut forced: BTreeMap<String, ForcedUnit> = BTreeMap::new();
    let rule_needs = |case: usize, unit: usize, removable_units: &BTreeMap<String, String>| {
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

    // Marginal is not joint (see the module doc): a measured cut S whose units `need` drops
    // together for some cases C_S must not be needed on those cases.
    let m = &exp.results.matrix;
    let threshold = exp.manifest.threshold_drop;
    let unit_index = |name: &str| units.index.get(name).copied();
    let own_drop = |unit: &str| {
        verdicts
            .arms
            .iter()
            .find(|a| a.removed.len() == 1 && a.removed[0] == unit)
            .map_or(f64::NEG_INFINITY, |a| a.drop)
    };
    let dropped = |case: usize,
                   unit: usize,
                   removable_units: &BTreeMap<String, String>,
                   forced: &BTreeMap<String, ForcedUnit>| {
        !forced.contains_key(&units.specs[unit].unit) && !rule_needs(case, unit, removable_units)
    };
    // (arm label, its units, its drop over the cases where need drops all of them)
    let contradictions = |removable_units: &BTreeMap<String, String>,
                          forced: &BTreeMap<String, ForcedUnit>| {
        let mut found: Vec<(String, Vec<String>, f64)> = Vec::new();
        for arm in verdicts.arms.iter().filter(|a| !a.removed.is_empty()) {
            let Some(ids) = arm
                .removed
                .iter()
                .map(|u| unit_index(u))
                .collect::<Option<Vec<usize>>>()
            else {
                continue;
            };
            let Some(a) = exp.results.arms.iter().position(|l| *l == arm.arm) else {
                continue;
            };
            let p = paired.arm(m, a);
            let on: Vec<f64> = p
                .pos
                .iter()
                .zip(&p.drop)
                .filter(|(pos, _)| {
                    let c = paired.cases[**pos];
                    ids.iter().all(|&u| dropped(c, u, removable_units, forced))
                })
                .map(|(_, d)| *d)
                .collect();
            if !on.is_empty() {
                let drop = moments::mean(&on);
                if drop >= threshold {
                    found.push((arm.arm.clone(), arm.removed.clone(), drop));
                }
            }
        }
        // The most specific evidence first: fewest units, then the largest drop, then the label.
        found.sort_by(|x, y| {
            x.1.len()
                .cmp(&y.1.len())
                .then(y.2.total_cmp(&x.2))
                .then(x.0.cmp(&y.0))
        });
        found
    };
    while let Some((cut, removed, cut_drop)) =
        contradictions(&removable_units, &forced).into_iter().next()
    {
        let unit = removed
            .iter()
            .filter(|u| !forced.contains_key(*u))
            .max_by(|a, b| own_drop(a).total_cmp(&own_drop(b)).then(b.cmp(a)))
            .cloned()
            .unwrap_or_default();
        warnings.push(format!(
            "the measured cut \"{cut}\" loses {cut_drop:.4} on the cases where need drops all its units, at or above the threshold: {unit} is counted as needed"
        ));
        removable_units.remove(&unit);
        forced.insert(
            unit.clone(),
            ForcedUnit {
                unit,
                cut,
                cut_drop,
            },
        );
    }
    let jointly: std::collections::BTreeSet<String> = (0..units.specs.len())
        .filter(|&u| {
            paired
                .cases
                .iter()
                .any(|&c| dropped(c, u, &removable_units, &forced))
        })
        .map(|u| units.specs[u].unit.clone())
        .collect();
    let joint_cut_measured = jointly.is_empty()
        || verdicts.arms.iter().any(|a| {
            a.removed.len() == jointly.len() && a.removed.iter().all(|u| jointly.contains(u))
        });
    if !joint_cut_measured {
        warnings.push(format!(
            "no measured arm removes exactly the {} units need drops ({}); the fraction assumes they can go together",
            jointly.len(),
            jointly.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    let needed_of = |case: usize, unit: usize| -> bool {
        forced.contains_key(&units.specs[unit].unit) || rule_needs(case, unit, &removable_units)
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
        let (num, _) = survey::post_stratified(&needed_case, &p.stratum, &p.share, None);
        let (den, _) = survey::post_stratified(&total_case, &p.stratum, &p.share, None);
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
        jointly_removable: jointly.into_iter().collect(),
        forced_needed: forced.into_values().collect(),
        joint_cut_measured,
        cases: paired.cases.len(),
        unmeasured_share: production.map(|p| p.unmeasured_share),
        warnings,
    })
}
