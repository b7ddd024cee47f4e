//! [`Drill`] for people: the report's drill-down from an arm to the cases it loses and gains, as
//! collapsed `<details>` (one per arm, inside one for all) under the drops chart, and as a short
//! list in `report.md`. Every string from the data is escaped.

use std::fmt::Write as _;

use crate::analysis::drill::{ArmCases, ChangedCase, Drill};
use crate::report::escape;
use crate::report::text::fixed;

/// One list (lost or gained) as an HTML table: case id, slice, cluster and the two case means,
/// and with `samples` the input, both outputs and the source.
fn cases_table(what: &str, cases: &[ChangedCase], samples: bool) -> String {
    let esc = |s: &Option<String>| s.as_deref().map_or_else(|| "—".into(), escape::html);
    let mut s = format!(
        "<table class=\"cases\"><thead><tr><th>{what} case</th><th>slice</th><th>cluster</th><th>baseline score</th><th>arm score</th>{}</tr></thead><tbody>",
        if samples {
            "<th>input</th><th>baseline output</th><th>arm output</th><th>source</th>"
        } else {
            ""
        }
    );
    for c in cases {
        let _ = write!(
            s,
            "<tr><td data-label=\"{what} case\">{}</td><td data-label=\"slice\">{}</td><td data-label=\"cluster\">{}</td><td data-label=\"baseline score\">{}</td><td data-label=\"arm score\">{}</td>",
            escape::html(&c.case_id),
            esc(&c.slice),
            esc(&c.cluster),
            fixed(c.baseline_score, 3),
            fixed(c.arm_score, 3)
        );
        if samples {
            let _ = write!(
                s,
                "<td class=\"text\" data-label=\"input\">{}</td><td class=\"text\" data-label=\"baseline output\">{}</td><td class=\"text\" data-label=\"arm output\">{}</td><td class=\"source\" data-label=\"source\">{}</td>",
                esc(&c.input),
                esc(&c.baseline_output),
                esc(&c.arm_output),
                esc(&c.source)
            );
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    s
}

/// "and 7 more" when a list was cut at the cap.
fn more(listed: usize, total: usize) -> String {
    if total > listed {
        format!("<p class=\"more\">… and {} more.</p>", total - listed)
    } else {
        String::new()
    }
}

/// One arm's `<details>`: its summary line, then the lost and the gained cases.
fn arm_html(a: &ArmCases, samples: bool) -> String {
    let mut s = format!(
        "<details class=\"arm\" data-arm=\"{arm}\"><summary><b>{arm}</b>: lost {}, gained {}</summary>",
        a.lost_total,
        a.gained_total,
        arm = escape::html(&a.arm)
    );
    if a.lost_total + a.gained_total == 0 {
        s.push_str("<p>No main-set case changes between pass and fail.</p>");
    }
    if !a.lost.is_empty() {
        s.push_str(&cases_table("lost", &a.lost, samples));
        s.push_str(&more(a.lost.len(), a.lost_total));
    }
    if !a.gained.is_empty() {
        s.push_str(&cases_table("gained", &a.gained, samples));
        s.push_str(&more(a.gained.len(), a.gained_total));
    }
    s.push_str("</details>");
    s
}

/// The drill-down for the page: one collapsed `<details>` holding one per arm, in `order` (the
/// drops chart's), arms not in it after.
pub fn html(d: &Drill, order: &[String]) -> String {
    let arms = crate::report::sweep::in_order(&d.arms, |a| &a.arm, order);
    let mut s = format!(
        "<details class=\"drill\" id=\"cases\"><summary>The cases behind each drop: open an arm to see the main-set cases it loses (pass in the baseline, fail in the arm) and gains, with slice, cluster and both scores{} (at most {} listed each way)</summary>",
        if d.samples {
            format!(
                ", the input and both outputs (first repeat, cut to {} characters) and where each sample came from",
                d.text_chars
            )
        } else {
            String::new()
        },
        d.cases_per_arm
    );
    for a in arms {
        s.push_str(&arm_html(a, d.samples));
    }
    s.push_str("</details>");
    s
}

/// The drill-down for `report.md`: each arm that loses or gains a case, with the first ten ids
/// each way.
pub fn markdown(d: &Drill, order: &[String]) -> String {
    let ids = |cases: &[ChangedCase], total: usize| {
        let mut list: Vec<String> = cases
            .iter()
            .take(10)
            .map(|c| escape::markdown(&c.case_id))
            .collect();
        if total > list.len() {
            list.push(format!("… {} more", total - list.len()));
        }
        if list.is_empty() {
            "—".to_string()
        } else {
            list.join(", ")
        }
    };
    let mut s = String::from("\n### The cases behind each drop\n\n");
    for a in crate::report::sweep::in_order(&d.arms, |a| &a.arm, order) {
        if a.lost_total + a.gained_total == 0 {
            continue;
        }
        let _ = writeln!(
            s,
            "- {}: lost {} ({}); gained {} ({})",
            escape::markdown(&a.arm),
            a.lost_total,
            ids(&a.lost, a.lost_total),
            a.gained_total,
            ids(&a.gained, a.gained_total)
        );
    }
    s
}
