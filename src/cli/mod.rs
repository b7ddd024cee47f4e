//! Command-line definitions (clap derive) and dispatch to the library. Each verb has an `Args`
//! struct, whose doc comment is its `--help`, beside the function that runs it, in the module of
//! its family; this module holds the global options, the verb list and what the verbs share.

mod experiment;
mod import;
mod live;
mod plan;
mod report_cmd;
mod reweight;
mod schema;
mod sequential;
mod simulate;
mod sql;

use ablate::io::prelude::*;
use clap::{Args, Parser, Subcommand};

use ablate::analysis;
use ablate::error::{Error, Result};
use ablate::io::Experiment;
use ablate::io::output::{Destination, DestinationKind, FolderKind, Input};
use ablate::io::table::TableFile;
use ablate::report;
use ablate::verb::Verb;

/// Which parts of an LLM prompt are earning their tokens, with statistics you can defend.
#[derive(Debug, Parser)]
#[command(
    name = "ablate",
    version,
    about,
    long_about = "ablate reads ablation experiments (a frozen eval set run with parts of the prompt \
removed, each arm repeated), production mixes, shadow traffic and context logs from Parquet or CSV, \
and tells you which prompt units are needed, with confidence intervals and verdicts against the \
threshold you agreed before the run.\n\nAn experiment is a folder with experiment.toml and tables \
(results, cases, arms, units, case_units, mix, passages, shadow, context_log), each as .parquet or \
.csv. Try:\n  ablate simulate --out /tmp/demo\n  ablate check /tmp/demo\n\nFrom a harness's logs (Inspect AI, lm-evaluation-harness, promptfoo):\n  ablate import inspect logs/ --out exp --threshold 0.02\nWhere the results live (DuckDB, Spark, Trino, BigQuery): print the reduction, run it there, then\n  ablate sweep exp --from-aggregates agg.parquet   (see ablate sql --help)",
    after_help = "Exit codes: 0 success, 2 bad input or usage (the message names the file, column and row), 1 any other failure."
)]
pub struct Cli {
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    command: Command,
}

/// Options every verb takes (anywhere on the line, before or after the verb).
#[derive(Debug, Args)]
struct Common {
    /// Machine-readable JSON on stdout instead of human tables.
    #[arg(long, global = true, help_heading = "Output")]
    json: bool,
    /// No progress bars on stderr.
    #[arg(long, global = true, help_heading = "Output")]
    quiet: bool,
}

// The defaults live with what they configure: the analyses' `Config` and the logs' budget.
use ablate::analysis::{DEFAULT_BOOTSTRAP, DEFAULT_CONFIDENCE};
use ablate::io::logs::DEFAULT_MEMORY_TEXT as DEFAULT_MEMORY;

/// Every setting a verb's code reads, merged from the common options and the option groups the
/// verb takes ([`VerbArgs::apply`]); a verb that lacks a group gets its defaults, which it does
/// not read.
#[derive(Debug)]
struct Global {
    json: bool,
    quiet: bool,
    seed: u64,
    bootstrap: usize,
    confidence: f64,
    per_arm: bool,
    from_aggregates: Option<std::path::PathBuf>,
    memory: u64,
    export: Option<std::path::PathBuf>,
}

impl Global {
    fn new(common: &Common) -> Global {
        Global {
            json: common.json,
            quiet: common.quiet,
            seed: 0,
            bootstrap: DEFAULT_BOOTSTRAP,
            confidence: DEFAULT_CONFIDENCE,
            per_arm: false,
            from_aggregates: None,
            memory: ablate::io::logs::DEFAULT_MEMORY,
            export: None,
        }
    }
}

/// The confidence level (verbs that draw intervals or decide at a level).
#[derive(Debug, Args)]
#[command(next_help_heading = "Statistics")]
struct Level {
    /// Confidence level of intervals, in (0, 1).
    #[arg(long, default_value_t = DEFAULT_CONFIDENCE)]
    confidence: f64,
}

/// The random seed (verbs that resample or draw).
#[derive(Debug, Args)]
#[command(next_help_heading = "Statistics")]
struct Seed {
    /// Random seed for bootstrap resamples and simulations; the same seed gives byte-identical
    /// output.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

/// The statistics options of the verbs that judge arms.
#[derive(Debug, Args)]
#[command(next_help_heading = "Statistics")]
struct Statistics {
    #[command(flatten)]
    level: Level,
    #[command(flatten)]
    seed: Seed,
    /// Bootstrap resamples for confidence intervals (0 = normal approximation only). At least
    /// 10/(1 − confidence), so that 5 resamples lie beyond each end of the interval: 200 at the
    /// default 95%, 1,000 at 99%; fewer are refused. At most 1,000,000. A drop's interval uses
    /// them only from 100,000 cases (or clusters); below that it is a small-sample interval
    /// (docs/statistics.md), and sweep draws no resamples.
    #[arg(long, default_value_t = DEFAULT_BOOTSTRAP)]
    bootstrap: usize,
    /// Judge each arm at its own confidence level instead of family-wise. By default a verdict
    /// is "confident" only when its interval at 1 − α/K (K arms compared, Bonferroni) clears
    /// the threshold, so that all confident verdicts hold together at --confidence; with 41
    /// arms judged each at 95%, some wrong confident verdict is likely. The report says so at
    /// the top when this is set.
    #[arg(long)]
    per_arm: bool,
}

/// Reading the engine's reduction instead of the raw table.
#[derive(Debug, Args)]
#[command(next_help_heading = "Scale")]
struct Aggregates {
    /// Read the data from this file (Parquet or CSV: the result of the query `ablate sql VERB`
    /// prints, run where the data lives) instead of the raw table: the case × arm matrix for the
    /// verbs that read an experiment folder, the shadow or context sums for `shadow` and
    /// `context`.
    #[arg(long, value_name = "FILE")]
    from_aggregates: Option<std::path::PathBuf>,
}

/// The memory budget of the verbs that stream production logs.
#[derive(Debug, Args)]
#[command(next_help_heading = "Scale")]
struct Memory {
    /// Memory budget for streaming production logs (shadow, context, and report with them):
    /// a log too large for it is read in several passes, each over a hash partition of request
    /// ids. E.g. 4GiB, 1.5GiB, 8GB; at least 1GiB. Each pass reads the log again, so a small
    /// budget costs time: a 100M-row shadow log takes 8 passes at 4GiB and 100 at 1GiB (about 14
    /// minutes on 2 cores).
    #[arg(long, value_name = "SIZE", default_value = DEFAULT_MEMORY, value_parser = parse_memory)]
    memory: u64,
}

/// Writing the verb's tables as Parquet.
#[derive(Debug, Args)]
#[command(next_help_heading = "Output")]
struct Export {
    /// Also write the verb's tables as Parquet files into this folder (one per table, named as
    /// in its JSON: arms.parquet, …), with the set, its hash, the model, seed, bootstrap,
    /// confidence, version and command line in each file's metadata. Columns and types are
    /// fixed per verb (docs/tables.md). The folder is replaced only when ablate wrote it.
    #[arg(long, value_name = "DIR")]
    export: Option<std::path::PathBuf>,
}

/// An option group sets its fields of the merged settings.
trait Apply {
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
struct MatrixOptions {
    #[command(flatten)]
    statistics: Statistics,
    #[command(flatten)]
    aggregates: Aggregates,
    #[command(flatten)]
    export: Export,
}

impl Apply for MatrixOptions {
    fn apply(&self, g: &mut Global) {
        self.statistics.apply(g);
        self.aggregates.apply(g);
        self.export.apply(g);
    }
}

fn parse_memory(s: &str) -> std::result::Result<u64, String> {
    ablate::io::logs::parse_memory(s).map_err(|e| e.to_string())
}

/// The verbs. Each one's `--help` is the doc comment of its `Args` struct.
#[derive(Debug, Subcommand)]
enum Command {
    Check(experiment::CheckArgs),
    Sweep(experiment::SweepArgs),
    Variance(experiment::VarianceArgs),
    Reweight(reweight::ReweightArgs),
    Stress(experiment::StressArgs),
    Interactions(experiment::InteractionsArgs),
    Plan(plan::PlanArgs),
    Need(experiment::NeedArgs),
    Curve(experiment::CurveArgs),
    Selector(experiment::SelectorArgs),
    Record(experiment::RecordArgs),
    Shadow(live::ShadowArgs),
    Context(live::ContextArgs),
    Watch(sequential::WatchArgs),
    Next(sequential::NextArgs),
    Report(report_cmd::ReportArgs),
    Simulate(simulate::SimulateArgs),
    Import(import::ImportArgs),
    Sql(sql::SqlArgs),
    /// Every verb's tables and options, the manifest keys and the experiment's tables, as JSON
    /// (for the Python module and other wrappers).
    #[command(hide = true)]
    Schema(schema::SchemaArgs),
}

/// What a verb reads and where it writes: compared with each other and checked before any work
/// ([`ablate::io::output::preflight`]), so that no output replaces an input and no refused
/// destination is found only after another has been written.
#[derive(Debug, Default)]
struct IoPaths {
    inputs: Vec<Input>,
    destinations: Vec<Destination>,
}

impl IoPaths {
    /// A verb that reads the experiment folder `dir`.
    fn experiment(dir: &std::path::Path) -> IoPaths {
        let mut p = IoPaths::default();
        p.input("the experiment folder", dir);
        p
    }

    fn input(&mut self, what: &str, path: &std::path::Path) {
        self.inputs.push(Input {
            what: what.into(),
            path: path.to_path_buf(),
        });
    }

    /// A report or export folder (never an experiment's place).
    fn folder(&mut self, flag: &'static str, path: &std::path::Path) {
        self.destinations.push(Destination {
            flag,
            path: path.to_path_buf(),
            kind: DestinationKind::Folder(FolderKind::Output),
        });
    }

    /// A new experiment folder (`import --out`), which may replace an experiment of ablate's.
    fn experiment_folder(&mut self, flag: &'static str, path: &std::path::Path) {
        self.destinations.push(Destination {
            flag,
            path: path.to_path_buf(),
            kind: DestinationKind::Folder(FolderKind::Experiment),
        });
    }

    fn file(&mut self, flag: &'static str, path: &std::path::Path, force: bool) {
        self.destinations.push(Destination {
            flag,
            path: path.to_path_buf(),
            kind: DestinationKind::File { force },
        });
    }

    /// Adds the global options' paths (`--from-aggregates` read, `--export` written) and checks
    /// the whole.
    fn preflight(mut self, g: &Global) -> Result<()> {
        if let Some(file) = &g.from_aggregates {
            self.input("--from-aggregates", file);
        }
        if let Some(dir) = &g.export {
            self.folder("--export", dir);
        }
        ablate::io::output::preflight(&self.inputs, &self.destinations)
    }
}

/// What the dispatcher needs of every verb's arguments.
trait VerbArgs {
    /// The paths it reads and writes.
    fn paths(&self) -> IoPaths;
    /// Sets the settings its option groups carry.
    fn apply(&self, g: &mut Global);
}

impl Command {
    /// The verb's arguments.
    fn args(&self) -> &dyn VerbArgs {
        match self {
            Command::Check(a) => a,
            Command::Sweep(a) => a,
            Command::Variance(a) => a,
            Command::Reweight(a) => a,
            Command::Stress(a) => a,
            Command::Interactions(a) => a,
            Command::Plan(a) => a,
            Command::Need(a) => a,
            Command::Curve(a) => a,
            Command::Selector(a) => a,
            Command::Record(a) => a,
            Command::Shadow(a) => a,
            Command::Context(a) => a,
            Command::Watch(a) => a,
            Command::Next(a) => a,
            Command::Report(a) => a,
            Command::Simulate(a) => a,
            Command::Import(a) => a,
            Command::Sql(a) => a,
            Command::Schema(a) => a,
        }
    }
}

/// Most bootstrap resamples accepted (the replicates are held in memory: B × arms floats).
const MAX_BOOTSTRAP: usize = 1_000_000;

/// The highest `--price-per-mtok` accepted: a million dollars per million tokens (a dollar a
/// token, far above any model's price). With at most 10¹² tokens a call (the loaders' cap) and
/// [`MAX_REQUESTS_PER_DAY`], a daily cost stays below 10²⁷ dollars: finite, where 1e308 of each
/// printed "$inf a day … saves $NaN".
const MAX_PRICE_PER_MTOK: f64 = 1e6;

/// The most `--requests-per-day` accepted (10¹⁵, a hundred thousand times any service's traffic).
const MAX_REQUESTS_PER_DAY: f64 = 1e15;

/// The most threads a thread-count variable may ask for: 4 per core, and at least 256.
///
/// Each count starts that many threads at once, each with its own stack (2 MiB of address
/// space): `POLARS_MAX_THREADS` sizes Polars' compute pool and its async executor, and
/// `RAYON_NUM_THREADS` ablate's own rayon pool. 100,000 asked for hundreds of GB, so under
/// `ulimit -v` (or a thread limit) the spawn failed and Polars' or rayon's `expect` panicked
/// with a backtrace (exit 101). The work is CPU-bound, so threads beyond the cores add memory,
/// not speed; 4 per core leaves room for a container whose CPU quota hides the host's cores,
/// and 256 × 3 pools × 2 MiB = 1.5 GiB still fits an 8 GB `ulimit -v`.
fn max_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    cores.saturating_mul(4).max(256)
}

/// Refuses thread settings in the environment that would make a library panic when its pool
/// starts: `POLARS_MAX_THREADS` of 0 or text (Polars), more threads than [`max_threads`] in
/// `POLARS_MAX_THREADS`, `POLARS_ASYNC_THREAD_COUNT`, `RAYON_NUM_THREADS` or
/// `RAYON_RS_NUM_CPUS` (a failed spawn panics), and text in the counts Polars parses with
/// `expect("integer")`. Rayon ignores text and 0 in its variables (it uses the core count), so
/// those are left alone.
fn check_environment() -> Result<()> {
    let cap = max_threads();
    // (variable, whether text or 0 is refused, whether the count is capped)
    let variables = [
        ("POLARS_MAX_THREADS", true, true),
        ("POLARS_ASYNC_THREAD_COUNT", true, true),
        ("POLARS_MAX_BLOCKING_THREAD_COUNT", true, false),
        ("POLARS_CONCURRENCY_BUDGET", true, false),
        ("RAYON_NUM_THREADS", false, true),
        ("RAYON_RS_NUM_CPUS", false, true),
    ];
    for (name, strict, capped) in variables {
        let Some(value) = std::env::var_os(name) else {
            continue;
        };
        // Parsed as Polars' `parse::<usize>().expect(..)` parses it (no spaces).
        let n = value.to_str().and_then(|v| v.parse::<usize>().ok());
        if strict && n.is_none_or(|n| n < 1) {
            return Err(Error::Usage(format!(
                "{name}={}: give a whole number, 1 or more, or unset it",
                value.to_string_lossy()
            )));
        }
        if let Some(n) = n
            && capped
            && n > cap
        {
            return Err(Error::Usage(format!(
                "{name}={n}: at most {cap} threads (4 per core of this machine, and at least 256); more threads than cores make ablate no faster, and each one reserves memory for its stack. Give {cap} or fewer, or unset it"
            )));
        }
    }
    Ok(())
}

fn validate(g: &Global) -> Result<()> {
    check_environment()?;
    if !(g.confidence > 0.0 && g.confidence < 1.0) {
        return Err(Error::Usage(format!(
            "--confidence {} is outside (0, 1); use e.g. 0.95",
            g.confidence
        )));
    }
    let min = analysis::min_bootstrap(g.confidence);
    if g.bootstrap > 0 && g.bootstrap < min {
        return Err(Error::Usage(format!(
            "--bootstrap {} is too few resamples for {} intervals: a percentile interval needs at least 5 resamples beyond each end, so B ≥ 10/(1 − confidence) = {min}. Use --bootstrap {min} or more (the default, 10,000, is better), or --bootstrap 0 for normal-approximation intervals",
            g.bootstrap,
            ablate::report::text::percent_level(g.confidence),
        )));
    }
    if g.bootstrap > MAX_BOOTSTRAP {
        return Err(Error::Usage(format!(
            "--bootstrap {} is more than {MAX_BOOTSTRAP} resamples; 10,000 already gives percentile intervals to about ±0.001 of their level",
            g.bootstrap
        )));
    }
    Ok(())
}

/// A log table given directly, or found by stem in an experiment folder.
fn log_table(path: &std::path::Path, stem: &str) -> Result<TableFile> {
    if path.is_dir() {
        ablate::io::table::find(path, stem)?.ok_or_else(|| Error::NotFound {
            path: path.join(format!("{stem}.parquet")),
            fix: format!(
                "give the {stem} file itself, or a folder holding {stem}.parquet or {stem}.csv"
            ),
        })
    } else if path.is_file() {
        Ok(TableFile::at(path))
    } else {
        Err(Error::NotFound {
            path: path.to_path_buf(),
            fix: format!("give a {stem} table (.parquet or .csv) or an experiment folder"),
        })
    }
}

/// Loads the experiment in `dir` with the tables `verb` reads, and prints its warnings on stderr
/// (unless --quiet).
fn load(dir: &std::path::Path, g: &Global, verb: Verb) -> Result<Experiment> {
    let exp = Experiment::load_tables(dir, g.from_aggregates.as_deref(), verb.reads())?;
    if !g.quiet {
        for w in &exp.warnings {
            eprintln!("ablate: warning: {w}");
        }
    }
    Ok(exp)
}

fn config(g: &Global) -> analysis::Config {
    analysis::Config {
        seed: g.seed,
        bootstrap: g.bootstrap,
        confidence: g.confidence,
        progress: !g.quiet,
        memory: g.memory,
        per_arm: g.per_arm,
    }
}

/// With `--export DIR`: writes the tables of `verb` (filled from its JSON, `value`) into DIR,
/// with the run's provenance, and says so on stderr.
fn export(
    g: &Global,
    verb: &str,
    value: &serde_json::Value,
    exp: Option<&Experiment>,
) -> Result<()> {
    let Some(dir) = &g.export else {
        return Ok(());
    };
    let tables = ablate::export::frames(ablate::export::spec::tables(verb), value)?;
    write_export(g, dir, verb, tables, exp)
}

fn write_export(
    g: &Global,
    dir: &std::path::Path,
    verb: &str,
    tables: Vec<(String, polars::prelude::DataFrame)>,
    exp: Option<&Experiment>,
) -> Result<()> {
    let n = tables.len();
    let provenance = ablate::export::Provenance::new(verb, &config(g), exp);
    let written = ablate::export::write(dir, tables, &provenance)?;
    if !g.quiet {
        eprintln!("ablate: wrote {n} tables to {}", written.display());
    }
    Ok(())
}

fn to_value<T: serde::Serialize>(r: &T) -> Result<serde_json::Value> {
    serde_json::to_value(r).map_err(|e| Error::Invariant(format!("cannot serialise output: {e}")))
}

/// JSON when asked for, else the human rendering; with `--export`, the tables of `group` (a
/// verb's name, or `replay`) too.
fn emit<T: serde::Serialize>(
    g: &Global,
    group: &str,
    r: &T,
    exp: Option<&Experiment>,
    human: fn(&T) -> String,
) -> Result<String> {
    if g.export.is_some() {
        export(g, group, &to_value(r)?, exp)?;
    }
    if g.json {
        report::json(r)
    } else {
        Ok(human(r))
    }
}

/// As [`emit`] for a verb run on an experiment: the JSON's `warnings` also carries the loader's
/// warnings (printed on stderr for people), so a script sees every warning a person does.
fn emit_warned<T: serde::Serialize>(
    g: &Global,
    verb: Verb,
    r: &T,
    exp: &Experiment,
    human: fn(&T) -> String,
) -> Result<String> {
    let value = report::with_warnings(r, &exp.warnings)?;
    export(g, verb.name(), &value, Some(exp))?;
    if g.json {
        report::json(&value)
    } else {
        Ok(human(r))
    }
}

/// Runs the parsed command and returns what to print on stdout.
pub fn run(cli: Cli) -> Result<String> {
    let mut g = Global::new(&cli.common);
    let args = cli.command.args();
    args.apply(&mut g);
    validate(&g)?;
    args.paths().preflight(&g)?;
    let g = &g;
    match cli.command {
        Command::Check(args) => experiment::check(args, g),
        Command::Sweep(args) => experiment::sweep(args, g),
        Command::Variance(args) => experiment::variance(args, g),
        Command::Reweight(args) => reweight::reweight(args, g),
        Command::Stress(args) => experiment::stress(args, g),
        Command::Interactions(args) => experiment::interactions(args, g),
        Command::Plan(args) => plan::plan(args, g),
        Command::Need(args) => experiment::need(args, g),
        Command::Curve(args) => experiment::curve(args, g),
        Command::Selector(args) => experiment::selector(args, g),
        Command::Record(args) => experiment::record(args, g),
        Command::Shadow(args) => live::shadow(args, g),
        Command::Context(args) => live::context(args, g),
        Command::Watch(args) => sequential::watch(args, g),
        Command::Next(args) => sequential::next(args, g),
        Command::Report(args) => report_cmd::report(args, g),
        Command::Simulate(args) => simulate::simulate(args, g),
        Command::Import(args) => import::import(args, g),
        Command::Sql(args) => sql::sql(args, g),
        Command::Schema(args) => schema::schema(args, g),
    }
}
