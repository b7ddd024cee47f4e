//! # ablate
//!
//! Which parts of an LLM prompt are earning their tokens, with statistics an analyst can defend.
//!
//! `ablate` reads ablation experiments (a frozen eval set run with parts of the prompt removed,
//! each arm repeated), production traffic mixes, shadow-traffic diffs and context-size logs from
//! Parquet or CSV, and answers which units are needed, what that means for production traffic,
//! whether cuts interact, how much context is really needed, and what happens live.
//!
//! The crate has three layers, and data flows one way:
//! - [`io`] turns files into checked, typed inputs (Polars lives here);
//! - [`analysis`] has one module per verb, each `run(&inputs, [upstream,] &options) -> output`;
//! - [`report`] renders outputs as human tables, JSON and the report.
//!
//! [`stats`] holds the pure numeric code; [`simulate`] writes synthetic experiments; [`import`]
//! turns Inspect AI, lm-evaluation-harness and promptfoo logs into experiments.

// Errors carry the file, column, row, value and a fix as owned text, so they are larger than
// clippy's 128-byte default. They are built once, on the cold path, right before the process
// reports them and exits; boxing them would add noise to every constructor for no measurable gain.
#![allow(clippy::result_large_err)]

pub mod analysis;
pub use ablate_core::{error, escape, text, warning};
pub mod export;
/// Harness logs into experiments (the `ablate-import` crate).
pub use ablate_import as import;
/// Input and output (the `ablate-io` crate): Polars lives there.
pub use ablate_io as io;
pub mod report;
pub use ablate_import::simulate;
pub use ablate_io::sql;
/// The numerics (the `ablate-stats` crate): no Polars, no I/O.
pub use ablate_stats as stats;
pub mod verb;

pub use error::{Error, Result};
