//! The `cases` table: one row per eval case, with its slice, strata, gold rank, stress flag and
//! cluster.

use std::collections::BTreeMap;

use polars::prelude::PlHashMap;

use crate::error::{Error, Result, Row};
use crate::io::table::{self, Col, Kind, TableFile};

pub use ablate_core::data::cases::*;

/// Reading the `cases` table into [`Cases`].
pub trait CasesLoad {
    /// Reads and validates the cases table.
    ///
    /// # Errors
    /// Missing or mistyped columns, null or duplicate case ids, gold ranks below 1, null stress
    /// flags.
    fn load(file: &TableFile) -> Result<Cases>;
}

impl CasesLoad for Cases {
    fn load(file: &TableFile) -> Result<Cases> {
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
                table::is_text(dtype) && !specs.iter().any(|spec| spec.name == name.as_str())
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
