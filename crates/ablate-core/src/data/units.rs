//! The `units` table (removable units and their blocks) and the optional `case_units` table
//! (tokens per case and unit).

use std::collections::HashMap;
use std::path::PathBuf;

/// One removable unit.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitSpec {
    /// Unit name, e.g. `few_shot/07` or `passages/rank3`.
    pub unit: String,
    /// The block it belongs to.
    pub block: String,
    /// Mean tokens per request.
    pub tokens: f64,
    /// Retrieval rank, for passages.
    pub rank: Option<i64>,
}

/// The validated units table.
#[derive(Debug, Clone)]
pub struct Units {
    /// Where it came from.
    pub path: PathBuf,
    /// Units in file order.
    pub specs: Vec<UnitSpec>,
    /// unit name → index.
    pub index: HashMap<String, usize>,
}

impl Units {
    /// Block names in order of first appearance.
    pub fn blocks(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in &self.specs {
            if !out.contains(&s.block) {
                out.push(s.block.clone());
            }
        }
        out
    }

    /// Σ tokens of all units: the full prompt's mean size.
    pub fn total_tokens(&self) -> f64 {
        crate::stats::moments::sum(self.specs.iter().map(|s| s.tokens))
    }
}

/// Tokens per (case, unit), from the optional `case_units` table.
#[derive(Debug, Clone)]
pub struct CaseUnits {
    /// Where it came from.
    pub path: PathBuf,
    /// (case index, unit index, tokens) per row.
    pub rows: Vec<(u32, u32, f64)>,
}
