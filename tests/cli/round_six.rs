//! The sixth round (2026-12-05): defects the fifth attack found and left open. Each test names
//! what it protects: values a cast dropped without a word, columns refused with a misleading
//! message.

use crate::common;

use common::{Workdir, ablate, assert_mentions, fails, json};
use polars::prelude::*;

/// The tiny experiment with results.csv replaced by results.parquet, `tokens_in` stored as
/// unsigned 64-bit integers (as pyarrow writes `pa.uint64()`), one of them `value`.
fn tiny_with_u64_tokens(value: u64) -> Workdir {
    let w = Workdir::tiny();
    let path = w.path("results.csv");
    let mut df = CsvReadOptions::default()
        .with_has_header(true)
        .try_into_reader_with_file_path(Some(path.clone()))
        .unwrap()
        .finish()
        .unwrap();
    let tokens: Vec<u64> = (0..df.height())
        .map(|i| if i == 2 { value } else { 1000 + i as u64 })
        .collect();
    df.with_column(Column::new("tokens_in".into(), tokens))
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    let mut file = std::fs::File::create(w.path("results.parquet")).unwrap();
    ParquetWriter::new(&mut file).finish(&mut df).unwrap();
    w
}

#[test]
fn an_unsigned_integer_beyond_i64_is_refused_with_its_row_not_read_as_missing() {
    // Polars' cast of u64::MAX to i64 is null: the tokens went missing and the sweep went on.
    let w = tiny_with_u64_tokens(u64::MAX);
    let err = fails(ablate().args(["sweep", "--quiet"]).arg(&w.dir));
    assert_mentions(
        &err,
        &[
            "results.parquet",
            "tokens_in",
            "row 3",
            "18446744073709551615",
            "beyond the largest integer",
        ],
    );
    // Values that fit are read as before.
    let w = tiny_with_u64_tokens(5000);
    let out = json(ablate().args(["sweep", "--quiet", "--json"]).arg(&w.dir));
    assert!(out["arms"].as_array().is_some_and(|a| !a.is_empty()));
}

#[test]
fn a_csv_integer_beyond_i64_is_refused_with_its_line() {
    let w = Workdir::tiny();
    w.edit(
        "results.csv",
        "case_id,arm,repeat,score",
        "case_id,arm,repeat,score,tokens_in",
    );
    let text = std::fs::read_to_string(w.path("results.csv")).unwrap();
    let rows: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, line)| match i {
            0 => line.to_string(),
            4 => format!("{line},99999999999999999999999"),
            _ => format!("{line},1200"),
        })
        .collect();
    w.write("results.csv", &(rows.join("\n") + "\n"));
    let err = fails(ablate().args(["sweep", "--quiet"]).arg(&w.dir));
    assert_mentions(
        &err,
        &[
            "results.csv",
            "tokens_in",
            "line 5",
            "99999999999999999999999",
        ],
    );
}

#[test]
fn booleans_written_as_one_and_zero_are_read_and_other_integers_refused() {
    let w = Workdir::tiny();
    let before = json(ablate().args(["sweep", "--quiet", "--json"]).arg(&w.dir));
    let text = std::fs::read_to_string(w.path("cases.csv")).unwrap();
    w.write(
        "cases.csv",
        &text.replace(",false", ",0").replace(",true", ",1"),
    );
    let after = json(ablate().args(["sweep", "--quiet", "--json"]).arg(&w.dir));
    assert_eq!(before, after, "stress as 1/0 reads as stress as true/false");

    w.edit("cases.csv", "c2,billing,multi,2,0", "c2,billing,multi,2,2");
    let err = fails(ablate().args(["sweep", "--quiet"]).arg(&w.dir));
    assert_mentions(
        &err,
        &["cases.csv", "stress", "line 3", "true or false, or 1 or 0"],
    );
    // Both forms in one column: said, not "is text".
    w.edit(
        "cases.csv",
        "c2,billing,multi,2,2",
        "c2,billing,multi,2,false",
    );
    let err = fails(ablate().args(["sweep", "--quiet"]).arg(&w.dir));
    assert_mentions(&err, &["stress", "mixing true/false with 1/0", "one form"]);
}

/// Empties the cells of column `index` of the tiny experiment's cases.csv (the header stays).
fn blank_cases_column(w: &Workdir, index: usize) {
    let text = std::fs::read_to_string(w.path("cases.csv")).unwrap();
    let rows: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let mut cells: Vec<&str> = line.split(',').collect();
            if i > 0 {
                cells[index] = "";
            }
            cells.join(",")
        })
        .collect();
    w.write("cases.csv", &(rows.join("\n") + "\n"));
}

#[test]
fn an_optional_csv_column_left_empty_in_every_row_holds_no_value() {
    // Polars infers an all-empty CSV column as text; it was refused as "is text".
    let w = Workdir::tiny();
    blank_cases_column(&w, 3);
    let out = json(ablate().args(["sweep", "--quiet", "--json"]).arg(&w.dir));
    assert!(out["arms"].as_array().is_some_and(|a| !a.is_empty()));
    // A blank stress column is a main set with no stress cases, as a missing column is (it also
    // clashed with the cases' text attributes).
    blank_cases_column(&w, 4);
    let checked = json(ablate().args(["check", "--quiet", "--json"]).arg(&w.dir));
    assert_eq!(checked["stress_cases"], 0, "{checked}");
}
