//! What would settle an inconclusive arm: the cases at which a test at the decision's level has
//! 80% power, at the drop and at each end of its interval.

use super::SETTLE_CAP;
use crate::analysis::sweep::SweepArm;

/// The settling figures of an inconclusive arm (see the module documentation): n₈₀ at the drop,
/// at the interval's end farthest from the threshold (the fewest cases the data allow) and at the
/// nearest end (none when the interval reaches the threshold: no upper bound); `settleable` is
/// false when n₈₀ itself is beyond [`SETTLE_CAP`].
pub(super) struct Settle {
    pub(super) point: Option<u64>,
    pub(super) low: Option<u64>,
    pub(super) high: Option<u64>,
    pub(super) settleable: bool,
}

pub(super) fn n80(gap: f64, sd: f64, multiplier: f64) -> Option<u64> {
    let gap = gap.abs();
    if gap == 0.0 || sd.is_nan() || gap.is_nan() {
        return None;
    }
    let n = (multiplier * sd / gap).powi(2).ceil();
    (n.is_finite() && n <= SETTLE_CAP as f64).then_some(n as u64)
}

pub(super) fn settle(a: &SweepArm, threshold: f64, multiplier: f64) -> Settle {
    let none = Settle {
        point: None,
        low: None,
        high: None,
        settleable: false,
    };
    let (Some(se), Some(lo), Some(hi)) = (
        a.se.filter(|s| *s > 0.0),
        a.ci_family.map(|i| i.low),
        a.ci_family.map(|i| i.high),
    ) else {
        return none;
    };
    let sd = se * (a.n as f64).sqrt();
    let (near, far) = if (lo - threshold).abs() < (hi - threshold).abs() {
        (lo, hi)
    } else {
        (hi, lo)
    };
    let point = n80(a.drop - threshold, sd, multiplier);
    Settle {
        point,
        low: n80(far - threshold, sd, multiplier),
        // The near end across (or on) the threshold: no upper bound.
        high: if (lo..=hi).contains(&threshold) {
            None
        } else {
            n80(near - threshold, sd, multiplier)
        },
        settleable: point.is_some(),
    }
}
