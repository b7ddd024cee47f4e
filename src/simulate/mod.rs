//! `ablate simulate`: writes a complete synthetic experiment from a documented generative model
//! (see [`model`] and [`traffic`]), seeded, so the same seed always gives the same files.
//!
//! The default tells the story of seed 000: 500 main cases and 80 stress cases; a 14,000-token
//! prompt of system (900), twelve few-shot examples (2,400), five passages (9,800) and a
//! conversation tail (900); leave-one-out arms per block and per unit, two group arms, one
//! composed arm whose parts each look removable but whose joint cut loses most of its cases in
//! `refunds/out-of-window`, budget arms for a `random` and a `retrieval` selector, reranker-
//! threshold arms, a production mix with 23% multi-turn traffic (6% in the set), shadow traffic
//! and a context log. With `--arms N` the arm list is cut or extended (with pairs of single units)
//! to N arms, for benchmarks at scale.

pub mod model;
pub mod traffic;

use std::path::{Path, PathBuf};

use polars::prelude::*;
use rand::Rng;
use rand::seq::SliceRandom;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::io::ArmSpec;
use crate::io::output::AtomicDir;
use crate::io::write::{self, list_column};
use model::SimCase;

/// Settings of a simulation.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Main-set cases.
    pub cases: usize,
    /// Stress cases (default: 16% of the main set).
    pub stress_cases: Option<usize>,
    /// Random seed.
    pub seed: u64,
    /// Repeats per case and arm.
    pub repeats: u32,
    /// Total number of arms, baseline included (default: the demo's arms).
    pub arms: Option<usize>,
    /// Requests in the shadow-traffic file.
    pub shadow_requests: usize,
    /// Agent requests in the context log.
    pub context_requests: usize,
    /// Arms to simulate instead of the demo's (their label, removed units and design are used),
    /// e.g. read from `ablate plan --out`. A baseline removing nothing is added when missing.
    pub custom_arms: Option<Vec<ArmSpec>>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            cases: 500,
            stress_cases: None,
            seed: 0,
            repeats: 3,
            arms: None,
            shadow_requests: 4000,
            context_requests: 1500,
            custom_arms: None,
        }
    }
}

/// How an arm decides, per case, which units are removed.
#[derive(Debug, Clone)]
enum Removal {
    /// The same units on every case.
    Fixed(Vec<usize>),
    /// Keep units within `ratio` × the case's full prompt, in selector order.
    Budget { retrieval: bool, ratio: f64 },
    /// Drop passages whose reranker score is below the threshold.
    Reranker(f64),
}

/// One arm of the simulated design.
#[derive(Debug, Clone)]
struct SimArm {
    label: String,
    removed: Vec<String>,
    components: Vec<String>,
    budget_ratio: Option<f64>,
    selector: Option<&'static str>,
    selector_threshold: Option<f64>,
    design: Option<String>,
    removal: Removal,
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

fn demo_arms(units: &[String], target: Option<usize>) -> Vec<SimArm> {
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

/// The pairs of units not already removed together by one of `arms`, in unit order: the extra
/// arms `--arms` adds beyond the demo's.
fn extra_pairs(units: &[String], arms: &[SimArm]) -> Vec<[String; 2]> {
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

fn custom_arms(custom: &[ArmSpec], units: &[String]) -> Result<Vec<SimArm>> {
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
                "arm \"{label}\" removes \"{u}\", which the simulated prompt lacks (its units: {})",
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
fn removal_mask(
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

/// What was written.
#[derive(Debug, Clone, Serialize)]
pub struct SimSummary {
    /// Output folder.
    pub out: String,
    /// Seed used.
    pub seed: u64,
    /// Main-set cases.
    pub cases: usize,
    /// Stress cases.
    pub stress_cases: usize,
    /// Arms, baseline included.
    pub arms: usize,
    /// Repeats per case and arm.
    pub repeats: u32,
    /// Rows of `results`.
    pub result_rows: usize,
    /// Files written.
    pub files: Vec<String>,
}

fn frame(columns: Vec<Column>, what: &str) -> Result<DataFrame> {
    DataFrame::new_infer_height(columns).map_err(|e| Error::Polars {
        context: format!("building the {what} table"),
        source: e,
    })
}

fn manifest(cfg: &SimConfig, n_stress: usize) -> String {
    format!(
        r#"# Written by `ablate simulate --seed {seed} --cases {cases}`. Synthetic data: a documented
# generative model (see `ablate simulate --help` and src/simulate/), not a real measurement.
set = "support-eval-v3"
model = "claude-sonnet-4-5-20250929"
measured_at = "2025-08-26"
synthetic = true
description = "Synthetic support eval telling the story of the needed-context article: a 14,000-token prompt, four load-bearing examples, a refund-window fact carried redundantly by two examples and passage rank 3, and a conversation tail that matters on multi-turn traffic (6% of the set, 23% of production)."
baseline_arm = "baseline"
threshold_drop = 0.005
stress_threshold_drop = 0.005
pass_mark = 0.5
strata = ["turns"]
quality_threshold = 0.95

[simulation]
seed = "{seed}"
cases = {cases}
stress_cases = {n_stress}
repeats = {repeats}

[[blocks]]
name = "system"
need = "always"

[[blocks]]
name = "few_shot"
need = "needed_units"

[[blocks]]
name = "passages"
need = "through_gold_rank"

[[blocks]]
name = "conversation"
need = "when:turns=multi"
"#,
        seed = cfg.seed,
        cases = cfg.cases,
        repeats = cfg.repeats,
    )
}

/// Writes a synthetic experiment into `out` (atomically: the folder appears complete or not at all).
///
/// # Errors
/// Invalid settings (no cases, no repeats) or a failed write.
pub fn run(cfg: &SimConfig, out: &Path) -> Result<SimSummary> {
    if cfg.cases == 0 || cfg.repeats == 0 {
        return Err(Error::Usage(
            "--cases and --repeats must be at least 1".into(),
        ));
    }
    if cfg.arms == Some(0) {
        return Err(Error::Usage(
            "--arms must be at least 1 (the baseline)".into(),
        ));
    }
    if let Some(n) = cfg.arms.filter(|&n| n > max_arms()) {
        return Err(Error::Usage(format!(
            "--arms {n}: the simulated prompt has room for at most {} arms (the demo's and every pair of its 19 units); for larger designs write an arms table with `ablate plan --out` and pass --design",
            max_arms()
        )));
    }
    let n_stress = cfg
        .stress_cases
        .unwrap_or(((cfg.cases as f64) * 0.16).round() as usize);
    let units = model::units();
    let unit_names: Vec<String> = units.iter().map(|u| u.0.clone()).collect();
    let cases = model::cases(cfg.seed, cfg.cases, n_stress);
    let arms = match &cfg.custom_arms {
        Some(custom) => custom_arms(custom, &unit_names)?,
        None => demo_arms(&unit_names, cfg.arms),
    };

    let dir = AtomicDir::create(out)?;
    let mut files = Vec::new();
    let mut put = |name: &str, mut df: DataFrame| -> Result<()> {
        write::parquet(&mut df, &dir.path(name))?;
        files.push(name.to_string());
        Ok(())
    };

    // cases
    put(
        "cases.parquet",
        frame(
            vec![
                Column::new(
                    "case_id".into(),
                    cases.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "slice".into(),
                    cases.iter().map(|c| c.slice).collect::<Vec<_>>(),
                ),
                Column::new(
                    "turns".into(),
                    cases.iter().map(|c| c.turns).collect::<Vec<_>>(),
                ),
                Column::new(
                    "gold_rank".into(),
                    cases.iter().map(|c| c.gold_rank).collect::<Vec<_>>(),
                ),
                Column::new(
                    "stress".into(),
                    cases.iter().map(|c| c.stress).collect::<Vec<_>>(),
                ),
                Column::new(
                    "cluster".into(),
                    cases.iter().map(|c| c.cluster.as_str()).collect::<Vec<_>>(),
                ),
            ],
            "cases",
        )?,
    )?;

    // units: mean tokens over the main set
    let main: Vec<&SimCase> = cases.iter().filter(|c| !c.stress).collect();
    let unit_means: Vec<f64> = (0..units.len())
        .map(|k| {
            let m = crate::stats::moments::sum(main.iter().map(|c| c.unit_tokens[k]))
                / main.len() as f64;
            (m * 10.0).round() / 10.0
        })
        .collect();
    put(
        "units.parquet",
        frame(
            vec![
                Column::new(
                    "unit".into(),
                    unit_names.iter().map(String::as_str).collect::<Vec<_>>(),
                ),
                Column::new(
                    "block".into(),
                    units.iter().map(|u| u.1).collect::<Vec<_>>(),
                ),
                Column::new("tokens".into(), unit_means),
                Column::new("rank".into(), units.iter().map(|u| u.3).collect::<Vec<_>>()),
            ],
            "units",
        )?,
    )?;

    // case_units
    let mut cu_case = Vec::new();
    let mut cu_unit = Vec::new();
    let mut cu_tokens = Vec::new();
    for c in &cases {
        for (k, name) in unit_names.iter().enumerate() {
            cu_case.push(c.id.as_str());
            cu_unit.push(name.as_str());
            cu_tokens.push(c.unit_tokens[k] as i64);
        }
    }
    put(
        "case_units.parquet",
        frame(
            vec![
                Column::new("case_id".into(), cu_case),
                Column::new("unit".into(), cu_unit),
                Column::new("tokens".into(), cu_tokens),
            ],
            "case_units",
        )?,
    )?;

    // arms
    put(
        "arms.parquet",
        frame(
            vec![
                Column::new(
                    "arm".into(),
                    arms.iter().map(|a| a.label.as_str()).collect::<Vec<_>>(),
                ),
                list_column(
                    "removed",
                    &arms.iter().map(|a| a.removed.clone()).collect::<Vec<_>>(),
                ),
                list_column(
                    "components",
                    &arms
                        .iter()
                        .map(|a| a.components.clone())
                        .collect::<Vec<_>>(),
                ),
                Column::new(
                    "budget_ratio".into(),
                    arms.iter().map(|a| a.budget_ratio).collect::<Vec<_>>(),
                ),
                Column::new(
                    "selector".into(),
                    arms.iter().map(|a| a.selector).collect::<Vec<_>>(),
                ),
                Column::new(
                    "selector_threshold".into(),
                    arms.iter()
                        .map(|a| a.selector_threshold)
                        .collect::<Vec<_>>(),
                ),
            ]
            .into_iter()
            .chain(arms.iter().any(|a| a.design.is_some()).then(|| {
                Column::new(
                    "design".into(),
                    arms.iter().map(|a| a.design.clone()).collect::<Vec<_>>(),
                )
            }))
            .collect(),
            "arms",
        )?,
    )?;

    // results
    let mut rng_sel = model::stream(cfg.seed, 3);
    let mut rng_judge = model::stream(cfg.seed, 4);
    let rows = cases.len() * arms.len() * cfg.repeats as usize;
    let mut r_case = Vec::with_capacity(rows);
    let mut r_arm = Vec::with_capacity(rows);
    let mut r_repeat = Vec::with_capacity(rows);
    let mut r_score = Vec::with_capacity(rows);
    let mut r_tokens = Vec::with_capacity(rows);
    for arm in &arms {
        for c in &cases {
            let mask = removal_mask(arm, c, &units, &mut rng_sel);
            let kept: f64 = c
                .unit_tokens
                .iter()
                .zip(&mask)
                .filter(|(_, m)| !**m)
                .map(|(t, _)| t)
                .sum();
            let log_odds = model::log_odds(c, &mask);
            for r in 0..cfg.repeats {
                r_case.push(c.id.as_str());
                r_arm.push(arm.label.as_str());
                r_repeat.push(r as i64);
                r_score.push(model::judge(&mut rng_judge, log_odds));
                r_tokens.push(kept.round() as i64);
            }
        }
    }
    let result_rows = r_case.len();
    put(
        "results.parquet",
        frame(
            vec![
                Column::new("case_id".into(), r_case),
                Column::new("arm".into(), r_arm),
                Column::new("repeat".into(), r_repeat),
                Column::new("score".into(), r_score),
                Column::new("tokens_in".into(), r_tokens),
            ],
            "results",
        )?,
    )?;

    // production mixes
    let (_, _, multi_prod) = model::MULTI_TURN;
    put(
        "mix.parquet",
        frame(
            vec![
                Column::new("turns".into(), ["single", "multi"]),
                Column::new("share".into(), [1.0 - multi_prod, multi_prod]),
            ],
            "mix",
        )?,
    )?;
    put(
        "mix-slice.parquet",
        frame(
            vec![
                Column::new(
                    "slice".into(),
                    model::SLICES.iter().map(|s| s.0).collect::<Vec<_>>(),
                ),
                Column::new("share".into(), traffic::PRODUCTION_SLICE_SHARES.to_vec()),
            ],
            "mix-slice",
        )?,
    )?;

    // passages
    let mut p_case = Vec::new();
    let mut p_rank = Vec::new();
    let mut p_tokens = Vec::new();
    let mut p_score = Vec::new();
    let mut p_gold = Vec::new();
    for c in &cases {
        for (k, u) in units.iter().enumerate() {
            if let Some(r) = u.3 {
                p_case.push(c.id.as_str());
                p_rank.push(r);
                p_tokens.push(c.unit_tokens[k] as i64);
                p_score.push(c.reranker[(r - 1) as usize]);
                p_gold.push(c.gold_rank == Some(r));
            }
        }
    }
    put(
        "passages.parquet",
        frame(
            vec![
                Column::new("case_id".into(), p_case),
                Column::new("rank".into(), p_rank),
                Column::new("tokens".into(), p_tokens),
                Column::new("score".into(), p_score),
                Column::new("gold".into(), p_gold),
            ],
            "passages",
        )?,
    )?;

    // shadow traffic (none asked for: no table, rather than an empty one that `check` refuses)
    // Written 100,000 requests (300,000 rows, one Parquet row group) at a time, so that a 100M-row
    // log needs no more memory than a small one.
    if cfg.shadow_requests > 0 {
        let mut stream = traffic::ShadowStream::new(cfg.seed);
        let mut left = cfg.shadow_requests;
        write::parquet_chunks(&dir.path("shadow.parquet"), || {
            if left == 0 {
                return Ok(None);
            }
            let n = left.min(100_000);
            left -= n;
            let s = stream.take(n);
            frame(
                vec![
                    Column::new("request_id".into(), s.request_id),
                    Column::new("variant".into(), s.variant),
                    Column::new("answer".into(), s.answer),
                    Column::new("score".into(), s.score),
                    Column::new("tokens_in".into(), s.tokens_in),
                    Column::new("turns".into(), s.turns),
                    Column::new("slice".into(), s.slice),
                ],
                "shadow",
            )
            .map(Some)
        })?;
    }

    // context log
    if cfg.context_requests > 0 {
        let mut stream = traffic::ContextStream::new(cfg.seed);
        let mut left = cfg.context_requests;
        write::parquet_chunks(&dir.path("context_log.parquet"), || {
            if left == 0 {
                return Ok(None);
            }
            let n = left.min(10_000);
            left -= n;
            let c = stream.take(n);
            frame(
                vec![
                    Column::new("request_id".into(), c.request_id),
                    Column::new("step".into(), c.step),
                    Column::new("source".into(), c.source),
                    Column::new("tokens".into(), c.tokens),
                    Column::new("mandatory".into(), c.mandatory),
                    Column::new("priority".into(), c.priority),
                    Column::new("relevance".into(), c.relevance),
                    Column::new("content_hash".into(), c.content_hash),
                    Column::new("model_limit".into(), c.model_limit),
                    Column::new("expected_output".into(), c.expected_output),
                ],
                "context_log",
            )
            .map(Some)
        })?;
    }

    if cfg.shadow_requests > 0 {
        files.push("shadow.parquet".into());
    }
    if cfg.context_requests > 0 {
        files.push("context_log.parquet".into());
    }
    let toml_path = dir.path("experiment.toml");
    std::fs::write(&toml_path, manifest(cfg, n_stress)).map_err(|e| Error::io(&toml_path, e))?;
    files.push("experiment.toml".into());
    files.sort();
    let written: PathBuf = dir.commit()?;
    Ok(SimSummary {
        out: written.display().to_string(),
        seed: cfg.seed,
        cases: cfg.cases,
        stress_cases: n_stress,
        arms: arms.len(),
        repeats: cfg.repeats,
        result_rows,
        files,
    })
}
