//! Human rendering of [`VarianceOutput`], with the plain-language verdict on what the set can
//! detect and Miller's advice on repeats.

use std::fmt::Write;

use crate::analysis::variance::VarianceOutput;
use crate::export::spec::Shape::{One, Rows};
use crate::export::spec::{Export, TableSpec, WARNINGS, t};
use crate::report::section::Table;
use crate::report::text::num;
use crate::report::text::thousands;

/// Renders the variance analysis for a terminal.
pub fn human(r: &VarianceOutput) -> String {
    let mut s = String::new();
    let mut t = Table::new(&[
        "arm",
        "within_case_var",
        "case_means_var",
        "between_case_var",
        "repeat_noise_share",
        "churn",
        "mde",
        "cases_needed",
    ])
    .needs_first(&[
        "arm",
        "mde",
        "cases_needed",
        "repeat_noise_share",
        "churn",
        "within_case_var",
        "between_case_var",
        "case_means_var",
    ]);
    for a in &r.arms {
        t.row(vec![
            a.arm.clone(),
            num(a.within_case_var, 5),
            num(a.case_means_var, 5),
            num(a.between_case_var, 5),
            a.repeat_noise_share
                .map_or("—".into(), |x| format!("{:.1}%", 100.0 * x)),
            a.churn.map_or("—".into(), |c| c.to_string()),
            num(a.mde, 4),
            match (a.cases_needed, a.settleable) {
                (Some(n), _) => thousands(n as f64),
                (None, Some(false)) => "not within reach".into(),
                _ => "—".into(),
            },
        ]);
    }
    s.push_str(&t.text());
    let _ = writeln!(s);
    let alpha = 1.0 - r.confidence_level;
    if let Some(mde) = r.typical_mde {
        let detects = mde <= r.threshold_drop;
        if detects {
            let _ = writeln!(
                s,
                "For a typical leave-one-out arm this set detects a drop of {mde:.3} at {:.0}% power (one test, two-sided α = {alpha:.2}), within the threshold of {}.",
                r.power * 100.0,
                crate::text::float_text(r.threshold_drop)
            );
        } else {
            let _ = writeln!(
                s,
                "This set cannot detect a drop of {} at {:.0}% power (two-sided α = {alpha:.2}); for a typical leave-one-out arm it can detect {mde:.3}.",
                crate::text::float_text(r.threshold_drop),
                r.power * 100.0
            );
        }
        // What settles an arm is the family interval that decides, wider than one test: said
        // whenever it needs more cases than the set has, even where one test would detect.
        if let Some(n) = r.typical_cases_needed
            && (!detects || n > r.cases as u64)
        {
            let _ = writeln!(
                s,
                "A typical leave-one-out arm settles (the family interval that decides clears {}, 80% of the time) at about {} cases (the set has {}).",
                crate::text::float_text(r.threshold_drop),
                thousands(n as f64),
                r.cases
            );
        }
    }
    if let Some(base) = r.arms.first()
        && let Some(raw) = base.repeat_noise_share
    {
        let k = base.repeats_mean;
        // Above 1 the between-case estimate is negative (warned): all of the spread is noise.
        let share = raw.min(1.0);
        let of = if raw > 1.0 {
            format!("all (estimated at {:.1}%)", 100.0 * raw)
        } else {
            format!("{:.1}%", 100.0 * share)
        };
        let shrink = 1.0 - (1.0 - share / 2.0).max(0.0).sqrt();
        // With clusters the se shrinks with more clusters, not more cases in the same ones.
        let more = if r.clusters.is_some() {
            "clusters"
        } else {
            "cases"
        };
        if share < 0.1 {
            let _ = writeln!(
                s,
                "Repeat noise is {of} of the spread of baseline case means: more repeats will barely help (doubling K = {k:.0} shrinks the se by {:.1}%); add {more} instead (doubling them shrinks it by 29%).",
                100.0 * shrink
            );
        } else {
            let _ = writeln!(
                s,
                "Repeat noise is {of} of the spread of baseline case means: doubling repeats from {k:.0} to {:.0} would shrink the se by about {:.0}% (doubling {more}: 29%).",
                2.0 * k,
                100.0 * shrink
            );
        }
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// The tables `--export` writes for [`VarianceOutput`].
impl Export for VarianceOutput {
    const TABLES: &'static [TableSpec] = &[
        t(
            "summary",
            "",
            One,
            "threshold_drop:f64 confidence_level:f64 power:f64 cases:i64 clusters:i64 \
             typical_mde:f64 typical_cases_needed:i64",
            "power settings and the typical arm",
        ),
        t(
            "arms",
            "arms",
            Rows,
            "arm:str within_case_var:f64 case_means_var:f64 between_case_var:f64 \
             repeat_noise_share:f64 churn:i64 mde:f64 cases_needed:i64 settleable:bool repeats_mean:f64 n:i64",
            "one row per arm: variance components, minimum detectable drop, cases needed",
        ),
        WARNINGS,
    ];
}
