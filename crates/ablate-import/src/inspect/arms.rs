//! Which arm a log is: by task arguments, by model or by file, and the run that identifies a log
//! across files.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{EvalSpec, Log};
use crate::arms::differing;
use crate::error::{Error, Result};
use crate::import::scalar_text;

/// How the arm of a log is named.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum ArmFrom {
    TaskArgs(Vec<String>),
    Task,
    Model,
    Tag,
    File,
    Single,
}

pub(super) fn arm_from(logs: &[Log], asked: Option<&str>) -> Result<(ArmFrom, String)> {
    let differ = |f: &dyn Fn(&Log) -> String| logs.iter().map(f).collect::<BTreeSet<_>>().len() > 1;
    if let Some(a) = asked {
        return match a {
            "task" => Ok((ArmFrom::Task, "--arm-from task".into())),
            "model" => Ok((ArmFrom::Model, "--arm-from model".into())),
            "tag" => Ok((ArmFrom::Tag, "--arm-from tag".into())),
            "file" => Ok((ArmFrom::File, "--arm-from file".into())),
            other => match other.strip_prefix("task_arg:") {
                Some(name) if !name.is_empty() => {
                    if let Some(l) = logs
                        .iter()
                        .find(|l| !l.header.eval.task_args.contains_key(name))
                    {
                        return Err(Error::Usage(format!(
                            "--arm-from {other}: {} has no task argument `{name}`; its arguments: {}",
                            l.path.display(),
                            l.header
                                .eval
                                .task_args
                                .keys()
                                .cloned()
                                .collect::<Vec<_>>()
                                .join(", ")
                        )));
                    }
                    Ok((
                        ArmFrom::TaskArgs(vec![name.to_string()]),
                        format!("--arm-from {other}"),
                    ))
                }
                _ => Err(Error::Usage(format!(
                    "--arm-from {other}: use task_arg:NAME, task, model, tag or file"
                ))),
            },
        };
    }
    let keys: BTreeSet<&String> = logs
        .iter()
        .flat_map(|l| l.header.eval.task_args.keys())
        .collect();
    let varying: Vec<String> = keys
        .into_iter()
        .filter(|k| {
            differ(&|l: &Log| {
                l.header
                    .eval
                    .task_args
                    .get(*k)
                    .map(|v| v.to_string())
                    .unwrap_or_default()
            })
        })
        .cloned()
        .collect();
    if !varying.is_empty() {
        let why = format!(
            "the task argument{} that {} between the logs: {}",
            if varying.len() > 1 { "s" } else { "" },
            if varying.len() > 1 {
                "differ"
            } else {
                "differs"
            },
            varying.join(", ")
        );
        return Ok((ArmFrom::TaskArgs(varying), why));
    }
    if differ(&|l| l.header.eval.task.clone()) {
        return Ok((
            ArmFrom::Task,
            "the task, which differs between the logs".into(),
        ));
    }
    if differ(&|l| l.header.eval.model.clone()) {
        return Ok((
            ArmFrom::Model,
            "the model, which differs between the logs".into(),
        ));
    }
    if differ(&|l| l.header.eval.tags.join(",")) {
        return Ok((
            ArmFrom::Tag,
            "the tags, which differ between the logs".into(),
        ));
    }
    Ok((
        ArmFrom::Single,
        "one arm: nothing (task arguments, task, model, tags) differs between the logs; they are repeats of one configuration".into(),
    ))
}

/// The labels of the logs' arms. Task-argument values are written as text (`1`, `full`; a null
/// or missing one as `(none)`); when two logs' values differ but read the same as text (the
/// number `1` and the string `"1"`, a null and a missing argument, which takes the task's own
/// default), those logs' values are written as JSON instead (`1`, `"1"`, `null`), so that
/// different configurations never merge into one arm, and every other arm keeps its plain name
/// (a null beside the string "null" had turned `full` into `"full"`, which the baseline rule no
/// longer knew). A JSON label that meets a plain one turns that one to JSON too. Returns the
/// labels and whether JSON was needed.
pub(super) fn arm_labels(logs: &[Log], how: &ArmFrom) -> (Vec<String>, bool) {
    let plain: Vec<String> = logs.iter().map(|l| arm_label(l, how, false)).collect();
    let ArmFrom::TaskArgs(keys) = how else {
        return (plain, false);
    };
    // A null argument and a missing one are told apart: a missing one takes the task's own
    // default, which need not be None (the configuration check refuses to pool them).
    let config = |l: &Log| -> Vec<Option<Value>> {
        keys.iter()
            .map(|k| l.header.eval.task_args.get(k).cloned())
            .collect()
    };
    // The labels that name more than one configuration.
    let clashing = |labels: &[String]| -> std::collections::BTreeSet<String> {
        let mut seen: BTreeMap<&String, Vec<Option<Value>>> = BTreeMap::new();
        let mut out = std::collections::BTreeSet::new();
        for (l, label) in logs.iter().zip(labels) {
            let c = config(l);
            if seen.entry(label).or_insert_with(|| c.clone()) != &c {
                out.insert(label.clone());
            }
        }
        out
    };
    // Clashing labels become JSON until none clashes. Two JSON labels never clash (the same
    // JSON is the same value), so this ends, at worst with every label JSON.
    let mut labels = plain;
    let mut as_json = vec![false; logs.len()];
    loop {
        let clash = clashing(&labels);
        let mut changed = false;
        for (i, l) in logs.iter().enumerate() {
            if !as_json[i] && clash.contains(&labels[i]) {
                as_json[i] = true;
                labels[i] = arm_label(l, how, true);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let any = as_json.contains(&true);
    (labels, any)
}

pub(super) fn arm_label(log: &Log, how: &ArmFrom, json: bool) -> String {
    let e = &log.header.eval;
    let text = |v: &Value| {
        if json {
            v.to_string()
        } else if v.is_null() {
            // Not set (not an arm named after the string "null").
            "(none)".to_string()
        } else {
            scalar_text(v).unwrap_or_else(|| v.to_string())
        }
    };
    match how {
        ArmFrom::TaskArgs(keys) if keys.len() == 1 => e
            .task_args
            .get(&keys[0])
            .map(text)
            .unwrap_or_else(|| "(none)".into()),
        ArmFrom::TaskArgs(keys) => keys
            .iter()
            .map(|k| {
                let v = e.task_args.get(k).map_or_else(|| "(none)".into(), text);
                format!("{k}={v}")
            })
            .collect::<Vec<_>>()
            .join(","),
        ArmFrom::Task | ArmFrom::Single => e.task.clone(),
        ArmFrom::Model => e.model.clone(),
        ArmFrom::Tag => {
            if e.tags.is_empty() {
                "(untagged)".into()
            } else {
                e.tags.join(",")
            }
        }
        ArmFrom::File => log
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    }
}

/// A setting as compared: `null`, `{}` and `[]` count as not set (`null`).
fn set(v: Option<&Value>) -> Value {
    v.filter(|v| match v {
        Value::Null => false,
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => true,
    })
    .cloned()
    .unwrap_or(Value::Null)
}

/// The settings that tell which model ran beyond its name, as compared: its arguments (`-M`,
/// without the entries Inspect writes as `null`, such as mockllm's `custom_outputs`), its base
/// URL (`--model-base-url`) and the models of other roles (`model_roles`: a grader…). Each is
/// `null` when not set, as in logs written before Inspect recorded it.
fn model_settings(e: &EvalSpec) -> [(&'static str, Value); 3] {
    let args = match &e.model_args {
        Some(Value::Object(m)) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone().unwrap_or(Value::Null),
    };
    [
        ("model_args", set(Some(&args))),
        ("model_base_url", set(e.model_base_url.as_ref())),
        ("model_roles", set(e.model_roles.as_ref())),
    ]
}

/// What a log ran beyond its task, model and task arguments, as canonical JSON: the solver given
/// on the command line and its arguments, the generation settings (temperature, system message…),
/// the plan's steps with the parameters given to them (a system message's template) and the
/// model's own settings ([`model_settings`], each only when set, so that a log without them keeps
/// the digest it had before they were compared); `null`, `{}` and `[]` count as not set. Two logs
/// of one arm ran one configuration only if they agree on it.
pub(super) fn setup(log: &Log) -> Value {
    let e = &log.header.eval;
    // Each step as its solver and the parameters given to it (`params_passed`; `params` adds
    // the defaults, which Inspect's versions write differently: 0.3.160 adds `"kwargs": {}`).
    let steps: Vec<Value> = log
        .header
        .plan
        .as_ref()
        .and_then(|p| p.get("steps"))
        .and_then(Value::as_array)
        .map(|steps| {
            steps
                .iter()
                .map(|s| {
                    let given = s.get("params_passed").or_else(|| s.get("params"));
                    serde_json::json!([s.get("solver").cloned().unwrap_or(Value::Null), set(given)])
                })
                .collect()
        })
        .unwrap_or_default();
    let mut out = serde_json::json!({
        "solver": set(e.solver.as_ref()),
        "solver_args": set(e.solver_args.as_ref()),
        "generate_config": set(e.model_generate_config.as_ref()),
        "plan": Value::Array(steps),
    });
    if let Value::Object(m) = &mut out {
        for (key, value) in model_settings(e) {
            if !value.is_null() {
                m.insert(key.to_string(), value);
            }
        }
    }
    out
}

/// The parts of two settings that differ, named from `name` (`model_args.model_path`): the keys
/// of two objects whose values differ (a key set in one only counts), else `name` itself.
fn differing_parts(name: &str, a: &Value, b: &Value) -> Vec<String> {
    let shown = |v: Option<&Value>| v.filter(|v| !v.is_null()).map(Value::to_string);
    match (a, b) {
        (Value::Object(ma), Value::Object(mb)) => ma
            .keys()
            .chain(mb.keys().filter(|k| !ma.contains_key(*k)))
            .filter(|k| ma.get(*k) != mb.get(*k))
            .map(|k| differing(&format!("{name}.{k}"), shown(ma.get(k)), shown(mb.get(k))))
            .collect(),
        (Value::Object(m), Value::Null) | (Value::Null, Value::Object(m)) if a != b => m
            .iter()
            .map(|(k, v)| {
                let (x, y) = if a.is_object() {
                    (shown(Some(v)), None)
                } else {
                    (None, shown(Some(v)))
                };
                differing(&format!("{name}.{k}"), x, y)
            })
            .collect(),
        _ if a != b => vec![differing(name, shown(Some(a)), shown(Some(b)))],
        _ => Vec::new(),
    }
}

/// What two logs' configurations differ in (task, task arguments, solver, generation settings,
/// plan, the model's arguments, base URL and roles), in words; empty when they ran one
/// configuration. The model's name is left out: arms are split by model apart from this.
pub(super) fn differences(a: &Log, b: &Log) -> Vec<String> {
    let (ea, eb) = (&a.header.eval, &b.header.eval);
    let mut out = Vec::new();
    if ea.task != eb.task {
        out.push(format!("the task ({} against {})", ea.task, eb.task));
    }
    if ea.task_args != eb.task_args {
        out.push(format!(
            "the task arguments ({} against {})",
            serde_json::to_string(&ea.task_args).unwrap_or_default(),
            serde_json::to_string(&eb.task_args).unwrap_or_default()
        ));
    }
    let (sa, sb) = (setup(a), setup(b));
    for (key, words) in [
        ("solver", "the solver (--solver)"),
        ("solver_args", "the solver's arguments (-S)"),
        (
            "generate_config",
            "the generation settings (temperature, system message…)",
        ),
        (
            "plan",
            "the plan's steps or their parameters (a system message's template…)",
        ),
    ] {
        if sa[key] != sb[key] {
            out.push(words.to_string());
        }
    }
    for ((key, va), (_, vb)) in model_settings(ea).into_iter().zip(model_settings(eb)) {
        let parts = differing_parts(key, &va, &vb);
        if !parts.is_empty() {
            let words = match key {
                "model_args" => "the model's arguments (-M)",
                "model_base_url" => "the model's server (--model-base-url)",
                _ => "the models of other roles (--model-role)",
            };
            out.push(format!("{words}: {}", parts.join(", ")));
        }
    }
    out
}

/// What identifies a run across files: the eval id (else the run id) with the task, model and
/// task arguments. One `eval()` call shares a run id across its tasks and models; a log and its
/// `inspect log convert` copy share the eval id too.
pub(super) fn run_key(e: &EvalSpec) -> Option<String> {
    let id = match (
        e.eval_id.as_deref().filter(|s| !s.is_empty()),
        e.run_id.as_deref().filter(|s| !s.is_empty()),
    ) {
        (Some(id), _) => format!("eval_id {id}"),
        (None, Some(run)) => format!("run_id {run}"),
        (None, None) => return None,
    };
    Some(format!(
        "{id}, task {}, model {}, task args {}",
        e.task,
        e.model,
        serde_json::to_string(&e.task_args).unwrap_or_default()
    ))
}

/// The Inspect version a log records.
pub(super) fn e_version(log: &Log) -> Option<String> {
    log.header.eval.packages.get("inspect_ai").cloned()
}
