//! Where a table is, and in which format.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

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

/// Checks that `path`, given on the command line as `flag`'s file, is a plain file (links
/// followed) before it is opened: a folder is named as one (the OS's "Is a directory" said
/// nothing of the flag), and a FIFO, socket or device is never opened (reading a FIFO waits for
/// a writer for ever, a device such as /dev/zero never ends).
///
/// Returns the file's metadata.
///
/// # Errors
/// [`Error::NotFound`] when nothing is there, [`Error::Unreadable`] for a folder or a special
/// file.
pub fn given_file(path: &Path, flag: &str) -> Result<std::fs::Metadata> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(meta),
        Ok(meta) if meta.is_dir() => Err(Error::Unreadable {
            path: path.to_path_buf(),
            problem: format!("is a folder, and {flag} takes a file"),
            fix: format!("give {flag} the file itself"),
        }),
        Ok(_) => Err(Error::Unreadable {
            path: path.to_path_buf(),
            problem: format!(
                "is not a plain file (a FIFO, socket or device), so it is not read as {flag}"
            ),
            fix: format!("give a regular file as {flag}"),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::NotFound {
            path: path.to_path_buf(),
            fix: format!("check the path given to {flag}"),
        }),
        Err(e) => Err(Error::io(path, e)),
    }
}

impl TableFile {
    /// The table given on the command line as `flag`'s file ([`given_file`]: a plain file,
    /// never a folder, FIFO or device), in the format its extension says.
    ///
    /// # Errors
    /// As [`given_file`].
    pub fn given(path: impl Into<PathBuf>, flag: &str) -> Result<TableFile> {
        let path = path.into();
        given_file(&path, flag)?;
        Ok(TableFile::at(path))
    }
}
