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
/// The eval set weights every case equally, so its composition silently claims how often each
/// kind of traffic occurs. reweight replaces that claim with production's shares. With one mix
/// (the experiment's mix table, or --mix FILE) it post-stratifies: x̂ = Σ_h W_h·mean_h x with
/// se = √(Σ_h W_h²s_h²/n_h); strata are --by, else the manifest's `strata`, else the mix's text
/// columns (crossed; the mix is marginalised onto them). With several --mix files, one column
/// each, it rakes case weights by iterative proportional fitting to every margin (within 1e-10,
/// at most 1000 rounds). For every arm it prints the drop on the set next to the drop in
/// production and flags verdicts that flip; for every stratum, eval and production shares and
/// whether the set under-samples it (production ≥ 2× eval). A production stratum with no eval
/// case is an error unless --allow-unmeasured. Analysts have logs, not share tables:
/// --mix-from LOG --by COL counts a production log (only `production` rows of a shadow file).
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
