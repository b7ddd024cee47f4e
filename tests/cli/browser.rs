//! The demo report in a real browser (headless Chromium): the page's script runs under its
//! Content-Security-Policy with no console message (a blocked load, a CSP violation or a script
//! error would print one), nothing is fetched, every chart is drawn with a non-zero size, and
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
const SELFTEST: &str = "(function(){var out=[];document.querySelectorAll('svg').forEach(function(s,i){var r=s.getBoundingClientRect();out.push('chart '+i+' '+(r.width>0&&r.height>0?'visible':'hidden'))});var t=document.querySelector('table.data');var cells=t.tHead.rows[0].cells;var col=-1;for(var i=0;i<cells.length;i++){if(cells[i].textContent==='drop')col=i}var read=function(){return Array.prototype.map.call(t.tBodies[0].rows,function(r){return r.cells[col].textContent})};var before=read().join('|');cells[col].click();var asc=read().map(Number);cells[col].click();var desc=read().map(Number);var up=asc.every(function(v,i){return i===0||asc[i-1]<=v});var down=desc.every(function(v,i){return i===0||desc[i-1]>=v});out.push('sort '+(col>=0&&up&&down&&asc.join('|')!==before?'ok':'failed'));out.push('controls '+document.querySelectorAll('.controls input').length);var pre=document.createElement('pre');pre.id='selftest';pre.textContent=out.join('\\n');document.body.appendChild(pre)})();";

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

#[test]
fn the_report_works_in_a_real_browser() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var("ABLATE_REQUIRE_BROWSER").is_err(),
            "ABLATE_REQUIRE_BROWSER is set but no chromium was found"
        );
        eprintln!("skipped: no chromium on this machine (apt-get install chromium)");
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("rep");
    common::report_into(&out, &common::demo());
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();

    // The page with the check appended after its own script, and the check's hash added to the
    // policy: nothing else changes.
    let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(SELFTEST));
    let page = html
        .replacen("script-src ", &format!("script-src 'sha256-{hash}' "), 1)
        .replacen("</body>", &format!("<script>{SELFTEST}</script></body>"), 1);
    let check = out.join("selftest.html");
    std::fs::write(&check, page).unwrap();
    let run = headless(
        &browser,
        &[
            "--window-size=1400,1000".into(),
            "--dump-dom".into(),
            format!("file://{}", check.display()),
        ],
    );
    let dom = String::from_utf8_lossy(&run.stdout);
    let log = String::from_utf8_lossy(&run.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    let start = dom.find("<pre id=\"selftest\">").expect("the check ran") + 20;
    let report = &dom[start..start + dom[start..].find("</pre>").unwrap()];
    let charts = report.lines().filter(|l| l.starts_with("chart ")).count();
    assert!(charts >= 8, "{report}");
    assert!(!report.contains("hidden"), "{report}");
    assert!(report.contains("sort ok"), "{report}");
    // The page's script added a filter box to every table.
    let tables = html.matches("<table class=\"data\">").count();
    assert!(report.contains(&format!("controls {tables}")), "{report}");

    // A screenshot of the page as it is, kept for people to look at.
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("report-page.png");
    let run = headless(
        &browser,
        &[
            "--window-size=1400,6000".into(),
            format!("--screenshot={}", shot.display()),
            format!("file://{}", out.join("index.html").display()),
        ],
    );
    assert!(run.status.success());
    assert!(std::fs::metadata(&shot).unwrap().len() > 10_000);
}
