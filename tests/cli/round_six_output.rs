//! Output safety, sixth round (2026-12-05): each test names what it protects. A writer replaced
//! a folder of another kind (`sweep --export reports/<set>` a report, `simulate --out` and
//! `import --out` a report, `report` an export); the writer is recorded in the marker, and
//! `watch` and `next` leave it as it is; Ctrl-C or SIGTERM during a write left the hidden
//! temporary folder behind; a read-only report was replaced and then left as `.ablate-old-*` with
//! exit 1; errors named the hidden temporary paths instead of the user's.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{
    ablate, assert_mentions, fails, import, import_fails, leftovers, simulate_small as simulate,
    succeeds,
};

use crate::import::fixture;

fn report(exp: &Path, out: &Path) -> assert_cmd::Command {
    let mut cmd = ablate();
    cmd.args(["report", "--quiet", "--bootstrap", "0", "--out"])
        .arg(out)
        .arg(exp);
    cmd
}

fn export(verb: &str, exp: &Path, dir: &Path) -> assert_cmd::Command {
    let mut cmd = ablate();
    cmd.args([verb, "--quiet", "--bootstrap", "0"])
        .arg(exp)
        .arg("--export")
        .arg(dir);
    cmd
}

fn marker(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join(".ablate-output")).unwrap()).unwrap()
}

/// Makes the marker of `dir` one of ablate before the `writer` field.
fn without_writer(dir: &Path) {
    let mut m = marker(dir);
    m.as_object_mut().unwrap().remove("writer");
    std::fs::write(dir.join(".ablate-output"), m.to_string()).unwrap();
}

/// A folder's files and their bytes, to compare before and after a refused run.
fn bytes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

// ---- item 1: each writer replaces only a folder of its own kind ----

/// `sweep --export reports/<set>` replaced the report there, and `simulate --out` and `import
/// --out` replaced a report with an experiment: the marker vouched for every file and nothing
/// asked which writer had made the folder. Each is refused now (exit 2, nothing touched), and
/// each writer still replaces its own.
#[test]
fn a_writer_replaces_only_a_folder_of_its_own_kind() {
    let root = tempfile::tempdir().unwrap();
    let exp = root.path().join("e");
    succeeds(&mut simulate(&exp));
    let r = root.path().join("r");
    succeeds(&mut report(&exp, &r));
    assert_eq!(marker(&r)["writer"], "report");
    let before = bytes(&r);
    let err = fails(&mut export("sweep", &exp, &r));
    assert_mentions(
        &err,
        &[
            "is a report",
            "--export never replaces it",
            "a folder of its own",
        ],
    );
    let err = fails(&mut simulate(&r));
    assert_mentions(
        &err,
        &["is a report", "`ablate simulate --out` never replaces it"],
    );
    let err = import_fails(
        "inspect",
        &[fixture("inspect/v0.3.160")],
        &r,
        &["--threshold", "0.02"],
    );
    assert_mentions(
        &err,
        &["is a report", "`ablate import --out` never replaces it"],
    );
    assert_eq!(bytes(&r), before, "the report as it was");

    // `report --out R --export X`: one command line, two folders, each of its own kind.
    let x = root.path().join("x");
    succeeds(report(&exp, &r).arg("--export").arg(&x));
    assert_eq!(marker(&x)["writer"], "export");
    let err = fails(&mut report(&exp, &x));
    assert_mentions(
        &err,
        &["is an export", "`ablate report --out` never replaces it"],
    );
    // An export is replaced by another export, of any verb; a report by a report.
    succeeds(&mut export("variance", &exp, &x));
    succeeds(&mut report(&exp, &r));
    // An experiment is never replaced by a report or an export (as before).
    assert_mentions(&fails(&mut export("sweep", &exp, &exp)), &["--export"]);
    assert!(
        leftovers(root.path()).is_empty(),
        "{:?}",
        leftovers(root.path())
    );
}

/// A folder written before markers recorded their writer is read from its command line and its
/// files: `report … --export X` wrote a report and an export from one command line, told apart by
/// the report's index.html.
#[test]
fn markers_without_a_writer_are_read_from_their_command_and_files() {
    let root = tempfile::tempdir().unwrap();
    let exp = root.path().join("e");
    succeeds(&mut simulate(&exp));
    let (r, x) = (root.path().join("r"), root.path().join("x"));
    succeeds(report(&exp, &r).arg("--export").arg(&x));
    for dir in [&r, &x, &exp] {
        without_writer(dir);
    }
    assert_mentions(&fails(&mut export("sweep", &exp, &r)), &["is a report"]);
    assert_mentions(&fails(&mut report(&exp, &x)), &["is an export"]);
    assert_mentions(&fails(&mut simulate(&r)), &["is a report"]);
    succeeds(&mut export("sweep", &exp, &x));
    succeeds(&mut report(&exp, &r));
    // A simulated experiment of before is replaced by simulate, as it was.
    succeeds(&mut simulate(&exp));
}

// ---- item 2: the writer is the marker's, and watch keeps it ----

/// `watch` records its decisions beside the experiment (`.ablate-watch.json`) and never rewrites
/// the marker: the writer stays `simulate` (or `import`), so `simulate` still replaces its own
/// experiment and never an imported one; `import --into` records `import-into`.
#[test]
fn watch_and_next_keep_the_experiments_writer() {
    let root = tempfile::tempdir().unwrap();
    let sim = root.path().join("sim");
    succeeds(
        ablate()
            .args([
                "simulate",
                "--quiet",
                "--cases",
                "400",
                "--arms",
                "3",
                "--repeats",
                "3",
                "--out",
            ])
            .arg(&sim),
    );
    let written = std::fs::read(sim.join(".ablate-output")).unwrap();
    succeeds(ablate().args(["watch", "--quiet"]).arg(&sim));
    succeeds(ablate().args(["watch", "--quiet", "--reopen"]).arg(&sim));
    succeeds(
        ablate()
            .args(["next", "--quiet", "--calls", "10", "--out"])
            .arg(root.path().join("batch.parquet"))
            .arg(&sim),
    );
    assert!(
        sim.join(".ablate-watch.json").is_file(),
        "decisions recorded"
    );
    assert_eq!(std::fs::read(sim.join(".ablate-output")).unwrap(), written);
    assert_eq!(marker(&sim)["writer"], "simulate");
    succeeds(&mut simulate(&sim));

    let real = root.path().join("real");
    import(
        "inspect",
        &[fixture("inspect/v0.3.160/arm_full.eval")],
        &real,
        &["--threshold", "0.02"],
    );
    assert_eq!(marker(&real)["writer"], "import");
    succeeds(ablate().args(["watch", "--quiet"]).arg(&real));
    assert_eq!(marker(&real)["writer"], "import");
    assert_mentions(
        &fails(&mut simulate(&real)),
        &["imported from harness logs"],
    );
    let log = fixture("inspect/v0.3.160/arm_no_examples.eval");
    succeeds(
        ablate()
            .args(["import", "inspect", "--quiet"])
            .arg(&log)
            .arg("--arm")
            .arg(format!("no_examples={}", log.display()))
            .arg("--into")
            .arg(&real),
    );
    assert_eq!(marker(&real)["writer"], "import-into");
    assert_mentions(
        &fails(&mut simulate(&real)),
        &["grown with `ablate import --into`"],
    );
}

// ---- item 3: an interrupted write cleans up ----

/// Ctrl-C (SIGINT) or SIGTERM during a long write left its hidden `.ablate-tmp-*` folder beside
/// the target (the docs promised that only SIGKILL does). Now the handler removes it, the earlier
/// output stays whole, and the process ends by the signal (the shell's 130 or 143).
#[cfg(unix)]
#[test]
fn an_interrupted_write_leaves_no_temporary_folder() {
    use std::os::unix::process::ExitStatusExt as _;
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("big");
    succeeds(&mut simulate(&out));
    let before = bytes(&out);
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("ablate"));
        cmd.args([
            "simulate",
            "--quiet",
            "--cases",
            "20000",
            "--arms",
            "42",
            "--repeats",
            "3",
            "--out",
        ])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        let mut child = common::interruptible(&mut cmd).spawn().unwrap();
        // Interrupt once the temporary folder exists: the write is under way.
        let deadline = Instant::now() + Duration::from_secs(120);
        while leftovers(root.path()).is_empty() {
            assert!(
                child.try_wait().unwrap().is_none(),
                "the run ended before it could be interrupted"
            );
            assert!(Instant::now() < deadline, "no temporary folder after 120 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(100));
        // SAFETY: kill on the pid of a child this test spawned and has not reaped.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let run = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(
            run.status.signal() == Some(signal) || run.status.code() == Some(128 + signal),
            "{:?}: {stderr}",
            run.status
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(
            leftovers(root.path()).is_empty(),
            "{:?}",
            leftovers(root.path())
        );
        assert_eq!(bytes(&out), before, "the earlier output, whole");
    }
}

// ---- item 4: a read-only output ----

/// A report made read-only (`chmod a-w`) was replaced, and its removal then failed: exit 1 naming
/// `./.ablate-old-*`, the old report left hidden beside the new one, and every later run left
/// another. `import --into` a read-only experiment left `.ablate-tmp-*` (it had taken the folder's
/// read-only mode). Both are refused now before anything moves, naming the folder and `chmod`.
///
/// Root may write anything, so as root (CI) the tree is handed to `nobody` and the refused runs
/// run as `nobody`: the modes bind, and the test runs everywhere rather than skipping itself.
#[cfg(unix)]
#[test]
fn a_read_only_output_is_refused_before_anything_moves() {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |p: &Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    };
    let root = tempfile::tempdir().unwrap();
    let exp = root.path().join("e");
    succeeds(&mut simulate(&exp));
    let r = root.path().join("r");
    succeeds(&mut report(&exp, &r));
    mode(&r, 0o555);
    let mut refused = common::unprivileged(root.path());
    refused
        .args(["report", "--quiet", "--bootstrap", "0", "--out"])
        .arg(&r)
        .arg(&exp);
    let err = fails(&mut assert_cmd::Command::from_std(refused));
    assert_mentions(&err, &["read-only", "chmod -R u+w"]);
    assert!(!err.contains(".ablate-"), "{err}");
    assert!(
        leftovers(root.path()).is_empty(),
        "{:?}",
        leftovers(root.path())
    );
    mode(&r, 0o755);
    succeeds(&mut report(&exp, &r));
    assert!(
        leftovers(root.path()).is_empty(),
        "{:?}",
        leftovers(root.path())
    );

    let real = root.path().join("real");
    import(
        "inspect",
        &[fixture("inspect/v0.3.160/arm_full.eval")],
        &real,
        &["--threshold-drop", "0.02"],
    );
    mode(&real, 0o555);
    let log = fixture("inspect/v0.3.160/arm_no_examples.eval");
    let mut refused = common::unprivileged(root.path());
    refused
        .args(["import", "inspect", "--quiet"])
        .arg(&log)
        .arg("--arm")
        .arg(format!("no_examples={}", log.display()))
        .arg("--into")
        .arg(&real);
    let err = fails(&mut assert_cmd::Command::from_std(refused));
    assert_mentions(&err, &["read-only", "chmod -R u+w"]);
    assert!(
        leftovers(root.path()).is_empty(),
        "{:?}",
        leftovers(root.path())
    );
    mode(&real, 0o755);
}

// ---- item 5: errors name the user's paths ----

/// A file output in a missing folder failed with `nodir/.ablate-tmp-123-0.parquet: not found`, and
/// a write that failed inside a folder output named `./.ablate-tmp-123-0/results.parquet`. The
/// first is refused before any work, naming the folder; the second names the output's path.
#[test]
fn errors_name_the_users_path_not_the_hidden_one() {
    let root = tempfile::tempdir().unwrap();
    let exp = root.path().join("e");
    succeeds(&mut simulate(&exp));
    let batch = root.path().join("nodir/batch.parquet");
    let err = fails(
        ablate()
            .args(["next", "--calls", "10", "--out"])
            .arg(&batch)
            .arg(&exp),
    );
    assert_mentions(&err, &["nodir/batch.parquet", "does not exist", "mkdir -p"]);
    assert!(!err.contains(".ablate-tmp"), "{err}");
    let err = fails(
        ablate()
            .args(["plan", "--design", "loo", "--units"])
            .arg(exp.join("units.parquet"))
            .arg("--out")
            .arg(root.path().join("nodir/arms.csv")),
    );
    assert_mentions(&err, &["nodir/arms.csv", "does not exist"]);
    assert!(!root.path().join("nodir").exists(), "no folder made");

    // A write that fails half-way (the file-size limit) names the output's file.
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt as _;
        let out = root.path().join("sim");
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("ablate"));
        cmd.args(["simulate", "--quiet", "--cases", "200", "--out"])
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: signal() and setrlimit() are async-signal-safe, the only calls between fork
        // and exec.
        unsafe {
            cmd.pre_exec(|| {
                // EFBIG instead of death by SIGXFSZ past the limit.
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let limit = libc::rlimit {
                    rlim_cur: 64 << 10,
                    rlim_max: 64 << 10,
                };
                libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
                Ok(())
            });
        }
        let run = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(!run.status.success(), "{stderr}");
        assert!(stderr.contains(&out.display().to_string()), "{stderr}");
        assert!(!stderr.contains(".ablate-tmp"), "{stderr}");
        assert!(!out.exists());
        assert!(
            leftovers(root.path()).is_empty(),
            "{:?}",
            leftovers(root.path())
        );
    }
}
