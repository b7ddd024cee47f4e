//! `--arm NAME=GLOB`: which arm a log file belongs to.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// `--arm NAME=GLOB` rules, compiled: which arm name a source file gets.
#[derive(Debug, Default)]
pub struct ArmNames {
    rules: Vec<(String, String, globset::GlobMatcher)>,
}

impl ArmNames {
    /// Compiles the rules. A GLOB that is an existing folder matches every file under it
    /// (`runs/before` is `runs/before/**`); `*` does not cross `/`, `**` does.
    ///
    /// # Errors
    /// A rule that is not `NAME=GLOB`, an empty name, or a pattern globset cannot read.
    pub fn new(rules: &[(String, String)]) -> Result<ArmNames> {
        let mut out = Vec::new();
        for (name, glob) in rules {
            let pattern = normalise_path(glob);
            let pattern = if Path::new(glob).is_dir() {
                format!("{}/**", pattern.trim_end_matches('/'))
            } else {
                pattern
            };
            let matcher = globset::GlobBuilder::new(&pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| {
                    Error::Usage(format!(
                        "--arm {name}={glob}: not a pattern ablate can read ({e}); e.g. --arm before=runs/before/** (quote it so the shell leaves it alone)"
                    ))
                })?
                .compile_matcher();
            out.push((name.clone(), glob.clone(), matcher));
        }
        Ok(ArmNames { rules: out })
    }

    /// Compiles the rules and checks them against the files read: a rule that matches none of
    /// them is a typo (or files left out), refused by name. `what` names the files (e.g. "logs").
    ///
    /// # Errors
    /// As [`ArmNames::new`], and a rule that matches no file.
    pub fn for_files(
        rules: &[(String, String)],
        files: &[PathBuf],
        what: &str,
    ) -> Result<ArmNames> {
        let names = ArmNames::new(rules)?;
        let unmatched = names.unmatched(files);
        if !unmatched.is_empty() {
            return Err(Error::Usage(format!(
                "--arm {}: matches none of the {} {what} read ({}); check the pattern (quote it so the shell leaves it alone)",
                unmatched.join(", --arm "),
                files.len(),
                files
                    .iter()
                    .take(3)
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        Ok(names)
    }

    /// Whether any rule was given.
    pub fn any(&self) -> bool {
        !self.rules.is_empty()
    }

    /// The arm a file belongs to by the rules, `None` when no rule matches.
    ///
    /// # Errors
    /// A file that rules with different names both match.
    pub fn name_of(&self, file: &Path) -> Result<Option<String>> {
        let path = normalise_path(&file.to_string_lossy());
        let hits: Vec<&(String, String, globset::GlobMatcher)> = self
            .rules
            .iter()
            .filter(|(_, _, m)| m.is_match(&path))
            .collect();
        let names: BTreeSet<&String> = hits.iter().map(|(n, _, _)| n).collect();
        match names.len() {
            0 => Ok(None),
            1 => Ok(Some(hits[0].0.clone())),
            _ => Err(Error::Usage(format!(
                "{}: matched by --arm rules naming different arms ({}); make the patterns exclusive",
                file.display(),
                hits.iter()
                    .map(|(n, g, _)| format!("{n}={g}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// The rules no file matched, as `NAME=GLOB` (a typo, or files left out).
    pub fn unmatched(&self, files: &[PathBuf]) -> Vec<String> {
        self.rules
            .iter()
            .filter(|(_, _, m)| {
                !files
                    .iter()
                    .any(|f| m.is_match(normalise_path(&f.to_string_lossy())))
            })
            .map(|(n, g, _)| format!("{n}={g}"))
            .collect()
    }
}

/// A path as rules match it: `/` separators, no leading `./`.
fn normalise_path(p: &str) -> String {
    let p = p.replace('\\', "/");
    let mut s = p.as_str();
    while let Some(rest) = s.strip_prefix("./") {
        s = rest;
    }
    s.to_string()
}

/// Parses one `--arm NAME=GLOB` value.
///
/// # Errors
/// No `=`, or an empty name or pattern.
pub fn parse_arm_rule(text: &str) -> std::result::Result<(String, String), String> {
    match text.split_once('=') {
        Some((n, g)) if !n.trim().is_empty() && !g.is_empty() => {
            Ok((n.trim().to_string(), g.to_string()))
        }
        _ => Err(format!(
            "`{text}` is not NAME=GLOB; e.g. --arm before='runs/before/**'"
        )),
    }
}
