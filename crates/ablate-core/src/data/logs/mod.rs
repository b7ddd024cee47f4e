//! What the streamed logs (`shadow`, `context_log`) are reduced to: their schema check, and the
//! sums the `shadow` and `context` verbs finish.

pub mod context;
pub mod shadow;

use std::path::PathBuf;

/// Default memory budget for streaming a log: 4 GiB.
pub const DEFAULT_MEMORY: u64 = 4 << 30;

/// [`DEFAULT_MEMORY`] as `--memory` takes it (its help shows this text; a test of `ablate-io`'s
/// parser checks that it reads back as [`DEFAULT_MEMORY`]).
pub const DEFAULT_MEMORY_TEXT: &str = "4GiB";

/// What a schema check of a streamed table found.
#[derive(Debug, Clone)]
pub struct LogSummary {
    /// Where it is.
    pub path: PathBuf,
    /// Number of rows.
    pub rows: usize,
    /// Its column names.
    pub columns: Vec<String>,
}
