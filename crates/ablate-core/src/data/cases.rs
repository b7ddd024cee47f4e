//! The `cases` table: one row per eval case, with its slice, strata, gold rank, stress flag and
//! cluster.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rustc_hash::FxHashMap;

use crate::error::{Error, Result, Row};

/// The validated cases table.
#[derive(Debug, Clone)]
pub struct Cases {
    /// Where it came from.
    pub path: PathBuf,
    /// Case ids, in file order; a case's index in this vector is its index everywhere.
    pub ids: Vec<String>,
    /// case_id → index.
    pub index: FxHashMap<String, u32>,
    /// `stress` flag per case (false when the column is absent).
    pub stress: Vec<bool>,
    /// `gold_rank` per case, when the column exists (None = gold not retrieved).
    pub gold_rank: Option<Vec<Option<i64>>>,
    /// `cluster` per case, when the column exists.
    pub cluster: Option<Vec<String>>,
    /// Each case's cluster as a dense code (0, 1, … in order of first appearance in the table),
    /// when the column exists: what the analyses group by, without comparing names.
    pub cluster_code: Option<Vec<u32>>,
    /// Every other text column (slice and stratum columns), by name.
    pub attributes: BTreeMap<String, Vec<Option<String>>>,
}

impl Cases {
    /// Number of cases.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the table is empty (never true for a loaded table).
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Number of stress cases.
    pub fn stress_count(&self) -> usize {
        self.stress.iter().filter(|s| **s).count()
    }

    /// The `slice` column, if present.
    pub fn slice(&self) -> Option<&Vec<Option<String>>> {
        self.attributes.get("slice")
    }

    /// The index of a case id, trying the cases at `hint` and `hint + 1` before hashing: tables
    /// usually list cases in the cases table's order, so with `hint` the last case found the id
    /// is nearly always one of the two, and is compared as text instead of hashed.
    pub fn index_near(&self, id: &str, hint: usize) -> Option<u32> {
        [hint, hint + 1]
            .into_iter()
            .find(|&i| self.ids.get(i).is_some_and(|known| known == id))
            .map(|i| i as u32)
            .or_else(|| self.index.get(id).copied())
    }

    /// Looks up a case id, or reports it as unknown in `path`/`column` at `row`.
    ///
    /// # Errors
    /// The id is not in the cases table.
    pub fn lookup(&self, id: &str, path: &std::path::Path, row: usize) -> Result<u32> {
        self.index.get(id).copied().ok_or_else(|| Error::BadValue {
            path: path.to_path_buf(),
            column: "case_id".into(),
            row: Row::at(row),
            value: format!("\"{id}\""),
            problem: format!("this case is not in {}", self.path.display()),
            fix: "add the case to the cases table, or drop its rows".into(),
        })
    }
}
