//! The layers of ARCHITECTURE.md that live in one crate, held by a test: the analyses read no
//! files and use no Polars (io loads, analysis computes), io knows no analysis, and the analyses
//! know no report. (The numerics are a crate of their own, `crates/ablate-stats`, with no Polars,
//! no I/O and no progress bars among its dependencies: the compiler holds that layer.)

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// Lines of code (comments left out) under `src/<layer>` that mention any of `forbidden`.
fn offences(layer: &str, forbidden: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(layer);
    let mut found = Vec::new();
    for file in rust_files(&root) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for f in forbidden {
                if code.contains(f) {
                    found.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
                }
            }
        }
    }
    found
}

#[test]
fn analysis_reads_no_files_and_uses_no_polars() {
    let found = offences("analysis", &["polars::", "std::fs", "File::open"]);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn io_knows_no_analysis() {
    let found = offences("io", &["crate::analysis"]);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn analysis_knows_no_report() {
    let found = offences("analysis", &["crate::report"]);
    assert!(found.is_empty(), "{}", found.join("\n"));
}
