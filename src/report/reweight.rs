//! Human rendering of [`ReweightOutput`] and [`StressOutput`]: which verdicts flip under
//! production weights, which strata the set under-samples, and which cuts clear the stress slice.

use std::fmt::Write;

use crate::analysis::reweight::{Method, ReweightOutput};
use crate::analysis::stress::StressOutput;
use crate::analysis::vocab::Verdict;
use crate::report::text::{Align, TextTable, num, signed};

fn verdict(v: Option<Verdict>) -> String {
    v.map_or("—".into(), |v| v.as_str().to_string())
}

/// Renders the reweighting for a terminal.
pub fn human(r: &ReweightOutput) -> String {
    let mut s = String::new();
    let how = match r.method {
        Method::PostStratified => "post-stratified",
        Method::Raked => "raked",
    };
    let _ = writeln!(
        s,
        "{how} to production by {} · {} cases · Kish effective cases {:.0}",
        r.strata.join(" × "),
        r.cases,
        r.effective_cases
    );
    if r.unmeasured_share > 0.0 {
        let _ = writeln!(
            s,
            "warning: {:.1}% of production traffic falls in strata with no eval case and was left out (--allow-unmeasured)",
            100.0 * r.unmeasured_share
        );
    }
    let _ = writeln!(
        s,
        "baseline {:.3} on the set → {} (se {}) in production\n",
        r.baseline.score_eval,
        num(r.baseline.score_production, 3),
        num(r.baseline.se_production, 3)
    );
    let flips: Vec<_> = r.arms.iter().filter(|a| a.flipped).collect();
    if flips.is_empty() {
        let _ = writeln!(s, "No verdict flips under production weights.\n");
    } else {
        let _ = writeln!(
            s,
            "{} verdict(s) flip under production weights:",
            flips.len()
        );
        for a in &flips {
            let _ = writeln!(
                s,
                "  {}: drop {} on the set ({}) → {} in production ({})",
                a.arm,
                signed(Some(a.drop_eval)),
                a.verdict_eval.as_str(),
                signed(a.drop_production),
                verdict(a.verdict_production)
            );
        }
        let _ = writeln!(s);
    }
    let mut t = TextTable::new(&[
        "arm",
        "drop (set)",
        "verdict (set)",
        "drop (production)",
        "se",
        "verdict (production)",
        "",
    ])
    .align(2, Align::Left)
    .align(5, Align::Left)
    .align(6, Align::Left);
    for a in &r.arms {
        t.row(vec![
            a.arm.clone(),
            signed(Some(a.drop_eval)),
            a.verdict_eval.as_str().into(),
            signed(a.drop_production),
            num(a.se_production, 4),
            verdict(a.verdict_production),
            if a.flipped {
                "← flips".into()
            } else {
                String::new()
            },
        ]);
    }
    s.push_str(&t.render());
    let _ = writeln!(s);
    let mut c = TextTable::new(&[
        "stratum",
        "eval cases",
        "eval share",
        "production share",
        "ratio",
        "status",
    ])
    .align(5, Align::Left);
    for row in &r.coverage {
        c.row(vec![
            row.label(),
            row.eval_cases.to_string(),
            format!("{:.1}%", 100.0 * row.eval_share),
            format!("{:.1}%", 100.0 * row.production_share),
            row.ratio.map_or("—".into(), |x| format!("{x:.2}")),
            row.status.as_str().into(),
        ]);
    }
    s.push_str(&c.render());
    match &r.known_coverage_gap {
        Some(gap) => {
            let _ = writeln!(s, "known coverage gap: {gap}");
        }
        None => {
            let _ = writeln!(
                s,
                "no stratum is under-sampled (production share ≥ 2× eval share)"
            );
        }
    }
    if !r.unweighted_strata.is_empty() {
        let _ = writeln!(
            s,
            "eval strata absent from the mix (weight 0): {}",
            r.unweighted_strata.join("; ")
        );
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// Renders the stress comparison for a terminal.
pub fn human_stress(r: &StressOutput) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "main set {} cases (threshold {}) · stress slice {} cases (threshold {})\n",
        r.main_cases, r.threshold_drop, r.stress_cases, r.stress_threshold_drop
    );
    if r.stress_cases == 0 {
        let _ = writeln!(
            s,
            "There is no stress slice (no case has stress = true): build one from the shapes the main set under-samples."
        );
        return s;
    }
    let mut t = TextTable::new(&[
        "arm",
        "drop (main)",
        "se",
        "verdict (main)",
        "drop (stress)",
        "se",
        "verdict (stress)",
        "lost (stress)",
        "clears both",
    ])
    .align(3, Align::Left)
    .align(6, Align::Left)
    .align(8, Align::Left);
    for a in &r.arms {
        t.row(vec![
            a.arm.clone(),
            signed(a.drop_main),
            num(a.se_main, 4),
            verdict(a.verdict_main),
            signed(a.drop_stress),
            num(a.se_stress, 4),
            verdict(a.verdict_stress),
            a.lost_stress.to_string(),
            if a.clears_both {
                "yes".into()
            } else {
                "no".into()
            },
        ]);
    }
    s.push_str(&t.render());
    let caught: Vec<&str> = r
        .arms
        .iter()
        .filter(|a| {
            a.verdict_main == Some(Verdict::Removable) && a.verdict_stress == Some(Verdict::Needed)
        })
        .map(|a| a.arm.as_str())
        .collect();
    if !caught.is_empty() {
        let _ = writeln!(
            s,
            "\nremovable on the main set but needed on the stress slice: {}",
            caught.join(", ")
        );
    }
    s
}
