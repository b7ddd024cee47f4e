//! [`PlanOutput`] for people: the design, its cost and power, and the arms it emits.

use std::fmt::Write;

use crate::analysis::plan::{FractionInfo, PlanOutput};
use crate::export::spec::Shape::{One, Rows};
use crate::export::spec::{Export, TableSpec, WARNINGS, t};
use crate::report::section::{Align, Table};
use crate::report::text::thousands;

/// Renders a plan for a terminal.
pub fn human(r: &PlanOutput, written: Option<&str>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} over {} units: {} arms × {} cases × {} repeats = {} calls, {} input tokens{}",
        r.design_label,
        r.units.len(),
        r.n_arms,
        r.cases,
        r.repeats,
        thousands(r.calls as f64),
        thousands(r.tokens),
        r.cost.map(|c| format!(", ${c:.2}")).unwrap_or_default()
    );
    if let Some(f) = &r.fraction {
        s.push_str(&fraction_text(f));
    }
    match (r.mde, r.sd) {
        (Some(mde), Some(sd)) => {
            let _ = writeln!(
                s,
                "\npower (sd of paired differences {sd:.4}{}): a paired contrast detects {mde:.4} at 80% power; detecting {} needs {} cases{}",
                r.sd_source
                    .as_ref()
                    .map(|x| format!(", from {x}"))
                    .unwrap_or_default(),
                crate::text::float_text(r.threshold_drop),
                r.cases_to_detect
                    .map_or("—".into(), |n| thousands(n as f64)),
                r.mde_main_effect
                    .map(|m| format!(
                        "; a main effect of this design detects about {m:.4} (optimistic)"
                    ))
                    .unwrap_or_default()
            );
        }
        _ => {
            let _ = writeln!(
                s,
                "\npower: give --sd S or --pilot DIR to see the detectable drop and the cases needed"
            );
        }
    }
    if let Some(t) = r.min_certifiable_threshold {
        let _ = writeln!(
            s,
            "smallest threshold these cases can certify, with {} arms judged together: {}{t:.4} ({}){}",
            r.n_arms.saturating_sub(1).max(1),
            if r.min_certifiable_is_lower_bound {
                "at least "
            } else {
                ""
            },
            match r.guarantee {
                ablate_core::data::manifest::Guarantee::Normal => "normal approximation",
                ablate_core::data::manifest::Guarantee::AnyDistribution
                    if r.min_certifiable_is_lower_bound =>
                {
                    "the normal approximation's; any score distribution needs a --pilot to say"
                }
                ablate_core::data::manifest::Guarantee::AnyDistribution => "any score distribution",
            },
            if t <= r.threshold_drop {
                ", within the threshold"
            } else {
                ""
            }
        );
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {}", w.message);
    }
    if let Some(q) = &r.sequential {
        let _ = writeln!(
            s,
            "\nsequential (ablate watch / next): about {} calls instead of {} ({} saved); {} of {} arms projected to stop before {} cases ({} arms' drops from the pilot, the others {:.4} from the threshold).",
            thousands(q.calls_expected as f64),
            thousands(q.calls_fixed as f64),
            crate::report::text::percent(Some(q.saving), 0),
            q.arms_stopping_early,
            q.arms.len(),
            r.cases,
            q.arms_from_pilot,
            q.typical_gap
        );
        if q.unit == "cluster" {
            let _ = writeln!(
                s,
                "Units are clusters like the pilot's (mean {:.2} cases, at most {}), as watch runs them.",
                q.mean_unit_cases, q.max_unit_cases
            );
        }
        let _ = writeln!(s, "{}.", q.note);
    }
    match written {
        Some(path) => {
            let _ = writeln!(s, "\nwrote the arms table to {path}");
        }
        None => {
            let _ = writeln!(
                s,
                "\narms (write them with --out arms.parquet or arms.csv):"
            );
            let mut t = Table::new(&["arm", "removed", "tokens_per_call"]).align(1, Align::Left);
            for a in &r.arms {
                t.row(vec![
                    a.arm.clone(),
                    a.removed.join(", "),
                    thousands(a.tokens_per_call),
                ]);
            }
            s.push_str(&t.text());
        }
    }
    s
}

/// A fractional design: its name, resolution, generators, defining relation, factors and aliases.
fn fraction_text(f: &FractionInfo) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n{} resolution {} · generators {}",
        f.name,
        roman(f.resolution),
        f.generators.join(", ")
    );
    let _ = writeln!(
        s,
        "defining relation: I = {}",
        f.defining_relation.join(" = ")
    );
    let _ = writeln!(
        s,
        "factors: {}",
        f.factors
            .iter()
            .map(|(l, u)| format!("{l} = {u}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(s, "aliases:");
    for a in &f.aliases {
        let _ = writeln!(s, "  {a}");
    }
    s
}

fn roman(n: usize) -> String {
    match n {
        3 => "III".into(),
        4 => "IV".into(),
        5 => "V".into(),
        6 => "VI".into(),
        7 => "VII".into(),
        8 => "VIII".into(),
        _ => n.to_string(),
    }
}

/// Renders `plan --confirm` for a terminal.
pub fn confirm_human(
    r: &crate::analysis::plan::ConfirmOutput,
    out: Option<&std::path::Path>,
) -> String {
    let mut s = format!(
        "{}: {} ({} units)\n{}\n",
        if r.predicted_to_fail {
            "largest subset predicted to pass"
        } else {
            "joint cut"
        },
        r.units.join(", "),
        r.units.len(),
        r.note
    );
    if let (Some(path), false, true) = (out, r.measured, r.arm.is_some()) {
        s.push_str(&format!(
            "wrote the arms table with {} added to {}\n",
            r.arm.as_deref().unwrap_or_default(),
            path.display()
        ));
    }
    s
}

/// The tables `--export` writes for [`PlanOutput`].
impl Export for PlanOutput {
    const TABLES: &'static [TableSpec] = &[
        t(
            "summary",
            "",
            One,
            "design:str design_label:str units:list<str> n_arms:i64 cases:i64 repeats:i64 calls:i64 \
             tokens:f64 cost:f64 sd:f64 sd_source:str threshold_drop:f64 mde:f64 \
             mde_main_effect:f64 cases_to_detect:i64 guarantee:str min_certifiable_threshold:f64 \
             min_certifiable_is_lower_bound:bool cases_to_certify:i64 fraction:str=fraction.name \
             resolution:i64=fraction.resolution generators:list<str>=fraction.generators \
             aliases:list<str>=fraction.aliases \
             sequential_calls_expected:i64=sequential.calls_expected \
             sequential_saving:f64=sequential.saving",
            "the design, its cost and power",
        ),
        t(
            "sequential_arms",
            "sequential.arms",
            Rows,
            "arm:str drop:f64 sd:f64 source:str cases:i64",
            "with --sequential: the cases each arm's tests are projected to read",
        ),
        t(
            "arms",
            "arms",
            Rows,
            "arm:str removed:list<str> tokens_per_call:f64",
            "one row per planned arm",
        ),
        WARNINGS,
    ];
}
