//! Writing an import: the experiment folder (results, cases, arms, sources and experiment.toml,
//! atomically), the baseline it chooses and the check that its arms can be compared.

use std::path::Path;

use polars::prelude::*;

use super::{ImportOptions, ImportSummary, Imported, Plan, arm_summaries};
use crate::error::{Error, Result};
use crate::io::manifest::THRESHOLD_PLACEHOLDER;
use crate::io::output::AtomicDir;

/// A Polars error while building a table.
pub(crate) fn building(what: &str, e: PolarsError) -> Error {
    Error::Polars {
        context: format!("building {what}"),
        source: Box::new(e),
    }
}

/// Writes the experiment folder for `imp` into `out` and returns the summary.
///
/// # Errors
/// Nothing scored; a baseline that is not an arm; a folder ablate may not write; a write failure.
pub fn write(
    harness: &str,
    imp: Imported,
    opts: &ImportOptions,
    out: &Path,
) -> Result<ImportSummary> {
    let plan = Plan::new(harness, imp, opts, None)?;
    let dir = AtomicDir::create(out, crate::io::output::FolderKind::Import)?;
    let mut written = Vec::new();
    put_parquet(
        &dir,
        &mut written,
        "results.parquet",
        &mut plan.results_frame()?,
    )?;
    let mut cases = plan.cases_frame()?;
    put_parquet(&dir, &mut written, "cases.parquet", &mut cases)?;
    let arms = arm_summaries(&plan.imp.observations);
    let names: Vec<&str> = arms.iter().map(|a| a.arm.as_str()).collect();
    put_parquet(
        &dir,
        &mut written,
        "arms.parquet",
        &mut plan.arms_frame(&names)?,
    )?;
    put_parquet(
        &dir,
        &mut written,
        "sources.parquet",
        &mut plan.sources_frame()?,
    )?;
    put_parquet(
        &dir,
        &mut written,
        "samples.parquet",
        &mut plan.samples_frame()?,
    )?;
    put_parquet(&dir, &mut written, "runs.parquet", &mut plan.runs_frame()?)?;

    let set = opts
        .set
        .clone()
        .or(plan.imp.set.clone())
        .unwrap_or_else(|| format!("{harness}-import"));
    // Names every verb would refuse in experiment.toml are refused here, before anything is
    // written: the import had succeeded and said "next: ablate check", which then failed.
    plain_name(
        "the set name",
        &set,
        if opts.set.is_some() {
            "give --set a name of one line of plain text"
        } else {
            "give the set a name of one line of plain text with --set NAME"
        },
    )?;
    if let Some(model) = &plan.imp.model {
        plain_name(
            "the logs' model name",
            model,
            "the logs name the model the experiment records: fix that name in the logs (one line of plain text)",
        )?;
    }
    let manifest = manifest_text(
        harness,
        &set,
        &plan.imp,
        &plan.baseline,
        opts.threshold,
        &opts.strata,
    );
    let path = dir.path("experiment.toml");
    std::fs::write(&path, manifest).map_err(|e| Error::io(&path, e))?;
    written.push("experiment.toml".into());
    written.sort();
    let committed = dir.commit()?;
    let rows = plan.imp.observations.len();
    Ok(plan.summary(
        committed.display().to_string(),
        arms,
        cases.height(),
        rows,
        opts,
        written,
    ))
}

pub(crate) fn put_parquet(
    dir: &AtomicDir,
    written: &mut Vec<String>,
    name: &str,
    df: &mut DataFrame,
) -> Result<()> {
    crate::io::write::parquet(df, &dir.path(name))?;
    written.push(name.to_string());
    Ok(())
}

/// Refuses `name` (`what`: "the set name", …) when it holds a control character (a line break,
/// an escape code) or a direction mark, which experiment.toml refuses in a name; `fix` says what
/// to do.
fn plain_name(what: &str, name: &str, fix: &str) -> Result<()> {
    match name
        .chars()
        .find(|&c| c.is_control() || ablate_core::escape::is_bidi_control(c))
    {
        Some(c) => Err(Error::Usage(format!(
            "{what} {name:?} holds U+{:04X}, a control character or direction mark, which experiment.toml refuses in a name (it would act in the terminal and the report instead of showing): {fix}",
            c as u32
        ))),
        None => Ok(()),
    }
}

/// A TOML string literal.
fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// experiment.toml for an import.
fn manifest_text(
    harness: &str,
    set: &str,
    imp: &Imported,
    baseline: &str,
    threshold: Option<f64>,
    strata: &[String],
) -> String {
    let mut s = format!(
        "# Written by `ablate import {harness}` from {} file(s); see sources.parquet for each file and its SHA-256.\n",
        imp.sources.len()
    );
    s.push_str(&format!("set = {}\n", toml_str(set)));
    if let Some(m) = &imp.model {
        s.push_str(&format!("model = {}\n", toml_str(m)));
    }
    if let Some(d) = &imp.measured_at {
        s.push_str(&format!("measured_at = {}\n", toml_str(d)));
    }
    s.push_str(&format!("baseline_arm = {}\n", toml_str(baseline)));
    match threshold {
        Some(t) => s.push_str(&format!("threshold_drop = {t:?}\n")),
        None => {
            s.push_str("# PLACEHOLDER: agree the smallest drop that matters before reading the results, and\n# write it here as a number (e.g. threshold_drop = 0.02). Every verb refuses this placeholder.\n");
            s.push_str(&format!(
                "threshold_drop = {}\n",
                toml_str(THRESHOLD_PLACEHOLDER)
            ));
        }
    }
    if !strata.is_empty() {
        s.push_str(&format!(
            "strata = [{}]\n",
            strata
                .iter()
                .map(|x| toml_str(x))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    s
}
