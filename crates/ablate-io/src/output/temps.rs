//! The temporary paths of this process: the hidden folders and files outputs are built in
//! (`.ablate-tmp-*`, `.ablate-watch-*.tmp`) and a replaced folder on its way out
//! (`.ablate-old-*`). They serve two things:
//!
//! - an interruption (SIGINT from Ctrl-C, SIGTERM, SIGHUP) removes them before the process ends
//!   by the same signal, as the shell expects (it reports 130, 143, 129): only SIGKILL, or a
//!   crash, leaves them ([`install_interrupt_handler`]); a waiting writer's marker beside a
//!   folder (`folder::WaitingWriter`) is withdrawn then too;
//! - an error that names a path inside one names the user's path instead ([`in_user_terms`]):
//!   `out/results.parquet`, never `./.ablate-tmp-123-0/results.parquet`.
//!
//! A path is registered when it is made and forgotten when it is renamed into place or removed.
//! Every rename that puts an output in place or moves an earlier one aside happens while the
//! registry is held ([`hold`]), together with the registry's update; the handler takes the
//! registry and never gives it back (it ends the process). So an interruption never lands between
//! moving an earlier output aside and putting the new one in its place (it waits for the swap),
//! and nothing is moved after it has cleaned up. Never hold the registry inside a rayon job: the
//! commit hashes the replaced folder in parallel while holding it.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::error::Error;

/// Paths to remove if the process is interrupted.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Every temporary path this process made, with the user's path it stands for. Kept after the
/// temporary path is gone: an error is printed after the output that failed was dropped.
static NAMES: Mutex<Vec<(PathBuf, PathBuf)>> = Mutex::new(Vec::new());

/// The registry, held (see the module's documentation).
pub(crate) struct Live(MutexGuard<'static, Vec<PathBuf>>);

impl Live {
    /// `path` is now this process's to remove if it is interrupted.
    pub(crate) fn add(&mut self, path: &Path) {
        self.0.push(path.to_path_buf());
    }

    /// `path` is no longer (renamed into place, removed, or kept on purpose).
    pub(crate) fn forget(&mut self, path: &Path) {
        self.0.retain(|p| p != path);
    }
}

/// Takes the registry, waiting while a commit or the interruption handler holds it.
pub(crate) fn hold() -> Live {
    Live(LIVE.lock().unwrap_or_else(PoisonError::into_inner))
}

/// Registers `temp`, a temporary path standing for `target`: removed if the process is
/// interrupted, and named as `target` in errors.
pub(crate) fn register(temp: &Path, target: &Path) {
    hold().add(temp);
    name(temp, target);
}

/// Names `temp` as `target` in errors ([`in_user_terms`]).
pub(crate) fn name(temp: &Path, target: &Path) {
    NAMES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((temp.to_path_buf(), target.to_path_buf()));
}

/// Forgets `path` ([`Live::forget`]).
pub(crate) fn unregister(path: &Path) {
    hold().forget(path);
}

/// `err` in the user's terms: a path inside one of this process's temporary folders or files,
/// in the error's path or in its text (Polars says "writing ./.ablate-tmp-123-0/results.parquet"),
/// is named by the output it stands for. Call it where the error is printed.
pub fn in_user_terms(err: Error) -> Error {
    let names = NAMES.lock().unwrap_or_else(PoisonError::into_inner).clone();
    names
        .iter()
        .rev()
        .fold(err, |e, (temp, target)| relocated(e, temp, target))
}

/// `err` with every path under `from` named under `to` instead, in its path and in its text.
pub(crate) fn relocated(err: Error, from: &Path, to: &Path) -> Error {
    let path = |p: PathBuf| match p.strip_prefix(from) {
        Ok(rest) if rest.as_os_str().is_empty() => to.to_path_buf(),
        Ok(rest) => to.join(rest),
        Err(_) => p,
    };
    let (f, t) = (from.display().to_string(), to.display().to_string());
    let text = |s: String| replace_path(s, &f, &t);
    match err {
        Error::Io { path: p, source } => Error::Io {
            path: path(p),
            source,
        },
        Error::NotFound { path: p, fix } => Error::NotFound {
            path: path(p),
            fix: text(fix),
        },
        Error::Unreadable {
            path: p,
            problem,
            fix,
        } => Error::Unreadable {
            path: path(p),
            problem: text(problem),
            fix: text(fix),
        },
        Error::Output {
            path: p,
            problem,
            fix,
        } => Error::Output {
            path: path(p),
            problem: text(problem),
            fix: text(fix),
        },
        Error::Polars { context, source } => {
            // Polars' own message may name the file too.
            let said = source.to_string();
            Error::Polars {
                context: text(context),
                source: if said.contains(f.as_str()) {
                    Box::new(std::io::Error::other(text(said)))
                } else {
                    source
                },
            }
        }
        Error::Usage(s) => Error::Usage(text(s)),
        e => e,
    }
}

/// `text` with the path `from` replaced by `to` wherever it stands as a whole path or a path's
/// start: not where a digit follows (`.ablate-tmp-1-1` does not start `.ablate-tmp-1-10`).
fn replace_path(text: String, from: &str, to: &str) -> String {
    if from.is_empty() || !text.contains(from) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find(from) {
        let after = &rest[at + from.len()..];
        out.push_str(&rest[..at]);
        out.push_str(if after.starts_with(|c: char| c.is_ascii_digit()) {
            from
        } else {
            to
        });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Gives the owner full access to the folder `dir` itself (not to what is inside: ablate made
/// that with the umask's mode), so that a temporary folder that took a read-only folder's
/// permissions at a commit can be removed. Nothing for a file, a link or a missing path.
pub(crate) fn owner_writable(dir: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if let Ok(meta) = std::fs::symlink_metadata(dir)
            && meta.is_dir()
        {
            let mode = meta.permissions().mode() | 0o700;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode));
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// Removes `path` (a folder with what is in it, or a file), a few times over: a thread of the
/// interrupted run may put a file in a folder while it is being removed.
fn remove(path: &Path) -> std::io::Result<()> {
    let mut last = Ok(());
    for _ in 0..3 {
        last = match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => {
                owner_writable(path);
                std::fs::remove_dir_all(path)
            }
            Ok(_) => std::fs::remove_file(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => Err(e),
        };
        if last.is_ok() {
            return Ok(());
        }
    }
    last
}

/// Set while an interruption is handled: a second one ends the process at once, as SIGKILL would.
#[cfg(unix)]
static AGAIN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Installs the handler of SIGINT, SIGTERM and SIGHUP (each unless the process started with it
/// ignored: `nohup` ignores SIGHUP, a shell's background job SIGINT). A thread waits for one,
/// takes the registry for good, removes every registered path (and withdraws the markers of
/// writers waiting for a folder, `folder::WaitingWriter`), says so on stderr and ends the
/// process by the same signal (the shell reports 128 + its number: 130, 143, 129), so that a
/// shell loop around ablate stops too. A second signal meanwhile ends the process at once. Call
/// it once, first thing in `main`; without it (the library's own tests) signals keep their
/// default action.
pub fn install_interrupt_handler() {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let wanted: Vec<i32> = [SIGINT, SIGTERM, SIGHUP]
            .into_iter()
            .filter(|&s| !ignored(s))
            .collect();
        for &signal in &wanted {
            let _ = signal_hook::flag::register_conditional_default(signal, &AGAIN);
        }
        let Ok(mut signals) = signal_hook::iterator::Signals::new(&wanted) else {
            return;
        };
        let _ = std::thread::Builder::new()
            .name("ablate-signals".into())
            .spawn(move || {
                let Some(signal) = signals.forever().next() else {
                    return;
                };
                // Held until the process ends: no commit moves anything after this. Taken before a
                // second signal may end the process at once, so that a swap under way (the old
                // output moved aside, the new one not yet in place) always finishes first.
                let live = hold();
                AGAIN.store(true, std::sync::atomic::Ordering::SeqCst);
                // A waiting writer's marker (`folder::WaitingWriter`) is no output: withdrawn as
                // its writer would have, never reported.
                super::folder::withdraw_waiting_writers();
                let unfinished = live
                    .0
                    .iter()
                    .any(|p| !p.to_string_lossy().contains(".ablate-old-"));
                let left: Vec<String> = live
                    .0
                    .iter()
                    .rev()
                    .filter(|p| remove(p).is_err())
                    .map(|p| p.display().to_string())
                    .collect();
                let name = signal_hook::low_level::signal_name(signal).unwrap_or("a signal");
                if live.0.is_empty() {
                    eprintln!("\nablate: interrupted ({name})");
                } else if left.is_empty() && !unfinished {
                    eprintln!(
                        "\nablate: interrupted ({name}); the new output was already in place, whole, and the one it replaced was removed"
                    );
                } else if left.is_empty() {
                    eprintln!(
                        "\nablate: interrupted ({name}); the output it was writing was removed unfinished: what was there before is as it was (or the new output is, whole, if it was already in place)"
                    );
                } else {
                    eprintln!(
                        "\nablate: interrupted ({name}); its unfinished output could not all be removed: delete {} yourself",
                        left.join(", ")
                    );
                }
                // Ends the process by the signal itself (signal-hook aborts if it cannot); exit
                // with the shell's code for a signal it does not know.
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                std::process::exit(128 + signal);
            });
    }
}

/// Whether `signal` is ignored in this process (inherited from the parent: `nohup`, a shell's
/// background job).
#[cfg(unix)]
fn ignored(signal: i32) -> bool {
    // SAFETY: a query (no new action) into a zeroed sigaction owned here.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_users_path_not_the_temporary_one() {
        let (temp, out) = (Path::new("./.ablate-tmp-7-1"), Path::new("out"));
        let e = relocated(
            Error::io(
                temp.join("charts/a.svg"),
                std::io::Error::other("File too large"),
            ),
            temp,
            out,
        );
        assert_eq!(e.to_string(), "out/charts/a.svg: File too large");
        let e = relocated(
            Error::Polars {
                context: "writing ./.ablate-tmp-7-1/results.parquet".into(),
                source: "parquet: File too large".into(),
            },
            temp,
            out,
        );
        assert!(
            e.to_string().starts_with("writing out/results.parquet:"),
            "{e}"
        );
        // The temporary folder itself is the output; another temporary name is left alone.
        let e = relocated(
            Error::io(temp, std::io::Error::other("Permission denied")),
            temp,
            out,
        );
        assert_eq!(e.to_string(), "out: Permission denied");
        assert_eq!(
            replace_path(
                "./.ablate-tmp-7-10/x and ./.ablate-tmp-7-1".into(),
                "./.ablate-tmp-7-1",
                "out"
            ),
            "./.ablate-tmp-7-10/x and out"
        );
        // A single file's temporary name, with its extension.
        let file = Path::new("nodir/.ablate-tmp-7-2.parquet");
        let e = relocated(
            Error::io(file, std::io::Error::other("No such file or directory")),
            file,
            Path::new("nodir/batch.parquet"),
        );
        assert!(e.to_string().starts_with("nodir/batch.parquet:"), "{e}");
    }
}
