//! The tenth round (2026-12-06): what a fifth attack found. `need` counted every unit of a
//! `through_gold_rank` block as needed when the units had no rank (an oracle figure the gold
//! labels never touched); `report` replaced the report of another set whose case ids were the
//! same; a FIFO left inside an earlier output made `report` and `simulate` wait for ever.

use std::time::Duration;

use crate::common;

use common::{Workdir, ablate, assert_mentions, fails};

/// An experiment of 20 cases whose `passages` block uses `through_gold_rank`, with the units
/// table `units`.
fn gold_rank_experiment(units: &str) -> Workdir {
    let w = Workdir::empty();
    w.write(
        "experiment.toml",
        "set = \"g\"\nthreshold_drop = 0.05\n[[blocks]]\nname = \"passages\"\nneed = \"through_gold_rank\"\n",
    );
    w.write("arms.csv", "arm,removed\nbaseline,\nno-r1,r1\n");
    w.write("units.csv", units);
    let mut cases = String::from("case_id,gold_rank\n");
    let mut results = String::from("case_id,arm,repeat,score\n");
    for i in 0..20 {
        cases.push_str(&format!("c{i},1\n"));
        results.push_str(&format!("c{i},baseline,0,1\nc{i},no-r1,0,{}\n", i % 2));
    }
    w.write("cases.csv", &cases);
    w.write("results.csv", &results);
    w
}

/// A unit without a rank is neither within nor beyond a case's gold rank: refused, naming the
/// block, the unit and the file, where it had counted as needed (the needed fraction 1.0, an
/// "oracle" figure the gold labels never touched).
#[test]
fn through_gold_rank_refuses_units_without_a_rank() {
    let ranked =
        gold_rank_experiment("unit,block,tokens,rank\nr1,passages,100,1\nr2,passages,50,2\n");
    let v = common::json(ablate().args(["--json", "need"]).arg(&ranked.dir));
    let value = v["value"].as_f64().expect("a needed fraction");
    assert!((value - 100.0 / 150.0).abs() < 1e-12, "{v}");
    for units in [
        "unit,block,tokens\nr1,passages,100\nr2,passages,50\n",
        "unit,block,tokens,rank\nr1,passages,100,1\nr2,passages,50,\n",
    ] {
        let w = gold_rank_experiment(units);
        for verb in ["check", "need"] {
            let err = fails(ablate().arg(verb).arg(&w.dir));
            assert_mentions(
                &err,
                &[
                    "through_gold_rank",
                    "passages",
                    "units.csv",
                    "no rank",
                    "rank",
                ],
            );
        }
    }
}

/// Two simulated sets share their case ids (the same generator, another seed): the second's
/// report does not replace the first's without --force, as another set's never does.
#[test]
fn a_report_of_another_set_with_the_same_cases_is_not_replaced() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    common::succeeds(&mut common::simulate_small(&a));
    common::succeeds(common::simulate_small(&b).args(["--seed", "11"]));
    let out = root.path().join("r");
    common::report_into(&out, &a);
    let before = std::fs::read(out.join("analysis.json")).unwrap();
    let err = fails(
        ablate()
            .args(["report", "--quiet", "--bootstrap", "200", "--out"])
            .arg(&out)
            .arg(&b),
    );
    assert_mentions(&err, &["another experiment", "--force"]);
    assert_eq!(std::fs::read(out.join("analysis.json")).unwrap(), before);
    common::succeeds(
        ablate()
            .args([
                "report",
                "--quiet",
                "--bootstrap",
                "200",
                "--force",
                "--out",
            ])
            .arg(&out)
            .arg(&b),
    );
}

/// A FIFO in the place of a file an earlier output's marker lists is refused at once, naming
/// it, where checking its SHA-256 had opened it and waited for a writer for ever.
#[cfg(unix)]
#[test]
fn a_fifo_inside_an_earlier_output_is_refused_not_waited_on() {
    let root = tempfile::tempdir().unwrap();
    let exp = root.path().join("exp");
    common::succeeds(&mut common::simulate_small(&exp));
    let out = root.path().join("r");
    common::report_into(&out, &exp);
    let fifo = |path: &std::path::Path| {
        std::fs::remove_file(path).unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    };
    fifo(&out.join("tables/drops.csv"));
    let err = fails(
        ablate()
            .args(["report", "--quiet", "--bootstrap", "200", "--out"])
            .arg(&out)
            .arg(&exp)
            .timeout(Duration::from_secs(60)),
    );
    assert_mentions(&err, &["drops.csv", "not a plain file"]);
    fifo(&exp.join("units.parquet"));
    let err = fails(common::simulate_small(&exp).timeout(Duration::from_secs(60)));
    assert_mentions(&err, &["units.parquet", "not a plain file"]);
}

/// A promptfoo results version other than 2 and 3 is refused by name, where it had been read as
/// if it were one of them.
#[test]
fn an_unknown_promptfoo_results_version_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(crate::import::fixture("promptfoo/v0.121.20/results.json"))
        .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["results"]["version"] = serde_json::json!(9);
    let log = root.path().join("results.json");
    std::fs::write(&log, serde_json::to_string(&v).unwrap()).unwrap();
    let err = common::import_fails(
        "promptfoo",
        &[log],
        &root.path().join("exp"),
        &["--baseline", "full", "--threshold", "0"],
    );
    assert_mentions(&err, &["results.json", "results.version is 9", "2 and 3"]);
}

/// A CSV quote that never closes is named by its line, without Polars' advice about options of
/// its Python API (`infer_schema_length`, `ignore_errors`).
#[test]
fn an_unclosed_csv_quote_is_named_by_its_line() {
    let w = Workdir::tiny();
    w.write(
        "arms.csv",
        "arm,removed\nbaseline,\nwithout-ex1,\"few_shot/01\nwithout-examples,few_shot/01;few_shot/02\n",
    );
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(&err, &["arms.csv", "line 3", "never closed"]);
    assert!(!err.contains("infer_schema_length"), "{err}");
    assert!(!err.contains("ignore_errors"), "{err}");
}

/// A table's file given where the folder belongs is named as a file, with the folder that
/// holds it; a FIFO in a table's place is refused, not taken for an absent table.
#[test]
fn a_file_for_the_folder_and_a_fifo_for_a_table_are_named() {
    let w = Workdir::tiny();
    let err = fails(ablate().arg("check").arg(w.path("results.csv")));
    assert_mentions(
        &err,
        &["results.csv", "is a file, not an experiment folder"],
    );
    #[cfg(unix)]
    {
        std::fs::remove_file(w.path("mix.csv")).unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(w.path("mix.csv"))
            .status()
            .unwrap();
        assert!(status.success());
        let err = fails(
            ablate()
                .arg("check")
                .arg(&w.dir)
                .timeout(Duration::from_secs(60)),
        );
        assert_mentions(&err, &["mix.csv", "not a plain file"]);
    }
}

/// A (request, variant) pair twice in a shadow log is named by the row that repeats it and the
/// row it repeats.
#[test]
fn a_repeated_shadow_variant_is_named_by_its_rows() {
    let w = Workdir::empty();
    w.write(
        "shadow.csv",
        "request_id,variant,answer\nr0,production,a\nr1,production,a\nr1,replay,a\nr1,candidate,b\nr1,candidate,c\n",
    );
    let err = fails(ablate().arg("shadow").arg(w.path("shadow.csv")));
    assert_mentions(
        &err,
        &["row 5", "\"candidate\" more than once", "first on row 4"],
    );
}

/// The report's CSV tables say `true` and `false` where the JSON has booleans (the page and
/// terminal keep their words: "yes", "← flips").
#[test]
fn report_csv_flags_are_booleans() {
    let w = Workdir::demo_copy();
    let out = w.root.path().join("report");
    common::report_into(&out, &w.dir);
    // The fields of a CSV line (quoted fields may hold commas; no line breaks in these tables).
    let fields = |line: &str| -> Vec<String> {
        let (mut out, mut field, mut quoted) = (Vec::new(), String::new(), false);
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' if quoted && chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                '"' => quoted = !quoted,
                ',' if !quoted => out.push(std::mem::take(&mut field)),
                c => field.push(c),
            }
        }
        out.push(field);
        out
    };
    let column = |table: &str, name: &str| -> Vec<String> {
        let text = std::fs::read_to_string(out.join("tables").join(table)).unwrap();
        let mut lines = text.lines();
        let at = fields(lines.next().unwrap())
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("{table}: no column {name}"));
        lines.map(|l| fields(l)[at].clone()).collect()
    };
    let mut checked = 0;
    for (table, name) in [
        ("production.csv", "flipped"),
        ("stress.csv", "clears_both"),
        ("budget.csv", "retention_confident"),
        ("shadow.csv", "flagged"),
    ] {
        if !out.join("tables").join(table).exists() {
            continue;
        }
        let values = column(table, name);
        assert!(!values.is_empty(), "{table}");
        assert!(
            values
                .iter()
                .all(|v| v == "true" || v == "false" || v.is_empty()),
            "{table}.{name}: {values:?}"
        );
        checked += 1;
    }
    assert!(checked >= 3, "the demo's report has these tables");
}

/// A verb's manual page names ablate and its version in its footer.
#[test]
fn a_verb_s_manual_page_names_ablate_s_version() {
    let out = common::succeeds(ablate().args(["man", "sweep"]));
    let page = String::from_utf8(out.stdout).unwrap();
    let th = page.lines().find(|l| l.starts_with(".TH")).unwrap();
    assert!(
        th.contains(&format!("\"ablate {}\"", env!("CARGO_PKG_VERSION"))),
        "{th}"
    );
}

// ---- import: identity kept, disagreements said, the arm's score as the verbs define it ----

/// The v0.3.285 Inspect JSON log (arm `full`, six samples × two epochs), edited by `edit`,
/// written into `dir` as `name`.
pub(crate) fn inspect_log(
    dir: &std::path::Path,
    name: &str,
    edit: impl Fn(&mut serde_json::Value),
) -> std::path::PathBuf {
    let text = std::fs::read_to_string(crate::import::fixture(
        "inspect/v0.3.285/arm_full_json.json",
    ))
    .unwrap();
    let mut log: serde_json::Value = serde_json::from_str(&text).unwrap();
    edit(&mut log);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(&log).unwrap()).unwrap();
    path
}

/// Another arm of the same run: task argument `variant` and the run's ids changed.
fn as_arm(log: &mut serde_json::Value, variant: &str) {
    log["eval"]["task_args"]["variant"] = serde_json::json!(variant);
    log["eval"]["eval_id"] = serde_json::json!(format!("eval-{variant}"));
    log["eval"]["run_id"] = serde_json::json!(format!("run-{variant}"));
}

/// The samples of `log` with id `id`.
fn samples_with_id(
    log: &mut serde_json::Value,
    id: i64,
) -> impl Iterator<Item = &mut serde_json::Value> {
    log["samples"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .filter(move |s| s["id"] == id)
}

/// With `--strata`, `cases` keeps `input_hash` too: `import --into` then still refuses a sample
/// whose id the experiment holds for another question (it had paired "What is 9+9?" with "What
/// is 10+7?"'s repeats, exit 0).
#[test]
fn strata_keep_the_identity_that_into_checks() {
    let root = tempfile::tempdir().unwrap();
    let full = inspect_log(root.path(), "full.json", |_| {});
    let noex = inspect_log(root.path(), "noex.json", |l| as_arm(l, "no_examples"));
    let out = root.path().join("exp");
    common::import(
        "inspect",
        &[full, noex],
        &out,
        &["--strata", "topic", "--threshold-drop", "0.02"],
    );
    let changed = inspect_log(root.path(), "rerun.json", |l| {
        l["eval"]["eval_id"] = serde_json::json!("eval-rerun");
        l["eval"]["run_id"] = serde_json::json!("run-rerun");
        for s in samples_with_id(l, 2) {
            s["input"] = serde_json::json!("What is 9+9?");
        }
    });
    let err = fails(
        ablate()
            .args(["import", "inspect"])
            .arg(&changed)
            .arg("--into")
            .arg(&out),
    );
    assert_mentions(&err, &["sample 2", "different question"]);
}

/// A metadata field two logs give a case different values of is refused as a stratum (naming
/// the case, both values and both samples), and left out of `cases`, with a note, otherwise:
/// the first value had been kept without a word.
#[test]
fn a_case_field_the_logs_disagree_on_is_not_resolved_silently() {
    let root = tempfile::tempdir().unwrap();
    let full = inspect_log(root.path(), "full.json", |_| {});
    let noex = inspect_log(root.path(), "noex.json", |l| {
        as_arm(l, "no_examples");
        for s in samples_with_id(l, 2) {
            s["metadata"]["topic"] = serde_json::json!("subtraction");
        }
    });
    let sources = [full, noex];
    let err = common::import_fails(
        "inspect",
        &sources,
        &root.path().join("a"),
        &["--strata", "topic", "--threshold-drop", "0.02"],
    );
    assert_mentions(
        &err,
        &[
            "--strata topic",
            "case 2",
            "\"addition\"",
            "\"subtraction\"",
        ],
    );
    let summary = common::import(
        "inspect",
        &sources,
        &root.path().join("b"),
        &["--threshold-drop", "0.02"],
    );
    let columns = summary["case_columns"].to_string();
    assert!(!columns.contains("topic"), "{columns}");
    assert!(columns.contains("difficulty"), "{columns}");
    assert!(
        summary["notes"]
            .to_string()
            .contains("metadata field `topic` is left out"),
        "{summary}"
    );
}

/// The import summary's `mean_score` is the arm's score as `sweep` gives it (the mean of case
/// means) when a case has fewer repeats: it had been the mean over rows.
#[test]
fn an_import_s_mean_score_is_the_arm_s_score() {
    let root = tempfile::tempdir().unwrap();
    let full = inspect_log(root.path(), "full.json", |_| {});
    let noex = inspect_log(root.path(), "noex.json", |l| {
        as_arm(l, "no_examples");
        let samples = l["samples"].as_array_mut().unwrap();
        // Case 1 keeps one epoch, scored C; the others keep two.
        samples.retain(|s| !(s["id"] == 1 && s["epoch"] == 2));
    });
    let out = root.path().join("exp");
    let summary = common::import(
        "inspect",
        &[full, noex],
        &out,
        &["--threshold-drop", "0.02"],
    );
    let imported = common::arm(&summary, "no_examples")["mean_score"]
        .as_f64()
        .unwrap();
    let sweep = common::json(
        ablate()
            .args(["--json", "sweep", "--bootstrap", "0"])
            .arg(&out),
    );
    let swept = sweep["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"] == "no_examples")
        .unwrap()["score"]
        .as_f64()
        .unwrap();
    assert!(
        (imported - swept).abs() < 1e-12,
        "{imported} against {swept}"
    );
}

/// A log given twice is read once, and the summary says so (it had said "from 2 file(s)" with
/// no word of the third).
#[test]
fn a_log_given_twice_is_read_once_and_said() {
    let root = tempfile::tempdir().unwrap();
    let full = inspect_log(root.path(), "full.json", |_| {});
    let noex = inspect_log(root.path(), "noex.json", |l| as_arm(l, "no_examples"));
    let summary = common::import(
        "inspect",
        &[full.clone(), full, noex],
        &root.path().join("exp"),
        &["--threshold-drop", "0.02"],
    );
    let skipped = summary["skipped"].to_string();
    assert!(skipped.contains("full.json"), "{skipped}");
    assert!(skipped.contains("given more than once"), "{skipped}");
}

/// `next` numbers each cell's calls after the highest repeat it holds: on results numbered 1..K
/// (as `import` numbers Inspect's epochs) it had asked for repeat K, which the cell holds, so
/// appending the batch's rows as `next` suggests made a duplicate row.
#[test]
fn next_continues_after_the_highest_repeat_number() {
    let w = Workdir::tiny();
    let results = std::fs::read_to_string(w.path("results.csv")).unwrap();
    let mut lines = results.lines();
    let mut shifted = format!("{}\n", lines.next().unwrap());
    let mut held = std::collections::HashSet::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let repeat: u32 = f[2].parse::<u32>().unwrap() + 1;
        held.insert((f[0].to_string(), f[1].to_string(), repeat));
        shifted.push_str(&format!("{},{},{repeat},{}\n", f[0], f[1], f[3]));
    }
    w.write("results.csv", &shifted);
    let plan = common::json(
        ablate()
            .args(["--json", "next", "--calls", "40", "--repeats", "3", "--out"])
            .arg(w.root.path().join("batch.csv"))
            .arg(&w.dir),
    );
    let calls = plan["calls"].as_array().unwrap();
    assert!(!calls.is_empty(), "{plan}");
    for c in calls {
        let key = (
            c["case_id"].as_str().unwrap().to_string(),
            c["arm"].as_str().unwrap().to_string(),
            c["repeat"].as_u64().unwrap() as u32,
        );
        assert!(!held.contains(&key), "{key:?} is already in the results");
    }
}
