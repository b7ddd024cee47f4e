//! `ablate watch`: every arm's sequence on the table as it stands, and the decisions to record.

use std::collections::BTreeMap;

use super::{
    ArmSequence, Seeded, SequentialOptions, State, WatchOutput, arm_columns, check_bounds,
    recorded_repeats, settings,
};
use crate::analysis::interval::Interval;
use crate::error::Result;
use crate::io::Experiment;
use crate::io::watch_state::{Decided, RecordedDecision, STATE_FILE, StateFile, WatchSettings};
use crate::stats::betting::{self, ThresholdTests};
use crate::stats::estimate::CiMethod;
use crate::stats::moments;

/// Follows every arm's sequence on the table as it stands.
///
/// # Errors
/// A score or a case's mean score outside [score_min, score_max]; α outside (0, 1); a recorded decision of this
/// experiment at more units than its set has.
pub fn watch(
    exp: &Experiment,
    opts: &SequentialOptions,
    state: Option<&StateFile>,
) -> Result<WatchOutput> {
    check_bounds(exp)?;
    let arms = arm_columns(exp);
    let alpha_arm = opts.alpha / arms.len().max(1) as f64;
    let mut key = settings(exp, opts);
    let set = Seeded::new(exp, opts.seed);
    // Under --reopen the recorded decisions (and the repeats they were made at) are not used,
    // but the recorded order is: the tests decide again on the sequence they were reading.
    let decisions_state = state.filter(|_| !opts.reopen);
    let repeats_warning = match opts.repeats {
        None => recorded_repeats(exp, &mut key, decisions_state, &set),
        Some(_) => None,
    };
    let repeats = key.repeats;
    let order = set.order(state, &key);
    let (units, clustered) = (&order.units, order.clustered);
    let unit_name = if clustered { "cluster" } else { "case" };
    // The decisions recorded under these settings, or, when cases were added since, under the
    // entry whose order this watch continues (they were made on the units it still reads first).
    let under = order.continues.as_ref().map_or(&key, |(s, _)| s);
    let recorded = decisions_state.and_then(|f| f.decisions_for(under));
    if let (Some(file), Some(recorded)) = (decisions_state, recorded) {
        check_recorded(exp, file, under, recorded, units.len(), unit_name)?;
    }
    let continued = order.continues.as_ref().map(|(s, _)| s);
    let mut warnings =
        decisions_state.map_or_else(Vec::new, |f| state_warnings(f, &key, continued));
    warnings.extend(repeats_warning);
    if let Some((_, held)) = &order.continues {
        let decided = (!opts.reopen).then(|| recorded.map_or(0, BTreeMap::len));
        warnings.extend(cases_added(units, *held, unit_name, decided));
    }
    let max_unit_cases = units.iter().map(Vec::len).max().unwrap_or(1);
    warnings.extend(large_cluster(units, clustered));
    let walk = Walk {
        exp,
        units,
        repeats,
        alpha: alpha_arm,
        max_unit_cases,
    };
    let mut out = Vec::with_capacity(arms.len());
    let (mut waiting_max, mut waiting_arms) = (0usize, 0usize);
    for (label, a) in &arms {
        let (mut seq, waiting) = walk.arm(label, *a);
        if waiting > 0 {
            waiting_max = waiting_max.max(waiting);
            waiting_arms += 1;
        }
        if let Some(r) = recorded.and_then(|r| r.get(&seq.arm)) {
            warnings.extend(keep_recorded(&mut seq, r, 1.0 - alpha_arm));
        }
        if seq.state == State::Continue && seq.spread_unknown {
            warnings.push(crate::warning::Warning::new("watch.no_projection", format!(
                "{}: {} {unit_name}{} read, {}: how many more it needs cannot be projected (projected_units and units_still_needed are undefined, null); read more {unit_name}s",
                seq.arm,
                seq.units,
                if seq.units == 1 { "" } else { "s" },
                if seq.units < 2 {
                    "too few to show how units spread"
                } else {
                    "every one with the same drop, so their spread is unknown (not zero)"
                },
            )));
        } else if seq.state == State::Continue && seq.units > 0 {
            let beyond = match seq.projected_units {
                Some(p) if p > units.len() as u64 => {
                    Some(format!("about {}", crate::text::thousands(p as f64)))
                }
                None => Some(format!(
                    "more than {}",
                    crate::text::thousands(projection_cap(units.len()) as f64)
                )),
                Some(_) => None,
            };
            if let Some(beyond) = beyond {
                warnings.push(crate::warning::Warning::new("watch.set_too_small", format!(
                    "{}: projected to need {beyond} {}s, more than the {} in the set; at this drop the set cannot settle it",
                    seq.arm,
                    unit_name,
                    crate::text::thousands(units.len() as f64)
                )));
            }
        }
        out.push(seq);
    }
    if waiting_arms > 0 {
        warnings.push(crate::warning::Warning::new("watch.incomplete_units_waiting", format!(
            "in {waiting_arms} arms, complete {unit}s (up to {waiting_max}) lie past the first incomplete one in the order and wait for it: a sequence reads its {unit}s in that order only, so that every look extends the same sequence. `ablate next` schedules the gaps first",
            unit = unit_name
        )));
    }
    Ok(WatchOutput {
        method: METHOD,
        unit: unit_name,
        threshold_drop: exp.manifest.threshold_drop,
        alpha: opts.alpha,
        alpha_per_arm: alpha_arm,
        seed: opts.seed,
        repeats,
        score_min: exp.manifest.score_min,
        score_max: exp.manifest.score_max,
        units_available: units.len(),
        calls_made: main_calls(exp),
        arms: out,
        warnings,
        settings: key,
        order,
    })
}

/// The note that cases were added since the last watch under these settings: the new units
/// follow the `held` ones each arm's tests were reading, and `decided` recorded decisions stand.
/// None when no main-set unit was added (stress cases only, which `watch` does not read).
/// `decided` is None under --reopen, which decides every arm again.
fn cases_added(
    units: &[Vec<usize>],
    held: usize,
    unit_name: &str,
    decided: Option<usize>,
) -> Option<crate::warning::Warning> {
    let new = units.get(held..).filter(|n| !n.is_empty())?;
    let cases: usize = new.iter().map(Vec::len).sum();
    let added = if unit_name == "case" {
        format!("{} cases", crate::text::thousands(cases as f64))
    } else {
        format!(
            "{} {unit_name}s ({} cases)",
            crate::text::thousands(new.len() as f64),
            crate::text::thousands(cases as f64)
        )
    };
    let decisions = match decided {
        Some(n) => format!("the {n} recorded decisions stand (made on the cases then in the set)"),
        None => "every arm is decided again on it (--reopen)".to_string(),
    };
    Some(crate::warning::Warning::new(
        "watch.cases_added",
        format!(
            "{added} were added since the last watch under these settings: each arm's tests read them after the {} {unit_name}s they were reading, in the seeded order, so every sequence continues and {decisions}. New cases of another kind (a new slice) belong in a run of their own",
            crate::text::thousands(held as f64),
        ),
    ))
}

/// The entry to record for a watch: its settings, its decisions and the order its tests read
/// the units in (none when no arm read a unit and the order is not a recorded one: nothing to
/// continue).
pub fn recorded_run(w: &WatchOutput) -> crate::io::watch_state::Run {
    let read = w.order.from_state || w.arms.iter().any(|a| a.units > 0 || a.recorded);
    crate::io::watch_state::Run {
        settings: w.settings.clone(),
        decisions: decisions(w),
        order: read.then(|| w.order.keys.clone()),
    }
}

/// Refuses a recorded decision of this experiment that its data cannot have made: at no unit or
/// at more units than the set has, or with bounds outside the drop's range [−span, span].
fn check_recorded(
    exp: &Experiment,
    file: &StateFile,
    key: &WatchSettings,
    recorded: &BTreeMap<String, RecordedDecision>,
    units: usize,
    unit_name: &str,
) -> Result<()> {
    let span = exp.manifest.score_max - exp.manifest.score_min;
    let run = file
        .runs
        .iter()
        .position(|r| &r.settings == key)
        .unwrap_or(0);
    for (arm, d) in recorded {
        let problem = if d.units == 0 || d.units > units {
            format!(
                "is decided at {} {unit_name}s, but the set has {units}",
                d.units
            )
        } else if !(d.lower >= -span && d.upper <= span) {
            format!(
                "has bounds [{}, {}] outside [−{span}, {span}], the range a drop can take",
                d.lower, d.upper
            )
        } else {
            continue;
        };
        return Err(crate::io::watch_state::invalid_entry(
            &exp.dir.join(STATE_FILE),
            run,
            arm,
            &problem,
        ));
    }
    Ok(())
}

/// The longest projection `watch` makes: 100 times the set's units (at least 10,000); an arm
/// projected past it is reported as needing more than this.
fn projection_cap(units: usize) -> u64 {
    (units as u64).saturating_mul(100).max(10_000)
}

/// What `watch` reports as its method.
pub const METHOD: &str = "two one-sided betting tests at the threshold on each unit's case-weighted drop (hedged capital with plug-in bets, Waudby-Smith & Ramdas 2024), each arm's pair at α/K (Bonferroni); the interval inverts the two tests";

/// A cluster this many times the mean cluster's size makes the tests' bound (and so their bets)
/// that much coarser: warned about.
const LARGE_CLUSTER_RATIO: f64 = 3.0;

/// A warning when the largest cluster dwarfs the mean one: the tests bound each cluster's total
/// by the largest cluster's, so one huge cluster slows every decision.
fn large_cluster(units: &[Vec<usize>], clustered: bool) -> Option<crate::warning::Warning> {
    let largest = units.iter().map(Vec::len).max()?;
    let mean = units.iter().map(Vec::len).sum::<usize>() as f64 / units.len() as f64;
    (clustered && largest as f64 > LARGE_CLUSTER_RATIO * mean).then(|| {
        crate::warning::Warning::new("watch.large_cluster", format!(
            "the largest cluster has {largest} cases, {:.1}× the mean cluster ({mean:.1}): the tests bound every cluster's total drop by the largest one's, so their bets are that much smaller and decisions come later. Split very large clusters if they are not one unit of dependence",
            largest as f64 / mean
        ))
    })
}

/// Warnings about the state file: written by an ablate that did not key its decisions, or
/// holding decisions made under other settings.
fn state_warnings(
    file: &StateFile,
    key: &WatchSettings,
    continued: Option<&WatchSettings>,
) -> Vec<crate::warning::Warning> {
    let mut warnings = Vec::new();
    if file.legacy {
        warnings.push(crate::warning::Warning::new("watch.legacy_state", format!(
            "{STATE_FILE} was written by an earlier ablate that did not record the confidence level, repeats and arms of its decisions, so they are not used; this run records its own"
        )));
    }
    let elsewhere = file.other_experiments(key, continued);
    if elsewhere > 0 {
        warnings.push(crate::warning::Warning::new("watch.other_experiment", format!(
            "{STATE_FILE} holds {elsewhere} entries of tests run on another experiment (other cases or arms: an arm added, a case removed or moved to another cluster, a new cluster larger than any watched before, or the folder replaced by `simulate --out` or `import --out`), or by an ablate that did not record which; this run cannot continue them, so their decisions are set aside and every arm's tests start afresh on the seeded order: not used, and kept in the file as they are. This run records its own; move the file away to discard them"
        )));
    }
    for other in file.others(key) {
        warnings.push(crate::warning::Warning::new("watch.other_settings", format!(
            "{STATE_FILE} also holds decisions made under other settings ({}); this run ({}) neither uses nor changes them",
            other.describe(),
            key.describe()
        )));
    }
    warnings
}

/// One arm's walk along the seeded unit order.
struct Walk<'a> {
    exp: &'a Experiment,
    units: &'a [Vec<usize>],
    /// Repeats a cell needs to count as complete.
    repeats: u32,
    /// The per-arm error rate α/K.
    alpha: f64,
    /// The most cases a unit has (1 without clusters): the tests' bound.
    max_unit_cases: usize,
}

impl Walk<'_> {
    /// Whether every case of `unit` has its repeats on the baseline and on arm `a`.
    fn complete(&self, unit: &[usize], a: Option<usize>) -> bool {
        let m = &self.exp.results.matrix;
        let base = self.exp.baseline_index();
        let done = |c: usize, a: usize| m.repeats[m.cell(c, a)] >= self.repeats;
        a.is_some_and(|a| unit.iter().all(|&c| done(c, base) && done(c, a)))
    }

    /// The arm's tests: each complete unit in order adds its paired drops' sum S and its number
    /// of cases n to the two one-sided betting tests at the threshold
    /// ([`crate::stats::betting::ThresholdTests`]); the arm is needed once "drop ≤ thr" is
    /// rejected, removable once "drop ≥ thr" is. Stops at the first incomplete unit, and returns
    /// the complete units waiting past it. The drop shown is the case-weighted mean ΣS/Σn, with
    /// the interval the two tests give when inverted.
    fn arm(&self, label: &str, a: Option<usize>) -> (ArmSequence, usize) {
        let m = &self.exp.results.matrix;
        let base = self.exp.baseline_index();
        let thr = self.exp.manifest.threshold_drop;
        let span = self.exp.manifest.score_max - self.exp.manifest.score_min;
        let mut tests = ThresholdTests::new(thr, span, self.max_unit_cases, self.alpha);
        let mut read: Vec<(f64, usize)> = Vec::new();
        let (mut state, mut waiting) = (State::Continue, 0);
        for (u, unit) in self.units.iter().enumerate() {
            let Some(a) = a.filter(|_| self.complete(unit, a)) else {
                waiting = self.units[u..]
                    .iter()
                    .filter(|x| self.complete(x, a))
                    .count();
                break;
            };
            let sum = moments::sum(
                unit.iter()
                    .map(|&c| m.mean[m.cell(c, base)] - m.mean[m.cell(c, a)]),
            );
            tests.push(sum, unit.len());
            read.push((sum, unit.len()));
            if tests.needed() {
                state = State::Needed;
            } else if tests.removable() {
                state = State::Removable;
            }
            if state != State::Continue {
                break;
            }
        }
        let used = read.len();
        let cases: usize = read.iter().map(|r| r.1).sum();
        let drop = (cases > 0).then(|| moments::sum(read.iter().map(|r| r.0)) / cases as f64);
        let (low, high) = betting::drop_interval(&read, span, self.max_unit_cases, self.alpha);
        let (p_needed, p_removable) = tests.p_values();
        // One unit, or units that all dropped alike, say nothing of how the units to come
        // spread: no projection from them (as variance's cases_needed).
        let unit_drop = |&(s, n): &(f64, usize)| s / n as f64;
        let spread_unknown =
            read.len() < 2 || read.iter().all(|r| unit_drop(r) == unit_drop(&read[0]));
        let projected_units = match (state, drop) {
            (State::Continue, Some(_)) if !spread_unknown => self.projected_units(&tests, &read),
            _ => None,
        };
        let seq = ArmSequence {
            arm: label.to_string(),
            state,
            units: used,
            cases,
            drop,
            cs: (used > 0).then_some(Interval {
                low,
                high,
                level: 1.0 - self.alpha,
                method: CiMethod::ConfidenceSequence,
            }),
            p_needed: (used > 0).then_some(p_needed),
            p_removable: (used > 0).then_some(p_removable),
            decided_at: (state != State::Continue).then_some(used),
            projected_units,
            units_still_needed: projected_units.map(|p| p - used as u64),
            recorded: false,
            spread_unknown: state == State::Continue && used > 0 && spread_unknown,
        };
        (seq, waiting)
    }

    /// For an arm that continues: the units its leading test (needed when the drop so far is
    /// above the threshold, else removable) is projected to need in all, if the units to come
    /// are like the ones read ([`ThresholdTests::expected_units_like`]); at least one more than
    /// read.
    fn projected_units(&self, tests: &ThresholdTests, read: &[(f64, usize)]) -> Option<u64> {
        let cap = projection_cap(self.units.len());
        tests
            .expected_units_like(read, cap)
            .map(|p| p.max(read.len() as u64 + 1))
    }
}

/// Replaces the arm's sequence by its recorded decision (which stands unless `--reopen`), with a
/// warning when this table would decide otherwise.
fn keep_recorded(
    seq: &mut ArmSequence,
    r: &RecordedDecision,
    level: f64,
) -> Option<crate::warning::Warning> {
    let recorded_state = State::from_decided(r.state);
    let warning = (seq.state != recorded_state || seq.decided_at != Some(r.units)).then(|| {
        crate::warning::Warning::new("watch.decision_kept", format!(
            "{}: decided {} at {} units in an earlier run, but this table gives {}; the earlier decision stands (the data under it changed?). Run with --reopen to decide again from this table",
            seq.arm,
            r.state.label(),
            r.units,
            match seq.decided_at {
                Some(n) => format!("{} at {n} units", seq.state.label()),
                None => "no decision".into(),
            }
        ))
    });
    seq.state = recorded_state;
    seq.decided_at = Some(r.units);
    // The recorded bounds, even when this table gives the arm nothing to read now (its units
    // changed or went): a decision is never written back without them.
    seq.cs = Some(Interval {
        low: r.lower,
        high: r.upper,
        level,
        method: CiMethod::ConfidenceSequence,
    });
    seq.projected_units = None;
    seq.units_still_needed = None;
    seq.recorded = true;
    warning
}

/// The calls made on the main set (stress cases excluded): every repeat of every cell.
fn main_calls(exp: &Experiment) -> u64 {
    let m = &exp.results.matrix;
    (0..m.n_cases)
        .filter(|&c| !exp.cases.stress[c])
        .map(|c| {
            (0..m.n_arms)
                .map(|a| u64::from(m.repeats[m.cell(c, a)]))
                .sum::<u64>()
        })
        .sum()
}

/// The decisions of a watch, to record under its [`settings`].
pub fn decisions(w: &WatchOutput) -> BTreeMap<String, RecordedDecision> {
    w.arms
        .iter()
        .filter_map(|a| {
            let state = match a.state {
                State::Needed => Decided::Needed,
                State::Removable => Decided::Removable,
                State::Continue => return None,
            };
            Some((
                a.arm.clone(),
                RecordedDecision {
                    state,
                    units: a.decided_at?,
                    lower: a.cs?.low,
                    upper: a.cs?.high,
                },
            ))
        })
        .collect()
}
