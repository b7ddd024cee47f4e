//! The generative model behind `ablate simulate`.
//!
//! **Cases.** Each case has a slice, a turn type, a gold rank, a ticket (cluster) and a latent
//! ability θ (log-odds of a judge vote passing with the full prompt). θ comes from a three-part
//! mixture, allocated by quota so that every seed tells the same story: easy cases (θ ~ N(5.5, 0.7),
//! they pass), hard cases (θ ~ N(−3.5, 0.7), they fail whatever the prompt) and 0.8% ambiguous
//! cases (θ ~ N(0, 0.8)) whose pass/fail flips between repeats: the churn floor.
//!
//! **Requirements.** A case may need facts. A fact is carried by a set of units; the case loses
//! the fact only when every carrier is removed (redundancy), and then its θ falls by the fact's
//! penalty. The demo's facts:
//! - the output format, carried by `system` (30% of cases);
//! - four load-bearing few-shot examples, each needed by 0.9% of the easy cases;
//! - a house style carried jointly by the eight other examples (0.2% of cases; no single one
//!   matters);
//! - the refund window, carried redundantly by `few_shot/03`, `few_shot/08` and `passages/rank3`
//!   for 45% of `refunds/out-of-window` cases: each carrier alone looks removable, all three
//!   together are not (the seed's interaction);
//! - the gold passage, for 30% / 20% / 5% of cases whose gold sits at rank 1 / 2 / deeper;
//! - the conversation tail, for 7% of multi-turn cases (rare in the set, 23% of production).
//!
//! **Judging.** In repeat r a case's log-odds are θ − Σ penalties of lost facts + N(0, 0.4)
//! (sampling noise); three judge votes are drawn, and the score is the share of passing votes.

use rand::Rng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

/// Penalty (log-odds) of losing a fact the case relies on: enough to fail an easy case.
pub const PENALTY: f64 = 9.0;

/// A seeded random stream for one component of the simulation, so that adding draws to one
/// table never changes another.
pub fn stream(seed: u64, component: u64) -> ChaCha8Rng {
    use rand::SeedableRng;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(component);
    rng
}

/// A standard normal draw (Box–Muller), written out so the stream is stable across rand versions.
pub fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Logistic function.
pub fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Slices with their shares in the main set and in the stress slice.
pub const SLICES: &[(&str, f64, f64)] = &[
    ("refunds/in-window", 0.22, 0.15),
    ("refunds/out-of-window", 0.10, 0.35),
    ("billing", 0.24, 0.15),
    ("shipping", 0.22, 0.15),
    ("account", 0.22, 0.20),
];

/// Share of multi-turn cases in the main set, the stress slice and production.
pub const MULTI_TURN: (f64, f64, f64) = (0.06, 0.5, 0.23);

/// Gold rank distribution: ranks 1..5, then not retrieved (null).
pub const GOLD_RANK: &[(Option<i64>, f64)] = &[
    (Some(1), 0.78),
    (Some(2), 0.14),
    (Some(3), 0.05),
    (Some(4), 0.013),
    (Some(5), 0.007),
    (None, 0.01),
];

/// Units of the demo prompt: (unit, block, mean tokens, rank).
pub fn units() -> Vec<(String, &'static str, f64, Option<i64>)> {
    let mut out = vec![("system".to_string(), "system", 900.0, None)];
    // Twelve examples of about 200 tokens, 2,400 in all.
    const EXAMPLE_TOKENS: [f64; 12] = [
        184.0, 214.0, 196.0, 205.0, 188.0, 221.0, 193.0, 207.0, 199.0, 186.0, 210.0, 197.0,
    ];
    for (i, t) in EXAMPLE_TOKENS.iter().enumerate() {
        out.push((format!("few_shot/{:02}", i + 1), "few_shot", *t, None));
    }
    for r in 1..=5 {
        out.push((format!("passages/rank{r}"), "passages", 1960.0, Some(r)));
    }
    out.push(("conversation".to_string(), "conversation", 900.0, None));
    out
}

/// The four load-bearing examples.
pub const LOAD_BEARING: [&str; 4] = ["few_shot/02", "few_shot/05", "few_shot/09", "few_shot/11"];
/// The two "removable" examples that carry the refund window, with `passages/rank3`.
pub const WINDOW_EXAMPLES: [&str; 2] = ["few_shot/03", "few_shot/08"];

/// A fact a case relies on: lost when every carrier unit is removed.
#[derive(Debug, Clone)]
pub struct Fact {
    /// Units carrying the fact (indices into [`units`]).
    pub carriers: Vec<usize>,
}

/// One simulated case.
#[derive(Debug, Clone)]
pub struct SimCase {
    /// Case id.
    pub id: String,
    /// Slice.
    pub slice: &'static str,
    /// `single` or `multi`.
    pub turns: &'static str,
    /// Gold rank (None = not retrieved).
    pub gold_rank: Option<i64>,
    /// Ticket the case came from.
    pub cluster: String,
    /// Stress slice member.
    pub stress: bool,
    /// Latent log-odds of passing with the full prompt.
    pub theta: f64,
    /// Whether θ came from the easy component.
    pub easy: bool,
    /// Facts the case relies on.
    pub facts: Vec<Fact>,
    /// Tokens per unit for this case (same order as [`units`]).
    pub unit_tokens: Vec<f64>,
    /// Reranker score per passage rank 1..5.
    pub reranker: [f64; 5],
}

/// Labels drawn by quota: `round(share × n)` of each label (the remainder to the largest share),
/// shuffled.
pub fn quota<T: Clone>(rng: &mut ChaCha8Rng, n: usize, shares: &[(T, f64)]) -> Vec<T> {
    let mut out = Vec::with_capacity(n);
    for (label, share) in shares {
        let k = (share * n as f64).round() as usize;
        out.extend(std::iter::repeat_n(label.clone(), k.min(n - out.len())));
    }
    let largest = shares
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|s| s.0.clone());
    while out.len() < n {
        if let Some(l) = &largest {
            out.push(l.clone());
        }
    }
    out.shuffle(rng);
    out
}

/// Picks `round(share × candidates)` of the candidate indices (at least one when `at_least_one`
/// and candidates exist).
fn pick(rng: &mut ChaCha8Rng, candidates: &[usize], share: f64, at_least_one: bool) -> Vec<usize> {
    let mut k = (share * candidates.len() as f64).round() as usize;
    if at_least_one && k == 0 && !candidates.is_empty() {
        k = 1;
    }
    let mut c = candidates.to_vec();
    c.shuffle(rng);
    c.truncate(k);
    c
}

/// Generates the main cases and the stress slice.
pub fn cases(seed: u64, n_main: usize, n_stress: usize) -> Vec<SimCase> {
    let units = units();
    let mut rng = stream(seed, 1);
    let mut out = Vec::with_capacity(n_main + n_stress);
    for (stress, n) in [(false, n_main), (true, n_stress)] {
        draw_part(&mut rng, &units, stress, n, &mut out);
    }
    add_facts(seed, &units, &mut out);
    out
}

/// The main set's or the stress set's `n` cases: slices, turns, gold ranks and kinds by quota,
/// tickets (a new one with probability 0.8), ability θ by kind, token counts per unit and
/// reranker scores.
fn draw_part(
    rng: &mut ChaCha8Rng,
    units: &[(String, &'static str, f64, Option<i64>)],
    stress: bool,
    n: usize,
    out: &mut Vec<SimCase>,
) {
    let slice_shares: Vec<(&'static str, f64)> = SLICES
        .iter()
        .map(|(s, main, st)| (*s, if stress { *st } else { *main }))
        .collect();
    let slices = quota(rng, n, &slice_shares);
    let multi = if stress { MULTI_TURN.1 } else { MULTI_TURN.0 };
    let turns = quota(rng, n, &[("multi", multi), ("single", 1.0 - multi)]);
    let gold = quota(rng, n, GOLD_RANK);
    let kinds = quota(rng, n, &[(0u8, 0.882), (1u8, 0.11), (2u8, 0.008)]);
    let mut ticket = 0usize;
    for i in 0..n {
        if i == 0 || rng.random::<f64>() > 0.2 {
            ticket += 1;
        }
        let theta = match kinds[i] {
            0 => 5.5 + 0.7 * normal(rng),
            1 => -3.5 + 0.7 * normal(rng),
            _ => 0.8 * normal(rng),
        };
        let mut unit_tokens: Vec<f64> = units.iter().map(|u| u.2).collect();
        for (k, u) in units.iter().enumerate() {
            if u.1 == "passages" {
                unit_tokens[k] = (1960.0 + 300.0 * normal(rng)).clamp(600.0, 3200.0).round();
            } else if u.1 == "conversation" {
                unit_tokens[k] = (900.0 + 250.0 * normal(rng)).clamp(150.0, 1800.0).round();
            }
        }
        let mut reranker = [0.0; 5];
        for (r, score) in reranker.iter_mut().enumerate() {
            let is_gold = gold[i] == Some(r as i64 + 1);
            let x = if is_gold { 1.6 } else { -0.3 } + 0.9 * normal(rng);
            *score = (sigmoid(x) * 1000.0).round() / 1000.0;
        }
        let prefix = if stress { "s" } else { "c" };
        out.push(SimCase {
            id: format!("{prefix}{:04}", i + 1),
            slice: slices[i],
            turns: turns[i],
            gold_rank: gold[i],
            cluster: format!("{}t{:04}", prefix, ticket),
            stress,
            theta,
            easy: kinds[i] == 0,
            facts: Vec::new(),
            unit_tokens,
            reranker,
        });
    }
}

/// Facts, allocated by quota within each part (main, stress) so the story holds for any seed.
fn add_facts(
    seed: u64,
    units: &[(String, &'static str, f64, Option<i64>)],
    out: &mut Vec<SimCase>,
) {
    let unit_index = |name: &str| units.iter().position(|u| u.0 == name).unwrap_or(0);
    let mut rng = stream(seed, 2);
    for stress in [false, true] {
        let part: Vec<usize> = (0..out.len())
            .filter(|&i| out[i].stress == stress)
            .collect();
        let easy: Vec<usize> = part.iter().copied().filter(|&i| out[i].easy).collect();
        let add = |cases: Vec<usize>, carriers: Vec<usize>, out: &mut Vec<SimCase>| {
            for c in cases {
                out[c].facts.push(Fact {
                    carriers: carriers.clone(),
                });
            }
        };
        add(
            pick(&mut rng, &part, 0.30, true),
            vec![unit_index("system")],
            out,
        );
        for ex in LOAD_BEARING {
            add(
                pick(&mut rng, &easy, 0.009, true),
                vec![unit_index(ex)],
                out,
            );
        }
        let style: Vec<usize> = (1..=12)
            .map(|i| format!("few_shot/{i:02}"))
            .filter(|u| !LOAD_BEARING.contains(&u.as_str()))
            .map(|u| unit_index(&u))
            .collect();
        add(pick(&mut rng, &easy, 0.002, true), style, out);
        let window: Vec<usize> = easy
            .iter()
            .copied()
            .filter(|&i| out[i].slice == "refunds/out-of-window")
            .collect();
        add(
            pick(&mut rng, &window, 0.45, true),
            vec![
                unit_index(WINDOW_EXAMPLES[0]),
                unit_index(WINDOW_EXAMPLES[1]),
                unit_index("passages/rank3"),
            ],
            out,
        );
        for (ranks, share) in [(1..=1, 0.30), (2..=2, 0.20), (3..=5, 0.05)] {
            let at: Vec<usize> = part
                .iter()
                .copied()
                .filter(|&i| out[i].gold_rank.is_some_and(|g| ranks.contains(&g)))
                .collect();
            for c in pick(&mut rng, &at, share, true) {
                let g = out[c].gold_rank.unwrap_or(1);
                let carrier = unit_index(&format!("passages/rank{g}"));
                out[c].facts.push(Fact {
                    carriers: vec![carrier],
                });
            }
        }
        let multi: Vec<usize> = easy
            .iter()
            .copied()
            .filter(|&i| out[i].turns == "multi")
            .collect();
        add(
            pick(&mut rng, &multi, 0.07, true),
            vec![unit_index("conversation")],
            out,
        );
    }
}

/// Log-odds of a case with the units in `removed` (a mask over [`units`]) taken out.
pub fn log_odds(case: &SimCase, removed: &[bool]) -> f64 {
    let lost = case
        .facts
        .iter()
        .filter(|f| f.carriers.iter().all(|&u| removed[u]))
        .count();
    case.theta - PENALTY * lost as f64
}

/// One judged repeat: three votes at the given log-odds plus sampling noise; the share that pass.
pub fn judge(rng: &mut ChaCha8Rng, log_odds: f64) -> f64 {
    let p = sigmoid(log_odds + 0.4 * normal(rng));
    let votes = (0..3).filter(|_| rng.random::<f64>() < p).count();
    votes as f64 / 3.0
}
