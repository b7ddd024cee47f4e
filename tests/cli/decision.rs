//! The decision a reviewer cannot break (issue "one decision"): honest at small n, family-wise
//! across the arms, a cut that was measured, and one verdict per arm in every section.

use crate::common;

use std::collections::BTreeMap;

use common::{Workdir, ablate, demo, json};
use serde_json::Value;

/// `ablate VERB DIR --json` with a small bootstrap.
fn run(verb: &str, dir: &std::path::Path, extra: &[&str]) -> Value {
    json(
        ablate()
            .args([verb, "--json", "--quiet", "--bootstrap", "200"])
            .args(extra)
            .arg(dir),
    )
}

/// Writes the report of `dir` into `out` and returns its analysis.json.
fn analysis(out: &std::path::Path, dir: &std::path::Path) -> Value {
    json(
        ablate()
            .args(["report", "--json", "--quiet", "--bootstrap", "200", "--out"])
            .arg(out)
            .arg(dir),
    );
    serde_json::from_str(&std::fs::read_to_string(out.join("analysis.json")).unwrap()).unwrap()
}

/// An arm: its label, its removed units (`;`-separated) and which case indices it fails.
type ArmSpec<'a> = (&'a str, &'a str, &'a dyn Fn(usize) -> bool);

/// An experiment with 0/1 scores, one repeat: `arms` gives each arm's removed units and, per
/// case index, whether the arm fails a case the baseline passes.
fn binary(cases: usize, threshold: f64, units: &[(&str, &str)], arms: &[ArmSpec<'_>]) -> Workdir {
    let w = Workdir::empty();
    let mut toml = format!("set = \"b\"\nthreshold_drop = {threshold}\n");
    let mut blocks: Vec<&str> = units.iter().map(|u| u.1).collect();
    blocks.dedup();
    for b in blocks {
        toml.push_str(&format!(
            "[[blocks]]\nname = \"{b}\"\nneed = \"needed_units\"\n"
        ));
    }
    w.write("experiment.toml", &toml);
    let ids: Vec<String> = (0..cases).map(|i| format!("c{i:04}")).collect();
    w.write("cases.csv", &format!("case_id\n{}\n", ids.join("\n")));
    if !units.is_empty() {
        let rows: String = units
            .iter()
            .map(|(u, b)| format!("{u},{b},100\n"))
            .collect();
        w.write("units.csv", &format!("unit,block,tokens\n{rows}"));
    }
    let mut arms_csv = String::from("arm,removed\nbaseline,\n");
    let mut results = String::from("case_id,arm,repeat,score\n");
    for id in &ids {
        results.push_str(&format!("{id},baseline,0,1\n"));
    }
    for (arm, removed, fails) in arms {
        arms_csv.push_str(&format!("{arm},{removed}\n"));
        for (i, id) in ids.iter().enumerate() {
            results.push_str(&format!("{id},{arm},0,{}\n", if fails(i) { 0 } else { 1 }));
        }
    }
    w.write("arms.csv", &arms_csv);
    w.write("results.csv", &results);
    w
}

#[test]
fn three_cases_are_too_few_to_decide_a_comparison() {
    // Two models on three cases; the second loses none of them. Before, the percentile
    // bootstrap's interval collapsed and the report said "Cut".
    let w = binary(3, 0.02, &[], &[("model-b", "", &|_| false)]);
    let sweep = run("sweep", &w.dir, &[]);
    let arm = &sweep["arms"][0];
    assert_eq!(arm["confidence"], "inconclusive", "{arm}");
    assert_eq!(arm["ci_method"], "exact-bound");
    let out = w.root.path().join("report");
    let a = analysis(&out, &w.dir);
    let d = &a["decision"];
    assert_eq!(d["comparison"], true);
    assert!(d["cut"].as_array().unwrap().is_empty());
    assert!(d["tokens_saved"].is_null());
    let reason = d["inconclusive"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("too few cases to decide"), "{reason}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(!md.contains("Cut"), "{md}");
    assert!(md.contains("Not worse than the baseline"), "{md}");
}

#[test]
fn small_samples_use_intervals_that_hold() {
    // 30 and 150 cases: the score interval (the percentile bootstrap undercovers at 100 units,
    // benches/README.md).
    for (n, method) in [(30, "score"), (150, "score")] {
        let w = binary(
            n,
            0.05,
            &[],
            &[("b", "", &|i| i % 7 == 0), ("c", "", &|i| i % 5 == 0)],
        );
        let s = run("sweep", &w.dir, &[]);
        let a = &s["arms"][0];
        assert_eq!(a["ci_method"], method, "{n}");
        // The family interval (two arms: 97.5% each) is the wider one.
        assert!(a["ci_family_low"].as_f64() < a["ci_low"].as_f64(), "{a}");
        assert!(a["ci_family_high"].as_f64() > a["ci_high"].as_f64(), "{a}");
    }
}

#[test]
fn the_family_decides_and_per_arm_says_so() {
    let s = run("sweep", &demo(), &[]);
    assert_eq!(s["family"]["size"], 41);
    assert_eq!(s["family"]["procedure"], "bonferroni-score");
    let p = run("sweep", &demo(), &["--per-arm"]);
    assert_eq!(p["family"]["procedure"], "per-arm");
    let confident = |v: &Value| {
        v["arms"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["confidence"] == "confident")
            .count()
    };
    assert!(confident(&p) > confident(&s), "per-arm decides more");
    for a in s["arms"].as_array().unwrap() {
        if a["confidence"] == "confident" {
            let (lo, hi) = (
                a["ci_family_low"].as_f64().unwrap(),
                a["ci_family_high"].as_f64().unwrap(),
            );
            assert!(lo >= 0.005 || hi < 0.005, "{a}");
        }
    }
    let out = tempfile::tempdir().unwrap();
    json(
        ablate()
            .args([
                "report",
                "--json",
                "--quiet",
                "--per-arm",
                "--bootstrap",
                "200",
                "--out",
            ])
            .arg(out.path())
            .arg(demo()),
    );
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(
        md.contains("Per-arm confidence"),
        "the report says so at the top"
    );
}

/// Units B and C carry the same fact; A is irrelevant but one noise loss gives it the largest own
/// drop. The measured cut A+B+C is needed. `need` must not present B+C as a measured joint cut.
#[test]
fn redundant_units_are_never_called_jointly_removable_unmeasured() {
    let w = binary(
        240,
        0.05,
        &[("A", "few_shot"), ("B", "few_shot"), ("C", "few_shot")],
        &[
            ("without-A", "A", &|i| i == 7),
            ("without-B", "B", &|_| false),
            ("without-C", "C", &|_| false),
            ("without-ABC", "A;B;C", &|i| i % 5 == 0),
        ],
    );
    let need = run("need", &w.dir, &[]);
    assert_eq!(need["forced_needed"].as_array().unwrap().len(), 1, "{need}");
    assert_eq!(need["forced_needed"][0]["cut"], "without-ABC");
    assert_eq!(need["restore_method"], "exact");
    let jointly: Vec<&str> = need["jointly_removable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(jointly.len(), 2);
    assert_eq!(need["joint_cut_measured"], false);
    assert!(
        need["headline"]
            .as_str()
            .unwrap()
            .contains("assuming an untested joint cut of 2 units"),
        "{}",
        need["headline"]
    );
    // The decision: the joint cut A+B+C was measured and is needed.
    let out = w.root.path().join("r");
    let a = analysis(&out, &w.dir);
    let j = &a["decision"]["joint_cut"];
    assert_eq!(j["measured"], true, "{j}");
    assert_eq!(j["arm"], "without-ABC");
    assert_eq!(j["verdict"], "needed");
    // What can be cut now is one measured arm (100 tokens), never the three together.
    assert_eq!(a["decision"]["tokens_saved"].as_f64(), Some(100.0));
}

#[test]
fn the_cut_is_measured_or_named_as_the_arm_to_run() {
    // Two units each removable alone, never measured together.
    let w = binary(
        240,
        0.05,
        &[("A", "few_shot"), ("B", "few_shot")],
        &[
            ("without-A", "A", &|_| false),
            ("without-B", "B", &|_| false),
        ],
    );
    let out = w.root.path().join("r");
    let a = analysis(&out, &w.dir);
    let d = &a["decision"];
    assert_eq!(d["joint_cut"]["measured"], false);
    assert_eq!(d["joint_cut"]["arm"], "without-A+B");
    // Tokens only for a measured cut: one arm's 100, never the 200 of both.
    assert_eq!(d["tokens_saved"].as_f64(), Some(100.0));
    // plan --confirm writes that arm; next schedules it.
    let arms = w.root.path().join("arms-confirm.csv");
    let plan = json(
        ablate()
            .args([
                "plan",
                "--json",
                "--quiet",
                "--bootstrap",
                "200",
                "--confirm",
            ])
            .arg(&w.dir)
            .arg("--out")
            .arg(&arms),
    );
    assert_eq!(plan["arm"], "without-A+B");
    std::fs::remove_file(w.path("arms.csv")).unwrap();
    std::fs::copy(&arms, w.path("arms.csv")).unwrap();
    let batch = json(
        ablate()
            .args(["next", "--json", "--quiet", "--calls", "50", "--out"])
            .arg(w.root.path().join("batch.csv"))
            .arg(&w.dir),
    );
    assert!(
        batch["arms"]["without-A+B"].as_u64().unwrap() > 0,
        "{batch}"
    );
}

/// Every arm's main-set verdict (verdict, confidence) is the same in sweep, stress, need, the
/// record and the decision; and no verb contradicts another (issue 46): the budget `curve` prices
/// passes the decision's threshold or says it does not, `plan --confirm` never proposes an arm it
/// predicts to fail, the decision's quality cost is reweight's, and `variance`'s cases needed
/// are the decision's cases to settle. On the demo and on two simulated worlds (another seed,
/// and 2,000 cases, where plan --confirm proposes an arm).
///
/// Returns, from the second function, how many arms plan --confirm proposed.
#[test]
fn no_arm_has_two_main_set_verdicts_anywhere() {
    let root = tempfile::tempdir().unwrap();
    let other = root.path().join("seed11");
    common::succeeds(
        ablate()
            .args(["simulate", "--seed", "11", "--cases", "400", "--out"])
            .arg(&other)
            .args(["--shadow-requests", "500", "--context-requests", "200"]),
    );
    // A larger set, where the decision has cut candidates and plan --confirm proposes an arm.
    let large = root.path().join("cases2000");
    common::succeeds(
        ablate()
            .args(["simulate", "--cases", "2000", "--out"])
            .arg(&large)
            .args(["--shadow-requests", "0", "--context-requests", "0"]),
    );
    let mut proposed = 0;
    for (name, dir) in [
        ("demo", demo()),
        ("seed11", other.clone()),
        ("cases2000", large.clone()),
    ] {
        let out = root.path().join(format!("rep-{name}"));
        json(
            ablate()
                .args(["report", "--json", "--quiet", "--bootstrap", "1000"])
                .args([
                    "--price-per-mtok",
                    "3",
                    "--requests-per-day",
                    "1000000",
                    "--out",
                ])
                .arg(&out)
                .arg(&dir),
        );
        let a: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("analysis.json")).unwrap())
                .unwrap();
        one_verdict_everywhere(&a);
        proposed += no_verb_contradicts_another(&a, &dir);
    }
    assert!(
        proposed > 0,
        "no world had an arm for plan --confirm to propose"
    );
}

/// The main-set verdicts of `a` (a report's analysis.json) agree in every section.
fn one_verdict_everywhere(a: &Value) {
    let mut main: BTreeMap<String, (String, String)> = BTreeMap::new();
    for arm in a["sweep"]["arms"].as_array().unwrap() {
        main.insert(
            arm["arm"].as_str().unwrap().into(),
            (
                arm["verdict"].as_str().unwrap().into(),
                arm["confidence"].as_str().unwrap().into(),
            ),
        );
    }
    let confident_removable =
        |arm: &str| main.get(arm) == Some(&("removable-on-this-set".into(), "confident".into()));
    for s in a["stress"]["arms"].as_array().unwrap() {
        let arm = s["arm"].as_str().unwrap();
        if let Some((v, c)) = main.get(arm) {
            assert_eq!(s["verdict_main"], v.as_str(), "stress {arm}");
            assert_eq!(s["confidence_main"], c.as_str(), "stress {arm}");
        }
        if s["clears_both"] == true {
            assert!(confident_removable(arm), "stress clears_both {arm}");
        }
    }
    for (unit, arm) in a["need"]["removable_units"].as_object().unwrap() {
        assert!(confident_removable(arm.as_str().unwrap()), "need {unit}");
    }
    let d = &a["decision"];
    for c in d["cut"].as_array().unwrap() {
        assert!(
            confident_removable(c["arm"].as_str().unwrap()),
            "decision cut {c}"
        );
    }
    for k in d["keep"].as_array().unwrap() {
        let arm = k["arm"].as_str().unwrap();
        let reason = k["reason"].as_str().unwrap();
        if reason == "needed on the main set" {
            assert_eq!(
                main[arm],
                ("needed".into(), "confident".into()),
                "keep {arm}"
            );
        } else {
            // Kept for the stress slice or production: the main-set words are the sweep's.
            assert!(
                reason.starts_with(main[arm].0.as_str()),
                "keep {arm}: {reason}"
            );
        }
    }
    for i in d["inconclusive"].as_array().unwrap() {
        let arm = i["arm"].as_str().unwrap();
        if i["reason"] == "the interval straddles the threshold" {
            assert_eq!(main[arm].1, "inconclusive", "inconclusive {arm}");
        }
    }
    for arm in a["record"]["stress"]["clears_both"].as_array().unwrap() {
        assert!(confident_removable(arm.as_str().unwrap()), "record {arm}");
    }
    // A production flip is listed only when the production verdict is confident.
    for f in d["flips"].as_array().unwrap() {
        let r = a["reweight"]["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["arm"] == f["arm"])
            .unwrap();
        assert_eq!(r["confidence_production"], "confident", "{f}");
    }
    // The decision never adds tokens for a combination nobody measured.
    let j = &d["joint_cut"];
    if !j.is_null() && j["measured"] == false {
        let measured = &d["measured_cut"];
        assert!(
            d["tokens_saved"].is_null() || d["tokens_saved"] == measured["tokens_removed"],
            "{d}"
        );
    }
}

/// Budgets, plans, costs and sample sizes of `a` (the report of `dir`) agree with the verdicts.
fn no_verb_contradicts_another(a: &Value, dir: &std::path::Path) -> usize {
    let mut proposed = 0;
    let thr = a["sweep"]["threshold_drop"].as_f64().unwrap();
    let sweep_arm = |arm: &str| {
        a["sweep"]["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["arm"] == arm)
            .cloned()
            .unwrap_or_else(|| panic!("no arm {arm}"))
    };
    // curve: the priced budget is one its interval confirms, and it says whether that arm's drop
    // passes the decision's threshold, as the sweep's point verdict does.
    if let Some(cost) = a["curve"]["cost"].as_object() {
        let arm = cost["arm"].as_str().unwrap();
        let s = sweep_arm(arm);
        assert!((cost["drop"].as_f64().unwrap() - s["drop"].as_f64().unwrap()).abs() < 1e-12);
        assert_eq!(
            cost["within_threshold_drop"] == true,
            s["verdict"] == "removable-on-this-set",
            "curve prices {arm}: {cost:?} against the sweep's {s}"
        );
        let budget = cost["budget_ratio"].as_f64().unwrap();
        let confirmed = a["curve"]["selectors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["min_budget_confident"].as_f64() == Some(budget));
        assert!(confirmed, "curve prices an unconfirmed budget {budget}");
    }
    // plan --confirm (family-wise and per arm): a proposed arm that was not measured is
    // predicted to pass.
    for per_arm in [false, true] {
        let confirm = ablate()
            .args(["plan", "--json", "--quiet", "--confirm"])
            .arg(dir)
            .args(if per_arm { &["--per-arm"][..] } else { &[][..] })
            .output()
            .unwrap();
        if !confirm.status.success() {
            continue;
        }
        let c: Value = serde_json::from_slice(&confirm.stdout).unwrap();
        proposed += usize::from(c["measured"] == false && !c["arm"].is_null());
        if c["measured"] == false && !c["arm"].is_null() {
            assert!(
                c["drop"].as_f64().unwrap() < thr,
                "plan proposes a failing arm: {c}"
            );
        }
        if c["predicted_to_fail"] == true {
            assert!(c["joint_drop"].as_f64().unwrap() >= thr, "{c}");
        }
    }
    // The decision's quality cost is reweight's production drop of that arm (or the sweep's).
    let d = &a["decision"];
    if let Some(q) = d["quality_cost"].as_object() {
        let arm = q["arm"].as_str().unwrap();
        let expected = if q["on"] == "production" {
            a["reweight"]["arms"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["arm"] == arm)
                .unwrap()["drop_production"]
                .as_f64()
        } else {
            sweep_arm(arm)["drop"].as_f64()
        };
        assert_eq!(q["drop"].as_f64(), expected, "{q:?}");
    }
    // variance's cases needed are the decision's cases to settle (for the arms not settled on the
    // main set; an arm open on a slice only has no main-set figure in the decision).
    for o in d["inconclusive"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["reason"] == "the interval straddles the threshold")
    {
        let v = a["variance"]["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["arm"] == o["arm"])
            .unwrap();
        assert_eq!(v["cases_needed"], o["cases_to_settle"], "{o}");
    }
    // A cut the decision makes is never a budget arm the sweep calls needed, and a dollar
    // figure appears once priced: of the cut, or of the best candidate when nothing is cut.
    if d["tokens_saved"].is_null() {
        assert!(
            d["best_candidate"].is_null() || !d["candidate_cost_per_day"].is_null(),
            "{d}"
        );
    } else {
        assert!(!d["cost_saved_per_day"].is_null(), "{d}");
    }
    proposed
}

/// One user with 30 changed requests is one observation: with --cluster-by the fallback sign test
/// counts clusters.
#[test]
fn the_shadow_sign_test_counts_clusters() {
    let w = Workdir::empty();
    let mut log = String::from("request_id,variant,answer,turns,user\n");
    for i in 0..30 {
        for (variant, answer) in [("production", "a"), ("replay", "a"), ("candidate", "b")] {
            log.push_str(&format!("r{i},{variant},{answer},single,u1\n"));
        }
    }
    w.write("shadow.csv", &log);
    let v = json(
        ablate()
            .args([
                "shadow",
                "--json",
                "--quiet",
                "--by",
                "turns",
                "--cluster-by",
                "user",
            ])
            .arg(w.path("shadow.csv")),
    );
    let s = &v["by_stratum"][0];
    // One cluster up, none down: a sign test of 1 gives 0.5 (the requests counted gave 1.9e-6).
    assert!((s["p_holm"].as_f64().unwrap() - 0.5).abs() < 1e-9, "{s}");
    assert_eq!(s["flagged"], false);
}

/// The demo's report under the normal guarantee (its analysis.json), beside `verb`'s JSON under
/// the same guarantee.
fn normal_report_beside(verb: &str) -> (Value, Value) {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("report");
    json(
        ablate()
            .args(["report", "--json", "--quiet", "--bootstrap", "200"])
            .args(["--guarantee", "normal", "--out"])
            .arg(&out)
            .arg(demo()),
    );
    let a =
        serde_json::from_str(&std::fs::read_to_string(out.join("analysis.json")).unwrap()).unwrap();
    (a, run(verb, &demo(), &["--guarantee", "normal"]))
}

/// A verb's `arms` by their label.
fn arms_by_label(v: &Value) -> BTreeMap<&str, &Value> {
    v["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["arm"].as_str().unwrap(), x))
        .collect()
}

/// An arm confidently removable on the main set and held back by the stress slice has no
/// main-set figure to settle (`settleable` null, as `variance`'s undefined ones), and its reason
/// quotes the stress cases that would settle it: `stress`'s `stress_cases_to_settle`, which is
/// at least the slice's cases, and null for every arm the slice already settles.
#[test]
fn an_arm_held_back_by_the_stress_slice_says_what_settles_it_there() {
    let (a, stress) = normal_report_beside("stress");
    let stress_cases = stress["stress_cases"].as_u64().unwrap();
    let by_arm = arms_by_label(&stress);
    for x in by_arm.values() {
        if x["confidence_stress"] == "confident" {
            assert!(x["stress_cases_to_settle"].is_null(), "{x}");
        } else if let Some(n) = x["stress_cases_to_settle"].as_u64() {
            assert!(n >= stress_cases, "{x}");
        }
    }
    let held: Vec<&Value> = a["decision"]["inconclusive"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| {
            o["reason"]
                .as_str()
                .unwrap()
                .starts_with("removable on the main set; on the stress slice")
        })
        .collect();
    assert!(!held.is_empty(), "{}", a["decision"]);
    let mut quoted = 0;
    for o in held {
        assert!(
            o["settleable"].is_null() && o["cases_to_settle"].is_null(),
            "{o}"
        );
        let reason = o["reason"].as_str().unwrap();
        let there = &by_arm[o["arm"].as_str().unwrap()]["stress_cases_to_settle"];
        assert_eq!(&o["stress_cases_to_settle"], there, "{o}");
        if let Some(n) = there.as_u64() {
            let words = format!("~{} stress cases would settle it ", common::thousands(n));
            assert!(reason.contains(&words), "{reason} lacks {words}");
            quoted += 1;
        }
    }
    assert!(quoted > 0);
}

/// An arm held back by production says what would settle it there: `reweight`'s
/// `production_cases_to_settle` (main-set cases drawn as the set's were, at least the set's,
/// null where production already settles it), carried by the decision's arm and quoted in its
/// reason. On the demo under the normal guarantee, three arms are held back by both slices.
#[test]
fn an_arm_held_back_by_production_says_what_settles_it_there() {
    let (a, reweight) = normal_report_beside("reweight");
    let cases = reweight["cases"].as_u64().unwrap();
    let by_arm = arms_by_label(&reweight);
    for x in by_arm.values() {
        match x["production_cases_to_settle"].as_u64() {
            Some(n) => {
                assert!(n >= cases, "{x}");
                assert_eq!(x["production_settleable"], true, "{x}");
                assert_eq!(x["confidence_production"], "inconclusive", "{x}");
            }
            None if x["confidence_production"] == "confident" => {
                assert!(x["production_settleable"].is_null(), "{x}");
            }
            None => {}
        }
    }
    let mut quoted = 0;
    for kind in ["cut", "keep", "inconclusive"] {
        for o in a["decision"][kind].as_array().unwrap() {
            let reason = o["reason"].as_str().unwrap();
            let held = kind == "inconclusive"
                && reason.contains("under production weights it is not settled");
            let there = &by_arm[o["arm"].as_str().unwrap()]["production_cases_to_settle"];
            if !held {
                assert!(o["production_cases_to_settle"].is_null(), "{o}");
                continue;
            }
            assert_eq!(&o["production_cases_to_settle"], there, "{o}");
            if let Some(n) = there.as_u64() {
                // Which way: the arm's production point verdict.
                let way = match by_arm[o["arm"].as_str().unwrap()]["verdict_production"].as_str() {
                    Some("needed") => " as needed",
                    Some("removable-on-this-set") => " as removable",
                    _ => "",
                };
                let words = format!(
                    "~{} cases drawn as the set's were would settle it{way} in production, with 80% probability",
                    common::thousands(n)
                );
                assert!(reason.contains(&words), "{reason} lacks {words}");
                quoted += 1;
            }
        }
    }
    assert!(quoted > 0, "{}", a["decision"]);
}

/// The needed context fraction follows the main-set verdicts (SPEC), the decision every slice:
/// a unit removable on the set and confidently needed under production weights is kept by the
/// decision and counted as removable by the fraction, and the report's headline says so beside
/// the figure (it had shown "Keep: …" above a bare 0%).
#[test]
fn the_fraction_says_which_units_the_decision_keeps_for_a_slice() {
    let w = Workdir::tiny();
    let (mut cases, mut results) = (
        String::from("case_id,turns\n"),
        String::from("case_id,arm,repeat,score\n"),
    );
    // 6,000 cases, one in ten multi-turn; without-ex1 fails 3 multi-turn cases in 20, which
    // the main set (10% multi-turn) barely feels and production (70%) does.
    for i in 0..6000 {
        let multi = i % 10 == 0;
        cases.push_str(&format!(
            "c{i},{}\n",
            if multi { "multi" } else { "single" }
        ));
        for arm in ["baseline", "without-ex1", "without-examples"] {
            let lost = arm == "without-ex1" && multi && (i / 10) % 20 < 3;
            results.push_str(&format!("c{i},{arm},0,{}\n", u8::from(!lost)));
        }
    }
    w.write("cases.csv", &cases);
    w.write("results.csv", &results);
    w.write("mix.csv", "turns,share\nsingle,0.3\nmulti,0.7\n");
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("report");
    let a = analysis(&out, &w.dir);
    let kept: Vec<&str> = a["decision"]["keep"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["arm"].as_str().unwrap())
        .collect();
    assert_eq!(kept, ["without-ex1"], "{}", a["decision"]);
    assert_eq!(
        a["need"]["by_block"]["few_shot"]["value"], 0.0,
        "{}",
        a["need"]
    );
    let page = std::fs::read_to_string(out.join("report.md")).unwrap();
    let line = page
        .lines()
        .find(|l| l.starts_with("Needed context fraction"))
        .unwrap();
    assert!(
        line.contains("counts as removable unit few\\_shot/01, which the decision keeps"),
        "{line}"
    );
}
