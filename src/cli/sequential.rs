//! `ablate watch` and `ablate next`: anytime-valid monitoring of a running ablation.

use ablate::verb::Verb;
use std::path::PathBuf;

use clap::Args;

use ablate::analysis::sequential::{self, SequentialOptions};
use ablate::error::Result;
use ablate::io::watch_state;
use ablate::report;

use super::{Apply as _, Global, config, emit, load};

/// Decide every arm of a running ablation with anytime-valid tests at the threshold, and stop the
/// ones already decided.
///
/// Reads a results table that is still growing (arms and cases partly run). Units are cases, or
/// clusters when cases have a `cluster` column, in a fixed order drawn from --seed; a unit enters
/// once it has all its repeats in the arm and the baseline. Each arm runs two one-sided betting
/// tests at threshold_drop (Waudby-Smith & Ramdas, JRSS-B 2024): "drop ≤ threshold" (rejected:
/// needed) and "drop ≥ threshold" (rejected: removable); neither: continue. A unit bets its
/// paired drops' sum minus threshold × its cases, so the drop tested is the case-weighted one
/// that sweep reports, whatever the cluster sizes. Valid at every sample size at once: look after
/// every batch, stop whenever. Scores must lie in [score_min, score_max] (experiment.toml;
/// default 0 and 1). Shown: the drop, its anytime-valid interval (the thresholds neither test
/// rejects), the tests' p-values, the units used and a projection of the units still needed.
/// The chance of any wrong decision across all arms is at most 1 − --confidence (Bonferroni: each
/// arm at α/arms). A decided arm stops, and its decision is kept in DIR/.ablate-watch.json under
/// this experiment (its cases and arms, not its results) and this run's settings (seed,
/// threshold, confidence, repeats, score range, arms), so a later run with the same settings
/// never flips it (rows beyond the recorded repeats, such as a retried call, are not waited for),
/// and a run on another experiment or with other settings neither uses nor erases it; --reopen
/// decides again from the table.
///
/// --replay runs a complete experiment as if it had been run sequentially: where each arm would
/// have stopped, whether that agrees with the full run's verdict, and the calls saved.
#[derive(Debug, Args)]
pub(super) struct WatchArgs {
    /// Experiment folder.
    dir: PathBuf,
    /// Replay a complete experiment in the seeded order instead of watching a running one.
    #[arg(long)]
    replay: bool,
    /// Decide again from the table, ignoring (and rewriting) the decisions in .ablate-watch.json.
    #[arg(long)]
    reopen: bool,
    /// Repeats a (case, arm) cell needs to count as complete (default: the most any cell has;
    /// at most 10,000).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    repeats: Option<u32>,
    #[command(flatten)]
    statistics: super::Statistics,
    #[command(flatten)]
    export: super::Export,
}

/// Runs `ablate watch`.
pub(super) fn watch(args: WatchArgs, g: &Global) -> Result<String> {
    let WatchArgs {
        dir,
        replay,
        reopen,
        repeats,
        ..
    } = args;
    let exp = load(&dir, g, Verb::Watch)?;
    let opts = SequentialOptions::from_config(&config(g), repeats, reopen);
    if replay {
        let r = ablate::analysis::all::replay(&exp, &config(g), &opts)?;
        return emit(
            g,
            "replay",
            &r,
            Some(&exp),
            report::sequential::replay_human,
        );
    }
    let state = if reopen {
        None
    } else {
        watch_state::read(&dir)?
    };
    let mut w = sequential::watch(&exp, &opts, state.as_ref())?;
    // Recorded before the output is made, so that a failure is one of its warnings: in --json
    // (which the Python module reads, always with --quiet), in --export and on the terminal.
    if let Err(e) = watch_state::record(&dir, &w.settings, sequential::decisions(&w)) {
        w.warnings.push(ablate::warning::Warning::new(
            "watch.not_recorded",
            format!("this run's decisions were not recorded, so a later run may decide again: {e}"),
        ));
    }
    emit(
        g,
        Verb::Watch.name(),
        &w,
        Some(&exp),
        report::sequential::watch_human,
    )
}

/// Write the next batch of calls for the arms still open: (case_id, arm, repeat), for the eval
/// harness to run.
///
/// Follows every arm as `ablate watch` does (the same seeded unit order, the same decisions),
/// then spends --calls on the arms still to continue, in turn: each gets its next unit in the
/// order, with the repeats its cells lack in the arm and in the baseline (the baseline is run once
/// per case, shared by the arms). Only whole units are scheduled, so a batch may use a little
/// less than --calls. Repeat numbers continue from the repeats a cell already has, from 0. The
/// batch is Parquet, or CSV for a .csv path; an existing file is replaced only if ablate wrote it
/// (or with --force).
#[derive(Debug, Args)]
pub(super) struct NextArgs {
    /// Experiment folder.
    dir: PathBuf,
    /// Calls to spend (a batch holds at most 1,000,000; run it, then ask again).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    calls: u64,
    /// Where to write the batch (.parquet or .csv).
    #[arg(long)]
    out: PathBuf,
    /// Repeats per (case, arm) (default: the most any cell has; at most 10,000).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    repeats: Option<u32>,
    /// Replace an existing file ablate did not write.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    level: super::Level,
    #[command(flatten)]
    seed: super::Seed,
    #[command(flatten)]
    export: super::Export,
}

/// Runs `ablate next`.
pub(super) fn next(args: NextArgs, g: &Global) -> Result<String> {
    let NextArgs {
        dir,
        calls,
        out,
        repeats,
        force,
        ..
    } = args;
    let exp = load(&dir, g, Verb::Next)?;
    let opts = SequentialOptions::from_config(&config(g), repeats, false);
    let state = watch_state::read(&dir)?;
    let w = sequential::watch(&exp, &opts, state.as_ref())?;
    let n = sequential::next(&exp, &w, &opts, calls);
    let rows: Vec<(&str, &str, u32)> = n
        .calls
        .iter()
        .map(|c| (c.case_id.as_str(), c.arm.as_str(), c.repeat))
        .collect();
    ablate::io::write::calls_table(&out, &rows, force)?;
    if g.export.is_some() {
        super::export(g, Verb::Next.name(), &super::to_value(&n)?, Some(&exp))?;
    }
    if g.json {
        report::json(&n)
    } else {
        Ok(report::sequential::next_human(
            &n,
            &out.display().to_string(),
        ))
    }
}

impl super::VerbArgs for WatchArgs {
    fn paths(&self) -> super::IoPaths {
        super::IoPaths::experiment(&self.dir)
    }

    fn apply(&self, g: &mut super::Global) {
        self.statistics.apply(g);
        self.export.apply(g);
    }
}

impl super::VerbArgs for NextArgs {
    fn paths(&self) -> super::IoPaths {
        let mut p = super::IoPaths::experiment(&self.dir);
        p.file("--out", &self.out, self.force);
        p
    }

    fn apply(&self, g: &mut super::Global) {
        self.level.apply(g);
        self.seed.apply(g);
        self.export.apply(g);
    }
}
