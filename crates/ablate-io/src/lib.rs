//! Input: an experiment folder (`experiment.toml` plus tables, each `.parquet` or `.csv`) read into
//! checked, typed structures. Polars lives here: lazy scans with projections pushed down, then
//! plain Rust vectors. Nothing downstream sees a raw table.
//!
//! Loading stops at the first error (each names its file, column, row and a fix) and collects
//! warnings for what an analysis can go on with: unbalanced repeats, cases missing from an arm,
//! arms without results, unknown manifest keys, production strata with no eval cases.

// Errors carry the file, column, row, value and a fix as owned text (see ablate-core).
#![allow(clippy::result_large_err)]

// The layers below, under the names the modules use. Polars, the zip and JSON5 readers live
// here and in ablate-import; nothing above names them.
use crate as io;
use ablate_core::{error, escape, text, warning};
use ablate_stats as stats;

pub mod sql;

pub mod aggregates;
pub mod arms;
pub mod cases;
mod experiment;
pub mod harness;
pub use ablate_core::data::derived;
pub mod logs;
pub use ablate_core::data::manifest;
pub mod mix;
pub mod output;
pub mod passages;
pub mod results;
pub mod runs;
pub mod samples;
pub mod table;
pub mod units;
pub mod watch_state;
pub mod write;

/// The loaders, as traits on the data types of [`ablate_core::data`] (which hold no Polars):
/// `use ablate::io::prelude::*;` brings `Experiment::load`, `Units::load` and the others into
/// scope.
pub mod prelude {
    pub use super::arms::ArmsLoad;
    pub use super::cases::CasesLoad;
    pub use super::experiment::ExperimentLoad;
    pub use super::mix::MixLoad;
    pub use super::passages::PassagesLoad;
    pub use super::results::ResultsLoad;
    pub use super::runs::RunsLoad;
    pub use super::samples::SamplesRead;
    pub use super::units::{CaseUnitsLoad, UnitsLoad};
}
pub use arms::{ArmSpec, Arms};
pub use cases::Cases;
pub use logs::LogSummary;
pub use manifest::{BlockSpec, Manifest, NeedRule};
pub use mix::Mix;
pub use passages::Passages;
pub use results::{CaseMatrix, Results};
pub use samples::Samples;
pub use units::{CaseUnits, Units};

pub use ablate_core::data::experiment::{Experiment, Tables};
pub use experiment::ExperimentLoad;
