//! The warehouse path: the query `ablate sql` prints, run through Polars SQL on the demo's
//! results, then `VERB --from-aggregates`, gives the direct run's answers; and the query's output
//! over two partitions, stacked, gives the same answers (it merges by addition).

use crate::common;

use std::path::Path;

use common::{ablate, assert_mentions, demo, fails, json};
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
    reduce_table(query, "results", results, out)
}

/// Runs the printed query on table `name` with Polars SQL and writes the output to `out`.
fn reduce_table(query: &str, name: &str, table: LazyFrame, out: &Path) -> DataFrame {
    // Polars plans a long UNION ALL recursively: unoptimised (the test profile) it needs more
    // than a test thread's 2 MiB of stack.
    let (query, name) = (query.to_string(), name.to_string());
    let mut df = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let mut ctx = SQLContext::new();
            ctx.register(&name, table);
            ctx.execute(&query).unwrap().collect().unwrap()
        })
        .unwrap()
        .join()
        .unwrap();
    let mut file = std::fs::File::create(out).unwrap();
    ParquetWriter::new(&mut file).finish(&mut df).unwrap();
    df
}

fn printed_query(verb: &str) -> String {
    printed(&[verb, "--dialect", "polars"])
}

/// `ablate sql ARGS DEMO`, which must fail: its message.
fn sql_fails(args: &[&str]) -> String {
    fails(ablate().arg("sql").args(args).arg(demo()))
}

fn printed(args: &[&str]) -> String {
    printed_for(args, &demo())
}

/// `ablate sql ARGS DIR`, which must succeed: the query it prints.
fn printed_for(args: &[&str], dir: &Path) -> String {
    let out = ablate().arg("sql").args(args).arg(dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn scan_results() -> LazyFrame {
    scan_demo("results")
}

fn scan_demo(stem: &str) -> LazyFrame {
    let path = demo().join(format!("{stem}.parquet"));
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
            .args(["sql", "plan", "--dialect", "duckdb"])
            .arg(demo()),
    );
    assert!(err.contains("no reduction"), "{err}");
    let err = sql_fails(&["shadow", "--dialect", "duckdb", "--without", "tokens"]);
    assert!(err.contains("score, tokens_in"), "{err}");
    // Matrix aggregates are not shadow aggregates.
    let err = fails(
        ablate()
            .args(["shadow", "--from-aggregates"])
            .arg(&agg)
            .arg(demo()),
    );
    assert!(err.contains("not shadow aggregates"), "{err}");
    let err = fails(
        ablate()
            .args(["simulate", "--out"])
            .arg(root.path().join("sim"))
            .arg("--from-aggregates")
            .arg(&agg),
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

fn write_parquet(df: &mut DataFrame, out: &Path) {
    let mut file = std::fs::File::create(out).unwrap();
    ParquetWriter::new(&mut file).finish(df).unwrap();
}

fn log_verb(args: &[&str], aggregates: Option<&Path>) -> Value {
    let mut cmd = ablate();
    cmd.args(["--quiet", "--json"]).args(args);
    match aggregates {
        Some(a) => cmd.arg("--from-aggregates").arg(a),
        None => cmd.arg(demo()),
    };
    json(&mut cmd)
}

/// Asserts a percentile read from log bins is within the stated bound of the exact one.
fn within_bound(exact: &Value, binned: &Value, bound: f64, at: &str) {
    let (e, b) = (exact.as_f64().unwrap(), binned.as_f64().unwrap());
    assert!((b - e).abs() <= bound * e + 1e-9, "{at}: {b} vs exact {e}");
}

/// The shadow query, run by Polars SQL, gives the direct run's answers: every count, rate, se,
/// interval and p-value (to rounding), token means exactly, token percentiles within the bound
/// the output states.
#[test]
fn polars_sql_reduction_reproduces_shadow() {
    let root = tempfile::tempdir().unwrap();
    let agg = root.path().join("shadow-agg.parquet");
    let query = printed(&["shadow", "--dialect", "polars", "--by", "turns"]);
    assert!(query.contains("merge by addition"), "{query}");
    reduce_table(&query, "shadow", scan_demo("shadow"), &agg);
    let direct = log_verb(&["shadow", "--by", "turns"], None);
    let mut from = log_verb(&["shadow", "--by", "turns"], Some(&agg));
    let bound = from["tokens"]["percentile_error"].as_f64().unwrap();
    assert!((bound - 0.0443).abs() < 1e-3);
    assert!(direct["tokens"]["percentile_error"].is_null());
    for v in ["production", "candidate"] {
        for p in ["p50", "p95", "p99"] {
            within_bound(
                &direct["tokens"][v][p],
                &from["tokens"][v][p],
                bound,
                &format!("{v}.{p}"),
            );
            from["tokens"][v][p] = direct["tokens"][v][p].clone();
        }
    }
    from["tokens"]["percentile_error"] = Value::Null;
    let warnings = from["warnings"].as_array_mut().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w["code"] == "shadow.binned_percentiles")
    );
    warnings.retain(|w| w["code"] != "shadow.binned_percentiles");
    same(&direct, &from, "shadow");
}

/// The shadow query's output over two partitions of requests, stacked, gives the same answers.
#[test]
fn shadow_aggregates_merge_by_addition() {
    let root = tempfile::tempdir().unwrap();
    let query = printed(&["shadow", "--dialect", "polars", "--by", "turns"]);
    let (a, b) = (root.path().join("a.parquet"), root.path().join("b.parquet"));
    let split = col("request_id").lt(lit("r001000"));
    let mut first = reduce_table(
        &query,
        "shadow",
        scan_demo("shadow").filter(split.clone()),
        &a,
    );
    let rest = reduce_table(
        &query,
        "shadow",
        scan_demo("shadow").filter(split.not()),
        &b,
    );
    let whole = root.path().join("whole.parquet");
    reduce_table(&query, "shadow", scan_demo("shadow"), &whole);
    first.vstack_mut(&rest).unwrap();
    let stacked = root.path().join("stacked.parquet");
    write_parquet(&mut first, &stacked);
    same(
        &log_verb(&["shadow", "--by", "turns"], Some(&whole)),
        &log_verb(&["shadow", "--by", "turns"], Some(&stacked)),
        "shadow",
    );
}

/// The context query, run by Polars SQL, gives the direct run's counts, rates, means, hard limit,
/// growth slope and composition; percentiles and the largest call within the stated bound.
#[test]
fn polars_sql_reduction_reproduces_context() {
    let root = tempfile::tempdir().unwrap();
    let agg = root.path().join("context-agg.parquet");
    let query = printed(&["context", "--dialect", "polars"]);
    let mut df = reduce_table(&query, "context_log", scan_demo("context_log"), &agg);
    // Stacking the result with itself doubles every count: the merge is by addition.
    let direct = log_verb(&["context"], None);
    let mut from = log_verb(&["context"], Some(&agg));
    let bound = from["percentile_error"].as_f64().unwrap();
    for p in ["p50", "p95", "p99", "max"] {
        within_bound(&direct["size"][p], &from["size"][p], bound, p);
        from["size"][p] = direct["size"][p].clone();
    }
    // The 20 equal bins are rebuilt from log bins: same total, bins approximate.
    let total = |v: &Value| -> u64 {
        v["histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["calls"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(total(&direct), total(&from));
    from["histogram"] = direct["histogram"].clone();
    from["percentile_error"] = Value::Null;
    from["warnings"] = direct["warnings"].clone();
    same(&direct, &from, "context");

    let copy = df.clone();
    df.vstack_mut(&copy).unwrap();
    let doubled = root.path().join("doubled.parquet");
    write_parquet(&mut df, &doubled);
    let twice = log_verb(&["context"], Some(&doubled));
    assert_eq!(
        twice["calls"].as_u64().unwrap(),
        2 * direct["calls"].as_u64().unwrap()
    );
    same(
        &twice["overflow_rate"],
        &direct["overflow_rate"],
        "overflow",
    );
    same(&twice["utilisation"], &direct["utilisation"], "utilisation");

    // Aggregates written for other limits are refused, naming both.
    let err = fails(
        ablate()
            .args(["context", "--model-limit", "99", "--from-aggregates"])
            .arg(&agg)
            .arg(demo()),
    );
    assert!(
        err.contains("model_limit=none") && err.contains("model_limit=99"),
        "{err}"
    );
    let policy = root.path().join("p.toml");
    std::fs::write(&policy, "model_limit = 32000\n").unwrap();
    let err = fails(
        ablate()
            .args(["context", "--policy"])
            .arg(&policy)
            .arg("--from-aggregates")
            .arg(&agg)
            .arg(demo()),
    );
    assert!(err.contains("items"), "{err}");
}

/// Each dialect draws the Poisson weights from its own 64-bit hash, sign-safely; Polars SQL has
/// none and says so.
#[test]
fn clustered_shadow_queries_use_each_engine_hash() {
    for (dialect, hash) in [
        ("duckdb", "hash(CONCAT(cluster_key"),
        ("spark", "xxhash64(CONCAT(cluster_key"),
        ("trino", "from_big_endian_64(xxhash64(to_utf8("),
        ("bigquery", "FARM_FINGERPRINT(CONCAT(cluster_key"),
    ] {
        let q = printed(&[
            "shadow",
            "--dialect",
            dialect,
            "--by",
            "turns",
            "--cluster-by",
            "slice",
        ]);
        assert!(q.contains(hash), "{dialect}: {q}");
        assert!(
            q.contains("9007199254740991") || q.contains("% 9007199254740992"),
            "{dialect}"
        );
        assert!(
            q.contains("WHEN u < 0.36787944117144"),
            "{dialect}: the Poisson(1) ladder"
        );
        assert!(q.contains("replicate_d"), "{dialect}");
    }
    let err = sql_fails(&["shadow", "--dialect", "polars", "--cluster-by", "slice"]);
    assert!(err.contains("no hash function"), "{err}");
}

/// Nothing the user types becomes SQL: a line break in a column name would end the `--` comment
/// it is printed in (DuckDB then ran an injected COPY), so control characters are refused; a
/// `--table` source is a path or a dotted name, never a query; `sql shadow` applies `shadow`'s
/// own rules to `--by`; and a column named with the dialect's quote character is quoted right.
#[test]
fn sql_is_never_injected() {
    let payload = "turns\nCOPY (SELECT 1) TO 'x.csv';\n--";
    for dialect in ["duckdb", "spark", "trino", "bigquery", "polars"] {
        for flag in ["--by", "--cluster-by"] {
            let err = sql_fails(&["shadow", "--dialect", dialect, flag, payload]);
            assert_mentions(&err, &[flag, "control character"]);
        }
        let err = sql_fails(&[
            "sweep",
            "--dialect",
            dialect,
            "--table",
            "results=(SELECT * FROM results) t; COPY t TO 'x.csv'; SELECT 1",
        ]);
        assert_mentions(&err, &["--table", "a query is not accepted"]);
    }
    for by in [
        &["--by", "variant"][..],
        &["--by", "request_id"],
        &["--by", "turns", "--by", "turns"],
    ] {
        let mut args = vec!["shadow", "--dialect", "duckdb"];
        args.extend_from_slice(by);
        let _ = sql_fails(&args);
    }
    // A stratum column whose name holds a double quote, through Polars SQL: the same sums as
    // under its plain name.
    let root = tempfile::tempdir().unwrap();
    let odd = "tu\"rns";
    let query = printed(&["shadow", "--dialect", "polars", "--by", odd]);
    let renamed = scan_demo("shadow").rename(["turns"], [odd], true);
    let a = reduce_table(&query, "shadow", renamed, &root.path().join("a.parquet"));
    let plain = printed(&["shadow", "--dialect", "polars", "--by", "turns"]);
    let b = reduce_table(
        &plain,
        "shadow",
        scan_demo("shadow"),
        &root.path().join("b.parquet"),
    );
    assert_eq!(a.height(), b.height());
    assert!(
        a.column("value")
            .unwrap()
            .equals(b.column("value").unwrap())
    );
}

/// Every name the shadow query gives its own columns, CTEs and subqueries (and two spelled
/// otherwise: DuckDB compares quoted names without case).
const SHADOW_OWN_NAMES: &[&str] = &[
    "n_p",
    "n_r",
    "n_c",
    "a_p",
    "a_r",
    "a_c",
    "s_p",
    "s_c",
    "t_p",
    "t_c",
    "cluster_key",
    "changed",
    "noise",
    "score_delta",
    "paired",
    "bin_p",
    "bin_c",
    "n",
    "d",
    "b",
    "w",
    "u",
    "per_request",
    "complete",
    "clusters",
    "replicates",
    "weighted",
    "drawn",
    "stat_rows",
    "range",
    "BIN_P",
    "Changed",
];

/// Issue 42, item 14: a stratum or cluster column named like one of the query's own columns
/// (`--by bin_p` put every production token count in one bin; `--by w --cluster-by user`, `d`,
/// `n`, `changed`, `paired`, `t_p` made DuckDB fail). Inside the query the user's columns are
/// read only in `per_request`, over the log itself (the largest value under a name of the query's
/// own, `"__ablate_by_0"`, and the least beside it to find requests whose rows disagree), and
/// named back only in the last SELECT.
#[test]
fn stratum_columns_never_meet_the_querys_own_names() {
    for dialect in ["duckdb", "spark", "trino", "bigquery"] {
        for &name in SHADOW_OWN_NAMES {
            for flags in [
                ["--by", name, "--cluster-by", "user"],
                ["--by", "turns", "--cluster-by", name],
            ] {
                let q = printed(&[&["shadow", "--dialect", dialect][..], &flags[..]].concat());
                let quoted = match dialect {
                    "spark" | "bigquery" => format!("`{name}`"),
                    _ => format!("\"{name}\""),
                };
                let sql: Vec<&str> = q.lines().filter(|l| !l.starts_with("--")).collect();
                let sql = sql.join("\n");
                let (inner, outer) = sql
                    .split_once("\nSELECT stat, ")
                    .unwrap_or_else(|| panic!("{dialect} {flags:?}: no renaming SELECT:\n{q}"));
                let per_request = &inner[inner.find("per_request AS (").unwrap()..];
                let per_request = &per_request[..per_request.find("\n)").unwrap()];
                assert_eq!(
                    inner.matches(&quoted).count(),
                    per_request.matches(&quoted).count(),
                    "{dialect} {flags:?}: the query's body reads {quoted} in per_request only:\n{q}"
                );
                assert!(
                    per_request.contains(&format!("MIN({quoted}) <> MAX({quoted})")),
                    "{dialect} {flags:?}"
                );
                assert!(
                    inner.contains(&format!("MAX({quoted})")),
                    "{dialect} {flags:?}"
                );
                if flags[1] == name {
                    assert!(
                        outer.contains(&format!("AS {quoted}")),
                        "{dialect} {flags:?}"
                    );
                }
            }
        }
    }
    // Through Polars SQL (no clusters there): the same sums as under the stratum's plain name.
    let root = tempfile::tempdir().unwrap();
    let plain = printed(&["shadow", "--dialect", "polars", "--by", "turns"]);
    let expected = reduce_table(
        &plain,
        "shadow",
        scan_demo("shadow"),
        &root.path().join("plain.parquet"),
    );
    for (i, &name) in SHADOW_OWN_NAMES.iter().enumerate() {
        let query = printed(&["shadow", "--dialect", "polars", "--by", name]);
        let renamed = scan_demo("shadow").rename(["turns"], [name], true);
        let got = reduce_table(
            &query,
            "shadow",
            renamed,
            &root.path().join(format!("{i}.parquet")),
        );
        assert_eq!(got.height(), expected.height(), "--by {name}");
        let pairs = [
            ("stat", "stat"),
            (name, "turns"),
            ("bin", "bin"),
            ("value", "value"),
        ];
        for (ours, theirs) in pairs {
            assert!(
                got.column(ours)
                    .unwrap()
                    .equals_missing(expected.column(theirs).unwrap()),
                "--by {name}: column {ours}"
            );
        }
    }
    // The query's own prefix is refused.
    let err = sql_fails(&["shadow", "--dialect", "duckdb", "--by", "__ablate_by_1"]);
    assert_mentions(&err, &["__ablate_", "the query's own"]);
}

/// `sweep --json` of `w` from the aggregates `text`, written to `agg`.
fn sweep_from_text(w: &common::Workdir, agg: &Path, text: &str) -> assert_cmd::Command {
    std::fs::write(agg, text).unwrap();
    let mut cmd = ablate();
    cmd.args([
        "sweep",
        "--quiet",
        "--json",
        "--bootstrap",
        "0",
        "--from-aggregates",
    ])
    .arg(agg)
    .arg(&w.dir);
    cmd
}

/// Aggregates of the tiny experiment: each case scores 1 twice in the baseline and
/// `without-ex1` and 0 twice in `without-examples`; `extra` gives the columns after `pass_mark`
/// from the cell's score.
fn tiny_rows(extra: impl Fn(f64) -> String) -> String {
    let mut rows = String::new();
    for case in ["c1", "c2", "c3", "s1"] {
        for (arm, s) in [
            ("baseline", 1.0),
            ("without-ex1", 1.0),
            ("without-examples", 0.0),
        ] {
            let passes = if s > 0.5 { 2 } else { 0 };
            rows.push_str(&format!(
                "{case},{arm},2,{},{},{passes},0.5,{}\n",
                2.0 * s,
                2.0 * s,
                extra(s)
            ));
        }
    }
    rows
}

/// `--from-aggregates` accepts only sums that scores could give, as the direct path accepts only
/// scores it can use.
#[test]
fn aggregates_no_scores_could_give_are_refused() {
    let w = common::Workdir::tiny();
    let good =
        "case_id,arm,repeats,sum_score,sum_score2,passes,pass_mark,sum_tokens_in,n_tokens_in\n";
    let rows = tiny_rows(|_| "200,2".into());
    let agg = w.root.path().join("agg.csv");
    let run = |text: &str| sweep_from_text(&w, &agg, text);
    json(&mut run(&format!("{good}{rows}")));
    for (bad, needle) in [
        ("c1,baseline,4294967298,0,0,0,0.5,,\n", "2^32"),
        ("c1,baseline,2,2,2,2,0.5,-1000000,2\n", "not negative"),
        ("c1,baseline,2,1,-1,1,0.5,,\n", "not negative"),
        ("c1,baseline,2,2,1,2,0.5,,\n", "(Σx)² > repeats · Σx²"),
        ("c1,baseline,2,1e300,1e300,2,0.5,,\n", "overflow"),
    ] {
        let err = fails(&mut run(&format!("{good}{rows}{bad}")));
        assert_mentions(&err, &["agg.csv", needle]);
    }
    // With a declared score range, passes must agree with the sum: 2 passes of at least 0.5
    // cannot sum to 0.2.
    w.edit(
        "experiment.toml",
        "threshold_drop = 0.05\n",
        "threshold_drop = 0.05\nscore_min = 0\nscore_max = 1\n",
    );
    let err = fails(&mut run(&format!(
        "{good}{rows}c1,baseline,2,0.2,0.02,2,0.5,,\n"
    )));
    assert_mentions(&err, &["2 passes", "between 1 and 2"]);

    // Shadow long tables: counts bounded by each other and by 2^53.
    let shadow = w.root.path().join("shadow-agg.csv");
    for (body, needle) in [
        (
            "requests,0,0,100\nchanged,0,0,126\nd2,0,0,126\n",
            "changed = 126 exceeds requests = 100",
        ),
        ("requests,0,0,1e300\n", "a whole number from 0 to"),
    ] {
        std::fs::write(&shadow, format!("stat,replay,bin,value\n{body}")).unwrap();
        let err = fails(
            ablate()
                .args(["shadow", "--from-aggregates"])
                .arg(&shadow)
                .arg(&w.dir),
        );
        assert_mentions(&err, &[needle]);
    }
}

/// A score range whose width is not a finite number.
#[test]
fn a_score_range_wider_than_a_double_is_refused() {
    let w = common::Workdir::tiny();
    w.edit(
        "experiment.toml",
        "threshold_drop = 0.05\n",
        "threshold_drop = 0.05\nscore_min = -1.7e308\nscore_max = 1.7e308\n",
    );
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(&err, &["score_max", "finite"]);
}

/// A CSV file, read whole, as a lazy frame.
fn read_csv(path: std::path::PathBuf) -> LazyFrame {
    CsvReadOptions::default()
        .with_has_header(true)
        .try_into_reader_with_file_path(Some(path))
        .unwrap()
        .finish()
        .unwrap()
        .lazy()
}

/// `VERB --json` of `dir`, from `aggregates` when given.
fn run_on(verb: &str, dir: &Path, aggregates: Option<&Path>) -> Value {
    let mut cmd = ablate();
    cmd.args([verb, "--quiet", "--json", "--bootstrap", "0"])
        .arg(dir);
    if let Some(a) = aggregates {
        cmd.arg("--from-aggregates").arg(a);
    }
    json(&mut cmd)
}

/// A single score beyond [0, 1] reaches `--from-aggregates` through the query's `min_score` and
/// `max_score`: the reduced file gives the direct run's answers, the exact bound drawn over drops
/// in ±1.5 (before, the sums held no single score, the range came from case means, which stayed
/// in [0, 1], and the interval was drawn over ±1: too narrow). A file without the two columns,
/// from an older query, still loads and says that its range came from the case means.
#[test]
fn a_single_score_beyond_one_reaches_the_aggregates() {
    let w = crate::round_sixteen::one_score_beyond_one();
    let query = printed_for(&["sweep", "--dialect", "polars", "--no-tokens"], &w.dir);
    let results = read_csv(w.path("results.csv"));
    let agg = w.root.path().join("agg.parquet");
    let df = reduce(&query, results, &agg);
    for verb in ["sweep", "variance", "interactions"] {
        same(
            &run_on(verb, &w.dir, None),
            &run_on(verb, &w.dir, Some(&agg)),
            verb,
        );
    }
    let sweep = run_on("sweep", &w.dir, Some(&agg));
    let u = 1.0 - 0.025f64.powf(1.0 / 20.0);
    let high = sweep["arms"][0]["ci_high"].as_f64().unwrap();
    assert!((high - 1.5 * u).abs() < 1e-9, "{high}: {sweep}");
    assert!(!common::has_code(
        &sweep,
        "load.aggregates_without_extremes"
    ));

    let old = w.root.path().join("old.parquet");
    let mut without = df.drop_many(["min_score", "max_score"]);
    ParquetWriter::new(std::fs::File::create(&old).unwrap())
        .finish(&mut without)
        .unwrap();
    let sweep = run_on("sweep", &w.dir, Some(&old));
    assert!(
        common::has_code(&sweep, "load.aggregates_without_extremes"),
        "{sweep}"
    );
    let high = sweep["arms"][0]["ci_high"].as_f64().unwrap();
    assert!((high - u).abs() < 1e-9, "{high}: {sweep}");
    // Declared, the range is known: no warning.
    w.edit(
        "experiment.toml",
        "threshold_drop = 0.05\n",
        "threshold_drop = 0.05\nscore_min = 0\nscore_max = 1.5\n",
    );
    let sweep = run_on("sweep", &w.dir, Some(&old));
    assert!(!common::has_code(
        &sweep,
        "load.aggregates_without_extremes"
    ));
}

/// The lowest and highest scores are checked against the row's repeats, sum and passes, and
/// against a declared range, as the direct path checks each score.
#[test]
fn extremes_no_scores_could_give_are_refused() {
    let w = common::Workdir::tiny();
    let head = "case_id,arm,repeats,sum_score,sum_score2,passes,pass_mark,min_score,max_score\n";
    let rows = tiny_rows(|s| format!("{s},{s}"));
    let agg = w.root.path().join("agg.csv");
    let run = |text: &str| sweep_from_text(&w, &agg, text);
    json(&mut run(&format!("{head}{rows}")));
    for (bad, needle) in [
        (
            "c1,baseline,2,1,0.5,1,0.5,0.6,0.4\n",
            "lowest score is above the highest",
        ),
        (
            "c1,baseline,2,1.5,1.25,2,0.5,0.5,0.6\n",
            "cannot sum to 1.5",
        ),
        (
            "c1,baseline,1,0.5,0.25,1,0.5,0.4,0.6\n",
            "one repeat has one score",
        ),
        (
            "c1,baseline,2,1.2,0.72,1,0.5,0.6,0.6\n",
            "yet the lowest score is not below it",
        ),
        (
            "c1,baseline,2,0.8,0.32,1,0.5,0.4,0.4\n",
            "yet the highest score is below it",
        ),
        ("c1,baseline,2,1,0.5,1,0.5,,0.6\n", "finite numbers"),
    ] {
        let err = fails(&mut run(&format!("{head}{rows}{bad}")));
        assert_mentions(&err, &["agg.csv", needle]);
    }
    // A row of an older query's output (both empty), stacked with newer rows: read as an older
    // file, the range from the case means, said.
    let v = json(&mut run(&format!(
        "{head}{rows}c1,baseline,2,2,2,2,0.5,,\n"
    )));
    assert!(
        common::has_code(&v, "load.aggregates_without_extremes"),
        "{v}"
    );
    // One of the two alone: the other is named as missing.
    let lone: String = format!("{head}{rows}")
        .lines()
        .map(|l| l.rsplit_once(',').unwrap().0.to_string() + "\n")
        .collect();
    let err = fails(&mut run(&lone));
    assert_mentions(&err, &["agg.csv", "max_score"]);
    // A declared range refuses a score beyond it, naming the column.
    w.edit(
        "experiment.toml",
        "threshold_drop = 0.05\n",
        "threshold_drop = 0.05\nscore_min = 0\nscore_max = 1\n",
    );
    let err = fails(&mut run(&format!(
        "{head}{rows}c1,baseline,2,1.7,1.49,2,0.5,0.7,1.0000001\n"
    )));
    assert_mentions(
        &err,
        &["agg.csv", "max_score", "outside [score_min, score_max]"],
    );
}

/// The shadow query counts requests whose rows give a stratum two values (it keeps the largest,
/// as the direct path did before it refused them), and `--from-aggregates` refuses them too.
#[test]
fn a_request_in_two_strata_is_refused_from_aggregates() {
    let w = common::Workdir::empty();
    w.write(
        "shadow.csv",
        "request_id,variant,answer,seg\nr0,production,a,a\nr0,replay,a,a\nr0,candidate,b,zzz\nr1,production,a,a\nr1,replay,a,a\nr1,candidate,a,a\n",
    );
    let query = printed_for(
        &[
            "shadow",
            "--dialect",
            "polars",
            "--by",
            "seg",
            "--without",
            "score",
            "--without",
            "tokens_in",
        ],
        &w.dir,
    );
    let log = read_csv(w.path("shadow.csv"));
    let agg = w.root.path().join("shadow-agg.parquet");
    reduce_table(&query, "shadow", log, &agg);
    let err = fails(
        ablate()
            .args(["shadow", "--by", "seg", "--from-aggregates"])
            .arg(&agg),
    );
    assert_mentions(
        &err,
        &["shadow-agg.parquet", "disagreeing = 1", "two values"],
    );
}

/// A stratum none of whose requests is complete had no row in `by_stratum` and no word of its
/// own (only the whole log's count of incomplete requests): it is named, directly and through
/// the shadow query's output (`incomplete_stratum`), with a stratum left out for lacking the
/// replay row the rest of the log has; an incomplete request with a null stratum names none in
/// the query's output.
#[test]
fn a_stratum_with_no_complete_request_is_named() {
    let w = common::Workdir::empty();
    let mut log = String::from("request_id,variant,answer,seg\n");
    for i in 0..6 {
        log.push_str(&format!(
            "a{i},production,x,kept\na{i},replay,x,kept\na{i},candidate,{},kept\n",
            if i % 2 == 0 { "y" } else { "x" }
        ));
    }
    for i in 0..3 {
        log.push_str(&format!("b{i},production,x,lost\n"));
    }
    log.push_str("c0,production,x,no-replay\nc0,candidate,y,no-replay\n");
    w.write("shadow.csv", &log);
    let args = ["shadow", "--quiet", "--json", "--by", "seg"];
    let direct = json(ablate().args(args).arg(w.path("shadow.csv")));
    let query = printed_for(
        &["shadow", "--dialect", "polars", "--by", "seg"],
        &w.path("shadow.csv"),
    );
    let agg = w.root.path().join("shadow-agg.parquet");
    reduce_table(&query, "shadow", read_csv(w.path("shadow.csv")), &agg);
    let from = json(ablate().args(args).arg("--from-aggregates").arg(&agg));
    for v in [&direct, &from] {
        let strata: Vec<&str> = v["by_stratum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["stratum"].as_str().unwrap())
            .collect();
        assert_eq!(strata, ["seg=kept"], "{v}");
        assert_eq!(v["incomplete_requests"], 4, "{v}");
        let left_out = v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["code"] == "shadow.strata_left_out")
            .unwrap_or_else(|| panic!("no shadow.strata_left_out: {v}"));
        let message = left_out["message"].as_str().unwrap();
        assert_mentions(
            message,
            &[
                "2 strata",
                "seg=lost (3 requests)",
                "seg=no-replay (1 request)",
            ],
        );
    }
    same(&direct, &from, "shadow");

    // An incomplete request without a stratum (which the direct path refuses, naming the row)
    // names none in the query's output: a null key had made the whole output unreadable.
    log.push_str("d0,production,x,\n");
    w.write("shadow.csv", &log);
    reduce_table(&query, "shadow", read_csv(w.path("shadow.csv")), &agg);
    let from = json(ablate().args(args).arg("--from-aggregates").arg(&agg));
    assert_eq!(from["incomplete_requests"], 5, "{from}");
    assert!(common::has_code(&from, "shadow.strata_left_out"), "{from}");
}

/// `ablate sql shadow` reads the columns of a log file given in place of the folder (it had
/// ignored the file and assumed a score column the log lacks), and refuses a path that does
/// not exist (it had assumed every optional column silently).
#[test]
fn sql_reads_a_log_file_and_refuses_a_missing_path() {
    let w = common::Workdir::empty();
    w.write(
        "shadow.csv",
        "request_id,variant,answer\nr0,production,a\nr0,candidate,b\n",
    );
    let query = printed_for(&["shadow", "--dialect", "polars"], &w.path("shadow.csv"));
    assert!(!query.contains("score"), "{query}");
    let err = fails(
        ablate()
            .args(["sql", "shadow", "--dialect", "polars"])
            .arg(w.path("shadow.parquet")),
    );
    assert_mentions(&err, &["shadow.parquet", "no such file or folder"]);
}

/// An engine may compare a 32-bit score column with the pass mark at 32 bits: a score of 0.7
/// stored as FLOAT is 0.699999988 read back as a double, yet the engine counted it a pass. The
/// reader refused such a row ("repeats pass, yet the highest score is below" the pass mark); a
/// score within a 32-bit epsilon of the mark is accepted, one clearly below is not.
#[test]
fn a_32_bit_score_at_the_pass_mark_is_not_refused() {
    let w = common::Workdir::tiny();
    w.edit(
        "experiment.toml",
        "threshold_drop = 0.05\n",
        "threshold_drop = 0.05\npass_mark = 0.7\n",
    );
    let head = "case_id,arm,repeats,sum_score,sum_score2,passes,pass_mark,min_score,max_score\n";
    let rows = tiny_rows(|s| format!("{s},{s}")).replace(",0.5,", ",0.7,");
    let agg = w.root.path().join("agg.csv");
    let run = |row: String| sweep_from_text(&w, &agg, &format!("{head}{rows}{row}"));
    let mark = f64::from(0.7_f32);
    json(&mut run(format!(
        "c1,baseline,1,{mark},{},1,0.7,{mark},{mark}\n",
        mark * mark
    )));
    let err = fails(&mut run(
        "c1,baseline,1,0.6999,0.48986001,1,0.7,0.6999,0.6999\n".into(),
    ));
    assert_mentions(&err, &["agg.csv", "yet the highest score is below it"]);
}
