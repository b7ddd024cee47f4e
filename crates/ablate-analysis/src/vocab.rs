//! The shared vocabulary of the analyses: the verdict rule agreed before the run and whether an
//! interval supports it. Every verb that judges a drop (sweep, reweight, stress, need, record)
//! uses these.

use serde::Serialize;

/// The point rule agreed in advance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// drop ≥ threshold_drop.
    #[serde(rename = "needed")]
    Needed,
    /// drop < threshold_drop.
    #[serde(rename = "removable-on-this-set")]
    Removable,
}

impl Verdict {
    /// The verdict of a drop against a threshold.
    pub fn of(drop: f64, threshold: f64) -> Verdict {
        if drop >= threshold {
            Verdict::Needed
        } else {
            Verdict::Removable
        }
    }

    /// The name used in JSON and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Needed => "needed",
            Verdict::Removable => "removable-on-this-set",
        }
    }

    /// Which way more cases would settle an open verdict whose point verdict this is, for a
    /// settling figure's words ("would settle it as removable"): "as needed" (keep it), "as
    /// removable" (cut it); in a comparison of alternatives "as worse", "as not worse".
    pub fn settles_as(self, comparison: bool) -> &'static str {
        match (self, comparison) {
            (Verdict::Needed, false) => "as needed",
            (Verdict::Removable, false) => "as removable",
            (Verdict::Needed, true) => "as worse",
            (Verdict::Removable, true) => "as not worse",
        }
    }
}

/// Whether the interval supports the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// The whole interval is on the verdict's side of the threshold.
    Confident,
    /// The interval straddles the threshold (or is undefined).
    Inconclusive,
}

impl Confidence {
    /// Confident when ci_low ≥ threshold for needed, or ci_high < threshold for removable.
    pub fn of(
        verdict: Verdict,
        interval: Option<crate::analysis::interval::Interval>,
        threshold: f64,
    ) -> Confidence {
        let confident = match verdict {
            Verdict::Needed => interval.is_some_and(|i| i.low >= threshold),
            Verdict::Removable => interval.is_some_and(|i| i.high < threshold),
        };
        if confident {
            Confidence::Confident
        } else {
            Confidence::Inconclusive
        }
    }

    /// The name used in JSON and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Confident => "confident",
            Confidence::Inconclusive => "inconclusive",
        }
    }
}

/// The one rule that turns an estimate into a verdict and its confidence, used by every verb that
/// judges a drop: the verdict is the point rule (needed when drop ≥ threshold); it is confident
/// when `interval` lies wholly on the verdict's side of the threshold and the estimate rests on at
/// least [`MIN_UNITS_TO_DECIDE`](crate::analysis::paired::MIN_UNITS_TO_DECIDE) units (cases, or
/// clusters). Callers pass the family-wise interval unless the user asked for per-arm confidence.
pub fn judge(
    drop: f64,
    threshold: f64,
    interval: &crate::stats::estimate::Estimate,
    units: usize,
) -> (Verdict, Confidence) {
    let verdict = Verdict::of(drop, threshold);
    let confidence = if units < crate::analysis::paired::MIN_UNITS_TO_DECIDE {
        Confidence::Inconclusive
    } else {
        Confidence::of(verdict, interval.interval(), threshold)
    };
    (verdict, confidence)
}
