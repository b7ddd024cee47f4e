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
pub fn read(file: &TableFile, by: &[String], cluster: Option<&str>) -> Result<ShadowSums> {
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
    let mut duplicates = 0u64;
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
            "duplicates" => duplicates += t.count(r)?,
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
                    "requests" => c.requests += v,
                    "changed" => c.changed += v,
                    "noise" => c.noise += v,
                    "d2" => c.d2 += v,
                    "score_n" => c.score_n += v,
                    "tokens_production_n" => c.tokens[0].n += v,
                    "tokens_candidate_n" => c.tokens[1].n += v,
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
