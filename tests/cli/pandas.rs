//! Files that pandas and pyarrow write are read as the analyst meant them: nulls in optional
//! columns mean "not given", integers stored as float64 (pandas' integers with nulls) are
//! integers, any integer or float width, dictionary-encoded (categorical) text, large strings and
//! large lists, and pandas' all-null `null` columns. The fixtures in `tests/fixtures/pandas/` were
//! written by pandas and pyarrow (`make_fixtures.py` there says how); each stores the same
//! experiment as `Workdir::tiny`, so every variant must give the same numbers.

use crate::common;

use std::path::PathBuf;

use common::{Workdir, ablate, assert_mentions, fails, json};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pandas")
        .join(name)
}

fn sweep(dir: &std::path::Path) -> serde_json::Value {
    json(
        ablate()
            .args(["sweep", "--json", "--bootstrap", "200"])
            .arg(dir),
    )
}

fn drops(v: &serde_json::Value) -> Vec<(String, f64, u64)> {
    v["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["arm"].as_str().unwrap().to_string(),
                a["drop"].as_f64().unwrap(),
                a["lost_cases"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn same_numbers_as_the_csv_experiment(variant: &str) {
    let dir = fixture(variant);
    let out = ablate().arg("check").arg(&dir).output().unwrap();
    assert!(
        out.status.success(),
        "{variant}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reference = sweep(&Workdir::tiny().dir);
    let got = sweep(&dir);
    assert_eq!(drops(&got), drops(&reference), "{variant}");
    assert_eq!(got["cases"], reference["cases"], "{variant}");
}

#[test]
fn nulls_in_optional_columns_and_integers_stored_as_floats() {
    same_numbers_as_the_csv_experiment("nullable");
    // The null cluster is a cluster of its own: 3 named clusters + 1 = 3 main-set clusters here
    // (the stress case's cluster is not counted).
    let v = sweep(&fixture("nullable"));
    assert_eq!(v["clusters"], 3, "{}", v["clusters"]);
}

#[test]
fn categorical_text() {
    same_numbers_as_the_csv_experiment("categorical");
    // The categorical stratum column is still a stratum.
    let v = json(
        ablate()
            .args(["reweight", "--json", "--bootstrap", "0"])
            .arg(fixture("categorical")),
    );
    assert_eq!(v["strata"], serde_json::json!(["turns"]));
}

#[test]
fn other_integer_and_float_widths() {
    same_numbers_as_the_csv_experiment("widths");
}

#[test]
fn large_strings_and_large_lists() {
    same_numbers_as_the_csv_experiment("large");
}

#[test]
fn decimals_float16_and_an_extra_fixed_size_list_column() {
    same_numbers_as_the_csv_experiment("exotic");
}

#[test]
fn a_fractional_value_in_an_integer_column_names_row_and_value() {
    let err = fails(ablate().arg("check").arg(fixture("fractional")));
    assert_mentions(
        &err,
        &["cases.parquet", "gold_rank", "row 2", "2.5", "Int64"],
    );
}

#[test]
fn a_mistyped_column_says_the_fix_in_pandas_terms() {
    let w = Workdir::tiny();
    w.write(
        "cases.csv",
        "case_id,gold_rank\nc1,first\nc2,2\nc3,\ns1,1\n",
    );
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(
        &err,
        &[
            "gold_rank",
            "row 1",
            "\"first\"",
            "an integer",
            "pd.to_numeric",
        ],
    );
}

#[test]
fn streamed_logs_take_integers_stored_as_floats() {
    use polars::prelude::*;
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join("context_log.parquet");
    let write = |tokens: [f64; 4]| {
        let mut df = df!(
            "request_id" => ["r1", "r1", "r2", "r2"],
            "source" => ["sys", "doc", "sys", "doc"],
            "tokens" => tokens,
            "step" => [0.0, 0.0, 1.0, 1.0],
        )
        .unwrap();
        ParquetWriter::new(std::fs::File::create(&path).unwrap())
            .finish(&mut df)
            .unwrap();
    };
    write([100.0, 200.0, 300.0, 50.0]);
    let v = json(
        ablate()
            .args(["context", "--json", "--model-limit", "8000"])
            .arg(&path),
    );
    assert_eq!(v["calls"], 2);
    assert_eq!(v["size"]["max"], 350.0);
    write([100.0, 200.5, 300.0, 50.0]);
    let err = fails(
        ablate()
            .args(["context", "--model-limit", "8000"])
            .arg(&path),
    );
    assert_mentions(&err, &["tokens", "row 2", "200.5", "whole numbers"]);
}
