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

/// The lm-eval prompt-edit runs a1 and b imported into `root/exp`.
fn prompt_edit_experiment(root: &tempfile::TempDir) -> PathBuf {
    let pe = lm_eval("prompt-edit");
    let exp = root.path().join("exp");
    succeeds(
        ablate()
            .args(["import", "lm-eval", "--quiet"])
            .arg(pe.join("run-a1"))
            .arg(pe.join("run-b"))
            .arg("--out")
            .arg(&exp)
            .args(["--baseline", "run-a1", "--threshold", "0.02"]),
    );
    exp
}

/// Item 4: two imports into one experiment at once both land (an exclusive lock on the
/// folder for the whole read–write–commit).
#[test]
fn concurrent_imports_into_one_experiment_keep_both_arms() {
    let pe = lm_eval("prompt-edit");
    for round in 0..4 {
        let root = tempfile::tempdir().unwrap();
        let exp = prompt_edit_experiment(&root);
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

/// A verb reading an experiment while `import --into` updates it reads one generation of the
/// folder, the one before or the one after, and succeeds: readers take a shared lock while they
/// load, and the update swaps the folder only when they are done (a `sweep` during an update had
/// read the new cases.parquet beside the old results.parquet and exited 2, calling its input
/// corrupt).
#[test]
fn readers_during_an_import_into_read_one_generation() {
    let pe = lm_eval("prompt-edit");
    for round in 0..4 {
        let root = tempfile::tempdir().unwrap();
        let exp = prompt_edit_experiment(&root);
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let exp = exp.clone();
                std::thread::spawn(move || {
                    let mut failures = Vec::new();
                    for _ in 0..6 {
                        let out =
                            std::process::Command::new(assert_cmd::cargo::cargo_bin("ablate"))
                                .args(["sweep", "--quiet", "--json", "--bootstrap", "0"])
                                .arg(&exp)
                                .output()
                                .unwrap();
                        if !out.status.success() {
                            failures.push(String::from_utf8_lossy(&out.stderr).into_owned());
                        }
                    }
                    failures
                })
            })
            .collect();
        succeeds(
            ablate()
                .args(["import", "lm-eval", "--quiet"])
                .arg(pe.join("run-a2"))
                .arg("--into")
                .arg(&exp)
                .arg("--arm")
                .arg(format!("rerun_a={}", pe.join("run-a2").display())),
        );
        for r in readers {
            let failures = r.join().unwrap();
            assert!(failures.is_empty(), "round {round}: {failures:?}");
        }
    }
}

/// The folder `exp` opened and held with a shared `flock`, as a reader holds it while it loads
/// (released when the file is dropped).
#[cfg(unix)]
fn read_lock(exp: &Path) -> std::fs::File {
    use std::os::fd::AsRawFd;
    let reader = std::fs::File::open(exp).unwrap();
    // SAFETY: flock on a descriptor this test owns; released when it is closed.
    assert_eq!(unsafe { libc::flock(reader.as_raw_fd(), libc::LOCK_SH) }, 0);
    reader
}

/// `import lm-eval --into exp` of the prompt-edit fixture's second run of prompt A, as arm
/// `rerun_a`, ready to spawn.
#[cfg(unix)]
fn rerun_into(exp: &Path) -> std::process::Command {
    let run = lm_eval("prompt-edit").join("run-a2");
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("ablate"));
    cmd.args(["import", "lm-eval", "--quiet"])
        .arg(&run)
        .arg("--into")
        .arg(exp)
        .arg("--arm")
        .arg(format!("rerun_a={}", run.display()));
    cmd
}

/// Whether a waiting writer's marker (`.ablate-writer-*`) stands in `dir`.
#[cfg(unix)]
fn writer_marked(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().flatten().any(|e| {
        e.file_name()
            .to_string_lossy()
            .starts_with(".ablate-writer-")
    })
}

/// Waits (at most 60 s) until a waiting writer's marker stands in `dir`.
#[cfg(unix)]
fn wait_for_writer_marker(dir: &Path) {
    let start = std::time::Instant::now();
    while !writer_marked(dir) {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "the waiting import left no marker"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// An update that has to wait for a reader goes before the readers that come after it: it
/// holds a locked marker beside the folder while it waits, a later `sweep` waits behind it (and
/// says so) and reads the grown experiment. Linux `flock` alone grants a new shared lock while an
/// exclusive one waits, so the later reader went first and read the old one, and overlapping
/// readers could keep `import --into` out indefinitely.
#[cfg(unix)]
#[test]
fn a_waiting_import_goes_before_readers_that_come_after_it() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let root = tempfile::tempdir().unwrap();
    let exp = prompt_edit_experiment(&root);
    // An earlier reader, holding the folder's shared lock as `report` does while it works.
    let earlier = read_lock(&exp);
    let bin = assert_cmd::cargo::cargo_bin("ablate");
    let writer = rerun_into(&exp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_writer_marker(root.path());
    let mut later = Command::new(&bin)
        .args(["sweep", "--quiet", "--json", "--bootstrap", "0"])
        .arg(&exp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The later reader's stderr, line by line: it must say it waits behind the writer before
    // the earlier reader lets go.
    let (said, heard) = std::sync::mpsc::channel();
    let stderr = later.stderr.take().unwrap();
    let lines = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("waiting for another ablate that is waiting to change") {
                let _ = said.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    assert!(
        heard
            .recv_timeout(std::time::Duration::from_secs(60))
            .is_ok(),
        "the later reader did not wait behind the waiting import"
    );
    drop(earlier);
    let w = writer.wait_with_output().unwrap();
    assert!(w.status.success(), "{}", String::from_utf8_lossy(&w.stderr));
    let r = later.wait_with_output().unwrap();
    let stderr = lines.join().unwrap();
    assert!(r.status.success(), "{stderr}");
    let sweep: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let arms: Vec<&str> = sweep["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["arm"].as_str().unwrap())
        .collect();
    assert!(
        arms.contains(&"rerun_a"),
        "the later reader read the folder before the import: {arms:?}"
    );
    assert!(
        !writer_marked(root.path()),
        "the marker stayed after the import"
    );
}

/// An import interrupted while it waits for a reader withdraws its marker on the way out, as it
/// would have on getting the folder: nothing is left beside the experiment, the folder is as it
/// was, and a later `sweep` reads it at once.
#[cfg(unix)]
#[test]
fn an_interrupted_waiting_import_withdraws_its_marker() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let root = tempfile::tempdir().unwrap();
    let exp = prompt_edit_experiment(&root);
    let before = std::fs::read(exp.join("results.parquet")).unwrap();
    let reader = read_lock(&exp);
    let mut cmd = rerun_into(&exp);
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = common::interruptible(&mut cmd).spawn().unwrap();
    wait_for_writer_marker(root.path());
    // SAFETY: kill on the pid of a child this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let interrupted = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if interrupted.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            panic!("the interrupted import had not ended after 30 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let run = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.signal() == Some(libc::SIGINT) || run.status.code() == Some(130),
        "{:?}: {stderr}",
        run.status
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        !writer_marked(root.path()),
        "the interrupted import left its marker: {stderr}"
    );
    drop(reader);
    assert_eq!(
        std::fs::read(exp.join("results.parquet")).unwrap(),
        before,
        "the interrupted import changed the experiment"
    );
    ablate()
        .args(["sweep", "--quiet", "--json", "--bootstrap", "0"])
        .arg(&exp)
        .timeout(std::time::Duration::from_secs(30))
        .assert()
        .success();
}

/// A writer's marker that no writer holds (left by one that was killed, or made by anyone) is
/// never waited for: the reader goes on at once and removes it.
#[cfg(unix)]
#[test]
fn a_marker_no_writer_holds_is_not_waited_for() {
    use std::os::unix::fs::MetadataExt;
    let root = tempfile::tempdir().unwrap();
    let exp = prompt_edit_experiment(&root);
    let meta = std::fs::metadata(&exp).unwrap();
    let real = std::fs::canonicalize(root.path()).unwrap();
    let marker = real.join(format!(".ablate-writer-{}-{}", meta.dev(), meta.ino()));
    std::fs::write(&marker, "").unwrap();
    let out = ablate()
        .args(["sweep", "--quiet", "--json", "--bootstrap", "0"])
        .arg(&exp)
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("waiting"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!marker.exists(), "the stale marker stayed");
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

/// Item 22, on a case-insensitive file system (macOS, Windows): `Results.CSV` is the
/// `results.csv` the experiment reads.
#[test]
fn an_output_named_like_a_table_in_another_case_is_refused() {
    let w = Workdir::demo_copy();
    let err = fails(
        ablate()
            .args(["next", "--quiet", "--calls", "10"])
            .arg(&w.dir)
            .arg("--out")
            .arg(w.path("Results.CSV")),
    );
    assert_mentions(&err, &["never writes an output there"]);
}

// ---- crashes and bounds ----

/// A copy of a fixture experiment folder.
fn fixture_copy(rel: &str) -> Workdir {
    let w = Workdir::empty();
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), w.dir.join(entry.file_name())).unwrap();
    }
    w
}

/// Item 10: one damaged byte in a Parquet footer panicked in polars-parquet ("thrift bool
/// field", exit 101): the demo's cases.parquet with byte 2595 (a statistics struct's
/// null_count) 0 → 158, and a pandas-written one whose `is_max_value_exact` (byte 562) is
/// retyped from boolean to integer (0x11 → 0x15). Both are bad input naming the file.
#[test]
fn a_damaged_parquet_footer_is_bad_input_not_a_panic() {
    for (w, at, from, to) in [
        (Workdir::demo_copy(), 2595, 0x00, 0x9E),
        (
            fixture_copy("tests/fixtures/pandas/encodings"),
            562,
            0x11,
            0x15,
        ),
    ] {
        let path = w.path("cases.parquet");
        let mut bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes[at], from, "the fixture changed: find the byte again");
        bytes[at] = to;
        std::fs::write(&path, bytes).unwrap();
        let err = fails(ablate().arg("check").arg(&w.dir));
        assert_mentions(&err, &["cases.parquet", "not a readable Parquet file"]);
    }
}

/// Item 11: U+FFFE in an arm name passed `check`, then `report` failed with "internal check
/// failed … non-XML character … This is a bug". Unicode noncharacters are refused at load, as
/// control characters are.
#[test]
fn noncharacters_in_ids_are_refused_at_load() {
    for (file, from, to, column) in [
        ("arms.csv", "without-ex1,", "without\u{FFFE}ex1,", "`arm`"),
        ("arms.csv", "without-ex1,", "without-ex1\u{FFFF},", "`arm`"),
        ("cases.csv", "c3,", "c3\u{FDD0},", "`case_id`"),
        (
            "units.csv",
            "few_shot/02,",
            "few_shot/02\u{10FFFF},",
            "`unit`",
        ),
    ] {
        let w = Workdir::tiny();
        w.edit(file, from, to);
        let err = fails(ablate().arg("check").arg(&w.dir));
        assert_mentions(&err, &[file, column, "noncharacter"]);
    }
}

/// Item 12: a thread count of 100,000 (POLARS_MAX_THREADS, RAYON_NUM_THREADS) panicked with a
/// backtrace under `ulimit -v`, when the pool could not start. Counts beyond 4 per core (and at
/// least 256) are refused, text where Polars parses an integer with `expect` too; a small count
/// runs.
#[test]
fn absurd_thread_counts_are_refused_not_a_panic() {
    let w = Workdir::tiny();
    for var in [
        "POLARS_MAX_THREADS",
        "RAYON_NUM_THREADS",
        "POLARS_ASYNC_THREAD_COUNT",
    ] {
        let err = fails(ablate().env(var, "100000").arg("check").arg(&w.dir));
        assert_mentions(&err, &[var, "100000", "at most"]);
    }
    let err = fails(
        ablate()
            .env("POLARS_CONCURRENCY_BUDGET", "lots")
            .arg("check")
            .arg(&w.dir),
    );
    assert_mentions(&err, &["POLARS_CONCURRENCY_BUDGET", "1 or more"]);
    succeeds(
        ablate()
            .env("POLARS_MAX_THREADS", "4")
            .env("RAYON_NUM_THREADS", "4")
            .arg("check")
            .arg(&w.dir),
    );
}

/// Item 21: `plan` printed "detecting inf needs 0 cases" and "needs
/// 18,446,744,073,709,551,616 cases" for a threshold or sd that is no usable number, and
/// `curve` "$inf a day … saves $NaN" for a price and traffic of 1e308.
#[test]
fn plan_and_curve_refuse_numbers_that_print_nonsense() {
    let units = demo().join("units.parquet");
    for (flag, value) in [
        ("--threshold-drop", "NaN"),
        ("--threshold-drop", "inf"),
        ("--threshold-drop", "-0.5"),
        ("--sd", "NaN"),
        ("--sd", "-1"),
        ("--sd", "inf"),
        ("--sd", "0"),
        ("--price-per-mtok", "-1"),
        ("--price-per-mtok", "1e308"),
        ("--tokens-per-call", "1e300"),
    ] {
        let mut cmd = ablate();
        cmd.args(["plan", "--design", "loo", "--units"])
            .arg(&units)
            .arg(format!("{flag}={value}"));
        if flag != "--sd" {
            cmd.args(["--sd", "0.3"]);
        }
        let err = fails(&mut cmd);
        assert_mentions(&err, &[flag, "finite"]);
    }
    succeeds(
        ablate()
            .args(["plan", "--design", "loo", "--units"])
            .arg(&units)
            .args(["--sd", "0.3", "--threshold-drop", "0.02"]),
    );
    let err = fails(ablate().arg("curve").arg(demo()).args([
        "--price-per-mtok",
        "1e308",
        "--requests-per-day",
        "1e308",
    ]));
    assert_mentions(&err, &["--price-per-mtok", "--requests-per-day", "finite"]);
}

// ---- exposure ----

/// A report's CSV kept a slice name's raw NUL and ESC (a terminal that `cat`s it runs the escape
/// code): control characters are written as U+FFFD, as in the report's HTML and Markdown. The
/// slice reaches the interactions table's "lost by slice" column through a composed arm.
#[test]
fn report_csvs_carry_no_raw_control_characters() {
    let w = Workdir::tiny();
    w.write(
        "arms.csv",
        "arm,removed,components\nbaseline,,\nwithout-ex1,few_shot/01,\nwithout-ex2,few_shot/02,\nwithout-examples,few_shot/01;few_shot/02,without-ex1;without-ex2\n",
    );
    let mut results = std::fs::read_to_string(w.path("results.csv")).unwrap();
    for case in ["c1", "c2", "c3", "s1"] {
        for repeat in 0..2 {
            results.push_str(&format!("{case},without-ex2,{repeat},1\n"));
        }
    }
    w.write("results.csv", &results);
    let cases = std::fs::read_to_string(w.path("cases.csv")).unwrap();
    w.write(
        "cases.csv",
        &cases.replace("billing", "\"bill\u{0}ing\u{1b}[31m\""),
    );
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("rep");
    common::report_into(&out, &w.dir);
    let mut shown = false;
    for entry in std::fs::read_dir(out.join("tables")).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let raw = bytes
            .iter()
            .find(|&&b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) || b == 0x7f);
        assert!(
            raw.is_none(),
            "{}: a raw control byte {raw:?}",
            path.display()
        );
        shown |= String::from_utf8_lossy(&bytes).contains("bill\u{FFFD}ing\u{FFFD}[31m");
    }
    assert!(shown, "the slice is in some table, as U+FFFD");
}

/// Items 24 and 25: a private folder stays private. `report --out` into an empty 0700 folder
/// (as the Python module's `ablate.report()` makes) and `import --into` a 0700 experiment had
/// left 0755 folders that other users could read.
#[cfg(unix)]
#[test]
fn private_folders_stay_private() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let root = tempfile::tempdir().unwrap();
    let private = root.path().join("priv");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    succeeds(&mut report(&demo(), &private));
    assert_eq!(mode(&private), 0o700);

    let pe = lm_eval("prompt-edit");
    let exp = root.path().join("exp");
    succeeds(
        ablate()
            .args(["import", "lm-eval", "--quiet"])
            .arg(pe.join("run-a1"))
            .arg("--out")
            .arg(&exp)
            .args(["--threshold", "0.02"]),
    );
    std::fs::set_permissions(&exp, std::fs::Permissions::from_mode(0o700)).unwrap();
    succeeds(
        ablate()
            .args(["import", "lm-eval", "--quiet"])
            .arg(pe.join("run-b"))
            .arg("--into")
            .arg(&exp)
            .arg("--arm")
            .arg(format!("run-b={}", pe.join("run-b").display())),
    );
    assert_eq!(mode(&exp), 0o700);
}

/// A file given by a flag (a mix, a policy, sums, a planned design) that is a folder, a FIFO or
/// a device is refused by name, exit 2, without being opened: a FIFO had hung `reweight --mix`
/// and `sweep --from-aggregates` until killed, /dev/zero as `--policy` grew past 6 GB, and a
/// folder gave the OS's "Is a directory" with exit 1.
#[test]
fn a_flags_file_that_is_a_folder_fifo_or_device_is_refused_unopened() {
    let w = Workdir::empty();
    let fifo = w.dir.join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let folder = w.dir.join("folder");
    std::fs::create_dir(&folder).unwrap();
    let demo = demo();
    let zero = PathBuf::from("/dev/zero");
    for (verb, flag) in [
        ("reweight", "--mix"),
        ("reweight", "--mix-from"),
        ("context", "--policy"),
        ("sweep", "--from-aggregates"),
    ] {
        for (path, said) in [
            (&fifo, "is not a plain file"),
            (&folder, "is a folder"),
            (&zero, "is not a plain file"),
        ] {
            let err = fails(
                ablate()
                    .arg(verb)
                    .arg(&demo)
                    .arg(flag)
                    .arg(path)
                    .timeout(std::time::Duration::from_secs(60)),
            );
            assert_mentions(&err, &[said, flag]);
        }
    }
    let err = fails(
        ablate()
            .args(["simulate", "--quiet", "--out"])
            .arg(w.dir.join("sim"))
            .arg("--design")
            .arg(&folder),
    );
    assert_mentions(&err, &["is a folder", "--design"]);
}

/// A policy file is a few lines of TOML: one of megabytes is refused before it is read whole.
#[test]
fn a_policy_file_of_megabytes_is_refused_unread() {
    let w = Workdir::empty();
    let big = w.dir.join("policy.toml");
    std::fs::write(&big, vec![b'#'; 2 << 20]).unwrap();
    let err = fails(
        ablate()
            .arg("context")
            .arg(demo())
            .arg("--policy")
            .arg(&big),
    );
    assert_mentions(&err, &["policy.toml", "bytes", "a few lines of TOML"]);
}
