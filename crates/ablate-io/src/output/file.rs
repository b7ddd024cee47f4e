//! Single files, written to a temporary sibling and renamed; replaced only when disposable.

use std::path::Path;

use super::folder::sibling;
use super::{EXPERIMENT_TABLES, MARKER, NAME_MAX, OUTPUT_KEY, parent_of, refuse, temps};
use crate::error::{Error, Result};

/// Whether `path` is a disposable output of ablate's: a Parquet file with [`OUTPUT_KEY`] in its
/// key-value metadata, or a CSV batch of `next` ([`csv_batch`]). Tables of an experiment that
/// `import` or `simulate` wrote carry only [`PARQUET_KEY`], and are not disposable.
fn disposable_output(path: &Path) -> bool {
    use polars::prelude::*;
    if crate::io::write::is_csv(path) {
        return csv_batch(path);
    }
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut reader = ParquetReader::new(file);
    // A damaged footer can panic in polars-parquet: then the file is not ablate's output.
    crate::io::table::no_panic(|| {
        reader.get_metadata().is_ok_and(|meta| {
            meta.key_value_metadata()
                .as_ref()
                .is_some_and(|kv| kv.iter().any(|e| e.key == OUTPUT_KEY))
        })
    })
    .unwrap_or(false)
}

/// Whether `path` is a CSV batch of calls as `next` writes it: its first line is exactly
/// `case_id,arm,repeat`. A CSV carries no metadata to mark its writer, so these columns are the
/// mark: replacing one batch with the next is the `watch` → `next` loop (`--out batch.csv` every
/// round). An arms table (`arm,removed`) is not recognised this way, since an analyst's draft
/// looks the same.
fn csv_batch(path: &Path) -> bool {
    use std::io::Read as _;
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = Vec::new();
    if file.take(64).read_to_end(&mut head).is_err() {
        return false;
    }
    let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let first = first.strip_suffix(b"\r").unwrap_or(first);
    first == b"case_id,arm,repeat"
}

/// Whether `path` is, or would become, a file an experiment folder's verbs read: an
/// `experiment.toml` sits beside it, and it is the manifest, the marker, the watch state, the
/// import's `sources` table, or any file whose stem is one of [`EXPERIMENT_TABLES`] (in any
/// format: a `results.csv` beside `results.parquet` would make the experiment unreadable).
/// Whether the file exists does not matter.
fn is_experiment_file(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    // Without case: on a case-insensitive file system (macOS, Windows) `Results.CSV` is the
    // `results.csv` that `table::find` looks for.
    let name = name.to_ascii_lowercase();
    let stem = name.split_once('.').map_or(name.as_str(), |(stem, _)| stem);
    let read = [
        "experiment.toml",
        MARKER,
        crate::io::watch_state::STATE_FILE,
    ]
    .contains(&name.as_str())
        || stem == "sources"
        || EXPERIMENT_TABLES.contains(&stem);
    read && parent_of(path).join("experiment.toml").is_file()
}

/// Checks that `path` may be written as a single output file: not a folder or a link, not a
/// table an experiment folder reads, and, when it exists, a disposable output of ablate's or
/// `force` is set. [`write_file`] checks again when it writes.
///
/// # Errors
/// [`Error::Output`] naming the file and what to do.
pub fn check_file_target(path: &Path, force: bool) -> Result<()> {
    if path
        .file_name()
        .is_some_and(|n| n.as_encoded_bytes().len() > NAME_MAX)
    {
        return Err(refuse(
            path,
            format!("the file name is longer than {NAME_MAX} bytes"),
            "choose a shorter name",
        ));
    }
    if is_experiment_file(path) {
        return Err(refuse(
            path,
            "is a file of the experiment in this folder (an experiment.toml sits beside it: its manifest, marker, watch state or one of its tables, in any format); ablate never writes an output there, not even with --force",
            "write the output elsewhere (e.g. batch.parquet outside the experiment folder), and move it over the file yourself if that is what you mean",
        ));
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => Err(refuse(
            path,
            "is a folder, and ablate writes a file here",
            "give a file name, e.g. arms.parquet",
        )),
        Ok(m) if m.file_type().is_symlink() => Err(refuse(
            path,
            "is a symbolic link; ablate does not replace links",
            "give the real file's path, or another name",
        )),
        // A FIFO, a socket or a device: opening it to look inside could block for ever, and
        // replacing it (/dev/null as root) breaks the system; never, not even with --force.
        Ok(m) if !m.is_file() => Err(refuse(
            path,
            "is not a regular file (a device, a FIFO or a socket); ablate writes a file here and never replaces one of those",
            "give the path of a regular file, or a new name",
        )),
        Ok(_) if !force && !disposable_output(path) => Err(refuse(
            path,
            "exists, and ablate cannot tell that it wrote it as a disposable output: it replaces without asking only a Parquet batch from `next` or arms table from `plan` (marked in the file's metadata) and a CSV batch from `next` (its header case_id,arm,repeat); any other CSV carries no such mark",
            "choose another name, or pass --force to replace it",
        )),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => in_a_folder(path),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// A new output file goes into a folder that exists: ablate makes no folder for a single file
/// (a mistyped folder name is said before any work, and the write never fails on the hidden
/// temporary file's path).
fn in_a_folder(path: &Path) -> Result<()> {
    let parent = parent_of(path);
    match std::fs::metadata(&parent) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(refuse(
            path,
            format!(
                "{} is a file, not a folder, so nothing can be written in it",
                parent.display()
            ),
            "give a path in an existing folder",
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(refuse(
            path,
            format!(
                "the folder {} does not exist (ablate creates no folder for a single output file)",
                parent.display()
            ),
            format!(
                "create it first (mkdir -p {}), or give a path in an existing folder",
                parent.display()
            ),
        )),
        Err(e) => Err(Error::io(&parent, e)),
    }
}

/// Writes one output file through a temporary sibling and a rename, after
/// [`check_file_target`]: an existing file is replaced only when it is a disposable output of
/// ablate's, or when `force` is set; a folder, a link or an experiment's table at `path` is always
/// refused.
///
/// # Errors
/// [`Error::Output`] when `path` may not be replaced; any error of `write`; the rename fails.
pub fn write_file(path: &Path, force: bool, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    check_file_target(path, force)?;
    let parent = parent_of(path);
    let ext = path.extension().map(|e| e.to_string_lossy().into_owned());
    let mut temp = sibling(&parent, "tmp");
    if let Some(ext) = ext {
        // Writers pick the format from the extension.
        temp.set_extension(ext);
    }
    // Removed if the process is interrupted; named as `path` in errors.
    temps::register(&temp, path);
    if let Err(e) = write(&temp) {
        let _ = std::fs::remove_file(&temp);
        temps::unregister(&temp);
        return Err(temps::relocated(e, &temp, path));
    }
    let mut live = temps::hold();
    let renamed = std::fs::rename(&temp, path);
    if renamed.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    live.forget(&temp);
    drop(live);
    renamed.map_err(|e| Error::io(path, e))
}
