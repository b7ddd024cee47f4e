//! The checks across an experiment's tables: every arm shares cases with the baseline, removes
//! known units and has its results; the mix and the manifest agree with the cases; and the
//! warnings on results (coverage, the pass mark).

use super::*;

/// Refuses arms with results that share no case with the baseline: nothing of theirs can be
/// paired, and every verb would report empty comparisons as if they were findings.
pub(super) fn check_arms_share_cases(
    results: &Results,
    coverage: &[ArmCoverage],
    baseline_name: &str,
) -> Result<()> {
    let alone: Vec<&str> = coverage
        .iter()
        .zip(&results.arms)
        .filter(|(c, _)| c.present > 0 && c.with_baseline == 0)
        .map(|(_, arm)| arm.as_str())
        .collect();
    if alone.is_empty() {
        return Ok(());
    }
    Err(Error::BadValue {
        path: results.path.clone(),
        column: "case_id".into(),
        row: Row::none(),
        value: alone
            .iter()
            .map(|a| format!("\"{a}\""))
            .collect::<Vec<_>>()
            .join(", "),
        problem: format!(
            "{} no case with the baseline \"{baseline_name}\": nothing can be paired, so there is nothing to compare",
            if alone.len() > 1 { "these arms share" } else { "this arm shares" }
        ),
        fix: "run the arms on the baseline's cases (the same case ids for the same documents), or import each set as its own experiment".into(),
    })
}

pub(super) fn check_removed_units(arms: &Arms, units: &Units) -> Result<()> {
    for (i, spec) in arms.specs.iter().enumerate() {
        if let Some(u) = spec.removed.iter().find(|u| !units.index.contains_key(*u)) {
            return Err(Error::BadValue {
                path: arms.path.clone(),
                column: "removed".into(),
                row: Row::at(i),
                value: format!("\"{u}\""),
                problem: format!(
                    "arm {:?} removes a unit that {} lacks",
                    spec.arm,
                    units.path.display()
                ),
                fix: "add the unit to the units table, or correct its name in the arm".into(),
            });
        }
    }
    Ok(())
}

pub(super) fn check_arms_cover_results(
    arms: &Arms,
    results: &Results,
    manifest: &Manifest,
    warnings: &mut Vec<crate::warning::Warning>,
) -> Result<()> {
    if let Some(base) = arms.get(&manifest.baseline_arm)
        && !base.removed.is_empty()
    {
        return Err(Error::BadValue {
            path: arms.path.clone(),
            column: "removed".into(),
            row: Row::at(arms.specs.iter().position(|s| s.arm == base.arm).unwrap_or(0)),
            value: format!("{:?}", base.removed),
            problem: format!(
                "the baseline arm {:?} must remove nothing",
                manifest.baseline_arm
            ),
            fix: "give the baseline an empty `removed` list, or set baseline_arm to the full-prompt arm"
                .into(),
        });
    }
    if let Some((i, spec)) = arms
        .specs
        .iter()
        .enumerate()
        .find(|(_, s)| s.components.contains(&manifest.baseline_arm))
    {
        return Err(Error::BadValue {
            path: arms.path.clone(),
            column: "components".into(),
            row: Row::at(i),
            value: format!("\"{}\"", manifest.baseline_arm),
            problem: format!("arm {:?} lists the baseline as a component", spec.arm),
            fix: "components are the cuts this arm combines; the baseline removes nothing".into(),
        });
    }
    for spec in &arms.specs {
        if results.arm_index(&spec.arm).is_none() {
            warnings.push(crate::warning::Warning::new(
                "load.arm_without_results",
                format!(
                    "{}: arm {:?} has no rows in results; it is ignored",
                    arms.path.display(),
                    spec.arm
                ),
            ));
        }
    }
    Ok(())
}

/// A warning when every score lies on one side of pass_mark (e.g. 0–100 scores with the default
/// 0.5): lost, gained and churn counts would all be 0 without a word.
pub(super) fn pass_mark_warning(
    results: &Results,
    pass_mark: f64,
) -> Option<crate::warning::Warning> {
    let m = &results.matrix;
    if m.pass_flags {
        return None;
    }
    let repeats: u64 = m.repeats.iter().map(|&r| u64::from(r)).sum();
    let passes: u64 = m.passes.iter().map(|&p| u64::from(p)).sum();
    let side = if passes == repeats && repeats > 0 {
        "at or above"
    } else if passes == 0 && repeats > 0 {
        "below"
    } else {
        return None;
    };
    Some(crate::warning::Warning::new(
        "load.scores_one_side_of_pass_mark",
        format!(
            "every score is {side} pass_mark = {pass_mark}, so lost, gained and churn counts are all 0; if scores are on another scale (e.g. 0–100), set pass_mark in experiment.toml"
        ),
    ))
}

/// A warning when threshold_drop (or a stress_threshold_drop of its own) is at or beyond the
/// widest drop the scores allow, hi − lo over [`CaseMatrix::score_bounds`] (the range every
/// interval is drawn in): no arm's drop can then reach it but by falling the whole range on every
/// case, no arm can be confidently needed, and every verdict is removable whatever the data.
pub(super) fn threshold_warnings(
    manifest: &Manifest,
    results: &Results,
) -> Vec<crate::warning::Warning> {
    let (lo, hi) = results.matrix.score_bounds(manifest.declared_score_range());
    let span = hi - lo;
    let mut keys = vec![("threshold_drop", manifest.threshold_drop)];
    if manifest.stress_threshold_drop != manifest.threshold_drop {
        keys.push(("stress_threshold_drop", manifest.stress_threshold_drop));
    }
    keys.into_iter()
        .filter(|(_, thr)| *thr >= span)
        .map(|(key, thr)| {
            crate::warning::Warning::new(
                "load.threshold_beyond_score_range",
                format!(
                    "{}: {key} {} is at or beyond {span}, the largest drop scores in [{lo}, {hi}] allow (every case falling from the top score to the bottom): no arm can be confidently needed, so the verdicts say nothing about the data; agree a threshold below {span}, on the scores' own scale",
                    manifest.path.display(),
                    crate::text::float_text(thr)
                ),
            )
        })
        .collect()
}

/// Warnings on experiment.toml's `decide` against the measured arms (every arm with results
/// but the baseline): no arm selected at all, or patterns no judged arm uses (a typo leaves the
/// arms they were meant to add described but never judged).
pub(super) fn decide_warnings(
    manifest: &Manifest,
    results: &Results,
    arms: Option<&Arms>,
) -> Vec<crate::warning::Warning> {
    let Some(patterns) = &manifest.decide else {
        return Vec::new();
    };
    let measured: Vec<(&str, &[String])> = results
        .arms
        .iter()
        .filter(|a| **a != manifest.baseline_arm)
        .map(|a| {
            let removed = arms
                .and_then(|t| t.get(a))
                .map_or(&[] as &[String], |s| s.removed.as_slice());
            (a.as_str(), removed)
        })
        .collect();
    if measured.is_empty() {
        return Vec::new();
    }
    let quoted = |ps: &[&str]| {
        ps.iter()
            .map(|p| format!("\"{p}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let path = manifest.path.display();
    if !measured
        .iter()
        .any(|(a, removed)| manifest.decides(a, removed))
    {
        let all: Vec<&str> = patterns.iter().map(String::as_str).collect();
        return vec![crate::warning::Warning::new(
            "load.decide_selects_no_arm",
            format!(
                "{path}: decide = [{}] selects none of the {} measured arms (no arm is named by a pattern, and none removes only units the patterns match): every arm is described but none is judged, so every verdict is inconclusive and the decision cuts nothing; correct the patterns, or remove `decide` to judge every arm",
                quoted(all.as_slice()),
                measured.len()
            ),
        )];
    }
    let unused = manifest.unused_decide_patterns(&measured);
    if unused.is_empty() {
        return Vec::new();
    }
    let many = unused.len() > 1;
    vec![crate::warning::Warning::new(
        "load.decide_pattern_unused",
        format!(
            "{path}: decide pattern{} {} select{} no measured arm (no arm's name, nor any unit of a judged arm, matches): a typo? The arms meant are described, not judged",
            if many { "s" } else { "" },
            quoted(unused.as_slice()),
            if many { "" } else { "s" }
        ),
    )]
}

/// What one arm's column of the matrix covers, from [`coverage`].
#[derive(Debug, Clone, Default)]
pub(super) struct ArmCoverage {
    /// Cases with results in the arm.
    present: usize,
    /// Cases with results in both the arm and the baseline (for the baseline: in any arm).
    with_baseline: usize,
    /// Fewest and most repeats over the arm's cases with results (0 without any).
    repeats: (u32, u32),
    /// Cases with fewer repeats than the most.
    short: usize,
}

/// Each arm's coverage, in two row-wise passes over the matrix's repeat counts (a column-wise
/// pass strides across the whole matrix: 1.7 s at 200,000 cases × 100 arms, against 0.05 s), and
/// the cases with results in some arm.
pub(super) fn coverage(
    m: &crate::io::results::CaseMatrix,
    baseline: usize,
) -> (Vec<ArmCoverage>, Vec<bool>) {
    let mut out = vec![ArmCoverage::default(); m.n_arms];
    let mut in_any = vec![false; m.n_cases];
    if m.n_arms == 0 {
        return (out, in_any);
    }
    for (case, row) in m.repeats.chunks_exact(m.n_arms).enumerate() {
        in_any[case] = row.iter().any(|&r| r > 0);
        let in_baseline = row[baseline] > 0;
        for (a, (&r, cov)) in row.iter().zip(out.iter_mut()).enumerate() {
            if r == 0 {
                continue;
            }
            let paired = if a == baseline {
                in_any[case]
            } else {
                in_baseline
            };
            cov.with_baseline += usize::from(paired);
            cov.repeats = if cov.present == 0 {
                (r, r)
            } else {
                (cov.repeats.0.min(r), cov.repeats.1.max(r))
            };
            cov.present += 1;
        }
    }
    for row in m.repeats.chunks_exact(m.n_arms) {
        for (&r, cov) in row.iter().zip(out.iter_mut()) {
            cov.short += usize::from(r > 0 && r < cov.repeats.1);
        }
    }
    (out, in_any)
}

/// Warnings about the matrix: cases missing from arms, unbalanced repeats, cases with no results.
pub(super) fn result_warnings(
    results: &Results,
    cases: &Cases,
    baseline: usize,
    (coverage, in_any): (&[ArmCoverage], &[bool]),
) -> Vec<crate::warning::Warning> {
    let mut out = Vec::new();
    let with_results = in_any.iter().filter(|p| **p).count();
    let unused = in_any.len() - with_results;
    if unused > 0 {
        out.push(crate::warning::Warning::new(
            "load.cases_without_results",
            format!(
                "{} of {} cases in {} have no results in any arm",
                unused,
                cases.len(),
                cases.path.display()
            ),
        ));
    }
    let in_baseline = coverage.get(baseline).map_or(0, |c| c.present);
    for (a, (arm, cov)) in results.arms.iter().zip(coverage).enumerate() {
        let (reference, against) = if a == baseline {
            (with_results, "any arm")
        } else {
            (in_baseline, "the baseline")
        };
        let missing = reference - cov.with_baseline;
        if missing > 0 {
            out.push(crate::warning::Warning::new("load.arm_missing_cases", format!(
                "arm {arm:?} has no results for {missing} of the {reference} cases in {against}; they are left out of its pairs",
            )));
        }
        let (lo, hi) = cov.repeats;
        if lo != hi {
            let short = cov.short;
            out.push(crate::warning::Warning::new("load.unbalanced_repeats", format!(
                "arm {arm:?} has unbalanced repeats: {lo} to {hi} per case ({short} cases with fewer than {hi}); case means are still per case"
            )));
        }
    }
    out
}

/// Mix columns must be case columns; production strata with no eval case are a warning here
/// (`reweight` makes them an error unless `--allow-unmeasured`).
pub(super) fn check_mix_against_cases(
    mix: &Mix,
    cases: &Cases,
) -> Result<Vec<crate::warning::Warning>> {
    let mut warnings = Vec::new();
    let mut columns = Vec::new();
    for c in &mix.columns {
        let values = cases.attributes.get(c).ok_or_else(|| Error::BadValue {
            path: mix.path.clone(),
            column: c.clone(),
            row: Row::none(),
            value: format!("`{c}`"),
            problem: format!(
                "the mix's stratum column is not a text column of {}",
                cases.path.display()
            ),
            fix: "add the column to cases, or remove it from the mix".into(),
        })?;
        columns.push(values);
    }
    let mut eval_strata: HashSet<Vec<&str>> = HashSet::new();
    for i in 0..cases.len() {
        if cases.stress[i] {
            continue;
        }
        let key: Option<Vec<&str>> = columns.iter().map(|v| v[i].as_deref()).collect();
        if let Some(key) = key {
            eval_strata.insert(key);
        }
    }
    let mut unmeasured = BTreeMap::new();
    for s in &mix.strata {
        let key: Vec<&str> = s.values.iter().map(String::as_str).collect();
        if !eval_strata.contains(&key) {
            unmeasured.insert(mix.label(s), s.share);
        }
    }
    for (label, share) in unmeasured {
        warnings.push(crate::warning::Warning::new("load.stratum_without_cases", format!(
            "{}: production stratum {label} ({:.1}% of traffic) has no eval cases; reweighting will fail unless --allow-unmeasured",
            mix.path.display(),
            share * 100.0
        )));
    }
    Ok(warnings)
}

pub(super) fn check_manifest_against_tables(
    manifest: &Manifest,
    cases: &Cases,
    units: Option<&Units>,
) -> Result<()> {
    let err = |key: String, problem: String, fix: &str| Error::Manifest {
        path: manifest.path.clone(),
        key,
        problem,
        fix: fix.into(),
    };
    let case_columns = || {
        cases
            .attributes
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(strata) = &manifest.strata {
        for (i, s) in strata.iter().enumerate() {
            if !cases.attributes.contains_key(s) {
                return Err(err(
                    format!("strata[{i}]"),
                    format!(
                        "\"{s}\" is not a text column of {} (text columns: {})",
                        cases.path.display(),
                        case_columns()
                    ),
                    "name case columns that hold the strata, or add the column to cases",
                ));
            }
        }
    }
    for (i, block) in manifest.blocks.iter().enumerate() {
        if let Some(units) = units
            && !units.specs.iter().any(|u| u.block == block.name)
        {
            return Err(err(
                format!("blocks[{i}].name"),
                format!(
                    "no unit of {} belongs to block \"{}\" (blocks: {})",
                    units.path.display(),
                    block.name,
                    units.blocks().join(", ")
                ),
                "name a block of the units table",
            ));
        }
        match &block.need {
            NeedRule::When { column, .. } if !cases.attributes.contains_key(column) => {
                return Err(err(
                    format!("blocks[{i}].need"),
                    format!(
                        "\"{column}\" is not a text column of {} (text columns: {})",
                        cases.path.display(),
                        case_columns()
                    ),
                    "use when:<column>=<value> with a column of cases",
                ));
            }
            NeedRule::ThroughGoldRank if cases.gold_rank.is_none() => {
                return Err(err(
                    format!("blocks[{i}].need"),
                    format!(
                        "through_gold_rank needs a gold_rank column in {}",
                        cases.path.display()
                    ),
                    "add gold_rank (null where the gold passage was not retrieved) or use another rule",
                ));
            }
            // A unit without a rank is neither within nor beyond the gold rank: counting it as
            // needed would overstate the oracle figure without a word.
            NeedRule::ThroughGoldRank => {
                let Some(units) = units else { continue };
                let unranked: Vec<&str> = units
                    .specs
                    .iter()
                    .filter(|u| u.block == block.name && u.rank.is_none())
                    .map(|u| u.unit.as_str())
                    .collect();
                if let Some(first) = unranked.first() {
                    return Err(err(
                        format!("blocks[{i}].need"),
                        format!(
                            "through_gold_rank compares each unit's rank with the case's gold_rank, but {} of block \"{}\" in {} {} no rank (first: \"{first}\")",
                            if unranked.len() == 1 {
                                "1 unit".to_string()
                            } else {
                                format!("{} units", unranked.len())
                            },
                            block.name,
                            units.path.display(),
                            if unranked.len() == 1 { "has" } else { "have" },
                        ),
                        "give every unit of the block a rank (1 = the passage retrieved first) in the units table, or use another rule",
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}
