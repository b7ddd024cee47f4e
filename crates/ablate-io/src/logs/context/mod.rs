//! The context log reduced to sums ([`ContextSums`]), and the budget policy it is replayed
//! through ([`Policy`], in `policy`): by streaming the log in hash partitions of request ids
//! ([`sums`], in `scan`: one pass per partition, each holding only its share of the calls and,
//! for the policy replay, of the items), or from an engine's result of `ablate sql context`
//! ([`read_aggregates`], in `aggregates`). `analysis::context::finish` turns the sums into the
//! report.

mod aggregates;
mod scan;
pub use aggregates::read_aggregates;
pub use scan::{BYTES_PER_ROW, BYTES_PER_ROW_REPLAY, sums};

pub use ablate_core::data::logs::context::*;
