//! The fifth adversarial round (2026-12-05): each test names what it protects. Data loss first
//! (a path that climbs through its own folder, an imported experiment replaced by a mistyped
//! `--out`, a device or FIFO as an output file), then imports that had merged what differs
//! (Inspect configurations, promptfoo's two files of one eval, lm-eval's repeated docs and
//! model-less runs, `--into` with another pairing).

use crate::common;

use std::path::{Path, PathBuf};

use common::{
    ablate, arm, assert_mentions, fails, import, import_fails, json, leftovers,
    simulate_small as simulate, succeeds,
};

use crate::import::fixture;

/// Imports the v0.3.160 Inspect logs (arms `full` and `no_examples`) into `out`.
fn imported(out: &Path) {
    import(
        "inspect",
        &[fixture("inspect/v0.3.160")],
        out,
        &["--threshold", "0.02"],
    );
}

/// Adds the v0.3.160 `no_examples` log to the experiment at `into` (`import --into`), as arm
/// `no_examples`.
fn add_no_examples(into: &Path) {
    let log = fixture("inspect/v0.3.160/arm_no_examples.eval");
    succeeds(
        ablate()
            .args(["import", "inspect", "--quiet"])
            .arg(&log)
            .arg("--arm")
            .arg(format!("no_examples={}", log.display()))
            .arg("--into")
            .arg(into),
    );
}

// ---- data loss ----

/// `--into exp/../exp`: moving `exp` aside left `exp/..` naming nothing, so the update could
/// neither finish nor be undone, and the experiment (with the user's own notes) stayed hidden as
/// `.ablate-old-*`.
#[test]
fn into_a_path_through_its_own_folder_updates_it_in_place() {
    let root = tempfile::tempdir().unwrap();
    let exp = root.path().join("exp");
    import(
        "inspect",
        &[fixture("inspect/v0.3.160/arm_full.eval")],
        &exp,
        &["--threshold", "0.02"],
    );
    std::fs::write(exp.join("notes.txt"), "mine").unwrap();
    add_no_examples(&root.path().join("exp/../exp"));
    assert_eq!(
        std::fs::read_to_string(exp.join("notes.txt")).unwrap(),
        "mine"
    );
    assert!(
        leftovers(root.path()).is_empty(),
        "{:?}",
        leftovers(root.path())
    );
    let check = json(ablate().args(["check", "--json"]).arg(&exp));
    assert_eq!(check["arms"].as_array().unwrap().len(), 2, "{check}");
}

/// `report --out r/../r` and `simulate --out e/./` replace the folder where it is, leaving nothing
/// hidden beside it (the earlier folder had been left as `.ablate-old-*`).
#[test]
fn outputs_through_dotdot_or_a_trailing_dot_replace_in_place() {
    let root = tempfile::tempdir().unwrap();
    let exp = root.path().join("e");
    succeeds(&mut simulate(&exp));
    succeeds(&mut simulate(&root.path().join("e/../e")));
    succeeds(&mut simulate(&root.path().join("e/.")));
    let r = root.path().join("r");
    for out in [
        r.clone(),
        root.path().join("r/../r"),
        root.path().join("r/."),
    ] {
        succeeds(
            ablate()
                .args(["report", "--quiet", "--bootstrap", "0", "--out"])
                .arg(&out)
                .arg(&exp),
        );
    }
    assert!(r.join("index.html").is_file() && exp.join("experiment.toml").is_file());
    assert!(
        leftovers(root.path()).is_empty(),
        "{:?}",
        leftovers(root.path())
    );
}

/// A mistyped `simulate --out` never replaces an imported experiment with synthetic data, an
/// import never replaces another set's import, and nothing replaces an experiment grown with
/// `--into` (it holds what several imports brought).
#[test]
fn imported_and_grown_experiments_are_never_replaced_by_another_writer() {
    let root = tempfile::tempdir().unwrap();
    let real = root.path().join("real");
    imported(&real);
    let before = std::fs::read(real.join("results.parquet")).unwrap();
    let err = fails(&mut simulate(&real));
    assert_mentions(&err, &["imported from harness logs", "never replaces"]);
    // Another set (`--set`) imported over it: refused at the commit, the folder as it was.
    let err = import_fails(
        "inspect",
        &[fixture("inspect/v0.3.160")],
        &real,
        &["--threshold", "0.02", "--set", "other-set"],
    );
    assert_mentions(&err, &["holds the experiment", "other-set"]);
    assert_eq!(std::fs::read(real.join("results.parquet")).unwrap(), before);
    // The same logs imported again replace it, as before.
    imported(&real);
    // Grown with --into: nothing replaces it.
    let grown = root.path().join("grown");
    let full = fixture("inspect/v0.3.160/arm_full.eval");
    import("inspect", &[full], &grown, &["--threshold", "0.02"]);
    add_no_examples(&grown);
    assert_mentions(
        &fails(&mut simulate(&grown)),
        &["grown with `ablate import --into`"],
    );
    let err = import_fails(
        "inspect",
        &[fixture("inspect/v0.3.160")],
        &grown,
        &["--threshold", "0.02"],
    );
    assert_mentions(&err, &["grown with `ablate import --into`"]);
    // A simulated experiment is still replaced by simulate (its command writes it again).
    let sim = root.path().join("sim");
    succeeds(&mut simulate(&sim));
    succeeds(&mut simulate(&sim));
}

/// An output file that is a FIFO hung `next` for ever (it was opened to look inside), and
/// `--force` replaced a device node with a regular file: both refused, with or without --force.
#[cfg(unix)]
#[test]
fn output_files_that_are_fifos_are_refused_even_with_force() {
    let root = tempfile::tempdir().unwrap();
    let exp = root.path().join("e");
    succeeds(&mut simulate(&exp));
    let fifo = root.path().join("batch.parquet");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("no mkfifo here: skipped");
        return;
    }
    for force in [false, true] {
        let mut cmd = ablate();
        cmd.args(["next", "--quiet", "--calls", "10", "--out"])
            .arg(&fifo)
            .arg(&exp)
            .timeout(std::time::Duration::from_secs(60));
        if force {
            cmd.arg("--force");
        }
        assert_mentions(&fails(&mut cmd), &["not a regular file"]);
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

/// The same frozen set run on another model is another experiment: its report does not replace
/// this one's at `reports/<set>` without --force.
#[test]
fn a_report_of_the_same_set_on_another_model_is_not_replaced() {
    let root = tempfile::tempdir().unwrap();
    let a = root.path().join("a");
    succeeds(&mut simulate(&a));
    let b = root.path().join("b");
    std::fs::create_dir(&b).unwrap();
    for entry in std::fs::read_dir(&a).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name != ".ablate-output" {
            std::fs::copy(entry.path(), b.join(&name)).unwrap();
        }
    }
    let toml = std::fs::read_to_string(b.join("experiment.toml")).unwrap();
    let edited: String = toml
        .lines()
        .map(|l| {
            if l.starts_with("model") {
                "model = \"another-model\"".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(b.join("experiment.toml"), edited + "\n").unwrap();
    let out = root.path().join("r");
    let report = |exp: &Path, force: bool| {
        let mut cmd = ablate();
        cmd.args(["report", "--quiet", "--bootstrap", "0", "--out"])
            .arg(&out)
            .arg(exp);
        if force {
            cmd.arg("--force");
        }
        cmd
    };
    succeeds(&mut report(&a, false));
    let err = fails(&mut report(&b, false));
    assert_mentions(
        &err,
        &["same set run on another model", "another-model", "--force"],
    );
    succeeds(&mut report(&b, true));
}

// ---- imports that had merged what differs ----

/// The v0.3.285 `.json` log of arm `full`, edited by `edit`, written into `dir` as `name`.
fn edited_json_log(dir: &Path, name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let text = std::fs::read_to_string(fixture("inspect/v0.3.285/arm_full_json.json")).unwrap();
    let mut log: serde_json::Value = serde_json::from_str(&text).unwrap();
    edit(&mut log);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(&log).unwrap()).unwrap();
    path
}

/// Another run of the same configuration: a new eval and run id.
fn another_run(log: &mut serde_json::Value, id: &str) {
    log["eval"]["eval_id"] = id.into();
    log["eval"]["run_id"] = id.into();
}

/// Logs named alike by their task argument but run as different tasks, with another solver or
/// other generation settings, are not one arm: refused naming both files and what differs;
/// pooled only when the user names them alike with --arm (said in a note).
#[test]
fn inspect_logs_of_different_configurations_never_pool_into_one_arm() {
    let root = tempfile::tempdir().unwrap();
    let logs = root.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    edited_json_log(&logs, "full.json", |_| {});
    std::fs::copy(
        fixture("inspect/v0.3.285/arm_no_examples.eval"),
        logs.join("no_examples.eval"),
    )
    .unwrap();
    // Another run of the same configuration is a repeat.
    edited_json_log(&logs, "full_again.json", |l| another_run(l, "again"));
    let s = import(
        "inspect",
        std::slice::from_ref(&logs),
        &root.path().join("ok"),
        &["--threshold", "0.02"],
    );
    assert_eq!(arm(&s, "full")["repeats_max"], 4, "{s}");
    std::fs::remove_file(logs.join("full_again.json")).unwrap();
    for (name, edit, words) in [
        (
            "cot.json",
            (|l: &mut serde_json::Value| l["eval"]["task"] = "arith_cot".into())
                as fn(&mut serde_json::Value),
            "the task (arith_cot against arith)",
        ),
        (
            "hot.json",
            |l| l["eval"]["model_generate_config"]["temperature"] = 1.5.into(),
            "the generation settings",
        ),
        (
            "solver.json",
            |l| l["eval"]["solver"] = "chain_of_thought".into(),
            "the solver",
        ),
        (
            "prompt.json",
            |l| l["plan"]["steps"][0]["params_passed"]["template"] = "Add.".into(),
            "the plan's steps",
        ),
    ] {
        let other = edited_json_log(&logs, name, |l| {
            another_run(l, name);
            edit(l);
        });
        let err = import_fails(
            "inspect",
            std::slice::from_ref(&logs),
            &root.path().join("x"),
            &["--threshold", "0.02"],
        );
        assert_mentions(
            &err,
            &["would both be arm `full`", words, name, "--arm NAME=GLOB"],
        );
        // Named alike on purpose: pooled, and said.
        let s = import(
            "inspect",
            std::slice::from_ref(&logs),
            &root.path().join(format!("pooled-{name}")),
            &[
                "--threshold",
                "0.02",
                "--arm",
                &format!("full={}", logs.join("full.json").display()),
                "--arm",
                &format!("full={}", other.display()),
            ],
        );
        let notes = s["notes"].to_string();
        assert_mentions(
            &notes,
            &["pools logs run with different configurations", words],
        );
        std::fs::remove_file(&other).unwrap();
    }
}

/// A `.json` Inspect log with one damaged field (a count written as 20.0, an epoch missing) was
/// skipped as "not an Inspect log" and its arm vanished; it is refused, naming the file.
#[test]
fn inspect_json_log_with_a_damaged_field_is_refused_not_skipped() {
    let root = tempfile::tempdir().unwrap();
    let log = edited_json_log(root.path(), "full.json", |l| {
        l["samples"][0]["epoch"] = serde_json::Value::Null;
    });
    let err = import_fails(
        "inspect",
        &[log, fixture("inspect/v0.3.285/arm_no_examples.eval")],
        &root.path().join("x"),
        &["--threshold", "0.02"],
    );
    assert_mentions(
        &err,
        &["full.json", "has an `eval` header", "cannot be read"],
    );
}

/// A log that holds no samples among logs that do lost its arm without a word; it is listed.
#[test]
fn inspect_log_without_samples_is_said() {
    let root = tempfile::tempdir().unwrap();
    let empty = edited_json_log(root.path(), "short.json", |l| {
        another_run(l, "short");
        l["eval"]["task_args"]["variant"] = "short".into();
        l["samples"] = serde_json::json!([]);
    });
    let s = import(
        "inspect",
        &[
            fixture("inspect/v0.3.285/arm_full.eval"),
            fixture("inspect/v0.3.285/arm_no_examples.eval"),
            empty,
        ],
        &root.path().join("exp"),
        &["--threshold", "0.02"],
    );
    assert_mentions(&s["skipped"].to_string(), &["short.json", "no samples"]);
}

/// promptfoo writes one eval as results.json and results.jsonl; read both, its rows had counted
/// twice (4 repeats for 2). Each eval is read once, the copy listed; a row id twice is refused.
#[test]
fn promptfoo_reads_each_eval_once() {
    let root = tempfile::tempdir().unwrap();
    let pf = fixture("promptfoo/v0.121.20");
    let s = import(
        "promptfoo",
        &[pf.join("results.json"), pf.join("results.jsonl")],
        &root.path().join("exp"),
        &["--threshold", "0.02"],
    );
    assert_eq!(arm(&s, "full")["repeats_max"], 2, "{s}");
    assert_mentions(
        &s["skipped"].to_string(),
        &["results.jsonl", "the same eval as"],
    );
    // A row copied within a file.
    let text = std::fs::read_to_string(pf.join("results.jsonl")).unwrap();
    let first = text.lines().next().unwrap();
    let doubled = root.path().join("doubled.jsonl");
    std::fs::write(&doubled, format!("{text}\n{first}\n")).unwrap();
    let err = import_fails("promptfoo", &[doubled], &root.path().join("x"), &[]);
    assert_mentions(&err, &["doubled.jsonl", "column `id`", "appears twice"]);
}

/// A doc written twice in an lm-eval samples file became an extra repeat (and moved the mean);
/// it is refused, naming the file, the line and the doc.
#[test]
fn lm_eval_doc_written_twice_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let run = fixture("real-users/lm-eval/prompt-edit/run-a1");
    let copy = root.path().join("run-a1");
    common::copy_tree(&run, &copy);
    let samples = find(&copy, "samples_");
    let text = std::fs::read_to_string(&samples).unwrap();
    let first = text.lines().next().unwrap().to_string();
    std::fs::write(&samples, format!("{}\n{first}\n", text.trim_end())).unwrap();
    let err = import_fails(
        "lm-eval",
        &[copy, fixture("real-users/lm-eval/prompt-edit/run-b")],
        &root.path().join("x"),
        &["--baseline", "run-a1"],
    );
    assert_mentions(&err, &["column `doc_id`", "written before, on line 1"]);
}

/// The first file under `dir` (depth first) whose name starts with `prefix`.
fn find(dir: &Path, prefix: &str) -> PathBuf {
    fn search(dir: &Path, prefix: &str) -> Option<PathBuf> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        entries.into_iter().find_map(|path| {
            if path.is_dir() {
                search(&path, prefix)
            } else {
                path.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
                    .then_some(path)
            }
        })
    }
    search(dir, prefix).unwrap_or_else(|| panic!("no {prefix}* under {}", dir.display()))
}

/// `--into`: the runs table names the arm the results joined (it had named an arm the experiment
/// does not have), and logs paired otherwise than the experiment's cases are refused (each
/// question had become two cases).
#[test]
fn into_keeps_the_runs_table_and_the_pairing_of_the_experiment() {
    let root = tempfile::tempdir().unwrap();
    let exp = root.path().join("exp");
    import(
        "inspect",
        &[
            fixture("inspect/v0.3.285/arm_full.eval"),
            fixture("inspect/v0.3.285/arm_no_examples.eval"),
        ],
        &exp,
        &["--threshold", "0.02"],
    );
    let logs = root.path().join("more");
    std::fs::create_dir(&logs).unwrap();
    edited_json_log(&logs, "full_again.json", |l| another_run(l, "again"));
    let into = |extra: &[&str]| {
        let mut cmd = ablate();
        cmd.args(["import", "inspect", "--quiet"])
            .arg(&logs)
            .arg("--into")
            .arg(&exp)
            .args(extra);
        cmd
    };
    let err = fails(&mut into(&["--pair-by", "input"]));
    assert_mentions(&err, &["paired by sample id", "--pair-by"]);
    succeeds(&mut into(&[]));
    let check = json(ablate().args(["check", "--json"]).arg(&exp));
    let runs = check["runs"].as_array().unwrap();
    assert!(
        runs.iter()
            .any(|r| r["run"] == "again" && r["arm"] == "full"),
        "{runs:?}"
    );
    let arms: Vec<&str> = runs.iter().map(|r| r["arm"].as_str().unwrap()).collect();
    assert!(
        arms.iter().all(|a| ["full", "no_examples"].contains(a)),
        "{arms:?}"
    );
}

// ---- statistics on degenerate data ----

/// Results of `cases` cases in arms `baseline` and `arms`, one repeat: `score(case, arm)`.
fn results_csv(cases: usize, arms: &[&str], score: impl Fn(usize, &str) -> f64) -> String {
    let mut text = String::from("case_id,arm,repeat,score\n");
    for i in 0..cases {
        for arm in std::iter::once("baseline").chain(arms.iter().copied()) {
            text.push_str(&format!("c{i},{arm},0,{}\n", score(i, arm)));
        }
    }
    text
}

/// Production weights only on stratum s1: the 15 cases of s2 are no evidence of the production
/// drop. The exact bound had counted them (30 units), so a drop seen on 15 cases was
/// "confidently" removable in production and "flipped confidently"; it is the bound on 15.
#[test]
fn reweight_counts_only_the_cases_that_carry_weight() {
    let w = common::Workdir::empty();
    w.write(
        "experiment.toml",
        "set = \"r1\"\nbaseline_arm = \"baseline\"\nthreshold_drop = 0.13\n",
    );
    w.write("arms.csv", "arm,removed\nbaseline,\nA,u1\n");
    w.write("units.csv", "unit,block,tokens\nu1,b,100\n");
    w.write("mix.csv", "slice,share\ns1,1.0\ns2,0.0\n");
    let mut cases = String::from("case_id,slice\n");
    for i in 0..30 {
        cases.push_str(&format!("c{i},{}\n", if i < 15 { "s1" } else { "s2" }));
    }
    w.write("cases.csv", &cases);
    // A loses every odd case of s2 and nothing in s1.
    w.write(
        "results.csv",
        &results_csv(30, &["A"], |i, arm| {
            f64::from(u8::from(arm == "baseline" || i < 15 || i % 2 == 0))
        }),
    );
    let out = json(ablate().args(["reweight", "--json"]).arg(&w.dir));
    let a = &out["arms"][0];
    assert_eq!(a["drop_production"], 0.0, "{a}");
    assert_eq!(a["confidence_production"], "inconclusive", "{a}");
    assert_eq!(a["flip_confident"], false, "{a}");
    // The exact bound of 15 units, as the sweep gives on those 15 cases alone.
    let high = a["ci_production_family_high"].as_f64().unwrap();
    assert!((high - 0.218).abs() < 0.001, "{a}");
}

/// A budget arm whose baseline scores 0 on its cases has no retention; it was "confidently"
/// enough and the cheapest budget priced on it. Now neither.
#[test]
fn curve_never_confirms_an_undefined_retention() {
    let w = common::Workdir::empty();
    w.write(
        "experiment.toml",
        "set = \"r2\"\nbaseline_arm = \"baseline\"\nthreshold_drop = 0.05\nquality_threshold = 0.9\n",
    );
    w.write(
        "arms.csv",
        "arm,removed,budget_ratio,selector\nbaseline,,,\nA,u1,0.5,k\nB,u2,0.25,k\n",
    );
    w.write("units.csv", "unit,block,tokens\nu1,b,1000\nu2,b,3000\n");
    let mut cases = String::from("case_id\n");
    let mut results = String::from("case_id,arm,repeat,score\n");
    for i in 0..100 {
        cases.push_str(&format!("c{i}\n"));
        let base = u8::from(i < 60);
        results.push_str(&format!("c{i},baseline,0,{base}\nc{i},A,0,{base}\n"));
        // B ran only where the baseline scores 0.
        if i >= 60 {
            results.push_str(&format!("c{i},B,0,{}\n", i % 2));
        }
    }
    w.write("cases.csv", &cases);
    w.write("results.csv", &results);
    let out = json(
        ablate()
            .args([
                "curve",
                "--json",
                "--price-per-mtok",
                "3",
                "--requests-per-day",
                "1000",
            ])
            .arg(&w.dir),
    );
    let curve = &out["selectors"][0];
    let b = curve["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["arm"] == "B")
        .unwrap();
    assert!(
        b["retention"].is_null() && b["retention_confident"].is_null(),
        "{b}"
    );
    assert_ne!(curve["min_budget_confident"], 0.25, "{curve}");
}

/// Units of 0 tokens: the needed fraction is undefined, said, and never printed as `NaN%`.
#[test]
fn need_of_zero_tokens_is_undefined_not_nan() {
    let w = common::Workdir::tiny();
    let units = std::fs::read_to_string(w.path("units.csv")).unwrap();
    let mut lines = units.lines();
    let header = lines.next().unwrap();
    let column = header.split(',').position(|c| c == "tokens").unwrap();
    let mut zeroed = vec![header.to_string()];
    for line in lines {
        let mut cells: Vec<&str> = line.split(',').collect();
        cells[column] = "0";
        zeroed.push(cells.join(","));
    }
    w.write("units.csv", &(zeroed.join("\n") + "\n"));
    let run = succeeds(ablate().arg("need").arg(&w.dir));
    let text =
        String::from_utf8_lossy(&run.stdout).to_string() + &String::from_utf8_lossy(&run.stderr);
    assert!(!text.contains("NaN"), "{text}");
    assert_mentions(&text, &["undefined"]);
    let out = json(ablate().args(["need", "--json"]).arg(&w.dir));
    assert!(out["value"].is_null(), "{out}");
    assert_mentions(&out["warnings"].to_string(), &["need.no_tokens"]);
}

/// Interaction values that do not vary have an unknown se (null, as the sweep's), not 0.
#[test]
fn interactions_without_spread_have_no_se() {
    let w = common::Workdir::empty();
    w.write(
        "experiment.toml",
        "set = \"flat\"\nbaseline_arm = \"baseline\"\nthreshold_drop = 0.05\n",
    );
    w.write("arms.csv", "arm,removed\nbaseline,\nA,u1\nB,u2\nAB,u1;u2\n");
    w.write("units.csv", "unit,block,tokens\nu1,b,100\nu2,b,200\n");
    w.write("cases.csv", "case_id\nc0\nc1\nc2\nc3\nc4\nc5\n");
    w.write(
        "results.csv",
        &results_csv(6, &["A", "B", "AB"], |_, _| 1.0),
    );
    let out = json(ablate().args(["interactions", "--json"]).arg(&w.dir));
    assert!(out["composed"][0]["se"].is_null(), "{out}");
    assert!(out["pairwise"][0]["se"].is_null(), "{out}");
    assert_mentions(&out["warnings"].to_string(), &["interactions.no_spread"]);
}
