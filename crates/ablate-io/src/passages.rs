//! The `passages` table: one row per case and retrieved passage, with its reranker score.

use crate::error::{Error, Result, Row};
use crate::io::cases::Cases;
use crate::io::table::{self, Col, Kind, TableFile};

pub use ablate_core::data::passages::*;

/// Reading the `passages` table into [`Passages`].
pub trait PassagesLoad {
    /// Reads `passages`, checking cases against `cases`.
    ///
    /// # Errors
    /// Unknown cases; duplicate (case_id, rank); ranks below 1; negative tokens; NaN scores.
    fn load(file: &TableFile, cases: &Cases) -> Result<Passages>;
}

impl PassagesLoad for Passages {
    fn load(file: &TableFile, cases: &Cases) -> Result<Passages> {
        let t = table::read(
            file,
            &[
                Col::req("case_id", Kind::Str),
                Col::req("rank", Kind::Int),
                Col::req("tokens", Kind::Int),
                Col::req("score", Kind::Float),
                Col::opt("gold", Kind::Bool),
            ],
        )?;
        let ids = t.strs("case_id")?;
        let ranks = t.ints("rank")?;
        let tokens: Vec<f64> = t.ints("tokens")?.into_iter().map(|v| v as f64).collect();
        table::check_token_counts(&t.path, "tokens", &tokens)?;
        let scores = t.finite_floats("score")?;
        let gold = if t.has("gold") {
            t.bools("gold")?.into_iter().map(Some).collect()
        } else {
            vec![None; ids.len()]
        };
        table::check_unique(&t.path, "case_id, rank", ids.iter().zip(ranks.iter()))?;
        let mut rows = Vec::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            if ranks[i] < 1 {
                return Err(Error::BadValue {
                    path: t.path.clone(),
                    column: "rank".into(),
                    row: Row::at(i),
                    value: ranks[i].to_string(),
                    problem: "ranks start at 1".into(),
                    fix: "number passages 1, 2, … in retrieval order".into(),
                });
            }
            rows.push(Passage {
                case: cases.lookup(id, &t.path, i)?,
                rank: ranks[i],
                tokens: tokens[i],
                score: scores[i],
                gold: gold[i],
            });
        }
        Ok(Passages { path: t.path, rows })
    }
}
