//! Regular two-level fractional factorial designs.
//!
//! A 2^(k−p) design runs 2^m arms (m = k − p base factors in full factorial) and sets each added
//! factor j to the product of a *generator*, a set of base factors: x_j = Π_{b∈g_j} x_b on the ±1
//! coding (+1 = unit present, −1 = removed). The words g_j·j generate the defining relation
//! I = w₁ = w₂ = w₁w₂ = …; the design's *resolution* is its shortest word. At resolution V main
//! effects are aliased only with four-factor interactions and two-factor interactions with
//! three-factor ones, so all main effects and two-factor interactions are estimable (assuming
//! higher-order interactions are negligible); at resolution IV main effects are clear of
//! two-factor interactions but those are aliased with each other.
//!
//! [`find_fraction`] searches, from the fewest runs up to 128, for generators reaching resolution
//! V, and otherwise IV: a depth-first search over generator words (longest first, then by value,
//! so the result is deterministic), cutting any branch whose defining relation gains a word
//! shorter than the target. Factors are bits of a mask; the search is instant for k ≤ 16.

/// A regular fraction: `k` factors, `m` base factors, one generator per added factor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fraction {
    /// Number of factors.
    pub k: usize,
    /// Number of base factors (runs = 2^m).
    pub m: usize,
    /// Generator of added factor m + j, as a mask over the base factors.
    pub generators: Vec<u64>,
    /// Length of the shortest word of the defining relation.
    pub resolution: usize,
}

/// Most runs a fractional design may have.
pub const MAX_RUNS: usize = 128;

/// Most factors a fractional design may have (resolution IV in 128 runs).
pub const MAX_FACTORS: usize = 64;

/// Factor letters: A, B, C, … (skipping I, which names the identity).
pub fn letter(i: usize) -> String {
    const LETTERS: &[u8] = b"ABCDEFGHJKLMNOPQRSTUVWXYZ";
    if i < LETTERS.len() {
        (LETTERS[i] as char).to_string()
    } else {
        format!("F{}", i + 1)
    }
}

/// A word (mask over factors) in letters, e.g. "ABCE".
pub fn word(mask: u64) -> String {
    (0..32)
        .filter(|i| mask & (1 << i) != 0)
        .map(letter)
        .collect()
}

impl Fraction {
    /// Number of runs, 2^m.
    pub fn runs(&self) -> usize {
        1 << self.m
    }

    /// The words w_j = g_j·(factor m + j).
    pub fn words(&self) -> Vec<u64> {
        self.generators
            .iter()
            .enumerate()
            .map(|(j, g)| g | (1 << (self.m + j)))
            .collect()
    }

    /// Words of the defining relation with at most `len` factors, sorted by length then value.
    /// A product of t generator words contains t distinct added factors, so only products of at
    /// most `len` generators can be that short: the enumeration stays small for any design.
    pub fn words_up_to(&self, len: usize) -> Vec<u64> {
        fn walk(
            words: &[u64],
            start: usize,
            acc: u64,
            depth: usize,
            len: usize,
            out: &mut Vec<u64>,
        ) {
            for i in start..words.len() {
                let w = acc ^ words[i];
                if (w.count_ones() as usize) <= len {
                    out.push(w);
                }
                if depth + 1 < len {
                    walk(words, i + 1, w, depth + 1, len, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.words(), 0, 0, 0, len, &mut out);
        out.retain(|w| *w != 0);
        out.sort_by_key(|g| (g.count_ones(), *g));
        out.dedup();
        out
    }

    /// The defining relation: every non-identity word when there are at most 12 generators,
    /// else the words of at most four factors (the ones that alias main effects and two-factor
    /// interactions). Sorted by length then value.
    pub fn defining_relation(&self) -> Vec<u64> {
        if self.generators.len() > 12 {
            return self.words_up_to(4);
        }
        let mut group = vec![0u64];
        for w in self.words() {
            let more: Vec<u64> = group.iter().map(|g| g ^ w).collect();
            group.extend(more);
        }
        group.retain(|g| *g != 0);
        group.sort_by_key(|g| (g.count_ones(), *g));
        group
    }

    /// The factor levels of every run: `levels[r][f]` is +1 (present) or −1 (removed). Run 0 has
    /// every factor present.
    pub fn levels(&self) -> Vec<Vec<i8>> {
        (0..self.runs())
            .map(|r| {
                let base: Vec<i8> = (0..self.m)
                    .map(|b| if r & (1 << b) == 0 { 1 } else { -1 })
                    .collect();
                let mut row = base.clone();
                for g in &self.generators {
                    row.push(
                        (0..self.m)
                            .filter(|b| g & (1 << b) != 0)
                            .map(|b| base[b])
                            .product(),
                    );
                }
                row
            })
            .collect()
    }

    /// Generators as text, e.g. "E = ABCD".
    pub fn generator_text(&self) -> Vec<String> {
        self.generators
            .iter()
            .enumerate()
            .map(|(j, g)| format!("{} = {}", letter(self.m + j), word(*g)))
            .collect()
    }

    /// Alias chains of every main effect and two-factor interaction, e.g. "AB = CDE", listing
    /// aliases of up to four factors (up to two factors for designs with more than 12 generators).
    pub fn aliases(&self) -> Vec<String> {
        let (relation, longest) = if self.generators.len() > 12 {
            (self.words_up_to(4), 2)
        } else {
            (self.defining_relation(), 4)
        };
        let mut effects: Vec<u64> = (0..self.k).map(|i| 1u64 << i).collect();
        for a in 0..self.k {
            for b in (a + 1)..self.k {
                effects.push((1u64 << a) | (1u64 << b));
            }
        }
        effects
            .iter()
            .map(|&e| {
                let mut chain: Vec<u64> = relation
                    .iter()
                    .map(|w| e ^ w)
                    .filter(|x| x.count_ones() <= longest)
                    .collect();
                chain.sort_by_key(|x| (x.count_ones(), *x));
                if chain.is_empty() {
                    format!("{} (clear of effects up to {longest} factors)", word(e))
                } else {
                    format!(
                        "{} = {}",
                        word(e),
                        chain
                            .iter()
                            .map(|x| word(*x))
                            .collect::<Vec<_>>()
                            .join(" = ")
                    )
                }
            })
            .collect()
    }
}

/// Depth-first search for the generators of added factors `chosen.len()..`: `group` is the
/// defining relation so far (identity included); `budget` counts the choices left to try.
#[allow(clippy::too_many_arguments)]
fn search(
    m: usize,
    k: usize,
    target: usize,
    candidates: &[u64],
    start: usize,
    group: &mut Vec<u64>,
    chosen: &mut Vec<u64>,
    budget: &mut usize,
) -> bool {
    if chosen.len() == k - m {
        return true;
    }
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    let j = chosen.len();
    for (i, &g) in candidates.iter().enumerate().skip(start) {
        let w = g | (1u64 << (m + j));
        let new: Vec<u64> = group.iter().map(|x| x ^ w).collect();
        if new.iter().any(|x| (x.count_ones() as usize) < target) {
            continue;
        }
        let before = group.len();
        group.extend(new);
        chosen.push(g);
        if search(m, k, target, candidates, i + 1, group, chosen, budget) {
            return true;
        }
        chosen.pop();
        group.truncate(before);
    }
    false
}

/// Largest search (in generator choices tried) for one run size; beyond it the search gives up.
const SEARCH_BUDGET: usize = 2_000_000;

fn with_resolution(k: usize, m: usize, generators: Vec<u64>) -> Fraction {
    let mut f = Fraction {
        k,
        m,
        generators,
        resolution: 0,
    };
    // With ≤ 12 generators the whole relation is enumerated; with more, words of ≤ 4 factors
    // decide (a regular design within 128 runs cannot reach resolution V with that many).
    f.resolution = f
        .defining_relation()
        .first()
        .map_or(usize::MAX, |w| w.count_ones() as usize);
    f
}

/// A design of `k` factors with `m` base factors and resolution ≥ `target`, found by search.
pub fn fraction_with(k: usize, m: usize, target: usize) -> Option<Fraction> {
    if m >= k || m > 20 || k > MAX_FACTORS {
        return None;
    }
    let mut candidates: Vec<u64> = (1u64..(1 << m))
        .filter(|g| g.count_ones() >= 2 && g.count_ones() as usize + 1 >= target)
        .collect();
    candidates.sort_by_key(|g| (std::cmp::Reverse(g.count_ones()), *g));
    let mut group = vec![0u64];
    let mut chosen = Vec::new();
    let mut budget = SEARCH_BUDGET;
    if !search(
        m,
        k,
        target,
        &candidates,
        0,
        &mut group,
        &mut chosen,
        &mut budget,
    ) {
        return None;
    }
    Some(with_resolution(k, m, chosen))
}

/// The resolution IV construction: generators are distinct odd-length words of ≥ 3 base factors
/// (longest first), with the fewest base factors that offer enough of them.
pub fn resolution_four(k: usize) -> Option<Fraction> {
    let max_m = MAX_RUNS.trailing_zeros() as usize;
    (3..=max_m.min(k.saturating_sub(1))).find_map(|m| {
        let mut odd: Vec<u64> = (1u64..(1 << m))
            .filter(|g| g.count_ones() >= 3 && g.count_ones() % 2 == 1)
            .collect();
        odd.sort_by_key(|g| (std::cmp::Reverse(g.count_ones()), *g));
        (odd.len() >= k - m).then(|| with_resolution(k, m, odd[..k - m].to_vec()))
    })
}

/// The smallest regular fraction of `k` factors within [`MAX_RUNS`] runs reaching resolution V,
/// else the smallest reaching IV; `None` when neither exists (k < 4 has no proper fraction of
/// resolution IV: run the full factorial; k > 64 does not fit in 128 runs).
pub fn find_fraction(k: usize) -> Option<Fraction> {
    if !(4..=MAX_FACTORS).contains(&k) {
        return None;
    }
    let max_m = MAX_RUNS.trailing_zeros() as usize;
    if k <= 11 {
        for m in 1..=max_m.min(k - 1) {
            if let Some(f) = fraction_with(k, m, 5) {
                return Some(f);
            }
        }
    }
    resolution_four(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_factors_in_sixteen_runs() {
        let f = find_fraction(5).unwrap();
        assert_eq!((f.m, f.resolution), (4, 5));
        assert_eq!(f.generator_text(), vec!["E = ABCD"]);
        assert_eq!(
            f.defining_relation()
                .iter()
                .map(|w| word(*w))
                .collect::<Vec<_>>(),
            vec!["ABCDE"]
        );
        assert!(f.aliases().contains(&"AB = CDE".to_string()));
    }

    #[test]
    fn known_minimum_run_sizes_for_resolution_five() {
        // Resolution V: 6 factors in 32 runs, 8 in 64, 11 in 128 (Montgomery, Table 8.14).
        for (k, runs) in [(6, 32), (7, 64), (8, 64), (9, 128), (10, 128), (11, 128)] {
            let f = find_fraction(k).unwrap();
            assert!(f.resolution >= 5, "k={k}: {f:?}");
            assert_eq!(f.runs(), runs, "k={k}");
        }
    }

    #[test]
    fn resolution_four_when_five_is_out_of_reach() {
        let f = find_fraction(4).unwrap();
        assert_eq!((f.runs(), f.resolution), (8, 4));
        let f = find_fraction(12).unwrap();
        assert_eq!(f.resolution, 4);
        assert_eq!(f.runs(), 32);
        assert!(find_fraction(3).is_none());
        // 64 factors in 128 runs, 65 do not fit.
        let f = find_fraction(64).unwrap();
        assert_eq!((f.runs(), f.resolution), (128, 4));
        assert!(find_fraction(65).is_none());
        assert!(!f.aliases().is_empty());
    }

    /// Resolution IV: main-effect columns are orthogonal to each other and to every two-factor
    /// interaction column.
    #[test]
    fn resolution_four_designs_keep_main_effects_clear() {
        for k in [4, 12, 20, 33, 64] {
            let f = find_fraction(k).unwrap();
            assert!(f.resolution >= 4, "k={k}");
            let levels = f.levels();
            let cols: Vec<Vec<i32>> = (0..k)
                .map(|a| levels.iter().map(|r| r[a] as i32).collect())
                .collect();
            for a in 0..k {
                for b in 0..k {
                    let dot: i32 = cols[a].iter().zip(&cols[b]).map(|(x, y)| x * y).sum();
                    assert_eq!(dot, if a == b { f.runs() as i32 } else { 0 }, "k={k}");
                    for c in (b + 1)..k {
                        if a == b || a == c {
                            continue;
                        }
                        let dot: i32 = (0..levels.len())
                            .map(|r| cols[a][r] * cols[b][r] * cols[c][r])
                            .sum();
                        assert_eq!(dot, 0, "k={k}: {a} vs {b}{c}");
                    }
                }
            }
        }
    }

    /// Main-effect and two-factor-interaction columns are mutually orthogonal at resolution V.
    #[test]
    fn every_resolution_five_design_is_orthogonal() {
        for k in 5..=11 {
            let f = find_fraction(k).unwrap();
            let levels = f.levels();
            let mut columns: Vec<Vec<i32>> = (0..k)
                .map(|a| levels.iter().map(|r| r[a] as i32).collect())
                .collect();
            for a in 0..k {
                for b in (a + 1)..k {
                    columns.push(levels.iter().map(|r| (r[a] * r[b]) as i32).collect());
                }
            }
            for i in 0..columns.len() {
                assert_eq!(
                    columns[i].iter().sum::<i32>(),
                    0,
                    "k={k} column {i} unbalanced"
                );
                for j in (i + 1)..columns.len() {
                    let dot: i32 = columns[i].iter().zip(&columns[j]).map(|(x, y)| x * y).sum();
                    assert_eq!(dot, 0, "k={k}: columns {i} and {j}");
                }
            }
            assert!(levels[0].iter().all(|x| *x == 1), "run 0 keeps every unit");
        }
    }
}
