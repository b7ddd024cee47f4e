//! The decision the analyses support, in the words a director needs: what can be cut, what must
//! stay, what is not settled and what would settle it, which verdicts flip in production, and
//! which composed cuts interact. It only sorts the other analyses' outputs; it estimates nothing
//! new except how many cases would settle an inconclusive arm:
//!
//! cases_to_settle = ⌈(z(1 − α/2) · se · √n / |drop − threshold|)²⌉
//!
//! the main-set cases at which the arm's interval would no longer cover the threshold, were its
//! drop and per-case spread (se·√n) to stay as measured. Undefined when the drop sits exactly on
//! the threshold or the se is unknown.

use serde::Serialize;

use crate::analysis::curve::Pricing;
use crate::analysis::interactions::{InteractionVerdict, InteractionsOutput};
use crate::analysis::reweight::ReweightOutput;
use crate::analysis::stress::StressOutput;
use crate::analysis::sweep::{SweepArm, SweepOutput};
use crate::analysis::vocab::{Confidence, Verdict};
use crate::stats::dist;

/// One arm in the decision.
#[derive(Debug, Clone, Serialize)]
pub struct DecisionArm {
    /// Arm label.
    pub arm: String,
    /// Units it removes.
    pub removed: Vec<String>,
    /// Its drop on the main set.
    pub drop: f64,
    /// Mean input tokens it removes per request, when results log tokens.
    pub tokens_removed: Option<f64>,
    /// Why it is in this group (for inconclusive arms: what is not settled).
    pub reason: String,
    /// Main-set cases that would settle it (inconclusive arms only).
    pub cases_to_settle: Option<u64>,
}

/// A verdict that production weights reverse.
#[derive(Debug, Clone, Serialize)]
pub struct Flip {
    /// Arm label.
    pub arm: String,
    /// Verdict on the eval set.
    pub verdict_eval: Verdict,
    /// Verdict under production weights.
    pub verdict_production: Verdict,
}

/// A composed cut whose loss is not the sum of its parts.
#[derive(Debug, Clone, Serialize)]
pub struct Interaction {
    /// The composed arm.
    pub arm: String,
    /// Its component arms.
    pub components: Vec<String>,
    /// measured − predicted drop.
    pub interaction: f64,
    /// super-additive or sub-additive.
    pub kind: String,
    /// The slice with the most lost cases, when known.
    pub where_lost: Option<String>,
}

/// The decision summary.
#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    /// Confidently removable on the main set, and on the stress slice and under production
    /// weights where those exist.
    pub cut: Vec<DecisionArm>,
    /// Confidently needed on the main set, or needed on the stress slice or in production.
    pub keep: Vec<DecisionArm>,
    /// Not settled.
    pub inconclusive: Vec<DecisionArm>,
    /// Σ tokens_removed over the cut arms, when every one logs tokens (the units are cut
    /// together; the composed cuts say whether their losses add).
    pub tokens_saved: Option<f64>,
    /// Dollars saved per day with pricing: tokens_saved / 10⁶ × price_per_mtok × requests_per_day.
    pub cost_saved_per_day: Option<f64>,
    /// Verdicts production weights reverse.
    pub flips: Vec<Flip>,
    /// Composed cuts that interact.
    pub interactions: Vec<Interaction>,
}

/// Cases that would settle an inconclusive arm with this drop, se on `n` cases:
/// ⌈(z · se · √n / |drop − threshold|)²⌉.
fn cases_to_settle(drop: f64, se: Option<f64>, n: usize, threshold: f64, z: f64) -> Option<u64> {
    let gap = (drop - threshold).abs();
    let se = se.filter(|s| *s > 0.0)?;
    if gap == 0.0 || n == 0 {
        return None;
    }
    let sd = se * (n as f64).sqrt();
    Some(((z * sd / gap).powi(2)).ceil() as u64)
}

/// Sorts the arms that stand for single units (every non-baseline arm when none does) into cut,
/// keep and inconclusive, and gathers flips and interactions.
pub fn run(
    sweep: &SweepOutput,
    stress: Option<&StressOutput>,
    reweight: Option<&ReweightOutput>,
    interactions: &InteractionsOutput,
    pricing: Option<Pricing>,
) -> Decision {
    let thr = sweep.threshold_drop;
    let z = dist::z_two_sided(sweep.confidence_level);
    let others: Vec<&SweepArm> = sweep
        .arms
        .iter()
        .filter(|a| a.arm != sweep.baseline_arm)
        .collect();
    let singles: Vec<&SweepArm> = others
        .iter()
        .copied()
        .filter(|a| a.removed.len() == 1)
        .collect();
    let arms = if singles.is_empty() { others } else { singles };
    let (mut cut, mut keep, mut inconclusive) = (Vec::new(), Vec::new(), Vec::new());
    for a in arms {
        let item = |reason: String, settle: Option<u64>| DecisionArm {
            arm: a.arm.clone(),
            removed: a.removed.clone(),
            drop: a.drop,
            tokens_removed: a.tokens_removed,
            reason,
            cases_to_settle: settle,
        };
        let st = stress.and_then(|s| s.arms.iter().find(|x| x.arm == a.arm).map(|x| (s, x)));
        let prod = reweight.and_then(|r| r.arms.iter().find(|x| x.arm == a.arm));
        let stress_needed = st.is_some_and(|(_, x)| x.verdict_stress == Some(Verdict::Needed));
        let prod_needed = prod.is_some_and(|p| p.verdict_production == Some(Verdict::Needed));
        match (a.verdict, a.confidence) {
            (Verdict::Needed, Confidence::Confident) => {
                keep.push(item("needed on the main set".into(), None));
            }
            (Verdict::Removable, Confidence::Confident) if stress_needed => {
                keep.push(item(
                    "removable on the main set, needed on the stress slice".into(),
                    None,
                ));
            }
            (Verdict::Removable, Confidence::Confident) if prod_needed => {
                keep.push(item(
                    "removable on the set, needed under production weights".into(),
                    None,
                ));
            }
            (Verdict::Removable, Confidence::Confident) => {
                // The stress slice and production must be confidently clear too.
                let stress_open = st.is_some_and(|(s, x)| {
                    x.ci_stress
                        .is_none_or(|(_, hi)| hi >= s.stress_threshold_drop)
                });
                let prod_open =
                    prod.is_some_and(|p| p.ci_high_production.is_none_or(|hi| hi >= thr));
                if stress_open {
                    inconclusive.push(item(
                        "removable on the main set; the stress slice's interval reaches its threshold".into(),
                        None,
                    ));
                } else if prod_open {
                    inconclusive.push(item(
                        "removable on the set; under production weights the interval reaches the threshold".into(),
                        None,
                    ));
                } else {
                    cut.push(item(
                        match (st.is_some(), prod.is_some()) {
                            (true, true) => {
                                "removable on the main set, the stress slice and in production"
                            }
                            (true, false) => "removable on the main set and the stress slice",
                            (false, true) => "removable on the set and in production",
                            (false, false) => "removable on the main set",
                        }
                        .into(),
                        None,
                    ));
                }
            }
            (_, Confidence::Inconclusive) => {
                inconclusive.push(item(
                    "the interval straddles the threshold".into(),
                    cases_to_settle(a.drop, a.se, a.n, thr, z),
                ));
            }
        }
    }
    let tokens_saved = if cut.is_empty() {
        None
    } else {
        cut.iter().map(|c| c.tokens_removed).sum::<Option<f64>>()
    };
    let flips = reweight
        .map(|r| {
            r.arms
                .iter()
                .filter(|a| a.flipped)
                .filter_map(|a| {
                    Some(Flip {
                        arm: a.arm.clone(),
                        verdict_eval: a.verdict_eval,
                        verdict_production: a.verdict_production?,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let interactions = interactions
        .composed
        .iter()
        .filter(|c| {
            matches!(
                c.interaction_verdict,
                InteractionVerdict::SuperAdditive | InteractionVerdict::SubAdditive
            )
        })
        .map(|c| Interaction {
            arm: c.arm.clone(),
            components: c.components.clone(),
            interaction: c.interaction,
            kind: c.interaction_verdict.as_str().to_string(),
            where_lost: c
                .lost_by_slice
                .iter()
                .max_by_key(|(_, n)| **n)
                .filter(|(_, n)| **n > 0)
                .map(|(s, n)| format!("{s} ({n} cases lost)")),
        })
        .collect();
    let cost_saved_per_day = tokens_saved
        .zip(pricing)
        .map(|(t, p)| t / 1e6 * p.price_per_mtok * p.requests_per_day);
    Decision {
        cut,
        keep,
        inconclusive,
        tokens_saved,
        cost_saved_per_day,
        flips,
        interactions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_to_settle_by_hand() {
        // se 0.01 on 100 cases: sd 0.1. Drop 0.01 against a threshold of 0.005 at 95%:
        // (1.959964 · 0.1 / 0.005)² = 1536.6 → 1537 cases.
        let z = dist::z_two_sided(0.95);
        assert_eq!(cases_to_settle(0.01, Some(0.01), 100, 0.005, z), Some(1537));
        // On the threshold, or with no spread, nothing settles it.
        assert_eq!(cases_to_settle(0.005, Some(0.01), 100, 0.005, z), None);
        assert_eq!(cases_to_settle(0.01, Some(0.0), 100, 0.005, z), None);
        assert_eq!(cases_to_settle(0.01, None, 100, 0.005, z), None);
    }
}
