//! `ablate import` on logs the real harnesses wrote (tests/fixtures/import, with how each was
//! made). Expected means come from `expected.json`, which `expected.py` computed from the same
//! files with its own zip and JSON reader.

use crate::common;

use std::path::{Path, PathBuf};

use common::{ablate, arm, assert_mentions, fails, import, json};
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import")
}

pub(crate) fn fixture(rel: &str) -> PathBuf {
    fixtures().join(rel)
}

fn expected() -> Value {
    // Python wrote it: bare NaN appears, which only a lenient parser reads.
    json5::from_str(&std::fs::read_to_string(fixture("expected.json")).unwrap()).unwrap()
}

/// The options that import the lm-eval fixtures' arith tasks: one metric and filter, the full
/// prompt as the baseline, threshold 0.
pub(crate) const LM_EVAL: &[&str] = &[
    "--score",
    "exact_match",
    "--filter",
    "strict-match",
    "--baseline",
    "arith_gen_full",
    "--threshold",
    "0",
];

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-6, "{a} vs {b}");
}

/// The sweep's drop of `arm` on an imported folder.
fn drop_of(dir: &Path, arm_name: &str) -> f64 {
    let v = json(
        ablate()
            .args(["sweep", "--quiet", "--bootstrap", "0", "--json"])
            .arg(dir),
    );
    v["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"] == arm_name)
        .unwrap()["drop"]
        .as_f64()
        .unwrap()
}

/// `ablate check` accepts the imported folder.
fn passes_check(out: &std::path::Path) {
    assert!(
        ablate()
            .arg("check")
            .arg(out)
            .output()
            .unwrap()
            .status
            .success()
    );
}

#[test]
fn inspect_zstd_and_deflate_logs_round_trip_through_sweep() {
    let e = expected();
    let mean = |f: &str| {
        e["inspect"][f]["mean_over_records"]["match"]
            .as_f64()
            .unwrap()
    };
    let root = tempfile::tempdir().unwrap();
    for (version, method) in [("v0.3.285", 93), ("v0.3.160", 8)] {
        let full = format!("inspect/{version}/arm_full.eval");
        let noex = format!("inspect/{version}/arm_no_examples.eval");
        assert_eq!(e["inspect"][&full]["zip_methods"][0], method);
        let out = root.path().join(version);
        let s = import(
            "inspect",
            &[fixture(&full), fixture(&noex)],
            &out,
            &["--threshold", "0.02"],
        );
        assert_eq!(s["baseline"], "full");
        assert_eq!(s["cases"], 6);
        close(arm(&s, "full")["mean_score"].as_f64().unwrap(), mean(&full));
        close(
            arm(&s, "no_examples")["mean_score"].as_f64().unwrap(),
            mean(&noex),
        );
        assert_eq!(arm(&s, "full")["repeats_min"], 2);
        // Balanced: the paired drop is the difference of the means Python computed.
        close(drop_of(&out, "no_examples"), mean(&full) - mean(&noex));
        assert!(
            ablate()
                .arg("check")
                .arg(&out)
                .output()
                .unwrap()
                .status
                .success()
        );
        let toml = std::fs::read_to_string(out.join("experiment.toml")).unwrap();
        assert_mentions(
            &toml,
            &[
                "set = \"arith\"",
                "model = \"mockllm/model\"",
                "measured_at = \"2026-11-30\"",
            ],
        );
    }
}

#[test]
fn inspect_chunked_and_json_logs_read_like_the_eval_archive() {
    let root = tempfile::tempdir().unwrap();
    let noex = fixture("inspect/v0.3.285/arm_no_examples.eval");
    let results = |name: &str, full: &str| {
        let out = root.path().join(name);
        import(
            "inspect",
            &[fixture(full), noex.clone()],
            &out,
            &["--threshold", "0.02"],
        );
        drop_of(&out, "no_examples")
    };
    let eval = results("eval", "inspect/v0.3.285/arm_full.eval");
    assert_eq!(
        eval,
        results("chunked", "inspect/v0.3.285/arm_full_chunked.eval")
    );
    assert_eq!(eval, results("json", "inspect/v0.3.285/arm_full_json.json"));
}

#[test]
fn inspect_errors_limits_and_unfinished_logs_are_reported_and_skipped() {
    let root = tempfile::tempdir().unwrap();
    let s = import(
        "inspect",
        &[
            fixture("inspect/v0.3.285/error_limit.eval"),
            fixture("inspect/v0.3.285/in_progress.eval"),
            fixture("inspect/v0.3.285/arm_no_examples.eval"),
        ],
        &root.path().join("x"),
        &["--arm-from", "task_arg:variant"],
    );
    let skipped = s["skipped"].to_string();
    assert_mentions(
        &skipped,
        &[
            "2 sample(s) with an error",
            "2 sample(s) that hit a limit",
            "in_progress.eval: the whole log (10 samples), unfinished",
        ],
    );
    // 12 samples − 2 errored − 2 limited: 8, and case 3 (errored in both epochs) is absent.
    let full = arm(&s, "full");
    assert_eq!(full["cases"], 4);
    close(full["mean_score"].as_f64().unwrap(), 7.0 / 8.0);
    assert_eq!(s["threshold_drop"], Value::Null);
}

#[test]
fn inspect_dict_scores_need_a_key_and_bad_choices_are_named() {
    let root = tempfile::tempdir().unwrap();
    let log = fixture("inspect/v0.3.285/dict_score.eval");
    let err = fails(
        ablate()
            .args(["import", "inspect"])
            .arg(&log)
            .arg("--out")
            .arg(root.path().join("a")),
    );
    assert_mentions(
        &err,
        &["--score", "dict_scorer.acc", "dict_scorer.f", "match"],
    );
    let err = fails(
        ablate()
            .args(["import", "inspect"])
            .arg(&log)
            .args(["--score", "dict_scorer"])
            .arg("--out")
            .arg(root.path().join("b")),
    );
    assert_mentions(&err, &["dict value", "--score dict_scorer.KEY"]);
    let e = expected();
    for key in ["acc", "f"] {
        let s = import(
            "inspect",
            std::slice::from_ref(&log),
            &root.path().join(key),
            &["--score", &format!("dict_scorer.{key}")],
        );
        close(
            s["arms"][0]["mean_score"].as_f64().unwrap(),
            e["inspect"]["inspect/v0.3.285/dict_score.eval"]["mean_over_records"]
                [format!("dict_scorer.{key}")]
            .as_f64()
            .unwrap(),
        );
    }
}

#[test]
fn the_threshold_placeholder_is_refused_until_it_is_agreed() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("exp");
    import("inspect", &[fixture("inspect/v0.3.160")], &out, &[]);
    let err = fails(ablate().arg("check").arg(&out));
    assert_mentions(&err, &["threshold_drop", "placeholder", "--threshold"]);
    let toml = std::fs::read_to_string(out.join("experiment.toml")).unwrap();
    std::fs::write(
        out.join("experiment.toml"),
        toml.lines()
            .map(|l| {
                if l.starts_with("threshold_drop") {
                    "threshold_drop = 0.02"
                } else {
                    l
                }
            })
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap();
    passes_check(&out);
}

#[test]
fn sources_record_every_file_with_its_hash() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("exp");
    import(
        "inspect",
        &[fixture("inspect/v0.3.160")],
        &out,
        &["--threshold", "0"],
    );
    use polars::prelude::{ParquetReader, SerReader};
    let file = std::fs::File::open(out.join("sources.parquet")).unwrap();
    let df = ParquetReader::new(file).finish().unwrap();
    assert_eq!(df.height(), 2);
    let hashes: Vec<String> = df
        .column("sha256")
        .unwrap()
        .str()
        .unwrap()
        .iter()
        .map(|h| h.unwrap().to_string())
        .collect();
    use sha2::Digest;
    let want = format!(
        "{:x}",
        sha2::Sha256::digest(std::fs::read(fixture("inspect/v0.3.160/arm_full.eval")).unwrap())
    );
    assert!(hashes.contains(&want), "{hashes:?}");
    assert_eq!(
        df.column("version").unwrap().str().unwrap().get(0),
        Some("0.3.160")
    );
}

/// Each reader hashes a log in the same read as its records (issue 28): the recorded SHA-256 is
/// the file's, for Inspect (.eval zips and .json), lm-eval (JSON Lines and the old JSON array)
/// and promptfoo (.json and .jsonl).
#[test]
fn every_reader_records_the_hash_of_the_whole_file() {
    let root = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, &[&str]); 6] = [
        (
            "inspect",
            "inspect/v0.3.285/arm_full.eval",
            &["--threshold", "0"],
        ),
        (
            "inspect",
            "inspect/v0.3.285/arm_full_json.json",
            &["--threshold", "0"],
        ),
        ("lm-eval", "lm-eval/v0.4.13/fixture-a", LM_EVAL),
        ("lm-eval", "lm-eval/v0.4.2-style", LM_EVAL),
        (
            "promptfoo",
            "promptfoo/v0.121.20/results.json",
            &["--baseline", "full", "--threshold", "0"],
        ),
        (
            "promptfoo",
            "promptfoo/v0.121.20/results.jsonl",
            &["--baseline", "full", "--threshold", "0"],
        ),
    ];
    use polars::prelude::{ParquetReader, SerReader};
    use sha2::Digest;
    for (k, (harness, rel, args)) in cases.iter().enumerate() {
        let out = root.path().join(format!("exp{k}"));
        import(harness, &[fixture(rel)], &out, args);
        let df = ParquetReader::new(std::fs::File::open(out.join("sources.parquet")).unwrap())
            .finish()
            .unwrap();
        let files = df.column("file").unwrap().str().unwrap().clone();
        let hashes = df.column("sha256").unwrap().str().unwrap().clone();
        assert!(df.height() > 0, "{rel}");
        for (file, hash) in files.iter().zip(hashes.iter()) {
            let (file, hash) = (file.unwrap(), hash.unwrap());
            let want = format!("{:x}", sha2::Sha256::digest(std::fs::read(file).unwrap()));
            assert_eq!(hash, want, "{rel}: {file}");
        }
    }
}

#[test]
fn import_never_replaces_a_folder_ablate_did_not_write() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("mine");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "keep me").unwrap();
    fails(
        ablate()
            .args(["import", "inspect"])
            .arg(fixture("inspect/v0.3.160"))
            .arg("--out")
            .arg(&out),
    );
    assert_eq!(
        std::fs::read_to_string(out.join("notes.txt")).unwrap(),
        "keep me"
    );
}

#[test]
fn lm_eval_runs_of_two_models_are_two_arms_and_filters_are_chosen() {
    let root = tempfile::tempdir().unwrap();
    let e = &expected()["lm-eval"];
    let _ = e;
    let out = root.path().join("exp");
    let err = fails(
        ablate()
            .args(["import", "lm-eval"])
            .arg(fixture("lm-eval/v0.4.13"))
            .args(["--score", "exact_match"])
            .arg("--out")
            .arg(&out),
    );
    assert_mentions(
        &err,
        &[
            "one line per filter",
            "flexible-extract",
            "strict-match",
            "--filter",
        ],
    );
    let s = import(
        "lm-eval",
        &[fixture("lm-eval/v0.4.13")],
        &out,
        &[
            "--score",
            "exact_match",
            "--filter",
            "strict-match",
            "--baseline",
            "arith_gen_full fixture-a",
            "--threshold",
            "0.02",
        ],
    );
    // Two runs of each task by two models (fixture-a, fixture-b): a model is part of an arm
    // (issue 44), so four arms of one repeat each, never two repeats of one arm.
    assert_eq!(s["arms"].as_array().unwrap().len(), 4);
    // strict-match exact_match: fixture-a 0.666667 and fixture-b 0.833333 (full); 0.333333 and
    // 0.5 (noex).
    for (name, mean) in [
        ("arith_gen_full fixture-a", 4.0 / 6.0),
        ("arith_gen_full fixture-b", 5.0 / 6.0),
        ("arith_gen_noex fixture-a", 2.0 / 6.0),
        ("arith_gen_noex fixture-b", 3.0 / 6.0),
    ] {
        let a = arm(&s, name);
        assert_eq!(a["repeats_max"], 1, "{name}");
        close(a["mean_score"].as_f64().unwrap(), mean);
    }
    close(
        drop_of(&out, "arith_gen_noex fixture-a"),
        4.0 / 6.0 - 2.0 / 6.0,
    );
    assert_eq!(s["harness"], "lm-eval");
    passes_check(&out);
}

#[test]
fn lm_eval_older_formats_name_filters_from_the_results_file() {
    let root = tempfile::tempdir().unwrap();
    for (dir, filter, full, noex) in [
        ("lm-eval/v0.4.5-style", "strict-match", 4.0 / 6.0, 2.0 / 6.0),
        (
            "lm-eval/v0.4.2-style",
            "flexible-extract",
            5.0 / 6.0,
            4.0 / 6.0,
        ),
    ] {
        let s = import(
            "lm-eval",
            &[fixture(dir)],
            &root.path().join(filter),
            &[
                "--score",
                "exact_match",
                "--filter",
                filter,
                "--baseline",
                "arith_gen_full",
            ],
        );
        close(
            arm(&s, "arith_gen_full")["mean_score"].as_f64().unwrap(),
            full,
        );
        close(
            arm(&s, "arith_gen_noex")["mean_score"].as_f64().unwrap(),
            noex,
        );
    }
}

#[test]
fn lm_eval_nonfinite_scores_and_corpus_metrics_are_refused_clearly() {
    let root = tempfile::tempdir().unwrap();
    let err = fails(
        ablate()
            .args(["import", "lm-eval"])
            .arg(fixture("lm-eval/v0.4.13/fixture-a"))
            .args(["--score", "perplexity", "--out"])
            .arg(root.path().join("a")),
    );
    assert_mentions(
        &err,
        &[
            "samples_arith_ll",
            "line 6",
            "-Infinity",
            "--skip-nonfinite",
        ],
    );
    let s = import(
        "lm-eval",
        &[fixture("lm-eval/v0.4.13/fixture-b")],
        &root.path().join("b"),
        &["--score", "perplexity", "--skip-nonfinite"],
    );
    assert_eq!(s["rows"], 5);
    assert_mentions(
        &s["skipped"].to_string(),
        &["non-finite perplexity", "lines 6"],
    );
    let err = fails(
        ablate()
            .args(["import", "lm-eval"])
            .arg(fixture("lm-eval/v0.4.13/fixture-a"))
            .args(["--score", "f1", "--out"])
            .arg(root.path().join("c")),
    );
    assert_mentions(&err, &["corpus-level metric", "[gold, pred]", "--score"]);
}

#[test]
fn promptfoo_versions_agree_and_errors_are_not_zero_scores() {
    let root = tempfile::tempdir().unwrap();
    let means = |rel: &str, name: &str| {
        let s = import(
            "promptfoo",
            &[fixture(rel)],
            &root.path().join(name),
            &["--baseline", "full", "--threshold", "0.02"],
        );
        (
            arm(&s, "full")["mean_score"].as_f64().unwrap(),
            arm(&s, "no_examples")["mean_score"].as_f64().unwrap(),
            s["cases"].as_u64().unwrap(),
        )
    };
    let v3 = means("promptfoo/v0.121.20/results.json", "v3");
    close(v3.0, 0.888889);
    close(v3.1, 0.722222);
    assert_eq!(v3.2, 3, "three tests, each repeated: repeats are not cases");
    assert_eq!(v3, means("promptfoo/v0.121.20/results.jsonl", "jsonl"));
    let v2 = means("promptfoo/v0.91.3/results.json", "v2");
    close(v2.0, v3.0);
    close(v2.1, v3.1);

    for rel in [
        "promptfoo/v0.121.20/results_two_providers.json",
        "promptfoo/v2-handwritten/results_v2_with_failure_reason.json",
        "promptfoo/v0.91.3/results_two_providers.json",
    ] {
        let s = import(
            "promptfoo",
            &[fixture(rel)],
            &root.path().join(rel.replace('/', "_")),
            &["--baseline", "full | echo-a"],
        );
        // flaky's 4 rows: 2 errors (not scored) and 2 passes.
        let flaky = arm(&s, "full | flaky");
        close(flaky["mean_score"].as_f64().unwrap(), 1.0);
        assert_mentions(
            &s["skipped"].to_string(),
            &["4 row(s) that failed with an error"],
        );
    }
}

#[test]
fn promptfoo_named_scores_are_chosen_with_score() {
    let root = tempfile::tempdir().unwrap();
    let s = import(
        "promptfoo",
        &[fixture("promptfoo/v0.121.20/results.json")],
        &root.path().join("a"),
        &["--score", "has_examples", "--baseline", "full"],
    );
    close(arm(&s, "full")["mean_score"].as_f64().unwrap(), 1.0);
    close(arm(&s, "no_examples")["mean_score"].as_f64().unwrap(), 0.0);
    let err = fails(
        ablate()
            .args(["import", "promptfoo"])
            .arg(fixture("promptfoo/v0.121.20/results.json"))
            .args(["--score", "nope", "--out"])
            .arg(root.path().join("b")),
    );
    assert_mentions(&err, &["--score nope", "has_examples"]);
}

#[test]
fn imported_experiments_make_a_report() {
    let root = tempfile::tempdir().unwrap();
    let exp = root.path().join("exp");
    import(
        "inspect",
        &[
            fixture("inspect/v0.3.285/arm_full.eval"),
            fixture("inspect/v0.3.285/arm_no_examples.eval"),
        ],
        &exp,
        &["--threshold", "0.02", "--strata", "topic"],
    );
    common::report_into(&root.path().join("report"), &exp);
    let md = std::fs::read_to_string(root.path().join("report/report.md")).unwrap();
    assert_mentions(&md, &["arith", "no\\_examples"]);
}

#[test]
fn inspect_cancelled_and_errored_logs_are_skipped_with_their_reason() {
    let root = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("inspect/v0.3.285/arm_full_json.json")).unwrap();
    let mut log: Value = serde_json::from_str(&text).unwrap();
    log["status"] = "error".into();
    log["error"] =
        serde_json::json!({"message": "RuntimeError: the provider went away\nTraceback…"});
    let errored = root.path().join("errored.json");
    std::fs::write(&errored, log.to_string()).unwrap();
    log["status"] = "cancelled".into();
    let cancelled = root.path().join("cancelled.json");
    std::fs::write(&cancelled, log.to_string()).unwrap();
    let s = import(
        "inspect",
        &[
            errored,
            cancelled,
            fixture("inspect/v0.3.285/arm_no_examples.eval"),
        ],
        &root.path().join("out"),
        &[],
    );
    assert_mentions(
        &s["skipped"].to_string(),
        &[
            "errored.json: the whole log (12 samples), status error: RuntimeError: the provider went away",
            "cancelled.json: the whole log (12 samples), status cancelled",
        ],
    );
    assert_eq!(s["rows"], 12, "only the finished log is imported");
}

/// A set name experiment.toml would refuse (a line break, an escape code, a direction mark),
/// from `--set` or from the logs, is refused before anything is written: the import had written
/// it, said "next: ablate check", and every verb then refused the folder.
#[test]
fn a_set_name_every_verb_would_refuse_is_refused_at_import() {
    let root = tempfile::tempdir().unwrap();
    for name in ["support\nset", "a\u{1b}[31mb", "support\u{202e}set"] {
        let out = root.path().join("exp");
        let err = fails(
            ablate()
                .args(["import", "promptfoo"])
                .arg(fixture("promptfoo/v0.121.20/results.json"))
                .arg("--out")
                .arg(&out)
                .args(["--threshold-drop", "0.02", "--set", name]),
        );
        assert_mentions(&err, &["the set name", "--set", "one line of plain text"]);
        assert!(!out.exists(), "nothing written for {name:?}");
    }
}

/// A minimal promptfoo results.json (v2): 12 cases, each prompt label an arm, two repeats.
fn promptfoo_log(path: &Path, labels: &[&str], description: &str) {
    let mut results = Vec::new();
    for rep in 0..2 {
        for i in 0..12 {
            for (j, l) in labels.iter().enumerate() {
                let score = f64::from(u8::from((i + j + rep) % 3 != 0));
                results.push(serde_json::json!({
                    "promptIdx": j, "testIdx": i,
                    "testCase": {"description": format!("case{i}"), "vars": {"a": i}},
                    "provider": {"id": "echo", "label": "echo-a"},
                    "prompt": {"raw": format!("Q{i}"), "label": l}, "vars": {"a": i},
                    "response": {"output": format!("ans{i}")}, "success": score > 0.5,
                    "score": score, "namedScores": {}, "latencyMs": 0
                }));
            }
        }
    }
    let log = serde_json::json!({
        "evalId": "e",
        "results": {"version": 2, "timestamp": "2026-11-30T03:37:09.915Z", "results": results},
        "config": {"description": description}
    });
    std::fs::write(path, log.to_string()).unwrap();
}

/// A case's result rows dropped by the user (as ablate's messages suggest for a bad row) leave
/// its samples rows behind; new repeats imported `--into` the folder are numbered after those
/// too. They had taken the samples' numbers: samples.parquet held the key twice and every verb
/// refused the folder, after an import that exited 0.
#[test]
fn repeats_imported_into_a_folder_skip_the_numbers_its_samples_hold() {
    use polars::prelude::*;
    let root = tempfile::tempdir().unwrap();
    let (r1, r2, exp) = (
        root.path().join("r1.json"),
        root.path().join("r2.json"),
        root.path().join("exp"),
    );
    promptfoo_log(&r1, &["full", "noex"], "my set");
    promptfoo_log(&r2, &["full", "fourth"], "my set");
    let run = |args: &[&str], log: &Path| {
        common::succeeds(
            ablate()
                .args(["import", "promptfoo"])
                .arg(log)
                .args(args)
                .arg(&exp),
        );
    };
    run(&["--threshold-drop", "0.02", "--out"], &r1);
    let results = exp.join("results.parquet");
    let mut kept = LazyFrame::scan_parquet(
        PlRefPath::new(results.to_string_lossy().to_string()),
        ScanArgsParquet::default(),
    )
    .unwrap()
    .filter(
        (col("case_id")
            .eq(lit("case0"))
            .and(col("arm").eq(lit("full"))))
        .not(),
    )
    .collect()
    .unwrap();
    ParquetWriter::new(std::fs::File::create(&results).unwrap())
        .finish(&mut kept)
        .unwrap();
    run(&["--into"], &r2);
    common::succeeds(ablate().arg("check").arg(&exp));
}
