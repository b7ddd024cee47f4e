//! `ablate watch` and `ablate next`: anytime-valid monitoring of a running ablation.

use ablate::verb::Verb;
use std::path::{Path, PathBuf};

use clap::Args;

use ablate::analysis::sequential::{self, SequentialOptions};
use ablate::error::Result;
use ablate::io::output::FolderLock;
use ablate::io::watch_state;
use ablate::report;

use super::{Apply as _, Global, config, emit_warned, emit_warned_as, load};

/// Decide every arm of a running ablation with anytime-valid tests at the threshold, and stop the ones already decided.
///
/// Reads a results table that is still growing. Each arm runs two one-sided betting tests at
/// threshold_drop, valid at every sample size at once: look after every batch and stop whenever.
/// Prints each arm's state (needed, removable or continue), its drop with an anytime-valid
/// interval, the units used and those still needed. A decided arm stays decided: decisions are kept
/// in DIR/.ablate-watch.json under this experiment and these settings (--reopen decides again).
/// --replay runs a complete experiment as if it had been run sequentially. The tests, the
/// guarantee and the state file: docs/watch.md.
#[derive(Debug, Args)]
#[command(mut_arg("per_arm", |a| a.hide(true)))]
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
    /// with --replay, the number most cells have; at most 10,000).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    repeats: Option<u32>,
    #[command(flatten)]
    statistics: super::Statistics,
    #[command(flatten)]
    export: super::Export,
}

/// Refuses `--per-arm` for `watch` (`next` has no such flag): its sequences decide every arm as
/// one family (each at α/K), the decisions are recorded and stop arms, and `--replay` compares
/// them with the family's fixed-sample verdicts. The flag had been accepted and ignored.
fn refuse_per_arm(g: &Global) -> Result<()> {
    if g.per_arm {
        return Err(ablate::error::Error::Usage(
            "--per-arm does not apply to ablate watch: its anytime-valid tests decide every arm as one family (each at α/K, K arms), because their decisions are recorded and stop arms for good; leave --per-arm out".into(),
        ));
    }
    Ok(())
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
    refuse_per_arm(g)?;
    // The tables and the state from one generation of the folder (an `import --into` waits, or
    // is waited for), released before the state is written: the lock is exclusive then.
    let reading = FolderLock::shared(&dir);
    let exp = load(&dir, g, Verb::Watch)?;
    let opts = SequentialOptions::from_config(&config(g), repeats, reopen);
    if replay {
        // A replay reads no state: the folder is free once the tables are in.
        drop(reading);
        let r = ablate::analysis::all::replay(&exp, &config(g), &opts)?;
        return emit_warned_as(g, "replay", &r, &exp, report::sequential::replay_human);
    }
    // Under --reopen the recorded decisions are set aside but the recorded order is kept (the
    // tests decide again on the sequence they were reading); a state that cannot be read is then
    // no reason to stop, as before (recording it says why).
    let state = if reopen {
        watch_state::read(&dir).ok().flatten()
    } else {
        watch_state::read(&dir)?
    };
    drop(reading);
    let mut w = sequential::watch(&exp, &opts, state.as_ref())?;
    // Recorded before the output is made, so that a failure is one of its warnings: in --json
    // (which the Python module reads, always with --quiet), in --export and on the terminal.
    w.warnings.extend(record(&dir, &w));
    emit_warned(g, Verb::Watch, &w, &exp, |w| {
        report::sequential::watch_human(w, &dir.display().to_string())
    })
}

/// Records a watch's decisions and order in the folder's state; a failure is returned as the
/// warning that says so.
fn record(dir: &Path, w: &sequential::WatchOutput) -> Option<ablate::warning::Warning> {
    let continued = w.order.continues.as_ref().map(|(s, _)| s);
    let e = watch_state::record_run(dir, sequential::recorded_run(w), continued).err()?;
    Some(ablate::warning::Warning::new(
        "watch.not_recorded",
        format!("this run's decisions were not recorded, so a later run may decide again: {e}"),
    ))
}

/// Write the next batch of calls for the arms still open: (case_id, arm, repeat), for the eval harness to run.
///
/// Follows every arm as `watch` does (the same order, the same decisions), then spends
/// --calls on the arms still open, with the baseline's calls they need. Only whole units are
/// scheduled, so a batch may use a little less than --calls. Parquet, or CSV for a .csv path. Run
/// the batch in the harness, add its logs with `ablate import … --into DIR`, and watch again:
/// docs/watch.md.
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
    // As `watch`: one generation of the tables, the state and the repeats read below.
    let reading = FolderLock::shared(&dir);
    let exp = load(&dir, g, Verb::Next)?;
    let opts = SequentialOptions::from_config(&config(g), repeats, false);
    let state = watch_state::read(&dir)?;
    let w = sequential::watch(&exp, &opts, state.as_ref())?;
    let mut n = sequential::next(&exp, &w, calls);
    // Each cell's calls continue after the highest repeat number its rows hold (an import
    // numbers Inspect's epochs from 1), so that the batch's rows append without a duplicate.
    let cells: std::collections::HashSet<(String, String)> = n
        .calls
        .iter()
        .map(|c| (c.case_id.clone(), c.arm.clone()))
        .collect();
    if !cells.is_empty() {
        let results = ablate::io::table::TableFile::at(exp.results.path.clone());
        let last = ablate::io::results::last_repeats(&results, &cells)?;
        sequential::continue_numbering(&mut n.calls, &last).map_err(|problem| {
            ablate::error::Error::Usage(format!(
                "{}: {problem}; no batch was written. Renumber that cell's repeats from 0 (they only need to differ within a cell)",
                exp.results.path.display()
            ))
        })?;
    }
    drop(reading);
    let rows: Vec<(&str, &str, u32)> = n
        .calls
        .iter()
        .map(|c| (c.case_id.as_str(), c.arm.as_str(), c.repeat))
        .collect();
    ablate::io::write::calls_table(&out, &rows, force)?;
    // Once the batch is written, recorded as `watch` records it: the order the batch is
    // scheduled from (after cases were added, the continued one) is kept, so that cases added
    // again before the next watch are appended after the units this batch runs.
    n.warnings.extend(record(&dir, &w));
    // The loader's warnings too, as every verb on an experiment gives them.
    let value = report::with_warnings(&n, &exp.warnings)?;
    if g.export.is_some() {
        super::export(g, Verb::Next.name(), &value, Some(&exp))?;
    }
    if g.json {
        report::json(&value)
    } else {
        Ok(report::sequential::next_human(
            &n,
            &out.display().to_string(),
            &dir.display().to_string(),
            repeats,
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
