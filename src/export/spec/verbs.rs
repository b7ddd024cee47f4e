//! The tables of every verb (and of the report's decision), one constant per verb: where the
//! rows sit in its JSON and one line of typed columns.

use Shape::{Map, One, Rows, Values};

use super::{Shape, TableSpec, t};

pub(super) const WARNINGS: TableSpec = t(
    "warnings",
    "warnings",
    Rows,
    "code:str message:str",
    "one warning per row: a stable code (`sweep.no_spread`) and the message",
);

pub(crate) const CHECK: &[TableSpec] = &[
    t(
        "summary",
        "",
        One,
        "dir:str set:str model:str measured_at:str synthetic:bool baseline_arm:str \
         threshold_drop:f64 stress_threshold_drop:f64 pass_mark:f64 cases:i64 main_cases:i64 \
         stress_cases:i64 clusters:i64 repeats_min:i64=repeats.min repeats_max:i64=repeats.max \
         units:i64 total_tokens:f64 strata:list<str> absent:list<str>",
        "the experiment in one row",
    ),
    t("arms", "arms", Values, "arm:str=@value", "one row per arm"),
    t(
        "blocks",
        "blocks",
        Rows,
        "block:str units:i64 tokens:f64 need:str",
        "one row per prompt block",
    ),
    t(
        "strata_counts",
        "strata_counts",
        Rows,
        "column:str value:str main_cases:i64 stress_cases:i64",
        "cases per stratum value",
    ),
    t(
        "tables",
        "tables",
        Rows,
        "table:str file:str rows:i64",
        "one row per table read",
    ),
    WARNINGS,
];

pub(crate) const SWEEP: &[TableSpec] = &[
    t(
        "summary",
        "",
        One,
        "set:str baseline_arm:str threshold_drop:f64 cases:i64 repeats:i64 churn_baseline:i64 \
         clusters:i64 confidence_level:f64 bootstrap:i64 seed:i64 min_units:i64 \
         family_size:i64=family.size family_level_per_arm:f64=family.level_per_arm \
         family_procedure:str=family.procedure family_note:str=family.note \
         baseline_score:f64=baseline.score baseline_se:f64=baseline.se",
        "the baseline and the run's settings",
    ),
    t(
        "arms",
        "arms",
        Rows,
        "arm:str removed:list<str> block:str score:f64 drop:f64 se:f64 ci_low:f64 ci_high:f64 \
         ci_level:f64 ci_method:str ci_family_low:f64 ci_family_high:f64 ci_family_level:f64 \
         ci_family_method:str units:i64 rho:f64 p_holm:f64 \
         mcnemar_p:f64 verdict:str confidence:str tokens_removed:f64 lost_cases:i64 \
         gained_cases:i64 churn:i64 missing_cases:i64 n:i64",
        "one row per arm: the paired drop against the baseline, its CI and verdict",
    ),
    t(
        "lost_by_slice",
        "arms[].lost_by_slice",
        Map,
        "arm:str=^arm slice:str=@key lost_cases:i64=@value",
        "cases each arm loses, per slice",
    ),
    WARNINGS,
];

pub(crate) const VARIANCE: &[TableSpec] = &[
    t(
        "summary",
        "",
        One,
        "threshold_drop:f64 confidence_level:f64 power:f64 cases:i64 typical_mde:f64 \
         typical_cases_needed:i64",
        "power settings and the typical arm",
    ),
    t(
        "arms",
        "arms",
        Rows,
        "arm:str within_case_var:f64 case_means_var:f64 between_case_var:f64 \
         repeat_noise_share:f64 churn:i64 mde:f64 cases_needed:i64 repeats_mean:f64 n:i64",
        "one row per arm: variance components, minimum detectable drop, cases needed",
    ),
    WARNINGS,
];

pub(crate) const REWEIGHT: &[TableSpec] = &[
    t(
        "summary",
        "",
        One,
        "strata:list<str> method:str effective_cases:f64 unmeasured_share:f64 threshold_drop:f64 \
         cases:i64 known_coverage_gap:str unweighted_strata:list<str> \
         baseline_score_eval:f64=baseline.score_eval \
         baseline_score_production:f64=baseline.score_production \
         baseline_se_production:f64=baseline.se_production \
         baseline_ci_production_low:f64=baseline.ci_production_low \
         baseline_ci_production_high:f64=baseline.ci_production_high \
         baseline_ci_production_level:f64=baseline.ci_production_level \
         baseline_ci_production_method:str=baseline.ci_production_method",
        "the weighting and the baseline under production weights",
    ),
    t(
        "arms",
        "arms",
        Rows,
        "arm:str drop_eval:f64 drop_production:f64 se_production:f64 ci_production_low:f64 \
         ci_production_high:f64 ci_production_level:f64 ci_production_method:str verdict_eval:str \
         verdict_production:str ci_production_family_low:f64 ci_production_family_high:f64 \
         ci_production_family_level:f64 ci_production_family_method:str confidence_production:str \
         flipped:bool flip_confident:bool",
        "one row per arm: the drop on the set and under production weights",
    ),
    t(
        "coverage",
        "coverage",
        Rows,
        "stratum:str eval_cases:i64 eval_share:f64 production_share:f64 ratio:f64 status:str",
        "one row per stratum (`column=value, …`): set share against production share",
    ),
    WARNINGS,
];

pub(crate) const STRESS: &[TableSpec] = &[
    t(
        "summary",
        "",
        One,
        "main_cases:i64 stress_cases:i64 threshold_drop:f64 stress_threshold_drop:f64",
        "the two sets and their thresholds",
    ),
    t(
        "arms",
        "arms",
        Rows,
        "arm:str drop_main:f64 se_main:f64 ci_main_low:f64 ci_main_high:f64 ci_main_level:f64 \
         ci_main_method:str drop_stress:f64 se_stress:f64 ci_stress_low:f64 ci_stress_high:f64 \
         ci_stress_level:f64 ci_stress_method:str verdict_main:str confidence_main:str verdict_stress:str \
         confidence_stress:str clears_both:bool lost_stress:i64",
        "one row per arm: main set against the stress slice",
    ),
];

pub(crate) const INTERACTIONS: &[TableSpec] = &[
    t(
        "composed",
        "composed",
        Rows,
        "arm:str removed:list<str> components:list<str> predicted_drop:f64 measured_drop:f64 \
         predicted_score:f64 measured_score:f64 interaction:f64 se:f64 ci_low:f64 ci_high:f64 \
         ci_level:f64 ci_method:str interaction_verdict:str lost_cases:i64 lost_only_jointly:i64 \
         concentration:str n:i64 explicit_components:bool",
        "one row per composed arm: measured against the sum of its parts",
    ),
    t(
        "composed_lost_by_slice",
        "composed[].lost_by_slice",
        Map,
        "arm:str=^arm slice:str=@key lost_cases:i64=@value",
        "cases each composed arm loses, per slice",
    ),
    t(
        "pairwise",
        "pairwise",
        Rows,
        "a:str b:str arm:str interaction:f64 se:f64",
        "one row per measured pair of units",
    ),
    t(
        "shapley",
        "shapley.values",
        Map,
        "unit:str=@key value:f64=@value",
        "Shapley value per unit (full factorials only)",
    ),
    t(
        "shapley_interactions",
        "shapley.interactions",
        Rows,
        "a:str b:str index:f64",
        "Shapley interaction index per pair",
    ),
    t(
        "design_effects",
        "designs[].main_effects",
        Rows,
        "design:str=^design term:str effect:f64 se:f64",
        "main effects of each designed experiment",
    ),
    t(
        "design_interactions",
        "designs[].two_factor",
        Rows,
        "design:str=^design term:str effect:f64 se:f64",
        "two-factor interactions of each designed experiment",
    ),
    WARNINGS,
];

pub(crate) const PLAN: &[TableSpec] = &[
    t(
        "summary",
        "",
        One,
        "design:str design_label:str units:list<str> n_arms:i64 cases:i64 repeats:i64 calls:i64 \
         tokens:f64 cost:f64 sd:f64 sd_source:str threshold_drop:f64 mde:f64 \
         mde_main_effect:f64 cases_needed:i64 fraction:str=fraction.name \
         resolution:i64=fraction.resolution generators:list<str>=fraction.generators \
         aliases:list<str>=fraction.aliases \
         sequential_calls_expected:i64=sequential.calls_expected \
         sequential_saving:f64=sequential.saving",
        "the design, its cost and power",
    ),
    t(
        "sequential_arms",
        "sequential.arms",
        Rows,
        "arm:str drop:f64 sd:f64 source:str cases:i64",
        "with --sequential: the cases each arm's sequence is projected to read",
    ),
    t(
        "arms",
        "arms",
        Rows,
        "arm:str removed:list<str> tokens_per_call:f64",
        "one row per planned arm",
    ),
];

pub(crate) const NEED: &[TableSpec] = &[
    t(
        "summary",
        "",
        One,
        "value:f64 value_production:f64 value_point:f64 needed_tokens_mean:f64 \
         total_tokens_mean:f64 oracle:bool oracle_note:str jointly_removable:list<str> \
         joint_cut_measured:bool restore_method:str headline:str cases:i64 \
         unmeasured_share:f64",
        "the needed context fraction",
    ),
    t(
        "by_block",
        "by_block",
        Map,
        "block:str=@key needed_tokens_mean:f64=@value.needed_tokens_mean \
         total_tokens_mean:f64=@value.total_tokens_mean rule:str=@value.rule",
        "one row per block: needed against total tokens",
    ),
    t(
        "removable_units",
        "removable_units",
        Map,
        "unit:str=@key arm:str=@value",
        "units a confidently removable measured arm shows removable, with that arm",
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

pub(crate) const CURVE: &[TableSpec] = &[
    t(
        "summary",
        "",
        One,
        "quality_threshold:f64",
        "the retention target",
    ),
    t(
        "selectors",
        "selectors",
        Rows,
        "selector:str min_budget:f64 min_budget_confident:f64",
        "one row per selector: the smallest budget that keeps quality",
    ),
    t(
        "points",
        "selectors[].points",
        Rows,
        "selector:str=^selector arm:str budget_ratio:f64 tokens:f64 score:f64 retention:f64 \
         ci_low:f64 ci_high:f64 ci_level:f64 ci_method:str",
        "one row per (selector, budget)",
    ),
    t(
        "cost",
        "cost",
        One,
        "selector:str budget_ratio:f64 daily_full:f64 daily_at_min_budget:f64 \
         savings_daily:f64 savings_monthly:f64 savings_percent:f64",
        "dollars at the smallest budget (with pricing)",
    ),
    WARNINGS,
];

pub(crate) const SELECTOR: &[TableSpec] = &[
    t(
        "summary",
        "",
        One,
        "full_tokens_mean:f64 oracle_saving_mean:f64 cases:i64",
        "the full and oracle token counts",
    ),
    t(
        "points",
        "points",
        Rows,
        "threshold:f64 kept_tokens_mean:f64 saving_mean:f64 recovery:f64 gold_miss_rate:f64 \
         measured_drop:f64 measured_arm:str",
        "one row per reranker threshold",
    ),
];

pub(crate) const RECORD: &[TableSpec] = &[
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
];

pub(crate) const SHADOW: &[TableSpec] = &[
    t(
        "summary",
        "",
        One,
        "requests:i64 changed_rate:f64 noise_rate:f64 excess_rate:f64 se:f64 ci_low:f64 \
         ci_high:f64 ci_level:f64 ci_method:str confidence_level:f64 se_method:str score_delta:f64 incomplete_requests:i64 \
         tokens_production_mean:f64=tokens.production.mean \
         tokens_production_p50:f64=tokens.production.p50 \
         tokens_production_p95:f64=tokens.production.p95 \
         tokens_production_p99:f64=tokens.production.p99 \
         tokens_candidate_mean:f64=tokens.candidate.mean \
         tokens_candidate_p50:f64=tokens.candidate.p50 \
         tokens_candidate_p95:f64=tokens.candidate.p95 \
         tokens_candidate_p99:f64=tokens.candidate.p99 \
         tokens_saving_mean:f64=tokens.saving_mean \
         percentile_error:f64=tokens.percentile_error",
        "changed answers above the replay noise floor, and tokens",
    ),
    t(
        "by_stratum",
        "by_stratum",
        Rows,
        "stratum:str requests:i64 changed_rate:f64 noise_rate:f64 excess_rate:f64 se:f64 \
         ci_low:f64 ci_high:f64 ci_level:f64 ci_method:str p_holm:f64 flagged:bool",
        "one row per stratum (with --by)",
    ),
    WARNINGS,
];

pub(crate) const CONTEXT: &[TableSpec] = &[
    t(
        "summary",
        "",
        One,
        "calls:i64 size_mean:f64=size.mean size_p50:f64=size.p50 size_p95:f64=size.p95 \
         size_p99:f64=size.p99 size_max:f64=size.max hard_limit:f64 hard_limit_varies:bool \
         utilisation:f64 overflow_rate:f64 soft_crossing_rate:f64 growth_per_step:f64 \
         percentile_error:f64 policy_calls:i64=policy.calls \
         policy_overflow_count:i64=policy.overflow_count \
         policy_admitted_mean:f64=policy.admitted_mean \
         policy_saving_mean:f64=policy.saving_mean",
        "sizes against the hard limit, and the policy replay",
    ),
    t(
        "composition",
        "composition",
        Map,
        "source:str=@key share:f64=@value",
        "share of all tokens by source",
    ),
    t(
        "histogram",
        "histogram",
        Rows,
        "lo:f64 hi:f64 calls:i64",
        "call sizes",
    ),
    t(
        "policy_evicted",
        "policy.evicted_by_source",
        Map,
        "source:str=@key tokens_mean:f64=@value",
        "mean tokens the replayed policy evicts per call, by source",
    ),
    WARNINGS,
];

pub(crate) const WATCH: &[TableSpec] = &[
    t(
        "summary",
        "",
        One,
        "method:str unit:str threshold_drop:f64 alpha:f64 alpha_per_arm:f64 seed:i64 repeats:i64 \
         score_min:f64 score_max:f64 units_available:i64 calls_made:i64",
        "the sequences' settings",
    ),
    t(
        "arms",
        "arms",
        Rows,
        "arm:str state:str units:i64 cases:i64 drop:f64 cs_low:f64 cs_high:f64 cs_level:f64 \
         cs_method:str decided_at:i64 \
         projected_units:i64 units_still_needed:i64 recorded:bool",
        "one row per arm: its confidence sequence now, and its state",
    ),
    WARNINGS,
];

pub(crate) const REPLAY: &[TableSpec] = &[
    t(
        "summary",
        "",
        One,
        "method:str unit:str threshold_drop:f64 alpha:f64 seed:i64 repeats:i64 calls_full:i64 \
         calls_sequential:i64 saving:f64 decided:i64 agreeing:i64 agreeing_confident:i64",
        "the calls a sequential run would have made",
    ),
    t(
        "arms",
        "arms",
        Rows,
        "arm:str state:str stopped_at:i64 cases:i64 full_verdict:str full_confidence:str \
         agrees:bool",
        "one row per arm: where it would have stopped, against the full run",
    ),
    WARNINGS,
];

pub(crate) const NEXT: &[TableSpec] = &[
    t(
        "calls",
        "calls",
        Rows,
        "case_id:str arm:str repeat:i64",
        "the batch: one row per call to make",
    ),
    WARNINGS,
];

/// The columns of the decision's cut, keep and inconclusive tables.
pub(super) const DECISION_ARM: &str = "arm:str removed:list<str> drop:f64 tokens_removed:f64 reason:str \
     cases_to_settle:i64 cases_to_settle_low:i64 cases_to_settle_high:i64 settleable:bool";

pub(crate) const DECISION: &[TableSpec] = &[
    t(
        "summary",
        "",
        One,
        "comparison:bool family:str per_arm:bool tokens_saved:f64 cost_saved_per_day:f64 \
         measured_cut_arm:str=measured_cut.arm measured_cut_units:list<str>=measured_cut.units",
        "what a measured cut saves, and the family the verdicts hold in",
    ),
    t(
        "joint_cut",
        "joint_cut",
        One,
        "units:list<str> arm:str measured:bool drop:f64 ci_family_low:f64 ci_family_high:f64 \
         ci_family_level:f64 ci_family_method:str verdict:str \
         confidence:str cleared:bool open_on:list<str> components:list<str> \
         tokens_removed:f64 cases_to_settle:i64",
        "the one set of units to cut: measured together, or the arm to run to confirm it",
    ),
    t("cut", "cut", Rows, DECISION_ARM, "arms cleared to cut"),
    t("keep", "keep", Rows, DECISION_ARM, "arms to keep"),
    t(
        "inconclusive",
        "inconclusive",
        Rows,
        DECISION_ARM,
        "arms not settled, with the cases that would settle them",
    ),
    t(
        "flips",
        "flips",
        Rows,
        "arm:str verdict_eval:str verdict_production:str",
        "verdicts production weights reverse",
    ),
    t(
        "interactions",
        "interactions",
        Rows,
        "arm:str components:list<str> interaction:f64 kind:str where_lost:str",
        "composed cuts that interact",
    ),
];
