//! `ablate reweight`: the eval weighted to production shares.

use ablate::verb::Verb;
use std::path::PathBuf;

use clap::Args;

use ablate::analysis;
use ablate::error::Result;
use ablate::report;

use super::{Apply as _, Global, emit_warned, load};

/// Post-stratify (one mix) or rake (several) the eval to production shares; coverage gaps.
///
/// The eval set weights every case equally, so its composition silently claims how often each kind
/// of traffic occurs; reweight uses production's shares instead. One mix (the folder's mix table,
/// or --mix FILE) is post-stratified; several --mix files, one column each, are raked. For every
/// arm: the drop on the set beside the drop in production, and the verdicts that flip; for every
/// stratum, the eval and production shares and whether the set under-samples it. --mix-from LOG
/// --by COL counts a production log instead of a share table. Formulas: docs/statistics.md
/// (reweight).
#[derive(Debug, Args)]
pub(super) struct ReweightArgs {
    /// Experiment folder.
    dir: PathBuf,
    #[command(flatten)]
    production: super::options::ProductionArgs,
    #[command(flatten)]
    opts: super::MatrixOptions,
}

/// Runs `ablate reweight`.
pub(super) fn reweight(args: ReweightArgs, g: &Global) -> Result<String> {
    let exp = load(&args.dir, g, Verb::Reweight)?;
    let production = args.production.load()?;
    let opts = analysis::reweight::ReweightOptions {
        mixes: production.mixes,
        by: production.by,
        allow_unmeasured: production.allow_unmeasured,
        confidence: g.confidence,
        family: analysis::sweep::family_size(&exp),
        per_arm: g.per_arm,
        guarantee: g.guarantee,
    };
    let r = analysis::reweight::run(&exp, &opts)?;
    emit_warned(g, Verb::Reweight, &r, &exp, report::reweight::human)
}

impl super::VerbArgs for ReweightArgs {
    fn paths(&self) -> super::IoPaths {
        let mut p = super::IoPaths::experiment(&self.dir);
        self.production.inputs(&mut p);
        p
    }

    fn apply(&self, g: &mut super::Global) {
        self.opts.apply(g);
    }
}
