//! Imports that merged what differs, found after the fifth round (2026-12-05). Each test names
//! what it protects: a promptfoo prompt edited under its label, tests that differ only in their
//! assertions, Inspect ids beyond 64 bits, an id whose target alone differs, empty arm labels,
//! and an lm-eval run copied with other contents.

use crate::common;

use std::path::{Path, PathBuf};

use common::{ablate, arm, assert_mentions, fails, import, import_fails};
use serde_json::Value;

use crate::import::fixture;

// ---- promptfoo ----

/// The rows of promptfoo 0.121.20's `results.jsonl` (prompts `full` and `no_examples`, 3 tests, 2
/// repeats), each with a new row id (`TAG-…`) and edited by `edit`, written into `dir/name`.
fn promptfoo_rows(dir: &Path, name: &str, tag: &str, edit: impl Fn(&mut Value)) -> PathBuf {
    let text = std::fs::read_to_string(fixture("promptfoo/v0.121.20/results.jsonl")).unwrap();
    let mut out = String::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut row: Value = serde_json::from_str(line).unwrap();
        row["id"] = format!("{tag}-{}", row["id"].as_str().unwrap()).into();
        edit(&mut row);
        out.push_str(&row.to_string());
        out.push('\n');
    }
    let path = dir.join(name);
    std::fs::write(&path, out).unwrap();
    path
}

/// A prompt edited between two evals keeps its label, and promptfoo's promptId is the hash of
/// the label: both versions had pooled into one arm as repeats. Refused, naming the label, both
/// files and both prompts; named apart with --arm, four arms; named alike, pooled and said.
#[test]
fn promptfoo_prompt_edited_under_one_label_is_refused_not_pooled() {
    let root = tempfile::tempdir().unwrap();
    let runs = root.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    let a = promptfoo_rows(&runs, "run_a.jsonl", "a", |_| {});
    let b = promptfoo_rows(&runs, "run_b.jsonl", "b", |row| {
        if row["prompt"]["label"] == "no_examples" {
            let raw = row["prompt"]["raw"].as_str().unwrap().to_string();
            row["prompt"]["raw"] = format!("Please answer. {raw}").into();
        }
    });
    let err = import_fails(
        "promptfoo",
        &[a.clone(), b.clone()],
        &root.path().join("x"),
        &["--threshold", "0.02"],
    );
    assert_mentions(
        &err,
        &[
            "arm `no_examples`",
            "under the label `no_examples`",
            "promptId 6bfe9c89731d… in both",
            "test `small sum`",
            "\"Question: What is 2+3?…\" in ",
            "\"Please answer. Question: What is 2+3?…\" in ",
            "run_a.jsonl (row 1)",
            "run_b.jsonl (row 1)",
            "--arm NAME=GLOB",
        ],
    );
    assert!(!root.path().join("x").exists());
    // Named apart: four arms, nothing pooled.
    let s = import(
        "promptfoo",
        &[a.clone(), b.clone()],
        &root.path().join("apart"),
        &[
            "--threshold",
            "0.02",
            "--baseline",
            "before full",
            "--arm",
            &format!("before={}", a.display()),
            "--arm",
            &format!("after={}", b.display()),
        ],
    );
    assert_eq!(arm(&s, "after no_examples")["repeats_max"], 2, "{s}");
    // Named alike on purpose: pooled, and said.
    let s = import(
        "promptfoo",
        std::slice::from_ref(&runs),
        &root.path().join("pooled"),
        &[
            "--threshold",
            "0.02",
            "--baseline",
            "both full",
            "--arm",
            &format!("both={}", runs.display()),
        ],
    );
    assert_eq!(arm(&s, "both no_examples")["repeats_max"], 4, "{s}");
    assert_mentions(
        &s["notes"].to_string(),
        &["arm `both no_examples`", "pools prompts that differ"],
    );
}

/// Two tests with the same vars and other assertions were one case (4 repeats for 2). In one eval
/// they are two cases, said; the same test scored by other assertions in another eval (edited
/// between the evals) is refused, naming both files and both assertion lists.
#[test]
fn promptfoo_tests_that_differ_only_in_their_assertions_are_not_one_case() {
    let root = tempfile::tempdir().unwrap();
    let equals_five = || serde_json::json!([{"type": "equals", "value": "5"}]);
    let text = std::fs::read_to_string(fixture("promptfoo/v0.121.20/results.jsonl")).unwrap();
    let mut both = String::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let row: Value = serde_json::from_str(line).unwrap();
        let mut other = row.clone();
        other["id"] = format!("other-{}", row["id"].as_str().unwrap()).into();
        other["testIdx"] = (row["testIdx"].as_i64().unwrap() + 100).into();
        other["testCase"]["assert"] = equals_five();
        both.push_str(&format!("{row}\n{other}\n"));
    }
    let one = root.path().join("one.jsonl");
    std::fs::write(&one, both).unwrap();
    let s = import(
        "promptfoo",
        &[one],
        &root.path().join("exp"),
        &["--threshold", "0.02"],
    );
    assert_eq!(s["cases"], 6, "{s}");
    assert_eq!(arm(&s, "full")["repeats_max"], 2, "{s}");
    assert_mentions(
        &s["notes"].to_string(),
        &["small sum", "different assertions"],
    );
    // Edited between two evals.
    let evals = root.path().join("evals");
    std::fs::create_dir(&evals).unwrap();
    let a = promptfoo_rows(&evals, "run_a.jsonl", "a", |_| {});
    let c = promptfoo_rows(&evals, "run_c.jsonl", "c", |row| {
        if row["testCase"]["description"] == "small sum" {
            row["testCase"]["assert"] = equals_five();
        }
    });
    let err = import_fails(
        "promptfoo",
        &[a, c],
        &root.path().join("x"),
        &["--threshold", "0.02"],
    );
    assert_mentions(
        &err,
        &[
            "test `small sum` is scored by different assertions",
            "run_a.jsonl (row 1: contains \"Question:\", contains \"2+3\"",
            "run_c.jsonl (row 1: equals \"5\")",
            "import the evals separately",
        ],
    );
}

// ---- Inspect ----

/// The v0.3.285 `.json` log of arm `full`, edited by `edit`, with the samples whose id is `old`
/// given the id `new` (a JSON number written as it is, beyond what a u64 holds), into `dir/name`.
fn log_with_ids(
    dir: &Path,
    name: &str,
    ids: &[(i64, &str)],
    edit: impl FnOnce(&mut Value),
) -> PathBuf {
    let text = std::fs::read_to_string(fixture("inspect/v0.3.285/arm_full_json.json")).unwrap();
    let mut log: Value = serde_json::from_str(&text).unwrap();
    edit(&mut log);
    for s in log["samples"].as_array_mut().unwrap() {
        for (old, _) in ids {
            if s["id"] == *old {
                s["id"] = format!("@id{old}@").into();
            }
        }
    }
    let mut text = serde_json::to_string(&log).unwrap();
    for (old, new) in ids {
        text = text.replace(&format!("\"@id{old}@\""), new);
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Another run of the same configuration: a new eval and run id.
fn another_run(log: &mut Value, id: &str) {
    log["eval"]["eval_id"] = id.into();
    log["eval"]["run_id"] = id.into();
}

/// The case ids of an experiment's cases table.
fn case_ids(exp: &Path) -> Vec<String> {
    use polars::prelude::{ParquetReader, SerReader};
    let df = ParquetReader::new(std::fs::File::open(exp.join("cases.parquet")).unwrap())
        .finish()
        .unwrap();
    df.column("case_id")
        .unwrap()
        .str()
        .unwrap()
        .iter()
        .flatten()
        .map(str::to_string)
        .collect()
}

/// Python's ints have no size limit: ids 2^64 and 2^64 + 1 were both read as the float
/// 1.8446744073709552e19, so one log holding both was refused as a sample written twice, and two
/// logs paired different ids as one case. Each id keeps its digits.
#[test]
fn inspect_ids_beyond_64_bits_stay_distinct() {
    const TWO_64: &str = "18446744073709551616";
    const TWO_64_AND_1: &str = "18446744073709551617";
    let root = tempfile::tempdir().unwrap();
    let one = log_with_ids(
        root.path(),
        "one.json",
        &[(1, TWO_64), (2, TWO_64_AND_1)],
        |_| {},
    );
    let out = root.path().join("one");
    let s = import("inspect", &[one], &out, &["--threshold", "0.02"]);
    assert_eq!(s["cases"], 6, "{s}");
    let ids = case_ids(&out);
    assert!(
        ids.iter().any(|i| i == TWO_64) && ids.iter().any(|i| i == TWO_64_AND_1),
        "{ids:?}"
    );
    // The same question under the two ids in two arms: two cases by id, one by input.
    let logs = root.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    log_with_ids(&logs, "full.json", &[(1, TWO_64)], |_| {});
    log_with_ids(&logs, "noex.json", &[(1, TWO_64_AND_1)], |l| {
        another_run(l, "noex");
        l["eval"]["task_args"]["variant"] = "no_examples".into();
    });
    let s = import(
        "inspect",
        std::slice::from_ref(&logs),
        &root.path().join("by_id"),
        &["--threshold", "0.02"],
    );
    assert_eq!(s["cases"], 7, "{s}");
    let s = import(
        "inspect",
        std::slice::from_ref(&logs),
        &root.path().join("by_input"),
        &["--threshold", "0.02", "--pair-by", "input"],
    );
    assert_eq!(s["cases"], 6, "{s}");
}

/// An id whose samples share their input but not their target was refused with the same
/// question printed twice; the message shows the targets. Inputs that part after their first
/// words are shown from where they part.
#[test]
fn inspect_id_clash_shows_what_differs() {
    let root = tempfile::tempdir().unwrap();
    let logs = root.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let noex = |l: &mut Value| {
        another_run(l, "noex");
        l["eval"]["task_args"]["variant"] = "no_examples".into();
    };
    let refused = || {
        import_fails(
            "inspect",
            std::slice::from_ref(&logs),
            &root.path().join("x"),
            &["--threshold", "0.02"],
        )
    };
    log_with_ids(&logs, "full.json", &[], |_| {});
    log_with_ids(&logs, "noex.json", &[], |l| {
        noex(l);
        for s in l["samples"].as_array_mut().unwrap() {
            if s["id"] == 1 {
                s["target"] = "6".into();
            }
        }
    });
    let err = refused();
    assert_mentions(
        &err,
        &[
            "Id 1 holds the same input (\"What is 2+3?…\")",
            "target \"5\" in arm `full`",
            "target \"6\" in arm `no_examples`",
            "--pair-by input",
        ],
    );
    // Inputs alike in their first eight words.
    let long = |l: &mut Value, tail: &str| {
        for s in l["samples"].as_array_mut().unwrap() {
            if s["id"] == 1 {
                s["input"] = format!("What is 2+3? Give the answer as one number, {tail}").into();
            }
        }
    };
    log_with_ids(&logs, "full.json", &[], |l| long(l, "nothing else."));
    log_with_ids(&logs, "noex.json", &[], |l| {
        noex(l);
        long(l, "with your working.");
    });
    let err = refused();
    assert_mentions(
        &err,
        &[
            "\"…nothing else.…\" in arm `full`",
            "\"…with your working.…\" in arm `no_examples`",
        ],
    );
}

// ---- every importer ----

/// An arm label that is empty (a task argument given as "", a samples file named without its
/// task) or spaces only (a promptfoo label) was written as an arm no option can name.
#[test]
fn empty_arm_labels_are_refused_in_every_importer() {
    let root = tempfile::tempdir().unwrap();
    // Inspect: a task argument given as "".
    let logs = root.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    log_with_ids(&logs, "full.json", &[], |_| {});
    let blank = log_with_ids(&logs, "blank.json", &[], |l| {
        another_run(l, "blank");
        l["eval"]["task_args"]["variant"] = "".into();
    });
    let err = import_fails(
        "inspect",
        std::slice::from_ref(&logs),
        &root.path().join("x"),
        &["--threshold", "0.02"],
    );
    assert_mentions(
        &err,
        &[
            "blank.json, sample",
            "column `arm`: \"\"",
            "empty arm label",
            "arms from: the task argument",
            "--arm NAME=GLOB",
        ],
    );
    let s = import(
        "inspect",
        std::slice::from_ref(&logs),
        &root.path().join("named"),
        &[
            "--threshold",
            "0.02",
            "--arm",
            &format!("blank={}", blank.display()),
        ],
    );
    arm(&s, "blank");
    // lm-eval: a samples file whose name holds no task.
    let run = root.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let a = fixture("lm-eval/v0.4.13/fixture-a");
    let date = "2026-11-30T03-26-41.079522";
    for (from, to) in [
        (
            format!("results_{date}.json"),
            format!("results_{date}.json"),
        ),
        (
            format!("samples_arith_gen_full_{date}.jsonl"),
            format!("samples__{date}.jsonl"),
        ),
        (
            format!("samples_arith_gen_noex_{date}.jsonl"),
            format!("samples_arith_gen_noex_{date}.jsonl"),
        ),
    ] {
        std::fs::copy(a.join(from), run.join(to)).unwrap();
    }
    let err = import_fails(
        "lm-eval",
        &[run],
        &root.path().join("y"),
        &["--filter", "strict-match", "--threshold", "0.02"],
    );
    let file = format!("samples__{date}.jsonl, line");
    assert_mentions(
        &err,
        &[file.as_str(), "column `arm`: \"\"", "empty arm label"],
    );
    // promptfoo: a label of spaces.
    let pf = promptfoo_rows(root.path(), "blank.jsonl", "p", |row| {
        if row["prompt"]["label"] == "no_examples" {
            row["prompt"]["label"] = " ".into();
        }
    });
    let err = import_fails(
        "promptfoo",
        &[pf],
        &root.path().join("z"),
        &["--threshold", "0.02"],
    );
    assert_mentions(
        &err,
        &[
            "blank.jsonl, row",
            "column `arm`: \" \"",
            "prompts: - label: NAME",
        ],
    );
}

// ---- lm-eval ----

/// A run copied into another folder was read from whichever copy sorted first: an edited copy
/// could replace the run without a word (the mean moved from 0.67 to 1.0 with the order of the
/// folders). Identical copies are read once and said; differing copies are refused, both named,
/// whichever comes first.
#[test]
fn lm_eval_copies_of_one_run_are_read_once_only_when_identical() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    common::copy_tree(&fixture("lm-eval/v0.4.13/fixture-a"), &a);
    common::copy_tree(&fixture("lm-eval/v0.4.13/fixture-a"), &b);
    let args = [
        "--filter",
        "strict-match",
        "--score",
        "exact_match",
        "--baseline",
        "arith_gen_full",
        "--threshold",
        "0.02",
    ];
    let s = import(
        "lm-eval",
        &[a.clone(), b.clone()],
        &root.path().join("same"),
        &args,
    );
    assert_eq!(arm(&s, "arith_gen_full")["repeats_max"], 1, "{s}");
    assert_mentions(
        &s["skipped"].to_string(),
        &[
            "samples_arith_gen_full_",
            "an identical copy (same SHA-256), read once",
        ],
    );
    let samples = b.join("samples_arith_gen_full_2026-11-30T03-26-41.079522.jsonl");
    let text = std::fs::read_to_string(&samples).unwrap();
    std::fs::write(
        &samples,
        text.replace("\"exact_match\": 0.0", "\"exact_match\": 1.0"),
    )
    .unwrap();
    for sources in [[a.clone(), b.clone()], [b.clone(), a.clone()]] {
        let err = import_fails("lm-eval", &sources, &root.path().join("x"), &args);
        assert_mentions(
            &err,
            &[
                "hold the same run (task arith_gen_full, run 2026-11-30T03-26-41.079522)",
                "a/samples_arith_gen_full_",
                "b/samples_arith_gen_full_",
                "Keep one copy",
            ],
        );
    }
    // Into an experiment that holds the run: an identical copy is skipped, an edited one refused
    // (it had been skipped as "already held", whatever its bytes).
    let exp = root.path().join("same");
    let into = |folder: &std::path::Path| {
        let file = folder.join("samples_arith_gen_full_2026-11-30T03-26-41.079522.jsonl");
        let mut cmd = ablate();
        cmd.args(["import", "lm-eval", "--quiet"])
            .arg(&file)
            .arg("--arm")
            .arg(format!("arith_gen_full={}", file.display()))
            .args([
                "--filter",
                "strict-match",
                "--score",
                "exact_match",
                "--into",
            ])
            .arg(&exp);
        cmd
    };
    let err = fails(&mut into(&a));
    assert_mentions(&err, &["nothing new to add", "already holds this run"]);
    let err = fails(&mut into(&b));
    assert_mentions(
        &err,
        &[
            "already holds this run",
            "SHA-256 differs",
            "b/samples_arith_gen_full_",
        ],
    );
}
