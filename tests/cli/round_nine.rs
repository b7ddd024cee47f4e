//! The ninth round (2026-12-06): what the eighth round's review left open. A CSV ending in blank
//! lines (as editors leave them) read as rows of nulls; `watch` printed α = 1 − 0.95 as
//! 0.050000000000000044; `stress` and `shadow` left fields null without saying why; a threshold
//! below 10⁻⁴ printed as `5e-5` in some places and `0.00005` in others.

use crate::common;

use common::{Workdir, ablate, codes, fails, json};

/// The message of the warning with `code` in an output's JSON; fails the test when it is absent.
fn warning<'a>(v: &'a serde_json::Value, code: &str) -> &'a str {
    v["warnings"]
        .as_array()
        .and_then(|ws| ws.iter().find(|w| w["code"] == code))
        .and_then(|w| w["message"].as_str())
        .unwrap_or_else(|| panic!("no {code} warning in {v}"))
}

/// Puts every case of the tiny fixture in one cluster, `u1`.
fn all_in_one_cluster(w: &Workdir) {
    let cases = std::fs::read_to_string(w.path("cases.csv")).unwrap();
    let mut lines = cases.lines();
    let mut out = format!("{},cluster\n", lines.next().unwrap());
    for line in lines {
        out.push_str(&format!("{line},u1\n"));
    }
    w.write("cases.csv", &out);
}

/// Blank lines at the end of a CSV are not rows: every table reads as it did without them.
#[test]
fn csv_tables_ending_in_blank_lines_read_as_without_them() {
    let w = Workdir::tiny();
    let before = json(
        ablate()
            .args(["--json", "sweep", "--bootstrap", "0"])
            .arg(&w.dir),
    );
    for name in [
        "results.csv",
        "cases.csv",
        "units.csv",
        "arms.csv",
        "mix.csv",
    ] {
        let text = std::fs::read_to_string(w.path(name)).unwrap();
        w.write(name, &format!("{text}\n\r\n\n"));
    }
    ablate().arg("check").arg(&w.dir).assert().success();
    let after = json(
        ablate()
            .args(["--json", "sweep", "--bootstrap", "0"])
            .arg(&w.dir),
    );
    assert_eq!(before, after);
}

/// `alpha` in `watch --json` is the decimal the confidence was written as.
#[test]
fn watch_reports_alpha_as_the_decimal_asked_for() {
    let w = Workdir::tiny();
    let v = json(ablate().args(["--json", "watch"]).arg(&w.dir));
    assert_eq!(v["alpha"], serde_json::json!(0.05), "{}", v["alpha"]);
}

/// `stress` says why its fields are null or never confident: the tiny fixture has one stress
/// case, so no arm's stress drop has spread and none has 10 units; without a stress case, that
/// there is none.
#[test]
fn stress_says_why_its_fields_are_null() {
    let w = Workdir::tiny();
    let v = json(ablate().args(["--json", "stress"]).arg(&w.dir));
    let got = codes(&v);
    for code in ["stress.no_spread", "stress.too_few_units"] {
        assert!(got.iter().any(|c| c == code), "{code} missing from {got:?}");
    }
    assert!(v["arms"][0]["se_stress"].is_null());

    w.edit(
        "cases.csv",
        "s1,refunds,multi,1,true",
        "s1,refunds,multi,1,false",
    );
    let v = json(ablate().args(["--json", "stress"]).arg(&w.dir));
    assert!(
        codes(&v).iter().any(|c| c == "stress.no_stress_cases"),
        "{v}"
    );
}

/// `shadow` with a single request has no spread in the excess rate: its se is null, and the
/// warning says so rather than leaving a bare null.
#[test]
fn shadow_says_why_a_single_request_has_no_se() {
    let w = Workdir::tiny();
    w.write(
        "shadow.csv",
        "request_id,variant,answer,turns\nr1,production,a,single\nr1,replay,a,single\nr1,candidate,b,single\n",
    );
    let v = json(
        ablate()
            .args(["--json", "shadow", "--by", "turns"])
            .arg(w.path("shadow.csv")),
    );
    assert!(v["se"].is_null(), "{v}");
    let message = warning(&v, "shadow.no_spread");
    assert!(
        message.contains("the excess rate") && message.contains("turns=single"),
        "{message}"
    );
}

/// `reweight` on cases that are all one cluster: every production se is null, and the warning
/// says why.
#[test]
fn reweight_says_one_cluster_leaves_every_se_null() {
    let w = Workdir::tiny();
    all_in_one_cluster(&w);
    let v = json(ablate().args(["--json", "reweight"]).arg(&w.dir));
    assert!(v["baseline"]["se_production"].is_null(), "{v}");
    assert!(codes(&v).iter().any(|c| c == "reweight.one_cluster"), "{v}");
}

/// Reranker scores on a 0–100 scale leave the replay's thresholds (0 to 1) keeping every
/// passage; `selector` says so and how to rescale.
#[test]
fn selector_warns_when_reranker_scores_leave_the_threshold_range() {
    let w = Workdir::demo_copy();
    let v = json(ablate().args(["--json", "selector"]).arg(&w.dir));
    assert!(
        !codes(&v)
            .iter()
            .any(|c| c == "selector.scores_outside_grid"),
        "{v}"
    );
    rescale_passage_scores(&w, 100.0);
    let v = json(ablate().args(["--json", "selector"]).arg(&w.dir));
    let warning = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "selector.scores_outside_grid")
        .unwrap_or_else(|| panic!("no selector.scores_outside_grid in {v}"));
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .contains("divide by 100")
    );
}

/// Multiplies every reranker score of a demo copy's passages table by `factor`.
fn rescale_passage_scores(w: &Workdir, factor: f64) {
    use polars::prelude::*;
    let path = w.path("passages.parquet");
    let mut df = ParquetReader::new(std::fs::File::open(&path).unwrap())
        .finish()
        .unwrap();
    let scaled = df.column("score").unwrap().f64().unwrap() * factor;
    df.with_column(scaled.into_series().with_name("score".into()).into())
        .unwrap();
    ParquetWriter::new(std::fs::File::create(&path).unwrap())
        .finish(&mut df)
        .unwrap();
}

/// `budget_ratio` is the share of the baseline's context an arm keeps (the baseline is 1.0): a
/// ratio above 1 is refused by row instead of drawn as a budget beyond the full prompt.
#[test]
fn a_budget_ratio_above_one_is_refused() {
    let w = Workdir::tiny();
    let arms = std::fs::read_to_string(w.path("arms.csv")).unwrap();
    let mut lines = arms.lines();
    let mut out = format!("{},budget_ratio\n", lines.next().unwrap());
    for (i, line) in lines.enumerate() {
        out.push_str(&format!("{line},{}\n", if i == 1 { "1.5" } else { "" }));
    }
    w.write("arms.csv", &out);
    let err = common::check_fails(&w.dir);
    common::assert_mentions(
        &err,
        &["arms.csv", "budget_ratio", "row 2", "1.5", "from 0 to 1"],
    );
}

/// A CSV saved with semicolons (a spreadsheet in a decimal-comma locale) reads as one column:
/// said as a separator to change, not as a missing column beside one named `unit;block;tokens`.
#[test]
fn a_csv_with_another_separator_is_named_as_such() {
    let w = Workdir::tiny();
    let units = std::fs::read_to_string(w.path("units.csv")).unwrap();
    w.write("units.csv", &units.replace(',', ";"));
    let err = common::check_fails(&w.dir);
    common::assert_mentions(
        &err,
        &["units.csv", "one column", "semicolons", "comma-separated"],
    );
}

/// A header that is right but for capitals or spaces is named, with the rename to make.
#[test]
fn a_column_named_but_for_capitals_or_spaces_is_pointed_out() {
    let w = Workdir::tiny();
    let cases = std::fs::read_to_string(w.path("cases.csv")).unwrap();
    w.write("cases.csv", &cases.replacen("case_id", "Case_ID ", 1));
    let err = common::check_fails(&w.dir);
    common::assert_mentions(
        &err,
        &[
            "cases.csv",
            "`Case_ID `",
            "only in capitals or spaces",
            "rename it to `case_id`",
        ],
    );
}

/// An inconclusive arm whose drops have no spread (here 0 on each of 20 cases: the exact bound,
/// ±0.17, straddles 0.05) has no se to plan from. The decision says the cases cannot be
/// estimated, not that they are "beyond 100 times the set": the exact bound narrows with more
/// cases.
#[test]
fn a_no_spread_arm_is_not_called_beyond_reach() {
    let w = Workdir::tiny();
    let mut cases = String::from("case_id,turns\n");
    let mut results = String::from("case_id,arm,repeat,score\n");
    for i in 0..20 {
        cases.push_str(&format!("c{i},single\n"));
        for arm in ["baseline", "without-ex1"] {
            results.push_str(&format!("c{i},{arm},0,1\n"));
        }
    }
    w.write("cases.csv", &cases);
    w.write("results.csv", &results);
    w.write(
        "arms.csv",
        "arm,removed\nbaseline,\nwithout-ex1,few_shot/01\n",
    );
    w.write("mix.csv", "turns,share\nsingle,1\n");
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("report");
    common::report_into(&out, &w.dir);
    let v = common::analysis_json(&out);
    let arm = &v["decision"]["inconclusive"][0];
    assert_eq!(arm["arm"], "without-ex1", "{}", v["decision"]);
    assert!(arm["cases_to_settle"].is_null());
    // Undefined, as variance's: neither a figure nor beyond reach.
    assert!(arm["settleable"].is_null(), "{arm}");
    assert!(
        arm["reason"]
            .as_str()
            .unwrap()
            .contains("cannot be estimated"),
        "{arm}"
    );
}

/// One repeat per case leaves churn null, and one cluster leaves every se null: `sweep` says
/// so in its warnings rather than leaving bare nulls.
#[test]
fn sweep_says_why_churn_and_the_se_are_null() {
    let w = Workdir::tiny();
    let results = std::fs::read_to_string(w.path("results.csv")).unwrap();
    let once: String = results
        .lines()
        .filter(|l| !l.contains(",1,") || l.starts_with("case_id"))
        .map(|l| format!("{l}\n"))
        .collect();
    w.write("results.csv", &once);
    let v = json(ablate().args(["--json", "sweep"]).arg(&w.dir));
    assert!(v["churn_baseline"].is_null(), "{v}");
    assert!(warning(&v, "sweep.one_repeat").contains("the baseline"));

    all_in_one_cluster(&w);
    let v = json(ablate().args(["--json", "sweep"]).arg(&w.dir));
    assert!(warning(&v, "sweep.one_unit").contains("one cluster"));
}

/// A designed experiment whose effects are the same on every case: their se is null with
/// `interactions.design_no_spread`, not a measured 0.0.
#[test]
fn a_design_effect_without_spread_has_no_se() {
    let w = Workdir::tiny();
    w.write(
        "arms.csv",
        "arm,removed,design\nbaseline,,d\nwithout-ex1,few_shot/01,d\nwithout-examples,few_shot/01;few_shot/02,d\n",
    );
    let results = std::fs::read_to_string(w.path("results.csv")).unwrap();
    let mut lines = results.lines();
    let mut out = format!("{}\n", lines.next().unwrap());
    for line in lines {
        let (head, _) = line.rsplit_once(',').unwrap();
        let score = if head.contains("without-examples") {
            0
        } else {
            1
        };
        out.push_str(&format!("{head},{score}\n"));
    }
    w.write("results.csv", &out);
    let v = json(ablate().args(["--json", "interactions"]).arg(&w.dir));
    let effects = &v["designs"][0]["main_effects"];
    assert_eq!(effects.as_array().unwrap().len(), 2, "{v}");
    assert!(
        effects[0]["se"].is_null() && effects[1]["se"].is_null(),
        "{effects}"
    );
    assert!(warning(&v, "interactions.design_no_spread").contains("design \"d\""));
}

/// Without gold labels the oracle saving is unknown: null with `selector.no_gold`, not a saving
/// of 0 tokens (0%).
#[test]
fn selector_without_gold_labels_says_the_oracle_is_unknown() {
    let w = Workdir::tiny();
    let cases = std::fs::read_to_string(w.path("cases.csv")).unwrap();
    let no_gold: String = cases
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            format!("{},{},{},{}\n", f[0], f[1], f[2], f[4])
        })
        .collect();
    w.write("cases.csv", &no_gold);
    w.write(
        "passages.csv",
        "case_id,rank,tokens,score\nc1,1,100,0.9\nc1,2,100,0.2\nc2,1,100,0.8\n",
    );
    let v = json(ablate().args(["--json", "selector"]).arg(&w.dir));
    assert!(v["oracle_saving_mean"].is_null(), "{v}");
    assert!(warning(&v, "selector.no_gold").contains("undefined"));
    let text = common::succeeds(ablate().arg("selector").arg(&w.dir));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("oracle saving unknown"), "{text}");
}

/// The tiny fixture's baseline passes every case on every repeat: rho (its correlation with
/// each arm) and its repeat-noise share are undefined, and each output says so.
#[test]
fn a_constant_baseline_leaves_rho_and_the_noise_share_null_with_a_reason() {
    let w = Workdir::tiny();
    let v = json(ablate().args(["--json", "sweep"]).arg(&w.dir));
    assert!(v["arms"][0]["rho"].is_null(), "{v}");
    assert!(warning(&v, "sweep.rho_undefined").contains("without-ex1"));
    let v = json(ablate().args(["--json", "variance"]).arg(&w.dir));
    assert!(warning(&v, "variance.no_case_spread").contains("baseline"));
}

/// An arm never run on the stress slice has null stress fields: `stress` names it.
#[test]
fn stress_names_an_arm_never_run_on_the_slice() {
    let w = Workdir::tiny();
    let results = std::fs::read_to_string(w.path("results.csv")).unwrap();
    let kept: String = results
        .lines()
        .filter(|l| !l.starts_with("s1,without-ex1,"))
        .map(|l| format!("{l}\n"))
        .collect();
    w.write("results.csv", &kept);
    let v = json(ablate().args(["--json", "stress"]).arg(&w.dir));
    assert!(warning(&v, "stress.arm_without_stress_results").contains("without-ex1"));
}

/// Pricing of 0 has no cost to save (the saving's percentage is 0/0): refused. Priced, but with
/// nothing to price, the cost is null with `curve.no_cost`.
#[test]
fn curve_pricing_is_positive_and_a_missing_cost_is_said() {
    let w = Workdir::tiny();
    let err = fails(
        ablate()
            .args(["curve", "--price-per-mtok", "0", "--requests-per-day", "10"])
            .arg(&w.dir),
    );
    common::assert_mentions(&err, &["--price-per-mtok 0", "above 0"]);
    let v = json(
        ablate()
            .args([
                "--json",
                "curve",
                "--price-per-mtok",
                "3",
                "--requests-per-day",
                "10",
            ])
            .arg(&w.dir),
    );
    assert!(v["cost"].is_null(), "{v}");
    assert!(warning(&v, "curve.no_cost").contains("undefined"));
}

/// A block whose units are all 0 tokens has no needed fraction: `need` says which.
#[test]
fn need_names_a_block_of_no_tokens() {
    let w = Workdir::tiny();
    w.write(
        "units.csv",
        "unit,block,tokens\nsystem,system,900\nfew_shot/01,few_shot,0\nfew_shot/02,few_shot,0\n",
    );
    let v = json(ablate().args(["--json", "need"]).arg(&w.dir));
    assert!(v["by_block"]["few_shot"]["value"].is_null(), "{v}");
    assert!(warning(&v, "need.block_no_tokens").contains("few_shot"));
}

/// The decision record carries the warnings behind its figures (here the sweep's: too few cases
/// to decide), in its JSON and as the `warnings` table of `--export`.
#[test]
fn the_record_carries_its_upstream_warnings() {
    let w = Workdir::tiny();
    let v = json(ablate().args(["--json", "record"]).arg(&w.dir));
    assert!(warning(&v, "sweep.too_few_units").contains("too few"));
    let root = tempfile::tempdir().unwrap();
    let export = root.path().join("tables");
    common::succeeds(
        ablate()
            .args(["record", "--export"])
            .arg(&export)
            .arg(&w.dir),
    );
    let names: Vec<String> = std::fs::read_dir(&export)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().any(|n| n.contains("warnings")), "{names:?}");
}

/// An arm with one paired case in a weighted stratum (its other case there lacks results) has
/// no production se: `reweight` names it, apart from the baseline's coverage.
#[test]
fn reweight_names_an_arm_with_one_case_in_a_stratum() {
    let w = Workdir::tiny();
    w.write(
        "cases.csv",
        "case_id,slice,turns,gold_rank,stress\nc1,billing,single,1,false\nc2,billing,multi,2,false\nc3,refunds,single,,false\nc4,billing,multi,1,false\n",
    );
    let mut results = String::from("case_id,arm,repeat,score\n");
    for (case, base) in [
        ("c1", [1, 1]),
        ("c2", [1, 0]),
        ("c3", [0, 1]),
        ("c4", [1, 1]),
    ] {
        for (r, b) in base.iter().enumerate() {
            results.push_str(&format!("{case},baseline,{r},{b}\n"));
            results.push_str(&format!("{case},without-examples,{r},0\n"));
            if case != "c2" {
                results.push_str(&format!("{case},without-ex1,{r},{b}\n"));
            }
        }
    }
    w.write("results.csv", &results);
    let v = json(ablate().args(["--json", "reweight"]).arg(&w.dir));
    assert!(v["baseline"]["se_production"].is_number(), "{v}");
    assert!(warning(&v, "reweight.arm_single_case_stratum").contains("without-ex1"));
}

/// In a policy replay where no call fits, the admitted and saved tokens are undefined: null with
/// `context.no_call_fits`, not "admit 0 tokens on average, saving 0".
#[test]
fn a_policy_replay_where_no_call_fits_says_so() {
    let w = Workdir::empty();
    w.write(
        "context_log.csv",
        "request_id,step,source,tokens,mandatory,model_limit,expected_output\nr1,1,system,5000,true,3000,500\n",
    );
    w.write("policy.toml", "[budgets]\nretrieval = 500\n");
    let v = json(
        ablate()
            .args(["context", "--json", "--policy"])
            .arg(w.path("policy.toml"))
            .arg(w.path("context_log.csv")),
    );
    assert_eq!(v["policy"]["overflow_count"], 1, "{v}");
    assert!(v["policy"]["admitted_mean"].is_null());
    assert!(warning(&v, "context.no_call_fits").contains("undefined"));
}

/// A threshold below 10⁻⁴ reads the same wherever a page or a terminal prints it: `5e-5`, as
/// `check` and the errors print it (`float_text`), not `0.00005` in some places.
#[test]
fn a_small_threshold_reads_the_same_everywhere() {
    let w = Workdir::demo_copy();
    w.edit(
        "experiment.toml",
        "threshold_drop = 0.005",
        "threshold_drop = 0.00005",
    );
    w.edit(
        "experiment.toml",
        "stress_threshold_drop = 0.005",
        "stress_threshold_drop = 0.00005",
    );
    let human = |verb: &str| {
        let out = common::succeeds(ablate().args([verb, "--bootstrap", "200"]).arg(&w.dir));
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let sweep = human("sweep");
    assert!(sweep.contains("threshold_drop 5e-5"), "{sweep}");
    let stress = human("stress");
    assert!(stress.contains("(threshold 5e-5)"), "{stress}");
    let out = w.root.path().join("report");
    common::report_into(&out, &w.dir);
    let md = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    // Markdown escapes the underscore.
    assert!(md.contains("threshold\\_drop 5e-5"), "{md}");
    assert!(md.contains("(5e-5 main, 5e-5 stress;"), "{md}");
    // The forest chart's legend too (it had the axis's rounding, 0.0001).
    let svg = std::fs::read_to_string(out.join("charts/drops.svg")).expect("drops.svg");
    assert!(svg.contains("threshold 5e-5"), "{svg}");
    for text in [&sweep, &stress, &md] {
        assert!(!text.contains("threshold_drop 0.00005"));
        assert!(!text.contains("threshold\\_drop 0.00005"));
        assert!(!text.contains("threshold 0.00005"));
        assert!(!text.contains("threshold of 0.00005"));
    }
}
