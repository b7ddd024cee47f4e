//! `ablate import` on the shapes of logs that harness users published (issue 25): every fixture
//! under tests/fixtures/import/real-users was written by the real harness (versions and scripts
//! in its README), after the public logs listed in tests/fixtures/import/SOURCES.md. An import is
//! right, or refused with a reason: never two prompts pooled as repeats, never two documents
//! paired, never two models in one arm, never one run counted twice.

use crate::common;

use std::path::{Path, PathBuf};

use common::{Workdir, ablate, arm, assert_mentions, fails, import, import_fails, json};
use serde_json::Value;

fn real(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import/real-users")
        .join(rel)
}

fn arm_names(summary: &Value) -> Vec<String> {
    summary["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["arm"].as_str().unwrap().to_string())
        .collect()
}

/// (cases, fewest repeats, most repeats, mean score) of an arm.
fn shape(summary: &Value, name: &str) -> (u64, u64, u64, f64) {
    let a = arm(summary, name);
    (
        a["cases"].as_u64().unwrap(),
        a["repeats_min"].as_u64().unwrap(),
        a["repeats_max"].as_u64().unwrap(),
        a["mean_score"].as_f64().unwrap(),
    )
}

fn sweep(dir: &Path) -> Value {
    json(
        ablate()
            .args(["sweep", "--quiet", "--bootstrap", "0", "--json"])
            .arg(dir),
    )
}

fn sweep_arm<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"] == name)
        .unwrap_or_else(|| panic!("no arm {name} in the sweep"))
}

// ---- lm-evaluation-harness 0.4.13 ----

#[test]
fn lm_eval_prompt_versions_are_arms_and_identical_runs_are_repeats() {
    // run-a1 and run-a2 gave every doc the same prompt (the same prompt_hash); run-b edited the
    // prompt (every prompt_hash differs, every doc_hash agrees). Both versions average 0.75, but
    // per doc A is 1,0,1,1 and B is 1,1,1,0.
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("exp");
    let s = import(
        "lm-eval",
        &[real("lm-eval/prompt-edit")],
        &out,
        &["--baseline", "run-a1", "--threshold", "0.02"],
    );
    assert_eq!(arm_names(&s), ["run-a1", "run-b"]);
    assert_eq!(shape(&s, "run-a1"), (4, 2, 2, 0.75));
    assert_eq!(shape(&s, "run-b"), (4, 1, 1, 0.75));
    assert_mentions(
        s["arm_choice"].as_str().unwrap(),
        &["2 different prompts", "prompt_hash", "repeats"],
    );
    assert_mentions(s["case_choice"].as_str().unwrap(), &["doc_hash agrees"]);
    assert_mentions(s["tokens_counted"].as_str().unwrap(), &["no token counts"]);
    // Paired per doc: doc 1 gained, doc 3 lost; the drop is 0.
    let v = sweep(&out);
    let b = sweep_arm(&v, "run-b");
    assert_eq!(b["drop"].as_f64().unwrap(), 0.0);
    assert_eq!(b["lost_cases"], 1);
    assert_eq!(b["gained_cases"], 1);

    // Names the analyst chooses: --arm NAME=GLOB, a folder standing for everything under it.
    let out2 = root.path().join("named");
    let pe = real("lm-eval/prompt-edit");
    let rule = |name: &str, dir: &str| format!("{name}={}", pe.join(dir).display());
    let s = import(
        "lm-eval",
        std::slice::from_ref(&pe),
        &out2,
        &[
            "--arm",
            &rule("before", "run-a1"),
            "--arm",
            &format!("before={}/run-a2/**", pe.display()),
            "--arm",
            &rule("after", "run-b"),
            "--baseline",
            "before",
        ],
    );
    assert_eq!(arm_names(&s), ["after", "before"]);
    assert_eq!(shape(&s, "before"), (4, 2, 2, 0.75));
    assert_mentions(s["arm_choice"].as_str().unwrap(), &["--arm rules"]);

    // A rule that matches nothing is a typo, named; overlapping rules naming two arms are refused.
    let e = import_fails(
        "lm-eval",
        std::slice::from_ref(&pe),
        &root.path().join("x"),
        &["--arm", "before=nowhere/**"],
    );
    assert_mentions(&e, &["before=nowhere/**", "matches none"]);
    let e = import_fails(
        "lm-eval",
        std::slice::from_ref(&pe),
        &root.path().join("y"),
        &[
            "--arm",
            &rule("a", "run-b"),
            "--arm",
            &format!("b={}/**", pe.display()),
        ],
    );
    assert_mentions(&e, &["different arms", "exclusive"]);
    let e = import_fails(
        "lm-eval",
        std::slice::from_ref(&pe),
        &root.path().join("z"),
        &["--arm", "no-equals-sign"],
    );
    assert_mentions(&e, &["NAME=GLOB"]);
}

#[test]
fn lm_eval_different_documents_are_never_paired() {
    // Two tasks with doc_id 0..3 each, every doc_hash different.
    let root = tempfile::tempdir().unwrap();
    let src = real("lm-eval/different-docs");
    let e = import_fails(
        "lm-eval",
        std::slice::from_ref(&src),
        &root.path().join("a"),
        &["--baseline", "arith_set1"],
    );
    assert_mentions(
        &e,
        &["`arith_set2`", "no case with the baseline `arith_set1`"],
    );
    let e = import_fails(
        "lm-eval",
        std::slice::from_ref(&src),
        &root.path().join("b"),
        &["--baseline", "arith_set1", "--case-from", "doc_hash"],
    );
    assert_mentions(&e, &["no case with the baseline"]);
    assert!(!root.path().join("a").exists() && !root.path().join("b").exists());

    // set1 holds the same documents as prompt-edit's runs: those pair, by doc_id and doc_hash.
    let set1 = src.join("fixture-a/samples_arith_set1_2026-12-01T11-22-15.006713.jsonl");
    let s = import(
        "lm-eval",
        &[set1.clone(), real("lm-eval/prompt-edit/run-b")],
        &root.path().join("c"),
        &[
            "--arm-from",
            "file",
            "--baseline",
            "samples_arith_set1_2026-12-01T11-22-15.006713",
        ],
    );
    assert_eq!(s["cases"], 4);
    // With set2 too, its doc ids hold other documents: split, and set2 is refused by name.
    let e = import_fails(
        "lm-eval",
        &[src.clone(), real("lm-eval/prompt-edit/run-b")],
        &root.path().join("d"),
        &[
            "--arm-from",
            "file",
            "--baseline",
            "samples_arith_set1_2026-12-01T11-22-15.006713",
        ],
    );
    assert_mentions(&e, &["samples_arith_set2", "no case with the baseline"]);
}

#[test]
fn verbs_refuse_arms_that_share_no_case_and_check_refuses_a_lone_baseline() {
    let w = Workdir::tiny();
    // Move arm b onto cases the baseline never ran.
    let results = std::fs::read_to_string(w.path("results.csv")).unwrap();
    let moved: String = results
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let f: Vec<&str> = l.split(',').collect();
            if i > 0 && f.get(1) != Some(&"baseline") {
                format!("z{},{}\n", f[0], f[1..].join(","))
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    std::fs::write(w.path("results.csv"), moved).unwrap();
    let cases = std::fs::read_to_string(w.path("cases.csv")).unwrap();
    let mut extra = cases.clone();
    for l in cases.lines().skip(1) {
        extra.push_str(&format!("z{l}\n"));
    }
    std::fs::write(w.path("cases.csv"), extra).unwrap();
    for verb in ["check", "sweep", "report"] {
        let mut cmd = ablate();
        cmd.arg(verb).arg(w.path(""));
        if verb == "report" {
            cmd.arg("--out")
                .arg(w.path("").parent().unwrap().join("rep"));
        }
        let e = fails(&mut cmd);
        assert_mentions(&e, &["no case with the baseline"]);
    }

    // Only the baseline: check says there is nothing to compare.
    let w = Workdir::tiny();
    let results = std::fs::read_to_string(w.path("results.csv")).unwrap();
    let only: String = results
        .lines()
        .enumerate()
        .filter(|(i, l)| *i == 0 || l.split(',').nth(1) == Some("baseline"))
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    std::fs::write(w.path("results.csv"), only).unwrap();
    let _ = std::fs::remove_file(w.path("arms.csv"));
    let e = fails(ablate().arg("check").arg(w.path("")));
    assert_mentions(&e, &["baseline only", "nothing to compare"]);
}

#[test]
fn lm_eval_results_named_after_the_output_path_are_found_and_results_files_are_not_samples() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("exp");
    let s = import(
        "lm-eval",
        &[
            real("lm-eval/results-name"),
            real("lm-eval/prompt-edit/run-b"),
        ],
        &out,
        &["--baseline", "results-name"],
    );
    let sources = s["arms"].as_array().unwrap().len();
    assert_eq!(sources, 2);
    let taken = std::fs::read_to_string(out.join("experiment.toml")).unwrap();
    assert_mentions(&taken, &["model = \"fixture-a\""]);

    // A results file given as if it were samples: said, with where the samples are.
    let results = real("lm-eval/results-name/results_fixture-a_2026-12-01T11-23-18.404509.json");
    let e = import_fails("lm-eval", &[results], &root.path().join("x"), &[]);
    assert_mentions(&e, &["a results file", "samples_<task>_<date>.jsonl"]);
    // A folder with no lm-eval files names what was looked for.
    let e = import_fails(
        "lm-eval",
        &[real("inspect/old-summaries")],
        &root.path().join("y"),
        &[],
    );
    assert_mentions(&e, &["no lm-eval samples (.jsonl) file there"]);
}

// ---- promptfoo 0.43.1, 0.91.3, 0.121.20 ----

#[test]
fn promptfoo_arms_are_prompt_templates_in_every_results_version() {
    // Version 2 rows carry the rendered prompt in `raw` (a different text per test) and the
    // template in `display` (0.43.1) or `label` (0.91.3); version 3 has `label`.
    for v in ["v0.43.1", "v0.91.3", "v0.121.20"] {
        let root = tempfile::tempdir().unwrap();
        let s = import(
            "promptfoo",
            &[real(&format!("promptfoo/v2-unlabelled/{v}"))],
            &root.path().join("exp"),
            &["--baseline", "Question: What is {{a}}+{{b}}?"],
        );
        assert_eq!(s["arms"].as_array().unwrap().len(), 2, "{v}: {s}");
        assert_eq!(s["cases"], 4, "{v}");
        let (cases, rmin, rmax, mean) = shape(&s, "Question: What is {{a}}+{{b}}?");
        assert_eq!((cases, rmin, rmax, mean), (4, 2, 2, 0.75), "{v}");
    }
}

#[test]
fn promptfoo_pass_fail_is_the_harness_s_own() {
    // Five tests: (success, score) = (true, 1), (false, .75), (false, .5), (false, .75),
    // (true, .75). Under pass_mark 0.5 the three failures would count as passes.
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("exp");
    let old = real("promptfoo/fail-with-score/v0.43.1");
    let new = real("promptfoo/fail-with-score/v0.121.20");
    let s = import(
        "promptfoo",
        &[old.clone(), new.clone()],
        &out,
        &[
            "--arm",
            &format!("old={}", old.display()),
            "--arm",
            &format!("new={}", new.display()),
            "--baseline",
            "old",
        ],
    );
    assert_eq!(s["passed_disagreements"], 6);
    assert_eq!(shape(&s, "old"), (5, 1, 1, 0.75));
    let df = polars_passed(&out.join("results.parquet"));
    assert_eq!(df.iter().filter(|p| **p).count(), 4);
}

fn polars_passed(path: &Path) -> Vec<bool> {
    use polars::prelude::*;
    let f = std::fs::File::open(path).unwrap();
    let df = ParquetReader::new(f).finish().unwrap();
    df.column("passed")
        .unwrap()
        .bool()
        .unwrap()
        .iter()
        .map(|x| x.unwrap())
        .collect()
}

#[test]
fn a_passed_column_decides_lost_cases_churn_and_mcnemar() {
    // Two cases, both arms score 0.75 everywhere: by pass_mark nothing is lost; by the harness's
    // own flags case c1 passes in the baseline and fails in the arm.
    let w = Workdir::empty();
    w.write(
        "experiment.toml",
        "set = \"t\"\nbaseline_arm = \"full\"\nthreshold_drop = 0.02\n",
    );
    w.write("cases.csv", "case_id\nc1\nc2\n");
    w.write(
        "results.csv",
        "case_id,arm,repeat,score,passed\nc1,full,1,0.75,true\nc2,full,1,0.75,true\nc1,cut,1,0.75,false\nc2,cut,1,0.75,true\n",
    );
    let v = sweep(&w.path(""));
    let cut = sweep_arm(&v, "cut");
    assert_eq!(cut["lost_cases"], 1);
    assert_eq!(cut["gained_cases"], 0);
    // McNemar on the flags: one discordant pair, p = 1.
    assert!((cut["mcnemar_p"].as_f64().unwrap() - 1.0).abs() < 1e-9);
    // Without the column, score ≥ pass_mark decides: nothing lost.
    w.write(
        "results.csv",
        "case_id,arm,repeat,score\nc1,full,1,0.75\nc2,full,1,0.75\nc1,cut,1,0.75\nc2,cut,1,0.75\n",
    );
    let v = sweep(&w.path(""));
    assert_eq!(sweep_arm(&v, "cut")["lost_cases"], 0);
    // A null flag is bad input, named with its line.
    w.write(
        "results.csv",
        "case_id,arm,repeat,score,passed\nc1,full,1,0.75,true\nc2,full,1,0.75,\nc1,cut,1,0.75,false\nc2,cut,1,0.75,true\n",
    );
    let e = fails(ablate().arg("check").arg(w.path("")));
    assert_mentions(&e, &["passed", "row 2 (line 3 of the file)"]);
}

#[test]
fn promptfoo_tests_sharing_a_description_stay_different_cases_in_every_version() {
    for v in ["v0.43.1", "v0.91.3", "v0.121.20"] {
        let root = tempfile::tempdir().unwrap();
        let dir = real(&format!("promptfoo/shared-description/{v}"));
        let labels: Vec<String> = {
            let text = std::fs::read_to_string(dir.join("results.json")).unwrap();
            let r: Value = serde_json::from_str(&text).unwrap();
            let mut l: Vec<String> = r["results"]["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|row| {
                    row["prompt"]["label"]
                        .as_str()
                        .or(row["prompt"]["display"].as_str())
                        .unwrap()
                        .to_string()
                })
                .collect();
            l.sort();
            l.dedup();
            l
        };
        let s = import(
            "promptfoo",
            &[dir],
            &root.path().join("exp"),
            &["--baseline", &labels[0]],
        );
        assert_eq!(s["cases"], 3, "{v}: {s}");
        assert_eq!(s["arms"].as_array().unwrap().len(), 2, "{v}");
        assert_eq!(shape(&s, &labels[0]).1, 2, "{v}");
    }
}

// ---- Inspect AI 0.3.90, 0.3.183, 0.3.185, 0.3.285 ----

#[test]
fn inspect_openai_cache_reads_are_counted_once_before_and_after_inspect_0_3_184() {
    // The same stub usage each time: prompt 120 (full) or 111 (no_examples) tokens, 64 of them
    // cached. 0.3.183 logs input 120 + cache_read 64 (input includes the reads); 0.3.185 and
    // 0.3.285 log input 56 + cache_read 64.
    for v in ["v0.3.183", "v0.3.185", "v0.3.285"] {
        let root = tempfile::tempdir().unwrap();
        let s = import(
            "inspect",
            &[real(&format!("inspect/openai-cache/{v}"))],
            &root.path().join("exp"),
            &[],
        );
        assert_eq!(arm(&s, "full")["tokens_in_mean"], 120.0, "{v}");
        assert_eq!(arm(&s, "no_examples")["tokens_in_mean"], 111.0, "{v}");
        assert_mentions(s["tokens_counted"].as_str().unwrap(), &["total_tokens"]);
        assert_eq!(s["passed_disagreements"], 0);
    }
}

#[test]
fn inspect_usage_comes_from_the_sample_files_when_summaries_have_none() {
    let root = tempfile::tempdir().unwrap();
    let s = import(
        "inspect",
        &[real("inspect/old-summaries/v0.3.90")],
        &root.path().join("exp"),
        &[],
    );
    assert_eq!(arm(&s, "full")["tokens_in_mean"], 20.0);
    assert_eq!(arm(&s, "no_examples")["tokens_in_mean"], 11.0);
    assert_mentions(
        s["tokens_counted"].as_str().unwrap(),
        &["read from the sample files", "arm_full.eval"],
    );
}

#[test]
fn the_same_inspect_run_in_two_formats_is_read_once() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("logs");
    std::fs::create_dir(&dir).unwrap();
    for (from, to) in [
        ("inspect/same-run-two-formats/v0.3.285/run.eval", "run.eval"),
        ("inspect/same-run-two-formats/v0.3.285/run.json", "run.json"),
        (
            "inspect/openai-cache/v0.3.285/no_examples.eval",
            "other.eval",
        ),
    ] {
        std::fs::copy(real(from), dir.join(to)).unwrap();
    }
    let s = import("inspect", &[dir], &root.path().join("exp"), &[]);
    // 4 samples × 2 epochs, not 4 repeats.
    let full = s["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"].as_str().unwrap().starts_with("full"))
        .unwrap();
    assert_eq!(full["repeats_max"], 2);
    let skipped = s["skipped"].to_string();
    assert_mentions(
        &skipped,
        &["run.json", "the same run as", "run.eval", "eval_id"],
    );
    // Alone, the one run is one arm: written with a note, and check refuses it.
    let out = root.path().join("alone");
    let s = import(
        "inspect",
        &[real("inspect/same-run-two-formats/v0.3.285")],
        &out,
        &["--threshold", "0.02"],
    );
    assert_mentions(
        &s["notes"].to_string(),
        &["NOTHING TO COMPARE YET", "--arm"],
    );
    assert_mentions(&s["skipped"].to_string(), &["the same run as"]);
    let e = fails(ablate().arg("check").arg(&out));
    assert_mentions(&e, &["baseline only", "nothing to compare"]);
}

#[test]
fn inspect_never_puts_two_models_in_one_arm_unless_asked() {
    let root = tempfile::tempdir().unwrap();
    let src = real("inspect/mixed-models/v0.3.285");
    let s = import(
        "inspect",
        std::slice::from_ref(&src),
        &root.path().join("a"),
        &["--baseline", "false | mockllm/llama3.1"],
    );
    assert_eq!(s["arms"].as_array().unwrap().len(), 6);
    for name in arm_names(&s) {
        assert_eq!(shape(&s, &name).1, 1, "{name}: one run, one repeat");
    }
    assert_eq!(shape(&s, "true | mockllm/llama3.1").3, 0.75);
    assert_mentions(s["arm_choice"].as_str().unwrap(), &["3 models"]);
    assert_mentions(
        &s["skipped"].to_string(),
        &["llama3.1_errored.eval", "status error"],
    );
    // Asked for: --arm-from task_arg:cot pools the models, and says so.
    let s = import(
        "inspect",
        std::slice::from_ref(&src),
        &root.path().join("b"),
        &["--arm-from", "task_arg:cot", "--baseline", "false"],
    );
    assert_eq!(arm_names(&s), ["false", "true"]);
    assert_mentions(&s["notes"].to_string(), &["holds 3 models"]);

    // One eval() call over two models shares a run id: both are kept.
    let s = import(
        "inspect",
        &[real("inspect/tiny-comparison/v0.3.285")],
        &root.path().join("c"),
        &["--baseline", "mockllm/model-a"],
    );
    assert_eq!(shape(&s, "mockllm/model-a"), (3, 1, 1, 2.0 / 3.0));
    assert_eq!(shape(&s, "mockllm/model-b").3, 1.0);
}

#[test]
fn inspect_messages_say_what_the_log_lacks() {
    let root = tempfile::tempdir().unwrap();
    let src = real("inspect/same-run-two-formats/v0.3.285/run.json");
    let mut log: Value = serde_json::from_str(&std::fs::read_to_string(&src).unwrap()).unwrap();
    // Header only: no samples logged.
    let mut header_only = log.clone();
    header_only.as_object_mut().unwrap().remove("samples");
    let p = root.path().join("header_only.json");
    std::fs::write(&p, header_only.to_string()).unwrap();
    let e = import_fails("inspect", &[p], &root.path().join("a"), &[]);
    assert_mentions(&e, &["no samples", "samples logged"]);
    assert!(!e.contains("inspect score"), "{e}");
    // Every sample errored: the error is quoted.
    for s in log["samples"].as_array_mut().unwrap() {
        s["scores"] = Value::Null;
        s["error"] = serde_json::json!({"message": "RuntimeError('quota exceeded')"});
    }
    let p = root.path().join("errored.json");
    std::fs::write(&p, log.to_string()).unwrap();
    let e = import_fails("inspect", &[p], &root.path().join("b"), &[]);
    assert_mentions(&e, &["RuntimeError('quota exceeded')", "errored.json"]);
}

// ---- --into: a running ablation grows ----

#[test]
fn into_appends_new_repeats_and_arms_and_keeps_everything_else() {
    let root = tempfile::tempdir().unwrap();
    let exp = root.path().join("exp");
    let pe = real("lm-eval/prompt-edit");
    import(
        "lm-eval",
        &[pe.join("run-a1"), pe.join("run-b")],
        &exp,
        &["--baseline", "run-a1", "--threshold", "0.02"],
    );
    // The analyst edits experiment.toml and keeps notes in the folder.
    let toml = std::fs::read_to_string(exp.join("experiment.toml")).unwrap() + "pass_mark = 0.6\n";
    std::fs::write(exp.join("experiment.toml"), &toml).unwrap();
    std::fs::write(exp.join("notes.md"), "why we ran this").unwrap();

    // A second run of the baseline's prompt: more repeats of run-a1.
    let into = |sources: &[PathBuf], extra: &[&str]| {
        json(
            ablate()
                .args(["import", "lm-eval"])
                .args(sources)
                .arg("--into")
                .arg(&exp)
                .args(extra)
                .arg("--json"),
        )
    };
    let rule = format!("run-a1={}", pe.join("run-a2").display());
    let s = into(&[pe.join("run-a2")], &["--arm", &rule]);
    assert_eq!(arm(&s, "run-a1")["repeats_max"], 2);
    assert_eq!(arm(&s, "run-b")["repeats_max"], 1);
    assert_eq!(s["rows"], 12);
    assert_eq!(
        std::fs::read_to_string(exp.join("experiment.toml")).unwrap(),
        toml
    );
    assert_eq!(
        std::fs::read_to_string(exp.join("notes.md")).unwrap(),
        "why we ran this"
    );
    // The same run again is named and refused: nothing new.
    let e = fails(
        ablate()
            .args(["import", "lm-eval"])
            .arg(pe.join("run-a2"))
            .arg("--into")
            .arg(&exp)
            .args(["--arm", &rule]),
    );
    assert_mentions(&e, &["nothing new to add", "already holds this run"]);
    // lm-eval logs do not say which prompt an existing arm had: --into asks for the arm's name.
    let e = fails(
        ablate()
            .args(["import", "lm-eval"])
            .arg(real("lm-eval/results-name"))
            .arg("--into")
            .arg(&exp),
    );
    assert_mentions(&e, &["needs --arm NAME=GLOB", "repeats"]);
    // A new arm: the same documents under a new name.
    let named = format!("arith_pe={}", real("lm-eval/results-name").display());
    let s = into(&[real("lm-eval/results-name")], &["--arm", &named]);
    assert_eq!(s["arms"].as_array().unwrap().len(), 3);
    assert_eq!(arm(&s, "arith_pe")["cases"], 4);
    let v = sweep(&exp);
    assert_eq!(sweep_arm(&v, "arith_pe")["drop"].as_f64(), Some(0.0));
    assert!(
        ablate()
            .arg("check")
            .arg(&exp)
            .output()
            .unwrap()
            .status
            .success()
    );
    // The manifest's settings are kept, not given again.
    let e = fails(
        ablate()
            .args(["import", "lm-eval"])
            .arg(real("lm-eval/results-name"))
            .arg("--into")
            .arg(&exp)
            .args(["--arm", &named, "--threshold", "0.05"]),
    );
    assert_mentions(&e, &["--threshold-drop with --into", "experiment.toml"]);
    // Only folders that import wrote.
    let w = Workdir::tiny();
    let e = fails(
        ablate()
            .args(["import", "lm-eval"])
            .arg(real("lm-eval/results-name"))
            .arg("--into")
            .arg(w.path("")),
    );
    assert_mentions(&e, &["not an experiment folder that `ablate import` wrote"]);
}

#[test]
fn into_reads_an_inspect_run_once_whatever_file_holds_it() {
    let root = tempfile::tempdir().unwrap();
    let exp = root.path().join("exp");
    import(
        "inspect",
        &[
            real("inspect/same-run-two-formats/v0.3.285/run.eval"),
            real("inspect/openai-cache/v0.3.285/no_examples.eval"),
        ],
        &exp,
        &["--threshold", "0.02", "--baseline", "full | mockllm/model"],
    );
    let e = fails(
        ablate()
            .args(["import", "inspect"])
            .arg(real("inspect/same-run-two-formats/v0.3.285/run.json"))
            .arg("--into")
            .arg(&exp),
    );
    assert_mentions(&e, &["run.json", "already holds this run", "eval_id"]);
}

/// The Inspect logs of one task run with two models and two prompts.
fn mixed_models() -> PathBuf {
    real("inspect/mixed-models/v0.3.285")
}

/// An experiment of gpt-4o-mini's two chain-of-thought settings (baseline `false`) in `root/exp`.
fn gpt_cot_experiment(root: &Path) -> PathBuf {
    let mm = mixed_models();
    let exp = root.join("exp");
    import(
        "inspect",
        &[
            mm.join("gpt-4o-mini_cot-false.eval"),
            mm.join("gpt-4o-mini_cot-true.eval"),
        ],
        &exp,
        &["--threshold", "0.02", "--baseline", "false"],
    );
    exp
}

#[test]
fn into_keeps_configurations_harnesses_and_documents_apart() {
    let root = tempfile::tempdir().unwrap();
    let (mm, exp) = (mixed_models(), gpt_cot_experiment(root.path()));
    let into = |sources: &[PathBuf], extra: &[&str]| {
        let mut c = ablate();
        c.args(["import", "inspect"])
            .args(sources)
            .arg("--into")
            .arg(&exp)
            .args(extra);
        c
    };
    // Another model's cot=true is not a repeat of gpt-4o-mini's `true`.
    let e = fails(&mut into(&[mm.join("llama3.1_cot-true.eval")], &[]));
    assert_mentions(&e, &["llama3.1_cot-true.eval", "--arm NAME=GLOB"]);
    // Two new configurations whose names (`false`, `true`) the experiment already gives to
    // gpt-4o-mini's: refused; named, they are new arms.
    let pair = [
        mm.join("llama3.1_cot-false.eval"),
        mm.join("llama3.1_cot-true.eval"),
    ];
    let e = fails(&mut into(&pair, &[]));
    assert_mentions(&e, &["different configuration", "--arm NAME=GLOB"]);
    let rule = |n: &str, f: &str| format!("{n}={}", mm.join(f).display());
    let s = json(&mut into(
        &pair,
        &[
            "--arm",
            &rule("llama-false", "llama3.1_cot-false.eval"),
            "--arm",
            &rule("llama-true", "llama3.1_cot-true.eval"),
            "--json",
        ],
    ));
    assert_eq!(arm_names(&s).len(), 4, "{s}");
    assert_eq!(arm(&s, "false")["repeats_max"], 1);
    // A copy of a log already in (another name, the same eval id) adds nothing.
    let copy = root.path().join("copy.eval");
    std::fs::copy(mm.join("gpt-4o-mini_cot-true.eval"), &copy).unwrap();
    let e = fails(&mut into(&[copy], &[]));
    assert_mentions(&e, &["nothing new to add", "already holds this run"]);
    // A different harness is refused: its case ids mean something else.
    let e = fails(
        ablate()
            .args(["import", "lm-eval"])
            .arg(real("lm-eval/prompt-edit/run-b"))
            .arg("--into")
            .arg(&exp)
            .args([
                "--arm",
                &format!("x={}", real("lm-eval/prompt-edit/run-b").display()),
            ]),
    );
    assert_mentions(&e, &["holds inspect logs", "new folder"]);

    // lm-eval: a new file whose doc 0..3 are other documents is not paired with the old ones.
    let lm = root.path().join("lm");
    let pe = real("lm-eval/prompt-edit");
    import(
        "lm-eval",
        &[pe.join("run-a1"), pe.join("run-b")],
        &lm,
        &["--baseline", "run-a1", "--threshold", "0.02"],
    );
    let set2 = real(
        "lm-eval/different-docs/fixture-a/samples_arith_set2_2026-12-01T11-22-15.006713.jsonl",
    );
    let e = fails(
        ablate()
            .args(["import", "lm-eval"])
            .arg(&set2)
            .arg("--into")
            .arg(&lm)
            .args(["--arm", &format!("other={}", set2.display())]),
    );
    assert_mentions(&e, &["`other`", "no case with the baseline"]);
}

/// Audit item 20: `--arm false=<another model's log>` put a second configuration into the
/// baseline's arm (its mean moved from 0.75 to 0.58) and `sources` recorded two configurations
/// for one arm. An arm is one configuration, whoever names it.
#[test]
fn into_refuses_another_configuration_under_an_existing_arm_s_name_even_with_arm() {
    let root = tempfile::tempdir().unwrap();
    let (mm, exp) = (mixed_models(), gpt_cot_experiment(root.path()));
    let before: Vec<Vec<u8>> = ["results.parquet", "sources.parquet"]
        .iter()
        .map(|f| std::fs::read(exp.join(f)).unwrap())
        .collect();
    let llama = mm.join("llama3.1_cot-false.eval");
    let e = fails(
        ablate()
            .args(["import", "inspect"])
            .arg(&llama)
            .arg("--into")
            .arg(&exp)
            .args(["--arm", &format!("false={}", llama.display())]),
    );
    assert_mentions(
        &e,
        &[
            "llama3.1_cot-false.eval",
            "`false`",
            "different configuration",
            "mockllm/gpt-4o-mini",
            "mockllm/llama3.1",
            "--arm NAME=GLOB",
        ],
    );
    let after: Vec<Vec<u8>> = ["results.parquet", "sources.parquet"]
        .iter()
        .map(|f| std::fs::read(exp.join(f)).unwrap())
        .collect();
    assert!(before == after, "nothing was written");
    // Under a new name it is a new arm.
    let s = json(
        ablate()
            .args(["import", "inspect"])
            .arg(&llama)
            .arg("--into")
            .arg(&exp)
            .args(["--arm", &format!("llama-false={}", llama.display())])
            .arg("--json"),
    );
    assert_eq!(arm_names(&s).len(), 3, "{s}");
    assert_eq!(arm(&s, "false")["repeats_max"], 1);
}

/// Audit item 23: an experiment that keeps `samples.csv` got a `samples.parquet` beside it, and
/// every verb then refused the folder (two samples tables). Refused before anything is written.
#[test]
fn into_refuses_an_experiment_that_keeps_a_table_as_csv() {
    use polars::prelude::{CsvWriter, ParquetReader, SerReader, SerWriter};
    let root = tempfile::tempdir().unwrap();
    let (mm, exp) = (mixed_models(), gpt_cot_experiment(root.path()));
    // The analyst keeps the samples as CSV, to read them in a spreadsheet.
    let mut df = ParquetReader::new(std::fs::File::open(exp.join("samples.parquet")).unwrap())
        .finish()
        .unwrap();
    CsvWriter::new(std::fs::File::create(exp.join("samples.csv")).unwrap())
        .finish(&mut df)
        .unwrap();
    std::fs::remove_file(exp.join("samples.parquet")).unwrap();
    let results = std::fs::read(exp.join("results.parquet")).unwrap();
    let llama = mm.join("llama3.1_cot-false.eval");
    let e = fails(
        ablate()
            .args(["import", "inspect"])
            .arg(&llama)
            .arg("--into")
            .arg(&exp)
            .args(["--arm", &format!("llama-false={}", llama.display())]),
    );
    assert_mentions(
        &e,
        &["samples.csv", "samples.parquet", "nothing was written"],
    );
    assert!(!exp.join("samples.parquet").exists());
    assert_eq!(std::fs::read(exp.join("results.parquet")).unwrap(), results);
    assert!(
        ablate()
            .arg("check")
            .arg(&exp)
            .output()
            .unwrap()
            .status
            .success(),
        "the folder is still readable"
    );
}

#[test]
fn lm_eval_hashes_of_any_text_split_cases_without_a_panic() {
    // doc_hash values that are not hex (and not ASCII): each document its own case, named by the
    // whole hash, never cut inside a character.
    let root = tempfile::tempdir().unwrap();
    let src = real(
        "lm-eval/prompt-edit/run-a1/fixture-a/samples_arith_pe_2026-12-01T11-19-07.502362.jsonl",
    );
    let text = std::fs::read_to_string(&src).unwrap();
    for (dir, hash, stamp) in [
        ("x", "aéééé-document", "2026-12-01T11-19-07.502362"),
        ("y", "bééééé-document", "2026-12-01T11-19-08.000001"),
    ] {
        let d = root.path().join(dir);
        std::fs::create_dir(&d).unwrap();
        let lines: Vec<String> = text
            .lines()
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).unwrap();
                v["doc_hash"] = Value::from(format!("{hash}{}", v["doc_id"]));
                v.to_string()
            })
            .collect();
        std::fs::write(
            d.join(format!("samples_arith_pe_{stamp}.jsonl")),
            lines.join("\n"),
        )
        .unwrap();
    }
    let x = root.path().join("x");
    let y = root.path().join("y");
    let e = import_fails(
        "lm-eval",
        &[x.clone(), y.clone()],
        &root.path().join("out"),
        &[
            "--arm",
            &format!("x={}", x.display()),
            "--arm",
            &format!("y={}", y.display()),
            "--baseline",
            "x",
        ],
    );
    assert_mentions(&e, &["`y`", "no case with the baseline"]);
}

#[test]
fn lm_eval_a_run_over_fewer_docs_with_the_same_prompts_is_a_repeat() {
    let root = tempfile::tempdir().unwrap();
    let pe = real("lm-eval/prompt-edit");
    let short = root.path().join("run-a2");
    std::fs::create_dir(&short).unwrap();
    let name = "samples_arith_pe_2026-12-01T11-20-11.097138.jsonl";
    let text = std::fs::read_to_string(pe.join("run-a2/fixture-a").join(name)).unwrap();
    let two: Vec<&str> = text.lines().take(2).collect();
    std::fs::write(short.join(name), two.join("\n")).unwrap();
    // Without its results file the run's model is unknown: refused, not taken to be run-a1's.
    let e = import_fails(
        "lm-eval",
        &[pe.join("run-a1"), short.clone(), pe.join("run-b")],
        &root.path().join("x"),
        &["--baseline", "run-a1"],
    );
    assert_mentions(
        &e,
        &["no results file beside it", "model is unknown", "--arm"],
    );
    // With the results file lm-eval wrote beside it, it is a repeat of run-a1.
    let results = std::fs::read_dir(pe.join("run-a2/fixture-a"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("results_")
        })
        .unwrap();
    std::fs::copy(&results, short.join(results.file_name().unwrap())).unwrap();
    let s = import(
        "lm-eval",
        &[pe.join("run-a1"), short, pe.join("run-b")],
        &root.path().join("exp"),
        &["--baseline", "run-a1"],
    );
    assert_eq!(arm_names(&s), ["run-a1", "run-b"]);
    assert_eq!(shape(&s, "run-a1").2, 2);
    assert_eq!(shape(&s, "run-a1").1, 1);
}
