//! The outputs of every analysis of one experiment, as `ablate report` writes them to
//! analysis.json (the pipeline that computes them is `ablate::analysis::all`).

use serde::Serialize;

use crate::check::CheckReport;
use crate::context::ContextOutput;
use crate::curve::CurveOutput;
use crate::decision::Decision;
use crate::drill::Drill;
use crate::interactions::InteractionsOutput;
use crate::need::NeedOutput;
use crate::record::DecisionRecord;
use crate::reweight::ReweightOutput;
use crate::selector::SelectorOutput;
use crate::shadow::ShadowOutput;
use crate::stress::StressOutput;
use crate::sweep::SweepOutput;
use crate::variance::VarianceOutput;

/// The outputs of every analysis, each null when its inputs are missing.
#[derive(Debug, Clone, Serialize)]
pub struct Analyses {
    /// What the folder holds.
    pub check: CheckReport,
    /// The decision the analyses support (what to cut, keep, settle; flips; interactions).
    pub decision: Decision,
    /// Every arm against the baseline.
    pub sweep: SweepOutput,
    /// Repeat variance and power.
    pub variance: VarianceOutput,
    /// Production reweighting (with a mix).
    pub reweight: Option<ReweightOutput>,
    /// Main set vs stress slice (with stress cases).
    pub stress: Option<StressOutput>,
    /// Composed cuts, pairwise interactions, Shapley.
    pub interactions: InteractionsOutput,
    /// Needed context fraction (with units).
    pub need: Option<NeedOutput>,
    /// Budget curves (with budget arms).
    pub curve: Option<CurveOutput>,
    /// Reranker replay (with passages).
    pub selector: Option<SelectorOutput>,
    /// Shadow traffic (with a shadow table).
    pub shadow: Option<ShadowOutput>,
    /// Context sizes (with a context log).
    pub context: Option<ContextOutput>,
    /// The decision record (with units).
    pub record: Option<DecisionRecord>,
    /// The cases each arm loses and gains (the report's drill-down).
    pub drill: Drill,
    /// Analyses that could not run on these inputs, and why.
    pub skipped: Vec<String>,
}
