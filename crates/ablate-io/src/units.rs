//! The `units` table (removable units and their blocks) and the optional `case_units` table
//! (tokens per case and unit).

use crate::error::{Error, Result, Row};
use crate::io::cases::Cases;
use crate::io::table::{self, Col, Kind, TableFile};

pub use ablate_core::data::units::*;

/// Reading the `units` table into [`Units`].
pub trait UnitsLoad {
    /// Reads and validates the units table.
    ///
    /// # Errors
    /// Missing or mistyped columns, duplicate units, negative or non-finite tokens.
    fn load(file: &TableFile) -> Result<Units>;
}

impl UnitsLoad for Units {
    fn load(file: &TableFile) -> Result<Units> {
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
        table::check_token_counts(&t.path, "tokens", &tokens)?;
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
}

/// Reading the `case_units` table into [`CaseUnits`].
pub trait CaseUnitsLoad {
    /// Reads `case_units`, checking every case against `cases` and every unit against `units`.
    ///
    /// # Errors
    /// In this order: negative or non-finite tokens; the first row with a null, an unknown case
    /// or an unknown unit; then, when nothing else is wrong, the first row (in file order) that
    /// repeats an earlier row's (case_id, unit), as the results table reports duplicates last.
    fn load(file: &TableFile, cases: &Cases, units: &Units) -> Result<CaseUnits>;
}

impl CaseUnitsLoad for CaseUnits {
    fn load(file: &TableFile, cases: &Cases, units: &Units) -> Result<CaseUnits> {
        let t = table::read(
            file,
            &[
                Col::req("case_id", Kind::Str),
                Col::req("unit", Kind::Str),
                Col::req("tokens", Kind::Float),
            ],
        )?;
        let tokens = t.finite_floats("tokens")?;
        table::check_token_counts(&t.path, "tokens", &tokens)?;
        let case_ids = t.str_column("case_id")?;
        let unit_names = t.str_column("unit")?;
        let mut rows = Vec::with_capacity(tokens.len());
        let mut last = 0;
        for (i, (c, u)) in case_ids.iter().zip(unit_names.iter()).enumerate() {
            let c = c.ok_or_else(|| t.null_error("case_id", i, "text"))?;
            let u = u.ok_or_else(|| t.null_error("unit", i, "text"))?;
            let case = match cases.index_near(c, last) {
                Some(index) => index,
                None => cases.lookup(c, &t.path, i)?,
            };
            last = case as usize;
            let unit = *units.index.get(u).ok_or_else(|| Error::BadValue {
                path: t.path.clone(),
                column: "unit".into(),
                row: Row::at(i),
                value: format!("\"{u}\""),
                problem: format!("this unit is not in {}", units.path.display()),
                fix: "add the unit to the units table, or drop its rows".into(),
            })? as u32;
            rows.push((case, unit, tokens[i]));
        }
        // Duplicate keys by sorting (case, unit, row) instead of hashing every key: the reported
        // row is the first, in file order, whose key an earlier row has (the smallest second row
        // of a run of equal keys, and the row before it in the run is the only earlier one).
        let mut keys: Vec<(u32, u32, usize)> =
            (0..rows.len()).map(|i| (rows[i].0, rows[i].1, i)).collect();
        keys.sort_unstable();
        if let Some((first, i)) = keys
            .windows(2)
            .filter(|w| (w[0].0, w[0].1) == (w[1].0, w[1].1))
            .map(|w| (w[0].2, w[1].2))
            .min_by_key(|&(_, i)| i)
        {
            let (c, u) = (
                case_ids.get(i).unwrap_or_default(),
                unit_names.get(i).unwrap_or_default(),
            );
            return Err(Error::BadValue {
                path: t.path.clone(),
                column: "case_id, unit".into(),
                row: Row::at(i),
                value: format!("(\"{c}\", \"{u}\")"),
                problem: format!("duplicate key (first seen at row {})", first + 1),
                fix: "each key must appear once; drop or merge the duplicate rows".into(),
            });
        }
        Ok(CaseUnits { path: t.path, rows })
    }
}
