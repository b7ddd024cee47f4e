//! The `passages` table: one row per case and retrieved passage, with its reranker score.

use std::path::PathBuf;

/// One retrieved passage of one case.
#[derive(Debug, Clone, PartialEq)]
pub struct Passage {
    /// Case index (in the cases table).
    pub case: u32,
    /// Retrieval rank, from 1.
    pub rank: i64,
    /// Tokens of the passage.
    pub tokens: f64,
    /// Reranker score.
    pub score: f64,
    /// Whether it is the gold passage, when labelled.
    pub gold: Option<bool>,
}

/// The validated passages table.
#[derive(Debug, Clone)]
pub struct Passages {
    /// Where it came from.
    pub path: PathBuf,
    /// Passages in file order.
    pub rows: Vec<Passage>,
}
