//! `ablate import`: harness logs in, an experiment folder out.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use ablate::error::Result;
use ablate::import::{self, ImportOptions, ImportSummary};
use ablate::report;

use super::Global;

/// The harnesses `ablate import` reads.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum Harness {
    /// Inspect AI: .eval archives (DEFLATE or zstd) and older .json logs.
    Inspect,
    /// lm-evaluation-harness: samples_<task>_<date>.jsonl from --log_samples.
    LmEval,
    /// promptfoo: results.json (versions 2 and 3) or results.jsonl from `promptfoo eval -o`.
    Promptfoo,
}

/// `--pair-by`: what pairs an Inspect sample with the same case in another log.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum PairByArg {
    /// The sample id.
    Id,
    /// The sample's input and target.
    Input,
}

/// Turn a harness's logs into an experiment folder: Inspect AI, lm-evaluation-harness, promptfoo.
///
/// SOURCES are files or folders. Writes results, cases, arms, sources (each file with its SHA-256),
/// runs (one row per run, with any that stands out flagged) and samples, and experiment.toml with
/// the set, model and date from the logs; then prints the cases, arms, repeats and scores found,
/// and everything skipped and why. Two prompts, two models or two questions are never merged: the
/// import is refused with the reason. Without --threshold-drop, every verb refuses the folder until the
/// threshold is agreed in experiment.toml. How each harness maps: docs/import.md.
#[derive(Debug, Args)]
pub(super) struct ImportArgs {
    /// inspect, lm-eval or promptfoo.
    #[arg(value_enum)]
    harness: Harness,
    /// Log files, or folders holding them.
    #[arg(required = true)]
    sources: Vec<PathBuf>,
    /// The experiment folder to write. An existing folder is replaced only if it is an experiment
    /// ablate simulated, or imported from the same set, and nothing in it changed since.
    #[arg(long, required_unless_present = "into", conflicts_with = "into")]
    out: Option<PathBuf>,
    /// Add the logs to an experiment `import` wrote, in place: new arms, repeats and cases are
    /// appended; logs (or runs) already there are skipped and named; experiment.toml, the watch
    /// state and every other file are kept. How a running ablation grows between `next` and
    /// `watch`.
    #[arg(long, value_name = "EXP")]
    into: Option<PathBuf>,
    /// The score: inspect SCORER or SCORER.KEY; lm-eval METRIC; promptfoo a named score.
    #[arg(long, value_name = "NAME")]
    score: Option<String>,
    /// Where the arm comes from. inspect: task_arg:NAME, task, model, tag or file; lm-eval: task
    /// or file.
    #[arg(long, value_name = "KEY")]
    arm_from: Option<String>,
    /// lm-eval: doc_id (default) or doc_hash (matches documents across prompt variants).
    #[arg(long, value_name = "KEY")]
    case_from: Option<String>,
    /// What pairs samples across arms. id (default): the sample id, and samples that share an id
    /// must hold the same input and target, or the import is refused; input: the hash of the
    /// sample's dataset input and target (Inspect), doc_hash (lm-eval), whatever the id.
    #[arg(long, value_enum, value_name = "KEY", default_value = "id")]
    pair_by: PairByArg,
    /// Skip files that cannot be read (and lm-eval runs without the chosen --filter) instead of
    /// stopping; each is listed with its reason on stderr and in the sources table.
    #[arg(long)]
    skip_invalid: bool,
    /// Metadata fields to keep as cases columns and name as strata in experiment.toml
    /// (comma-separated; default: every scalar field, none named as strata).
    #[arg(long, value_delimiter = ',', value_name = "COL,...")]
    strata: Vec<String>,
    /// threshold_drop, agreed before reading the results (default: a placeholder ablate refuses).
    /// `--threshold` is the older name, still read.
    #[arg(long, value_name = "X", visible_alias = "threshold")]
    threshold_drop: Option<f64>,
    /// The baseline arm (the full prompt). Default: an arm named baseline or full, else the arm
    /// with the most input tokens.
    #[arg(long, value_name = "ARM")]
    baseline: Option<String>,
    /// The set name (default: the task, or promptfoo's description).
    #[arg(long, value_name = "NAME")]
    set: Option<String>,
    /// lm-eval: the filter whose lines to take when a task has several (e.g. strict-match).
    #[arg(long, value_name = "NAME")]
    filter: Option<String>,
    /// lm-eval and Inspect: leave out samples whose score is NaN or infinite (reported) instead
    /// of failing.
    #[arg(long)]
    skip_nonfinite: bool,
    /// Name the arm of the source files matching GLOB (repeatable; a folder means everything under
    /// it; `*` stays within a folder, `**` crosses folders). Overrides the arm the logs suggest:
    /// --arm before='runs/before/**' --arm after='runs/after/**'. --baseline takes these names.
    #[arg(long = "arm", value_name = "NAME=GLOB", value_parser = import::parse_arm_rule)]
    arms: Vec<(String, String)>,
}

/// Runs `ablate import`.
pub(super) fn import(args: ImportArgs, g: &Global) -> Result<String> {
    let opts = ImportOptions {
        score: args.score,
        arm_from: args.arm_from,
        case_from: args.case_from,
        pair_by: match args.pair_by {
            PairByArg::Id => import::PairBy::Id,
            PairByArg::Input => import::PairBy::Input,
        },
        skip_invalid: args.skip_invalid,
        strata: args.strata,
        threshold: args.threshold_drop,
        baseline: args.baseline,
        set: args.set,
        filter: args.filter,
        skip_nonfinite: args.skip_nonfinite,
        arm_globs: args.arms,
    };
    if let Some(out) = &args.out {
        ablate::io::output::check_folder_target(out, ablate::io::output::FolderKind::Import)?;
    }
    let (name, imported) = match args.harness {
        Harness::Inspect => ("inspect", import::inspect::read(&args.sources, &opts)?),
        Harness::LmEval => ("lm-eval", import::lm_eval::read(&args.sources, &opts)?),
        Harness::Promptfoo => ("promptfoo", import::promptfoo::read(&args.sources, &opts)?),
    };
    let summary = match (&args.out, &args.into) {
        (_, Some(into)) => import::append::append(name, imported, &opts, into)?,
        (Some(out), None) => import::write(name, imported, &opts, out)?,
        (None, None) => {
            return Err(ablate::error::Error::Usage(
                "give --out DIR (a new experiment) or --into EXP (add to one)".into(),
            ));
        }
    };
    // What --skip-invalid left out, on stderr as it happens to be read (also in the summary).
    for s in summary
        .skipped
        .iter()
        .filter(|s| s.contains("(--skip-invalid)"))
    {
        eprintln!("ablate: {s}");
    }
    if g.json {
        report::json(&summary)
    } else {
        Ok(human(&summary))
    }
}

fn human(s: &ImportSummary) -> String {
    use ablate::report::section::{Align, Table};
    use ablate::report::text::num;
    use std::fmt::Write;
    let mut out = format!(
        "wrote {} from {} {} file(s): {} cases, {} arms, {} result rows\n\n",
        s.out,
        s.files,
        s.harness,
        s.cases,
        s.arms.len(),
        s.rows
    );
    let mut t = Table::new(&[
        "arm",
        "cases",
        "repeats",
        "mean_score",
        "tokens_in_mean",
        "",
    ])
    .align(5, Align::Left);
    for a in &s.arms {
        t.row(vec![
            a.arm.clone(),
            a.cases.to_string(),
            if a.repeats_min == a.repeats_max {
                a.repeats_min.to_string()
            } else {
                format!("{}–{}", a.repeats_min, a.repeats_max)
            },
            num(Some(a.mean_score), 4),
            num(a.tokens_in_mean, 0),
            if a.arm == s.baseline {
                "← baseline".into()
            } else {
                String::new()
            },
        ]);
    }
    out.push_str(&t.text());
    let _ = writeln!(out, "\nbaseline: {} ({})", s.baseline, s.baseline_choice);
    let _ = writeln!(out, "arms from: {}", s.arm_choice);
    let _ = writeln!(out, "cases from: {}", s.case_choice);
    let _ = writeln!(out, "tokens: {}", s.tokens_counted);
    if let Some(n) = s.passed_disagreements {
        let _ = writeln!(
            out,
            "pass/fail: the harness's own flags (the `passed` column), which decide lost cases, churn and McNemar; {n} row(s) disagree with score ≥ 0.5"
        );
    }
    let _ = writeln!(
        out,
        "score: {} · found: {} · range {} to {}",
        s.score_choice,
        s.scores_found.join(", "),
        num(Some(s.score_min), 4),
        num(Some(s.score_max), 4)
    );
    let mut runs_of: std::collections::BTreeMap<&str, usize> = Default::default();
    for r in &s.runs {
        *runs_of.entry(r.arm.as_str()).or_default() += 1;
    }
    if s.runs.iter().any(|r| r.outlier) || runs_of.values().any(|&n| n > 1) {
        let t = ablate::report::check::runs_table(&s.runs);
        let _ = write!(out, "\nruns (the runs table):\n{}", t.text());
    }
    if !s.case_columns.is_empty() {
        let _ = writeln!(
            out,
            "case columns: {}{}",
            s.case_columns.join(", "),
            if s.strata.is_empty() {
                " (name strata with --strata to reweight by them)".to_string()
            } else {
                format!(" · strata: {}", s.strata.join(", "))
            }
        );
    }
    for n in &s.notes {
        let _ = writeln!(out, "note: {n}");
    }
    for k in &s.skipped {
        let _ = writeln!(out, "skipped: {k}");
    }
    match s.threshold_drop {
        Some(t) => {
            let _ = writeln!(
                out,
                "threshold_drop {t}\nnext: ablate check {0} && ablate report {0}",
                s.out
            );
        }
        None => {
            let _ = writeln!(
                out,
                "threshold_drop: a placeholder. Agree the drop that matters before reading the results, then set it in {}/experiment.toml (or rerun with --threshold-drop X).",
                s.out
            );
        }
    }
    out
}

impl super::VerbArgs for ImportArgs {
    fn paths(&self) -> super::IoPaths {
        let mut p = super::IoPaths::default();
        for source in &self.sources {
            p.input("the log source", source);
        }
        if let Some(out) = &self.out {
            p.folder("--out", out, super::FolderKind::Import);
        }
        p
    }

    fn apply(&self, _g: &mut super::Global) {}
}
