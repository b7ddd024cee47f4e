//! The `units` table (removable units and their blocks) and the optional `case_units` table
//! (tokens per case and unit).

use std::collections::HashMap;
use std::path::PathBuf;

use crate::error::{Error, Result, Row};
use crate::io::cases::Cases;
use crate::io::table::{self, Col, Kind, TableFile};

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
    /// Reads and validates the units table.
    ///
    /// # Errors
    /// Missing or mistyped columns, duplicate units, negative or non-finite tokens.
    pub fn load(file: &TableFile) -> Result<Units> {
        let t = table::read(
            file,
            &[
                Col::req("unit", Kind::Str),
                Col::req("block", Kind::Str),
                Col::req("tokens", Kind::Float),
                Col::opt("rank", Kind::Int),
            ],
        )?;
        let units = t.strs("unit")?;
        table::check_unique(&t.path, "unit", units.iter())?;
        let blocks = t.strs("block")?;
        for (row, (unit, block)) in units.iter().zip(&blocks).enumerate() {
            table::check_id(&t.path, "unit", row, unit)?;
            table::check_id(&t.path, "block", row, block)?;
        }
        let tokens = t.finite_floats("tokens")?;
        table::check_non_negative(&t.path, "tokens", &tokens)?;
        let rank = if t.has("rank") {
            t.opt_ints("rank")?
        } else {
            vec![None; units.len()]
        };
        let index = units
            .iter()
            .enumerate()
            .map(|(i, u)| (u.clone(), i))
            .collect();
        let specs = units
            .into_iter()
            .enumerate()
            .map(|(i, unit)| UnitSpec {
                unit,
                block: blocks[i].clone(),
                tokens: tokens[i],
                rank: rank[i],
            })
            .collect();
        Ok(Units {
            path: t.path,
            specs,
            index,
        })
    }

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

impl CaseUnits {
    /// Reads `case_units`, checking every case against `cases` and every unit against `units`.
    ///
    /// # Errors
    /// Unknown cases or units, duplicate (case_id, unit), negative tokens.
    pub fn load(file: &TableFile, cases: &Cases, units: &Units) -> Result<CaseUnits> {
        let t = table::read(
            file,
            &[
                Col::req("case_id", Kind::Str),
                Col::req("unit", Kind::Str),
                Col::req("tokens", Kind::Float),
            ],
        )?;
        let tokens = t.finite_floats("tokens")?;
        table::check_non_negative(&t.path, "tokens", &tokens)?;
        let case_ids = t.str_column("case_id")?;
        let unit_names = t.str_column("unit")?;
        let mut rows = Vec::with_capacity(tokens.len());
        let mut seen: std::collections::HashMap<(u32, u32), usize> = Default::default();
        for (i, (c, u)) in case_ids.iter().zip(unit_names.iter()).enumerate() {
            let c = c.ok_or_else(|| t.null_error("case_id", i, "text"))?;
            let u = u.ok_or_else(|| t.null_error("unit", i, "text"))?;
            let case = cases.lookup(c, &t.path, i)?;
            let unit = *units.index.get(u).ok_or_else(|| Error::BadValue {
                path: t.path.clone(),
                column: "unit".into(),
                row: Row::at(i),
                value: format!("\"{u}\""),
                problem: format!("this unit is not in {}", units.path.display()),
                fix: "add the unit to the units table, or drop its rows".into(),
            })? as u32;
            if let Some(first) = seen.insert((case, unit), i) {
                return Err(Error::BadValue {
                    path: t.path.clone(),
                    column: "case_id, unit".into(),
                    row: Row::at(i),
                    value: format!("(\"{c}\", \"{u}\")"),
                    problem: format!("duplicate key (first seen at row {})", first + 1),
                    fix: "each key must appear once; drop or merge the duplicate rows".into(),
                });
            }
            rows.push((case, unit, tokens[i]));
        }
        Ok(CaseUnits { path: t.path, rows })
    }
}
