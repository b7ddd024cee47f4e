//! One module per verb. Each exposes `run(&inputs, [upstream outputs,] &options)` from inputs that
//! [`crate::io`] loaded or opened to a serialisable output struct; none of them opens a file or
//! prints (a progress bar on stderr is the one side channel), and none calls another's `run`:
//! [`all`] wires them.

// Errors carry the file, column, row, value and a fix as owned text (see ablate-core).
#![allow(clippy::result_large_err)]

// The layers below, under the names the modules use: the data types (`io`, loaded elsewhere),
// errors, warnings, text and the numerics. This crate has no Polars and reads no file.
use crate as analysis;
use ablate_core::data as io;
use ablate_core::{error, text, warning};
use ablate_stats as stats;

pub mod all;
pub mod check;
pub mod context;
pub mod cover;
pub mod curve;
pub mod decision;
pub mod design;
pub mod drill;
pub mod interactions;
pub mod interval;
pub mod need;
pub mod paired;
pub mod plan;
pub mod record;
pub mod reweight;
pub mod selector;
pub mod sequential;
pub mod shadow;
pub mod shapley;
pub mod stress;
pub mod sweep;
pub mod variance;
pub mod vocab;

use indicatif::{ProgressBar, ProgressStyle};

/// Bootstrap resamples when none are asked for (`--bootstrap`).
pub const DEFAULT_BOOTSTRAP: usize = 10_000;

/// Confidence level when none is asked for (`--confidence`).
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// Settings shared by the analyses.
#[derive(Debug, Clone)]
pub struct Config {
    /// Seed of the bootstrap resamples.
    pub seed: u64,
    /// Bootstrap resamples (0 = normal-approximation intervals).
    pub bootstrap: usize,
    /// Confidence level of intervals, in (0, 1).
    pub confidence: f64,
    /// Whether long work may show a progress bar (it only appears when stderr is a terminal).
    pub progress: bool,
    /// Memory budget in bytes for streaming production logs (shadow, context).
    pub memory: u64,
    /// Judge each arm at its own confidence level (`--per-arm`) instead of family-wise across
    /// the arms compared.
    pub per_arm: bool,
    /// The guarantee the verdicts rest on (`--guarantee`); `None`: the manifest's.
    pub guarantee: Option<crate::io::manifest::Guarantee>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 0,
            bootstrap: DEFAULT_BOOTSTRAP,
            confidence: DEFAULT_CONFIDENCE,
            progress: false,
            memory: shadow::DEFAULT_MEMORY,
            per_arm: false,
            guarantee: None,
        }
    }
}

/// Resamples held beyond each end of a percentile interval, at the least.
pub const MIN_TAIL_RESAMPLES: f64 = 5.0;

/// The fewest bootstrap resamples that give a percentile interval at `confidence`: at least
/// [`MIN_TAIL_RESAMPLES`] resamples beyond each end, so B ≥ 10/(1 − confidence) (200 at 95%,
/// 1,000 at 99%). Fewer give intervals that can exclude their own estimate and verdicts that
/// read "confident" by chance.
pub fn min_bootstrap(confidence: f64) -> usize {
    (2.0 * MIN_TAIL_RESAMPLES / (1.0 - confidence)).ceil() as usize
}

impl Config {
    /// A progress bar of `len` steps on stderr, or `None` when progress is off. indicatif hides
    /// it when stderr is not a terminal.
    pub fn progress_bar(&self, len: u64, what: &str) -> Option<ProgressBar> {
        if !self.progress {
            return None;
        }
        let bar = ProgressBar::new(len);
        if let Ok(style) = ProgressStyle::with_template("{msg} {bar:30} {pos}/{len} ({eta})") {
            bar.set_style(style);
        }
        bar.set_message(what.to_string());
        Some(bar)
    }

    /// The seeded joint bootstrap of `sums` (`self.bootstrap` resamples, `self.seed`), with a
    /// progress bar while it runs: the one place every verb that resamples calls it from.
    pub fn resample(
        &self,
        sums: &crate::stats::bootstrap::RatioSums,
    ) -> crate::stats::bootstrap::Draws {
        let bar = self.progress_bar(self.bootstrap as u64, "bootstrap");
        let draws = crate::stats::bootstrap::run(sums, self.bootstrap, self.seed, &|n| {
            if let Some(bar) = &bar {
                bar.inc(n);
            }
        });
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        draws
    }
}
