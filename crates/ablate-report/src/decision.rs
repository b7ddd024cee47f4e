//! The report's opening: the decision, from [`Decision`], in a few lines a director reads first.

use crate::analysis::decision::{Decision, DecisionArm};
use crate::analysis::vocab::{Confidence, Verdict};
use crate::export::spec::Shape::{One, Rows};
use crate::export::spec::{Export, TableSpec, t};
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

/// The line for a stress slice too small to decide anything ([`Decision::stress_too_few_units`]).
fn stress_too_small(n: usize) -> String {
    format!(
        "The stress slice is too small to decide anything: {n} {} (cases, or clusters where cases come in them) where any verdict needs 10. Add stress cases before running more arms.",
        if n == 1 { "unit" } else { "units" }
    )
}

/// The slices that hold back the arms confidently removable on the main set: "the stress
/// slice", "production", "the stress slice and production" (every such arm by both) or "the
/// stress slice or production" ([`DecisionArm::held_on`]).
fn slices_holding(d: &Decision) -> &'static str {
    let held = || d.inconclusive.iter().filter(|a| !a.held_on.is_empty());
    let on = |slice: &str| held().any(|a| a.held_on.iter().any(|s| s == slice));
    let (stress, production) = (on("stress slice"), on("production"));
    match (stress, production) {
        (true, true) if held().all(|a| a.held_on.len() > 1) => "the stress slice and production",
        (true, true) => "the stress slice or production",
        (true, false) => "the stress slice",
        _ => "production",
    }
}

/// For each slice holding arms back, the one that settles there on the fewest cases
/// ([`DecisionArm::slice_cases_to_settle`]: stress cases on the stress slice, main-set cases
/// drawn as the set's were in production), an arm more cases would clear ahead of one they would
/// settle as needed ([`DecisionArm::leans_needed_on`]), with which way, as a clause per slice
/// ("" when none has a figure).
fn cheapest_on_slices(d: &Decision) -> String {
    let which = |a: &DecisionArm| {
        if d.comparison {
            a.arm.clone()
        } else {
            unit_phrase(&a.removed)
        }
    };
    let mut clauses = Vec::new();
    for (slice, named, place, cases) in [
        (
            "stress slice",
            "the stress slice",
            "on the stress slice",
            "stress cases",
        ),
        (
            "production",
            "production",
            "in production",
            "cases drawn as the set's were",
        ),
    ] {
        let figures: Vec<(bool, u64, &DecisionArm)> = d
            .inconclusive
            .iter()
            .filter_map(|a| {
                let leans = a.leans_needed_on.iter().any(|s| s == slice);
                a.slice_cases_to_settle(slice).map(|n| (leans, n, a))
            })
            .collect();
        let Some(&(leans, n, a)) = figures.iter().min_by_key(|&&(leans, n, _)| (leans, n)) else {
            continue;
        };
        let way = if leans {
            Verdict::Needed
        } else {
            Verdict::Removable
        }
        .settles_as(d.comparison);
        // Another slice to clear matters only to an arm these cases would clear.
        let also = match a.held_on.iter().find(|s| *s != slice) {
            _ if leans => "",
            Some(other) if other == "production" => ", and production has to clear it too",
            Some(_) => ", and the stress slice has to clear it too",
            None => "",
        };
        // One arm with a figure: named, not "the cheapest" (the clause follows "held back by …").
        clauses.push(if figures.len() == 1 {
            format!(
                "{} would settle {place} at about {} {cases}, {way}{also}",
                which(a),
                thousands(n as f64),
            )
        } else {
            format!(
                "of those held back by {named}, the cheapest to settle there is {}, at about {} {cases}, {way}{also}",
                which(a),
                thousands(n as f64),
            )
        });
    }
    if clauses.is_empty() {
        return String::new();
    }
    format!(
        ": {} ({}with 80% probability)",
        clauses.join("; "),
        if clauses.len() > 1 { "each " } else { "" }
    )
}

/// The arms confidently removable on the main set and held back only by a slice, in a clause:
/// "each confidently removable on the main set and held back by the stress slice: of those …"
/// (`lead` opens it: "each", "it is", or a count).
fn held_clause(d: &Decision, lead: &str) -> String {
    format!(
        "{lead} confidently {} on the main set and held back by {}{}",
        if d.comparison {
            "not worse than the baseline"
        } else {
            "removable"
        },
        slices_holding(d),
        cheapest_on_slices(d)
    )
}

/// How an inconclusive arm would settle: ~n cases (at least m), not settleable, or why not.
fn settling(a: &DecisionArm) -> String {
    match (a.cases_to_settle, a.cases_to_settle_low) {
        (Some(n), Some(lo)) if lo < n => format!(
            "{} (~{} cases for 80% power, {} if its drop is at the far end of its interval)",
            a.arm,
            thousands(n as f64),
            thousands(lo as f64)
        ),
        (Some(n), _) => format!("{} (~{} cases for 80% power)", a.arm, thousands(n as f64)),
        _ if a.settleable == Some(false) => {
            format!("{} (not within reach: beyond 100 times the set)", a.arm)
        }
        _ => format!("{} ({})", a.arm, a.reason),
    }
}

fn tokens_and_dollars(tokens: Option<f64>, dollars: Option<f64>) -> String {
    match tokens {
        Some(t) => format!(
            "{} tokens per request{}",
            thousands(t),
            dollars
                .map(|c| format!(", ${} a day", thousands(c)))
                .unwrap_or_default()
        ),
        None => String::new(),
    }
}

/// The decision as a reader meets it: one line with the answer (naming units, never arms; what
/// it saves; what it costs in quality on production traffic), at most three short lines (what to
/// keep, what is not settled and the one command that settles the cheapest, what the set can
/// certify), and every detail ([`prose`]) below, collapsed.
pub struct Page {
    /// The answer, at most [`ANSWER_CHARS`] characters.
    pub answer: Prose,
    /// At most three short lines.
    pub next: Vec<Prose>,
    /// What the verdicts hold under, in one line beside the answer: the family and the
    /// guarantee, or `--per-arm`'s caveat ([`basis`]).
    pub basis: Prose,
    /// Every detail: the family rule, each arm's cases to settle, flips, interactions.
    pub details: Prose,
}

/// The legend of a comparison (no arm removes units: models, prompt versions), in the words the
/// decision uses for one.
pub const COMPARISON_LEGEND: &str = "not worse = confidently within the threshold of the baseline (verdict removable-on-this-set, confidence confident) on the set, the stress slice and in production; worse = confidently worse by the threshold or more (needed, confident); not settled = the interval that decides reaches across the threshold (confidence inconclusive).";

/// The legend for `d`: of cuts, or of a comparison.
pub fn legend(d: &Decision) -> &'static str {
    if d.comparison {
        COMPARISON_LEGEND
    } else {
        LEGEND
    }
}

/// What the page's words stand for, in the values scripts read.
pub const LEGEND: &str = "cut = confidently removable (verdict removable-on-this-set, confidence confident) on the set, the stress slice and in production; keep = confidently needed (needed, confident); not settled = the interval that decides reaches across the threshold (confidence inconclusive).";

/// The longest answer line.
pub const ANSWER_CHARS: usize = 160;

/// Units for people: up to four names, more than two units of one block as `3 few_shot units
/// (06, 07, 10)` (never `few_shot/*`, which reads as the whole block), and a count of the rest.
pub fn unit_phrase(units: &[String]) -> String {
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for u in units {
        let block = u.split_once('/').map_or(u.as_str(), |(b, _)| b);
        match groups.iter_mut().find(|(b, _)| b == block) {
            Some((_, members)) => members.push(u),
            None => groups.push((block.to_string(), vec![u.as_str()])),
        }
    }
    let mut names: Vec<String> = groups
        .into_iter()
        .flat_map(|(block, members)| {
            if members.len() > 2 {
                let short: Vec<&str> = members
                    .iter()
                    .map(|u| u.split_once('/').map_or(*u, |(_, rest)| rest))
                    .collect();
                let listed = if short.len() <= 4 {
                    format!(" ({})", short.join(", "))
                } else {
                    format!(" ({}, …)", short[..3].join(", "))
                };
                vec![format!("{} {block} units{listed}", members.len())]
            } else {
                members.into_iter().map(str::to_string).collect()
            }
        })
        .collect();
    if names.len() > 4 {
        let rest = names.len() - 3;
        names.truncate(3);
        names.push(format!("{rest} more"));
    }
    names.join(", ")
}

/// "1,958 tokens/request ($5,873/day)" (the dollars with pricing).
fn saves(tokens: Option<f64>, dollars: Option<f64>) -> String {
    match (tokens, dollars) {
        (Some(t), Some(c)) => format!("{} tokens/request (${}/day)", thousands(t), thousands(c)),
        (Some(t), None) => format!("{} tokens/request", thousands(t)),
        _ => String::new(),
    }
}

/// ", quality −0.0019 in production (−0.0257 to 0.0219)": the drop where it matters, with the
/// interval that judges it.
fn quality(d: &Decision) -> String {
    match &d.quality_cost {
        Some(q) => format!(
            ", quality {} {} ({} to {})",
            crate::report::text::signed(Some(-q.drop)),
            if q.on == "production" {
                "in production"
            } else {
                "on the set"
            },
            q.ci_family
                .map_or("—".into(), |i| crate::report::text::signed(Some(-i.high))),
            q.ci_family
                .map_or("—".into(), |i| crate::report::text::signed(Some(-i.low))),
        ),
        None => String::new(),
    }
}

/// The answer: cut these units, run the arm that confirms them (or cut fewer, when no run within
/// reach can), keep everything, or not settled yet (with the best candidate); `threshold` the
/// agreed `threshold_drop`.
fn answer(d: &Decision, threshold: f64) -> String {
    if d.comparison {
        return match (d.cut.is_empty(), d.keep.is_empty()) {
            (false, _) => format!("Not worse than the baseline: {}", names_in_answer(&d.cut)),
            (true, false) if d.inconclusive.is_empty() => {
                format!("Worse than the baseline: {}", names_in_answer(&d.keep))
            }
            _ => "Not settled yet: no alternative is confidently as good as the baseline".into(),
        };
    }
    match (&d.joint_cut, &d.measured_cut, &d.best_candidate) {
        (Some(j), _, _) if j.measured && j.cleared => format!(
            "Cut {}: saves {}{}",
            within_answer(unit_phrase(&j.units)),
            saves(d.tokens_saved, d.cost_saved_per_day),
            quality(d)
        ),
        (_, Some(m), _) if d.tokens_saved.is_some() => format!(
            "Cut {}: saves {}{}",
            within_answer(unit_phrase(&m.units)),
            saves(d.tokens_saved, d.cost_saved_per_day),
            quality(d)
        ),
        // Its predicted drop is at the threshold or too close to it for any run within reach to
        // clear it: running the arm would settle nothing.
        (Some(j), _, _) if !j.measured && unconfirmable(j, threshold) => {
            format!(
                "Not settled yet: cutting {} together is predicted {} — cut fewer of them",
                within_answer(unit_phrase(&j.units)),
                if j.drop >= threshold {
                    "at or above the threshold"
                } else {
                    "too close to the threshold to confirm"
                }
            )
        }
        (Some(j), _, _) if !j.measured && j.open_on.is_empty() => format!(
            "Not settled yet: cutting {} together looks safe but was never measured — run that one arm",
            within_answer(unit_phrase(&j.units))
        ),
        // No arm can clear a slice of fewer than 10 units: the step is stress cases, said
        // first (running the joint arm would settle nothing).
        (Some(j), _, _)
            if !j.measured
                && d.stress_too_few_units.is_some()
                && j.open_on.iter().any(|o| o == "stress slice") =>
        {
            format!(
                "Not settled yet: add stress cases before cutting {} together (the slice has {}; a verdict needs 10)",
                within_answer(unit_phrase(&j.units)),
                d.stress_too_few_units.unwrap_or_default()
            )
        }
        // Not yet clear on the stress slice or in production: not "safe", only a candidate.
        (Some(j), _, _) if !j.measured => format!(
            "Not settled yet: cutting {} together was never measured, and is not settled {} — run that one arm",
            within_answer(unit_phrase(&j.units)),
            j.open_on
                .iter()
                .map(|o| if o == "production" {
                    "in production".to_string()
                } else {
                    format!("on the {o}")
                })
                .collect::<Vec<_>>()
                .join(" or "),
        ),
        (_, _, Some(b)) => format!(
            "Not settled: nothing can be cut yet. Best candidate {}: saves {}{}",
            within_answer(unit_phrase(&b.removed)),
            saves(b.tokens_removed, d.candidate_cost_per_day),
            quality(d)
        ),
        _ if d.inconclusive.is_empty() => "Keep everything: every unit measured is needed".into(),
        _ => "Not settled yet: nothing can be cut with confidence".into(),
    }
}

/// Whether no run within reach can confirm the joint cut: no confirming cases, its predicted
/// drop at or above `threshold`, or too close to it within 100 times the set.
fn unconfirmable(j: &crate::analysis::decision::JointCut, threshold: f64) -> bool {
    j.cases_to_settle.is_none() && (j.settleable == Some(false) || j.drop >= threshold)
}

/// The most characters a list of units or arms takes in the answer, so that what follows it
/// (the arm to run, what the cut saves) stays within [`ANSWER_CHARS`].
const PHRASE_CHARS: usize = 64;

/// `phrase` cut to [`PHRASE_CHARS`] characters with an ellipsis (at a character: a unit's name
/// has no spaces to cut at). The page's next lines list every unit in full.
fn within_answer(phrase: String) -> String {
    if phrase.chars().count() <= PHRASE_CHARS {
        return phrase;
    }
    let cut: String = phrase.chars().take(PHRASE_CHARS - 1).collect();
    format!("{cut}…")
}

/// [`names`] for the answer: the names cut by [`within_answer`], the count of the others kept.
fn names_in_answer(arms: &[DecisionArm]) -> String {
    let listed = within_answer(
        arms.iter()
            .take(NAMED)
            .map(|a| a.arm.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    );
    if arms.len() > NAMED {
        format!("{listed}, and {} more", arms.len() - NAMED)
    } else {
        listed
    }
}

/// Cuts `text` to [`ANSWER_CHARS`] characters at a word, with an ellipsis.
fn short(text: String) -> String {
    if text.chars().count() <= ANSWER_CHARS {
        return text;
    }
    let cut: String = text.chars().take(ANSWER_CHARS - 1).collect();
    let at = cut.rfind(' ').unwrap_or(cut.len());
    format!("{}…", &cut[..at])
}

/// The decision for the page's top (see [`Page`]); `dir` is the experiment folder as given, for
/// the command that settles the cheapest arm, `cases` the main-set cases and `repeats` the run's
/// repeats per case.
pub fn page(d: &Decision, threshold: f64, dir: &str, cases: usize, repeats: u32) -> Page {
    let mut next = Vec::new();
    if !d.keep.is_empty() {
        let units: Vec<String> = d.keep.iter().flat_map(|a| a.removed.clone()).collect();
        next.push(Prose::new().text(if d.comparison {
            format!("Worse: {}.", names(&d.keep))
        } else {
            format!("Keep: {}.", unit_phrase(&units))
        }));
    }
    if !d.inconclusive.is_empty() {
        let held = d
            .inconclusive
            .iter()
            .filter(|a| !a.held_on.is_empty())
            .count();
        let all_held = held == d.inconclusive.len();
        // Beside a main-set figure, the arms held back by a slice (their figures are the
        // slice's, often fewer cases).
        let and_held = match held {
            0 => String::new(),
            1 => format!(" And 1 arm is{}.", held_clause(d, "")),
            n => format!(" And {n} arms are{}.", held_clause(d, "")),
        };
        let line = match &d.cheapest_to_settle {
            Some(c) => {
                let needed = c.cases_to_settle.unwrap_or(0);
                let more = needed.saturating_sub(cases as u64);
                let which = if d.comparison {
                    c.arm.clone()
                } else {
                    unit_phrase(&c.removed)
                };
                if more > 0 {
                    // Beyond the set: `next` schedules only the set's own cases, so the step is
                    // new cases, not a batch.
                    format!(
                        "{} not settled: the cheapest to settle{} is {which}, which needs about {} cases, ~{} more than the set holds: add cases to the eval set (drawn as its cases were) and run that arm and the baseline on them.{and_held}",
                        plural(d.inconclusive.len(), "arm"),
                        if held > 0 { " on the main set" } else { "" },
                        thousands(needed as f64),
                        thousands(more as f64),
                    )
                } else {
                    // Within the set: the arm has not run on all of its cases yet.
                    let calls = (cases as u64).max(1) * u64::from(repeats.max(1)) * 2;
                    format!(
                        "{} not settled: the cheapest to settle{} is {which}, within this set's cases; run `ablate next {} --calls {calls} --out next.parquet` for the calls it still needs.{and_held}",
                        plural(d.inconclusive.len(), "arm"),
                        if held > 0 { " on the main set" } else { "" },
                        ablate_core::text::shell_word(dir),
                    )
                }
            }
            None if all_held => format!(
                "{} not settled, {}.",
                plural(d.inconclusive.len(), "arm"),
                held_clause(d, if held == 1 { "it is" } else { "each" })
            ),
            None if d
                .inconclusive
                .iter()
                .filter(|a| a.held_on.is_empty())
                .any(|a| a.settleable == Some(false)) =>
            {
                format!(
                    "{} not settled, none on the main set within reach of 100 times these cases.{and_held}",
                    plural(d.inconclusive.len(), "arm")
                )
            }
            None => format!(
                "{} not settled; the main-set cases that would settle {} cannot be estimated from this run (each arm's reason says why).{and_held}",
                plural(d.inconclusive.len(), "arm"),
                match (held, d.inconclusive.len() - held) {
                    (0, 1) => "it".to_string(),
                    (0, _) => "them".to_string(),
                    (_, k) => format!("{k} of them"),
                }
            ),
        };
        next.push(Prose::new().text(format!("{line}{}", best_candidate_to_settle(d))));
    }
    if let Some(n) = d.stress_too_few_units {
        next.push(Prose::new().text(stress_too_small(n)));
    }
    if let Some(m) = d
        .min_certifiable_threshold
        .filter(|&m| m > threshold && !d.comparison)
    {
        next.push(Prose::new().text(format!(
            "For an arm of typical spread these cases certify a removal only above a drop of {}{} (the median arm's interval reaches that far above its drop; an arm that varies less can clear a lower threshold).",
            num(Some(m), 4),
            times_threshold(m, threshold)
        )));
    }
    // At most three: the certifiable threshold gives way to a stress slice too small (the
    // threshold stays in the details).
    next.truncate(3);
    Page {
        answer: Prose::new().bold(short(answer(d, threshold))),
        next,
        basis: basis(d),
        details: prose(d, threshold),
    }
}

/// When the answer names a best candidate other than the cheapest arm to settle, the cases it
/// would settle at itself (the answer is about it; the figures beside it had been another
/// arm's): " The best candidate, X, settles at about N cases." Nothing otherwise.
fn best_candidate_to_settle(d: &Decision) -> String {
    let (Some(best), Some(cheapest)) = (&d.best_candidate, &d.cheapest_to_settle) else {
        return String::new();
    };
    if best.arm == cheapest.arm || d.comparison {
        return String::new();
    }
    let name = unit_phrase(&best.removed);
    match (best.cases_to_settle, best.settleable) {
        (Some(n), _) => format!(
            " The best candidate, {name}, would settle at about {} cases.",
            thousands(n as f64)
        ),
        (None, Some(false)) => {
            format!(" The best candidate, {name}, would not settle within 100 times these cases.")
        }
        _ => String::new(),
    }
}

/// The line beside the answer that names what its verdicts hold under: the family and the
/// guarantee (the decision's `family` up to its parenthesis of formulas), or, with `--per-arm`,
/// the whole note, whose caveat (no family-wise control) must not hide in the details.
pub fn basis(d: &Decision) -> Prose {
    let family = if d.per_arm {
        d.family.as_str()
    } else {
        d.family.split(" (").next().unwrap_or(&d.family)
    };
    let mut chars = family.chars();
    let first = chars.next().map(|c| c.to_uppercase().collect::<String>());
    Prose::new().text(format!("{}{}.", first.unwrap_or_default(), chars.as_str()))
}

/// " (2.4 times the agreed 0.005)": how far a certifiable threshold `m` is above the agreed
/// one; nothing when the agreed threshold is 0 (the ratio is infinite and says nothing).
pub(crate) fn times_threshold(m: f64, threshold: f64) -> String {
    if threshold > 0.0 {
        format!(
            " ({:.1} times the agreed {})",
            m / threshold,
            crate::text::float_text(threshold)
        )
    } else {
        String::new()
    }
}

fn plural(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// The decision as prose: the family, the cut (measured, or the arm to run), keep, settle, flips,
/// interactions (one line each, when any).
pub fn prose(d: &Decision, threshold: f64) -> Prose {
    let mut p = Prose::new()
        .bold(match d.guarantee {
            ablate_core::data::manifest::Guarantee::AnyDistribution => {
                "Decision (any score distribution)"
            }
            ablate_core::data::manifest::Guarantee::Normal => "Decision (normal approximation)",
        })
        .text(format!(
            " (threshold_drop {}; \"confident\" means the whole interval is on one side). {}.\n",
            crate::text::float_text(threshold),
            d.family
        ));
    if let Some(m) = d
        .min_certifiable_threshold
        .filter(|&m| m > threshold && !d.comparison)
    {
        p = p.text(format!(
            "• What this experiment can certify: no removal below a threshold of about {}{}, with these cases, this family and this guarantee: an arm that changes nothing still has an interval that wide. Run more cases (see below), or choose the guarantee and family before the next run.\n",
            crate::report::text::num(Some(m), 4),
            times_threshold(m, threshold)
        ));
    }
    if !d.confident_only_under_normal.is_empty() {
        p = p.text(format!(
            "• Confident under the normal approximation only, not for any score distribution: {}.\n",
            d.confident_only_under_normal.join(", ")
        ));
    }
    if d.per_arm {
        p = p.bold("Per-arm confidence (--per-arm):").text(
            " no family-wise control; some of these confident verdicts may be wrong by chance alone.\n",
        );
    }
    if d.comparison {
        return comparison(p, d);
    }
    p = joint_cut(p, d, threshold);
    if let Some(m) = d.measured_cut.as_ref().filter(|_| {
        d.joint_cut
            .as_ref()
            .is_some_and(|j| !(j.measured && j.cleared))
    }) {
        p = p.text(format!(
            "• Cut now, on measured evidence: {} ({}).\n",
            m.arm,
            tokens_and_dollars(d.tokens_saved, d.cost_saved_per_day)
        ));
    }
    if !d.keep.is_empty() {
        p = p
            .text(format!("• Keep ({}): ", d.keep.len()))
            .text(format!("{}.\n", names(&d.keep)));
    }
    p = not_settled(p, d);
    p = flips_and_interactions(p, d);
    p
}

/// The joint cut's line: measured and clear, measured and needed, measured and not settled,
/// measured but open on a slice, or not yet measured (with the arm to run).
fn joint_cut(p: Prose, d: &Decision, threshold: f64) -> Prose {
    match &d.joint_cut {
        None => p.text("• Cut: nothing is confidently removable.\n"),
        Some(j) if j.measured && j.cleared => p
            .text(format!("• Cut these units ({}): ", j.units.len()))
            .bold(j.units.join(", "))
            .text(format!(
                " — {}, measured as arm {} (drop {}).\n",
                tokens_and_dollars(d.tokens_saved, d.cost_saved_per_day),
                j.arm,
                num(Some(j.drop), 4)
            )),
        Some(j) if j.measured && j.verdict == Some(Verdict::Needed) => p
            .text(format!("• Cut candidates ({}): ", j.units.len()))
            .bold(j.units.join(", "))
            .text(format!(
                ": each removable alone, but measured together as {} they are needed (drop {}); do not cut them together.\n",
                j.arm,
                num(Some(j.drop), 4)
            )),
        Some(j) if j.measured && j.confidence != Some(Confidence::Confident) => p
            .text(format!("• Cut candidates ({}): ", j.units.len()))
            .bold(j.units.join(", "))
            .text(format!(
                ": each removable alone; measured together as {} (drop {}) they are not settled.\n",
                j.arm,
                num(Some(j.drop), 4)
            )),
        Some(j) if j.measured => p
            .text(format!("• Cut candidates ({}): ", j.units.len()))
            .bold(j.units.join(", "))
            .text(format!(
                ", measured together as {} (drop {}), confidently removable on the main set but not yet clear on the {}.\n",
                j.arm,
                num(Some(j.drop), 4),
                j.open_on.join(" and ")
            )),
        Some(j) => p
            .text(format!(
                "• Cut candidates, not yet measured together ({}): ",
                j.units.len()
            ))
            .bold(j.units.join(", "))
            .text(format!(
                "{}. {} (their drops predict {} together{}).\n",
                if j.open_on.is_empty() {
                    String::new()
                } else {
                    format!(
                        " (confidently removable on the main set, not yet clear on the {})",
                        j.open_on.join(" and ")
                    )
                },
                if unconfirmable(j, threshold) {
                    format!("The arm that would confirm them is {}", j.arm)
                } else {
                    format!("Run the arm {} to confirm", j.arm)
                },
                num(Some(j.drop), 4),
                match (j.cases_to_settle, j.settleable) {
                    (Some(n), _) if j.open_on.is_empty() => format!(
                        "; about {} cases settle it with 80% power",
                        thousands(n as f64)
                    ),
                    // The figure is the main set's: the slices it is open on have to clear too.
                    (Some(n), _) => format!(
                        "; about {} cases settle it on the main set with 80% power, and {} {} to clear too",
                        thousands(n as f64),
                        j.open_on
                            .iter()
                            .map(|o| if o == "production" {
                                "production"
                            } else {
                                "the stress slice"
                            })
                            .collect::<Vec<_>>()
                            .join(" and "),
                        if j.open_on.len() == 1 { "has" } else { "have" }
                    ),
                    (None, _) if j.drop >= threshold => {
                        ", at or above the threshold: cut fewer of them".into()
                    }
                    (None, Some(false)) => {
                        ", too close to the threshold to settle within 100 times the set: cut fewer of them".into()
                    }
                    // It had said "too close to the threshold" of a drop 0.02 below it.
                    (None, _) => {
                        "; the drops they predict have no spread, so the cases that would settle it cannot be estimated".into()
                    }
                }
            )),
    }
}

/// The flips in production and the interactions, each a line when there are any.
fn flips_and_interactions(mut p: Prose, d: &Decision) -> Prose {
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

fn not_settled(p: Prose, d: &Decision) -> Prose {
    if d.inconclusive.is_empty() {
        return p;
    }
    let settle: Vec<String> = d.inconclusive.iter().take(NAMED).map(settling).collect();
    p.text(format!(
        "• Not settled ({}): {}{}.\n",
        d.inconclusive.len(),
        settle.join(", "),
        if d.inconclusive.len() > NAMED {
            format!(", and {} more", d.inconclusive.len() - NAMED)
        } else {
            String::new()
        }
    ))
}

/// A comparison of alternatives (no arm removes units): not worse, worse, not settled, and the
/// logged tokens of each.
fn comparison(mut p: Prose, d: &Decision) -> Prose {
    let with_tokens = |arms: &[DecisionArm]| -> String {
        arms.iter()
            .take(NAMED)
            .map(|a| match a.tokens_removed {
                Some(t) if t >= 0.0 => {
                    format!(
                        "{} ({} fewer input tokens per request)",
                        a.arm,
                        thousands(t)
                    )
                }
                Some(t) => format!(
                    "{} ({} more input tokens per request)",
                    a.arm,
                    thousands(-t)
                ),
                None => a.arm.clone(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if d.cut.is_empty() {
        p = p.text("• Not worse than the baseline (within the threshold): none shown.\n");
    } else {
        p = p
            .text("• Not worse than the baseline (within the threshold): ")
            .bold(with_tokens(&d.cut))
            .text(".\n");
    }
    if !d.keep.is_empty() {
        p = p.text(format!("• Worse: {}.\n", with_tokens(&d.keep)));
    }
    not_settled(p, d)
}

/// The columns of a decision arm (keep, cut, not settled).
const DECISION_ARM: &str = "arm:str removed:list<str> drop:f64 tokens_removed:f64 reason:str \
     cases_to_settle:i64 cases_to_settle_low:i64 cases_to_settle_high:i64 settleable:bool \
     stress_cases_to_settle:i64 production_cases_to_settle:i64";

/// The tables `--export` writes for [`Decision`].
impl Export for Decision {
    const TABLES: &'static [TableSpec] = &[
        t(
            "summary",
            "",
            One,
            "comparison:bool family:str guarantee:str confident_only_under_normal:list<str> \
             min_certifiable_threshold:f64 \
             per_arm:bool tokens_saved:f64 cost_saved_per_day:f64 \
             measured_cut_arm:str=measured_cut.arm measured_cut_units:list<str>=measured_cut.units \
             stress_too_few_units:i64",
            "what a measured cut saves, and the family the verdicts hold in",
        ),
        t(
            "joint_cut",
            "joint_cut",
            One,
            "units:list<str> arm:str measured:bool drop:f64 ci_family_low:f64 ci_family_high:f64 \
             ci_family_level:f64 ci_family_method:str verdict:str \
             confidence:str cleared:bool open_on:list<str> components:list<str> \
             tokens_removed:f64 cases_to_settle:i64 settleable:bool",
            "the one set of units to cut: measured together, or the arm to run to confirm it",
        ),
        t("cut", "cut", Rows, DECISION_ARM, "arms cleared to cut"),
        t("keep", "keep", Rows, DECISION_ARM, "arms to keep"),
        t(
            "inconclusive",
            "inconclusive",
            Rows,
            DECISION_ARM,
            "arms not settled, with the cases that would settle them",
        ),
        t(
            "flips",
            "flips",
            Rows,
            "arm:str verdict_eval:str verdict_production:str",
            "verdicts production weights reverse",
        ),
        t(
            "interactions",
            "interactions",
            Rows,
            "arm:str components:list<str> interaction:f64 kind:str where_lost:str",
            "composed cuts that interact",
        ),
    ];
}
