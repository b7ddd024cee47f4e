//! The block rules of an experiment applied to (case, unit), and the units a rule forces to stay:
//! the smallest set whose removal would contradict a rule (a hitting set).

use std::collections::{BTreeMap, BTreeSet};

use super::EXACT_UNITS;
use crate::analysis::paired::Paired;
use crate::analysis::sweep::SweepOutput;
use crate::io::{Experiment, NeedRule, Units};
use crate::stats::moments;

/// The `need` rule the manifest gives `block`.
fn rule_of<'a>(exp: &'a Experiment, block: &str) -> Option<&'a NeedRule> {
    exp.manifest
        .blocks
        .iter()
        .find(|b| b.name == block)
        .map(|b| &b.need)
}

/// The block rules of an experiment, applied to (case, unit).
pub(super) struct Rules<'a> {
    pub(super) exp: &'a Experiment,
    pub(super) units: &'a Units,
    /// Each unit's block rule, found once (not a search by block name per case and unit).
    unit_rule: Vec<Option<&'a NeedRule>>,
    /// For a unit whose rule is `when`, the index in `holds` of its (column, value).
    when: Vec<Option<usize>>,
    /// Per distinct `when` (column, value) of the units' rules, whether each case has that
    /// value: found once, not a column lookup and a text comparison per case and unit.
    holds: Vec<Vec<bool>>,
}

impl<'a> Rules<'a> {
    /// The rules of `exp` for the units `units`.
    pub(super) fn new(exp: &'a Experiment, units: &'a Units) -> Self {
        let unit_rule: Vec<Option<&NeedRule>> =
            units.specs.iter().map(|s| rule_of(exp, &s.block)).collect();
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        let when = unit_rule
            .iter()
            .map(|rule| match rule {
                Some(NeedRule::When { column, value }) => {
                    let pair = (column.as_str(), value.as_str());
                    Some(pairs.iter().position(|p| *p == pair).unwrap_or_else(|| {
                        pairs.push(pair);
                        pairs.len() - 1
                    }))
                }
                _ => None,
            })
            .collect();
        let holds = pairs
            .iter()
            .map(|&(column, value)| match exp.cases.attributes.get(column) {
                Some(values) => values.iter().map(|v| v.as_deref() == Some(value)).collect(),
                None => vec![false; exp.cases.len()],
            })
            .collect();
        Rules {
            exp,
            units,
            unit_rule,
            when,
            holds,
        }
    }

    pub(super) fn of(&self, block: &str) -> Option<&NeedRule> {
        rule_of(self.exp, block)
    }

    /// Whether the block rule keeps `unit` for `case`, given the removable units.
    pub(super) fn needs(&self, case: usize, unit: usize, flags: &UnitFlags) -> bool {
        let spec = &self.units.specs[unit];
        match self.unit_rule[unit] {
            None | Some(NeedRule::Always) => true,
            Some(NeedRule::NeededUnits) => !flags.removable[unit],
            Some(NeedRule::ThroughGoldRank) => {
                let gold = self.exp.cases.gold_rank.as_ref().and_then(|g| g[case]);
                match (spec.rank, gold) {
                    (Some(rank), Some(g)) => rank <= g,
                    _ => true,
                }
            }
            Some(NeedRule::When { .. }) => self.when[unit].is_some_and(|i| self.holds[i][case]),
        }
    }
}

/// Per unit (by index into the units table): whether it is a removable unit of a
/// `needed_units` block, and whether the joint-cut check restored it. Made once per set of
/// removable units, so that the rules compare no unit name per case.
pub(super) struct UnitFlags {
    removable: Vec<bool>,
    restored: Vec<bool>,
}

impl UnitFlags {
    /// The flags of `units` for the removable units (by name) and the restored ones (by index).
    pub(super) fn new(
        units: &Units,
        removable: &BTreeMap<String, String>,
        restored: &BTreeSet<usize>,
    ) -> UnitFlags {
        UnitFlags {
            removable: units
                .specs
                .iter()
                .map(|s| removable.contains_key(&s.unit))
                .collect(),
            restored: (0..units.specs.len())
                .map(|u| restored.contains(&u))
                .collect(),
        }
    }
}

/// A measured cut that contradicts `need`: its units (indices), and its mean drop over the cases
/// where need drops them all.
#[derive(Debug, Clone)]
pub(super) struct Contradiction {
    pub(super) arm: String,
    pub(super) units: Vec<usize>,
    pub(super) drop: f64,
}

/// What `need` drops for each main-set case, and the cuts that contradict it.
pub(super) struct Dropping<'a> {
    pub(super) rules: Rules<'a>,
    pub(super) paired: &'a Paired,
    pub(super) sweep: &'a SweepOutput,
}

impl Dropping<'_> {
    /// Whether `need` drops `unit` for `case`: not restored, and its block rule lets it go.
    pub(super) fn dropped(&self, case: usize, unit: usize, flags: &UnitFlags) -> bool {
        !flags.restored[unit] && !self.rules.needs(case, unit, flags)
    }

    /// The units `need` drops for each paired case, as bits (unit u is bit u % 64 of the case's
    /// word u / 64; `words` words per case, at position × words): each (case, unit) is judged
    /// once, not once per measured cut that removes the unit.
    fn dropped_bits(&self, flags: &UnitFlags, words: usize) -> Vec<u64> {
        let units = self.rules.units.specs.len();
        let mut bits = vec![0u64; self.paired.cases.len() * words];
        for (case_bits, &c) in bits.chunks_exact_mut(words).zip(&self.paired.cases) {
            for u in (0..units).filter(|&u| self.dropped(c, u, flags)) {
                case_bits[u / 64] |= 1 << (u % 64);
            }
        }
        bits
    }

    /// The measured cuts whose mean drop, over the cases where need drops all their units, is at
    /// or above the threshold.
    pub(super) fn contradictions(&self, flags: &UnitFlags) -> Vec<Contradiction> {
        let exp = self.rules.exp;
        let m = &exp.results.matrix;
        let threshold = exp.manifest.threshold_drop;
        let words = self.rules.units.specs.len().div_ceil(64).max(1);
        let bits = self.dropped_bits(flags, words);
        let mut found = Vec::new();
        for arm in self.sweep.arms.iter().filter(|a| !a.removed.is_empty()) {
            let Some(ids) = arm
                .removed
                .iter()
                .map(|u| self.rules.units.index.get(u).copied())
                .collect::<Option<Vec<usize>>>()
            else {
                continue;
            };
            let Some(a) = exp.results.arm_index(&arm.arm) else {
                continue;
            };
            let p = self.paired.arm(m, a);
            // The cut's units as bits, laid out as each case's.
            let mut cut = vec![0u64; words];
            for &u in &ids {
                cut[u / 64] |= 1 << (u % 64);
            }
            let all_dropped = |pos: usize| {
                bits[pos * words..(pos + 1) * words]
                    .iter()
                    .zip(&cut)
                    .all(|(b, c)| b & c == *c)
            };
            let on: Vec<f64> = p
                .pos
                .iter()
                .zip(&p.drop)
                .filter(|(pos, _)| all_dropped(**pos))
                .map(|(_, d)| *d)
                .collect();
            if !on.is_empty() {
                let drop = moments::mean(&on);
                if drop >= threshold {
                    found.push(Contradiction {
                        arm: arm.arm.clone(),
                        units: ids,
                        drop,
                    });
                }
            }
        }
        found
    }
}

/// The set of units with the fewest tokens that meets every cut (each cut keeps at least one of
/// its units), exactly by branch and bound when at most [`EXACT_UNITS`] units are candidates,
/// else greedily by cuts met per token. Ties go to the larger `evidence` (the lower confidence
/// bound of the unit's own drop). Returns the set and the method.
pub(super) fn hitting_set(
    cuts: &[Vec<usize>],
    tokens: &dyn Fn(usize) -> f64,
    evidence: &dyn Fn(usize) -> f64,
) -> (BTreeSet<usize>, &'static str) {
    let candidates: BTreeSet<usize> = cuts.iter().flatten().copied().collect();
    if candidates.is_empty() {
        return (BTreeSet::new(), "none");
    }
    // Cost of a set: tokens first, then less evidence is worse (so more evidence wins ties).
    let cost = |set: &BTreeSet<usize>| -> (f64, f64) {
        (
            set.iter().map(|&u| tokens(u)).sum(),
            -set.iter().map(|&u| evidence(u).max(-1e9)).sum::<f64>(),
        )
    };
    let better =
        |a: (f64, f64), b: (f64, f64)| a.0 < b.0 - 1e-9 || (a.0 <= b.0 + 1e-9 && a.1 < b.1);
    if candidates.len() <= EXACT_UNITS {
        fn search(
            cuts: &[Vec<usize>],
            chosen: &mut BTreeSet<usize>,
            best: &mut Option<(BTreeSet<usize>, (f64, f64))>,
            cost: &dyn Fn(&BTreeSet<usize>) -> (f64, f64),
            better: &dyn Fn((f64, f64), (f64, f64)) -> bool,
            tokens: &dyn Fn(usize) -> f64,
        ) {
            let current = cost(chosen);
            if let Some((_, b)) = best
                && current.0 > b.0 + 1e-9
            {
                return;
            }
            let Some(open) = cuts.iter().find(|c| c.iter().all(|u| !chosen.contains(u))) else {
                if best.as_ref().is_none_or(|(_, b)| better(current, *b)) {
                    *best = Some((chosen.clone(), current));
                }
                return;
            };
            let mut order = open.clone();
            order.sort_by(|a, b| tokens(*a).total_cmp(&tokens(*b)).then(a.cmp(b)));
            for u in order {
                chosen.insert(u);
                search(cuts, chosen, best, cost, better, tokens);
                chosen.remove(&u);
            }
        }
        let mut best = None;
        search(
            cuts,
            &mut BTreeSet::new(),
            &mut best,
            &cost,
            &better,
            tokens,
        );
        return (best.map(|(s, _)| s).unwrap_or_default(), "exact");
    }
    let mut chosen = BTreeSet::new();
    while let Some(open) = Some(
        cuts.iter()
            .filter(|c| c.iter().all(|u| !chosen.contains(u)))
            .collect::<Vec<_>>(),
    )
    .filter(|o| !o.is_empty())
    {
        let pick = candidates
            .iter()
            .copied()
            .filter(|u| !chosen.contains(u))
            .max_by(|&a, &b| {
                let score = |u: usize| {
                    open.iter().filter(|c| c.contains(&u)).count() as f64 / tokens(u).max(1e-9)
                };
                score(a)
                    .total_cmp(&score(b))
                    .then(evidence(a).total_cmp(&evidence(b)))
                    .then(b.cmp(&a))
            })
            .expect("an open cut has a candidate unit");
        chosen.insert(pick);
    }
    (chosen, "greedy")
}
