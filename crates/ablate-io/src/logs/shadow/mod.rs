//! The shadow log reduced to sums ([`ShadowSums`]): by streaming the log in hash partitions of
//! request ids ([`sums`], in `scan`), or from an engine's result of `ablate sql shadow`
//! ([`read_aggregates`], in `aggregates`). `analysis::shadow::finish` turns the sums into the
//! report.

mod aggregates;
mod scan;
pub use aggregates::read_aggregates;
pub use scan::{BYTES_PER_REQUEST, sums};

pub use ablate_core::data::logs::shadow::*;
