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
}

impl CiMethod {
    /// The name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            CiMethod::BootstrapPercentile => "bootstrap-percentile",
            CiMethod::Normal => "normal",
        }
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
    /// An estimate with a normal-approximation interval `point ± z·se`.
    pub fn normal(point: f64, se: Option<f64>, confidence: f64) -> Estimate {
        let z = crate::stats::dist::z_two_sided(confidence);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_interval_is_point_plus_minus_z_se() {
        let e = Estimate::normal(0.01, Some(0.002), 0.95);
        let z = 1.959963984540054;
        assert!((e.ci_low.unwrap() - (0.01 - z * 0.002)).abs() < 1e-12);
        assert!((e.ci_high.unwrap() - (0.01 + z * 0.002)).abs() < 1e-12);
        assert_eq!(e.ci_method.as_str(), "normal");
        assert!(Estimate::normal(1.0, None, 0.9).ci_low.is_none());
        let degenerate = Estimate::bootstrap(0.5, None, Some((0.5, 0.5)), 0.95);
        assert!(degenerate.ci_low.is_none() && degenerate.ci_high.is_none());
    }
}
