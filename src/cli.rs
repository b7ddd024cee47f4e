//! Command-line definitions (clap derive) and dispatch to the library. Each verb's help says what
//! it computes, what it reads and what it costs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use ablate::analysis;
use ablate::error::{Error, Result};
use ablate::io::table::TableFile;
use ablate::io::units::Units;
use ablate::io::{Arms, Experiment, Mix};
use ablate::report;
use ablate::simulate::{self, SimConfig};

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
.csv. Try:\n  ablate simulate --out /tmp/demo\n  ablate check /tmp/demo",
    after_help = "Exit codes: 0 success, 2 bad input or usage (the message names the file, column and row), 1 any other failure."
)]
pub struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

/// Options every verb takes.
#[derive(Debug, Args)]
struct Global {
    /// Machine-readable JSON on stdout instead of human tables.
    #[arg(long, global = true)]
    json: bool,
    /// Random seed for bootstrap resamples and simulations; the same seed gives byte-identical output.
    #[arg(long, global = true, default_value_t = 0)]
    seed: u64,
    /// Bootstrap resamples for confidence intervals (0 = normal approximation only). At least
    /// 10/(1 − confidence), so that 5 resamples lie beyond each end of the interval: 200 at the
    /// default 95%, 1,000 at 99%; fewer are refused. At most 1,000,000.
    #[arg(long, global = true, default_value_t = 10_000)]
    bootstrap: usize,
    /// Confidence level of intervals, in (0, 1).
    #[arg(long, global = true, default_value_t = 0.95)]
    confidence: f64,
    /// No progress bars on stderr.
    #[arg(long, global = true)]
    quiet: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate an experiment folder and print what it holds.
    ///
    /// Reads experiment.toml and every table, checks columns, types and values (NaN or infinite
    /// scores, duplicate rows, case ids the cases table lacks, arms missing from arms, units missing
    /// from units, negative tokens, mix shares that do not sum to 1, empty, truncated or non-Parquet
    /// files) and prints cases (main and stress), arms, repeats, blocks and units, strata and the
    /// tables present, with warnings for unbalanced repeats and cases missing from arms. Exits 2 on
    /// the first error. Shadow and context logs are checked for columns only, so this stays fast on
    /// large logs.
    Check {
        /// Experiment folder.
        #[arg(default_value = "notebooks-data/support-eval-v3")]
        dir: PathBuf,
    },
    /// Every arm against the baseline: drops with confidence intervals, verdicts, churn, lost cases.
    ///
    /// For each arm, on the main set (stress cases excluded) and over the cases it shares with the
    /// baseline: score, paired drop (baseline − arm) with its standard error (clustered when cases
    /// have a `cluster` column), a percentile-bootstrap CI (cases or clusters resampled, one joint
    /// resample for every arm; --bootstrap 0 gives drop ± z·se), the correlation rho of baseline and
    /// arm case means, a one-sided p for drop > 0 Holm-adjusted across arms, an exact McNemar p for
    /// 0/1 scores with one repeat, the verdict against threshold_drop (needed if drop ≥ threshold)
    /// and whether the CI is wholly on the verdict's side (confident) or not (inconclusive); tokens
    /// removed, lost and gained cases, lost cases by slice, churn and missing cases. The churn
    /// floor (baseline cases whose pass/fail changes between repeats) is printed under the table.
    /// Cost: one pass over the case × arm matrix per resample; 10,000 resamples of 500 cases × 40
    /// arms take well under a second.
    Sweep {
        /// Experiment folder.
        #[arg(default_value = "notebooks-data/support-eval-v3")]
        dir: PathBuf,
    },
    /// Repeat variance, churn, the minimum detectable drop and the cases needed.
    ///
    /// For every arm (the baseline included): within-case variance across repeats, variance of
    /// case means, between-case variance (case-means variance − within/K), the share of the spread
    /// that is repeat noise, churn, the minimum detectable drop at 80% power
    /// ((z(1−α/2) + z(0.8))·se of the drop) and the cases needed to detect threshold_drop. Says
    /// plainly when the threshold is below what the set can detect, and whether more repeats or
    /// more cases would help (Miller 2024: Var(mean) = (Var(x) + E[σ²]/K)/n).
    Variance {
        /// Experiment folder.
        #[arg(default_value = "notebooks-data/support-eval-v3")]
        dir: PathBuf,
    },
    /// Post-stratify (one mix) or rake (several) the eval to production shares; coverage gaps.
    ///
    /// The eval set weights every case equally, so its composition silently claims how often each
    /// kind of traffic occurs. reweight replaces that claim with production's shares. With one mix
    /// (the experiment's mix table, or --mix FILE) it post-stratifies: x̂ = Σ_h W_h·mean_h x with
    /// se = √(Σ_h W_h²s_h²/n_h); strata are --by, else the manifest's `strata`, else the mix's text
    /// columns (crossed; the mix is marginalised onto them). With several --mix files, one column
    /// each, it rakes case weights by iterative proportional fitting to every margin (within 1e-10,
    /// at most 1000 rounds). For every arm it prints the drop on the set next to the drop in
    /// production and flags verdicts that flip; for every stratum, eval and production shares and
    /// whether the set under-samples it (production ≥ 2× eval). A production stratum with no eval
    /// case is an error unless --allow-unmeasured. Analysts have logs, not share tables:
    /// --mix-from LOG --by COL counts a production log (only `production` rows of a shadow file).
    Reweight {
        /// Experiment folder.
        #[arg(default_value = "notebooks-data/support-eval-v3")]
        dir: PathBuf,
        /// Production mix file(s): stratum text columns + `share` or `count`. Repeat to rake.
        #[arg(long = "mix", value_name = "FILE")]
        mixes: Vec<PathBuf>,
        /// Stratum column(s) to weight by (repeatable).
        #[arg(long = "by", value_name = "COL")]
        by: Vec<String>,
        /// Derive the mix by counting this production log's --by columns.
        #[arg(long, value_name = "LOG", conflicts_with = "mixes")]
        mix_from: Option<PathBuf>,
        /// Renormalise over measured strata instead of failing on production strata with no eval case.
        #[arg(long)]
        allow_unmeasured: bool,
    },
    /// The main set next to the stress slice: a cut must clear both thresholds.
    ///
    /// For every arm, the paired drop and its se on the main set (verdict against threshold_drop)
    /// and on the stress slice, the cases marked stress = true (verdict against
    /// stress_threshold_drop), the stress cases lost, and whether the cut is removable on both.
    Stress {
        /// Experiment folder.
        #[arg(default_value = "notebooks-data/support-eval-v3")]
        dir: PathBuf,
    },
    /// Composed cuts against the sum of their parts; pairwise interactions; Shapley values.
    ///
    /// Leave-one-out drops are each measured with everything else present, and they need not add:
    /// two units carrying the same fact each look free to remove. For every composed arm (explicit
    /// `components` in the arms table, or else the exact cover of its removed units by the fewest
    /// other measured arms) it reports the predicted drop (sum of the parts) and score, the measured
    /// ones, the interaction (measured − predicted) with se and joint-bootstrap CI, super-additive /
    /// sub-additive / additive, the lost cases by slice, the cases lost only when the parts are cut
    /// together, and where the loss concentrates. Also: the pairwise matrix (every two-unit arm whose
    /// singles were measured); exact Shapley values and interaction indices when the arms cover all
    /// 2^k subsets of k ≤ 12 units; and, for arms labelled with a `design` (ablate plan), main
    /// effects and two-factor interactions by least squares with case-level se.
    Interactions {
        /// Experiment folder.
        #[arg(default_value = "notebooks-data/support-eval-v3")]
        dir: PathBuf,
    },
    /// Emit an arms table for a design, with its cost and power.
    ///
    /// Designs over the units of a units table (or the --unit ones): loo (baseline + one arm per
    /// unit), pairs (+ every pair: the interaction matrix), factorial (all 2^k subsets, k ≤ 12:
    /// Shapley values), fractional (a regular two-level design of resolution V within 128 arms where
    /// one exists, else IV; e.g. 2^(5−1) in 16 arms with I = ABCDE; generators, defining relation and
    /// alias structure are printed). Reports arms, calls (arms × cases × repeats), input tokens and
    /// dollars, and with --sd or --pilot the minimum detectable drop at 80% power and the cases needed
    /// to detect threshold_drop. --out writes the arms table (.parquet or .csv) that `ablate` reads;
    /// `ablate simulate --design FILE` simulates it.
    Plan {
        /// Units table (unit, block, tokens): the units to design over.
        #[arg(long, value_name = "FILE")]
        units: PathBuf,
        /// loo, pairs, factorial or fractional.
        #[arg(long, value_enum)]
        design: DesignArg,
        /// Only these units (repeatable; default: every unit of the table).
        #[arg(long = "unit", value_name = "UNIT")]
        only: Vec<String>,
        /// Cases per arm.
        #[arg(long, default_value_t = 500)]
        cases: usize,
        /// Repeats per case.
        #[arg(long, default_value_t = 3)]
        repeats: u32,
        /// Full prompt tokens per call (default: Σ unit tokens).
        #[arg(long)]
        tokens_per_call: Option<f64>,
        /// Price per million input tokens, for the dollar cost.
        #[arg(long)]
        price_per_mtok: Option<f64>,
        /// sd of per-case paired differences, for power.
        #[arg(long, conflicts_with = "pilot")]
        sd: Option<f64>,
        /// A pilot experiment to estimate the sd from (median over its leave-one-out arms, adjusted
        /// from the pilot's repeats to --repeats with its within-case variance).
        #[arg(long, value_name = "DIR")]
        pilot: Option<PathBuf>,
        /// Drop to detect (default: the pilot's threshold_drop, else 0.005).
        #[arg(long)]
        threshold_drop: Option<f64>,
        /// Write the arms table here (.parquet, or .csv). An existing file is replaced only if
        /// ablate wrote it (a Parquet file with ablate's metadata), or with --force.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Replace an existing --out file that ablate cannot tell it wrote (any CSV, or a Parquet
        /// file from another tool).
        #[arg(long, requires = "out")]
        force: bool,
    },
    /// Per-case needed tokens (oracle) and the needed context fraction.
    ///
    /// Adds up, per main-set case, the tokens each block's rule in experiment.toml keeps: always
    /// (every unit), needed_units (units no measured arm within the block showed removable),
    /// through_gold_rank (passages down to the case's gold passage; all when it was not retrieved)
    /// and when:<column>=<value>. Unit tokens come from case_units, else units. Reports needed and
    /// sent tokens per block, the fraction needed / sent, the same weighted to the production mix,
    /// and whether it is an oracle figure (gold labels are not available at serve time, so it is an
    /// upper bound on what any deployable selector can save).
    Need {
        /// Experiment folder.
        #[arg(default_value = "notebooks-data/support-eval-v3")]
        dir: PathBuf,
        /// Leave production strata with no eval case out of value_production instead of failing.
        #[arg(long)]
        allow_unmeasured: bool,
    },
    /// Quality-vs-budget curves per selector; the smallest budget keeping quality; cost.
    ///
    /// Points are the arms with a budget_ratio (the baseline is 1.0), one curve per selector.
    /// Retention = arm score / baseline score over paired cases (a ratio of means, so cases the
    /// full context fails do not divide by zero), with a joint-bootstrap CI. Reports the smallest
    /// budget reaching quality_threshold and the smallest whose CI lower end does. With
    /// --price-per-mtok and --requests-per-day: daily cost at full context and at that budget, and
    /// the savings per day, month and in percent.
    Curve {
        /// Experiment folder.
        #[arg(default_value = "notebooks-data/support-eval-v3")]
        dir: PathBuf,
        /// Dollars per million input tokens.
        #[arg(long, requires = "requests_per_day")]
        price_per_mtok: Option<f64>,
        /// Requests per day.
        #[arg(long, requires = "price_per_mtok")]
        requests_per_day: Option<f64>,
    },
    /// Replay a reranker-threshold selector: saving vs the oracle saving, gold misses, measured cost.
    ///
    /// For thresholds 0.00, 0.05, …, 1.00 (and every selector_threshold an arm was run with), each
    /// main-set case keeps the passages scoring at or above the threshold. Reports kept and saved
    /// passage tokens, recovery (saving / oracle saving, where the oracle keeps passages down to the
    /// gold one), the share of cases whose gold passage is dropped, and the drop measured by the arm
    /// run at that threshold.
    Selector {
        /// Experiment folder.
        #[arg(default_value = "notebooks-data/support-eval-v3")]
        dir: PathBuf,
    },
    /// The decision record (JSON): the needed context fraction with what produced it.
    ///
    /// claim, value, needed and sent tokens, the set and the SHA-256 of its sorted case ids (first
    /// 16 hex digits: `LC_ALL=C sort ids.txt | sha256sum` reproduces it), cases, threshold, baseline score,
    /// repeats, churn floor, model, measured_at, whether the figure is an oracle (and why), whether
    /// a composed cut was measured and checked, the known coverage gap, the value weighted to
    /// production, the stress slice's verdicts, and ablate's version, seed and bootstrap. Always JSON.
    Record {
        /// Experiment folder.
        #[arg(default_value = "notebooks-data/support-eval-v3")]
        dir: PathBuf,
        /// Leave production strata with no eval case out (reported as unmeasured_share) instead of failing.
        #[arg(long)]
        allow_unmeasured: bool,
    },
    /// Shadow traffic: how many requests changed behaviour, above the replay noise floor.
    ///
    /// FILE is a shadow table (request_id, variant = production | replay | candidate, answer[,
    /// score, tokens_in, stratum columns]) or an experiment folder holding one. Per request with all
    /// three variants: changed = candidate answer ≠ production answer, noise = replay answer ≠
    /// production answer; excess_rate = mean(changed − noise) with se and CI. With --by COL, the
    /// same per stratum with Holm-adjusted one-sided p-values, flagging strata that changed beyond
    /// the noise. Tokens (mean, p50, p95, p99) per variant and the saving; score delta when scored.
    /// Streams the file: it is never loaded whole.
    Shadow {
        /// Shadow table, or an experiment folder with one.
        #[arg(default_value = "notebooks-data/support-eval-v3")]
        file: PathBuf,
        /// Stratum column(s) to break the change rates down by (repeatable).
        #[arg(long = "by", value_name = "COL")]
        by: Vec<String>,
    },
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
    Context {
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
    },
    /// Everything the inputs support, as a report with charts (the main job).
    ///
    /// Runs every analysis the experiment supports (sweep, variance, interactions; reweight with
    /// a mix, stress with stress cases, need and record with units, curve with budget arms,
    /// selector with passages, shadow and context with their logs) and writes, atomically (a
    /// failed run leaves no half-written report), into --out (default reports/<set>/):
    /// index.html (self-contained, inline SVG charts beside their tables, opens offline),
    /// report.md, charts/*.svg and *.png, record.json, analysis.json (every verb's JSON) and
    /// tables/*.csv. Charts: drop per arm with CI and threshold; set vs production drops;
    /// coverage; main vs stress; predicted vs measured composed cuts; quality-vs-budget curves
    /// with bands; selector recovery; context size histogram with p50/p95/p99 and composition;
    /// shadow excess change by stratum; churn per arm.
    Report {
        /// Experiment folder.
        #[arg(default_value = "notebooks-data/support-eval-v3")]
        dir: PathBuf,
        /// Output folder (default: reports/<set>/, with the set name reduced to letters, digits,
        /// `-`, `_` and `.`). An existing folder is replaced only if ablate wrote it (its
        /// .ablate-output marker lists every file in it) or it is empty; anything else is refused.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Write a synthetic experiment (the demo story, or large ones for benchmarks).
    ///
    /// The generative model: latent case difficulty (easy, hard and a few ambiguous cases that
    /// churn between repeats); facts each case relies on, carried by units (the system prompt,
    /// four load-bearing examples, the gold passage, the conversation tail on multi-turn cases);
    /// the refund window carried redundantly by two examples and passage rank 3, so their joint cut
    /// loses cases in refunds/out-of-window that no single cut does; three judge votes per repeat
    /// with sampling noise; reranker scores per passage. Also writes the production mix (23%
    /// multi-turn vs 6% in the set), shadow traffic and a context log. With the default settings
    /// it writes notebooks-data/support-eval-v3. Output is written atomically.
    Simulate {
        /// Output folder. An existing folder is replaced only if ablate wrote it (its
        /// .ablate-output marker lists every file in it) or it is empty; anything else is refused.
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
        /// Total arms, baseline included (default: the demo's 42). Extra arms remove pairs of units.
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
    },
}

/// The designs `ablate plan` can emit.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum DesignArg {
    Loo,
    Pairs,
    Factorial,
    Fractional,
}

impl From<DesignArg> for analysis::plan::DesignKind {
    fn from(d: DesignArg) -> Self {
        match d {
            DesignArg::Loo => Self::Loo,
            DesignArg::Pairs => Self::Pairs,
            DesignArg::Factorial => Self::Factorial,
            DesignArg::Fractional => Self::Fractional,
        }
    }
}

/// Most bootstrap resamples accepted (the replicates are held in memory: B × arms floats).
const MAX_BOOTSTRAP: usize = 1_000_000;

fn validate(g: &Global) -> Result<()> {
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

/// Loads an experiment and prints its warnings on stderr (unless --quiet).
fn load(dir: &std::path::Path, g: &Global) -> Result<Experiment> {
    let exp = Experiment::load(dir)?;
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
    }
}

/// JSON when asked for, else the human rendering.
fn emit<T: serde::Serialize>(json: bool, r: &T, human: fn(&T) -> String) -> Result<String> {
    if json { report::json(r) } else { Ok(human(r)) }
}

/// As [`emit`] for a verb run on an experiment: the JSON's `warnings` also carries the loader's
/// warnings (printed on stderr for people), so a script sees every warning a person does.
fn emit_warned<T: serde::Serialize>(
    json: bool,
    r: &T,
    exp: &Experiment,
    human: fn(&T) -> String,
) -> Result<String> {
    if json {
        report::json(&report::with_warnings(r, &exp.warnings)?)
    } else {
        Ok(human(r))
    }
}

/// Runs the parsed command and returns what to print on stdout.
pub fn run(cli: Cli) -> Result<String> {
    validate(&cli.global)?;
    let json = cli.global.json;
    match cli.command {
        Command::Check { dir } => {
            let exp = Experiment::load(&dir)?;
            let r = analysis::check::run(&exp);
            emit(json, &r, report::check::human)
        }
        Command::Sweep { dir } => {
            let exp = load(&dir, &cli.global)?;
            let r = analysis::sweep::run(&exp, &config(&cli.global));
            emit_warned(json, &r, &exp, report::sweep::human)
        }
        Command::Variance { dir } => {
            let exp = load(&dir, &cli.global)?;
            let r = analysis::variance::run(&exp, &config(&cli.global));
            emit_warned(json, &r, &exp, report::variance::human)
        }
        Command::Reweight {
            dir,
            mixes,
            by,
            mix_from,
            allow_unmeasured,
        } => {
            let exp = load(&dir, &cli.global)?;
            let mut loaded = Vec::new();
            for path in &mixes {
                loaded.push(Mix::load(&TableFile::at(path))?);
            }
            if let Some(log) = &mix_from {
                loaded.push(Mix::from_log(&TableFile::at(log), &by)?);
            }
            let opts = analysis::reweight::ReweightOptions {
                mixes: loaded,
                by,
                allow_unmeasured,
                confidence: cli.global.confidence,
            };
            let r = analysis::reweight::run(&exp, &opts)?;
            emit_warned(json, &r, &exp, report::reweight::human)
        }
        Command::Stress { dir } => {
            let exp = load(&dir, &cli.global)?;
            let r = analysis::stress::run(&exp, cli.global.confidence);
            emit_warned(json, &r, &exp, report::reweight::human_stress)
        }
        Command::Record {
            dir,
            allow_unmeasured,
        } => {
            let exp = load(&dir, &cli.global)?;
            report::json(&analysis::all::record_only(
                &exp,
                &config(&cli.global),
                allow_unmeasured,
            )?)
        }
        Command::Shadow { file, by } => {
            let table = log_table(&file, "shadow")?;
            let r = analysis::shadow::run(&table, &by, cli.global.confidence)?;
            emit(json, &r, report::live::human_shadow)
        }
        Command::Context {
            file,
            policy,
            model_limit,
            expected_output,
            output_buffer,
            safety_margin,
            soft_limit_ratio,
        } => {
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
            let r = analysis::context::run(&table, policy.as_ref(), &limits)?;
            emit(json, &r, report::live::human_context)
        }
        Command::Report { dir, out } => {
            let exp = load(&dir, &cli.global)?;
            let out = match out {
                Some(out) => out,
                None => ablate::io::output::inside(
                    std::path::Path::new("reports"),
                    &exp.manifest.set,
                    "set name",
                )?,
            };
            // Refuse a folder ablate may not replace before the analyses, not after them.
            ablate::io::output::check_folder_target(&out)?;
            let cfg = config(&cli.global);
            let bar = cfg.progress_bar(24, "analysing");
            let analyses = analysis::all::run(&exp, &cfg, |name| {
                if let Some(b) = &bar {
                    b.set_message(name.to_string());
                    b.inc(1);
                }
            })?;
            let written = report::document::write(&analyses, &out, bar.as_ref())?;
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            if json {
                report::json(&written)
            } else {
                Ok(format!(
                    "wrote {} ({} files): open {}/index.html, or read {}/report.md\n{}",
                    written.out,
                    written.files.len(),
                    written.out,
                    written.out,
                    analyses
                        .skipped
                        .iter()
                        .map(|s| format!("not analysed: {s}\n"))
                        .collect::<String>()
                ))
            }
        }
        Command::Need {
            dir,
            allow_unmeasured,
        } => {
            let exp = load(&dir, &cli.global)?;
            let r = analysis::all::need_only(&exp, allow_unmeasured)?;
            emit_warned(json, &r, &exp, report::budget::human_need)
        }
        Command::Curve {
            dir,
            price_per_mtok,
            requests_per_day,
        } => {
            let exp = load(&dir, &cli.global)?;
            let pricing = match (price_per_mtok, requests_per_day) {
                (Some(p), Some(r)) if p >= 0.0 && r >= 0.0 && p.is_finite() && r.is_finite() => {
                    Some(analysis::curve::Pricing {
                        price_per_mtok: p,
                        requests_per_day: r,
                    })
                }
                (Some(_), Some(_)) => {
                    return Err(Error::Usage(
                        "--price-per-mtok and --requests-per-day must be finite and not negative"
                            .into(),
                    ));
                }
                _ => None,
            };
            let r = analysis::curve::run(&exp, &config(&cli.global), pricing);
            emit_warned(json, &r, &exp, report::budget::human_curve)
        }
        Command::Selector { dir } => {
            let exp = load(&dir, &cli.global)?;
            let r = analysis::all::selector_only(&exp)?;
            emit_warned(json, &r, &exp, report::budget::human_selector)
        }
        Command::Interactions { dir } => {
            let exp = load(&dir, &cli.global)?;
            let r = analysis::interactions::run(&exp, &config(&cli.global))?;
            emit_warned(json, &r, &exp, report::interactions::human)
        }
        Command::Plan {
            units,
            design,
            only,
            cases,
            repeats,
            tokens_per_call,
            price_per_mtok,
            sd,
            pilot,
            threshold_drop,
            out,
            force,
        } => {
            let units = Units::load(&TableFile::at(&units))?;
            let (sd, sd_source, pilot_threshold) = match &pilot {
                Some(dir) => {
                    let exp = load(dir, &cli.global)?;
                    let p = analysis::plan::pilot(&exp).ok_or_else(|| {
                        Error::Usage(format!(
                            "the pilot {} has no arm besides the baseline to estimate the sd from",
                            dir.display()
                        ))
                    })?;
                    let sd = p.sd_at(repeats);
                    let source = format!(
                        "pilot {}: sd {:.4} at {:.0} repeats, {:.4} at {repeats}",
                        dir.display(),
                        p.sd,
                        p.repeats,
                        sd
                    );
                    (Some(sd), Some(source), Some(p.threshold_drop))
                }
                None => (sd, sd.map(|_| "--sd".to_string()), None),
            };
            let opts = analysis::plan::PlanOptions {
                design: design.into(),
                only,
                cases,
                repeats,
                tokens_per_call,
                price_per_mtok,
                sd,
                threshold_drop: threshold_drop.or(pilot_threshold),
                confidence: cli.global.confidence,
            };
            let r = analysis::plan::run(&units, &opts, sd_source)?;
            if let Some(path) = &out {
                let arms: Vec<(String, Vec<String>)> = r
                    .arms
                    .iter()
                    .map(|a| (a.arm.clone(), a.removed.clone()))
                    .collect();
                ablate::io::write::arms_table(path, &arms, &r.design_label, force)?;
            }
            if json {
                report::json(&r)
            } else {
                Ok(report::interactions::human_plan(
                    &r,
                    out.as_ref().map(|p| p.display().to_string()).as_deref(),
                ))
            }
        }
        Command::Simulate {
            out,
            cases,
            stress_cases,
            repeats,
            arms,
            shadow_requests,
            context_requests,
            design,
        } => {
            let custom_arms = match design {
                Some(path) => Some(Arms::load(&TableFile::at(&path))?.specs),
                None => None,
            };
            let cfg = SimConfig {
                custom_arms,
                cases,
                stress_cases,
                seed: cli.global.seed,
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
    }
}
