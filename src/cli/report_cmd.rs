//! `ablate report`: the main job.

use ablate::verb::Verb;
use std::path::PathBuf;

use clap::Args;

use ablate::analysis;
use ablate::error::Result;
use ablate::report;

use super::{Apply as _, Global, config, load};

/// Everything the inputs support, as a report with charts (the main job).
///
/// Runs every analysis the experiment supports and writes, atomically, into --out (default
/// reports/<set>/): index.html (self-contained, opens offline), report.md, charts (SVG and PNG),
/// record.json, analysis.json (every verb's JSON) and tables/*.csv. The page opens with the
/// decision in one line: what to cut, what it saves, what it costs in production; then what to
/// keep and what is not settled, with the command that settles it. A report folder written for
/// another experiment is never replaced (--force aside). The page and its files: docs/report.md.
#[derive(Debug, Args)]
pub(super) struct ReportArgs {
    /// Experiment folder.
    dir: PathBuf,
    /// Output folder (default: reports/<set>/, with the set name reduced to letters, digits,
    /// `-`, `_` and `.`). An existing folder is replaced only if it is a report ablate wrote (its
    /// .ablate-output marker lists every file in it) or it is empty; anything else (an export, an
    /// experiment, a folder of yours, a read-only folder) is refused.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the report folder even when it holds the report of another experiment (another
    /// set: its analysis.json's `check.set` or `check.set_sha256` differs; or another model).
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    pricing: super::experiment::PricingArgs,
    #[command(flatten)]
    production: super::options::ProductionArgs,
    /// Open the page in the default browser when the report is written (when there is a
    /// display; otherwise say where it is).
    #[arg(long)]
    open: bool,
    #[command(flatten)]
    statistics: super::Statistics,
    #[command(flatten)]
    aggregates: super::Aggregates,
    #[command(flatten)]
    memory: super::Memory,
    #[command(flatten)]
    export: super::Export,
}

/// What names the experiment a report is of: its set (name and the hash of its case ids), its
/// model, and its folder (for the message).
#[derive(Debug, Clone)]
struct ReportOf {
    set: String,
    hash: String,
    model: Option<String>,
    dir: String,
}

impl ReportOf {
    fn of(exp: &ablate::io::Experiment) -> ReportOf {
        ReportOf {
            set: exp.manifest.set.clone(),
            hash: analysis::record::experiment_set_hash(exp),
            model: exp.manifest.model.clone(),
            dir: exp.dir.display().to_string(),
        }
    }
}

/// Refuses to replace the report of another experiment: `out`'s analysis.json names a different
/// set (by `check.set_sha256`, the hash of its case ids, or by its name), or the same
/// set run on another model (the same frozen set on two models is two experiments, and both
/// reports default to `reports/<set>`). Checked before the analyses (to fail early), and again
/// on the earlier folder as the new one replaces it ([`ablate::io::output::AtomicDir::replacing_only`]):
/// another `report` may have written there meanwhile.
///
/// # Errors
/// [`Error::Usage`] naming the folder, both sets and what to do.
fn another_experiments_report(out: &std::path::Path, this: &ReportOf) -> Result<()> {
    let Ok(text) = std::fs::read_to_string(out.join("analysis.json")) else {
        return Ok(());
    };
    let Ok(old) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Ok(());
    };
    let check = &old["check"];
    let (old_set, old_hash) = (check["set"].as_str(), check["set_sha256"].as_str());
    // Another set by its cases or by its name: two sets of the same case ids (simulated with
    // different seeds, or one set renamed) are two experiments too.
    let other = old_hash.is_some_and(|h| h != this.hash) || old_set.is_some_and(|s| s != this.set);
    let old_model = check["model"].as_str();
    if !other
        && let (Some(old_model), Some(model)) = (old_model, this.model.as_deref())
        && old_model != model
    {
        return Err(ablate::error::Error::Usage(format!(
            "{} holds the report of the same set run on another model ({old_model}), not of {} (model {model}): choose another --out (e.g. --out reports/<set>-<model>), or pass --force to replace it",
            out.display(),
            this.dir,
        )));
    }
    // The first 12 characters (not bytes: the file may hold anything).
    let short = |h: &str| h.chars().take(12).collect::<String>();
    if other {
        return Err(ablate::error::Error::Usage(format!(
            "{} holds the report of another experiment (set {}{}), not of {} (set {}, set_sha256 {}): choose another --out, or pass --force to replace it",
            out.display(),
            old_set.unwrap_or("a set"),
            old_hash
                .map(|h| format!(", set_sha256 {}", short(h)))
                .unwrap_or_default(),
            this.dir,
            this.set,
            short(&this.hash)
        )));
    }
    Ok(())
}

/// Opens `page` in the user's browser: `open` on macOS, `start` on Windows, `xdg-open` where
/// there is an X or Wayland display. Returns why not, when it cannot.
fn open_in_browser(page: &std::path::Path) -> std::result::Result<(), String> {
    let display = cfg!(any(target_os = "macos", target_os = "windows"))
        || std::env::var_os("DISPLAY").is_some()
        || std::env::var_os("WAYLAND_DISPLAY").is_some();
    if !display {
        return Err("no display here".into());
    }
    let mut cmd = if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else if cfg!(target_os = "windows") {
        let mut c = std::process::Command::new("cmd");
        c.args(["/C", "start", ""]);
        c
    } else {
        std::process::Command::new("xdg-open")
    };
    cmd.arg(page)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(|_| ())
        .map_err(|e| format!("could not start a browser ({e})"))
}

/// Runs `ablate report`.
pub(super) fn report(args: ReportArgs, g: &Global) -> Result<String> {
    let json = g.json;
    let ReportArgs {
        dir,
        out,
        pricing,
        open,
        force,
        production,
        ..
    } = args;
    let pricing = pricing.pricing()?;
    let production = production.load()?;
    // The tables, and the samples the drill-down reads after them, from one generation of the
    // folder: held until the analyses are done (the report writes nothing into the folder).
    let reading = ablate::io::output::FolderLock::shared(&dir);
    let exp = load(&dir, g, Verb::Report)?;
    let out = match out {
        Some(out) => out,
        None => {
            let out = ablate::io::output::inside(
                std::path::Path::new("reports"),
                &exp.manifest.set,
                "set name",
            )?;
            // The default folder, checked against the inputs and --export as a given --out is.
            let mut paths = super::IoPaths::experiment(&dir);
            paths.folder(
                "the report folder (reports/<set>)",
                &out,
                super::FolderKind::Report,
            );
            paths.preflight(g)?;
            out
        }
    };
    let this = ReportOf::of(&exp);
    if !force {
        another_experiments_report(&out, &this)?;
    }
    let cfg = config(g);
    let bar = cfg.progress_bar(24, "analysing");
    let analyses = analysis::all::run(&exp, &cfg, pricing, &production, |verb| {
        if let Some(b) = &bar {
            b.set_message(verb.name());
            b.inc(1);
        }
    })?;
    drop(reading);
    if let Some(dir) = &g.export {
        let tables = ablate::export::report_frames(&super::to_value(&analyses)?)?;
        super::write_export(g, dir, Verb::Report.name(), tables, Some(&exp))?;
    }
    // Checked again as the folder is replaced: another report may have landed there meanwhile.
    let replaceable = (!force)
        .then_some(move |earlier: &std::path::Path| another_experiments_report(earlier, &this));
    let written = report::document::write(&analyses, &out, bar.as_ref(), replaceable)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if open {
        let page = std::path::Path::new(&written.out).join("index.html");
        if let Err(why) = open_in_browser(&page) {
            eprintln!(
                "ablate: not opening the report ({why}): open {}",
                page.display()
            );
        }
    }
    if json {
        report::json(&written)
    } else {
        Ok(format!(
            "wrote {} ({} files): open {}/index.html, or read {}/report.md\n{}",
            written.out,
            written.files.len(),
            written.out,
            written.out,
            analyses
                .skipped
                .iter()
                .map(|s| format!("not analysed: {s}\n"))
                .collect::<String>()
        ))
    }
}

impl super::VerbArgs for ReportArgs {
    fn paths(&self) -> super::IoPaths {
        let mut p = super::IoPaths::experiment(&self.dir);
        if let Some(out) = &self.out {
            p.folder("--out", out, super::FolderKind::Report);
        }
        self.production.inputs(&mut p);
        p
    }

    fn apply(&self, g: &mut super::Global) {
        self.statistics.apply(g);
        self.aggregates.apply(g);
        self.memory.apply(g);
        self.export.apply(g);
    }
}
