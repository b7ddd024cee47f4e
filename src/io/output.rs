//! Outputs that never destroy what ablate did not write.
//!
//! Every folder ablate writes (`report`, `simulate`, `import`, `--export`) is built in a hidden
//! temporary sibling and renamed into place at the end ([`AtomicDir`]), so a failed run leaves the
//! previous output as it was. The finished folder carries a marker file, [`MARKER`], naming the
//! tool version, the command and every file ablate put there with its SHA-256. An existing folder
//! is replaced only when
//!
//! - it has no entries at all (an empty subfolder is an entry), or
//! - it holds the marker and nothing but the files the marker lists, each with the content ablate
//!   wrote (a file edited since, such as a hand-tuned `experiment.toml`, is the user's), plus the
//!   state ablate keeps beside its own output ([`KEPT_FILES`]: `watch`'s decisions), which is
//!   carried into the new folder, or
//! - it is a report from before markers existed: only report files, and ablate's index.html.
//!
//! Anything else (a folder of the user's, a marker beside files someone added or changed, a file
//! where a folder is expected, a symbolic link) is refused with [`Error::Output`] (exit 2), naming
//! the path and what to do. Single files ([`write_file`]) are written to a temporary sibling and
//! renamed; an existing file is replaced only when ablate wrote it as a disposable output (a
//! Parquet file with the key-value metadata [`OUTPUT_KEY`]: a batch of calls, a planned arms
//! table) or when the caller passes `force`; a table an experiment folder reads is never
//! replaced.
//!
//! Before any of that, [`preflight`] compares every destination of a command with its inputs and
//! with each other: an output folder that equals, contains or sits inside an input (or the folder
//! the user is in), two outputs in one place, a file output over an input file, are refused before
//! the first byte is written.
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

/// Key of the Parquet key-value metadata entry that marks a file ablate wrote (tables of
/// experiments it writes included: they are not replaceable for that).
pub const PARQUET_KEY: &str = "ablate.version";

/// Key of the Parquet key-value metadata entry that marks a disposable output of a verb (its value
/// is the verb: `next`, `plan`). Only such a file is replaced without `--force`.
pub const OUTPUT_KEY: &str = "ablate.output";

/// Files ablate writes into a folder after making it (`watch`'s decisions in an experiment
/// folder): a folder holding them still counts as ablate's, and replacing the folder keeps them.
pub const KEPT_FILES: &[&str] = &[crate::io::watch_state::STATE_FILE];

/// Stems of the tables an experiment folder reads: a file with one of these stems beside an
/// `experiment.toml` is never replaced by a single-file output.
pub const EXPERIMENT_TABLES: &[&str] = &[
    "results",
    "cases",
    "arms",
    "units",
    "case_units",
    "mix",
    "passages",
    "shadow",
    "context_log",
    "samples",
];

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
    /// Every file ablate wrote, relative to the folder, with `/` separators, sorted; an empty
    /// folder is listed with a trailing `/`.
    pub files: Vec<String>,
    /// SHA-256 (hex) of each file's content as written. Absent in markers of ablate before
    /// 0.1.0's third safety round, whose files are recognised by name only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<std::collections::BTreeMap<String, String>>,
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
                "exists and was not written by ablate (no {MARKER} marker); it holds {} entr{}, e.g. {}",
                files.len(),
                if files.len() == 1 { "y" } else { "ies" },
                files[0]
            ),
            FOLDER_FIX,
        )));
    };
    for file in files.iter().filter(|f| f.as_str() != MARKER) {
        if KEPT_FILES.contains(&file.as_str())
            && crate::io::watch_state::is_state_file(&target.join(file))
        {
            continue;
        }
        if marker.files.binary_search(file).is_err() {
            return Some(Err(refuse(
                &target.join(file),
                format!(
                    "was not written by ablate, and ablate would delete it by replacing {}",
                    target.display()
                ),
                FOLDER_FIX,
            )));
        }
        let Some(expected) = marker.sha256.as_ref().and_then(|h| h.get(file)) else {
            continue;
        };
        match sha256_file(&target.join(file)) {
            Ok(actual) if &actual == expected => {}
            // Another ablate process swapped the folder between reading the marker and
            // hashing the file: look again.
            Ok(_) if read_marker(target).as_ref() != Some(&marker) => return None,
            Ok(_) => {
                return Some(Err(refuse(
                    &target.join(file),
                    format!(
                        "was changed since ablate wrote it (its SHA-256 differs from the one in {MARKER}), so it is yours now, and ablate would delete it by replacing {}",
                        target.display()
                    ),
                    "choose another --out, or copy your changes elsewhere and delete the folder yourself",
                )));
            }
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return None;
            }
            Err(e) => return Some(Err(e)),
        }
    }
    Some(Ok(()))
}

/// SHA-256 of a file's bytes, in hex, read in blocks.
///
/// # Errors
/// The file cannot be read.
pub fn sha256_file(path: &Path) -> Result<String> {
    use sha2::Digest as _;
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = sha2::Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(|e| Error::io(path, e))?;
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
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

/// Every file and link under `dir`, and every empty folder (with a trailing `/`), relative, with
/// `/` separators, sorted. Links are listed, never followed. A folder holding only empty
/// subfolders is therefore not empty: those folders may be the start of the user's tree.
fn list_files(dir: &Path) -> Result<Vec<String>> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<()> {
        let relative = |path: &Path| {
            let rel = path.strip_prefix(root).unwrap_or(path);
            rel.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<String>>()
                .join("/")
        };
        let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
        let mut any = false;
        for entry in entries {
            any = true;
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            let path = entry.path();
            let kind = entry.file_type().map_err(|e| Error::io(&path, e))?;
            if kind.is_dir() {
                walk(root, &path, out)?;
            } else {
                out.push(relative(&path));
            }
        }
        if !any && dir != root {
            out.push(relative(dir) + "/");
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
        AtomicDir::beside(target)
    }

    /// A new, empty temporary folder beside `target` (whose parent exists).
    fn beside(target: &Path) -> Result<AtomicDir> {
        let parent = parent_of(target);
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
        let files = list_files(&self.temp)?;
        let mut sha256 = std::collections::BTreeMap::new();
        for f in files.iter().filter(|f| !f.ends_with('/')) {
            sha256.insert(f.clone(), sha256_file(&self.temp.join(f))?);
        }
        let marker = Marker {
            tool: "ablate".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            command: command_line(),
            files,
            sha256: Some(sha256),
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
                if let Err(e) = carry_kept_files(&old, &self.temp) {
                    // Put the state back (if it moved) and the folder where it was.
                    let _ = carry_kept_files(&self.temp, &old);
                    let _ = std::fs::rename(&old, &self.target);
                    return Err(e);
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
                        let _ = carry_kept_files(&self.temp, &old);
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

/// A folder updated in place (`import --into`): the tables ablate rewrites go into a temporary
/// sibling, and [`FolderUpdate::commit`] carries every other entry of the folder across
/// (experiment.toml, the watch state, the user's own files) before the finished folder takes its
/// place. Nothing of the folder is lost, so it need not be ablate's own; the marker then lists the
/// files written now and those of the old marker whose content is unchanged.
#[derive(Debug)]
pub struct FolderUpdate {
    dir: AtomicDir,
}

impl FolderUpdate {
    /// Starts updating `target`, an existing folder (not a link).
    ///
    /// # Errors
    /// The target is missing, a link or a file; the temporary folder cannot be made.
    pub fn start(target: &Path) -> Result<FolderUpdate> {
        let meta = std::fs::symlink_metadata(target).map_err(|e| Error::io(target, e))?;
        if let Ok(cwd) = std::env::current_dir()
            && resolved(&cwd).starts_with(resolved(target))
        {
            return Err(refuse(
                target,
                "is the folder you are in (or one holding it); the update moves it aside and back",
                "run the command from another folder",
            ));
        }
        if meta.file_type().is_symlink() || !meta.is_dir() {
            return Err(refuse(
                target,
                "is not a folder (or is a symbolic link); --into updates an experiment folder in place",
                "give the experiment folder's real path",
            ));
        }
        Ok(FolderUpdate {
            dir: AtomicDir::beside(target)?,
        })
    }

    /// Path of a file inside the folder being written.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path(name)
    }

    /// Writes the marker (the files written now, and those of the old marker whose content is
    /// unchanged), then moves the folder aside, carries every entry the update did not rewrite
    /// into the new folder and moves the new folder into place. Between the two swaps only
    /// renames happen; if one fails, everything carried goes back and the folder is put back
    /// where it was. Should even that fail, nothing is deleted and the error names where each
    /// part is.
    ///
    /// # Errors
    /// Reading the folder or writing the marker fails (nothing moved yet), or a rename fails
    /// (rolled back).
    pub fn commit(mut self) -> Result<PathBuf> {
        let target = self.dir.target.clone();
        let temp = self.dir.temp.clone();
        let ours = list_files(&temp)?;
        let mut sha256 = std::collections::BTreeMap::new();
        for f in ours.iter().filter(|f| !f.ends_with('/')) {
            sha256.insert(f.clone(), sha256_file(&temp.join(f))?);
        }
        // Files of the old marker that will be carried unchanged stay ablate's.
        if let Some(m) = read_marker(&target)
            && let Some(hashes) = &m.sha256
        {
            for (f, h) in hashes {
                let top = f.split('/').next().unwrap_or_default();
                if sha256.contains_key(f) || temp.join(top).exists() {
                    continue;
                }
                if sha256_file(&target.join(f)).is_ok_and(|now| &now == h) {
                    sha256.insert(f.clone(), h.clone());
                }
            }
        }
        let marker = Marker {
            tool: "ablate".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            command: command_line(),
            files: sha256.keys().cloned().collect(),
            sha256: Some(sha256),
        };
        let marker_path = temp.join(MARKER);
        let text = serde_json::to_string_pretty(&marker)
            .map_err(|e| Error::Invariant(format!("marker serialisation: {e}")))?;
        std::fs::write(&marker_path, text + "\n").map_err(|e| Error::io(&marker_path, e))?;

        let old = sibling(&parent_of(&target), "old");
        std::fs::rename(&target, &old).map_err(|e| Error::io(&target, e))?;
        let mut carried: Vec<std::ffi::OsString> = Vec::new();
        let swapped = (|| -> std::result::Result<(), (PathBuf, std::io::Error)> {
            let entries = std::fs::read_dir(&old).map_err(|e| (old.clone(), e))?;
            for entry in entries {
                let entry = entry.map_err(|e| (old.clone(), e))?;
                let name = entry.file_name();
                if name == MARKER || temp.join(&name).exists() {
                    continue;
                }
                std::fs::rename(entry.path(), temp.join(&name)).map_err(|e| (entry.path(), e))?;
                carried.push(name);
            }
            std::fs::rename(&temp, &target).map_err(|e| (target.clone(), e))
        })();
        match swapped {
            Ok(()) => {
                self.dir.committed = true;
                std::fs::remove_dir_all(&old).map_err(|e| Error::io(&old, e))?;
                Ok(target)
            }
            Err((at, e)) => {
                let mut restored = carried
                    .iter()
                    .all(|name| std::fs::rename(temp.join(name), old.join(name)).is_ok());
                restored &= std::fs::rename(&old, &target).is_ok();
                if !restored {
                    // Keep every byte: the temporary folder is not removed.
                    self.dir.committed = true;
                    return Err(Error::io(
                        &at,
                        std::io::Error::other(format!(
                            "{e}; the update could not be undone: the experiment's earlier files are in {} and the rest in {}; move them back into {} by hand",
                            old.display(),
                            temp.display(),
                            target.display()
                        )),
                    ));
                }
                Err(Error::io(&at, e))
            }
        }
    }
}

/// Moves the state ablate keeps beside its output ([`KEPT_FILES`]) from the folder being replaced
/// into its replacement, unless the new output brings its own.
fn carry_kept_files(old: &Path, new: &Path) -> Result<()> {
    for name in KEPT_FILES {
        let (from, to) = (old.join(name), new.join(name));
        if crate::io::watch_state::is_state_file(&from) && !to.exists() {
            std::fs::rename(&from, &to).map_err(|e| Error::io(&from, e))?;
        }
    }
    Ok(())
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

/// Whether `path` is a disposable output of ablate's: a Parquet file with [`OUTPUT_KEY`] in its
/// key-value metadata. Tables of an experiment that `import` or `simulate` wrote carry only
/// [`PARQUET_KEY`], and are not disposable.
fn disposable_output(path: &Path) -> bool {
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
        .is_some_and(|kv| kv.iter().any(|e| e.key == OUTPUT_KEY))
}

/// Whether `path` is a table an experiment folder reads: its stem is one of
/// [`EXPERIMENT_TABLES`] and an `experiment.toml` sits beside it.
fn is_experiment_table(path: &Path) -> bool {
    let stem = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.split_once('.').map(|(stem, _)| stem));
    stem.is_some_and(|s| EXPERIMENT_TABLES.contains(&s))
        && parent_of(path).join("experiment.toml").is_file()
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
        Ok(_) if is_experiment_table(path) => Err(refuse(
            path,
            "is a table of the experiment in this folder (an experiment.toml sits beside it); ablate never replaces one, not even with --force",
            "write the output elsewhere (e.g. batch.parquet), and move it over the table yourself if that is what you mean",
        )),
        Ok(_) if !force && !disposable_output(path) => Err(refuse(
            path,
            "exists and ablate did not write it as a disposable output (only a batch from `next` or an arms table from `plan`, as Parquet, is replaced without asking)",
            "choose another name, or pass --force to replace it",
        )),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(path, e)),
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
    if let Err(e) = write(&temp) {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    std::fs::rename(&temp, path).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        Error::io(path, e)
    })
}

/// A path made absolute and free of links, `.` and `..`, also when its end does not exist yet: the
/// longest existing prefix is resolved by the file system, and the rest is joined lexically
/// (a name that does not exist cannot be a link).
pub fn resolved(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let mut existing = absolute.clone();
    let mut rest = Vec::new();
    let mut base = loop {
        if let Ok(c) = existing.canonicalize() {
            break c;
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => {
                // Nothing resolves (`..` past the root, an unreadable folder): lexical only.
                rest.clear();
                break PathBuf::new();
            }
        }
    };
    if base.as_os_str().is_empty() {
        for c in absolute.components() {
            match c {
                Component::ParentDir => {
                    base.pop();
                }
                Component::CurDir => {}
                other => base.push(other.as_os_str()),
            }
        }
        return base;
    }
    for name in rest.into_iter().rev() {
        match Path::new(&name).components().next() {
            Some(Component::ParentDir) => {
                base.pop();
            }
            Some(Component::CurDir) | None => {}
            Some(_) => base.push(name),
        }
    }
    base
}

/// One place a command will write.
#[derive(Debug, Clone)]
pub struct Destination {
    /// The option that names it, for messages (`--out`, `--export`).
    pub flag: &'static str,
    /// The path given.
    pub path: PathBuf,
    /// A folder ablate builds whole, or a single file.
    pub kind: DestinationKind,
}

/// What is written at a [`Destination`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DestinationKind {
    /// A folder written by [`AtomicDir`].
    Folder,
    /// One file written by [`write_file`], with its `--force`.
    File {
        /// Replace a file ablate cannot tell it wrote.
        force: bool,
    },
}

/// One thing a command reads: an experiment folder, a table, a log.
#[derive(Debug, Clone)]
pub struct Input {
    /// What it is, for messages (`the experiment`, `--mix`).
    pub what: String,
    /// The path given.
    pub path: PathBuf,
}

/// Checks every destination of a command before its first write:
///
/// - no output folder equals, contains or sits inside an input, or contains the current folder
///   (renaming it away would pull the floor from under the user's shell);
/// - no output file is an input file;
/// - no two destinations are the same place or nested in each other (`report --out X --export X`
///   would write the export, then replace it with the report);
/// - each destination may be replaced ([`check_folder_target`], [`check_file_target`]).
///
/// # Errors
/// [`Error::Output`] (exit 2) naming the two paths and what to do.
pub fn preflight(inputs: &[Input], destinations: &[Destination]) -> Result<()> {
    let cwd = std::env::current_dir().map(|d| resolved(&d)).ok();
    let resolved_inputs: Vec<(&Input, PathBuf)> =
        inputs.iter().map(|i| (i, resolved(&i.path))).collect();
    let resolved_dests: Vec<(&Destination, PathBuf)> = destinations
        .iter()
        .map(|d| (d, resolved(&d.path)))
        .collect();
    for (i, (dest, at)) in resolved_dests.iter().enumerate() {
        if dest.kind == DestinationKind::Folder {
            if at.parent().is_none() {
                return Err(refuse(
                    &dest.path,
                    format!("{} is the root of the file system", dest.flag),
                    "give a folder of its own, e.g. --out reports/mine",
                ));
            }
            if let Some(cwd) = &cwd
                && cwd.starts_with(at)
            {
                return Err(refuse(
                    &dest.path,
                    format!(
                        "{} is the folder you are in (or one holding it); ablate replaces its output folder whole",
                        dest.flag
                    ),
                    "give a new folder's name, e.g. --out report-v2",
                ));
            }
        }
        for (input, from) in &resolved_inputs {
            let clash = match dest.kind {
                DestinationKind::Folder => {
                    if from == at {
                        Some("is")
                    } else if from.starts_with(at) {
                        Some("contains")
                    } else if at.starts_with(from) {
                        Some("sits inside")
                    } else {
                        None
                    }
                }
                DestinationKind::File { .. } => (from == at).then_some("is"),
            };
            if let Some(clash) = clash {
                return Err(refuse(
                    &dest.path,
                    format!(
                        "{} {clash} {} {}, which this command reads; writing there could replace what is being read",
                        dest.flag,
                        input.what,
                        input.path.display()
                    ),
                    "write to a folder outside every input, e.g. --out reports/<name>",
                ));
            }
        }
        for (other, there) in &resolved_dests[i + 1..] {
            if at == there || at.starts_with(there) || there.starts_with(at) {
                return Err(refuse(
                    &dest.path,
                    format!(
                        "{} and {} ({}) are the same place or one holds the other; the second write would replace the first",
                        dest.flag,
                        other.flag,
                        other.path.display()
                    ),
                    "give each its own folder, side by side",
                ));
            }
        }
    }
    for dest in destinations {
        match dest.kind {
            DestinationKind::Folder => check_folder_target(&dest.path)?,
            DestinationKind::File { force } => check_file_target(&dest.path, force)?,
        }
    }
    Ok(())
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

    #[test]
    fn an_update_carries_every_file_and_keeps_only_unchanged_ones_as_ablate_s() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("exp");
        let d = AtomicDir::create(&target).unwrap();
        for (f, text) in [
            ("results.parquet", "r1"),
            ("experiment.toml", "t"),
            ("cases.parquet", "c"),
        ] {
            std::fs::write(d.path(f), text).unwrap();
        }
        d.commit().unwrap();
        // The user edits experiment.toml and adds a folder of notes.
        std::fs::write(target.join("experiment.toml"), "t edited").unwrap();
        std::fs::create_dir(target.join("notes")).unwrap();
        std::fs::write(target.join("notes/a.md"), "mine").unwrap();
        let u = FolderUpdate::start(&target).unwrap();
        std::fs::write(u.path("results.parquet"), "r2").unwrap();
        u.commit().unwrap();
        assert_eq!(
            std::fs::read_to_string(target.join("results.parquet")).unwrap(),
            "r2"
        );
        assert_eq!(
            std::fs::read_to_string(target.join("experiment.toml")).unwrap(),
            "t edited"
        );
        assert_eq!(
            std::fs::read_to_string(target.join("notes/a.md")).unwrap(),
            "mine"
        );
        assert_eq!(
            std::fs::read_to_string(target.join("cases.parquet")).unwrap(),
            "c"
        );
        let m = read_marker(&target).unwrap();
        assert_eq!(
            m.files,
            vec!["cases.parquet".to_string(), "results.parquet".to_string()]
        );
        // Nothing is left beside it, and replacing the folder now refuses the user's files.
        assert_eq!(entries(root.path()), vec!["exp".to_string()]);
        assert!(check_folder_target(&target).is_err());
        // A link or a missing folder is refused.
        assert!(FolderUpdate::start(&root.path().join("missing")).is_err());
    }
}
