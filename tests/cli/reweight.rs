//! `ablate reweight` and `ablate stress`: hand-computed estimates, invariances, errors for
//! unmeasured strata and bad shares, and the demo's story (the conversation tail flips to needed
//! under production's 23% multi-turn share).

use crate::common;
use ablate::io::prelude::*;

use ablate::analysis::reweight::{self, ReweightOptions};
use ablate::io::Experiment;
use common::{Workdir, ablate, assert_mentions, demo, fails, json};
use serde_json::Value;

/// Five main cases: c1, c2 single-turn; c3, c4, c5 multi-turn. Baseline passes everything; arm A
/// fails c2, c3, c4. Production: 60% single, 40% multi.
fn two_strata() -> Workdir {
    let w = Workdir::empty();
    w.write(
        "experiment.toml",
        "set = \"strata\"\nthreshold_drop = 0.5\nstrata = [\"turns\"]\n",
    );
    w.write(
        "cases.csv",
        "case_id,turns,stress\nc1,single,false\nc2,single,false\nc3,multi,false\nc4,multi,false\nc5,multi,false\n",
    );
    let a = [("c1", 1), ("c2", 0), ("c3", 0), ("c4", 0), ("c5", 1)];
    let mut results = String::from("case_id,arm,repeat,score\n");
    for (case, s) in a {
        results.push_str(&format!("{case},baseline,0,1\n{case},A,0,{s}\n"));
    }
    w.write("results.csv", &results);
    w.write("mix.csv", "turns,share\nsingle,0.6\nmulti,0.4\n");
    w
}

fn run(w: &Workdir, opts: ReweightOptions) -> reweight::ReweightOutput {
    reweight::run(&Experiment::load(&w.dir).unwrap(), &opts).unwrap()
}

#[test]
fn post_stratified_by_hand() {
    let w = two_strata();
    let r = run(&w, ReweightOptions::default());
    let a = &r.arms[0];
    // d: single (0, 1) mean 0.5, s² 0.5; multi (1, 1, 0) mean 2/3, s² 1/3.
    assert!((a.drop_eval - 0.6).abs() < 1e-12);
    assert!((a.drop_production.unwrap() - (0.6 * 0.5 + 0.4 * 2.0 / 3.0)).abs() < 1e-12);
    let se2: f64 = 0.36 * 0.5 / 2.0 + 0.16 * (1.0 / 3.0) / 3.0;
    assert!((a.se_production.unwrap() - se2.sqrt()).abs() < 1e-12);
    // verdicts: eval 0.6 ≥ 0.5 needed; production 0.5667 needed.
    assert!(!a.flipped);
    // Kish: w = 0.3, 0.3, 0.4/3 ×3 → 1 / (0.18 + 3·(0.4/3)²)
    let kish = 1.0 / (0.18 + 3.0 * (0.4f64 / 3.0).powi(2));
    assert!((r.effective_cases - kish).abs() < 1e-9);
    assert_eq!(r.coverage.len(), 2);
    let multi = r
        .coverage
        .iter()
        .find(|c| c.stratum["turns"] == "multi")
        .unwrap();
    assert_eq!(multi.eval_cases, 3);
    assert!((multi.eval_share - 0.6).abs() < 1e-12);
    assert!((multi.ratio.unwrap() - 0.4 / 0.6).abs() < 1e-12);
    assert_eq!(multi.status.as_str(), "ok");
}

#[test]
fn the_eval_sets_own_mix_changes_nothing() {
    let w = Workdir::demo_copy();
    w.write("mix.csv", "turns,share\nsingle,0.94\nmulti,0.06\n");
    std::fs::remove_file(w.path("mix.parquet")).unwrap();
    let r = run(&w, ReweightOptions::default());
    assert!((r.baseline.score_production.unwrap() - r.baseline.score_eval).abs() < 1e-12);
    for a in &r.arms {
        assert!(
            (a.drop_production.unwrap() - a.drop_eval).abs() < 1e-12,
            "{}",
            a.arm
        );
        assert!(!a.flipped);
    }
    assert!((r.effective_cases - 500.0).abs() < 1e-6);
    assert!(r.known_coverage_gap.is_none());
}

#[test]
fn raking_one_margin_per_mix_matches_post_stratification_on_that_margin() {
    // Raking with the turns margin and a slice margin equal to the set's own slice shares gives
    // the turns post-stratified estimate when slices and turns are independent in the set; in
    // general it does not, so check the defining property instead: the weighted margins hit
    // their targets.
    let w = Workdir::demo_copy();
    let v = json(
        ablate()
            .args(["reweight", "--json", "--mix"])
            .arg(w.path("mix.parquet"))
            .arg("--mix")
            .arg(w.path("mix-slice.parquet"))
            .arg(&w.dir),
    );
    assert_eq!(v["method"], "raked");
    assert_eq!(v["strata"], serde_json::json!(["turns", "slice"]));
    assert_eq!(v["coverage"].as_array().unwrap().len(), 7);
}

#[test]
fn demo_conversation_flips_under_production_mix() {
    let v = json(ablate().args(["reweight", "--json"]).arg(demo()));
    assert_eq!(v["method"], "post-stratified");
    let conv = v["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"] == "without-conversation")
        .unwrap();
    assert_eq!(conv["verdict_eval"], "removable-on-this-set");
    assert_eq!(conv["verdict_production"], "needed");
    assert_eq!(conv["flipped"], true);
    // The production interval ([−0.0483, 0.0812] on its own; wider at the family's level)
    // covers the threshold: the flip is of the point verdicts, not a confident one.
    assert_eq!(conv["confidence_production"], "inconclusive");
    assert_eq!(conv["flip_confident"], false);
    let prod = conv["drop_production"].as_f64().unwrap();
    assert!((0.01..0.02).contains(&prod), "{prod}");
    assert_eq!(
        v["known_coverage_gap"],
        "6% turns=multi in set vs 23% in production"
    );
    for key in [
        "strata",
        "method",
        "effective_cases",
        "unmeasured_share",
        "baseline",
        "arms",
        "coverage",
        "known_coverage_gap",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    for key in ["score_eval", "score_production", "se_production"] {
        assert!(v["baseline"].get(key).is_some(), "missing baseline.{key}");
    }
    for key in [
        "stratum",
        "eval_cases",
        "eval_share",
        "production_share",
        "ratio",
        "status",
    ] {
        assert!(
            v["coverage"][0].get(key).is_some(),
            "missing coverage.{key}"
        );
    }
    let human = ablate().arg("reweight").arg(demo()).output().unwrap();
    assert_mentions(
        &String::from_utf8_lossy(&human.stdout),
        &[
            "No verdict flips confidently",
            "1 point verdict(s) differ",
            "without-conversation",
            "(point verdicts only)",
            "under-sampled",
            "known coverage gap",
        ],
    );
}

#[test]
fn unmeasured_production_stratum_is_an_error_unless_allowed() {
    let w = two_strata();
    w.write("mix.csv", "turns,share\nsingle,0.5\nmulti,0.3\nvoice,0.2\n");
    assert_mentions(
        &fails(ablate().arg("reweight").arg(&w.dir)),
        &["mix.csv", "turns=voice", "20.0%", "--allow-unmeasured"],
    );

    let v = json(
        ablate()
            .args(["reweight", "--json", "--allow-unmeasured"])
            .arg(&w.dir),
    );
    assert!((v["unmeasured_share"].as_f64().unwrap() - 0.2).abs() < 1e-12);
    // Renormalised: single 0.5/0.8, multi 0.3/0.8.
    let drop = v["arms"][0]["drop_production"].as_f64().unwrap();
    assert!((drop - (0.625 * 0.5 + 0.375 * 2.0 / 3.0)).abs() < 1e-12);
    assert_eq!(
        v["known_coverage_gap"],
        "0% turns=voice in set vs 20% in production"
    );
}

#[test]
fn mix_file_shares_must_sum_to_one() {
    let w = two_strata();
    w.write("other.csv", "turns,share\nsingle,0.6\nmulti,0.5\n");
    assert_mentions(
        &fails(
            ablate()
                .args(["reweight", "--mix"])
                .arg(w.path("other.csv"))
                .arg(&w.dir),
        ),
        &["other.csv", "share", "sum = 1.1"],
    );
}

#[test]
fn one_case_stratum_gives_null_se_and_a_warning() {
    let w = two_strata();
    w.edit("cases.csv", "c2,single", "c2,multi");
    let r = run(&w, ReweightOptions::default());
    assert!(r.arms[0].se_production.is_none());
    assert!(r.arms[0].drop_production.is_some());
    assert!(
        r.warnings
            .iter()
            .any(|m| m.message.contains("turns=single") && m.message.contains("one eval case")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn eval_strata_absent_from_mix_get_weight_zero() {
    let w = two_strata();
    w.write("mix.csv", "turns,share\nsingle,1.0\n");
    let r = run(&w, ReweightOptions::default());
    assert_eq!(r.unweighted_strata, vec!["turns=multi".to_string()]);
    assert!((r.arms[0].drop_production.unwrap() - 0.5).abs() < 1e-12);
}

#[test]
fn mix_from_a_shadow_log() {
    let v = json(
        ablate()
            .args(["reweight", "--json", "--by", "turns", "--mix-from"])
            .arg(demo().join("shadow.parquet"))
            .arg(demo()),
    );
    let multi = v["coverage"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["stratum"]["turns"] == "multi")
        .unwrap();
    let share = multi["production_share"].as_f64().unwrap();
    assert!((0.2..0.26).contains(&share), "{share}");
}

#[test]
fn mix_from_without_by_is_a_usage_error() {
    assert_mentions(
        &fails(
            ablate()
                .arg("reweight")
                .arg("--mix-from")
                .arg(demo().join("shadow.parquet"))
                .arg(demo()),
        ),
        &["--by"],
    );
}

#[test]
fn no_mix_at_all() {
    let w = two_strata();
    std::fs::remove_file(w.path("mix.csv")).unwrap();
    assert_mentions(
        &fails(ablate().arg("reweight").arg(&w.dir)),
        &["mix.parquet", "--mix"],
    );
}

#[test]
fn stress_on_the_demo() {
    let out = ablate()
        .args(["stress", "--json"])
        .arg(demo())
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["stress_cases"], 80);
    assert_eq!(v["main_cases"], 500);
    let arms = v["arms"].as_array().unwrap();
    let conv = arms
        .iter()
        .find(|a| a["arm"] == "without-conversation")
        .unwrap();
    assert_eq!(conv["verdict_main"], "removable-on-this-set");
    assert_eq!(conv["verdict_stress"], "needed");
    assert_eq!(conv["clears_both"], false);
    // The main-set verdicts are the sweep's; on 80 stress cases nothing is confidently clear at
    // the family's level, so nothing clears both.
    assert_eq!(conv["confidence_main"], "inconclusive");
    // Family-wise over 41 arms no removable arm of the demo is confident on the main set either.
    let six = arms
        .iter()
        .find(|a| a["arm"] == "without-few_shot/06")
        .unwrap();
    assert_eq!(six["verdict_main"], "removable-on-this-set");
    assert_eq!(six["confidence_main"], "inconclusive");
    assert_eq!(six["confidence_stress"], "inconclusive");
    assert!(arms.iter().all(|a| a["clears_both"] == false));
    for key in [
        "arm",
        "drop_main",
        "se_main",
        "drop_stress",
        "se_stress",
        "verdict_main",
        "verdict_stress",
        "clears_both",
    ] {
        assert!(arms[0].get(key).is_some(), "missing {key}");
    }
}

#[test]
fn stress_by_hand() {
    let w = Workdir::tiny();
    // s1 (the stress case) fails in without-ex1; main cases do not.
    w.edit(
        "results.csv",
        "s1,without-ex1,0,1\n",
        "s1,without-ex1,0,0\n",
    );
    w.edit(
        "results.csv",
        "s1,without-ex1,1,1\n",
        "s1,without-ex1,1,0\n",
    );
    let exp = Experiment::load(&w.dir).unwrap();
    let cfg = ablate::analysis::Config::default();
    let sweep = ablate::analysis::sweep::run(&exp, &cfg);
    let r = ablate::analysis::stress::run(&exp, &sweep, &cfg);
    let ex1 = r.arms.iter().find(|a| a.arm == "without-ex1").unwrap();
    assert_eq!(ex1.drop_main, Some(0.0));
    assert_eq!(ex1.drop_stress, Some(1.0));
    assert_eq!(ex1.se_stress, None, "one stress case: no se");
    assert_eq!(ex1.lost_stress, 1);
    assert!(!ex1.clears_both);
}

#[test]
fn every_production_stratum_unmeasured_is_an_error_even_when_allowed() {
    let w = two_strata();
    w.write("mix.csv", "turns,share\nvoice,0.6\nchat,0.4\n");
    assert_mentions(
        &fails(
            ablate()
                .args(["reweight", "--allow-unmeasured"])
                .arg(&w.dir),
        ),
        &["mix.csv", "no production stratum"],
    );
}

#[test]
fn manifest_strata_missing_from_the_mix() {
    let w = two_strata();
    w.write("cases.csv", "case_id,turns,slice,stress\nc1,single,a,false\nc2,single,a,false\nc3,multi,b,false\nc4,multi,b,false\nc5,multi,b,false\n");
    w.write("mix.csv", "slice,share\na,0.5\nb,0.5\n");
    assert_mentions(
        &fails(ablate().arg("reweight").arg(&w.dir)),
        &["mix.csv", "turns", "--by"],
    );
    // --by chooses explicitly.
    common::succeeds(
        ablate()
            .args(["reweight", "--json", "--by", "slice"])
            .arg(&w.dir),
    );
}

/// The demo's cases come in clusters (shared source tickets): production se is clustered. With
/// every case its own cluster it equals the unclustered se exactly; with the real clusters it
/// differs.
#[test]
fn production_se_is_clustered() {
    use polars::prelude::*;
    let se_with = |cluster: Option<&str>| -> Vec<f64> {
        let w = common::Workdir::demo_copy();
        let path = w.path("cases.parquet");
        let mut df = ParquetReader::new(std::fs::File::open(&path).unwrap())
            .finish()
            .unwrap();
        match cluster {
            Some("case_id") => {
                let ids = df.column("case_id").unwrap().clone();
                df.with_column(ids.with_name("cluster".into())).unwrap();
            }
            Some(_) => {}
            None => {
                df = df.drop("cluster").unwrap();
            }
        }
        ParquetWriter::new(std::fs::File::create(&path).unwrap())
            .finish(&mut df)
            .unwrap();
        let v = common::json(
            common::ablate()
                .args(["reweight", "--json", "--bootstrap", "0"])
                .arg(&w.dir),
        );
        v["arms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["se_production"].as_f64().unwrap())
            .collect()
    };
    let plain = se_with(None);
    let singletons = se_with(Some("case_id"));
    let clustered = se_with(Some("real"));
    for (p, s) in plain.iter().zip(&singletons) {
        assert!((p - s).abs() < 1e-12, "{p} vs {s}");
    }
    assert!(
        plain
            .iter()
            .zip(&clustered)
            .any(|(p, c)| (p - c).abs() > 1e-6)
    );
}

/// Issue 45: a flat experiment (every case scores 1.0 in both arms) gets the exact bound in
/// production as in the sweep, inconclusive, never a zero-width "confident" [0, 0].
#[test]
fn no_spread_in_production_is_the_exact_bound_not_certainty() {
    let w = common::Workdir::empty();
    w.write(
        "experiment.toml",
        "set = \"flat\"\nthreshold_drop = 0.005\nstrata = [\"turns\"]\n",
    );
    let mut cases = String::from("case_id,turns\n");
    let mut results = String::from("case_id,arm,repeat,score\n");
    for i in 0..20 {
        cases.push_str(&format!(
            "c{i:02},{}\n",
            if i % 2 == 0 { "single" } else { "multi" }
        ));
        for arm in ["baseline", "without-x"] {
            results.push_str(&format!("c{i:02},{arm},0,1.0\n"));
        }
    }
    w.write("cases.csv", &cases);
    w.write("results.csv", &results);
    w.write("mix.csv", "turns,share\nsingle,0.7\nmulti,0.3\n");
    let v = common::json(
        common::ablate()
            .args(["reweight", "--json", "--quiet"])
            .arg(&w.dir),
    );
    let arm = &v["arms"][0];
    assert_eq!(arm["drop_production"], 0.0);
    assert_eq!(arm["confidence_production"], "inconclusive", "{arm}");
    let (lo, hi) = (
        arm["ci_production_low"].as_f64().unwrap(),
        arm["ci_production_high"].as_f64().unwrap(),
    );
    // The sweep's exact bound on the units the weights leave: Kish's 1/(10·0.07² + 10·0.03²)
    // = 17.2 of the 20 identical units, so ±(1 − 0.025^(1/17)) = ±0.195064.
    assert!(
        (hi - 0.195064).abs() < 1e-6 && (lo + 0.195064).abs() < 1e-6,
        "{lo} {hi}"
    );
}

/// Issue 45, item 5: production verdicts are judged by the sweep's interval family. On the demo
/// few_shot/04's production family interval is about as wide as its set family interval (it had
/// been a normal interval at z, [−0.0091, 0.0049], and confidently removable); under `normal` it
/// is the t interval on the production se at 1 − α/K, never wider than the any-distribution one.
#[test]
fn production_intervals_are_the_sweeps_family() {
    let arm_of = |v: &Value, name: &str| {
        v["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["arm"] == name)
            .unwrap()
            .clone()
    };
    let any = json(ablate().args(["reweight", "--json"]).arg(demo()));
    let normal = json(
        ablate()
            .args(["reweight", "--json", "--guarantee", "normal"])
            .arg(demo()),
    );
    let sweep = json(ablate().args(["sweep", "--json"]).arg(demo()));
    let width = |a: &Value, key: &str| {
        a[format!("{key}_high")].as_f64().unwrap() - a[format!("{key}_low")].as_f64().unwrap()
    };
    let a = arm_of(&any, "without-few_shot/04");
    assert_eq!(a["confidence_production"], "inconclusive");
    let set = width(&arm_of(&sweep, "without-few_shot/04"), "ci_family");
    let production = width(&a, "ci_production_family");
    assert!(
        production > 0.8 * set && production < 1.5 * set,
        "{production} against {set}"
    );
    for arm in any["arms"].as_array().unwrap() {
        let name = arm["arm"].as_str().unwrap();
        let n = arm_of(&normal, name);
        assert!(
            width(&n, "ci_production_family") <= width(arm, "ci_production_family") + 1e-12,
            "{name}"
        );
        // The normal interval: t(1 − α/2K; C − 1) ≈ 3.3 times the larger of the production se
        // and the clusters' jackknife se, so at least 3.3 production se's.
        let half = width(&n, "ci_production_family") / 2.0;
        let se = n["se_production"].as_f64().unwrap();
        assert!(
            half > 3.2 * se && half < 5.0 * se,
            "{name}: {half} against se {se}"
        );
    }
}
