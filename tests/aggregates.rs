//! The warehouse path: the query `ablate sql` prints, run through Polars SQL on the demo's
//! results, then `VERB --from-aggregates`, gives the direct run's answers; and the query's output
//! over two partitions, stacked, gives the same answers (it merges by addition).

mod common;

use std::path::Path;

use common::{ablate, demo, fails, json};
use polars::prelude::*;
use polars::sql::SQLContext;
use serde_json::Value;

/// Asserts two JSON documents are equal: text, booleans and counts exactly, floats to 1e-10
/// (relative), since the engine sums in a different order than ablate's compensated sums.
fn same(a: &Value, b: &Value, at: &str) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!(
                (x - y).abs() <= 1e-10 * x.abs().max(y.abs()).max(1.0),
                "{at}: {x} vs {y}"
            );
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}: lengths");
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                same(p, q, &format!("{at}[{i}]"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(
                x.keys().collect::<Vec<_>>(),
                y.keys().collect::<Vec<_>>(),
                "{at}: keys"
            );
            for (k, v) in x {
                same(v, &y[k], &format!("{at}.{k}"));
            }
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

/// Runs the printed query on `results` with Polars SQL and writes the output to `out`.
fn reduce(query: &str, results: LazyFrame, out: &Path) -> DataFrame {
    let mut ctx = SQLContext::new();
    ctx.register("results", results);
    let mut df = ctx.execute(query).unwrap().collect().unwrap();
    let mut file = std::fs::File::create(out).unwrap();
    ParquetWriter::new(&mut file).finish(&mut df).unwrap();
    df
}

fn printed_query(verb: &str) -> String {
    let out = ablate()
        .args(["sql", verb, "--dialect", "polars"])
        .arg(demo())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn scan_results() -> LazyFrame {
    let path = demo().join("results.parquet");
    LazyFrame::scan_parquet(
        PlRefPath::new(path.to_string_lossy().to_string()),
        ScanArgsParquet::default(),
    )
    .unwrap()
}

fn run(verb: &str, aggregates: Option<&Path>) -> Value {
    let mut cmd = ablate();
    cmd.args([verb, "--quiet", "--json", "--bootstrap", "1000"])
        .arg(demo());
    if let Some(a) = aggregates {
        cmd.arg("--from-aggregates").arg(a);
    }
    json(&mut cmd)
}

#[test]
fn polars_sql_reduction_reproduces_every_matrix_verb() {
    let root = tempfile::tempdir().unwrap();
    let agg = root.path().join("agg.parquet");
    let df = reduce(&printed_query("sweep"), scan_results(), &agg);
    // At most cases × arms rows, whatever the repeats.
    let raw = scan_results().collect().unwrap().height();
    assert!(df.height() * 3 == raw, "{} rows from {raw}", df.height());
    for verb in ["sweep", "variance", "stress", "reweight", "interactions"] {
        same(&run(verb, None), &run(verb, Some(&agg)), verb);
    }
}

#[test]
fn partitions_merge_by_addition() {
    let root = tempfile::tempdir().unwrap();
    let query = printed_query("sweep");
    let (a, b) = (root.path().join("a.parquet"), root.path().join("b.parquet"));
    // Two "days": the first repeat, and the others.
    let mut first = reduce(&query, scan_results().filter(col("repeat").eq(lit(0))), &a);
    let rest = reduce(&query, scan_results().filter(col("repeat").neq(lit(0))), &b);
    first.vstack_mut(&rest).unwrap();
    let stacked = root.path().join("stacked.parquet");
    let mut file = std::fs::File::create(&stacked).unwrap();
    ParquetWriter::new(&mut file).finish(&mut first).unwrap();
    same(&run("sweep", None), &run("sweep", Some(&stacked)), "sweep");
}

#[test]
fn aggregates_are_checked() {
    let root = tempfile::tempdir().unwrap();
    let agg = root.path().join("agg.csv");
    std::fs::write(
        &agg,
        "case_id,arm,repeats,sum_score,sum_score2,passes,pass_mark\nc0001,baseline,3,2.0,2.0,2,0.7\n",
    )
    .unwrap();
    let err = fails(
        ablate()
            .args(["sweep", "--from-aggregates"])
            .arg(&agg)
            .arg(demo()),
    );
    assert!(
        err.contains("pass_mark") && err.contains("ablate sql"),
        "{err}"
    );
    let err = fails(
        ablate()
            .args(["sql", "shadow", "--dialect", "duckdb"])
            .arg(demo()),
    );
    assert!(err.contains("not available yet"), "{err}");
    let err = fails(
        ablate()
            .args(["shadow", "--from-aggregates"])
            .arg(&agg)
            .arg(demo()),
    );
    assert!(err.contains("--from-aggregates"), "{err}");
}

#[test]
fn the_report_reads_aggregates_too() {
    let root = tempfile::tempdir().unwrap();
    let agg = root.path().join("agg.parquet");
    reduce(&printed_query("report"), scan_results(), &agg);
    let analyses = |name: &str, aggregates: Option<&Path>| -> Value {
        let out = root.path().join(name);
        let mut cmd = ablate();
        cmd.args(["report", "--quiet", "--bootstrap", "200", "--out"])
            .arg(&out)
            .arg(demo());
        if let Some(a) = aggregates {
            cmd.arg("--from-aggregates").arg(a);
        }
        assert!(cmd.output().unwrap().status.success());
        let mut v: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("analysis.json")).unwrap())
                .unwrap();
        // Where the matrix came from is the one thing that differs.
        v["check"]["tables"] = Value::Null;
        v
    };
    same(
        &analyses("direct", None),
        &analyses("agg", Some(&agg)),
        "analysis",
    );
}
