//! [`ShadowSums`] from an engine's result of `ablate sql shadow`.

use super::{CellSums, ShadowSums};
use crate::error::{Error, Result};
use crate::io::aggregates::LongTable;
use crate::io::table::TableFile;

/// Reads shadow aggregates broken down by `by` (columns of the file; strata the file has but `by`
/// leaves out are summed over). `cluster` names the query's cluster column in the report.
///
/// # Errors
/// Unreadable file; missing columns; unknown statistics; counts that are not whole numbers;
/// requests with a variant twice (the query counts them).
pub fn read_aggregates(
    file: &TableFile,
    by: &[String],
    cluster: Option<&str>,
) -> Result<ShadowSums> {
    let keys: Vec<&str> = by.iter().map(String::as_str).collect();
    if !crate::io::table::schema(file, &[])?
        .iter_names()
        .any(|c| c.as_str() == "replay")
    {
        return Err(Error::Usage(format!(
            "{}: not shadow aggregates (no `replay` column); write them with the query `ablate sql shadow` prints",
            file.path.display()
        )));
    }
    let t = LongTable::read(file, &keys, &["replay"])?;
    let mut sums = ShadowSums::default();
    let (mut duplicates, mut disagreeing) = (0u64, 0u64);
    for r in &t.rows {
        let (stratum, replay) = r.keys.split_at(by.len());
        let key = (stratum.to_vec(), replay[0].trim() == "1");
        let global = |sums: &mut ShadowSums, v: u64, stat: &str| match stat {
            "incomplete" => sums.incomplete += v,
            "replay_rows" => sums.replay_rows += v,
            _ => {}
        };
        match r.stat.as_str() {
            "incomplete" | "replay_rows" => global(&mut sums, t.count(r)?, &r.stat),
            "incomplete_stratum" => {
                *sums
                    .incomplete_by_stratum
                    .entry(stratum.to_vec())
                    .or_default() += t.count(r)?;
            }
            "duplicates" => duplicates += t.count(r)?,
            "disagreeing" => disagreeing += t.count(r)?,
            "score_delta" => sums.cells.entry(key).or_default().score_delta += r.value,
            "replicate_d" | "replicate_n" => {
                let b = usize::try_from(r.bin)
                    .map_err(|_| t.bad(r, "a replicate index must be 0 or more"))?;
                let v = t.whole(r)?;
                let c = sums.cells.entry(key).or_default();
                if c.replicates.len() <= b {
                    c.replicates.resize(b + 1, (0, 0));
                }
                if r.stat == "replicate_d" {
                    c.replicates[b].0 += v;
                } else {
                    c.replicates[b].1 += v;
                }
                sums.replicates = sums.replicates.max(b + 1);
            }
            stat => {
                let v = t.count(r)?;
                let c: &mut CellSums = sums.cells.entry(key).or_default();
                match stat {
                    "requests" => t.add(r, &mut c.requests, v)?,
                    "changed" => t.add(r, &mut c.changed, v)?,
                    "noise" => t.add(r, &mut c.noise, v)?,
                    "d2" => t.add(r, &mut c.d2, v)?,
                    "score_n" => t.add(r, &mut c.score_n, v)?,
                    "clusters_up" => t.add(r, &mut c.clusters_up, v)?,
                    "clusters_down" => t.add(r, &mut c.clusters_down, v)?,
                    "tokens_production_n" => t.add(r, &mut c.tokens[0].n, v)?,
                    "tokens_candidate_n" => t.add(r, &mut c.tokens[1].n, v)?,
                    "tokens_production_sum" => c.tokens[0].sum += i128::from(v),
                    "tokens_candidate_sum" => c.tokens[1].sum += i128::from(v),
                    "tokens_production_hist" => c.tokens[0].counts.add(r.bin, v),
                    "tokens_candidate_hist" => c.tokens[1].counts.add(r.bin, v),
                    other => {
                        return Err(t.bad(
                            r,
                            format!("`{other}` is not a statistic of the shadow query"),
                        ));
                    }
                }
            }
        }
    }
    if duplicates > 0 {
        return Err(Error::BadValue {
            path: t.path.clone(),
            column: "stat".into(),
            row: crate::error::Row::none(),
            value: format!("duplicates = {duplicates}"),
            problem: "requests with a variant more than once".into(),
            fix: "keep one row per request and variant in the log, then rerun the query".into(),
        });
    }
    if disagreeing > 0 {
        return Err(Error::BadValue {
            path: t.path.clone(),
            column: "stat".into(),
            row: crate::error::Row::none(),
            value: format!("disagreeing = {disagreeing}"),
            problem: "requests whose rows give a stratum or the cluster two values (the query took the largest): a request is in one stratum and one cluster".into(),
            fix: "give every row of a request the same stratum and cluster in the log, then rerun the query (`ablate shadow` on the log names the first such request)".into(),
        });
    }
    check_cells(&sums, &t.path)?;
    // Cells made only of global rows (empty strata) hold nothing.
    sums.cells.retain(|_, c| {
        c.requests > 0 || c.tokens.iter().any(|t| t.n > 0) || !c.replicates.is_empty()
    });
    for c in sums.cells.values_mut() {
        for tok in &mut c.tokens {
            tok.counts.binned = true;
        }
        if c.replicates.len() < sums.replicates {
            c.replicates.resize(sums.replicates, (0, 0));
        }
    }
    if sums.replicates > 0 {
        sums.cluster = Some(cluster.unwrap_or("the query's --cluster-by column").into());
    }
    Ok(sums)
}

/// The counts of each cell against each other, as one log would give them: changed, noise,
/// d2 = #(changed ≠ noise), score_n and the token counts at most the requests, and d2 between
/// |changed − noise| and changed + noise.
///
/// # Errors
/// The first cell whose counts no log could give, named by its stratum.
fn check_cells(sums: &ShadowSums, path: &std::path::Path) -> Result<()> {
    for ((stratum, replay), c) in &sums.cells {
        let problem = if c.changed > c.requests {
            Some(format!(
                "changed = {} exceeds requests = {}",
                c.changed, c.requests
            ))
        } else if c.noise > c.requests {
            Some(format!(
                "noise = {} exceeds requests = {}",
                c.noise, c.requests
            ))
        } else if c.d2 > c.changed + c.noise || c.d2 < c.changed.abs_diff(c.noise) {
            Some(format!(
                "d2 = {} is not between |changed − noise| = {} and changed + noise = {}",
                c.d2,
                c.changed.abs_diff(c.noise),
                c.changed + c.noise
            ))
        } else if c.score_n > c.requests {
            Some(format!(
                "score_n = {} exceeds requests = {}",
                c.score_n, c.requests
            ))
        } else {
            c.tokens.iter().find(|t| t.n > c.requests).map(|tok| {
                format!(
                    "a token count n = {} exceeds requests = {}",
                    tok.n, c.requests
                )
            })
        };
        if let Some(problem) = problem {
            return Err(Error::BadValue {
                path: path.to_path_buf(),
                column: "stat, value".into(),
                row: crate::error::Row::none(),
                value: format!(
                    "stratum [{}], replay = {}",
                    stratum.join(", "),
                    u8::from(*replay)
                ),
                problem: format!("{problem}: no log gives these sums"),
                fix: "write this file with the query `ablate sql` prints, unchanged (partitions merge by adding every statistic)".into(),
            });
        }
    }
    Ok(())
}
