//! Issue 42, the fourth adversarial round: each test names what it protects. Data loss first
//! (an unreadable marker, `..` paths, a mistyped `--out`, concurrent `--into`, `--force` over
//! what a verb reads), then crashes and bounds, wrong results, and exposure.

use crate::common;

use std::path::{Path, PathBuf};

use common::{Workdir, ablate, assert_mentions, demo, fails, succeeds};

/// A folder of the user's: a file and a subfolder.
fn users_folder(dir: &Path) {
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("thesis.tex"), "precious").unwrap();
    std::fs::write(dir.join("sub/notes.md"), "mine").unwrap();
}

fn users_folder_survives(dir: &Path) {
    assert_eq!(
        std::fs::read_to_string(dir.join("thesis.tex")).unwrap(),
        "precious"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("sub/notes.md")).unwrap(),
        "mine"
    );
}

fn report(exp: &Path, out: &Path) -> assert_cmd::Command {
    let mut cmd = ablate();
    cmd.args(["report", "--quiet", "--bootstrap", "0", "--out"])
        .arg(out)
        .arg(exp);
    cmd
}

/// A small experiment `simulate` wrote (with its marker).
fn simulated(at: &Path) {
    let out = ablate()
        .args(["simulate", "--quiet", "--cases", "20", "--out"])
        .arg(at)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn lm_eval(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import/real-users/lm-eval")
        .join(rel)
}

// ---- data loss ----

/// Item 1: an empty marker, git conflict lines or another tool's marker never make a folder
/// replaceable.
#[test]
fn an_unreadable_marker_never_lets_report_delete_a_users_folder() {
    let root = tempfile::tempdir().unwrap();
    for (i, marker) in [
        "",
        "<<<<<<< HEAD\n{\"tool\": \"ablate\"}\n=======\n>>>>>>> theirs\n",
        r#"{"tool": "mytool", "version": "1", "command": [], "files": ["thesis.tex", "sub/notes.md"]}"#,
    ]
    .into_iter()
    .enumerate()
    {
        let mine = root.path().join(format!("mine{i}"));
        users_folder(&mine);
        std::fs::write(mine.join(".ablate-output"), marker).unwrap();
        let err = fails(&mut report(&demo(), &mine));
        assert_mentions(&err, &[".ablate-output", "vouch"]);
        users_folder_survives(&mine);
    }
}

/// Item 2: `..` after a folder that does not exist yet is resolved through the real file
/// system, so `missing/../link/exp` is seen to be the input `real/exp`.
#[cfg(unix)]
#[test]
fn dotdot_after_a_missing_folder_never_reaches_an_input() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("real")).unwrap();
    simulated(&root.path().join("real/exp"));
    std::os::unix::fs::symlink("real", root.path().join("l")).unwrap();
    let err = fails(
        ablate()
            .current_dir(root.path())
            .args(["report", "--quiet", "--bootstrap", "0", "real/exp"])
            .args(["--out", "missing/../l/exp"]),
    );
    assert_mentions(&err, &["which this command reads"]);
    let err = fails(
        ablate()
            .current_dir(root.path())
            .args(["sweep", "--quiet", "--bootstrap", "0", "real/exp"])
            .args(["--export", "missing/../l/exp"]),
    );
    assert_mentions(&err, &["which this command reads"]);
    assert!(root.path().join("real/exp/experiment.toml").is_file());
    assert!(root.path().join("real/exp/results.parquet").is_file());
}

/// Item 3: a report or an export never replaces an experiment folder, even one ablate wrote;
/// `simulate` may replace its own.
#[test]
fn a_mistyped_out_never_deletes_an_experiment() {
    let root = tempfile::tempdir().unwrap();
    let exp2 = root.path().join("exp2");
    simulated(&exp2);
    let err = fails(&mut report(&demo(), &exp2));
    assert_mentions(&err, &["experiment folder", "never replaces an experiment"]);
    let err = fails(
        ablate()
            .args(["sweep", "--quiet", "--bootstrap", "0", "--export"])
            .arg(&exp2)
            .arg(demo()),
    );
    assert_mentions(&err, &["experiment folder"]);
    assert!(exp2.join("experiment.toml").is_file());
    // simulate replaces the experiment it wrote, whose marker vouches for every file.
    simulated(&exp2);
}

/// Item 4: two imports into one experiment at once both land (an exclusive lock on the
/// folder for the whole read–write–commit).
#[test]
fn concurrent_imports_into_one_experiment_keep_both_arms() {
    let pe = lm_eval("prompt-edit");
    for round in 0..4 {
        let root = tempfile::tempdir().unwrap();
        let exp = root.path().join("exp");
        let out = ablate()
            .args(["import", "lm-eval", "--quiet"])
            .arg(pe.join("run-a1"))
            .arg(pe.join("run-b"))
            .arg("--out")
            .arg(&exp)
            .args(["--baseline", "run-a1", "--threshold", "0.02"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let spawn = |name: &str, source: PathBuf| {
            std::process::Command::new(assert_cmd::cargo::cargo_bin("ablate"))
                .args(["import", "lm-eval", "--quiet"])
                .arg(&source)
                .arg("--into")
                .arg(&exp)
                .arg("--arm")
                .arg(format!("{name}={}", source.display()))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let a = spawn("rerun_a", pe.join("run-a2"));
        let b = spawn("arith_pe", lm_eval("results-name"));
        for child in [a, b] {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let check = succeeds(ablate().args(["check", "--json"]).arg(&exp));
        let text = String::from_utf8_lossy(&check.stdout);
        assert_mentions(&text, &["rerun_a", "arith_pe"]);
    }
}

/// Items 5 and 22: no output file is a file the verb reads or a table the experiment would
/// read, with or without `--force`, whether it exists yet or not.
#[test]
fn no_output_file_is_a_file_the_experiment_reads() {
    let w = Workdir::demo_copy();
    for (name, force) in [
        ("experiment.toml", true),
        (".ablate-watch.json", true),
        ("results.csv", false),
        ("results.parquet", true),
        ("arms.csv", false),
    ] {
        let mut cmd = ablate();
        cmd.args(["next", "--quiet", "--calls", "10"])
            .arg(&w.dir)
            .arg("--out")
            .arg(w.path(name));
        if force {
            cmd.arg("--force");
        }
        let err = fails(&mut cmd);
        assert_mentions(&err, &["never writes an output there"]);
    }
    let err = fails(
        ablate()
            .args(["plan", "--quiet", "--confirm"])
            .arg(&w.dir)
            .arg("--out")
            .arg(w.path("arms.csv")),
    );
    assert_mentions(&err, &["never writes an output there"]);
    assert!(!w.path("results.csv").exists());
    assert!(!w.path("arms.csv").exists());
    let ok = ablate().arg("check").arg(&w.dir).output().unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

/// Item 9: a marker key that climbs out of the folder (`d/../../…/dev/zero`) is never read:
/// `import --into` finishes, and leaves no temporary folder.
#[cfg(unix)]
#[test]
fn a_marker_path_outside_the_folder_is_never_read() {
    let pe = lm_eval("prompt-edit");
    let root = tempfile::tempdir().unwrap();
    let exp = root.path().join("exp");
    let out = ablate()
        .args(["import", "lm-eval", "--quiet"])
        .arg(pe.join("run-a1"))
        .arg("--out")
        .arg(&exp)
        .args(["--threshold", "0.02"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let marker_path = exp.join(".ablate-output");
    let mut marker: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&marker_path).unwrap()).unwrap();
    let climb = format!("d/{}dev/zero", "../".repeat(40));
    marker["sha256"][&climb] = "00".into();
    marker["files"].as_array_mut().unwrap().push(climb.into());
    std::fs::write(&marker_path, marker.to_string()).unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ablate"))
        .args(["import", "lm-eval", "--quiet"])
        .arg(pe.join("run-b"))
        .arg("--into")
        .arg(&exp)
        .arg("--arm")
        .arg(format!("run-b={}", pe.join("run-b").display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("import --into still hashing after 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(status.success());
    let debris: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(".ablate-"))
        .collect();
    assert!(debris.is_empty(), "{debris:?}");
}
