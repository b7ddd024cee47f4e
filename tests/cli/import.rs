//! `ablate import` on logs the real harnesses wrote (tests/fixtures/import, with how each was
//! made). Expected means come from `expected.json`, which `expected.py` computed from the same
//! files with its own zip and JSON reader.

use crate::common;

use std::path::{Path, PathBuf};

use common::{ablate, arm, assert_mentions, fails, import, import_fails, json};
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import")
}

fn fixture(rel: &str) -> PathBuf {
    fixtures().join(rel)
}

fn expected() -> Value {
    // Python wrote it: bare NaN appears, which only a lenient parser reads.
    json5::from_str(&std::fs::read_to_string(fixture("expected.json")).unwrap()).unwrap()
}

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
fn lm_eval_runs_are_repeats_and_filters_are_chosen() {
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
            "arith_gen_full",
            "--threshold",
            "0.02",
        ],
    );
    // Two runs (fixture-a, fixture-b) of each task: two repeats per doc.
    let full = arm(&s, "arith_gen_full");
    assert_eq!(full["repeats_min"], 2);
    // strict-match exact_match: run a 0.666667 and run b 0.833333 (full); 0.333333 and 0.5 (noex).
    close(
        full["mean_score"].as_f64().unwrap(),
        (4.0 / 6.0 + 5.0 / 6.0) / 2.0,
    );
    close(
        drop_of(&out, "arith_gen_noex"),
        (4.0 / 6.0 + 5.0 / 6.0) / 2.0 - (2.0 / 6.0 + 3.0 / 6.0) / 2.0,
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

// ---- The third safety round (issue 23): what import must refuse or keep apart. ----

/// A copy of a JSON fixture changed by `change`, written as `name` in `dir`.
fn changed_json(rel: &str, dir: &Path, name: &str, change: impl FnOnce(&mut Value)) -> PathBuf {
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(rel)).unwrap()).unwrap();
    change(&mut v);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    path
}

const INSPECT_JSON: &str = "inspect/v0.3.285/arm_full_json.json";
const PROMPTFOO_JSON: &str = "promptfoo/v0.121.20/results.json";

#[test]
fn a_multibyte_character_in_a_log_date_does_not_panic() {
    let root = tempfile::tempdir().unwrap();
    let log = changed_json(INSPECT_JSON, root.path(), "a.json", |v| {
        v["eval"]["created"] = "2026-11-0éT00:00:00".into();
    });
    let s = import(
        "inspect",
        &[log],
        &root.path().join("i"),
        &["--threshold", "0.02"],
    );
    assert!(s["written"].as_array().is_some());
    let pf = changed_json(PROMPTFOO_JSON, root.path(), "p.json", |v| {
        v["metadata"]["evaluationCreatedAt"] = "2026-11-0éT00:00:00".into();
    });
    let s = import(
        "promptfoo",
        &[pf],
        &root.path().join("p"),
        &["--threshold", "0.02"],
    );
    assert!(s["written"].as_array().is_some());
}

#[test]
fn deeply_nested_lm_eval_lines_are_refused_not_a_stack_overflow() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    let file = dir.join("samples_arith_2026-11-30T03-26-41.079522.jsonl");
    let deep = "[".repeat(30_000) + &"]".repeat(30_000);
    std::fs::write(&file, format!("{deep}\n")).unwrap();
    let err = import_fails("lm-eval", &[dir], &root.path().join("out"), &[]);
    assert_mentions(&err, &["line 1", "nested more than 128 deep"]);
}

/// Writes an `.eval` archive whose summaries.json holds a metadata string of `bytes` bytes.
fn eval_with_long_metadata(path: &Path, bytes: usize) {
    use std::io::Write as _;
    let header = std::fs::read_to_string(fixture(INSPECT_JSON)).unwrap();
    let mut v: Value = serde_json::from_str(&header).unwrap();
    v.as_object_mut().unwrap().remove("samples");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("header.json", opts).unwrap();
    zip.write_all(v.to_string().as_bytes()).unwrap();
    zip.start_file("summaries.json", opts).unwrap();
    zip.write_all(
        br#"[{"id": 1, "epoch": 1, "scores": {"match": {"value": "C"}}, "metadata": {"notes": ""#,
    )
    .unwrap();
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..bytes >> 20 {
        zip.write_all(&chunk).unwrap();
    }
    zip.write_all(br#""}}]"#).unwrap();
    zip.finish().unwrap();
}

#[test]
fn an_eval_entry_that_inflates_past_the_cap_is_refused_with_its_size() {
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("bomb.eval");
    eval_with_long_metadata(&log, 80 << 20);
    assert!(
        std::fs::metadata(&log).unwrap().len() < 1 << 20,
        "a small file"
    );
    let err = import_fails("inspect", &[log], &root.path().join("out"), &[]);
    assert_mentions(&err, &["summaries.json", "64 MiB once decompressed"]);
}

#[test]
fn a_long_metadata_value_is_no_case_column() {
    let root = tempfile::tempdir().unwrap();
    let long = "x".repeat(70 * 1024);
    let log = changed_json(INSPECT_JSON, root.path(), "a.json", |v| {
        for s in v["samples"].as_array_mut().unwrap() {
            s["metadata"]["notes"] = long.clone().into();
        }
    });
    let s = import(
        "inspect",
        std::slice::from_ref(&log),
        &root.path().join("a"),
        &["--threshold", "0.02"],
    );
    assert!(!s["case_columns"].to_string().contains("notes"));
    assert!(s["notes"].to_string().contains("`notes` is left out"));
    let err = import_fails(
        "inspect",
        &[log],
        &root.path().join("b"),
        &["--strata", "notes"],
    );
    assert_mentions(&err, &["metadata.notes", "65536 bytes"]);
}

#[test]
fn strata_options_that_would_clash_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let log = fixture(INSPECT_JSON);
    for strata in ["topic,topic", "case_id"] {
        let err = import_fails(
            "inspect",
            std::slice::from_ref(&log),
            &root.path().join("o"),
            &["--strata", strata],
        );
        assert!(!err.contains("duplicate"), "no Polars text: {err}");
        assert_mentions(&err, &["--strata"]);
    }
}

#[test]
fn text_that_is_not_utf8_is_bad_input_naming_the_line() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    let src = fixture("lm-eval/v0.4.13/fixture-a");
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    let samples = dir.join("samples_arith_mc_2026-11-30T03-26-41.079522.jsonl");
    let mut bytes = std::fs::read(&samples).unwrap();
    bytes.extend_from_slice(b"{\"doc_id\": \"\xff\xfe\"}\n");
    let line = bytes.iter().filter(|&&b| b == b'\n').count();
    std::fs::write(&samples, bytes).unwrap();
    let err = import_fails(
        "lm-eval",
        std::slice::from_ref(&dir),
        &root.path().join("o"),
        &[],
    );
    assert_mentions(
        &err,
        &["samples_arith_mc", &format!("line {line} is not UTF-8")],
    );
    // The results file too.
    std::fs::copy(
        src.join("samples_arith_mc_2026-11-30T03-26-41.079522.jsonl"),
        &samples,
    )
    .unwrap();
    let results = dir.join("results_2026-11-30T03-26-41.079522.json");
    let mut bytes = std::fs::read(&results).unwrap();
    bytes.splice(1..1, b"\n\n\"\xc3\x28\": 1,".iter().copied());
    std::fs::write(&results, bytes).unwrap();
    let err = import_fails("lm-eval", &[dir], &root.path().join("o"), &[]);
    assert_mentions(&err, &["results_", "line 3 is not UTF-8"]);
}

#[test]
fn import_applies_the_loaders_checks_naming_the_log_and_sample() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("o");
    // A promptfoo description with a line break: a case id check would reject.
    let pf = changed_json(PROMPTFOO_JSON, root.path(), "p.json", |v| {
        v["results"]["results"][0]["testCase"]["description"] = "small\nsum".into();
    });
    let err = import_fails("promptfoo", &[pf], &out, &[]);
    assert_mentions(&err, &["p.json, row 1", "case_id", "control character"]);
    // A score of 1e300, printed as a float.
    let pf = changed_json(PROMPTFOO_JSON, root.path(), "q.json", |v| {
        v["results"]["results"][1]["score"] = 1e300.into();
    });
    let err = import_fails("promptfoo", &[pf], &out, &[]);
    assert_mentions(&err, &["q.json, row 2", "1e300"]);
    assert!(!err.contains("0000000000"), "{err}");
    // Negative input tokens, and a cache read that wraps a 64-bit sum.
    for (tokens, cache) in [(-5i64, 0i64), (i64::MAX - 10, 100)] {
        let log = changed_json(INSPECT_JSON, root.path(), "i.json", |v| {
            v["samples"][0]["model_usage"]["mockllm/model"]["input_tokens"] = tokens.into();
            v["samples"][0]["model_usage"]["mockllm/model"]["input_tokens_cache_read"] =
                cache.into();
        });
        let err = import_fails("inspect", &[log], &out, &[]);
        assert_mentions(&err, &["i.json", "sample 1 epoch 1", "input token"]);
    }
    // Arm labels from file names with control characters.
    let dir = root.path().join("files");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(fixture(INSPECT_JSON), dir.join("a\u{1b}[31m.json")).unwrap();
    std::fs::copy(fixture(INSPECT_JSON), dir.join("b.json")).unwrap();
    let err = import_fails("inspect", &[dir], &out, &["--arm-from", "file"]);
    assert_mentions(&err, &["arm", "control character"]);
    assert!(!out.exists());
}

#[test]
fn task_args_that_differ_only_in_type_are_two_arms() {
    let root = tempfile::tempdir().unwrap();
    let one = changed_json(INSPECT_JSON, root.path(), "one.json", |v| {
        v["eval"]["task_args"]["variant"] = 1.into();
    });
    let text = changed_json(INSPECT_JSON, root.path(), "text.json", |v| {
        v["eval"]["task_args"]["variant"] = "1".into();
    });
    let s = import(
        "inspect",
        &[one, text],
        &root.path().join("o"),
        &["--threshold", "0.02", "--baseline", "1"],
    );
    let arms: Vec<&str> = s["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["arm"].as_str().unwrap())
        .collect();
    assert_eq!(arms.len(), 2, "{arms:?}");
    assert!(arms.contains(&"1") && arms.contains(&"\"1\""), "{arms:?}");
    assert!(s["arm_choice"].as_str().unwrap().contains("JSON"));
}

#[test]
fn promptfoo_tests_sharing_a_description_are_different_cases() {
    let root = tempfile::tempdir().unwrap();
    let pf = changed_json(PROMPTFOO_JSON, root.path(), "p.json", |v| {
        for r in v["results"]["results"].as_array_mut().unwrap() {
            r["testCase"]["description"] = "same words".into();
        }
    });
    let s = import(
        "promptfoo",
        &[pf],
        &root.path().join("o"),
        &["--threshold", "0.02"],
    );
    assert_eq!(s["cases"], 3, "three tests with different vars: {s}");
    assert!(
        s["notes"]
            .to_string()
            .contains("shared by tests with different vars")
    );
    for a in s["arms"].as_array().unwrap() {
        assert_eq!(a["repeats_max"], 2, "promptfoo --repeat 2: {a}");
    }
}

#[cfg(unix)]
#[test]
fn links_in_a_source_folder_are_named_as_skipped() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("logs");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(
        fixture("inspect/v0.3.285/arm_full.eval"),
        dir.join("a.eval"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        fixture("inspect/v0.3.285/arm_no_examples.eval"),
        dir.join("b.eval"),
    )
    .unwrap();
    let s = import(
        "inspect",
        &[dir],
        &root.path().join("o"),
        &["--threshold", "0.02"],
    );
    assert_mentions(&s["skipped"].to_string(), &["b.eval", "symbolic link"]);
}

#[test]
fn an_lm_eval_date_that_is_no_date_is_left_out() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    for e in std::fs::read_dir(fixture("lm-eval/v0.4.13/fixture-a")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    // arith_ll holds other documents under the same doc ids (every doc_hash differs): it would
    // be refused as sharing no case with arith_mc.
    std::fs::remove_file(dir.join("samples_arith_ll_2026-11-30T03-26-41.079522.jsonl")).unwrap();
    let results = dir.join("results_2026-11-30T03-26-41.079522.json");
    let text = std::fs::read_to_string(&results).unwrap();
    let at = text.find("\"date\": ").unwrap() + 8;
    let end = at + text[at..].find(',').unwrap();
    std::fs::write(&results, format!("{}1e300{}", &text[..at], &text[end..])).unwrap();
    let out = root.path().join("o");
    import(
        "lm-eval",
        &[dir],
        &out,
        &[
            "--score",
            "acc",
            "--filter",
            "none",
            "--baseline",
            "arith_mc",
        ],
    );
    let toml = std::fs::read_to_string(out.join("experiment.toml")).unwrap();
    assert!(!toml.contains("measured_at"), "{toml}");
}

#[test]
fn a_reimport_keeps_the_watch_state_and_messages_name_the_real_cause() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("o");
    let logs = [
        fixture("inspect/v0.3.285/arm_full.eval"),
        fixture("inspect/v0.3.285/arm_no_examples.eval"),
    ];
    let args = ["--threshold", "0.02", "--baseline", "full"];
    import("inspect", &logs, &out, &args);
    let state = out.join(".ablate-watch.json");
    std::fs::write(
        &state,
        r#"{"tool": "ablate watch", "version": 2, "runs": []}"#,
    )
    .unwrap();
    import("inspect", &logs, &out, &args);
    assert!(state.is_file(), "the watch state is kept");
    // A score that is no number lists the choices.
    let log = changed_json(INSPECT_JSON, root.path(), "nan.json", |v| {
        v["samples"][0]["scores"]["match"]["value"] = "nan".into();
    });
    let err = import_fails("inspect", &[log], &root.path().join("n"), &[]);
    assert_mentions(&err, &["scores found: match"]);
    assert!(!err.contains("error above"), "{err}");
}

#[test]
fn an_unsupported_zip_method_is_named() {
    use std::io::Write as _;
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("bz.eval");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&log).unwrap());
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("header.json", opts).unwrap();
    zip.write_all(b"{}").unwrap();
    zip.finish().unwrap();
    // Mark the entry as bzip2 (method 12) in its local and central headers.
    let mut bytes = std::fs::read(&log).unwrap();
    for (sig, at) in [(b"PK\x03\x04", 8), (b"PK\x01\x02", 10)] {
        let i = bytes.windows(4).position(|w| w == sig).unwrap();
        bytes[i + at] = 12;
        bytes[i + at + 1] = 0;
    }
    std::fs::write(&log, bytes).unwrap();
    let err = import_fails("inspect", &[log], &root.path().join("o"), &[]);
    assert_mentions(&err, &["header.json", "zip method"]);
    assert!(!err.contains("cut off"), "{err}");
}
