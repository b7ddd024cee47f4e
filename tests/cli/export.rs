//! `--export DIR`: every verb's tables as Parquet, with the declared columns and types, the same
//! values as its `--json`, provenance in the metadata, and the README's schema section generated
//! from the same declarations.

use crate::common;

use std::path::Path;

use ablate::export::spec::{self, Kind};
use common::{Workdir, ablate, assert_mentions, demo, fails, json};
use polars::prelude::*;

fn read(path: &Path) -> DataFrame {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ParquetReader::new(file).finish().unwrap()
}

fn dtype(kind: Kind) -> DataType {
    match kind {
        Kind::Str => DataType::String,
        Kind::F64 => DataType::Float64,
        Kind::I64 => DataType::Int64,
        Kind::Bool => DataType::Boolean,
        Kind::ListStr => DataType::List(Box::new(DataType::String)),
        Kind::ListF64 => DataType::List(Box::new(DataType::Float64)),
    }
}

/// Every file of the folder has exactly the declared columns, in order, with their types.
fn declared_schema(dir: &Path, verb: &str, prefix: &str) {
    for s in spec::tables(verb) {
        let df = read(&dir.join(format!("{prefix}{}.parquet", s.name)));
        let want: Vec<(String, DataType)> = s
            .columns()
            .iter()
            .map(|c| (c.name.to_string(), dtype(c.kind)))
            .collect();
        let got: Vec<(String, DataType)> = df
            .columns()
            .iter()
            .map(|c| (c.name().to_string(), c.dtype().clone()))
            .collect();
        assert_eq!(got, want, "{verb}.{}", s.name);
    }
}

fn run_verb(verb: &str, out: &Path) -> serde_json::Value {
    common::run_demo_verb(verb, Some(out))
}

#[test]
fn every_verb_exports_its_declared_tables_with_the_json_values() {
    let root = tempfile::tempdir().unwrap();
    for verb in spec::groups() {
        let out = root.path().join(verb);
        let j = run_verb(verb, &out);
        declared_schema(&out, verb, "");
        let mut files: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".parquet"))
            .collect();
        files.sort();
        let mut want: Vec<String> = spec::tables(verb)
            .iter()
            .map(|s| format!("{}.parquet", s.name))
            .collect();
        want.sort();
        assert_eq!(files, want, "{verb}");
        // Rows tables hold as many rows as the JSON array, in its order.
        for s in spec::tables(verb) {
            if s.shape == spec::Shape::Rows && !s.at.contains("[]") {
                let n = j
                    .pointer(&format!("/{}", s.at.replace('.', "/")))
                    .and_then(|v| v.as_array())
                    .map_or(0, Vec::len);
                let df = read(&out.join(format!("{}.parquet", s.name)));
                assert_eq!(df.height(), n, "{verb}.{}", s.name);
            }
        }
    }
}

#[test]
fn sweep_arms_equal_the_json_value_for_value() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("sweep");
    let j = run_verb("sweep", &out);
    let df = read(&out.join("arms.parquet"));
    let arms = j["arms"].as_array().unwrap();
    assert_eq!(df.height(), arms.len());
    let drop = df.column("drop").unwrap().f64().unwrap();
    let ci_low = df.column("ci_low").unwrap().f64().unwrap();
    let verdict = df.column("verdict").unwrap().str().unwrap();
    let removed = df.column("removed").unwrap().list().unwrap();
    for (i, a) in arms.iter().enumerate() {
        assert_eq!(drop.get(i), a["drop"].as_f64(), "drop of {}", a["arm"]);
        assert_eq!(ci_low.get(i), a["ci_low"].as_f64());
        assert_eq!(verdict.get(i), a["verdict"].as_str());
        let inner = removed.get_as_series(i).unwrap();
        let inner = inner.str().unwrap();
        let units: Vec<String> = (0..inner.len())
            .map(|k| inner.get(k).unwrap().to_string())
            .collect();
        let want: Vec<String> = a["removed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u.as_str().unwrap().to_string())
            .collect();
        assert_eq!(units, want, "a list stays a list");
    }
    // lost_by_slice: one row per (arm, slice), summing to each arm's lost cases.
    let lost = read(&out.join("lost_by_slice.parquet"));
    let total: i64 = lost
        .column("lost_cases")
        .unwrap()
        .i64()
        .unwrap()
        .sum()
        .unwrap();
    let want: i64 = arms
        .iter()
        .flat_map(|a| a["lost_by_slice"].as_object().unwrap().values())
        .map(|v| v.as_i64().unwrap())
        .sum();
    assert_eq!(total, want);
}

#[test]
fn the_metadata_carries_provenance() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("sweep");
    run_verb("sweep", &out);
    let record = json(ablate().args(["record", "--bootstrap", "200"]).arg(demo()));
    let file = std::fs::File::open(out.join("arms.parquet")).unwrap();
    let mut reader = ParquetReader::new(file);
    let md = reader.get_metadata().unwrap().clone();
    let kv: std::collections::BTreeMap<String, String> = md
        .key_value_metadata()
        .as_ref()
        .unwrap()
        .iter()
        .map(|kv| (kv.key.clone(), kv.value.clone().unwrap_or_default()))
        .collect();
    assert_eq!(kv["ablate.version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(kv["ablate.verb"], "sweep");
    assert_eq!(kv["ablate.table"], "arms");
    assert_eq!(kv["ablate.set"], "support-eval-v3");
    assert_eq!(
        kv["ablate.set_sha256"],
        record["set_sha256"].as_str().unwrap()
    );
    assert_eq!(kv["ablate.model"], record["model"].as_str().unwrap());
    assert_eq!(kv["ablate.seed"], "0");
    assert_eq!(kv["ablate.bootstrap"], "200");
    assert_eq!(kv["ablate.confidence"], "0.95");
    let command: Vec<String> = serde_json::from_str(&kv["ablate.command"]).unwrap();
    assert!(
        command
            .windows(2)
            .any(|w| w == ["--export".to_string(), out.display().to_string()])
    );
    assert!(command.iter().any(|a| a == "sweep"));
}

#[test]
fn report_exports_every_section_prefixed() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("tables");
    let page = root.path().join("page");
    // --per-arm: family-wise, no arm of the demo is confidently removable (397 clusters, 41 arms,
    // threshold 0.005), so there would be no joint cut to export.
    let o = ablate()
        .args([
            "report",
            "--quiet",
            "--per-arm",
            "--bootstrap",
            "200",
            "--export",
        ])
        .arg(&out)
        .arg(demo())
        .arg("--out")
        .arg(&page)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for section in spec::report_sections() {
        declared_schema(&out, section, &format!("{section}_"));
    }
    // The demo's per-arm decision: cut candidates not yet measured together, and the arm to run.
    let joint = read(&out.join("decision_joint_cut.parquet"));
    assert_eq!(joint.height(), 1, "the demo has a joint cut to confirm");
}

#[test]
fn export_never_replaces_a_folder_of_the_users() {
    let w = Workdir::empty();
    let mine = w.root.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("thesis.tex"), "precious").unwrap();
    let err = fails(
        ablate()
            .args(["sweep", "--bootstrap", "200", "--export"])
            .arg(&mine)
            .arg(demo()),
    );
    assert_mentions(&err, &["mine"]);
    assert_eq!(
        std::fs::read_to_string(mine.join("thesis.tex")).unwrap(),
        "precious"
    );
    // …and a second export replaces the first, which ablate wrote.
    let out = w.root.path().join("ours");
    run_verb("sweep", &out);
    run_verb("sweep", &out);
}

#[test]
fn export_is_refused_where_there_are_no_result_tables() {
    let w = Workdir::empty();
    // simulate and import write tables of their own (--out), and sql prints a query: none takes
    // --export, and clap refuses it before anything is written.
    for verb in ["simulate", "import", "sql"] {
        let err = fails(
            ablate()
                .arg(verb)
                .arg("--export")
                .arg(w.root.path().join("x")),
        );
        assert_mentions(&err, &["--export"]);
    }
    assert!(!w.root.path().join("x").exists());
}

#[test]
fn docs_document_the_exported_schema() {
    const START: &str = "<!-- generated from the export declarations: UPDATE_DOCS=1 cargo test --test cli docs_document -->\n";
    const END: &str = "<!-- end of the generated part -->";
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs")
        .join("tables.md");
    let page = std::fs::read_to_string(&path).unwrap();
    let (Some(start), Some(end)) = (page.find(START), page.find(END)) else {
        panic!("docs/tables.md lacks the markers of its generated part");
    };
    let generated = ablate::export::schema_markdown();
    let generated = generated.trim_end();
    let current = page[start + START.len()..end].trim_end();
    if current != generated && std::env::var_os("UPDATE_DOCS").is_some() {
        let updated = format!("{}{START}{generated}\n{}", &page[..start], &page[end..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert!(
        current == generated,
        "docs/tables.md is out of date: run UPDATE_DOCS=1 cargo test --test cli docs_document"
    );
}

#[test]
fn the_readme_verbs_table_lists_every_verb() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let listed: std::collections::BTreeSet<&str> = readme
        .lines()
        .filter_map(|l| l.strip_prefix("| `ablate "))
        .filter_map(|l| l.split([' ', '`']).next())
        .collect();
    let verbs: std::collections::BTreeSet<&str> =
        ablate::verb::Verb::ALL.iter().map(|v| v.name()).collect();
    assert_eq!(
        listed, verbs,
        "README.md's verbs table and the registry differ"
    );
}

/// The warning codes in the source, read from every `Warning::new("code", …)`.
fn warning_codes_in_source() -> std::collections::BTreeSet<String> {
    fn walk(dir: &Path, out: &mut std::collections::BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (at, _) in text.match_indices("Warning::new(") {
                    let rest = text[at + "Warning::new(".len()..].trim_start();
                    if let Some(code) = rest.strip_prefix('"').and_then(|r| r.split('"').next()) {
                        out.insert(code.to_string());
                    }
                }
            }
        }
    }
    let mut out = std::collections::BTreeSet::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    walk(&root.join("src"), &mut out);
    walk(&root.join("crates"), &mut out);
    out
}

#[test]
fn docs_list_every_warning_code() {
    let page = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("docs")
            .join("tables.md"),
    )
    .unwrap();
    let listed: std::collections::BTreeSet<String> = page
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .filter(|c| c.contains('.'))
        .map(str::to_string)
        .collect();
    let codes = warning_codes_in_source();
    assert!(codes.len() >= 40, "{codes:?}");
    assert_eq!(
        listed, codes,
        "docs/tables.md's warning codes and the source differ"
    );
}

/// The column names of a terminal output's tables: each header row (the line above a rule of
/// `─`), split where two or more spaces separate names.
pub(crate) fn terminal_headers(text: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .filter(|w| w[1].starts_with('─'))
        .map(|w| {
            w[0].split("  ")
                .map(str::trim)
                .filter(|h| !h.is_empty())
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// Issue 46: one name for one thing. The columns a verb's terminal tables show are columns of
/// its exported DataFrames or keys of its JSON, and the report's CSVs use the same names: the
/// tables of arms, strata and budgets, which every output carries.
#[test]
fn terminal_csv_json_and_dataframes_share_their_column_names() {
    let root = tempfile::tempdir().unwrap();
    let mut every_column = std::collections::BTreeSet::new();
    for verb in [
        "sweep",
        "variance",
        "reweight",
        "stress",
        "interactions",
        "curve",
        "selector",
        "shadow",
    ] {
        let export = root.path().join(verb);
        let (out, _copy) = common::demo_verb(verb, Some(&export), false);
        assert!(
            out.status.success(),
            "{verb}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut columns = std::collections::BTreeSet::new();
        for entry in std::fs::read_dir(&export).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "parquet") {
                for name in read(&path).get_column_names() {
                    columns.insert(name.to_string());
                }
            }
        }
        // And the keys of its JSON (a map such as lost_by_slice is a table of its own there).
        fn keys(v: &serde_json::Value, into: &mut std::collections::BTreeSet<String>) {
            match v {
                serde_json::Value::Object(m) => {
                    for (k, x) in m {
                        into.insert(k.clone());
                        keys(x, into);
                    }
                }
                serde_json::Value::Array(a) => a.iter().for_each(|x| keys(x, into)),
                _ => {}
            }
        }
        keys(&common::run_demo_verb(verb, None), &mut columns);
        let text = String::from_utf8_lossy(&out.stdout);
        let tables = terminal_headers(&text);
        assert!(!tables.is_empty(), "{verb}: no table in\n{text}");
        let mut checked = 0;
        // The tables of rows (an arm, a stratum, a budget, a threshold each): the ones the
        // JSON, the CSVs and the DataFrames carry too.
        for headers in tables
            .iter()
            .filter(|h| ["arm", "stratum", "selector", "threshold"].contains(&h[0].as_str()))
        {
            for h in headers {
                assert!(
                    columns.contains(h),
                    "{verb}: the terminal's column `{h}` is no column of its DataFrames ({columns:?})"
                );
                checked += 1;
            }
        }
        // shadow's strata table needs --by; its columns are checked through the report's CSV.
        assert!(checked > 0 || verb == "shadow", "{verb}: {tables:?}");
        every_column.extend(columns);
    }
    // The report's CSVs, of the demo and of another simulated world: their headers are the same
    // names.
    let other = root.path().join("seed11");
    common::succeeds(
        ablate()
            .args(["simulate", "--seed", "11", "--cases", "300", "--out"])
            .arg(&other),
    );
    let csvs = [
        "drops",
        "production",
        "coverage",
        "stress",
        "interactions",
        "budget",
        "selector",
        "shadow",
    ];
    for (name, dir) in [("demo", demo()), ("seed11", other)] {
        let out = root.path().join(format!("rep-{name}"));
        common::report_into(&out, &dir);
        for csv in csvs {
            let file = out.join("tables").join(format!("{csv}.csv"));
            let text = std::fs::read_to_string(&file).unwrap();
            let header = text.lines().next().unwrap();
            for h in header.split(',') {
                assert!(
                    every_column.contains(h),
                    "{name}: tables/{csv}.csv: `{h}` is no column of the verbs' DataFrames"
                );
            }
        }
    }
}
