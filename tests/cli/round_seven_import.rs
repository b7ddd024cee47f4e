//! Imports that pooled or read what differs, found after the sixth round (2026-12-06). Each test
//! names what it protects: Inspect logs of other model arguments or servers, a re-scored copy of
//! an Inspect run, invalidated Inspect samples, promptfoo providers that share a name, and lm-eval
//! runs of other checkpoints or generation settings.

use crate::common;

use std::path::{Path, PathBuf};

use common::{ablate, arm, assert_mentions, fails, import, import_fails};
use serde_json::{Value, json};

use crate::import::fixture;

// ---- Inspect ----

/// The v0.3.285 `.json` log of arm `full` (task `arith`, samples 1, 2, 3, q4, q5, q6 × 2 epochs;
/// q6 and q5 epoch 2 wrong), edited by `edit`, written into `dir/name`.
fn inspect_log(dir: &Path, name: &str, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let text = std::fs::read_to_string(fixture("inspect/v0.3.285/arm_full_json.json")).unwrap();
    let mut log: Value = serde_json::from_str(&text).unwrap();
    edit(&mut log);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(&log).unwrap()).unwrap();
    path
}

/// Another run of the same configuration: a new eval and run id.
fn another_run(log: &mut Value, id: &str) {
    log["eval"]["eval_id"] = id.into();
    log["eval"]["run_id"] = id.into();
}

/// Logs that differ only in `-M model_path=…` (a local fine-tune) or `--model-base-url` (another
/// server under the same model name) were pooled into one arm as repeats, and with --into such a
/// log joined the experiment's arm. Refused, naming the setting; named apart with --arm, two arms.
#[test]
fn inspect_logs_of_other_model_args_or_servers_are_not_one_arm() {
    let root = tempfile::tempdir().unwrap();
    let base = inspect_log(root.path(), "base.json", |_| {});
    let tuned = inspect_log(root.path(), "tuned.json", |l| {
        another_run(l, "tuned");
        l["eval"]["model_args"]["model_path"] = "/models/finetune-B".into();
    });
    let served = inspect_log(root.path(), "served.json", |l| {
        another_run(l, "served");
        l["eval"]["model_base_url"] = "http://other-server:8000/v1".into();
    });
    let err = import_fails(
        "inspect",
        &[base.clone(), tuned.clone()],
        &root.path().join("x"),
        &["--threshold", "0.02"],
    );
    assert_mentions(
        &err,
        &[
            "base.json",
            "tuned.json",
            "would both be arm `arith`",
            "the model's arguments (-M): model_args.model_path",
            "\"/models/finetune-B\"",
            "--arm NAME=GLOB",
        ],
    );
    assert!(!root.path().join("x").exists());
    let err = import_fails(
        "inspect",
        &[base.clone(), served.clone()],
        &root.path().join("x"),
        &["--threshold", "0.02"],
    );
    assert_mentions(
        &err,
        &[
            "served.json",
            "model_base_url",
            "http://other-server:8000/v1",
        ],
    );
    // Named apart: two arms of 12 results each.
    let s = import(
        "inspect",
        &[base.clone(), tuned.clone()],
        &root.path().join("apart"),
        &[
            "--threshold",
            "0.02",
            "--baseline",
            "base",
            "--arm",
            &format!("base={}", base.display()),
            "--arm",
            &format!("tuned={}", tuned.display()),
        ],
    );
    assert_eq!(arm(&s, "base")["repeats_max"], 2, "{s}");
    assert_eq!(arm(&s, "tuned")["repeats_max"], 2, "{s}");
    // --into: the fine-tune's log does not join the experiment's arm of the base model.
    let exp = root.path().join("exp");
    import(
        "inspect",
        std::slice::from_ref(&base),
        &exp,
        &["--threshold", "0.02"],
    );
    let err = fails(
        ablate()
            .args(["import", "inspect", "--quiet"])
            .arg(&tuned)
            .arg("--into")
            .arg(&exp),
    );
    assert_mentions(
        &err,
        &[
            "tuned.json",
            "its arm would be `arith`",
            "different configuration",
        ],
    );
}

/// A copy of a run re-scored (`inspect score`) or edited (`edit_score`) keeps the eval id, and was
/// skipped as "the same run": which scores were read followed the files' names (0.75 or 1.0 for
/// one baseline). A copy with the same scores is still read once; one with other scores is
/// refused, naming both files and the first sample that differs.
#[test]
fn inspect_rescored_copy_of_a_run_is_refused_not_skipped() {
    let root = tempfile::tempdir().unwrap();
    let full = inspect_log(root.path(), "full.json", |_| {});
    let copy = inspect_log(root.path(), "full_copy.json", |_| {});
    let s = import(
        "inspect",
        &[full.clone(), copy.clone()],
        &root.path().join("same"),
        &["--threshold", "0.02"],
    );
    assert_eq!(s["rows"], 12, "{s}");
    assert_mentions(
        &s["skipped"].to_string(),
        &["full_copy.json", "with the same scores, read once"],
    );
    // Named to sort before and after the original: refused either way.
    for name in ["full_regraded.json", "full-regraded.json"] {
        let regraded = inspect_log(root.path(), name, |l| {
            for s in l["samples"].as_array_mut().unwrap() {
                if s["id"] == "q6" && s["epoch"] == 1 {
                    s["scores"]["match"]["value"] = "C".into();
                }
            }
        });
        let err = import_fails(
            "inspect",
            &[full.clone(), regraded.clone()],
            &root.path().join("x"),
            &["--threshold", "0.02"],
        );
        assert_mentions(
            &err,
            &[
                "full.json",
                name,
                "hold the same run (eval_id",
                "sample q6 epoch 1, scores.match: ",
                "\"I\" in ",
                "\"C\" in ",
                "re-scored or edited copy",
                "import one of them",
            ],
        );
        std::fs::remove_file(&regraded).unwrap();
    }
}

/// With --into, a copy of a run the experiment holds was dropped as "already held" whatever its
/// scores: a re-graded copy is refused, naming the first sample that differs; a faithful copy is
/// still left out.
#[test]
fn inspect_rescored_copy_of_a_held_run_is_refused_by_into() {
    let root = tempfile::tempdir().unwrap();
    let full = inspect_log(root.path(), "full.json", |_| {});
    let noex = fixture("inspect/v0.3.285/arm_no_examples.eval");
    let exp = root.path().join("exp");
    import(
        "inspect",
        &[full, noex],
        &exp,
        &["--threshold-drop", "0.02", "--baseline", "full"],
    );
    let into = |log: &Path| {
        let mut cmd = ablate();
        cmd.args(["import", "inspect", "--quiet"])
            .arg(log)
            .arg("--into")
            .arg(&exp);
        cmd
    };
    let regraded = inspect_log(root.path(), "full_regraded.json", |l| {
        for s in l["samples"].as_array_mut().unwrap() {
            if s["id"] == "q6" && s["epoch"] == 2 {
                s["scores"]["match"]["value"] = "C".into();
            }
        }
    });
    let before = std::fs::read(exp.join("results.parquet")).unwrap();
    let err = fails(&mut into(&regraded));
    assert_mentions(
        &err,
        &[
            "full_regraded.json",
            "already holds this run",
            "sample q6 epoch 2: 0 in the experiment, 1 in this file",
            "re-scored or edited copy",
        ],
    );
    assert_eq!(std::fs::read(exp.join("results.parquet")).unwrap(), before);
    let copy = inspect_log(root.path(), "full_copy.json", |_| {});
    let out = into(&copy).output().unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert_mentions(&said, &["nothing new to add", "already holds this run"]);
}

/// Samples invalidated with Inspect's `invalidate_samples` (header `invalidated: true`, the
/// sample's `invalidation`) were imported as scores without a word. They are skipped and counted
/// with their reason, like errored samples.
#[test]
fn inspect_invalidated_samples_are_skipped_and_said() {
    let root = tempfile::tempdir().unwrap();
    let log = inspect_log(root.path(), "full_inv.json", |l| {
        l["invalidated"] = true.into();
        for s in l["samples"].as_array_mut().unwrap() {
            if s["id"] == "q6" {
                s["invalidation"] = json!({
                    "timestamp": "2026-12-01T10:00:00+00:00",
                    "author": "reviewer",
                    "reason": "grader outage",
                    "metadata": null
                });
            }
        }
    });
    let s = import(
        "inspect",
        &[log],
        &root.path().join("exp"),
        &["--threshold", "0.02"],
    );
    // q6 is wrong in both epochs: without it, 9 of the 10 remaining are right.
    assert_eq!(s["rows"], 10, "{s}");
    let mean = arm(&s, "arith")["mean_score"].as_f64().unwrap();
    assert!((mean - 0.9).abs() < 1e-9, "{s}");
    assert_mentions(
        &s["skipped"].to_string(),
        &[
            "full_inv.json",
            "2 sample(s) invalidated (reason: grader outage), not scored",
        ],
    );
}

/// The same three defects on logs Inspect 0.3.285 wrote itself (`make_special.py`): a run given
/// `-M model_path=…` and one given another server are refused beside the plain run; the log whose
/// q6 was invalidated through `invalidate_samples` imports without q6.
#[test]
fn inspect_logs_written_by_inspect_keep_model_settings_and_invalidations() {
    let root = tempfile::tempdir().unwrap();
    let special = |name: &str| fixture(&format!("inspect/v0.3.285/special/{name}"));
    for (other, said) in [
        ("full_model_path.eval", "model_args.model_path"),
        ("full_base_url.eval", "http://other-server:8000/v1"),
    ] {
        let err = import_fails(
            "inspect",
            &[special("full.eval"), special(other)],
            &root.path().join("x"),
            &["--threshold-drop", "0.02"],
        );
        assert_mentions(&err, &[other, "would both be arm `arith`", said]);
    }
    let s = import(
        "inspect",
        &[special("full_invalidated.eval")],
        &root.path().join("inv"),
        &["--threshold-drop", "0.02"],
    );
    assert_eq!(s["rows"], 10, "{s}");
    assert_mentions(
        &s["skipped"].to_string(),
        &["2 sample(s) invalidated (reason: grader outage)"],
    );
}

/// A scorer that returns `float('nan')` makes Inspect write a bare `NaN`, which strict JSON
/// refuses: the import had blamed a damaged or cut-off file. Now the score is named as NaN,
/// sample by sample, or left out and counted with --skip-nonfinite, from the .eval and the .json.
#[test]
fn inspect_nan_scores_are_named_or_skipped_not_a_damaged_file() {
    let root = tempfile::tempdir().unwrap();
    let special = |name: &str| fixture(&format!("inspect/v0.3.285/special/{name}"));
    for full in ["nan_full.eval", "nan_full.json"] {
        let logs = [special(full), special("nan_no_examples.eval")];
        let err = import_fails(
            "inspect",
            &logs,
            &root.path().join("x"),
            &["--threshold-drop", "0.02"],
        );
        assert_mentions(
            &err,
            &[
                "scores.nanny",
                "epoch 1",
                "the score is NaN",
                "--skip-nonfinite",
            ],
        );
        assert!(!err.contains("not the JSON Inspect writes"), "{err}");
        let out = root.path().join(full);
        let s = import(
            "inspect",
            &logs,
            &out,
            &["--threshold-drop", "0.02", "--skip-nonfinite"],
        );
        // Right answers score 1; the 1 + 3 wrong ones are left out and listed.
        assert_eq!(s["rows"], 8, "{s}");
        assert_eq!(arm(&s, "full")["mean_score"], 1.0, "{s}");
        assert_mentions(
            &s["skipped"].to_string(),
            &[
                "1 sample(s) with a non-finite nanny (--skip-nonfinite): q6 epoch 1",
                "3 sample(s) with a non-finite nanny",
            ],
        );
    }
}

// ---- promptfoo ----

/// Two providers with the same id and label but other configs (temperature 0 and 1, say) write
/// two columns each per prompt, and the rows of both had become repeats of one arm (run-to-run
/// "noise" of 100%). Refused, naming the columns, the shared name and both configs.
#[test]
fn promptfoo_providers_sharing_a_name_are_refused_not_repeats() {
    let root = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("promptfoo/v0.121.20/results.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    let provider = v["config"]["providers"][0].clone();
    let mut right = provider.clone();
    right["config"] = json!({"mode": "right"});
    let mut wrong = provider;
    wrong["config"] = json!({"mode": "wrong"});
    v["config"]["providers"] = json!([right, wrong]);
    let results = v["results"]["results"].as_array().unwrap().clone();
    let columns = v["results"]["prompts"].as_array().unwrap().len() as i64;
    let mut rows = results.clone();
    for r in &results {
        let mut r = r.clone();
        r["id"] = format!("second-{}", r["id"].as_str().unwrap()).into();
        r["promptIdx"] = (r["promptIdx"].as_i64().unwrap() + columns).into();
        rows.push(r);
    }
    v["results"]["results"] = rows.into();
    let prompts = v["results"]["prompts"].as_array().unwrap().clone();
    v["results"]["prompts"]
        .as_array_mut()
        .unwrap()
        .extend(prompts);
    let path = root.path().join("two_configs.json");
    std::fs::write(&path, v.to_string()).unwrap();
    let err = import_fails(
        "promptfoo",
        &[path],
        &root.path().join("x"),
        &["--threshold", "0.02"],
    );
    assert_mentions(
        &err,
        &[
            "two_configs.json",
            "of the eval (promptIdx) would both be arm",
            "share the name `echo-a`",
            "{\"mode\":\"right\"}",
            "{\"mode\":\"wrong\"}",
            "`label:`",
        ],
    );
    assert!(!root.path().join("x").exists());
}

/// Two evals whose configs give one provider name other settings (temperature 0 and 1, another
/// model version) pooled both configurations' answers into one arm as repeats. Refused, naming
/// both files and both settings; the same config is still two repeats, and --arm names the
/// files apart.
#[test]
fn promptfoo_provider_of_other_settings_across_files_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("promptfoo/v0.121.20/results.json")).unwrap();
    let eval = |name: &str, tag: &str, config: Option<Value>| {
        let mut v: Value = serde_json::from_str(&text).unwrap();
        if let Some(config) = config {
            v["config"]["providers"][0]["config"] = config;
        }
        for r in v["results"]["results"].as_array_mut().unwrap() {
            r["id"] = format!("{tag}-{}", r["id"].as_str().unwrap()).into();
        }
        let path = root.path().join(name);
        std::fs::write(&path, v.to_string()).unwrap();
        path
    };
    let cold = eval("cold.json", "cold", Some(json!({"temperature": 0})));
    let hot = eval("hot.json", "hot", Some(json!({"temperature": 1})));
    let again = eval("again.json", "again", Some(json!({"temperature": 0})));
    let err = import_fails(
        "promptfoo",
        &[cold.clone(), hot.clone()],
        &root.path().join("x"),
        &["--threshold-drop", "0.02"],
    );
    assert_mentions(
        &err,
        &[
            "cold.json",
            "hot.json",
            "both run provider `echo-a`",
            "\"temperature\":0",
            "\"temperature\":1",
            "--arm NAME=GLOB",
        ],
    );
    assert!(!root.path().join("x").exists());
    let s = import(
        "promptfoo",
        &[cold.clone(), again],
        &root.path().join("repeats"),
        &["--threshold-drop", "0.02"],
    );
    assert_eq!(s["arms"].as_array().unwrap().len(), 2, "{s}");
    // Each eval ran --repeat 2: two evals of one config are four repeats.
    assert_eq!(s["arms"][0]["repeats_max"], 4, "{s}");
    let s = import(
        "promptfoo",
        &[cold.clone(), hot.clone()],
        &root.path().join("apart"),
        &[
            "--threshold-drop",
            "0.02",
            "--baseline",
            "cold full",
            "--arm",
            &format!("cold={}", cold.display()),
            "--arm",
            &format!("hot={}", hot.display()),
        ],
    );
    assert_eq!(s["arms"].as_array().unwrap().len(), 4, "{s}");
}

// ---- lm-eval ----

/// A copy of lm-eval fixture-a's run as another run (new date_id) in `dir`, with its results
/// file's `config` edited by `edit`; returns its arith_gen_full samples file.
fn lm_eval_run(dir: &Path, date_id: &str, edit: impl FnOnce(&mut Value)) -> PathBuf {
    const FIXTURE_ID: &str = "2026-11-30T03-26-41.079522";
    std::fs::create_dir_all(dir).unwrap();
    let from = fixture("lm-eval/v0.4.13/fixture-a");
    for entry in std::fs::read_dir(&from).unwrap() {
        let entry = entry.unwrap();
        let name = entry
            .file_name()
            .to_string_lossy()
            .replace(FIXTURE_ID, date_id);
        std::fs::copy(entry.path(), dir.join(name)).unwrap();
    }
    let results = dir.join(format!("results_{date_id}.json"));
    // lm-eval writes Python's `NaN` and `Infinity` (a stderr of one sample), which are not JSON.
    let text = std::fs::read_to_string(&results)
        .unwrap()
        .replace("NaN", "null")
        .replace("Infinity", "null");
    let mut v: Value = serde_json::from_str(&text).unwrap();
    edit(&mut v["config"]);
    std::fs::write(&results, v.to_string()).unwrap();
    dir.join(format!("samples_arith_gen_full_{date_id}.jsonl"))
}

/// Runs of one task and model_name whose `model_args` (`revision=`: another checkpoint) or
/// `gen_kwargs` (another temperature) differ were pooled as repeats: lm-eval's model_name comes
/// from `pretrained=` alone and its prompt_hash from the prompt alone. Refused, naming the
/// settings; named apart with --arm, two arms.
#[test]
fn lm_eval_runs_of_other_checkpoints_or_gen_kwargs_are_not_repeats() {
    let root = tempfile::tempdir().unwrap();
    let a = lm_eval_run(&root.path().join("a"), "2026-11-30T03-26-41.079522", |_| {});
    let b = lm_eval_run(&root.path().join("b"), "2026-11-30T04-00-00.000000", |c| {
        c["model_args"]["revision"] = "step1000".into();
        c["gen_kwargs"] = json!({"temperature": 0.8, "do_sample": true});
    });
    let args = [
        "--filter",
        "strict-match",
        "--score",
        "exact_match",
        "--threshold",
        "0.02",
    ];
    let err = import_fails(
        "lm-eval",
        &[a.clone(), b.clone()],
        &root.path().join("x"),
        &args,
    );
    assert_mentions(
        &err,
        &[
            "a/samples_arith_gen_full_",
            "b/samples_arith_gen_full_",
            "would both be arm `arith_gen_full`",
            "gen_kwargs.temperature",
            "0.8",
            "model_args.revision",
            "step1000",
            "--arm NAME=GLOB",
        ],
    );
    assert!(!root.path().join("x").exists());
    // The same settings written as lm-eval's `k=v` string are the same run settings.
    let c = lm_eval_run(&root.path().join("c"), "2026-11-30T05-00-00.000000", |c| {
        c["model_args"] = "model=fixture-a,skill=a".into();
    });
    let s = import(
        "lm-eval",
        &[a.clone(), c],
        &root.path().join("repeats"),
        &args,
    );
    assert_eq!(arm(&s, "arith_gen_full")["repeats_max"], 2, "{s}");
    // Named apart.
    let mut apart: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    apart.extend([
        "--baseline".into(),
        "step143000".into(),
        "--arm".into(),
        format!("step143000={}", a.display()),
        "--arm".into(),
        format!("step1000={}", b.display()),
    ]);
    let apart: Vec<&str> = apart.iter().map(String::as_str).collect();
    let s = import("lm-eval", &[a, b], &root.path().join("apart"), &apart);
    assert_eq!(arm(&s, "step143000")["repeats_max"], 1, "{s}");
    assert_eq!(arm(&s, "step1000")["repeats_max"], 1, "{s}");
}
