//! Which arm each samples file is when `--arm` does not say: by prompt version, by model, or by
//! file, and the checks that the files being compared ran the same documents.

use std::collections::{BTreeMap, BTreeSet};

use super::{File, Prompts, Taken, date_id};

/// Default arm names, per file index, and how they were formed.
pub(super) struct DefaultArms {
    pub(super) names: Vec<String>,
    pub(super) how: String,
}

/// The arms the logs suggest: the file's name with `--arm-from file`; else the task, with runs of
/// one task split where their prompts differ (prompt_hash, doc by doc). Such prompt versions are
/// named by the folder that tells their runs apart (`run-a`, `run-b`), else by the run's
/// date_id; prefixed by the task when several tasks are imported.
pub(super) fn default_arms(files: &[File], taken: &[Taken], by_file: bool) -> DefaultArms {
    let mut names = vec![String::new(); files.len()];
    let stem = |f: &File| {
        f.path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    if by_file {
        for t in taken {
            names[t.file] = stem(&files[t.file]);
        }
        return DefaultArms {
            names,
            how: "the samples file's name (--arm-from file)".into(),
        };
    }
    let tasks: BTreeSet<&str> = taken.iter().map(|t| files[t.file].task.as_str()).collect();
    // The models each task's runs recorded.
    let mut known: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for t in taken {
        let f = &files[t.file];
        let models = known.entry(f.task.as_str()).or_default();
        models.extend(f.run.model.as_deref());
    }
    // Each file's model, found once. A run without a results file records no model: it is
    // "(model not recorded)" beside runs that record one, never taken to be theirs (a run of
    // another model had become a repeat of the only model recorded), and "" when no run of
    // the task records one.
    let model_at: BTreeMap<usize, &str> = taken
        .iter()
        .map(|t| {
            let f = &files[t.file];
            let task_models = &known[f.task.as_str()];
            let model = match (f.run.model.as_deref(), task_models.len()) {
                (Some(m), _) => m,
                (None, 0) => "",
                (None, _) => "(model not recorded)",
            };
            (t.file, model)
        })
        .collect();
    let model_of = |f: usize| model_at[&f];
    let short_models = short_model_names(taken.iter().map(|t| model_of(t.file)).collect());
    let mut split_notes = Vec::new();
    for task in &tasks {
        let models: BTreeSet<&str> = taken
            .iter()
            .filter(|t| files[t.file].task == *task)
            .map(|t| model_of(t.file))
            .collect();
        if models.len() > 1 {
            split_notes.push(format!(
                "task {task} was run by {} models ({}): a model is part of an arm, never a repeat, so each model's runs are their own arm, named by the model",
                models.len(),
                models.iter().copied().collect::<Vec<_>>().join(", ")
            ));
        }
        for model in &models {
            // Prompt versions of this task and model, in run order: runs identical doc by doc
            // are one version.
            let runs: Vec<&Taken> = taken
                .iter()
                .filter(|t| files[t.file].task == *task && model_of(t.file) == *model)
                .collect();
            let versions = prompt_versions(&runs);
            let labels = if versions.len() > 1 {
                let firsts: Vec<&File> = versions.iter().map(|m| &files[m[0]]).collect();
                let (labels, by_folder) = version_labels(&firsts);
                split_notes.push(format!(
                    "task {task}'s runs{} were given {} different prompts (prompt_hash differs doc by doc), so each prompt is its own arm, named by {} ({}); runs with identical prompts are repeats",
                    if models.len() > 1 { format!(" by {model}") } else { String::new() },
                    versions.len(),
                    if by_folder { "the folder that tells the runs apart" } else { "the run's date" },
                    labels.join(", ")
                ));
                labels
            } else {
                vec![String::new()]
            };
            for (members, label) in versions.iter().zip(&labels) {
                let mut parts: Vec<&str> = Vec::new();
                if tasks.len() > 1 || (models.len() == 1 && label.is_empty()) {
                    parts.push(task);
                }
                if models.len() > 1 {
                    parts.push(&short_models[*model]);
                }
                if !label.is_empty() {
                    parts.push(label);
                }
                let name = parts.join(" ");
                for f in members {
                    names[*f] = name.clone();
                }
            }
        }
    }
    let mut how = if tasks.len() > 1 {
        "the task (the tasks differ)".to_string()
    } else {
        format!(
            "the task {}",
            tasks.iter().next().copied().unwrap_or_default()
        )
    };
    if split_notes.is_empty() {
        how.push_str("; every run of a task was given the same prompts doc by doc (prompt_hash), so its runs are repeats");
    } else {
        how = format!("{how}; {}", split_notes.join("; "));
    }
    DefaultArms { names, how }
}

/// The prompt versions of one task's runs, in run order (file indices per version): a run joins
/// a version when their prompts agree on every doc both have (and they share one), so a run over
/// fewer docs (--limit, skipped lines) is no new prompt.
fn prompt_versions(runs: &[&Taken]) -> Vec<Vec<usize>> {
    let mut versions: Vec<(Option<Prompts<'_>>, Vec<usize>)> = Vec::new();
    for t in runs {
        let p = t.prompts();
        match versions
            .iter_mut()
            .find(|(q, _)| same_prompts(q.as_ref(), p.as_ref()))
        {
            Some((q, members)) => {
                if let (Some(q), Some(p)) = (q.as_mut(), p) {
                    q.extend(p);
                }
                members.push(t.file);
            }
            None => versions.push((p, vec![t.file])),
        }
    }
    versions.into_iter().map(|(_, m)| m).collect()
}

/// Short names for models: the last part of the name (`upstage/SOLAR-10.7B` → `SOLAR-10.7B`,
/// a local path → its folder), or the whole name where two short names would collide.
fn short_model_names(models: BTreeSet<&str>) -> BTreeMap<&str, String> {
    let short = |m: &str| {
        m.trim_end_matches('/')
            .rsplit(['/', '\\'])
            .next()
            .filter(|s| !s.is_empty())
            .unwrap_or(m)
            .to_string()
    };
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for m in &models {
        *count.entry(short(m)).or_default() += 1;
    }
    models
        .into_iter()
        .map(|m| {
            let s = short(m);
            (m, if count[&s] > 1 { m.to_string() } else { s })
        })
        .collect()
}

/// Whether two runs gave the same prompts: both without prompt hashes, or hashes that agree on
/// every doc both have, with at least one doc in common.
pub(super) fn same_prompts(a: Option<&Prompts<'_>>, b: Option<&Prompts<'_>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            let mut shared = 0usize;
            for (doc, h) in b {
                if let Some(g) = a.get(doc) {
                    if g != h {
                        return false;
                    }
                    shared += 1;
                }
            }
            shared > 0
        }
        _ => false,
    }
}

/// Names for prompt versions, from their first runs: the part of the folder path that differs
/// between them (`run-a`, `run-b`), else the run's date_id, else the file name. Returns the names
/// and whether they came from folders.
pub(super) fn version_labels(firsts: &[&File]) -> (Vec<String>, bool) {
    let comps: Vec<Vec<String>> = firsts
        .iter()
        .map(|f| {
            f.path
                .parent()
                .map(|p| {
                    p.components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect();
    let shortest = comps.iter().map(Vec::len).min().unwrap_or(0);
    let prefix = (0..shortest)
        .take_while(|&i| comps.iter().all(|c| c[i] == comps[0][i]))
        .count();
    let suffix = (0..shortest - prefix)
        .take_while(|&i| {
            comps
                .iter()
                .all(|c| c[c.len() - 1 - i] == comps[0][comps[0].len() - 1 - i])
        })
        .count();
    let folders: Vec<String> = comps
        .iter()
        .map(|c| c[prefix..c.len() - suffix].join("/"))
        .collect();
    let distinct = |v: &[String]| {
        v.iter().all(|s| !s.is_empty()) && v.iter().collect::<BTreeSet<_>>().len() == v.len()
    };
    if distinct(&folders) {
        return (folders, true);
    }
    let dated: Vec<String> = firsts
        .iter()
        .map(|f| {
            let stem = f
                .path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            date_id(&stem).map(str::to_string).unwrap_or(stem)
        })
        .collect();
    if distinct(&dated) {
        return (dated, false);
    }
    (
        dated
            .iter()
            .enumerate()
            .map(|(i, d)| format!("{d} #{}", i + 1))
            .collect(),
        false,
    )
}

/// Arms that hold runs of one task given different prompts (possible only when `--arm` named
/// them so): arm → task. Two runs differ by the rule that splits arms ([`same_prompts`]: their
/// hashes disagree on a doc both have), so runs over different numbers of docs do not.
pub(super) fn pooled_prompts(files: &[File], taken: &[Taken]) -> Vec<(String, String)> {
    let mut seen: BTreeMap<(&str, &str), Vec<Option<Prompts<'_>>>> = BTreeMap::new();
    for t in taken {
        seen.entry((t.arm.as_str(), files[t.file].task.as_str()))
            .or_default()
            .push(t.prompts());
    }
    seen.into_iter()
        .filter(|(_, v)| {
            v.iter().enumerate().any(|(i, a)| {
                v[i + 1..]
                    .iter()
                    .any(|b| !same_prompts(a.as_ref(), b.as_ref()))
            })
        })
        .map(|((a, t), _)| (a.to_string(), t.to_string()))
        .collect()
}

/// Arms that hold runs of different models (possible only when `--arm` named them so): arm →
/// models.
pub(super) fn pooled_models(files: &[File], taken: &[Taken]) -> Vec<(String, Vec<String>)> {
    let mut seen: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for t in taken {
        seen.entry(t.arm.as_str()).or_default().insert(
            files[t.file]
                .run
                .model
                .as_deref()
                .unwrap_or("(model not recorded)"),
        );
    }
    seen.into_iter()
        .filter(|(_, m)| m.len() > 1)
        .map(|(a, m)| (a.to_string(), m.into_iter().map(str::to_string).collect()))
        .collect()
}

/// doc_ids that hold different documents in different lines (more than one doc_hash).
pub(super) fn conflicting_doc_ids(taken: &[Taken]) -> BTreeSet<String> {
    let mut hashes: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for t in taken {
        for l in &t.lines {
            if let Some(h) = &l.doc_hash {
                hashes.entry(l.case_id.as_str()).or_default().insert(h);
            }
        }
    }
    hashes
        .into_iter()
        .filter(|(_, h)| h.len() > 1)
        .map(|(d, _)| d.to_string())
        .collect()
}
