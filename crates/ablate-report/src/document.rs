//! `ablate report`: every analysis as a report an analyst can put in front of a director.
//!
//! Written atomically (a temporary folder renamed at the end): `index.html` (self-contained,
//! inline SVG, opens offline), `report.md`, `charts/*.svg` and `charts/*.png`, `record.json`,
//! `analysis.json` (every verb's JSON) and `tables/*.csv`. Every chart has its numbers in a table
//! beside it. This module only lays out the page and makes the files, handing each to the
//! caller's [`Files`] as it is made ([`render`]); it never touches the file system (the binary's
//! `report::document::write` gives an atomic output folder). Each verb's module in `report/`
//! builds its sections (table, chart, note) from its output.

use std::fmt::Write as _;
use std::path::PathBuf;

use indicatif::ProgressBar;
use serde::Serialize;

use crate::analysis::all::Analyses;
use crate::error::Result;
use crate::report;
use crate::report::charts::Chart;
use crate::report::escape::{self, Prose};
use crate::report::section::{Page, Section};

/// The page's style sheet (inline; allowed by its hash in the Content-Security-Policy).
const CSS: &str = include_str!("assets/report.css");

/// The page's script (inline; allowed by its hash in the Content-Security-Policy, and nothing
/// else may run): sorting, filtering and "show all" for the data tables. It loads nothing.
const JS: &str = include_str!("assets/report.js");

/// A `<meta>` Content-Security-Policy for the report: nothing is fetched from anywhere (no network,
/// no other file), and the only style and script are the page's own, each allowed by its SHA-256
/// (no other script, inline handler or injected tag can run).
/// Inline SVG needs no source. A report mailed around cannot run what a hostile name smuggles in.
fn content_security_policy() -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let sha =
        |text: &str| base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(text));
    format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'sha256-{}'; script-src 'sha256-{}'; img-src data:; base-uri 'none'; form-action 'none'\">",
        sha(CSS),
        sha(JS)
    )
}

/// Every section the analyses have, from each verb's report module, in page order; per-arm
/// charts follow the drops chart's `order`.
fn sections(a: &Analyses, order: &[String]) -> Vec<Section> {
    let flipped: Vec<String> = a.decision.flips.iter().map(|f| f.arm.clone()).collect();
    let mut all = report::sweep::sections(&a.sweep, &flipped, a.decision.comparison);
    all.extend(
        a.reweight
            .iter()
            .flat_map(|r| report::reweight::sections(r, order)),
    );
    all.extend(
        a.stress
            .iter()
            .flat_map(|s| report::stress::sections(s, order)),
    );
    all.extend(report::interactions::sections(&a.interactions));
    all.extend(a.need.iter().flat_map(report::need::sections));
    all.extend(a.curve.iter().flat_map(report::curve::sections));
    all.extend(a.selector.iter().flat_map(report::selector::sections));
    all.extend(a.context.iter().flat_map(report::context::sections));
    all.extend(a.shadow.iter().flat_map(report::shadow::sections));
    all.extend(report::check::sections(&a.check));
    all.sort_by_key(|s| s.name);
    all
}

/// The page's table of contents: the decision, then each section present, in page order (a bar
/// that stays at the top of the window as the page scrolls).
fn contents(sections: &[Section]) -> String {
    let mut s = String::from(
        "<nav class=\"toc\" aria-label=\"Contents\"><a href=\"#decision\">Decision</a>",
    );
    for sec in sections {
        let _ = write!(s, "<a href=\"#{}\">{}</a>", sec.name, sec.name.label());
    }
    s.push_str("</nav>");
    s
}

/// A chart's SVG for the page: its fixed width and height removed, so that it takes the page's
/// width and keeps its proportions (its `viewBox`; the style sheet sets `width: 100%`), and
/// labelled for screen readers by its title.
fn responsive(svg: &str, title: &str) -> String {
    let Some(end) = svg.find('>') else {
        return svg.to_string();
    };
    let open = &svg[..end];
    let kept: Vec<&str> = open
        .split(' ')
        .filter(|attr| !attr.starts_with("width=") && !attr.starts_with("height="))
        .collect();
    format!(
        "{} role=\"img\" aria-label=\"{}\"{}",
        kept.join(" "),
        escape::html(title),
        &svg[end..]
    )
}

/// What was written.
#[derive(Debug, Clone, Serialize)]
pub struct Written {
    /// The report folder.
    pub out: String,
    /// Files written, relative to it.
    pub files: Vec<String>,
}

/// The caveat, for the needed context fraction, that it counts as removable units the decision
/// keeps for the stress slice or production: the fraction follows the main-set verdicts (SPEC),
/// the decision every slice ("" when there are none).
fn kept_by_a_slice(a: &Analyses) -> String {
    let Some(need) = &a.need else {
        return String::new();
    };
    let units: Vec<&str> = a
        .decision
        .keep
        .iter()
        .filter(|k| k.reason.contains("stress slice") || k.reason.contains("production"))
        .flat_map(|k| k.removed.iter())
        .filter(|u| need.jointly_removable.contains(u))
        .map(String::as_str)
        .collect();
    if units.is_empty() {
        return String::new();
    }
    format!(
        "; it follows the main-set verdicts, so it counts as removable {} {}, which the decision keeps for the stress slice or production",
        if units.len() == 1 { "unit" } else { "units" },
        ablate_core::text::some_names(&units, 5)
    )
}

/// Every analysis's warnings, in page order, each with the verb that raised it; one said by two
/// analyses (the decision record repeats `need`'s) is listed once.
fn warnings(a: &Analyses) -> Vec<(&'static str, &crate::warning::Warning)> {
    let lists: [(&'static str, Option<&Vec<crate::warning::Warning>>); 12] = [
        ("check", Some(&a.check.warnings)),
        ("sweep", Some(&a.sweep.warnings)),
        ("variance", Some(&a.variance.warnings)),
        ("reweight", a.reweight.as_ref().map(|r| &r.warnings)),
        ("stress", a.stress.as_ref().map(|r| &r.warnings)),
        ("interactions", Some(&a.interactions.warnings)),
        ("need", a.need.as_ref().map(|r| &r.warnings)),
        ("curve", a.curve.as_ref().map(|r| &r.warnings)),
        ("selector", a.selector.as_ref().map(|r| &r.warnings)),
        ("shadow", a.shadow.as_ref().map(|r| &r.warnings)),
        ("context", a.context.as_ref().map(|r| &r.warnings)),
        ("record", a.record.as_ref().map(|r| &r.warnings)),
    ];
    let mut seen = std::collections::HashSet::new();
    lists
        .into_iter()
        .flat_map(|(verb, list)| list.into_iter().flatten().map(move |w| (verb, w)))
        .filter(|(_, w)| seen.insert((w.code, w.message.as_str())))
        .collect()
}

/// The line that says how many warnings the analyses raised (they say where a figure is
/// undefined, rough, or rests on an assumption), beside the decision; `None` without any.
fn warnings_line(count: usize) -> Option<String> {
    (count > 0).then(|| {
        format!(
            "{count} warning{} from the analyses: where a figure is undefined, rough, or rests on an assumption.",
            if count == 1 { "" } else { "s" }
        )
    })
}

/// The warnings as the HTML page shows them beside the decision: the count, and the list when
/// opened (each with its analysis and code); nothing without any.
fn warnings_html(said: &[(&str, &crate::warning::Warning)]) -> String {
    let Some(line) = warnings_line(said.len()) else {
        return String::new();
    };
    let items: String = said
        .iter()
        .map(|(verb, w)| {
            format!(
                "<li>{} <code>{}</code>: {}</li>",
                verb,
                escape::html(w.code),
                escape::html(&w.message)
            )
        })
        .collect();
    format!(
        "<details class=\"warnings\" id=\"warnings\"><summary>{}</summary><ul>{items}</ul></details>",
        escape::html(&line)
    )
}

/// The report's opening lines: the set, and the needed context fraction with its caveats.
fn headline(a: &Analyses) -> Prose {
    let c = &a.check;
    // The cases the drops and the decision rest on (the record's `cases`); cases.csv may list
    // more that have no baseline results yet.
    let measured = a.sweep.cases;
    let unmeasured = match c.main_cases.saturating_sub(measured) {
        0 => String::new(),
        n => format!(" ({n} more in cases.csv without results)"),
    };
    let mut p = Prose::new().text("Set ").bold(c.set.as_str()).text(format!(
        "{}, model {}, measured {}: {measured} main-set cases{unmeasured}, {} stress cases, {} arms, {} repeat{}; threshold_drop {}.\n",
        if c.synthetic { " (synthetic data)" } else { "" },
        c.model.as_deref().unwrap_or("—"),
        c.measured_at.as_deref().unwrap_or("—"),
        c.stress_cases,
        c.arms.len(),
        a.sweep.repeats,
        if a.sweep.repeats == 1 { "" } else { "s" },
        crate::text::float_text(c.threshold_drop)
    ));
    if let Some(r) = &a.record {
        p = p
            .text("\nNeeded context fraction: ")
            .bold(crate::percent(r.value))
            .text(format!(
                " ({} of {} tokens per request){}{}{}{}. Composition {}checked. {}\n",
                report::text::thousands(r.needed_tokens_mean),
                report::text::thousands(r.total_tokens_mean),
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
                if r.joint_cut_measured {
                    String::new()
                } else {
                    "; it assumes an untested joint cut (see Needed context)".to_string()
                },
                kept_by_a_slice(a),
                if r.composition_checked { "" } else { "not " },
                r.known_coverage_gap
                    .as_ref()
                    .map(|g| format!("Known coverage gap: {g}."))
                    .unwrap_or_default()
            ));
    }
    // The live checks, after the offline evidence.
    if let Some(sh) = &a.shadow {
        let flagged: Vec<&str> = sh
            .by_stratum
            .iter()
            .filter(|s| s.flagged)
            .map(|s| s.stratum.as_str())
            .collect();
        p = p.text(format!(
            "\nLive shadow traffic: {} requests; the candidate changed {} of answers against a replay noise floor of {}, excess {} ({} CI [{}, {}]){}.\n",
            report::text::thousands(sh.requests as f64),
            report::text::percent(Some(sh.changed_rate), 2),
            report::text::percent(sh.noise_rate, 2),
            report::text::percent(sh.excess_rate, 2),
            report::text::percent_level(sh.confidence_level),
            report::text::percent(sh.ci.map(|i| i.low), 2),
            report::text::percent(sh.ci.map(|i| i.high), 2),
            if flagged.is_empty() {
                String::new()
            } else {
                format!("; changed beyond noise in {}", flagged.join("; "))
            }
        ));
    }
    if let Some(cx) = &a.context {
        p = p.text(format!(
            "Context in production: {} calls, p95 {} tokens against a hard limit of {}; {} over it, {} over the soft limit.\n",
            report::text::thousands(cx.calls as f64),
            report::text::thousands(cx.size.p95),
            report::text::thousands(cx.hard_limit),
            report::text::percent(Some(cx.overflow_rate), 2),
            report::text::percent(Some(cx.soft_crossing_rate), 2)
        ));
    }
    for skipped in &a.skipped {
        p = p.text(format!("\nNot analysed: {skipped}\n"));
    }
    p
}

/// Writes a text file into the report folder and notes it.
fn put(dir: &dyn Files, files: &mut Vec<String>, name: &str, text: &str) -> Result<()> {
    dir.put(name, text.as_bytes())?;
    files.push(name.to_string());
    Ok(())
}

/// Runs `each` on every section in parallel, the charts with the most pixels first (the longest
/// to rasterise: scheduling the longest job first keeps two threads' loads even), and returns
/// the results in section order.
fn largest_first<T: Send>(sections: &[Section], each: impl Fn(&Section) -> T + Sync) -> Vec<T> {
    let mut order: Vec<usize> = (0..sections.len()).collect();
    order.sort_by_key(|&i| {
        let (w, h) = sections[i].chart.size();
        std::cmp::Reverse(u64::from(w) * u64::from(h))
    });
    let slots: Vec<std::sync::Mutex<Option<T>>> = sections
        .iter()
        .map(|_| std::sync::Mutex::new(None))
        .collect();
    rayon::scope_fifo(|scope| {
        for &i in &order {
            let (each, slots) = (&each, &slots);
            scope.spawn_fifo(move |_| {
                let done = each(&sections[i]);
                *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(done);
            });
        }
    });
    slots
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every section's job ran")
        })
        .collect()
}

/// The report's Markdown page: the decision and headline, then each section with its chart (the
/// PNG), note, table and a link to its CSV, and the drill-down under the drops.
fn markdown_page(
    a: &Analyses,
    sections: &[Section],
    order: &[String],
    decision: &report::decision::Page,
    head: &Prose,
) -> String {
    let mut md = format!("# ablate report — {}\n\n", escape::markdown(&a.check.set));
    let _ = write!(md, "{}\n\n", decision.answer.markdown());
    for line in &decision.next {
        let _ = write!(md, "{}\n\n", line.markdown());
    }
    let _ = write!(md, "{}\n\n", decision.basis.markdown());
    let said = warnings(a);
    if let Some(line) = warnings_line(said.len()) {
        let _ = write!(
            md,
            "{} [Listed at the end](#warnings).\n\n",
            escape::markdown(&line)
        );
    }
    let _ = write!(
        md,
        "How this was decided: {}\n\n{}\n",
        report::decision::legend(&a.decision),
        decision.details.markdown()
    );
    let _ = writeln!(md, "{}", head.markdown());
    for sec in sections {
        let png = format!("charts/{}.png", sec.name);
        let csv = format!("tables/{}.csv", sec.name);
        let _ = write!(
            md,
            "\n## {}\n\n{}\n\n![{}]({png})\n\n{}\nNumbers: [{csv}]({csv})\n",
            escape::markdown(&sec.title),
            escape::markdown(&sec.note),
            escape::markdown(&sec.title),
            sec.table.markdown()
        );
        // The drill-down to cases sits under the drops it explains.
        if sec.name == Page::Drops {
            md.push_str(&report::drill::markdown(&a.drill, order));
        }
    }
    if !said.is_empty() {
        md.push_str("\n## Warnings\n\n");
        for (verb, w) in &said {
            let _ = writeln!(
                md,
                "- {} `{}`: {}",
                verb,
                w.code,
                escape::markdown(&w.message)
            );
        }
    }
    md
}

/// The parts of the HTML page that need no chart, made beside the charts: each section's table
/// (in section order) and the drill-down to cases (under the drops, when there is that section).
struct HtmlParts {
    tables: Vec<String>,
    drill: Option<String>,
}

/// The report's HTML page (self-contained): the contents bar, the decision and headline, then
/// each section with its chart (the SVG inline), note, table and the drill-down under the drops.
fn html_page(
    a: &Analyses,
    sections: &[Section],
    svgs: &[(String, String)],
    parts: &HtmlParts,
    (decision, head): (&report::decision::Page, &Prose),
    progress: Option<&ProgressBar>,
) -> String {
    let mut html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">{csp}<title>ablate report — {set}</title><style>{CSS}</style></head><body>{toc}<h1>ablate report — {set}</h1><section id=\"decision\"><div class=\"decision\"><p class=\"answer\">{answer}</p>{next}<p class=\"basis\">{basis}</p>{warnings}<details class=\"why\"><summary>How this was decided, and every arm</summary><p class=\"legend\">{legend}</p><p>{details}</p></details></div><p>{head}</p></section>",
        csp = content_security_policy(),
        set = escape::html(&a.check.set),
        toc = contents(sections),
        answer = decision.answer.html(),
        next = decision
            .next
            .iter()
            .map(|l| format!("<p class=\"next\">{}</p>", l.html()))
            .collect::<String>(),
        basis = decision.basis.html(),
        warnings = warnings_html(&warnings(a)),
        legend = escape::html(report::decision::legend(&a.decision)),
        details = decision.details.html(),
        head = head.html()
    );
    for ((sec, svg), table) in sections.iter().zip(svgs).zip(&parts.tables) {
        let csv = format!("tables/{}.csv", sec.name);
        let _ = write!(
            html,
            "<section id=\"{name}\"><h2><a class=\"anchor\" href=\"#{name}\">{title}</a></h2><p>{note}</p><figure><div class=\"wide\">{wide}</div><div class=\"narrow\">{narrow}</div></figure><details class=\"numbers\"><summary>The numbers: {rows} {noun} (<a href=\"{csv}\">{csv}</a>)</summary>{table}</details>{cases}</section>",
            name = sec.name,
            title = escape::html(&sec.title),
            note = escape::html(&sec.note),
            wide = responsive(&svg.0, &sec.title),
            narrow = responsive(&svg.1, &sec.title),
            rows = sec.table.len(),
            noun = if sec.table.len() == 1 { "row" } else { "rows" },
            cases = match &parts.drill {
                Some(drill) if sec.name == Page::Drops => drill.as_str(),
                _ => "",
            }
        );
        if let Some(bar) = progress {
            bar.inc(1);
        }
    }
    let _ = writeln!(html, "<script>{JS}</script></body></html>");
    html
}

/// Where the report's files go. [`render`] makes every file and hands it over as soon as it is
/// made, from several threads at once; the caller writes them (the binary, into an atomic output
/// folder whose `charts/` and `tables/` subfolders exist).
pub trait Files: Sync {
    /// The path the file `name` (relative, `/`-separated) will have, for messages.
    fn path(&self, name: &str) -> PathBuf;
    /// Takes the file `name`'s bytes.
    ///
    /// # Errors
    /// The file cannot be written.
    fn put(&self, name: &str, bytes: &[u8]) -> Result<()>;
    /// Takes the table `name`, to be written as CSV: its headers, and its columns of cells at
    /// full precision (`None` is an empty field).
    ///
    /// # Errors
    /// The table cannot be written.
    fn put_table(
        &self,
        name: &str,
        headers: &[String],
        columns: Vec<Vec<Option<String>>>,
    ) -> Result<()>;
}

/// Makes the report for `a`, handing every file to `dir`, and returns their names, sorted.
///
/// # Errors
/// A file cannot be taken, or a chart cannot be drawn.
pub fn render(
    a: &Analyses,
    dir: &dyn Files,
    progress: Option<&ProgressBar>,
) -> Result<Vec<String>> {
    let mut files = Vec::new();
    let order = report::sweep::chart_order(&a.sweep);
    let sections = sections(a, &order);
    let head = headline(a);
    let decision = report::decision::page(
        &a.decision,
        a.check.threshold_drop,
        &a.check.dir,
        a.sweep.cases,
        a.sweep.repeats,
    );
    // Each section's chart (SVG and PNG) and CSV are drawn and written in parallel: the PNGs'
    // rasterising and compression are most of the writing's time. The largest charts start
    // first, so that no thread is left with a tall chart after the others are done. Every file
    // is handed over as soon as it is made, by the job that made it.
    if let Some(bar) = progress {
        bar.set_message("charts".to_string());
    }
    // Beside the charts: analysis.json and record.json, serialised and written; the Markdown
    // page, which links the PNGs rather than holding them, written; and the HTML page's parts
    // that need no chart (each section's table and the drill-down), so that only the page's
    // assembly around the SVGs is left once the charts are done.
    let (beside, drawn) = rayon::join(
        || -> Result<(Vec<String>, HtmlParts)> {
            let mut written = Vec::new();
            put(dir, &mut written, "analysis.json", &crate::report::json(a)?)?;
            if let Some(r) = &a.record {
                put(dir, &mut written, "record.json", &crate::report::json(r)?)?;
            }
            let md = markdown_page(a, &sections, &order, &decision, &head);
            put(dir, &mut written, "report.md", &md)?;
            let parts = HtmlParts {
                tables: sections.iter().map(|sec| sec.table.html()).collect(),
                drill: sections
                    .iter()
                    .any(|sec| sec.name == Page::Drops)
                    .then(|| report::drill::html(&a.drill, &order)),
            };
            Ok((written, parts))
        },
        || {
            largest_first(&sections, |sec| -> Result<(String, String)> {
                let svg = sec.chart.svg()?;
                let narrow = sec.chart.svg_in(&crate::report::charts::NARROW)?;
                let [svg_file, png, csv] = section_files(sec);
                dir.put(&svg_file, svg.as_bytes())?;
                dir.put(&png, &Chart::png(&svg, &dir.path(&png))?)?;
                let (headers, columns) = sec.table.csv_columns();
                dir.put_table(&csv, &headers, columns)?;
                Ok((svg, narrow))
            })
        },
    );
    let (written, parts) = beside?;
    files.extend(written);
    let svgs = drawn
        .into_iter()
        .collect::<Result<Vec<(String, String)>>>()?;
    files.extend(sections.iter().flat_map(section_files));
    let html = html_page(a, &sections, &svgs, &parts, (&decision, &head), progress);
    dir.put("index.html", html.as_bytes())?;
    files.push("index.html".to_string());
    files.sort();
    Ok(files)
}

/// The files a section writes: its chart's SVG and PNG, and its table's CSV.
fn section_files(sec: &Section) -> [String; 3] {
    [
        format!("charts/{}.svg", sec.name),
        format!("charts/{}.png", sec.name),
        format!("tables/{}.csv", sec.name),
    ]
}
