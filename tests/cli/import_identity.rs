//! `ablate import`, round three (issue 44): what pairs, what pools, and what is visible, on
//! fixtures written by the real harnesses after the public logs listed in
//! tests/fixtures/import/SOURCES.md (rows 9–16). One id never pairs two different samples, one arm
//! never pools two models, every run is in the `runs` table, chat prompts keep their text, and a
//! score scale or a broken file is said, not hidden.

use crate::common;

use std::path::{Path, PathBuf};

use common::{ablate, arm, assert_mentions, import, import_fails, json};
use serde_json::Value;

fn real(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import/real-users")
        .join(rel)
}

/// The `runs` table an import wrote, as `check --json` lists it.
fn runs_of(dir: &Path) -> Vec<Value> {
    json(ablate().args(["check", "--json"]).arg(dir))["runs"]
        .as_array()
        .unwrap()
        .clone()
}

// ---- Inspect: a shared id is not a shared sample ----

#[test]
fn inspect_ids_that_hold_different_samples_are_refused_naming_both_texts() {
    let root = tempfile::tempdir().unwrap();
    let logs = real("inspect/shared-ids/v0.3.285");
    let err = import_fails(
        "inspect",
        std::slice::from_ref(&logs),
        &root.path().join("x"),
        &[
            "--arm-from",
            "task",
            "--baseline",
            "sums",
            "--threshold",
            "0.05",
        ],
    );
    assert_mentions(
        &err,
        &[
            "4 sample id(s) hold different samples",
            "ids 1, 2, 3, 4",
            "\"What is 3*5?…\" in arm `products`",
            "\"What is 10+7?…\" in arm `sums`",
            "--pair-by input",
        ],
    );
    assert!(!root.path().join("x").exists());
}

#[test]
fn inspect_pair_by_input_pairs_the_same_question_under_another_id() {
    let root = tempfile::tempdir().unwrap();
    let logs = real("inspect/shared-ids/v0.3.285");
    let out = root.path().join("exp");
    let s = import(
        "inspect",
        &[logs.join("sums.eval"), logs.join("sums_renumbered.eval")],
        &out,
        &[
            "--arm-from",
            "task",
            "--pair-by",
            "input",
            "--baseline",
            "sums",
            "--threshold",
            "0.05",
        ],
    );
    // sums ids 1-4 and sums_renumbered ids 5-8 hold the same four questions: four cases, each
    // in both arms. The renumbered arm has no examples and gets 10+7 wrong (3 of 4).
    assert_eq!(s["cases"], 4);
    assert_eq!(arm(&s, "sums")["mean_score"], 1.0);
    assert_eq!(arm(&s, "sums_renumbered")["mean_score"], 0.75);
    assert_mentions(s["case_choice"].as_str().unwrap(), &["--pair-by input"]);
    // The products log shares ids but no question with sums: nothing to pair, refused.
    let err = import_fails(
        "inspect",
        std::slice::from_ref(&logs),
        &root.path().join("y"),
        &[
            "--arm-from",
            "task",
            "--pair-by",
            "input",
            "--baseline",
            "sums",
            "--threshold",
            "0.05",
        ],
    );
    assert_mentions(&err, &["arm `products` shares no case with the baseline"]);
}

#[test]
fn promptfoo_refuses_pair_by_input_since_its_cases_pair_by_content_already() {
    let root = tempfile::tempdir().unwrap();
    let err = import_fails(
        "promptfoo",
        &[real("promptfoo/chat-and-files/v0.121.20")],
        &root.path().join("x"),
        &["--pair-by", "input"],
    );
    assert_mentions(&err, &["pair by content already"]);
}

// ---- lm-eval: the model is part of an arm ----

#[test]
fn lm_eval_runs_of_two_models_are_two_arms_named_by_the_model() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("exp");
    let s = import(
        "lm-eval",
        &[real("lm-eval/two-models")],
        &out,
        &["--baseline", "fixture-a", "--threshold", "0.05"],
    );
    // Equal prompt hashes: without the model the two runs were one arm of two repeats (0.625).
    assert_eq!(s["arms"].as_array().unwrap().len(), 2);
    assert_eq!(arm(&s, "fixture-a")["mean_score"], 0.75);
    assert_eq!(arm(&s, "fixture-b")["mean_score"], 0.5);
    assert_eq!(arm(&s, "fixture-a")["repeats_max"], 1);
    assert_mentions(s["arm_choice"].as_str().unwrap(), &["run by 2 models"]);
    let runs = runs_of(&out);
    let models: Vec<&str> = runs.iter().map(|r| r["model"].as_str().unwrap()).collect();
    assert_eq!(models, ["fixture-a", "fixture-b"]);
}

#[test]
fn lm_eval_chat_requests_keep_their_messages_as_text() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("exp");
    import(
        "lm-eval",
        &[real("lm-eval/chat")],
        &out,
        &["--threshold", "0.05"],
    );
    use polars::prelude::{ParquetReader, SerReader};
    let file = std::fs::File::open(out.join("samples.parquet")).unwrap();
    let df = ParquetReader::new(file).finish().unwrap();
    let input = df.column("input").unwrap().str().unwrap().clone();
    assert_eq!(input.null_count(), 0, "every chat request keeps its prompt");
    assert_eq!(input.get(0), Some("user: Question: What is 2+3?\nAnswer:"));
}

#[test]
fn lm_eval_runs_over_fewer_docs_are_repeats_with_no_note_about_arm_rules() {
    let root = tempfile::tempdir().unwrap();
    let s = import(
        "lm-eval",
        &[real("lm-eval/limits")],
        &root.path().join("exp"),
        &["--threshold", "0.05"],
    );
    assert_eq!(s["arms"].as_array().unwrap().len(), 1);
    assert_eq!(arm(&s, "arith_pe")["repeats_max"], 2);
    let notes = s["notes"].to_string();
    assert!(!notes.contains("named by --arm"), "{notes}");
    assert!(!notes.contains("prompts differ"), "{notes}");
}

#[test]
fn a_damaged_samples_file_stops_the_import_unless_skip_invalid_skips_it() {
    let root = tempfile::tempdir().unwrap();
    let logs = real("lm-eval/damaged");
    let err = import_fails(
        "lm-eval",
        std::slice::from_ref(&logs),
        &root.path().join("x"),
        &["--threshold", "0.05"],
    );
    assert_mentions(
        &err,
        &[
            "run-2",
            "line 1 is not the JSON lm-eval writes",
            "--skip-invalid",
        ],
    );
    let out = root.path().join("exp");
    let o = ablate()
        .args(["import", "lm-eval"])
        .arg(&logs)
        .arg("--out")
        .arg(&out)
        .args(["--threshold", "0.05", "--skip-invalid", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_mentions(&stderr, &["run-2", "skipped (--skip-invalid)", "line 1"]);
    let s: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["files"], 1);
    assert_eq!(s["rows"], 4);
    assert!(s["skipped"].to_string().contains("run-2"));
}

// ---- Inspect: every run visible; a broken run flagged; the scale said ----

#[test]
fn runs_of_several_revisions_are_listed_and_a_run_that_failed_everywhere_stands_out() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("exp");
    let s = import(
        "inspect",
        &[real("inspect/revisions/v0.3.285")],
        &out,
        &["--baseline", "full", "--threshold", "0.05"],
    );
    assert_mentions(
        s["case_choice"].as_str().unwrap(),
        &["repeats are runs: up to 3 logs of one arm, each with epochs = 1"],
    );
    let notes = s["notes"].to_string();
    assert_mentions(
        &notes,
        &["arm `full` pools runs of 3 code revisions", "stands out"],
    );
    let runs = runs_of(&out);
    assert_eq!(runs.len(), 6);
    let flagged: Vec<(&str, f64)> = runs
        .iter()
        .filter(|r| r["outlier"] == true)
        .map(|r| {
            (
                r["file"].as_str().unwrap(),
                r["mean_score"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(flagged.len(), 2, "{runs:?}");
    assert!(
        flagged
            .iter()
            .all(|(f, m)| f.ends_with("_rev3.eval") && *m == 0.0)
    );
    // check shows them, with typed warnings.
    let check = json(ablate().args(["check", "--json"]).arg(&out));
    let codes: Vec<&str> = check["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"runs.mixed_revisions") && codes.contains(&"runs.outlier"));
    let text = String::from_utf8(ablate().arg("check").arg(&out).output().unwrap().stdout).unwrap();
    assert_mentions(&text, &["← stands out", "revision"]);
}

#[test]
fn scores_outside_zero_to_one_are_said_with_the_keys_that_set_the_scale() {
    let root = tempfile::tempdir().unwrap();
    let s = import(
        "inspect",
        &[real("inspect/scale/v0.3.285")],
        &root.path().join("exp"),
        &["--baseline", "full", "--threshold", "0.5"],
    );
    assert_eq!(
        (s["score_min"].as_f64(), s["score_max"].as_f64()),
        (Some(3.0), Some(10.0))
    );
    assert_mentions(
        &s["notes"].to_string(),
        &[
            "the scores run from 3 to 10, not 0–1",
            "pass_mark",
            "--threshold",
        ],
    );
}

#[test]
fn an_eval_without_a_scorer_is_said_to_have_none() {
    let root = tempfile::tempdir().unwrap();
    let err = import_fails(
        "inspect",
        &[real("inspect/no-scorer/v0.3.285")],
        &root.path().join("x"),
        &[],
    );
    assert_mentions(&err, &["the eval had no scorer", "inspect score"]);
    assert!(!err.contains("the samples failed"), "{err}");
}

// ---- promptfoo: chat and file prompts import under short names ----

#[test]
fn promptfoo_chat_and_file_prompts_import_under_short_stable_names() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("exp");
    let s = import(
        "promptfoo",
        &[real("promptfoo/chat-and-files/v0.121.20")],
        &out,
        &["--baseline", "prompts/prompt_A.txt", "--threshold", "0.05"],
    );
    let mut names: Vec<String> = s["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["arm"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    assert_eq!(names.len(), 2);
    assert_eq!(names[1], "prompts/prompt_A.txt");
    assert!(names[0].starts_with("prompt-") && names[0].len() == "prompt-".len() + 8);
    // The same template gives the same name in another import.
    let again = import(
        "promptfoo",
        &[real("promptfoo/chat-and-files/v0.121.20")],
        &root.path().join("again"),
        &["--baseline", "prompts/prompt_A.txt", "--threshold", "0.05"],
    );
    assert!(again["arms"].to_string().contains(&names[0]));
}

#[test]
fn an_unlabelled_promptfoo_chat_prompt_of_results_version_2_imports() {
    // promptfoo 0.43.1: prompt = {raw, display}, display the chat array with its line breaks
    // (issue 25's hidden check). It was refused for a control character in the arm's name.
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("exp");
    let s = import(
        "promptfoo",
        &[real("promptfoo/chat-and-files/v0.43.1")],
        &out,
        &[
            "--baseline",
            "Question: What is {{a}}+{{b}}?",
            "--threshold",
            "0.05",
        ],
    );
    let names = s["arms"].to_string();
    assert!(names.contains("\"prompt-"), "{names}");
    assert_eq!(s["cases"], 3);
    assert!(
        s["arms"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["repeats_max"] == 1)
    );
}

#[test]
fn import_into_refuses_a_log_whose_ids_hold_other_questions() {
    let root = tempfile::tempdir().unwrap();
    let logs = real("inspect/shared-ids/v0.3.285");
    let out = root.path().join("exp");
    import(
        "inspect",
        &[logs.join("sums.eval")],
        &out,
        &["--threshold", "0.05"],
    );
    let err = common::fails(
        ablate()
            .args(["import", "inspect"])
            .arg(logs.join("products.eval"))
            .arg("--arm")
            .arg(format!("products={}", logs.join("products.eval").display()))
            .arg("--into")
            .arg(&out),
    );
    assert_mentions(
        &err,
        &[
            "products.eval",
            "holds a different question",
            "--pair-by input",
        ],
    );
}
