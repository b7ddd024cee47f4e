//! One function per table of the simulated experiment: each builds its frame from the cases,
//! units and arms (the traffic logs are streamed to their file in chunks instead).

use std::path::Path;

use polars::prelude::*;

use super::arms::{SimArm, removal_mask};
use super::model::{self, SimCase};
use super::{SimConfig, frame, traffic};
use crate::error::Result;
use crate::io::write::{self, list_column};

/// A unit of the simulated prompt: name, block, mean tokens, and its retrieval rank (passages).
pub(super) type Unit = (String, &'static str, f64, Option<i64>);

/// `cases`: id, slice, turns, gold_rank, stress and cluster per case.
pub(super) fn cases(cases: &[SimCase]) -> Result<DataFrame> {
    frame(
        vec![
            Column::new(
                "case_id".into(),
                cases.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            ),
            Column::new(
                "slice".into(),
                cases.iter().map(|c| c.slice).collect::<Vec<_>>(),
            ),
            Column::new(
                "turns".into(),
                cases.iter().map(|c| c.turns).collect::<Vec<_>>(),
            ),
            Column::new(
                "gold_rank".into(),
                cases.iter().map(|c| c.gold_rank).collect::<Vec<_>>(),
            ),
            Column::new(
                "stress".into(),
                cases.iter().map(|c| c.stress).collect::<Vec<_>>(),
            ),
            Column::new(
                "cluster".into(),
                cases.iter().map(|c| c.cluster.as_str()).collect::<Vec<_>>(),
            ),
        ],
        "cases",
    )
}

/// `units`: each unit's block, rank and mean tokens over the main set (to 0.1 token).
pub(super) fn units(units: &[Unit], cases: &[SimCase]) -> Result<DataFrame> {
    let main: Vec<&SimCase> = cases.iter().filter(|c| !c.stress).collect();
    let unit_means: Vec<f64> = (0..units.len())
        .map(|k| {
            let m = crate::stats::moments::sum(main.iter().map(|c| c.unit_tokens[k]))
                / main.len() as f64;
            (m * 10.0).round() / 10.0
        })
        .collect();
    frame(
        vec![
            Column::new(
                "unit".into(),
                units.iter().map(|u| u.0.as_str()).collect::<Vec<_>>(),
            ),
            Column::new(
                "block".into(),
                units.iter().map(|u| u.1).collect::<Vec<_>>(),
            ),
            Column::new("tokens".into(), unit_means),
            Column::new("rank".into(), units.iter().map(|u| u.3).collect::<Vec<_>>()),
        ],
        "units",
    )
}

/// `case_units`: the tokens of every unit in every case.
pub(super) fn case_units(unit_names: &[String], cases: &[SimCase]) -> Result<DataFrame> {
    let mut cu_case = Vec::new();
    let mut cu_unit = Vec::new();
    let mut cu_tokens = Vec::new();
    for c in cases {
        for (k, name) in unit_names.iter().enumerate() {
            cu_case.push(c.id.as_str());
            cu_unit.push(name.as_str());
            cu_tokens.push(c.unit_tokens[k] as i64);
        }
    }
    frame(
        vec![
            Column::new("case_id".into(), cu_case),
            Column::new("unit".into(), cu_unit),
            Column::new("tokens".into(), cu_tokens),
        ],
        "case_units",
    )
}

/// `arms`: what each arm removes, its components, budget and selector (and its design label
/// when any arm has one).
pub(super) fn arms(arms: &[SimArm]) -> Result<DataFrame> {
    frame(
        vec![
            Column::new(
                "arm".into(),
                arms.iter().map(|a| a.label.as_str()).collect::<Vec<_>>(),
            ),
            list_column(
                "removed",
                &arms.iter().map(|a| a.removed.clone()).collect::<Vec<_>>(),
            ),
            list_column(
                "components",
                &arms
                    .iter()
                    .map(|a| a.components.clone())
                    .collect::<Vec<_>>(),
            ),
            Column::new(
                "budget_ratio".into(),
                arms.iter().map(|a| a.budget_ratio).collect::<Vec<_>>(),
            ),
            Column::new(
                "selector".into(),
                arms.iter().map(|a| a.selector).collect::<Vec<_>>(),
            ),
            Column::new(
                "selector_threshold".into(),
                arms.iter()
                    .map(|a| a.selector_threshold)
                    .collect::<Vec<_>>(),
            ),
        ]
        .into_iter()
        .chain(arms.iter().any(|a| a.design.is_some()).then(|| {
            Column::new(
                "design".into(),
                arms.iter().map(|a| a.design.clone()).collect::<Vec<_>>(),
            )
        }))
        .collect(),
        "arms",
    )
}

/// `results`: every (case, arm, repeat) scored by the model. Each arm's removal draws from
/// stream 3 and the judge from stream 4, in arm, case, repeat order, so the same seed gives the
/// same scores.
pub(super) fn results(
    cfg: &SimConfig,
    arms: &[SimArm],
    cases: &[SimCase],
    units: &[Unit],
) -> Result<DataFrame> {
    let mut rng_sel = model::stream(cfg.seed, 3);
    let mut rng_judge = model::stream(cfg.seed, 4);
    let rows = cases.len() * arms.len() * cfg.repeats as usize;
    let mut r_case = Vec::with_capacity(rows);
    let mut r_arm = Vec::with_capacity(rows);
    let mut r_repeat = Vec::with_capacity(rows);
    let mut r_score = Vec::with_capacity(rows);
    let mut r_tokens = Vec::with_capacity(rows);
    for arm in arms {
        for c in cases {
            let mask = removal_mask(arm, c, units, &mut rng_sel);
            let kept: f64 = c
                .unit_tokens
                .iter()
                .zip(&mask)
                .filter(|(_, m)| !**m)
                .map(|(t, _)| t)
                .sum();
            let log_odds = model::log_odds(c, &mask);
            for r in 0..cfg.repeats {
                r_case.push(c.id.as_str());
                r_arm.push(arm.label.as_str());
                r_repeat.push(r as i64);
                r_score.push(model::judge(&mut rng_judge, log_odds));
                r_tokens.push(kept.round() as i64);
            }
        }
    }
    frame(
        vec![
            Column::new("case_id".into(), r_case),
            Column::new("arm".into(), r_arm),
            Column::new("repeat".into(), r_repeat),
            Column::new("score".into(), r_score),
            Column::new("tokens_in".into(), r_tokens),
        ],
        "results",
    )
}

/// A customer's question and the right and wrong answers, by slice (the synthetic samples' text).
fn sample_text(slice: &str) -> (&'static str, &'static str, &'static str) {
    match slice {
        "billing" => (
            "I was charged twice for my March invoice. Can you refund the duplicate?",
            "I can see two charges of $49.00 on March 3. I've refunded the duplicate; it reaches your card in 3-5 business days.",
            "Invoices are issued monthly. You can download them from Settings > Billing.",
        ),
        "shipping" => (
            "My order #4417 says delivered but nothing arrived. What now?",
            "I've opened a carrier trace for #4417 and sent a replacement by express; you'll get tracking by email today.",
            "Orders usually arrive within 5-7 business days. Please wait a little longer.",
        ),
        "account" => (
            "I can't log in since I changed my email. How do I get back in?",
            "I've linked your new address to the account and sent a reset link there; it expires in 30 minutes.",
            "Please use the \"Forgot password\" link on the sign-in page.",
        ),
        s if s.contains("out-of-window") => (
            "I bought these headphones 45 days ago and they broke. Can I return them?",
            "The 30-day return window has passed, but the 1-year warranty covers this: I've started a warranty replacement.",
            "Sure, I've started a refund to your original payment method.",
        ),
        _ => (
            "I want to return shoes I bought last week. They don't fit.",
            "They're within the 30-day window: here's a prepaid label, and the refund follows once they're scanned.",
            "Returns aren't possible for worn items, sorry.",
        ),
    }
}

/// Cases with samples: the first this many of the cases table (every case of the demo), so that
/// a benchmark-sized simulation does not write millions of sample rows.
pub(super) const SAMPLE_CASES: usize = 600;

/// `samples`: the first repeat of each of the first [`SAMPLE_CASES`] cases in every arm, with a
/// synthetic question, an answer that is right when the judged score passes (≥ 0.5) and a
/// plausible wrong one otherwise, and where it came from. Small and deterministic, so that the
/// demo's drill-down shows text.
pub(super) fn samples(results: &DataFrame, cases: &[SimCase], seed: u64) -> Result<DataFrame> {
    let err = |e| crate::error::Error::Polars {
        context: "building the simulated samples".into(),
        source: Box::new(e),
    };
    let sampled: std::collections::HashSet<&str> = cases
        .iter()
        .take(SAMPLE_CASES)
        .map(|c| c.id.as_str())
        .collect();
    let first = results
        .clone()
        .lazy()
        .filter(col("repeat").eq(lit(0i64)))
        .collect()
        .map_err(err)?;
    let keep: BooleanChunked = first
        .column("case_id")
        .and_then(|c| c.str().cloned())
        .map_err(err)?
        .iter()
        .map(|id| id.is_some_and(|id| sampled.contains(id)))
        .collect();
    let first = first.filter(&keep).map_err(err)?;
    let ids = first
        .column("case_id")
        .and_then(|c| c.str().cloned())
        .map_err(err)?;
    let arms = first
        .column("arm")
        .and_then(|c| c.str().cloned())
        .map_err(err)?;
    let scores = first
        .column("score")
        .and_then(|c| c.f64().cloned())
        .map_err(err)?;
    let slice: std::collections::HashMap<&str, &str> =
        cases.iter().map(|c| (c.id.as_str(), c.slice)).collect();
    let n = first.height();
    let (mut input, mut output, mut source) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for i in 0..n {
        let (id, arm) = (ids.get(i).unwrap_or(""), arms.get(i).unwrap_or(""));
        let (question, right, wrong) = sample_text(slice.get(id).copied().unwrap_or(""));
        input.push(format!("[{id}] {question}"));
        output.push(
            if scores.get(i).unwrap_or(0.0) >= 0.5 {
                right
            } else {
                wrong
            }
            .to_string(),
        );
        source.push(format!(
            "ablate simulate --seed {seed}: {id} / {arm} / repeat 0"
        ));
    }
    frame(
        vec![
            first.column("case_id").map_err(err)?.clone(),
            first.column("arm").map_err(err)?.clone(),
            first.column("repeat").map_err(err)?.clone(),
            Column::new("input".into(), input),
            Column::new("output".into(), output),
            Column::new("source".into(), source),
        ],
        "samples",
    )
}

/// The production mixes: `mix` (by turns) and `mix-slice` (by slice).
pub(super) fn mixes() -> Result<(DataFrame, DataFrame)> {
    let (_, _, multi_prod) = model::MULTI_TURN;
    let by_turns = frame(
        vec![
            Column::new("turns".into(), ["single", "multi"]),
            Column::new("share".into(), [1.0 - multi_prod, multi_prod]),
        ],
        "mix",
    )?;
    let by_slice = frame(
        vec![
            Column::new(
                "slice".into(),
                model::SLICES.iter().map(|s| s.0).collect::<Vec<_>>(),
            ),
            Column::new("share".into(), traffic::PRODUCTION_SLICE_SHARES.to_vec()),
        ],
        "mix-slice",
    )?;
    Ok((by_turns, by_slice))
}

/// `passages`: each case's retrieved passages with their rank, tokens, reranker score and
/// whether it is the gold one.
pub(super) fn passages(units: &[Unit], cases: &[SimCase]) -> Result<DataFrame> {
    let mut p_case = Vec::new();
    let mut p_rank = Vec::new();
    let mut p_tokens = Vec::new();
    let mut p_score = Vec::new();
    let mut p_gold = Vec::new();
    for c in cases {
        for (k, u) in units.iter().enumerate() {
            if let Some(r) = u.3 {
                p_case.push(c.id.as_str());
                p_rank.push(r);
                p_tokens.push(c.unit_tokens[k] as i64);
                p_score.push(c.reranker[(r - 1) as usize]);
                p_gold.push(c.gold_rank == Some(r));
            }
        }
    }
    frame(
        vec![
            Column::new("case_id".into(), p_case),
            Column::new("rank".into(), p_rank),
            Column::new("tokens".into(), p_tokens),
            Column::new("score".into(), p_score),
            Column::new("gold".into(), p_gold),
        ],
        "passages",
    )
}

/// Streams `requests` shadow requests to `path`, 100,000 requests (300,000 rows, one Parquet
/// row group) at a time, so that a 100M-row log needs no more memory than a small one.
pub(super) fn write_shadow(path: &Path, seed: u64, requests: usize) -> Result<()> {
    let mut stream = traffic::ShadowStream::new(seed);
    stream_chunks(path, requests, 100_000, |n| {
        let s = stream.take(n);
        frame(
            vec![
                Column::new("request_id".into(), s.request_id),
                Column::new("variant".into(), s.variant),
                Column::new("answer".into(), s.answer),
                Column::new("score".into(), s.score),
                Column::new("tokens_in".into(), s.tokens_in),
                Column::new("turns".into(), s.turns),
                Column::new("slice".into(), s.slice),
            ],
            "shadow",
        )
    })
}

/// Streams `requests` requests of the context log to `path`, 10,000 at a time.
pub(super) fn write_context(path: &Path, seed: u64, requests: usize) -> Result<()> {
    let mut stream = traffic::ContextStream::new(seed);
    stream_chunks(path, requests, 10_000, |n| {
        let c = stream.take(n);
        frame(
            vec![
                Column::new("request_id".into(), c.request_id),
                Column::new("step".into(), c.step),
                Column::new("source".into(), c.source),
                Column::new("tokens".into(), c.tokens),
                Column::new("mandatory".into(), c.mandatory),
                Column::new("priority".into(), c.priority),
                Column::new("relevance".into(), c.relevance),
                Column::new("content_hash".into(), c.content_hash),
                Column::new("model_limit".into(), c.model_limit),
                Column::new("expected_output".into(), c.expected_output),
            ],
            "context_log",
        )
    })
}

/// Writes `total` requests to `path` as Parquet, `chunk` at a time: `take(n)` gives the frame of
/// the next n requests, one row group each.
fn stream_chunks(
    path: &Path,
    total: usize,
    chunk: usize,
    mut take: impl FnMut(usize) -> Result<DataFrame>,
) -> Result<()> {
    let mut left = total;
    write::parquet_chunks(path, || {
        if left == 0 {
            return Ok(None);
        }
        let n = left.min(chunk);
        left -= n;
        take(n).map(Some)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_table_has_its_rows() {
        let units = model::units();
        let names: Vec<String> = units.iter().map(|u| u.0.clone()).collect();
        let cases = model::cases(7, 20, 4);
        assert_eq!(super::cases(&cases).unwrap().height(), 24);
        assert_eq!(super::units(&units, &cases).unwrap().height(), units.len());
        assert_eq!(
            case_units(&names, &cases).unwrap().height(),
            24 * units.len()
        );
        let ranked = units.iter().filter(|u| u.3.is_some()).count();
        assert_eq!(passages(&units, &cases).unwrap().height(), 24 * ranked);
        let (by_turns, by_slice) = mixes().unwrap();
        let total = |df: &DataFrame| df.column("share").unwrap().f64().unwrap().sum().unwrap();
        assert!((total(&by_turns) - 1.0).abs() < 1e-12);
        assert!((total(&by_slice) - 1.0).abs() < 1e-9);
    }
}
