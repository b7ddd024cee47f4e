//! No verb deletes what ablate did not write: `report --out`, `simulate --out` and `plan --out`
//! refuse folders and files of the user's (exit 2, everything kept), replace their own earlier
//! output, and a set name from the data never steers a write outside `reports/`.

use crate::common;

use std::path::Path;
use std::process::Output;

use common::{Workdir, ablate, assert_mentions, demo, fails};

/// A folder holding the user's own files.
fn users_folder(root: &Path) -> std::path::PathBuf {
    let dir = root.join("somewhere");
    std::fs::create_dir_all(dir.join("drafts")).unwrap();
    std::fs::write(dir.join("thesis.tex"), "precious").unwrap();
    std::fs::write(dir.join("drafts/notes.md"), "also precious").unwrap();
    dir
}

fn users_files_survive(dir: &Path) {
    assert_eq!(
        std::fs::read_to_string(dir.join("thesis.tex")).unwrap(),
        "precious"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("drafts/notes.md")).unwrap(),
        "also precious"
    );
}

fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn report_to(out: &Path, exp: &Path) -> assert_cmd::Command {
    let mut cmd = ablate();
    cmd.args(["report", "--quiet", "--bootstrap", "200", "--out"])
        .arg(out)
        .arg(exp);
    cmd
}

#[test]
fn report_refuses_a_users_folder() {
    let root = tempfile::tempdir().unwrap();
    let dir = users_folder(root.path());
    let err = fails(&mut report_to(&dir, &demo()));
    assert_mentions(&err, &["somewhere", "not written by ablate", "--out"]);
    users_files_survive(&dir);
    assert_eq!(
        std::fs::read_dir(root.path()).unwrap().count(),
        1,
        "no debris"
    );
}

/// The fix names the option that chose the folder: `--export`, not the `--out` an export has
/// none of.
#[test]
fn export_refuses_a_users_folder_naming_export() {
    let root = tempfile::tempdir().unwrap();
    let dir = users_folder(root.path());
    let err = fails(
        ablate()
            .args(["sweep", "--quiet", "--bootstrap", "50", "--export"])
            .arg(&dir)
            .arg(demo()),
    );
    assert_mentions(
        &err,
        &[
            "somewhere",
            "not written by ablate",
            "choose another --export",
        ],
    );
    assert!(!err.contains("--out"), "{err}");
    users_files_survive(&dir);
}

#[test]
fn simulate_refuses_a_users_folder() {
    let root = tempfile::tempdir().unwrap();
    let dir = users_folder(root.path());
    let err = fails(
        ablate()
            .args(["simulate", "--cases", "20", "--out"])
            .arg(&dir),
    );
    assert_mentions(&err, &["somewhere", "not written by ablate"]);
    users_files_survive(&dir);
}

#[test]
fn a_file_where_a_folder_goes_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("report");
    std::fs::write(&file, "mine").unwrap();
    let err = fails(&mut report_to(&file, &demo()));
    assert_mentions(&err, &["is a file"]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
}

#[test]
fn reruns_replace_ablates_own_output_and_empty_folders_are_fine() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("rep");
    std::fs::create_dir(&out).unwrap();
    ok(report_to(&out, &demo()).output().unwrap());
    let marker = std::fs::read_to_string(out.join(".ablate-output")).unwrap();
    assert_mentions(&marker, &["\"tool\": \"ablate\"", "index.html", "report"]);
    ok(report_to(&out, &demo()).output().unwrap());
    assert!(out.join("index.html").is_file());

    // A file the user drops into ablate's output is theirs: the next run refuses.
    std::fs::write(out.join("tables/mine.xlsx"), "pivot").unwrap();
    let err = fails(&mut report_to(&out, &demo()));
    assert_mentions(&err, &["mine.xlsx", "not written by ablate"]);
    assert!(out.join("tables/mine.xlsx").is_file());

    let sim = root.path().join("sim");
    for _ in 0..2 {
        ok(ablate()
            .args(["simulate", "--cases", "20", "--out"])
            .arg(&sim)
            .output()
            .unwrap());
    }
    assert_eq!(
        std::fs::read_dir(root.path()).unwrap().count(),
        2,
        "no temporary folders left"
    );
}

/// The demo with another set name, and a working folder to run `report` in (so `reports/` is
/// inside it).
fn with_set(set: &str) -> (Workdir, tempfile::TempDir) {
    let w = Workdir::demo_copy();
    let toml = std::fs::read_to_string(w.path("experiment.toml")).unwrap();
    let line = toml
        .lines()
        .find(|l| l.starts_with("set = "))
        .unwrap()
        .to_string();
    let quoted = serde_json::to_string(set).unwrap();
    w.write(
        "experiment.toml",
        &toml.replacen(&line, &format!("set = {quoted}"), 1),
    );
    (w, tempfile::tempdir().unwrap())
}

#[test]
fn a_set_name_never_leaves_reports() {
    for set in ["../../victim", "/abs", "a/../../b", "..\\..\\w"] {
        let (w, cwd) = with_set(set);
        // The folders a path-like set name would reach.
        let victim = cwd.path().join("victim");
        std::fs::create_dir(&victim).unwrap();
        std::fs::write(victim.join("keep.txt"), "x").unwrap();
        ok(ablate()
            .current_dir(cwd.path())
            .args(["report", "--quiet", "--bootstrap", "200"])
            .arg(&w.dir)
            .output()
            .unwrap());
        let reports: Vec<_> = std::fs::read_dir(cwd.path().join("reports"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(reports.len(), 1, "{set}: {reports:?}");
        assert!(reports[0].join("index.html").is_file(), "{set}");
        let name = reports[0]
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        assert!(
            !name.contains('/') && !name.starts_with('.'),
            "{set}: {name}"
        );
        assert!(victim.join("keep.txt").is_file(), "{set}");
        assert!(!Path::new("/abs").exists());
    }
    for set in ["", ".", ".."] {
        let (w, cwd) = with_set(set);
        let err = fails(
            ablate()
                .current_dir(cwd.path())
                .args(["report", "--quiet", "--bootstrap", "200"])
                .arg(&w.dir),
        );
        assert_mentions(&err, &["cannot name a folder", "--out"]);
        assert!(
            !cwd.path().join("reports").exists() || {
                std::fs::read_dir(cwd.path().join("reports"))
                    .unwrap()
                    .count()
                    == 0
            }
        );
    }
}

/// Whatever moment a run dies at, the output folder is the old report or the new one, whole.
#[test]
fn a_run_killed_mid_write_leaves_the_previous_report_whole() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("rep");
    ok(report_to(&out, &demo()).output().unwrap());
    let whole = |dir: &Path| {
        let marker: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(".ablate-output")).unwrap())
                .unwrap();
        for f in marker["files"].as_array().unwrap() {
            assert!(dir.join(f.as_str().unwrap()).is_file(), "{f} missing");
        }
        let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
        assert!(html.trim_end().ends_with("</html>"));
    };
    for delay_ms in [0u64, 50, 150, 300, 600, 1000] {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ablate"))
            .args(["report", "--quiet", "--bootstrap", "200", "--out"])
            .arg(&out)
            .arg(demo())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        whole(&out);
    }
    // A later run succeeds over whatever a killed run left.
    ok(report_to(&out, &demo()).output().unwrap());
    whole(&out);
}

#[test]
fn plan_out_refuses_a_file_ablate_did_not_write() {
    let root = tempfile::tempdir().unwrap();
    let units = demo().join("units.parquet");
    let plan = |out: &Path, force: bool| {
        let mut cmd = ablate();
        cmd.args(["plan", "--design", "loo", "--units"])
            .arg(&units)
            .arg("--out")
            .arg(out);
        if force {
            cmd.arg("--force");
        }
        cmd
    };
    let csv = root.path().join("arms.csv");
    std::fs::write(&csv, "my,own,data\n").unwrap();
    let err = fails(&mut plan(&csv, false));
    assert_mentions(&err, &["arms.csv", "--force"]);
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), "my,own,data\n");
    ok(plan(&csv, true).output().unwrap());
    assert!(std::fs::read_to_string(&csv).unwrap().starts_with("arm,"));

    // ablate's own Parquet output is replaced without --force; another tool's is not.
    let pq = root.path().join("arms.parquet");
    ok(plan(&pq, false).output().unwrap());
    ok(plan(&pq, false).output().unwrap());
    let foreign = root.path().join("foreign.parquet");
    {
        use polars::prelude::*;
        let mut df = df!("unit" => ["a"], "block" => ["b"], "tokens" => [1.0]).unwrap();
        ParquetWriter::new(std::fs::File::create(&foreign).unwrap())
            .finish(&mut df)
            .unwrap();
    }
    let before = std::fs::read(&foreign).unwrap();
    let _ = fails(&mut plan(&foreign, false));
    assert_eq!(std::fs::read(&foreign).unwrap(), before);
    let _ = fails(&mut plan(root.path(), true));
    assert_eq!(
        std::fs::read_dir(root.path()).unwrap().count(),
        3,
        "no temporary files left"
    );
}

#[test]
fn concurrent_runs_to_one_out_all_succeed_and_leave_no_debris() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("sim");
    let children: Vec<_> = (0..8)
        .map(|seed| {
            std::process::Command::new(assert_cmd::cargo::cargo_bin("ablate"))
                .args([
                    "simulate",
                    "--cases",
                    "20",
                    "--seed",
                    &seed.to_string(),
                    "--out",
                ])
                .arg(&out)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let run = child.wait_with_output().unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
    }
    let names: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("sim")]);
    ok(ablate().arg("check").arg(&out).output().unwrap());
}

/// Every file under `dir` with its bytes, to compare a folder before and after a refused run.
fn snapshot(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                out.push((p, bytes));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn single_file_outputs_never_replace_an_experiments_tables() {
    let root = tempfile::tempdir().unwrap();
    let exp = root.path().join("exp");
    ok(ablate()
        .args([
            "simulate",
            "--quiet",
            "--cases",
            "60",
            "--shadow-requests",
            "10",
        ])
        .args(["--context-requests", "5", "--out"])
        .arg(&exp)
        .output()
        .unwrap());
    let before = snapshot(&exp);
    // next --out DIR/results.parquet: the experiment's results, stamped by simulate.
    let err = fails(
        ablate()
            .args(["next", "--calls", "10", "--out"])
            .arg(exp.join("results.parquet"))
            .arg(&exp),
    );
    assert_mentions(&err, &["results.parquet", "file of the experiment"]);
    // plan --out DIR/arms.parquet, even with --force.
    for force in [false, true] {
        let mut cmd = ablate();
        cmd.args(["plan", "--design", "loo", "--units"])
            .arg(exp.join("units.parquet"))
            .arg("--out")
            .arg(exp.join("arms.parquet"));
        if force {
            cmd.arg("--force");
        }
        let err = fails(&mut cmd);
        assert_mentions(&err, &["arms.parquet", "never writes an output there"]);
    }
    assert_eq!(snapshot(&exp), before, "the experiment is untouched");
    // An import's or simulate's table elsewhere (no experiment.toml beside it) is not a
    // disposable output either: --force is needed.
    let copy = root.path().join("copy.parquet");
    std::fs::copy(exp.join("arms.parquet"), &copy).unwrap();
    let err = fails(
        ablate()
            .args(["plan", "--design", "loo", "--units"])
            .arg(exp.join("units.parquet"))
            .arg("--out")
            .arg(&copy),
    );
    assert_mentions(&err, &["copy.parquet", "--force"]);
    // A batch ablate wrote is replaced by the next one, in Parquet and in CSV (the watch →
    // next loop that `watch` prints uses batch.csv every round).
    for name in ["batch.parquet", "batch.csv"] {
        let batch = root.path().join(name);
        for _ in 0..2 {
            ok(ablate()
                .args(["next", "--quiet", "--calls", "10", "--out"])
                .arg(&batch)
                .arg(&exp)
                .output()
                .unwrap());
        }
    }
    // Any other CSV needs --force, and is kept.
    let mine = root.path().join("mine.csv");
    std::fs::write(&mine, "case_id,arm\nc1,a\n").unwrap();
    let err = fails(
        ablate()
            .args(["next", "--calls", "10", "--out"])
            .arg(&mine)
            .arg(&exp),
    );
    assert_mentions(&err, &["mine.csv", "--force"]);
    assert_eq!(
        std::fs::read_to_string(&mine).unwrap(),
        "case_id,arm\nc1,a\n"
    );
}

#[test]
fn outputs_over_the_folder_being_read_are_refused() {
    let w = Workdir::tiny();
    let before = snapshot(&w.dir);
    let inside = w.dir.join("tables");
    let parent = w.root.path().to_path_buf();
    for (verb, flag, target) in [
        ("sweep", "--export", &w.dir),
        ("sweep", "--export", &inside),
        ("sweep", "--export", &parent),
        ("report", "--out", &w.dir),
        ("report", "--out", &inside),
        ("report", "--export", &w.dir),
    ] {
        let err = fails(
            ablate()
                .args([verb, "--quiet", "--bootstrap", "200", flag])
                .arg(target)
                .arg(&w.dir),
        );
        assert_mentions(&err, &[flag, "which this command reads"]);
        assert_eq!(
            snapshot(&w.dir),
            before,
            "{verb} {flag} {}",
            target.display()
        );
    }
    // --from-aggregates and --mix are inputs too.
    let err = fails(
        ablate()
            .args(["reweight", "--quiet", "--export"])
            .arg(&parent)
            .arg("--mix")
            .arg(w.path("mix.csv"))
            .arg(&w.dir),
    );
    assert_mentions(&err, &["--export", "contains"]);
}

#[test]
fn a_marked_folder_with_an_edited_file_is_the_users() {
    let root = tempfile::tempdir().unwrap();
    let exp = root.path().join("exp");
    let simulate = || {
        let mut cmd = ablate();
        cmd.args([
            "simulate",
            "--quiet",
            "--cases",
            "40",
            "--shadow-requests",
            "10",
        ])
        .args(["--context-requests", "5", "--out"])
        .arg(&exp);
        cmd
    };
    ok(simulate().output().unwrap());
    ok(simulate().output().unwrap());
    let toml = exp.join("experiment.toml");
    let edited = std::fs::read_to_string(&toml).unwrap() + "# my threshold, agreed with legal\n";
    std::fs::write(&toml, &edited).unwrap();
    let err = fails(&mut simulate());
    assert_mentions(&err, &["experiment.toml", "changed since ablate wrote it"]);
    assert_eq!(std::fs::read_to_string(&toml).unwrap(), edited);
}

#[test]
fn a_folder_of_empty_subfolders_is_not_empty() {
    let root = tempfile::tempdir().unwrap();
    let tree = root.path().join("project");
    std::fs::create_dir_all(tree.join("data/raw")).unwrap();
    std::fs::create_dir_all(tree.join("src")).unwrap();
    let err = fails(&mut report_to(&tree, &demo()));
    assert_mentions(&err, &["not written by ablate"]);
    assert!(tree.join("data/raw").is_dir() && tree.join("src").is_dir());
}

#[test]
fn two_outputs_in_one_place_are_refused_before_either_is_written() {
    let root = tempfile::tempdir().unwrap();
    let w = Workdir::tiny();
    let x = root.path().join("x");
    let err = fails(report_to(&x, &w.dir).arg("--export").arg(&x));
    assert_mentions(&err, &["--out", "--export", "same place"]);
    let err = fails(report_to(&x, &w.dir).arg("--export").arg(x.join("tables")));
    assert_mentions(&err, &["same place or one holds the other"]);
    assert!(!x.exists());
}

#[test]
fn every_destination_is_checked_before_the_first_write() {
    let root = tempfile::tempdir().unwrap();
    let w = Workdir::tiny();
    let refused = users_folder(root.path());
    let batch = root.path().join("batch.parquet");
    let err = fails(
        ablate()
            .args(["next", "--calls", "10", "--out"])
            .arg(&batch)
            .arg("--export")
            .arg(&refused)
            .arg(&w.dir),
    );
    assert_mentions(&err, &["not written by ablate"]);
    assert!(!batch.exists(), "no batch written");
    let err = fails(
        ablate()
            .args(["watch", "--confidence", "0.5", "--export"])
            .arg(&refused)
            .arg(&w.dir),
    );
    assert_mentions(&err, &["not written by ablate"]);
    assert!(
        !w.path(".ablate-watch.json").exists(),
        "no decisions recorded"
    );
    users_files_survive(&refused);
}

#[test]
fn the_current_folder_and_its_parents_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let sub = root.path().join("here");
    std::fs::create_dir(&sub).unwrap();
    for out in [".", ".."] {
        let err = fails(
            ablate()
                .current_dir(&sub)
                .args(["report", "--quiet", "--bootstrap", "200", "--out", out])
                .arg(demo()),
        );
        assert_mentions(&err, &["the folder you are in"]);
    }
    assert!(sub.is_dir());
}
