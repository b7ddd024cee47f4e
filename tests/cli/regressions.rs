//! Regressions: one test per bug that a review, an attack or a user's logs found, named by what
//! went wrong, under the issue that reported it. A fix lands with its test here, so the bug
//! cannot come back unnoticed (ripgrep's and xsv's `regression` module). Tests of a verb's
//! designed behaviour live in that verb's module.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common;
use crate::common::{Workdir, ablate, assert_mentions, fails, import, import_fails, json};
use crate::import::fixture;

/// Issue 23, the third safety round: exit 2 with a message, never a panic (101) or an abort
/// (134).
mod safety_round_3 {
    use super::*;

    #[test]
    fn a_thread_count_of_zero_is_refused_not_a_panic() {
        let w = Workdir::tiny();
        for value in ["0", "lots"] {
            let err = fails(
                ablate()
                    .env("POLARS_MAX_THREADS", value)
                    .arg("check")
                    .arg(&w.dir),
            );
            assert_mentions(&err, &["POLARS_MAX_THREADS", "1 or more"]);
        }
    }

    #[test]
    fn huge_batches_and_projections_are_bounded() {
        let w = Workdir::tiny();
        let batch = w.root.path().join("batch.parquet");
        // More repeats than any run has: refused by the option's range.
        let _ = fails(
            ablate()
                .args([
                    "next",
                    "--calls",
                    &u64::MAX.to_string(),
                    "--repeats",
                    &u32::MAX.to_string(),
                    "--out",
                ])
                .arg(&batch)
                .arg(&w.dir),
        );
        // The most repeats allowed and every call asked for: one bounded batch and a warning.
        let v = json(
            ablate()
                .args([
                    "--json",
                    "next",
                    "--calls",
                    &u64::MAX.to_string(),
                    "--repeats",
                    "10000",
                    "--out",
                ])
                .arg(&batch)
                .arg(&w.dir),
        );
        assert!(
            v["planned"].as_u64().unwrap() <= 1_000_000,
            "{}",
            v["planned"]
        );
        assert!(
            v["warnings"].to_string().contains("at most 1000000 calls"),
            "{}",
            v["warnings"]
        );
        // A sequential projection for 10^12 cases returns at once.
        let start = std::time::Instant::now();
        let out = ablate()
            .args([
                "--json",
                "plan",
                "--design",
                "loo",
                "--sequential",
                "--cases",
                "1000000000000",
                "--units",
            ])
            .arg(common::demo().join("units.parquet"))
            .arg("--pilot")
            .arg(common::demo())
            .output()
            .unwrap();
        assert!(matches!(out.status.code(), Some(0) | Some(2)), "{out:?}");
        assert!(start.elapsed().as_secs() < 60, "took {:?}", start.elapsed());
    }

    #[test]
    fn a_folder_where_the_watch_state_goes_is_refused() {
        let w = Workdir::tiny();
        std::fs::create_dir(w.path(".ablate-watch.json")).unwrap();
        let err = fails(ablate().arg("watch").arg(&w.dir));
        assert_mentions(&err, &[".ablate-watch.json", "is a folder"]);
    }

    #[test]
    fn batches_and_arms_tables_round_trip_ids_that_look_like_formulas() {
        let w = Workdir::tiny();
        for (from, to) in [("c1", "-q1"), ("c2", "@user_7")] {
            for file in ["cases.csv", "results.csv"] {
                let text = std::fs::read_to_string(w.path(file)).unwrap();
                w.write(file, &text.replace(&format!("{from},"), &format!("{to},")));
            }
        }
        // Keep only repeat 0 of every cell, so the batch asks for repeat 1.
        let results = std::fs::read_to_string(w.path("results.csv")).unwrap();
        let kept: String = results
            .lines()
            .filter(|l| !l.contains(",1,"))
            .map(|l| format!("{l}\n"))
            .collect();
        w.write("results.csv", &kept);
        let batch = w.root.path().join("batch.csv");
        json(
            ablate()
                .args([
                    "--json",
                    "next",
                    "--calls",
                    "100",
                    "--repeats",
                    "2",
                    "--out",
                ])
                .arg(&batch)
                .arg(&w.dir),
        );
        let text = std::fs::read_to_string(&batch).unwrap();
        assert!(
            text.contains("\n-q1,") && text.contains("\n@user_7,"),
            "{text}"
        );
        assert!(!text.contains('\''), "{text}");
        // Score the batch and append it: check accepts the ids.
        let scored: String = text.lines().skip(1).map(|l| format!("{l},1.0\n")).collect();
        w.write("results.csv", &format!("{kept}{scored}"));
        json(ablate().args(["--json", "check"]).arg(&w.dir));
        // An arms table with a unit that starts with '-'.
        let units = w.root.path().join("units.csv");
        std::fs::write(
            &units,
            "unit,block,tokens\n-system,system,900\n=x,few_shot,10\n",
        )
        .unwrap();
        let arms = w.root.path().join("arms.csv");
        json(
            ablate()
                .args(["--json", "plan", "--design", "loo", "--units"])
                .arg(&units)
                .arg("--out")
                .arg(&arms),
        );
        let text = std::fs::read_to_string(&arms).unwrap();
        assert!(
            text.contains(",-system,") && text.contains(",=x,"),
            "{text}"
        );
    }

    #[test]
    fn context_sizes_that_would_overflow_are_refused() {
        let w = Workdir::empty();
        w.write(
            "context_log.csv",
            "request_id,source,tokens\nr1,system,9000000000000000000\nr1,retrieval,9000000000000000000\n",
        );
        let err = fails(
            ablate()
                .args(["context", "--model-limit", "8000"])
                .arg(w.path("context_log.csv")),
        );
        assert_mentions(&err, &["tokens", "10^12"]);
    }

    #[test]
    fn next_says_when_the_set_is_exhausted_for_an_arm() {
        let w = Workdir::tiny();
        let v = json(
            ablate()
                .args(["--json", "next", "--calls", "1000000", "--out"])
                .arg(w.root.path().join("b.parquet"))
                .arg(&w.dir),
        );
        let warnings = v["warnings"].to_string();
        assert!(warnings.contains("exhausted"), "{warnings}");
        assert!(!warnings.contains("no whole unit fits"), "{warnings}");
    }
}

/// Issue 23, the third safety round: what `import` must refuse or keep apart.
mod import_round_3 {
    use super::*;

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
        std::fs::remove_file(dir.join("samples_arith_ll_2026-11-30T03-26-41.079522.jsonl"))
            .unwrap();
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
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
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
}

/// The adversarial audit of `ablate import`: exit 2 with a message, never an abort, a
/// gigabyte, a minute, or a sample counted twice.
mod import_audit {
    use super::*;
    use std::io::Write as _;

    const INSPECT_JSON: &str = "inspect/v0.3.285/arm_full_json.json";

    /// An `.eval` archive at `path` holding INSPECT_JSON's header, ready for more entries
    /// (DEFLATE), with that log's samples.
    fn eval_archive(
        path: &Path,
    ) -> (
        zip::ZipWriter<std::fs::File>,
        zip::write::SimpleFileOptions,
        Vec<Value>,
    ) {
        let text = std::fs::read_to_string(fixture(INSPECT_JSON)).unwrap();
        let mut v: Value = serde_json::from_str(&text).unwrap();
        let samples = v.as_object_mut().unwrap().remove("samples").unwrap();
        let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("header.json", opts).unwrap();
        zip.write_all(v.to_string().as_bytes()).unwrap();
        (zip, opts, serde_json::from_value(samples).unwrap())
    }

    /// Item 6: the nesting guard skipped only double-quoted strings; JSON5's single-quoted
    /// strings and comments hid the closing brackets, and the JSON5 parser overflowed the stack
    /// on `[']',` 50,000 times (exit 134).
    #[test]
    fn brackets_hidden_in_single_quotes_or_comments_do_not_pass_the_nesting_guard() {
        let root = tempfile::tempdir().unwrap();
        let close = "]".repeat(50_000);
        let texts = [
            // The old JSON array file, read whole.
            "[']',".repeat(50_000) + "1" + &close,
            r"['\']',".repeat(50_000) + "1" + &close,
            "[/*]*/".repeat(50_000) + "1" + &close,
            "[//]\n".repeat(50_000) + "1" + &close,
            // A JSON Lines line.
            r#"{"a": "#.to_string() + &"[']',".repeat(50_000) + "1" + &close + "}",
        ];
        for (k, text) in texts.iter().enumerate() {
            let dir = root.path().join(format!("run{k}"));
            std::fs::create_dir(&dir).unwrap();
            let file = dir.join("samples_arith_2026-11-30T03-26-41.079522.jsonl");
            std::fs::write(&file, format!("{text}\n")).unwrap();
            let out = root.path().join(format!("out{k}"));
            let err = import_fails("lm-eval", &[dir], &out, &[]);
            assert_mentions(&err, &["samples_arith", "nested more than 128 deep"]);
        }
    }

    /// Item 7: sixteen sample files of 60 MiB each in a 1 MB archive took the import to 1.08 GB,
    /// each entry under the 64 MiB cap. The entries read from one log now share a budget of 100
    /// times its size, at least 256 MiB: five such files (300 MiB) are refused.
    #[test]
    fn sample_files_that_inflate_past_the_log_s_budget_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let log = root.path().join("bomb.eval");
        let (mut zip, opts, _) = eval_archive(&log);
        // No summaries: every sample file is read, and kept.
        let chunk = vec![b'a'; 1 << 20];
        for id in 1..=5 {
            zip.start_file(format!("samples/{id}_epoch_1.json"), opts)
                .unwrap();
            let head = format!(
                r#"{{"id": {id}, "epoch": 1, "scores": {{"match": {{"value": "C"}}}}, "metadata": {{"notes": ""#
            );
            zip.write_all(head.as_bytes()).unwrap();
            for _ in 0..60 {
                zip.write_all(&chunk).unwrap();
            }
            zip.write_all(br#""}}"#).unwrap();
        }
        zip.finish().unwrap();
        assert!(
            std::fs::metadata(&log).unwrap().len() < 1 << 20,
            "a small file"
        );
        let err = import_fails("inspect", &[log], &root.path().join("out"), &[]);
        assert_mentions(
            &err,
            &[
                "bomb.eval",
                "more than 256 MiB once decompressed",
                "100 times",
            ],
        );
    }

    /// Item 8: a summary repeated 60 times inflated its sample file 60 times (10 s against 0.2 s
    /// for one). The repeat is refused before any sample file is read: the file here is not even
    /// JSON, and the message is about the summaries.
    #[test]
    fn a_repeated_summary_never_inflates_its_sample_file_again() {
        let root = tempfile::tempdir().unwrap();
        let log = root.path().join("again.eval");
        let (mut zip, opts, _) = eval_archive(&log);
        // Summaries without usage (as before Inspect 0.3.93): usage is read from the sample files.
        let row = serde_json::json!({"id": 1, "epoch": 1, "scores": {"match": {"value": "C"}}});
        zip.start_file("summaries.json", opts).unwrap();
        zip.write_all(Value::from(vec![row; 60]).to_string().as_bytes())
            .unwrap();
        zip.start_file("samples/1_epoch_1.json", opts).unwrap();
        zip.write_all(b"not JSON").unwrap();
        zip.finish().unwrap();
        let err = import_fails("inspect", &[log], &root.path().join("out"), &[]);
        assert_mentions(
            &err,
            &[
                "again.eval",
                "sample 1 epoch 1",
                "more than once in summaries.json",
            ],
        );
        assert!(!err.contains("samples/1_epoch_1.json"), "{err}");
    }

    /// Item 19: a summary repeated in summaries.json became a third repeat of its case (the
    /// baseline's mean moved from 0.75 to 0.79). Refused, naming the log, the id and the epoch;
    /// the same in a .json log.
    #[test]
    fn a_sample_twice_in_one_inspect_log_is_refused_not_a_repeat() {
        let root = tempfile::tempdir().unwrap();
        let log = root.path().join("twice.eval");
        let (mut zip, opts, mut samples) = eval_archive(&log);
        samples.push(samples[0].clone());
        zip.start_file("summaries.json", opts).unwrap();
        zip.write_all(Value::from(samples).to_string().as_bytes())
            .unwrap();
        zip.finish().unwrap();
        let err = import_fails("inspect", &[log], &root.path().join("a"), &[]);
        assert_mentions(
            &err,
            &[
                "twice.eval",
                "sample 1 epoch 1",
                "more than once in summaries.json",
            ],
        );

        let text = std::fs::read_to_string(fixture(INSPECT_JSON)).unwrap();
        let mut v: Value = serde_json::from_str(&text).unwrap();
        let first = v["samples"][0].clone();
        v["samples"].as_array_mut().unwrap().push(first);
        let json = root.path().join("twice.json");
        std::fs::write(&json, v.to_string()).unwrap();
        let err = import_fails("inspect", &[json], &root.path().join("b"), &[]);
        assert_mentions(
            &err,
            &[
                "twice.json",
                "sample 1 epoch 1",
                "more than once in samples[]",
            ],
        );
    }
}

/// Found by the `parquet_table` fuzz target after issue 26 made it fast: a Parquet file whose
/// footer places a column chunk past the end of the file aborted ablate (exit 134) inside
/// Polars' streaming reader, which slices the file by those ranges unchecked (an out-of-bounds
/// read in a release build). The footer is now checked first.
mod parquet_footer {
    use super::*;

    #[test]
    fn a_column_chunk_past_the_end_of_the_file_is_bad_input() {
        let w = Workdir::tiny();
        std::fs::remove_file(w.path("cases.csv")).unwrap();
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/regressions/cases-range-past-end.parquet"),
            w.path("cases.parquet"),
        )
        .unwrap();
        let err = fails(ablate().arg("check").arg(&w.dir));
        assert_mentions(&err, &["cases.parquet", "row group 0", "1904-byte file"]);
    }
}
