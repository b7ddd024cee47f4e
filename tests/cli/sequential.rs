//! Anytime-valid monitoring: the tests at the threshold keep their error rate on null streams and
//! stop on alternatives (by simulation); `watch` and `next` on a growing results table; the
//! replay of the demo; clusters of unequal sizes.

use crate::common;
use ablate::io::prelude::*;

use std::path::Path;

use ablate::stats::betting::stopping_time;
use common::{Workdir, ablate, codes, demo, has_code, json};
use polars::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use statrs::distribution::{Binomial, DiscreteCDF};

/// Largest count of wrong decisions a level-α procedure allows in `streams` streams, beyond
/// which the binomial tail is below 0.001: Monte Carlo error, not slack in the procedure.
fn binomial_bound(streams: u64, alpha: f64) -> u64 {
    let b = Binomial::new(alpha, streams).unwrap();
    (0..=streams).find(|&k| 1.0 - b.cdf(k) < 0.001).unwrap()
}

/// One stream until it decides (+1 needed, −1 removable, 0 not within n_max) and when.
fn run(
    rng: &mut ChaCha8Rng,
    thr: f64,
    alpha: f64,
    n_max: usize,
    draw: &dyn Fn(&mut ChaCha8Rng) -> f64,
) -> (i8, usize) {
    let (d, n) = stopping_time(1.0, thr, alpha, n_max, || draw(rng));
    (d.map_or(0, |needed| if needed { 1 } else { -1 }), n)
}

#[test]
fn null_streams_keep_the_error_rate_at_or_below_alpha() {
    // True drop exactly at the threshold, bounded noise of two shapes; 500 streams each, looked
    // at after every observation. Any decision is wrong.
    let thr = 0.05;
    let alpha = 0.05;
    let streams = 500;
    let uniform = move |r: &mut ChaCha8Rng| thr + r.random_range(-0.6..0.6);
    let two_point = move |r: &mut ChaCha8Rng| {
        if r.random::<bool>() {
            thr + 0.3
        } else {
            thr - 0.3
        }
    };
    for (name, draw) in [
        ("uniform", &uniform as &dyn Fn(&mut ChaCha8Rng) -> f64),
        ("two-point", &two_point),
    ] {
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        let wrong = (0..streams)
            .filter(|_| run(&mut rng, thr, alpha, 2_000, draw).0 != 0)
            .count() as u64;
        let bound = binomial_bound(streams, alpha);
        assert!(
            wrong <= bound,
            "{name}: {wrong} of {streams} null streams decided (binomial bound at α = {alpha}: {bound})"
        );
    }
}

#[test]
fn across_arms_the_family_error_stays_at_or_below_alpha() {
    // 10 arms at the null, each at α/10: the share of families with any decision ≤ α.
    let thr = 0.0;
    let alpha = 0.1;
    let families = 300;
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let draw = |r: &mut ChaCha8Rng| thr + r.random_range(-0.3..0.3);
    let wrong = (0..families)
        .filter(|_| (0..10).any(|_| run(&mut rng, thr, alpha / 10.0, 1_000, &draw).0 != 0))
        .count() as u64;
    assert!(
        wrong <= binomial_bound(families, alpha),
        "{wrong} of {families}"
    );
}

#[test]
fn alternatives_stop_in_finite_time_on_the_right_side() {
    let thr = 0.05;
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for (shift, want) in [(0.15, 1i8), (-0.15, -1i8)] {
        let draw = move |r: &mut ChaCha8Rng| thr + shift + r.random_range(-0.3..0.3);
        for _ in 0..100 {
            let (decision, n) = run(&mut rng, thr, 0.05, 5_000, &draw);
            assert_eq!(decision, want, "shift {shift}: stopped at {n}");
            assert!(n < 1_000, "shift {shift}: took {n}");
        }
    }
}

/// The demo's case ids in the first `units` units of the seeded order (seed 0).
fn first_units(units: usize) -> std::collections::HashSet<String> {
    let exp = ablate::io::Experiment::load(&demo()).unwrap();
    let (order, _) = ablate::analysis::sequential::unit_order(&exp, 0);
    order[..units]
        .iter()
        .flatten()
        .map(|&c| exp.cases.ids[c].clone())
        .collect()
}

/// A copy of the demo whose results hold only the cases `keep` accepts.
fn demo_with_results(keep: impl Fn(&str) -> bool) -> Workdir {
    let w = Workdir::demo_copy();
    let path = w.dir.join("results.parquet");
    let df = ParquetReader::new(std::fs::File::open(&path).unwrap())
        .finish()
        .unwrap();
    let ids = df.column("case_id").unwrap().str().unwrap().clone();
    let mask: BooleanChunked = (0..ids.len()).map(|i| ids.get(i).map(&keep)).collect();
    let mut part = df.filter(&mask).unwrap();
    ablate::io::write::parquet(&mut part, &path).unwrap();
    w
}

fn watch(dir: &Path, extra: &[&str]) -> serde_json::Value {
    json(ablate().args(["--json", "watch"]).arg(dir).args(extra))
}

fn arm<'a>(w: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    w["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"] == name)
        .unwrap()
}

#[test]
fn watch_on_a_growing_table_never_flips_a_decided_arm() {
    // The first 200 units of the seeded order first, then all of them.
    let first = first_units(200);
    let part = demo_with_results(|id| first.contains(id));
    let early = watch(&part.dir, &[]);
    assert!(part.dir.join(".ablate-watch.json").is_file());
    let system = arm(&early, "without-system");
    assert_eq!(system["state"], "needed", "{system}");
    assert!(system["units"].as_u64().unwrap() < 200);
    let open: Vec<&serde_json::Value> = early["arms"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["state"] == "continue")
        .collect();
    assert!(!open.is_empty());
    // A projection where the drop is off the threshold (null beyond 100× the set).
    assert!(
        open.iter()
            .all(|a| a["units_still_needed"].as_u64() != Some(0))
    );
    assert!(
        open.iter()
            .any(|a| a["units_still_needed"].as_u64().is_some())
    );

    // All the results: the decided arms keep their decision, at the same unit.
    std::fs::copy(
        demo().join("results.parquet"),
        part.dir.join("results.parquet"),
    )
    .unwrap();
    let later = watch(&part.dir, &[]);
    for a in early["arms"].as_array().unwrap() {
        let b = arm(&later, a["arm"].as_str().unwrap());
        if a["state"] != "continue" {
            assert_eq!(a["state"], b["state"], "{}", a["arm"]);
            assert_eq!(a["decided_at"], b["decided_at"], "{}", a["arm"]);
        } else {
            assert!(b["units"].as_u64() >= a["units"].as_u64());
        }
    }
    // A recorded decision stands even if the data under it change; --reopen decides again.
    let mut state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(part.dir.join(".ablate-watch.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(state["runs"].as_array().unwrap().len(), 1);
    state["runs"][0]["decisions"]["without-system"]["state"] = "removable".into();
    std::fs::write(part.dir.join(".ablate-watch.json"), state.to_string()).unwrap();
    let kept = watch(&part.dir, &[]);
    assert_eq!(arm(&kept, "without-system")["state"], "removable");
    assert_eq!(arm(&kept, "without-system")["recorded"], true);
    assert!(kept["warnings"].to_string().contains("--reopen"));
    let reopened = watch(&part.dir, &["--reopen"]);
    assert_eq!(arm(&reopened, "without-system")["state"], "needed");
}

#[test]
fn decisions_are_kept_per_settings_and_never_shown_under_others() {
    let first = first_units(150);
    let part = demo_with_results(|id| first.contains(id));
    // An exploratory run at 50% decides arms that the 95% run does not.
    let loose = watch(&part.dir, &["--confidence", "0.5"]);
    let strict_fresh = {
        let copy = demo_with_results(|id| first.contains(id));
        watch(&copy.dir, &[])
    };
    let decided = |w: &serde_json::Value| -> Vec<String> {
        w["arms"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["state"] != "continue")
            .map(|a| a["arm"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(decided(&loose).len() > decided(&strict_fresh).len());
    let strict = watch(&part.dir, &[]);
    assert_eq!(
        decided(&strict),
        decided(&strict_fresh),
        "no decision taken from the 50% run"
    );
    assert!(strict["warnings"].to_string().contains("other settings"));
    // A run with another seed neither uses nor erases seed 0's decisions.
    let _ = watch(&part.dir, &["--seed", "1"]);
    let again = watch(&part.dir, &[]);
    for a in decided(&strict) {
        assert_eq!(arm(&again, &a)["recorded"], true, "{a}");
    }
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(part.dir.join(".ablate-watch.json")).unwrap(),
    )
    .unwrap();
    assert!(state["runs"].as_array().unwrap().len() >= 2, "{state}");
    // next schedules the arms the 95% run leaves open, whatever the 50% run decided.
    let batch = part.root.path().join("batch.parquet");
    let plan = json(
        ablate()
            .args(["--json", "next", "--calls", "100000", "--out"])
            .arg(&batch)
            .arg(&part.dir),
    );
    let scheduled: std::collections::HashSet<&str> = plan["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["arm"].as_str().unwrap())
        .collect();
    for a in decided(&loose) {
        if !decided(&strict).contains(&a) {
            assert!(scheduled.contains(a.as_str()), "{a} is still open at 95%");
        }
    }
}

#[test]
fn next_spends_the_calls_on_open_arms_and_the_batch_runs() {
    // Every fourth case: most complete cases then wait behind a gap in the order, which the
    // batch fills first.
    let part = demo_with_results(|id| id.bytes().map(u32::from).sum::<u32>() % 4 == 0);
    let before = watch(&part.dir, &[]);
    let batch = part.root.path().join("batch.csv");
    let plan = json(
        ablate()
            .args(["--json", "next"])
            .arg(&part.dir)
            .args(["--calls", "3000", "--out"])
            .arg(&batch),
    );
    let planned = plan["planned"].as_u64().unwrap();
    assert!(planned > 2_000 && planned <= 3_000, "{planned}");
    let rows = CsvReadOptions::default()
        .try_into_reader_with_file_path(Some(batch.clone()))
        .unwrap()
        .finish()
        .unwrap();
    assert_eq!(rows.height() as u64, planned);
    let names: Vec<String> = rows
        .get_column_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    assert_eq!(names, ["case_id", "arm", "repeat"]);
    // Only arms still open, and the baseline.
    let open: Vec<String> = before["arms"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["state"] == "continue")
        .map(|a| a["arm"].as_str().unwrap().to_string())
        .collect();
    let arms = rows.column("arm").unwrap().str().unwrap().clone();
    for a in (0..arms.len()).filter_map(|i| arms.get(i)) {
        assert!(a == "baseline" || open.iter().any(|o| o == a), "{a}");
    }

    // "Run" the batch: take those rows from the complete demo and append them.
    let full = ParquetReader::new(std::fs::File::open(demo().join("results.parquet")).unwrap())
        .finish()
        .unwrap();
    let current =
        ParquetReader::new(std::fs::File::open(part.dir.join("results.parquet")).unwrap())
            .finish()
            .unwrap();
    let rows = rows
        .lazy()
        .with_column(col("repeat").cast(DataType::Int64))
        .collect()
        .unwrap();
    let ran = full
        .clone()
        .lazy()
        .with_column(col("repeat").cast(DataType::Int64))
        .join(
            rows.lazy(),
            [col("case_id"), col("arm"), col("repeat")],
            [col("case_id"), col("arm"), col("repeat")],
            JoinArgs::new(JoinType::Inner),
        )
        .collect()
        .unwrap();
    assert_eq!(
        ran.height() as u64,
        planned,
        "every planned call is new and exists"
    );
    let mut grown = concat(
        [
            current
                .lazy()
                .with_column(col("repeat").cast(DataType::Int64)),
            ran.lazy(),
        ],
        UnionArgs::default(),
    )
    .unwrap()
    .collect()
    .unwrap();
    ablate::io::write::parquet(&mut grown, &part.dir.join("results.parquet")).unwrap();
    let after = watch(&part.dir, &[]);
    assert_eq!(
        after["calls_made"].as_u64().unwrap(),
        before["calls_made"].as_u64().unwrap() + planned
    );
    let used = |w: &serde_json::Value| -> u64 {
        w["arms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["units"].as_u64().unwrap())
            .sum()
    };
    assert!(used(&after) > used(&before));
}

#[test]
fn replay_of_the_demo_saves_calls_and_agrees_with_the_full_run() {
    let r = json(
        ablate()
            .args(["--json", "watch", "--replay", "--bootstrap", "1000"])
            .arg(demo()),
    );
    assert_eq!(r["calls_full"], 42 * 500 * 3);
    let seq = r["calls_sequential"].as_u64().unwrap();
    assert!(seq < 63_000 && r["saving"].as_f64().unwrap() > 0.0);
    assert!(r["decided"].as_u64().unwrap() >= 5);
    assert_eq!(r["agreeing"], r["decided"], "{r}");
    // The same seed gives the same replay; another seed another order.
    let again = json(
        ablate()
            .args(["--json", "watch", "--replay", "--bootstrap", "1000"])
            .arg(demo()),
    );
    assert_eq!(r, again);
}

#[test]
fn scores_outside_the_declared_bounds_are_refused() {
    let w = Workdir::demo_copy();
    let toml = w.dir.join("experiment.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, format!("score_max = 0.5\n{text}")).unwrap();
    let err = common::fails(ablate().arg("watch").arg(&w.dir));
    common::assert_mentions(&err, &["score_max", "experiment.toml"]);
}

#[test]
fn a_threshold_no_drop_can_cross_is_refused() {
    // Scores in [0, 1]: a paired drop lies in [−1, 1], so no data decides against 1.
    let w = Workdir::tiny();
    w.edit(
        "experiment.toml",
        "threshold_drop = 0.05",
        "threshold_drop = 1.0",
    );
    let err = common::fails(ablate().arg("watch").arg(&w.dir));
    common::assert_mentions(&err, &["threshold_drop 1", "inside", "experiment.toml"]);
}

#[test]
fn the_order_depends_on_the_seed_and_ids_not_on_row_order() {
    let w = Workdir::demo_copy();
    let path = w.dir.join("cases.parquet");
    let cases = ParquetReader::new(std::fs::File::open(&path).unwrap())
        .finish()
        .unwrap();
    let mut reversed = cases.reverse();
    ablate::io::write::parquet(&mut reversed, &path).unwrap();
    let exp_a = ablate::io::Experiment::load(&demo()).unwrap();
    let exp_b = ablate::io::Experiment::load(&w.dir).unwrap();
    let ids = |exp: &ablate::io::Experiment, seed| -> Vec<Vec<String>> {
        let (order, _) = ablate::analysis::sequential::unit_order(exp, seed);
        order
            .iter()
            .map(|u| {
                let mut v: Vec<String> = u.iter().map(|&c| exp.cases.ids[c].clone()).collect();
                v.sort();
                v
            })
            .collect()
    };
    assert_eq!(ids(&exp_a, 0), ids(&exp_b, 0));
    assert_ne!(ids(&exp_a, 0), ids(&exp_a, 1));
}

/// An experiment whose small clusters lose much and whose large clusters lose nothing: 300
/// one-case clusters where the arm fails 30% of the cases the baseline passes, and 300 ten-case
/// clusters where it never does. The case-weighted drop `sweep` reports is 90/3300 = 0.027,
/// below the threshold 0.05; the mean of the cluster means is 0.15, above it.
fn unequal_clusters() -> Workdir {
    let w = Workdir::empty();
    w.write(
        "experiment.toml",
        "set = \"clusters\"\nmodel = \"m\"\nthreshold_drop = 0.05\n",
    );
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let (mut cases, mut results) = (
        String::from("case_id,cluster,stress\n"),
        String::from("case_id,arm,repeat,score\n"),
    );
    for c in 0..600 {
        let size = if c % 2 == 0 { 1 } else { 10 };
        for k in 0..size {
            let id = format!("k{c}_{k}");
            cases.push_str(&format!("{id},t{c},false\n"));
            let lost = size == 1 && rng.random::<f64>() < 0.3;
            results.push_str(&format!(
                "{id},baseline,0,1\n{id},cut,0,{}\n",
                u8::from(!lost)
            ));
        }
    }
    w.write("cases.csv", &cases);
    w.write("results.csv", &results);
    w
}

#[test]
fn with_unequal_clusters_watch_tests_the_drop_sweep_reports() {
    let w = unequal_clusters();
    let sweep = json(
        ablate()
            .args(["sweep", "--json", "--bootstrap", "200"])
            .arg(&w.dir),
    );
    let s = &sweep["arms"][0];
    let drop = s["drop"].as_f64().unwrap();
    assert!((drop - 90.0 / 3300.0).abs() < 0.01, "{s}");
    assert_eq!(s["verdict"], "removable-on-this-set", "{s}");
    assert_eq!(s["confidence"], "confident", "{s}");
    let watched = watch(&w.dir, &[]);
    let a = arm(&watched, "cut");
    // The cluster means would call it needed; the tests of the case-weighted drop never do.
    assert_ne!(a["state"], "needed", "{a}");
    assert_eq!(a["state"], "removable", "{a}");
    let shown = a["drop"].as_f64().unwrap();
    assert!((shown - drop).abs() < 0.02, "{a}");
    assert!(a["cs_high"].as_f64().unwrap() < 0.05, "{a}");
    assert!(a["p_removable"].as_f64().unwrap() <= watched["alpha_per_arm"].as_f64().unwrap());
    assert_eq!(watched["unit"], "cluster");
}

fn plan_sequential(pilot: &Path) -> serde_json::Value {
    let v = json(
        ablate()
            .args([
                "--json",
                "plan",
                "--design",
                "loo",
                "--sequential",
                "--units",
            ])
            .arg(demo().join("units.parquet"))
            .arg("--pilot")
            .arg(pilot),
    );
    v["sequential"].clone()
}

/// On a clustered pilot `plan --sequential` projects clusters as `watch` runs them (bounded by
/// the largest cluster), which costs more calls than single cases would; without the cluster
/// column it projects cases.
#[test]
fn plan_sequential_projects_clusters_on_a_clustered_pilot() {
    let clustered = plan_sequential(&demo());
    assert_eq!(clustered["unit"], "cluster");
    assert_eq!(clustered["max_unit_cases"], 5);
    let mean = clustered["mean_unit_cases"].as_f64().unwrap();
    assert!((mean - 500.0 / 397.0).abs() < 1e-9, "{mean}");
    let w = Workdir::demo_copy();
    let path = w.dir.join("cases.parquet");
    let mut cases = ParquetReader::new(std::fs::File::open(&path).unwrap())
        .finish()
        .unwrap()
        .drop("cluster")
        .unwrap();
    ablate::io::write::parquet(&mut cases, &path).unwrap();
    let single = plan_sequential(&w.dir);
    assert_eq!(single["unit"], "case");
    assert_eq!(single["max_unit_cases"], 1);
    let calls = |v: &serde_json::Value| v["calls_expected"].as_u64().unwrap();
    assert!(
        calls(&clustered) > calls(&single),
        "clusters {} against cases {}",
        calls(&clustered),
        calls(&single)
    );
    // Every arm's projected cases are its units at the mean cluster size, or the whole set.
    for a in clustered["arms"].as_array().unwrap() {
        let (units, cases) = (a["units"].as_u64().unwrap(), a["cases"].as_u64().unwrap());
        assert!(
            cases == 500 || cases == (units as f64 * mean).round() as u64,
            "{a}"
        );
    }
}

/// A FIFO in place of `.ablate-watch.json` is refused at once (exit 2), never opened for a read
/// that would block `watch` and `next` forever.
#[cfg(unix)]
#[test]
fn a_fifo_as_the_state_is_refused_without_blocking() {
    use std::os::unix::fs::FileTypeExt as _;
    let w = Workdir::tiny();
    let path = w.path(".ablate-watch.json");
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let batch = w.root.path().join("batch.csv");
    let limit = std::time::Duration::from_secs(60);
    let err = common::fails(ablate().arg("watch").arg(&w.dir).timeout(limit));
    common::assert_mentions(
        &err,
        &[".ablate-watch.json", "not a plain file", "move it away"],
    );
    let err = common::fails(
        ablate()
            .arg("next")
            .arg(&w.dir)
            .args(["--calls", "10", "--out"])
            .arg(&batch)
            .timeout(limit),
    );
    common::assert_mentions(&err, &[".ablate-watch.json", "not a plain file"]);
    assert!(
        std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

/// Decisions belong to the experiment they were made on (its cases and arms): after `simulate
/// --out` replaces the demo, the demo's decisions (one at 178 clusters, in a set of 46) are set
/// aside with a warning, kept in the file untouched, and never shown; `watch` goes on (exit 0).
#[test]
fn decisions_of_a_replaced_experiment_are_set_aside_not_applied() {
    let w = Workdir::demo_copy();
    let demo_watch = watch(&w.dir, &[]);
    assert_eq!(arm(&demo_watch, "without-system")["state"], "needed");
    let state_path = w.path(".ablate-watch.json");
    let read_state = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(&state_path).unwrap()).unwrap()
    };
    let demo_entry = read_state()["runs"][0].clone();
    let run = ablate()
        .args(["simulate", "--cases", "60", "--seed", "5", "--out"])
        .arg(&w.dir)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let replaced = watch(&w.dir, &[]);
    let units = replaced["units_available"].as_u64().unwrap();
    for a in replaced["arms"].as_array().unwrap() {
        assert_eq!(a["recorded"], false, "{a}");
        assert!(a["decided_at"].as_u64().is_none_or(|n| n <= units), "{a}");
    }
    assert!(has_code(&replaced, "watch.other_experiment"), "{replaced}");
    // Set aside, not lost: the demo's entry is in the file as it was, beside the new one's.
    let runs = read_state()["runs"].as_array().unwrap().clone();
    assert!(runs.contains(&demo_entry), "{runs:?}");
    // Any entry the new experiment recorded is its own (60 cases may decide nothing yet).
    let demo_id = &demo_entry["settings"]["experiment"];
    assert_eq!(
        runs.iter()
            .filter(|r| &r["settings"]["experiment"] == demo_id)
            .count(),
        1,
        "{runs:?}"
    );
}

/// Adds one baseline row at repeat 3 to the demo copy's results: a harness retry of an existing
/// (case, baseline) cell of a 3-repeat experiment.
fn retry_a_baseline_call(w: &Workdir) {
    let path = w.path("results.parquet");
    let df = ParquetReader::new(std::fs::File::open(&path).unwrap())
        .finish()
        .unwrap();
    let dtype = df.column("repeat").unwrap().dtype().clone();
    let retry = df
        .clone()
        .lazy()
        .filter(col("arm").cast(DataType::String).eq(lit("baseline")))
        .limit(1)
        .with_column(lit(3).cast(dtype).alias("repeat"))
        .collect()
        .unwrap();
    let mut grown = df.vstack(&retry).unwrap();
    ablate::io::write::parquet(&mut grown, &path).unwrap();
}

/// A retried call (one baseline row at repeat 3 on a 3-repeat experiment) neither reopens the
/// decided arms nor makes `next` schedule them, or a fourth repeat, again: the recorded repeats
/// stand, with a warning.
#[test]
fn a_retried_call_does_not_reopen_decided_arms() {
    let w = Workdir::demo_copy();
    let before = watch(&w.dir, &[]);
    let decided = decided_arms(&before);
    assert!(decided.len() >= 5, "{before}");
    // One more baseline row: a harness retry of an existing (case, baseline) cell.
    retry_a_baseline_call(&w);

    let after = watch(&w.dir, &[]);
    assert_eq!(after["repeats"], 3, "{after}");
    decisions_stand(&decided, &after);
    assert!(has_code(&after, "watch.extra_repeats"), "{after}");
    let batch = w.root.path().join("batch.parquet");
    let plan = json(
        ablate()
            .args(["--json", "next", "--calls", "100000", "--out"])
            .arg(&batch)
            .arg(&w.dir),
    );
    for c in plan["calls"].as_array().unwrap() {
        assert!(c["repeat"].as_u64().unwrap() < 3, "{c}");
        assert!(!decided.iter().any(|a| a["arm"] == c["arm"]), "{c}");
    }
    assert!(has_code(&plan, "watch.extra_repeats"), "{plan}");
}

/// A replay of a complete experiment with one retried call (a cell with a repeat more) takes
/// the repeats most cells have, and decides as without the retry; and a replay that decides
/// nothing saves nothing: an undecided arm is charged every case of the set (it had said "100%
/// saved" when no unit was complete).
#[test]
fn a_replay_saves_only_the_calls_of_arms_it_decides() {
    let w = Workdir::demo_copy();
    let replay = |w: &Workdir, extra: &[&str]| {
        json(
            ablate()
                .args(["--json", "watch", "--replay"])
                .args(extra)
                .arg(&w.dir),
        )
    };
    let before = replay(&w, &[]);
    retry_a_baseline_call(&w);

    let after = replay(&w, &[]);
    assert_eq!(after["repeats"], 3, "{after}");
    assert!(has_code(&after, "replay.extra_repeats"), "{after}");
    for key in ["decided", "agreeing", "calls_full"] {
        assert_eq!(after[key], before[key], "{key}");
    }
    // At 4 repeats no unit is complete: nothing is decided, and nothing is saved.
    let none = replay(&w, &["--repeats", "4"]);
    assert_eq!(none["decided"], 0, "{none}");
    assert_eq!(none["calls_sequential"], none["calls_full"], "{none}");
    assert_eq!(none["saving"], 0.0, "{none}");
}

/// Recorded decisions ablate cannot have made are refused (exit 2), naming the file and the
/// entry: a "removable" at 2⁶⁴ − 1 units, and one with lower 1e308 above upper −1e308.
#[test]
fn impossible_recorded_decisions_are_refused_naming_the_entry() {
    let first = first_units(200);
    let part = demo_with_results(|id| first.contains(id));
    let _ = watch(&part.dir, &[]);
    let path = part.path(".ablate-watch.json");
    let good: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let batch = part.root.path().join("batch.csv");
    for bad in [
        serde_json::json!({"state": "removable", "units": u64::MAX, "lower": 0.0, "upper": 0.001}),
        serde_json::json!({"state": "removable", "units": 100, "lower": 1e308, "upper": -1e308}),
        serde_json::json!({"state": "needed", "units": 0, "lower": 0.1, "upper": 0.2}),
        serde_json::json!({"state": "needed", "units": 100, "lower": 0.1, "upper": 7.0}),
    ] {
        let mut state = good.clone();
        state["runs"][0]["decisions"]["without-system"] = bad.clone();
        std::fs::write(&path, state.to_string()).unwrap();
        let err = common::fails(ablate().arg("watch").arg(&part.dir));
        common::assert_mentions(
            &err,
            &[
                ".ablate-watch.json",
                "runs[0].decisions[\"without-system\"]",
            ],
        );
        let err = common::fails(
            ablate()
                .arg("next")
                .arg(&part.dir)
                .args(["--calls", "10", "--out"])
                .arg(&batch),
        );
        common::assert_mentions(&err, &[".ablate-watch.json", "without-system"]);
    }
}

/// A decision that could not be recorded is a warning in --json, --quiet included (the Python
/// module's way), and the advice works: a file that is not ablate's is never overwritten, so
/// move it (--reopen does not rewrite it).
#[test]
fn a_decision_not_recorded_is_a_json_warning_with_advice_that_works() {
    let first = first_units(200);
    let part = demo_with_results(|id| first.contains(id));
    let path = part.path(".ablate-watch.json");
    let mine = "{\"my\": \"notes\"}";
    std::fs::write(&path, mine).unwrap();
    let err = common::fails(ablate().arg("watch").arg(&part.dir));
    common::assert_mentions(&err, &[".ablate-watch.json", "move it away"]);
    assert!(!err.contains("run with --reopen"), "{err}");
    let reopened = json(
        ablate()
            .args(["--json", "--quiet", "watch", "--reopen"])
            .arg(&part.dir),
    );
    let warning = reopened["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "watch.not_recorded")
        .unwrap_or_else(|| panic!("{reopened}"));
    let message = warning["message"].as_str().unwrap();
    common::assert_mentions(message, &[".ablate-watch.json", "move it away"]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), mine);

    // A folder ablate may read but not write: plain `watch --json --quiet` says so too.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::remove_file(&path).unwrap();
        let set = |mode| {
            std::fs::set_permissions(&part.dir, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        set(0o555);
        // As root, run as `nobody`, whom the mode binds.
        let mut plain = common::unprivileged(part.root.path());
        plain.args(["--json", "--quiet", "watch"]).arg(&part.dir);
        let plain = json(&mut assert_cmd::Command::from_std(plain));
        assert!(has_code(&plain, "watch.not_recorded"), "{plain}");
        set(0o755);
    }
}

/// A copy of the demo holding only the main-set cases `keep` accepts, by cluster and case id
/// (every stress case, and every table's rows of the cases kept).
fn demo_with_cases(keep: impl Fn(&str, &str) -> bool) -> Workdir {
    let w = Workdir::demo_copy();
    let read = |name: &str| {
        ParquetReader::new(std::fs::File::open(w.path(name)).unwrap())
            .finish()
            .unwrap()
    };
    let cases = read("cases.parquet");
    let stress = cases.column("stress").unwrap().bool().unwrap().clone();
    let cluster = cases.column("cluster").unwrap().str().unwrap().clone();
    let case = cases.column("case_id").unwrap().str().unwrap().clone();
    let mask: BooleanChunked = (0..cases.height())
        .map(|i| {
            let kept = || matches!((cluster.get(i), case.get(i)), (Some(k), Some(c)) if keep(k, c));
            Some(stress.get(i) == Some(true) || kept())
        })
        .collect();
    let mut kept = cases.filter(&mask).unwrap();
    let kept_ids = kept.column("case_id").unwrap().str().unwrap().clone();
    let ids: std::collections::HashSet<String> = (0..kept_ids.len())
        .filter_map(|i| kept_ids.get(i).map(str::to_string))
        .collect();
    ablate::io::write::parquet(&mut kept, &w.path("cases.parquet")).unwrap();
    for name in [
        "results.parquet",
        "case_units.parquet",
        "passages.parquet",
        "samples.parquet",
    ] {
        let df = read(name);
        let column = df.column("case_id").unwrap().clone();
        let column = column.cast(&DataType::String).unwrap();
        let id = column.str().unwrap();
        let mask: BooleanChunked = (0..df.height())
            .map(|i| Some(id.get(i).is_some_and(|c| ids.contains(c))))
            .collect();
        let mut part = df.filter(&mask).unwrap();
        ablate::io::write::parquet(&mut part, &w.path(name)).unwrap();
    }
    w
}

/// The arms a watch's output has decided.
fn decided_arms(w: &serde_json::Value) -> Vec<&serde_json::Value> {
    w["arms"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["state"] != "continue")
        .collect()
}

/// Asserts that every arm of `decided` (a watch's arms) is in `after` with the same state and
/// units, from the recorded decisions.
fn decisions_stand(decided: &[&serde_json::Value], after: &serde_json::Value) {
    for a in decided {
        let b = arm(after, a["arm"].as_str().unwrap());
        assert_eq!(
            (&b["state"], &b["decided_at"], &b["recorded"]),
            (
                &a["state"],
                &a["decided_at"],
                &serde_json::Value::Bool(true)
            ),
            "{b}"
        );
    }
}

/// Copies every table of the demo over the copy's (its watch state kept): the cases a partial
/// copy lacked arrive.
fn add_the_rest_of_the_demo(w: &Workdir) {
    for entry in std::fs::read_dir(demo()).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() != ".ablate-watch.json" {
            std::fs::copy(entry.path(), w.dir.join(entry.file_name())).unwrap();
        }
    }
}

/// Cases added to a watched experiment (as `import --into` adds a new batch of cases) keep what
/// was decided: the new units follow, in the seeded order, the ones every arm's tests were
/// reading, so each sequence continues; decided arms stay decided at the units they were decided
/// at, `next` does not pay for them, and the state keeps one entry, whose order extends the old
/// one (before, the experiment's identity changed, the decisions were set aside and every arm
/// started afresh on a reshuffled order).
#[test]
fn cases_added_to_a_watched_experiment_continue_every_sequence() {
    let number = |c: &str| c.trim_start_matches("ct").parse::<u32>().unwrap();
    let w = demo_with_cases(|k, _| number(k) % 10 < 7);
    let before = watch(&w.dir, &[]);
    let state_path = w.path(".ablate-watch.json");
    let read_state = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(&state_path).unwrap()).unwrap()
    };
    let first = read_state()["runs"].as_array().unwrap().clone();
    assert_eq!(first.len(), 1);
    let old_order = first[0]["order"].as_array().unwrap().clone();
    assert_eq!(
        old_order.len() as u64,
        before["units_available"].as_u64().unwrap()
    );
    let decided = decided_arms(&before);
    assert!(decided.len() >= 3, "{before}");

    // The rest of the demo's cases arrive.
    add_the_rest_of_the_demo(&w);
    let after = watch(&w.dir, &[]);
    let codes = codes(&after);
    assert!(
        codes.contains(&"watch.cases_added".to_string()),
        "{codes:?}"
    );
    assert!(
        !codes.contains(&"watch.other_experiment".to_string()),
        "{codes:?}"
    );
    assert!(
        after["units_available"].as_u64() > before["units_available"].as_u64(),
        "{after}"
    );
    decisions_stand(&decided, &after);
    for a in before["arms"].as_array().unwrap() {
        let b = arm(&after, a["arm"].as_str().unwrap());
        assert!(b["units"].as_u64() >= a["units"].as_u64(), "{a} {b}");
    }
    // One entry, under the grown experiment, whose order starts with the one read before.
    let runs = read_state()["runs"].as_array().unwrap().clone();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_ne!(
        runs[0]["settings"]["experiment"],
        first[0]["settings"]["experiment"]
    );
    let order = runs[0]["order"].as_array().unwrap();
    assert_eq!(
        order.len() as u64,
        after["units_available"].as_u64().unwrap()
    );
    assert_eq!(&order[..old_order.len()], &old_order[..]);
    // Watching again decides the same (arms decided by the last watch now from the state);
    // `next` schedules only arms still open.
    let states = |v: &serde_json::Value| -> Vec<(String, String, String)> {
        v["arms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["arm"].to_string(),
                    a["state"].to_string(),
                    a["decided_at"].to_string(),
                )
            })
            .collect()
    };
    assert_eq!(states(&watch(&w.dir, &[])), states(&after));
    let batch = w.root.path().join("batch.parquet");
    let plan = json(
        ablate()
            .args(["--json", "next", "--calls", "5000", "--out"])
            .arg(&batch)
            .arg(&w.dir),
    );
    for c in plan["calls"].as_array().unwrap() {
        assert!(!decided.iter().any(|a| a["arm"] == c["arm"]), "{c}");
    }
}

/// Watches the partial copy `w` (some arm decides), adds the rest of the demo and watches
/// again: nothing is continued (the decisions are set aside as another experiment's).
fn growth_continues_nothing(w: &Workdir) {
    let before = watch(&w.dir, &[]);
    assert!(!decided_arms(&before).is_empty(), "{before}");
    add_the_rest_of_the_demo(w);
    let after = watch(&w.dir, &[]);
    let codes = codes(&after);
    assert!(
        !codes.contains(&"watch.cases_added".to_string()),
        "{codes:?}"
    );
    assert!(
        codes.contains(&"watch.other_experiment".to_string()),
        "{codes:?}"
    );
    for a in after["arms"].as_array().unwrap() {
        assert_eq!(a["recorded"], false, "{a}");
    }
    // `next` says so too: the arms decided before are open again and in its batch.
    let batch = w.root.path().join("batch.csv");
    let plan = json(
        ablate()
            .args(["--json", "next", "--calls", "100", "--out"])
            .arg(&batch)
            .arg(&w.dir),
    );
    assert!(has_code(&plan, "watch.other_experiment"), "{plan}");
}

/// Cases added to a cluster already read change that unit: the order read before no longer holds
/// the same units, so nothing is continued (the decisions are set aside, as for another
/// experiment, and the tests start on the seeded order of the new set).
#[test]
fn a_case_added_to_a_cluster_read_before_continues_nothing() {
    let number = |c: &str| c.trim_start_matches("ct").parse::<u32>().unwrap();
    // c0003 shares cluster ct0002 with c0002: leave it out, then add it.
    let w = demo_with_cases(|k, c| number(k) % 10 < 7 && c != "c0003");
    growth_continues_nothing(&w);
}

/// After cases were added, `--reopen` decides again on the order continued (the old units first),
/// not on a reshuffle, and leaves one entry; a retried call on top of the growth (a cell with a
/// fourth repeat) keeps the recorded repeats and the decisions.
#[test]
fn reopen_and_a_retry_after_cases_were_added_keep_the_order() {
    let number = |c: &str| c.trim_start_matches("ct").parse::<u32>().unwrap();
    let w = demo_with_cases(|k, _| number(k) % 10 < 7);
    let before = watch(&w.dir, &[]);
    let decided = decided_arms(&before);
    let state_path = w.path(".ablate-watch.json");
    let read_state = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(&state_path).unwrap()).unwrap()
    };
    let old_order = read_state()["runs"][0]["order"].as_array().unwrap().clone();
    add_the_rest_of_the_demo(&w);
    retry_a_baseline_call(&w);
    let after = watch(&w.dir, &[]);
    assert_eq!(after["repeats"], 3, "{after}");
    let codes = codes(&after);
    assert!(
        codes.contains(&"watch.cases_added".to_string()),
        "{codes:?}"
    );
    assert!(
        codes.contains(&"watch.extra_repeats".to_string()),
        "{codes:?}"
    );
    decisions_stand(&decided, &after);

    let reopened = watch(&w.dir, &["--reopen", "--repeats", "3"]);
    let runs = read_state()["runs"].as_array().unwrap().clone();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let order = runs[0]["order"].as_array().unwrap();
    assert_eq!(&order[..old_order.len()], &old_order[..]);
    // Decided again on the same sequences: the same decisions at the same units.
    for a in &decided {
        let b = arm(&reopened, a["arm"].as_str().unwrap());
        assert_eq!(
            (&b["state"], &b["decided_at"]),
            (&a["state"], &a["decided_at"]),
            "{b}"
        );
    }
}

/// A new cluster larger than every cluster read before would change the tests' bound, and with
/// it every bet already made: nothing is continued.
#[test]
fn a_new_cluster_larger_than_any_held_continues_nothing() {
    let exp = ablate::io::Experiment::load(&demo()).unwrap();
    let (units, _) = ablate::analysis::sequential::unit_order(&exp, 0);
    let largest = units.iter().map(Vec::len).max().unwrap();
    let big: std::collections::HashSet<String> = units
        .iter()
        .filter(|u| u.len() == largest)
        .flatten()
        .filter_map(|&c| exp.cases.cluster.as_ref().map(|k| k[c].clone()))
        .collect();
    let w = demo_with_cases(|k, _| !big.contains(k));
    growth_continues_nothing(&w);
}

/// A recorded order that lists a unit twice (it would be read twice) is refused, naming the
/// entry.
#[test]
fn a_recorded_order_with_a_unit_twice_is_refused() {
    let w = Workdir::demo_copy();
    watch(&w.dir, &[]);
    let path = w.path(".ablate-watch.json");
    let mut state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let order = state["runs"][0]["order"].as_array_mut().unwrap();
    let first = order[0].clone();
    order[1] = first;
    std::fs::write(&path, serde_json::to_string(&state).unwrap()).unwrap();
    let err = common::fails(ablate().arg("watch").arg(&w.dir));
    common::assert_mentions(&err, &[".ablate-watch.json", "runs[0]", "twice"]);
}

/// Tests looked at but not yet decided restart too when their order cannot be continued (a new
/// cluster larger than any held): that is said (`watch.other_experiment`), not done silently.
#[test]
fn an_undecided_sequence_that_restarts_is_said() {
    let exp = ablate::io::Experiment::load(&demo()).unwrap();
    let (units, _) = ablate::analysis::sequential::unit_order(&exp, 0);
    let largest = units.iter().map(Vec::len).max().unwrap();
    let cluster = |u: &Vec<usize>| exp.cases.cluster.as_ref().unwrap()[u[0]].clone();
    let big: std::collections::HashSet<String> = units
        .iter()
        .filter(|u| u.len() == largest)
        .map(cluster)
        .collect();
    // The first 20 units of the order, without the largest clusters: no arm decides.
    let first: std::collections::HashSet<String> = units
        .iter()
        .take(20)
        .map(cluster)
        .filter(|k| !big.contains(k))
        .collect();
    let w = demo_with_cases(|k, _| first.contains(k));
    let before = watch(&w.dir, &[]);
    assert!(decided_arms(&before).is_empty(), "{before}");
    add_the_rest_of_the_demo(&w);
    let after = watch(&w.dir, &[]);
    assert!(has_code(&after, "watch.other_experiment"), "{after}");
}

/// Stress cells run at more repeats than the main set do not hold the watch back: a unit needs
/// the repeats of the main set, which is all `watch` reads.
#[test]
fn stress_cells_with_more_repeats_do_not_stall_the_watch() {
    let w = Workdir::demo_copy();
    let before = watch(&w.dir, &[]);
    let exp = ablate::io::Experiment::load(&w.dir).unwrap();
    let stress_case = (0..exp.cases.ids.len())
        .find(|&c| exp.cases.stress[c])
        .map(|c| exp.cases.ids[c].clone())
        .unwrap();
    let path = w.path("results.parquet");
    let df = ParquetReader::new(std::fs::File::open(&path).unwrap())
        .finish()
        .unwrap();
    let dtype = df.column("repeat").unwrap().dtype().clone();
    let extra = df
        .clone()
        .lazy()
        .filter(col("case_id").cast(DataType::String).eq(lit(stress_case)))
        .limit(1)
        .with_column(lit(3).cast(dtype).alias("repeat"))
        .collect()
        .unwrap();
    let mut grown = df.vstack(&extra).unwrap();
    ablate::io::write::parquet(&mut grown, &path).unwrap();
    let after = watch(&w.dir, &["--reopen"]);
    assert_eq!(after["repeats"], 3, "{after}");
    assert_eq!(
        decided_arms(&after).len(),
        decided_arms(&before).len(),
        "{after}"
    );
}

/// Cases added twice with a `next` batch between (and no watch): the batch's units stay first
/// after the second growth, since `next` recorded the order it scheduled from.
#[test]
fn next_records_the_order_its_batch_runs() {
    // ct0256, the largest cluster (5 cases), is there from the start: a larger new unit would
    // continue nothing.
    let number = |c: &str| c.trim_start_matches("ct").parse::<u32>().unwrap();
    let w = demo_with_cases(|k, _| number(k) % 10 < 5 || k == "ct0256");
    watch(&w.dir, &[]);
    let state_path = w.path(".ablate-watch.json");
    let order_now = || -> Vec<serde_json::Value> {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&state_path).unwrap()).unwrap();
        assert_eq!(v["runs"].as_array().unwrap().len(), 1, "{v}");
        v["runs"][0]["order"].as_array().unwrap().clone()
    };
    let watched = order_now().len();
    // The second batch of cases (clusters ending in 5 or 6), then `next`.
    let grown = demo_with_cases(|k, _| number(k) % 10 < 7 || k == "ct0256");
    for name in [
        "cases.parquet",
        "case_units.parquet",
        "passages.parquet",
        "samples.parquet",
    ] {
        std::fs::copy(grown.path(name), w.path(name)).unwrap();
    }
    let batch = w.root.path().join("batch.csv");
    json(
        ablate()
            .args(["--json", "next", "--calls", "500", "--out"])
            .arg(&batch)
            .arg(&w.dir),
    );
    let scheduled = order_now();
    assert!(
        scheduled.len() > watched,
        "next recorded the order its batch runs"
    );
    // The third batch arrives before any watch.
    add_the_rest_of_the_demo(&w);
    watch(&w.dir, &[]);
    let order = order_now();
    assert!(order.len() > scheduled.len());
    assert_eq!(&order[..scheduled.len()], &scheduled[..]);
}

/// A decided arm whose rows are gone from the table (every row of the arm deleted, or its first
/// unit made incomplete) keeps its recorded decision and bounds: the state written back holds
/// them, so the next watch and `next` read it (before, the bounds were lost, written as null,
/// and every later run refused the file as "not ablate's").
#[test]
fn a_decided_arm_whose_rows_are_gone_keeps_its_bounds() {
    let w = Workdir::demo_copy();
    let before = watch(&w.dir, &[]);
    let decided = decided_arms(&before);
    let gone = decided.first().expect("the demo decides arms")["arm"]
        .as_str()
        .unwrap()
        .to_string();
    keep_results(&w, |arm, _| arm != gone);
    for _ in 0..2 {
        let after = watch(&w.dir, &[]);
        decisions_stand(&decided, &after);
        let (a, b) = (arm(&before, &gone), arm(&after, &gone));
        assert_eq!(
            (&a["cs_low"], &a["cs_high"]),
            (&b["cs_low"], &b["cs_high"]),
            "{b}"
        );
        assert!(has_code(&after, "watch.decision_kept"), "{after}");
    }
    let batch = w.root.path().join("batch.parquet");
    common::succeeds(
        ablate()
            .args(["next", "--calls", "1000", "--out"])
            .arg(&batch)
            .arg(&w.dir),
    );
}

/// An entry with an order and no decision yet (tests looked at, nothing decided) pins the
/// repeats it read, as one with decisions does: a retried call neither makes every unit
/// incomplete nor restarts the sequences (before, only entries holding decisions did).
#[test]
fn a_run_with_nothing_decided_yet_keeps_its_repeats() {
    let number = |c: &str| c.trim_start_matches("ct").parse::<u32>().unwrap();
    let w = demo_with_cases(|k, _| number(k) % 25 == 0);
    let before = watch(&w.dir, &[]);
    assert!(decided_arms(&before).is_empty(), "{before}");
    retry_a_baseline_call(&w);
    let after = watch(&w.dir, &[]);
    assert_eq!(after["repeats"], before["repeats"], "{after}");
    assert!(has_code(&after, "watch.extra_repeats"), "{after}");
    for a in before["arms"].as_array().unwrap() {
        let b = arm(&after, a["arm"].as_str().unwrap());
        assert_eq!(a["units"], b["units"], "{b}");
    }
}

/// `next` counts the units it runs: the complete units waiting behind an incomplete one cost no
/// call and are passed over, not counted (its `units` column had counted every one of them).
#[test]
fn next_counts_only_the_units_it_runs() {
    let first: std::collections::HashSet<String> = first_units(1);
    // On a copy: a watch records its state beside the experiment.
    let w = Workdir::demo_copy();
    let open = watch(&w.dir, &[]);
    let arm_name = open["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["state"] == "continue")
        .expect("the demo leaves arms open")["arm"]
        .as_str()
        .unwrap()
        .to_string();
    // That arm loses its rows on the first unit's cases: its sequence waits there.
    keep_results(&w, |arm, case| arm != arm_name || !first.contains(case));
    let batch = w.root.path().join("batch.parquet");
    let plan = json(
        ablate()
            .args(["--json", "next", "--calls", "100000", "--out"])
            .arg(&batch)
            .arg(&w.dir),
    );
    assert_eq!(plan["arms"][arm_name.as_str()], 1, "{}", plan["arms"]);
    assert!(!demo().join(".ablate-watch.json").exists());
}

/// Rewrites the copy's results with only the rows `keep(arm, case)` accepts.
fn keep_results(w: &Workdir, keep: impl Fn(&str, &str) -> bool) {
    let path = w.path("results.parquet");
    let df = ParquetReader::new(std::fs::File::open(&path).unwrap())
        .finish()
        .unwrap();
    let arms = df.column("arm").unwrap().cast(&DataType::String).unwrap();
    let cases = df
        .column("case_id")
        .unwrap()
        .cast(&DataType::String)
        .unwrap();
    let (arms, cases) = (arms.str().unwrap(), cases.str().unwrap());
    let mask: BooleanChunked = (0..df.height())
        .map(|i| Some(keep(arms.get(i).unwrap_or(""), cases.get(i).unwrap_or(""))))
        .collect();
    let mut kept = df.filter(&mask).unwrap();
    ablate::io::write::parquet(&mut kept, &path).unwrap();
}
