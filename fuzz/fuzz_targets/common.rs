//! Shared by the fuzz targets: the tests' tiny experiment (`tests/fixtures/tiny/`, compiled in),
//! and each table's own loader run on one file that is rewritten for every input. No experiment
//! folder is built and no analysis runs, so a target makes thousands of executions per second.
//! Loading must return Ok or a bad-input error (exit code 2); a panic or an internal error (exit
//! code 1) is a finding.

use std::path::PathBuf;
use std::sync::OnceLock;

use ablate::io::prelude::*;
use ablate::io::table::TableFile;
use ablate::io::{Arms, Cases, Mix, Results, Units};

const CASES: &[u8] = include_bytes!("../../tests/fixtures/tiny/cases.csv");

/// The tables a target can replace, by file stem.
pub const TABLES: [&str; 5] = ["results", "cases", "arms", "units", "mix"];

/// A folder that lives as long as the fuzzing process.
fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap().keep())
}

/// The tiny experiment's cases, which `results` is read against.
fn cases() -> &'static Cases {
    static CASES_TABLE: OnceLock<Cases> = OnceLock::new();
    CASES_TABLE.get_or_init(|| {
        let path = scratch().join("fixture-cases.csv");
        std::fs::write(&path, CASES).unwrap();
        Cases::load(&TableFile::at(path)).expect("the tiny fixture's cases load")
    })
}

/// Writes `body` as table `stem` (`ext`: csv or parquet) and reads it with that table's loader.
pub fn load_table(stem: &str, ext: &str, body: &[u8]) {
    let path = scratch().join(format!("{stem}.{ext}"));
    std::fs::write(&path, body).unwrap();
    let file = TableFile::at(path);
    let outcome = match stem {
        "results" => Results::load(&file, cases(), 0.5, None).map(drop),
        "cases" => Cases::load(&file).map(drop),
        "arms" => Arms::load(&file).map(drop),
        "units" => Units::load(&file).map(drop),
        "mix" => Mix::load(&file).map(drop),
        other => unreachable!("no table {other}"),
    };
    if let Err(e) = outcome {
        assert_eq!(e.exit_code(), 2, "internal error on table {stem}: {e}");
    }
}
