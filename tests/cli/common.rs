//! Shared helpers for the integration tests: a temporary work folder per test, a tiny valid CSV
//! experiment to break in one place at a time, and a runner for the binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The committed demo experiment.
pub fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("notebooks-data/support-eval-v3")
}

/// A temporary folder holding one experiment, removed when dropped.
pub struct Workdir {
    /// Keeps the folder alive.
    pub root: tempfile::TempDir,
    /// The experiment folder inside it.
    pub dir: PathBuf,
}

/// The files of `tests/fixtures/tiny/` (its README is not part of the experiment).
pub const TINY_FILES: [&str; 6] = [
    "experiment.toml",
    "cases.csv",
    "units.csv",
    "arms.csv",
    "mix.csv",
    "results.csv",
];

impl Workdir {
    /// An empty experiment folder.
    pub fn empty() -> Workdir {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("exp");
        std::fs::create_dir(&dir).expect("mkdir");
        Workdir { root, dir }
    }

    /// A small, valid CSV experiment: 4 cases (one stress), 3 arms, 2 repeats. A copy of
    /// `tests/fixtures/tiny/`, which the fuzz targets start from too.
    pub fn tiny() -> Workdir {
        let w = Workdir::empty();
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny");
        for name in TINY_FILES {
            std::fs::copy(fixture.join(name), w.path(name)).expect("copy the tiny fixture");
        }
        w
    }

    /// A copy of the demo experiment.
    pub fn demo_copy() -> Workdir {
        let w = Workdir::empty();
        for entry in std::fs::read_dir(demo()).expect("demo folder") {
            let entry = entry.expect("entry");
            std::fs::copy(entry.path(), w.dir.join(entry.file_name())).expect("copy");
        }
        w
    }

    /// Writes a file in the experiment folder.
    pub fn write(&self, name: &str, text: &str) {
        std::fs::write(self.dir.join(name), text).expect("write");
    }

    /// Path of a file in the experiment folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Replaces `from` with `to` in a text file of the experiment.
    pub fn edit(&self, name: &str, from: &str, to: &str) {
        let text = std::fs::read_to_string(self.path(name)).expect("read");
        assert!(text.contains(from), "{name} does not contain {from:?}");
        self.write(name, &text.replacen(from, to, 1));
    }
}

/// The `ablate` binary.
pub fn ablate() -> Command {
    Command::cargo_bin("ablate").expect("binary")
}

/// The `ablate` binary as a user whom file modes bind: as root, `nobody` (uid and gid 65534), after
/// handing `tree` (which it must write beside) to that user; otherwise the current user.
#[cfg(unix)]
pub fn unprivileged(tree: &Path) -> std::process::Command {
    use std::os::unix::process::CommandExt as _;
    const NOBODY: u32 = 65534;
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("ablate"));
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        fn hand_over(p: &Path) {
            std::os::unix::fs::lchown(p, Some(NOBODY), Some(NOBODY)).unwrap();
            if p.is_dir() && !p.is_symlink() {
                for entry in std::fs::read_dir(p).unwrap() {
                    hand_over(&entry.unwrap().path());
                }
            }
        }
        hand_over(tree);
        // std drops the supplementary groups when it changes the uid from root.
        cmd.uid(NOBODY).gid(NOBODY);
    }
    cmd
}

/// Whether a verb's JSON warnings include `code`.
pub fn has_code(v: &serde_json::Value, code: &str) -> bool {
    codes(v).iter().any(|c| c == code)
}

/// The codes of a verb's JSON warnings.
pub fn codes(v: &serde_json::Value) -> Vec<String> {
    v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["code"].as_str().unwrap().to_string())
        .collect()
}

/// Runs a command that must fail with exit code 2 (bad input or usage), without a panic, and
/// returns its stderr.
pub fn fails(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(
        out.status.code(),
        Some(2),
        "expected exit 2, stderr: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
    stderr
}

/// Runs a command that must succeed (its stderr shown if it does not) and returns its output.
pub fn succeeds(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs a command that must succeed and returns its stdout parsed as JSON.
pub fn json(cmd: &mut Command) -> serde_json::Value {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

/// Runs `ablate check DIR`, expects exit code 2 and returns stderr.
pub fn check_fails(dir: &Path) -> String {
    fails(ablate().arg("check").arg(dir))
}

/// Analysis settings with `bootstrap` resamples and the defaults otherwise.
pub fn cfg(bootstrap: usize) -> ablate::analysis::Config {
    ablate::analysis::Config {
        bootstrap,
        ..ablate::analysis::Config::default()
    }
}

/// Asserts that `text` contains every needle.
pub fn assert_mentions(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(text.contains(n), "expected {n:?} in:\n{text}");
    }
}

/// Runs `ablate report --quiet --bootstrap 200 --out OUT DIR`, which must succeed.
pub fn report_into(out: &Path, dir: &Path) {
    let run = ablate()
        .args(["report", "--quiet", "--bootstrap", "200", "--out"])
        .arg(out)
        .arg(dir)
        .output()
        .expect("run");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// The `analysis.json` of the report in `out`.
pub fn analysis_json(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("analysis.json")).unwrap()).unwrap()
}

/// Runs `ablate import HARNESS SOURCES… --out OUT ARGS… --json` and returns the summary.
pub fn import(harness: &str, sources: &[PathBuf], out: &Path, args: &[&str]) -> serde_json::Value {
    json(
        ablate()
            .args(["import", harness])
            .args(sources)
            .arg("--out")
            .arg(out)
            .args(args)
            .arg("--json"),
    )
}

/// Runs `ablate import` expecting exit 2, and returns stderr.
pub fn import_fails(harness: &str, sources: &[PathBuf], out: &Path, args: &[&str]) -> String {
    fails(
        ablate()
            .args(["import", harness])
            .args(sources)
            .arg("--out")
            .arg(out)
            .args(args),
    )
}

/// An arm of an import summary, by name.
pub fn arm<'a>(summary: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    summary["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"] == name)
        .unwrap_or_else(|| panic!("no arm {name} in {summary}"))
}

/// Whether `ablate VERB` takes the option `long` (e.g. `--bootstrap`), from the registry that
/// `ablate schema --json` prints (read once).
pub fn takes(verb: &str, long: &str) -> bool {
    static SCHEMA: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    let schema = SCHEMA.get_or_init(|| json(ablate().args(["schema", "--json"])));
    let verbs = schema["verbs"].as_array().expect("schema lists verbs");
    let v = verbs
        .iter()
        .find(|v| v["name"] == verb)
        .unwrap_or_else(|| panic!("no verb {verb} in the schema"));
    v["options"]
        .as_array()
        .expect("a verb lists its options")
        .iter()
        .any(|o| o["long"] == long)
}

/// Runs a verb on the demo as `tests/cli/snapshot.rs` and the export tests do (a copy for the
/// verbs that write into the folder, 200 resamples, the arguments a verb needs), with `--json`
/// or for the terminal, and returns its output; `record` prints JSON whatever the flag. The
/// copy is returned too, so that its paths can be redacted while it lives.
pub fn demo_verb(verb: &str, export: Option<&Path>, json: bool) -> (std::process::Output, Workdir) {
    let copy = Workdir::demo_copy();
    let mut cmd = ablate();
    // For the terminal, the demo is named relative to the repository, so that a table that cuts
    // a long path at its width cuts it at the same place wherever the repository is.
    let d = if matches!(verb, "watch" | "next") {
        copy.dir.clone()
    } else if json {
        demo()
    } else {
        cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
        PathBuf::from("notebooks-data/support-eval-v3")
    };
    if verb == "replay" {
        cmd.args(["watch", "--replay"]).arg(&d);
    } else if verb == "next" {
        cmd.arg("next")
            .arg(&d)
            .args(["--calls", "500", "--out"])
            .arg(copy.root.path().join("batch.csv"));
    } else if verb == "plan" {
        cmd.args(["plan", "--units"])
            .arg(d.join("units.parquet"))
            .args(["--design", "pairs", "--pilot"])
            .arg(&d);
    } else {
        cmd.arg(verb).arg(&d);
    }
    if let Some(out) = export {
        cmd.arg("--export").arg(out);
    }
    // Fewer resamples for the verbs that take --bootstrap (as `ablate schema` says).
    let named = if verb == "replay" { "watch" } else { verb };
    if takes(named, "--bootstrap") {
        cmd.args(["--bootstrap", "200"]);
    }
    if json && verb != "record" {
        cmd.arg("--json");
    }
    (cmd.output().expect("run"), copy)
}

/// A verb's JSON on the demo ([`demo_verb`]), which must succeed.
pub fn run_demo_verb(verb: &str, export: Option<&Path>) -> serde_json::Value {
    let (out, _copy) = demo_verb(verb, export, true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

/// Copies the folder `from` (files and folders) to `to`.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Hidden files and folders ablate left in `dir` (`.ablate-tmp-*`, `.ablate-old-*`).
pub fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".ablate-"))
        .collect()
}

/// `ablate simulate` of a small experiment (20 cases, 4 arms) into `out`.
pub fn simulate_small(out: &Path) -> Command {
    let mut cmd = ablate();
    cmd.args([
        "simulate", "--quiet", "--cases", "20", "--arms", "4", "--out",
    ])
    .arg(out);
    cmd
}

/// 1234 as "1,234".
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Gives `cmd`'s child the default action for SIGINT: a test run started as a shell's background
/// job ignores SIGINT, and so would the child (ablate then leaves the signal alone).
#[cfg(unix)]
pub fn interruptible(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal() is async-signal-safe, the only call between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    cmd
}
