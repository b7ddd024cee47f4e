//! The tables each verb exports: their declarations ([`ablate_report::export::spec`], beside
//! each output's rendering) and the lists by verb and by report section, from the verb registry.

pub use ablate_report::export::spec::*;

use crate::analysis::decision::Decision;
use crate::analysis::sequential::ReplayOutput;
use crate::verb::Verb;

/// The tables of one group, by name: a verb's ([`Verb::tables`]), `replay` (`watch --replay`)
/// or `decision` (`report`'s). Unknown names have none.
pub fn tables(group: &str) -> &'static [TableSpec] {
    match group {
        "replay" => ReplayOutput::TABLES,
        "decision" => Decision::TABLES,
        name => Verb::parse(name).map_or(&[], Verb::tables),
    }
}

/// The groups of tables, in the order of the README: every verb that has tables, with `replay`
/// after `watch`.
pub fn groups() -> Vec<&'static str> {
    let mut out = Vec::new();
    for v in Verb::ALL.into_iter().filter(|v| !v.tables().is_empty()) {
        out.push(v.name());
        if v == Verb::Watch {
            out.push("replay");
        }
    }
    out
}

/// The sections of `report`'s `analysis.json` whose tables `report --export` writes, each as
/// `<section>_<table>`: every verb in the report ([`Verb::in_report`]), and the decision after
/// `check`.
pub fn report_sections() -> Vec<&'static str> {
    let mut out = Vec::new();
    for v in Verb::ALL.into_iter().filter(|v| v.in_report()) {
        out.push(v.name());
        if v == Verb::Check {
            out.push("decision");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_line_parses_and_names_are_unique() {
        for verb in groups().iter().chain(["decision"].iter()) {
            let specs = tables(verb);
            assert!(!specs.is_empty(), "{verb}");
            let mut names: Vec<&str> = specs.iter().map(|s| s.name).collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), specs.len(), "{verb}: duplicate table names");
            for s in specs {
                let cols = s.columns();
                let mut cn: Vec<&str> = cols.iter().map(|c| c.name).collect();
                cn.sort_unstable();
                cn.dedup();
                assert_eq!(cn.len(), cols.len(), "{verb}.{}: duplicate columns", s.name);
            }
        }
    }

    /// Every interval is exported alike: `<name>_low`, `_high`, `_level` and `_method`, in
    /// that order (one `Interval` type, flattened the same way everywhere).
    #[test]
    fn every_interval_is_four_columns_in_order() {
        for verb in groups().iter().chain(["decision"].iter()) {
            for s in tables(verb) {
                let cols: Vec<(&str, Kind)> =
                    s.columns().iter().map(|c| (c.name, c.kind)).collect();
                for (k, (name, _)) in cols.iter().enumerate() {
                    let interval = |p: &&str| {
                        ["ci", "cs"].contains(p) || p.starts_with("ci_") || p.contains("_ci_")
                    };
                    let Some(prefix) = name.strip_suffix("_low").filter(interval) else {
                        continue;
                    };
                    let want = [
                        (format!("{prefix}_low"), Kind::F64),
                        (format!("{prefix}_high"), Kind::F64),
                        (format!("{prefix}_level"), Kind::F64),
                        (format!("{prefix}_method"), Kind::Str),
                    ];
                    let got: Vec<(String, Kind)> = cols[k..]
                        .iter()
                        .take(4)
                        .map(|(n, t)| (n.to_string(), *t))
                        .collect();
                    assert_eq!(got, want, "{verb}.{}", s.name);
                }
                assert!(
                    !cols.iter().any(|(n, _)| ["lower", "upper"].contains(n)
                        || n.starts_with("ci_low_")
                        || n.starts_with("ci_high_")),
                    "{verb}.{}: an interval spelt the old way",
                    s.name
                );
            }
        }
    }
}
