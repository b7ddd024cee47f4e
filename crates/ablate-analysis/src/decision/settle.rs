//! What would settle an inconclusive arm: the cases at which the interval that decides (the
//! family interval, under the guarantee in force) clears the threshold with 80% probability, at
//! the drop and at each end of its interval.
//!
//! The family interval's half-width on the side facing the threshold is h = r·se, r = h/se at
//! the pilot's n (the critical value, and for the any-distribution interval its extra width over
//! t). With n cases the estimate varies by se·√(n₀/n) and the interval keeps its ratio r, so it
//! clears with probability 0.8 when |drop − threshold| = (r + z₀.₈)·se·√(n₀/n):
//!
//! n₈₀ = ⌈n₀ · ((r + z₀.₈)·se / |drop − threshold|)²⌉  (total cases, not cases to add).
//!
//! The rule before used r = z₁₋α′/₂ (the normal interval at the family level) while the verdict
//! used the family interval, up to 2.6 times wider: the sizes it promised settled 0–15% of the time.

use crate::analysis::paired::{Intervals, MIN_UNITS_TO_DECIDE};
use crate::analysis::sweep::SweepArm;
use crate::io::manifest::Guarantee;

/// The settling figures of an inconclusive arm (see the module documentation): n₈₀ at the drop,
/// at the interval's end farthest from the threshold (the fewest cases the data allow) and at the
/// nearest end (none when the interval reaches the threshold: no upper bound); `settleable` is
/// false when n₈₀ itself is beyond [`REACH`] times the set: "not within reach". Without an se
/// every figure is null and so is `settleable`: the cases cannot be estimated, which is not the
/// same as beyond reach (as `variance`'s `settleable`).
pub(super) struct Settle {
    pub(super) point: Option<u64>,
    pub(super) low: Option<u64>,
    pub(super) high: Option<u64>,
    pub(super) settleable: Option<bool>,
}

impl Settle {
    /// No figure, and no answer to whether one is within reach: an arm with nothing to settle,
    /// or whose drops have no spread.
    pub(super) const UNDEFINED: Settle = Settle {
        point: None,
        low: None,
        high: None,
        settleable: None,
    };
}

/// Most cases, as a multiple of the set, that a settling figure may name: beyond it the arm is
/// "not within reach".
pub const REACH: u64 = 100;

/// The settling figures of `a` (see the module documentation); `z80` is z₀.₈, and `within(f,
/// room)` whether the half-width of the family interval facing the threshold with `f` times the
/// cases is at most `room` ([`facing_within`]).
pub(super) fn settle(
    a: &SweepArm,
    threshold: f64,
    z80: f64,
    within: impl Fn(f64, f64) -> bool,
) -> Settle {
    // No se (the drops have no spread, or one unit): how many cases would settle the arm cannot
    // be estimated. That is not "beyond reach" (the exact bound narrows with more cases), so
    // `settleable` is undefined too, and the arm's reason says why.
    let none = Settle::UNDEFINED;
    let (Some(se), Some(lo), Some(hi)) = (
        a.se.filter(|s| *s > 0.0),
        a.ci_family.map(|i| i.low),
        a.ci_family.map(|i| i.high),
    ) else {
        return none;
    };
    let (near, far) = if (lo - threshold).abs() < (hi - threshold).abs() {
        (lo, hi)
    } else {
        (hi, lo)
    };
    // Total cases, never fewer than the set at hand (an end already far enough).
    let cases = |x: f64| {
        cases_to_clear(x, threshold, se, (a.n, a.units), z80, &within).map(|c| c.max(a.n as u64))
    };
    let point = cases(a.drop);
    Settle {
        point,
        low: cases(far),
        // The near end across (or on) the threshold: no upper bound.
        high: if (lo..=hi).contains(&threshold) {
            None
        } else {
            cases(near)
        },
        settleable: Some(point.is_some()),
    }
}

/// The smallest number of cases (a factor f of the `n` at hand, 2/n ≤ f ≤ [`REACH`], by
/// bisection on whole cases) at which an estimate whose true value is `x`, with standard error
/// `se` at n, clears `threshold` with probability 0.8 by an interval whose half-width h(f) facing
/// the threshold leaves room for it: h(f) ≤ |threshold − x| − z₀.₈ · se/√f, asked of
/// `within(f, room)`, and the `units` (cases, or clusters) at hand scaled by f number at least
/// [`MIN_UNITS_TO_DECIDE`] (below it no arm is called confident, whatever its interval).
/// `None` beyond [`REACH`] times n. Fewer cases than n when the n at hand are more than enough
/// (an arm already settled).
pub(crate) fn cases_to_clear(
    x: f64,
    threshold: f64,
    se: f64,
    (n, units): (usize, usize),
    z80: f64,
    within: &dyn Fn(f64, f64) -> bool,
) -> Option<u64> {
    let gap = (threshold - x).abs();
    let clears = |f: f64| {
        let room = gap - z80 * se / f.sqrt();
        // Whole units: a part of a cluster is not one more cluster.
        let enough = (units as f64 * f).floor() >= MIN_UNITS_TO_DECIDE as f64;
        enough && room >= 0.0 && within(f, room)
    };
    if gap == 0.0 || !gap.is_finite() || !clears(REACH as f64) {
        return None;
    }
    // The fewest whole cases N that clear, by bisection on N: every step halves a range of
    // whole numbers, so about log₂(REACH·n) steps find it exactly (the interval is the costly
    // part of each step).
    let n = n.max(1) as u64;
    let clears_at = |cases: u64| clears(cases as f64 / n as f64);
    let least = n.min(2);
    let (fails, clear) = if clears_at(n) {
        if clears_at(least) {
            return Some(least);
        }
        (least, n)
    } else {
        (n, REACH * n)
    };
    Some(fewest(fails, clear, clears_at))
}

/// The smallest whole number in (`fails`, `holds`] at which the monotone `holds_at` holds, given
/// that it fails at `fails` and holds at `holds`: bisection, about log₂(holds − fails) calls.
pub(crate) fn fewest(mut fails: u64, mut holds: u64, holds_at: impl Fn(u64) -> bool) -> u64 {
    while holds - fails > 1 {
        let mid = fails + (holds - fails) / 2;
        if holds_at(mid) {
            holds = mid;
        } else {
            fails = mid;
        }
    }
    holds
}

/// Whether the half-width facing `threshold` of a sample's family interval (under `guarantee`,
/// over `family` arms) with f times the cases is at most `room` (hi − point when the point is
/// below the threshold, else point − lo: [`Intervals::family_scaled_within`]). The `within` of
/// [`cases_to_clear`].
pub(crate) fn facing_within<'i>(
    intervals: &'i Intervals<'_>,
    threshold: f64,
    guarantee: Guarantee,
    family: usize,
    confidence: f64,
) -> impl Fn(f64, f64) -> bool + 'i {
    let below = intervals.point() < threshold;
    move |f, room| intervals.family_scaled_within(guarantee, f, family, confidence, below, room)
}
