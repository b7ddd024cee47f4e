//! Issue "hardening": every input and flag validated, no panic, no silent nonsense. One test per
//! defect, each failing before its fix.

use crate::common;

use common::{Workdir, ablate, assert_mentions, fails, json};

/// Ids with a line break would make `c000`,`c001` and `"c000\nc001"` hash alike.
#[test]
fn control_characters_in_ids_are_refused() {
    let w = Workdir::tiny();
    w.write(
        "cases.csv",
        "case_id,slice,turns,gold_rank,stress\nc1,billing,single,1,false\n\"c2\nc3\",billing,multi,2,false\nc3,refunds,single,,false\ns1,refunds,multi,1,true\n",
    );
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(
        &err,
        &["cases.csv", "case_id", "row 2", "control characters"],
    );

    let w = Workdir::tiny();
    w.edit("arms.csv", "without-ex1,", "\"without\tex1\",");
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(&err, &["arms.csv", "`arm`", "row 2"]);

    let w = Workdir::tiny();
    w.edit("units.csv", "few_shot/02,", "\"few_shot/02\u{1b}[31m\",");
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(&err, &["units.csv", "`unit`", "row 3"]);
}

/// An arm removing {u1, u2} declared as the union of one arm removing u1 only.
#[test]
fn components_must_cover_the_arms_removed_set() {
    let w = Workdir::tiny();
    w.write(
        "arms.csv",
        "arm,removed,components\nbaseline,,\nwithout-ex1,few_shot/01,\nwithout-examples,few_shot/01;few_shot/02,without-ex1\n",
    );
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(
        &err,
        &[
            "arms.csv",
            "components",
            "row 3",
            "without-examples",
            "not covered: few_shot/02",
        ],
    );
}

#[test]
fn a_manifest_that_is_not_utf8_is_bad_input() {
    let w = Workdir::tiny();
    std::fs::write(
        w.path("experiment.toml"),
        b"set = \"caf\xe9\"\nthreshold_drop = 0.05\n",
    )
    .unwrap();
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(&err, &["experiment.toml", "UTF-8", "byte 11"]);
}

#[test]
fn a_csv_score_that_is_not_a_number_names_its_row() {
    let w = Workdir::tiny();
    let results = std::fs::read_to_string(w.path("results.csv")).unwrap();
    let mut lines: Vec<String> = results.lines().map(str::to_string).collect();
    lines[4] = lines[4]
        .rsplit_once(',')
        .map(|(a, _)| format!("{a},\"\""))
        .unwrap();
    w.write("results.csv", &(lines.join("\n") + "\n"));
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(
        &err,
        &["results.csv", "`score`", "row 4", "expected a number"],
    );
}

#[test]
fn duplicate_strata_and_a_mix_with_share_and_count_are_refused() {
    let w = Workdir::tiny();
    w.edit(
        "experiment.toml",
        "strata = [\"turns\"]",
        "strata = [\"turns\", \"turns\"]",
    );
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(&err, &["strata[1]", "listed twice"]);

    let w = Workdir::tiny();
    w.write(
        "mix.csv",
        "turns,share,count\nsingle,0.77,770\nmulti,0.23,10\n",
    );
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(&err, &["mix.csv", "both `share` and `count`"]);
}

#[test]
fn tiny_experiment_still_passes() {
    let w = Workdir::tiny();
    let v = json(ablate().args(["check", "--json"]).arg(&w.dir));
    assert_eq!(v["set"], "tiny");
}

/// B = 1 or 2 gave intervals that excluded their own estimate and "confident" verdicts by chance:
/// refused wherever resamples are drawn (curve's retention, on the demo's budget arms), and
/// accepted where none are (a drop's interval below 100,000 units), since B is then unused.
#[test]
fn too_few_bootstrap_resamples_are_refused_where_they_are_drawn() {
    let demo = common::demo();
    for b in ["1", "2", "199"] {
        let err = fails(ablate().args(["curve", "--bootstrap", b]).arg(&demo));
        assert_mentions(
            &err,
            &[
                "too few resamples",
                "10/(1 − confidence) = 200",
                "--bootstrap 0",
            ],
        );
    }
    json(
        ablate()
            .args(["curve", "--json", "--bootstrap", "200"])
            .arg(&demo),
    );
    // At 99% the floor is 1,000.
    let err = fails(
        ablate()
            .args(["curve", "--bootstrap", "500", "--confidence", "0.99"])
            .arg(&demo),
    );
    assert_mentions(&err, &["99% intervals", "= 1000"]);
    // No resample is drawn for a drop's interval on 500 cases: the same numbers at any B.
    let w = Workdir::tiny();
    let two = json(
        ablate()
            .args(["sweep", "--json", "--bootstrap", "2"])
            .arg(&w.dir),
    );
    let many = json(ablate().args(["sweep", "--json"]).arg(&w.dir));
    assert_eq!(two["arms"], many["arms"]);
}

/// 0.9999999 was labelled "100% CI".
#[test]
fn confidence_labels_keep_their_digits() {
    let w = Workdir::tiny();
    let out = ablate()
        .args(["sweep", "--bootstrap", "0", "--confidence", "0.9999999"])
        .arg(&w.dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("99.99999% CI"), "{text}");
    assert!(!text.contains("100% CI"), "{text}");
}

fn context_log(w: &Workdir, steps: &str) {
    w.write(
        "context_log.csv",
        &format!("request_id,step,source,tokens\nr1,{steps},system,100\nr1,1,retrieval,300\n"),
    );
}

#[test]
fn context_values_that_cannot_be() {
    let w = Workdir::empty();
    // A negative step gave a negative growth per step.
    context_log(&w, "-3");
    let err = fails(
        ablate()
            .args(["context", "--model-limit", "8000"])
            .arg(w.path("context_log.csv")),
    );
    assert_mentions(&err, &["`step`", "row 1", "-3", "negative"]);
    context_log(&w, "0");
    // A negative expected output raised the hard limit above the window.
    let err = fails(
        ablate()
            .args([
                "context",
                "--model-limit",
                "8000",
                "--expected-output=-5000",
            ])
            .arg(w.path("context_log.csv")),
    );
    assert_mentions(&err, &["expected_output", "-5000 is negative"]);
    // A negative global budget in a policy.
    w.write("policy.toml", "model_limit = 8000\nglobal_budget = -1\n");
    let err = fails(
        ablate()
            .args(["context", "--policy"])
            .arg(w.path("policy.toml"))
            .arg(w.path("context_log.csv")),
    );
    assert_mentions(&err, &["policy.toml", "global_budget", "negative"]);
    // --model-limit beside a policy is refused like --safety-margin.
    w.write("policy.toml", "model_limit = 8000\n");
    let err = fails(
        ablate()
            .args(["context", "--model-limit", "9000", "--policy"])
            .arg(w.path("policy.toml"))
            .arg(w.path("context_log.csv")),
    );
    assert_mentions(&err, &["--model-limit", "go in the policy file"]);
    // A budget for a source the log never mentions (a typo) is warned about.
    w.write(
        "policy.toml",
        "model_limit = 8000\n[budgets]\nretreival = 100\n",
    );
    let v = json(
        ablate()
            .args(["context", "--json", "--policy"])
            .arg(w.path("policy.toml"))
            .arg(w.path("context_log.csv")),
    );
    assert!(
        v["warnings"][0]["code"] == "context.unknown_budget_source"
            && v["warnings"][0]["message"]
                .as_str()
                .unwrap()
                .contains("\"retreival\""),
        "{v}"
    );
}

fn plan(args: &[&str]) -> String {
    fails(
        ablate()
            .args(["plan", "--units"])
            .arg(common::demo().join("units.parquet"))
            .args(args),
    )
}

#[test]
fn plan_refuses_impossible_figures() {
    let e = plan(&["--design", "loo", "--tokens-per-call", "100"]);
    assert_mentions(&e, &["--tokens-per-call 100", "negative tokens"]);
    for (flag, v) in [("--cases", "0"), ("--repeats", "0")] {
        let e = plan(&["--design", "loo", flag, v]);
        assert_mentions(&e, &["at least one case and one repeat"]);
    }
    let e = plan(&["--design", "pairs", "--unit", "system", "--unit", "system"]);
    assert_mentions(&e, &["--unit system is given twice"]);
    let e = plan(&[
        "--design",
        "loo",
        "--cases",
        "1000000000000",
        "--repeats",
        "4000000000",
    ]);
    assert_mentions(&e, &["more calls than can be counted"]);
}

#[test]
fn a_fraction_of_too_many_units_says_what_to_do() {
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join("units.csv");
    let rows: String = (0..70).map(|i| format!("u{i:02},b,10\n")).collect();
    std::fs::write(&path, format!("unit,block,tokens\n{rows}")).unwrap();
    let e = fails(
        ablate()
            .args(["plan", "--design", "fractional", "--units"])
            .arg(&path),
    );
    assert_mentions(&e, &["70 units", "at most 64 units"]);
    assert!(!e.contains("70 ≤ 3"), "{e}");
}

#[test]
fn scores_that_would_overflow_are_refused() {
    let w = Workdir::tiny();
    w.edit("results.csv", "c1,baseline,0,1\n", "c1,baseline,0,1e308\n");
    let err = fails(ablate().arg("check").arg(&w.dir));
    assert_mentions(&err, &["results.csv", "`score`", "row 1", "overflow"]);
    // The value as a person reads it, not a 309-digit integer; the fix names no "export".
    assert_mentions(&err, &["1e308"]);
    assert!(
        !err.contains("00000000000") && !err.contains("export"),
        "{err}"
    );
}

/// Arms removing u1, u2 and both, measured on a single main-set case.
fn one_case_composed() -> Workdir {
    let w = Workdir::empty();
    w.write("experiment.toml", "set = \"one\"\nthreshold_drop = 0.05\n");
    w.write("cases.csv", "case_id\nc1\n");
    w.write("arms.csv", "arm,removed\nbaseline,\na,u1\nb,u2\nab,u1;u2\n");
    w.write(
        "results.csv",
        "case_id,arm,repeat,score\nc1,baseline,0,1\nc1,a,0,1\nc1,b,0,1\nc1,ab,0,0\n",
    );
    w
}

#[test]
fn an_interaction_over_one_case_is_undetermined() {
    let w = one_case_composed();
    let v = json(
        ablate()
            .args(["interactions", "--json", "--bootstrap", "200"])
            .arg(&w.dir),
    );
    let c = &v["composed"][0];
    assert_eq!(c["arm"], "ab");
    assert!(c["ci_low"].is_null() && c["ci_high"].is_null());
    assert_eq!(c["interaction_verdict"], "undetermined");
}

#[test]
fn a_pass_mark_outside_the_scores_is_warned() {
    let w = Workdir::tiny();
    let results = std::fs::read_to_string(w.path("results.csv")).unwrap();
    w.write(
        "results.csv",
        &results.replace(",1\n", ",100\n").replace(",0\n", ",60\n"),
    );
    let out = ablate().arg("check").arg(&w.dir).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("every score is at or above pass_mark = 0.5"),
        "{text}"
    );
    let v = json(
        ablate()
            .args(["sweep", "--json", "--bootstrap", "0"])
            .arg(&w.dir),
    );
    assert!(v["warnings"].to_string().contains("pass_mark"));
}

#[test]
fn a_baseline_scoring_zero_has_no_retention() {
    let w = Workdir::empty();
    w.write("experiment.toml", "set = \"z\"\nthreshold_drop = 0.05\n");
    w.write("cases.csv", "case_id\nc1\nc2\nc3\n");
    w.write(
        "arms.csv",
        "arm,removed,budget_ratio,selector\nbaseline,,1.0,\nhalf,,0.5,random\n",
    );
    let mut results = String::from("case_id,arm,repeat,score\n");
    for c in ["c1", "c2", "c3"] {
        results.push_str(&format!("{c},baseline,0,0\n{c},half,0,0\n"));
    }
    w.write("results.csv", &results);
    let out = ablate()
        .args(["curve", "--bootstrap", "0"])
        .arg(&w.dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("NaN"), "{text}");
    let v = json(
        ablate()
            .args(["curve", "--json", "--bootstrap", "0"])
            .arg(&w.dir),
    );
    let half = &v["selectors"][0]["points"][0];
    assert!(half["retention"].is_null(), "{half}");
    assert!(v["warnings"].to_string().contains("retention is undefined"));
}

/// Every flag combination of `simulate` gives an experiment `check` accepts, or is refused.
#[test]
fn simulate_writes_only_what_check_accepts() {
    let root = tempfile::tempdir().unwrap();
    let max = ablate::simulate::max_arms().to_string();
    for args in [
        vec!["--arms", "98"],
        vec!["--arms", max.as_str()],
        vec!["--seed", "9223372036854775808"],
        vec!["--seed", "18446744073709551615"],
        vec!["--shadow-requests", "0", "--context-requests", "0"],
    ] {
        let out = root.path().join(args.join("_"));
        let run = ablate()
            .args(["simulate", "--cases", "12", "--out"])
            .arg(&out)
            .args(&args)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let check = ablate().arg("check").arg(&out).output().unwrap();
        assert!(
            check.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&check.stderr)
        );
    }
    let too_many = (ablate::simulate::max_arms() + 1).to_string();
    let err = fails(
        ablate()
            .args(["simulate", "--cases", "12", "--arms", &too_many, "--out"])
            .arg(root.path().join("x")),
    );
    assert_mentions(&err, &["at most", "arms"]);
}

#[test]
fn shadow_by_columns_are_checked_first() {
    let demo = common::demo();
    for args in [
        ["--by", "turns", "--by", "turns"],
        ["--by", "variant", "--by", "turns"],
    ] {
        let err = fails(ablate().arg("shadow").args(args).arg(&demo));
        assert!(
            !err.contains("RESOLVING") && !err.contains("FAILED HERE"),
            "{err}"
        );
        assert_mentions(&err, &["--by"]);
    }
}

#[test]
fn control_characters_in_request_ids_are_refused() {
    let w = Workdir::empty();
    w.write(
        "shadow.csv",
        "request_id,variant,answer\nr1,production,a\n\"r1\u{1b}[2J\",replay,a\nr1,candidate,b\n",
    );
    let err = fails(ablate().arg("shadow").arg(w.path("shadow.csv")));
    assert_mentions(
        &err,
        &["shadow.csv", "request_id", "row 2", "control characters"],
    );
}

/// Long names are cut on the chart axes (whole in the tables); the PNG is rendered from the SVG,
/// so both have one size.
#[test]
fn charts_cut_long_labels_and_png_matches_svg() {
    let w = Workdir::tiny();
    let long = format!("without-{}", "very-long-example-name-".repeat(6));
    let results = std::fs::read_to_string(w.path("results.csv")).unwrap();
    w.write("results.csv", &results.replace("without-ex1", &long));
    w.edit("arms.csv", "without-ex1,", &format!("{long},"));
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("rep");
    common::report_into(&out, &w.dir);
    let svg = std::fs::read_to_string(out.join("charts/drops.svg")).unwrap();
    assert!(!svg.contains(&long) && svg.contains('…'), "label not cut");
    let csv = std::fs::read_to_string(out.join("tables/drops.csv")).unwrap();
    assert!(csv.contains(&long), "the table keeps the name whole");
    let attr = |name: &str| -> u32 {
        let at = svg.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
        svg[at..].split('"').next().unwrap().parse().unwrap()
    };
    let png = resvg::tiny_skia::Pixmap::load_png(out.join("charts/drops.png")).unwrap();
    assert_eq!((png.width(), png.height()), (attr("width"), attr("height")));
}

/// Found by the `policy` fuzz target: a policy file that is not UTF-8 exited 1.
#[test]
fn a_policy_that_is_not_utf8_is_bad_input() {
    let w = Workdir::empty();
    context_log(&w, "0");
    std::fs::write(
        w.path("policy.toml"),
        b"model_limit = 8000\n[budgets]\nre\xc6\x8d\x96\x9aval = 1\n",
    )
    .unwrap();
    let err = fails(
        ablate()
            .args(["context", "--policy"])
            .arg(w.path("policy.toml"))
            .arg(w.path("context_log.csv")),
    );
    assert_mentions(&err, &["policy.toml", "UTF-8"]);
}

/// No verb falls back on the repository's demo: a folder the user never typed (issue 26, item 3).
/// `watch` would otherwise write its state into the demo.
#[test]
fn every_verb_needs_its_folder() {
    use ablate::verb::Verb;
    let with_input = Verb::ALL
        .into_iter()
        .filter(|v| v.reads_experiment() || matches!(v, Verb::Shadow | Verb::Context));
    for verb in with_input.map(Verb::name) {
        let out = ablate().arg(verb).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{verb}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("required"), "{verb}: {err}");
    }
}

/// Each verb's `--help` shows only the options it uses (issue 26, item 2): the statistics,
/// scale and output groups belong to the verbs that read them.
#[test]
fn each_verb_s_help_shows_only_its_options() {
    let help = |verb: &str| {
        let out = ablate().args([verb, "--help"]).output().unwrap();
        assert!(out.status.success(), "{verb}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let has = |verb: &str, flag: &str| help(verb).contains(&format!("  {flag}"));
    for (verb, absent) in [
        (
            "simulate",
            &["--from-aggregates", "--bootstrap", "--export", "--memory"][..],
        ),
        (
            "import",
            &["--memory", "--from-aggregates", "--seed", "--export"],
        ),
        (
            "check",
            &["--bootstrap", "--confidence", "--seed", "--memory"],
        ),
        ("sql", &["--export", "--bootstrap", "--memory"]),
        ("shadow", &["--bootstrap", "--per-arm"]),
        ("context", &["--bootstrap", "--confidence"]),
        ("sweep", &["--memory"]),
        ("next", &["--bootstrap", "--from-aggregates"]),
    ] {
        for flag in absent {
            assert!(!has(verb, flag), "{verb} --help lists {flag}");
        }
    }
    for (verb, present) in [
        (
            "sweep",
            &[
                "--bootstrap",
                "--confidence",
                "--seed",
                "--per-arm",
                "--from-aggregates",
                "--export",
                "--json",
            ][..],
        ),
        (
            "report",
            &["--memory", "--bootstrap", "--from-aggregates", "--export"],
        ),
        ("shadow", &["--confidence", "--memory", "--from-aggregates"]),
        ("simulate", &["--seed", "--json"]),
    ] {
        for flag in present {
            assert!(has(verb, flag), "{verb} --help lacks {flag}");
        }
    }
    // The groups are headed.
    let sweep = help("sweep");
    for heading in ["Statistics:", "Scale:", "Output:"] {
        assert!(sweep.contains(heading), "{heading}");
    }
}

/// A path that is not there is bad input, whichever option names it: exit 2, the path and what to
/// do, never the operating system's "No such file or directory (os error 2)" with exit 1.
#[test]
fn a_missing_file_is_exit_2_with_a_hint_for_every_path_option() {
    let demo = common::demo();
    let d = demo.to_str().unwrap();
    let work = tempfile::tempdir().unwrap();
    let runs: &[&[&str]] = &[
        &["plan", "--units", "nope.parquet", "--design", "loo"],
        &["plan", "--confirm", "nope"],
        &["reweight", d, "--mix", "nope.csv"],
        &["reweight", d, "--mix-from", "nope.parquet", "--by", "turns"],
        &["report", d, "--mix", "nope.csv", "--out", "r"],
        &["context", d, "--policy", "nope.toml"],
        &["shadow", "nope.parquet"],
        &["simulate", "--design", "nope.csv", "--out", "x"],
        &["sweep", d, "--from-aggregates", "nope.parquet"],
        &["import", "inspect", "nope", "--out", "x"],
        &["sweep", "nope"],
    ];
    for args in runs {
        let err = fails(ablate().args(*args).current_dir(work.path()));
        assert!(err.contains("nope"), "{args:?}: {err}");
        assert!(err.contains("not found"), "{args:?}: {err}");
        assert!(!err.contains("os error"), "{args:?}: {err}");
    }
}
