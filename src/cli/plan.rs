//! `ablate plan`: designs, their cost and power.

use ablate::io::prelude::*;
use ablate::verb::Verb;
use std::path::PathBuf;

use clap::Args;

use ablate::analysis;
use ablate::analysis::plan::SdSource;
use ablate::error::{Error, Result};
use ablate::io::table::TableFile;
use ablate::io::units::Units;
use ablate::report;

use super::{Apply as _, Global, load};

/// Emit an arms table for a design, with its cost and power.
///
/// Designs over the units of a units table (or the --unit ones): loo (one arm per unit), pairs
/// (every pair too), factorial (all subsets: Shapley values) and fractional (a two-level design of
/// resolution V or IV, with its generators and aliases). Prints the arms, calls, tokens and
/// dollars, and with --sd or --pilot the smallest drop it can detect, the cases needed and the
/// smallest threshold it can certify. --out writes the arms table.
///
/// --confirm DIR plans the arm that confirms an experiment's cut candidates together, with the
/// drop their arms predict and the cases it needs; --out writes the experiment's arms table with
/// that arm added (put it in place yourself; `ablate next` schedules it). Formulas:
/// docs/statistics.md (plan).
#[derive(Debug, Args)]
pub(super) struct PlanArgs {
    /// Units table (unit, block, tokens): the units to design over.
    #[arg(long, value_name = "FILE", required_unless_present = "confirm")]
    units: Option<PathBuf>,
    /// loo, pairs, factorial or fractional.
    #[arg(long, value_enum, required_unless_present = "confirm")]
    design: Option<DesignArg>,
    /// Plan the arm that confirms the decision of this experiment folder (see above).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["units", "design", "pilot", "sequential"])]
    confirm: Option<PathBuf>,
    /// Only these units (repeatable; default: every unit of the table).
    #[arg(long = "unit", value_name = "UNIT")]
    only: Vec<String>,
    /// Cases per arm.
    #[arg(long, default_value_t = 500)]
    cases: usize,
    /// Repeats per case.
    #[arg(long, default_value_t = 3)]
    repeats: u32,
    /// Full prompt tokens per call (default: the sum of the units' tokens).
    #[arg(long)]
    tokens_per_call: Option<f64>,
    /// Price per million input tokens, for the dollar cost.
    #[arg(long)]
    price_per_mtok: Option<f64>,
    /// sd of per-case paired differences, for power.
    #[arg(long, conflicts_with = "pilot")]
    sd: Option<f64>,
    /// A pilot experiment to estimate the sd from (median over its leave-one-out arms, adjusted
    /// from the pilot's repeats to --repeats with its within-case variance).
    #[arg(long, value_name = "DIR")]
    pilot: Option<PathBuf>,
    /// Drop to detect (default: the pilot's threshold_drop, else 0.005).
    #[arg(long)]
    threshold_drop: Option<f64>,
    /// Write the arms table here (.parquet, or .csv). An existing file is replaced only if
    /// ablate wrote it (a Parquet file with ablate's metadata), or with --force.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Also project the calls of a sequential run (ablate watch / next: each arm stops once one
    /// of its anytime-valid tests at the threshold decides) next to the fixed design's, from
    /// the --pilot's drops: an arm the pilot measured takes its drop and sd, the others the
    /// pilot's median distance from the threshold. When the pilot's cases have clusters, the
    /// projection is made on clusters like the pilot's, as watch would run them.
    #[arg(long, requires = "pilot")]
    sequential: bool,
    /// Replace an existing --out file that ablate cannot tell it wrote (any CSV, or a Parquet
    /// file from another tool).
    #[arg(long, requires = "out")]
    force: bool,
    #[command(flatten)]
    statistics: super::Statistics,
    #[command(flatten)]
    export: super::Export,
}

/// Runs `ablate plan`.
pub(super) fn plan(args: PlanArgs, g: &Global) -> Result<String> {
    let json = g.json;
    if let Some(dir) = &args.confirm {
        return confirm(dir, args.out.as_deref(), args.force, g);
    }
    let PlanArgs {
        units,
        design,
        confirm: _,
        only,
        cases,
        repeats,
        tokens_per_call,
        price_per_mtok,
        sd,
        pilot,
        threshold_drop,
        out,
        sequential,
        force,
        ..
    } = args;
    let (Some(units), Some(design)) = (units, design) else {
        return Err(Error::Usage(
            "plan needs --units FILE and --design, or --confirm DIR".into(),
        ));
    };
    check_numbers(threshold_drop, sd, price_per_mtok, tokens_per_call)?;
    let units = Units::load(&TableFile::given(&units, "--units")?)?;
    let mut pilot_exp = None;
    let sd = match pilot {
        Some(dir) => {
            let exp = pilot_exp.insert(load(&dir, g, Verb::Plan)?);
            let pilot = analysis::plan::pilot(exp).ok_or_else(|| {
                Error::Usage(format!(
                    "the pilot {} gives no sd to plan from: it needs an arm besides the baseline with at least two cases run in both (paired); add cases to the pilot, or give --sd",
                    dir.display()
                ))
            })?;
            Some(SdSource::Pilot { dir, pilot })
        }
        None => sd.map(SdSource::Given),
    };
    let opts = analysis::plan::PlanOptions {
        design: design.into(),
        only,
        cases,
        repeats,
        tokens_per_call,
        price_per_mtok,
        sd,
        threshold_drop,
        confidence: g.confidence,
        guarantee: g
            .guarantee
            .or_else(|| pilot_exp.as_ref().map(|e| e.manifest.guarantee))
            .unwrap_or_default(),
        per_arm: g.per_arm,
    };
    let r = analysis::all::plan(&units, &opts, pilot_exp.as_ref().filter(|_| sequential))?;
    if let Some(path) = &out {
        let arms: Vec<(String, Vec<String>)> = r
            .arms
            .iter()
            .map(|a| (a.arm.clone(), a.removed.clone()))
            .collect();
        ablate::io::write::arms_table(path, &arms, &r.design_label, force)?;
    }
    if g.export.is_some() {
        super::export(g, Verb::Plan.name(), &super::to_value(&r)?, None)?;
    }
    if json {
        report::json(&r)
    } else {
        Ok(report::plan::human(
            &r,
            out.as_ref().map(|p| p.display().to_string()).as_deref(),
        ))
    }
}

/// Refuses numbers that would print nonsense ("detecting inf needs 0 cases", "needs
/// 18,446,744,073,709,551,616 cases"): the threshold as `import --threshold-drop` and experiment.toml
/// take it (finite, 0 or more), an sd that is finite and above 0, and a price and tokens per call
/// that are finite, not negative and within [`super::MAX_PRICE_PER_MTOK`] and
/// [`ablate::io::logs::MAX_TOKENS`] (so that the costs stay finite).
///
/// # Errors
/// [`Error::Usage`] naming the flag and the value.
fn check_numbers(
    threshold_drop: Option<f64>,
    sd: Option<f64>,
    price_per_mtok: Option<f64>,
    tokens_per_call: Option<f64>,
) -> Result<()> {
    use ablate::text::float_text as text;
    if let Some(t) = threshold_drop
        && !(t.is_finite() && t >= 0.0)
    {
        return Err(Error::Usage(format!(
            "--threshold-drop {}: a drop threshold is a finite number, 0 or more (e.g. 0.02)",
            text(t)
        )));
    }
    if let Some(sd) = sd
        && !(sd.is_finite() && sd > 0.0)
    {
        return Err(Error::Usage(format!(
            "--sd {}: the sd of per-case paired differences is a finite number above 0 (e.g. 0.3), or give --pilot DIR to estimate it",
            text(sd)
        )));
    }
    if let Some(p) = price_per_mtok
        && !(0.0..=super::MAX_PRICE_PER_MTOK).contains(&p)
    {
        return Err(Error::Usage(format!(
            "--price-per-mtok {}: give dollars per million input tokens, a finite number from 0 to {:e}",
            text(p),
            super::MAX_PRICE_PER_MTOK
        )));
    }
    let max_tokens = ablate::io::logs::MAX_TOKENS as f64;
    if let Some(t) = tokens_per_call
        && !(0.0..=max_tokens).contains(&t)
    {
        return Err(Error::Usage(format!(
            "--tokens-per-call {}: give the full prompt's tokens per call, a finite number from 0 to {max_tokens:e}",
            text(t)
        )));
    }
    Ok(())
}

/// `ablate plan --confirm DIR`: the arm that confirms the experiment's joint cut.
fn confirm(
    dir: &std::path::Path,
    out: Option<&std::path::Path>,
    force: bool,
    g: &Global,
) -> Result<String> {
    let exp = load(dir, g, Verb::Plan)?;
    let r = analysis::all::confirm(&exp, &super::config(g))?;
    if let (Some(path), Some(arm)) = (out, r.arm.as_ref().filter(|_| !r.measured)) {
        let mut specs: Vec<ablate::io::ArmSpec> = match &exp.arms {
            Some(t) => t.specs.clone(),
            None => exp
                .results
                .arms
                .iter()
                .map(|a| ablate::io::ArmSpec {
                    arm: a.clone(),
                    removed: Vec::new(),
                    components: Vec::new(),
                    budget_ratio: None,
                    selector: None,
                    selector_threshold: None,
                    design: None,
                })
                .collect(),
        };
        specs.push(ablate::io::ArmSpec {
            arm: arm.clone(),
            removed: r.units.clone(),
            components: Vec::new(),
            budget_ratio: None,
            selector: None,
            selector_threshold: None,
            design: Some("confirm".into()),
        });
        ablate::io::write::arm_specs_table(path, &specs, "plan", force)?;
    }
    if g.json {
        report::json(&r)
    } else {
        Ok(report::plan::confirm_human(&r, out))
    }
}

/// The designs `ablate plan` can emit.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum DesignArg {
    Loo,
    Pairs,
    Factorial,
    Fractional,
}

impl From<DesignArg> for analysis::plan::DesignKind {
    fn from(d: DesignArg) -> Self {
        match d {
            DesignArg::Loo => Self::Loo,
            DesignArg::Pairs => Self::Pairs,
            DesignArg::Factorial => Self::Factorial,
            DesignArg::Fractional => Self::Fractional,
        }
    }
}

impl super::VerbArgs for PlanArgs {
    fn paths(&self) -> super::IoPaths {
        let mut p = super::IoPaths::default();
        if let Some(units) = &self.units {
            p.input("--units", units);
        }
        if let Some(dir) = &self.confirm {
            p.input("the --confirm experiment", dir);
        }
        if let Some(pilot) = &self.pilot {
            p.input("the --pilot experiment", pilot);
        }
        if let Some(out) = &self.out {
            p.file("--out", out, self.force);
        }
        p
    }

    fn apply(&self, g: &mut super::Global) {
        self.statistics.apply(g);
        self.export.apply(g);
    }
}
