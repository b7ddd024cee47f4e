//! Synthetic live traffic: a shadow-traffic file (production, a second production run called
//! `replay`, and the candidate prompt without the conversation tail) and a context log of agent
//! calls.
//!
//! **Shadow.** Requests follow the production mix (23% multi-turn). The replay differs from
//! production with probability 2% (sampling noise: the floor Diffy calls "noise between two
//! primaries"); the candidate differs with the same 2% plus 10% on multi-turn requests, where it
//! lost the conversation it needed. Scores are the judge's 0/1, and tokens drop by the tail.
//!
//! **Context log.** Each agent request runs 1 + Geometric(0.3) steps (at most 12). Every call
//! carries the system prompt and the task (mandatory), 3–6 retrieved documents (re-retrieved
//! documents keep their content hash, so deduplication matters), a conversation history that
//! grows 350 tokens a step, and from step 2 on tool output with a heavy (log-normal) tail. The
//! model limit is 32,000 tokens with 2,000 expected output tokens (6,000 on patch-writing steps).

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::model::{MULTI_TURN, SLICES, normal, stream};

/// Rows of the shadow table, column by column.
#[derive(Debug, Default)]
pub struct ShadowRows {
    /// Request id.
    pub request_id: Vec<String>,
    /// `production`, `replay` or `candidate`.
    pub variant: Vec<&'static str>,
    /// Answer text (a short digest standing for the answer).
    pub answer: Vec<String>,
    /// Judge score (0/1).
    pub score: Vec<f64>,
    /// Prompt tokens.
    pub tokens_in: Vec<i64>,
    /// Turn type stratum.
    pub turns: Vec<&'static str>,
    /// Slice stratum.
    pub slice: Vec<&'static str>,
}

fn pick_slice(rng: &mut ChaCha8Rng) -> &'static str {
    // Production slice shares differ a little from the set's: more out-of-window refunds.
    const PRODUCTION: [f64; 5] = [0.20, 0.16, 0.22, 0.24, 0.18];
    let u: f64 = rng.random();
    let mut acc = 0.0;
    for (i, p) in PRODUCTION.iter().enumerate() {
        acc += p;
        if u < acc {
            return SLICES[i].0;
        }
    }
    SLICES[SLICES.len() - 1].0
}

/// Production slice shares, as written to `mix-slice`.
pub const PRODUCTION_SLICE_SHARES: [f64; 5] = [0.20, 0.16, 0.22, 0.24, 0.18];

/// Generates the shadow-traffic rows for `n` requests.
pub fn shadow(seed: u64, n: usize) -> ShadowRows {
    ShadowStream::new(seed).take(n)
}

/// Shadow traffic generated a chunk of requests at a time (the same rows as [`shadow`], in the
/// same order), for logs too large to hold whole.
pub struct ShadowStream {
    rng: ChaCha8Rng,
    next: usize,
}

impl ShadowStream {
    /// The stream of seed `seed`, from its first request.
    pub fn new(seed: u64) -> ShadowStream {
        ShadowStream {
            rng: stream(seed, 10),
            next: 0,
        }
    }

    /// The rows of the next `n` requests.
    pub fn take(&mut self, n: usize) -> ShadowRows {
        let first = self.next;
        self.next += n;
        shadow_rows(&mut self.rng, first, n)
    }
}

fn shadow_rows(rng: &mut ChaCha8Rng, first: usize, n: usize) -> ShadowRows {
    let mut rows = ShadowRows::default();
    for i in first..first + n {
        let id = format!("r{:06}", i + 1);
        let multi = rng.random::<f64>() < MULTI_TURN.2;
        let turns = if multi { "multi" } else { "single" };
        let slice = pick_slice(rng);
        let base_answer = rng.random::<u32>();
        let pass = rng.random::<f64>() < 0.88;
        let tail = (900.0 + 250.0 * normal(rng)).clamp(150.0, 1800.0);
        let prod_tokens = (13100.0 + 1200.0 * normal(rng)).max(4000.0) + tail;
        let replay_changed = rng.random::<f64>() < 0.02;
        let candidate_changed = rng.random::<f64>() < 0.02 || (multi && rng.random::<f64>() < 0.10);
        let candidate_pass = if candidate_changed && multi {
            rng.random::<f64>() < 0.6
        } else {
            pass
        };
        let variants: [(&'static str, bool, bool, f64); 3] = [
            ("production", false, pass, prod_tokens),
            ("replay", replay_changed, pass, prod_tokens),
            (
                "candidate",
                candidate_changed,
                candidate_pass,
                prod_tokens - tail,
            ),
        ];
        for (variant, changed, pass, tokens) in variants {
            let answer = if changed {
                base_answer.wrapping_add(1 + rng.random_range(0..1000u32))
            } else {
                base_answer
            };
            rows.request_id.push(id.clone());
            rows.variant.push(variant);
            rows.answer.push(format!("answer-{answer:08x}"));
            rows.score.push(if pass { 1.0 } else { 0.0 });
            rows.tokens_in.push(tokens.round() as i64);
            rows.turns.push(turns);
            rows.slice.push(slice);
        }
    }
    rows
}

/// Rows of the context log, column by column.
#[derive(Debug, Default)]
pub struct ContextRows {
    /// Request id.
    pub request_id: Vec<String>,
    /// Agent step (call number within the request, from 1).
    pub step: Vec<i64>,
    /// Source of the item.
    pub source: Vec<&'static str>,
    /// Tokens of the item.
    pub tokens: Vec<i64>,
    /// Whether the item is mandatory.
    pub mandatory: Vec<bool>,
    /// Priority (lower is more important).
    pub priority: Vec<i64>,
    /// Relevance score in [0, 1].
    pub relevance: Vec<f64>,
    /// Content hash (equal for the same content).
    pub content_hash: Vec<String>,
    /// Model context limit.
    pub model_limit: Vec<i64>,
    /// Expected output tokens of the call.
    pub expected_output: Vec<i64>,
}

impl ContextRows {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        request: &str,
        step: i64,
        source: &'static str,
        tokens: f64,
        mandatory: bool,
        priority: i64,
        relevance: f64,
        hash: String,
        expected_output: i64,
    ) {
        self.request_id.push(request.to_string());
        self.step.push(step);
        self.source.push(source);
        self.tokens.push(tokens.max(1.0).round() as i64);
        self.mandatory.push(mandatory);
        self.priority.push(priority);
        self.relevance
            .push((relevance.clamp(0.0, 1.0) * 1000.0).round() / 1000.0);
        self.content_hash.push(hash);
        self.model_limit.push(32_000);
        self.expected_output.push(expected_output);
    }
}

/// Generates the context log for `n` agent requests.
pub fn context_log(seed: u64, n: usize) -> ContextRows {
    ContextStream::new(seed).take(n)
}

/// The context log generated a chunk of requests at a time (the same rows as [`context_log`], in
/// the same order), for logs too large to hold whole.
pub struct ContextStream {
    rng: ChaCha8Rng,
    next: usize,
}

impl ContextStream {
    /// The stream of seed `seed`, from its first request.
    pub fn new(seed: u64) -> ContextStream {
        ContextStream {
            rng: stream(seed, 11),
            next: 0,
        }
    }

    /// The rows of the next `n` agent requests.
    pub fn take(&mut self, n: usize) -> ContextRows {
        let first = self.next;
        self.next += n;
        context_rows(&mut self.rng, first, n)
    }
}

fn context_rows(rng: &mut ChaCha8Rng, first: usize, n: usize) -> ContextRows {
    let mut rows = ContextRows::default();
    for i in first..first + n {
        let id = format!("a{:05}", i + 1);
        let mut steps = 1;
        while steps < 12 && rng.random::<f64>() > 0.3 {
            steps += 1;
        }
        let task_tokens = (600.0 + 200.0 * normal(rng)).max(100.0);
        let docs: Vec<(u32, f64)> = (0..8)
            .map(|_| {
                (
                    rng.random::<u32>(),
                    (1500.0 + 400.0 * normal(rng)).max(200.0),
                )
            })
            .collect();
        for step in 1..=steps {
            let expected = if rng.random::<f64>() < 0.15 {
                6000
            } else {
                2000
            };
            rows.push(
                &id,
                step,
                "system",
                900.0,
                true,
                0,
                1.0,
                "system-v3".into(),
                expected,
            );
            rows.push(
                &id,
                step,
                "task",
                task_tokens,
                true,
                0,
                1.0,
                format!("task-{id}"),
                expected,
            );
            let n_docs = 3 + rng.random_range(0..4usize);
            for _ in 0..n_docs {
                // Half the time a document retrieved at an earlier step comes back.
                let (hash, tokens) = docs[rng.random_range(0..docs.len())];
                let relevance = 0.3 + 0.6 * rng.random::<f64>();
                rows.push(
                    &id,
                    step,
                    "retrieval",
                    tokens,
                    false,
                    2,
                    relevance,
                    format!("doc-{hash:08x}"),
                    expected,
                );
            }
            if step > 1 {
                rows.push(
                    &id,
                    step,
                    "conversation",
                    350.0 * (step - 1) as f64,
                    false,
                    1,
                    0.8,
                    format!("conv-{id}-{step}"),
                    expected,
                );
                let tool = (7.3 + 0.9 * normal(rng)).exp();
                let relevance = 0.2 + 0.5 * rng.random::<f64>();
                rows.push(
                    &id,
                    step,
                    "tool_output",
                    tool,
                    false,
                    3,
                    relevance,
                    format!("tool-{id}-{step}"),
                    expected,
                );
            }
        }
    }
    rows
}
