//! Anytime-valid monitoring of a running ablation (`ablate watch`, `ablate next`, `watch
//! --replay`): stop paying for arms that are already decided.
//!
//! Each arm is decided by two one-sided sequential tests at the threshold
//! ([`crate::stats::betting::ThresholdTests`]): betting processes whose capital grows when the
//! drop is above the threshold ("drop ≤ thr" rejected: **needed**) or below it ("drop ≥ thr"
//! rejected: **removable**); an arm that neither test has rejected **continue**s. They are valid at
//! every sample size at once, so the analyst may look after every batch. The unit is the case, or
//! the cluster when cases have a `cluster` column; a unit contributes the sum of its cases' paired
//! drops minus threshold × its cases, so the quantity tested is the case-weighted mean drop that
//! `sweep` reports, whatever the cluster sizes. Units enter in one fixed order, a permutation of
//! the main set drawn from `--seed`, and an arm's tests read the longest prefix of that order
//! whose units are complete (every case with all R repeats in the arm and the baseline); so the
//! same table always gives the same decision. The drop shown is ΣS/Σn over the units read, and
//! its interval is the set of thresholds neither test rejects (coverage 1 − α/K).
//!
//! A decided arm stops: later units are not read, and a re-run on more data gives the same
//! decision. Decisions are also kept in `.ablate-watch.json` in the folder
//! ([`crate::io::watch_state`]), under the experiment and the settings that made them (the
//! experiment's cases and arms, seed, threshold, α, repeats, score range, arms): should the data
//! under a decision change (re-scored cases, a retried call), the recorded decision stands, with
//! a warning, until `--reopen`; decisions made on another experiment or under other settings are
//! never used. Each entry keeps its order too: when cases are added (the identity changes), a
//! watch under the same settings whose recorded units are all still there, with the same cases,
//! keeps that order and appends the new units ([`order_for`]), so every arm's tests continue and
//! the decisions stand. A new arm changes the family α is spent over, and starts afresh.
//!
//! Multiplicity: each arm's pair of tests runs at α/K (Bonferroni over the K arms other than the
//! baseline; α/2K each, since at a drop exactly on the threshold both nulls are true), so the
//! chance that any arm ever gets a wrong decision is at most α = 1 − confidence. Holm's step-down
//! would spend less, but with directional decisions it is proven only for independent statistics
//! (Shaffer 1980; Guo & Romano 2015), and every arm here is paired against the same baseline;
//! and a decision made at one level must not be undone by another arm's data.

use std::collections::BTreeMap;

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::analysis::Config;
use crate::error::{Error, Result};
use crate::io::Experiment;
use crate::io::watch_state::{Decided, Run, StateFile, WatchSettings};

mod next;
mod replay;
mod watch;

pub use next::{Call, MAX_BATCH_CALLS, NextOutput, continue_numbering, next};
pub use replay::{ReplayArm, ReplayOutput, replay};
pub use watch::{decisions, recorded_run, watch};

/// An arm's state in a sequential run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// The lower bound is at or above the threshold.
    Needed,
    /// The upper bound is below the threshold.
    Removable,
    /// Not decided yet.
    Continue,
}

impl State {
    /// The label printed and written.
    pub fn label(self) -> &'static str {
        match self {
            State::Needed => "needed",
            State::Removable => "removable",
            State::Continue => "continue",
        }
    }
}

/// Settings of a sequential run.
#[derive(Debug, Clone)]
pub struct SequentialOptions {
    /// Family-wise error rate α (1 − confidence).
    pub alpha: f64,
    /// Seed of the unit order.
    pub seed: u64,
    /// Repeats per (case, arm); default: the most any cell of the table has.
    pub repeats: Option<u32>,
    /// Ignore the decisions recorded in the folder.
    pub reopen: bool,
}

impl SequentialOptions {
    /// From the global settings: α = 1 − confidence, the order from the seed.
    ///
    /// α is rounded to 15 significant digits, the precision the confidence was written with:
    /// `1.0 - 0.95` is 0.050000000000000044 in binary floating point, and a script reading
    /// `alpha` should see the 0.05 the user asked for.
    pub fn from_config(cfg: &Config, repeats: Option<u32>, reopen: bool) -> SequentialOptions {
        SequentialOptions {
            alpha: complement(cfg.confidence),
            seed: cfg.seed,
            repeats,
            reopen,
        }
    }
}

/// 1 − `level`, rounded to 15 significant digits (f64 holds 15 exactly), so that the complement
/// of a decimal level is the decimal the user meant.
fn complement(level: f64) -> f64 {
    let alpha = 1.0 - level;
    format!("{alpha:.14e}").parse().unwrap_or(alpha)
}

/// One arm's sequence.
#[derive(Debug, Clone, Serialize)]
pub struct ArmSequence {
    /// Arm label.
    pub arm: String,
    /// needed, removable or continue.
    pub state: State,
    /// Units (cases, or clusters) in the sequence.
    pub units: usize,
    /// Cases in those units.
    pub cases: usize,
    /// Mean paired drop (baseline − arm) over the cases of those units; null before any.
    pub drop: Option<f64>,
    /// The anytime-valid interval of the drop: the thresholds neither test rejects, at level
    /// 1 − α/arms (`cs_low`, `cs_high`, `cs_level`, `cs_method` = `confidence-sequence`).
    #[serde(flatten, serialize_with = "crate::analysis::interval::cs")]
    pub cs: Option<crate::analysis::interval::Interval>,
    /// The anytime-valid p-value of "drop ≤ threshold" (its rejection: needed); null before any
    /// unit.
    pub p_needed: Option<f64>,
    /// The anytime-valid p-value of "drop ≥ threshold" (its rejection: removable).
    pub p_removable: Option<f64>,
    /// Units read when the arm was decided (null while it continues).
    pub decided_at: Option<usize>,
    /// For arms that continue: the units the leading test is projected to need in all, if the
    /// units to come are like those read (null when no unit is in; when fewer than two are, or
    /// every one read has the same drop, which leaves the spread of units to come unknown; or
    /// when the projection passes 100× the set's units, as it does for a drop on the threshold;
    /// a warning says which).
    pub projected_units: Option<u64>,
    /// projected_units − units.
    pub units_still_needed: Option<u64>,
    /// Whether the decision comes from `.ablate-watch.json` rather than this table.
    pub recorded: bool,
    /// Whether the units read so far leave the projection undefined (fewer than two, or every
    /// one with the same drop): `projected_units` is null for that reason, not for being beyond
    /// 100× the set. Not in the JSON (a warning says so).
    #[serde(skip)]
    pub spread_unknown: bool,
}

/// What `ablate watch` reports.
#[derive(Debug, Clone, Serialize)]
pub struct WatchOutput {
    /// The tests used.
    pub method: &'static str,
    /// case or cluster.
    pub unit: &'static str,
    /// The agreed threshold.
    pub threshold_drop: f64,
    /// Family-wise α.
    pub alpha: f64,
    /// Each arm's tests' level: α / arms.
    pub alpha_per_arm: f64,
    /// Seed of the unit order.
    pub seed: u64,
    /// Repeats per (case, arm) a unit needs to enter.
    pub repeats: u32,
    /// Score bounds (experiment.toml score_min, score_max).
    pub score_min: f64,
    /// Upper score bound.
    pub score_max: f64,
    /// Units in the main set.
    pub units_available: usize,
    /// Result rows (calls) in the table, main set.
    pub calls_made: u64,
    /// Every arm but the baseline.
    pub arms: Vec<ArmSequence>,
    /// Warnings.
    pub warnings: Vec<crate::warning::Warning>,
    /// The key the decisions are recorded under (not printed).
    #[serde(skip)]
    pub settings: WatchSettings,
    /// The units in the order the tests read them ([`Order`]; not printed): what `next`
    /// schedules from, and what is recorded.
    #[serde(skip)]
    pub order: Order,
}

/// The order an arm's tests read the main set's units in.
#[derive(Debug, Clone, Default)]
pub struct Order {
    /// The units, each a list of case indices.
    pub units: Vec<Vec<usize>>,
    /// Each unit's key ([`unit_key`]), as recorded.
    pub keys: Vec<String>,
    /// Whether the units are clusters (else single cases).
    pub clustered: bool,
    /// Whether the order is one recorded in the state (this experiment's, or the one continued),
    /// rather than the seeded order of the set: it is recorded again whether or not a unit was
    /// read, so that no later watch loses it.
    pub from_state: bool,
    /// When cases were added since the last watch under these settings: that watch's entry,
    /// whose order this one continues (its units first, as they were read, then the new ones),
    /// and how many units it held.
    pub continues: Option<(WatchSettings, usize)>,
}

/// The main set's units in the seeded order ([`unit_order`]), with their keys.
pub(super) struct Seeded {
    units: Vec<Vec<usize>>,
    keys: Vec<String>,
    /// Each key's position in `keys`.
    index: std::collections::HashMap<String, usize>,
    clustered: bool,
}

impl Seeded {
    /// The seeded order of `exp`'s main set under `seed`.
    pub(super) fn new(exp: &Experiment, seed: u64) -> Seeded {
        let (units, clustered) = unit_order(exp, seed);
        let keys: Vec<String> = units.iter().map(|u| unit_key(exp, u)).collect();
        let index = keys.iter().cloned().zip(0..).collect();
        Seeded {
            units,
            keys,
            index,
            clustered,
        }
    }

    /// Positions (into the seeded order) of a recorded order's units, when every one is here.
    fn positions(&self, order: &[String]) -> Option<Vec<usize>> {
        order.iter().map(|k| self.index.get(k).copied()).collect()
    }

    /// Whether a watch may continue `run`'s order on this set: every unit it lists is here with
    /// the same cases, and no unit added since has more cases than the largest it held. The
    /// tests bound each unit's total by the largest unit's cases; a larger new unit would change
    /// that bound, and with it every bet already made on the units read.
    pub(super) fn continues(&self, run: &Run) -> Option<Vec<usize>> {
        let first = self.positions(run.order.as_deref()?)?;
        let mut held = vec![false; self.units.len()];
        for &i in &first {
            held[i] = true;
        }
        let largest = |inside: bool| {
            (0..self.units.len())
                .filter(|&i| held[i] == inside)
                .map(|i| self.units[i].len())
                .max()
                .unwrap_or(0)
        };
        (largest(false) <= largest(true)).then_some(first)
    }

    /// The order with the units at `first` first, as listed, then the others in the seeded
    /// order.
    fn arranged(&self, first: &[usize]) -> (Vec<Vec<usize>>, Vec<String>) {
        let mut taken = vec![false; self.units.len()];
        for &i in first {
            taken[i] = true;
        }
        let rest = (0..self.units.len()).filter(|&i| !taken[i]);
        let all: Vec<usize> = first.iter().copied().chain(rest).collect();
        (
            all.iter().map(|&i| self.units[i].clone()).collect(),
            all.iter().map(|&i| self.keys[i].clone()).collect(),
        )
    }
}

/// The order a watch under `key` reads the units in:
/// - the order recorded under `key` when it holds exactly this set's units (a watch that
///   continued an earlier order after cases were added recorded the order it continued);
/// - else, when cases were added since a watch under the same settings (another identity, whose
///   recorded order's units are all still here with the same cases, and none added larger than
///   the largest it held: [`StateFile::predecessor`]), that order, then the new units in the
///   seeded order ([`unit_order`] restricted to them): every arm's tests continue the sequence
///   they read;
/// - else the seeded order of the set ([`unit_order`]).
pub fn order_for(
    exp: &Experiment,
    seed: u64,
    state: Option<&StateFile>,
    key: &WatchSettings,
) -> Order {
    Seeded::new(exp, seed).order(state, key)
}

impl Seeded {
    /// [`order_for`] on this set.
    pub(super) fn order(self, state: Option<&StateFile>, key: &WatchSettings) -> Order {
        let set = &self;
        let clustered = set.clustered;
        let recorded = |first: Vec<usize>, continues: Option<(WatchSettings, usize)>| {
            let (units, keys) = set.arranged(&first);
            Order {
                units,
                keys,
                clustered,
                from_state: true,
                continues,
            }
        };
        let own = state.and_then(|f| f.runs.iter().find(|r| r.settings == *key));
        if let Some(own) = own {
            if let Some(first) = own.order.as_deref().and_then(|o| set.positions(o))
                && first.len() == set.units.len()
            {
                return recorded(first, None);
            }
        } else if let Some(before) =
            state.and_then(|f| f.predecessor(key, |r| set.continues(r).is_some()))
            && let Some(first) = set.continues(before)
        {
            let held = first.len();
            return recorded(first, Some((before.settings.clone(), held)));
        }
        Order {
            units: self.units,
            keys: self.keys,
            clustered,
            from_state: false,
            continues: None,
        }
    }
}

/// A unit's key in a recorded order: the first 8 bytes (16 hex digits) of the SHA-256 of its
/// cases' ids, sorted, each length-prefixed. A unit that gains or loses a case gets another key,
/// so an order whose every key is still a unit's was read on the same units.
pub fn unit_key(exp: &Experiment, unit: &[usize]) -> String {
    use sha2::{Digest as _, Sha256};
    let mut ids: Vec<&str> = unit.iter().map(|&c| exp.cases.ids[c].as_str()).collect();
    ids.sort_unstable();
    let mut hash = Sha256::new();
    for id in ids {
        hash.update((id.len() as u64).to_le_bytes());
        hash.update(id.as_bytes());
    }
    crate::text::hex(&hash.finalize()[..8])
}

/// The units of the main set, in the seeded order: each a list of case indices.
pub fn unit_order(exp: &Experiment, seed: u64) -> (Vec<Vec<usize>>, bool) {
    let main: Vec<usize> = (0..exp.cases.ids.len())
        .filter(|&c| !exp.cases.stress[c])
        .collect();
    // Sorted before the shuffle (clusters by cluster id, cases by case id), so that the order
    // depends only on the seed and the ids, not on the order of the cases table's rows.
    let (mut units, clustered): (Vec<Vec<usize>>, bool) = match &exp.cases.cluster {
        Some(cluster) => {
            let mut by: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
            for &c in &main {
                by.entry(cluster[c].as_str()).or_default().push(c);
            }
            (by.into_values().collect(), true)
        }
        None => {
            let mut cases = main;
            cases.sort_by(|&a, &b| exp.cases.ids[a].cmp(&exp.cases.ids[b]));
            (cases.into_iter().map(|c| vec![c]).collect(), false)
        }
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    units.shuffle(&mut rng);
    (units, clustered)
}

/// The arms to follow, baseline excluded: the arms table's (in its order) when there is one, so
/// that arms not started yet are there with no units, else the results'; each with its column
/// in the matrix when it has results.
pub(super) fn arm_columns(exp: &Experiment) -> Vec<(String, Option<usize>)> {
    let base = exp.baseline_index();
    let labels: Vec<String> = match &exp.arms {
        Some(t) => {
            let mut l = t.labels();
            for a in &exp.results.arms {
                if !l.contains(a) {
                    l.push(a.clone());
                }
            }
            l
        }
        None => exp.results.arms.clone(),
    };
    labels
        .into_iter()
        .filter(|l| *l != exp.results.arms[base])
        .map(|l| {
            let idx = exp.results.arm_index(&l);
            (l, idx)
        })
        .collect()
}

/// The repeats a complete cell has: the option, else the most any main-set cell of the table has
/// (≥ 1; the stress slice, which `watch` does not read, may be run at other repeats).
pub(super) fn design_repeats(exp: &Experiment, opt: Option<u32>) -> u32 {
    opt.unwrap_or_else(|| main_cell_repeats(exp).max().unwrap_or(1).max(1))
}

/// The repeats of every (case, arm) cell of the main set (0 for a cell without rows): the cells
/// `watch` reads.
pub(super) fn main_cell_repeats(exp: &Experiment) -> impl Iterator<Item = u32> + '_ {
    let m = &exp.results.matrix;
    (0..m.n_cases)
        .filter(|&c| !exp.cases.stress[c])
        .flat_map(move |c| (0..m.n_arms).map(move |a| m.repeats[m.cell(c, a)]))
}

/// Checks every score read ([`crate::io::CaseMatrix::score_range`]) and every cell mean against
/// [score_min, score_max], and that the threshold lies strictly inside the drop's range (−span,
/// span), where a test of it can decide.
pub(super) fn check_bounds(exp: &Experiment) -> Result<()> {
    let m = &exp.results.matrix;
    let (lo, hi) = (exp.manifest.score_min, exp.manifest.score_max);
    let thr = exp.manifest.threshold_drop;
    if thr.is_nan() || thr.abs() >= hi - lo {
        return Err(Error::Usage(format!(
            "{}: threshold_drop {thr} is not inside (−{span}, {span}), the range a paired drop can take with scores in [score_min, score_max] = [{lo}, {hi}]; no data can decide against it: set a threshold inside that range",
            exp.manifest.path.display(),
            span = hi - lo
        )));
    }
    // A single score beyond the bounds (its case's mean may stay inside them) shows that a
    // case's mean can leave them.
    if let Some((a, b)) = m.score_range
        && (a < lo || b > hi)
    {
        return Err(Error::Usage(format!(
            "{}: a score of {} was read, outside [score_min, score_max] = [{lo}, {hi}]; the tests need the score's true bounds: set score_min and score_max in experiment.toml",
            exp.results.path.display(),
            if a < lo { a } else { b }
        )));
    }
    for c in 0..m.n_cases {
        for a in 0..m.n_arms {
            let cell = m.cell(c, a);
            if m.repeats[cell] > 0 && !(m.mean[cell] >= lo && m.mean[cell] <= hi) {
                return Err(Error::Usage(format!(
                    "{}: case {} in arm {} scores {} on average, outside [score_min, score_max] = [{lo}, {hi}]; the tests need the score's true bounds: set score_min and score_max in experiment.toml",
                    exp.results.path.display(),
                    exp.cases.ids[c],
                    exp.results.arms[a],
                    m.mean[cell]
                )));
            }
        }
    }
    Ok(())
}

/// The settings a decision of this run depends on besides the data (the key of its entry in
/// `.ablate-watch.json`): the experiment's identity, seed, threshold, α, repeats, score bounds
/// and the arms compared.
pub fn settings(exp: &Experiment, opts: &SequentialOptions) -> WatchSettings {
    let mut arms: Vec<String> = arm_columns(exp).into_iter().map(|(l, _)| l).collect();
    arms.sort();
    WatchSettings {
        experiment: Some(experiment_identity(exp, &arms)),
        seed: opts.seed,
        threshold_drop: exp.manifest.threshold_drop,
        alpha: opts.alpha,
        repeats: design_repeats(exp, opts.repeats),
        score_min: exp.manifest.score_min,
        score_max: exp.manifest.score_max,
        arms,
    }
}

/// The experiment a decision was made on: the SHA-256 (hex) of every case of the cases table
/// (its id, and its stress flag and cluster, which make the units), in id order, and of the
/// baseline and the arms compared. Never of the results, so that more calls (`next`, then
/// `import --into`) keep it; other cases or arms (`simulate --out` over the folder) change it.
pub fn experiment_identity(exp: &Experiment, arms: &[String]) -> String {
    use sha2::{Digest as _, Sha256};
    let mut hash = Sha256::new();
    // Each part length-prefixed, so that no two lists hash alike.
    let mut put = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    let cases = &exp.cases;
    let mut order: Vec<usize> = (0..cases.ids.len()).collect();
    order.sort_by(|&a, &b| cases.ids[a].cmp(&cases.ids[b]));
    put(b"cases");
    for c in order {
        put(cases.ids[c].as_bytes());
        put(&[u8::from(cases.stress[c])]);
        put(cases.cluster.as_ref().map_or(&b""[..], |k| k[c].as_bytes()));
    }
    put(b"baseline");
    put(exp.results.arms[exp.baseline_index()].as_bytes());
    put(b"arms");
    for a in arms {
        put(a.as_bytes());
    }
    crate::text::hex(&hash.finalize())
}

/// Without --repeats, the repeats default to the most any cell has; when this experiment's
/// decisions or order (or those of the experiment before cases were added, which this watch
/// continues: [`Seeded::continues`]) were recorded under the same settings with fewer (a retried call, a
/// row added since, or a new batch run with more repeats raised the most), `key` takes the
/// recorded repeats instead, so that the decisions stand and the extra repeats do not make every
/// unit incomplete. Returns the warning that says so.
pub(super) fn recorded_repeats(
    exp: &Experiment,
    key: &mut WatchSettings,
    state: Option<&StateFile>,
    set: &Seeded,
) -> Option<crate::warning::Warning> {
    let file = state?;
    // A run in progress is an entry with decisions or with an order (tests looked at, nothing
    // decided yet): either pins the repeats it read.
    let in_progress = |r: &&Run| !r.decisions.is_empty() || r.order.is_some();
    if file
        .runs
        .iter()
        .filter(in_progress)
        .any(|r| r.settings == *key)
    {
        return None;
    }
    let most = key.repeats;
    let recorded = file
        .runs
        .iter()
        .filter(in_progress)
        .filter(|r| r.settings.repeats < most)
        .filter(|r| {
            let at_most = WatchSettings {
                repeats: most,
                ..r.settings.clone()
            };
            // This experiment's, or one this watch continues after cases were added.
            at_most == *key || (key.same_but_cases(&at_most) && set.continues(r).is_some())
        })
        .map(|r| r.settings.repeats)
        .max()?;
    key.repeats = recorded;
    let m = &exp.results.matrix;
    let cells = m.repeats.iter().filter(|&&n| n > recorded).count();
    Some(crate::warning::Warning::new(
        "watch.extra_repeats",
        format!(
            "{cells} (case, arm) cells have more than {recorded} repeats (up to {most}: a retried call?); this experiment's decisions were recorded at {recorded} repeats, so a unit still needs {recorded} and they stand. The extra repeats are not scheduled or waited for (a cell's mean still reads every row it has); give --repeats {most} to watch at {most} repeats instead, without these decisions"
        ),
    ))
}

impl State {
    pub(super) fn from_decided(d: Decided) -> State {
        match d {
            Decided::Needed => State::Needed,
            Decided::Removable => State::Removable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::complement;

    #[test]
    fn alpha_is_the_decimal_the_confidence_was_written_as() {
        assert_eq!(complement(0.95), 0.05);
        assert_eq!(complement(0.99), 0.01);
        assert_eq!(complement(0.9), 0.1);
        // Close to 1 the relative precision is kept: no rounding to 0.
        let level = 1.0 - 1e-12;
        let exact = 1.0 - level;
        assert!((complement(level) - exact).abs() <= 1e-14 * exact);
    }
}
