//! A loaded experiment: which optional tables were read, and every table as its data type.

use std::path::PathBuf;

use crate::data::{
    arms::Arms,
    cases::Cases,
    derived,
    logs::LogSummary,
    manifest::Manifest,
    mix::Mix,
    passages::Passages,
    results::Results,
    samples::Samples,
    units::{CaseUnits, Units},
};

/// The optional tables an analysis reads besides `experiment.toml`, `cases`, `units`, `arms` and
/// `results` (which every analysis of an experiment reads). A verb loads only its own
/// (`ablate::verb::Verb::reads`): `sweep` on 100M result rows skips reading 2M `case_units` rows
/// and the passages, 4.4 of 25 s. A table left out is `None` in the [`Experiment`], and its
/// errors are reported by the verbs that read it and by `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tables {
    /// `case_units` (tokens per case and unit: `need`).
    pub case_units: bool,
    /// `mix` (production weights: `reweight`, and `need`'s production-weighted fraction).
    pub mix: bool,
    /// `passages` (the retrieval replay: `selector`).
    pub passages: bool,
    /// `shadow` and `context_log`, summarised (the report's live checks).
    pub logs: bool,
    /// `samples` (inputs and outputs for the report's drill-down; keys checked, text left on
    /// disk).
    pub samples: bool,
}

impl Tables {
    /// Every table of the folder (`check`, `record`, `report`).
    pub const ALL: Tables = Tables {
        case_units: true,
        mix: true,
        passages: true,
        logs: true,
        samples: true,
    };
    /// None of the optional tables: the matrix verbs.
    pub const CORE: Tables = Tables {
        case_units: false,
        mix: false,
        passages: false,
        logs: false,
        samples: false,
    };
}

/// A fully loaded and validated experiment.
#[derive(Debug, Clone)]
pub struct Experiment {
    /// The experiment folder.
    pub dir: PathBuf,
    /// `experiment.toml`.
    pub manifest: Manifest,
    /// `cases`.
    pub cases: Cases,
    /// `results`, aggregated per case and arm.
    pub results: Results,
    /// `arms`, when present.
    pub arms: Option<Arms>,
    /// `units`, when present.
    pub units: Option<Units>,
    /// `case_units`, when present (needs `units`).
    pub case_units: Option<CaseUnits>,
    /// `mix`, when present.
    pub mix: Option<Mix>,
    /// `passages`, when present.
    pub passages: Option<Passages>,
    /// `shadow`, checked but not loaded.
    pub shadow: Option<LogSummary>,
    /// `context_log`, checked but not loaded.
    pub context_log: Option<LogSummary>,
    /// `samples`, its keys checked (the text is read for the drill-down only).
    pub samples: Option<Samples>,
    /// `runs`: one row per harness run, as `ablate import` writes it.
    pub runs: Option<super::runs::Runs>,
    /// Values the analyses derive from the tables, computed once ([`derived::Derived`]).
    pub derived: derived::Derived,
    /// Things the analyses can go on with but the analyst should know.
    pub warnings: Vec<crate::warning::Warning>,
}

impl Experiment {
    /// The strata columns for reweighting: the manifest's `strata`, else `["slice"]` when cases
    /// have a slice column, else none.
    pub fn strata(&self) -> Vec<String> {
        match &self.manifest.strata {
            Some(s) => s.clone(),
            None if self.cases.slice().is_some() => vec!["slice".to_string()],
            None => Vec::new(),
        }
    }

    /// Index of the baseline arm in the results matrix (checked at load).
    pub fn baseline_index(&self) -> usize {
        self.results
            .arm_index(&self.manifest.baseline_arm)
            .unwrap_or_default()
    }
}
