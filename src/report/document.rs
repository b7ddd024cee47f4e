//! `ablate report`: every analysis as a report an analyst can put in front of a director.
//!
//! Written atomically (a temporary folder renamed at the end): `index.html` (self-contained,
//! inline SVG, opens offline), `report.md`, `charts/*.svg` and `charts/*.png`, `record.json`,
//! `analysis.json` (every verb's JSON) and `tables/*.csv`. Every chart has its numbers in a table
//! beside it. This module only lays out the page and writes the files: each verb's module in
//! `report/` builds its sections (table, chart, note) from its output.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use indicatif::ProgressBar;
use serde::Serialize;

use crate::analysis::all::Analyses;
use crate::error::{Error, Result};
use crate::io::output::AtomicDir;
use crate::report;
use crate::report::escape::{self, Prose};
use crate::report::section::Section;
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

/// The order of the sections on the page: the decision first (drops, production, coverage,
/// stress), then interactions, budget, live traffic, and churn last.
const PAGE_ORDER: [&str; 11] = [
    "drops",
    "production",
    "coverage",
    "stress",
    "interactions",
    "budget",
    "selector",
    "context",
    "composition",
    "shadow",
    "churn",
];

/// Every section the analyses have, from each verb's report module, in page order.
fn sections(a: &Analyses) -> Vec<Section> {
    let mut all = report::sweep::sections(&a.sweep);
    all.extend(a.reweight.iter().flat_map(report::reweight::sections));
    all.extend(a.stress.iter().flat_map(report::stress::sections));
    all.extend(report::interactions::sections(&a.interactions));
    all.extend(a.curve.iter().flat_map(report::curve::sections));
    all.extend(a.selector.iter().flat_map(report::selector::sections));
    all.extend(a.context.iter().flat_map(report::context::sections));
    all.extend(a.shadow.iter().flat_map(report::shadow::sections));
    all.sort_by_key(|s| {
        PAGE_ORDER
            .iter()
            .position(|n| *n == s.name)
            .unwrap_or(PAGE_ORDER.len())
    });
    all
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
                num(Some(r.needed_tokens_mean), 0),
                num(Some(r.total_tokens_mean), 0),
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
