//! How many input tokens a sample sent: each model's cache rule (whether `input_tokens` already
//! counts the cache reads), and the summary's sentence saying how they were counted.

use std::collections::BTreeMap;

use super::Usage;

/// How a model's `input_tokens` relate to its cache reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum CacheRule {
    /// input_tokens excludes cache reads: add them.
    Excludes,
    /// input_tokens already includes cache reads (OpenAI-family providers before Inspect
    /// 0.3.184, Google before 0.3.208): do not add them again.
    Includes,
}

/// Inspect providers built on OpenAI's chat API, whose `input_tokens` included cache reads until
/// Inspect 0.3.184 (PR #3341, February 2026).
pub(super) const OPENAI_FAMILY: &[&str] = &[
    "openai",
    "openai-api",
    "openrouter",
    "vllm",
    "sglang",
    "grok",
    "together",
    "fireworks",
    "sambanova",
    "ollama",
    "llama-cpp-python",
    "perplexity",
];

/// An Inspect version as (major, minor, patch, release), where a pre-release (`0.3.184.dev3`)
/// sorts before its release; `None` when it is not one.
pub(super) fn version_key(v: &str) -> Option<(u64, u64, u64, bool)> {
    let mut parts = v.split(['.', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch_text = parts.next()?;
    let digits: String = patch_text
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let patch = digits.parse().ok()?;
    let release = digits.len() == patch_text.len()
        && parts
            .next()
            .is_none_or(|p| !p.starts_with("dev") && !p.starts_with("rc"));
    Some((major, minor, patch, release))
}

/// The rule for one model's usage, and whether the log's own totals decided it: when
/// `total_tokens` equals input + output (with cache reads logged), input includes the reads;
/// when it equals input + reads + writes + output, it excludes them. Otherwise the provider and
/// the Inspect version decide, as Inspect's own source did.
pub(super) fn cache_rule(model: &str, u: &Usage, version: Option<&str>) -> (CacheRule, bool) {
    let read = u.input_tokens_cache_read.unwrap_or(0);
    if read > 0
        && let (Some(i), Some(o), Some(t)) = (u.input_tokens, u.output_tokens, u.total_tokens)
    {
        let write = u.input_tokens_cache_write.unwrap_or(0);
        if i.checked_add(o).and_then(|x| x.checked_add(write)) == Some(t) {
            return (CacheRule::Includes, true);
        }
        if i.checked_add(read)
            .and_then(|x| x.checked_add(write))
            .and_then(|x| x.checked_add(o))
            == Some(t)
        {
            return (CacheRule::Excludes, true);
        }
    }
    let provider = model.split('/').next().unwrap_or_default();
    let v = version.and_then(version_key);
    let before = |patch: u64| {
        v.is_some_and(|(a, b, c, release)| {
            (a, b, c) < (0, 3, patch) || ((a, b, c) == (0, 3, patch) && !release)
        })
    };
    let includes =
        (OPENAI_FAMILY.contains(&provider) && before(184)) || (provider == "google" && before(208));
    (
        if includes {
            CacheRule::Includes
        } else {
            CacheRule::Excludes
        },
        false,
    )
}

/// How a log's input tokens were counted, tallied over samples and models.
#[derive(Debug, Default)]
pub(super) struct TokenTally {
    /// (rule, decided by the totals) → model entries counted that way.
    pub(super) rules: BTreeMap<(CacheRule, bool), usize>,
}

/// Σ over models of the input tokens the model was sent: input_tokens + cache writes, plus cache
/// reads unless input_tokens already includes them ([`cache_rule`]), with checked arithmetic:
/// `None` when a count is negative or the sum overflows.
pub(super) fn input_tokens(
    usage: &BTreeMap<String, Usage>,
    version: Option<&str>,
    tally: &mut TokenTally,
) -> Option<i64> {
    let mut total = 0i64;
    for (model, m) in usage {
        let (rule, by_totals) = cache_rule(model, m, version);
        if m.input_tokens_cache_read.is_some_and(|r| r > 0) {
            *tally.rules.entry((rule, by_totals)).or_insert(0) += 1;
        }
        let read = match rule {
            CacheRule::Excludes => m.input_tokens_cache_read,
            CacheRule::Includes => Some(0),
        };
        for n in [m.input_tokens, read, m.input_tokens_cache_write] {
            let n = n.unwrap_or(0);
            if n < 0 {
                return None;
            }
            total = total.checked_add(n)?;
        }
    }
    Some(total)
}

/// The import summary's sentence on how tokens_in was counted.
pub(super) fn tokens_sentence(
    cache_tokens: bool,
    tally: &TokenTally,
    usage_files: &[String],
) -> String {
    let mut s = if cache_tokens {
        "tokens_in = Σ over models of the input tokens sent: input_tokens + input_tokens_cache_write, plus input_tokens_cache_read where input_tokens excludes the reads".to_string()
    } else {
        "tokens_in = Σ over models of input_tokens (no cache reads or writes were logged)"
            .to_string()
    };
    if !tally.rules.is_empty() {
        let parts: Vec<String> = tally
            .rules
            .iter()
            .map(|((rule, by_totals), n)| {
                format!(
                    "{n} model usage(s) {} cache reads, {}",
                    match rule {
                        CacheRule::Includes => "whose input_tokens already include",
                        CacheRule::Excludes => "plus their",
                    },
                    if *by_totals {
                        "as their total_tokens show"
                    } else {
                        "by the provider and Inspect version (OpenAI-family input included cache reads before 0.3.184, Google before 0.3.208)"
                    }
                )
            })
            .collect();
        s.push_str(&format!(" ({})", parts.join("; ")));
    }
    s.push_str(&if usage_files.is_empty() {
        "; from each sample's model_usage".to_string()
    } else {
        format!(
            "; from each sample's model_usage, read from the sample files for {} (their summaries carry no usage)",
            usage_files.join(", ")
        )
    });
    s
}
