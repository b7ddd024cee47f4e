//! The decisions `ablate watch` keeps between runs: `.ablate-watch.json` in the experiment folder.
//!
//! A decision is only valid on the experiment and under the settings that made it: the
//! experiment's identity (a hash of its cases and arms, never of its results, so that more calls
//! keep it), the seed of the unit order, the threshold, the family-wise α, the repeats a unit
//! needs, the score bounds and the set of arms compared (Bonferroni or Holm spend α over exactly
//! that family). The file therefore keeps one entry per settings ([`WatchSettings`]), and a run
//! reads and writes only its own: an exploratory `watch --confidence 0.5` or `watch --seed 1`
//! never shows its decisions as made under other settings, a replaced experiment (`simulate
//! --out`) never shows the old one's, and neither erases the others'.
//!
//! Writes are read-modify-write under an exclusive lock on the folder (`flock`, on Unix), then a
//! temporary file and a rename, so two watches with different settings running at once both keep
//! their entries. The file is read only if it is a regular file: never through a link, and a
//! folder, FIFO, socket or device in its place is refused without being read (a FIFO would block).
//! Every recorded decision is checked when read (units ≥ 1, finite bounds, lower ≤ upper, an arm
//! of its entry); a file that fails is refused, naming the entry.
//!
//! Format (version 3):
//! ```json
//! {"tool": "ablate watch", "version": 3,
//!  "runs": [{"settings": {"experiment": "9f86…", "seed": 0, "threshold_drop": 0.005,
//!                         "alpha": 0.05, "repeats": 3, "score_min": 0.0, "score_max": 1.0,
//!                         "arms": ["a", "b"]},
//!            "decisions": {"a": {"state": "needed", "units": 113, "lower": 0.01, "upper": 0.2}},
//!            "order": ["5f1c09a2b4e7d3c8", "…"]}]}
//! ```
//! A run may also keep an `order` (optional; entries without one are read as before): its
//! main-set units in the order its tests read them, each by a key of its cases (16 hex digits of
//! a hash of its case ids, `ablate::analysis::sequential::unit_key`). When cases are added to the
//! experiment (its identity changes), a later watch under the same settings keeps that order and
//! appends the new units after it, so that every arm's tests continue the sequences they were
//! reading and the recorded decisions stand. An entry may hold an order and no decisions.
//!
//! Version 2 (no `experiment`) is read, and its entries kept, but never used: they do not say
//! which experiment they were made on. Version 1 (`{seed, threshold_drop, decisions}`, before
//! settings were recorded) is recognised as ablate's, but its decisions are not used: it did not
//! record α, the repeats or the arms.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// File name of the recorded decisions, in the experiment folder.
pub const STATE_FILE: &str = ".ablate-watch.json";

/// The value of the `tool` key that marks the file as ablate's.
const TOOL: &str = "ablate watch";

/// A decided state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decided {
    /// The arm's drop is at or above the threshold.
    Needed,
    /// The arm's drop is below the threshold.
    Removable,
}

impl Decided {
    /// The label printed and written.
    pub fn label(self) -> &'static str {
        match self {
            Decided::Needed => "needed",
            Decided::Removable => "removable",
        }
    }
}

/// Everything a decision depends on besides the data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchSettings {
    /// The experiment's identity: SHA-256 (hex) of its cases and arms
    /// (`ablate::analysis::sequential::experiment_identity`); none in a version-2 entry, which
    /// is never used.
    #[serde(default)]
    pub experiment: Option<String>,
    /// Seed of the unit order.
    pub seed: u64,
    /// The agreed threshold.
    pub threshold_drop: f64,
    /// Family-wise α.
    pub alpha: f64,
    /// Repeats per (case, arm) a unit needs.
    pub repeats: u32,
    /// Lower score bound.
    pub score_min: f64,
    /// Upper score bound.
    pub score_max: f64,
    /// The arms compared (the family), sorted.
    pub arms: Vec<String>,
}

impl WatchSettings {
    /// One line naming the settings, for messages.
    pub fn describe(&self) -> String {
        format!(
            "seed {}, threshold {}, α {}, {} repeats, scores in [{}, {}], {} arms",
            self.seed,
            crate::text::float_text(self.threshold_drop),
            self.alpha,
            self.repeats,
            self.score_min,
            self.score_max,
            self.arms.len()
        )
    }
}

/// One recorded decision.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RecordedDecision {
    /// needed or removable.
    pub state: Decided,
    /// Units read when decided.
    pub units: usize,
    /// Lower bound then.
    pub lower: f64,
    /// Upper bound then.
    pub upper: f64,
}

/// The decisions of one set of settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Run {
    /// The settings they were made under.
    pub settings: WatchSettings,
    /// Arm → decision.
    pub decisions: BTreeMap<String, RecordedDecision>,
    /// The main-set units in the order the tests read them, each by its key (a hash of its case
    /// ids: `ablate::analysis::sequential::unit_key`); absent in
    /// entries written before orders were kept (their order is the seeded shuffle of the set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<Vec<String>>,
}

impl WatchSettings {
    /// Whether `other` is these settings on an experiment of another identity (other cases):
    /// every setting but the experiment the same, and both experiments known.
    pub fn same_but_cases(&self, other: &WatchSettings) -> bool {
        self.experiment.is_some()
            && other.experiment.is_some()
            && self.experiment != other.experiment
            && WatchSettings {
                experiment: self.experiment.clone(),
                ..other.clone()
            } == *self
    }
}

/// The whole file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StateFile {
    /// Always `"ablate watch"`.
    pub tool: String,
    /// Format version (3; 2 is read).
    pub version: u32,
    /// One entry per settings.
    pub runs: Vec<Run>,
    /// Read from a version-1 file, whose decisions carry no settings and are not used.
    #[serde(skip)]
    pub legacy: bool,
}

/// The version-1 layout, recognised so that the file still counts as ablate's.
#[derive(Deserialize)]
#[allow(dead_code)]
struct LegacyV1 {
    seed: u64,
    threshold_drop: f64,
    decisions: BTreeMap<String, serde_json::Value>,
}

impl StateFile {
    /// A state with no entries.
    pub fn empty() -> StateFile {
        StateFile {
            tool: TOOL.into(),
            version: 3,
            runs: Vec::new(),
            legacy: false,
        }
    }

    /// The decisions recorded under exactly these settings.
    pub fn decisions_for(
        &self,
        settings: &WatchSettings,
    ) -> Option<&BTreeMap<String, RecordedDecision>> {
        self.runs
            .iter()
            .find(|r| &r.settings == settings)
            .map(|r| &r.decisions)
    }

    /// The entry whose order a watch under `settings` continues after cases were added: made
    /// under the same settings on another identity ([`WatchSettings::same_but_cases`]), with a
    /// non-empty order that `continues` accepts (every unit still there, unchanged); the one with
    /// the longest order (each growth extends the order before it), the first of equals.
    pub fn predecessor(
        &self,
        settings: &WatchSettings,
        continues: impl Fn(&Run) -> bool,
    ) -> Option<&Run> {
        self.runs
            .iter()
            .filter(|r| settings.same_but_cases(&r.settings))
            .filter(|r| r.order.as_ref().is_some_and(|o| !o.is_empty()) && continues(r))
            .fold(None, |best: Option<&Run>, r| match best {
                Some(b) if order_len(b) >= order_len(r) => Some(b),
                _ => Some(r),
            })
    }

    /// Settings of the other entries of this experiment that hold decisions (for a warning that
    /// they are not used).
    pub fn others(&self, settings: &WatchSettings) -> Vec<&WatchSettings> {
        self.runs
            .iter()
            .filter(|r| {
                &r.settings != settings
                    && r.settings.experiment == settings.experiment
                    && !r.decisions.is_empty()
            })
            .map(|r| &r.settings)
            .collect()
    }

    /// Entries holding decisions made on another experiment, or by an ablate that did not record
    /// which (version 2), or tests looked at under these settings on another experiment (an
    /// order and no decision): kept in the file, never used, and the tests they ran start afresh.
    /// `continued`, the entry a watch continues ([`StateFile::predecessor`]), is not counted.
    pub fn other_experiments(
        &self,
        settings: &WatchSettings,
        continued: Option<&WatchSettings>,
    ) -> usize {
        self.runs
            .iter()
            .filter(|r| r.settings.experiment != settings.experiment)
            .filter(|r| {
                !r.decisions.is_empty()
                    || (r.order.is_some() && settings.same_but_cases(&r.settings))
            })
            .filter(|r| Some(&r.settings) != continued)
            .count()
    }

    /// Checks every recorded decision (at least one unit read, finite bounds with lower ≤ upper,
    /// an arm of its entry's family) and order (keys of 16 hex digits, each unit once). An entry
    /// that fails was not written by ablate.
    ///
    /// # Errors
    /// [`Error::Unreadable`] naming `path` and the entry.
    pub fn check(&self, path: &Path) -> Result<()> {
        for (i, run) in self.runs.iter().enumerate() {
            for (arm, d) in &run.decisions {
                let problem = if d.units == 0 {
                    Some("is decided at 0 units".to_string())
                } else if !d.lower.is_finite() || !d.upper.is_finite() {
                    Some(format!("has bounds [{}, {}], not finite", d.lower, d.upper))
                } else if d.lower > d.upper {
                    Some(format!("has lower {} above upper {}", d.lower, d.upper))
                } else if !run.settings.arms.contains(arm) {
                    Some("names an arm outside its entry's `arms`".to_string())
                } else {
                    None
                };
                if let Some(problem) = problem {
                    return Err(invalid_entry(path, i, arm, &problem));
                }
            }
            if let Some(problem) = run.order.as_deref().and_then(order_problem) {
                return Err(Error::Unreadable {
                    path: path.to_path_buf(),
                    problem: format!("the order of runs[{i}] {problem}, which ablate never records"),
                    fix: "the file was edited or damaged: move it away (ablate starts a new one), or fix that entry".into(),
                });
            }
        }
        Ok(())
    }
}

/// What is wrong with a recorded order, if anything: a key that is not 16 hex digits, or a unit
/// listed twice (it would be read twice).
fn order_problem(order: &[String]) -> Option<String> {
    if let Some(k) = order
        .iter()
        .find(|k| k.len() != 16 || !k.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Some(format!("holds {k:?}, not a unit's key of 16 hex digits"));
    }
    let mut seen = std::collections::HashSet::new();
    order
        .iter()
        .find(|k| !seen.insert(k.as_str()))
        .map(|k| format!("lists the unit {k} twice"))
}

/// The units in a run's recorded order (0 without one).
fn order_len(run: &Run) -> usize {
    run.order.as_ref().map_or(0, Vec::len)
}

/// The error for a recorded decision ablate cannot have made: names the file and the entry.
pub fn invalid_entry(path: &Path, run: usize, arm: &str, problem: &str) -> Error {
    Error::Unreadable {
        path: path.to_path_buf(),
        problem: format!(
            "the decision runs[{run}].decisions[{arm:?}] {problem}, which ablate never records"
        ),
        fix: "the file was edited or damaged: move it away (ablate starts a new one), or fix that entry".into(),
    }
}

/// Parses the state file's text: none when it is not ablate's watch state (of any version).
pub fn parse(text: &str) -> Option<StateFile> {
    if let Ok(file) = serde_json::from_str::<StateFile>(text)
        && file.tool == TOOL
    {
        return Some(file);
    }
    serde_json::from_str::<LegacyV1>(text)
        .ok()
        .map(|_| StateFile {
            legacy: true,
            ..StateFile::empty()
        })
}
