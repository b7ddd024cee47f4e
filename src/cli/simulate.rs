//! `ablate simulate`: synthetic experiments.

use ablate::io::prelude::*;
use std::path::PathBuf;

use clap::Args;

use ablate::error::Result;
use ablate::io::Arms;
use ablate::io::table::TableFile;
use ablate::report;
use ablate::simulate::{self, SimConfig};

use super::{Apply as _, Global};

/// Write a synthetic experiment (the demo story, or large ones for benchmarks).
///
/// With the default settings it writes the demo (notebooks-data/support-eval-v3): a support
/// assistant's prompt of system instructions, twelve examples, five passages and a conversation
/// tail, 41 arms, production mix, shadow traffic, a context log and samples, with the story the
/// tour tells (the refund window is carried by two examples and a passage at once). Other settings
/// name the set after them (e.g. support-eval-v3-seed11-cases2000), so that two simulated
/// experiments never share a report folder. --design FILE simulates a planned design. The model:
/// docs/experiment.md.
#[derive(Debug, Args)]
pub(super) struct SimulateArgs {
    /// Output folder. An existing folder is replaced only if it is an experiment `ablate simulate`
    /// wrote (its .ablate-output marker lists every file in it) or it is empty; anything else (an
    /// imported experiment, a report, an export, a folder of yours) is refused.
    #[arg(long)]
    out: PathBuf,
    /// Main-set cases.
    #[arg(long, default_value_t = 500)]
    cases: usize,
    /// Stress cases (default: 16% of --cases).
    #[arg(long)]
    stress_cases: Option<usize>,
    /// Repeats per case and arm.
    #[arg(long, default_value_t = 3)]
    repeats: u32,
    /// Total arms, baseline included (default: the demo's 42; at least 2, a baseline and one
    /// arm to compare with it). Extra arms remove pairs of units.
    #[arg(long)]
    arms: Option<usize>,
    /// Requests in shadow.parquet.
    #[arg(long, default_value_t = 4000)]
    shadow_requests: usize,
    /// Agent requests in context_log.parquet.
    #[arg(long, default_value_t = 1500)]
    context_requests: usize,
    /// Simulate the arms of this table (e.g. written by `ablate plan --out`) instead of the demo's.
    #[arg(long, value_name = "ARMS_FILE", conflicts_with = "arms")]
    design: Option<PathBuf>,
    #[command(flatten)]
    seed: super::Seed,
}

/// Runs `ablate simulate`.
pub(super) fn simulate(args: SimulateArgs, g: &Global) -> Result<String> {
    let json = g.json;
    let SimulateArgs {
        out,
        cases,
        stress_cases,
        repeats,
        arms,
        shadow_requests,
        context_requests,
        design,
        ..
    } = args;
    if let Some(n @ 0..2) = arms {
        return Err(ablate::error::Error::Usage(format!(
            "--arms {n}: an experiment needs its baseline and at least one arm to compare with it (every verb would refuse it); give --arms 2 or more"
        )));
    }
    let custom_arms = match design {
        Some(path) => Some(Arms::load(&TableFile::given(&path, "--design")?)?.specs),
        None => None,
    };
    let cfg = SimConfig {
        custom_arms,
        cases,
        stress_cases,
        seed: g.seed,
        repeats,
        arms,
        shadow_requests,
        context_requests,
    };
    let s = simulate::run(&cfg, &out)?;
    if json {
        report::json(&s)
    } else {
        Ok(format!(
            "wrote {} (seed {}): {} main + {} stress cases, {} arms × {} repeats = {} result rows\nfiles: {}\nnext: ablate check {}\n",
            s.out,
            s.seed,
            s.cases,
            s.stress_cases,
            s.arms,
            s.repeats,
            s.result_rows,
            s.files.join(", "),
            s.out
        ))
    }
}

impl super::VerbArgs for SimulateArgs {
    fn paths(&self) -> super::IoPaths {
        let mut p = super::IoPaths::default();
        if let Some(design) = &self.design {
            p.input("--design", design);
        }
        p.folder("--out", &self.out, super::FolderKind::Simulate);
        p
    }

    fn apply(&self, g: &mut super::Global) {
        self.seed.apply(g);
    }
}
