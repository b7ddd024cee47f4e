//! The `arms` table: what each arm removed, and optional design metadata (components, budget,
//! selector).

use std::path::PathBuf;

/// One arm's definition.
#[derive(Debug, Clone, PartialEq)]
pub struct ArmSpec {
    /// Arm label, as in `results.arm`.
    pub arm: String,
    /// Units removed (empty for the baseline).
    pub removed: Vec<String>,
    /// Arm labels whose union is this arm (empty when not given).
    pub components: Vec<String>,
    /// Share of the full prompt's tokens this arm keeps (budget arms).
    pub budget_ratio: Option<f64>,
    /// Which selector produced the arm (e.g. `random`, `retrieval`, `reranker`).
    pub selector: Option<String>,
    /// Reranker score threshold, for selector arms.
    pub selector_threshold: Option<f64>,
    /// Name of the designed experiment the arm belongs to (as written by `ablate plan`).
    pub design: Option<String>,
}

/// The validated arms table.
#[derive(Debug, Clone)]
pub struct Arms {
    /// Where it came from.
    pub path: PathBuf,
    /// Arms in file order.
    pub specs: Vec<ArmSpec>,
}

impl Arms {
    /// The spec of an arm.
    pub fn get(&self, arm: &str) -> Option<&ArmSpec> {
        self.specs.iter().find(|s| s.arm == arm)
    }

    /// Labels in file order.
    pub fn labels(&self) -> Vec<String> {
        self.specs.iter().map(|s| s.arm.clone()).collect()
    }
}
