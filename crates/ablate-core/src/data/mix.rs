//! A production mix: one row per production stratum, with its `share` (summing to 1) or its
//! `count`. Every text column is a stratum column; together they name the stratum.

use std::path::PathBuf;

/// One production stratum.
#[derive(Debug, Clone, PartialEq)]
pub struct Stratum {
    /// Values of the stratum columns, in [`Mix::columns`] order.
    pub values: Vec<String>,
    /// Production share (from `share`, or `count` / total count).
    pub share: f64,
}

/// A validated production mix.
#[derive(Debug, Clone)]
pub struct Mix {
    /// Where it came from.
    pub path: PathBuf,
    /// The stratum columns (the mix's text columns), in file order.
    pub columns: Vec<String>,
    /// The strata, in file order.
    pub strata: Vec<Stratum>,
    /// True when shares were derived from a `count` column.
    pub from_counts: bool,
}

impl Mix {
    /// A stratum's label as `col=value, col=value`.
    pub fn label(&self, stratum: &Stratum) -> String {
        self.columns
            .iter()
            .zip(&stratum.values)
            .map(|(c, v)| format!("{c}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
