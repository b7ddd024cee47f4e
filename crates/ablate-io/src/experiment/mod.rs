//! Loading an experiment folder: every table found, read, and checked against the others.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use crate::error::{Error, Result, Row};

mod checks;
use crate::io::prelude::*;
use crate::io::{
    Arms, CaseUnits, Cases, Experiment, LogSummary, Manifest, Mix, NeedRule, Passages, Results,
    Samples, Tables, Units, derived, logs, samples, table,
};
use checks::{
    check_arms_cover_results, check_arms_share_cases, check_manifest_against_tables,
    check_mix_against_cases, check_removed_units, coverage, decide_warnings, pass_mark_warning,
    result_warnings, threshold_warnings,
};

/// Loading an experiment folder into an [`Experiment`]: every table found, checked and read.
pub trait ExperimentLoad {
    /// Loads and validates every table of the experiment in `dir`.
    ///
    /// # Errors
    /// Any input error: see the module documentation and [`Error`].
    fn load(dir: &Path) -> Result<Experiment>;

    /// As [`Experiment::load_tables`] with every table.
    ///
    /// # Errors
    /// As [`Experiment::load_tables`].
    fn load_from(dir: &Path, aggregates: Option<&Path>) -> Result<Experiment>;

    /// As [`Experiment::load`], reading only the optional tables in `tables`, and with the
    /// case × arm matrix read from `aggregates` when given (the output of the query `ablate sql`
    /// prints, run in the engine where the results live) instead of the folder's results table.
    /// The folder supplies everything else (experiment.toml, cases, arms, units, mix, …).
    ///
    /// # Errors
    /// As [`Experiment::load`], and as [`Results::from_aggregates`].
    fn load_tables(dir: &Path, aggregates: Option<&Path>, tables: Tables) -> Result<Experiment>;
}

impl ExperimentLoad for Experiment {
    fn load(dir: &Path) -> Result<Experiment> {
        Experiment::load_from(dir, None)
    }

    fn load_from(dir: &Path, aggregates: Option<&Path>) -> Result<Experiment> {
        Experiment::load_tables(dir, aggregates, Tables::ALL)
    }

    fn load_tables(dir: &Path, aggregates: Option<&Path>, tables: Tables) -> Result<Experiment> {
        // Every table from one generation of the folder: an update in progress (`import
        // --into`) finishes first, and none starts until the tables are read.
        let _reading = crate::io::output::FolderLock::shared(dir);
        if dir.is_file() {
            return Err(Error::Usage(format!(
                "{} is a file, not an experiment folder: give the folder that holds experiment.toml and the tables{}",
                dir.display(),
                dir.parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .map(|p| format!(" (perhaps {})", p.display()))
                    .unwrap_or_default()
            )));
        }
        if !dir.is_dir() {
            return Err(Error::NotFound {
                path: dir.to_path_buf(),
                fix: "give the path of an experiment folder (it holds experiment.toml and the tables)"
                    .into(),
            });
        }
        let manifest = Manifest::load(dir)?;
        let mut warnings: Vec<crate::warning::Warning> = manifest
            .unknown_keys
            .iter()
            .map(|k| {
                crate::warning::Warning::new(
                    "load.unknown_manifest_key",
                    format!("experiment.toml: unknown key `{k}` is ignored (a typo?)"),
                )
            })
            .collect();

        let cases = Cases::load(&required(dir, "cases", "one row per case")?)?;
        let units = table::find(dir, "units")?
            .map(|f| Units::load(&f))
            .transpose()?;
        let arms = table::find(dir, "arms")?
            .map(|f| Arms::load(&f))
            .transpose()?;
        if let (Some(arms), Some(units)) = (&arms, &units) {
            check_removed_units(arms, units)?;
        }
        // The results and the optional tables are read side by side; errors are still reported
        // in the order the tables were read in before (the results and their checks first).
        let (results, (optional, sample_keys)) = rayon::join(
            || load_results(dir, aggregates, &manifest, &cases, arms.as_ref()),
            || {
                rayon::join(
                    || Optional::load(dir, tables, &cases, units.as_ref()),
                    || -> Result<Option<samples::SampleKeys>> {
                        if !tables.samples {
                            return Ok(None);
                        }
                        table::find(dir, "samples")?
                            .map(|f| Samples::read_keys(&f))
                            .transpose()
                    },
                )
            },
        );
        let results = results?;
        let baseline = baseline_with_main_cases(&manifest, &results, &cases)?;
        if let Some(arms) = &arms {
            check_arms_cover_results(arms, &results, &manifest, &mut warnings)?;
        }
        let (arm_coverage, in_any) = coverage(&results.matrix, baseline);
        check_arms_share_cases(&results, &arm_coverage, &manifest.baseline_arm)?;
        warnings.extend(result_warnings(
            &results,
            &cases,
            baseline,
            (&arm_coverage, &in_any),
        ));
        if aggregates.is_some()
            && results.matrix.score_range.is_none()
            && !manifest.score_range_declared
        {
            warnings.push(crate::warning::Warning::new(
                "load.aggregates_without_extremes",
                format!(
                    "{} lacks min_score and max_score (on some or all rows: an older `ablate sql` query's output): the score range is read from the case means, which hide a single score beyond [0, 1] (a case scored 1.5 and 0.42), so the intervals may be too narrow; rerun the query `ablate sql` prints, or set score_min and score_max in experiment.toml",
                    results.path.display()
                ),
            ));
        }
        warnings.extend(pass_mark_warning(&results, manifest.pass_mark));
        warnings.extend(threshold_warnings(&manifest, &results));
        warnings.extend(decide_warnings(&manifest, &results, arms.as_ref()));

        let samples = sample_keys?
            .map(|k| k.check(&cases, &results.arms))
            .transpose()?;
        let Optional {
            case_units,
            mix,
            mix_warnings,
            passages,
            shadow,
            context_log,
        } = optional?;
        warnings.extend(mix_warnings);
        check_manifest_against_tables(&manifest, &cases, units.as_ref())?;
        let runs = table::find(dir, "runs")?
            .map(|f| crate::io::runs::Runs::load(&f))
            .transpose()?;

        Ok(Experiment {
            dir: dir.to_path_buf(),
            manifest,
            cases,
            results,
            arms,
            units,
            case_units,
            mix,
            passages,
            shadow,
            context_log,
            samples,
            runs,
            derived: derived::Derived::default(),
            warnings,
        })
    }
}

fn required(dir: &Path, stem: &str, what: &str) -> Result<table::TableFile> {
    table::find(dir, stem)?.ok_or_else(|| Error::NotFound {
        path: dir.join(format!("{stem}.parquet")),
        fix: format!("an experiment needs {stem}.parquet or {stem}.csv ({what})"),
    })
}

/// The optional tables of a folder, those `tables` asks for.
struct Optional {
    case_units: Option<CaseUnits>,
    mix: Option<Mix>,
    /// The mix's warnings against the cases.
    mix_warnings: Vec<crate::warning::Warning>,
    passages: Option<Passages>,
    shadow: Option<LogSummary>,
    context_log: Option<LogSummary>,
}

impl Optional {
    /// Reads the tables `tables` asks for that the folder has, stopping at the first error.
    fn load(dir: &Path, tables: Tables, cases: &Cases, units: Option<&Units>) -> Result<Optional> {
        let find = |stem: &str, wanted: bool| -> Result<Option<table::TableFile>> {
            if wanted {
                table::find(dir, stem)
            } else {
                Ok(None)
            }
        };
        let case_units = match find("case_units", tables.case_units)? {
            Some(f) => {
                let units = units.ok_or_else(|| Error::NotFound {
                    path: dir.join("units.parquet"),
                    fix: "case_units refers to units; add units.parquet (or units.csv)".into(),
                })?;
                Some(CaseUnits::load(&f, cases, units)?)
            }
            None => None,
        };
        let mix = find("mix", tables.mix)?
            .map(|f| Mix::load(&f))
            .transpose()?;
        let mix_warnings = match &mix {
            Some(mix) => check_mix_against_cases(mix, cases)?,
            None => Vec::new(),
        };
        Ok(Optional {
            case_units,
            mix,
            mix_warnings,
            passages: find("passages", tables.passages)?
                .map(|f| Passages::load(&f, cases))
                .transpose()?,
            shadow: find("shadow", tables.logs)?
                .map(|f| logs::summarise(&f, &logs::shadow_columns()))
                .transpose()?,
            context_log: find("context_log", tables.logs)?
                .map(|f| logs::summarise(&f, &logs::context_columns()))
                .transpose()?,
        })
    }
}

/// The results: the per-call table, or with `--from-aggregates` the per-cell sums.
fn load_results(
    dir: &Path,
    aggregates: Option<&Path>,
    manifest: &Manifest,
    cases: &Cases,
    arms: Option<&Arms>,
) -> Result<Results> {
    match aggregates {
        Some(file) => Results::from_aggregates(
            &table::TableFile::given(file, "--from-aggregates")?,
            cases,
            manifest.pass_mark,
            manifest
                .score_range_declared
                .then_some((manifest.score_min, manifest.score_max)),
            arms,
        ),
        None => {
            let file = required(dir, "results", "one row per case × arm × repeat")?;
            let results = Results::load(&file, cases, manifest.pass_mark, arms)?;
            if let Some((lo, hi)) = manifest.declared_score_range() {
                table::refuse_scores_outside(&file, lo, hi)?;
            }
            Ok(results)
        }
    }
}

/// The baseline arm's column: it must name an arm, with results on some main-set case (every
/// comparison is paired against it).
fn baseline_with_main_cases(
    manifest: &Manifest,
    results: &Results,
    cases: &Cases,
) -> Result<usize> {
    let baseline = results
        .arm_index(&manifest.baseline_arm)
        .ok_or_else(|| Error::Manifest {
            path: manifest.path.clone(),
            key: "baseline_arm".into(),
            problem: format!(
                "\"{}\" names no arm in {}; arms found: {}",
                manifest.baseline_arm,
                results.path.display(),
                results.arms.join(", ")
            ),
            fix: "set baseline_arm to the label of the full-prompt arm".into(),
        })?;
    let m = &results.matrix;
    if !(0..m.n_cases).any(|c| !cases.stress[c] && m.present(c, baseline)) {
        return Err(Error::BadValue {
            path: results.path.clone(),
            column: "arm".into(),
            row: Row::none(),
            value: format!("\"{}\"", manifest.baseline_arm),
            problem: "the baseline arm has no results for any main-set case (stress = false)"
                .into(),
            fix: "run the baseline on the main set; every comparison is paired against it".into(),
        });
    }
    Ok(baseline)
}
