//! Composed arms: which measured arms, put together, make up an arm.
//!
//! An arm that removes the set S of units (|S| ≥ 2) is *composed* when S is exactly covered by ≥ 2
//! other measured arms: their removed sets are pairwise disjoint and their union is S. Among the
//! covers, the one with the fewest arms is used; among equals, the lexicographically smallest
//! sorted list of labels. An arm with no such cover (say "all eight removable examples") is a
//! group arm: it is swept, but it has no parts to compare with.
//!
//! The search is Knuth's Algorithm X order: always branch on the smallest uncovered unit, so every
//! exact cover is met once; branches longer than the best cover so far are cut.

use std::collections::BTreeSet;

/// A measured arm as the cover search sees it.
#[derive(Debug, Clone)]
pub struct Candidate<'a> {
    /// Arm label.
    pub label: &'a str,
    /// Units it removes.
    pub removed: BTreeSet<&'a str>,
}

/// The best exact cover of `target` by ≥ 2 of `candidates` (labels sorted), or `None`.
/// Candidates equal to the target, empty, or not inside it are ignored.
pub fn best_cover(target: &BTreeSet<&str>, candidates: &[Candidate<'_>]) -> Option<Vec<String>> {
    let usable: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| !c.removed.is_empty() && c.removed.is_subset(target) && c.removed != *target)
        .collect();
    let mut best: Option<Vec<String>> = None;
    let mut chosen: Vec<&Candidate> = Vec::new();
    search(target, &BTreeSet::new(), &usable, &mut chosen, &mut best);
    best
}

fn search<'a>(
    target: &BTreeSet<&str>,
    covered: &BTreeSet<&'a str>,
    usable: &[&'a Candidate<'a>],
    chosen: &mut Vec<&'a Candidate<'a>>,
    best: &mut Option<Vec<String>>,
) {
    if let Some(b) = best
        && chosen.len() > b.len()
    {
        return;
    }
    let Some(first) = target.iter().find(|u| !covered.contains(*u)) else {
        if chosen.len() >= 2 {
            let mut labels: Vec<String> = chosen.iter().map(|c| c.label.to_string()).collect();
            labels.sort();
            let better = match best {
                None => true,
                Some(b) => labels.len() < b.len() || (labels.len() == b.len() && labels < *b),
            };
            if better {
                *best = Some(labels);
            }
        }
        return;
    };
    for c in usable {
        if c.removed.contains(first) && c.removed.is_disjoint(covered) {
            let mut next = covered.clone();
            next.extend(c.removed.iter().copied());
            chosen.push(c);
            search(target, &next, usable, chosen, best);
            chosen.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand<'a>(label: &'a str, units: &[&'a str]) -> Candidate<'a> {
        Candidate {
            label,
            removed: units.iter().copied().collect(),
        }
    }

    fn set<'a>(units: &[&'a str]) -> BTreeSet<&'a str> {
        units.iter().copied().collect()
    }

    #[test]
    fn fewest_arms_win() {
        let c = vec![
            cand("a", &["1"]),
            cand("b", &["2"]),
            cand("c", &["3"]),
            cand("ab", &["1", "2"]),
        ];
        assert_eq!(
            best_cover(&set(&["1", "2", "3"]), &c),
            Some(vec!["ab".into(), "c".into()])
        );
    }

    #[test]
    fn ties_go_to_the_lexicographically_smallest_labels() {
        let c = vec![
            cand("z12", &["1", "2"]),
            cand("y34", &["3", "4"]),
            cand("b13", &["1", "3"]),
            cand("x24", &["2", "4"]),
        ];
        // Covers {y34, z12} and {b13, x24}: sorted ["b13", "x24"] < ["y34", "z12"].
        assert_eq!(
            best_cover(&set(&["1", "2", "3", "4"]), &c),
            Some(vec!["b13".into(), "x24".into()])
        );
    }

    #[test]
    fn overlapping_or_incomplete_sets_do_not_cover() {
        let c = vec![cand("a", &["1", "2"]), cand("b", &["2", "3"])];
        assert_eq!(best_cover(&set(&["1", "2", "3"]), &c), None);
        let c = vec![cand("a", &["1"]), cand("b", &["2"])];
        assert_eq!(best_cover(&set(&["1", "2", "3"]), &c), None);
    }

    #[test]
    fn an_arm_does_not_cover_itself_and_one_part_is_not_a_cover() {
        let c = vec![cand("self", &["1", "2"])];
        assert_eq!(best_cover(&set(&["1", "2"]), &c), None);
    }

    #[test]
    fn units_outside_the_target_disqualify_a_candidate() {
        let c = vec![cand("a", &["1", "9"]), cand("b", &["2"]), cand("c", &["1"])];
        assert_eq!(
            best_cover(&set(&["1", "2"]), &c),
            Some(vec!["b".into(), "c".into()])
        );
    }
}
