//! [`StressOutput`] for people: which cuts clear both the main set and the stress slice, and the
//! report's stress section.

use std::fmt::Write;

use crate::analysis::stress::StressOutput;
use crate::analysis::vocab::Verdict;
use crate::report::charts::{BLUE, Bar, Chart, ORANGE};
use crate::report::reweight::verdict;
use crate::report::section::{Align, Section, Table};
use crate::report::text::num;

/// The main set next to the stress slice, one row per arm.
fn table(r: &StressOutput) -> Table {
    let mut t = Table::new(&[
        "arm",
        "drop (main)",
        "se (main)",
        "verdict (main)",
        "drop (stress)",
        "se (stress)",
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
            num(a.drop_main, 4),
            num(a.se_main, 4),
            verdict(a.verdict_main),
            num(a.drop_stress, 4),
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
    t
}

/// The report's section: drops on the main set next to the stress slice.
pub fn sections(st: &StressOutput) -> Vec<Section> {
    let mut bars = Vec::new();
    for arm in &st.arms {
        for (side, d, ci, color) in [
            ("main", arm.drop_main, arm.ci_main, BLUE),
            ("stress", arm.drop_stress, arm.ci_stress, ORANGE),
        ] {
            if let Some(d) = d {
                bars.push(Bar {
                    label: format!("{} · {side}", arm.arm),
                    value: d,
                    interval: ci,
                    color,
                });
            }
        }
    }
    let mut marks = vec![(
        st.threshold_drop,
        format!("threshold {}", st.threshold_drop),
    )];
    if st.stress_threshold_drop != st.threshold_drop {
        marks.push((
            st.stress_threshold_drop,
            format!("stress threshold {}", st.stress_threshold_drop),
        ));
    }
    vec![Section {
        name: "stress",
        title: "Main set next to the stress slice".into(),
        note: format!(
            "{} main-set and {} stress cases; a cut must be removable on both.",
            st.main_cases, st.stress_cases
        ),
        chart: Chart::Bars {
            title: "Drop on the main set vs the stress slice".into(),
            x_desc: "drop".into(),
            bars,
            marks,
        },
        table: table(st),
    }]
}

/// Renders the stress comparison for a terminal.
pub fn human(r: &StressOutput) -> String {
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
    s.push_str(&table(r).text());
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
