//! The `cases` table: one row per eval case, with its slice, strata, gold rank, stress flag and
//! cluster.

use std::collections::BTreeMap;
use std::path::PathBuf;

use polars::prelude::PlHashMap;

use crate::error::{Error, Result, Row};
use crate::io::table::{self, Col, Kind, TableFile};

/// The validated cases table.
#[derive(Debug, Clone)]
pub struct Cases {
    /// Where it came from.
    pub path: PathBuf,
    /// Case ids, in file order; a case's index in this vector is its index everywhere.
    pub ids: Vec<String>,
    /// case_id → index.
    pub index: PlHashMap<String, u32>,
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

/// Dense codes of `names`: 0 for the first name, then the next unused code for each name not
/// seen before.
fn cluster_codes(names: &[String]) -> Vec<u32> {
    let mut seen: PlHashMap<&str, u32> = PlHashMap::default();
    names
        .iter()
        .map(|n| {
            let next = seen.len() as u32;
            *seen.entry(n.as_str()).or_insert(next)
        })
        .collect()
}

impl Cases {
    /// Reads and validates the cases table.
    ///
    /// # Errors
    /// Missing or mistyped columns, null or duplicate case ids, gold ranks below 1, null stress
    /// flags.
    pub fn load(file: &TableFile) -> Result<Cases> {
        let schema = table::schema(file, &["case_id", "cluster"])?;
        let mut specs = vec![
            Col::req("case_id", Kind::Str),
            Col::opt("gold_rank", Kind::Int),
            Col::opt("stress", Kind::Bool),
            Col::opt("cluster", Kind::Str),
        ];
        let attribute_names: Vec<String> = schema
            .iter()
            .filter(|(name, dtype)| {
                table::is_text(dtype) && !["case_id", "cluster"].contains(&name.as_str())
            })
            .map(|(name, _)| name.to_string())
            .collect();
        specs.extend(
            attribute_names
                .iter()
                .map(|n| Col::opt(n.clone(), Kind::Str)),
        );
        let t = table::read(file, &specs)?;

        let ids = t.strs("case_id")?;
        for (row, id) in ids.iter().enumerate() {
            table::check_id(&t.path, "case_id", row, id)?;
        }
        table::check_unique(&t.path, "case_id", ids.iter())?;
        let index = ids
            .iter()
            .enumerate()
            .map(|(i, id)| (id.clone(), i as u32))
            .collect();
        let stress = if t.has("stress") {
            t.flags("stress")?
        } else {
            vec![false; ids.len()]
        };
        let gold_rank = if t.has("gold_rank") {
            let ranks = t.opt_ints("gold_rank")?;
            if let Some((i, r)) = ranks
                .iter()
                .enumerate()
                .find_map(|(i, r)| r.filter(|r| *r < 1).map(|r| (i, r)))
            {
                return Err(Error::BadValue {
                    path: t.path.clone(),
                    column: "gold_rank".into(),
                    row: Row::at(i),
                    value: r.to_string(),
                    problem: "ranks start at 1".into(),
                    fix: "use 1 for the top passage, and null when the gold passage was not retrieved"
                        .into(),
                });
            }
            Some(ranks)
        } else {
            None
        };
        let cluster = if t.has("cluster") {
            // A case with no cluster given is a cluster of its own (a name no real cluster has).
            Some(
                t.opt_strs("cluster")?
                    .into_iter()
                    .zip(&ids)
                    .map(|(c, id)| c.unwrap_or_else(|| format!("\u{0}case {id}")))
                    .collect(),
            )
        } else {
            None
        };
        let cluster_code = cluster.as_deref().map(cluster_codes);
        let mut attributes = BTreeMap::new();
        for name in attribute_names {
            attributes.insert(name.clone(), t.opt_strs(&name)?);
        }
        Ok(Cases {
            path: t.path,
            ids,
            index,
            stress,
            gold_rank,
            cluster,
            cluster_code,
            attributes,
        })
    }

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
