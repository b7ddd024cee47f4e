//! The report's opening: the decision, from [`Decision`], in a few lines a director reads first.

use crate::analysis::decision::{Decision, DecisionArm};
use crate::report::escape::Prose;
use crate::report::text::{num, thousands};

/// At most this many arms are named per line; the rest are counted.
const NAMED: usize = 8;

fn names(arms: &[DecisionArm]) -> String {
    let mut out: Vec<String> = arms.iter().take(NAMED).map(|a| a.arm.clone()).collect();
    if arms.len() > NAMED {
        out.push(format!("and {} more", arms.len() - NAMED));
    }
    out.join(", ")
}

/// The decision as prose: cut, keep, settle, flips, interactions (one line each, when any).
pub fn prose(d: &Decision, threshold: f64) -> Prose {
    let mut p = Prose::new().bold("Decision").text(format!(
        " (threshold_drop {threshold}; \"confident\" means the whole interval is on one side):\n"
    ));
    if d.cut.is_empty() {
        p = p.text("• Cut: nothing is confidently removable.\n");
    } else {
        p = p
            .text(format!("• Cut ({}): ", d.cut.len()))
            .bold(names(&d.cut))
            .text(match d.tokens_saved {
                Some(t) => format!(
                    " — {} tokens per request together{} ({}).\n",
                    thousands(t),
                    d.cost_saved_per_day
                        .map(|c| format!(", ${} a day", thousands(c)))
                        .unwrap_or_default(),
                    d.cut[0].reason
                ),
                None => format!(" ({}).\n", d.cut[0].reason),
            });
    }
    if !d.keep.is_empty() {
        p = p
            .text(format!("• Keep ({}): ", d.keep.len()))
            .text(format!("{}.\n", names(&d.keep)));
    }
    if !d.inconclusive.is_empty() {
        let settle: Vec<String> = d
            .inconclusive
            .iter()
            .take(NAMED)
            .map(|a| match a.cases_to_settle {
                Some(n) => format!("{} (~{} cases)", a.arm, thousands(n as f64)),
                None => format!("{} ({})", a.arm, a.reason),
            })
            .collect();
        p = p.text(format!(
            "• Not settled ({}): {}{}.\n",
            d.inconclusive.len(),
            settle.join(", "),
            if d.inconclusive.len() > NAMED {
                format!(", and {} more", d.inconclusive.len() - NAMED)
            } else {
                String::new()
            }
        ));
    }
    if !d.flips.is_empty() {
        let flips: Vec<String> = d
            .flips
            .iter()
            .map(|f| {
                format!(
                    "{} ({} on the set, {} in production)",
                    f.arm,
                    f.verdict_eval.as_str(),
                    f.verdict_production.as_str()
                )
            })
            .collect();
        p = p
            .text("• Flips in production: ")
            .bold(flips.join(", "))
            .text(".\n");
    }
    if !d.interactions.is_empty() {
        let inter: Vec<String> = d
            .interactions
            .iter()
            .map(|i| {
                format!(
                    "{} = {} is {} by {}{}",
                    i.arm,
                    i.components.join(" + "),
                    i.kind,
                    num(Some(i.interaction), 4),
                    i.where_lost
                        .as_ref()
                        .map(|w| format!(", most lost in {w}"))
                        .unwrap_or_default()
                )
            })
            .collect();
        p = p.text(format!("• Interactions: {}.\n", inter.join("; ")));
    }
    p
}
