//! The `arms` table: what each arm removed, and optional design metadata (components, budget,
//! selector).

use std::path::Path;

use crate::error::{Error, Result, Row};
use crate::io::table::{self, Col, Kind, TableFile};

pub use ablate_core::data::arms::*;

/// Reading the `arms` table into [`Arms`].
pub trait ArmsLoad {
    /// Reads and validates the arms table.
    ///
    /// # Errors
    /// Missing or mistyped columns, duplicate arms, components naming unknown arms, non-finite or
    /// negative budget ratios.
    fn load(file: &TableFile) -> Result<Arms>;
}

impl ArmsLoad for Arms {
    fn load(file: &TableFile) -> Result<Arms> {
        let t = table::read(
            file,
            &[
                Col::req("arm", Kind::Str),
                Col::req("removed", Kind::StrList),
                Col::opt("components", Kind::StrList),
                Col::opt("budget_ratio", Kind::Float),
                Col::opt("selector", Kind::Str),
                Col::opt("selector_threshold", Kind::Float),
                Col::opt("design", Kind::Str),
            ],
        )?;
        let arms = t.strs("arm")?;
        table::check_unique(&t.path, "arm", arms.iter())?;
        let removed = t.str_lists("removed")?;
        for (row, arm) in arms.iter().enumerate() {
            table::check_id(&t.path, "arm", row, arm)?;
            for unit in &removed[row] {
                table::check_id(&t.path, "removed", row, unit)?;
            }
        }
        let n = arms.len();
        let components = if t.has("components") {
            t.opt_str_lists("components")?
        } else {
            vec![Vec::new(); n]
        };
        let opt_strs = |name: &str| -> Result<Vec<Option<String>>> {
            if t.has(name) {
                t.opt_strs(name)
            } else {
                Ok(vec![None; n])
            }
        };
        let budget_ratio = non_negative(&t, "budget_ratio", n, Some(1.0))?;
        let selector_threshold = non_negative(&t, "selector_threshold", n, None)?;
        let (selector, design) = (opt_strs("selector")?, opt_strs("design")?);
        let specs: Vec<ArmSpec> = arms
            .into_iter()
            .enumerate()
            .map(|(i, arm)| ArmSpec {
                arm,
                removed: removed[i].clone(),
                components: components[i].clone(),
                budget_ratio: budget_ratio[i],
                selector: selector[i].clone(),
                selector_threshold: selector_threshold[i],
                design: design[i].clone(),
            })
            .collect();
        for (i, spec) in specs.iter().enumerate() {
            check_lists(&t.path, i, spec, &specs)?;
        }
        for (i, spec) in specs.iter().enumerate() {
            check_union(&t.path, i, spec, &specs)?;
        }
        Ok(Arms {
            path: t.path,
            specs,
        })
    }
}

/// An optional numeric column: finite, not negative and at most `most` (when given) where given;
/// all null when absent. `budget_ratio` is at most 1: the share of the baseline's context an arm
/// keeps (the baseline is 1).
fn non_negative(
    t: &table::Table,
    name: &str,
    n: usize,
    most: Option<f64>,
) -> Result<Vec<Option<f64>>> {
    if !t.has(name) {
        return Ok(vec![None; n]);
    }
    let values = t.opt_floats(name)?;
    let most = most.unwrap_or(f64::INFINITY);
    if let Some((i, v)) = values.iter().enumerate().find_map(|(i, v)| {
        v.filter(|v| !v.is_finite() || *v < 0.0 || *v > most)
            .map(|v| (i, v))
    }) {
        return Err(Error::BadValue {
            path: t.path.clone(),
            column: name.into(),
            row: Row::at(i),
            value: crate::text::float_text(v),
            problem: if most.is_finite() {
                format!(
                    "must be a finite number from 0 to {most} (the share of the baseline's context the arm keeps; the baseline is 1)"
                )
            } else {
                "must be a finite number, 0 or more".into()
            },
            fix: "leave it null for arms it does not apply to".into(),
        });
    }
    Ok(values)
}

/// An arm's lists: no unit or component twice, not itself among its components, and every
/// component another arm.
fn check_lists(path: &Path, i: usize, spec: &ArmSpec, specs: &[ArmSpec]) -> Result<()> {
    let bad = |column: &str, value: String, problem: String, fix: &str| Error::BadValue {
        path: path.to_path_buf(),
        column: column.into(),
        row: Row::at(i),
        value,
        problem,
        fix: fix.into(),
    };
    for (column, list) in [("removed", &spec.removed), ("components", &spec.components)] {
        let mut seen = std::collections::HashSet::new();
        if let Some(dup) = list.iter().find(|u| !seen.insert(u.as_str())) {
            return Err(bad(
                column,
                format!("\"{dup}\""),
                format!("arm {:?} lists it twice", spec.arm),
                "list each item once",
            ));
        }
    }
    if spec.components.contains(&spec.arm) {
        return Err(bad(
            "components",
            format!("\"{}\"", spec.arm),
            "an arm cannot be one of its own components".into(),
            "list the arms whose union this arm is",
        ));
    }
    if let Some(unknown) = spec
        .components
        .iter()
        .find(|c| !specs.iter().any(|s| &s.arm == *c))
    {
        return Err(bad(
            "components",
            format!("\"{unknown}\""),
            format!("arm {:?} lists a component that is not an arm", spec.arm),
            "components must be labels of other rows of the arms table",
        ));
    }
    Ok(())
}

/// An arm declared as the union of components must remove exactly what they remove, each unit
/// in one component only: the predicted drop adds the components' drops, so a unit two of them
/// remove would be counted twice (two components sharing B, each dropping 0.2, predicted 0.4
/// where the cut dropped 0.2, and called sub-additive).
fn check_union(path: &Path, i: usize, spec: &ArmSpec, specs: &[ArmSpec]) -> Result<()> {
    if spec.components.is_empty() {
        return Ok(());
    }
    let parts: Vec<&ArmSpec> = spec
        .components
        .iter()
        .filter_map(|c| specs.iter().find(|s| &s.arm == c))
        .collect();
    for (a, first) in parts.iter().enumerate() {
        for second in &parts[a + 1..] {
            if let Some(shared) = first.removed.iter().find(|u| second.removed.contains(u)) {
                return Err(Error::BadValue {
                    path: path.to_path_buf(),
                    column: "components".into(),
                    row: Row::at(i),
                    value: format!("{:?}", spec.components),
                    problem: format!(
                        "arm {:?}'s components {:?} and {:?} both remove {shared:?}: the predicted drop adds the components' drops, so its drop would count twice",
                        spec.arm, first.arm, second.arm
                    ),
                    fix: "list components that remove disjoint units (each unit in one of them), or leave components empty and let ablate find the cover".into(),
                });
            }
        }
    }
    let union: std::collections::BTreeSet<&str> = spec
        .components
        .iter()
        .filter_map(|c| specs.iter().find(|s| &s.arm == c))
        .flat_map(|c| c.removed.iter().map(String::as_str))
        .collect();
    let own: std::collections::BTreeSet<&str> = spec.removed.iter().map(String::as_str).collect();
    if union == own {
        return Ok(());
    }
    let missing: Vec<&str> = own.difference(&union).copied().collect();
    let extra: Vec<&str> = union.difference(&own).copied().collect();
    Err(Error::BadValue {
        path: path.to_path_buf(),
        column: "components".into(),
        row: Row::at(i),
        value: format!("{:?}", spec.components),
        problem: format!(
            "arm {:?} removes {:?}, but its components together remove {:?}{}{}",
            spec.arm,
            own,
            union,
            if missing.is_empty() { String::new() } else { format!("; not covered: {}", missing.join(", ")) },
            if extra.is_empty() { String::new() } else { format!("; not removed by the arm: {}", extra.join(", ")) },
        ),
        fix: "list every arm whose union is this arm's removed set, or leave components empty and let ablate find the cover".into(),
    })
}
