//! Schemas of the two streamed tables, `shadow` and `context_log`. They can hold hundreds of
//! millions of rows, so loading an experiment only checks their columns and counts their rows; the
//! `shadow` and `context` verbs stream them.

pub mod context;
pub mod shadow;

pub use ablate_core::data::logs::{DEFAULT_MEMORY, DEFAULT_MEMORY_TEXT, LogSummary};

use polars::prelude::*;

use crate::error::{Error, Result, Row};
use crate::io::table::{self, Col, Kind, TableFile};

/// Columns of `shadow`: one row per request and variant.
pub fn shadow_columns() -> Vec<Col> {
    vec![
        Col::req("request_id", Kind::Str),
        Col::req("variant", Kind::Str),
        Col::req("answer", Kind::Str),
        Col::opt("score", Kind::Float),
        Col::opt("tokens_in", Kind::Int),
    ]
}

/// Columns of `context_log`: one row per request, call and source item.
pub fn context_columns() -> Vec<Col> {
    vec![
        Col::req("request_id", Kind::Str),
        Col::req("source", Kind::Str),
        Col::req("tokens", Kind::Int),
        Col::opt("step", Kind::Int),
        Col::opt("mandatory", Kind::Bool),
        Col::opt("priority", Kind::Int),
        Col::opt("relevance", Kind::Float),
        Col::opt("content_hash", Kind::Str),
        Col::opt("model_limit", Kind::Int),
        Col::opt("expected_output", Kind::Int),
    ]
}

/// A value rule checked by streaming over a log: rows where `bad` holds are errors.
struct Rule {
    column: String,
    bad: fn(Expr) -> Expr,
    problem: &'static str,
}

/// Most tokens one log row may count: a trillion, beyond any context window. Sums of rows are
/// taken in floating point, exact up to 2⁵³ and refused beyond it, so no number of rows overflows
/// them.
pub const MAX_TOKENS: i64 = 1_000_000_000_000;

fn negative_or_huge(e: Expr) -> Expr {
    e.clone().lt(lit(0)).or(e.gt(lit(MAX_TOKENS)))
}

fn not_finite(e: Expr) -> Expr {
    e.is_finite().not()
}

fn fractional(e: Expr) -> Expr {
    (e % lit(1.0)).neq(lit(0.0))
}

fn control_characters(e: Expr) -> Expr {
    e.str().contains(lit(r"[\x00-\x1F\x7F]"), false)
}

fn null(e: Expr) -> Expr {
    e.is_null()
}

/// Columns that may not hold nulls even though they are optional: a step of an agent call.
const NO_NULLS_WHEN_PRESENT: &[&str] = &["step"];

fn rules(specs: &[Col]) -> Vec<Rule> {
    let named = |n: &str| specs.iter().any(|c| c.name == n);
    let mut out: Vec<Rule> = specs
        .iter()
        .filter(|c| c.required || NO_NULLS_WHEN_PRESENT.contains(&c.name.as_str()))
        .map(|c| Rule {
            column: c.name.clone(),
            bad: null,
            problem: "a value is required here",
        })
        .collect();
    for column in [
        "tokens",
        "tokens_in",
        "expected_output",
        "model_limit",
        "step",
    ] {
        if named(column) {
            out.push(Rule {
                column: column.to_string(),
                bad: negative_or_huge,
                problem: "must not be negative, nor above 10^12 (no context is larger, and sums of larger counts would overflow)",
            });
        }
    }
    if named("request_id") {
        out.push(Rule {
            column: "request_id".into(),
            bad: control_characters,
            problem: "ids may not contain control characters (line breaks, tabs, escape codes)",
        });
    }
    for column in ["score", "relevance"] {
        if named(column) {
            out.push(Rule {
                column: column.to_string(),
                bad: not_finite,
                problem: "must be a finite number",
            });
        }
    }
    out
}

/// Checks every rule in one streaming pass over the rules' columns, and counts the rows.
///
/// Each rule becomes `min(when bad(column) then row index)`, a reduction the streaming engine
/// keeps as one number, so memory does not grow with the row count. Each rule used to be its own
/// in-memory query holding its whole column: 2.3 GB at the start of `shadow` on a 100M-row log,
/// whatever `--memory` said (benches/README.md). The first rule, in order, that any row breaks
/// is reported at its first row; its value is then read from that row alone.
///
/// # Errors
/// The first bad value, or an unreadable file.
fn check_rules(lf: &LazyFrame, path: &std::path::Path, rules: &[Rule]) -> Result<usize> {
    const ROW: &str = "__ablate_row";
    let mut exprs = vec![len().alias("__ablate_rows")];
    exprs.extend(rules.iter().enumerate().map(|(i, rule)| {
        when((rule.bad)(col(rule.column.as_str())))
            .then(col(ROW))
            .otherwise(lit(NULL))
            .min()
            .alias(format!("__ablate_rule{i}"))
    }));
    let found = table::collect_streaming(lf.clone().with_row_index(ROW, None).select(exprs), path)?;
    let int = |name: &str| {
        found
            .column(name)
            .ok()
            .and_then(|c| c.get(0).ok())
            .and_then(|v| v.extract::<u64>())
    };
    for (i, rule) in rules.iter().enumerate() {
        let Some(row) = int(&format!("__ablate_rule{i}")) else {
            continue;
        };
        let hit = lf
            .clone()
            .slice(row as i64, 1)
            .select([col(rule.column.as_str())])
            .collect()
            .map_err(|e| table::polars_unreadable(path, e))?;
        let value = hit
            .column(rule.column.as_str())
            .ok()
            .and_then(|c| c.get(0).ok())
            .map(|v| v.to_string())
            .unwrap_or_default();
        return Err(Error::BadValue {
            path: path.to_path_buf(),
            column: rule.column.clone(),
            row: Row::at(row as usize),
            value,
            problem: rule.problem.into(),
            fix: "fix the logging, or drop the bad rows before the analysis".into(),
        });
    }
    Ok(int("__ablate_rows").unwrap_or(0) as usize)
}

/// A streamed table whose columns and values have been checked: a lazy scan of the spec's columns
/// (cast to their kinds), ready for an analysis to aggregate.
pub struct CheckedLog {
    /// The projected, cast scan.
    pub lf: LazyFrame,
    /// The file's schema (before projection).
    pub schema: SchemaRef,
    /// Row count and columns.
    pub summary: LogSummary,
}

impl CheckedLog {
    /// Whether the file has a column.
    pub fn has(&self, column: &str) -> bool {
        self.schema.get(column).is_some()
    }
}

/// Checks a streamed table's columns against `specs`, its values (no negative token counts, no
/// NaN or infinite scores or relevances) and counts its rows, streaming.
///
/// # Errors
/// Unreadable file, missing or mistyped columns, the first bad value, no rows.
pub fn summarise(file: &TableFile, specs: &[Col]) -> Result<LogSummary> {
    Ok(open(file, specs)?.summary)
}

/// As [`summarise`], and returns the checked scan for analysis.
///
/// # Errors
/// As [`summarise`].
pub fn open(file: &TableFile, specs: &[Col]) -> Result<CheckedLog> {
    open_known(file, specs, None)
}

/// As [`open`], for a log that [`summarise`] has checked against `base` already (the
/// experiment's load does, for `report`): its row count is known and `base`'s rules held, so
/// only the rules of the other columns of `specs` (a `--by` stratum, a cluster) are run, and
/// none at all when there are no others. `report` then reads each log's values once for the
/// checks, not twice.
///
/// # Errors
/// As [`summarise`], for the columns not in `base`.
pub fn reopen(summary: &LogSummary, specs: &[Col], base: &[Col]) -> Result<CheckedLog> {
    open_known(
        &TableFile::at(&summary.path),
        specs,
        Some((summary.rows, base)),
    )
}

/// [`open`], skipping the rules of `known`'s columns and taking its row count when no rule is
/// left to run.
fn open_known(
    file: &TableFile,
    specs: &[Col],
    known: Option<(usize, &[Col])>,
) -> Result<CheckedLog> {
    let text: Vec<&str> = specs
        .iter()
        .filter(|c| c.kind == Kind::Str)
        .map(|c| c.name.as_str())
        .collect();
    let mut lf = table::scan(file, &text)?;
    let schema = lf
        .collect_schema()
        .map_err(|e| table::polars_unreadable(&file.path, e))?;
    let exprs = table::check_columns(file, &schema, specs)?;
    let mut checked = lf.clone().select(exprs);
    // Integers stored as floats (pandas, with nulls) are read as f64: each value must be whole,
    // then the column is an integer column like any other.
    let float_ints: Vec<&str> = specs
        .iter()
        .filter(|c| c.kind == Kind::Int)
        .filter(|c| {
            schema
                .get(c.name.as_str())
                .is_some_and(|d| d.is_float() || d.is_decimal())
        })
        .map(|c| c.name.as_str())
        .collect();
    let mut all_rules = rules(specs);
    all_rules.extend(float_ints.iter().map(|c| Rule {
        column: (*c).to_string(),
        bad: fractional,
        problem: "this column holds whole numbers (it is stored as floats, as pandas does for integers with nulls)",
    }));
    all_rules.retain(|rule| schema.get(rule.column.as_str()).is_some());
    let rows = match known {
        Some((rows, base)) => {
            all_rules.retain(|rule| !base.iter().any(|c| c.name == rule.column));
            if all_rules.is_empty() {
                rows
            } else {
                check_rules(&checked, &file.path, &all_rules)?
            }
        }
        None => check_rules(&checked, &file.path, &all_rules)?,
    };
    if !float_ints.is_empty() {
        checked = checked.with_columns(
            float_ints
                .iter()
                .map(|c| col(*c).cast(DataType::Int64))
                .collect::<Vec<_>>(),
        );
    }
    if rows == 0 {
        return Err(Error::EmptyTable {
            path: file.path.clone(),
        });
    }
    Ok(CheckedLog {
        lf: checked,
        summary: LogSummary {
            path: file.path.clone(),
            rows,
            columns: schema.iter_names().map(|n| n.to_string()).collect(),
        },
        schema,
    })
}

/// A shadow-traffic log opened for `ablate shadow`: columns and values checked, projected to the
/// shadow columns, the stratum columns `by` and the cluster column.
pub struct ShadowLog {
    /// The checked scan.
    pub log: CheckedLog,
    /// Stratum columns, each a required text column of the log.
    pub by: Vec<String>,
    /// A column grouping requests into clusters (e.g. the user), whose requests are not
    /// independent: a required text column of the log.
    pub cluster: Option<String>,
}

/// Refuses a column name given on the command line that holds a control character or a line or
/// paragraph separator: such a name cannot be a real column, and ablate prints column names into
/// queries and messages, where a line break would end a comment.
///
/// # Errors
/// [`Error::Usage`] naming the option and the character.
pub fn check_column_name(flag: &str, name: &str) -> Result<()> {
    if let Some(c) = name
        .chars()
        .find(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'))
    {
        return Err(Error::Usage(format!(
            "{flag} {:?}: a column name with the control character {:?} is refused; give the column's real name",
            name, c
        )));
    }
    if name.is_empty() {
        return Err(Error::Usage(format!("{flag}: the column name is empty")));
    }
    Ok(())
}

/// The rules for a shadow log's stratum (`--by`) and cluster (`--cluster-by`) columns, shared by
/// `ablate shadow` and `ablate sql shadow`: each given once, none of them one of the log's own
/// columns (request_id, variant, answer, score, tokens_in), the cluster not a stratum, and no
/// control characters.
///
/// # Errors
/// [`Error::Usage`] naming the option and the column.
pub fn check_shadow_keys(by: &[String], cluster: Option<&str>) -> Result<()> {
    let own = shadow_columns();
    let is_own = |c: &str| own.iter().any(|s| s.name == c);
    if let Some(c) = cluster {
        check_column_name("--cluster-by", c)?;
        if is_own(c) || by.iter().any(|b| b == c) {
            return Err(Error::Usage(format!(
                "--cluster-by {c}: give a column that groups requests (e.g. a user id), not one of the log's own columns or a --by stratum"
            )));
        }
    }
    for (i, c) in by.iter().enumerate() {
        check_column_name("--by", c)?;
        if by[..i].contains(c) {
            return Err(Error::Usage(format!(
                "--by {c} is given twice; give each stratum column once"
            )));
        }
        if is_own(c) {
            return Err(Error::Usage(format!(
                "--by {c}: `{c}` is one of the shadow log's own columns, not a stratum; use a column that describes the request (e.g. --by turns)"
            )));
        }
    }
    Ok(())
}

impl ShadowLog {
    /// Opens `file` as a shadow log broken down by `by`, with requests clustered by `cluster`.
    ///
    /// # Errors
    /// A `by` column given twice or naming one of the log's own columns, a cluster column that is
    /// a stratum or one of the log's own columns (usage); unreadable file, missing or mistyped
    /// columns, the first bad value.
    pub fn open(file: &TableFile, by: &[String], cluster: Option<&str>) -> Result<ShadowLog> {
        check_shadow_keys(by, cluster)?;
        Ok(ShadowLog {
            log: open(file, &shadow_specs(by, cluster))?,
            by: by.to_vec(),
            cluster: cluster.map(str::to_string),
        })
    }

    /// As [`ShadowLog::open`], for a log the experiment's load has summarised with
    /// [`shadow_columns`]: only the `by` and cluster columns are checked again ([`reopen`]).
    ///
    /// # Errors
    /// As [`ShadowLog::open`], for the `by` and cluster columns.
    pub fn reopen(summary: &LogSummary, by: &[String], cluster: Option<&str>) -> Result<ShadowLog> {
        check_shadow_keys(by, cluster)?;
        Ok(ShadowLog {
            log: reopen(summary, &shadow_specs(by, cluster), &shadow_columns())?,
            by: by.to_vec(),
            cluster: cluster.map(str::to_string),
        })
    }
}

/// The shadow columns, then the cluster column and the strata, each a required text column.
fn shadow_specs(by: &[String], cluster: Option<&str>) -> Vec<Col> {
    let mut specs = shadow_columns();
    if let Some(c) = cluster {
        specs.push(Col::req(c, Kind::Str));
    }
    specs.extend(by.iter().map(|c| Col::req(c.clone(), Kind::Str)));
    specs
}

/// A context log opened for `ablate context`: columns and values checked, projected to the
/// context columns.
pub struct ContextLog {
    /// The checked scan.
    pub log: CheckedLog,
}

impl ContextLog {
    /// Opens `file` as a context log.
    ///
    /// # Errors
    /// Unreadable file, missing or mistyped columns, the first bad value.
    pub fn open(file: &TableFile) -> Result<ContextLog> {
        Ok(ContextLog {
            log: open(file, &context_columns())?,
        })
    }

    /// As [`ContextLog::open`], for a log the experiment's load has summarised: nothing is read
    /// again ([`reopen`]).
    ///
    /// # Errors
    /// The file's columns changed since the load.
    pub fn reopen(summary: &LogSummary) -> Result<ContextLog> {
        Ok(ContextLog {
            log: reopen(summary, &context_columns(), &context_columns())?,
        })
    }
}

/// Seeds of the 64-bit hash that splits a log into partitions (any fixed values: the split only
/// has to be the same on every pass of one run).
const PARTITION_SEEDS: [u64; 4] = [
    0x9E37_79B9_7F4A_7C15,
    0xD1B5_4A32_D192_ED03,
    0x8CB9_2BA7_2F3D_8DD7,
    0xA076_1D64_78BD_642F,
];

/// A 64-bit hash of a column's values, fixed within a process.
pub fn hash64(column: &str) -> Expr {
    let [a, b, c, d] = PARTITION_SEEDS;
    col(column).hash(a, b, c, d)
}

/// Two independent 64-bit hashes of a column's values, `{column}_h1` and `{column}_h2`: a 128-bit
/// key to group on instead of the text. Two different values share it with probability about
/// n²/2¹²⁹ (10⁻²³ for 10⁸ keys); if they ever did, the merged key would show a variant twice and
/// be reported as a duplicate, never silently.
pub fn key128(column: &str) -> [Expr; 2] {
    let [a, b, c, d] = PARTITION_SEEDS;
    [
        col(column).hash(a, b, c, d).alias(format!("{column}_h1")),
        col(column)
            .hash(d ^ 0x5555, c ^ 0x5555, b ^ 0x5555, a ^ 0x5555)
            .alias(format!("{column}_h2")),
    ]
}

/// The rows of partition `pass` of `passes`: those whose `column` hashes to it. Every row of one
/// key (a request, a cluster) falls in the same partition.
pub fn partition(column: &str, pass: u32, passes: u32) -> Expr {
    (hash64(column) % lit(u64::from(passes))).eq(lit(u64::from(pass)))
}

/// Memory a pass needs whatever its share of keys: the process, Polars' scan buffers, the checks.
/// Measured at about 550 MB on 10M- to 100M-row logs (benches/README.md), with headroom.
pub const BASELINE_MEMORY: u64 = 768 << 20;

/// The smallest memory budget accepted.
pub const MIN_MEMORY: u64 = 1 << 30;

/// How many partitions keep the state of `keys` keys, at `bytes_per_key` each, under `memory`
/// bytes once [`BASELINE_MEMORY`] is set aside: ⌈keys · bytes_per_key / (memory − baseline)⌉, at
/// least one.
pub fn passes(keys: u64, bytes_per_key: u64, memory: u64) -> u32 {
    let usable = memory.saturating_sub(BASELINE_MEMORY).max(1 << 20);
    let need = keys.saturating_mul(bytes_per_key);
    need.div_ceil(usable).clamp(1, u64::from(u32::MAX)) as u32
}

/// Parses a memory size: a number with an optional unit (B, KB, MB, GB, TB in powers of 1000;
/// KiB, MiB, GiB, TiB in powers of 1024), e.g. `4GiB`, `1536MiB`, `2.5GB`.
///
/// # Errors
/// Not a size, or less than [`MIN_MEMORY`] (1 GiB: a pass needs about half that whatever its
/// share of the log).
pub fn parse_memory(text: &str) -> Result<u64> {
    let bytes: bytesize::ByteSize = text.trim().parse().map_err(|e| {
        Error::Usage(format!(
            "--memory {text}: {e}; write a size such as 4GiB, 1.5GiB or 2GB"
        ))
    })?;
    let n = bytes.as_u64();
    if n < MIN_MEMORY {
        return Err(Error::Usage(format!(
            "--memory {text}: at least 1GiB is needed (a pass over a log takes about 550MB whatever its size)"
        )));
    }
    Ok(n)
}

/// A progress bar over the passes of a partitioned scan: only when there is more than one pass
/// and progress is on (indicatif hides it when stderr is not a terminal).
pub fn pass_bar(passes: u32, progress: bool, what: &str) -> Option<indicatif::ProgressBar> {
    if !progress || passes < 2 {
        return None;
    }
    let bar = indicatif::ProgressBar::new(u64::from(passes));
    if let Ok(style) = indicatif::ProgressStyle::with_template("{msg} {bar:30} {pos}/{len} ({eta})")
    {
        bar.set_style(style);
    }
    bar.set_message(what.to_string());
    Some(bar)
}

/// Sets glibc's allocator for speed, as the `ablate` binary starts: blocks up to 32 MiB are
/// served from the heap (glibc otherwise hands every block over 128 KiB to mmap and gives it
/// back when freed, so the next such block is fresh pages the kernel must zero and fault in
/// again), and up to 256 MiB of freed heap is kept for reuse. `sweep` at 10M rows: 0.64 → 0.56 s,
/// peak RSS 230 → 300 MB (benches/README.md). `report` sets these again once the logs' passes
/// ([`allocator_for_budget`]) are done, so that its charts' pixel buffers are reused rather than
/// faulted in afresh. A no-op on other platforms.
pub fn allocator_for_speed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets the allocator's thresholds and takes no pointer; glibc takes its
    // arenas' locks, so other threads may allocate meanwhile.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

/// Sets glibc's allocator for a log's passes under a memory budget, and gives back what is
/// free: blocks from 1 MiB are mmapped and returned when freed, and freed heap above 128 KiB is
/// trimmed. The `ablate` binary starts with thresholds for speed (blocks up to 32 MiB from the
/// heap, 256 MiB of freed heap kept), which a budget would pay for. `shadow --by turns --memory
/// 1GiB` on a 10M-row log peaked at 540 MiB with those, 440–520 MiB with glibc's own dynamic
/// thresholds, and 350–380 MiB with these (and 5–10% slower than glibc's own). Called when a
/// log's passes start; the thresholds are the process's, so what runs beside the passes (in
/// `report`, the decision record and the decision, which hold little) uses them too. A no-op on
/// other platforms.
pub fn allocator_for_budget() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt sets two thresholds and malloc_trim returns free pages; neither takes a
    // pointer, and glibc takes its arenas' locks for both, so other threads may allocate
    // meanwhile.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 * 1024);
        libc::malloc_trim(0);
    }
}

/// Gives the memory a pass freed back to the operating system. glibc's allocator keeps freed
/// memory in its per-thread arenas, so without this the peak grew pass after pass instead of
/// staying at one pass's worth (benches/README.md). A no-op on other platforms.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages to the system; it takes no pointers.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--memory`'s default as its help shows it is the budget the analyses default to.
    #[test]
    fn the_default_memory_text_reads_back_as_the_default_budget() {
        assert_eq!(parse_memory(DEFAULT_MEMORY_TEXT).unwrap(), DEFAULT_MEMORY);
    }
}
