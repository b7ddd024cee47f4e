//! `ablate record`: the decision record of seed 000 — the needed context fraction with
//! everything that produced it attached, so that it can be quoted defensibly: the set and its
//! hash, the threshold, repeats and churn floor, the model, whether the figure is an oracle, whether
//! a composed cut was checked, and the known coverage gap.
//!
//! `set_sha256` is the first 16 hex digits of SHA-256 over the sorted case ids of the main set
//! (the cases with baseline results, as counted in `cases`), each followed by "\n", sorted by
//! bytes (so `LC_ALL=C sort ids.txt | sha256sum` reproduces it).

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::analysis::Config;
use crate::analysis::interactions::InteractionsOutput;
use crate::analysis::need::NeedOutput;
use crate::analysis::reweight::ReweightOutput;
use crate::analysis::stress::StressOutput;
use crate::analysis::sweep::SweepOutput;
use crate::analysis::vocab::{Confidence, Verdict};
use crate::io::Experiment;

/// The stress slice's part of the record.
#[derive(Debug, Clone, Serialize)]
pub struct StressSummary {
    /// Stress cases.
    pub cases: usize,
    /// Threshold on the stress slice.
    pub threshold_drop: f64,
    /// Cuts removable on the main set (the point verdict) but confidently needed on the stress
    /// slice.
    pub needed_only_on_stress: Vec<String>,
    /// Cuts removable on both.
    pub clears_both: Vec<String>,
}

/// The decision record.
#[derive(Debug, Clone, Serialize)]
pub struct DecisionRecord {
    /// Always "needed_context_fraction".
    pub claim: &'static str,
    /// Needed tokens / sent tokens on the main set.
    pub value: f64,
    /// Mean needed tokens per request.
    pub needed_tokens_mean: f64,
    /// Mean tokens sent per request.
    pub total_tokens_mean: f64,
    /// Eval set name.
    pub set: String,
    /// First 16 hex digits of SHA-256 over the sorted main-set case ids, one per line.
    pub set_sha256: String,
    /// Main-set cases.
    pub cases: usize,
    /// Threshold agreed before the run.
    pub threshold_drop: f64,
    /// Baseline score on the main set.
    pub baseline: f64,
    /// Repeats per case.
    pub repeats: u32,
    /// Baseline churn (the noise floor of lost cases).
    pub churn_baseline: Option<usize>,
    /// Model snapshot.
    pub model: Option<String>,
    /// Date measured.
    pub measured_at: Option<String>,
    /// Whether the fraction uses gold labels (an upper bound).
    pub oracle: bool,
    /// Why, when it does.
    pub oracle_note: Option<String>,
    /// True only if a composed cut was measured and analysed.
    pub composition_checked: bool,
    /// The most under-sampled stratum, e.g. "6% turns=multi in set vs 23% in production".
    pub known_coverage_gap: Option<String>,
    /// The fraction weighted to production traffic.
    pub value_production: Option<f64>,
    /// Production share left out of value_production (strata with no eval case; null without a mix).
    pub unmeasured_share: Option<f64>,
    /// The stress slice, when there is one.
    pub stress: Option<StressSummary>,
    /// Units counted as needed because a measured cut of units `need` drops was needed, each with
    /// the cut that forced it (see `need`).
    pub forced_needed: Vec<crate::analysis::need::ForcedUnit>,
    /// Whether one measured arm removed exactly the units `need` drops; when false the fraction
    /// assumes they can go together, untested.
    pub joint_cut_measured: bool,
    /// The fraction with the point verdicts (inconclusive arms taken at face value), beside
    /// `value` for comparison.
    pub value_point: f64,
    /// How the verdicts behind the record are controlled across the arms (the sweep's family).
    pub family: String,
    /// ablate's version.
    pub tool_version: &'static str,
    /// Bootstrap seed.
    pub seed: u64,
    /// Bootstrap resamples.
    pub bootstrap: usize,
    /// Every warning behind the record's figures, once each: the load's, then need's, the
    /// sweep's and the stress slice's (why `value` or `churn_baseline` may be null).
    pub warnings: Vec<crate::warning::Warning>,
}

/// [`set_hash`] of an experiment's main-set cases that have baseline results (the cases the
/// decision record counts).
pub fn experiment_set_hash(exp: &Experiment) -> String {
    let paired = crate::analysis::paired::Paired::new(exp, crate::analysis::paired::CaseSet::Main);
    set_hash(paired.cases.iter().map(|&c| exp.cases.ids[c].as_str()))
}

/// First 16 hex digits of SHA-256 over the sorted ids, each followed by a newline.
pub fn set_hash<'a>(ids: impl IntoIterator<Item = &'a str>) -> String {
    let mut ids: Vec<&str> = ids.into_iter().collect();
    ids.sort_unstable();
    let mut hasher = Sha256::new();
    for id in ids {
        hasher.update(id.as_bytes());
        hasher.update(b"\n");
    }
    crate::text::hex(&hasher.finalize()[..8])
}

/// The analyses a decision record rests on.
#[derive(Debug, Clone, Copy)]
pub struct Upstream<'a> {
    /// The needed context fraction.
    pub need: &'a NeedOutput,
    /// Drops and verdicts.
    pub sweep: &'a SweepOutput,
    /// Whether a composed cut was measured.
    pub interactions: &'a InteractionsOutput,
    /// The production weighting, when the experiment has a mix.
    pub reweight: Option<&'a ReweightOutput>,
    /// The stress slice (empty without stress cases).
    pub stress: &'a StressOutput,
}

/// Builds the record from the analyses it rests on ([`crate::analysis::all`] runs them once).
pub fn run(exp: &Experiment, up: &Upstream<'_>, cfg: &Config) -> DecisionRecord {
    let Upstream {
        need,
        sweep,
        interactions,
        reweight,
        stress: st,
    } = *up;
    let composition_checked = !interactions.composed.is_empty();
    let known_coverage_gap = reweight.and_then(|r| r.known_coverage_gap.clone());
    let stress = (st.stress_cases > 0).then(|| StressSummary {
        cases: st.stress_cases,
        threshold_drop: st.stress_threshold_drop,
        needed_only_on_stress: st
            .arms
            .iter()
            .filter(|a| {
                a.verdict_main == Some(Verdict::Removable)
                    && a.verdict_stress == Some(Verdict::Needed)
                    && a.confidence_stress == Some(Confidence::Confident)
            })
            .map(|a| a.arm.clone())
            .collect(),
        clears_both: st
            .arms
            .iter()
            .filter(|a| a.clears_both)
            .map(|a| a.arm.clone())
            .collect(),
    });
    DecisionRecord {
        claim: "needed_context_fraction",
        value: need.value,
        needed_tokens_mean: need.needed_tokens_mean,
        total_tokens_mean: need.total_tokens_mean,
        set: exp.manifest.set.clone(),
        set_sha256: experiment_set_hash(exp),
        cases: sweep.cases,
        threshold_drop: exp.manifest.threshold_drop,
        baseline: sweep.baseline.score,
        repeats: sweep.repeats,
        churn_baseline: sweep.churn_baseline,
        model: exp.manifest.model.clone(),
        measured_at: exp.manifest.measured_at.clone(),
        oracle: need.oracle,
        oracle_note: need.oracle_note.clone(),
        composition_checked,
        known_coverage_gap,
        value_production: need.value_production,
        unmeasured_share: need.unmeasured_share,
        stress,
        forced_needed: need.forced_needed.clone(),
        joint_cut_measured: need.joint_cut_measured,
        value_point: need.value_point,
        family: sweep.family.note.clone(),
        tool_version: env!("CARGO_PKG_VERSION"),
        seed: cfg.seed,
        bootstrap: cfg.bootstrap,
        warnings: upstream_warnings(exp, up),
    }
}

/// The load's, need's, the sweep's and the stress slice's warnings, in that order, each once.
fn upstream_warnings(exp: &Experiment, up: &Upstream<'_>) -> Vec<crate::warning::Warning> {
    let mut all: Vec<crate::warning::Warning> = Vec::new();
    for w in exp
        .warnings
        .iter()
        .chain(&up.need.warnings)
        .chain(&up.sweep.warnings)
        .chain(&up.stress.warnings)
    {
        if !all.contains(w) {
            all.push(w.clone());
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_hash_matches_sort_and_sha256sum() {
        // printf 'a\nb\nc\n' | sha256sum | cut -c1-16
        assert_eq!(set_hash(["c", "a", "b"]), "880553fca8fcea94");
        assert_eq!(set_hash(["a", "b", "c"]), set_hash(["b", "c", "a"]));
    }
}
