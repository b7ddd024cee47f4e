//! The demo's catalogue of arms (blocks, single units, composed cuts, budgets and selectors, and
//! the pairs for the interaction design), or the arms an `arms.toml` asks for, and which units each
//! removes from each case.

use model::SimCase;
use rand::Rng;
use rand::seq::SliceRandom;

use super::model;
use crate::error::{Error, Result};
use crate::io::ArmSpec;

/// How an arm decides, per case, which units are removed.
#[derive(Debug, Clone)]
pub(super) enum Removal {
    /// The same units on every case.
    Fixed(Vec<usize>),
    /// Keep units within `ratio` × the case's full prompt, in selector order.
    Budget { retrieval: bool, ratio: f64 },
    /// Drop passages whose reranker score is below the threshold.
    Reranker(f64),
}

/// One arm of the simulated design.
#[derive(Debug, Clone)]
pub(super) struct SimArm {
    pub(super) label: String,
    pub(super) removed: Vec<String>,
    pub(super) components: Vec<String>,
    pub(super) budget_ratio: Option<f64>,
    pub(super) selector: Option<&'static str>,
    pub(super) selector_threshold: Option<f64>,
    pub(super) design: Option<String>,
    pub(super) removal: Removal,
}

impl SimArm {
    fn fixed(label: impl Into<String>, removed: &[String], units: &[String]) -> SimArm {
        SimArm {
            label: label.into(),
            removed: removed.to_vec(),
            components: Vec::new(),
            budget_ratio: None,
            selector: None,
            selector_threshold: None,
            design: None,
            removal: Removal::Fixed(
                removed
                    .iter()
                    .filter_map(|r| units.iter().position(|u| u == r))
                    .collect(),
            ),
        }
    }
}

/// The demo's arms: the baseline, each block and unit removed, the composed cut and its parts,
/// the refund window's carriers in full factorial, the context arms, and with `target` extra
/// pairs up to that many arms.
pub(super) fn demo_arms(units: &[String], target: Option<usize>) -> Vec<SimArm> {
    let of_block = |prefix: &str| -> Vec<String> {
        units
            .iter()
            .filter(|u| u.starts_with(prefix))
            .cloned()
            .collect()
    };
    let mut arms = vec![SimArm {
        budget_ratio: Some(1.0),
        ..SimArm::fixed("baseline", &[], units)
    }];
    for block in ["system", "few_shot", "passages", "conversation"] {
        arms.push(SimArm::fixed(
            format!("without-{block}"),
            &of_block(block),
            units,
        ));
    }
    for u in units.iter().filter(|u| u.contains('/')) {
        arms.push(SimArm::fixed(
            format!("without-{u}"),
            std::slice::from_ref(u),
            units,
        ));
    }
    let examples8: Vec<String> = of_block("few_shot/")
        .into_iter()
        .filter(|u| !model::LOAD_BEARING.contains(&u.as_str()))
        .collect();
    arms.push(SimArm::fixed("without-examples-8", &examples8, units));
    let ranks345: Vec<String> = (3..=5).map(|r| format!("passages/rank{r}")).collect();
    arms.push(SimArm::fixed("without-passages-r3-5", &ranks345, units));
    let mut composed: Vec<String> = examples8.clone();
    composed.push("conversation".into());
    composed.extend(ranks345.iter().cloned());
    arms.push(SimArm {
        components: vec![
            "without-examples-8".into(),
            "without-conversation".into(),
            "without-passages-r3-5".into(),
        ],
        ..SimArm::fixed("cut-examples-conversation-r3-5", &composed, units)
    });
    // The three carriers of the refund window in full factorial (the singles are above): pairs
    // and the triple, so that Shapley values and interaction indices can be computed.
    let carriers = [
        model::WINDOW_EXAMPLES[0],
        model::WINDOW_EXAMPLES[1],
        "passages/rank3",
    ];
    for (a, b) in [(0, 1), (0, 2), (1, 2)] {
        let pair = [carriers[a].to_string(), carriers[b].to_string()];
        arms.push(SimArm::fixed(
            format!("without-{}+{}", carriers[a], carriers[b]),
            &pair,
            units,
        ));
    }
    let all: Vec<String> = carriers.iter().map(|c| c.to_string()).collect();
    arms.push(SimArm::fixed("without-window-carriers", &all, units));
    arms.extend(context_arms());
    if let Some(n) = target {
        for pair in extra_pairs(units, &arms) {
            if arms.len() >= n {
                break;
            }
            arms.push(SimArm::fixed(
                format!("without-{}+{}", pair[0], pair[1]),
                &pair,
                units,
            ));
        }
        arms.truncate(n.max(1));
    }
    arms
}

/// The demo's context arms: random and retrieval budget selectors at five ratios, and the
/// reranker at three thresholds.
fn context_arms() -> Vec<SimArm> {
    let mut arms = Vec::new();
    for (selector, retrieval) in [("random", false), ("retrieval", true)] {
        for ratio in [0.1, 0.2, 0.3, 0.5, 0.7] {
            arms.push(SimArm {
                label: format!("{selector}@{ratio:.1}"),
                removed: Vec::new(),
                components: Vec::new(),
                budget_ratio: Some(ratio),
                selector: Some(selector),
                selector_threshold: None,
                design: None,
                removal: Removal::Budget { retrieval, ratio },
            });
        }
    }
    for t in [0.30, 0.42, 0.60] {
        arms.push(SimArm {
            label: format!("reranker@{t:.2}"),
            removed: Vec::new(),
            components: Vec::new(),
            budget_ratio: None,
            selector: Some("reranker"),
            selector_threshold: Some(t),
            design: None,
            removal: Removal::Reranker(t),
        });
    }
    arms
}

/// The pairs of units not already removed together by one of `arms`, in unit order: the extra
/// arms `--arms` adds beyond the demo's.
pub(super) fn extra_pairs(units: &[String], arms: &[SimArm]) -> Vec<[String; 2]> {
    let mut out = Vec::new();
    for i in 0..units.len() {
        for j in (i + 1)..units.len() {
            let label = format!("without-{}+{}", units[i], units[j]);
            if !arms.iter().any(|a| a.label == label) {
                out.push([units[i].clone(), units[j].clone()]);
            }
        }
    }
    out
}

/// Most arms `--arms` can ask for: the demo's arms plus every pair of units not among them.
pub fn max_arms() -> usize {
    let units: Vec<String> = model::units().into_iter().map(|u| u.0).collect();
    let demo = demo_arms(&units, None);
    demo.len() + extra_pairs(&units, &demo).len()
}

pub(super) fn custom_arms(custom: &[ArmSpec], units: &[String]) -> Result<Vec<SimArm>> {
    let mut arms = Vec::new();
    if !custom
        .iter()
        .any(|a| a.arm == "baseline" && a.removed.is_empty())
    {
        arms.push(SimArm::fixed("baseline", &[], units));
    }
    for ArmSpec {
        arm: label,
        removed,
        design,
        ..
    } in custom
    {
        if let Some(u) = removed.iter().find(|u| !units.contains(u)) {
            return Err(Error::Usage(format!(
                "arm {label:?} removes \"{u}\", which the simulated prompt lacks (its units: {})",
                units.join(", ")
            )));
        }
        arms.push(SimArm {
            design: design.clone(),
            ..SimArm::fixed(label.clone(), removed, units)
        });
    }
    Ok(arms)
}

/// The removal mask of an arm on one case.
pub(super) fn removal_mask(
    arm: &SimArm,
    case: &SimCase,
    units: &[(String, &'static str, f64, Option<i64>)],
    rng: &mut rand_chacha::ChaCha8Rng,
) -> Vec<bool> {
    let mut mask = vec![false; units.len()];
    match &arm.removal {
        Removal::Fixed(idx) => idx.iter().for_each(|&i| mask[i] = true),
        Removal::Reranker(t) => {
            for (k, u) in units.iter().enumerate() {
                if let Some(r) = u.3 {
                    mask[k] = case.reranker[(r - 1) as usize] < *t;
                }
            }
        }
        Removal::Budget { retrieval, ratio } => {
            let total: f64 = case.unit_tokens.iter().sum();
            let budget = ratio * total;
            let mut order: Vec<usize> = (0..units.len()).collect();
            if *retrieval {
                // A good retriever: system first, then by relevance (reranker score for
                // passages; examples that carry one of the case's facts rank higher).
                let relevance: Vec<f64> = units
                    .iter()
                    .enumerate()
                    .map(|(k, u)| {
                        let useful = case.facts.iter().any(|f| f.carriers.contains(&k));
                        match (u.1, u.3) {
                            ("system", _) => 2.0,
                            (_, Some(r)) => case.reranker[(r - 1) as usize],
                            ("conversation", _) if case.turns == "multi" => 0.8,
                            ("conversation", _) => 0.05,
                            _ => 0.35 + if useful { 0.3 } else { 0.0 } + 0.1 * rng.random::<f64>(),
                        }
                    })
                    .collect();
                order.sort_by(|a, b| relevance[*b].total_cmp(&relevance[*a]));
            } else {
                order.shuffle(rng);
            }
            mask.iter_mut().for_each(|m| *m = true);
            let mut used = 0.0;
            for k in order {
                if used + case.unit_tokens[k] <= budget {
                    used += case.unit_tokens[k];
                    mask[k] = false;
                }
            }
        }
    }
    mask
}
