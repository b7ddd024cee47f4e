//! Verbs on production logs: shadow and context.

use std::path::PathBuf;

use clap::Args;

use ablate::analysis;
use ablate::error::{Error, Result};
use ablate::io::logs::{ContextLog, ShadowLog};
use ablate::report;

use super::{Global, emit, log_table};

/// Shadow traffic: how many requests changed behaviour, above the replay noise floor.
///
/// FILE is a shadow table (request_id, variant = production | replay | candidate, answer[,
/// score, tokens_in, stratum columns]) or an experiment folder holding one. Per request with all
/// three variants: changed = candidate answer ≠ production answer, noise = replay answer ≠
/// production answer; excess_rate = mean(changed − noise) with se and CI. With --by COL, the
/// same per stratum with Holm-adjusted one-sided p-values, flagging strata that changed beyond
/// the noise. Tokens (mean, p50, p95, p99) per variant and the saving; score delta when scored.
/// Streams the file: it is never loaded whole.
#[derive(Debug, Args)]
pub(super) struct ShadowArgs {
    /// Shadow table, or an experiment folder with one.
    #[arg(default_value = "notebooks-data/support-eval-v3")]
    file: PathBuf,
    /// Stratum column(s) to break the change rates down by (repeatable).
    #[arg(long = "by", value_name = "COL")]
    by: Vec<String>,
}

/// Runs `ablate shadow`.
pub(super) fn shadow(args: ShadowArgs, g: &Global) -> Result<String> {
    let json = g.json;
    let ShadowArgs { file, by } = args;
    let table = log_table(&file, "shadow")?;
    let log = ShadowLog::open(&table, &by)?;
    let r = analysis::shadow::run(
        &log,
        &analysis::shadow::ShadowOptions {
            confidence: g.confidence,
        },
    )?;
    emit(json, &r, report::shadow::human)
}

/// Context sizes: percentiles, composition by source, budget use, overflow; policy replay.
///
/// FILE is a context log (request_id, source, tokens[, step, mandatory, priority, relevance,
/// content_hash, model_limit, expected_output]) or an experiment folder holding one. A call is
/// (request_id, step). Reports calls, size mean/p50/p95/p99/max, each source's share of all
/// tokens, the hard input limit (model_limit − expected_output − output buffer − safety margin,
/// per call from the log, else from --policy or the flags), utilisation, overflow and soft-limit
/// crossing rates, and growth per agent step. --policy FILE (TOML: model_limit,
/// expected_output, output_buffer, safety_margin, soft_limit_ratio, global_budget, [budgets]
/// source = tokens) replays the budget manager: dedupe by content hash (the first copy stays),
/// mandatory first, CONTEXT_BUDGET_EXCEEDED when mandatory alone overflows (counted, never
/// truncated), then optional items by priority (lower number first), then relevance (higher
/// first), within per-source and global budgets.
#[derive(Debug, Args)]
pub(super) struct ContextArgs {
    /// Context log, or an experiment folder with one.
    #[arg(default_value = "notebooks-data/support-eval-v3")]
    file: PathBuf,
    /// Budget policy to replay (TOML).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
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

/// Runs `ablate context`.
pub(super) fn context(args: ContextArgs, g: &Global) -> Result<String> {
    let json = g.json;
    let ContextArgs {
        file,
        policy,
        model_limit,
        expected_output,
        output_buffer,
        safety_margin,
        soft_limit_ratio,
    } = args;
    let table = log_table(&file, "context_log")?;
    if policy.is_some()
        && (model_limit.is_some()
            || expected_output.is_some()
            || output_buffer.is_some()
            || safety_margin.is_some()
            || soft_limit_ratio.is_some())
    {
        return Err(Error::Usage(
            "--model-limit, --expected-output, --output-buffer, --safety-margin and --soft-limit-ratio go in the policy file when --policy is given (one place for every limit)".into(),
        ));
    }
    let defaults = analysis::context::Policy::default();
    let limits = analysis::context::Policy {
        model_limit,
        expected_output,
        output_buffer: output_buffer.unwrap_or(defaults.output_buffer),
        safety_margin: safety_margin.unwrap_or(defaults.safety_margin),
        soft_limit_ratio: soft_limit_ratio.unwrap_or(defaults.soft_limit_ratio),
        ..defaults
    };
    limits.validate(std::path::Path::new("(command line)"))?;
    let policy = policy
        .map(|p| analysis::context::Policy::load(&p))
        .transpose()?;
    let log = ContextLog::open(&table)?;
    let r = analysis::context::run(&log, &analysis::context::ContextOptions { policy, limits })?;
    emit(json, &r, report::context::human)
}
