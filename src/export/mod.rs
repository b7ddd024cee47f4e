//! `--export DIR`: a verb's tables as Parquet files, with provenance in each file's key-value
//! metadata, for notebooks and warehouses.
//!
//! The tables and their columns are declared in [`spec`] (the README's table of them comes from
//! there), and filled from the verb's JSON, so the Parquet, the JSON and the Python module agree
//! by construction. Types are the declared ones whatever the data holds: a column that is null
//! on every row is still `f64`, a list stays a list.
//!
//! Every file carries, as Parquet key-value metadata:
//!
//! | key | value |
//! |---|---|
//! | `ablate.version` | the tool version (it also marks the file as ablate's) |
//! | `ablate.verb`, `ablate.table` | what wrote it |
//! | `ablate.set`, `ablate.set_sha256`, `ablate.model` | the eval set, its hash (as in the decision record), the model — when the verb read an experiment |
//! | `ablate.seed`, `ablate.bootstrap`, `ablate.confidence` | the run's settings |
//! | `ablate.command` | the command line, as a JSON array |
//!
//! The folder is written like every folder ablate writes ([`crate::io::output::AtomicDir`]): built
//! beside the target and renamed into place; a folder ablate did not write is never replaced.

pub mod spec;

use std::path::{Path, PathBuf};

use polars::prelude::*;
use serde_json::Value;

use crate::analysis::Config;
use crate::error::{Error, Result};
use crate::io::Experiment;
use crate::io::output::{self, AtomicDir};
use crate::io::write;
use spec::{Kind, Shape, TableSpec};

/// Key-value metadata written into every exported file.
#[derive(Debug, Clone, Default)]
pub struct Provenance {
    entries: Vec<(String, String)>,
}

impl Provenance {
    /// The settings of a run, and the experiment it read when there was one.
    pub fn new(verb: &str, cfg: &Config, exp: Option<&Experiment>) -> Provenance {
        let mut entries = vec![
            (
                output::PARQUET_KEY.to_string(),
                env!("CARGO_PKG_VERSION").to_string(),
            ),
            ("ablate.verb".into(), verb.into()),
        ];
        if let Some(exp) = exp {
            entries.push(("ablate.set".into(), exp.manifest.set.clone()));
            entries.push((
                "ablate.set_sha256".into(),
                crate::analysis::record::experiment_set_hash(exp),
            ));
            if let Some(model) = &exp.manifest.model {
                entries.push(("ablate.model".into(), model.clone()));
            }
        }
        entries.push(("ablate.seed".into(), cfg.seed.to_string()));
        entries.push(("ablate.bootstrap".into(), cfg.bootstrap.to_string()));
        entries.push(("ablate.confidence".into(), cfg.confidence.to_string()));
        entries.push((
            "ablate.command".into(),
            serde_json::to_string(&output::command_line()).unwrap_or_default(),
        ));
        Provenance { entries }
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[(String, String)] {
        &self.entries
    }

    fn with_table(&self, table: &str) -> Vec<(String, String)> {
        let mut e = self.entries.clone();
        e.insert(2, ("ablate.table".into(), table.into()));
        e
    }
}

/// The tables `specs` declare, filled from `json` (a verb's output). Each comes back as
/// (name, frame), in the order declared.
///
/// # Errors
/// A value does not have its declared type ([`Error::Invariant`]: a bug, caught by the tests
/// that export every verb).
pub fn frames(specs: &[TableSpec], json: &Value) -> Result<Vec<(String, DataFrame)>> {
    specs
        .iter()
        .map(|s| Ok((s.name.to_string(), frame(s, json)?)))
        .collect()
}

/// Writes `tables` into the folder `dir` as `<name>.parquet`, each with `provenance`. Returns
/// the folder.
///
/// # Errors
/// `dir` is not ablate's to replace ([`Error::Output`]), or a write fails.
pub fn write(
    dir: &Path,
    tables: Vec<(String, DataFrame)>,
    provenance: &Provenance,
) -> Result<PathBuf> {
    let out = AtomicDir::create(dir, crate::io::output::FolderKind::Export)?;
    for (name, mut df) in tables {
        let path = out.path(&format!("{name}.parquet"));
        write::parquet_with(&mut df, &path, provenance.with_table(&name))?;
    }
    out.commit()
}

/// One row's context: the row itself, its map key when it is a map entry, and the objects
/// around it (nearest last).
struct Row<'a> {
    value: &'a Value,
    key: Option<&'a str>,
    outer: Vec<&'a Value>,
}

/// The places `at` points to, each with the objects around it.
fn places<'a>(json: &'a Value, at: &str) -> Vec<(&'a Value, Vec<&'a Value>)> {
    let mut current: Vec<(&Value, Vec<&Value>)> = vec![(json, Vec::new())];
    for seg in at.split('.').filter(|s| !s.is_empty()) {
        let (field, iterate) = match seg.strip_suffix("[]") {
            Some(f) => (f, true),
            None => (seg, false),
        };
        let mut next = Vec::new();
        for (v, outer) in current {
            let Some(child) = v.get(field) else { continue };
            let mut outer = outer.clone();
            outer.push(v);
            if iterate {
                if let Value::Array(items) = child {
                    for item in items {
                        next.push((item, outer.clone()));
                    }
                }
            } else {
                next.push((child, outer));
            }
        }
        current = next;
    }
    current
}

fn rows<'a>(spec: &TableSpec, json: &'a Value) -> Vec<Row<'a>> {
    let mut out = Vec::new();
    for (place, outer) in places(json, spec.at) {
        match (spec.shape, place) {
            (Shape::Rows | Shape::Values, Value::Array(items)) => {
                out.extend(items.iter().map(|v| Row {
                    value: v,
                    key: None,
                    outer: outer.clone(),
                }));
            }
            (Shape::Map, Value::Object(map)) => {
                out.extend(map.iter().map(|(k, v)| Row {
                    value: v,
                    key: Some(k.as_str()),
                    outer: outer.clone(),
                }));
            }
            (Shape::One, Value::Object(_)) => out.push(Row {
                value: place,
                key: None,
                outer,
            }),
            _ => {}
        }
    }
    out
}

/// The value a column path names, from a row (null when absent).
fn lookup<'a>(row: &Row<'a>, path: &str) -> Option<&'a Value> {
    let (mut v, rest): (&Value, &str) = if let Some(field) = path.strip_prefix('^') {
        let found = row.outer.iter().rev().find_map(|o| o.get(field))?;
        return Some(found);
    } else if path == "@key" {
        return None;
    } else if let Some(rest) = path.strip_prefix("@value") {
        (row.value, rest.trim_start_matches('.'))
    } else {
        (row.value, path)
    };
    for seg in rest.split('.').filter(|s| !s.is_empty()) {
        v = match seg.parse::<usize>() {
            Ok(i) => v.get(i)?,
            Err(_) => v.get(seg)?,
        };
    }
    Some(v)
}

/// One column's values read as `T`: a null stays null; anything else must read as a `T`.
fn read_scalars<T>(
    spec: &TableSpec,
    column: &str,
    values: &[Option<Value>],
    want: &str,
    read: fn(&Value) -> Option<T>,
) -> Result<Vec<Option<T>>> {
    values
        .iter()
        .map(|v| match v {
            None => Ok(None),
            Some(x) => read(x).map(Some).ok_or_else(|| bad(spec, column, want, x)),
        })
        .collect()
}

fn bad(spec: &TableSpec, column: &str, want: &str, got: &Value) -> Error {
    Error::Invariant(format!(
        "export table {} column {column}: expected {want}, got {got}",
        spec.name
    ))
}

fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(map) => Some(
            map.iter()
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}={s}"),
                    other => format!("{k}={other}"),
                })
                .collect::<Vec<_>>()
                .join(", "),
        ),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn frame(spec: &TableSpec, json: &Value) -> Result<DataFrame> {
    let rows = rows(spec, json);
    let mut columns = Vec::new();
    for c in spec.columns() {
        let name = PlSmallStr::from_static(c.name);
        let values: Vec<Option<Value>> = rows
            .iter()
            .map(|r| {
                if c.path == "@key" {
                    r.key.map(|k| Value::String(k.to_string()))
                } else {
                    lookup(r, c.path).filter(|v| !v.is_null()).cloned()
                }
            })
            .collect();
        let series = match c.kind {
            Kind::Str => Series::new(
                name,
                values
                    .iter()
                    .map(|v| v.as_ref().and_then(as_text))
                    .collect::<Vec<_>>(),
            ),
            Kind::F64 => Series::new(
                name,
                read_scalars(spec, c.name, &values, "a number", Value::as_f64)?,
            ),
            Kind::I64 => Series::new(
                name,
                read_scalars(spec, c.name, &values, "an integer", Value::as_i64)?,
            ),
            Kind::Bool => Series::new(
                name,
                read_scalars(spec, c.name, &values, "a boolean", Value::as_bool)?,
            ),
            Kind::ListStr => {
                let mut b = ListStringChunkedBuilder::new(name, values.len(), values.len() * 4);
                for v in &values {
                    match v {
                        None => b.append_null(),
                        Some(Value::Array(items)) => {
                            let texts: Vec<String> = items
                                .iter()
                                .map(|i| as_text(i).ok_or_else(|| bad(spec, c.name, "text", i)))
                                .collect::<Result<_>>()?;
                            b.append_values_iter(texts.iter().map(String::as_str));
                        }
                        Some(x) => return Err(bad(spec, c.name, "a list", x)),
                    }
                }
                b.finish().into_series()
            }
            Kind::ListF64 => {
                let mut b = ListPrimitiveChunkedBuilder::<Float64Type>::new(
                    name,
                    values.len(),
                    values.len() * 2,
                    DataType::Float64,
                );
                for v in &values {
                    match v {
                        None => b.append_null(),
                        Some(Value::Array(items)) => {
                            let xs: Vec<f64> = items
                                .iter()
                                .map(|i| i.as_f64().ok_or_else(|| bad(spec, c.name, "a number", i)))
                                .collect::<Result<_>>()?;
                            b.append_slice(&xs);
                        }
                        Some(x) => return Err(bad(spec, c.name, "a list", x)),
                    }
                }
                b.finish().into_series()
            }
        };
        columns.push(series.into_column());
    }
    DataFrame::new(rows.len(), columns).map_err(|e| Error::Polars {
        context: format!("building export table {}", spec.name),
        source: Box::new(e),
    })
}

/// One line of docs/tables.md: a table's name, what a row is, and its typed columns.
fn schema_line(prefix: &str, s: &TableSpec) -> String {
    let cols: Vec<String> = s
        .columns()
        .iter()
        .map(|c| format!("`{}` {}", c.name, c.kind.name()))
        .collect();
    format!(
        "- **{prefix}{}** ({}): {}\n",
        s.name,
        s.doc,
        cols.join(", ")
    )
}

/// docs/tables.md's list of exported tables: per verb, each table with its columns and types.
pub fn schema_markdown() -> String {
    let mut md = String::new();
    for verb in spec::groups() {
        md.push_str(&format!("## `{verb}`\n\n"));
        for s in spec::tables(verb) {
            md.push_str(&schema_line("", s));
        }
        md.push('\n');
    }
    md.push_str("## `report`\n\nEvery section's tables, named `<section>_<table>` (`sweep_arms`, `shadow_summary`, …), and the decision's:\n\n");
    for s in spec::tables("decision") {
        md.push_str(&schema_line("decision_", s));
    }
    md
}

/// The tables of `report`'s `analysis.json`: each section's, as `<section>_<table>`; sections
/// that did not run are left out.
///
/// # Errors
/// As [`frames`].
pub fn report_frames(analysis: &Value) -> Result<Vec<(String, DataFrame)>> {
    let mut out = Vec::new();
    for section in spec::report_sections() {
        let Some(v) = analysis.get(section).filter(|v| !v.is_null()) else {
            continue;
        };
        for (name, df) in frames(spec::tables(section), v)? {
            out.push((format!("{section}_{name}"), df));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(at: &'static str, shape: Shape, columns: &'static str) -> TableSpec {
        TableSpec {
            name: "t",
            at,
            shape,
            columns,
            doc: "",
        }
    }

    #[test]
    fn rows_nested_maps_parents_and_declared_types() {
        let j = json!({
            "arms": [
                {"arm": "a", "removed": ["x", "y"], "se": null, "n": 3,
                 "lost_by_slice": {"s1": 2, "s2": 1}, "ci": [0.1, 0.2]},
                {"arm": "b", "removed": [], "se": 0.5, "n": 4, "lost_by_slice": {}, "ci": null}
            ],
            "gone": null
        });
        let df = frame(
            &spec(
                "arms",
                Shape::Rows,
                "arm:str removed:list<str> se:f64 n:i64 lo:f64=ci.0",
            ),
            &j,
        )
        .unwrap();
        assert_eq!(df.height(), 2);
        assert_eq!(
            df.column("se").unwrap().dtype(),
            &DataType::Float64,
            "null stays f64"
        );
        assert_eq!(
            df.column("removed").unwrap().dtype(),
            &DataType::List(Box::new(DataType::String))
        );
        let first = df.column("removed").unwrap().get(0).unwrap().to_string();
        assert!(first.contains('x') && first.contains('y'), "{first}");
        assert_eq!(df.column("lo").unwrap().f64().unwrap().get(0), Some(0.1));
        assert_eq!(df.column("lo").unwrap().f64().unwrap().get(1), None);

        let lost = frame(
            &spec(
                "arms[].lost_by_slice",
                Shape::Map,
                "arm:str=^arm slice:str=@key lost:i64=@value",
            ),
            &j,
        )
        .unwrap();
        assert_eq!(lost.height(), 2);
        assert_eq!(lost.column("arm").unwrap().str().unwrap().get(1), Some("a"));
        assert_eq!(
            lost.column("slice").unwrap().str().unwrap().get(1),
            Some("s2")
        );
        assert_eq!(lost.column("lost").unwrap().i64().unwrap().get(0), Some(2));

        let empty = frame(&spec("gone", Shape::Rows, "x:i64 y:list<f64>"), &j).unwrap();
        assert_eq!(empty.height(), 0);
        assert_eq!(empty.column("x").unwrap().dtype(), &DataType::Int64);
        assert_eq!(
            empty.column("y").unwrap().dtype(),
            &DataType::List(Box::new(DataType::Float64))
        );
    }

    #[test]
    fn a_wrong_type_is_an_error_not_a_silent_null() {
        let j = json!({"arms": [{"n": 1.5}]});
        let e = frame(&spec("arms", Shape::Rows, "n:i64"), &j).unwrap_err();
        assert!(e.to_string().contains("column n"), "{e}");
    }

    #[test]
    fn an_object_read_as_text_is_key_equals_value() {
        let j = json!({"coverage": [{"stratum": {"tier": "pro", "turns": "multi"}}]});
        let df = frame(&spec("coverage", Shape::Rows, "stratum:str"), &j).unwrap();
        assert_eq!(
            df.column("stratum").unwrap().str().unwrap().get(0),
            Some("tier=pro, turns=multi")
        );
    }
}
