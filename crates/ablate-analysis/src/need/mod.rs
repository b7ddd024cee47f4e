//! `ablate need`: the needed context fraction (seed 000).
//!
//! Per main-set case i, needed tokens = Σ over blocks of the tokens its rule keeps:
//! - `always`: every unit of the block;
//! - `needed_units`: the block's units except those removed by a measured arm, within the block,
//!   whose sweep verdict is removable-on-this-set **and confident** (family-wise across the arms
//!   compared, as the sweep judges it: one verdict per arm everywhere);
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
//! `value_point` is the same fraction with the point verdicts (any removable-on-this-set arm),
//! for comparison: what the figure would be if inconclusive arms were taken at face value.
//!
//! Marginal is not joint (seed 000): what `need` drops must be jointly removable. Let R be the
//! units `need` drops for some case. For a measured cut S ⊆ R, let C_S be the main-set cases for
//! which `need` drops every unit of S (every case for a needed_units block; for
//! through_gold_rank or when: rules, the cases the rule drops them for). The cut contradicts
//! `need` when its mean drop over C_S is at or above threshold_drop. Then `need` restores (counts
//! as needed for every case) the set of units H with the fewest tokens that leaves no
//! contradicting cut inside R − H: a weighted hitting set of the contradicting cuts, found exactly
//! by branch and bound over up to [`EXACT_UNITS`] candidate units and greedily (most cuts hit per
//! token) beyond; ties go to the unit whose own arm has the larger lower confidence bound (more
//! evidence it is needed). Restoring can shrink some C_S, so the check repeats until no cut
//! contradicts. `restore_method` says which search ran. A cut that removes a unit `need` always
//! keeps has an empty C_S and says nothing.
//!
//! Restoring the unit with the largest own drop, the rule before this one, was wrong twice: on
//! the demo it restored passages/rank3 (1,940 tokens) where few_shot/03 (196) resolves every
//! contradiction, and when units B and C carry the same fact and A is irrelevant, the needed cut
//! A+B+C sent back A (a noise loss gave it the largest own drop) and left B and C "jointly
//! removable". No rule can see that B+C is needed without measuring it: `joint_cut_measured`
//! says whether one measured arm removes exactly what `need` drops, and when it does not, the
//! headline says the fraction assumes an untested joint cut, and the decision names the arm to
//! run.

mod rules;
use rules::{Contradiction, Dropping, Rules, UnitFlags, hitting_set};
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::analysis::paired::{CaseSet, Paired};
use crate::analysis::reweight;
use crate::analysis::sweep::{SweepArm, SweepOutput};
use crate::analysis::vocab::{Confidence, Verdict};
use crate::error::{Error, Result};
use crate::io::{Experiment, NeedRule, Units};
use crate::stats::moments::{self, Neumaier};
use crate::stats::survey;

/// The note attached to an oracle fraction.
pub const ORACLE_NOTE: &str =
    "passage need computed from labelled gold_rank; not available at serve time";

/// Most candidate units the restore step searches exactly (branch and bound); beyond, greedily.
pub const EXACT_UNITS: usize = 25;

/// Needed and total tokens of one block.
#[derive(Debug, Clone, Serialize)]
pub struct BlockNeed {
    /// Mean needed tokens per case.
    pub needed_tokens_mean: f64,
    /// Mean tokens sent per case.
    pub total_tokens_mean: f64,
    /// The rule used.
    pub rule: String,
    /// needed_tokens_mean / total_tokens_mean: the block's needed share (null when it sends no
    /// tokens).
    pub value: Option<f64>,
}

/// A unit that a needed joint cut sent back to needed.
#[derive(Debug, Clone, Serialize)]
pub struct ForcedUnit {
    /// The unit.
    pub unit: String,
    /// A measured cut of units need dropped together that was needed, and that restoring this
    /// unit resolves (the one with the largest drop).
    pub cut: String,
    /// That cut's mean drop over the cases where need drops all its units (≥ threshold_drop).
    pub cut_drop: f64,
    /// Mean tokens per request the unit brings back: its tokens in each case where need drops
    /// it (after `when:` rules and `case_units`), over the cases; what its restoring costs.
    pub tokens: f64,
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
    /// The fraction with the point verdicts (any removable-on-this-set arm, confident or not),
    /// for comparison with `value`.
    pub value_point: f64,
    /// True when some need comes from gold labels (an upper bound on deployable savings).
    pub oracle: bool,
    /// Why the fraction is an oracle figure (null when it is not).
    pub oracle_note: Option<String>,
    /// Per block.
    pub by_block: BTreeMap<String, BlockNeed>,
    /// Units of `needed_units` blocks judged removable (a confidently removable measured arm
    /// within the block), with the arm that showed it.
    pub removable_units: BTreeMap<String, String>,
    /// Units `need` drops for at least one case, after the joint-cut check.
    pub jointly_removable: Vec<String>,
    /// Units restored to needed because measured cuts of units need drops together were needed
    /// on the cases where it drops them (the fewest tokens that resolve every such cut).
    pub forced_needed: Vec<ForcedUnit>,
    /// How the restored set was found: `exact` (branch and bound), `greedy`, or `none` when no
    /// cut contradicted.
    pub restore_method: &'static str,
    /// Whether one measured arm removes exactly `jointly_removable` (always true when it is
    /// empty). When false the fraction rests on the untested assumption that those units can go
    /// together.
    pub joint_cut_measured: bool,
    /// One line: the fraction, and what it assumes.
    pub headline: String,
    /// Main-set cases used.
    pub cases: usize,
    /// Production share with no eval case, left out of value_production.
    pub unmeasured_share: Option<f64>,
    /// Notes.
    pub warnings: Vec<crate::warning::Warning>,
}

/// Settings of `ablate need`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NeedOptions {
    /// Leave production strata with no eval case out of `value_production` instead of failing.
    pub allow_unmeasured: bool,
}

/// Whether an arm's sweep verdict lets `need` drop its units: removable-on-this-set, and
/// confident unless only the point verdict is asked for.
fn shows_removable(arm: &SweepArm, point_only: bool) -> bool {
    arm.verdict == Verdict::Removable && (point_only || arm.confidence == Confidence::Confident)
}

/// Units of `needed_units` blocks that a measured arm, removing units of that block only, shows
/// removable (see [`shows_removable`]); each with the first such arm.
fn removable_units(
    exp: &Experiment,
    units: &Units,
    sweep: &SweepOutput,
    point_only: bool,
) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for arm in sweep.arms.iter().filter(|a| shows_removable(a, point_only)) {
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
                out.entry(u.clone()).or_insert_with(|| arm.arm.clone());
            }
        }
    }
    out
}

/// Per-case unit tokens: `case_units` where present, `units.tokens` elsewhere; with a warning
/// when case_units misses some (case, unit) pairs of the main set.
fn unit_tokens(
    exp: &Experiment,
    units: &Units,
    paired: &Paired,
) -> (Vec<Vec<f64>>, Option<crate::warning::Warning>) {
    let mut tokens: Vec<Vec<f64>> =
        vec![units.specs.iter().map(|u| u.tokens).collect(); exp.cases.len()];
    let Some(cu) = &exp.case_units else {
        return (tokens, None);
    };
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
    let warning = (missing > 0).then(|| {
        crate::warning::Warning::new(
            "need.case_units_missing",
            format!(
            "{missing} (case, unit) pairs are missing from case_units; the unit's mean tokens fill them"
        )
        )
    });
    (tokens, warning)
}

/// The fraction for one set of removable units: what need drops per case after the joint-cut
/// check.
struct Fraction {
    needed_case: Vec<f64>,
    total_case: Vec<f64>,
    block_needed: Vec<f64>,
    block_total: Vec<f64>,
    removable: BTreeMap<String, String>,
    restored: Vec<ForcedUnit>,
    restore_method: &'static str,
    jointly: BTreeSet<String>,
    joint_cut_measured: bool,
}

impl Fraction {
    fn value(&self) -> f64 {
        let total = moments::mean(&self.total_case);
        if total > 0.0 {
            moments::mean(&self.needed_case) / total
        } else {
            f64::NAN
        }
    }
}

/// Runs the joint-cut check and adds up needed and total tokens per case.
fn fraction(
    d: &Dropping<'_>,
    tokens: &[Vec<f64>],
    mut removable: BTreeMap<String, String>,
) -> Fraction {
    let units = d.rules.units;
    // What restoring a unit costs is the tokens the fraction then counts as needed: its tokens
    // in each case where its rule drops it (after `when:` rules and `case_units`), not its mean
    // size. The dropping of a unit depends on its own rule only, so the cost is found once.
    let before = UnitFlags::new(units, &removable, &BTreeSet::new());
    let n_cases = d.paired.cases.len().max(1) as f64;
    let counted: Vec<f64> = (0..units.specs.len())
        .map(|u| {
            moments::sum(
                d.paired
                    .cases
                    .iter()
                    .filter(|&&c| d.dropped(c, u, &before))
                    .map(|&c| tokens[c][u]),
            ) / n_cases
        })
        .collect();
    let unit_tokens = |u: usize| counted[u];
    let evidence = |u: usize| {
        d.sweep
            .arms
            .iter()
            .find(|a| a.removed.len() == 1 && a.removed[0] == units.specs[u].unit)
            .and_then(|a| a.ci_family.map(|i| i.low))
            .unwrap_or(f64::NEG_INFINITY)
    };
    let mut restored = BTreeSet::new();
    let mut cuts: Vec<Contradiction> = Vec::new();
    let mut method = "none";
    loop {
        let found = d.contradictions(&UnitFlags::new(units, &removable, &restored));
        if found.is_empty() {
            break;
        }
        cuts.extend(found);
        let sets: Vec<Vec<usize>> = cuts.iter().map(|c| c.units.clone()).collect();
        let (h, how) = hitting_set(&sets, &unit_tokens, &evidence);
        if h == restored {
            // Nothing new to restore (cannot happen: every found cut avoids `restored`).
            break;
        }
        restored = h;
        method = how;
    }
    for &u in &restored {
        removable.remove(&units.specs[u].unit);
    }
    let forced = restored
        .iter()
        .map(|&u| {
            let cut = cuts
                .iter()
                .filter(|c| c.units.contains(&u))
                .max_by(|a, b| a.drop.total_cmp(&b.drop).then(b.arm.cmp(&a.arm)))
                .expect("a restored unit meets some cut");
            ForcedUnit {
                unit: units.specs[u].unit.clone(),
                cut: cut.arm.clone(),
                cut_drop: cut.drop,
                tokens: counted[u],
            }
        })
        .collect();
    let flags = UnitFlags::new(units, &removable, &restored);
    let needed_of = |case: usize, unit: usize| !d.dropped(case, unit, &flags);
    let jointly: BTreeSet<String> = (0..units.specs.len())
        .filter(|&u| d.paired.cases.iter().any(|&c| !needed_of(c, u)))
        .map(|u| units.specs[u].unit.clone())
        .collect();
    let joint_cut_measured = jointly.is_empty()
        || d.sweep.arms.iter().any(|a| {
            a.removed.len() == jointly.len() && a.removed.iter().all(|u| jointly.contains(u))
        });
    let blocks = units.blocks();
    let mut needed_case = Vec::with_capacity(d.paired.cases.len());
    let mut total_case = Vec::with_capacity(d.paired.cases.len());
    let mut block_needed = vec![Neumaier::default(); blocks.len()];
    let mut block_total = vec![Neumaier::default(); blocks.len()];
    let block_of: Vec<usize> = units
        .specs
        .iter()
        .map(|spec| blocks.iter().position(|x| *x == spec.block).unwrap_or(0))
        .collect();
    for &c in &d.paired.cases {
        let (mut need, mut total) = (Neumaier::default(), Neumaier::default());
        for (u, &b) in block_of.iter().enumerate() {
            let t = tokens[c][u];
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
    Fraction {
        needed_case,
        total_case,
        block_needed: block_needed.iter().map(Neumaier::total).collect(),
        block_total: block_total.iter().map(Neumaier::total).collect(),
        removable,
        restored: forced,
        restore_method: method,
        jointly,
        joint_cut_measured,
    }
}

/// Computes the needed context fraction.
///
/// # Errors
/// No units table; mix problems (as `reweight`), including production strata with no eval case
/// unless `allow_unmeasured`.
pub fn run(exp: &Experiment, sweep: &SweepOutput, opts: &NeedOptions) -> Result<NeedOutput> {
    let units = exp.units.as_ref().ok_or_else(|| Error::NotFound {
        path: exp.dir.join("units.parquet"),
        fix:
            "`need` adds up unit tokens per block: add a units table (unit, block, tokens[, rank])"
                .into(),
    })?;
    let paired = Paired::new(exp, CaseSet::Main);
    let (tokens, missing) = unit_tokens(exp, units, &paired);
    let mut warnings: Vec<crate::warning::Warning> = missing.into_iter().collect();
    let d = Dropping {
        rules: Rules::new(exp, units),
        paired: &paired,
        sweep,
    };
    for block in units.blocks() {
        if d.rules.of(&block).is_none() {
            warnings.push(crate::warning::Warning::new("need.block_without_rule", format!(
                "block \"{block}\" has no need rule in experiment.toml; counted as always needed"
            )));
        }
    }
    let f = fraction(&d, &tokens, removable_units(exp, units, sweep, false));
    let point = fraction(&d, &tokens, removable_units(exp, units, sweep, true));
    warnings.extend(fraction_warnings(&f));
    let n = paired.cases.len().max(1) as f64;
    let value = f.value();
    if !value.is_finite() {
        warnings.push(crate::warning::Warning::new(
            "need.no_tokens",
            "the units' tokens sum to 0 on every case, so the needed context fraction is undefined (not 0%): give each unit its token count in the units table",
        ));
    }

    let production = reweight::production_strata(exp, &paired, opts.allow_unmeasured)?;
    if let Some(p) = production.as_ref().filter(|p| p.unmeasured_share > 0.0) {
        warnings.push(crate::warning::Warning::new("need.unmeasured_traffic", format!(
            "{:.1}% of production traffic is in strata with no eval case; value_production leaves it out",
            100.0 * p.unmeasured_share
        )));
    }
    let value_production = production.as_ref().and_then(|p| {
        let (num, _) = survey::post_stratified(&f.needed_case, &p.stratum, &p.share, None);
        let (den, _) = survey::post_stratified(&f.total_case, &p.stratum, &p.share, None);
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
    let by_block = by_block(&d, &f, &units.blocks(), n);
    // A block of no tokens, when others have some (all at 0 is `need.no_tokens`).
    let empty: Vec<&str> = by_block
        .iter()
        .filter(|(_, b)| b.value.is_none())
        .map(|(name, _)| name.as_str())
        .collect();
    if value.is_finite() && !empty.is_empty() {
        warnings.push(crate::warning::Warning::new(
            "need.block_no_tokens",
            format!(
                "block(s) {} have units of 0 tokens on every case: their needed fraction is undefined (null); give the units their token counts, or leave the block out of the units table",
                empty.join(", ")
            ),
        ));
    }
    let headline = headline(&f, point.value(), oracle, sweep);
    Ok(NeedOutput {
        needed_tokens_mean: moments::mean(&f.needed_case),
        total_tokens_mean: moments::mean(&f.total_case),
        value,
        value_production,
        value_point: point.value(),
        oracle,
        oracle_note: oracle.then(|| ORACLE_NOTE.to_string()),
        by_block,
        removable_units: f.removable,
        jointly_removable: f.jointly.into_iter().collect(),
        forced_needed: f.restored,
        restore_method: f.restore_method,
        joint_cut_measured: f.joint_cut_measured,
        headline,
        cases: paired.cases.len(),
        unmeasured_share: production.map(|p| p.unmeasured_share),
        warnings,
    })
}

/// Warnings about the fraction: units restored to needed because their measured cut was
/// needed, and a joint cut that no arm measured.
fn fraction_warnings(f: &Fraction) -> Vec<crate::warning::Warning> {
    let mut warnings = Vec::new();
    if !f.restored.is_empty() {
        warnings.push(crate::warning::Warning::new("need.jointly_needed_restored", format!(
            "measured cuts of units need drops together were needed ({}): {} restored to needed, the fewest tokens that resolve them ({} search)",
            f.restored
                .iter()
                .map(|r| r.cut.as_str())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect::<Vec<_>>()
                .join(", "),
            f.restored
                .iter()
                .map(|r| format!("{} ({:.0} tokens)", r.unit, r.tokens))
                .collect::<Vec<_>>()
                .join(", "),
            f.restore_method
        )));
    }
    if !f.joint_cut_measured {
        warnings.push(crate::warning::Warning::new("need.joint_cut_unmeasured", format!(
            "no measured arm removes exactly the {} units need drops ({}); the fraction assumes they can go together",
            f.jointly.len(),
            f.jointly.iter().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    warnings
}

/// Per block, its mean needed and total tokens per case and its need rule.
fn by_block(
    d: &Dropping<'_>,
    f: &Fraction,
    blocks: &[String],
    n: f64,
) -> BTreeMap<String, BlockNeed> {
    blocks
        .iter()
        .enumerate()
        .map(|(b, name)| {
            let (needed, total) = (f.block_needed[b] / n, f.block_total[b] / n);
            (
                name.clone(),
                BlockNeed {
                    needed_tokens_mean: needed,
                    total_tokens_mean: total,
                    rule: d
                        .rules
                        .of(name)
                        .map_or("always (no rule given)".into(), |r| r.to_string()),
                    value: (total > 0.0).then(|| needed / total),
                },
            )
        })
        .collect()
}

/// The one-line answer: the needed fraction, whether it is an oracle figure or assumes an
/// untested joint cut, and the point-verdict figure beside it.
fn headline(f: &Fraction, point: f64, oracle: bool, sweep: &SweepOutput) -> String {
    let value = f.value();
    if !value.is_finite() {
        return "The needed context fraction is undefined: the units' tokens sum to 0".into();
    }
    format!(
        "{:.1}% of the context is needed{}{}; with the point verdicts it would be {:.1}%{}",
        100.0 * value,
        if oracle {
            " (an oracle figure, from gold labels)"
        } else {
            ""
        },
        if f.joint_cut_measured {
            String::new()
        } else {
            format!(
                ", assuming an untested joint cut of {} units ({})",
                f.jointly.len(),
                f.jointly.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        },
        100.0 * point,
        if sweep.family.procedure == "per-arm" {
            ""
        } else {
            " (need counts a unit removable only when its arm is confidently removable, family-wise)"
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cheapest_hitting_set_wins_and_ties_go_to_evidence() {
        // Cuts {0,1,2} and {1,3}: unit 1 alone meets both (10 tokens), against 0+3 (2+2).
        let tokens = |u: usize| [2.0, 10.0, 50.0, 2.0][u];
        let none = |_: usize| 0.0;
        let (h, how) = hitting_set(&[vec![0, 1, 2], vec![1, 3]], &tokens, &none);
        assert_eq!(
            (h.into_iter().collect::<Vec<_>>(), how),
            (vec![0, 3], "exact")
        );
        // Equal tokens: the unit with the larger lower bound goes back.
        let flat = |_: usize| 5.0;
        let evidence = |u: usize| [-0.02, 0.01, -0.05][u];
        let (h, _) = hitting_set(&[vec![0, 1, 2]], &flat, &evidence);
        assert_eq!(h.into_iter().collect::<Vec<_>>(), vec![1]);
        // Greedy beyond the exact limit still meets every cut.
        let many: Vec<Vec<usize>> = (0..30).map(|i| vec![i, (i + 1) % 30]).collect();
        let (h, how) = hitting_set(&many, &flat, &none);
        assert_eq!(how, "greedy");
        assert!(many.iter().all(|c| c.iter().any(|u| h.contains(u))));
        assert!(h.len() <= 16, "{}", h.len());
    }
}
