//! Reading and recording `watch`'s decisions in `.ablate-watch.json` (the types and the format:
//! [`ablate_core::data::watch_state`]): read only as a regular file, written under an exclusive
//! lock on the folder.

use std::collections::BTreeMap;
use std::path::Path;

pub use ablate_core::data::watch_state::*;

use crate::error::{Error, Result};

/// Whether `path` is a regular file (not a link) holding ablate's watch state, of any version.
pub fn is_state_file(path: &Path) -> bool {
    read_plain(path).is_ok_and(|t| t.is_some_and(|t| parse(&t).is_some()))
}

/// The text of `path` if it is a regular file, none if it is absent. A link, a folder, a FIFO,
/// a socket or a device is refused without being read: the type is checked before opening, and
/// again on the opened descriptor (opened with O_NOFOLLOW and O_NONBLOCK, so that a FIFO put in
/// place between the two neither blocks nor is read).
fn read_plain(path: &Path) -> Result<Option<String>> {
    use std::io::Read as _;
    check_path(path)?;
    let mut file = match crate::io::output::open_without_waiting(path, false) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        // Replaced by a link since the check (O_NOFOLLOW: ELOOP): refused as a link.
        Err(e) => return Err(check_path(path).err().unwrap_or_else(|| Error::io(path, e))),
    };
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(not_plain(path));
    }
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|e| Error::io(path, e))?;
    Ok(Some(text))
}

fn not_plain(path: &Path) -> Error {
    Error::Output {
        path: path.to_path_buf(),
        problem: "is not a plain file (a FIFO, socket or device), and ablate keeps watch decisions in a plain file; it was not opened".into(),
        fix: "move it away; ablate writes the file in its place".into(),
    }
}

/// Refuses a state path that is a link, a folder or anything but a regular file.
fn check_path(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(Error::Output {
            path: path.to_path_buf(),
            problem: "is a symbolic link; ablate keeps watch decisions in a plain file and does not follow links".into(),
            fix: "delete the link (ablate writes a new file), or run elsewhere".into(),
        }),
        Ok(m) if m.is_dir() => Err(Error::Output {
            path: path.to_path_buf(),
            problem: "is a folder, and ablate keeps watch decisions in a file of this name".into(),
            fix: "move the folder away; ablate writes the file in its place".into(),
        }),
        Ok(m) if !m.is_file() => Err(not_plain(path)),
        _ => Ok(()),
    }
}

/// Reads the state of an experiment folder (none when the file is absent).
///
/// # Errors
/// The path is a link, a folder or another non-regular file; the file is not ablate's watch
/// state; a recorded decision ablate cannot have made (no unit, bounds not finite, lower above
/// upper, an arm outside its entry).
pub fn read(dir: &Path) -> Result<Option<StateFile>> {
    let path = dir.join(STATE_FILE);
    let Some(text) = read_plain(&path)? else {
        return Ok(None);
    };
    let file = parse(&text).ok_or_else(|| Error::Usage(format!(
        "{}: not ablate's watch state (the file where `watch` keeps its decisions). ablate never overwrites a file it did not write, --reopen included: move it away, and `watch` writes its state in its place",
        path.display()
    )))?;
    file.check(&path)?;
    Ok(Some(file))
}

/// Records `decisions` under `settings`, keeping every other entry ([`record_run`] without an
/// order).
///
/// # Errors
/// As [`record_run`].
pub fn record(
    dir: &Path,
    settings: &WatchSettings,
    decisions: BTreeMap<String, RecordedDecision>,
) -> Result<bool> {
    record_run(
        dir,
        Run {
            settings: settings.clone(),
            decisions,
            order: None,
        },
        None,
    )
}

/// Records `run` (its decisions, and the order its tests read the units in), keeping every other
/// entry but `supersedes` (the entry of the same settings on the experiment before cases were
/// added, which `run` continues): under an exclusive lock on the folder, the file is read again,
/// this run's entry replaced, and the result written to a temporary file and renamed over it.
/// A run without an order keeps the one recorded before; an entry with neither decisions nor an
/// order is not written. Returns whether the file changed.
///
/// # Errors
/// The path is a link or a folder; the file is not ablate's; it cannot be written.
pub fn record_run(dir: &Path, mut run: Run, supersedes: Option<&WatchSettings>) -> Result<bool> {
    let _lock = crate::io::output::FolderLock::exclusive(dir)?;
    let mut file = match read(dir)? {
        Some(f) if !f.legacy => f,
        _ => StateFile::empty(),
    };
    // A run without an order (no unit read this time) keeps the order recorded before, its own
    // or the one it continues: a later watch continues it still.
    if run.order.is_none() {
        run.order = file
            .runs
            .iter()
            .find(|r| r.settings == run.settings)
            .or_else(|| supersedes.and_then(|old| file.runs.iter().find(|r| r.settings == *old)))
            .and_then(|r| r.order.clone());
    }
    let before = file.runs.len();
    if let Some(old) = supersedes.filter(|old| **old != run.settings) {
        file.runs.retain(|r| r.settings != *old);
    }
    let superseded = file.runs.len() != before;
    match file.runs.iter_mut().find(|r| r.settings == run.settings) {
        Some(existing) if *existing == run && !superseded => return Ok(false),
        Some(existing) => *existing = run,
        None if run.decisions.is_empty() && run.order.is_none() && !superseded => {
            return Ok(false);
        }
        None => file.runs.push(run),
    }
    file.version = 3;
    let text = serde_json::to_string_pretty(&file)
        .map_err(|e| Error::Invariant(format!("cannot serialise decisions: {e}")))?;
    let path = dir.join(STATE_FILE);
    let temp = dir.join(format!(".ablate-watch-{}.tmp", std::process::id()));
    // A fresh file (O_EXCL: never through a link, never into a FIFO left there, which would
    // block); a leftover of a killed run with this pid is removed first (under the lock).
    let _ = std::fs::remove_file(&temp);
    // Made and registered at once: removed if the process is interrupted, and on failure (a
    // stray file left in the experiment folder made it the user's: no later `simulate` or
    // `import --out` could replace it).
    let mut live = crate::io::output::temps::hold();
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp);
    if opened.is_ok() {
        live.add(&temp);
    }
    drop(live);
    let mut file = opened.map_err(|e| Error::io(&path, e))?;
    crate::io::output::temps::name(&temp, &path);
    let written = std::io::Write::write_all(&mut file, (text + "\n").as_bytes());
    drop(file);
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        crate::io::output::temps::unregister(&temp);
        return Err(Error::io(&path, e));
    }
    let mut live = crate::io::output::temps::hold();
    let renamed = std::fs::rename(&temp, &path);
    if renamed.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    live.forget(&temp);
    drop(live);
    renamed.map_err(|e| Error::io(&path, e))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(seed: u64, alpha: f64) -> WatchSettings {
        WatchSettings {
            experiment: Some("e".into()),
            seed,
            threshold_drop: 0.01,
            alpha,
            repeats: 2,
            score_min: 0.0,
            score_max: 1.0,
            arms: vec!["a".into(), "b".into()],
        }
    }

    fn decided(state: Decided) -> BTreeMap<String, RecordedDecision> {
        BTreeMap::from([(
            "a".to_string(),
            RecordedDecision {
                state,
                units: 10,
                lower: 0.1,
                upper: 0.2,
            },
        )])
    }

    #[test]
    fn entries_are_kept_per_settings() {
        let dir = tempfile::tempdir().unwrap();
        let (main, loose) = (settings(0, 0.05), settings(0, 0.5));
        assert!(record(dir.path(), &main, decided(Decided::Needed)).unwrap());
        assert!(record(dir.path(), &loose, decided(Decided::Removable)).unwrap());
        assert!(!record(dir.path(), &main, decided(Decided::Needed)).unwrap());
        let file = read(dir.path()).unwrap().unwrap();
        assert_eq!(
            file.decisions_for(&main).unwrap()["a"].state,
            Decided::Needed
        );
        assert_eq!(
            file.decisions_for(&loose).unwrap()["a"].state,
            Decided::Removable
        );
        assert!(file.decisions_for(&settings(1, 0.05)).is_none());
        assert_eq!(file.others(&main), vec![&loose]);
        assert!(is_state_file(&dir.path().join(STATE_FILE)));
    }

    #[test]
    fn concurrent_writers_keep_both_entries() {
        let dir = tempfile::tempdir().unwrap();
        std::thread::scope(|s| {
            for seed in 0..8 {
                let dir = dir.path();
                s.spawn(move || {
                    record(dir, &settings(seed, 0.05), decided(Decided::Needed)).unwrap();
                });
            }
        });
        let file = read(dir.path()).unwrap().unwrap();
        assert_eq!(file.runs.len(), 8);
    }

    #[test]
    fn version_one_is_ablates_but_unused_and_other_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(STATE_FILE);
        std::fs::write(&path, r#"{"seed":0,"threshold_drop":0.01,"decisions":{}}"#).unwrap();
        assert!(is_state_file(&path));
        let file = read(dir.path()).unwrap().unwrap();
        assert!(file.legacy && file.runs.is_empty());
        std::fs::write(&path, "{\"something\": 1}").unwrap();
        assert!(!is_state_file(&path));
        assert_eq!(read(dir.path()).unwrap_err().exit_code(), 2);
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let err = read(dir.path()).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("is a folder"), "{err}");
    }

    /// A file that is not ablate's is refused with advice that works: move it (--reopen never
    /// overwrites it).
    #[test]
    fn a_foreign_file_is_refused_with_advice_to_move_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(STATE_FILE), "{\"something\": 1}").unwrap();
        let err = read(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("move it away") && !err.contains("run with --reopen"),
            "{err}"
        );
        assert!(record(dir.path(), &settings(0, 0.05), decided(Decided::Needed)).is_err());
        assert_eq!(
            std::fs::read_to_string(dir.path().join(STATE_FILE)).unwrap(),
            "{\"something\": 1}"
        );
    }

    /// A FIFO in place of the state is refused without being opened for a blocking read
    /// (issue: `watch` hung forever), and `is_state_file` says no at once.
    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        use std::os::unix::fs::FileTypeExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(STATE_FILE);
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = read(dir.path()).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("not a plain file"), "{err}");
        assert!(!is_state_file(&path));
        assert!(record(dir.path(), &settings(0, 0.05), decided(Decided::Needed)).is_err());
        assert!(
            std::fs::symlink_metadata(&path)
                .unwrap()
                .file_type()
                .is_fifo()
        );
    }

    /// Decisions ablate never writes are refused, naming the entry (issue: a "removable" at
    /// 2⁶⁴ − 1 units with lower 1e308 above upper −1e308 was shown).
    #[test]
    fn impossible_decisions_are_refused_naming_the_entry() {
        let dir = tempfile::tempdir().unwrap();
        record(dir.path(), &settings(0, 0.05), decided(Decided::Needed)).unwrap();
        let path = dir.path().join(STATE_FILE);
        let good = std::fs::read_to_string(&path).unwrap();
        for (field, from, to) in [
            ("lower/upper", "\"lower\": 0.1", "\"lower\": 1e308"),
            ("units", "\"units\": 10", "\"units\": 0"),
        ] {
            assert!(good.contains(from), "{good}");
            std::fs::write(&path, good.replace(from, to)).unwrap();
            let err = read(dir.path()).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{field}");
            let text = err.to_string();
            assert!(
                text.contains(STATE_FILE) && text.contains("runs[0].decisions[\"a\"]"),
                "{text}"
            );
        }
    }
}
