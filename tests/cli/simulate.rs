//! `ablate simulate`: the committed demo is exactly what the default settings write, output is
//! deterministic per seed, and large designs have the requested shape.

use crate::common;

use common::{ablate, assert_mentions, demo, fails};

fn simulate(args: &[&str]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let out = ablate()
        .arg("simulate")
        .arg("--out")
        .arg(root.path().join("exp"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    root
}

fn files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    names
}

#[test]
fn committed_demo_regenerates_byte_for_byte() {
    let root = simulate(&[]);
    let fresh = root.path().join("exp");
    let committed: Vec<String> = files(&demo())
        .into_iter()
        .filter(|n| n != ".ablate-watch.json")
        .collect();
    assert_eq!(files(&fresh), committed);
    for name in files(&demo()) {
        if name == ".ablate-watch.json" {
            // Decisions `ablate watch` recorded, if someone watched the demo.
            continue;
        }
        if name == ".ablate-output" {
            // Provenance (the command line differs); the data files must match.
            continue;
        }
        let a = std::fs::read(demo().join(&name)).unwrap();
        let b = std::fs::read(fresh.join(&name)).unwrap();
        assert!(
            a == b,
            "{name} differs from a fresh `ablate simulate --out DIR`; regenerate notebooks-data/support-eval-v3"
        );
    }
}

#[test]
fn seeds_change_the_data_and_stay_reproducible() {
    let a = simulate(&[
        "--seed",
        "7",
        "--cases",
        "60",
        "--shadow-requests",
        "10",
        "--context-requests",
        "5",
    ]);
    let b = simulate(&[
        "--seed",
        "7",
        "--cases",
        "60",
        "--shadow-requests",
        "10",
        "--context-requests",
        "5",
    ]);
    let c = simulate(&[
        "--seed",
        "8",
        "--cases",
        "60",
        "--shadow-requests",
        "10",
        "--context-requests",
        "5",
    ]);
    let read = |d: &tempfile::TempDir| std::fs::read(d.path().join("exp/results.parquet")).unwrap();
    assert_eq!(read(&a), read(&b));
    assert_ne!(read(&a), read(&c));
}

#[test]
fn large_design_shape_and_check() {
    let root = simulate(&[
        "--cases",
        "200",
        "--stress-cases",
        "0",
        "--arms",
        "60",
        "--repeats",
        "5",
        "--json",
    ]);
    let dir = root.path().join("exp");
    let out = ablate()
        .args(["check", "--json"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["cases"], 200);
    assert_eq!(v["stress_cases"], 0);
    assert_eq!(v["arms"].as_array().unwrap().len(), 60);
    assert_eq!(v["repeats"]["max"], 5);
    let results = v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == "results")
        .unwrap();
    assert_eq!(results["rows"], 200 * 60 * 5);
}

#[test]
fn zero_cases_is_a_usage_error() {
    let root = tempfile::tempdir().unwrap();
    assert_mentions(
        &fails(
            ablate()
                .args(["simulate", "--cases", "0", "--out"])
                .arg(root.path().join("x")),
        ),
        &["--cases"],
    );
    assert!(!root.path().join("x").exists());
}
