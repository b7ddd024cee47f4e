//! Strata of a reweighting: stratum keys of the eval's cases, the mix marginalised onto the
//! stratum columns, the weights per stratum (with unmeasured and unweighted strata), the columns
//! chosen, and the coverage gap.

use std::collections::HashMap;

use crate::analysis::paired::Paired;
use crate::error::{Error, Result, Row};
use crate::io::{Experiment, Mix};

use super::{Coverage, Status};
use crate::stats::moments;

/// A stratum key: the values of the stratum columns.
pub(super) type Key = Vec<String>;

pub(super) fn label(columns: &[String], key: &[String]) -> String {
    columns
        .iter()
        .zip(key)
        .map(|(c, v)| format!("{c}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The stratum key of every paired case.
pub(super) fn case_keys(exp: &Experiment, paired: &Paired, columns: &[String]) -> Result<Vec<Key>> {
    let mut values = Vec::new();
    for c in columns {
        let v = exp.cases.attributes.get(c).ok_or_else(|| {
            let names: Vec<&str> = exp.cases.attributes.keys().map(String::as_str).collect();
            Error::Unreadable {
                path: exp.cases.path.clone(),
                problem: format!(
                    "has no text column `{c}` to stratify by (its text columns: {})",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        crate::text::some_names(&names, 20)
                    }
                ),
                fix: "choose one of those (--by, or `strata` in experiment.toml), or add the column to cases"
                    .into(),
            }
        })?;
        values.push(v);
    }
    paired
        .cases
        .iter()
        .map(|&i| {
            values
                .iter()
                .zip(columns)
                .map(|(v, c)| {
                    v[i].clone().ok_or_else(|| Error::BadValue {
                        path: exp.cases.path.clone(),
                        column: c.clone(),
                        row: Row::at(i),
                        value: "null".into(),
                        problem: "a stratum value is missing, so the case cannot be weighted"
                            .into(),
                        fix: "fill in the stratum of every main-set case".into(),
                    })
                })
                .collect()
        })
        .collect()
}

/// The mix marginalised onto `columns`: key → share, in first-appearance order.
pub(super) fn marginal(mix: &Mix, columns: &[String]) -> Result<Vec<(Key, f64, usize)>> {
    let idx: Vec<usize> = columns
        .iter()
        .map(|c| {
            mix.columns
                .iter()
                .position(|m| m == c)
                .ok_or_else(|| Error::BadValue {
                    path: mix.path.clone(),
                    column: c.clone(),
                    row: Row::none(),
                    value: format!("`{c}`"),
                    problem: format!(
                        "the mix has no such stratum column (it has {})",
                        mix.columns.join(", ")
                    ),
                    fix: "give a mix with that column, or choose strata the mix has".into(),
                })
        })
        .collect::<Result<_>>()?;
    let mut out: Vec<(Key, f64, usize)> = Vec::new();
    for (row, s) in mix.strata.iter().enumerate() {
        let key: Key = idx.iter().map(|&i| s.values[i].clone()).collect();
        match out.iter_mut().find(|(k, _, _)| *k == key) {
            Some(e) => e.1 += s.share,
            None => out.push((key, s.share, row)),
        }
    }
    Ok(out)
}

/// Per-case weights and the coverage of one margin (or the crossed strata).
pub(super) struct Weighting {
    /// Weight of each paired case (Σ over cases of a measured stratum h = W_h).
    pub(super) weight: Vec<f64>,
    /// Stratum id of each paired case, for post-stratification.
    pub(super) stratum: Vec<usize>,
    /// Normalised production share per stratum id.
    pub(super) share: Vec<f64>,
    pub(super) coverage: Vec<Coverage>,
    pub(super) unmeasured_share: f64,
    pub(super) unweighted: Vec<String>,
}

/// Builds strata from one margin: checks unmeasured strata, renormalises, computes coverage.
pub(super) fn stratify(
    mix: &Mix,
    columns: &[String],
    keys: &[Key],
    allow_unmeasured: bool,
) -> Result<Weighting> {
    let production = marginal(mix, columns)?;
    let n = keys.len();
    let mut ids: HashMap<&Key, usize> = HashMap::new();
    let mut strata: Vec<Key> = production.iter().map(|p| p.0.clone()).collect();
    for (i, (k, _, _)) in production.iter().enumerate() {
        ids.insert(k, i);
    }
    let mut eval_only: Vec<Key> = keys
        .iter()
        .filter(|k| !ids.contains_key(k))
        .cloned()
        .collect();
    eval_only.sort();
    eval_only.dedup();
    strata.extend(eval_only.iter().cloned());
    let index: HashMap<&Key, usize> = strata.iter().enumerate().map(|(i, k)| (k, i)).collect();
    let stratum: Vec<usize> = keys.iter().map(|k| index[k]).collect();
    let mut counts = vec![0usize; strata.len()];
    for &s in &stratum {
        counts[s] += 1;
    }
    let mut raw_share: Vec<f64> = production.iter().map(|p| p.1).collect();
    raw_share.resize(strata.len(), 0.0);

    let unmeasured = unmeasured_share(mix, columns, &production, &counts, allow_unmeasured)?;
    let measured_total: f64 = moments::sum(
        (0..strata.len())
            .filter(|&i| counts[i] > 0)
            .map(|i| raw_share[i]),
    );
    if measured_total <= 0.0 {
        return Err(Error::BadValue {
            path: mix.path.clone(),
            column: columns.join(", "),
            row: Row::none(),
            value: format!("{:.1}% unmeasured", 100.0 * unmeasured),
            problem:
                "no production stratum with traffic has an eval case, so nothing can be reweighted"
                    .into(),
            fix: "check that the mix's stratum values match the cases table's (spelling, case)"
                .into(),
        });
    }
    let share: Vec<f64> = (0..strata.len())
        .map(|i| {
            if counts[i] > 0 && measured_total > 0.0 {
                raw_share[i] / measured_total
            } else {
                0.0
            }
        })
        .collect();
    let weight = stratum
        .iter()
        .map(|&s| share[s] / counts[s] as f64)
        .collect();
    let coverage = strata
        .iter()
        .enumerate()
        .map(|(i, key)| {
            let eval_share = counts[i] as f64 / n.max(1) as f64;
            let ratio = (counts[i] > 0).then(|| raw_share[i] / eval_share);
            Coverage {
                stratum: columns.iter().cloned().zip(key.iter().cloned()).collect(),
                eval_cases: counts[i],
                eval_share,
                production_share: raw_share[i],
                ratio,
                status: Status::of(counts[i], ratio),
            }
        })
        .collect();
    Ok(Weighting {
        weight,
        stratum,
        share,
        coverage,
        unmeasured_share: unmeasured,
        unweighted: eval_only.iter().map(|k| label(columns, k)).collect(),
    })
}

/// The production share in strata without an eval case: an error naming the first such stratum,
/// unless `--allow-unmeasured`.
fn unmeasured_share(
    mix: &Mix,
    columns: &[String],
    production: &[(Key, f64, usize)],
    counts: &[usize],
    allow_unmeasured: bool,
) -> Result<f64> {
    let mut unmeasured = 0.0;
    for (i, (key, share, row)) in production.iter().enumerate() {
        if counts[i] == 0 && *share > 0.0 {
            if !allow_unmeasured {
                return Err(Error::BadValue {
                    path: mix.path.clone(),
                    column: columns.join(", "),
                    row: Row::at(*row),
                    value: label(columns, key),
                    problem: format!(
                        "this production stratum ({:.1}% of traffic) has no eval case, so its behaviour is unknown",
                        100.0 * share
                    ),
                    fix: "add eval cases for it, or pass --allow-unmeasured to renormalise over measured strata (the dropped share is reported)"
                        .into(),
                });
            }
            unmeasured += share;
        }
    }
    Ok(unmeasured)
}

/// The most under-sampled stratum in the seed's wording.
pub(super) fn coverage_gap(coverage: &[Coverage]) -> Option<String> {
    let describe = |c: &Coverage| {
        let name = c.label();
        format!(
            "{:.0}% {name} in set vs {:.0}% in production",
            100.0 * c.eval_share,
            100.0 * c.production_share
        )
    };
    let unmeasured = coverage
        .iter()
        .filter(|c| c.status == Status::Unmeasured)
        .max_by(|a, b| a.production_share.total_cmp(&b.production_share));
    if let Some(c) = unmeasured {
        return Some(describe(c));
    }
    coverage
        .iter()
        .filter(|c| c.status == Status::UnderSampled)
        .max_by(|a, b| a.ratio.unwrap_or(0.0).total_cmp(&b.ratio.unwrap_or(0.0)))
        .map(describe)
}

/// The stratum columns of a post-stratification: `by` when given; else the experiment's strata
/// (manifest `strata`, else `slice`) when the mix has them; else, for a mix given explicitly (or
/// when the manifest names no strata), the mix's own text columns.
///
/// # Errors
/// The experiment's own mix lacks the strata the manifest names; the mix has a column the
/// strata leave out (without `by`, its shares would be summed over it unasked).
pub(super) fn choose_columns(
    exp: &Experiment,
    mix: &Mix,
    by: &[String],
    explicit_mix: bool,
) -> Result<Vec<String>> {
    let strata = exp.strata();
    if !by.is_empty() {
        Ok(by.to_vec())
    } else if !strata.is_empty() && strata.iter().all(|c| mix.columns.contains(c)) {
        // A mix column `strata` leaves out would be summed over without a word: a mix saying
        // production is all `billing` had been weighted by `turns` alone.
        if let Some(extra) = mix.columns.iter().find(|c| !strata.contains(c)) {
            return Err(Error::BadValue {
                path: mix.path.clone(),
                column: extra.clone(),
                row: Row::none(),
                value: format!("mix columns: {}", mix.columns.join(", ")),
                problem: format!(
                    "the mix splits production by `{extra}` too, which the experiment's strata ({}) leave out, so its shares would be summed over `{extra}` and the production weights would ignore it",
                    strata.join(", ")
                ),
                fix: format!(
                    "add `{extra}` to `strata` in experiment.toml (the cases need the column too), or pass {} to weight by those columns alone on purpose",
                    strata
                        .iter()
                        .map(|c| format!("--by {c}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
            });
        }
        Ok(strata)
    } else if !explicit_mix && exp.manifest.strata.is_some() {
        Err(Error::BadValue {
            path: mix.path.clone(),
            column: strata.join(", "),
            row: Row::none(),
            value: format!("mix columns: {}", mix.columns.join(", ")),
            problem: "the mix lacks the experiment's strata (experiment.toml `strata`)".into(),
            fix: "add those columns to the mix, change `strata`, or choose columns with --by"
                .into(),
        })
    } else {
        Ok(mix.columns.clone())
    }
}

/// Production strata of the experiment's own mix, for post-stratifying other per-case
/// quantities (the needed-context fraction).
#[derive(Debug, Clone)]
pub struct ProductionStrata {
    /// Stratum columns.
    pub columns: Vec<String>,
    /// Stratum id of each of the paired cases.
    pub stratum: Vec<usize>,
    /// Production share per stratum id (renormalised over measured strata; 0 for eval-only ones).
    pub share: Vec<f64>,
    /// Production share of strata with no eval case (left out).
    pub unmeasured_share: f64,
}

/// The experiment mix's strata over `paired`'s cases; `None` when the experiment has no mix.
/// A production stratum with no eval case is an error unless `allow_unmeasured`; then it is left
/// out and reported in `unmeasured_share`.
///
/// # Errors
/// As [`reweight::run`](crate::analysis::reweight::run): stratum columns missing from cases or mix, null stratum values, unmeasured strata
/// (unless allowed), nothing measured.
pub fn production_strata(
    exp: &Experiment,
    paired: &Paired,
    allow_unmeasured: bool,
) -> Result<Option<ProductionStrata>> {
    let Some(mix) = &exp.mix else {
        return Ok(None);
    };
    let columns = choose_columns(exp, mix, &[], false)?;
    let keys = case_keys(exp, paired, &columns)?;
    let w = stratify(mix, &columns, &keys, allow_unmeasured)?;
    Ok(Some(ProductionStrata {
        columns,
        stratum: w.stratum,
        share: w.share,
        unmeasured_share: w.unmeasured_share,
    }))
}
