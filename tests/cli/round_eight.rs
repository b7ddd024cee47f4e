//! The eighth round's review (2026-12-06), an attack by running the binary on mutated copies of
//! the demo: settings TOML read into a block, a pilot without spread planned as "0 cases", token
//! counts past 10¹² overflowing to a false sentence, a mix column summed away, an empty Parquet
//! results table blamed on the baseline, `simulate --arms 1`, and bootstrap advice the cap
//! refuses.

use crate::common;

use common::{Workdir, ablate, assert_mentions, fails, has_code, json};

/// Sets every score of the tiny fixture's results (its last column) to `score`.
fn every_score(w: &Workdir, score: &str) {
    let results = std::fs::read_to_string(w.path("results.csv")).unwrap();
    let mut lines = results.lines();
    let mut out = format!("{}\n", lines.next().unwrap());
    for line in lines {
        out.push_str(&format!("{},{score}\n", line.rsplit_once(',').unwrap().0));
    }
    w.write("results.csv", &out);
}

/// Keys written after a `[[blocks]]` header are that block's in TOML: a setting of the whole
/// experiment there had left the stress threshold at its default without a word.
#[test]
fn a_setting_below_a_block_header_is_refused_by_name() {
    let w = Workdir::tiny();
    let toml = std::fs::read_to_string(w.path("experiment.toml")).unwrap();
    w.write(
        "experiment.toml",
        &format!("{toml}\nstress_threshold_drop = 0.02\n"),
    );
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(
        &err,
        &[
            "blocks[0].stress_threshold_drop",
            "above the first [[blocks]]",
        ],
    );

    // Another key there is unknown to a block, and warned about by its place.
    w.write("experiment.toml", &format!("{toml}\ncolour = \"red\"\n"));
    let v = json(ablate().args(["--json", "check"]).arg(&w.dir));
    assert!(
        v["warnings"].to_string().contains("blocks[0].colour"),
        "{}",
        v["warnings"]
    );
}

/// A pilot whose scores never vary has no sd to plan from: the detectable drop and the cases
/// needed are undefined, with a warning (the plan had promised "needs 0 cases").
#[test]
fn a_pilot_without_spread_plans_no_number() {
    let w = Workdir::tiny();
    every_score(&w, "1");
    let v = json(
        ablate()
            .args(["--json", "plan", "--design", "loo", "--units"])
            .arg(w.path("units.csv"))
            .arg("--pilot")
            .arg(&w.dir),
    );
    assert!(v["sd"].is_null(), "{}", v["sd"]);
    assert!(v["mde"].is_null(), "{}", v["mde"]);
    assert!(v["cases_to_detect"].is_null(), "{}", v["cases_to_detect"]);
    assert!(has_code(&v, "plan.no_spread"), "{v}");
}

/// Token counts above 10¹² are refused in every table, as in the logs: in `units` they had
/// overflowed a sum to infinity, and `need` said the tokens "sum to 0".
#[test]
fn token_counts_past_a_trillion_are_refused_by_row() {
    let w = Workdir::tiny();
    w.edit("units.csv", "system,system,900", "system,system,1.7e308");
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(&err, &["units.csv", "tokens", "10^12"]);

    let w = Workdir::tiny();
    let results = std::fs::read_to_string(w.path("results.csv")).unwrap();
    let with_tokens: String = results
        .lines()
        .enumerate()
        .map(|(i, line)| match i {
            0 => format!("{line},tokens_in\n"),
            3 => format!("{line},2000000000000\n"),
            _ => format!("{line},1000\n"),
        })
        .collect();
    w.write("results.csv", &with_tokens);
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(
        &err,
        &["results.csv", "tokens_in", "2000000000000", "10^12"],
    );
}

/// A mix column the strata leave out had been summed over without a word (a mix saying
/// production is all `billing` weighted by `turns` alone); naming the columns with --by keeps
/// doing it on purpose.
#[test]
fn a_mix_column_the_strata_leave_out_is_refused_unless_by_names_them() {
    let w = Workdir::tiny();
    w.write(
        "mix.csv",
        "turns,slice,share\nsingle,billing,0.77\nmulti,billing,0.23\n",
    );
    let err = fails(ablate().arg("reweight").arg(&w.dir));
    assert_mentions(&err, &["mix.csv", "`slice`", "strata", "--by turns"]);
    let v = json(
        ablate()
            .args(["--json", "reweight", "--by", "turns"])
            .arg(&w.dir),
    );
    assert_eq!(v["strata"], serde_json::json!(["turns"]), "{v}");
}

/// A Parquet results table with its columns and no rows says so, as a header-only CSV does (it
/// had been blamed on `baseline_arm`).
#[test]
fn an_empty_parquet_results_table_is_said_to_be_empty() {
    use polars::prelude::*;
    let w = Workdir::tiny();
    let mut df = df!(
        "case_id" => Vec::<String>::new(),
        "arm" => Vec::<String>::new(),
        "repeat" => Vec::<i64>::new(),
        "score" => Vec::<f64>::new(),
    )
    .unwrap();
    std::fs::remove_file(w.path("results.csv")).unwrap();
    let mut file = std::fs::File::create(w.path("results.parquet")).unwrap();
    ParquetWriter::new(&mut file).finish(&mut df).unwrap();
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(&err, &["results.parquet", "no rows"]);
    assert!(!err.contains("baseline_arm"), "{err}");
}

/// `simulate --arms 1` had written an experiment every verb refuses.
#[test]
fn simulate_refuses_fewer_than_two_arms() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("sim");
    let err = fails(
        ablate()
            .args(["simulate", "--arms", "1", "--cases", "20", "--out"])
            .arg(&out),
    );
    assert_mentions(&err, &["--arms 1", "--arms 2 or more"]);
    assert!(!out.exists());
}

/// A confidence past what 10⁶ resamples can give is said as such, not answered with a
/// `--bootstrap` the cap refuses; its label never reads "100%".
#[test]
fn a_confidence_beyond_the_resample_cap_suggests_what_works() {
    let err = fails(ablate().args([
        "curve",
        "--confidence",
        "0.9999999999",
        "--bootstrap",
        "200",
        common::demo().to_str().unwrap(),
    ]));
    assert_mentions(&err, &["--confidence", "--bootstrap 0", "1000000"]);
    assert!(!err.contains("Use --bootstrap 99999991726"), "{err}");
}

/// Every case scored alike: the se is undefined (null, with a warning), not a measured 0 beside
/// a zero-width interval.
#[test]
fn no_spread_gives_a_null_se_with_a_warning_not_a_zero() {
    let w = Workdir::tiny();
    every_score(&w, "0.7");
    let v = json(ablate().args(["--json", "sweep"]).arg(&w.dir));
    assert!(v["baseline"]["se"].is_null(), "{}", v["baseline"]);
    assert!(has_code(&v, "sweep.baseline_no_spread"), "{v}");
    // Production is all `single`: its two cases are the weighted ones.
    w.write("mix.csv", "turns,share\nsingle,1.0\n");
    let v = json(ablate().args(["--json", "reweight"]).arg(&w.dir));
    assert!(
        v["baseline"]["se_production"].is_null(),
        "{}",
        v["baseline"]
    );
    assert!(v["arms"][0]["se_production"].is_null(), "{}", v["arms"][0]);
    assert!(has_code(&v, "reweight.no_spread"), "{v}");
}

/// `check` refuses what the verbs that weight production would: a null stratum value in the
/// cases, and `strata = []` (it had said "ok", then `reweight`, `need`, `record` and `report`
/// refused, the last naming a column ``).
#[test]
fn check_refuses_what_reweighting_would() {
    let w = Workdir::tiny();
    w.edit("cases.csv", "c2,billing,multi,", "c2,billing,,");
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(&err, &["turns", "null"]);

    let w = Workdir::tiny();
    w.edit("experiment.toml", "strata = [\"turns\"]", "strata = []");
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(&err, &["strata = []", "remove the key"]);
}

/// A mix `share` cell that is not a number is named by its row (the column had been taken for a
/// stratum: "is text, expected text"), and a stratum written as numbers is said to be one of the
/// wrong type, not a missing column.
#[test]
fn mix_cells_and_columns_of_the_wrong_type_are_named() {
    let w = Workdir::tiny();
    w.write("mix.csv", "turns,share\nsingle,most\nmulti,0.23\n");
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(&err, &["mix.csv", "share", "most", "row 1"]);
    assert!(!err.contains("expected text"), "{err}");

    let w = Workdir::tiny();
    w.write("mix.csv", "turns,share\n1,0.77\n2,0.23\n");
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(&err, &["mix.csv", "`turns`", "text"]);
    assert!(!err.contains("missing"), "{err}");
}

/// Blank ids (a blank label in every table and chart) are refused; scores outside [0, 1] with no
/// declared range get a warning from `check`, since `watch` and `next` refuse the folder.
#[test]
fn blank_ids_are_refused_and_scores_past_the_default_range_warned() {
    let w = Workdir::tiny();
    w.edit("units.csv", "system,system,900", "\"  \",system,900");
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(&err, &["units.csv", "unit", "empty or only spaces"]);

    let w = Workdir::tiny();
    every_score(&w, "1.5");
    let v = json(ablate().args(["--json", "check"]).arg(&w.dir));
    assert!(has_code(&v, "check.scores_outside_default_range"), "{v}");
}

/// One repeat per case leaves the repeat noise unknown: the nulls come with a warning.
#[test]
fn one_repeat_says_why_the_repeat_noise_is_null() {
    let w = Workdir::tiny();
    let results = std::fs::read_to_string(w.path("results.csv")).unwrap();
    let first_repeats: String = results
        .lines()
        .filter(|line| !line.contains(",1,"))
        .map(|line| format!("{line}\n"))
        .collect();
    w.write("results.csv", &first_repeats);
    let v = json(ablate().args(["--json", "variance"]).arg(&w.dir));
    assert!(
        v["arms"][1]["within_case_var"].is_null(),
        "{}",
        v["arms"][1]
    );
    assert!(has_code(&v, "variance.one_repeat"), "{v}");
}

/// A CSV row with an extra field is named by its line (Polars' message named none and advised
/// an option of its own).
#[test]
fn a_ragged_csv_row_is_named_by_its_line() {
    let w = Workdir::tiny();
    w.edit(
        "results.csv",
        "c1,baseline,1,1\n",
        "c1,baseline,1,1,extra\n",
    );
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(&err, &["results.csv", "line 3", "5 fields", "header has 4"]);
    assert!(!err.contains("truncate_ragged_lines"), "{err}");
}
