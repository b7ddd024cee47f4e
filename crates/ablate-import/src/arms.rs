//! `--arm NAME=GLOB`: which arm a log file belongs to.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// `--arm NAME=GLOB` rules, compiled: which arm name a source file gets.
#[derive(Debug, Default)]
pub struct ArmNames {
    rules: Vec<(String, String, Vec<globset::GlobMatcher>)>,
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
            let folder = Path::new(glob).is_dir();
            // The pattern as typed and as an absolute path, each with `.` and `..` resolved, so
            // that `./runs/a`, `runs/b/../a` and `$PWD/runs/a` name the files of `runs/a` however
            // the logs were given.
            let mut matchers = Vec::new();
            for pattern in path_forms(glob) {
                let pattern = if folder {
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
                matchers.push(matcher);
            }
            out.push((name.clone(), glob.clone(), matchers));
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
        let paths = path_forms(&file.to_string_lossy());
        let hits: Vec<&(String, String, Vec<globset::GlobMatcher>)> = self
            .rules
            .iter()
            .filter(|(_, _, m)| matches_any(m, &paths))
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
                    .any(|f| matches_any(m, &path_forms(&f.to_string_lossy())))
            })
            .map(|(n, g, _)| format!("{n}={g}"))
            .collect()
    }
}

/// Whether any of a rule's patterns matches any form of a path.
fn matches_any(matchers: &[globset::GlobMatcher], paths: &[String]) -> bool {
    matchers.iter().any(|m| paths.iter().any(|p| m.is_match(p)))
}

/// The forms a path (or pattern) is matched in: as given and as an absolute path (joined to the
/// working folder), each with `/` separators and `.` and `..` resolved without touching the
/// disk. A pattern that starts with a wildcard keeps only the first form.
fn path_forms(p: &str) -> Vec<String> {
    let given = normalise_path(p);
    let mut forms = vec![given.clone()];
    if !given.starts_with('/')
        && !given.starts_with('*')
        && let Ok(cwd) = std::env::current_dir()
    {
        let absolute = normalise_path(&format!("{}/{given}", cwd.to_string_lossy()));
        if absolute != given {
            forms.push(absolute);
        }
    }
    forms
}

/// A path as rules match it: `/` separators, `.` parts dropped and `..` parts applied (lexically:
/// a `..` at the start of a relative path stays).
fn normalise_path(p: &str) -> String {
    let p = p.replace('\\', "/");
    let absolute = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|l| *l != "..") => {
                parts.pop();
            }
            ".." if absolute => {}
            part => parts.push(part),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
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

/// One setting two runs differ in, in words: `KEY (A against B)`, a value that is missing shown
/// as "not set".
pub(crate) fn differing(key: &str, a: Option<String>, b: Option<String>) -> String {
    let shown = |v: Option<String>| v.unwrap_or_else(|| "not set".to_string());
    format!("{key} ({} against {})", shown(a), shown(b))
}

/// Two sources that would share arm `arm` but were run differently: the arm's first source,
/// the other, and what differs in words.
pub(crate) struct Mismatch<'a> {
    /// The arm both would join.
    pub arm: &'a str,
    /// The arm's first source (an index into the caller's list).
    pub first: usize,
    /// The source that differs from it.
    pub other: usize,
    /// What differs ([`differing`]), never empty.
    pub differ: Vec<String>,
}

/// An arm is one configuration. Walks the sources in order (`arms[i]` is source i's arm) and
/// compares each with its arm's first source (`differences(first, i)`, empty when they agree).
/// Sources the user put in one arm (`named` for both: --arm, --arm-from) are pooled as asked,
/// and `pooled` hears each such arm once, with its first mismatch; the first other mismatch is
/// returned, for the caller to refuse naming both sources.
pub(crate) fn first_unasked_mismatch<'a>(
    arms: &[&'a str],
    named: &[bool],
    differences: impl Fn(usize, usize) -> Vec<String>,
    mut pooled: impl FnMut(&Mismatch<'a>),
) -> Option<Mismatch<'a>> {
    let mut first_of: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut noted: BTreeSet<&str> = BTreeSet::new();
    for (i, &arm) in arms.iter().enumerate() {
        let first = *first_of.entry(arm).or_insert(i);
        let differ = differences(first, i);
        if differ.is_empty() {
            continue;
        }
        let mismatch = Mismatch {
            arm,
            first,
            other: i,
            differ,
        };
        if !(named[first] && named[i]) {
            return Some(mismatch);
        }
        if noted.insert(arm) {
            pooled(&mismatch);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mismatch_is_returned_unless_both_sources_were_named_alike() {
        // Sources 0 and 2 share arm `a` and differ; source 1 is alone in `b`.
        let arms = ["a", "b", "a", "a"];
        let setting = ["t=0", "t=0", "t=1", "t=1"];
        let differences = |x: usize, y: usize| {
            if setting[x] == setting[y] {
                Vec::new()
            } else {
                vec![differing(
                    "t",
                    Some(setting[x].into()),
                    Some(setting[y].into()),
                )]
            }
        };
        let mut notes = Vec::new();
        let refused =
            first_unasked_mismatch(&arms, &[false; 4], differences, |m| notes.push(m.other))
                .expect("a mismatch");
        assert_eq!((refused.arm, refused.first, refused.other), ("a", 0, 2));
        assert_eq!(refused.differ, ["t (t=0 against t=1)"]);
        assert!(notes.is_empty());

        // Named alike: pooled, heard once for the arm (at its first mismatch), nothing refused.
        let refused =
            first_unasked_mismatch(&arms, &[true; 4], differences, |m| notes.push(m.other));
        assert!(refused.is_none());
        assert_eq!(notes, [2]);
    }

    /// `./runs/a`, `runs/b/../a` and the absolute path of `runs/a` name the same files, however
    /// the logs were given (relative or absolute).
    #[test]
    fn a_pattern_names_its_files_however_either_is_spelt() {
        assert_eq!(normalise_path("./runs//a/./x.eval"), "runs/a/x.eval");
        assert_eq!(normalise_path("runs/b/../a"), "runs/a");
        assert_eq!(normalise_path("../up/x"), "../up/x");
        assert_eq!(normalise_path("/../x"), "/x");
        let cwd = std::env::current_dir()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let file = PathBuf::from("runs/a/x.eval");
        let absolute_file = PathBuf::from(format!("{cwd}/runs/a/x.eval"));
        for pattern in [
            "./runs/a/*.eval".to_string(),
            "runs/b/../a/*.eval".to_string(),
            format!("{cwd}/runs/a/*.eval"),
        ] {
            let names = ArmNames::new(&[("a".into(), pattern.clone())]).unwrap();
            for f in [&file, &absolute_file] {
                assert_eq!(
                    names.name_of(f).unwrap().as_deref(),
                    Some("a"),
                    "{pattern} {f:?}"
                );
            }
        }
        let names = ArmNames::new(&[("a".into(), "runs/b/*.eval".into())]).unwrap();
        assert_eq!(names.name_of(&file).unwrap(), None);
    }

    #[test]
    fn a_missing_setting_reads_not_set() {
        assert_eq!(
            differing("gen_kwargs.temperature", None, Some("0.8".into())),
            "gen_kwargs.temperature (not set against 0.8)"
        );
    }
}
