//! The joint cut's parts: its label, the drop its components predict when it was not measured,
//! and the eligible arms that cover its units.

use crate::analysis::paired::{CaseSet, Paired};
use crate::analysis::sweep::SweepArm;
use crate::io::Experiment;
use crate::stats::moments;

/// The label of an arm removing `units`: `without-` and the units joined with `+`.
pub fn joint_label(units: &[String]) -> String {
    format!("without-{}", units.join("+"))
}

/// The prediction for cutting the components' units together: per main-set case, the sum of the
/// components' paired drops (cases paired in every component), its mean and sd.
pub(super) fn predicted(exp: &Experiment, components: &[&SweepArm]) -> Option<(f64, f64)> {
    let (sums, _) = predicted_drops(exp, components)?;
    Some((moments::mean(&sums), moments::sample_variance(&sums).sqrt()))
}

/// The predicted per-case drops of the joint cut (the sum of its components' paired drops, on
/// the main-set cases every component has) and each case's resampling unit; `None` with fewer
/// than two cases.
pub(super) fn predicted_drops(
    exp: &Experiment,
    components: &[&SweepArm],
) -> Option<(Vec<f64>, Vec<u32>)> {
    let m = &exp.results.matrix;
    let paired = Paired::new(exp, CaseSet::Main);
    let ids: Vec<usize> = components
        .iter()
        .map(|a| exp.results.arm_index(&a.arm))
        .collect::<Option<_>>()?;
    let (mut sums, mut units) = (Vec::new(), Vec::new());
    for (pos, &c) in paired.cases.iter().enumerate() {
        if ids.iter().all(|&a| m.present(c, a)) {
            sums.push(
                ids.iter()
                    .map(|&a| m.mean[m.cell(c, paired.baseline)] - m.mean[m.cell(c, a)])
                    .sum::<f64>(),
            );
            units.push(paired.unit[pos]);
        }
    }
    (sums.len() >= 2).then_some((sums, units))
}

/// The eligible arms that cover `units` without overlap, largest first.
pub(super) fn cover<'a>(eligible: &[&'a SweepArm]) -> Vec<&'a SweepArm> {
    let mut sorted: Vec<&SweepArm> = eligible.to_vec();
    sorted.sort_by(|a, b| {
        b.removed
            .len()
            .cmp(&a.removed.len())
            .then(a.arm.cmp(&b.arm))
    });
    let mut covered: std::collections::BTreeSet<&str> = Default::default();
    let mut out = Vec::new();
    for a in sorted {
        if a.removed.iter().all(|u| !covered.contains(u.as_str())) {
            covered.extend(a.removed.iter().map(String::as_str));
            out.push(a);
        }
    }
    out
}
