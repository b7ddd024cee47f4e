//! Outputs, seventh round (2026-12-05): each test names what it protects. `simulate` crashed on
//! counts beyond memory and left a temporary folder; direction marks in a name reversed ablate's
//! own numbers on the page; an import replaced an earlier import of other logs that shared its
//! set name; a line break in the set name wrote a heading and a list item into report.md; the
//! page's headline counted cases without results; escape codes in experiment.toml reached the
//! terminal; baseline-only results made a report with a wrong reason; a repeated CSV column was
//! dropped without a word.

use crate::common;

use common::{Workdir, ablate, assert_mentions, fails, import, leftovers, succeeds};

use crate::import::fixture;

/// `--repeats 4000000000` aborted (out of memory, exit 134) after the temporary folder was made,
/// leaving `.ablate-tmp-*` with four Parquet files; `--cases 2^64 − 1` panicked on an overflow.
#[test]
fn simulate_refuses_counts_beyond_its_limit_before_writing_anything() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("s");
    for args in [
        &["--repeats", "4000000000"][..],
        &["--cases", "18446744073709551615"],
        &["--stress-cases", "99999999999"],
        &["--shadow-requests", "99999999999"],
    ] {
        let err = fails(
            ablate()
                .args(["simulate", "--quiet", "--out"])
                .arg(&out)
                .args(args),
        );
        assert_mentions(&err, &["at most 1,000,000,000", "choose smaller counts"]);
        assert!(!out.exists(), "{args:?}");
        assert!(leftovers(root.path()).is_empty(), "{args:?}");
    }
}

/// A unit named `few_shot/02` + U+202E (right-to-left override) made Chromium draw the rest of
/// the decision's sentence backwards: "130 cases, ~90 more" read "031 … 09~". Such characters are
/// refused in names, and escaped wherever other text reaches a page.
#[test]
fn direction_marks_in_names_are_refused() {
    let w = Workdir::tiny();
    w.edit("units.csv", "few_shot/01,", "few_shot/01\u{202E},");
    w.edit("arms.csv", "few_shot/01", "few_shot/01\u{202E}");
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(&err, &["U+202E", "direction marks"]);
}

/// A line break in the set name wrote `=====` and `- every example is removable` into report.md
/// as a heading and a list item; escape codes in the model's name changed the terminal's title
/// and cleared the screen. Names in experiment.toml are one line of plain text.
#[test]
fn names_in_experiment_toml_are_one_line_of_plain_text() {
    let w = Workdir::tiny();
    for (from, to, code) in [
        (
            "set = \"tiny\"",
            "set = \"tiny\\n=====\\n- every example is removable\"",
            "U+000A",
        ),
        (
            "model = \"m\"",
            "model = \"m\\u001b]0;owned\\u0007\\u001b[2J\"",
            "U+001B",
        ),
        ("set = \"tiny\"", "set = \"tiny\\u202e\"", "U+202E"),
    ] {
        w.edit("experiment.toml", from, to);
        let err = fails(ablate().arg("check").arg(&w.dir));
        assert_mentions(&err, &["experiment.toml", code, "one line of plain text"]);
        assert!(!err.contains('\u{1b}'), "{err:?}");
        w.edit("experiment.toml", to, from);
    }
    // A description may span lines.
    w.edit(
        "experiment.toml",
        "set = \"tiny\"",
        "set = \"tiny\"\ndescription = \"two\\nlines\"",
    );
    succeeds(ablate().args(["check", "--quiet"]).arg(&w.dir));
}

/// Two imports of one task from different logs share a set name (the task's); a second `import
/// --out` to the first's folder replaced it, leaving a baseline-only folder `check` refused.
#[test]
fn an_import_never_replaces_an_import_of_other_logs() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("b");
    let dir = "inspect/v0.3.285";
    let full = fixture(&format!("{dir}/arm_full.eval"));
    let no_examples = fixture(&format!("{dir}/arm_no_examples.eval"));
    let args = ["--threshold-drop", "0.1"];
    import("inspect", &[full.clone(), no_examples.clone()], &out, &args);
    let before = std::fs::read(out.join("results.parquet")).unwrap();
    // The same logs again, or more: replaced.
    import("inspect", &[full.clone(), no_examples.clone()], &out, &args);
    // Fewer logs (one of the two): refused, and the earlier import kept whole.
    let err = common::import_fails("inspect", &[full], &out, &args);
    assert_mentions(&err, &["1 of which this import does not read", "--into"]);
    assert_eq!(std::fs::read(out.join("results.parquet")).unwrap(), before);
    assert!(leftovers(root.path()).is_empty());
}

/// The headline said "5 main-set cases" where the drops, the decision and record.json rest on
/// the 3 with results (cases.csv listed two more, not yet run).
#[test]
fn the_headline_counts_the_cases_the_decision_rests_on() {
    let w = Workdir::tiny();
    let cases = std::fs::read_to_string(w.path("cases.csv")).unwrap();
    w.write(
        "cases.csv",
        &format!("{cases}c4,billing,single,1,false\nc5,billing,multi,1,false\n"),
    );
    let out = w.root.path().join("r");
    succeeds(
        ablate()
            .args(["report", "--quiet", "--bootstrap", "0", "--out"])
            .arg(&out)
            .arg(&w.dir),
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("3 main-set cases (2 more in cases.csv without results)"),
        "{md}"
    );
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("record.json")).unwrap()).unwrap();
    assert_eq!(record["cases"], 3);
}

/// Results holding the baseline only: `check` refused them, but `report` wrote a full report
/// (exit 0) saying "experiment.toml's decide selects none of the arms", a key the file did not
/// have. Every verb that compares arms refuses them now, with check's message.
#[test]
fn baseline_only_results_are_refused_by_every_verb_that_compares_arms() {
    let w = Workdir::tiny();
    w.write(
        "results.csv",
        "case_id,arm,repeat,score\nc1,baseline,0,1\nc2,baseline,0,0\n",
    );
    let out = w.root.path().join("r");
    let err = fails(
        ablate()
            .args(["report", "--quiet", "--out"])
            .arg(&out)
            .arg(&w.dir),
    );
    assert_mentions(&err, &["baseline only", "nothing to compare"]);
    assert!(!out.exists());
    // need reads the baseline's context alone.
    succeeds(ablate().args(["need", "--quiet"]).arg(&w.dir));
    for verb in ["check", "sweep", "variance", "record"] {
        let err = fails(ablate().args([verb, "--quiet"]).arg(&w.dir));
        assert_mentions(&err, &["baseline only"]);
    }
}

/// `score,score` in a CSV header (a join in a notebook writes it) passed `check` with "no
/// warnings", the second column dropped without a word.
#[test]
fn a_repeated_column_is_refused() {
    let w = Workdir::tiny();
    let results = std::fs::read_to_string(w.path("results.csv")).unwrap();
    let doubled: String = results
        .lines()
        .enumerate()
        .map(|(i, l)| match i {
            0 => format!("{l},score\n"),
            _ => format!("{l},0.5\n"),
        })
        .collect();
    w.write("results.csv", &doubled);
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(&err, &["results.csv", "`score` more than once"]);
}
