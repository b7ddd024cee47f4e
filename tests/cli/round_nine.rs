//! The ninth round (2026-12-06): what the eighth round's review left open. A CSV ending in blank
//! lines (as editors leave them) read as rows of nulls; `watch` printed α = 1 − 0.95 as
//! 0.050000000000000044; `stress` and `shadow` left fields null without saying why.

use crate::common;

use common::{Workdir, ablate, codes, json};

/// The message of the warning with `code` in an output's JSON; fails the test when it is absent.
fn warning<'a>(v: &'a serde_json::Value, code: &str) -> &'a str {
    v["warnings"]
        .as_array()
        .and_then(|ws| ws.iter().find(|w| w["code"] == code))
        .and_then(|w| w["message"].as_str())
        .unwrap_or_else(|| panic!("no {code} warning in {v}"))
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
    let cases = std::fs::read_to_string(w.path("cases.csv")).unwrap();
    let mut lines = cases.lines();
    let mut out = format!("{},cluster\n", lines.next().unwrap());
    for line in lines {
        out.push_str(&format!("{line},u1\n"));
    }
    w.write("cases.csv", &out);
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
