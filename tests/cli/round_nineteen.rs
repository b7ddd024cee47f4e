//! The nineteenth review round (2026-12-08): what three reviewers found in the messages a user
//! meets first. Each test names what it protects.

use crate::common;

use common::{Workdir, ablate, assert_mentions, demo, fails};

/// `--threshold-drop` given to a verb that reads the threshold from experiment.toml (or
/// mistyped): clap's tip said to pass it as a value after `--`; the tip now says where the
/// threshold lives.
#[test]
fn a_threshold_flag_on_a_verb_says_where_the_threshold_lives() {
    for (verb, flag, key) in [
        ("sweep", "--threshold-drop", "(threshold_drop = "),
        ("sweep", "--treshold", "(threshold_drop = "),
        (
            "stress",
            "--stress-threshold-drop",
            "(stress_threshold_drop = ",
        ),
        ("curve", "--quality-threshold", "(quality_threshold = "),
    ] {
        let err = fails(ablate().arg(verb).arg(demo()).args([flag, "0.01"]));
        assert_mentions(&err, &[flag, "experiment.toml", key]);
        assert!(!err.contains("-- --"), "{err}");
    }
    // Another unknown flag keeps clap's own message, `--threads` too; and `import`, which takes
    // --threshold-drop, keeps clap's "a similar argument exists".
    for flag in ["--bogus", "--threads"] {
        let err = fails(ablate().arg("sweep").arg(demo()).args([flag, "1"]));
        assert_mentions(&err, &[flag]);
        assert!(!err.contains("experiment.toml"), "{err}");
    }
    let err = fails(ablate().args(["import", "promptfoo", "x", "--treshold-drop", "0.1"]));
    assert_mentions(&err, &["a similar argument exists", "--threshold-drop"]);
    assert!(!err.contains("experiment.toml"), "{err}");
}

/// `--by` naming a column the cases lack lists the columns it could name.
#[test]
fn a_stratum_column_the_cases_lack_lists_the_ones_they_have() {
    let err = fails(ablate().arg("reweight").arg(demo()).args(["--by", "tunrs"]));
    assert_mentions(&err, &["tunrs", "slice, turns"]);
}

/// A CSV score of `nan` or `Infinity` (what Python writes for a float NaN or infinity) is named
/// by row and value; it had been "column score is text" with no row.
#[test]
fn a_csv_score_of_nan_or_infinity_is_named_by_row() {
    for bad in ["nan", "Infinity", "-inf"] {
        let w = Workdir::empty();
        w.write("experiment.toml", "set = \"n\"\nthreshold_drop = 0.05\n");
        w.write("cases.csv", "case_id\nc1\nc2\n");
        w.write(
            "results.csv",
            &format!("case_id,arm,repeat,score\nc1,baseline,0,1\nc2,baseline,0,{bad}\nc1,a,0,1\nc2,a,0,0\n"),
        );
        let err = fails(ablate().arg("check").arg(&w.dir));
        assert_mentions(&err, &["score", "row 2", bad, "finite"]);
    }
}

/// Raked on two margins, a crossed cell whose drops do not vary is left out of the degrees of
/// freedom; only where production weighs it beyond twice its share of the set is the arm judged
/// for any score distribution (`reweight.thin_cell`): a review's world had a 4%-of-set cell at
/// 36% of production, its cases all dropping 0 while its true drop was 0.25, make a needed arm
/// confidently removable in 20% of experiments, and a first mend that fell back on every quiet
/// cell took 32 of the demo's 41 arms there.
#[test]
fn raking_falls_back_only_on_a_quiet_cell_production_weighs_up() {
    let run = |heavy_share: f64| {
        let w = Workdir::empty();
        w.write(
            "experiment.toml",
            "set = \"r\"\nthreshold_drop = 0.06\nstrata = [\"A\", \"B\"]\n[[blocks]]\nname = \"b\"\nneed = \"needed_units\"\n",
        );
        w.write("units.csv", "unit,block,tokens\nu1,b,100\n");
        w.write("arms.csv", "arm,removed\nbaseline,\narm1,u1\n");
        // 200 cases: (a1, b1) has 8, all dropping 0; the others lose 1 point in 1 case of 12.
        let mut cases = String::from("case_id,A,B\n");
        let mut results = String::from("case_id,arm,repeat,score\n");
        for i in 0..200 {
            let (a, b) = match i {
                0..8 => ("a1", "b1"),
                8..40 => ("a1", "b0"),
                40..72 => ("a0", "b1"),
                _ => ("a0", "b0"),
            };
            let drop = if i >= 8 && i % 12 == 0 { 1.0 } else { 0.0 };
            cases.push_str(&format!("c{i:03},{a},{b}\n"));
            results.push_str(&format!(
                "c{i:03},baseline,0,1\nc{i:03},arm1,0,{}\n",
                1.0 - drop
            ));
        }
        w.write("cases.csv", &cases);
        w.write("results.csv", &results);
        // Margins whose crossing puts about heavy_share² on (a1, b1) (4% of the set).
        let s = heavy_share;
        w.write("mixA.csv", &format!("A,share\na1,{s}\na0,{}\n", 1.0 - s));
        w.write("mixB.csv", &format!("B,share\nb1,{s}\nb0,{}\n", 1.0 - s));
        let reweight = |guarantee: &str| {
            common::json(
                ablate()
                    .args(["reweight", "--json", "--quiet", "--guarantee", guarantee])
                    .arg(&w.dir)
                    .arg("--mix")
                    .arg(w.dir.join("mixA.csv"))
                    .arg("--mix")
                    .arg(w.dir.join("mixB.csv")),
            )
        };
        (reweight("normal"), reweight("any-distribution"))
    };
    // Weighed up (about 36% of production against 4% of the set): judged for any distribution.
    let (normal, any) = run(0.6);
    assert!(common::has_code(&normal, "reweight.thin_cell"), "{normal}");
    for key in ["ci_production_family_low", "ci_production_family_high"] {
        assert_eq!(normal["arms"][0][key], any["arms"][0][key], "{key}");
    }
    // Weighed down (about 1% of production): the quiet cell leaves the df, and the normal
    // guarantee judges.
    let (normal, any) = run(0.1);
    assert!(!common::has_code(&normal, "reweight.thin_cell"), "{normal}");
    assert_ne!(
        normal["arms"][0]["ci_production_family_high"],
        any["arms"][0]["ci_production_family_high"]
    );
}
