//! Finding and reading one table of an experiment: `<stem>.parquet` or `<stem>.csv`.
//!
//! Reading goes through a Polars lazy scan with the projection pushed down: only the columns a
//! table's [`Col`] specs name are read. Column types are checked against the specs before anything
//! is collected, so a mistyped column is reported by name rather than as a Polars cast failure.
//! Before Polars sees a Parquet file, its magic bytes are checked so that an empty, non-Parquet or
//! truncated file gets an error that says which of the three it is.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use polars::prelude::*;

use crate::error::{Error, Result};

mod column;
mod schema;

pub use ablate_core::data::table_file::{Format, TableFile, given_file};
pub use column::{
    Table, check_id, check_non_negative, check_token_counts, check_unique, read, read_coded,
    refused_in_id, split_list,
};
pub use schema::{
    Col, Kind, OUTSIDE_RANGE_FIX, check_columns, declared_range, is_text, near_miss,
    refuse_scores_outside,
};

/// Finds `<stem>.parquet` or `<stem>.csv` in `dir`.
///
/// # Errors
/// Both files exist (the choice would be silent), or the folder cannot be read.
pub fn find(dir: &Path, stem: &str) -> Result<Option<TableFile>> {
    let parquet = dir.join(format!("{stem}.parquet"));
    let csv = dir.join(format!("{stem}.csv"));
    // Whether the table is there as a file. A FIFO, socket, device or folder in its place is
    // neither read (a FIFO would wait for a writer) nor taken for an absent table.
    let present = |path: &std::path::PathBuf| match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(true),
        Ok(_) => Err(Error::Unreadable {
            path: path.clone(),
            problem:
                "is not a plain file (a folder, FIFO, socket or device), so it cannot be a table"
                    .into(),
            fix: format!("put the {stem} table there as a Parquet or CSV file, or move this away"),
        }),
        Err(_) => Ok(false),
    };
    match (present(&parquet)?, present(&csv)?) {
        (true, true) => Err(Error::Unreadable {
            path: parquet,
            problem: format!("both {stem}.parquet and {stem}.csv exist"),
            fix: "keep one of them so that it is clear which one is analysed".into(),
        }),
        (true, false) => Ok(Some(TableFile::at(parquet))),
        (false, true) => Ok(Some(TableFile::at(csv))),
        (false, false) => Ok(None),
    }
}

/// Checks a Parquet file before Polars opens it, in one open of the file: non-empty, starts and
/// ends with `PAR1`, and its footer's ranges lie inside it ([`check_parquet_ranges`]).
fn check_parquet(path: &Path) -> Result<()> {
    let unreadable = |problem: &str, fix: &str| Error::Unreadable {
        path: path.to_path_buf(),
        problem: problem.into(),
        fix: fix.into(),
    };
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
    if len == 0 {
        return Err(unreadable(
            "the file is empty (0 bytes)",
            "re-export the table; an interrupted write leaves an empty file",
        ));
    }
    let mut head = [0u8; 4];
    let got = f.read(&mut head).map_err(|e| Error::io(path, e))?;
    if got < 4 || &head != b"PAR1" {
        return Err(unreadable(
            "not a Parquet file (it does not start with the PAR1 magic bytes)",
            "write it with a Parquet writer, or give it a .csv extension if it is CSV",
        ));
    }
    let mut tail = [0u8; 4];
    let ok_tail = len >= 12
        && f.seek(SeekFrom::End(-4)).is_ok()
        && f.read_exact(&mut tail).is_ok()
        && &tail == b"PAR1";
    if !ok_tail {
        return Err(unreadable(
            "truncated Parquet file (the footer is missing)",
            "the file was cut short while being written or copied; export it again",
        ));
    }
    check_parquet_ranges(path, &mut f, len)
}

/// Checks that every column chunk the Parquet footer lists lies inside the file. Polars' streaming
/// reader slices the file by these ranges without checking them (an out-of-bounds read, which a
/// debug build aborts on: found by the `parquet_table` fuzz target), so a damaged or hand-edited
/// footer is refused here, naming the row group and column.
fn check_parquet_ranges(path: &Path, f: &mut File, len: u64) -> Result<()> {
    use polars_parquet::parquet::read::read_metadata;
    let unreadable = |problem: String| Error::Unreadable {
        path: path.to_path_buf(),
        problem,
        fix: "the file is damaged; write it again with a Parquet writer".into(),
    };
    // polars-parquet's footer decoder panics on some damaged footers (one byte 0 → 158 in a
    // statistics struct: `expect("thrift bool field")`, exit 101); caught here, as bad input.
    let meta = match no_panic(|| read_metadata(f)) {
        Ok(Ok(meta)) => meta,
        Ok(Err(e)) => {
            return Err(unreadable(format!(
                "not a readable Parquet file: its footer cannot be read ({e})"
            )));
        }
        Err(panic) => {
            return Err(unreadable(format!(
                "not a readable Parquet file: its footer (the metadata at the end of the file) is damaged (the Parquet decoder stopped: {panic})"
            )));
        }
    };
    for (g, group) in meta.row_groups.iter().enumerate() {
        for column in group.parquet_columns() {
            let range = column.byte_range();
            if range.start > range.end || range.end > len {
                return Err(unreadable(format!(
                    "row group {g}, column `{}`: the footer places its data at bytes {}..{} of a {len}-byte file",
                    column.descriptor().path_in_schema.join("."),
                    range.start,
                    range.end
                )));
            }
        }
        let full = group.full_byte_range();
        if full.start > full.end || full.end > len {
            return Err(unreadable(format!(
                "row group {g}: the footer places its data at bytes {}..{} of a {len}-byte file",
                full.start, full.end
            )));
        }
    }
    Ok(())
}

thread_local! {
    /// Set while [`no_panic`] runs on this thread: the panic hook then prints nothing.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, which may panic inside a library on damaged input (polars-parquet `expect`s what a
/// footer should hold), and returns the panic's message instead of letting it end the process
/// with exit 101 and a backtrace. The panic hook is wrapped once, to print nothing on a thread
/// while it runs `f`; a panic on any other thread, or outside `f`, prints as before.
///
/// # Errors
/// `f` panicked: its message.
pub fn no_panic<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(std::cell::Cell::get) {
                default(info);
            }
        }));
    });
    let was = QUIET.with(|q| q.replace(true));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    outcome.map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into())
    })
}

/// Opens a lazy scan of a table. For CSV, the columns named in `text_columns` are read as text.
///
/// # Errors
/// Empty, non-Parquet or truncated files; files Polars cannot open.
pub fn scan(file: &TableFile, text_columns: &[&str]) -> Result<LazyFrame> {
    let path_str = file.path.to_string_lossy().to_string();
    let opened = match file.format {
        Format::Parquet => {
            check_parquet(&file.path)?;
            LazyFrame::scan_parquet(PlRefPath::new(path_str), ScanArgsParquet::default())
        }
        Format::Csv => {
            let len = std::fs::metadata(&file.path)
                .map_err(|e| Error::io(&file.path, e))?
                .len();
            if len == 0 {
                return Err(Error::Unreadable {
                    path: file.path.clone(),
                    problem: "the file is empty (0 bytes)".into(),
                    fix: "write a header line and at least one row".into(),
                });
            }
            let overwrite: Schema = text_columns
                .iter()
                .map(|c| Field::new((*c).into(), DataType::String))
                .collect();
            let blank = trailing_blank_lines(&file.path)?;
            LazyCsvReader::new(PlRefPath::new(path_str))
                .with_has_header(true)
                .with_infer_schema_length(None)
                .with_dtype_overwrite(Some(Arc::new(overwrite)))
                .finish()
                .map(|lf| without_last_rows(lf, blank))
        }
    };
    opened.map_err(|e| polars_unreadable(&file.path, e))
}

/// How many blank lines (`\n` or `\r\n` alone) end a CSV file, looked for in its last 64 KiB.
/// Editors and scripts often leave them; Polars reads each as a row of nulls, which would be
/// refused as a missing `case_id` (pandas and most CSV tools skip them).
fn trailing_blank_lines(path: &Path) -> Result<usize> {
    use std::io::{Read, Seek, SeekFrom};
    const TAIL: u64 = 64 * 1024;
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
    let start = len.saturating_sub(TAIL);
    f.seek(SeekFrom::Start(start))
        .map_err(|e| Error::io(path, e))?;
    let mut tail = Vec::with_capacity((len - start) as usize);
    f.read_to_end(&mut tail).map_err(|e| Error::io(path, e))?;
    Ok(count_trailing_blank_lines(&tail))
}

/// The blank lines at the end of `text`: lines after the last one with any byte but `\r`.
/// `"a\n"` has none, `"a\n\n"` one, `"a\n\r\n\n"` two; a last line without its newline
/// counts only if it is empty of everything but `\r`.
fn count_trailing_blank_lines(text: &[u8]) -> usize {
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    body.split(|b| *b == b'\n')
        .rev()
        .take_while(|line| line.iter().all(|b| *b == b'\r'))
        .count()
        // The split of a file that is all newlines yields one piece more than it has lines.
        .min(body.iter().filter(|b| **b == b'\n').count())
}

/// `lf` without its last `k` rows (the trailing blank lines of a CSV): counted, then sliced.
/// Costs a count of the rows, and only when a file ends in blank lines.
fn without_last_rows(lf: LazyFrame, k: usize) -> LazyFrame {
    if k == 0 {
        return lf;
    }
    match row_count(lf.clone()) {
        Some(rows) => lf.slice(0, rows.saturating_sub(k) as IdxSize),
        None => lf,
    }
}

/// Maps a Polars read failure on an input file to an input error.
pub fn polars_unreadable(path: &Path, e: PolarsError) -> Error {
    if let Some(ragged) = ragged_csv_row(path, &e) {
        return ragged;
    }
    if let Some(line) = unclosed_quote(path) {
        return Error::Unreadable {
            path: path.to_path_buf(),
            problem: format!(
                "line {line} opens a quoted field (\") that is never closed, so the rest of the file reads as one value"
            ),
            fix: "close the quote on that line, or write a quote inside a value as two (\"\"); quote a value only when it holds a comma, a quote or a line break".into(),
        };
    }
    // Polars' advice names options of its Python API (`infer_schema_length`, `ignore_errors`),
    // which ablate does not take: only its first paragraph is said.
    let text = e.to_string();
    let text = text.split("\n\n").next().unwrap_or_default().trim();
    Error::Unreadable {
        path: path.to_path_buf(),
        problem: format!("cannot be read as a table ({text})"),
        fix: "check that the file is a complete Parquet or CSV table".into(),
    }
}

/// The line of a CSV file on which a quoted field opens and is never closed (RFC 4180: `"`
/// opens and closes a quoted field, `""` inside one is a quote), or `None` when every quote
/// closes, or the file is not a CSV.
fn unclosed_quote(path: &Path) -> Option<usize> {
    let csv_file = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    if !csv_file {
        return None;
    }
    // Streamed: the file may be large, and this runs only once Polars has refused it.
    let bytes = std::io::BufReader::new(File::open(path).ok()?).bytes();
    let (mut line, mut quoted, mut opened) = (1, false, 0);
    for b in bytes {
        match b.ok()? {
            b'"' => {
                quoted = !quoted;
                if quoted {
                    opened = line;
                }
            }
            b'\n' => line += 1,
            _ => {}
        }
    }
    quoted.then_some(opened)
}

/// A CSV row with another number of fields than the header, named by its line: Polars refuses
/// the file without saying where ("found more fields than defined in 'Schema'"), and advises an
/// option of its own. `None` for any other error, or when no such row is found.
fn ragged_csv_row(path: &Path, e: &PolarsError) -> Option<Error> {
    let text = e.to_string();
    if !text.contains("fields") {
        return None;
    }
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .ok()?;
    let header = reader.headers().ok()?.len();
    for record in reader.records() {
        let record = record.ok()?;
        if record.len() != header {
            let line = record.position().map_or(0, csv::Position::line);
            return Some(Error::Unreadable {
                path: path.to_path_buf(),
                problem: format!(
                    "line {line} has {} fields where the header has {header}",
                    record.len()
                ),
                fix: "quote values that hold a comma (\"a, b\"), or mend that row where the file is made; every row needs one value per header column".into(),
            });
        }
    }
    None
}

/// Runs a lazy query on Polars' streaming engine (bounded memory on large logs).
///
/// # Errors
/// Polars fails on the file.
pub fn collect_streaming(lf: LazyFrame, path: &Path) -> Result<DataFrame> {
    lf.collect_with_engine(Engine::Streaming)
        .map(|r| r.unwrap_single())
        .map_err(|e| polars_unreadable(path, e))
}

/// The schema of a table, without reading its rows.
///
/// # Errors
/// As [`scan`].
pub fn schema(file: &TableFile, text_columns: &[&str]) -> Result<SchemaRef> {
    let mut lf = scan(file, text_columns)?;
    lf.collect_schema()
        .map_err(|e| polars_unreadable(&file.path, e))
}

/// Number of rows of a scan, if it can be counted.
pub fn row_count(lf: LazyFrame) -> Option<usize> {
    let df = lf.select([len().alias("rows")]).collect().ok()?;
    let v = df.column("rows").ok()?.get(0).ok()?;
    v.extract::<u64>().map(|n| n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_blank_lines_are_counted_and_nothing_else() {
        assert_eq!(count_trailing_blank_lines(b"a,b\n1,2\n"), 0);
        assert_eq!(count_trailing_blank_lines(b"a,b\n1,2"), 0);
        assert_eq!(count_trailing_blank_lines(b"a,b\n1,2\n\n"), 1);
        assert_eq!(count_trailing_blank_lines(b"a,b\n1,2\n\r\n\n"), 2);
        assert_eq!(count_trailing_blank_lines(b"a,b\n1,2\n\n\n"), 2);
        assert_eq!(count_trailing_blank_lines(b"a,b\n1,2\n\n "), 0);
        assert_eq!(count_trailing_blank_lines(b"a,b\n\n1,2\n"), 0);
        assert_eq!(count_trailing_blank_lines(b"\n\n"), 1);
    }

    /// A CSV ending in blank lines reads as its rows alone, for any reader built on `scan`.
    #[test]
    fn a_csv_ending_in_blank_lines_reads_without_them() {
        let dir = std::env::temp_dir().join(format!("ablate-blank-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (tail, rows) in [("", 2), ("\n", 2), ("\n\n\n", 2), ("\r\n\r\n", 2)] {
            let path = dir.join("t.csv");
            std::fs::write(&path, format!("a,b\n1,2\n3,4\n{tail}")).unwrap();
            let file = TableFile {
                path: path.clone(),
                format: Format::Csv,
            };
            let df = scan(&file, &[]).unwrap().collect().unwrap();
            assert_eq!(df.height(), rows, "{tail:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn split_list_handles_blanks_and_spaces() {
        assert_eq!(split_list(""), Vec::<String>::new());
        assert_eq!(split_list(" a ; b;;c "), vec!["a", "b", "c"]);
    }

    #[test]
    fn kind_accepts_widening_only() {
        assert!(Kind::Float.accepts(&DataType::Int32));
        assert!(Kind::Float.accepts(&DataType::Float32));
        assert!(!Kind::Float.accepts(&DataType::String));
        assert!(Kind::Int.accepts(&DataType::UInt16));
        // pandas' float64 integers are accepted and checked for whole values when read.
        assert!(Kind::Int.accepts(&DataType::Float64));
        assert!(!Kind::Int.accepts(&DataType::String));
        assert!(Kind::Bool.accepts(&DataType::Null));
        assert!(Kind::StrList.accepts(&DataType::List(Box::new(DataType::String))));
        assert!(!Kind::StrList.accepts(&DataType::List(Box::new(DataType::Int64))));
    }

    #[test]
    fn check_unique_names_second_row() {
        let err = check_unique(Path::new("t.csv"), "case_id", ["a", "b", "a"]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("row 3"), "{msg}");
        assert!(msg.contains("first seen at row 1"), "{msg}");
    }

    #[test]
    fn non_negative_reports_first_bad_value() {
        let err = check_non_negative(Path::new("u.csv"), "tokens", &[1.0, -2.0, -3.0]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("row 2") && msg.contains("-2"), "{msg}");
    }

    /// One pass finds the first bad count of either kind, and names its problem.
    #[test]
    fn token_counts_name_the_first_bad_value_of_either_kind() {
        let path = Path::new("u.csv");
        assert!(check_token_counts(path, "tokens", &[0.0, 1e12, 5.0]).is_ok());
        let high = check_token_counts(path, "tokens", &[1.0, 2e12, -3.0]).unwrap_err();
        let msg = high.to_string();
        assert!(
            msg.contains("row 2") && msg.contains("more than 10^12"),
            "{msg}"
        );
        let low = check_token_counts(path, "tokens", &[1.0, -2.0, 2e12]).unwrap_err();
        let msg = low.to_string();
        assert!(
            msg.contains("row 2") && msg.contains("must not be negative"),
            "{msg}"
        );
        assert!(msg.contains("token counts are zero or more"), "{msg}");
    }

    /// Every byte of the demo's cases.parquet footer set to 0, 158 and 255 in turn: the check
    /// accepts the file or refuses it naming the file, and never panics (issue 42, item 10: a
    /// damaged statistics struct made polars-parquet `expect` a boolean field, exit 101).
    #[test]
    fn a_damaged_footer_is_refused_not_a_panic() {
        let demo = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("notebooks-data/support-eval-v3");
        let original = std::fs::read(demo.join("cases.parquet")).unwrap();
        let len = original.len();
        let footer = u32::from_le_bytes(original[len - 8..len - 4].try_into().unwrap()) as usize;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cases.parquet");
        let mut refused = 0;
        for at in len - 8 - footer..len - 8 {
            for value in [0u8, 158, 255] {
                if original[at] == value {
                    continue;
                }
                let mut bytes = original.clone();
                bytes[at] = value;
                std::fs::write(&path, &bytes).unwrap();
                if let Err(e) = check_parquet(&path) {
                    let msg = e.to_string();
                    assert!(msg.contains("cases.parquet"), "byte {at} = {value}: {msg}");
                    refused += 1;
                }
            }
        }
        assert!(refused > 0, "some corruptions are refused");
    }
}
