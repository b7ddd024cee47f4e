//! The report and every verb's rendering: the `ablate-report` crate (terminal tables, JSON,
//! Markdown and HTML pages, charts, CSV cells; no Polars, no file), with [`document::write`],
//! which puts the files it makes into an atomic output folder.

pub use ablate_report::*;

pub mod document {
    //! The report's page ([`ablate_report::document`]), and `write`, which puts its files in
    //! an atomic output folder.

    pub use ablate_report::document::*;

    use std::path::{Path, PathBuf};

    use indicatif::ProgressBar;

    use crate::analysis::all::Analyses;
    use crate::error::{Error, Result};
    use crate::io::output::{AtomicDir, FolderKind};

    /// The report's files, written into an [`AtomicDir`] as they are made (each hashed for the
    /// marker as it is written, by the thread that made it); tables as formula-safe CSV.
    struct Folder<'a>(&'a AtomicDir);

    impl Files for Folder<'_> {
        fn path(&self, name: &str) -> PathBuf {
            self.0.path(name)
        }

        fn put(&self, name: &str, bytes: &[u8]) -> Result<()> {
            self.0.write(name, bytes)
        }

        fn put_table(
            &self,
            name: &str,
            headers: &[String],
            columns: Vec<Vec<Option<String>>>,
        ) -> Result<()> {
            let path = self.0.path(name);
            let bytes = crate::io::write::csv_from_columns(headers, columns, &path)?;
            self.0.write(name, &bytes)
        }
    }

    /// Writes the report for `a` into `out`, atomically: the folder replaces an earlier report
    /// only when ablate can vouch for every file in it, and when `replaceable` (given) passes on
    /// it as it is replaced ([`AtomicDir::replacing_only`]).
    ///
    /// # Errors
    /// The folder may not be replaced, a file cannot be written, or a chart cannot be drawn.
    pub fn write(
        a: &Analyses,
        out: &Path,
        progress: Option<&ProgressBar>,
        replaceable: Option<impl Fn(&Path) -> Result<()> + Send + Sync + 'static>,
    ) -> Result<Written> {
        let mut dir = AtomicDir::create(out, FolderKind::Report)?;
        if let Some(check) = replaceable {
            dir = dir.replacing_only(check);
        }
        for sub in ["charts", "tables"] {
            let p = dir.path(sub);
            std::fs::create_dir_all(&p).map_err(|e| Error::io(&p, e))?;
        }
        let files = render(a, &Folder(&dir), progress)?;
        let written: PathBuf = dir.commit()?;
        Ok(Written {
            out: written.display().to_string(),
            files,
        })
    }
}
