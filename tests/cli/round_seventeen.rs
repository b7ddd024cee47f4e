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

/// The flags the cases' gold_rank implies: c1 rank 1, c2 rank 2, s1 rank 1.
const AGREEING: [&str; 9] = [
    "true", "false", "false", "false", "true", "false", "true", "false", "false",
];

/// A case flagged with two gold passages had its oracle read the first in row order, so the
/// same table sorted the other way gave another oracle saving; and flags that name another gold
/// passage than the cases' gold_rank made the oracle (gold_rank) and the miss rate (the flag)
/// contradict each other. Both are refused, naming the case.
#[test]
fn gold_passages_are_one_per_case_and_agree_with_gold_rank() {
    let w = with_passages(AGREEING);
    json(ablate().args(["selector", "--json"]).arg(&w.dir));

    let mut two = AGREEING;
    two[2] = "true";
    let w = with_passages(two);
    let err = fails(ablate().arg("selector").arg(&w.dir));
    assert_mentions(&err, &["passages.csv", "`gold`", "c1", "ranks 1 and 3"]);

    let mut moved = AGREEING;
    (moved[3], moved[4]) = ("true", "false");
    let w = with_passages(moved);
    let err = fails(ablate().arg("selector").arg(&w.dir));
    assert_mentions(
        &err,
        &[
            "c2",
            "flagged gold is rank 1",
            "gold_rank is 2",
            "cases.csv",
        ],
    );

    let mut none = AGREEING;
    none[0] = "false";
    let w = with_passages(none);
    let err = fails(ablate().arg("selector").arg(&w.dir));
    assert_mentions(
        &err,
        &["c1", "no passage is flagged gold", "gold_rank is 1"],
    );
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
    let message = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "selector.shared_threshold")
        .unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
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
