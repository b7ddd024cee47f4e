//! The experiment's data types, as the loaders in `ablate-io` fill them and the analyses read
//! them: no Polars, no table reading (the manifest and the budget policy parse their own TOML).

pub mod arms;
pub mod cases;
pub mod derived;
pub mod experiment;
pub mod logs;
pub mod manifest;
pub mod mix;
pub mod passages;
pub mod policy;
pub mod results;
pub mod runs;
pub mod samples;
pub mod table_file;
pub mod units;
pub mod watch_state;

pub use arms::{ArmSpec, Arms};
pub use cases::Cases;
pub use experiment::{Experiment, Tables};
pub use logs::LogSummary;
pub use manifest::{BlockSpec, Manifest, NeedRule};
pub use mix::Mix;
pub use passages::Passages;
pub use results::{CaseMatrix, Results};
pub use samples::Samples;
pub use units::{CaseUnits, Units};
