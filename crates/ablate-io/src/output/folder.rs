//! Folders written whole: [`AtomicDir`] (a new output, renamed into place) and [`FolderUpdate`]
//! (an experiment grown in place by `import --into`).

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use super::{
    COMMIT_ATTEMPTS, FolderKind, KEPT_FILES, MARKER, Marker, MarkerRead, SEQUENCE,
    check_folder_target, command_line, list_files, parent_of, read_marker, refuse, resolved,
    sha256_file, sha256_files, temps,
};
use crate::error::{Error, Result};

/// A unique, short hidden name beside `target` (`.ablate-<kind>-<pid>-<n>`), so temporary names
/// never exceed the file-name limit and never collide between processes or threads.
pub(super) fn sibling(parent: &Path, kind: &str) -> PathBuf {
    let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    parent.join(format!(".ablate-{kind}-{}-{n}", std::process::id()))
}

/// A folder being written: everything goes into a hidden temporary sibling of `target`, and
/// [`AtomicDir::commit`] writes the marker and renames it into place, replacing an earlier output
/// of ablate's (never anything else). Dropped without commit, the temporary folder is removed.
#[derive(Debug)]
pub struct AtomicDir {
    target: PathBuf,
    /// Its writer, recorded in the marker: which folders it may replace.
    kind: FolderKind,
    temp: PathBuf,
    committed: bool,
    /// Each file written by [`AtomicDir::write`], by name, for the marker: those are not read
    /// back to be hashed at commit.
    written: std::sync::Mutex<std::collections::BTreeMap<String, Noted>>,
    /// What else an earlier output must pass to be replaced ([`AtomicDir::replacing_only`]),
    /// checked again at commit on the folder moved aside: a concurrent writer may have put its
    /// own output there since the caller looked.
    replaceable: Option<Replaceable>,
}

/// A check an earlier output must pass before [`AtomicDir::commit`] replaces it (say, that a
/// report folder holds the report of the same experiment); its error refuses the replacement.
struct Replaceable(Box<ReplaceableCheck>);

/// The check of [`Replaceable`]: given the earlier output's path, its error refuses it.
type ReplaceableCheck = dyn Fn(&Path) -> Result<()> + Send + Sync;

impl std::fmt::Debug for Replaceable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Replaceable(..)")
    }
}

/// A file [`AtomicDir::write`] wrote: its SHA-256, and its length and modification time then
/// (which show whether it was rewritten through [`AtomicDir::path`] since).
#[derive(Debug)]
struct Noted {
    sha256: String,
    stamp: Option<(u64, std::time::SystemTime)>,
}

impl Noted {
    /// A regular file's length and modification time (`None` for anything else).
    fn stamp(path: &Path) -> Option<(u64, std::time::SystemTime)> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        (meta.is_file()).then_some((meta.len(), meta.modified().ok()?))
    }
}

impl AtomicDir {
    /// Starts writing `target`, a folder of `kind`, after checking that it may be replaced
    /// ([`check_folder_target`]).
    ///
    /// # Errors
    /// The target may not be replaced, the parent folder cannot be created, or the temporary folder
    /// cannot be made.
    pub fn create(target: &Path, kind: FolderKind) -> Result<AtomicDir> {
        debug_assert_ne!(kind, FolderKind::Grown, "FolderUpdate grows an experiment");
        let target = &super::settled(target);
        check_folder_target(target, kind)?;
        let parent = parent_of(target);
        std::fs::create_dir_all(&parent).map_err(|e| Error::io(&parent, e))?;
        AtomicDir::beside(target, kind)
    }

    /// Replaces an earlier output only when `check` passes on it, besides being ablate's own of
    /// this kind: checked at commit on the folder moved aside, where no other writer can change
    /// it, so that two processes committing at once cannot slip past a check each made before it
    /// wrote (the caller checks too before its work, to fail early). `check` is given the
    /// earlier folder's path; its error is reported as of the target.
    #[must_use]
    pub fn replacing_only(
        mut self,
        check: impl Fn(&Path) -> Result<()> + Send + Sync + 'static,
    ) -> AtomicDir {
        self.replaceable = Some(Replaceable(Box::new(check)));
        self
    }

    /// A new, empty temporary folder beside `target` (whose parent exists), made with the
    /// process's umask like any new folder.
    fn beside(target: &Path, kind: FolderKind) -> Result<AtomicDir> {
        let parent = parent_of(target);
        loop {
            let temp = sibling(&parent, "tmp");
            // Made and registered at once: an interruption removes it.
            let mut live = temps::hold();
            match std::fs::create_dir(&temp) {
                Ok(()) => {
                    live.add(&temp);
                    drop(live);
                    temps::name(&temp, target);
                    if let Err(e) = restrict_like(target, &temp) {
                        let _ = std::fs::remove_dir(&temp);
                        temps::unregister(&temp);
                        return Err(e);
                    }
                    return Ok(AtomicDir {
                        target: target.to_path_buf(),
                        kind,
                        temp,
                        committed: false,
                        written: std::sync::Mutex::default(),
                        replaceable: None,
                    });
                }
                // A stale folder of a dead process with the same pid: never touch it, take the next.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                // Named as the folder asked for: the hidden name means nothing to the user.
                Err(e) => return Err(Error::io(target, e)),
            }
        }
    }

    /// Path of a file inside the folder being written.
    pub fn path(&self, name: &str) -> PathBuf {
        self.temp.join(name)
    }

    /// Writes `bytes` as the file `name` inside the folder (`/` separates subfolders, which must
    /// exist), and notes its SHA-256 for the marker, so that [`AtomicDir::commit`] need not read
    /// it back. Safe to call from several threads at once.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<()> {
        use sha2::Digest as _;
        let path = self.path(name);
        std::fs::write(&path, bytes).map_err(|e| Error::io(&path, e))?;
        let noted = Noted {
            sha256: super::hex(&sha2::Sha256::digest(bytes)),
            stamp: Noted::stamp(&path),
        };
        self.written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(name.to_string(), noted);
        Ok(())
    }

    /// Writes the marker into the temporary folder: every file's SHA-256, noted by
    /// [`AtomicDir::write`] or hashed now (see [`AtomicDir::commit`]).
    fn write_marker(&mut self) -> Result<()> {
        let files = list_files(&self.temp)?;
        let written = std::mem::take(
            self.written
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        // The files `write` wrote that are still as it left them (each looked at once).
        let noted: std::collections::BTreeMap<&str, &str> = written
            .iter()
            .filter(|(f, n)| n.stamp.is_some() && n.stamp == Noted::stamp(&self.temp.join(f)))
            .map(|(f, n)| (f.as_str(), n.sha256.as_str()))
            .collect();
        let mut sha256 = std::collections::BTreeMap::new();
        for (f, hash) in files.iter().zip(sha256_files(&self.temp, &files, |f| {
            !f.ends_with('/') && !noted.contains_key(f)
        })) {
            if let Some(hash) = hash {
                sha256.insert(f.clone(), hash?);
            } else if let Some(hash) = noted.get(f.as_str()) {
                sha256.insert(f.clone(), (*hash).to_string());
            }
        }
        let marker = Marker {
            tool: "ablate".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            command: command_line(),
            writer: Some(self.kind.name().into()),
            files,
            sha256,
        };
        let marker_path = self.temp.join(MARKER);
        let text = serde_json::to_string_pretty(&marker)
            .map_err(|e| Error::Invariant(format!("marker serialisation: {e}")))?;
        std::fs::write(&marker_path, text + "\n").map_err(|e| Error::io(&marker_path, e))?;
        Ok(())
    }

    /// Writes the marker, then moves the finished folder into place, replacing an earlier output
    /// of ablate's. Retries when a concurrent writer commits to the same target at the same time.
    ///
    /// The marker holds every file's SHA-256: noted by [`AtomicDir::write`], or read and hashed
    /// now for a file written through [`AtomicDir::path`] (or rewritten there since: its length
    /// or modification time differs from what was noted).
    ///
    /// # Errors
    /// The target has become something ablate may not replace, or a rename fails.
    pub fn commit(mut self) -> Result<PathBuf> {
        self.write_marker()?;
        let parent = parent_of(&self.target);
        // An experiment folder a reader may be loading: the swap waits until it has read every
        // table ([`FolderLock::shared`]). A lock that cannot be taken delays nothing.
        let _readers_done = (self.kind.is_experiment() && self.target.is_dir())
            .then(|| FolderLock::exclusive(&self.target).ok())
            .flatten();
        for attempt in 0..COMMIT_ATTEMPTS {
            if attempt > 0 {
                std::thread::sleep(std::time::Duration::from_millis(u64::from(attempt.min(20))));
            }
            // The swap happens with the registry held: an interruption waits for it, and finds
            // the earlier output or the new one in place ([`temps`]).
            let mut live = temps::hold();
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
                let refused = check_folder_target(&old, self.kind)
                    .and_then(|()| {
                        if self.kind == FolderKind::Import {
                            super::same_imported_set(&old, &self.temp, &self.target)
                        } else {
                            Ok(())
                        }
                    })
                    .and_then(|()| match &self.replaceable {
                        Some(Replaceable(check)) => check(&old),
                        None => Ok(()),
                    });
                if let Err(refused) = refused {
                    let _ = std::fs::rename(&old, &self.target);
                    // Named where it is again: `R/tables/mine.txt`, not `./.ablate-old-1-2`.
                    return Err(temps::relocated(refused, &old, &self.target));
                }
                // The replacement keeps the folder's permissions (a private folder stays
                // private), and the state ablate keeps beside its output.
                if let Err(e) =
                    keep_mode(&old, &self.temp).and_then(|()| carry_kept_files(&old, &self.temp))
                {
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
                    live.forget(&self.temp);
                    self.committed = true;
                    if let Some(old) = &old {
                        live.add(old);
                    }
                    drop(live);
                    if let Some(old) = old {
                        remove_replaced(&old, &self.target);
                    }
                    return Ok(self.target.clone());
                }
                // Another writer's output landed in between: ours replaces it on the next try.
                Err(e) if is_taken(&e) => {
                    if let Some(old) = &old {
                        live.add(old);
                    }
                    drop(live);
                    if let Some(old) = old {
                        remove_replaced(&old, &self.target);
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
    /// The target is missing, a link or a file, read-only, or the folder the process runs in;
    /// the temporary folder cannot be made.
    pub fn start(target: &Path) -> Result<FolderUpdate> {
        let target = &super::settled(target);
        let meta = std::fs::symlink_metadata(target).map_err(|e| Error::io(target, e))?;
        // The update moves every entry out of the folder into the new one: the folder and its
        // subfolders (each moved whole) must be this user's to change.
        if meta.is_dir()
            && let Some(folder) = super::undeletable_folder(target, false)
        {
            return Err(refuse(
                &folder,
                format!(
                    "is read-only (this user may not move what is in it), and `import --into` rebuilds {} around the tables it adds",
                    target.display()
                ),
                format!(
                    "make it writable (chmod -R u+w {}), or import into a copy of it",
                    target.display()
                ),
            ));
        }
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
            dir: AtomicDir::beside(target, FolderKind::Grown)?,
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
        for (f, hash) in ours
            .iter()
            .zip(sha256_files(&temp, &ours, |f| !f.ends_with('/')))
        {
            if let Some(hash) = hash {
                sha256.insert(f.clone(), hash?);
            }
        }
        // Files of the old marker that will be carried unchanged stay ablate's. The marker's
        // paths were checked to lie inside the folder, and only regular files are read (a
        // path through a link, or a device, is not ablate's).
        if let MarkerRead::Valid(m) = read_marker(&target) {
            for (f, h) in &m.sha256 {
                let top = f.split('/').next().unwrap_or_default();
                if sha256.contains_key(f) || temp.join(top).exists() {
                    continue;
                }
                if is_plain_file_inside(&target, f)
                    && sha256_file(&target.join(f)).is_ok_and(|now| &now == h)
                {
                    sha256.insert(f.clone(), h.clone());
                }
            }
        }
        let marker = Marker {
            tool: "ablate".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            command: command_line(),
            writer: Some(FolderKind::Grown.name().into()),
            files: sha256.keys().cloned().collect(),
            sha256,
        };
        let marker_path = temp.join(MARKER);
        let text = serde_json::to_string_pretty(&marker)
            .map_err(|e| Error::Invariant(format!("marker serialisation: {e}")))?;
        std::fs::write(&marker_path, text + "\n").map_err(|e| Error::io(&marker_path, e))?;

        keep_mode(&target, &temp)?;
        let old = sibling(&parent_of(&target), "old");
        // The swap happens with the registry held: an interruption waits for it ([`temps`]).
        let mut live = temps::hold();
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
                live.forget(&temp);
                self.dir.committed = true;
                live.add(&old);
                drop(live);
                remove_replaced(&old, &target);
                Ok(target)
            }
            Err((at, e)) => {
                let mut restored = carried
                    .iter()
                    .all(|name| std::fs::rename(temp.join(name), old.join(name)).is_ok());
                restored &= std::fs::rename(&old, &target).is_ok();
                if !restored {
                    // Keep every byte: the temporary folder is not removed, not even if
                    // interrupted.
                    self.dir.committed = true;
                    live.forget(&temp);
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
                drop(live);
                // Put back: an entry is where it was in the folder, not in `.ablate-old-*`.
                Err(temps::relocated(Error::io(&at, e), &old, &target))
            }
        }
    }
}

/// Removes `old`, the folder an output replaced (vouched for, and at a name of this process's).
/// The new output is in place whatever happens here: a failure is a warning on stderr, with where
/// the folder is and what to do, never an error (the run did what it was asked).
fn remove_replaced(old: &Path, target: &Path) {
    if let Err(e) = std::fs::remove_dir_all(old) {
        eprintln!(
            "ablate: warning: {} is written, but the folder it replaced could not be deleted ({e}); it is now {}: delete that folder yourself (make it writable first if it is read-only: chmod -R u+w {})",
            target.display(),
            old.display(),
            old.display()
        );
    }
    temps::unregister(old);
}

/// Gives `new` the permissions of `old`, the folder it replaces: a private (0700) folder stays
/// private when ablate's output takes its place.
fn keep_mode(old: &Path, new: &Path) -> Result<()> {
    let perms = std::fs::symlink_metadata(old)
        .map_err(|e| Error::io(old, e))?
        .permissions();
    std::fs::set_permissions(new, perms).map_err(|e| Error::io(new, e))
}

/// While a folder is written beside `target`, others get no more access to it than to `target`
/// (a private 0700 folder's report sat in a 0755 temporary folder, readable by anyone who can
/// enter the parent, until the commit); its owner keeps full access, for the writes. With no
/// folder at `target`, the temporary folder keeps the umask's mode. The commit then gives it
/// `target`'s exact permissions ([`keep_mode`]).
fn restrict_like(target: &Path, temp: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let Ok(old) = std::fs::symlink_metadata(target) else {
            return Ok(());
        };
        if !old.is_dir() {
            return Ok(());
        }
        let now = std::fs::metadata(temp).map_err(|e| Error::io(temp, e))?;
        let mode = (now.permissions().mode() & old.permissions().mode() & 0o777) | 0o700;
        std::fs::set_permissions(temp, std::fs::Permissions::from_mode(mode))
            .map_err(|e| Error::io(temp, e))?;
    }
    #[cfg(not(unix))]
    let _ = (target, temp);
    Ok(())
}

/// Whether `relative` (a marker's path, already checked to have no `..`) names a regular file
/// under `dir` reached through folders only (no link on the way).
fn is_plain_file_inside(dir: &Path, relative: &str) -> bool {
    let mut at = dir.to_path_buf();
    let parts: Vec<&str> = relative.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        let Ok(meta) = std::fs::symlink_metadata(&at) else {
            return false;
        };
        let last = i + 1 == parts.len();
        if (last && !meta.is_file()) || (!last && !meta.is_dir()) {
            return false;
        }
    }
    true
}

/// A lock on a folder, held until dropped (`flock` on the folder itself, on Unix; nothing
/// elsewhere). Every writer that changes an experiment folder in place (`import --into`,
/// `watch`'s decisions) takes it exclusively for its whole read–write–commit, and so do
/// `import --out` and `simulate --out` for the moment they swap a folder they replace. Readers
/// take it shared while they read an experiment ([`FolderLock::shared`]): they wait for an
/// update to finish, then read one generation of it (a `sweep` during `import --into` had read
/// the new cases.parquet beside the old results.parquet, and said its input was corrupt). An
/// update that has to wait for readers goes before the readers that come after it (it leaves
/// a marker beside the folder while it waits), so overlapping reads cannot keep it out. A wait is
/// said on stderr. An update replaces the folder by a rename, so a process that waited may hold
/// the lock of a folder no longer at the path: the lock is taken again until the locked folder is
/// the one the path names.
///
/// A thread never waits for itself: a load under its own exclusive lock (a writer reading what
/// it updates) takes no shared lock, and an exclusive lock asked for while the thread holds the
/// folder (shared or exclusive, through another descriptor, which `flock` would make wait
/// forever) is an error, never a hang. (Two threads each wait for the other's lock as two
/// processes do.) A lock stays on the thread that took it (it is not `Send`).
#[derive(Debug)]
pub struct FolderLock {
    #[cfg(unix)]
    file: std::fs::File,
    /// The folder's (device, inode) and whether this lock is exclusive.
    #[cfg(unix)]
    held: ((u64, u64), bool),
    /// Not `Send`: the thread that took it keeps it, and releases it from its own list.
    _thread: std::marker::PhantomData<*const ()>,
}

#[cfg(unix)]
thread_local! {
    /// The folders this thread holds, by (device, inode), each with whether the hold is
    /// exclusive: one entry per lock.
    static HELD: std::cell::RefCell<Vec<((u64, u64), bool)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// How long a reader waits for a folder an update is swapping (gone from its path for the
/// moment between two renames, its old self beside it as `.ablate-old-*`) before it reads
/// whatever the path holds: up to 200 × 5 ms.
#[cfg(unix)]
const SWAP_WAITS: u32 = 200;

/// Opens the folder at `dir` for its lock, never waiting: a FIFO, a device or a file in its
/// place fails at once (`O_DIRECTORY`) rather than blocking the open.
#[cfg(unix)]
fn open_folder(dir: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NONBLOCK)
        .open(dir)
}

/// Whether an update may be swapping the folder at `dir` now: the path names nothing, and its
/// parent holds a folder moved aside (`.ablate-old-<pid>-<n>`) by a process still running (an
/// update carries the folder's files out of it before the new one takes the path, so its
/// contents say nothing). A leftover of a process that ended is not waited for; another
/// output's swap in the same parent is, for the moment it lasts.
#[cfg(unix)]
fn being_swapped(dir: &Path) -> bool {
    let parent = parent_of(dir);
    let running = |name: &str| {
        name.strip_prefix(".ablate-old-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<libc::pid_t>().ok())
            // SAFETY: signal 0 only asks whether the process exists.
            .is_some_and(|pid| unsafe { libc::kill(pid, 0) } == 0)
    };
    std::fs::read_dir(parent).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| running(&e.file_name().to_string_lossy()) && e.path().is_dir())
    })
}

/// Takes `how` (`LOCK_SH` or `LOCK_EX`) on `file`, the folder `id` at `dir`: at once when it is
/// free, else after saying on stderr what it waits for. A writer that has to wait holds a
/// [`WaitingWriter`] marker beside the folder until it has the lock.
#[cfg(unix)]
fn flock_saying(
    file: &std::fs::File,
    how: libc::c_int,
    dir: &Path,
    id: (u64, u64),
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor the caller owns; released on close.
    if unsafe { libc::flock(file.as_raw_fd(), how | libc::LOCK_NB) } == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
        return Err(e);
    }
    eprintln!(
        "ablate: waiting for {} to finish with {}",
        if how == libc::LOCK_SH {
            "another ablate changing it (import --into, an --out replacing it, or watch or next recording)"
        } else {
            "another ablate reading or changing it"
        },
        dir.display()
    );
    let _turn = (how == libc::LOCK_EX).then(|| WaitingWriter::announce(dir, id));
    // SAFETY: as above.
    if unsafe { libc::flock(file.as_raw_fd(), how) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Where a writer waiting for the folder `id` at `dir` says so: `.ablate-writer-<device>-<inode>`
/// in the folder's real parent (the path resolved, so that `.`, a link or another spelling of
/// the path names the same marker).
#[cfg(unix)]
fn marker_path(dir: &Path, (dev, ino): (u64, u64)) -> std::path::PathBuf {
    let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    parent_of(&real).join(format!(".ablate-writer-{dev}-{ino}"))
}

/// A writer's turn. `flock` grants a new shared lock while an exclusive one waits, so a stream
/// of overlapping readers could keep `import --into` out for as long as they kept coming. So a
/// writer whose exclusive lock has to wait opens (or creates) the folder's marker
/// ([`marker_path`]) and holds a shared `flock` on it until it has the folder; a reader that
/// finds the marker locked waits behind it ([`wait_for_waiting_writers`]). The marker's lock
/// says that a writer waits, not its file: a marker left behind (a `kill -9`, a crash) is
/// unlocked, never waited for, and removed by the next reader; an interrupted writer withdraws
/// its own ([`withdraw_waiting_writers`]). Several writers share
/// the marker; the last to get the folder removes it. Where it cannot be made or locked at once
/// (a parent folder the writer cannot write; a marker someone else holds locked) the writer goes
/// without, and readers go first as `flock` lets them. A reader waits behind a locked marker for
/// at most [`WRITER_TURN`], so a marker held by anyone else costs it at most that, and a process
/// holding one folder while it reads another cannot deadlock with writers waiting for both.
#[cfg(unix)]
struct WaitingWriter(Option<u64>);

/// The markers this process's waiting writers hold: a key (a [`WaitingWriter`]'s), the open
/// marker with its shared lock, and its path. They live here rather than in each writer so that
/// an interrupt can withdraw them ([`withdraw_waiting_writers`]).
#[cfg(unix)]
type HeldMarkers = Vec<(u64, std::fs::File, std::path::PathBuf)>;

/// This process's [`HeldMarkers`].
#[cfg(unix)]
static HELD_MARKERS: std::sync::Mutex<HeldMarkers> = std::sync::Mutex::new(Vec::new());

/// The key of the next marker this process holds.
#[cfg(unix)]
static NEXT_MARKER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Lets go of a marker: the last waiting writer removes it, the one that can lock it
/// exclusively (its own shared lock converted), if the path still names the file it locked.
#[cfg(unix)]
fn withdraw(file: &std::fs::File, path: &Path) {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor owned by the caller; released when it is closed.
    let alone = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    if alone && still_at(file, path) {
        let _ = std::fs::remove_file(path);
    }
}

/// Withdraws every marker this process's waiting writers hold ([`withdraw`]), and keeps them
/// from being touched again: for the interrupt handler, just before the process ends. Their
/// locks would end with it anyway (so no reader would wait behind them), but the files would
/// stay beside the folder until a reader came.
#[cfg(unix)]
pub(crate) fn withdraw_waiting_writers() {
    let mut held = HELD_MARKERS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // Each closed after its withdrawal: where one process holds a marker twice (two folders
    // updated at once), the second conversion then does not meet the first's shared lock.
    for (_, file, path) in std::mem::take(&mut *held) {
        withdraw(&file, &path);
    }
    // Held until the process ends: a writer that gets its folder meanwhile, or starts to wait,
    // blocks on the list and never touches a marker again.
    std::mem::forget(held);
}

/// Opens the marker at `path` without following a link or waiting on a FIFO: read–write where
/// it may (an `flock` over NFS is a record lock, and its exclusive form needs a writable
/// descriptor), else read-only; created if missing when `create`.
#[cfg(unix)]
fn open_marker(path: &Path, create: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let flags = libc::O_NOFOLLOW | libc::O_NONBLOCK | if create { libc::O_CREAT } else { 0 };
    let open = |write: bool| {
        std::fs::OpenOptions::new()
            .read(true)
            .write(write)
            .custom_flags(flags)
            .mode(0o644)
            .open(path)
    };
    open(true).or_else(|_| open(false))
}

/// Whether the open `file` is the one `path` names now (not one unlinked, or replaced).
#[cfg(unix)]
fn still_at(file: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => b.is_file() && (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

#[cfg(unix)]
impl WaitingWriter {
    fn announce(dir: &Path, id: (u64, u64)) -> WaitingWriter {
        use std::os::fd::AsRawFd;
        let path = marker_path(dir, id);
        // A reader's probe or a writer's removal holds the marker for an instant: a few tries.
        // A marker removed between the open and the lock is opened again.
        for _ in 0..20 {
            {
                // Held from before the marker is made until it is recorded, so that an interrupt
                // ([`withdraw_waiting_writers`]) either comes first (and no marker is made) or
                // finds it. Nothing under it blocks: the open, the lock and the stat never wait.
                let mut held = HELD_MARKERS
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let Ok(file) = open_marker(&path, true) else {
                    return WaitingWriter(None);
                };
                // SAFETY: flock on a descriptor owned here; released when it is closed.
                let locked =
                    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0;
                if locked && still_at(&file, &path) {
                    let key = NEXT_MARKER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    held.push((key, file, path));
                    return WaitingWriter(Some(key));
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        WaitingWriter(None)
    }
}

#[cfg(unix)]
impl Drop for WaitingWriter {
    fn drop(&mut self) {
        let Some(key) = self.0.take() else {
            return;
        };
        // Withdrawn under the list's lock, so that an interrupt never ends the process between
        // taking the entry out and removing the file.
        let mut held = HELD_MARKERS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(i) = held.iter().position(|(k, _, _)| *k == key) {
            let (_, file, path) = held.swap_remove(i);
            withdraw(&file, &path);
        }
    }
}

/// Whether a writer waits for the folder `id` at `dir`: its marker ([`WaitingWriter`]) exists
/// and is locked. An unlocked marker, left by a writer that ended, is removed (when the path
/// still names the file found unlocked, and this process may) and never waited for; one whose
/// lock cannot be asked about (a read-only descriptor over NFS) is not waited for either.
#[cfg(unix)]
fn writer_waits(dir: &Path, id: (u64, u64)) -> bool {
    use std::os::fd::AsRawFd;
    let path = marker_path(dir, id);
    let Ok(file) = open_marker(&path, false) else {
        return false;
    };
    // SAFETY: flock on a descriptor owned here, released at once (on close).
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        if still_at(&file, &path) {
            let _ = std::fs::remove_file(&path);
        }
        return false;
    }
    std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
}

/// How long a reader waits behind a waiting writer before it reads anyway (saying so): a writer
/// that waits that long is itself held by a reader that does not finish.
#[cfg(unix)]
const WRITER_TURN: std::time::Duration = std::time::Duration::from_secs(60);

/// A reader's side of [`WaitingWriter`]: waits while a writer waits for the folder, so that the
/// writer goes first, for at most [`WRITER_TURN`]. Not when this process holds the folder already
/// (on any thread): the writer may be waiting for that very lock.
#[cfg(unix)]
fn wait_for_waiting_writers(dir: &Path, id: (u64, u64)) {
    let start = std::time::Instant::now();
    let mut said = false;
    while !process_holds(id) && writer_waits(dir, id) {
        if start.elapsed() > WRITER_TURN {
            eprintln!(
                "ablate: waited {} s behind another ablate that is waiting to change {}; reading it now",
                WRITER_TURN.as_secs(),
                dir.display()
            );
            return;
        }
        if !said {
            eprintln!(
                "ablate: waiting for another ablate that is waiting to change {}",
                dir.display()
            );
            said = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The folders this process holds a lock on, on any thread (one entry per lock).
#[cfg(unix)]
static PROCESS_HELD: std::sync::Mutex<Vec<(u64, u64)>> = std::sync::Mutex::new(Vec::new());

#[cfg(unix)]
fn process_holds(id: (u64, u64)) -> bool {
    PROCESS_HELD
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .contains(&id)
}

/// Records a lock on `id` taken by this thread, in its list and the process's.
#[cfg(unix)]
fn record_held(id: (u64, u64), exclusive: bool) {
    HELD.with_borrow_mut(|held| held.push((id, exclusive)));
    PROCESS_HELD
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(id);
}

impl FolderLock {
    /// Waits for, and takes, the exclusive lock on the folder at `dir`.
    ///
    /// # Errors
    /// The folder cannot be opened or locked, or this process holds it already.
    pub fn exclusive(dir: &Path) -> Result<FolderLock> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            loop {
                let file = open_folder(dir).map_err(|e| Error::io(dir, e))?;
                let held = file.metadata().map_err(|e| Error::io(dir, e))?;
                let id = (held.dev(), held.ino());
                if HELD.with_borrow(|held| held.iter().any(|(h, _)| *h == id)) {
                    return Err(Error::Invariant(format!(
                        "{}: an exclusive lock asked for while this thread holds the folder (it would wait for itself)",
                        dir.display()
                    )));
                }
                flock_saying(&file, libc::LOCK_EX, dir, id).map_err(|e| Error::io(dir, e))?;
                let now = std::fs::metadata(dir).map_err(|e| Error::io(dir, e))?;
                if id == (now.dev(), now.ino()) {
                    record_held(id, true);
                    return Ok(FolderLock {
                        file,
                        held: (id, true),
                        _thread: std::marker::PhantomData,
                    });
                }
                // The folder was replaced while this process waited: lock the new one.
            }
        }
        #[cfg(not(unix))]
        {
            let _ = dir;
            Ok(FolderLock {
                _thread: std::marker::PhantomData,
            })
        }
    }

    /// Waits for any update of the folder at `dir` to finish, and takes a shared lock on it, so
    /// that no update swaps it while the caller reads. `None` (no lock, nothing to wait for)
    /// when there is no folder at `dir` (the caller's own error names it; a folder an update is
    /// swapping is waited for), when this thread holds it already (exclusively: a writer reading
    /// what it updates; or shared: a load inside a verb that holds the folder for longer, where
    /// a second lock would add nothing, and on NFS, where locks are per process, closing it would
    /// release the first), or where locks are not supported: the lock only orders readers after
    /// writers, it never refuses a read.
    pub fn shared(dir: &Path) -> Option<FolderLock> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let mut waits = 0;
            loop {
                let file = match open_folder(dir) {
                    Ok(f) => f,
                    // Between an update's two renames the path names nothing for a moment.
                    Err(e)
                        if e.kind() == std::io::ErrorKind::NotFound
                            && waits < SWAP_WAITS
                            && being_swapped(dir) =>
                    {
                        waits += 1;
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        continue;
                    }
                    Err(_) => return None,
                };
                let held = file.metadata().ok()?;
                let id = (held.dev(), held.ino());
                if HELD.with_borrow(|held| held.iter().any(|(h, _)| *h == id)) {
                    return None;
                }
                wait_for_waiting_writers(dir, id);
                flock_saying(&file, libc::LOCK_SH, dir, id).ok()?;
                match std::fs::metadata(dir) {
                    Ok(now) if (now.dev(), now.ino()) == id => {
                        record_held(id, false);
                        return Some(FolderLock {
                            file,
                            held: (id, false),
                            _thread: std::marker::PhantomData,
                        });
                    }
                    // Replaced while this process waited: lock the new one.
                    _ => {}
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = dir;
            None
        }
    }
}

impl Drop for FolderLock {
    fn drop(&mut self) {
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: the descriptor is open for as long as `self.file`.
            unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
            // `try_with`: never a panic in a drop, even as the thread ends.
            let _ = HELD.try_with(|held| {
                let mut held = held.borrow_mut();
                if let Some(at) = held.iter().position(|h| *h == self.held) {
                    held.swap_remove(at);
                }
            });
            let mut process = PROCESS_HELD
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(at) = process.iter().position(|h| *h == self.held.0) {
                process.swap_remove(at);
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
            // The commit may have given it a read-only folder's permissions ([`keep_mode`]),
            // which left it behind: `import --into` on a read-only experiment.
            temps::owner_writable(&self.temp);
            let _ = std::fs::remove_dir_all(&self.temp);
            temps::unregister(&self.temp);
        }
    }
}
