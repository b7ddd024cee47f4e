//! The `runs` table: one row per harness run, as `ablate import` writes it.

use crate::error::Result;
use crate::io::table::{self, Col, Kind, TableFile};

pub use ablate_core::data::runs::*;

/// Reading the `runs` table into [`Runs`].
pub trait RunsLoad {
    /// Reads `runs`.
    ///
    /// # Errors
    /// Missing columns, or values of the wrong type.
    fn load(file: &TableFile) -> Result<Runs>;
}

impl RunsLoad for Runs {
    fn load(file: &TableFile) -> Result<Runs> {
        let t = table::read(
            file,
            &[
                Col::req("run", Kind::Str),
                Col::req("arm", Kind::Str),
                Col::req("harness", Kind::Str),
                Col::req("file", Kind::Str),
                Col::opt("revision", Kind::Str),
                Col::opt("model", Kind::Str),
                Col::opt("started", Kind::Str),
                Col::req("samples", Kind::Int),
                Col::req("errors", Kind::Int),
                Col::opt("mean_score", Kind::Float),
                Col::req("outlier", Kind::Bool),
            ],
        )?;
        let n = t.strs("run")?.len();
        let opt = |name: &str| -> Result<Vec<Option<String>>> {
            if t.has(name) {
                t.opt_strs(name)
            } else {
                Ok(vec![None; n])
            }
        };
        let (run, arm, harness, file_col) = (
            t.strs("run")?,
            t.strs("arm")?,
            t.strs("harness")?,
            t.strs("file")?,
        );
        let (revision, model, started) = (opt("revision")?, opt("model")?, opt("started")?);
        let (samples, errors, outlier) =
            (t.ints("samples")?, t.ints("errors")?, t.bools("outlier")?);
        let mean = if t.has("mean_score") {
            t.opt_floats("mean_score")?
        } else {
            vec![None; n]
        };
        let rows = (0..n)
            .map(|i| RunRow {
                run: run[i].clone(),
                arm: arm[i].clone(),
                harness: harness[i].clone(),
                file: file_col[i].clone(),
                revision: revision[i].clone(),
                model: model[i].clone(),
                started: started[i].clone(),
                samples: samples[i],
                errors: errors[i],
                mean_score: mean[i],
                outlier: outlier[i],
            })
            .collect();
        Ok(Runs { path: t.path, rows })
    }
}
