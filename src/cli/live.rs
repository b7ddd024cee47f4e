//! Verbs on production logs: shadow and context.

use ablate::verb::Verb;
use std::path::PathBuf;

use clap::Args;

use ablate::analysis;
use ablate::error::{Error, Result};
use ablate::io::logs::{ContextLog, ShadowLog};
use ablate::io::table::TableFile;
use ablate::report;

use super::{Apply as _, Global, emit, log_table};

/// Shadow traffic: how many requests changed behaviour, above the replay noise floor.
///
/// FILE is a shadow table (request_id, variant = production | replay | candidate, answer, and
/// optionally score, tokens_in and stratum columns) or an experiment folder holding one. Prints how
/// often the candidate's answer differs from production's beyond the replay's own noise, with its
/// interval, per stratum with --by (flagging strata that changed), and the tokens saved. Requests
/// of one user are not independent: --cluster-by user. The file is streamed in bounded memory
/// (--memory); for a log in a warehouse, see `ablate sql shadow`. Formulas: docs/statistics.md
/// (shadow); scale: docs/scale.md.
#[derive(Debug, Args)]
pub(super) struct ShadowArgs {
    /// Shadow table, or an experiment folder with one (not given with --from-aggregates).
    #[arg(required_unless_present = "from_aggregates")]
    file: Option<PathBuf>,
    /// Stratum column(s) to break the change rates down by (repeatable).
    #[arg(long = "by", value_name = "COL")]
    by: Vec<String>,
    /// Column grouping requests into clusters (e.g. user): standard errors from a Poisson
    /// bootstrap over clusters.
    #[arg(long, value_name = "COL")]
    cluster_by: Option<String>,
    /// Poisson-bootstrap replicates with --cluster-by.
    #[arg(long, default_value_t = analysis::shadow::DEFAULT_REPLICATES as u64, value_parser = clap::value_parser!(u64).range(20..=100_000))]
    replicates: u64,
    #[command(flatten)]
    level: super::Level,
    #[command(flatten)]
    aggregates: super::Aggregates,
    #[command(flatten)]
    memory: super::Memory,
    #[command(flatten)]
    export: super::Export,
}

/// Runs `ablate shadow`.
pub(super) fn shadow(args: ShadowArgs, g: &Global) -> Result<String> {
    let ShadowArgs {
        file,
        by,
        cluster_by,
        replicates,
        ..
    } = args;
    let opts = analysis::shadow::ShadowOptions {
        confidence: g.confidence,
        memory: g.memory,
        replicates: replicates as usize,
        progress: !g.quiet,
    };
    let r = match &g.from_aggregates {
        Some(agg) => {
            let sums = ablate::io::logs::shadow::read_aggregates(
                &TableFile::given(agg, "--from-aggregates")?,
                &by,
                cluster_by.as_deref(),
            )?;
            analysis::shadow::finish(&sums, &by, &opts, agg)?
        }
        None => {
            let table = log_table(&required_log(file)?, "shadow")?;
            let log = ShadowLog::open(&table, &by, cluster_by.as_deref())?;
            analysis::shadow::run(&log, &opts)?
        }
    };
    emit(g, Verb::Shadow.name(), &r, None, report::shadow::human)
}

/// Context sizes: percentiles, composition by source, budget use, overflow; policy replay.
///
/// FILE is a context log (request_id, source, tokens, and optionally step, mandatory, priority,
/// relevance, content_hash, model_limit, expected_output) or an experiment folder holding one.
/// Prints the size percentiles per call, each source's share, the hard input limit, utilisation,
/// overflow and growth per agent step. --policy FILE (TOML) replays a budget manager on the log.
/// Streamed in bounded memory (--memory); for a log in a warehouse, see `ablate sql context`. The
/// policy file and formulas: docs/statistics.md (context); scale: docs/scale.md.
#[derive(Debug, Args)]
pub(super) struct ContextArgs {
    /// Context log, or an experiment folder with one (not given with --from-aggregates).
    #[arg(required_unless_present = "from_aggregates")]
    file: Option<PathBuf>,
    /// Budget policy to replay (TOML).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    aggregates: super::Aggregates,
    #[command(flatten)]
    memory: super::Memory,
    #[command(flatten)]
    export: super::Export,
}

/// The hard- and soft-limit flags of `context` (and of `sql context`, which writes them into
/// its query).
#[derive(Debug, Args)]
pub(super) struct LimitArgs {
    /// Model context window, for calls the log gives none.
    #[arg(long)]
    model_limit: Option<i64>,
    /// Expected output tokens, for calls the log gives none.
    #[arg(long)]
    expected_output: Option<i64>,
    /// Output buffer reserved on top of the expected output [default: 1000; in a policy file, its key].
    #[arg(long)]
    output_buffer: Option<i64>,
    /// Safety margin below the model limit [default: 1000].
    #[arg(long)]
    safety_margin: Option<i64>,
    /// Soft limit as a share of the hard limit, in (0, 1] [default: 0.75].
    #[arg(long)]
    soft_limit_ratio: Option<f64>,
}

impl LimitArgs {
    /// Whether any limit flag was given.
    fn any(&self) -> bool {
        self.model_limit.is_some()
            || self.expected_output.is_some()
            || self.output_buffer.is_some()
            || self.safety_margin.is_some()
            || self.soft_limit_ratio.is_some()
    }

    /// The limits, with the defaults for flags not given, checked.
    pub(super) fn policy(&self) -> Result<ablate::io::logs::context::Policy> {
        let defaults = ablate::io::logs::context::Policy::default();
        let limits = ablate::io::logs::context::Policy {
            model_limit: self.model_limit,
            expected_output: self.expected_output,
            output_buffer: self.output_buffer.unwrap_or(defaults.output_buffer),
            safety_margin: self.safety_margin.unwrap_or(defaults.safety_margin),
            soft_limit_ratio: self.soft_limit_ratio.unwrap_or(defaults.soft_limit_ratio),
            ..defaults
        };
        limits.validate(std::path::Path::new("(command line)"))?;
        Ok(limits)
    }
}

/// Runs `ablate context`.
pub(super) fn context(args: ContextArgs, g: &Global) -> Result<String> {
    let ContextArgs {
        file,
        policy,
        limits,
        ..
    } = args;
    if policy.is_some() && limits.any() {
        return Err(Error::Usage(
            "--model-limit, --expected-output, --output-buffer, --safety-margin and --soft-limit-ratio go in the policy file when --policy is given (one place for every limit)".into(),
        ));
    }
    let limits = limits.policy()?;
    let policy = policy
        .map(|p| ablate::io::logs::context::Policy::load(&p))
        .transpose()?;
    let opts = analysis::context::ContextOptions {
        policy,
        limits,
        memory: g.memory,
        progress: !g.quiet,
    };
    let r = match &g.from_aggregates {
        Some(agg) => {
            if opts.policy.is_some() {
                return Err(Error::Unsupported {
                    what: "ablate context --policy --from-aggregates".into(),
                    reason: "the policy replay admits items one by one, so it needs the log's items, not sums".into(),
                    fix: "run the replay on the log itself (it streams in bounded memory), or on a sample of requests exported from the warehouse".into(),
                });
            }
            let sums = ablate::io::logs::context::read_aggregates(
                &TableFile::given(agg, "--from-aggregates")?,
                &opts.effective_limits(),
            )?;
            analysis::context::finish(&sums, None)
        }
        None => {
            let log = ContextLog::open(&log_table(&required_log(file)?, "context_log")?)?;
            analysis::context::run(&log, &opts)?
        }
    };
    emit(g, Verb::Context.name(), &r, None, report::context::human)
}

/// The log (or experiment folder) given, which is required without --from-aggregates.
fn required_log(file: Option<PathBuf>) -> Result<PathBuf> {
    file.ok_or_else(|| {
        Error::Usage(
            "give the log (or an experiment folder holding it), or --from-aggregates FILE".into(),
        )
    })
}

impl super::VerbArgs for ShadowArgs {
    fn paths(&self) -> super::IoPaths {
        let mut p = super::IoPaths::default();
        if let Some(file) = &self.file {
            p.input("the shadow log", file);
        }
        p
    }

    fn apply(&self, g: &mut super::Global) {
        self.level.apply(g);
        self.aggregates.apply(g);
        self.memory.apply(g);
        self.export.apply(g);
    }
}

impl super::VerbArgs for ContextArgs {
    fn paths(&self) -> super::IoPaths {
        let mut p = super::IoPaths::default();
        if let Some(file) = &self.file {
            p.input("the context log", file);
        }
        if let Some(policy) = &self.policy {
            p.input("--policy", policy);
        }
        p
    }

    fn apply(&self, g: &mut super::Global) {
        self.aggregates.apply(g);
        self.memory.apply(g);
        self.export.apply(g);
    }
}
