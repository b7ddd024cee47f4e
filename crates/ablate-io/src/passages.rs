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
        if t.has("gold") {
            check_gold(&t.path, &rows, cases)?;
        }
        Ok(Passages { path: t.path, rows })
    }
}

/// Each case's gold passage is one passage, and the `gold` flags agree with the cases'
/// `gold_rank` where both are given: the selector's oracle saving reads the rank and its gold
/// miss rate the flag, so two gold passages (which one the oracle kept would depend on row order)
/// or two sources that disagree would make its numbers contradict each other.
///
/// # Errors
/// A case with two passages flagged gold; a case whose flagged rank (or none) differs from its
/// `gold_rank` (null = gold not retrieved).
fn check_gold(path: &std::path::Path, rows: &[Passage], cases: &Cases) -> Result<()> {
    /// A case's first passage's row, and the rank flagged gold with its row.
    type Seen = (Option<usize>, Option<(i64, usize)>);
    let mut flagged: Vec<Seen> = vec![(None, None); cases.len()];
    for (row, p) in rows.iter().enumerate() {
        let entry = &mut flagged[p.case as usize];
        entry.0.get_or_insert(row);
        if p.gold != Some(true) {
            continue;
        }
        if let Some((first, _)) = entry.1 {
            return Err(Error::BadValue {
                path: path.to_path_buf(),
                column: "gold".into(),
                row: Row::at(row),
                value: format!(
                    "case \"{}\": ranks {first} and {} both flagged gold",
                    cases.ids[p.case as usize], p.rank
                ),
                problem: "a case has one gold passage: the selector's oracle keeps every passage up to it, and its gold miss rate counts whether the threshold drops it".into(),
                fix: "flag one passage gold per case (the one the answer needs)".into(),
            });
        }
        entry.1 = Some((p.rank, row));
    }
    let Some(gold_rank) = &cases.gold_rank else {
        return Ok(());
    };
    for (c, &(first_row, gold)) in flagged.iter().enumerate() {
        let Some(first_row) = first_row else {
            continue;
        };
        let rank = gold.map(|g| g.0);
        if rank != gold_rank[c] {
            return Err(Error::BadValue {
                path: path.to_path_buf(),
                column: "gold".into(),
                row: Row::at(gold.map_or(first_row, |g| g.1)),
                value: format!(
                    "case \"{}\": {}, the cases table's gold_rank is {}",
                    cases.ids[c],
                    rank.map_or_else(
                        || "no passage is flagged gold".to_string(),
                        |r| format!("the passage flagged gold is rank {r}")
                    ),
                    gold_rank[c].map_or_else(|| "null (not retrieved)".to_string(), |r| r.to_string())
                ),
                problem: "the passages' gold flags and the cases' gold_rank name different gold passages (the selector's oracle saving reads gold_rank, its gold miss rate the flag)".into(),
                fix: format!(
                    "make them agree (gold_rank null when the gold passage was not retrieved), or drop one of the two: the `gold` column of {} or `gold_rank` of {}",
                    path.display(),
                    cases.path.display()
                ),
            });
        }
    }
    Ok(())
}
