//! The decisions `ablate watch` keeps between runs: `.ablate-watch.json` in the experiment folder.
//!
//! A decision is only valid on the experiment and under the settings that made it: the
//! experiment's identity (a hash of its cases and arms, never of its results, so that more calls
//! keep it), the seed of the unit order, the threshold, the family-wise α, the repeats a unit
//! needs, the score bounds and the set of arms compared (Bonferroni or Holm spend α over exactly
//! that family). The file therefore keeps one entry per settings ([`WatchSettings`]), and a run
//! reads and writes only its own: an exploratory `watch --confidence 0.5` or `watch --seed 1`
//! never shows its decisions as made under other settings, a replaced experiment (`simulate
//! --out`) never shows the old one's, and neither erases the others'.
//!
//! Writes are read-modify-write under an exclusive lock on the folder (`flock`, on Unix), then a
//! temporary file and a rename, so two watches with different settings running at once both keep
//! their entries. The file is read only if it is a regular file: never through a link, and a
//! folder, FIFO, socket or device in its place is refused without being read (a FIFO would block).
//! Every recorded decision is checked when read (units ≥ 1, finite bounds, lower ≤ upper, an arm
//! of its entry); a file that fails is refused, naming the entry.
//!
//! Format (version 3):
//! ```json
//! {"tool": "ablate watch", "version": 3,
//!  "runs": [{"settings": {"experiment": "9f86…", "seed": 0, "threshold_drop": 0.005,
//!                         "alpha": 0.05, "repeats": 3, "score_min": 0.0, "score_max": 1.0,
//!                         "arms": ["a", "b"]},
//!            "decisions": {"a": {"state": "needed", "units": 113, "lower": 0.01, "upper": 0.2}}}]}
//! ```
//! Version 2 (no `experiment`) is read, and its entries kept, but never used: they do not say
//! which experiment they were made on. Version 1 (`{seed, threshold_drop, decisions}`, before
//! settings were recorded) is recognised as ablate's, but its decisions are not used: it did not
//! record α, the repeats or the arms.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// File name of the recorded decisions, in the experiment folder.
pub const STATE_FILE: &str = ".ablate-watch.json";

/// The value of the `tool` key that marks the file as ablate's.
const TOOL: &str = "ablate watch";

/// A decided state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decided {
    /// The arm's drop is at or above the threshold.
    Needed,
    /// The arm's drop is below the threshold.
    Removable,
}

impl Decided {
    /// The label printed and written.
    pub fn label(self) -> &'static str {
        match self {
            Decided::Needed => "needed",
            Decided::Removable => "removable",
        }
    }
}

/// Everything a decision depends on besides the data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchSettings {
    /// The experiment's identity: SHA-256 (hex) of its cases and arms
    /// ([`crate::analysis::sequential::experiment_identity`]); none in a version-2 entry, which
    /// is never used.
    #[serde(default)]
    pub experiment: Option<String>,
    /// Seed of the unit order.
    pub seed: u64,
    /// The agreed threshold.
    pub threshold_drop: f64,
    /// Family-wise α.
    pub alpha: f64,
    /// Repeats per (case, arm) a unit needs.
    pub repeats: u32,
    /// Lower score bound.
    pub score_min: f64,
    /// Upper score bound.
    pub score_max: f64,
    /// The arms compared (the family), sorted.
    pub arms: Vec<String>,
}

impl WatchSettings {
    /// One line naming the settings, for messages.
    pub fn describe(&self) -> String {
        format!(
            "seed {}, threshold {}, α {}, {} repeats, scores in [{}, {}], {} arms",
            self.seed,
            self.threshold_drop,
            self.alpha,
            self.repeats,
            self.score_min,
            self.score_max,
            self.arms.len()
        )
    }
}

/// One recorded decision.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RecordedDecision {
    /// needed or removable.
    pub state: Decided,
    /// Units read when decided.
    pub units: usize,
    /// Lower bound then.
    pub lower: f64,
    /// Upper bound then.
    pub upper: f64,
}

/// The decisions of one set of settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Run {
    /// The settings they were made under.
    pub settings: WatchSettings,
    /// Arm → decision.
    pub decisions: BTreeMap<String, RecordedDecision>,
}

/// The whole file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StateFile {
    /// Always `"ablate watch"`.
    pub tool: String,
    /// Format version (3; 2 is read).
    pub version: u32,
    /// One entry per settings.
    pub runs: Vec<Run>,
    /// Read from a version-1 file, whose decisions carry no settings and are not used.
    #[serde(skip)]
    pub legacy: bool,
}

/// The version-1 layout, recognised so that the file still counts as ablate's.
#[derive(Deserialize)]
#[allow(dead_code)]
struct LegacyV1 {
    seed: u64,
    threshold_drop: f64,
    decisions: BTreeMap<String, serde_json::Value>,
}

impl StateFile {
    fn empty() -> StateFile {
        StateFile {
            tool: TOOL.into(),
            version: 3,
            runs: Vec::new(),
            legacy: false,
        }
    }

    /// The decisions recorded under exactly these settings.
    pub fn decisions_for(
        &self,
        settings: &WatchSettings,
    ) -> Option<&BTreeMap<String, RecordedDecision>> {
        self.runs
            .iter()
            .find(|r| &r.settings == settings)
            .map(|r| &r.decisions)
    }

    /// Settings of the other entries of this experiment that hold decisions (for a warning that
    /// they are not used).
    pub fn others(&self, settings: &WatchSettings) -> Vec<&WatchSettings> {
        self.runs
            .iter()
            .filter(|r| {
                &r.settings != settings
                    && r.settings.experiment == settings.experiment
                    && !r.decisions.is_empty()
            })
            .map(|r| &r.settings)
            .collect()
    }

    /// Entries holding decisions made on another experiment, or by an ablate that did not record
    /// which (version 2): kept in the file, never used.
    pub fn other_experiments(&self, settings: &WatchSettings) -> usize {
        self.runs
            .iter()
            .filter(|r| r.settings.experiment != settings.experiment && !r.decisions.is_empty())
            .count()
    }

    /// Checks every recorded decision: at least one unit read, finite bounds with lower ≤ upper,
    /// an arm of its entry's family. A decision that fails was not written by ablate.
    ///
    /// # Errors
    /// [`Error::Unreadable`] naming `path` and the entry.
    fn check(&self, path: &Path) -> Result<()> {
        for (i, run) in self.runs.iter().enumerate() {
            for (arm, d) in &run.decisions {
                let problem = if d.units == 0 {
                    Some("is decided at 0 units".to_string())
                } else if !d.lower.is_finite() || !d.upper.is_finite() {
                    Some(format!("has bounds [{}, {}], not finite", d.lower, d.upper))
                } else if d.lower > d.upper {
                    Some(format!("has lower {} above upper {}", d.lower, d.upper))
                } else if !run.settings.arms.contains(arm) {
                    Some("names an arm outside its entry's `arms`".to_string())
                } else {
                    None
                };
                if let Some(problem) = problem {
                    return Err(invalid_entry(path, i, arm, &problem));
                }
            }
        }
        Ok(())
    }
}

/// The error for a recorded decision ablate cannot have made: names the file and the entry.
pub fn invalid_entry(path: &Path, run: usize, arm: &str, problem: &str) -> Error {
    Error::Unreadable {
        path: path.to_path_buf(),
        problem: format!(
            "the decision runs[{run}].decisions[{arm:?}] {problem}, which ablate never records"
        ),
        fix: "the file was edited or damaged: move it away (ablate starts a new one), or fix that entry".into(),
    }
}

fn parse(text: &str) -> Option<StateFile> {
    if let Ok(file) = serde_json::from_str::<StateFile>(text)
        && file.tool == TOOL
    {
        return Some(file);
    }
    serde_json::from_str::<LegacyV1>(text)
        .ok()
        .map(|_| StateFile {
            legacy: true,
            ..StateFile::empty()
        })
}

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
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let mut file = match options.open(path) {
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

/// Records `decisions` under `settings`, keeping every other entry: under an exclusive lock on
/// the folder, the file is read again, this run's entry replaced, and the result written to a
/// temporary file and renamed over it. Returns whether the file changed.
///
/// # Errors
/// The path is a link or a folder; the file is not ablate's; it cannot be written.
pub fn record(
    dir: &Path,
    settings: &WatchSettings,
    decisions: BTreeMap<String, RecordedDecision>,
) -> Result<bool> {
    let _lock = crate::io::output::FolderLock::exclusive(dir)?;
    let mut file = match read(dir)? {
        Some(f) if !f.legacy => f,
        _ => StateFile::empty(),
    };
    let run = Run {
        settings: settings.clone(),
        decisions,
    };
    match file.runs.iter_mut().find(|r| r.settings == *settings) {
        Some(existing) if *existing == run => return Ok(false),
        Some(existing) => *existing = run,
        None if run.decisions.is_empty() => return Ok(false),
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
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .and_then(|mut f| std::io::Write::write_all(&mut f, (text + "\n").as_bytes()))
        .map_err(|e| Error::io(&temp, e))?;
    std::fs::rename(&temp, &path).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        Error::io(&path, e)
    })?;
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
