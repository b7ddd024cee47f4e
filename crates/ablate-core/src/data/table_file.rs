//! Where a table is, and in which format.

use std::path::PathBuf;

/// The on-disk format of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Apache Parquet.
    Parquet,
    /// Comma-separated values with a header line.
    Csv,
}

/// A table file found in an experiment folder.
#[derive(Debug, Clone)]
pub struct TableFile {
    /// Full path of the file.
    pub path: PathBuf,
    /// Its format, from the extension.
    pub format: Format,
}

impl TableFile {
    /// A table file at an explicit path; the format comes from the extension (`.csv` is CSV,
    /// anything else is read as Parquet).
    pub fn at(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let format = match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("csv") => Format::Csv,
            _ => Format::Parquet,
        };
        TableFile { path, format }
    }
}
