//! The nineteenth review round (2026-12-08): what three reviewers found in the messages a user
//! meets first. Each test names what it protects.

use crate::common;

use common::{Workdir, ablate, assert_mentions, demo, fails};

/// `--threshold-drop` given to a verb that reads the threshold from experiment.toml (or
/// mistyped): clap's tip said to pass it as a value after `--`; the tip now says where the
/// threshold lives.
#[test]
fn a_threshold_flag_on_a_verb_says_where_the_threshold_lives() {
    for flag in ["--threshold-drop", "--treshold"] {
        let err = fails(ablate().arg("sweep").arg(demo()).args([flag, "0.01"]));
        assert_mentions(&err, &[flag, "experiment.toml", "threshold_drop = "]);
        assert!(!err.contains("-- --"), "{err}");
    }
    // Another unknown flag keeps clap's own message.
    let err = fails(ablate().arg("sweep").arg(demo()).args(["--bogus", "1"]));
    assert_mentions(&err, &["--bogus"]);
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
