//! The demo report in a real browser (headless Chromium): the page's script runs under its
//! Content-Security-Policy with no console message (a blocked load, a CSP violation or a script
//! error would print one), nothing is fetched, every (wide) chart is drawn with a non-zero size, and
//! clicking a column header sorts the table. A screenshot of the page is kept in
//! `target/test-artifacts/report-page.png`.
//!
//! Needs `chromium` (Debian's package; `.ci/run` installs it). Without it the test says so and
//! passes, unless ABLATE_REQUIRE_BROWSER=1 (as in CI), when it fails.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use sha2::Digest as _;

/// The check run inside the page, after the page's own script: chart sizes, then a sort.
const SELFTEST: &str = "(function(){var out=[];document.querySelectorAll('figure .wide svg').forEach(function(s,i){var r=s.getBoundingClientRect();out.push('chart '+i+' '+(r.width>0&&r.height>0?'visible':'hidden'))});var t=document.querySelector('table.data');var cells=t.tHead.rows[0].cells;var col=-1;for(var i=0;i<cells.length;i++){if(cells[i].textContent==='drop')col=i}var read=function(){return Array.prototype.map.call(t.tBodies[0].rows,function(r){return r.cells[col].textContent})};var before=read().join('|');cells[col].click();var asc=read().map(Number);cells[col].click();var desc=read().map(Number);var up=asc.every(function(v,i){return i===0||asc[i-1]<=v});var down=desc.every(function(v,i){return i===0||desc[i-1]>=v});out.push('sort '+(col>=0&&up&&down&&asc.join('|')!==before?'ok':'failed'));out.push('controls '+document.querySelectorAll('.controls input').length);var pre=document.createElement('pre');pre.id='selftest';pre.textContent=out.join('\\n');document.body.appendChild(pre)})();";

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            let out = Command::new("sh")
                .args(["-c", &format!("command -v {name}")])
                .output()
                .ok()?;
            let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
            (!path.is_empty()).then(|| PathBuf::from(path))
        })
}

fn headless(browser: &Path, args: &[String]) -> std::process::Output {
    Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(args)
        .output()
        .expect("run chromium")
}

/// Chromium, or `None` (the test then passes, saying why) when the machine has none and
/// ABLATE_REQUIRE_BROWSER (set in CI) is unset.
fn browser() -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        assert!(
            std::env::var("ABLATE_REQUIRE_BROWSER").is_err(),
            "ABLATE_REQUIRE_BROWSER is set but no chromium was found"
        );
        eprintln!("skipped: no chromium on this machine (apt-get install chromium)");
    }
    found
}

/// Runs `check` (a script) inside the report in `out` with headless Chromium at 1400 × 1000,
/// after the page's own script, and returns what it wrote into `<pre id="selftest">`, after
/// asserting the console stayed quiet. The page is unchanged but for the script appended and its
/// hash added to the Content-Security-Policy.
fn run_in_page(browser: &Path, out: &Path, check: &str) -> String {
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(check));
    let page = html
        .replacen("script-src ", &format!("script-src 'sha256-{hash}' "), 1)
        .replacen("</body>", &format!("<script>{check}</script></body>"), 1);
    let file = out.join("check.html");
    std::fs::write(&file, page).unwrap();
    let run = headless(
        browser,
        &[
            "--window-size=1400,1000".into(),
            "--dump-dom".into(),
            format!("file://{}", file.display()),
        ],
    );
    let dom = String::from_utf8_lossy(&run.stdout);
    let log = String::from_utf8_lossy(&run.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    let open = "<pre id=\"selftest\">";
    let start = dom.find(open).expect("the check ran") + open.len();
    dom[start..start + dom[start..].find("</pre>").unwrap()].to_string()
}

/// A screenshot of the report in `out` at 1400 × `height`, kept in `target/test-artifacts/name`
/// for people to look at.
fn screenshot(browser: &Path, out: &Path, name: &str, height: u32) {
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join(name);
    let run = headless(
        browser,
        &[
            format!("--window-size=1400,{height}"),
            format!("--screenshot={}", shot.display()),
            format!("file://{}", out.join("index.html").display()),
        ],
    );
    assert!(run.status.success());
    assert!(std::fs::metadata(&shot).unwrap().len() > 10_000);
}

#[test]
fn the_report_works_in_a_real_browser() {
    let Some(browser) = browser() else { return };
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("rep");
    common::report_into(&out, &common::demo());
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let report = run_in_page(&browser, &out, SELFTEST);
    let charts = report.lines().filter(|l| l.starts_with("chart ")).count();
    assert!(charts >= 8, "{report}");
    assert!(!report.contains("hidden"), "{report}");
    assert!(report.contains("sort ok"), "{report}");
    // The page's script added a filter box to every table.
    let tables = html.matches("<table class=\"data\">").count();
    assert!(report.contains(&format!("controls {tables}")), "{report}");
    screenshot(&browser, &out, "report-page.png", 6000);
}

/// The page's navigation and drill-down, checked inside the page: every contents link finds its
/// section, the page's height, the first lost case ids of the first arm that loses any (after
/// opening its `<details>`), and whether the drops chart's legend is inside its SVG.
const NAVIGATION: &str = "(function(){var out=[];var links=document.querySelectorAll('nav.toc a');var bad=0;links.forEach(function(a){var id=a.getAttribute('href').slice(1);if(!document.getElementById(id))bad++});out.push('links '+links.length+' unresolved '+bad);out.push('height '+document.documentElement.scrollHeight);var drill=document.querySelector('details.drill');var shown=function(e){return e.checkVisibility()&&e.getBoundingClientRect().height>0};var arm=null;document.querySelectorAll('details.arm').forEach(function(d){if(!arm&&d.querySelector('table.cases'))arm=d});out.push('hidden before '+(arm&&!shown(arm.querySelector('table.cases'))?'yes':'no'));drill.open=true;arm.open=true;var ids=Array.prototype.map.call(arm.querySelectorAll('table.cases tbody tr td:first-child'),function(td){return td.textContent});out.push('arm '+arm.getAttribute('data-arm'));out.push('shown after '+(shown(arm.querySelector('table.cases'))?'yes':'no'));out.push('lost '+ids.join(' '));var legend=Array.prototype.map.call(document.querySelectorAll('#drops svg text'),function(t){return t.textContent}).join('|');out.push('legend '+(legend.indexOf('needed, confident')>=0&&legend.indexOf('removable, not settled')>=0&&legend.indexOf('threshold')>=0?'inside':'missing'));var pre=document.createElement('pre');pre.id='selftest';pre.textContent=out.join('\\n');document.body.appendChild(pre)})();";

/// Tallest the demo report may be at 1400 px wide with every drill-down closed (issue 29).
const MAX_PAGE_HEIGHT: u32 = 9_000;

#[test]
fn the_report_navigates_and_drills_down_to_cases_in_a_real_browser() {
    let Some(browser) = browser() else { return };
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("rep");
    common::report_into(&out, &common::demo());
    let report = run_in_page(&browser, &out, NAVIGATION);
    let line = |key: &str| {
        report
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("no `{key}` in {report}"))
            .to_string()
    };
    // Contents: the decision and one link per section, every one resolving.
    let sections = std::fs::read_to_string(out.join("index.html"))
        .unwrap()
        .matches("<section id=")
        .count();
    assert_eq!(
        line("links "),
        format!("{sections} unresolved 0"),
        "{report}"
    );
    assert!(sections >= 12, "{report}");
    let height: u32 = line("height ").parse().unwrap();
    assert!(
        height <= MAX_PAGE_HEIGHT,
        "page is {height} px tall: {report}"
    );
    // The drill-down is closed, and opening it lists the arm's lost cases: the same ids, in the
    // same order, as the analysis (analysis.json's drill).
    assert_eq!(line("hidden before "), "yes", "{report}");
    assert_eq!(line("shown after "), "yes", "{report}");
    let analysis: serde_json::Value = common::analysis_json(&out);
    let arm = line("arm ");
    let drilled = analysis["drill"]["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"] == arm.as_str())
        .expect("the arm is in the analysis");
    let ids = |key: &str| -> Vec<String> {
        drilled[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["case_id"].as_str().unwrap().to_string())
            .collect()
    };
    let expected: Vec<String> = ids("lost").into_iter().chain(ids("gained")).collect();
    assert!(!expected.is_empty());
    assert_eq!(line("lost "), expected.join(" "), "{report}");
    assert_eq!(line("legend "), "inside", "{report}");

    // The top of the page, as docs/report-top.png shows it.
    screenshot(&browser, &out, "report-top.png", 1000);
}

/// Checks that a one-arm comparison draws its arm with a label and the threshold as a line.
const TWO_ARMS: &str = "(function(){var out=[];var svg=document.querySelector('#drops svg');var text=Array.prototype.map.call(svg.querySelectorAll('text'),function(t){return t.textContent.trim()});out.push('labels '+text.join('|'));var red=Array.prototype.filter.call(svg.querySelectorAll('polyline,line,path'),function(l){return (l.getAttribute('stroke')||'').toUpperCase()==='#C82828'&&l.getBBox().height>20});out.push('threshold lines '+red.length);var pre=document.createElement('pre');pre.id='selftest';pre.textContent=out.join('\\n');document.body.appendChild(pre)})();";

#[test]
fn a_two_arm_report_draws_its_arm_with_a_label_and_the_threshold_in_a_real_browser() {
    let Some(browser) = browser() else { return };
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("ab");
    common::succeeds(
        common::ablate()
            .args(["simulate", "--arms", "2", "--cases", "60", "--out"])
            .arg(&dir)
            .args(["--shadow-requests", "0", "--context-requests", "0"]),
    );
    let out = root.path().join("rep");
    common::report_into(&out, &dir);
    let report = run_in_page(&browser, &out, TWO_ARMS);
    let labels = report
        .lines()
        .find_map(|l| l.strip_prefix("labels "))
        .unwrap();
    assert!(
        labels.split('|').any(|l| l.contains("without-system")),
        "{report}"
    );
    assert!(labels.contains("threshold 0.005"), "{report}");
    assert!(report.contains("threshold lines 1"), "{report}");
}

/// The check for both widths (issue 46), inside the page with every `<details>` open: whether
/// the page scrolls sideways (anything wider than the window outside a box that scrolls), the
/// smallest chart text as shown (font size × the SVG's scale, visible charts only), where the
/// answer's line ends against the window's height and its text, and how a drill-down row is
/// laid out (`block` when rows are cards). It writes into the parent page too, for the phone's
/// frame.
const WIDTHS: &str = "(function(){var out=[];document.querySelectorAll('details').forEach(function(d){d.open=true});var W=document.documentElement.clientWidth;out.push('sideways '+(document.documentElement.scrollWidth>W?'yes':'no'));var wide=0;document.querySelectorAll('body *').forEach(function(e){if(e.closest('svg'))return;var r=e.getBoundingClientRect();if(r.width>0&&r.right>W+1){var p=e.parentElement,inside=false;while(p){var o=getComputedStyle(p).overflowX;if(o=='auto'||o=='scroll'||o=='hidden'){inside=true;break}p=p.parentElement}if(!inside)wide++}});out.push('overflowing '+wide);var min=1e9,where='';document.querySelectorAll('svg text').forEach(function(t){var r=t.getBoundingClientRect();if(r.width==0||!t.textContent.trim())return;var m=t.getScreenCTM();var fs=parseFloat(getComputedStyle(t).fontSize)*(m?Math.sqrt(m.a*m.a+m.b*m.b):1);if(fs<min){min=fs;where=t.textContent}});out.push('smallest text '+min.toFixed(1)+' '+where);document.querySelectorAll('details').forEach(function(d){d.open=false});window.scrollTo(0,0);var a=document.querySelector('#decision p.answer');var r=a.getBoundingClientRect();out.push('answer ends '+Math.round(r.bottom)+' of '+window.innerHeight);out.push('answer text '+a.textContent);document.querySelectorAll('details').forEach(function(d){d.open=true});var td=document.querySelector('table.cases td');out.push('drill rows '+(td?getComputedStyle(td).display:'none'));var text=out.join('\\n');var pre=document.createElement('pre');pre.id='selftest';pre.textContent=text;document.body.appendChild(pre);try{var q=parent.document.createElement('pre');q.id='selftest';q.textContent=text;parent.document.body.appendChild(q)}catch(e){}})();";

/// Runs [`WIDTHS`] in the report in `out` at 1400 × 900, or in a 390 × 844 frame (a phone:
/// Chromium's window is at least 500 px wide, so the page is framed at the phone's width), and
/// keeps a screenshot of the top of the page at that width in `target/test-artifacts/name`.
fn at_width(browser: &Path, out: &Path, phone: bool, name: &str) -> String {
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(WIDTHS));
    let page = html
        .replacen("script-src ", &format!("script-src 'sha256-{hash}' "), 1)
        .replacen("</body>", &format!("<script>{WIDTHS}</script></body>"), 1);
    std::fs::write(out.join("widths.html"), page).unwrap();
    let frame = |src: &str, w: u32, h: u32| {
        format!(
            "<!doctype html><html><body style=\"margin:0\"><iframe src=\"{src}\" style=\"width:{w}px;height:{h}px;border:0\"></iframe></body></html>"
        )
    };
    // A page as the phone shows it (in a 390 × 844 frame, written as `wrapper`), or at 1400 × 900.
    let at_width = |page: &str, wrapper: &str| {
        if phone {
            std::fs::write(out.join(wrapper), frame(page, 390, 844)).unwrap();
            (wrapper.to_string(), "--window-size=500,844")
        } else {
            (page.to_string(), "--window-size=1400,900")
        }
    };
    let (target, window) = at_width("widths.html", "phone.html");
    let run = headless(
        browser,
        &[
            window.into(),
            "--allow-file-access-from-files".into(),
            "--dump-dom".into(),
            format!("file://{}", out.join(&target).display()),
        ],
    );
    let dom = String::from_utf8_lossy(&run.stdout);
    let open = "<pre id=\"selftest\">";
    let start = dom.find(open).expect("the check ran") + open.len();
    let found = dom[start..start + dom[start..].find("</pre>").unwrap()].to_string();
    // The screenshot of the page as a reader first sees it.
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let (shot_page, size) = at_width("index.html", "phone-top.html");
    let shot = headless(
        browser,
        &[
            size.into(),
            "--allow-file-access-from-files".into(),
            format!("--screenshot={}", artifacts.join(name).display()),
            format!("file://{}", out.join(&shot_page).display()),
        ],
    );
    assert!(shot.status.success());
    found
}

/// Issue 46: the decision a director reads first, on a phone and on a wide screen. At 1400 × 900
/// and 390 × 844 the answer's line is visible without scrolling and names units, not arms; with
/// every `<details>` open nothing scrolls sideways; chart text shows at 11 px or more (the phone
/// gets charts drawn for it); drill-down rows are cards on the phone.
#[test]
fn the_decision_reads_first_on_a_phone_and_a_wide_screen() {
    let Some(browser) = browser() else { return };
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("rep");
    common::report_into(&out, &common::demo());
    for (phone, name) in [(false, "report-wide.png"), (true, "report-phone.png")] {
        let report = at_width(&browser, &out, phone, name);
        let line = |key: &str| {
            report
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .unwrap_or_else(|| panic!("no `{key}` in {report}"))
                .to_string()
        };
        assert_eq!(line("sideways "), "no", "{report}");
        assert_eq!(line("overflowing "), "0", "{report}");
        let smallest: f64 = line("smallest text ")
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(smallest >= 11.0, "phone {phone}: {report}");
        let ends = line("answer ends ");
        let (bottom, height) = ends.split_once(" of ").unwrap();
        assert!(
            bottom.parse::<u32>().unwrap() <= height.parse::<u32>().unwrap(),
            "{report}"
        );
        let answer = line("answer text ");
        assert!(answer.chars().count() <= 160, "{answer}");
        assert!(!answer.contains("without-"), "names an arm: {answer}");
        assert!(answer.contains("passages/rank5"), "{answer}");
        if phone {
            assert_eq!(line("drill rows "), "block", "{report}");
        }
    }
}
