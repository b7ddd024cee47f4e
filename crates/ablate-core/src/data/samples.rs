//! The optional `samples` table: what a case's call looked like, for the report's drill-down.
//! One row per (case_id, arm, repeat): `input` (the prompt or question), `output` (the model's
//! answer) and `source` (where the sample came from: the log file and the harness's sample id, so
//! that a reader can open it in `inspect view` or promptfoo's viewer). `input`, `output` and
//! `source` are optional columns and may be null.
//!
//! Loading checks the keys only (case ids in the cases table, arms in the results, no repeated
//! (case_id, arm, repeat)); the text is read later, for the few cases the drill-down shows
//! (`Samples::read`), by a join pushed into the scan, so a large table is never held whole.

use crate::data::table_file::TableFile;

/// The validated samples table (its keys checked; its text left on disk).
#[derive(Debug, Clone)]
pub struct Samples {
    /// The file.
    pub file: TableFile,
    /// Number of rows.
    pub rows: usize,
}

/// One sample's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleText {
    /// The input (prompt or question), when logged.
    pub input: Option<String>,
    /// The output (the model's answer), when logged.
    pub output: Option<String>,
    /// Where it came from (log file and sample id), when known.
    pub source: Option<String>,
}
