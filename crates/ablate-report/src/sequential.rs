//! Human rendering of the sequential verbs: [`WatchOutput`], [`NextOutput`] and
//! [`ReplayOutput`].

use std::fmt::Write;

use crate::analysis::sequential::{NextOutput, ReplayOutput, State, WatchOutput};
use crate::export::spec::Shape::{One, Rows};
use crate::export::spec::{Export, TableSpec, WARNINGS, t};
use crate::report::section::Table;
use crate::report::text::{num, thousands};

fn state_counts<'a>(states: impl Iterator<Item = &'a State>) -> (usize, usize, usize) {
    states.fold((0, 0, 0), |(n, r, c), s| match s {
        State::Needed => (n + 1, r, c),
        State::Removable => (n, r + 1, c),
        State::Continue => (n, r, c + 1),
    })
}

/// Renders `ablate watch` on the experiment `dir` for a terminal.
pub fn watch_human(w: &WatchOutput, dir: &str) -> String {
    let mut s = String::new();
    let mut t = Table::new(&[
        "arm",
        "state",
        "units",
        "drop",
        "cs_low",
        "cs_high",
        "decided_at",
        "units_still_needed",
    ]);
    for a in &w.arms {
        t.row(vec![
            a.arm.clone(),
            format!("{}{}", a.state.label(), if a.recorded { " *" } else { "" }),
            a.units.to_string(),
            num(a.drop, 4),
            a.cs.map_or("—".into(), |cs| format!("{:.4}", cs.low)),
            a.cs.map_or("—".into(), |cs| format!("{:.4}", cs.high)),
            a.decided_at.map_or("—".into(), |n| n.to_string()),
            a.units_still_needed
                .map_or("—".into(), |n| format!("~{}", thousands(n as f64))),
        ]);
    }
    s.push_str(&t.text());
    let (needed, removable, open) = state_counts(w.arms.iter().map(|a| &a.state));
    let _ = writeln!(
        s,
        "\n{needed} needed, {removable} removable, {open} to continue, against threshold_drop {} (anytime-valid at α = {} for all {} arms together: {} each).",
        crate::text::float_text(w.threshold_drop),
        crate::text::significant(w.alpha, 3),
        w.arms.len(),
        crate::text::significant(w.alpha_per_arm, 4),
    );
    let _ = writeln!(
        s,
        "Units are {}s in a fixed order from --seed {} ({} in the main set), entering once complete ({} repeats in the arm and the baseline). {} calls made so far.",
        w.unit,
        w.seed,
        w.units_available,
        w.repeats,
        thousands(w.calls_made as f64)
    );
    if w.arms.iter().any(|a| a.recorded) {
        let _ = writeln!(
            s,
            "* decided in an earlier run (.ablate-watch.json); --reopen decides again."
        );
    }
    // An open arm that has read every unit of the order has nothing left for `next` to run:
    // only more cases can settle it (as `next.set_exhausted` says).
    let read_all = w
        .arms
        .iter()
        .filter(|a| a.state == State::Continue && a.units >= w.order.units.len())
        .count();
    let dir = ablate_core::text::shell_word(dir);
    let arms = |n: usize| if n == 1 { "arm" } else { "arms" };
    if open > read_all {
        let _ = writeln!(
            s,
            "Next: `ablate next {dir} --calls N --out batch.csv` spends N calls on the {} {} still open{}.",
            open - read_all,
            arms(open - read_all),
            if read_all > 0 {
                format!(
                    " with units left ({read_all} more {} read every {} of the set)",
                    if read_all == 1 { "has" } else { "have" },
                    w.unit
                )
            } else {
                String::new()
            }
        );
    } else if open > 0 {
        let more = w.repeats + 1;
        let _ = writeln!(
            s,
            "Next: the {open} open {} read every {} of the set, so `ablate next` at {} repeats has nothing to run: add cases to the set to settle {}, or run more repeats of each (`ablate next {dir} --calls N --repeats {more} --out batch.csv`, then `ablate watch {dir} --repeats {more}`; repeats narrow only the repeat noise).",
            if open == 1 { "arm has" } else { "arms have" },
            w.unit,
            w.repeats,
            if open == 1 { "it" } else { "them" }
        );
    }
    for warning in &w.warnings {
        let _ = writeln!(s, "warning: {warning}");
    }
    s
}

/// Renders `ablate next` for a terminal: the batch written to `out` for the experiment `dir`.
pub fn next_human(n: &NextOutput, out: &str, dir: &str, repeats: Option<u32>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "wrote {out}: {} calls of the {} asked for ({} on the baseline), for {} of the {} arms still open:",
        thousands(n.planned as f64),
        thousands(n.budget as f64),
        thousands(n.baseline_calls as f64),
        n.arms.len(),
        n.open_arms
    );
    let mut t = Table::new(&["arm", "units"]);
    for (arm, units) in &n.arms {
        t.row(vec![arm.clone(), units.to_string()]);
    }
    s.push_str(&t.text());
    let dir = ablate_core::text::shell_word(dir);
    if n.planned == 0 {
        // Nothing to run: importing "its logs" would find none.
        let _ = writeln!(
            s,
            "\nNothing to run: {} (the warnings say why).",
            if n.open_arms == 0 {
                "no arm is open"
            } else if n.warnings.iter().any(|w| w.code == "next.budget_too_small") {
                "no open arm's next unit fits in the calls asked for"
            } else {
                "no open arm has a unit left to schedule"
            }
        );
    } else {
        // The repeats the batch was planned with, for the watch that reads it.
        let repeats = repeats
            .map(|r| format!(" --repeats {r}"))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "\nRun them in the harness, add its logs with `ablate import HARNESS LOGS --into {dir}` (or append the rows to the results table), then run `ablate watch {dir}{repeats}` again."
        );
    }
    for warning in &n.warnings {
        let _ = writeln!(s, "warning: {warning}");
    }
    s
}

/// Renders `ablate watch --replay` for a terminal.
pub fn replay_human(r: &ReplayOutput) -> String {
    let mut s = String::new();
    let mut t = Table::new(&[
        "arm",
        "state",
        "stopped_at",
        "full_verdict",
        "full_confidence",
        "agrees",
    ]);
    for a in &r.arms {
        t.row(vec![
            a.arm.clone(),
            a.state.label().into(),
            a.stopped_at.to_string(),
            a.full_verdict.as_str().into(),
            a.full_confidence.as_str().into(),
            match a.agrees {
                Some(true) => "yes".into(),
                Some(false) => "NO".into(),
                None => "—".into(),
            },
        ]);
    }
    s.push_str(&t.text());
    let _ = writeln!(
        s,
        "\nA sequential run would have used {} of {} calls ({} saved): {} of {} arms decided early, {} of them as the full run decides ({} where the full run is confident).",
        thousands(r.calls_sequential as f64),
        thousands(r.calls_full as f64),
        crate::report::text::percent(Some(r.saving), 0),
        r.decided,
        r.arms.len(),
        r.agreeing,
        r.agreeing_confident,
    );
    let _ = writeln!(
        s,
        "Order: {}s shuffled by --seed {}; {} repeats per call cell; α = {} across all arms (each at α/{}).",
        r.unit,
        r.seed,
        r.repeats,
        crate::text::significant(r.alpha, 3),
        r.arms.len()
    );
    for warning in &r.warnings {
        let _ = writeln!(s, "warning: {warning}");
    }
    s
}

/// The tables `--export` writes for [`WatchOutput`].
impl Export for WatchOutput {
    const TABLES: &'static [TableSpec] = &[
        t(
            "summary",
            "",
            One,
            "method:str unit:str threshold_drop:f64 alpha:f64 alpha_per_arm:f64 seed:i64 repeats:i64 \
             score_min:f64 score_max:f64 units_available:i64 calls_made:i64",
            "the tests' settings",
        ),
        t(
            "arms",
            "arms",
            Rows,
            "arm:str state:str units:i64 cases:i64 drop:f64 cs_low:f64 cs_high:f64 cs_level:f64 \
             cs_method:str p_needed:f64 p_removable:f64 decided_at:i64 \
             projected_units:i64 units_still_needed:i64 recorded:bool",
            "one row per arm: its tests' p-values, the drop's interval, and its state",
        ),
        WARNINGS,
    ];
}

/// The tables `--export` writes for [`ReplayOutput`].
impl Export for ReplayOutput {
    const TABLES: &'static [TableSpec] = &[
        t(
            "summary",
            "",
            One,
            "method:str unit:str threshold_drop:f64 alpha:f64 seed:i64 repeats:i64 calls_full:i64 \
             calls_sequential:i64 saving:f64 decided:i64 agreeing:i64 agreeing_confident:i64",
            "the calls a sequential run would have made",
        ),
        t(
            "arms",
            "arms",
            Rows,
            "arm:str state:str stopped_at:i64 cases:i64 full_verdict:str full_confidence:str \
             agrees:bool",
            "one row per arm: where it would have stopped, against the full run",
        ),
        WARNINGS,
    ];
}
/// The tables `--export` writes for [`NextOutput`].
impl Export for NextOutput {
    const TABLES: &'static [TableSpec] = &[
        t(
            "calls",
            "calls",
            Rows,
            "case_id:str arm:str repeat:i64",
            "the batch: one row per call to make",
        ),
        WARNINGS,
    ];
}
