//! The options the verbs share (flattened into each verb's `Args`), and how each applies itself
//! to the global settings ([`Apply`]).

use clap::Args;

use super::Common;

// The defaults live with what they configure: the analyses' `Config` and the logs' budget.
use ablate::analysis::{DEFAULT_BOOTSTRAP, DEFAULT_CONFIDENCE};
use ablate::io::logs::DEFAULT_MEMORY_TEXT as DEFAULT_MEMORY;

/// Every setting a verb's code reads, merged from the common options and the option groups the
/// verb takes ([`VerbArgs::apply`]); a verb that lacks a group gets its defaults, which it does
/// not read.
#[derive(Debug)]
pub(super) struct Global {
    pub(super) json: bool,
    pub(super) quiet: bool,
    pub(super) seed: u64,
    pub(super) bootstrap: usize,
    pub(super) confidence: f64,
    pub(super) per_arm: bool,
    pub(super) guarantee: Option<ablate::io::manifest::Guarantee>,
    pub(super) from_aggregates: Option<std::path::PathBuf>,
    pub(super) memory: u64,
    pub(super) export: Option<std::path::PathBuf>,
}

impl Global {
    pub(super) fn new(common: &Common) -> Global {
        Global {
            json: common.json,
            quiet: common.quiet,
            seed: 0,
            bootstrap: DEFAULT_BOOTSTRAP,
            confidence: DEFAULT_CONFIDENCE,
            per_arm: false,
            guarantee: None,
            from_aggregates: None,
            memory: ablate::io::logs::DEFAULT_MEMORY,
            export: None,
        }
    }
}

/// The confidence level (verbs that draw intervals or decide at a level).
#[derive(Debug, Args)]
#[command(next_help_heading = "Statistics")]
pub(super) struct Level {
    /// Confidence level of intervals, in (0, 1).
    #[arg(long, default_value_t = DEFAULT_CONFIDENCE)]
    pub(super) confidence: f64,
}

/// The random seed (verbs that resample or draw).
#[derive(Debug, Args)]
#[command(next_help_heading = "Statistics")]
pub(super) struct Seed {
    /// Random seed for bootstrap resamples and simulations; the same seed gives byte-identical
    /// output.
    #[arg(long, default_value_t = 0)]
    pub(super) seed: u64,
}

/// The statistics options of the verbs that judge arms.
#[derive(Debug, Args)]
#[command(next_help_heading = "Statistics")]
pub(super) struct Statistics {
    #[command(flatten)]
    pub(super) level: Level,
    #[command(flatten)]
    pub(super) seed: Seed,
    /// Bootstrap resamples, for the intervals that use them: a drop's from 100,000 cases (or
    /// clusters) up under the any-distribution guarantee, and curve's retention. Below 100,000 a drop's interval is a small-sample one
    /// (docs/statistics.md) and none are drawn. When they are drawn: at least
    /// 10/(1 − confidence) (200 at 95%), at most 1,000,000; 0 gives normal-approximation
    /// intervals instead.
    #[arg(long, default_value_t = DEFAULT_BOOTSTRAP)]
    pub(super) bootstrap: usize,
    /// Judge each arm at its own confidence level instead of family-wise. By default a verdict
    /// is "confident" only when its interval at 1 − α/K (K arms compared, Bonferroni) clears
    /// the threshold, so that all confident verdicts hold together at --confidence; with 41
    /// arms judged each at 95%, some wrong confident verdict is likely. The report says so at
    /// the top when this is set.
    #[arg(long)]
    pub(super) per_arm: bool,
    /// The guarantee the verdicts rest on (default: experiment.toml's `guarantee`, else
    /// any-distribution). any-distribution: valid at every sample size for any score
    /// distribution (wide where drops are small and spread); normal: the clustered t interval,
    /// narrower, asymptotic (warning sweep.normal_doubtful where drops are skewed and changed
    /// units few). Choose it before the run, with the threshold.
    #[arg(long, value_enum, value_name = "GUARANTEE")]
    pub(super) guarantee: Option<GuaranteeArg>,
}

/// `--guarantee`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(super) enum GuaranteeArg {
    /// Valid at every n for any score distribution.
    AnyDistribution,
    /// The clustered t interval (normal approximation).
    Normal,
}

/// Reading the engine's reduction instead of the raw table.
#[derive(Debug, Args)]
#[command(next_help_heading = "Scale")]
pub(super) struct Aggregates {
    /// Read the data from this file (Parquet or CSV: the result of the query `ablate sql VERB`
    /// prints, run where the data lives) instead of the raw table: the case × arm matrix for the
    /// verbs that read an experiment folder, the shadow or context sums for `shadow` and
    /// `context`.
    #[arg(long, value_name = "FILE")]
    pub(super) from_aggregates: Option<std::path::PathBuf>,
}

/// The memory budget of the verbs that stream production logs.
#[derive(Debug, Args)]
#[command(next_help_heading = "Scale")]
pub(super) struct Memory {
    /// Memory budget for streaming production logs (shadow, context, and report with them):
    /// a log too large for it is read in several passes, each over a hash partition of request
    /// ids. E.g. 4GiB, 1.5GiB, 8GB; at least 1GiB. Each pass reads the log again, so a small
    /// budget costs time: a 100M-row shadow log takes 8 passes at 4GiB and 100 at 1GiB (about 14
    /// minutes on 2 cores).
    #[arg(long, value_name = "SIZE", default_value = DEFAULT_MEMORY, value_parser = parse_memory)]
    pub(super) memory: u64,
}

/// Writing the verb's tables as Parquet.
#[derive(Debug, Args)]
#[command(next_help_heading = "Output")]
pub(super) struct Export {
    /// Also write the verb's tables as Parquet files into this folder (one per table, named as
    /// in its JSON: arms.parquet, …), with the set, its hash, the model, seed, bootstrap,
    /// confidence, version and command line in each file's metadata. Columns and types are
    /// fixed per verb (docs/tables.md). The folder is replaced only when it is an export ablate
    /// wrote (never a report or an experiment).
    #[arg(long, value_name = "DIR")]
    pub(super) export: Option<std::path::PathBuf>,
}

/// An option group sets its fields of the merged settings.
pub(super) trait Apply {
    fn apply(&self, g: &mut Global);
}

impl Apply for Level {
    fn apply(&self, g: &mut Global) {
        g.confidence = self.confidence;
    }
}

impl Apply for Seed {
    fn apply(&self, g: &mut Global) {
        g.seed = self.seed;
    }
}

impl Apply for Statistics {
    fn apply(&self, g: &mut Global) {
        self.level.apply(g);
        self.seed.apply(g);
        g.bootstrap = self.bootstrap;
        g.per_arm = self.per_arm;
        g.guarantee = self.guarantee.map(|a| match a {
            GuaranteeArg::AnyDistribution => ablate::io::manifest::Guarantee::AnyDistribution,
            GuaranteeArg::Normal => ablate::io::manifest::Guarantee::Normal,
        });
    }
}

impl Apply for Aggregates {
    fn apply(&self, g: &mut Global) {
        g.from_aggregates.clone_from(&self.from_aggregates);
    }
}

impl Apply for Memory {
    fn apply(&self, g: &mut Global) {
        g.memory = self.memory;
    }
}

impl Apply for Export {
    fn apply(&self, g: &mut Global) {
        g.export.clone_from(&self.export);
    }
}

/// The options of a verb that reads the case × arm matrix and judges arms.
#[derive(Debug, Args)]
pub(super) struct MatrixOptions {
    #[command(flatten)]
    pub(super) statistics: Statistics,
    #[command(flatten)]
    pub(super) aggregates: Aggregates,
    #[command(flatten)]
    pub(super) export: Export,
}

impl Apply for MatrixOptions {
    fn apply(&self, g: &mut Global) {
        self.statistics.apply(g);
        self.aggregates.apply(g);
        self.export.apply(g);
    }
}

pub(super) fn parse_memory(s: &str) -> std::result::Result<u64, String> {
    ablate::io::logs::parse_memory(s).map_err(|e| e.to_string())
}

/// Where production's shares come from, for `reweight` and `report` alike.
#[derive(Debug, Args)]
pub(super) struct ProductionArgs {
    /// Production mix file(s): stratum text columns + `share` or `count`. Repeat to rake
    /// (default: the experiment's mix table).
    #[arg(long = "mix", value_name = "FILE")]
    pub(super) mixes: Vec<std::path::PathBuf>,
    /// Stratum column(s) to weight by (repeatable).
    #[arg(long = "by", value_name = "COL")]
    pub(super) by: Vec<String>,
    /// Derive the mix by counting this production log's --by columns.
    #[arg(long, value_name = "LOG", conflicts_with = "mixes")]
    pub(super) mix_from: Option<std::path::PathBuf>,
    /// Renormalise over measured strata instead of failing on production strata with no eval case.
    #[arg(long)]
    pub(super) allow_unmeasured: bool,
}

impl ProductionArgs {
    /// The mixes loaded (each --mix, then the --mix-from log's counts), with --by and
    /// --allow-unmeasured.
    ///
    /// # Errors
    /// A mix or log that cannot be read.
    pub(super) fn load(&self) -> ablate::error::Result<ablate::analysis::all::Production> {
        use ablate::io::Mix;
        use ablate::io::prelude::*;
        use ablate::io::table::TableFile;
        let mut mixes = Vec::new();
        for path in &self.mixes {
            mixes.push(Mix::load(&TableFile::given(path, "--mix")?)?);
        }
        if let Some(log) = &self.mix_from {
            mixes.push(Mix::from_log(
                &TableFile::given(log, "--mix-from")?,
                &self.by,
            )?);
        }
        Ok(ablate::analysis::all::Production {
            mixes,
            by: self.by.clone(),
            allow_unmeasured: self.allow_unmeasured,
        })
    }

    /// Adds the files it reads to `paths` (checked against the outputs).
    pub(super) fn inputs(&self, paths: &mut super::IoPaths) {
        for mix in &self.mixes {
            paths.input("--mix", mix);
        }
        if let Some(log) = &self.mix_from {
            paths.input("--mix-from", log);
        }
    }
}
