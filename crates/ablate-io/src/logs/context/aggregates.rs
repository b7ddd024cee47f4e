//! [`ContextSums`] from an engine's result of `ablate sql context`.

use std::path::Path;

use super::{ContextSums, Policy, hard_limit};
use crate::error::{Error, Result};
use crate::io::aggregates::LongTable;
use crate::io::table::TableFile;
use crate::sql::context::limits_key;
use crate::stats::histogram::Counts;

/// Reads context aggregates, checking that the query used the limits `limits` (the same flags
/// or policy limits as this run).
///
/// # Errors
/// Unreadable file; missing columns; unknown statistics; counts that are not whole numbers; calls
/// without a model limit or with no input budget (the query counts them); limits other than
/// `limits`.
pub fn read_aggregates(file: &TableFile, limits: &Policy) -> Result<ContextSums> {
    let t = LongTable::read(file, &["key"], &[])?;
    let mut sums = ContextSums {
        sizes: Counts::log_binned(),
        hard: Counts::exact(),
        ..ContextSums::default()
    };
    let (mut missing, mut nonpositive) = (0u64, 0u64);
    let want = limits_key(limits);
    for r in &t.rows {
        match r.stat.as_str() {
            "calls" => t.add(r, &mut sums.calls, t.count(r)?)?,
            "size_sum" => sums.size_sum += i128::from(t.count(r)?),
            "size_hist" => sums.sizes.add(r.bin, t.count(r)?),
            "hard_calls" => sums.hard.add(r.bin, t.count(r)?),
            "utilisation_sum" => sums.utilisation_sum += r.value,
            "overflow" => t.add(r, &mut sums.overflow, t.count(r)?)?,
            "soft_crossing" => t.add(r, &mut sums.soft_crossing, t.count(r)?)?,
            "missing_limit" => missing += t.count(r)?,
            "nonpositive_limit" => nonpositive += t.count(r)?,
            "step_sum" => sums.steps.get_or_insert_default().x += i128::from(t.whole(r)?),
            "step2_sum" => sums.steps.get_or_insert_default().xx += i128::from(t.count(r)?),
            "size_step_sum" => sums.steps.get_or_insert_default().xy += i128::from(t.whole(r)?),
            "source_tokens" => {
                *sums.sources.entry(r.keys[0].clone()).or_insert(0) += i128::from(t.count(r)?)
            }
            "limits" => {
                if r.keys[0] != want {
                    return Err(Error::Usage(format!(
                        "{}: the query was written for limits {}, but this run uses {want}; pass the same --model-limit, --expected-output, --output-buffer, --safety-margin and --soft-limit-ratio (or policy limits) as `ablate sql context`",
                        t.path.display(),
                        r.keys[0]
                    )));
                }
            }
            other => {
                return Err(t.bad(
                    r,
                    format!("`{other}` is not a statistic of the context query"),
                ));
            }
        }
    }
    let path = Path::new(&t.path);
    if missing > 0 {
        hard_limit(None, None, limits, path)?;
    }
    if nonpositive > 0 {
        return Err(Error::Unsupported {
            what: format!("context analysis of {}", path.display()),
            reason: format!(
                "{nonpositive} calls have a model limit that leaves no input budget after the expected output, output buffer and safety margin"
            ),
            fix: "check the model limit, or lower the output buffer or safety margin".into(),
        });
    }
    if sums.calls == 0 {
        return Err(Error::EmptyTable {
            path: t.path.clone(),
        });
    }
    for (stat, n) in [
        ("overflow", sums.overflow),
        ("soft_crossing", sums.soft_crossing),
    ] {
        if n > sums.calls {
            return Err(Error::BadValue {
                path: t.path.clone(),
                column: "stat, value".into(),
                row: crate::error::Row::none(),
                value: format!("{stat} = {n}, calls = {}", sums.calls),
                problem: format!(
                    "{stat} counts calls, so it cannot exceed them: no log gives these sums"
                ),
                fix: "write this file with the query `ablate sql` prints, unchanged".into(),
            });
        }
    }
    Ok(sums)
}
