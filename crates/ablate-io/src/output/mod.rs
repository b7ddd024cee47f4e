//! Outputs that never destroy what ablate did not write.
//!
//! Every folder ablate writes (`report`, `simulate`, `import`, `--export`) is built in a hidden
//! temporary sibling and renamed into place at the end ([`AtomicDir`]), so a failed run leaves the
//! previous output as it was. The finished folder carries a marker file, [`MARKER`], naming the
//! tool version, the command, the writer ([`FolderKind`]: report, export, simulate, import,
//! import --into) and every file ablate put there with its SHA-256. An existing folder is
//! replaced only when
//!
//! - it has no entries at all (an empty subfolder is an entry), or
//! - it holds the marker and nothing but the files the marker lists, each with the content ablate
//!   wrote (a file edited since, such as a hand-tuned `experiment.toml`, is the user's), plus the
//!   state ablate keeps beside its own output ([`KEPT_FILES`]: `watch`'s decisions), which is
//!   carried into the new folder; and the marker's writer is of the same kind as this one (a
//!   report is replaced only by a report, an export only by an export, an experiment only as
//!   `may_replace` allows), and this user may delete every file in it (a folder made read-only
//!   is the user's protection, and deleting it would fail half-way).
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
//!
//! Interruptions: every temporary path is registered while it exists (`temps`), so SIGINT,
//! SIGTERM and SIGHUP remove them before the process ends; only SIGKILL (or a crash) leaves a
//! hidden `.ablate-tmp-*` behind. Errors name the user's path, never the temporary one
//! ([`in_user_terms`]).

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::AtomicU64;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

mod file;
mod folder;
mod preflight;
pub(crate) mod temps;

pub use file::{check_file_target, write_file};
pub use folder::{AtomicDir, FolderLock, FolderUpdate};
pub use preflight::{Destination, DestinationKind, Input, preflight, resolved};
pub use temps::{in_user_terms, install_interrupt_handler};

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
    "runs",
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
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Marker {
    /// Always `"ablate"`.
    pub tool: String,
    /// The version of ablate that wrote the folder.
    pub version: String,
    /// The command line that wrote it.
    pub command: Vec<String>,
    /// Which writer made the folder ([`FolderKind::name`]: `report`, `export`, `simulate`,
    /// `import`, `import-into`). A folder is replaced only by a writer of its own kind
    /// (`may_replace`). Markers of ablate before the field have none: the writer is then read
    /// from `command` and `files` (`writer_recorded`); ablate before the field ignores it. A
    /// name this ablate does not know (a later version's) vouches for no writer: the folder is
    /// not replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer: Option<String>,
    /// Every file ablate wrote, relative to the folder, with `/` separators, sorted; an empty
    /// folder is listed with a trailing `/`.
    pub files: Vec<String>,
    /// SHA-256 (hex) of each file's content as written. A marker without it (of ablate before
    /// 0.1.0's third safety round) vouches for nothing, and its folder is not replaced.
    #[serde(default)]
    pub sha256: std::collections::BTreeMap<String, String>,
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

/// `target` as a path that keeps naming the same folder while ablate renames things beside it:
/// a path that climbs (`exp/../exp`) or ends in `/` or `/.` gets its parent resolved and its own
/// name joined on. Moving `exp` aside had left `exp/..` naming nothing: the commit could neither
/// finish nor put the folder back, and it stayed hidden as `.ablate-old-*`.
pub fn settled(target: &Path) -> PathBuf {
    let raw = target.as_os_str().as_encoded_bytes();
    let climbs = target
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir));
    match target.file_name() {
        Some(name) if climbs || raw.ends_with(b"/") || raw.ends_with(b"/.") => {
            resolved(&parent_of(target)).join(name)
        }
        _ => target.to_path_buf(),
    }
}

/// The folder `target` lives in (`.` for a bare name).
fn parent_of(target: &Path) -> PathBuf {
    match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Refusal for a target that ablate may not replace.
fn refuse(path: &Path, problem: impl Into<String>, fix: impl Into<String>) -> Error {
    Error::Output {
        path: path.to_path_buf(),
        problem: problem.into(),
        fix: fix.into(),
    }
}

/// What to do about a folder ablate cannot vouch for, naming the option that chose it.
fn folder_fix(kind: FolderKind) -> String {
    format!(
        "choose another {}, or move or delete its contents yourself",
        kind.flag()
    )
}

/// Which writer an output folder is of, recorded in its marker ([`Marker::writer`]). A folder is
/// replaced only by a writer of its own kind (`may_replace`): a report by `report`, an export
/// by `--export`, an experiment by `simulate` or `import` (and a report or an export never
/// replaces an experiment folder, even one ablate wrote: a mistyped `--out` must not delete an
/// experiment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FolderKind {
    /// `report --out` (and the default `reports/<set>`).
    Report,
    /// `--export DIR` of any verb: its tables as Parquet.
    Export,
    /// `simulate --out`: a synthetic experiment, which its command line writes again.
    Simulate,
    /// `import … --out`: an experiment from harness logs.
    Import,
    /// An experiment grown in place by `import … --into` ([`FolderUpdate`]): it holds what
    /// several imports brought, and nothing replaces it.
    Grown,
}

impl FolderKind {
    /// Whether the folder is an experiment (a manifest and tables).
    pub fn is_experiment(self) -> bool {
        matches!(
            self,
            FolderKind::Simulate | FolderKind::Import | FolderKind::Grown
        )
    }

    /// The name recorded in the marker.
    pub fn name(self) -> &'static str {
        match self {
            FolderKind::Report => "report",
            FolderKind::Export => "export",
            FolderKind::Simulate => "simulate",
            FolderKind::Import => "import",
            FolderKind::Grown => "import-into",
        }
    }

    /// The kind a marker's name records (`None`: a name this ablate does not know).
    pub(super) fn from_name(name: &str) -> Option<FolderKind> {
        [
            FolderKind::Report,
            FolderKind::Export,
            FolderKind::Simulate,
            FolderKind::Import,
            FolderKind::Grown,
        ]
        .into_iter()
        .find(|k| k.name() == name)
    }

    /// The folder, in words, for messages.
    fn described(self) -> &'static str {
        match self {
            FolderKind::Report => "a report (written by `ablate report`)",
            FolderKind::Export => "an export (the Parquet tables of a verb's --export)",
            FolderKind::Simulate => "a simulated experiment (written by `ablate simulate`)",
            FolderKind::Import => "an experiment imported from harness logs",
            FolderKind::Grown => "an experiment grown with `ablate import --into`",
        }
    }

    /// The option that names a folder of this kind, for messages: `--export` for an export,
    /// `--into` for a grown experiment, `--out` for the rest.
    pub fn flag(self) -> &'static str {
        match self {
            FolderKind::Export => "--export",
            FolderKind::Grown => "--into",
            FolderKind::Report | FolderKind::Simulate | FolderKind::Import => "--out",
        }
    }

    /// The writer, in words, for messages.
    fn writer(self) -> &'static str {
        match self {
            FolderKind::Report => "`ablate report --out`",
            FolderKind::Export => "--export",
            FolderKind::Simulate => "`ablate simulate --out`",
            FolderKind::Import => "`ablate import --out`",
            FolderKind::Grown => "`ablate import --into`",
        }
    }
}

/// Whether `dir` holds an experiment: a manifest (`experiment.toml`) and a results table.
pub fn is_experiment_folder(dir: &Path) -> bool {
    let file = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok_and(|m| m.is_file());
    file("experiment.toml") && (file("results.parquet") || file("results.csv"))
}

/// Checks that `target` may be written as an output folder of `kind`: it does not exist, or it
/// is an empty folder, or a folder ablate wrote (its marker parses, says ablate, lists every
/// file present with its SHA-256, and every file matches; the watch state ablate keeps beside
/// its output aside), written by a writer of the same kind (`may_replace`) and deletable by this
/// user (not read-only). Anything else is refused, an unreadable marker included: a folder is
/// replaceable only when ablate can vouch for each of its files. Call it before long work so
/// the user hears at once; [`AtomicDir::commit`] checks again.
///
/// # Errors
/// [`Error::Output`] naming the folder (or the first file ablate cannot vouch for) and what to
/// do.
pub fn check_folder_target(target: &Path, kind: FolderKind) -> Result<()> {
    // Another ablate process may be swapping the folder while it is inspected; such a moment
    // looks like a vanished file or marker, and passes on a second look.
    for _ in 0..50 {
        if let Some(result) = inspect_folder_target(target, kind) {
            return result;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    inspect_folder_target(target, kind).unwrap_or_else(|| {
        Err(refuse(
            target,
            "kept changing while ablate looked at it (files appeared or vanished), so ablate cannot tell whether it may replace it",
            "wait for whatever is writing there to finish, then run again",
        ))
    })
}

/// One look at a folder target: `None` when it changed while being inspected.
fn inspect_folder_target(target: &Path, kind: FolderKind) -> Option<Result<()>> {
    if target
        .file_name()
        .is_some_and(|n| n.as_encoded_bytes().len() > NAME_MAX)
    {
        return Some(Err(refuse(
            target,
            format!("the folder name is longer than {NAME_MAX} bytes"),
            format!("choose a shorter {}", kind.flag()),
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
            format!(
                "give the real folder's path, or choose another {}",
                kind.flag()
            ),
        )));
    }
    if !meta.is_dir() {
        return Some(Err(refuse(
            target,
            "is a file, and ablate writes a folder here",
            format!("choose another {}", kind.flag()),
        )));
    }
    if !kind.is_experiment() && is_experiment_folder(target) {
        return Some(Err(refuse(
            target,
            "is an experiment folder (experiment.toml and a results table); a report or an export never replaces an experiment",
            if kind == FolderKind::Export {
                "check --export: give the tables a new folder, e.g. --export exports/<verb>"
            } else {
                "check --out: give a new folder for the output, e.g. --out reports/<name>"
            },
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
    let marker = match read_marker(target) {
        MarkerRead::Valid(marker) => marker,
        // Listed a moment ago and gone now: another ablate is swapping the folder.
        MarkerRead::Absent if files.iter().any(|f| f == MARKER) => return None,
        MarkerRead::Absent => {
            return Some(Err(refuse(
                target,
                format!(
                    "exists and was not written by ablate (no {MARKER} marker); it holds {} entr{}, e.g. {}",
                    files.len(),
                    if files.len() == 1 { "y" } else { "ies" },
                    files[0]
                ),
                folder_fix(kind),
            )));
        }
        MarkerRead::Invalid(why) => {
            return Some(Err(refuse(
                &target.join(MARKER),
                format!(
                    "is not a marker ablate can vouch for ({why}), so ablate cannot tell that the files of {} are its own",
                    target.display()
                ),
                folder_fix(kind),
            )));
        }
    };
    match vouched(target, &files, &marker, kind) {
        Some(Ok(())) => {
            Some(may_replace(target, &marker, kind).and_then(|()| deletable(target, kind)))
        }
        other => other,
    }
}

/// The verb of a command line: its first argument after the program that is not an option (the
/// options ablate takes before a verb, `--json`, `--quiet` and `--wide`, take no value). So an
/// experiment folder named `simulate` (`ablate report simulate`) is not the verb.
fn verb_of(command: &[String]) -> Option<&str> {
    command
        .iter()
        .skip(1)
        .map(String::as_str)
        .find(|a| !a.starts_with('-'))
}

/// The writer of the folder `marker` vouches for: its `writer`, or, in a marker written before
/// that field, the verb of its command line and what it lists: `simulate` and `import` wrote
/// experiments (`import --into` grew one), `report` wrote a report (its `index.html`) and, with
/// `--export`, an export beside it (the same command line: only the files tell them apart), and
/// every other verb wrote only exports. `None`: a writer this ablate does not know, or a command
/// line without a verb (a marker made by hand).
pub(super) fn writer_recorded(marker: &Marker) -> Option<FolderKind> {
    if let Some(name) = &marker.writer {
        return FolderKind::from_name(name);
    }
    let into = marker
        .command
        .iter()
        .any(|a| a == "--into" || a.starts_with("--into="));
    let lists = |file: &str| marker.files.iter().any(|f| f == file);
    match verb_of(&marker.command)? {
        "simulate" => Some(FolderKind::Simulate),
        "import" if into => Some(FolderKind::Grown),
        "import" => Some(FolderKind::Import),
        "report" if lists("index.html") => Some(FolderKind::Report),
        _ if lists("experiment.toml") => None,
        _ => Some(FolderKind::Export),
    }
}

/// Whether a writer of `kind` may replace the folder at `target`, which `marker` vouches for: only
/// a folder of its own kind (a report by `report`, an export by `--export`: `sweep --export
/// reports/<set>` had replaced a report, `simulate --out` a report), an experiment only by
/// `simulate` or `import`, never one grown with `import --into` (it holds what several imports
/// brought), and never an imported one by `simulate` (a mistyped `simulate --out` had replaced a
/// real experiment). An import over an import is checked again at the commit, where both sets
/// are known ([`same_imported_set`]).
fn may_replace(target: &Path, marker: &Marker, kind: FolderKind) -> Result<()> {
    let fix = format!(
        "check {}: give a new folder, or delete this one yourself if you mean to replace it",
        kind.flag()
    );
    let Some(old) = writer_recorded(marker) else {
        return Err(refuse(
            target,
            format!(
                "was written by ablate {}, and its {MARKER} names no writer this ablate knows ({}), so ablate cannot tell what would be replaced",
                marker.version,
                marker
                    .writer
                    .as_deref()
                    .unwrap_or("no writer, and no verb in its command line")
            ),
            fix.clone(),
        ));
    };
    match (old, kind) {
        (FolderKind::Grown, _) => Err(refuse(
            target,
            "is an experiment grown with `ablate import --into` (it holds what several imports brought); ablate never replaces it",
            fix.clone(),
        )),
        (FolderKind::Import, FolderKind::Simulate) => Err(refuse(
            target,
            "is an experiment imported from harness logs; simulate never replaces it with synthetic data",
            fix.clone(),
        )),
        (FolderKind::Report, FolderKind::Report)
        | (FolderKind::Export, FolderKind::Export)
        | (FolderKind::Simulate | FolderKind::Import, FolderKind::Simulate | FolderKind::Import) => {
            Ok(())
        }
        (old, new) => Err(refuse(
            target,
            format!(
                "is {}; {} never replaces it (each writer replaces only a folder of its own kind)",
                old.described(),
                new.writer()
            ),
            if new == FolderKind::Export {
                "give --export a folder of its own (e.g. --export exports/<verb>), or delete this one yourself if you mean to replace it".to_string()
            } else {
                fix
            },
        )),
    }
}

/// Refuses a folder this user may not empty ([`undeletable_folder`]): replacing it ends by
/// deleting it, which failed after the new output was in place and left the old one hidden
/// beside it as `.ablate-old-*`. A folder made read-only is one the user protected.
fn deletable(target: &Path, kind: FolderKind) -> Result<()> {
    match undeletable_folder(target, true) {
        None => Ok(()),
        Some(folder) => Err(refuse(
            &folder,
            format!(
                "is read-only (this user may not delete what is in it, or its file system is mounted read-only), and replacing {} ends by deleting it; ablate does not replace a folder made read-only",
                target.display()
            ),
            format!(
                "make it writable if ablate may replace it (chmod -R u+w {}), or choose another {}",
                target.display(),
                kind.flag()
            ),
        )),
    }
}

/// The first folder, `dir` itself, its direct subfolders, or (with `whole`) any folder under it,
/// whose entries this process may not remove or rename: no write or search permission on it for this user
/// (`faccessat` with the effective ids, so ACLs count as the kernel counts them), or no write
/// permission for anyone in its mode (`chmod a-w`): root may write anything, and that mode is
/// the user's protection whoever runs ablate. Links are not followed.
pub(super) fn undeletable_folder(dir: &Path, whole: bool) -> Option<PathBuf> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt as _;
        use std::os::unix::fs::PermissionsExt as _;
        let writable = |p: &Path| {
            let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
                return false;
            };
            if std::fs::symlink_metadata(p).is_ok_and(|m| m.permissions().mode() & 0o222 == 0) {
                return false;
            }
            // SAFETY: a valid C string, only read by faccessat.
            let allowed = unsafe {
                libc::faccessat(
                    libc::AT_FDCWD,
                    c.as_ptr(),
                    libc::W_OK | libc::X_OK,
                    libc::AT_EACCESS,
                ) == 0
            };
            // Only a refusal counts: a folder another ablate process moved aside meanwhile (a
            // concurrent commit to the same --out) is not read-only.
            allowed
                || !matches!(
                    std::io::Error::last_os_error().raw_os_error(),
                    Some(libc::EACCES | libc::EPERM | libc::EROFS)
                )
        };
        let mut stack = vec![(dir.to_path_buf(), 0usize)];
        while let Some((d, depth)) = stack.pop() {
            if !writable(&d) {
                return Some(d);
            }
            if !whole && depth > 0 {
                continue;
            }
            for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push((entry.path(), depth + 1));
                }
            }
        }
        None
    }
    #[cfg(not(unix))]
    {
        let _ = (dir, whole);
        None
    }
}

/// An import may replace an earlier import only of the same set (`set` in experiment.toml): the
/// same logs imported again. `old` is the earlier folder, `new` the one about to take its place;
/// the caller is an import ([`FolderKind::Import`]).
pub(super) fn same_imported_set(old: &Path, new: &Path, target: &Path) -> Result<()> {
    let MarkerRead::Valid(marker) = read_marker(old) else {
        return Ok(());
    };
    if writer_recorded(&marker) != Some(FolderKind::Import) {
        return Ok(());
    }
    let set = |dir: &Path| -> Option<String> {
        let text = std::fs::read_to_string(dir.join("experiment.toml")).ok()?;
        let table: toml::Table = text.parse().ok()?;
        table.get("set")?.as_str().map(str::to_string)
    };
    match (set(old), set(new)) {
        (Some(a), Some(b)) if a != b => Err(refuse(
            target,
            format!(
                "holds the experiment `{a}`, imported from other logs; this import writes `{b}`, and would delete it"
            ),
            "check --out: give a new folder, or delete this one yourself if you mean to replace it",
        )),
        _ => same_logs_or_more(old, new, target),
    }
}

/// The second half of [`same_imported_set`]: the logs the earlier import read (the SHA-256s in
/// its `sources.parquet`) must all be among this import's. Two imports of one task from other
/// logs share a set name; the later one had replaced the earlier without a word.
fn same_logs_or_more(old: &Path, new: &Path, target: &Path) -> Result<()> {
    let shas = |dir: &Path| -> Option<std::collections::BTreeSet<String>> {
        use polars::prelude::*;
        let file = std::fs::File::open(dir.join("sources.parquet")).ok()?;
        let df = ParquetReader::new(file).finish().ok()?;
        let col = df.column("sha256").ok()?.str().ok()?.clone();
        Some(col.iter().flatten().map(str::to_string).collect())
    };
    let (Some(before), Some(now)) = (shas(old), shas(new)) else {
        return Ok(());
    };
    let missing = before.difference(&now).count();
    if missing == 0 {
        return Ok(());
    }
    Err(refuse(
        target,
        format!(
            "holds an import of {} log file(s), {missing} of which this import does not read (the same set name, other logs); replacing it would lose them",
            before.len()
        ),
        "check --out: give a new folder, add these logs to it with `ablate import … --into`, or delete it yourself if you mean to replace it",
    ))
}

/// Whether `marker` vouches for every one of `files` in `target` (listed, and its SHA-256
/// matching): `None` when the folder changed while being hashed (look again).
fn vouched(
    target: &Path,
    files: &[String],
    marker: &Marker,
    kind: FolderKind,
) -> Option<Result<()>> {
    let hashes = sha256_files(target, files, |f| marker.sha256.contains_key(f));
    for (file, hashed) in files
        .iter()
        .zip(hashes)
        .filter(|(f, _)| f.as_str() != MARKER)
    {
        if KEPT_FILES.contains(&file.as_str())
            && crate::io::watch_state::is_state_file(&target.join(file))
        {
            continue;
        }
        let listed = marker.files.binary_search(file).is_ok();
        // An empty folder is listed by name (with its trailing `/`) and has no content to hash.
        let Some(expected) = marker.sha256.get(file).filter(|_| listed) else {
            if listed && file.ends_with('/') {
                continue;
            }
            return Some(Err(refuse(
                &target.join(file),
                format!(
                    "was not written by ablate, and ablate would delete it by replacing {}",
                    target.display()
                ),
                folder_fix(kind),
            )));
        };
        match hashed.expect("every file with an expected hash was hashed") {
            Ok(actual) if &actual == expected => {}
            // Another ablate process swapped the folder between reading the marker and
            // hashing the file: look again.
            Ok(_) if read_marker(target) != MarkerRead::Valid(marker.clone()) => return None,
            Ok(_) => {
                return Some(Err(refuse(
                    &target.join(file),
                    format!(
                        "was changed since ablate wrote it (its SHA-256 differs from the one in {MARKER}), so it is yours now, and ablate would delete it by replacing {}",
                        target.display()
                    ),
                    format!(
                        "choose another {}, or copy your changes elsewhere and delete the folder yourself",
                        kind.flag()
                    ),
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

/// The SHA-256 ([`sha256_file`]) of each of `files` under `dir` that `wanted` picks (`None` for
/// the others), in the order of `files`. The files are read and hashed in parallel: a report
/// folder holds megabytes of charts, hashed when it is checked and when it is written.
pub(super) fn sha256_files(
    dir: &Path,
    files: &[String],
    wanted: impl Fn(&str) -> bool + Sync,
) -> Vec<Option<Result<String>>> {
    use rayon::prelude::*;
    files
        .par_iter()
        .map(|f| wanted(f).then(|| sha256_file(&dir.join(f))))
        .collect()
}

/// Opens `path` for reading without waiting: O_NONBLOCK, since opening a FIFO blocks until a
/// writer comes, and O_NOFOLLOW unless `follow_links` (a link is then refused, ELOOP). The
/// caller checks the opened file's type before reading it.
///
/// # Errors
/// The file cannot be opened.
pub(crate) fn open_without_waiting(
    path: &Path,
    follow_links: bool,
) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        let nofollow = if follow_links { 0 } else { libc::O_NOFOLLOW };
        options.custom_flags(libc::O_NONBLOCK | nofollow);
    }
    #[cfg(not(unix))]
    let _ = follow_links;
    options.open(path)
}

/// SHA-256 of a file's bytes, in hex, read in blocks.
///
/// # Errors
/// The file cannot be read, or is not a regular file.
pub fn sha256_file(path: &Path) -> Result<String> {
    use sha2::Digest as _;
    // Read only when it is a regular file: a FIFO, socket or device listed in a marker, or given
    // as a log, is refused.
    let mut file = open_without_waiting(path, true).map_err(|e| Error::io(path, e))?;
    if !file.metadata().map_err(|e| Error::io(path, e))?.is_file() {
        return Err(Error::Output {
            path: path.to_path_buf(),
            problem: "is not a plain file (a FIFO, socket, device or folder); it was not read"
                .into(),
            fix: "move it away".into(),
        });
    }
    let mut hasher = sha2::Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(|e| Error::io(path, e))?;
    Ok(hex(&hasher.finalize()))
}

pub use crate::text::hex;

/// What a folder's [`MARKER`] says, read without trusting it.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum MarkerRead {
    /// There is no marker.
    Absent,
    /// A marker ablate can vouch for: see [`read_marker`].
    Valid(Marker),
    /// A marker that cannot be trusted, and why.
    Invalid(String),
}

/// Longest marker ablate reads: a report's marker is a few kilobytes.
const MARKER_MAX: u64 = 16 << 20;

/// Reads a folder's marker. It is valid only when it is a regular file of JSON that names ablate
/// as its tool, with every listed path relative and inside the folder (no `..`, no absolute
/// path, no empty part) and a SHA-256 for every listed file (empty folders, listed with a
/// trailing `/`, have none). A link, a FIFO or a folder in its place is invalid, never opened.
pub(super) fn read_marker(dir: &Path) -> MarkerRead {
    let path = dir.join(MARKER);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return MarkerRead::Absent,
        Err(e) => return MarkerRead::Invalid(format!("it cannot be read: {e}")),
    };
    if !meta.is_file() {
        return MarkerRead::Invalid("it is not a plain file".into());
    }
    if meta.len() > MARKER_MAX {
        return MarkerRead::Invalid(format!("it is larger than {MARKER_MAX} bytes"));
    }
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return MarkerRead::Absent,
        Err(e) => return MarkerRead::Invalid(format!("it cannot be read as text: {e}")),
    };
    let mut marker: Marker = match serde_json::from_str(&text) {
        Ok(m) => m,
        Err(e) => return MarkerRead::Invalid(format!("it is not ablate's JSON: {e}")),
    };
    if marker.tool != "ablate" {
        return MarkerRead::Invalid(format!("its tool is {:?}, not ablate", marker.tool));
    }
    let sha256 = &marker.sha256;
    for f in marker.files.iter().chain(sha256.keys()) {
        if !is_relative_inside(f) {
            return MarkerRead::Invalid(format!(
                "it lists {f:?}, which is not a path inside the folder"
            ));
        }
    }
    if let Some(f) = marker
        .files
        .iter()
        .find(|f| !f.ends_with('/') && !sha256.contains_key(*f))
    {
        return MarkerRead::Invalid(format!("it lists {f:?} without its SHA-256"));
    }
    marker.files.sort();
    MarkerRead::Valid(marker)
}

/// Whether a marker's path stays inside its folder: relative, `/`-separated parts that are
/// neither empty, `.` nor `..` (a trailing `/` marks an empty folder), no NUL or backslash.
fn is_relative_inside(path: &str) -> bool {
    let body = path.strip_suffix('/').unwrap_or(path);
    !body.is_empty()
        && !body.contains(['\0', '\\'])
        && body
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
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
            let d = AtomicDir::create(&target, FolderKind::Report).unwrap();
            std::fs::write(d.path("a.txt"), "x").unwrap();
        }
        assert!(!target.exists());
        assert!(entries(root.path()).is_empty());
    }

    #[test]
    fn commit_replaces_an_earlier_output_of_ablate() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        let d = AtomicDir::create(&target, FolderKind::Report).unwrap();
        std::fs::write(d.path("stale.txt"), "old").unwrap();
        d.commit().unwrap();
        let d = AtomicDir::create(&target, FolderKind::Report).unwrap();
        std::fs::write(d.path("a.txt"), "new").unwrap();
        d.commit().unwrap();
        assert_eq!(entries(&target), vec![MARKER.to_string(), "a.txt".into()]);
        assert_eq!(entries(root.path()), vec!["out".to_string()]);
        let MarkerRead::Valid(marker) = read_marker(&target) else {
            panic!("no valid marker")
        };
        assert_eq!(marker.files, vec!["a.txt".to_string()]);
    }

    /// A check given with `replacing_only` is made at commit on the earlier output, which then
    /// stays: the output another writer committed after this one was started (two reports of
    /// different experiments to one folder at once) is not replaced without a word.
    #[test]
    fn commit_keeps_an_earlier_output_its_check_refuses() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        let mine = AtomicDir::create(&target, FolderKind::Report)
            .unwrap()
            .replacing_only(|earlier: &Path| {
                match std::fs::read_to_string(earlier.join("set.txt")).as_deref() {
                    Ok("other") => Err(Error::Usage(format!(
                        "{} holds another set's report",
                        earlier.display()
                    ))),
                    _ => Ok(()),
                }
            });
        std::fs::write(mine.path("set.txt"), "mine").unwrap();
        // Another writer commits first.
        let theirs = AtomicDir::create(&target, FolderKind::Report).unwrap();
        std::fs::write(theirs.path("set.txt"), "other").unwrap();
        theirs.commit().unwrap();
        let err = mine.commit().unwrap_err();
        // Named as the target, not the folder moved aside to be checked.
        assert_eq!(
            err.to_string(),
            format!("{} holds another set's report", target.display())
        );
        assert_eq!(
            std::fs::read_to_string(target.join("set.txt")).unwrap(),
            "other"
        );
        assert_eq!(entries(root.path()), vec!["out".to_string()]);
        // The same report passes, and is replaced.
        let again = AtomicDir::create(&target, FolderKind::Report)
            .unwrap()
            .replacing_only(|_: &Path| Ok(()));
        std::fs::write(again.path("set.txt"), "mine").unwrap();
        again.commit().unwrap();
        assert_eq!(
            std::fs::read_to_string(target.join("set.txt")).unwrap(),
            "mine"
        );
    }

    /// A file written through `write` is hashed as it is written; one rewritten through its
    /// path since, or written only through its path, is hashed at commit: the marker holds
    /// every file's SHA-256 as it is on disk.
    #[test]
    fn the_marker_holds_the_hash_of_every_file_as_written() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        let d = AtomicDir::create(&target, FolderKind::Report).unwrap();
        d.write("a.txt", b"first").unwrap();
        d.write("b.txt", b"kept").unwrap();
        std::fs::write(d.path("a.txt"), "rewritten through the path").unwrap();
        std::fs::write(d.path("c.txt"), "by path only").unwrap();
        d.commit().unwrap();
        let MarkerRead::Valid(marker) = read_marker(&target) else {
            panic!("no valid marker")
        };
        let hashes = marker.sha256;
        for f in ["a.txt", "b.txt", "c.txt"] {
            assert_eq!(hashes[f], sha256_file(&target.join(f)).unwrap(), "{f}");
        }
        // And the folder is ablate's, unchanged: it may be replaced.
        assert!(check_folder_target(&target, FolderKind::Report).is_ok());
    }

    #[test]
    fn a_folder_of_the_users_is_refused_and_survives() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("mine");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("thesis.tex"), "precious").unwrap();
        let err = AtomicDir::create(&target, FolderKind::Report).unwrap_err();
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
        let d = AtomicDir::create(&target, FolderKind::Report).unwrap();
        std::fs::create_dir(d.path("charts")).unwrap();
        std::fs::write(d.path("charts/a.svg"), "x").unwrap();
        d.commit().unwrap();
        std::fs::write(target.join("charts/my-notes.txt"), "mine").unwrap();
        let err = AtomicDir::create(&target, FolderKind::Report).unwrap_err();
        assert!(err.to_string().contains("my-notes.txt"), "{err}");
        assert!(target.join("charts/my-notes.txt").exists());
    }

    /// A folder is replaceable only when ablate can vouch for every file in it: an empty,
    /// unparseable, foreign or path-escaping marker makes it the user's (issue 42, item 1).
    #[test]
    fn an_unreadable_or_foreign_marker_never_makes_a_folder_replaceable() {
        let root = tempfile::tempdir().unwrap();
        let markers = [
            String::new(),
            "<<<<<<< HEAD\n{}\n=======\n>>>>>>> other\n".into(),
            r#"{"tool": "mytool", "version": "1", "command": [], "files": ["thesis.tex"], "sha256": {}}"#.into(),
            // A marker of an early ablate, with names and no hashes.
            r#"{"tool": "ablate", "version": "0.1.0", "command": [], "files": ["thesis.tex"]}"#.into(),
            // Paths that leave the folder.
            r#"{"tool": "ablate", "version": "0.1.0", "command": [], "files": ["../x"], "sha256": {"../x": "00"}}"#.into(),
        ];
        for (i, text) in markers.iter().enumerate() {
            let dir = root.path().join(format!("mine{i}"));
            std::fs::create_dir_all(dir.join("sub")).unwrap();
            std::fs::write(dir.join("thesis.tex"), "precious").unwrap();
            std::fs::write(dir.join(MARKER), text).unwrap();
            let err = check_folder_target(&dir, FolderKind::Report).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{text:?}");
            assert!(AtomicDir::create(&dir, FolderKind::Simulate).is_err());
            assert_eq!(
                std::fs::read_to_string(dir.join("thesis.tex")).unwrap(),
                "precious"
            );
            assert!(dir.join("sub").is_dir());
        }
        // A FIFO as the marker is refused without being opened (which would block).
        #[cfg(unix)]
        {
            let dir = root.path().join("fifo");
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("a.txt"), "x").unwrap();
            let fifo = std::ffi::CString::new(dir.join(MARKER).to_str().unwrap()).unwrap();
            // SAFETY: a valid C string; mkfifo only creates the node.
            assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
            assert!(check_folder_target(&dir, FolderKind::Report).is_err());
        }
    }

    /// Only regular paths inside the folder are read through a marker (issue 42, item 9).
    #[test]
    fn marker_paths_stay_inside_the_folder() {
        for good in ["a.txt", "charts/a.svg", "empty/"] {
            assert!(is_relative_inside(good), "{good}");
        }
        for bad in [
            "",
            "/",
            "/etc/passwd",
            "../x",
            "d/../../x",
            "a//b",
            "./a",
            "a\\b",
            "a\0b",
        ] {
            assert!(!is_relative_inside(bad), "{bad:?}");
        }
    }

    /// An experiment folder (manifest and results) is never replaced by a report or an export,
    /// even one ablate wrote; an experiment output may replace it (issue 42, item 3).
    #[test]
    fn an_experiment_is_never_replaced_by_a_report() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("exp2");
        let d = AtomicDir::create(&target, FolderKind::Simulate).unwrap();
        std::fs::write(d.path("experiment.toml"), "set = \"x\"").unwrap();
        std::fs::write(d.path("results.parquet"), "r").unwrap();
        d.commit().unwrap();
        let err = AtomicDir::create(&target, FolderKind::Report).unwrap_err();
        assert!(err.to_string().contains("experiment folder"), "{err}");
        AtomicDir::create(&target, FolderKind::Simulate)
            .unwrap()
            .commit()
            .unwrap();
    }

    /// A private folder stays private when ablate's output replaces it (issue 42, items 24-25).
    #[cfg(unix)]
    #[test]
    fn a_replaced_folder_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("priv");
        std::fs::create_dir(&target).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o700)).unwrap();
        let d = AtomicDir::create(&target, FolderKind::Report).unwrap();
        // Private while it is written, too (the temporary folder had the umask's 0755).
        let temp = d.path("a.txt").parent().unwrap().to_path_buf();
        let mode = std::fs::metadata(&temp).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "the temporary folder");
        std::fs::write(d.path("a.txt"), "x").unwrap();
        d.commit().unwrap();
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let u = FolderUpdate::start(&target).unwrap();
        let temp = u.path("b.txt").parent().unwrap().to_path_buf();
        let mode = std::fs::metadata(&temp).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "the update's temporary folder");
        std::fs::write(u.path("b.txt"), "y").unwrap();
        u.commit().unwrap();
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }

    #[test]
    fn empty_folder_file_and_link_targets() {
        let root = tempfile::tempdir().unwrap();
        let empty = root.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        AtomicDir::create(&empty, FolderKind::Report)
            .unwrap()
            .commit()
            .unwrap();
        assert_eq!(entries(&empty), vec![MARKER.to_string()]);

        let file = root.path().join("file");
        std::fs::write(&file, "data").unwrap();
        let err = AtomicDir::create(&file, FolderKind::Report).unwrap_err();
        assert!(err.to_string().contains("is a file"), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "data");

        #[cfg(unix)]
        {
            let link = root.path().join("link");
            std::os::unix::fs::symlink(&empty, &link).unwrap();
            let err = AtomicDir::create(&link, FolderKind::Report).unwrap_err();
            assert!(err.to_string().contains("symbolic link"), "{err}");
        }
    }

    #[test]
    fn a_long_name_is_bad_input() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("x".repeat(300));
        let err = AtomicDir::create(&target, FolderKind::Report).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        // A name at the limit works: temporary names are short whatever the target's.
        let target = root.path().join("y".repeat(255));
        AtomicDir::create(&target, FolderKind::Report)
            .unwrap()
            .commit()
            .unwrap();
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
                        let d = AtomicDir::create(&target, FolderKind::Report).unwrap();
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
        let d = AtomicDir::create(&target, FolderKind::Report).unwrap();
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
        let MarkerRead::Valid(m) = read_marker(&target) else {
            panic!("no valid marker")
        };
        assert_eq!(
            m.files,
            vec!["cases.parquet".to_string(), "results.parquet".to_string()]
        );
        // Nothing is left beside it, and replacing the folder now refuses the user's files.
        assert_eq!(entries(root.path()), vec!["exp".to_string()]);
        assert!(check_folder_target(&target, FolderKind::Report).is_err());
        // A link or a missing folder is refused.
        assert!(FolderUpdate::start(&root.path().join("missing")).is_err());
    }

    /// Each writer replaces only a folder of its own kind, as its marker records it (round six,
    /// item 1): `sweep --export reports/<set>` had replaced a report, `simulate --out R` too.
    #[test]
    fn a_writer_replaces_only_a_folder_of_its_own_kind() {
        let root = tempfile::tempdir().unwrap();
        let made = |name: &str, kind: FolderKind| {
            let target = root.path().join(name);
            let d = AtomicDir::create(&target, kind).unwrap();
            d.write("a.txt", b"x").unwrap();
            d.commit().unwrap();
            target
        };
        let report = made("report", FolderKind::Report);
        let MarkerRead::Valid(m) = read_marker(&report) else {
            panic!("no valid marker")
        };
        assert_eq!(m.writer.as_deref(), Some("report"));
        for kind in [FolderKind::Export, FolderKind::Simulate, FolderKind::Import] {
            let err = check_folder_target(&report, kind).unwrap_err();
            assert!(err.to_string().contains("is a report"), "{kind:?}: {err}");
            assert_eq!(err.exit_code(), 2);
        }
        check_folder_target(&report, FolderKind::Report).unwrap();
        let export = made("export", FolderKind::Export);
        let err = check_folder_target(&export, FolderKind::Report).unwrap_err();
        assert!(err.to_string().contains("is an export"), "{err}");
        check_folder_target(&export, FolderKind::Export).unwrap();
        let sim = made("sim", FolderKind::Simulate);
        check_folder_target(&sim, FolderKind::Import).unwrap();
        let err = check_folder_target(&sim, FolderKind::Export).unwrap_err();
        assert!(err.to_string().contains("simulated experiment"), "{err}");
        let imported = made("imported", FolderKind::Import);
        let err = check_folder_target(&imported, FolderKind::Simulate).unwrap_err();
        assert!(
            err.to_string().contains("imported from harness logs"),
            "{err}"
        );
    }

    /// A marker written before `writer` existed: the verb of its command line, and for `report`
    /// (which writes a report and, with --export, an export from one command line) its files.
    #[test]
    fn a_marker_without_a_writer_is_read_from_its_command_and_files() {
        let marker = |command: &[&str], files: &[&str]| Marker {
            tool: "ablate".into(),
            version: "0.1.0".into(),
            command: command.iter().map(|s| (*s).to_string()).collect(),
            writer: None,
            files: files.iter().map(|s| (*s).to_string()).collect(),
            sha256: std::collections::BTreeMap::new(),
        };
        let report = [
            "ablate", "--quiet", "report", "exp", "--out", "r", "--export", "x",
        ];
        let cases = [
            (
                marker(&report, &["index.html", "report.md"]),
                Some(FolderKind::Report),
            ),
            (
                marker(&report, &["drops.parquet"]),
                Some(FolderKind::Export),
            ),
            (
                marker(
                    &["ablate", "sweep", "simulate", "--export", "x"],
                    &["arms.parquet"],
                ),
                Some(FolderKind::Export),
            ),
            (
                marker(&["ablate", "simulate", "--out", "e"], &["experiment.toml"]),
                Some(FolderKind::Simulate),
            ),
            (
                marker(
                    &["ablate", "import", "inspect", "l", "--out", "e"],
                    &["experiment.toml"],
                ),
                Some(FolderKind::Import),
            ),
            (
                marker(
                    &["ablate", "import", "inspect", "l", "--into", "e"],
                    &["results.parquet"],
                ),
                Some(FolderKind::Grown),
            ),
            (marker(&["ablate"], &["experiment.toml"]), None),
            (marker(&[], &["a.txt"]), None),
        ];
        for (m, kind) in cases {
            assert_eq!(writer_recorded(&m), kind, "{:?} {:?}", m.command, m.files);
        }
        let mut later = marker(&report, &["index.html"]);
        later.writer = Some("notebook".into());
        assert_eq!(writer_recorded(&later), None);
        // A marker without the field still parses, and one with it round-trips.
        let text = r#"{"tool": "ablate", "version": "0.1.0", "command": ["ablate", "report", "e"], "files": [], "sha256": {}}"#;
        let m: Marker = serde_json::from_str(text).unwrap();
        assert_eq!(m.writer, None);
        assert!(!serde_json::to_string(&m).unwrap().contains("writer"));
    }

    /// A read-only folder is refused before anything moves (it had been replaced, then left as
    /// `.ablate-old-*` with exit 1 when its removal failed); a temporary folder that took a
    /// read-only mode is still removed (round six, item 4).
    #[cfg(unix)]
    #[test]
    fn read_only_folders_are_refused_and_temporary_ones_never_left() {
        use std::os::unix::fs::PermissionsExt;
        // The modes bind as root too (checked from the mode bits).
        let mode = |p: &Path, m: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
        };
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        let d = AtomicDir::create(&target, FolderKind::Report).unwrap();
        std::fs::create_dir(d.path("charts")).unwrap();
        d.write("charts/a.svg", b"x").unwrap();
        d.commit().unwrap();
        mode(&target.join("charts"), 0o555);
        let err = check_folder_target(&target, FolderKind::Report).unwrap_err();
        assert!(
            err.to_string().contains("read-only") && err.to_string().contains("charts"),
            "{err}"
        );
        mode(&target.join("charts"), 0o755);
        mode(&target, 0o555);
        assert!(AtomicDir::create(&target, FolderKind::Report).is_err());
        assert!(FolderUpdate::start(&target).is_err());
        mode(&target, 0o755);
        // A temporary folder with a read-only mode (as the commit gives it) is removed on drop.
        let d = AtomicDir::create(&target, FolderKind::Report).unwrap();
        d.write("x", b"y").unwrap();
        let temp = d.path("x").parent().unwrap().to_path_buf();
        mode(&temp, 0o555);
        drop(d);
        assert_eq!(entries(root.path()), vec!["out".to_string()]);
    }
}
