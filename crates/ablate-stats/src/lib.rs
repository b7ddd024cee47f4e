//! Pure numeric code: stable sums and moments, percentiles, distributions and tests, the estimate
//! type, the joint bootstrap and the survey estimators (post-stratification, raking). No Polars,
//! no I/O.

pub mod betting;
pub mod bootstrap;
pub mod dist;
pub mod estimate;
pub mod histogram;
pub mod interval;
pub mod linalg;
pub mod moments;
pub mod percentile;
pub mod sequence;
pub mod survey;
