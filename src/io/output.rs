//! Outputs that never destroy what ablate did not write.
//!
//! Every folder ablate writes (`report`, `simulate`) is built in a hidden temporary sibling and
//! renamed into place at the end ([`AtomicDir`]), so a failed run leaves the previous output as it
//! was. The finished folder carries a marker file, [`MARKER`], naming the tool version, the
//! command and every file ablate put there. An existing folder is replaced only when
//!
//! - it is empty, or
//! - it holds the marker and nothing but the files the marker lists, or
//! - it is a report from before markers existed: only report files, and ablate's index.html.
//!
//! Anything else (a folder of the user's, a marker beside files someone added, a file where a
//! folder is expected, a symbolic link) is refused with [`Error::Output`] (exit 2), naming the
//! path and what to do. Single files ([`write_file`]) are written to a temporary sibling and
//! renamed; an existing file is replaced only when ablate can prove it wrote it (a Parquet file
//! with ablate's key-value metadata) or when the caller passes `force`.
//!
//! Names taken from data (the set name) go through [`safe_name`] before they touch a path.
//!
//! Concurrency: temporary names are unique per process and call, and the final rename retries when
//! another ablate process commits to the same target at the same moment, so concurrent runs to
//! one `--out` all succeed and leave no temporary folders behind.

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// File name of the marker ablate leaves in every folder it writes.
pub const MARKER: &str = ".ablate-output";

/// Key of the Parquet key-value metadata entry that marks a file ablate wrote.
pub const PARQUET_KEY: &str = "ablate.version";

/// Longest file name most file systems accept, in bytes.
const NAME_MAX: usize = 255;

/// Longest name [`safe_name`] returns, in bytes (room for suffixes under [`NAME_MAX`]).
const SAFE_NAME_MAX: usize = 120;

/// How many times a commit retries when concurrent writers race for the same target.
const COMMIT_ATTEMPTS: u32 = 200;

/// Distinguishes temporary names made by one process.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// The contents of [`MARKER`]: who wrote the folder, how, and which files are theirs.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Marker {
    /// Always `"ablate"`.
    pub tool: String,
    /// The version of ablate that wrote the folder.
    pub version: String,
    /// The command line that wrote it.
    pub command: Vec<String>,
    /// Every file ablate wrote, relative to the folder, with `/` separators, sorted.
    pub files: Vec<String>,
}

/// Reduces a name taken from data (a set name, later arm or stratum names) to a safe file name:
/// letters, digits, `-`, `_` and `.` are kept, anything else (path separators, spaces, control
/// characters) becomes `_`, a leading `.` becomes `_` (no hidden or relative names), and the result
/// is cut to 120 bytes.
///
/// # Errors
/// The name is empty, `.` or `..`, or has nothing printable in it.
pub fn safe_name(raw: &str, what: &str) -> Result<String> {
    if raw.is_empty() || raw == "." || raw == ".." || raw.trim().is_empty() {
        return Err(Error::Output {
            path: PathBuf::from(raw),
            problem: format!("the {what} {raw:?} cannot name a folder"),
            fix: format!("give the {what} a name with letters or digits, or pass --out DIR"),
        });
    }
    let mut name = String::new();
    for (i, c) in raw.chars().enumerate() {
        let keep = c.is_alphanumeric() || c == '-' || c == '_' || (c == '.' && i > 0);
        let c = if keep { c } else { '_' };
        if name.len() + c.len_utf8() > SAFE_NAME_MAX {
            break;
        }
        name.push(c);
    }
    Ok(name)
}

/// The default output folder `root/<safe name>` for a name taken from data, checked to lie
/// directly inside `root` after joining.
///
/// # Errors
/// The name is not usable ([`safe_name`]), or the joined path leaves `root`.
pub fn inside(root: &Path, raw: &str, what: &str) -> Result<PathBuf> {
    let name = safe_name(raw, what)?;
    let path = root.join(&name);
    let mut parts = path.strip_prefix(root).ok().map(Path::components);
    let single_normal = matches!(
        (
            parts.as_mut().and_then(Iterator::next),
            parts.as_mut().and_then(Iterator::next)
        ),
        (Some(Component::Normal(_)), None)
    );
    if !single_normal {
        return Err(Error::Output {
            path,
            problem: format!("the {what} {raw:?} would write outside {}", root.display()),
            fix: "pass --out DIR to choose the output folder".into(),
        });
    }
    Ok(path)
}

/// The command line of this process, for markers and metadata.
pub fn command_line() -> Vec<String> {
    std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// The folder `target` lives in (`.` for a bare name).
fn parent_of(target: &Path) -> PathBuf {
    match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Refusal for a target that ablate may not replace.
fn refuse(path: &Path, problem: impl Into<String>, fix: &str) -> Error {
    Error::Output {
        path: path.to_path_buf(),
        problem: problem.into(),
        fix: fix.into(),
    }
}

const FOLDER_FIX: &str = "choose another --out, or move or delete its contents yourself";

/// Checks that `target` may be written as an output folder: it does not exist, or it is an empty
/// folder, or a folder ablate wrote (its marker lists every file in it). Call it before long work
/// so the user hears at once; [`AtomicDir::commit`] checks again.
///
/// # Errors
/// [`Error::Output`] naming the folder (or the first file ablate did not write) and what to do.
pub fn check_folder_target(target: &Path) -> Result<()> {
    // Another ablate process may be swapping the folder while it is inspected; such a moment
    // looks like a vanished file or a marker that cannot be read, and passes on a second look.
    for _ in 0..50 {
        if let Some(result) = inspect_folder_target(target) {
            return result;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    inspect_folder_target(target).unwrap_or(Ok(()))
}

/// One look at a folder target: `None` when it changed while being inspected.
fn inspect_folder_target(target: &Path) -> Option<Result<()>> {
    if target
        .file_name()
        .is_some_and(|n| n.as_encoded_bytes().len() > NAME_MAX)
    {
        return Some(Err(refuse(
            target,
            format!("the folder name is longer than {NAME_MAX} bytes"),
            "choose a shorter --out",
        )));
    }
    let meta = match std::fs::symlink_metadata(target) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(Ok(())),
        Err(e) => return Some(Err(Error::io(target, e))),
    };
    if meta.file_type().is_symlink() {
        return Some(Err(refuse(
            target,
            "is a symbolic link; ablate does not replace links or what they point to",
            "give the real folder's path, or choose another --out",
        )));
    }
    if !meta.is_dir() {
        return Some(Err(refuse(
            target,
            "is a file, and ablate writes a folder here",
            "choose another --out",
        )));
    }
    let files = match list_files(target) {
        Ok(files) => files,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return None;
        }
        Err(e) => return Some(Err(e)),
    };
    if files.is_empty() {
        return Some(Ok(()));
    }
    let Some(marker) = read_marker(target) else {
        if files.iter().any(|f| f == MARKER) {
            return None;
        }
        if is_legacy_report(target, &files) {
            return Some(Ok(()));
        }
        return Some(Err(refuse(
            target,
            format!(
                "exists and was not written by ablate (no {MARKER} marker); it holds {} file(s), e.g. {}",
                files.len(),
                files[0]
            ),
            FOLDER_FIX,
        )));
    };
    if let Some(foreign) = files
        .iter()
        .find(|f| f.as_str() != MARKER && marker.files.binary_search(f).is_err())
    {
        return Some(Err(refuse(
            &target.join(foreign),
            format!(
                "was not written by ablate, and ablate would delete it by replacing {}",
                target.display()
            ),
            FOLDER_FIX,
        )));
    }
    Some(Ok(()))
}

/// Whether a folder without a marker is a report written by ablate before markers existed
/// (0.1.0 up to this change): only report files (index.html, report.md, analysis.json,
/// record.json, charts/*.svg|png, tables/*.csv), and an index.html that ablate's template opens.
fn is_legacy_report(dir: &Path, files: &[String]) -> bool {
    let report_file = |f: &str| {
        matches!(
            f,
            "index.html" | "report.md" | "analysis.json" | "record.json"
        ) || (f.starts_with("charts/")
            && !f[7..].contains('/')
            && (f.ends_with(".svg") || f.ends_with(".png")))
            || (f.starts_with("tables/") && !f[7..].contains('/') && f.ends_with(".csv"))
    };
    if !files.iter().all(|f| report_file(f)) {
        return false;
    }
    let mut head = [0u8; 96];
    let Ok(n) = std::fs::File::open(dir.join("index.html"))
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
    else {
        return false;
    };
    head[..n]
        .starts_with(b"<!doctype html><html><head><meta charset=\"utf-8\"><title>ablate report")
}

/// Reads a folder's marker, if it has a valid one.
fn read_marker(dir: &Path) -> Option<Marker> {
    let text = std::fs::read_to_string(dir.join(MARKER)).ok()?;
    let mut marker: Marker = serde_json::from_str(&text).ok()?;
    if marker.tool != "ablate" {
        return None;
    }
    marker.files.sort();
    Some(marker)
}

/// Every file and link under `dir` (not folders), relative, with `/` separators, sorted. Links are
/// listed, never followed.
fn list_files(dir: &Path) -> Result<Vec<String>> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<()> {
        let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            let path = entry.path();
            let kind = entry.file_type().map_err(|e| Error::io(&path, e))?;
            if kind.is_dir() {
                walk(root, &path, out)?;
            } else {
                let rel = path.strip_prefix(root).unwrap_or(&path);
                let parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.push(parts.join("/"));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out)?;
    out.sort();
    Ok(out)
}

/// A unique, short hidden name beside `target` (`.ablate-<kind>-<pid>-<n>`), so temporary names
/// never exceed the file-name limit and never collide between processes or threads.
fn sibling(parent: &Path, kind: &str) -> PathBuf {
    let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    parent.join(format!(".ablate-{kind}-{}-{n}", std::process::id()))
}

/// A folder being written: everything goes into a hidden temporary sibling of `target`, and
/// [`AtomicDir::commit`] writes the marker and renames it into place, replacing an earlier output
/// of ablate's (never anything else). Dropped without commit, the temporary folder is removed.
#[derive(Debug)]
pub struct AtomicDir {
    target: PathBuf,
    temp: PathBuf,
    committed: bool,
}

impl AtomicDir {
    /// Starts writing `target`, after checking that it may be replaced
    /// ([`check_folder_target`]).
    ///
    /// # Errors
    /// The target may not be replaced, the parent folder cannot be created, or the temporary folder
    /// cannot be made.
    pub fn create(target: &Path) -> Result<AtomicDir> {
        check_folder_target(target)?;
        let parent = parent_of(target);
        std::fs::create_dir_all(&parent).map_err(|e| Error::io(&parent, e))?;
        loop {
            let temp = sibling(&parent, "tmp");
            match std::fs::create_dir(&temp) {
                Ok(()) => {
                    return Ok(AtomicDir {
                        target: target.to_path_buf(),
                        temp,
                        committed: false,
                    });
                }
                // A stale folder of a dead process with the same pid: never touch it, take the next.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io(&temp, e)),
            }
        }
    }

    /// Path of a file inside the folder being written.
    pub fn path(&self, name: &str) -> PathBuf {
        self.temp.join(name)
    }

    /// Writes the marker, then moves the finished folder into place, replacing an earlier output
    /// of ablate's. Retries when a concurrent writer commits to the same target at the same time.
    ///
    /// # Errors
    /// The target has become something ablate may not replace, or a rename fails.
    pub fn commit(mut self) -> Result<PathBuf> {
        let marker = Marker {
            tool: "ablate".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            command: command_line(),
            files: list_files(&self.temp)?,
        };
        let marker_path = self.temp.join(MARKER);
        let text = serde_json::to_string_pretty(&marker)
            .map_err(|e| Error::Invariant(format!("marker serialisation: {e}")))?;
        std::fs::write(&marker_path, text + "\n").map_err(|e| Error::io(&marker_path, e))?;

        let parent = parent_of(&self.target);
        for attempt in 0..COMMIT_ATTEMPTS {
            if attempt > 0 {
                std::thread::sleep(std::time::Duration::from_millis(u64::from(attempt.min(20))));
            }
            let old = if self.target.exists() {
                let old = sibling(&parent, "old");
                match std::fs::rename(&self.target, &old) {
                    Ok(()) => {}
                    // Another writer moved it away first: look again.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(Error::io(&self.target, e)),
                }
                // Checked where no other process looks (the name is ours alone); put back
                // anything ablate may not delete.
                if let Err(refused) = check_folder_target(&old) {
                    let _ = std::fs::rename(&old, &self.target);
                    return Err(match refused {
                        Error::Output { problem, fix, .. } => Error::Output {
                            path: self.target.clone(),
                            problem,
                            fix,
                        },
                        e => e,
                    });
                }
                Some(old)
            } else {
                None
            };
            match std::fs::rename(&self.temp, &self.target) {
                Ok(()) => {
                    if let Some(old) = old {
                        std::fs::remove_dir_all(&old).map_err(|e| Error::io(&old, e))?;
                    }
                    self.committed = true;
                    return Ok(self.target.clone());
                }
                // Another writer's output landed in between: ours replaces it on the next try.
                Err(e) if is_taken(&e) => {
                    if let Some(old) = old {
                        std::fs::remove_dir_all(&old).map_err(|e| Error::io(&old, e))?;
                    }
                }
                Err(e) => {
                    if let Some(old) = old {
                        let _ = std::fs::rename(&old, &self.target);
                    }
                    return Err(Error::io(&self.target, e));
                }
            }
        }
        Err(Error::io(
            &self.target,
            std::io::Error::other("other ablate processes kept replacing this folder; try again"),
        ))
    }
}

/// Whether a rename failed because the target exists (a concurrent writer got there first).
fn is_taken(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::DirectoryNotEmpty
    )
}

impl Drop for AtomicDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.temp);
        }
    }
}

/// Whether `path` is a Parquet file that ablate wrote (it carries [`PARQUET_KEY`] metadata).
fn parquet_written_by_ablate(path: &Path) -> bool {
    use polars::prelude::*;
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut reader = ParquetReader::new(file);
    let Ok(meta) = reader.get_metadata() else {
        return false;
    };
    meta.key_value_metadata()
        .as_ref()
        .is_some_and(|kv| kv.iter().any(|e| e.key == PARQUET_KEY))
}

/// Writes one output file through a temporary sibling and a rename. An existing file is replaced
/// only when it is a Parquet file ablate wrote, or when `force` is set; a folder or link at `path`
/// is always refused.
///
/// # Errors
/// [`Error::Output`] when `path` may not be replaced; any error of `write`; the rename fails.
pub fn write_file(path: &Path, force: bool, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
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
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            return Err(refuse(
                path,
                "is a folder, and ablate writes a file here",
                "give a file name, e.g. arms.parquet",
            ));
        }
        Ok(m) if m.file_type().is_symlink() => {
            return Err(refuse(
                path,
                "is a symbolic link; ablate does not replace links",
                "give the real file's path, or another name",
            ));
        }
        Ok(_) if !force && !parquet_written_by_ablate(path) => {
            return Err(refuse(
                path,
                "exists and ablate cannot tell that it wrote it",
                "choose another name, or pass --force to replace it",
            ));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(path, e)),
    }
    let parent = parent_of(path);
    let ext = path.extension().map(|e| e.to_string_lossy().into_owned());
    let mut temp = sibling(&parent, "tmp");
    if let Some(ext) = ext {
        // Writers pick the format from the extension.
        temp.set_extension(ext);
    }
    if let Err(e) = write(&temp) {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    std::fs::rename(&temp, path).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        Error::io(path, e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn uncommitted_dir_leaves_nothing() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        {
            let d = AtomicDir::create(&target).unwrap();
            std::fs::write(d.path("a.txt"), "x").unwrap();
        }
        assert!(!target.exists());
        assert!(entries(root.path()).is_empty());
    }

    #[test]
    fn commit_replaces_an_earlier_output_of_ablate() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        let d = AtomicDir::create(&target).unwrap();
        std::fs::write(d.path("stale.txt"), "old").unwrap();
        d.commit().unwrap();
        let d = AtomicDir::create(&target).unwrap();
        std::fs::write(d.path("a.txt"), "new").unwrap();
        d.commit().unwrap();
        assert_eq!(entries(&target), vec![MARKER.to_string(), "a.txt".into()]);
        assert_eq!(entries(root.path()), vec!["out".to_string()]);
        let marker = read_marker(&target).unwrap();
        assert_eq!(marker.files, vec!["a.txt".to_string()]);
    }

    #[test]
    fn a_folder_of_the_users_is_refused_and_survives() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("mine");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("thesis.tex"), "precious").unwrap();
        let err = AtomicDir::create(&target).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("not written by ablate"), "{err}");
        assert_eq!(
            std::fs::read_to_string(target.join("thesis.tex")).unwrap(),
            "precious"
        );
    }

    #[test]
    fn a_file_added_to_ablates_output_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        let d = AtomicDir::create(&target).unwrap();
        std::fs::create_dir(d.path("charts")).unwrap();
        std::fs::write(d.path("charts/a.svg"), "x").unwrap();
        d.commit().unwrap();
        std::fs::write(target.join("charts/my-notes.txt"), "mine").unwrap();
        let err = AtomicDir::create(&target).unwrap_err();
        assert!(err.to_string().contains("my-notes.txt"), "{err}");
        assert!(target.join("charts/my-notes.txt").exists());
    }

    #[test]
    fn a_report_from_before_markers_is_replaced_anything_else_is_not() {
        let root = tempfile::tempdir().unwrap();
        let old = root.path().join("old");
        std::fs::create_dir_all(old.join("charts")).unwrap();
        std::fs::write(
            old.join("index.html"),
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>ablate report — x</title>",
        )
        .unwrap();
        std::fs::write(old.join("charts/drops.svg"), "<svg/>").unwrap();
        check_folder_target(&old).unwrap();
        // The same with a file of the user's beside it: refused.
        std::fs::write(old.join("notes.txt"), "mine").unwrap();
        assert!(check_folder_target(&old).is_err());
        // Report-shaped names with another page: refused.
        std::fs::remove_file(old.join("notes.txt")).unwrap();
        std::fs::write(old.join("index.html"), "<html>my site</html>").unwrap();
        assert!(check_folder_target(&old).is_err());
    }

    #[test]
    fn empty_folder_file_and_link_targets() {
        let root = tempfile::tempdir().unwrap();
        let empty = root.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        AtomicDir::create(&empty).unwrap().commit().unwrap();
        assert_eq!(entries(&empty), vec![MARKER.to_string()]);

        let file = root.path().join("file");
        std::fs::write(&file, "data").unwrap();
        let err = AtomicDir::create(&file).unwrap_err();
        assert!(err.to_string().contains("is a file"), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "data");

        #[cfg(unix)]
        {
            let link = root.path().join("link");
            std::os::unix::fs::symlink(&empty, &link).unwrap();
            let err = AtomicDir::create(&link).unwrap_err();
            assert!(err.to_string().contains("symbolic link"), "{err}");
        }
    }

    #[test]
    fn a_long_name_is_bad_input() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("x".repeat(300));
        let err = AtomicDir::create(&target).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        // A name at the limit works: temporary names are short whatever the target's.
        let target = root.path().join("y".repeat(255));
        AtomicDir::create(&target).unwrap().commit().unwrap();
    }

    #[test]
    fn concurrent_writers_all_succeed_and_leave_no_debris() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        std::thread::scope(|s| {
            for t in 0..8 {
                let target = target.clone();
                s.spawn(move || {
                    for i in 0..15 {
                        let d = AtomicDir::create(&target).unwrap();
                        std::fs::write(d.path("who.txt"), format!("{t}-{i}")).unwrap();
                        d.commit().unwrap();
                    }
                });
            }
        });
        assert_eq!(entries(root.path()), vec!["out".to_string()]);
        assert_eq!(entries(&target), vec![MARKER.to_string(), "who.txt".into()]);
    }

    #[test]
    fn safe_names() {
        assert_eq!(
            safe_name("support-eval-v3", "set").unwrap(),
            "support-eval-v3"
        );
        assert_eq!(safe_name("../../victim", "set").unwrap(), "_._.._victim");
        assert_eq!(safe_name("/abs", "set").unwrap(), "_abs");
        assert_eq!(safe_name(".hidden", "set").unwrap(), "_hidden");
        assert_eq!(safe_name("a b/c\\d\n", "set").unwrap(), "a_b_c_d_");
        assert_eq!(safe_name("évals-日本", "set").unwrap(), "évals-日本");
        assert!(safe_name(&"z".repeat(500), "set").unwrap().len() <= SAFE_NAME_MAX);
        for bad in ["", ".", "..", "   "] {
            assert_eq!(safe_name(bad, "set").unwrap_err().exit_code(), 2, "{bad:?}");
        }
        let root = Path::new("reports");
        for raw in ["../../victim", "/abs", "..a", "x/../../y"] {
            let p = inside(root, raw, "set").unwrap();
            assert_eq!(p.parent(), Some(root), "{raw}");
        }
    }

    #[test]
    fn single_files_are_replaced_only_when_ablate_wrote_them() {
        let root = tempfile::tempdir().unwrap();
        let csv = root.path().join("arms.csv");
        std::fs::write(&csv, "user data").unwrap();
        let write = |p: &Path| std::fs::write(p, "new").map_err(|e| Error::io(p, e));
        let err = write_file(&csv, false, write).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("--force"), "{err}");
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), "user data");
        write_file(&csv, true, write).unwrap();
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), "new");
        assert_eq!(entries(root.path()), vec!["arms.csv".to_string()]);

        let err = write_file(root.path(), true, write).unwrap_err();
        assert!(err.to_string().contains("is a folder"), "{err}");

        // A failed write leaves the old file and no temporary file.
        let failing = |p: &Path| -> Result<()> {
            std::fs::write(p, "half").unwrap();
            Err(Error::Invariant("boom".into()))
        };
        assert!(write_file(&csv, true, failing).is_err());
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), "new");
        assert_eq!(entries(root.path()), vec!["arms.csv".to_string()]);
    }
}
