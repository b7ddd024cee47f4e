//! The one estimate type: a point estimate with its standard error and confidence interval.

use serde::Serialize;

/// How a confidence interval was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CiMethod {
    /// Percentile interval of a (joint, seeded) bootstrap over cases or clusters.
    #[serde(rename = "bootstrap-percentile")]
    BootstrapPercentile,
    /// point ± z·se.
    #[serde(rename = "normal")]
    Normal,
    /// No variation was observed: the exact bound of [`Estimate::no_variation`].
    #[serde(rename = "exact-bound")]
    ExactBound,
    /// The score interval for a bounded mean ([`crate::interval::score`]): cases that
    /// are their own units, fewer than the bootstrap's minimum; or, with clusters, when the
    /// score interval on the effective sample size set both ends of the wider of it and the t
    /// interval.
    #[serde(rename = "score")]
    Score,
    /// Clusters: the wider of point ± t·se_c ([`crate::interval::t`], se_c the larger of
    /// the clustered and jackknife se) and the score interval on the effective sample size
    /// (critical value × √deff), when the t interval set at least one end; fewer units than the
    /// bootstrap's minimum, or a family interval. Also the normal guarantee's family interval.
    #[serde(rename = "t")]
    T,
    /// An anytime-valid confidence sequence (`ablate watch`): it holds at every number of units
    /// read, however often it is looked at ([`crate::sequence`]).
    #[serde(rename = "confidence-sequence")]
    ConfidenceSequence,
}

impl CiMethod {
    /// The name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            CiMethod::BootstrapPercentile => "bootstrap-percentile",
            CiMethod::Normal => "normal",
            CiMethod::ExactBound => "exact-bound",
            CiMethod::Score => "score",
            CiMethod::T => "t",
            CiMethod::ConfidenceSequence => "confidence-sequence",
        }
    }
}

/// A confidence interval: the values of a quantity the data do not rule out, at `level`, by
/// `method`. Every output spells an interval with this one type; in JSON and in the exported
/// tables it is four flat keys, `<name>_low`, `<name>_high`, `<name>_level` and
/// `<name>_method` (all null when the interval is undefined), as criterion's
/// `ConfidenceInterval` is one type across its outputs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// The coverage it was computed at, e.g. 0.95; for a family-wise interval over K arms,
    /// the per-interval level 1 − α/K, which gives the family its 1 − α.
    pub level: f64,
    /// How it was computed.
    pub method: CiMethod,
}

impl Interval {
    /// The interval `[low, high]` at `level` by `method`, or `None` when either end is undefined.
    pub fn new(low: Option<f64>, high: Option<f64>, level: f64, method: CiMethod) -> Option<Self> {
        Some(Interval {
            low: low?,
            high: high?,
            level,
            method,
        })
    }

    /// `point ± z·se`, the normal interval at `level` (`None` without an se).
    pub fn normal(point: f64, se: Option<f64>, level: f64) -> Option<Self> {
        let z = crate::dist::z_two_sided(level);
        se.map(|s| Interval {
            low: point - z * s,
            high: point + z * s,
            level,
            method: CiMethod::Normal,
        })
    }

    /// The interval `[x, x]` of a value known exactly (the baseline against itself), labelled
    /// with `level` and [`CiMethod::ExactBound`].
    pub fn exact(x: f64, level: f64) -> Self {
        Interval {
            low: x,
            high: x,
            level,
            method: CiMethod::ExactBound,
        }
    }

    /// Whether `x` lies in `[low, high]`.
    pub fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }
}

/// A point estimate with its uncertainty. `se` and the interval are `None` when they cannot be
/// computed (fewer than two cases, or a bootstrap whose resamples were all undefined).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// The point estimate.
    pub point: f64,
    /// Standard error (plain, or clustered when the cases have clusters).
    pub se: Option<f64>,
    /// Lower end of the interval.
    pub ci_low: Option<f64>,
    /// Upper end of the interval.
    pub ci_high: Option<f64>,
    /// How the interval was computed.
    pub ci_method: CiMethod,
    /// Confidence level of the interval, e.g. 0.95.
    pub confidence: f64,
}

impl Estimate {
    /// The estimate's interval as an [`Interval`], `None` when it is undefined.
    pub fn interval(&self) -> Option<Interval> {
        Interval::new(self.ci_low, self.ci_high, self.confidence, self.ci_method)
    }

    /// An estimate with a normal-approximation interval `point ± z·se`.
    pub fn normal(point: f64, se: Option<f64>, confidence: f64) -> Estimate {
        let z = crate::dist::z_two_sided(confidence);
        Estimate {
            point,
            se,
            ci_low: se.map(|s| point - z * s),
            ci_high: se.map(|s| point + z * s),
            ci_method: CiMethod::Normal,
            confidence,
        }
    }

    /// An estimate with a bootstrap percentile interval. When the se is undefined (one case, or
    /// one cluster) the resamples cannot show any spread, so the interval is left undefined too
    /// rather than collapsing to a point.
    pub fn bootstrap(
        point: f64,
        se: Option<f64>,
        ci: Option<(f64, f64)>,
        confidence: f64,
    ) -> Estimate {
        let ci = se.and(ci);
        Estimate {
            point,
            se,
            ci_low: ci.map(|c| c.0),
            ci_high: ci.map(|c| c.1),
            ci_method: CiMethod::BootstrapPercentile,
            confidence,
        }
    }
}

impl Estimate {
    /// An estimate with an interval computed elsewhere (`ci`, by `method`).
    pub fn with_interval(
        point: f64,
        se: Option<f64>,
        ci: Option<(f64, f64)>,
        method: CiMethod,
        confidence: f64,
    ) -> Estimate {
        Estimate {
            point,
            se,
            ci_low: ci.map(|c| c.0),
            ci_high: ci.map(|c| c.1),
            ci_method: method,
            confidence,
        }
    }

    /// An estimate for a mean over `n_units` units (cases, or clusters) that all gave the same
    /// value `point`, for a quantity bounded in [`lo`, `hi`]. No spread was observed, so neither
    /// the se nor a bootstrap or normal interval says anything (both would collapse to a point and
    /// read "confident"). The honest interval: a share up to u of the population could differ,
    /// arbitrarily within the bounds, where u = 1 − ((1−confidence)/2)^(1/n) is the Clopper–Pearson
    /// upper bound for 0 of n (for 0/1 scores, the exact bound on the discordant share). So
    ///
    /// ci = [point·(1 − u) + lo·u, point·(1 − u) + hi·u],  se = null.
    ///
    /// With 20 identical 0/1 cases at 95%: u = 0.168 and a zero drop has ci [−0.168, 0.168].
    pub fn no_variation(point: f64, n_units: usize, lo: f64, hi: f64, confidence: f64) -> Estimate {
        let u = crate::dist::zero_of_n_upper(n_units, confidence);
        let centre = point * (1.0 - u);
        Estimate {
            point,
            se: None,
            ci_low: Some(centre + lo * u),
            ci_high: Some(centre + hi * u),
            ci_method: CiMethod::ExactBound,
            confidence,
        }
    }
}

/// How far apart values may be, relative to their size, and still be one value:
/// [`no_variation`].
pub const SAME_VALUE: f64 = 1e-12;

/// [`no_variation_at`] for values made from scores of order 1 (scores in [0, 1]).
pub fn no_variation(values: &[f64]) -> bool {
    no_variation_at(values, 1.0)
}

/// Whether every value is the same up to the rounding of the arithmetic that made them (no
/// spread observed; true for an empty slice): max − min ≤ [`SAME_VALUE`] · max(scale, max |v|),
/// `scale` the size of the scores the values were made from (their rounding is relative to it:
/// `analysis::paired::rounding_scale`). Drops are differences of scores, so where every case
/// dropped alike (0.723456 − 0.713456 beside 0.523456 − 0.513456) they differ in their last
/// bits; an exact test read that as a spread, with an se of 1e-18 and a "confident" interval of
/// no width. A NaN is never the same as anything.
pub fn no_variation_at(values: &[f64], scale: f64) -> bool {
    let (mut lo, mut hi, mut size) = (f64::INFINITY, f64::NEG_INFINITY, scale.abs());
    for &v in values {
        if v.is_nan() {
            return false;
        }
        lo = lo.min(v);
        hi = hi.max(v);
        size = size.max(v.abs());
    }
    values.is_empty() || hi - lo <= SAME_VALUE * size
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exact_interval_is_one_point_at_its_level() {
        let i = Interval::exact(1.0, 0.95);
        assert_eq!((i.low, i.high, i.level), (1.0, 1.0, 0.95));
        assert_eq!(i.method.as_str(), "exact-bound");
        assert!(i.contains(1.0) && !i.contains(1.0 + 1e-12));
    }

    #[test]
    fn normal_interval_is_point_plus_minus_z_se() {
        let e = Estimate::normal(0.01, Some(0.002), 0.95);
        let z = 1.959963984540054;
        assert!((e.ci_low.unwrap() - (0.01 - z * 0.002)).abs() < 1e-12);
        assert!((e.ci_high.unwrap() - (0.01 + z * 0.002)).abs() < 1e-12);
        assert_eq!(e.ci_method.as_str(), "normal");
        assert!(Estimate::normal(1.0, None, 0.9).ci_low.is_none());
        let degenerate = Estimate::bootstrap(0.5, None, Some((0.5, 0.5)), 0.95);
        // 20 cases, all drops 0, 0/1 scores (d in [−1, 1]): ±0.1684.
        let flat = Estimate::no_variation(0.0, 20, -1.0, 1.0, 0.95);
        assert!((flat.ci_high.unwrap() - 0.168433).abs() < 1e-6);
        assert!((flat.ci_low.unwrap() + 0.168433).abs() < 1e-6);
        assert!(flat.se.is_none());
        // Every case lost one point: the interval reaches down but stays ≤ 1.
        let all = Estimate::no_variation(1.0, 20, -1.0, 1.0, 0.95);
        assert!((all.ci_low.unwrap() - (1.0 - 2.0 * 0.168433)).abs() < 1e-5);
        assert!((all.ci_high.unwrap() - 1.0).abs() < 1e-12);
        assert!(no_variation(&[0.5, 0.5]) && !no_variation(&[0.5, 0.4]));
        // Every case dropped 0.01, by scores that differ: the same drop, up to rounding.
        let drops = [0.71 - 0.70, 0.52 - 0.51, 0.93 - 0.92, 0.11 - 0.10];
        assert!(drops.windows(2).any(|w| w[0] != w[1]), "rounding differs");
        assert!(no_variation(&drops));
        assert!(!no_variation(&[0.01, 0.01 + 1e-9]));
        assert!(!no_variation(&[0.5, f64::NAN]) && no_variation(&[]));
        // Scores in the tens of thousands round in the 1e-12s: the same drop at their scale,
        // not at 1's; scores of a millionth keep a spread of a millionth of theirs.
        let big = [
            "12345.723456".parse::<f64>().unwrap() - "12345.713456".parse::<f64>().unwrap(),
            "98765.523456".parse::<f64>().unwrap() - "98765.513456".parse::<f64>().unwrap(),
        ];
        assert!(!no_variation(&big) && no_variation_at(&big, 1e5));
        assert!(
            !no_variation_at(&[1.0e-6, 1.1e-6], 2e-6) && no_variation(&[1.0e-6, 1.0e-6 + 1e-13])
        );
        assert!(degenerate.ci_low.is_none() && degenerate.ci_high.is_none());
    }
}
