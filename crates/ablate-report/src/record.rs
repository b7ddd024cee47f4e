//! The decision record's export: `ablate record` writes JSON (and tables with `--export`), no
//! human rendering of its own.

use crate::analysis::record::DecisionRecord;
use crate::export::spec::Shape::{One, Rows};
use crate::export::spec::{Export, TableSpec, WARNINGS, t};

/// The tables `--export` writes for [`DecisionRecord`].
impl Export for DecisionRecord {
    const TABLES: &'static [TableSpec] = &[
        t(
            "record",
            "",
            One,
            "claim:str value:f64 value_production:f64 needed_tokens_mean:f64 total_tokens_mean:f64 \
             set:str set_sha256:str cases:i64 threshold_drop:f64 baseline:f64 repeats:i64 \
             churn_baseline:i64 model:str measured_at:str oracle:bool oracle_note:str \
             composition_checked:bool known_coverage_gap:str unmeasured_share:f64 \
             joint_cut_measured:bool value_point:f64 family:str stress_cases:i64=stress.cases \
             stress_threshold_drop:f64=stress.threshold_drop \
             needed_only_on_stress:list<str>=stress.needed_only_on_stress \
             clears_both:list<str>=stress.clears_both tool_version:str seed:i64 bootstrap:i64",
            "the decision record in one row",
        ),
        t(
            "forced_needed",
            "forced_needed",
            Rows,
            "unit:str cut:str cut_drop:f64 tokens:f64",
            "units restored to needed because a measured cut of them loses (the fewest tokens)",
        ),
        WARNINGS,
    ];
}
