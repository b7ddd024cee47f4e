//! Human rendering of [`SweepOutput`]: the seed's table (arm · tokens · score · drop [CI] ·
//! verdict) with lost cases and churn, and the churn floor under it.

use std::fmt::Write;

use crate::analysis::sweep::SweepOutput;
use crate::analysis::vocab::Confidence;
use crate::report::text::{Align, TextTable, num, pval, thousands};

/// Renders the sweep for a terminal.
pub fn human(r: &SweepOutput) -> String {
    let mut s = String::new();
    let ci = if r.bootstrap > 0 {
        format!("bootstrap, {} resamples", thousands(r.bootstrap as f64))
    } else {
        "normal approximation".into()
    };
    let _ = writeln!(
        s,
        "{} · {} cases{} · {} repeats · threshold_drop {} · {} CI ({ci})",
        r.set,
        r.cases,
        r.clusters
            .map(|c| format!(" in {c} clusters"))
            .unwrap_or_default(),
        r.repeats,
        r.threshold_drop,
        crate::report::text::percent_level(r.confidence_level)
    );
    let _ = writeln!(
        s,
        "baseline \"{}\" scores {:.3} (se {})\n",
        r.baseline_arm,
        r.baseline.score,
        num(r.baseline.se, 3)
    );
    let ci_head = format!(
        "{} CI",
        crate::report::text::percent_level(r.confidence_level)
    );
    let mut t = TextTable::new(&[
        "arm", "tokens", "score", "drop", &ci_head, "p_holm", "verdict", "lost", "churn",
    ])
    .align(6, Align::Left);
    for a in &r.arms {
        let verdict = match a.confidence {
            Confidence::Confident => format!("{} (confident)", a.verdict.as_str()),
            Confidence::Inconclusive => format!("{} (inconclusive)", a.verdict.as_str()),
        };
        t.row(vec![
            a.arm.clone(),
            a.tokens_removed
                .map(thousands)
                .unwrap_or_else(|| "—".into()),
            format!("{:.3}", a.score),
            format!("{:+.4}", a.drop),
            format!("[{}, {}]", num(a.ci_low, 4), num(a.ci_high, 4)),
            pval(a.p_holm),
            verdict,
            a.lost_cases.to_string(),
            a.churn.map_or("—".into(), |c| c.to_string()),
        ]);
    }
    s.push_str(&t.render());
    let _ = writeln!(s);
    match r.churn_baseline {
        Some(c) => {
            let _ = writeln!(
                s,
                "churn floor: {c} cases change pass/fail between repeats of the baseline; an arm's lost cases at or below that are indistinguishable from noise."
            );
        }
        None => {
            let _ = writeln!(
                s,
                "churn floor: unknown (one repeat per case); run repeats to measure it."
            );
        }
    }
    let _ = writeln!(
        s,
        "verdict: needed when drop ≥ {}; confident when the whole CI is on the verdict's side (a confident removable is a non-inferiority result).",
        r.threshold_drop
    );
    for a in r.arms.iter().filter(|a| a.missing_cases > 0) {
        let _ = writeln!(
            s,
            "note: \"{}\" is missing {} cases; they are left out of its pairs.",
            a.arm, a.missing_cases
        );
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}
