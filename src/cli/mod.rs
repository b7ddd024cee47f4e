//! Command-line definitions (clap derive) and dispatch to the library. Each verb has an `Args`
//! struct, whose doc comment is its `--help`, beside the function that runs it, in the module of
//! its family; this module holds the global options, the verb list and what the verbs share.

mod examples;
mod experiment;
mod import;
mod live;
mod options;
mod plan;
mod report_cmd;
mod reweight;
mod schema;
mod sequential;
mod shell;
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
use options::{Aggregates, Apply, Export, Global, Level, MatrixOptions, Memory, Seed, Statistics};

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
.csv. Try:\n  ablate simulate --out /tmp/demo\n  ablate check /tmp/demo\n\nFrom a harness's logs (Inspect AI, lm-evaluation-harness, promptfoo):\n  ablate import inspect logs/ --out exp --threshold-drop 0.02\nWhere the results live (DuckDB, Spark, Trino, BigQuery): print the reduction, run it there, then\n  ablate sweep exp --from-aggregates agg.parquet   (see ablate sql --help)",
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
    /// Human tables with every column, however wide. By default a table keeps the columns that
    /// fit in 120 characters, those a reader needs first, and names the others below it.
    #[arg(long, global = true, help_heading = "Output")]
    wide: bool,
}

/// Declares the subcommands, one row each: the variant, its `Args` struct (whose doc comment is
/// its `--help`) and the function that runs it. From the rows come the clap enum [`Command`],
/// [`Command::args`] and [`Command::run`].
macro_rules! commands {
    ($( $(#[$meta:meta])* $variant:ident($args:ty) => $run:path, )*) => {
        /// The verbs. Each one's `--help` is the doc comment of its `Args` struct.
        #[derive(Debug, Subcommand)]
        enum Command {
            $( $(#[$meta])* $variant($args), )*
        }

        impl Command {
            /// The verb's arguments.
            fn args(&self) -> &dyn VerbArgs {
                match self {
                    $( Command::$variant(a) => a, )*
                }
            }

            /// Runs the verb.
            fn run(self, g: &Global) -> Result<String> {
                match self {
                    $( Command::$variant(a) => $run(a, g), )*
                }
            }
        }
    };
}

commands! {
    #[command(after_help = examples::CHECK)]
    Check(experiment::CheckArgs) => experiment::check,
    #[command(after_help = examples::SWEEP)]
    Sweep(experiment::SweepArgs) => experiment::sweep,
    #[command(after_help = examples::VARIANCE)]
    Variance(experiment::VarianceArgs) => experiment::variance,
    #[command(after_help = examples::REWEIGHT)]
    Reweight(reweight::ReweightArgs) => reweight::reweight,
    #[command(after_help = examples::STRESS)]
    Stress(experiment::StressArgs) => experiment::stress,
    #[command(after_help = examples::INTERACTIONS)]
    Interactions(experiment::InteractionsArgs) => experiment::interactions,
    #[command(after_help = examples::PLAN)]
    Plan(plan::PlanArgs) => plan::plan,
    #[command(after_help = examples::NEED)]
    Need(experiment::NeedArgs) => experiment::need,
    #[command(after_help = examples::CURVE)]
    Curve(experiment::CurveArgs) => experiment::curve,
    #[command(after_help = examples::SELECTOR)]
    Selector(experiment::SelectorArgs) => experiment::selector,
    #[command(after_help = examples::RECORD)]
    Record(experiment::RecordArgs) => experiment::record,
    #[command(after_help = examples::SHADOW)]
    Shadow(live::ShadowArgs) => live::shadow,
    #[command(after_help = examples::CONTEXT)]
    Context(live::ContextArgs) => live::context,
    #[command(after_help = examples::WATCH)]
    Watch(sequential::WatchArgs) => sequential::watch,
    #[command(after_help = examples::NEXT)]
    Next(sequential::NextArgs) => sequential::next,
    #[command(after_help = examples::REPORT)]
    Report(report_cmd::ReportArgs) => report_cmd::report,
    #[command(after_help = examples::SIMULATE)]
    Simulate(simulate::SimulateArgs) => simulate::simulate,
    #[command(after_help = examples::IMPORT)]
    Import(import::ImportArgs) => import::import,
    #[command(after_help = examples::SQL)]
    Sql(sql::SqlArgs) => sql::sql,
    #[command(after_help = examples::COMPLETIONS)]
    Completions(shell::CompletionsArgs) => shell::completions,
    #[command(after_help = examples::MAN)]
    Man(shell::ManArgs) => shell::man,
    /// Every verb's tables and options, the manifest keys and the experiment's tables, as JSON
    /// (for the Python module and other wrappers).
    #[command(hide = true)]
    Schema(schema::SchemaArgs) => schema::schema,
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

    /// A folder the verb writes whole: a report, an export or an experiment. It may replace only
    /// a folder of the same kind ([`FolderKind`]), and a report or export never an experiment.
    fn folder(&mut self, flag: &'static str, path: &std::path::Path, kind: FolderKind) {
        self.destinations.push(Destination {
            flag,
            path: path.to_path_buf(),
            kind: DestinationKind::Folder(kind),
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
            self.folder("--export", dir, FolderKind::Export);
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
    } else if path.exists() {
        TableFile::given(path, &format!("the {} log", stem.trim_end_matches("_log")))
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
    // The verbs that judge arms against the baseline refuse what `check` refuses (need and the
    // selector read the baseline's context alone; watch and next run the arms to come).
    if matches!(
        verb,
        Verb::Sweep
            | Verb::Variance
            | Verb::Stress
            | Verb::Interactions
            | Verb::Reweight
            | Verb::Record
            | Verb::Report
    ) {
        refuse_baseline_only(&exp)?;
    }
    // The floor on resamples holds only where they are drawn (B is otherwise unused).
    let min = analysis::min_bootstrap(g.confidence);
    if g.bootstrap > 0
        && g.bootstrap < min
        && ablate::analysis::all::draws_resamples(&exp, verb, g.guarantee)
    {
        if min > MAX_BOOTSTRAP {
            return Err(Error::Usage(format!(
                "--confidence {} is too high for a percentile bootstrap: it needs at least 5 resamples beyond each end, so B ≥ 10/(1 − confidence) = {min}, more than the {MAX_BOOTSTRAP} ablate draws at most. Use --bootstrap 0 for normal-approximation intervals, or a confidence of 0.9999 or lower",
                g.confidence,
            )));
        }
        let better = if min < 10_000 {
            " (the default, 10,000, is better)"
        } else {
            ""
        };
        return Err(Error::Usage(format!(
            "--bootstrap {} is too few resamples for {} intervals: this experiment's intervals use the bootstrap, and a percentile interval needs at least 5 resamples beyond each end, so B ≥ 10/(1 − confidence) = {min}. Use --bootstrap {min} or more{better}, or --bootstrap 0 for normal-approximation intervals",
            g.bootstrap,
            ablate::report::text::percent_level(g.confidence),
        )));
    }
    if !g.quiet {
        for w in &exp.warnings {
            eprintln!("ablate: warning: {w}");
        }
    }
    Ok(exp)
}

/// Refuses results that hold the baseline only: no arm to compare it with, so every verdict
/// would be about nothing (the report had said `decide` selects no arm).
fn refuse_baseline_only(exp: &Experiment) -> Result<()> {
    let m = &exp.results.matrix;
    let base = exp.baseline_index();
    if (0..m.n_arms)
        .filter(|&a| a != base)
        .any(|a| (0..m.n_cases).any(|c| m.present(c, a)))
    {
        return Ok(());
    }
    Err(Error::BadValue {
        path: exp.results.path.clone(),
        column: "arm".into(),
        row: ablate::error::Row::none(),
        value: format!("\"{}\"", exp.manifest.baseline_arm),
        problem: "the results hold the baseline only: there is nothing to compare it with".into(),
        fix: "add the arms' results (import their logs together with the baseline's, or name arms with `ablate import … --arm NAME=GLOB`), or plan and run arms with `ablate plan` and `ablate next`".into(),
    })
}

fn config(g: &Global) -> analysis::Config {
    analysis::Config {
        seed: g.seed,
        bootstrap: g.bootstrap,
        confidence: g.confidence,
        progress: !g.quiet,
        memory: g.memory,
        per_arm: g.per_arm,
        guarantee: g.guarantee,
    }
}

/// Refuses `--json` for a verb whose output is text for another program (SQL, a completion
/// script, a manual page): it would be ignored, and a script asking for JSON would get text.
fn refuse_json(g: &Global, verb: &str, prints: &str) -> Result<()> {
    if g.json {
        return Err(ablate::error::Error::Usage(format!(
            "ablate {verb} prints {prints}, not JSON: --json does not apply to it; leave it out"
        )));
    }
    Ok(())
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
    human: impl Fn(&T) -> String,
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
    human: impl Fn(&T) -> String,
) -> Result<String> {
    emit_warned_as(g, verb.name(), r, exp, human)
}

/// [`emit_warned`] under a table group that is not a verb's name (`replay`).
fn emit_warned_as<T: serde::Serialize>(
    g: &Global,
    group: &str,
    r: &T,
    exp: &Experiment,
    human: impl Fn(&T) -> String,
) -> Result<String> {
    let value = report::with_warnings(r, &exp.warnings)?;
    export(g, group, &value, Some(exp))?;
    if g.json {
        report::json(&value)
    } else {
        Ok(human(r))
    }
}

/// Runs the parsed command and returns what to print on stdout.
pub fn run(cli: Cli) -> Result<String> {
    ablate::report::section::set_wide(cli.common.wide);
    let mut g = Global::new(&cli.common);
    let args = cli.command.args();
    args.apply(&mut g);
    validate(&g)?;
    args.paths().preflight(&g)?;
    cli.command.run(&g)
}
