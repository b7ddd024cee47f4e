//! `ablate shadow` (and the context log): hand-made tables, errors, and the demo checked against an
//! independent computation.

use crate::common;

use common::{Workdir, ablate, assert_mentions, demo, fails, json};
use serde_json::Value;

fn shadow_json(args: &[&str], path: &std::path::Path) -> Value {
    json(ablate().args(["shadow", "--json"]).args(args).arg(path))
}

/// Four requests: r1 unchanged; r2 candidate changed; r3 candidate and replay changed; r4 replay
/// changed. d = 0, 1, 0, −1.
fn shadow_csv() -> String {
    let mut s = String::from("request_id,variant,answer,score,tokens_in,turns\n");
    let rows = [
        ("r1", ["a", "a", "a"], "single"),
        ("r2", ["b", "b", "x"], "multi"),
        ("r3", ["c", "y", "z"], "multi"),
        ("r4", ["d", "w", "d"], "single"),
    ];
    for (id, [p, r, c], turns) in rows {
        s.push_str(&format!("{id},production,{p},1,1000,{turns}\n{id},replay,{r},1,1000,{turns}\n{id},candidate,{c},0,800,{turns}\n"));
    }
    s
}

#[test]
fn shadow_by_hand() {
    let w = Workdir::empty();
    w.write("shadow.csv", &shadow_csv());
    let v = shadow_json(&["--by", "turns"], &w.path("shadow.csv"));
    assert_eq!(v["requests"], 4);
    assert_eq!(v["changed_rate"], 0.5);
    assert_eq!(v["noise_rate"], 0.5);
    assert_eq!(v["excess_rate"], 0.0);
    // d = 0, 1, 0, −1: sd = √(2/3), se = √(2/3)/2
    assert!((v["se"].as_f64().unwrap() - (2.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-12);
    let multi = v["by_stratum"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stratum"] == "turns=multi")
        .unwrap();
    assert_eq!(multi["requests"], 2);
    assert_eq!(multi["changed_rate"], 1.0);
    assert_eq!(multi["excess_rate"], 0.5);
    assert_eq!(v["tokens"]["saving_mean"], 200.0);
    assert_eq!(v["tokens"]["production"]["p95"], 1000.0);
    assert_eq!(v["score_delta"], -1.0);
    for key in [
        "requests",
        "changed_rate",
        "noise_rate",
        "excess_rate",
        "se",
        "ci_low",
        "ci_high",
        "by_stratum",
        "tokens",
        "score_delta",
    ] {
        assert!(v.get(key).is_some(), "shadow.{key}");
    }
}

#[test]
fn shadow_without_replay_says_the_noise_is_unknown() {
    let w = Workdir::empty();
    let text: String = shadow_csv()
        .lines()
        .filter(|l| !l.contains(",replay,"))
        .map(|l| format!("{l}\n"))
        .collect();
    w.write("shadow.csv", &text);
    let v = shadow_json(&[], &w.path("shadow.csv"));
    assert_eq!(v["changed_rate"], 0.5);
    assert!(v["noise_rate"].is_null() && v["excess_rate"].is_null());
    assert_eq!(v["warnings"][0]["code"], "shadow.no_replay");
    assert!(
        v["warnings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("noise floor")
    );
}

#[test]
fn shadow_rejects_unknown_variants_and_duplicates() {
    let w = Workdir::empty();
    w.write(
        "shadow.csv",
        &shadow_csv().replacen("r2,replay", "r2,canary", 1),
    );
    assert_mentions(
        &fails(ablate().arg("shadow").arg(w.path("shadow.csv"))),
        &["shadow.csv", "`variant`", "row 5", "canary"],
    );
    w.write(
        "shadow.csv",
        &shadow_csv().replacen("r2,replay", "r2,production", 1),
    );
    assert_mentions(
        &fails(ablate().arg("shadow").arg(w.path("shadow.csv"))),
        &["shadow.csv", "r2", "more than once"],
    );
}

/// Values from an independent Python Polars pivot of the demo's shadow file.
#[test]
fn shadow_demo_matches_an_independent_computation() {
    let v = shadow_json(&["--by", "turns"], &demo());
    assert_eq!(v["requests"], 4000);
    assert!((v["changed_rate"].as_f64().unwrap() - 0.03575).abs() < 1e-12);
    assert!((v["noise_rate"].as_f64().unwrap() - 0.01875).abs() < 1e-12);
    assert!((v["excess_rate"].as_f64().unwrap() - 0.017).abs() < 1e-12);
    assert!((v["se"].as_f64().unwrap() - 0.003630570927735103).abs() < 1e-12);
    assert!((v["tokens"]["production"]["mean"].as_f64().unwrap() - 14003.60175).abs() < 1e-9);
    assert!((v["tokens"]["production"]["p95"].as_f64().unwrap() - 16007.1).abs() < 1e-6);
    assert!((v["tokens"]["production"]["p99"].as_f64().unwrap() - 16841.11).abs() < 1e-6);
    let multi = v["by_stratum"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stratum"] == "turns=multi")
        .unwrap();
    assert_eq!(multi["flagged"], true);
    let single = v["by_stratum"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stratum"] == "turns=single")
        .unwrap();
    assert_eq!(single["flagged"], false);
}

fn context_csv() -> &'static str {
    "request_id,step,source,tokens,mandatory,priority,relevance,content_hash\n\
     r1,1,system,100,true,0,1.0,sys\n\
     r1,1,retrieval,300,false,2,0.9,docA\n\
     r1,1,retrieval,300,false,2,0.9,docA\n\
     r1,2,system,100,true,0,1.0,sys\n\
     r1,2,tool_output,900,false,3,0.5,t1\n\
     r2,1,system,100,true,0,1.0,sys\n\
     r2,1,retrieval,50,false,2,0.4,docB\n"
}

fn context_json(args: &[&str], path: &std::path::Path) -> Value {
    json(ablate().args(["context", "--json"]).args(args).arg(path))
}

#[test]
fn context_by_hand() {
    let w = Workdir::empty();
    w.write("context_log.csv", context_csv());
    let v = context_json(
        &["--model-limit", "3000", "--expected-output", "500"],
        &w.path("context_log.csv"),
    );
    // Calls: 700, 1000, 150; hard = 3000 − (500 + 1000) − 1000 = 500.
    assert_eq!(v["calls"], 3);
    assert!((v["size"]["mean"].as_f64().unwrap() - 1850.0 / 3.0).abs() < 1e-9);
    assert_eq!(v["size"]["p50"], 700.0);
    assert!((v["size"]["p95"].as_f64().unwrap() - 970.0).abs() < 1e-9);
    assert_eq!(v["size"]["max"], 1000.0);
    assert_eq!(v["hard_limit"], 500.0);
    assert!((v["utilisation"].as_f64().unwrap() - (1.4 + 2.0 + 0.3) / 3.0).abs() < 1e-12);
    assert!((v["overflow_rate"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-12);
    assert!((v["soft_crossing_rate"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-12);
    assert!((v["growth_per_step"].as_f64().unwrap() - 575.0).abs() < 1e-9);
    assert!((v["composition"]["tool_output"].as_f64().unwrap() - 900.0 / 1850.0).abs() < 1e-12);
    assert!(v["policy"].is_null());
    for key in [
        "calls",
        "size",
        "composition",
        "hard_limit",
        "utilisation",
        "overflow_rate",
        "soft_crossing_rate",
        "growth_per_step",
        "policy",
    ] {
        assert!(v.get(key).is_some(), "context.{key}");
    }
}

#[test]
fn context_policy_replay_by_hand() {
    let w = Workdir::empty();
    w.write("context_log.csv", context_csv());
    w.write(
        "policy.toml",
        "model_limit = 3000\nexpected_output = 500\n[budgets]\nretrieval = 200\n",
    );
    let v = context_json(
        &["--policy", w.path("policy.toml").to_str().unwrap()],
        &w.path("context_log.csv"),
    );
    let p = &v["policy"];
    // r1/1: the second docA is a duplicate; docA (300) exceeds the retrieval budget → 100 admitted.
    // r1/2: tool output 900 > the 400 left → 100 admitted. r2/1: docB fits → 150.
    assert_eq!(p["overflow_count"], 0);
    assert!((p["admitted_mean"].as_f64().unwrap() - 350.0 / 3.0).abs() < 1e-9);
    assert!((p["saving_mean"].as_f64().unwrap() - 500.0).abs() < 1e-9);
    assert!((p["evicted_by_source"]["retrieval"].as_f64().unwrap() - 200.0).abs() < 1e-9);
    assert!((p["evicted_by_source"]["tool_output"].as_f64().unwrap() - 300.0).abs() < 1e-9);
    // Mandatory context over the limit is counted, never truncated.
    w.write(
        "context_log.csv",
        "request_id,step,source,tokens,mandatory\nr9,1,task,600,true\n",
    );
    let v = context_json(
        &["--policy", w.path("policy.toml").to_str().unwrap()],
        &w.path("context_log.csv"),
    );
    assert_eq!(v["policy"]["overflow_count"], 1);
}

#[test]
fn context_needs_a_model_limit() {
    let w = Workdir::empty();
    w.write("context_log.csv", context_csv());
    assert_mentions(
        &fails(ablate().arg("context").arg(w.path("context_log.csv"))),
        &["model_limit", "--model-limit"],
    );
    w.write("bad.toml", "model_limit = \"big\"\n");
    assert_mentions(
        &fails(
            ablate()
                .arg("context")
                .arg("--policy")
                .arg(w.path("bad.toml"))
                .arg(w.path("context_log.csv")),
        ),
        &["bad.toml", "model_limit"],
    );
}

#[test]
fn context_on_the_demo() {
    let v = context_json(&[], &demo());
    assert!(v["calls"].as_u64().unwrap() > 1000);
    assert_eq!(v["hard_limit"], 28000.0);
    assert!(v["growth_per_step"].as_f64().unwrap() > 0.0);
    let total: f64 = v["composition"]
        .as_object()
        .unwrap()
        .values()
        .map(|x| x.as_f64().unwrap())
        .sum();
    assert!((total - 1.0).abs() < 1e-12);
}

#[test]
fn shadow_nulls_are_errors_and_tokens_are_paired() {
    let w = Workdir::empty();
    w.write(
        "shadow.csv",
        &shadow_csv().replacen("r2,candidate,x,", "r2,candidate,,", 1),
    );
    assert_mentions(
        &fails(ablate().arg("shadow").arg(w.path("shadow.csv"))),
        &["shadow.csv", "`answer`", "row 6", "null"],
    );
    // An incomplete request (no candidate) with a huge production prompt must not move the saving.
    let text = shadow_csv() + "r5,production,e,1,100000,single\nr5,replay,e,1,100000,single\n";
    w.write("shadow.csv", &text);
    let v = shadow_json(&[], &w.path("shadow.csv"));
    assert_eq!(v["tokens"]["saving_mean"], 200.0);
    assert_eq!(v["incomplete_requests"], 1);
}

#[test]
fn context_limits_and_nulls() {
    let w = Workdir::empty();
    // The first row of the call has no model_limit; the replay must still find it.
    w.write(
        "context_log.csv",
        "request_id,step,source,tokens,mandatory,model_limit,expected_output\nr1,1,system,100,true,,\nr1,1,retrieval,200,false,10000,1000\n",
    );
    w.write("policy.toml", "[budgets]\nretrieval = 500\n");
    let v = context_json(
        &["--policy", w.path("policy.toml").to_str().unwrap()],
        &w.path("context_log.csv"),
    );
    assert_eq!(v["hard_limit"], 7000.0);
    assert_eq!(v["policy"]["overflow_count"], 0);
    assert_eq!(v["policy"]["admitted_mean"], 300.0);
    // A null step is an error, not step 0.
    w.write(
        "context_log.csv",
        "request_id,step,source,tokens\nr1,1,system,100\nr1,,tool_output,50\n",
    );
    assert_mentions(
        &fails(
            ablate()
                .args(["context", "--model-limit", "9000"])
                .arg(w.path("context_log.csv")),
        ),
        &["`step`", "row 2"],
    );
    // Flags that belong in the policy are refused beside it, and ratios are checked.
    let out = ablate()
        .args(["context", "--soft-limit-ratio", "0.5", "--policy"])
        .arg(w.path("policy.toml"))
        .arg(w.path("context_log.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_mentions(
        &fails(
            ablate()
                .args([
                    "context",
                    "--model-limit",
                    "9000",
                    "--soft-limit-ratio",
                    "1.5",
                ])
                .arg(w.path("context_log.csv")),
        ),
        &["soft_limit_ratio"],
    );
}

/// A stratum where 10 of 10 answers changed and replay changed none has no spread (se null); it gets
/// an exact sign test (2⁻¹⁰ before Holm), stays in the family, and is flagged.
#[test]
fn a_stratum_with_no_spread_gets_an_exact_test_and_is_flagged() {
    let w = Workdir::empty();
    let mut csv = String::from("request_id,variant,answer,turns\n");
    for i in 0..10 {
        for (v, a) in [("production", "a"), ("replay", "a"), ("candidate", "b")] {
            csv.push_str(&format!("m{i},{v},{a},multi\n"));
        }
    }
    // A single-turn stratum with spread: 3 of 20 changed, 1 in replay.
    for i in 0..20 {
        let cand = if i < 3 { "b" } else { "a" };
        let rep = if i == 19 { "c" } else { "a" };
        for (v, a) in [("production", "a"), ("replay", rep), ("candidate", cand)] {
            csv.push_str(&format!("s{i},{v},{a},single\n"));
        }
    }
    w.write("shadow.csv", &csv);
    let v = shadow_json(&["--by", "turns"], &w.path("shadow.csv"));
    let strata = v["by_stratum"].as_array().unwrap();
    let multi = strata
        .iter()
        .find(|s| s["stratum"] == "turns=multi")
        .unwrap();
    assert_eq!(multi["excess_rate"], 1.0);
    assert!(multi["se"].is_null(), "no spread: undefined, not 0");
    // Holm over 2 strata: the multi p (1/1024) is the smallest, so ×2.
    assert!(
        (multi["p_holm"].as_f64().unwrap() - 2.0 / 1024.0).abs() < 1e-12,
        "{multi}"
    );
    assert_eq!(multi["flagged"], true);
    let single = strata
        .iter()
        .find(|s| s["stratum"] == "turns=single")
        .unwrap();
    assert!(single["p_holm"].is_number());
}

/// A log read in several hash partitions of request ids gives the one-pass answers: the sums
/// add, and token percentiles come from exact counts either way.
#[test]
fn shadow_and_context_in_partitions_equal_one_pass() {
    use ablate::analysis::context::{self, ContextOptions, Policy};
    use ablate::analysis::shadow::{self, ShadowOptions};
    use ablate::io::logs::{ContextLog, ShadowLog};
    use ablate::io::table::TableFile;

    let by = vec!["turns".to_string()];
    let log = ShadowLog::open(&TableFile::at(demo().join("shadow.parquet")), &by, None).unwrap();
    let one = shadow::run(&log, &ShadowOptions::default()).unwrap();
    // 1 MiB for the requests beyond the baseline: 4,000 requests take four passes.
    let small = ablate::io::logs::BASELINE_MEMORY + (1 << 20);
    let four = shadow::run(
        &log,
        &ShadowOptions {
            memory: small,
            ..ShadowOptions::default()
        },
    )
    .unwrap();
    assert_eq!(
        ablate::io::logs::passes(4000, shadow::BYTES_PER_REQUEST, small),
        4
    );
    let (a, b) = (
        serde_json::to_value(&one).unwrap(),
        serde_json::to_value(&four).unwrap(),
    );
    assert_eq!(a["requests"], b["requests"]);
    assert_eq!(a["by_stratum"], b["by_stratum"]);
    assert_eq!(a["tokens"], b["tokens"]);
    assert_eq!(a["excess_rate"], b["excess_rate"]);
    assert!((one.score_delta.unwrap() - four.score_delta.unwrap()).abs() < 1e-12);

    let ctx = ContextLog::open(&TableFile::at(demo().join("context_log.parquet"))).unwrap();
    let policy = Policy {
        global_budget: Some(6000),
        budgets: [("retrieval".to_string(), 2000)].into_iter().collect(),
        ..Policy::default()
    };
    let run = |memory: u64| {
        serde_json::to_value(
            context::run(
                &ctx,
                &ContextOptions {
                    policy: Some(policy.clone()),
                    memory,
                    ..ContextOptions::default()
                },
            )
            .unwrap(),
        )
        .unwrap()
    };
    let (a, mut b) = (run(4 << 30), run(small));
    let (ua, ub) = (
        a["utilisation"].as_f64().unwrap(),
        b["utilisation"].as_f64().unwrap(),
    );
    assert!((ua - ub).abs() < 1e-12);
    b["utilisation"] = a["utilisation"].clone();
    assert_eq!(a, b);
}

/// With requests clustered by user, the Poisson-bootstrap se over users agrees with the
/// cluster-robust (sandwich) se computed by hand, and is far wider than the se that treats
/// requests as independent.
#[test]
fn clustered_se_matches_the_cluster_robust_formula() {
    let w = Workdir::empty();
    let mut csv = String::from("request_id,variant,answer,user\n");
    let (groups, per) = (100usize, 10usize);
    let mut changed = vec![0i64; groups];
    for (g, total) in changed.iter_mut().enumerate() {
        // Half the users see nearly every answer change, half nearly none.
        let rate = if g % 2 == 0 { 9 } else { 1 };
        for r in 0..per {
            let id = format!("r{g:03}-{r}");
            let c = usize::from(r < rate);
            *total += c as i64;
            let cand = if c == 1 { "new" } else { "same" };
            csv.push_str(&format!(
                "{id},production,same,u{g}\n{id},replay,same,u{g}\n{id},candidate,{cand},u{g}\n"
            ));
        }
    }
    w.write("shadow.csv", &csv);
    let path = w.path("shadow.csv");
    let run_clustered = || {
        json(
            ablate()
                .args(["shadow", "--json", "--cluster-by", "user"])
                .args(["--replicates", "2000"])
                .arg(&path),
        )
    };
    let clustered = run_clustered();
    let iid = json(ablate().args(["shadow", "--json"]).arg(&path));
    // By hand: d̄ = Σd/n, V = G/(G−1) · Σ_g (D_g − n_g·d̄)² / n².
    let n = (groups * per) as f64;
    let mean = changed.iter().sum::<i64>() as f64 / n;
    let ss: f64 = changed
        .iter()
        .map(|d| (*d as f64 - per as f64 * mean).powi(2))
        .sum();
    let robust = (groups as f64 / (groups as f64 - 1.0) * ss / (n * n)).sqrt();
    let se = clustered["se"].as_f64().unwrap();
    assert!(
        (se / robust - 1.0).abs() < 0.1,
        "bootstrap {se} vs robust {robust}"
    );
    assert!(se > 2.5 * iid["se"].as_f64().unwrap());
    assert_eq!(clustered["excess_rate"], iid["excess_rate"]);
    assert!(
        clustered["se_method"]
            .as_str()
            .unwrap()
            .contains("Poisson bootstrap")
    );
    // Same seedless hash, same answer.
    assert_eq!(clustered, run_clustered());
}

/// The value rules run in one streaming query; the error is still the first rule broken, in the
/// rules' order (required values first), at the first row that breaks it, with its value.
#[test]
fn a_log_with_several_bad_values_names_the_first_rule_at_its_first_row() {
    let w = Workdir::empty();
    w.write(
        "context_log.csv",
        "request_id,source,tokens\nr1,system,10\nr1,retrieval,-5\n,system,10\nr2,retrieval,-7\n",
    );
    let err = fails(ablate().arg("context").arg(w.path("context_log.csv")));
    assert_mentions(&err, &["context_log.csv", "request_id", "row 3"]);
    w.write(
        "context_log.csv",
        "request_id,source,tokens\nr1,system,10\nr1,retrieval,-5\nr2,system,10\nr2,retrieval,-7\n",
    );
    let err = fails(ablate().arg("context").arg(w.path("context_log.csv")));
    assert_mentions(&err, &["tokens", "row 2", "-5", "must not be negative"]);
}

/// `report` checks a log's values once, at the load; the analysis then checks only the columns
/// the load did not (a stratum), and answers as a fresh open does.
#[test]
fn a_reopened_log_checks_only_the_columns_the_load_did_not() {
    use ablate::analysis::context::{self, ContextOptions};
    use ablate::io::logs::{self, ContextLog, ShadowLog};
    use ablate::io::table::TableFile;

    let w = Workdir::empty();
    let csv = shadow_csv().replacen(",multi\n", ",\n", 1);
    w.write("shadow.csv", &csv);
    let file = TableFile::at(w.path("shadow.csv"));
    let summary = logs::summarise(&file, &logs::shadow_columns()).unwrap();
    assert_eq!(summary.rows, 12);
    let by = vec!["turns".to_string()];
    let reopened = ShadowLog::reopen(&summary, &by, None)
        .err()
        .unwrap()
        .to_string();
    let fresh = ShadowLog::open(&file, &by, None).err().unwrap().to_string();
    assert_eq!(reopened, fresh);
    assert_mentions(&reopened, &["turns", "row 4", "a value is required"]);

    let file = TableFile::at(demo().join("context_log.parquet"));
    let summary = logs::summarise(&file, &logs::context_columns()).unwrap();
    let run = |log: ContextLog| {
        serde_json::to_value(context::run(&log, &ContextOptions::default()).unwrap()).unwrap()
    };
    assert_eq!(
        run(ContextLog::reopen(&summary).unwrap()),
        run(ContextLog::open(&file).unwrap())
    );
}
