//! `ablate shadow` (and the context log): hand-made tables, errors, and the demo checked against an
//! independent computation.

mod common;

use common::{Workdir, ablate, assert_mentions, demo};
use serde_json::Value;

fn shadow_json(args: &[&str], path: &std::path::Path) -> Value {
    let out = ablate()
        .arg("shadow")
        .arg("--json")
        .args(args)
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
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
    assert!(v["warnings"][0].as_str().unwrap().contains("noise floor"));
}

#[test]
fn shadow_rejects_unknown_variants_and_duplicates() {
    let w = Workdir::empty();
    w.write(
        "shadow.csv",
        &shadow_csv().replacen("r2,replay", "r2,canary", 1),
    );
    let out = ablate()
        .arg("shadow")
        .arg(w.path("shadow.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_mentions(
        &String::from_utf8_lossy(&out.stderr),
        &["shadow.csv", "`variant`", "row 5", "canary"],
    );
    w.write(
        "shadow.csv",
        &shadow_csv().replacen("r2,replay", "r2,production", 1),
    );
    let out = ablate()
        .arg("shadow")
        .arg(w.path("shadow.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_mentions(
        &String::from_utf8_lossy(&out.stderr),
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
