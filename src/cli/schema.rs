//! `ablate schema --json` (hidden): the machine-readable definition of the command line, read
//! from clap's own definition and the [`Verb`] registry, so that wrappers (the Python module)
//! can generate themselves from it or test themselves against it instead of copying lists.

use clap::{ArgAction, Args, CommandFactory};
use serde::Serialize;

use ablate::error::Result;
use ablate::export::spec::{self, TableSpec};
use ablate::verb::Verb;

use super::{Cli, Global};

/// Print every verb's options and tables, the manifest keys and the experiment's tables, as JSON.
#[derive(Debug, Args)]
pub(super) struct SchemaArgs {}

impl super::VerbArgs for SchemaArgs {
    fn paths(&self) -> super::IoPaths {
        super::IoPaths::default()
    }

    fn apply(&self, _g: &mut Global) {}
}

/// The whole document (`schema_version` is added by [`ablate::report::json`], as for every
/// verb's JSON).
#[derive(Debug, Serialize)]
struct Schema {
    version: &'static str,
    /// Options every verb takes.
    common_options: Vec<OptionSchema>,
    verbs: Vec<VerbSchema>,
    /// Table groups that are not a verb's own: `replay` (`watch --replay`) and `decision`
    /// (`report`'s).
    other_tables: Vec<(String, Vec<TableSchema>)>,
    /// Keys experiment.toml may hold.
    manifest_keys: &'static [&'static str],
    /// Stems of the tables an experiment folder may hold.
    experiment_tables: &'static [&'static str],
}

#[derive(Debug, Serialize)]
struct VerbSchema {
    name: &'static str,
    about: String,
    reads_experiment: bool,
    reads_matrix: bool,
    in_report: bool,
    options: Vec<OptionSchema>,
    tables: Vec<TableSchema>,
}

#[derive(Debug, Serialize)]
struct OptionSchema {
    /// The name in Python: the long flag with underscores (`from_aggregates`).
    name: String,
    /// `--from-aggregates`, or null for a positional argument.
    long: Option<String>,
    positional: bool,
    required: bool,
    /// Takes no value (`--json`).
    flag: bool,
    /// May be given more than once.
    multiple: bool,
    default: Option<String>,
    possible_values: Vec<String>,
    /// The `--help` group (`Statistics`, `Scale`, `Output`), or null for the verb's own.
    heading: Option<String>,
    help: String,
}

#[derive(Debug, Serialize)]
struct TableSchema {
    name: &'static str,
    doc: &'static str,
    columns: Vec<ColumnSchema>,
}

#[derive(Debug, Serialize)]
struct ColumnSchema {
    name: &'static str,
    #[serde(rename = "type")]
    kind: &'static str,
}

fn table(s: &TableSpec) -> TableSchema {
    TableSchema {
        name: s.name,
        doc: s.doc,
        columns: s
            .columns()
            .iter()
            .map(|c| ColumnSchema {
                name: c.name,
                kind: c.kind.name(),
            })
            .collect(),
    }
}

fn option(a: &clap::Arg) -> OptionSchema {
    let flag = matches!(
        a.get_action(),
        ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count
    );
    let help = a
        .get_long_help()
        .or_else(|| a.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    // The Python name: the long flag with underscores (`--mix` is `mix` although clap's id is
    // `mixes`), else the id.
    let name = a
        .get_long()
        .map_or_else(|| a.get_id().to_string(), |l| l.replace('-', "_"));
    OptionSchema {
        name,
        long: a.get_long().map(|l| format!("--{l}")),
        positional: a.is_positional(),
        required: a.is_required_set(),
        flag,
        multiple: matches!(a.get_action(), ArgAction::Append),
        default: if flag {
            None
        } else {
            a.get_default_values()
                .first()
                .map(|v| v.to_string_lossy().into_owned())
        },
        possible_values: a
            .get_possible_values()
            .iter()
            .map(|v| v.get_name().to_string())
            .collect(),
        heading: a.get_help_heading().map(str::to_string),
        help,
    }
}

/// Whether clap added this argument itself (`--help`, `--version`).
fn builtin(a: &clap::Arg) -> bool {
    matches!(a.get_id().as_str(), "help" | "version")
}

/// Runs `ablate schema`: always JSON.
pub(super) fn schema(_args: SchemaArgs, _g: &Global) -> Result<String> {
    let mut cli = Cli::command();
    cli.build();
    let common_options = cli
        .get_arguments()
        .filter(|a| !builtin(a))
        .map(option)
        .collect();
    let verbs = Verb::ALL
        .into_iter()
        .map(|v| {
            let sub = cli
                .find_subcommand(v.name())
                .unwrap_or_else(|| panic!("verb {v} has no subcommand"));
            VerbSchema {
                name: v.name(),
                about: sub.get_about().map(|s| s.to_string()).unwrap_or_default(),
                reads_experiment: v.reads_experiment(),
                reads_matrix: v.reads_matrix(),
                in_report: v.in_report(),
                options: sub
                    .get_arguments()
                    // A hidden option (watch's --per-arm, refused) is no keyword.
                    .filter(|a| !builtin(a) && !a.is_global_set() && !a.is_hide_set())
                    .map(option)
                    .collect(),
                tables: v.tables().iter().map(table).collect(),
            }
        })
        .collect();
    let other_tables = ["replay", "decision"]
        .into_iter()
        .map(|g| (g.to_string(), spec::tables(g).iter().map(table).collect()))
        .collect();
    ablate::report::json(&Schema {
        version: env!("CARGO_PKG_VERSION"),
        common_options,
        verbs,
        other_tables,
        manifest_keys: ablate::io::manifest::KNOWN_KEYS,
        experiment_tables: ablate::io::output::EXPERIMENT_TABLES,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subcommand but the hidden `schema` and the shell's (`completions`, `man`) is a verb
    /// of the registry, and the other way round: adding a `Command` variant without a `Verb` (or
    /// the reverse) fails here.
    #[test]
    fn the_subcommands_are_the_registry() {
        let cli = Cli::command();
        let subs: Vec<&str> = cli
            .get_subcommands()
            .map(|s| s.get_name())
            .filter(|n| !["schema", "completions", "man"].contains(n))
            .collect();
        let verbs: Vec<&str> = Verb::ALL.iter().map(|v| v.name()).collect();
        assert_eq!(subs, verbs);
    }
}
