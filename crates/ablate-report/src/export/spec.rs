//! The tables each verb exports, with their column names and types: the stable schema of
//! `--export` (and of the Python module's attributes), documented in the README from this list.
//!
//! A table is declared by where its rows sit in the verb's JSON and one line of columns,
//! `name:type[=path]`:
//! - types: `str`, `f64`, `i64`, `bool`, `list<str>`, `list<f64>`;
//! - the path is dot-separated and relative to the row (default: the column's name); a number
//!   indexes an array; `@key` and `@value` are a map entry's key and value; `^field` is a field of
//!   the nearest enclosing object that has it (the arm of a nested `lost_by_slice`).
//! - an object read as `str` becomes `key=value, …` in key order (a stratum).
//!
//! Where the rows sit (`at`) is a dot path from the JSON's root; a segment ending in `[]`
//! iterates an array. A missing or null place gives a table with no rows and the same columns,
//! so the schema never depends on the data.

/// How the rows of a table sit at its place in the JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// An array of objects: one row each.
    Rows,
    /// An object: one row per (key, value) entry.
    Map,
    /// An array of scalars: one row each (`@value`).
    Values,
    /// One object: one row.
    One,
}

/// One exported table.
#[derive(Debug, Clone, Copy)]
pub struct TableSpec {
    /// File stem and Python attribute.
    pub name: &'static str,
    /// Where the rows sit in the verb's JSON (see the module documentation).
    pub at: &'static str,
    /// How they sit there.
    pub shape: Shape,
    /// Columns, `name:type[=path]`, separated by spaces.
    pub columns: &'static str,
    /// One line on what a row is, for the README.
    pub doc: &'static str,
}

/// An output that `--export` writes as tables. Each verb's output implements it beside its
/// rendering (`src/report/<verb>.rs`), so a new verb's tables live with the verb; `Verb::tables`
/// names them exhaustively.
pub trait Export {
    /// The tables, in the order they are written and documented.
    const TABLES: &'static [TableSpec];
}

/// Every verb's last table: its warnings.
pub const WARNINGS: TableSpec = t(
    "warnings",
    "warnings",
    Shape::Rows,
    "code:str message:str",
    "one warning per row: a stable code (`sweep.no_spread`) and the message",
);

/// A table spec, for the `TABLES` constants.
pub const fn t(
    name: &'static str,
    at: &'static str,
    shape: Shape,
    columns: &'static str,
    doc: &'static str,
) -> TableSpec {
    TableSpec {
        name,
        at,
        shape,
        columns,
        doc,
    }
}

/// One column of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnSpec {
    /// Column name.
    pub name: &'static str,
    /// Column type.
    pub kind: Kind,
    /// Path from the row (see the module documentation).
    pub path: &'static str,
}

/// A column's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// UTF-8 text.
    Str,
    /// 64-bit float.
    F64,
    /// 64-bit integer.
    I64,
    /// Boolean.
    Bool,
    /// List of text.
    ListStr,
    /// List of 64-bit floats.
    ListF64,
}

impl Kind {
    /// The name in the column line and the README (`str`, `list<str>`, …).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Str => "str",
            Kind::F64 => "f64",
            Kind::I64 => "i64",
            Kind::Bool => "bool",
            Kind::ListStr => "list<str>",
            Kind::ListF64 => "list<f64>",
        }
    }
}

impl TableSpec {
    /// The columns, parsed from the column line.
    ///
    /// # Panics
    /// On a malformed column line: the lines are constants, and a test parses every one.
    pub fn columns(&self) -> Vec<ColumnSpec> {
        self.columns
            .split_whitespace()
            .map(|c| {
                let (name, rest) = c.split_once(':').expect("column spec has name:type");
                let (kind, path) = rest.split_once('=').unwrap_or((rest, name));
                let kind = match kind {
                    "str" => Kind::Str,
                    "f64" => Kind::F64,
                    "i64" => Kind::I64,
                    "bool" => Kind::Bool,
                    "list<str>" => Kind::ListStr,
                    "list<f64>" => Kind::ListF64,
                    other => panic!("unknown column type {other} in {}", self.name),
                };
                ColumnSpec { name, kind, path }
            })
            .collect()
    }
}
