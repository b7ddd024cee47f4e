//! `ablate report`: every analysis as a report an analyst can put in front of a director.
//!
//! Written atomically (a temporary folder renamed at the end): `index.html` (self-contained,
//! inline SVG, opens offline), `report.md`, `charts/*.svg` and `charts/*.png`, `record.json`,
//! `analysis.json` (every verb's JSON) and `tables/*.csv`. Every chart has its numbers in a table
//! beside it. This module only maps analysis outputs to charts and tables; it computes nothing.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use indicatif::ProgressBar;
use polars::prelude::*;
use serde::Serialize;

use crate::analysis::all::Analyses;
use crate::analysis::vocab::Verdict;
use crate::error::{Error, Result};
use crate::io::output::AtomicDir;
use crate::report::charts::{BLUE, Bar, Chart, GREEN, GREY, Line, ORANGE};
use crate::report::escape::{self, Prose};
use crate::report::text::num;

/// The page's style sheet (inline; allowed by its hash in the Content-Security-Policy).
const CSS: &str = "body{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1600px}section{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start;border-top:1px solid #ddd;padding-top:12px}section>div{flex:1 1 700px;overflow-x:auto}table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}td:first-child,th:first-child{text-align:left}";

/// A `<meta>` Content-Security-Policy for the report: nothing is fetched from anywhere (no network,
/// no other file), no script runs, and the only style is the page's own, allowed by its SHA-256.
/// Inline SVG needs no source. A report mailed around cannot run what a hostile name smuggles in.
fn content_security_policy() -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(CSS));
    format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'sha256-{hash}'; img-src data:; base-uri 'none'; form-action 'none'\">"
    )
}

/// A table of text cells.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Column names.
    pub headers: Vec<String>,
    /// Rows.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    fn markdown(&self) -> String {
        let row = |cells: &[String]| {
            cells
                .iter()
                .map(|c| escape::markdown(c))
                .collect::<Vec<_>>()
                .join(" | ")
        };
        let mut s = format!(
            "| {} |\n|{}\n",
            row(&self.headers),
            "---|".repeat(self.headers.len())
        );
        for r in &self.rows {
            let _ = writeln!(s, "| {} |", row(r));
        }
        s
    }

    fn html(&self) -> String {
        let esc = escape::html;
        let mut s = String::from("<table><thead><tr>");
        for h in &self.headers {
            let _ = write!(s, "<th>{}</th>", esc(h));
        }
        s.push_str("</tr></thead><tbody>");
        for r in &self.rows {
            s.push_str("<tr>");
            for c in r {
                let _ = write!(s, "<td>{}</td>", esc(c));
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table>");
        s
    }

    fn csv(&self, path: &Path) -> Result<()> {
        let columns: Vec<Column> = self
            .headers
            .iter()
            .enumerate()
            .map(|(i, h)| {
                Column::new(
                    h.as_str().into(),
                    self.rows
                        .iter()
                        .map(|r| r.get(i).cloned().unwrap_or_default())
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        let df = DataFrame::new(self.rows.len(), columns).map_err(|e| Error::Polars {
            context: format!("building {}", path.display()),
            source: e,
        })?;
        crate::io::write::csv(&df, path)
    }
}

/// One section of the report: a chart and its numbers.
struct Section {
    name: &'static str,
    title: String,
    note: String,
    chart: Chart,
    table: Table,
}

fn n(x: f64, digits: usize) -> String {
    num(Some(x), digits)
}

fn sections(a: &Analyses) -> Vec<Section> {
    let mut out = Vec::new();
    let s = &a.sweep;
    let mut t = Table::new(&[
        "arm",
        "tokens removed",
        "score",
        "drop",
        "ci_low",
        "ci_high",
        "verdict",
        "confidence",
        "lost",
        "churn",
    ]);
    for arm in &s.arms {
        t.rows.push(vec![
            arm.arm.clone(),
            num(arm.tokens_removed, 0),
            n(arm.score, 3),
            n(arm.drop, 4),
            num(arm.ci_low, 4),
            num(arm.ci_high, 4),
            arm.verdict.as_str().into(),
            arm.confidence.as_str().into(),
            arm.lost_cases.to_string(),
            arm.churn.map_or("—".into(), |c| c.to_string()),
        ]);
    }
    out.push(Section {
        name: "drops",
        title: "Drop per arm, with its confidence interval".into(),
        note: format!(
            "Paired drop (baseline − arm) on {} main-set cases; whiskers are {} intervals; the red line is the threshold agreed before the run ({}). Orange bars are needed, blue removable-on-this-set.",
            s.cases,
            crate::report::text::percent_level(s.confidence_level),
            s.threshold_drop
        ),
        chart: Chart::Bars {
            title: "Drop per arm".into(),
            x_desc: "drop in score (baseline − arm)".into(),
            bars: s
                .arms
                .iter()
                .map(|arm| Bar {
                    label: arm.arm.clone(),
                    value: arm.drop,
                    interval: arm.ci_low.zip(arm.ci_high),
                    color: if arm.verdict == Verdict::Needed { ORANGE } else { BLUE },
                })
                .collect(),
            marks: vec![(s.threshold_drop, format!("threshold {}", s.threshold_drop))],
        },
        table: t,
    });

    if let Some(r) = &a.reweight {
        let mut t = Table::new(&[
            "arm",
            "drop (set)",
            "verdict (set)",
            "drop (production)",
            "se",
            "verdict (production)",
            "flipped",
        ]);
        let mut bars = Vec::new();
        for arm in &r.arms {
            t.rows.push(vec![
                arm.arm.clone(),
                n(arm.drop_eval, 4),
                arm.verdict_eval.as_str().into(),
                num(arm.drop_production, 4),
                num(arm.se_production, 4),
                arm.verdict_production
                    .map_or("—".into(), |v| v.as_str().into()),
                if arm.flipped {
                    "yes".into()
                } else {
                    String::new()
                },
            ]);
            bars.push(Bar {
                label: format!("{} · set", arm.arm),
                value: arm.drop_eval,
                interval: None,
                color: BLUE,
            });
            if let Some(d) = arm.drop_production {
                bars.push(Bar {
                    label: format!("{} · production", arm.arm),
                    value: d,
                    interval: arm.ci_low_production.zip(arm.ci_high_production),
                    color: ORANGE,
                });
            }
        }
        let flips: Vec<&str> = r
            .arms
            .iter()
            .filter(|a| a.flipped)
            .map(|a| a.arm.as_str())
            .collect();
        out.push(Section {
            name: "production",
            title: "The set's drops next to production's".into(),
            note: format!(
                "Drops {} to production shares by {}. {}",
                if r.method == crate::analysis::reweight::Method::Raked {
                    "raked"
                } else {
                    "post-stratified"
                },
                r.strata.join(" × "),
                if flips.is_empty() {
                    "No verdict flips.".to_string()
                } else {
                    format!("Verdicts that flip: {}.", flips.join(", "))
                }
            ),
            chart: Chart::Bars {
                title: "Drop on the set vs in production".into(),
                x_desc: "drop".into(),
                bars,
                marks: vec![(r.threshold_drop, format!("threshold {}", r.threshold_drop))],
            },
            table: t,
        });
        let mut t = Table::new(&[
            "stratum",
            "eval cases",
            "eval share",
            "production share",
            "ratio",
            "status",
        ]);
        let mut bars = Vec::new();
        for c in &r.coverage {
            let name = c.label();
            t.rows.push(vec![
                name.clone(),
                c.eval_cases.to_string(),
                n(c.eval_share, 3),
                n(c.production_share, 3),
                num(c.ratio, 2),
                c.status.as_str().into(),
            ]);
            bars.push(Bar {
                label: format!("{name} · set"),
                value: c.eval_share,
                interval: None,
                color: BLUE,
            });
            bars.push(Bar {
                label: format!("{name} · production"),
                value: c.production_share,
                interval: None,
                color: ORANGE,
            });
        }
        out.push(Section {
            name: "coverage",
            title: "Coverage: the set's shares next to production's".into(),
            note: r
                .known_coverage_gap
                .as_ref()
                .map_or("No stratum is under-sampled.".into(), |g| {
                    format!("Known coverage gap: {g}.")
                }),
            chart: Chart::Bars {
                title: "Share per stratum".into(),
                x_desc: "share".into(),
                bars,
                marks: Vec::new(),
            },
            table: t,
        });
    }

    if let Some(st) = &a.stress {
        let mut t = Table::new(&[
            "arm",
            "drop (main)",
            "se (main)",
            "verdict (main)",
            "drop (stress)",
            "se (stress)",
            "verdict (stress)",
            "clears both",
        ]);
        let mut bars = Vec::new();
        for arm in &st.arms {
            t.rows.push(vec![
                arm.arm.clone(),
                num(arm.drop_main, 4),
                num(arm.se_main, 4),
                arm.verdict_main.map_or("—".into(), |v| v.as_str().into()),
                num(arm.drop_stress, 4),
                num(arm.se_stress, 4),
                arm.verdict_stress.map_or("—".into(), |v| v.as_str().into()),
                if arm.clears_both {
                    "yes".into()
                } else {
                    "no".into()
                },
            ]);
            for (side, d, ci, color) in [
                ("main", arm.drop_main, arm.ci_main, BLUE),
                ("stress", arm.drop_stress, arm.ci_stress, ORANGE),
            ] {
                if let Some(d) = d {
                    bars.push(Bar {
                        label: format!("{} · {side}", arm.arm),
                        value: d,
                        interval: ci,
                        color,
                    });
                }
            }
        }
        let mut marks = vec![(
            st.threshold_drop,
            format!("threshold {}", st.threshold_drop),
        )];
        if st.stress_threshold_drop != st.threshold_drop {
            marks.push((
                st.stress_threshold_drop,
                format!("stress threshold {}", st.stress_threshold_drop),
            ));
        }
        out.push(Section {
            name: "stress",
            title: "Main set next to the stress slice".into(),
            note: format!(
                "{} main-set and {} stress cases; a cut must be removable on both.",
                st.main_cases, st.stress_cases
            ),
            chart: Chart::Bars {
                title: "Drop on the main set vs the stress slice".into(),
                x_desc: "drop".into(),
                bars,
                marks,
            },
            table: t,
        });
    }

    let i = &a.interactions;
    if !i.composed.is_empty() {
        let mut t = Table::new(&[
            "arm",
            "components",
            "predicted drop",
            "measured drop",
            "interaction",
            "ci_low",
            "ci_high",
            "verdict",
            "lost",
            "lost by slice",
        ]);
        let mut bars = Vec::new();
        for c in &i.composed {
            t.rows.push(vec![
                c.arm.clone(),
                c.components.join(" + "),
                n(c.predicted_drop, 4),
                n(c.measured_drop, 4),
                n(c.interaction, 4),
                num(c.ci_low, 4),
                num(c.ci_high, 4),
                c.interaction_verdict.as_str().into(),
                c.lost_cases.to_string(),
                c.lost_by_slice
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ]);
            bars.push(Bar {
                label: format!("{} · predicted", c.arm),
                value: c.predicted_drop,
                interval: None,
                color: GREY,
            });
            bars.push(Bar {
                label: format!("{} · measured", c.arm),
                value: c.measured_drop,
                interval: None,
                color: ORANGE,
            });
        }
        let notes: Vec<String> = i
            .composed
            .iter()
            .filter(|c| c.interaction_verdict.as_str() == "super-additive")
            .map(|c| {
                format!(
                    "{} is super-additive{}",
                    c.arm,
                    c.concentration
                        .as_ref()
                        .map(|w| format!(": {w}"))
                        .unwrap_or_default()
                )
            })
            .collect();
        out.push(Section {
            name: "interactions",
            title: "Composed cuts: the sum of the parts against the measured cut".into(),
            note: if notes.is_empty() {
                "Every composed cut is additive.".into()
            } else {
                notes.join("; ") + "."
            },
            chart: Chart::Bars {
                title: "Predicted (sum of parts) vs measured drop".into(),
                x_desc: "drop".into(),
                bars,
                marks: Vec::new(),
            },
            table: t,
        });
    }

    if let Some(c) = &a.curve {
        let mut t = Table::new(&[
            "selector",
            "budget_ratio",
            "tokens",
            "score",
            "retention",
            "ci_low",
            "ci_high",
        ]);
        let palette = [BLUE, ORANGE, GREEN, GREY];
        let mut lines = Vec::new();
        for (k, sel) in c.selectors.iter().enumerate() {
            for p in &sel.points {
                t.rows.push(vec![
                    sel.selector.clone(),
                    n(p.budget_ratio, 2),
                    num(p.tokens, 0),
                    n(p.score, 3),
                    num(p.retention, 4),
                    num(p.ci_low, 4),
                    num(p.ci_high, 4),
                ]);
            }
            lines.push(Line {
                name: format!("{} (min budget {})", sel.selector, num(sel.min_budget, 2)),
                points: sel
                    .points
                    .iter()
                    .filter_map(|p| Some((p.budget_ratio, p.retention?)))
                    .collect(),
                band: sel
                    .points
                    .iter()
                    .filter_map(|p| Some((p.budget_ratio, p.ci_low?, p.ci_high?)))
                    .collect(),
                color: palette[k % palette.len()],
            });
        }
        out.push(Section {
            name: "budget",
            title: "Quality against context budget".into(),
            note: format!("Retention = arm score / baseline score over paired cases, with bootstrap bands; the red line is the {:.0}% target.", 100.0 * c.quality_threshold),
            chart: Chart::Lines {
                title: "Retention by budget and selector".into(),
                x_desc: "budget (share of the full context)".into(),
                y_desc: "retention".into(),
                lines,
                marks: vec![(c.quality_threshold, format!("{:.0}% target", 100.0 * c.quality_threshold))],
            },
            table: t,
        });
    }

    if let Some(sel) = &a.selector {
        let mut t = Table::new(&[
            "threshold",
            "kept tokens",
            "saved tokens",
            "recovery",
            "gold miss rate",
            "measured drop",
        ]);
        for p in &sel.points {
            t.rows.push(vec![
                n(p.threshold, 2),
                n(p.kept_tokens_mean, 0),
                n(p.saving_mean, 0),
                num(p.recovery, 3),
                num(p.gold_miss_rate, 3),
                num(p.measured_drop, 4),
            ]);
        }
        out.push(Section {
            name: "selector",
            title: "Reranker threshold: saving against the oracle".into(),
            note: format!(
                "Recovery = saving / oracle saving ({} tokens a case); gold miss rate = cases whose gold passage the threshold drops.",
                n(sel.oracle_saving_mean, 0)
            ),
            chart: Chart::Lines {
                title: "Recovery and gold misses by threshold".into(),
                x_desc: "reranker score threshold".into(),
                y_desc: "share".into(),
                lines: vec![
                    Line { name: "recovery of the oracle saving".into(), points: sel.points.iter().filter_map(|p| Some((p.threshold, p.recovery?))).collect(), band: Vec::new(), color: BLUE },
                    Line { name: "gold miss rate".into(), points: sel.points.iter().filter_map(|p| Some((p.threshold, p.gold_miss_rate?))).collect(), band: Vec::new(), color: ORANGE },
                ],
                marks: vec![(1.0, "oracle".into())],
            },
            table: t,
        });
    }

    if let Some(ctx) = &a.context {
        let mut t = Table::new(&["from tokens", "to tokens", "calls"]);
        for b in &ctx.histogram {
            t.rows
                .push(vec![n(b.lo, 0), n(b.hi, 0), b.calls.to_string()]);
        }
        out.push(Section {
            name: "context",
            title: "Context size per call".into(),
            note: format!(
                "{} calls; hard input limit {}; {:.2}% of calls over it, {:.2}% over the soft limit; utilisation {:.0}%.",
                ctx.calls,
                n(ctx.hard_limit, 0),
                100.0 * ctx.overflow_rate,
                100.0 * ctx.soft_crossing_rate,
                100.0 * ctx.utilisation
            ),
            chart: Chart::Histogram {
                title: "Call sizes".into(),
                x_desc: "tokens per call".into(),
                bins: ctx.histogram.iter().map(|b| (b.lo, b.hi, b.calls)).collect(),
                marks: vec![
                    (ctx.size.p50, format!("p50 {}", n(ctx.size.p50, 0))),
                    (ctx.size.p95, format!("p95 {}", n(ctx.size.p95, 0))),
                    (ctx.size.p99, format!("p99 {}", n(ctx.size.p99, 0))),
                    (ctx.hard_limit, format!("hard limit {}", n(ctx.hard_limit, 0))),
                ],
            },
            table: t,
        });
        let mut t = Table::new(&["source", "share of tokens"]);
        let mut parts: Vec<_> = ctx.composition.iter().collect();
        parts.sort_by(|x, y| y.1.total_cmp(x.1));
        for (source, share) in &parts {
            t.rows.push(vec![source.to_string(), n(**share, 3)]);
        }
        out.push(Section {
            name: "composition",
            title: "Where the context's tokens come from".into(),
            note: "Share of all logged tokens by source.".into(),
            chart: Chart::Bars {
                title: "Composition by source".into(),
                x_desc: "share of tokens".into(),
                bars: parts
                    .iter()
                    .map(|(s, v)| Bar {
                        label: s.to_string(),
                        value: **v,
                        interval: None,
                        color: BLUE,
                    })
                    .collect(),
                marks: Vec::new(),
            },
            table: t,
        });
    }

    if let Some(sh) = &a.shadow {
        let mut t = Table::new(&[
            "stratum", "requests", "changed", "noise", "excess", "se", "p_holm", "flagged",
        ]);
        let mut bars = Vec::new();
        /// One row of the shadow table: the whole traffic, then each stratum.
        struct Row {
            label: String,
            requests: u64,
            changed: f64,
            noise: Option<f64>,
            excess: Option<f64>,
            se: Option<f64>,
            ci: Option<(f64, f64)>,
            p_holm: Option<f64>,
            flagged: bool,
        }
        let rows = std::iter::once(Row {
            label: "all requests".into(),
            requests: sh.requests,
            changed: sh.changed_rate,
            noise: sh.noise_rate,
            excess: sh.excess_rate,
            se: sh.se,
            ci: sh.ci_low.zip(sh.ci_high),
            p_holm: None,
            flagged: false,
        })
        .chain(sh.by_stratum.iter().map(|s| Row {
            label: s.stratum.clone(),
            requests: s.requests,
            changed: s.changed_rate,
            noise: s.noise_rate,
            excess: s.excess_rate,
            se: s.se,
            ci: s.ci_low.zip(s.ci_high),
            p_holm: s.p_holm,
            flagged: s.flagged,
        }));
        for r in rows {
            t.rows.push(vec![
                r.label.clone(),
                r.requests.to_string(),
                n(r.changed, 4),
                num(r.noise, 4),
                num(r.excess, 4),
                num(r.se, 4),
                num(r.p_holm, 4),
                if r.flagged {
                    "yes".into()
                } else {
                    String::new()
                },
            ]);
            if let Some(e) = r.excess {
                bars.push(Bar {
                    label: r.label,
                    value: e,
                    interval: r.ci,
                    color: if r.flagged { ORANGE } else { BLUE },
                });
            }
        }
        out.push(Section {
            name: "shadow",
            title: "Shadow traffic: change above the noise floor".into(),
            note: format!(
                "{} requests; the candidate changed {:.2}% of answers, a second production run {}. Orange strata changed beyond noise (Holm-adjusted).",
                sh.requests,
                100.0 * sh.changed_rate,
                sh.noise_rate.map_or("(no replay: noise unknown)".into(), |v| format!("{:.2}%", 100.0 * v))
            ),
            chart: Chart::Bars { title: "Excess change rate (candidate − replay)".into(), x_desc: "excess change rate".into(), bars, marks: vec![(0.0, "no excess".into())] },
            table: t,
        });
    }

    let mut t = Table::new(&["arm", "churn"]);
    let base_churn = s.churn_baseline;
    let mut bars = Vec::new();
    for arm in &s.arms {
        if let Some(c) = arm.churn {
            t.rows.push(vec![arm.arm.clone(), c.to_string()]);
            bars.push(Bar {
                label: arm.arm.clone(),
                value: c as f64,
                interval: None,
                color: GREY,
            });
        }
    }
    if !bars.is_empty() {
        out.push(Section {
            name: "churn",
            title: "Churn per arm: cases whose pass/fail changes between repeats".into(),
            note: base_churn.map_or(String::new(), |c| {
                format!("The baseline's churn ({c} cases) is the noise floor of lost cases.")
            }),
            chart: Chart::Bars {
                title: "Churn per arm".into(),
                x_desc: "cases".into(),
                bars,
                marks: base_churn
                    .map(|c| vec![(c as f64, format!("baseline churn {c}"))])
                    .unwrap_or_default(),
            },
            table: t,
        });
    }
    out
}

/// What was written.
#[derive(Debug, Clone, Serialize)]
pub struct Written {
    /// The report folder.
    pub out: String,
    /// Files written, relative to it.
    pub files: Vec<String>,
}

/// The report's opening lines: the set, and the needed context fraction with its caveats.
fn headline(a: &Analyses) -> Prose {
    let c = &a.check;
    let mut p = Prose::new().text("Set ").bold(c.set.as_str()).text(format!(
        "{}, model {}, measured {}: {} main-set cases, {} stress cases, {} arms, {} repeats; threshold_drop {}.\n",
        if c.synthetic { " (synthetic data)" } else { "" },
        c.model.as_deref().unwrap_or("—"),
        c.measured_at.as_deref().unwrap_or("—"),
        c.main_cases,
        c.stress_cases,
        c.arms.len(),
        a.sweep.repeats,
        c.threshold_drop
    ));
    if let Some(r) = &a.record {
        p = p
            .text("\nNeeded context fraction: ")
            .bold(format!("{:.0}%", 100.0 * r.value))
            .text(format!(
                " ({} of {} tokens per request){}{}. Composition {}checked. {}\n",
                n(r.needed_tokens_mean, 0),
                n(r.total_tokens_mean, 0),
                r.value_production
                    .map(|v| format!(", {:.0}% weighted to production", 100.0 * v))
                    .unwrap_or_default(),
                if r.oracle {
                    format!(
                        " — an oracle upper bound ({})",
                        r.oracle_note.as_deref().unwrap_or_default()
                    )
                } else {
                    String::new()
                },
                if r.composition_checked { "" } else { "not " },
                r.known_coverage_gap
                    .as_ref()
                    .map(|g| format!("Known coverage gap: {g}."))
                    .unwrap_or_default()
            ));
    }
    for skipped in &a.skipped {
        p = p.text(format!("\nNot analysed: {skipped}\n"));
    }
    p
}

/// Writes a text file into the report folder and notes it.
fn put(dir: &AtomicDir, files: &mut Vec<String>, name: &str, text: &str) -> Result<()> {
    let path = dir.path(name);
    std::fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
    files.push(name.to_string());
    Ok(())
}

/// Writes the report for `a` into `out`, atomically.
///
/// # Errors
/// A file cannot be written, or a chart cannot be drawn.
pub fn write(a: &Analyses, out: &Path, progress: Option<&ProgressBar>) -> Result<Written> {
    let dir = AtomicDir::create(out)?;
    let mut files = Vec::new();
    for sub in ["charts", "tables"] {
        let p = dir.path(sub);
        std::fs::create_dir_all(&p).map_err(|e| Error::io(&p, e))?;
    }
    put(&dir, &mut files, "analysis.json", &crate::report::json(a)?)?;
    if let Some(r) = &a.record {
        put(&dir, &mut files, "record.json", &crate::report::json(r)?)?;
    }
    let sections = sections(a);
    let head = headline(a);
    let mut md = format!(
        "# ablate report — {}\n\n{}\n",
        escape::markdown(&a.check.set),
        head.markdown()
    );
    let mut html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\">{csp}<title>ablate report — {set}</title><style>{CSS}</style></head><body><h1>ablate report — {set}</h1><p>{head}</p>",
        csp = content_security_policy(),
        set = escape::html(&a.check.set),
        head = head.html()
    );
    for sec in &sections {
        if let Some(bar) = progress {
            bar.set_message(format!("chart {}", sec.name));
        }
        let svg = sec.chart.svg()?;
        put(&dir, &mut files, &format!("charts/{}.svg", sec.name), &svg)?;
        let png = format!("charts/{}.png", sec.name);
        sec.chart.png(&dir.path(&png))?;
        files.push(png.clone());
        let csv = format!("tables/{}.csv", sec.name);
        sec.table.csv(&dir.path(&csv))?;
        files.push(csv.clone());
        let _ = write!(
            md,
            "\n## {}\n\n{}\n\n![{}]({png})\n\n{}\nNumbers: [{csv}]({csv})\n",
            escape::markdown(&sec.title),
            escape::markdown(&sec.note),
            escape::markdown(&sec.title),
            sec.table.markdown()
        );
        let _ = write!(
            html,
            "<h2>{}</h2><p>{}</p><section><div>{svg}</div><div>{}</div></section>",
            escape::html(&sec.title),
            escape::html(&sec.note),
            sec.table.html()
        );
        if let Some(bar) = progress {
            bar.inc(1);
        }
    }
    html.push_str("</body></html>\n");
    put(&dir, &mut files, "report.md", &md)?;
    put(&dir, &mut files, "index.html", &html)?;
    files.sort();
    let written: PathBuf = dir.commit()?;
    Ok(Written {
        out: written.display().to_string(),
        files,
    })
}
