//! The verbs, in one place: every fact about a verb that more than one layer needs (its name, the
//! tables `--export` writes, whether it reads the case × arm matrix, whether `report` carries its
//! output) is an exhaustive `match` here, so that adding a variant makes the compiler ask for each
//! of them. The lists other modules used to copy by hand are generated from [`Verb::ALL`]:
//! [`matrix_verbs`], [`crate::export::spec::groups`],
//! [`crate::export::spec::report_sections`], the README's table schema and `ablate schema --json`
//! (which the Python module's tests compare themselves against).
//!
//! A verb's options are not listed here: they are the fields of its `Args` struct in the command
//! line, and `ablate schema --json` reads them from clap's own definition, so they cannot drift.

use crate::analysis::check::CheckReport;
use crate::analysis::context::ContextOutput;
use crate::analysis::curve::CurveOutput;
use crate::analysis::interactions::InteractionsOutput;
use crate::analysis::need::NeedOutput;
use crate::analysis::plan::PlanOutput;
use crate::analysis::record::DecisionRecord;
use crate::analysis::reweight::ReweightOutput;
use crate::analysis::selector::SelectorOutput;
use crate::analysis::sequential::{NextOutput, WatchOutput};
use crate::analysis::shadow::ShadowOutput;
use crate::analysis::stress::StressOutput;
use crate::analysis::sweep::SweepOutput;
use crate::analysis::variance::VarianceOutput;
use crate::export::spec::{Export, TableSpec};

/// One verb of the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verb {
    /// Validate an experiment folder.
    Check,
    /// Every arm against the baseline.
    Sweep,
    /// Repeat variance and the detectable drop.
    Variance,
    /// Drops under production weights.
    Reweight,
    /// The main set next to the stress slice.
    Stress,
    /// Composed cuts, Shapley values, designed experiments.
    Interactions,
    /// Arms for a design, with cost and power.
    Plan,
    /// The needed context fraction.
    Need,
    /// Budget curves per selector.
    Curve,
    /// Reranker replay.
    Selector,
    /// The decision record.
    Record,
    /// Shadow traffic above the replay noise floor.
    Shadow,
    /// Context telemetry and budget-policy replay.
    Context,
    /// Anytime-valid monitoring of a running ablation.
    Watch,
    /// The next batch of calls for the open arms.
    Next,
    /// The HTML report.
    Report,
    /// A synthetic experiment.
    Simulate,
    /// An experiment from a harness's logs.
    Import,
    /// The reduction to run where the data lives.
    Sql,
}

impl Verb {
    /// Every verb, in the order of `ablate --help` and the README.
    pub const ALL: [Verb; 19] = [
        Verb::Check,
        Verb::Sweep,
        Verb::Variance,
        Verb::Reweight,
        Verb::Stress,
        Verb::Interactions,
        Verb::Plan,
        Verb::Need,
        Verb::Curve,
        Verb::Selector,
        Verb::Record,
        Verb::Shadow,
        Verb::Context,
        Verb::Watch,
        Verb::Next,
        Verb::Report,
        Verb::Simulate,
        Verb::Import,
        Verb::Sql,
    ];

    /// The name typed on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Verb::Check => "check",
            Verb::Sweep => "sweep",
            Verb::Variance => "variance",
            Verb::Reweight => "reweight",
            Verb::Stress => "stress",
            Verb::Interactions => "interactions",
            Verb::Plan => "plan",
            Verb::Need => "need",
            Verb::Curve => "curve",
            Verb::Selector => "selector",
            Verb::Record => "record",
            Verb::Shadow => "shadow",
            Verb::Context => "context",
            Verb::Watch => "watch",
            Verb::Next => "next",
            Verb::Report => "report",
            Verb::Simulate => "simulate",
            Verb::Import => "import",
            Verb::Sql => "sql",
        }
    }

    /// The verb with this name.
    pub fn parse(name: &str) -> Option<Verb> {
        Verb::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The tables `--export` writes for this verb (and the Python module returns as attributes).
    /// Empty for the verbs that write tables of their own (`simulate`, `import`: `--out`) or
    /// print a query (`sql`); `report` writes every section's, see [`crate::export::spec::report_sections`].
    pub fn tables(self) -> &'static [TableSpec] {
        match self {
            Verb::Check => CheckReport::TABLES,
            Verb::Sweep => SweepOutput::TABLES,
            Verb::Variance => VarianceOutput::TABLES,
            Verb::Reweight => ReweightOutput::TABLES,
            Verb::Stress => StressOutput::TABLES,
            Verb::Interactions => InteractionsOutput::TABLES,
            Verb::Plan => PlanOutput::TABLES,
            Verb::Need => NeedOutput::TABLES,
            Verb::Curve => CurveOutput::TABLES,
            Verb::Selector => SelectorOutput::TABLES,
            Verb::Record => DecisionRecord::TABLES,
            Verb::Shadow => ShadowOutput::TABLES,
            Verb::Context => ContextOutput::TABLES,
            Verb::Watch => WatchOutput::TABLES,
            Verb::Next => NextOutput::TABLES,
            Verb::Report | Verb::Simulate | Verb::Import | Verb::Sql => &[],
        }
    }

    /// Whether the verb's input reduces to the case × arm matrix, so that `ablate sql VERB`
    /// prints that reduction and `--from-aggregates` reads its result in place of results.
    /// `shadow` and `context` have reductions of their own.
    pub fn reads_matrix(self) -> bool {
        match self {
            Verb::Check
            | Verb::Sweep
            | Verb::Variance
            | Verb::Reweight
            | Verb::Stress
            | Verb::Interactions
            | Verb::Need
            | Verb::Curve
            | Verb::Selector
            | Verb::Record
            | Verb::Report => true,
            Verb::Plan
            | Verb::Shadow
            | Verb::Context
            | Verb::Watch
            | Verb::Next
            | Verb::Simulate
            | Verb::Import
            | Verb::Sql => false,
        }
    }

    /// Whether `report`'s analysis.json carries this verb's output under its name, so that
    /// `report --export` writes its tables as `<verb>_<table>`.
    pub fn in_report(self) -> bool {
        match self {
            Verb::Check
            | Verb::Sweep
            | Verb::Variance
            | Verb::Reweight
            | Verb::Stress
            | Verb::Interactions
            | Verb::Need
            | Verb::Curve
            | Verb::Selector
            | Verb::Record
            | Verb::Shadow
            | Verb::Context => true,
            Verb::Plan
            | Verb::Watch
            | Verb::Next
            | Verb::Report
            | Verb::Simulate
            | Verb::Import
            | Verb::Sql => false,
        }
    }

    /// The optional tables of the experiment folder the verb reads (the others are not loaded).
    pub fn reads(self) -> crate::io::Tables {
        use crate::io::Tables;
        match self {
            Verb::Check | Verb::Record | Verb::Report => Tables::ALL,
            Verb::Reweight => Tables {
                mix: true,
                ..Tables::CORE
            },
            // The production-weighted fraction reads the mix.
            Verb::Need => Tables {
                case_units: true,
                mix: true,
                ..Tables::CORE
            },
            Verb::Selector => Tables {
                passages: true,
                ..Tables::CORE
            },
            Verb::Sweep
            | Verb::Variance
            | Verb::Stress
            | Verb::Interactions
            | Verb::Curve
            | Verb::Plan
            | Verb::Watch
            | Verb::Next
            | Verb::Shadow
            | Verb::Context
            | Verb::Simulate
            | Verb::Import
            | Verb::Sql => Tables::CORE,
        }
    }

    /// Whether the verb reads an experiment folder (its first argument).
    pub fn reads_experiment(self) -> bool {
        match self {
            Verb::Check
            | Verb::Sweep
            | Verb::Variance
            | Verb::Reweight
            | Verb::Stress
            | Verb::Interactions
            | Verb::Need
            | Verb::Curve
            | Verb::Selector
            | Verb::Record
            | Verb::Watch
            | Verb::Next
            | Verb::Report => true,
            Verb::Plan
            | Verb::Shadow
            | Verb::Context
            | Verb::Simulate
            | Verb::Import
            | Verb::Sql => false,
        }
    }
}

impl std::fmt::Display for Verb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The verbs whose input reduces to the case × arm matrix ([`Verb::reads_matrix`]: every verb
/// on an experiment folder but the sequential ones; `report` and `record` rest on the same
/// matrix): those `ablate sql` writes the matrix's query for.
pub fn matrix_verbs() -> Vec<&'static str> {
    Verb::ALL
        .into_iter()
        .filter(|v| v.reads_matrix())
        .map(Verb::name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_parse_back() {
        for v in Verb::ALL {
            assert_eq!(Verb::parse(v.name()), Some(v));
        }
        let mut names: Vec<&str> = Verb::ALL.iter().map(|v| v.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Verb::ALL.len());
        assert_eq!(Verb::parse("schema"), None);
    }

    #[test]
    fn a_verb_in_the_report_has_tables() {
        for v in Verb::ALL.into_iter().filter(|v| v.in_report()) {
            assert!(!v.tables().is_empty(), "{v}");
        }
    }
}
