//! Every destination of a command against its inputs and each other, before the first write.

use std::path::{Component, Path, PathBuf};

use super::{FolderKind, check_file_target, check_folder_target, refuse};
use crate::error::Result;

/// A path made absolute and free of links, `.` and `..`, also when its end does not exist yet.
///
/// The path is walked one part at a time from the current folder (or the root): an existing
/// part is resolved by the file system (a link is followed), `..` goes up from the resolved
/// folder, and a part that does not exist is joined as it is (a name that does not exist cannot
/// be a link; it will be created as a folder). So `missing/../link/exp` resolves through `link`,
/// as the write that creates `missing` and then climbs out of it will.
pub fn resolved(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let mut at = PathBuf::new();
    // Whether `at` exists as resolved so far: below a missing part nothing is looked up.
    let mut exists = true;
    for part in absolute.components() {
        match part {
            Component::Prefix(_) | Component::RootDir => at.push(part.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                at.pop();
                // Climbing out of a missing part may land on an existing folder again.
                match at.canonicalize() {
                    Ok(c) => (at, exists) = (c, true),
                    Err(_) => exists = false,
                }
            }
            Component::Normal(name) => {
                at.push(name);
                if exists {
                    match at.canonicalize() {
                        Ok(c) => at = c,
                        Err(_) => exists = false,
                    }
                }
            }
        }
    }
    at
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
    /// A folder written by [`AtomicDir`](super::AtomicDir): a report or export, or an
    /// experiment.
    Folder(FolderKind),
    /// One file written by [`write_file`](super::write_file), with its `--force`.
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
/// [`Error::Output`](crate::error::Error::Output) (exit 2) naming the two paths and what to do.
pub fn preflight(inputs: &[Input], destinations: &[Destination]) -> Result<()> {
    let cwd = std::env::current_dir().map(|d| resolved(&d)).ok();
    let resolved_inputs: Vec<(&Input, PathBuf)> =
        inputs.iter().map(|i| (i, resolved(&i.path))).collect();
    let resolved_dests: Vec<(&Destination, PathBuf)> = destinations
        .iter()
        .map(|d| (d, resolved(&d.path)))
        .collect();
    for (i, (dest, at)) in resolved_dests.iter().enumerate() {
        if let DestinationKind::Folder(_) = dest.kind {
            if at.parent().is_none() {
                return Err(refuse(
                    &dest.path,
                    format!("{} is the root of the file system", dest.flag),
                    format!("give a folder of its own, e.g. {} reports/mine", dest.flag),
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
                    format!("give a new folder's name, e.g. {} report-v2", dest.flag),
                ));
            }
        }
        for (input, from) in &resolved_inputs {
            let clash = match dest.kind {
                DestinationKind::Folder(_) => {
                    if from == at || same_file(&input.path, &dest.path) {
                        Some("is")
                    } else if from.starts_with(at) {
                        Some("contains")
                    } else if at.starts_with(from) {
                        Some("sits inside")
                    } else {
                        None
                    }
                }
                DestinationKind::File { .. } => {
                    (from == at || same_file(&input.path, &dest.path)).then_some("is")
                }
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
                    format!(
                        "write to a folder outside every input, e.g. {} {}",
                        dest.flag,
                        if dest.flag == "--export" {
                            "exports/<verb>"
                        } else {
                            "reports/<name>"
                        }
                    ),
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
            DestinationKind::Folder(kind) => check_folder_target(&dest.path, kind)?,
            DestinationKind::File { force } => check_file_target(&dest.path, force)?,
        }
    }
    Ok(())
}

/// Whether two paths that both exist are one file or folder (the same device and inode),
/// however they are spelled: a last check behind [`resolved`], which compares names.
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => (x.dev(), x.ino()) == (y.dev(), y.ino()),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        false
    }
}
