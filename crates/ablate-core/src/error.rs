//! Typed errors. Every input error names the file, the column (or manifest key), the first offending
//! row or value where one applies, and what to do next; the binary maps them to exit codes with
//! [`Error::exit_code`].

use std::fmt;
use std::path::PathBuf;

/// The result type of the library.
pub type Result<T> = std::result::Result<T, Error>;

/// A 1-based data row of a table (row 1 is the first row after any header), or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row(pub Option<usize>);

impl Row {
    /// The row at a 0-based position in the file.
    pub fn at(index: usize) -> Self {
        Row(Some(index + 1))
    }
    /// No particular row.
    pub fn none() -> Self {
        Row(None)
    }
}

impl fmt::Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(r) => write!(f, ", row {r}"),
            None => Ok(()),
        }
    }
}

/// A row as a person finds it in the file: a CSV's data row r is on line r + 1 (after the
/// header), a JSON Lines record's number is its line; Parquet and JSON arrays have rows only.
fn row_in(path: &std::path::Path, row: Row) -> String {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match (row.0, ext.as_deref()) {
        (None, _) => String::new(),
        (Some(r), Some("csv")) => format!(", row {r} (line {} of the file)", r + 1),
        (Some(r), Some("jsonl")) => format!(", line {r}"),
        (Some(_), _) => row.to_string(),
    }
}

/// Everything that can go wrong in `ablate`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or folder the analysis needs is not there.
    #[error("{path}: not found. {fix}")]
    NotFound {
        /// What was looked for.
        path: PathBuf,
        /// What to do about it.
        fix: String,
    },

    /// A file exists but cannot be read as the table it should be (empty, not Parquet, truncated,
    /// malformed CSV).
    #[error("{path}: {problem}. {fix}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
        /// What to do about it.
        fix: String,
    },

    /// A required column is absent.
    #[error(
        "{path}: missing required column `{column}` ({expected}); columns found: {found}{hint}"
    )]
    MissingColumn {
        /// The file.
        path: PathBuf,
        /// The column that is needed.
        column: String,
        /// Its expected type, in words.
        expected: &'static str,
        /// The columns the file does have, comma separated.
        found: String,
        /// A found column that differs from the needed one only in capitals or surrounding
        /// spaces, as a sentence to append ("" when none does).
        hint: String,
    },

    /// A column has the wrong type.
    #[error("{path}: column `{column}` is {found}, expected {expected}. {fix}")]
    WrongType {
        /// The file.
        path: PathBuf,
        /// The column.
        column: String,
        /// Expected type, in words.
        expected: &'static str,
        /// Type found.
        found: String,
        /// What to do about it.
        fix: String,
    },

    /// A value in a table breaks a rule (NaN score, negative tokens, unknown id, duplicate key...).
    #[error("{path}: column `{column}`{}: {value}: {problem}. {fix}", row_in(path, *row))]
    BadValue {
        /// The file.
        path: PathBuf,
        /// The column holding the value (or the key columns, comma separated).
        column: String,
        /// The first offending row.
        row: Row,
        /// The offending value, printed.
        value: String,
        /// What rule it breaks.
        problem: String,
        /// What to do about it.
        fix: String,
    },

    /// A table is readable but has no rows.
    #[error(
        "{path}: the table has no rows. Write at least one row, or remove the file if the table is optional"
    )]
    EmptyTable {
        /// The file.
        path: PathBuf,
    },

    /// `experiment.toml` is missing a key, has one of the wrong type, or an invalid value.
    #[error("{path}: key `{key}`: {problem}. {fix}")]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// The offending key (dotted for nested keys, e.g. `blocks[2].need`).
        key: String,
        /// What is wrong.
        problem: String,
        /// What to do about it.
        fix: String,
    },

    /// The command line asks for something that cannot be done.
    #[error("{0}")]
    Usage(String),

    /// The input is valid but this analysis cannot be done on it: raking margins that no weights
    /// satisfy, a context call with no model limit, a limit that leaves no input budget.
    #[error("{what}: {reason}. {fix}")]
    Unsupported {
        /// The analysis and the file or setting concerned.
        what: String,
        /// Why it cannot be done.
        reason: String,
        /// What to do about it.
        fix: String,
    },

    /// An output path that ablate may not write: a folder or file it did not write, a file where a
    /// folder is expected, a name from the data that cannot be a path.
    #[error("{path}: {problem}. {fix}")]
    Output {
        /// The folder or file.
        path: PathBuf,
        /// Why it may not be written.
        problem: String,
        /// What to do about it.
        fix: String,
    },

    /// Reading or writing a file failed at the operating-system level.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A check the code makes on its own results failed: a bug, to be reported.
    #[error(
        "internal check failed: {0}. This is a bug in ablate; please report it with the input that caused it"
    )]
    Invariant(String),

    /// Polars failed on a file while writing output or computing (not an input problem).
    #[error("{context}: {source}")]
    Polars {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl Error {
    /// Process exit code: 2 for bad input, bad usage and an analysis the data cannot support
    /// ([`Error::Unsupported`]); 1 for internal failures (I/O, Polars, [`Error::Invariant`]).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Io { .. } | Error::Polars { .. } | Error::Invariant(_) => 1,
            _ => 2,
        }
    }

    /// The error as the user should see it: a path that is not there is bad input (exit 2, with
    /// what to do), not an operating-system failure (exit 1).
    /// The rest is unchanged. Applied once, where the binary prints the error, so that code
    /// inside may still tell a missing file ([`Error::Io`] of kind `NotFound`) from others.
    pub fn for_user(self) -> Self {
        match self {
            Error::Io { path, source } if source.kind() == std::io::ErrorKind::NotFound => {
                Error::NotFound {
                    path,
                    fix: "check the path (a relative path starts from the folder ablate runs in)"
                        .into(),
                }
            }
            e => e,
        }
    }

    /// Shorthand for an I/O error on a path.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
