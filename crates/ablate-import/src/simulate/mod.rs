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

mod arms;
pub mod model;
mod tables;
pub mod traffic;
pub use arms::max_arms;
use arms::{custom_arms, demo_arms};

use std::path::{Path, PathBuf};

use polars::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::io::ArmSpec;
use crate::io::output::AtomicDir;
use crate::io::write;

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
        source: Box::new(e),
    })
}

fn manifest(cfg: &SimConfig, n_stress: usize) -> String {
    format!(
        r#"# Written by `ablate simulate --seed {seed} --cases {cases}`. Synthetic data: a documented
# generative model (see `ablate simulate --help` and src/simulate/), not a real measurement.
set = "{set}"
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
        set = set_name(cfg),
        seed = cfg.seed,
        cases = cfg.cases,
        repeats = cfg.repeats,
    )
}

/// The set's name: `support-eval-v3` with the demo's settings, else that name with every
/// setting that changes the eval set (`-seed11-cases2000-r5-arms10-stress40`, `-design` plus the
/// arms' count for --design), so that two simulated experiments do not share a name (nor a
/// default report folder).
pub fn set_name(cfg: &SimConfig) -> String {
    let d = SimConfig::default();
    let mut name = String::from("support-eval-v3");
    if cfg.seed != d.seed {
        name.push_str(&format!("-seed{}", cfg.seed));
    }
    if cfg.cases != d.cases {
        name.push_str(&format!("-cases{}", cfg.cases));
    }
    if cfg.repeats != d.repeats {
        name.push_str(&format!("-r{}", cfg.repeats));
    }
    if let Some(a) = cfg.arms {
        name.push_str(&format!("-arms{a}"));
    }
    if let Some(n) = cfg.stress_cases {
        name.push_str(&format!("-stress{n}"));
    }
    if let Some(arms) = &cfg.custom_arms {
        name.push_str(&format!("-design{}", arms.len()));
    }
    name
}

/// Writes a synthetic experiment into `out` (atomically: the folder appears complete or not at all).
///
/// # Errors
/// Invalid settings (no cases, no repeats) or a failed write.
pub fn run(cfg: &SimConfig, out: &Path) -> Result<SimSummary> {
    check_config(cfg)?;
    let n_stress = cfg
        .stress_cases
        .unwrap_or(((cfg.cases as f64) * 0.16).round() as usize);
    let units = model::units();
    let unit_names: Vec<String> = units.iter().map(|u| u.0.clone()).collect();
    let arms = match &cfg.custom_arms {
        Some(custom) => custom_arms(custom, &unit_names)?,
        None => demo_arms(&unit_names, cfg.arms),
    };
    check_size(cfg, n_stress, arms.len())?;
    let cases = model::cases(cfg.seed, cfg.cases, n_stress);

    let dir = AtomicDir::create(out, crate::io::output::FolderKind::Simulate)?;
    let mut files = Vec::new();
    let mut put = |name: &str, mut df: DataFrame| -> Result<()> {
        write::parquet(&mut df, &dir.path(name))?;
        files.push(name.to_string());
        Ok(())
    };
    put("cases.parquet", tables::cases(&cases)?)?;
    put("units.parquet", tables::units(&units, &cases)?)?;
    put(
        "case_units.parquet",
        tables::case_units(&unit_names, &cases)?,
    )?;
    put("arms.parquet", tables::arms(&arms)?)?;
    let results = tables::results(cfg, &arms, &cases, &units)?;
    let result_rows = results.height();
    put(
        "samples.parquet",
        tables::samples(&results, &cases, cfg.seed)?,
    )?;
    put("results.parquet", results)?;
    let (mix, mix_slice) = tables::mixes()?;
    put("mix.parquet", mix)?;
    put("mix-slice.parquet", mix_slice)?;
    put("passages.parquet", tables::passages(&units, &cases)?)?;
    // Traffic logs only when asked for: no table, rather than an empty one that `check` refuses.
    if cfg.shadow_requests > 0 {
        tables::write_shadow(&dir.path("shadow.parquet"), cfg.seed, cfg.shadow_requests)?;
        files.push("shadow.parquet".into());
    }
    if cfg.context_requests > 0 {
        tables::write_context(
            &dir.path("context_log.parquet"),
            cfg.seed,
            cfg.context_requests,
        )?;
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

/// The most rows `simulate` writes in one table: a billion results rows is about 40 GB in
/// memory before it is written (the benchmarks' largest is 100 million).
pub const MAX_ROWS: u64 = 1_000_000_000;

/// Refuses a simulation larger than [`MAX_ROWS`] in any table, before anything is written: the
/// results' (cases + stress cases) × arms × repeats, the shadow and context logs' requests. Counts
/// that overflow had panicked, and sizes beyond memory aborted, leaving a partial temporary folder.
fn check_size(cfg: &SimConfig, n_stress: usize, arms: usize) -> Result<()> {
    let results = (cfg.cases as u64)
        .checked_add(n_stress as u64)
        .and_then(|c| c.checked_mul(arms as u64))
        .and_then(|r| r.checked_mul(u64::from(cfg.repeats)));
    let sizes = [
        (
            results,
            "--cases, --stress-cases, --arms and --repeats make",
            "results rows",
        ),
        (
            Some(cfg.shadow_requests as u64),
            "--shadow-requests asks for",
            "shadow requests",
        ),
        (
            Some(cfg.context_requests as u64),
            "--context-requests asks for",
            "context requests",
        ),
    ];
    for (n, what, rows) in sizes {
        if n.is_none_or(|n| n > MAX_ROWS) {
            let n = n.map_or("more".into(), |n| crate::text::thousands(n as f64));
            return Err(Error::Usage(format!(
                "{what} {n} {rows}; simulate writes at most {} per table (held in memory before it is written): choose smaller counts",
                crate::text::thousands(MAX_ROWS as f64)
            )));
        }
    }
    Ok(())
}

/// Refuses settings that cannot make an experiment: no case, no repeat, no arm, or more arms
/// than the simulated prompt has room for.
fn check_config(cfg: &SimConfig) -> Result<()> {
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
    Ok(())
}
