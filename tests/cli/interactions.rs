//! `ablate interactions` and `ablate plan`: composed cuts on hand-made tables, the demo's
//! super-additive cut, Shapley on the demo's factorial, and plan → simulate → interactions round
//! trips for every design.

use crate::common;
use ablate::io::prelude::*;

use ablate::analysis;
use ablate::io::Experiment;
use common::{Workdir, ablate, assert_mentions, cfg, demo, fails, json};
use serde_json::Value;

/// Three cases; units x and y carry the same fact for c1 and c2 (redundancy), z is inert.
/// Arms: baseline, -x, -y, -xy (composed by cover), -z, -xyz (explicit components -xy, -z).
fn redundant() -> Workdir {
    let w = Workdir::empty();
    w.write("experiment.toml", "set = \"r\"\nthreshold_drop = 0.1\n");
    w.write(
        "cases.csv",
        "case_id,slice\nc1,refunds\nc2,refunds\nc3,billing\nc4,billing\n",
    );
    w.write(
        "units.csv",
        "unit,block,tokens\nx,ex,100\ny,ex,100\nz,ex,50\n",
    );
    w.write(
        "arms.csv",
        "arm,removed,components\nbaseline,,\n-x,x,\n-y,y,\n-xy,x;y,\n-z,z,\n-xyz,x;y;z,-xy;-z\n",
    );
    // Scores: everything passes except when both x and y are gone, where c1 and c2 fail.
    let mut results = String::from("case_id,arm,repeat,score\n");
    for case in ["c1", "c2", "c3", "c4"] {
        for arm in ["baseline", "-x", "-y", "-xy", "-z", "-xyz"] {
            let lost = (arm == "-xy" || arm == "-xyz") && (case == "c1" || case == "c2");
            results.push_str(&format!("{case},{arm},0,{}\n", if lost { 0 } else { 1 }));
        }
    }
    w.write("results.csv", &results);
    w
}

#[test]
fn composed_arm_by_hand() {
    let w = redundant();
    let r = analysis::interactions::run(&Experiment::load(&w.dir).unwrap(), &cfg(0)).unwrap();
    let xy = r.composed.iter().find(|c| c.arm == "-xy").unwrap();
    assert_eq!(xy.components, vec!["-x", "-y"]);
    assert!(!xy.explicit_components);
    assert_eq!(xy.predicted_drop, 0.0);
    assert_eq!(xy.measured_drop, 0.5);
    assert_eq!(xy.interaction, 0.5);
    assert_eq!(xy.predicted_score, 1.0);
    assert_eq!(xy.measured_score, 0.5);
    // e = 1, 1, 0, 0 → se = √(1/3)/2
    assert!((xy.se.unwrap() - (1.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-12);
    assert_eq!(xy.lost_cases, 2);
    assert_eq!(xy.lost_only_jointly, 2);
    assert_eq!(xy.lost_by_slice.get("refunds"), Some(&2));
    assert_eq!(
        xy.concentration.as_deref(),
        Some("2 of 2 lost cases are in refunds")
    );
    let xyz = r.composed.iter().find(|c| c.arm == "-xyz").unwrap();
    assert!(xyz.explicit_components);
    assert_eq!(xyz.components, vec!["-xy", "-z"]);
    assert_eq!(xyz.interaction, 0.0);
    // Four cases: too few to call anything (as the sweep below 10 units), whatever the interval.
    assert_eq!(xyz.interaction_verdict.as_str(), "undetermined");
    // Pairwise matrix: the -xy pair.
    assert_eq!(r.pairwise.len(), 1);
    assert_eq!(
        (r.pairwise[0].a.as_str(), r.pairwise[0].b.as_str()),
        ("x", "y")
    );
    assert_eq!(r.pairwise[0].interaction, 0.5);
    // Full factorial of {x, y}: v(∅) = 0.5, v(x) = v(y) = v(xy) = 1 → φx = φy = 0.25, Ixy = −0.5
    let sh = r.shapley.as_ref().unwrap();
    assert_eq!(sh.units, vec!["x", "y"]);
    assert!((sh.values["x"] - 0.25).abs() < 1e-12);
    assert!((sh.values["y"] - 0.25).abs() < 1e-12);
    assert!((sh.interactions[0].index + 0.5).abs() < 1e-12);
}

/// A case with results in the baseline alone leaves every arm short of a paired case, so the
/// composed arms are read from the matrix instead of the prebuilt pairs: the same numbers.
#[test]
fn composed_arms_from_the_pairs_and_from_the_matrix_agree() {
    let w = redundant();
    let whole = analysis::interactions::run(&Experiment::load(&w.dir).unwrap(), &cfg(0)).unwrap();
    w.write(
        "cases.csv",
        "case_id,slice\nc1,refunds\nc2,refunds\nc3,billing\nc4,billing\nc5,billing\n",
    );
    let results = std::fs::read_to_string(w.path("results.csv")).unwrap();
    w.write("results.csv", &format!("{results}c5,baseline,0,1\n"));
    let partial = analysis::interactions::run(&Experiment::load(&w.dir).unwrap(), &cfg(0)).unwrap();
    assert_eq!(whole.composed.len(), 2);
    assert_eq!(whole.composed.len(), partial.composed.len());
    for (a, b) in whole.composed.iter().zip(&partial.composed) {
        assert_eq!(a.arm, b.arm);
        assert_eq!(a.n, b.n);
        assert_eq!(a.interaction.to_bits(), b.interaction.to_bits());
        assert_eq!(a.se.map(f64::to_bits), b.se.map(f64::to_bits));
        assert_eq!(a.predicted_drop.to_bits(), b.predicted_drop.to_bits());
        assert_eq!(a.measured_drop.to_bits(), b.measured_drop.to_bits());
        assert_eq!(a.measured_score.to_bits(), b.measured_score.to_bits());
        assert_eq!(a.lost_cases, b.lost_cases);
        assert_eq!(a.lost_only_jointly, b.lost_only_jointly);
        assert_eq!(a.lost_by_slice, b.lost_by_slice);
    }
}

#[test]
fn group_arm_without_cover_is_not_composed() {
    let w = redundant();
    w.edit("arms.csv", "-x,x,\n", "");
    w.edit("results.csv", "c1,-x,0,1\n", "");
    for case in ["c2", "c3", "c4"] {
        w.edit("results.csv", &format!("{case},-x,0,1\n"), "");
    }
    let r = analysis::interactions::run(&Experiment::load(&w.dir).unwrap(), &cfg(0)).unwrap();
    assert!(r.composed.iter().all(|c| c.arm != "-xy"));
    assert!(r.shapley.is_none());
}

#[test]
fn demo_composed_cut_is_super_additive_in_refunds_out_of_window() {
    // Judged as the sweep judges (issue 45): by the family interval over the 8 composed arms.
    // Under the normal approximation the interaction of 0.035 is established; for any
    // distribution of e (which may reach ±3 points with three components) it is not.
    let under = |guarantee: &str| {
        json(
            ablate()
                .args([
                    "interactions",
                    "--json",
                    "--bootstrap",
                    "2000",
                    "--guarantee",
                    guarantee,
                ])
                .arg(demo()),
        )
    };
    let the_cut = |v: &Value| {
        v["composed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["arm"] == "cut-examples-conversation-r3-5")
            .unwrap()
            .clone()
    };
    let any = the_cut(&under("any-distribution"));
    assert_eq!(any["interaction_verdict"], "additive");
    assert!(any["ci_family_low"].as_f64().unwrap() < 0.0);
    let v = under("normal");
    let cut = the_cut(&v);
    assert_eq!(cut["interaction_verdict"], "super-additive");
    assert!(cut["ci_family_low"].as_f64().unwrap() > 0.0);
    assert!(cut["ci_low"].as_f64().unwrap() > 0.0);
    let lost = cut["lost_cases"].as_u64().unwrap();
    let oow = cut["lost_by_slice"]["refunds/out-of-window"]
        .as_u64()
        .unwrap();
    assert!(oow * 4 >= lost * 3, "{oow} of {lost}");
    assert_eq!(
        cut["concentration"].as_str().unwrap(),
        format!("{oow} of {lost} lost cases are in refunds/out-of-window")
    );
    for key in [
        "arm",
        "removed",
        "components",
        "predicted_drop",
        "measured_drop",
        "predicted_score",
        "measured_score",
        "interaction",
        "se",
        "ci_low",
        "ci_high",
        "interaction_verdict",
        "lost_cases",
        "lost_by_slice",
    ] {
        assert!(cut.get(key).is_some(), "missing composed.{key}");
    }
    // Predicted = the sum of the parts' drops from the sweep (every demo arm has every case).
    let sweep = ablate()
        .args(["sweep", "--json", "--bootstrap", "0"])
        .arg(demo())
        .output()
        .unwrap();
    let sweep: Value = serde_json::from_slice(&sweep.stdout).unwrap();
    let drop_of = |name: &str| {
        sweep["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["arm"] == name)
            .unwrap()["drop"]
            .as_f64()
            .unwrap()
    };
    let parts: f64 = [
        "without-examples-8",
        "without-conversation",
        "without-passages-r3-5",
    ]
    .iter()
    .map(|a| drop_of(a))
    .sum();
    assert!((cut["predicted_drop"].as_f64().unwrap() - parts).abs() < 1e-12);
    let predicted = cut["predicted_drop"].as_f64().unwrap();
    let measured = cut["measured_drop"].as_f64().unwrap();
    assert!((cut["interaction"].as_f64().unwrap() - (measured - predicted)).abs() < 1e-12);
    // The window carriers' factorial gives Shapley values that sum to v(all) − v(none).
    let sh = &v["shapley"];
    let total: f64 = sh["values"]
        .as_object()
        .unwrap()
        .values()
        .map(|x| x.as_f64().unwrap())
        .sum();
    assert!(
        (total - (sh["v_all"].as_f64().unwrap() - sh["v_none"].as_f64().unwrap())).abs() < 1e-9
    );
    assert!(
        sh["interactions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["index"].as_f64().unwrap() < 0.0)
    );
    // Pairwise entries have a < b.
    for p in v["pairwise"].as_array().unwrap() {
        assert!(p["a"].as_str().unwrap() < p["b"].as_str().unwrap());
    }
}

#[test]
fn demo_interactions_human_output_tells_the_story() {
    let out = ablate()
        .args([
            "interactions",
            "--bootstrap",
            "500",
            "--guarantee",
            "normal",
        ])
        .arg(demo())
        .output()
        .unwrap();
    assert_mentions(
        &String::from_utf8_lossy(&out.stdout),
        &[
            "predicted",
            "measured",
            "super-additive",
            "lost cases are in refunds/out-of-window",
            "Shapley",
        ],
    );
}

fn plan(args: &[&str]) -> Value {
    json(
        ablate()
            .args(["plan", "--json", "--units"])
            .arg(demo().join("units.parquet"))
            .args(args),
    )
}

#[test]
fn plan_sizes_and_costs() {
    let loo = plan(&[
        "--design",
        "loo",
        "--cases",
        "500",
        "--repeats",
        "3",
        "--price-per-mtok",
        "3",
    ]);
    assert_eq!(loo["n_arms"], 20);
    assert_eq!(loo["calls"], 20 * 500 * 3);
    let tokens = loo["tokens"].as_f64().unwrap();
    // 20 arms at ~14,000 tokens minus each unit once.
    let full = 13990.0;
    assert!(
        (tokens - (20.0 * full - full) * 1500.0).abs() < 2000.0 * 1500.0,
        "{tokens}"
    );
    assert!((loo["cost"].as_f64().unwrap() - tokens / 1e6 * 3.0).abs() < 1e-6);
    let pairs = plan(&[
        "--design",
        "pairs",
        "--unit",
        "system",
        "--unit",
        "conversation",
        "--unit",
        "few_shot/01",
    ]);
    assert_eq!(pairs["n_arms"], 1 + 3 + 3);
    let fact = plan(&[
        "--design",
        "factorial",
        "--unit",
        "few_shot/03",
        "--unit",
        "few_shot/08",
        "--unit",
        "passages/rank3",
    ]);
    assert_eq!(fact["n_arms"], 8);
}

#[test]
fn plan_power_from_sd_and_pilot() {
    let p = plan(&["--design", "loo", "--sd", "0.1", "--cases", "400"]);
    let m = 1.959963984540054 + 0.8416212335729143;
    assert!((p["mde"].as_f64().unwrap() - m * 0.1 / 20.0).abs() < 1e-12);
    assert_eq!(
        p["cases_to_detect"],
        ((m * 0.1 / 0.005f64).powi(2)).ceil() as u64
    );
    let v = json(
        ablate()
            .args(["plan", "--json", "--design", "loo", "--units"])
            .arg(demo().join("units.parquet"))
            .arg("--pilot")
            .arg(demo()),
    );
    let sd3 = v["sd"].as_f64().unwrap();
    assert!(sd3 > 0.0);
    assert!(v["sd_source"].as_str().unwrap().starts_with("pilot"));
    // One repeat carries more repeat noise than the pilot's three.
    let out = ablate()
        .args([
            "plan",
            "--json",
            "--design",
            "loo",
            "--repeats",
            "1",
            "--units",
        ])
        .arg(demo().join("units.parquet"))
        .arg("--pilot")
        .arg(demo())
        .output()
        .unwrap();
    let v1: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v1["sd"].as_f64().unwrap() > sd3);
    assert!(v1["mde"].as_f64().unwrap() > v["mde"].as_f64().unwrap());
}

#[test]
fn plan_fractional_prints_generators_and_aliases() {
    let units = [
        "system",
        "few_shot/02",
        "few_shot/05",
        "passages/rank1",
        "conversation",
    ];
    let mut args = vec!["--design", "fractional"];
    for u in &units {
        args.extend(["--unit", u]);
    }
    let v = plan(&args);
    assert_eq!(v["n_arms"], 16);
    assert_eq!(v["fraction"]["resolution"], 5);
    assert_eq!(v["fraction"]["generators"][0], "E = ABCD");
    assert_eq!(v["fraction"]["defining_relation"][0], "ABCDE");
    assert_eq!(v["arms"][0]["arm"], "baseline");
    let human = ablate()
        .args(["plan", "--units"])
        .arg(demo().join("units.parquet"))
        .arg("--design")
        .arg("fractional")
        .output()
        .unwrap();
    assert!(human.status.success());
    assert_mentions(
        &String::from_utf8_lossy(&human.stdout),
        &["resolution", "generators", "aliases:", "defining relation"],
    );
}

#[test]
fn plan_errors() {
    assert_mentions(
        &fails(
            ablate()
                .args(["plan", "--design", "factorial", "--units"])
                .arg(demo().join("units.parquet")),
        ),
        &["2^19", "at most 12"],
    );
    assert_mentions(
        &fails(
            ablate()
                .args(["plan", "--design", "loo", "--unit", "nope", "--units"])
                .arg(demo().join("units.parquet")),
        ),
        &["--unit nope"],
    );
}

/// plan --out → simulate --design → check → interactions, for a fractional design: the fitted main
/// effects recover what the generative model puts in (system and the gold-passage rank 1 matter,
/// an inert example does not).
#[test]
fn fractional_round_trip() {
    let root = tempfile::tempdir().unwrap();
    let arms = root.path().join("arms.csv");
    let units = [
        "system",
        "few_shot/01",
        "few_shot/02",
        "passages/rank1",
        "conversation",
    ];
    let mut cmd = ablate();
    cmd.args(["plan", "--design", "fractional", "--units"])
        .arg(demo().join("units.parquet"))
        .arg("--out")
        .arg(&arms);
    for u in &units {
        cmd.args(["--unit", u]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exp = root.path().join("exp");
    common::succeeds(
        ablate()
            .args([
                "simulate",
                "--cases",
                "300",
                "--shadow-requests",
                "5",
                "--context-requests",
                "2",
                "--out",
            ])
            .arg(&exp)
            .arg("--design")
            .arg(&arms),
    );
    let check = ablate().arg("check").arg(&exp).output().unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let v = json(
        ablate()
            .args(["interactions", "--json", "--bootstrap", "0"])
            .arg(&exp),
    );
    let fit = &v["designs"][0];
    assert_eq!(fit["runs"], 16);
    assert_eq!(fit["main_effects"].as_array().unwrap().len(), 5);
    assert_eq!(fit["two_factor"].as_array().unwrap().len(), 10);
    let effect = |u: &str| {
        fit["main_effects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["term"] == u)
            .unwrap()["effect"]
            .as_f64()
            .unwrap()
    };
    assert!(effect("system") > 0.15, "{}", effect("system"));
    assert!(effect("passages/rank1") > 0.1);
    assert!(effect("few_shot/01").abs() < 0.02);
}

#[test]
fn plan_fractional_for_many_units_is_resolution_four_and_fast() {
    let root = tempfile::tempdir().unwrap();
    let units = root.path().join("units.csv");
    let mut text = String::from("unit,block,tokens\n");
    for i in 0..40 {
        text.push_str(&format!("u{i:02},b,10\n"));
    }
    std::fs::write(&units, &text).unwrap();
    let v = json(
        ablate()
            .args(["plan", "--json", "--design", "fractional", "--units"])
            .arg(&units),
    );
    assert_eq!(v["fraction"]["resolution"], 4);
    assert_eq!(v["n_arms"], 128);
    text.clear();
    text.push_str("unit,block,tokens\n");
    for i in 0..70 {
        text.push_str(&format!("u{i:02},b,10\n"));
    }
    std::fs::write(&units, &text).unwrap();
    let out = ablate()
        .args(["plan", "--design", "fractional", "--units"])
        .arg(&units)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A budget arm (removed = []) listed before the baseline must not stand in for v(all units).
#[test]
fn shapley_uses_the_baseline_for_the_full_prompt() {
    let w = redundant();
    w.edit(
        "arms.csv",
        "arm,removed,components\n",
        "arm,removed,components\nbudget,,\n",
    );
    let mut extra = String::new();
    for case in ["c1", "c2", "c3", "c4"] {
        extra.push_str(&format!("{case},budget,0,0\n"));
    }
    let text = std::fs::read_to_string(w.path("results.csv")).unwrap() + &extra;
    w.write("results.csv", &text);
    let r = analysis::interactions::run(&Experiment::load(&w.dir).unwrap(), &cfg(0)).unwrap();
    let sh = r.shapley.unwrap();
    assert_eq!(sh.v_all, 1.0);
    assert!((sh.values["x"] - 0.25).abs() < 1e-12);
}

#[test]
fn a_single_cluster_gives_no_confident_interval() {
    let w = redundant();
    w.write(
        "cases.csv",
        "case_id,slice,cluster\nc1,refunds,t\nc2,refunds,t\nc3,billing,t\nc4,billing,t\n",
    );
    let r = analysis::interactions::run(&Experiment::load(&w.dir).unwrap(), &cfg(500)).unwrap();
    let xy = r.composed.iter().find(|c| c.arm == "-xy").unwrap();
    assert!(xy.se.is_none() && xy.ci.map(|i| i.low).is_none());
    assert_eq!(xy.interaction_verdict.as_str(), "undetermined");
    let s = analysis::sweep::run(&Experiment::load(&w.dir).unwrap(), &cfg(500));
    assert!(
        s.arms
            .iter()
            .all(|a| a.confidence.as_str() == "inconclusive")
    );
}

#[test]
fn components_must_not_include_the_arm_itself_or_the_baseline() {
    let w = redundant();
    w.edit("arms.csv", "-xyz,x;y;z,-xy;-z", "-xyz,x;y;z,-xyz;-z");
    assert_mentions(
        &common::check_fails(&w.dir),
        &["arms.csv", "`components`", "own components"],
    );
    let w = redundant();
    w.edit("arms.csv", "-xyz,x;y;z,-xy;-z", "-xyz,x;y;z,baseline;-z");
    assert_mentions(
        &common::check_fails(&w.dir),
        &["arms.csv", "`components`", "baseline"],
    );
    let w = redundant();
    w.edit("arms.csv", "-xy,x;y,", "-xy,x;x,");
    assert_mentions(
        &common::check_fails(&w.dir),
        &["arms.csv", "`removed`", "twice"],
    );
}

/// The terminal's composed-cuts table leaves out the two long text columns (it was about 220
/// columns wide); `--json` keeps each cut's parts and lost cases by slice.
#[test]
fn the_terminal_table_of_composed_cuts_fits_a_wide_terminal_and_json_keeps_every_column() {
    use unicode_width::UnicodeWidthStr;
    let out = ablate()
        .args(["interactions", "--quiet"])
        .arg(demo())
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("arm "))
        .take_while(|l| !l.is_empty() && !l.starts_with('('))
        .collect();
    assert!(table.len() > 3, "{text}");
    assert!(!table[0].contains("components") && !table[0].contains("lost_by_slice"));
    let widest = table.iter().map(|l| l.width()).max().unwrap();
    assert!(widest <= 140, "{widest} columns:\n{text}");
    let v = json(ablate().args(["interactions", "--json"]).arg(demo()));
    let first = &v["composed"][0];
    assert!(
        first["components"].as_array().is_some_and(|c| c.len() > 1),
        "{first}"
    );
    assert!(first["lost_by_slice"].is_object(), "{first}");
}

/// Issue 45: `need` restores the units with the fewest tokens *the fraction counts*. Unit a (100
/// tokens) is kept by its `when:` rule on 9 cases in 10, so restoring it counts 100 tokens on the
/// 20 multi-turn cases: 10 a case; unit w (50 tokens) is dropped on every case, 50 a case. The
/// cut of both loses every multi-turn case, so one must come back: a, not w (before, w, the
/// smaller by `units.tokens`).
#[test]
fn need_restores_the_unit_with_the_fewest_counted_tokens() {
    let w = common::Workdir::empty();
    w.write(
        "experiment.toml",
        "set = \"counted\"\nthreshold_drop = 0.05\n\n[[blocks]]\nname = \"ablock\"\nneed = \"when:turns=single\"\n\n[[blocks]]\nname = \"wblock\"\nneed = \"needed_units\"\n",
    );
    w.write(
        "units.csv",
        "unit,block,tokens\na,ablock,100\nw,wblock,50\n",
    );
    w.write(
        "arms.csv",
        "arm,removed\nbaseline,\nwithout-a,a\nwithout-w,w\nwithout-a+w,a;w\n",
    );
    let mut cases = String::from("case_id,turns\n");
    let mut results = String::from("case_id,arm,repeat,score\n");
    for i in 0..200 {
        let multi = i % 10 == 0;
        cases.push_str(&format!(
            "c{i:03},{}\n",
            if multi { "multi" } else { "single" }
        ));
        for arm in ["baseline", "without-a", "without-w"] {
            results.push_str(&format!("c{i:03},{arm},0,1\n"));
        }
        results.push_str(&format!(
            "c{i:03},without-a+w,0,{}\n",
            if multi { 0 } else { 1 }
        ));
    }
    w.write("cases.csv", &cases);
    w.write("results.csv", &results);
    let v = common::json(
        common::ablate()
            .args(["need", "--json", "--quiet"])
            .arg(&w.dir),
    );
    let forced: Vec<&str> = v["forced_needed"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|f| f["unit"].as_str().unwrap())
        .collect();
    assert_eq!(forced, ["a"], "{v}");
}
