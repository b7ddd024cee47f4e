//! The shadow analysis ([`ablate_analysis::shadow`]), and [`run`], which streams a shadow log
//! through `io` into the sums it finishes.

pub use crate::io::logs::shadow::{BYTES_PER_REQUEST, read_aggregates};
pub use ablate_analysis::shadow::*;

use crate::error::Result;
use crate::io::logs::ShadowLog;

/// Runs the shadow analysis on a shadow-traffic log opened by [`ShadowLog::open`] (its stratum
/// columns are the log's `by`), streaming it in hash partitions that fit `opts.memory`.
///
/// # Errors
/// Unknown variants; a request with a variant twice; no request with both production and
/// candidate rows; a failure reading the file while streaming.
pub fn run(shadow: &ShadowLog, opts: &ShadowOptions) -> Result<ShadowOutput> {
    let scan = ShadowScan {
        memory: opts.memory,
        replicates: opts.replicates,
        progress: opts.progress,
    };
    let sums = crate::io::logs::shadow::sums(shadow, &scan)?;
    finish(&sums, &shadow.by, opts, &shadow.log.summary.path)
}
