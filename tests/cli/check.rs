//! `ablate check`: the demo passes; every kind of bad input is rejected with exit code 2 and a
//! message that names the file, the column and the first offending row or value.

use crate::common;

use common::{Workdir, ablate, assert_mentions, check_fails, demo, fails};
use polars::prelude::*;

#[test]
fn demo_experiment_passes_check() {
    let out = ablate().arg("check").arg(demo()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_mentions(
        &stdout,
        &[
            "support-eval-v3",
            "500 main + 80 stress",
            "arms 42",
            "3 repeats",
            "no warnings",
        ],
    );
}

#[test]
fn demo_check_json_reports_counts() {
    let out = ablate()
        .args(["check", "--json"])
        .arg(demo())
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["cases"], 580);
    assert_eq!(v["main_cases"], 500);
    assert_eq!(v["stress_cases"], 80);
    assert_eq!(v["arms"].as_array().unwrap().len(), 42);
    assert_eq!(v["repeats"]["min"], 3);
    assert_eq!(v["synthetic"], true);
    assert_eq!(v["blocks"].as_array().unwrap().len(), 4);
    let total = v["total_tokens"].as_f64().unwrap();
    assert!((total - 14000.0).abs() < 200.0, "{total}");
    assert_eq!(v["warnings"].as_array().unwrap().len(), 0);
}

#[test]
fn tiny_csv_experiment_passes() {
    let w = Workdir::tiny();
    let out = ablate().arg("check").arg(&w.dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_mentions(&stdout, &["3 main + 1 stress", "arms 3", "2 repeats"]);
}

#[test]
fn missing_results_table() {
    let w = Workdir::tiny();
    std::fs::remove_file(w.path("results.csv")).unwrap();
    assert_mentions(&check_fails(&w.dir), &["results.parquet", "results.csv"]);
}

#[test]
fn missing_manifest() {
    let w = Workdir::tiny();
    std::fs::remove_file(w.path("experiment.toml")).unwrap();
    assert_mentions(&check_fails(&w.dir), &["experiment.toml", "not found"]);
}

#[test]
fn missing_required_column() {
    let w = Workdir::tiny();
    let text = std::fs::read_to_string(w.path("results.csv")).unwrap();
    let stripped: String = text
        .lines()
        .map(|l| l.rsplit_once(',').unwrap().0.to_string() + "\n")
        .collect();
    w.write("results.csv", &stripped);
    assert_mentions(
        &check_fails(&w.dir),
        &["results.csv", "`score`", "missing required column"],
    );
}

#[test]
fn score_stored_as_text_in_parquet() {
    let w = Workdir::demo_copy();
    let mut df = LazyFrame::scan_parquet(
        PlRefPath::new(w.path("results.parquet").to_string_lossy().to_string()),
        ScanArgsParquet::default(),
    )
    .unwrap()
    .with_column(col("score").cast(DataType::String))
    .collect()
    .unwrap();
    ablate::io::write::parquet(&mut df, &w.path("results.parquet")).unwrap();
    assert_mentions(&check_fails(&w.dir), &["results.parquet", "`score`", "str"]);
}

#[test]
fn negative_tokens_in_results() {
    let w = Workdir::tiny();
    let text = std::fs::read_to_string(w.path("results.csv")).unwrap();
    let with_tokens: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| match i {
            0 => format!("{l},tokens_in\n"),
            4 => format!("{l},-5\n"),
            _ => format!("{l},1000\n"),
        })
        .collect();
    w.write("results.csv", &with_tokens);
    assert_mentions(
        &check_fails(&w.dir),
        &["results.csv", "`tokens_in`", "row 4", "-5"],
    );
}

#[test]
fn mix_shares_must_not_be_negative() {
    let w = Workdir::tiny();
    w.write("mix.csv", "turns,share\nsingle,1.1\nmulti,-0.1\n");
    assert_mentions(
        &check_fails(&w.dir),
        &["mix.csv", "`share`", "row 2", "-0.1"],
    );
}

#[test]
fn mix_counts_are_accepted() {
    let w = Workdir::tiny();
    w.write("mix.csv", "turns,count\nsingle,770\nmulti,230\n");
    let out = ablate()
        .args(["check", "--json"])
        .arg(&w.dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn mix_stratum_missing_from_eval_is_a_warning() {
    let w = Workdir::tiny();
    w.write("mix.csv", "turns,share\nsingle,0.7\nmulti,0.2\nvoice,0.1\n");
    let out = ablate().arg("check").arg(&w.dir).output().unwrap();
    assert!(out.status.success());
    assert_mentions(
        &String::from_utf8_lossy(&out.stdout),
        &["turns=voice", "10.0%", "--allow-unmeasured"],
    );
}

#[test]
fn mix_column_not_in_cases() {
    let w = Workdir::tiny();
    w.write("mix.csv", "region,share\neu,0.5\nus,0.5\n");
    assert_mentions(&check_fails(&w.dir), &["mix.csv", "`region`", "cases.csv"]);
}

#[test]
fn header_only_table_is_empty() {
    let w = Workdir::tiny();
    w.write("results.csv", "case_id,arm,repeat,score\n");
    assert_mentions(&check_fails(&w.dir), &["results.csv", "no rows"]);
}

#[test]
fn zero_byte_csv_is_empty() {
    let w = Workdir::tiny();
    w.write("cases.csv", "");
    assert_mentions(&check_fails(&w.dir), &["cases.csv", "empty"]);
}

#[test]
fn file_that_is_not_parquet() {
    let w = Workdir::demo_copy();
    w.write(
        "results.parquet",
        "case_id,arm,repeat,score\nc1,baseline,0,1\n",
    );
    assert_mentions(
        &check_fails(&w.dir),
        &["results.parquet", "not a Parquet file"],
    );
}

#[test]
fn truncated_parquet() {
    let w = Workdir::demo_copy();
    let bytes = std::fs::read(w.path("results.parquet")).unwrap();
    std::fs::write(w.path("results.parquet"), &bytes[..bytes.len() / 2]).unwrap();
    assert_mentions(&check_fails(&w.dir), &["results.parquet", "truncated"]);
}

#[test]
fn zero_byte_parquet() {
    let w = Workdir::demo_copy();
    std::fs::write(w.path("cases.parquet"), b"").unwrap();
    assert_mentions(&check_fails(&w.dir), &["cases.parquet", "empty (0 bytes)"]);
}

#[test]
fn corrupt_parquet_body() {
    let w = Workdir::demo_copy();
    let mut bytes = std::fs::read(w.path("units.parquet")).unwrap();
    let n = bytes.len();
    for b in &mut bytes[4..n - 8] {
        *b = 0xAB;
    }
    std::fs::write(w.path("units.parquet"), &bytes).unwrap();
    assert_mentions(&check_fails(&w.dir), &["units.parquet"]);
}

#[test]
fn both_parquet_and_csv() {
    let w = Workdir::tiny();
    std::fs::copy(demo().join("mix.parquet"), w.path("mix.parquet")).unwrap();
    assert_mentions(
        &check_fails(&w.dir),
        &["mix.parquet", "mix.csv", "keep one"],
    );
}

#[test]
fn unbalanced_repeats_and_missing_cases_are_warnings() {
    let w = Workdir::tiny();
    // c1 loses one repeat of the baseline; c2 disappears from without-ex1.
    w.edit("results.csv", "c1,baseline,1,1\n", "");
    w.edit("results.csv", "c2,without-ex1,0,1\n", "");
    w.edit("results.csv", "c2,without-ex1,1,1\n", "");
    let out = ablate().arg("check").arg(&w.dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_mentions(
        &String::from_utf8_lossy(&out.stdout),
        &[
            "arm \"baseline\" has unbalanced repeats: 1 to 2",
            "arm \"without-ex1\" has no results for 1 of the 4 cases",
        ],
    );
}

#[test]
fn not_a_folder() {
    assert_mentions(
        &fails(ablate().args(["check", "/nonexistent/experiment"])),
        &["/nonexistent/experiment", "not found"],
    );
}

#[test]
fn bad_confidence_is_a_usage_error() {
    assert_mentions(
        &fails(ablate().args(["sweep", "--confidence", "1.5"]).arg(demo())),
        &["--confidence", "(0, 1)"],
    );
}

#[test]
fn negative_tokens_in_context_log() {
    let w = Workdir::tiny();
    w.write(
        "context_log.csv",
        "request_id,step,source,tokens\nr1,1,system,900\nr1,1,retrieval,1500\nr1,2,tool_output,-40\n",
    );
    assert_mentions(
        &check_fails(&w.dir),
        &["context_log.csv", "`tokens`", "row 3", "-40", "negative"],
    );
}

#[test]
fn nan_score_in_shadow() {
    let w = Workdir::tiny();
    w.write(
        "shadow.csv",
        "request_id,variant,answer,score\nr1,production,a,1\nr1,candidate,a,NaN\n",
    );
    assert_mentions(
        &check_fails(&w.dir),
        &["shadow.csv", "`score`", "row 2", "finite"],
    );
}

#[test]
fn logs_are_counted_by_check() {
    let w = Workdir::tiny();
    w.write(
        "shadow.csv",
        "request_id,variant,answer\nr1,production,a\nr1,replay,a\nr1,candidate,b\n",
    );
    let out = ablate()
        .args(["check", "--json"])
        .arg(&w.dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let shadow = v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == "shadow")
        .unwrap();
    assert_eq!(shadow["rows"], 3);
}

#[test]
fn baseline_without_main_cases() {
    let w = Workdir::tiny();
    w.edit(
        "cases.csv",
        "c1,billing,single,1,false",
        "c1,billing,single,1,true",
    );
    w.edit(
        "cases.csv",
        "c2,billing,multi,2,false",
        "c2,billing,multi,2,true",
    );
    w.edit(
        "cases.csv",
        "c3,refunds,single,,false",
        "c3,refunds,single,,true",
    );
    assert_mentions(
        &check_fails(&w.dir),
        &["results.csv", "baseline", "main-set"],
    );
}

#[test]
fn absurd_bootstrap_is_a_usage_error() {
    assert_mentions(
        &fails(
            ablate()
                .args(["sweep", "--bootstrap", "1000000000"])
                .arg(demo()),
        ),
        &["--bootstrap"],
    );
}

/// One bad edit of the tiny experiment each (file, text replaced, replacement), and what the
/// message must name: `check` exits 2 with the file, the column or key, the row and the fix.
pub(crate) const BAD_EDITS: &[(&str, &str, &str, &str, &[&str])] = &[
    (
        "score_stored_as_text",
        "results.csv",
        "c1,baseline,0,1\n",
        "c1,baseline,0,high\n",
        &["results.csv", "`score`", "expected a number"],
    ),
    (
        "nan_score",
        "results.csv",
        "c2,without-ex1,1,1\n",
        "c2,without-ex1,1,NaN\n",
        &["results.csv", "`score`", "row 10", "NaN", "finite"],
    ),
    (
        "infinite_score",
        "results.csv",
        "c3,baseline,0,1\n",
        "c3,baseline,0,inf\n",
        &["results.csv", "`score`", "row 13", "inf"],
    ),
    (
        "null_score",
        "results.csv",
        "c3,baseline,0,1\n",
        "c3,baseline,0,\n",
        &["results.csv", "`score`", "row 13", "null"],
    ),
    (
        "duplicate_result_row",
        "results.csv",
        "c1,baseline,1,1\n",
        "c1,baseline,0,1\n",
        &[
            "results.csv",
            "case_id, arm, repeat",
            "row 2",
            "duplicate",
            "(\"c1\", \"baseline\", 0)",
        ],
    ),
    (
        "case_missing_from_cases",
        "results.csv",
        "c2,baseline,0,1\n",
        "c9,baseline,0,1\n",
        &["results.csv", "`case_id`", "row 7", "\"c9\"", "cases.csv"],
    ),
    (
        "duplicate_case_id",
        "cases.csv",
        "c2,billing",
        "c1,billing",
        &["cases.csv", "`case_id`", "row 2", "duplicate"],
    ),
    (
        "baseline_arm_not_in_results",
        "experiment.toml",
        "set = \"tiny\"",
        "set = \"tiny\"\nbaseline_arm = \"full\"",
        &["experiment.toml", "baseline_arm", "\"full\"", "without-ex1"],
    ),
    (
        "arm_missing_from_arms_table",
        "arms.csv",
        "without-ex1,few_shot/01\n",
        "",
        &[
            "results.csv",
            "`arm`",
            "row 3",
            "\"without-ex1\"",
            "arms.csv",
        ],
    ),
    (
        "arm_removes_unknown_unit",
        "arms.csv",
        "without-ex1,few_shot/01",
        "without-ex1,few_shot/99",
        &["arms.csv", "`removed`", "row 2", "few_shot/99", "units.csv"],
    ),
    (
        "negative_tokens",
        "units.csv",
        "few_shot,210",
        "few_shot,-210",
        &["units.csv", "`tokens`", "row 3", "-210", "negative"],
    ),
    (
        "mix_shares_must_sum_to_one",
        "mix.csv",
        "0.23",
        "0.33",
        &["mix.csv", "`share`", "sum = 1.1", "count"],
    ),
    (
        "manifest_key_of_wrong_type",
        "experiment.toml",
        "threshold_drop = 0.05",
        "threshold_drop = \"0.05\"",
        &["experiment.toml", "`threshold_drop`", "found text"],
    ),
    (
        "manifest_syntax_error",
        "experiment.toml",
        "set = \"tiny\"",
        "set = \"tiny",
        &["experiment.toml", "syntax"],
    ),
    (
        "manifest_stratum_not_a_case_column",
        "experiment.toml",
        "strata = [\"turns\"]",
        "strata = [\"locale\"]",
        &["experiment.toml", "strata[0]", "locale"],
    ),
    (
        "manifest_block_not_in_units",
        "experiment.toml",
        "name = \"few_shot\"",
        "name = \"examples\"",
        &["experiment.toml", "blocks[0].name", "examples"],
    ),
    (
        "baseline_must_remove_nothing",
        "arms.csv",
        "baseline,\n",
        "baseline,system\n",
        &["arms.csv", "`removed`", "baseline"],
    ),
    (
        "gold_rank_below_one",
        "cases.csv",
        "c2,billing,multi,2,",
        "c2,billing,multi,0,",
        &["cases.csv", "`gold_rank`", "row 2", "0"],
    ),
    (
        "guarantee_unknown",
        "experiment.toml",
        "threshold_drop = 0.05",
        "threshold_drop = 0.05\nguarantee = \"gaussian\"",
        &[
            "experiment.toml",
            "guarantee",
            "gaussian",
            "any-distribution",
            "normal",
        ],
    ),
];

#[test]
fn every_bad_edit_is_refused_naming_what_and_where() {
    for (name, file, from, to, mentions) in BAD_EDITS {
        let w = Workdir::tiny();
        w.edit(file, from, to);
        let err = check_fails(&w.dir);
        for m in *mentions {
            assert!(err.contains(m), "{name}: the message lacks {m:?}:\n{err}");
        }
    }
}

/// A repeated (case_id, unit) in case_units names the first row, in file order, whose key an
/// earlier row has, and that earlier row: here rows 3 and 4 repeat rows 2 and 1's keys, and row
/// 3 comes first although its key sorts after row 4's.
#[test]
fn a_repeated_case_unit_names_its_first_repeat_and_the_row_it_repeats() {
    let w = Workdir::tiny();
    w.write(
        "case_units.csv",
        "case_id,unit,tokens\nc1,system,900\nc2,few_shot/01,200\nc2,few_shot/01,150\nc1,system,800\n",
    );
    assert_mentions(
        &check_fails(&w.dir),
        &[
            "case_units.csv",
            "row 3",
            "first seen at row 2",
            "c2",
            "few_shot/01",
        ],
    );
}
