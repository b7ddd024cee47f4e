//! The decisions `ablate watch` keeps between runs: `.ablate-watch.json` in the experiment folder.
//!
//! A decision is only valid under the settings that made it: the seed of the unit order, the
//! threshold, the family-wise α, the repeats a unit needs, the score bounds and the set of arms
//! compared (Bonferroni or Holm spend α over exactly that family). The file therefore keeps one
//! entry per settings ([`WatchSettings`]), and a run reads and writes only its own: an exploratory
//! `watch --confidence 0.5` or `watch --seed 1` never shows its decisions as made under other
//! settings, and never erases theirs.
//!
//! Writes are read-modify-write under an exclusive lock on the folder (`flock`, on Unix), then a
//! temporary file and a rename, so two watches with different settings running at once both keep
//! their entries. The file is never followed through a link, and a folder in its place is refused.
//!
//! Format (version 2):
//! ```json
//! {"tool": "ablate watch", "version": 2,
//!  "runs": [{"settings": {"seed": 0, "threshold_drop": 0.005, "alpha": 0.05, "repeats": 3,
//!                         "score_min": 0.0, "score_max": 1.0, "arms": ["a", "b"]},
//!            "decisions": {"a": {"state": "needed", "units": 113, "lower": 0.01, "upper": 0.2}}}]}
//! ```
//! Version 1 (`{seed, threshold_drop, decisions}`, before settings were recorded) is recognised as
//! ablate's, but its decisions are not used: it did not record α, the repeats or the arms.

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
    /// Format version (2).
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
            version: 2,
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

    /// Settings of the other entries that hold decisions (for a warning that they are not used).
    pub fn others(&self, settings: &WatchSettings) -> Vec<&WatchSettings> {
        self.runs
            .iter()
            .filter(|r| &r.settings != settings && !r.decisions.is_empty())
            .map(|r| &r.settings)
            .collect()
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
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
        && std::fs::read_to_string(path).is_ok_and(|t| parse(&t).is_some())
}

/// Refuses a state path that is a link or a folder.
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
        _ => Ok(()),
    }
}

/// Reads the state of an experiment folder (none when the file is absent).
///
/// # Errors
/// The path is a link or a folder; the file is not ablate's watch state.
pub fn read(dir: &Path) -> Result<Option<StateFile>> {
    let path = dir.join(STATE_FILE);
    check_path(&path)?;
    match std::fs::read_to_string(&path) {
        Ok(text) => parse(&text).map(Some).ok_or_else(|| Error::Usage(format!(
            "{}: not ablate's watch state (it keeps `watch`'s decisions); move it away, or run with --reopen to rewrite it",
            path.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(&path, e)),
    }
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
    let text = serde_json::to_string_pretty(&file)
        .map_err(|e| Error::Invariant(format!("cannot serialise decisions: {e}")))?;
    let path = dir.join(STATE_FILE);
    let temp = dir.join(format!(".ablate-watch-{}.tmp", std::process::id()));
    std::fs::write(&temp, text + "\n").map_err(|e| Error::io(&temp, e))?;
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
}
