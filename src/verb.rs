//! The verbs, in one place: every fact about a verb that more than one layer needs (its name, the
//! tables `--export` writes, whether it reads the case × arm matrix, whether `report` carries its
//! output, which tables of the folder it loads) is one row of the `verbs!` table below, from
//! which the enum and its methods are made. The lists other modules used to copy by hand are generated from [`Verb::ALL`]:
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
use crate::io::Tables;

/// Declares the verbs, one row each: `Variant = "name"`, then its facts, from which
/// [`Verb`], [`Verb::ALL`] and every method below are made. Adding a verb is one row here.
macro_rules! verbs {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident = $name:literal {
            tables: $tables:expr,
            matrix: $matrix:literal,
            in_report: $in_report:literal,
            reads: $reads:expr,
            experiment: $experiment:literal $(,)?
        }
    )*) => {
        /// One verb of the command line.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Verb {
            $($(#[doc = $doc])* $variant,)*
        }

        /// How many verbs there are.
        const VERB_COUNT: usize = [$($name),*].len();

        impl Verb {
            /// Every verb, in the order of `ablate --help` and the README.
            pub const ALL: [Verb; VERB_COUNT] = [$(Verb::$variant),*];

            /// The name typed on the command line.
            pub fn name(self) -> &'static str {
                match self {
                    $(Verb::$variant => $name,)*
                }
            }

            /// The tables `--export` writes for this verb (and the Python module returns as
            /// attributes). Empty for the verbs that write tables of their own (`simulate`,
            /// `import`: `--out`) or print a query (`sql`); `report` writes every section's, see
            /// [`crate::export::spec::report_sections`].
            pub fn tables(self) -> &'static [TableSpec] {
                match self {
                    $(Verb::$variant => $tables,)*
                }
            }

            /// Whether the verb's input reduces to the case × arm matrix, so that `ablate sql
            /// VERB` prints that reduction and `--from-aggregates` reads its result in place of
            /// results. `shadow` and `context` have reductions of their own.
            pub fn reads_matrix(self) -> bool {
                match self {
                    $(Verb::$variant => $matrix,)*
                }
            }

            /// Whether `report`'s analysis.json carries this verb's output under its name, so
            /// that `report --export` writes its tables as `<verb>_<table>`.
            pub fn in_report(self) -> bool {
                match self {
                    $(Verb::$variant => $in_report,)*
                }
            }

            /// The optional tables of the experiment folder the verb reads (the others are not
            /// loaded).
            pub fn reads(self) -> Tables {
                match self {
                    $(Verb::$variant => $reads,)*
                }
            }

            /// Whether the verb reads an experiment folder (its first argument).
            pub fn reads_experiment(self) -> bool {
                match self {
                    $(Verb::$variant => $experiment,)*
                }
            }

            /// The verb with this name.
            pub fn parse(name: &str) -> Option<Verb> {
                Verb::ALL.into_iter().find(|v| v.name() == name)
            }
        }
    };
}

verbs! {
    /// Validate an experiment folder.
    Check = "check" {
        tables: CheckReport::TABLES,
        matrix: true,
        in_report: true,
        reads: Tables::ALL,
        experiment: true,
    }
    /// Every arm against the baseline.
    Sweep = "sweep" {
        tables: SweepOutput::TABLES,
        matrix: true,
        in_report: true,
        reads: Tables::CORE,
        experiment: true,
    }
    /// Repeat variance and the detectable drop.
    Variance = "variance" {
        tables: VarianceOutput::TABLES,
        matrix: true,
        in_report: true,
        reads: Tables::CORE,
        experiment: true,
    }
    /// Drops under production weights.
    Reweight = "reweight" {
        tables: ReweightOutput::TABLES,
        matrix: true,
        in_report: true,
        reads: Tables { mix: true, ..Tables::CORE },
        experiment: true,
    }
    /// The main set next to the stress slice.
    Stress = "stress" {
        tables: StressOutput::TABLES,
        matrix: true,
        in_report: true,
        reads: Tables::CORE,
        experiment: true,
    }
    /// Composed cuts, Shapley values, designed experiments.
    Interactions = "interactions" {
        tables: InteractionsOutput::TABLES,
        matrix: true,
        in_report: true,
        reads: Tables::CORE,
        experiment: true,
    }
    /// Arms for a design, with cost and power.
    Plan = "plan" {
        tables: PlanOutput::TABLES,
        matrix: false,
        in_report: false,
        reads: Tables::CORE,
        experiment: false,
    }
    /// The needed context fraction (the production-weighted fraction reads the mix).
    Need = "need" {
        tables: NeedOutput::TABLES,
        matrix: true,
        in_report: true,
        reads: Tables { case_units: true, mix: true, ..Tables::CORE },
        experiment: true,
    }
    /// Budget curves per selector.
    Curve = "curve" {
        tables: CurveOutput::TABLES,
        matrix: true,
        in_report: true,
        reads: Tables::CORE,
        experiment: true,
    }
    /// Reranker replay.
    Selector = "selector" {
        tables: SelectorOutput::TABLES,
        matrix: true,
        in_report: true,
        reads: Tables { passages: true, ..Tables::CORE },
        experiment: true,
    }
    /// The decision record.
    Record = "record" {
        tables: DecisionRecord::TABLES,
        matrix: true,
        in_report: true,
        reads: Tables::ALL,
        experiment: true,
    }
    /// Shadow traffic above the replay noise floor.
    Shadow = "shadow" {
        tables: ShadowOutput::TABLES,
        matrix: false,
        in_report: true,
        reads: Tables::CORE,
        experiment: false,
    }
    /// Context telemetry and budget-policy replay.
    Context = "context" {
        tables: ContextOutput::TABLES,
        matrix: false,
        in_report: true,
        reads: Tables::CORE,
        experiment: false,
    }
    /// Anytime-valid monitoring of a running ablation.
    Watch = "watch" {
        tables: WatchOutput::TABLES,
        matrix: false,
        in_report: false,
        reads: Tables::CORE,
        experiment: true,
    }
    /// The next batch of calls for the open arms.
    Next = "next" {
        tables: NextOutput::TABLES,
        matrix: false,
        in_report: false,
        reads: Tables::CORE,
        experiment: true,
    }
    /// The HTML report (every section's tables: `crate::export::spec::report_sections`).
    Report = "report" {
        tables: &[],
        matrix: true,
        in_report: false,
        reads: Tables::ALL,
        experiment: true,
    }
    /// A synthetic experiment (tables of its own: `--out`).
    Simulate = "simulate" {
        tables: &[],
        matrix: false,
        in_report: false,
        reads: Tables::CORE,
        experiment: false,
    }
    /// An experiment from a harness's logs (tables of its own: `--out`).
    Import = "import" {
        tables: &[],
        matrix: false,
        in_report: false,
        reads: Tables::CORE,
        experiment: false,
    }
    /// The reduction to run where the data lives (it prints a query).
    Sql = "sql" {
        tables: &[],
        matrix: false,
        in_report: false,
        reads: Tables::CORE,
        experiment: false,
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
