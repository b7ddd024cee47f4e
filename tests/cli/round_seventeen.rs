//! The seventeenth review round: an independent recomputation of `selector`, `shadow` and
//! `context` (their numbers matched on the demo to 1e-9) and the edge cases it found. Each test
//! failed on the binary before the mend.

use crate::common;

use common::{Workdir, ablate, assert_mentions, fails, has_code, json};

/// The tiny experiment with passages for c1 and c2 (three each, scored 0.9, 0.5 and 0.2 by rank)
/// and for the stress case s1; `gold` gives each row's flag (the cases say c1's gold passage is
/// rank 1 and c2's rank 2; c3's was not retrieved).
fn with_passages(gold: [&str; 9]) -> Workdir {
    let w = Workdir::tiny();
    let mut text = String::from("case_id,rank,tokens,score,gold\n");
    let rows = ["c1", "c2", "s1"]
        .iter()
        .flat_map(|c| [(c, 1, 0.9), (c, 2, 0.5), (c, 3, 0.2)]);
    for ((case, rank, score), flag) in rows.zip(gold) {
        text.push_str(&format!("{case},{rank},100,{score},{flag}\n"));
    }
    w.write("passages.csv", &text);
    w
}

/// The message of the warning `code` in a verb's JSON `v`.
fn warning_message(v: &serde_json::Value, code: &str) -> String {
    v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == code)
        .unwrap_or_else(|| panic!("no {code}: {v}"))["message"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The flags the cases' gold_rank implies: c1 rank 1, c2 rank 2, s1 rank 1.
const AGREEING: [&str; 9] = [
    "true", "false", "false", "false", "true", "false", "true", "false", "false",
];

/// A case flagged with two gold passages had its oracle read the first in row order (the same
/// table sorted the other way gave another oracle saving), and flags that name another gold
/// passage than the cases' gold_rank made the oracle (gold_rank) and the miss rate (the flag)
/// contradict each other. Several gold passages are one gold set (the oracle keeps up to the
/// deepest, a threshold misses when it drops any); flags that disagree with gold_rank on the
/// main set are refused by `selector`, naming the case, while every other verb still runs (a
/// review caught a first mend that refused them at load, for every verb, stress cases too).
#[test]
fn gold_passages_agree_with_gold_rank() {
    let w = with_passages(AGREEING);
    let agreeing = json(ablate().args(["selector", "--json"]).arg(&w.dir));

    // c1's gold set is ranks 1 and 2 (gold_rank 2): the oracle keeps both, and a threshold
    // that keeps rank 1 (0.9) but drops rank 2 (0.5) misses c1.
    let mut two = AGREEING;
    two[1] = "true";
    let w = with_passages(two);
    w.edit("cases.csv", "c1,billing,single,1,", "c1,billing,single,2,");
    let v = json(ablate().args(["selector", "--json"]).arg(&w.dir));
    let at = |v: &serde_json::Value, t: f64| {
        v["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["threshold"].as_f64() == Some(t))
            .unwrap()
            .clone()
    };
    assert_eq!(at(&v, 0.6)["gold_miss_rate"].as_f64(), Some(1.0), "{v}");
    assert_eq!(at(&agreeing, 0.6)["gold_miss_rate"].as_f64(), Some(0.5));
    assert!(
        v["oracle_saving_mean"].as_f64() < agreeing["oracle_saving_mean"].as_f64(),
        "{v}"
    );

    let mut moved = AGREEING;
    (moved[3], moved[4]) = ("true", "false");
    let w = with_passages(moved);
    let err = fails(ablate().arg("selector").arg(&w.dir));
    assert_mentions(
        &err,
        &[
            "passages.csv",
            "c2",
            "deepest passage flagged gold is rank 1",
            "gold_rank is 2",
            "cases.csv",
        ],
    );
    // The other verbs do not read the flags: they run.
    json(ablate().args(["sweep", "--json", "--quiet"]).arg(&w.dir));

    let mut none = AGREEING;
    none[0] = "false";
    let w = with_passages(none);
    let err = fails(ablate().arg("selector").arg(&w.dir));
    assert_mentions(
        &err,
        &["c1", "no passage is flagged gold", "gold_rank is 1"],
    );

    // The stress case's passages are not the selector's: a disagreement there is not refused.
    let mut stress = AGREEING;
    stress[6] = "false";
    let w = with_passages(stress);
    json(ablate().args(["selector", "--json"]).arg(&w.dir));
}

/// With passages on the stress case alone, the replay had no case, yet exited 0 with a kept
/// mean of 0.0, "NaN tokens a case" and a warning that no gold was labelled.
#[test]
fn a_replay_with_no_main_set_case_is_refused() {
    let w = Workdir::tiny();
    w.write(
        "passages.csv",
        "case_id,rank,tokens,score\ns1,1,100,0.9\ns1,2,100,0.2\n",
    );
    let err = fails(ablate().arg("selector").arg(&w.dir));
    assert_mentions(&err, &["passages.csv", "no main-set case has passages"]);
}

/// Two arms at one threshold: the row showed the first arm's drop and the other vanished without
/// a word. An arm at 0.1 + 0.2 was paired with the replay at 0.3, not where it ran.
#[test]
fn arms_sharing_a_threshold_are_named_and_each_is_replayed_where_it_ran() {
    let w = with_passages(AGREEING);
    w.write(
        "arms.csv",
        "arm,removed,selector_threshold\nbaseline,,\nwithout-ex1,few_shot/01,0.5\nwithout-examples,few_shot/01;few_shot/02,0.5\n",
    );
    let v = json(ablate().args(["selector", "--json"]).arg(&w.dir));
    assert!(has_code(&v, "selector.shared_threshold"), "{v}");
    let message = warning_message(&v, "selector.shared_threshold");
    assert_mentions(
        &message,
        &["without-examples ran at threshold 0.5, as without-ex1 did"],
    );

    let odd = 0.1f64 + 0.2;
    w.write(
        "arms.csv",
        &format!(
            "arm,removed,selector_threshold\nbaseline,,\nwithout-ex1,few_shot/01,{odd:?}\nwithout-examples,few_shot/01;few_shot/02,\n"
        ),
    );
    let v = json(ablate().args(["selector", "--json"]).arg(&w.dir));
    let points = v["points"].as_array().unwrap();
    let measured: Vec<&serde_json::Value> = points
        .iter()
        .filter(|p| !p["measured_arm"].is_null())
        .collect();
    assert_eq!(measured.len(), 1, "{v}");
    assert_eq!(measured[0]["threshold"].as_f64().unwrap(), odd, "{v}");
    assert!(
        !points.iter().any(|p| p["threshold"].as_f64() == Some(0.3)),
        "the grid's 0.3 stays beside the arm's own threshold: {v}"
    );
    assert!(!has_code(&v, "selector.shared_threshold"));
}

/// A call of exactly the soft limit meets it, not crosses it: 0.7 × 11,000 is 7,699.999999999999
/// in floating point, so a call of 7,700 had counted as a crossing. Limits large enough to
/// overflow a 64-bit hard limit panicked (exit 101); they are refused (exit 2).
#[test]
fn the_soft_limit_is_the_decimal_the_ratio_says_and_huge_limits_are_refused() {
    let w = Workdir::empty();
    let mut log = String::from("request_id,step,source,tokens,model_limit,expected_output\n");
    for (i, size) in [7699, 7700, 7701].iter().enumerate() {
        log.push_str(&format!("r{i},1,system,{size},13000,0\n"));
    }
    w.write("context_log.csv", &log);
    // hard = 13000 − (0 + 1000) − 1000 = 11000; soft = 0.7 × 11000 = 7700.
    let v = json(
        ablate()
            .args(["context", "--json", "--soft-limit-ratio", "0.7"])
            .arg(w.path("context_log.csv")),
    );
    assert_eq!(v["soft_crossing_rate"].as_f64().unwrap(), 1.0 / 3.0, "{v}");

    for flags in [
        ["--output-buffer", "9223372036854775807"],
        ["--safety-margin", "9223372036854775807"],
    ] {
        let err = fails(
            ablate()
                .arg("context")
                .args(flags)
                .arg(w.path("context_log.csv")),
        );
        assert_mentions(&err, &["leaves no input budget"]);
    }
}

/// A value from the data in a warning or an error reaches the terminal with its control
/// characters replaced: an escape sequence in a stratum had recoloured the screen.
#[test]
fn data_in_warnings_and_errors_cannot_drive_the_terminal() {
    let w = Workdir::empty();
    let mut log = String::from("request_id,variant,answer,seg\n");
    for i in 0..3 {
        log.push_str(&format!(
            "r{i},production,a,\u{1b}[31mred\nr{i},replay,a,\u{1b}[31mred\nr{i},candidate,b,\u{1b}[31mred\n"
        ));
    }
    w.write("shadow.csv", &log);
    let out = ablate()
        .args(["shadow", "--by", "seg"])
        .arg(w.path("shadow.csv"))
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("warning"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text:?}");

    w.write(
        "shadow.csv",
        "request_id,variant,answer\nr\u{1b}[2J,production,a\nr\u{1b}[2J,production,a\n",
    );
    let err = fails(ablate().arg("shadow").arg(w.path("shadow.csv")));
    assert!(
        err.contains("control characters") && !err.contains('\u{1b}'),
        "{err:?}"
    );
}

/// A request whose rows gave a stratum two values was filed under the larger, silently.
#[test]
fn a_request_in_two_strata_is_refused() {
    let w = Workdir::empty();
    w.write(
        "shadow.csv",
        "request_id,variant,answer,seg\nr0,production,a,a\nr0,replay,a,a\nr0,candidate,b,zzz\nr1,production,a,a\nr1,replay,a,a\nr1,candidate,a,a\n",
    );
    let err = fails(
        ablate()
            .args(["shadow", "--by", "seg"])
            .arg(w.path("shadow.csv")),
    );
    assert_mentions(&err, &["shadow.csv", "`seg`", "r0", "\"a\" and \"zzz\""]);
}

/// `plan --json` of a leave-one-out design over the demo's units, the demo as the pilot, 500
/// cases, with `extra` flags.
fn demo_plan(extra: &[&str]) -> serde_json::Value {
    let d = common::demo();
    json(
        ablate()
            .args(["plan", "--json", "--quiet", "--design", "loo", "--units"])
            .arg(d.join("units.parquet"))
            .arg("--pilot")
            .arg(&d)
            .args(["--cases", "500"])
            .args(extra),
    )
}

/// `plan --pilot` moved the sd to the planned repeats but not what the run can certify: with
/// `--repeats` 1, 3 or 30 it gave one `min_certifiable_threshold` and one `cases_to_certify`,
/// and under the normal approximation fresh runs at those cases with one repeat certified only
/// 0.0174 of a promised 0.01 (the independent audit's resampling check). Under `normal` each
/// arm is now planned at the cases whose se at the pilot's repeats is the plan's; under any
/// distribution the figure stays (real runs of the demo's world at 1, 3 and 10 repeats certify
/// 0.0182, 0.0188 and 0.0185: a review caught a first mend that made it 0.0534 and 0.0064).
#[test]
fn what_a_plan_can_certify_follows_its_repeats() {
    let plan_under = |repeats: &str, guarantee: &str| {
        demo_plan(&["--repeats", repeats, "--guarantee", guarantee])
    };
    let certifiable = |v: &serde_json::Value| v["min_certifiable_threshold"].as_f64().unwrap();
    let sd = |v: &serde_json::Value| v["sd"].as_f64().unwrap();
    let (one, three, ten) = (
        plan_under("1", "normal"),
        plan_under("3", "normal"),
        plan_under("10", "normal"),
    );
    // The demo at its own 3 repeats: docs/statistics.md's figure.
    assert!((certifiable(&three) - 0.0075).abs() < 5e-5, "{three}");
    assert!(certifiable(&one) > certifiable(&three), "{one}");
    assert!(certifiable(&ten) < certifiable(&three), "{ten}");
    let to_certify = |v: &serde_json::Value| v["cases_to_certify"].as_u64().unwrap();
    assert!(to_certify(&one) > to_certify(&three), "{one}\n{three}");
    // The half-width moves as the sd does.
    for other in [&one, &ten] {
        let ratio = (certifiable(other) / certifiable(&three)) / (sd(other) / sd(&three));
        assert!((ratio - 1.0).abs() < 0.05, "{ratio}");
    }
    for repeats in ["1", "10"] {
        let v = plan_under(repeats, "any-distribution");
        assert!((certifiable(&v) - 0.0188).abs() < 5e-5, "{v}");
    }
}

/// `plan --per-arm` was accepted and ignored: what the run can certify was still found at
/// 1 − α/K over the plan's arms. Judged each on its own, an arm's interval is at 1 − α.
#[test]
fn a_plan_per_arm_certifies_at_each_arms_own_level() {
    let plan = demo_plan;
    let (family, own) = (plan(&[]), plan(&["--per-arm"]));
    let certifiable = |v: &serde_json::Value| v["min_certifiable_threshold"].as_f64().unwrap();
    assert!(certifiable(&own) < certifiable(&family), "{own}");
    let message = own["warnings"][0]["message"].as_str().unwrap();
    assert_mentions(message, &["each arm judged on its own (--per-arm)"]);
}

/// An experiment of 30 cases in 9 clusters, the baseline and two arms, each case run `repeats`
/// times: scores vary by case and arm, so every arm has spread, but no arm has 10 units.
fn nine_clusters(repeats: usize) -> Workdir {
    let w = Workdir::empty();
    let mut results = String::from("case_id,arm,repeat,score\n");
    let mut cases = String::from("case_id,cluster\n");
    for i in 0..30 {
        cases.push_str(&format!("c{i},k{}\n", i % 9));
        for (a, arm) in ["baseline", "without-fs/a", "without-fs/b"]
            .iter()
            .enumerate()
        {
            for r in 0..repeats {
                let score = ((i * 7 + a * 3 + r * 5) % 11) as f64 / 10.0;
                results.push_str(&format!("c{i},{arm},{r},{score}\n"));
            }
        }
    }
    w.write("results.csv", &results);
    w.write("cases.csv", &cases);
    w.write(
        "arms.csv",
        "arm,removed\nbaseline,\nwithout-fs/a,fs/a\nwithout-fs/b,fs/b\n",
    );
    w.write(
        "experiment.toml",
        "set = \"hand\"\nmodel = \"m\"\nmeasured_at = \"2025-01-01\"\nbaseline_arm = \"baseline\"\nthreshold_drop = 0.05\n",
    );
    w
}

/// With every arm under 10 units nothing can be confident, yet `min_certifiable_threshold`
/// was a number, and the terminal said arms "can be shown removable only above" it. The
/// sweep's header named "t or effective-sample score interval, clusters" under the normal
/// approximation, where there is only the clustered t, and said "1 repeats".
#[test]
fn nothing_is_certifiable_below_ten_units_and_the_header_names_the_interval() {
    let w = nine_clusters(1);
    let run = |guarantee: &str, json_out: bool| {
        let mut cmd = ablate();
        cmd.args([
            "sweep",
            "--quiet",
            "--bootstrap",
            "0",
            "--guarantee",
            guarantee,
        ])
        .arg(&w.dir);
        if json_out {
            cmd.arg("--json");
        }
        cmd
    };
    let v = json(&mut run("normal", true));
    assert!(v["family"]["min_certifiable_threshold"].is_null(), "{v}");
    assert!(has_code(&v, "sweep.not_certifiable"), "{v}");
    let text = String::from_utf8(run("normal", false).output().unwrap().stdout).unwrap();
    let header = text.lines().next().unwrap();
    assert!(header.contains("· 1 repeat ·"), "{header}");
    assert!(header.ends_with("CI (clustered t)"), "{header}");
    assert!(
        !text.contains("can be shown removable only above"),
        "{text}"
    );
    let text = String::from_utf8(run("any-distribution", false).output().unwrap().stdout).unwrap();
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("the wider of a clustered t and an effective-sample score interval"),
        "{text}"
    );
}

/// A plan from a pilot of 30 cases in 9 clusters promised a certifiable threshold at 30 cases,
/// where the sweep of such a run certifies nothing (9 units, below the 10 any verdict needs):
/// the plan counts the units its cases will have, as the sweep does.
#[test]
fn a_plan_counts_the_units_its_cases_will_have() {
    let w = nine_clusters(2);
    w.write("units.csv", "unit,block,tokens\nfs/a,fs,10\nfs/b,fs,10\n");
    let plan = |cases: &str| {
        json(
            ablate()
                .args(["plan", "--json", "--quiet", "--design", "loo", "--units"])
                .arg(w.path("units.csv"))
                .arg("--pilot")
                .arg(&w.dir)
                .args(["--cases", cases, "--guarantee", "normal"]),
        )
    };
    let at_pilot = plan("30");
    assert!(
        at_pilot["min_certifiable_threshold"].is_null(),
        "{at_pilot}"
    );
    // Said as too few units, not as a pilot without spread (a review caught that).
    assert!(has_code(&at_pilot, "plan.too_few_cases"), "{at_pilot}");
    assert!(!has_code(&at_pilot, "plan.not_certifiable"), "{at_pilot}");
    let message = warning_message(&at_pilot, "plan.too_few_cases");
    assert_mentions(&message, &["about 9 clusters", "plan at least 34"]);
    // Twice the cases, about twice the clusters: 18 units.
    let doubled = plan("60");
    assert!(doubled["min_certifiable_threshold"].is_f64(), "{doubled}");
}

/// Under the normal approximation a composed arm's own 95% interval was the any-distribution
/// score interval, wider than the 99.4% family t interval that judged it ([−0.0388, 0.0379]
/// around [−0.0207, 0.0198] on the demo). It is the t, as the sweep's, and nests in the family's.
#[test]
fn an_interactions_own_interval_follows_the_guarantee() {
    let v = json(
        ablate()
            .args(["interactions", "--json", "--quiet", "--bootstrap", "0"])
            .args(["--guarantee", "normal"])
            .arg(common::demo()),
    );
    let composed = v["composed"].as_array().unwrap();
    assert!(!composed.is_empty(), "{v}");
    for a in composed {
        assert_eq!(a["ci_method"], "t", "{a}");
        let f = |k: &str| a[k].as_f64().unwrap();
        assert!(
            f("ci_family_low") <= f("ci_low") && f("ci_high") <= f("ci_family_high"),
            "{a}"
        );
    }
}

/// In a log read in several passes, the row a refusal named was counted within the pass's
/// partition, not the file (a review found row 399,753 for a request on row 800,001).
#[test]
fn a_refusal_names_the_files_row_whatever_the_passes() {
    use ablate::analysis::shadow::{self, ShadowOptions};
    use ablate::io::logs::ShadowLog;
    use ablate::io::table::TableFile;

    let w = Workdir::empty();
    let mut log = String::from("request_id,variant,answer,seg\n");
    for i in 0..2000 {
        let last = if i == 1999 { "y" } else { "x" };
        log.push_str(&format!("r{i},production,a,x\nr{i},candidate,b,{last}\n"));
    }
    w.write("shadow.csv", &log);
    let by = vec!["seg".to_string()];
    let file = ShadowLog::open(&TableFile::at(w.path("shadow.csv")), &by, None).unwrap();
    let small = ablate::io::logs::BASELINE_MEMORY + (1 << 20);
    assert!(ablate::io::logs::passes(2000, shadow::BYTES_PER_REQUEST, small) > 1);
    for memory in [ShadowOptions::default().memory, small] {
        let err = shadow::run(
            &file,
            &ShadowOptions {
                memory,
                ..ShadowOptions::default()
            },
        )
        .unwrap_err()
        .to_string();
        // r1999's first row is the file's 3,999th data row.
        assert_mentions(&err, &["row 3999", "r1999", "\"x\" and \"y\""]);
    }
}

/// From 100,000 units the sweep drew bootstrap resamples under the normal approximation too,
/// and refused `--bootstrap 50` as too few, though its intervals are the t at every size and no
/// resample was used. Under any distribution the floor still holds.
#[test]
fn the_normal_approximation_draws_no_resamples_at_any_size() {
    let w = Workdir::empty();
    let mut results = String::with_capacity(5_000_000);
    results.push_str("case_id,arm,repeat,score\n");
    let mut cases = String::from("case_id\n");
    for i in 0..100_000 {
        cases.push_str(&format!("c{i}\n"));
        let arm = if i % 7 == 0 { 0 } else { 1 };
        results.push_str(&format!("c{i},baseline,0,1\nc{i},without-fs/a,0,{arm}\n"));
    }
    w.write("results.csv", &results);
    w.write("cases.csv", &cases);
    w.write("arms.csv", "arm,removed\nbaseline,\nwithout-fs/a,fs/a\n");
    w.write(
        "experiment.toml",
        "set = \"big\"\nmodel = \"m\"\nmeasured_at = \"2025-01-01\"\nbaseline_arm = \"baseline\"\nthreshold_drop = 0.05\n",
    );
    let sweep = |guarantee: &str| {
        let mut cmd = ablate();
        cmd.args(["sweep", "--json", "--quiet", "--bootstrap", "50"])
            .args(["--guarantee", guarantee])
            .arg(&w.dir);
        cmd
    };
    let v = json(&mut sweep("normal"));
    assert_eq!(v["arms"][0]["ci_method"], "t", "{v}");
    let err = fails(&mut sweep("any-distribution"));
    assert_mentions(&err, &["--bootstrap 50 is too few"]);
}
