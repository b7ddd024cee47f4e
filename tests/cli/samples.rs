//! The `samples` table: each importer keeps every sample's input, output and source; `check`
//! refuses bad keys; the report's drill-down shows a lost case's text, escaped and cut.

use crate::common;

use std::path::Path;

use common::{Workdir, check_fails, import};
use polars::prelude::*;

use crate::import::fixture;

/// The samples table of an experiment folder, by (case_id, arm, repeat): (input, output, source).
type Texts = std::collections::BTreeMap<(String, String, i64), [Option<String>; 3]>;

fn samples(dir: &Path) -> Texts {
    let df = ParquetReader::new(std::fs::File::open(dir.join("samples.parquet")).unwrap())
        .finish()
        .unwrap();
    let text = |name: &str| -> Vec<Option<String>> {
        df.column(name)
            .unwrap()
            .str()
            .unwrap()
            .iter()
            .map(|v| v.map(str::to_string))
            .collect()
    };
    let (ids, arms) = (text("case_id"), text("arm"));
    let (inputs, outputs, sources) = (text("input"), text("output"), text("source"));
    let repeats: Vec<i64> = df
        .column("repeat")
        .unwrap()
        .i64()
        .unwrap()
        .iter()
        .map(Option::unwrap)
        .collect();
    (0..df.height())
        .map(|i| {
            (
                (
                    ids[i].clone().unwrap(),
                    arms[i].clone().unwrap(),
                    repeats[i],
                ),
                [inputs[i].clone(), outputs[i].clone(), sources[i].clone()],
            )
        })
        .collect()
}

fn key(case: &str, arm: &str, repeat: i64) -> (String, String, i64) {
    (case.to_string(), arm.to_string(), repeat)
}

#[test]
fn each_importer_keeps_inputs_outputs_and_sources_in_samples() {
    let root = tempfile::tempdir().unwrap();
    let noex = fixture("inspect/v0.3.285/arm_no_examples.eval");

    // An Inspect .json log carries whole samples: input and output.
    let out = root.path().join("inspect-json");
    import(
        "inspect",
        &[fixture("inspect/v0.3.285/arm_full_json.json"), noex.clone()],
        &out,
        &["--threshold", "0.02"],
    );
    let s = samples(&out);
    let [input, output, source] = s
        .get(&key("1", "full", 1))
        .unwrap_or_else(|| panic!("{:?}", s.keys().collect::<Vec<_>>()));
    assert_eq!(input.as_deref(), Some("What is 2+3?"));
    assert_eq!(output.as_deref(), Some("5"));
    assert!(
        source
            .as_deref()
            .unwrap()
            .ends_with("arm_full_json.json, sample 1 epoch 1"),
        "{source:?}"
    );
    // Every result row has its sample row, with the same keys.
    let results = ParquetReader::new(std::fs::File::open(out.join("results.parquet")).unwrap())
        .finish()
        .unwrap();
    assert_eq!(results.height(), s.len());

    // An .eval archive's summaries carry the input, not the output (the source says where the
    // whole sample is).
    let out = root.path().join("inspect-eval");
    import(
        "inspect",
        &[fixture("inspect/v0.3.285/arm_full.eval"), noex],
        &out,
        &["--threshold", "0.02"],
    );
    let [input, output, source] = &samples(&out)[&key("1", "full", 1)];
    assert_eq!(input.as_deref(), Some("What is 2+3?"));
    assert_eq!(output, &None);
    assert!(
        source
            .as_deref()
            .unwrap()
            .contains("arm_full.eval, sample 1 epoch 1")
    );

    // lm-eval: the request's prompt and the raw response.
    let out = root.path().join("lm-eval");
    import(
        "lm-eval",
        &[fixture("lm-eval/v0.4.13/fixture-a")],
        &out,
        crate::import::LM_EVAL,
    );
    let s = samples(&out);
    let (_, [input, output, source]) = s.iter().find(|(k, _)| k.0 == "0").unwrap();
    assert!(
        input.as_deref().unwrap().contains("What is 2+3?"),
        "{input:?}"
    );
    assert!(output.is_some(), "{s:?}");
    assert!(source.as_deref().unwrap().contains(", line "), "{source:?}");

    // promptfoo: the rendered prompt and the provider's output (the echo provider repeats it).
    let out = root.path().join("promptfoo");
    import(
        "promptfoo",
        &[fixture("promptfoo/v0.121.20/results.json")],
        &out,
        &["--baseline", "full", "--threshold", "0"],
    );
    let s = samples(&out);
    let (_, [input, output, source]) = s.iter().find(|(k, _)| k.1 == "no_examples").unwrap();
    assert!(input.as_deref().unwrap().contains("Question:"), "{input:?}");
    assert_eq!(input, output, "the echo provider answers with the prompt");
    assert!(source.as_deref().unwrap().contains("results.json, row "));
}

#[test]
fn an_append_stacks_the_new_samples_under_the_old() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("exp");
    import(
        "inspect",
        &[fixture("inspect/v0.3.285/arm_full_json.json")],
        &out,
        &["--threshold", "0.02"],
    );
    let before = samples(&out).len();
    let noex = fixture("inspect/v0.3.285/arm_no_examples.eval");
    common::succeeds(
        common::ablate()
            .args(["import", "inspect", "--json", "--into"])
            .arg(&out)
            .arg(&noex)
            .arg("--arm")
            .arg(format!("no_examples={}", noex.display())),
    );
    let after = samples(&out);
    assert!(after.len() > before);
    assert!(after.keys().any(|k| k.1 == "no_examples"));
    assert!(
        after.keys().any(|k| k.1 != "no_examples"),
        "the first import's samples stay"
    );
}

#[test]
fn samples_with_unknown_cases_or_arms_or_repeated_keys_are_refused_by_row() {
    for (body, needles) in [
        (
            "case_id,arm,repeat,input\nc1,baseline,0,hi\nc9,baseline,0,hi\n",
            &["samples.csv", "case_id", "row 2", "c9"][..],
        ),
        (
            "case_id,arm,repeat,input\nc1,baseline,0,hi\nc1,nope,0,hi\n",
            &["samples.csv", "arm", "row 2", "nope", "no results"][..],
        ),
        (
            "case_id,arm,repeat,input\nc1,baseline,0,hi\nc1,baseline,0,again\n",
            &["samples.csv", "case_id, arm, repeat", "row 2", "duplicate"][..],
        ),
    ] {
        let w = Workdir::tiny();
        w.write("samples.csv", body);
        let err = check_fails(&w.dir);
        common::assert_mentions(&err, needles);
    }
}

#[test]
fn the_drill_down_shows_a_lost_case_s_texts_escaped_and_cut() {
    let w = Workdir::tiny();
    let long = "x".repeat(5_000);
    w.write(
        "samples.csv",
        &format!(
            "case_id,arm,repeat,input,output,source\n\
             c1,baseline,0,\"<script>alert(1)</script> refund?\",\"Yes & welcome\",log.json#1\n\
             c1,without-examples,0,\"<script>alert(1)</script> refund?\",{long},log.json#2\n"
        ),
    );
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("rep");
    common::report_into(&out, &w.dir);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        !html.contains("<script>alert"),
        "sample text reached the page unescaped"
    );
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; refund?"));
    assert!(html.contains("Yes &amp; welcome"));
    assert!(html.contains("log.json#2"));
    // The 5,000-character output shows its first 599 characters and an ellipsis.
    assert!(html.contains(&format!("{}…<", "x".repeat(599))));
    assert!(!html.contains(&"x".repeat(600)));
    let analysis: serde_json::Value = common::analysis_json(&out);
    let arm = analysis["drill"]["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"] == "without-examples")
        .unwrap();
    let c1 = arm["lost"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case_id"] == "c1")
        .unwrap();
    assert_eq!(c1["baseline_output"], "Yes & welcome");
    assert_eq!(c1["arm_output"].as_str().unwrap().chars().count(), 600);
    assert_eq!(analysis["drill"]["samples"], true);
}
