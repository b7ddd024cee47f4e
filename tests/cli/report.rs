//! `ablate report`: every file is written, parses, and carries the analyses' numbers; runs are
//! reproducible; a failed run leaves nothing behind.

use crate::common;

use common::{Workdir, ablate, assert_mentions, demo, fails, json};
use serde_json::Value;

fn report(out: &std::path::Path, extra: &[&str]) -> std::process::Output {
    ablate()
        .args(["report", "--bootstrap", "500", "--out"])
        .arg(out)
        .args(extra)
        .arg(demo())
        .output()
        .unwrap()
}

#[test]
fn demo_report_has_every_part() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("rep");
    let run = report(&out, &[]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    for f in ["index.html", "report.md", "record.json", "analysis.json"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let analysis: Value =
        serde_json::from_slice(&std::fs::read(out.join("analysis.json")).unwrap()).unwrap();
    for key in [
        "check",
        "sweep",
        "variance",
        "reweight",
        "stress",
        "interactions",
        "need",
        "curve",
        "selector",
        "shadow",
        "context",
        "record",
    ] {
        assert!(!analysis[key].is_null(), "analysis.{key} is null");
    }
    assert!(
        analysis["skipped"].as_array().unwrap().is_empty(),
        "{}",
        analysis["skipped"]
    );
    let mut record: Value =
        serde_json::from_slice(&std::fs::read(out.join("record.json")).unwrap()).unwrap();
    let version = record.as_object_mut().unwrap().remove("schema_version");
    assert_eq!(version, Some(ablate::report::SCHEMA_VERSION.into()));
    assert_eq!(record, analysis["record"]);
    for chart in [
        "drops",
        "production",
        "coverage",
        "stress",
        "interactions",
        "budget",
        "selector",
        "context",
        "composition",
        "shadow",
        "churn",
    ] {
        let svg = std::fs::read_to_string(out.join(format!("charts/{chart}.svg"))).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{chart}.svg"
        );
        let png = std::fs::read(out.join(format!("charts/{chart}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{chart}.png");
        let csv = std::fs::read_to_string(out.join(format!("tables/{chart}.csv"))).unwrap();
        assert!(csv.lines().count() > 1, "{chart}.csv");
    }
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("<table class=\"data\">"));
    assert!(!html.contains("src=\"http"), "the HTML must open offline");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert_mentions(
        &md,
        &[
            "Needed context fraction",
            "oracle upper bound",
            "6% turns=multi in set vs 23% in production",
            "charts/drops.png",
        ],
    );
    // The budget chart's legend names the budget its interval confirms (not the point
    // estimate's 0.30, whose arm the sweep calls needed), and the section says that the
    // confirmed budget's arm still drops more than the threshold.
    let budget = std::fs::read_to_string(out.join("charts/budget.svg")).unwrap();
    assert_mentions(
        &budget,
        &[
            "retrieval (confirmed at 0.50)",
            "random (none confirmed below full)",
        ],
    );
    assert_mentions(
        &md,
        &[
            "a budget is confirmed when its family interval clears it",
            "not under the decision",
            // The interactions chart's colours, in words (a phone's labels lose their kind).
            "Grey bars are the sum of the parts' drops (predicted), orange the cut measured as one arm.",
        ],
    );
    // A number in the report comes from the data, at full precision: the drops table holds the
    // sweep's drop exactly (analysis.json), not its display form.
    let analysis: Value = common::analysis_json(&out);
    let sweep_drop = analysis["sweep"]["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"] == "without-conversation")
        .unwrap()["drop"]
        .as_f64()
        .unwrap();
    let drops = csv_table(&out.join("tables/drops.csv"));
    let column = drops.column("drop").unwrap().f64().unwrap().clone();
    let arms = drops.column("arm").unwrap().str().unwrap().clone();
    let row = arms
        .iter()
        .position(|a| a == Some("without-conversation"))
        .unwrap();
    assert_eq!(column.get(row), Some(sweep_drop));
}

/// A report CSV read by Polars, guessing each column's type from every row.
fn csv_table(path: &std::path::Path) -> polars::prelude::DataFrame {
    use polars::prelude::*;
    CsvReadOptions::default()
        .with_has_header(true)
        .with_infer_schema_length(None)
        .try_into_reader_with_file_path(Some(path.to_path_buf()))
        .unwrap()
        .finish()
        .unwrap()
}

#[test]
fn every_report_csv_holds_numbers_not_display_strings() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("rep");
    common::report_into(&out, &demo());
    // The columns that are text by nature; every other column must read as numbers.
    let text = [
        "arm",
        "verdict",
        "confidence",
        "components",
        "lost_by_slice",
        "stratum",
        "status",
        "selector",
        "source",
        "block",
        "rule",
        "flagged",
        "clears_both",
        "flipped",
        "retention_confident",
        "settleable",
    ];
    let mut checked = 0;
    for entry in std::fs::read_dir(out.join("tables")).unwrap() {
        let path = entry.unwrap().path();
        let df = csv_table(&path);
        for col in df.columns() {
            let name = col.name().as_str();
            let is_text = text.iter().any(|t| {
                name == *t
                    || name.starts_with(&format!("{t} ("))
                    || name.starts_with(&format!("{t}_"))
                    || name.ends_with(&format!("_{t}"))
            });
            if is_text {
                continue;
            }
            assert!(
                col.dtype().is_primitive_numeric() || col.null_count() == col.len(),
                "{}: column `{name}` reads as {} (display strings such as \"—\", \"<0.001\" or \"12%\"?)",
                path.display(),
                col.dtype()
            );
            checked += 1;
        }
    }
    assert!(checked >= 55, "only {checked} numeric columns");
}

#[test]
fn same_seed_same_report() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    assert!(report(&a, &[]).status.success());
    assert!(report(&b, &[]).status.success());
    for f in [
        "analysis.json",
        "report.md",
        "index.html",
        "charts/drops.svg",
        "tables/budget.csv",
    ] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn failed_report_leaves_nothing() {
    let w = Workdir::tiny();
    w.write("results.csv", "case_id,arm,repeat,score\n");
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("rep");
    let run = ablate()
        .arg("report")
        .arg("--out")
        .arg(&out)
        .arg(&w.dir)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    assert!(!out.exists());
    assert_eq!(
        std::fs::read_dir(root.path()).unwrap().count(),
        0,
        "no temporary folder left"
    );
}

#[test]
fn report_on_a_minimal_experiment() {
    let w = Workdir::tiny();
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("rep");
    let run = ablate()
        .args(["report", "--bootstrap", "200", "--out"])
        .arg(&out)
        .arg(&w.dir)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let analysis: Value =
        serde_json::from_slice(&std::fs::read(out.join("analysis.json")).unwrap()).unwrap();
    assert!(analysis["curve"].is_null() && analysis["shadow"].is_null());
    assert!(out.join("charts/drops.svg").is_file());
}

/// The page opens with the decision, and the decision agrees with the analyses it sorts: a cut
/// arm is confidently removable on the main set (interval below the threshold), on the stress
/// slice and in production; a kept arm is needed somewhere; a flip is a reweight flip.
#[test]
fn the_report_leads_with_a_decision_that_matches_the_analyses() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("rep");
    let priced = [
        "--quiet",
        "--price-per-mtok",
        "3",
        "--requests-per-day",
        "2000000",
    ];
    assert!(report(&out, &priced).status.success());
    let a: Value = common::analysis_json(&out);
    let d = &a["decision"];
    let thr = a["sweep"]["threshold_drop"].as_f64().unwrap();
    let sweep_arm = |name: &str| {
        a["sweep"]["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["arm"] == name)
            .unwrap()
            .clone()
    };
    // Every cleared arm is confidently removable on the main set, the stress slice and in
    // production (the family-wise intervals, as each section reports them).
    let cut = d["cut"].as_array().unwrap();
    for c in cut {
        let name = c["arm"].as_str().unwrap();
        let s = sweep_arm(name);
        assert!(s["ci_family_high"].as_f64().unwrap() < thr, "{name}");
        let st = a["stress"]["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["arm"] == name)
            .unwrap();
        assert_eq!(st["confidence_stress"], "confident", "{name}");
        let rw = a["reweight"]["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["arm"] == name)
            .unwrap();
        assert!(
            rw["ci_production_family_high"].as_f64().unwrap() < thr,
            "{name}"
        );
    }
    // Family-wise over its 41 arms, nothing in the demo is confidently removable (397 clusters,
    // threshold 0.005): no cut, no joint cut to run, no tokens or dollars claimed.
    assert!(cut.is_empty(), "{cut:?}");
    assert!(d["joint_cut"].is_null());
    assert!(d["tokens_saved"].is_null() && d["cost_saved_per_day"].is_null());
    for k in d["keep"].as_array().unwrap() {
        let s = sweep_arm(k["arm"].as_str().unwrap());
        assert!(s["verdict"] == "needed" || k["reason"].as_str().unwrap().contains("needed"));
    }
    let flips: Vec<&str> = a["reweight"]["arms"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["flip_confident"] == true)
        .map(|x| x["arm"].as_str().unwrap())
        .collect();
    let decided: Vec<&str> = d["flips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["arm"].as_str().unwrap())
        .collect();
    assert_eq!(flips, decided);
    // The decision lists exactly the composed cuts the interactions analysis calls super- or
    // sub-additive (none on the demo under any-distribution: its family interval on e spans 0).
    let interacting: Vec<&str> = a["interactions"]["composed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c["interaction_verdict"] != "additive" && c["interaction_verdict"] != "undetermined"
        })
        .map(|c| c["arm"].as_str().unwrap())
        .collect();
    let listed: Vec<&str> = d["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["arm"].as_str().unwrap())
        .collect();
    assert_eq!(interacting, listed);

    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("41 arms judged as one family"));
    assert!(md.contains("nothing is confidently removable"));

    // Judged arm by arm (--per-arm), few_shot/06 is confidently removable on the main set, its
    // own measured arm, and not yet clear on the stress slice: a cut candidate, with tokens and
    // dollars reported only for a measured, cleared cut (none).
    let out = root.path().join("per-arm");
    let mut per_arm = priced.to_vec();
    per_arm.push("--per-arm");
    assert!(report(&out, &per_arm).status.success());
    let a: Value = common::analysis_json(&out);
    let d = &a["decision"];
    let j = &d["joint_cut"];
    assert_eq!(j["measured"], true, "{j}");
    assert_eq!(j["units"], serde_json::json!(["few_shot/06"]));
    // Open on production too: its production interval is the sweep's family interval of the
    // weighted estimate (issue 45), no longer a normal interval at z.
    assert_eq!(
        j["open_on"],
        serde_json::json!(["stress slice", "production"])
    );
    let label = "few_shot/06";
    let s = a["sweep"]["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["arm"] == "without-few_shot/06")
        .unwrap();
    assert_eq!(s["verdict"], "removable-on-this-set");
    assert_eq!(s["confidence"], "confident");
    assert!(d["tokens_saved"].is_null() && d["cost_saved_per_day"].is_null());

    // First thing on the page and in the Markdown, naming the cut units.
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let body = &html[html.find("<body>").unwrap()..];
    assert!(body.find("class=\"decision\"").unwrap() < body.find("<h2>").unwrap());
    assert!(body.contains(label));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.find("**Decision (any score distribution)**").unwrap() < md.find("\n## ").unwrap());
    assert!(md.contains("Cut candidates (1)") && md.contains("Live shadow traffic"));
}

#[test]
fn a_comparison_of_prompt_versions_is_worded_as_the_decision_words_it() {
    // Imported prompt versions remove no units: the decision compares them with the baseline,
    // and the drops chart's legend and note use the same words.
    let root = tempfile::tempdir().unwrap();
    let exp = root.path().join("exp");
    common::import(
        "promptfoo",
        &[crate::import::fixture("promptfoo/v0.121.20/results.json")],
        &exp,
        &["--baseline", "full", "--threshold", "0"],
    );
    let out = root.path().join("rep");
    common::report_into(&out, &exp);
    let analysis: Value = common::analysis_json(&out);
    assert_eq!(analysis["decision"]["comparison"], true);
    let svg = std::fs::read_to_string(out.join("charts/drops.svg")).unwrap();
    assert!(
        svg.contains("not worse, confident"),
        "the legend words alternatives"
    );
    assert!(!svg.contains("removable"));
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("confidently not worse (within the threshold)"));
    // The demo's arms are cuts: its legend says needed and removable.
    let demo = root.path().join("demo");
    common::report_into(&demo, &common::demo());
    let svg = std::fs::read_to_string(demo.join("charts/drops.svg")).unwrap();
    assert!(svg.contains("removable, not settled") && !svg.contains("not worse"));
}

/// Issue 46: no message suggests an option the verb does not take. Each verb that reads
/// production shares is run on a demo whose mix has a stratum with no eval case, and without a
/// mix; every `--flag` its error names must be one of its own options. `report` takes what
/// `reweight` takes (repeatable --mix, --by, --mix-from, --allow-unmeasured).
#[test]
fn every_option_an_error_suggests_is_one_the_verb_takes() {
    let unmeasured = common::Workdir::demo_copy();
    std::fs::remove_file(unmeasured.path("mix.parquet")).unwrap();
    unmeasured.write(
        "mix.csv",
        "turns,share\nsingle,0.5\nmulti,0.3\ntriple,0.2\n",
    );
    let no_mix = common::Workdir::demo_copy();
    std::fs::remove_file(no_mix.path("mix.parquet")).unwrap();
    let root = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (verb, dir, extra) in [
        ("reweight", &unmeasured, vec![]),
        ("need", &unmeasured, vec![]),
        ("record", &unmeasured, vec![]),
        ("report", &unmeasured, vec!["--out"]),
        ("reweight", &no_mix, vec![]),
    ] {
        let mut cmd = ablate();
        cmd.arg(verb).arg(&dir.dir);
        if extra.contains(&"--out") {
            cmd.arg("--out")
                .arg(root.path().join(format!("rep-{checked}")));
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            continue;
        }
        for f in flags(&stderr) {
            assert!(
                common::takes(verb, &f),
                "{verb}'s error names {f} which {verb} does not take:\n{stderr}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 4, "{checked}");
    // And report takes the options its message names: the unmeasured stratum, renormalised.
    let out = root.path().join("allowed");
    common::succeeds(
        ablate()
            .arg("report")
            .arg(&unmeasured.dir)
            .arg("--allow-unmeasured")
            .arg("--out")
            .arg(&out),
    );
    let a = common::analysis_json(&out);
    assert!(a["reweight"]["unmeasured_share"].as_f64().unwrap() > 0.19);
}

/// The `--options` a message names (`--allow-unmeasured`, `--mix`), in order.
fn flags(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("--") {
        let name: String = rest[at + 2..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '-')
            .collect();
        if name.starts_with(|c: char| c.is_ascii_lowercase()) {
            out.push(format!("--{}", name.trim_end_matches('-')));
        }
        rest = &rest[at + 2..];
    }
    out
}

/// Issue 46: `check` says when the mix lacks a stratum column experiment.toml names.
#[test]
fn check_reports_a_mix_without_the_manifests_strata() {
    let w = common::Workdir::demo_copy();
    // A mix by slice (a column of the cases) where experiment.toml's strata are by turns.
    std::fs::copy(w.path("mix-slice.parquet"), w.path("mix.parquet")).unwrap();
    let v = json(ablate().args(["check", "--json"]).arg(&w.dir));
    let warned = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["code"] == "check.mix_lacks_strata")
        .expect("a warning");
    assert!(
        warned["message"].as_str().unwrap().contains("`turns`"),
        "{warned}"
    );
}

/// Issue 46: a report never replaces another experiment's report: simulate names its set from
/// its arguments, and report refuses a folder whose analysis.json is of another set (unless
/// --force).
#[test]
fn a_report_never_replaces_another_experiments_report() {
    let root = tempfile::tempdir().unwrap();
    let other = root.path().join("seed11");
    common::succeeds(
        ablate()
            .args([
                "simulate",
                "--seed",
                "11",
                "--cases",
                "60",
                "--shadow-requests",
                "0",
            ])
            .args(["--context-requests", "0", "--out"])
            .arg(&other),
    );
    let toml = std::fs::read_to_string(other.join("experiment.toml")).unwrap();
    assert!(
        toml.contains("set = \"support-eval-v3-seed11-cases60\""),
        "{toml}"
    );
    let out = root.path().join("rep");
    common::report_into(&out, &demo());
    let refused = fails(ablate().arg("report").arg(&other).arg("--out").arg(&out));
    assert!(
        refused.contains("holds the report of another experiment"),
        "{refused}"
    );
    assert!(refused.contains("--force"), "{refused}");
    common::succeeds(
        ablate()
            .arg("report")
            .arg(&other)
            .args(["--force", "--out"])
            .arg(&out),
    );
    // The same experiment again replaces its own report without --force.
    common::succeeds(ablate().arg("report").arg(&other).arg("--out").arg(&out));
}
