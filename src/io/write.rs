//! Output: Parquet tables and atomic folders. Outputs are built in a temporary sibling folder and
//! renamed into place at the end, so a failed run never leaves half an output behind.

use std::fs::File;
use std::path::{Path, PathBuf};

use polars::prelude::*;

use crate::error::{Error, Result};

/// Writes a data frame as Parquet (zstd, with statistics). Deterministic: the same frame gives
/// the same bytes.
///
/// # Errors
/// The file cannot be created or written.
pub fn parquet(df: &mut DataFrame, path: &Path) -> Result<()> {
    let file = File::create(path).map_err(|e| Error::io(path, e))?;
    ParquetWriter::new(file)
        .with_compression(ParquetCompression::Zstd(None))
        .finish(df)
        .map_err(|e| Error::Polars {
            context: format!("writing {}", path.display()),
            source: e,
        })?;
    Ok(())
}

/// Writes a data frame as CSV with a header line.
///
/// # Errors
/// The file cannot be created or written.
pub fn csv(df: &mut DataFrame, path: &Path) -> Result<()> {
    let file = File::create(path).map_err(|e| Error::io(path, e))?;
    CsvWriter::new(file)
        .include_header(true)
        .finish(df)
        .map_err(|e| Error::Polars {
            context: format!("writing {}", path.display()),
            source: e,
        })
}

/// A folder being written: everything goes into a hidden temporary sibling of `target`, and
/// [`AtomicDir::commit`] renames it into place (replacing an earlier output). Dropped without
/// commit, the temporary folder is removed.
#[derive(Debug)]
pub struct AtomicDir {
    target: PathBuf,
    temp: PathBuf,
    committed: bool,
}

impl AtomicDir {
    /// Starts writing `target`.
    ///
    /// # Errors
    /// The parent folder cannot be created, or the temporary folder cannot be made.
    pub fn create(target: &Path) -> Result<AtomicDir> {
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent).map_err(|e| Error::io(&parent, e))?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .ok_or_else(|| Error::Usage(format!("{} is not a folder name", target.display())))?;
        let temp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
        if temp.exists() {
            std::fs::remove_dir_all(&temp).map_err(|e| Error::io(&temp, e))?;
        }
        std::fs::create_dir(&temp).map_err(|e| Error::io(&temp, e))?;
        Ok(AtomicDir {
            target: target.to_path_buf(),
            temp,
            committed: false,
        })
    }

    /// Path of a file inside the folder being written.
    pub fn path(&self, name: &str) -> PathBuf {
        self.temp.join(name)
    }

    /// Moves the finished folder into place, replacing what was there.
    ///
    /// # Errors
    /// The rename fails.
    pub fn commit(mut self) -> Result<PathBuf> {
        let old = self.target.with_file_name(format!(
            ".{}.old-{}",
            self.target
                .file_name()
                .unwrap_or_default()
                .to_string_lossy(),
            std::process::id()
        ));
        let had_old = self.target.exists();
        if had_old {
            std::fs::rename(&self.target, &old).map_err(|e| Error::io(&self.target, e))?;
        }
        if let Err(e) = std::fs::rename(&self.temp, &self.target) {
            if had_old {
                let _ = std::fs::rename(&old, &self.target);
            }
            return Err(Error::io(&self.target, e));
        }
        if had_old {
            std::fs::remove_dir_all(&old).map_err(|e| Error::io(&old, e))?;
        }
        self.committed = true;
        Ok(self.target.clone())
    }
}

impl Drop for AtomicDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.temp);
        }
    }
}

/// A list<str> column from one list per row (empty lists keep the text item type).
pub fn list_column(name: &str, lists: &[Vec<String>]) -> Column {
    let series: Vec<Series> = lists
        .iter()
        .map(|l| {
            if l.is_empty() {
                Series::new_empty(PlSmallStr::EMPTY, &DataType::String)
            } else {
                Series::new(
                    PlSmallStr::EMPTY,
                    l.iter().map(String::as_str).collect::<Vec<_>>(),
                )
            }
        })
        .collect();
    Series::new(name.into(), series).into()
}

/// Writes an arms table (arm, removed, components, design) to `path`, as Parquet (list columns)
/// or, for a `.csv` path, CSV (lists joined with `;`). Written to a temporary file and renamed.
///
/// # Errors
/// The file cannot be written.
pub fn arms_table(path: &Path, arms: &[(String, Vec<String>)], design: &str) -> Result<()> {
    let csv = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let labels: Vec<&str> = arms.iter().map(|a| a.0.as_str()).collect();
    let designs: Vec<&str> = vec![design; arms.len()];
    let (removed, components): (Column, Column) = if csv {
        (
            Column::new(
                "removed".into(),
                arms.iter().map(|a| a.1.join(";")).collect::<Vec<_>>(),
            ),
            Column::new("components".into(), vec![""; arms.len()]),
        )
    } else {
        let removed: Vec<Vec<String>> = arms.iter().map(|a| a.1.clone()).collect();
        (
            list_column("removed", &removed),
            list_column("components", &vec![Vec::new(); arms.len()]),
        )
    };
    let mut df = DataFrame::new_infer_height(vec![
        Column::new("arm".into(), labels),
        removed,
        components,
        Column::new("design".into(), designs),
    ])
    .map_err(|e| Error::Polars {
        context: "building the arms table".into(),
        source: e,
    })?;
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let result = if csv {
        self::csv(&mut df, &tmp)
    } else {
        parquet(&mut df, &tmp)
    };
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncommitted_dir_leaves_nothing() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        {
            let d = AtomicDir::create(&target).unwrap();
            std::fs::write(d.path("a.txt"), "x").unwrap();
        }
        assert!(!target.exists());
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    }

    #[test]
    fn commit_replaces_previous_output() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("stale.txt"), "old").unwrap();
        let d = AtomicDir::create(&target).unwrap();
        std::fs::write(d.path("a.txt"), "new").unwrap();
        d.commit().unwrap();
        assert!(target.join("a.txt").exists());
        assert!(!target.join("stale.txt").exists());
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 1);
    }
}
