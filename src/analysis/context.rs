//! The context analysis ([`ablate_analysis::context`]), and [`run`], which streams a context log
//! through `io` into the sums it finishes.

pub use crate::io::logs::context::{BYTES_PER_ROW, BYTES_PER_ROW_REPLAY, read_aggregates};
pub use ablate_analysis::context::*;

use crate::error::Result;
use crate::io::logs::ContextLog;

/// Analyses a context log opened by [`ContextLog::open`], streaming it in hash partitions of
/// request ids that fit `opts.memory`.
///
/// # Errors
/// Unreadable file, bad columns or values, no model limit known for some call, hard limits ≤ 0.
pub fn run(context: &ContextLog, opts: &ContextOptions) -> Result<ContextOutput> {
    let sums = crate::io::logs::context::sums(context, opts)?;
    Ok(finish(&sums, opts.policy.as_ref()))
}
