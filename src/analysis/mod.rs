//! The analyses: the `ablate-analysis` crate (one module per verb, from data types to outputs,
//! no Polars and no file), with what needs files beside it: [`all`], the pipeline that runs every
//! analysis for the report, and the log verbs' `run` ([`shadow::run`], [`context::run`]), which
//! stream their logs through `io`.

pub use ablate_analysis::*;

pub mod all;
pub mod context;
pub mod shadow;
