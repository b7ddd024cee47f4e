//! A Parquet results file read page by page into [`Batch`]es: dictionary codes, not strings.
//!
//! Writers (pyarrow, pandas, Polars, DuckDB) dictionary-encode `case_id` and `arm`. Each row
//! group's dictionary is read once and each entry resolved once (a case to its index in the
//! cases table, an arm to a label); a row is then its dictionary index, decoded from the page's
//! run-length/bit-packed indices. No string is built or hashed per row. Plain-encoded pages are
//! read too (a string per row, as any reader must).
//!
//! The reader covers flat columns of the physical types results use (byte arrays, 32- and 64-bit
//! integers, floats, booleans) in the PLAIN and dictionary encodings, data pages v1 and v2 and
//! every compression Polars reads. Anything else (delta or byte-stream-split encodings,
//! decimals, unsigned 64-bit integers, integers stored as floats, nesting) is [`Unsupported`],
//! and the file is read by Polars instead: the two readers give identical matrices (tested),
//! down to the last bit unless a cell's rows straddle one reader's batch boundary.

use std::io::Cursor;
use std::path::Path;

use polars_buffer::Buffer;
use polars_parquet::parquet::encoding::Encoding;
use polars_parquet::parquet::encoding::hybrid_rle::{HybridRleChunk, HybridRleDecoder};
use polars_parquet::parquet::error::ParquetError;
use polars_parquet::parquet::metadata::{ColumnDescriptor, FileMetadata};
use polars_parquet::parquet::page::split_buffer;
use polars_parquet::parquet::read::{BasicDecompressor, get_page_iterator, read_metadata};
use polars_parquet::parquet::schema::types::{
    IntegerType, PhysicalType, PrimitiveConvertedType, PrimitiveLogicalType,
};

use super::decode::{Bools, Decoder, Fixed, Text};
use super::fold::{Batch, Kind, Strings, labels_in_order};
use crate::error::{Error, Result, Row};
use crate::io::cases::Cases;

/// Why the page reader hands a file to Polars.
#[derive(Debug)]
pub(super) struct Unsupported(pub String);

impl From<ParquetError> for Unsupported {
    fn from(e: ParquetError) -> Self {
        Unsupported(e.to_string())
    }
}

/// The page reader's outcome: a value, or the reason Polars must read the file.
pub(super) type Decoding<T> = std::result::Result<T, Unsupported>;

/// A column chunk's values, one per row, and when it has nulls each row's validity.
type Decoded<T> = (Vec<T>, Option<Vec<bool>>);

/// Largest page the reader accepts (Polars' own limit).
const MAX_PAGE: usize = 1 << 30;

/// Where each results column is in the file's leaf columns.
#[derive(Debug, Clone, Copy)]
struct Columns {
    case: usize,
    arm: usize,
    repeat: usize,
    score: usize,
    tokens: Option<usize>,
    passed: Option<usize>,
}

/// A Parquet results file whose columns the page reader can decode.
pub(super) struct ParquetResults {
    bytes: Buffer<u8>,
    meta: FileMetadata,
    columns: Columns,
    /// The file row of each row group's first row.
    starts: Vec<usize>,
}

impl ParquetResults {
    /// Reads the file and its footer. `Ok(None)` when a column is of a type or shape the page
    /// reader does not decode (Polars then reads the file).
    ///
    /// # Errors
    /// The file cannot be read.
    pub fn open(path: &Path) -> Result<std::result::Result<Self, Unsupported>> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let bytes = Buffer::from(bytes);
        let meta = match read_metadata(&mut Cursor::new(bytes.clone())) {
            Ok(meta) => meta,
            Err(e) => return Ok(Err(Unsupported(e.to_string()))),
        };
        Ok(Self::with(bytes, meta))
    }

    fn with(bytes: Buffer<u8>, meta: FileMetadata) -> std::result::Result<Self, Unsupported> {
        let leaves = meta.schema().columns();
        let find = |name: &str, ok: fn(&ColumnDescriptor) -> bool| {
            let found = leaves
                .iter()
                .position(|c| c.path_in_schema.len() == 1 && c.path_in_schema[0].as_str() == name);
            match found {
                Some(i) if flat(&leaves[i]) && ok(&leaves[i]) => Ok(Some(i)),
                Some(_) => Err(Unsupported(format!("column {name}: type or nesting"))),
                None => Ok(None),
            }
        };
        let required = |name: &str, ok| {
            find(name, ok)?.ok_or_else(|| Unsupported(format!("no flat column {name}")))
        };
        let columns = Columns {
            case: required("case_id", is_text)?,
            arm: required("arm", is_text)?,
            repeat: required("repeat", is_integer)?,
            score: required("score", is_number)?,
            tokens: find("tokens_in", is_integer)?,
            passed: find("passed", |c| physical(c) == PhysicalType::Boolean)?,
        };
        let mut starts = Vec::with_capacity(meta.row_groups.len());
        let mut next = 0;
        for group in &meta.row_groups {
            starts.push(next);
            next += group.num_rows();
        }
        Ok(ParquetResults {
            bytes,
            meta,
            columns,
            starts,
        })
    }

    /// Number of rows, from the footer.
    pub fn rows(&self) -> usize {
        self.meta.num_rows
    }

    /// Number of row groups.
    pub fn row_groups(&self) -> usize {
        self.meta.row_groups.len()
    }

    /// Whether the file has the optional columns (`tokens_in`, `passed`).
    pub fn has_optional(&self) -> (bool, bool) {
        (self.columns.tokens.is_some(), self.columns.passed.is_some())
    }

    /// Decodes row group `group` into a batch: ids resolved, problems noted.
    pub fn batch(&self, group: usize, cases: &Cases, path: &Path) -> Decoding<Batch> {
        let rows = self.meta.row_groups[group].num_rows();
        let first_row = self.starts[group];
        let c = self.columns;
        let mut batch = Batch {
            first_row,
            ..Batch::default()
        };
        let null_at = |valid: &Option<Vec<bool>>| {
            valid
                .as_ref()
                .and_then(|v| v.iter().position(|ok| !ok))
                .map(|i| first_row + i)
        };

        let ((case_codes, _), case_text) = self.text(group, c.case, rows)?;
        let ((arm_codes, _), arm_text) = self.text(group, c.arm, rows)?;
        batch.set_ids(
            (&case_codes, &case_text),
            (&arm_codes, &arm_text),
            cases,
            path,
        );

        let (repeat, valid) = self.integers(group, c.repeat, rows)?;
        if let Some(row) = null_at(&valid) {
            batch.problems.null(Kind::NullRepeat, path, "repeat", row);
        }
        batch.repeat = repeat;

        let (score, valid) = self.floats(group, c.score, rows)?;
        if let Some(row) = null_at(&valid) {
            batch.problems.null(Kind::NullScore, path, "score", row);
        }
        batch.score = score;
        // A null score reads as 0.0 here, which the score checks must not see as a problem.
        batch.check_scores(path);

        if let Some(column) = c.tokens {
            let (tokens, valid) = self.integers(group, column, rows)?;
            if let Some(i) = tokens
                .iter()
                .zip(0..)
                .position(|(t, i)| bad_tokens(*t) && valid.as_ref().is_none_or(|v| v[i]))
            {
                let row = first_row + i;
                batch
                    .problems
                    .note(Kind::BadTokens, row, bad_tokens_error(path, row, tokens[i]));
            }
            batch.tokens = Some(
                tokens
                    .iter()
                    .enumerate()
                    .map(|(i, &t)| {
                        if valid.as_ref().is_none_or(|v| v[i]) {
                            t as f64
                        } else {
                            f64::NAN
                        }
                    })
                    .collect(),
            );
        }
        if let Some(column) = c.passed {
            let mut decoder = Bools;
            let (flags, valid) = self.column(group, column, rows, &mut decoder)?;
            if let Some(row) = null_at(&valid) {
                batch.problems.null(Kind::NullPassed, path, "passed", row);
            }
            batch.passed = Some(flags);
        }
        Ok(batch)
    }

    /// Row group `group`'s arm labels in order of first appearance, with their file rows.
    pub fn arm_labels(&self, group: usize) -> Decoding<Vec<(String, usize)>> {
        let rows = self.meta.row_groups[group].num_rows();
        let ((codes, _), text) = self.text(group, self.columns.arm, rows)?;
        Ok(labels_in_order(&codes, &text, self.starts[group]))
    }

    /// A text column: per-row codes into a dictionary of strings, the validity, the dictionary.
    fn text(&self, group: usize, column: usize, rows: usize) -> Decoding<(Decoded<u32>, Strings)> {
        let mut decoder = Text::default();
        let codes = self.column(group, column, rows, &mut decoder)?;
        Ok((codes, decoder.dictionary))
    }

    /// An integer column as i64.
    fn integers(&self, group: usize, column: usize, rows: usize) -> Decoding<Decoded<i64>> {
        let descriptor = self.meta.row_groups[group].parquet_columns()[column].descriptor();
        let unsigned = matches!(
            descriptor.descriptor.primitive_type.logical_type,
            Some(PrimitiveLogicalType::Integer(
                IntegerType::UInt8 | IntegerType::UInt16 | IntegerType::UInt32
            ))
        );
        match physical(descriptor) {
            PhysicalType::Int32 => {
                let (v, valid) = self.column(group, column, rows, &mut Fixed::<i32>::default())?;
                let widen = |x: i32| {
                    if unsigned {
                        i64::from(x as u32)
                    } else {
                        i64::from(x)
                    }
                };
                Ok((v.into_iter().map(widen).collect(), valid))
            }
            _ => self.column(group, column, rows, &mut Fixed::<i64>::default()),
        }
    }

    /// A number column as f64 (integers converted as Polars casts them).
    fn floats(&self, group: usize, column: usize, rows: usize) -> Decoding<Decoded<f64>> {
        let descriptor = self.meta.row_groups[group].parquet_columns()[column].descriptor();
        match physical(descriptor) {
            PhysicalType::Double => self.column(group, column, rows, &mut Fixed::<f64>::default()),
            PhysicalType::Float => {
                let (v, valid) = self.column(group, column, rows, &mut Fixed::<f32>::default())?;
                Ok((v.into_iter().map(f64::from).collect(), valid))
            }
            _ => {
                let (v, valid) = self.integers(group, column, rows)?;
                Ok((v.into_iter().map(|x| x as f64).collect(), valid))
            }
        }
    }

    /// Decodes one column chunk, page by page: its values (nulls as [`Decoder::NULL`]) and,
    /// when it has nulls, the validity of each row.
    fn column<D: Decoder>(
        &self,
        group: usize,
        column: usize,
        rows: usize,
        decoder: &mut D,
    ) -> Decoding<Decoded<D::Value>> {
        let meta = &self.meta.row_groups[group].parquet_columns()[column];
        let has_levels = meta.descriptor().descriptor.max_def_level > 0;
        let pages = get_page_iterator(meta, Cursor::new(self.bytes.clone()), Vec::new(), MAX_PAGE)?;
        let mut pages = BasicDecompressor::new(pages, Vec::new());
        if let Some(page) = pages.read_dict_page()? {
            decoder.dictionary(&page.buffer, page.num_values)?;
        }
        let mut values = Vec::with_capacity(rows);
        let mut validity: Option<Vec<bool>> = None;
        while let Some(item) = pages.next() {
            let page = item?.decompress(&mut pages)?;
            let n = page.num_values();
            let split = split_buffer(&page)?;
            let valid = if has_levels {
                if page.definition_level_encoding() != Encoding::Rle {
                    return Err(Unsupported("bit-packed definition levels".into()));
                }
                page_validity(split.def, n)?
            } else {
                None
            };
            let present = valid
                .as_ref()
                .map_or(n, |v: &Vec<bool>| v.iter().filter(|ok| **ok).count());
            let start = values.len();
            match page.encoding() {
                Encoding::Plain => decoder.plain(split.values, present, &mut values)?,
                Encoding::RleDictionary | Encoding::PlainDictionary => {
                    let (&width, indices) = split
                        .values
                        .split_first()
                        .ok_or_else(|| Unsupported("empty dictionary-index page".into()))?;
                    if width > 32 {
                        return Err(Unsupported(format!("dictionary indices of {width} bits")));
                    }
                    let indices =
                        HybridRleDecoder::new(indices, u32::from(width), present).collect()?;
                    decoder.indexed(&indices, &mut values)?;
                }
                other => return Err(Unsupported(format!("{other:?} encoding"))),
            }
            if values.len() != start + present {
                return Err(Unsupported(
                    "a page holds fewer values than it declares".into(),
                ));
            }
            if let Some(valid) = valid {
                // Spread the page's values over its rows, nulls as the default value.
                let present_values = values.split_off(start);
                let mut it = present_values.into_iter();
                let all = validity.get_or_insert_with(|| vec![true; start]);
                for ok in valid {
                    values.push(if ok {
                        it.next().unwrap_or(D::NULL)
                    } else {
                        D::NULL
                    });
                    all.push(ok);
                }
            } else if let Some(all) = validity.as_mut() {
                all.resize(values.len(), true);
            }
            pages.reuse_page_buffer(page);
        }
        if values.len() != rows {
            return Err(Unsupported(format!(
                "column chunk holds {} values for {rows} rows",
                values.len()
            )));
        }
        Ok((values, validity))
    }
}

/// A page's validity from its definition levels (bit width 1 for a flat nullable column):
/// `None` when every row has a value. Writers store a column without nulls as one run of 1s,
/// which is read without decoding a level per row.
fn page_validity(levels: &[u8], n: usize) -> Decoding<Option<Vec<bool>>> {
    let mut valid: Option<Vec<bool>> = None;
    let mut seen = 0;
    for chunk in HybridRleDecoder::new(levels, 1, n).into_chunk_iter() {
        match chunk? {
            HybridRleChunk::Rle(1, len) if valid.is_none() => seen += len,
            HybridRleChunk::Rle(level, len) => {
                let v = valid.get_or_insert_with(|| vec![true; seen]);
                v.resize(v.len() + len, level == 1);
            }
            HybridRleChunk::Bitpacked(decoder) => {
                let mut levels = Vec::with_capacity(decoder.len());
                decoder.collect_into(&mut levels);
                if valid.is_none() && levels.iter().all(|l| *l == 1) {
                    seen += levels.len();
                } else {
                    let v = valid.get_or_insert_with(|| vec![true; seen]);
                    v.extend(levels.iter().map(|l| *l == 1));
                }
            }
        }
    }
    let decoded = valid.as_ref().map_or(seen, Vec::len);
    if decoded != n {
        return Err(Unsupported(format!(
            "a page declares {n} values but its levels hold {decoded}"
        )));
    }
    Ok(valid)
}

/// The error for a `tokens_in` that [`bad_tokens`] refuses: negative, or above 10¹².
pub(super) fn bad_tokens_error(path: &Path, row: usize, value: i64) -> Error {
    Error::BadValue {
        path: path.to_path_buf(),
        column: "tokens_in".into(),
        row: Row::at(row),
        value: value.to_string(),
        problem: if value < 0 {
            "must not be negative".into()
        } else {
            format!(
                "is more than {} tokens, beyond any context window (sums of such counts overflow)",
                crate::logs::MAX_TOKENS
            )
        },
        fix: "token counts are zero to 10^12; fix them where the results are made (the harness, or the script that wrote this file)".into(),
    }
}

/// Whether a call's token count is one ablate refuses: negative, or above
/// [`crate::logs::MAX_TOKENS`].
pub(super) fn bad_tokens(t: i64) -> bool {
    !(0..=crate::logs::MAX_TOKENS).contains(&t)
}

fn physical(c: &ColumnDescriptor) -> PhysicalType {
    c.descriptor.primitive_type.physical_type
}

/// A top-level column of plain values (nullable or not), not a list or struct.
fn flat(c: &ColumnDescriptor) -> bool {
    c.descriptor.max_rep_level == 0 && c.descriptor.max_def_level <= 1
}

fn is_text(c: &ColumnDescriptor) -> bool {
    physical(c) == PhysicalType::ByteArray
}

/// A 32- or 64-bit integer that fits in i64 (not unsigned 64-bit, not a decimal or a date).
fn is_integer(c: &ColumnDescriptor) -> bool {
    let t = &c.descriptor.primitive_type;
    matches!(t.physical_type, PhysicalType::Int32 | PhysicalType::Int64)
        && match t.logical_type {
            None => t.converted_type.is_none_or(|c| {
                matches!(
                    c,
                    PrimitiveConvertedType::Int8
                        | PrimitiveConvertedType::Int16
                        | PrimitiveConvertedType::Int32
                        | PrimitiveConvertedType::Int64
                        | PrimitiveConvertedType::Uint8
                        | PrimitiveConvertedType::Uint16
                        | PrimitiveConvertedType::Uint32
                )
            }),
            Some(PrimitiveLogicalType::Integer(i)) => i != IntegerType::UInt64,
            Some(_) => false,
        }
}

/// A float or double without a logical type, or an integer as in [`is_integer`].
fn is_number(c: &ColumnDescriptor) -> bool {
    let t = &c.descriptor.primitive_type;
    match t.physical_type {
        PhysicalType::Float | PhysicalType::Double => {
            t.logical_type.is_none() && t.converted_type.is_none()
        }
        _ => is_integer(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::prelude::*;
    use crate::io::table::TableFile;

    /// Every byte of a pyarrow-written file's pages (v2, snappy, dictionary and plain) set to
    /// 0xFF in turn: the page reader decodes, or refuses with a reason (and Polars reads the
    /// file), and never panics. The footer is left alone: `table::check_parquet` reads it first.
    #[test]
    fn a_corrupted_file_is_refused_not_a_panic() {
        let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/fixtures/pandas/encodings");
        let cases = Cases::load(&TableFile::at(dir.join("cases.parquet"))).unwrap();
        let original = std::fs::read(dir.join("results.parquet")).unwrap();
        let path = Path::new("results.parquet");
        let footer = u32::from_le_bytes(original[original.len() - 8..][..4].try_into().unwrap());
        let pages_end = original.len() - 8 - footer as usize;
        let mut decoded = 0;
        for at in 4..pages_end {
            let mut bytes = original.clone();
            bytes[at] = 0xFF;
            let bytes = Buffer::from(bytes);
            let Ok(meta) = read_metadata(&mut Cursor::new(bytes.clone())) else {
                continue;
            };
            let Ok(parquet) = ParquetResults::with(bytes, meta) else {
                continue;
            };
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                (0..parquet.row_groups()).all(|g| {
                    parquet.batch(g, &cases, path).is_ok() && parquet.arm_labels(g).is_ok()
                })
            }));
            match outcome {
                Ok(all) => decoded += usize::from(all),
                Err(_) => panic!("byte {at}: the page reader panicked"),
            }
        }
        assert!(decoded > 0, "some corruptions (in values) still decode");
    }
}
