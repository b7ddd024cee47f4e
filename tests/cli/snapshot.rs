//! Every verb's JSON and terminal output on the demo, and every refused bad edit's message with
//! its exit code, as insta snapshots (`tests/cli/snapshots/`): a refactoring that changes any
//! number, key, order, word or exit code fails here. Floats are rounded to 10 significant digits, so
//! a change in the last bits of a sum (a different but equally stable order of addition) does not
//! fail, while any change a reader could see does. Paths are written relative to the repository.
//!
//! After an intended change: `INSTA_UPDATE=always cargo test --test cli snapshot`, then review
//! the diff of `tests/cli/snapshots/` (or `cargo insta review`).

use serde_json::Value;

use crate::common;
use ablate::export::spec;

/// `x` to 10 significant digits (integers and non-finite values unchanged).
fn round(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() || x.fract() == 0.0 {
        return x;
    }
    let digits = 10 - 1 - x.abs().log10().floor() as i32;
    let scale = 10f64.powi(digits.clamp(-300, 300));
    (x * scale).round() / scale
}

/// Rounds every float and makes every path relative to the repository or the temporary folder.
fn redact(v: &mut Value, repo: &str) {
    match v {
        Value::Number(n) if n.is_f64() => {
            if let Some(x) = n.as_f64().map(round).and_then(serde_json::Number::from_f64) {
                *n = x;
            }
        }
        Value::String(s) => {
            if s.contains(repo) {
                *s = s.replace(repo, "<repo>");
            }
            let tmp = std::env::temp_dir().display().to_string();
            if s.starts_with(&tmp) {
                *s = "<tmp>".into();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|x| redact(x, repo)),
        Value::Object(map) => map.values_mut().for_each(|x| redact(x, repo)),
        _ => {}
    }
}

fn snapshot(name: &str, mut value: Value) {
    assert_eq!(
        value["schema_version"],
        ablate::report::SCHEMA_VERSION,
        "{name}: every JSON document carries schema_version"
    );
    redact(&mut value, env!("CARGO_MANIFEST_DIR"));
    insta::with_settings!({ snapshot_path => "snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_json_snapshot!(name, value);
    });
}

#[test]
fn every_verb_s_json_on_the_demo() {
    for group in spec::groups() {
        snapshot(group, common::run_demo_verb(group, None));
    }
}

#[test]
fn the_report_s_analysis_on_the_demo() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("report");
    common::report_into(&out, &common::demo());
    let analysis: Value = common::analysis_json(&out);
    snapshot("report_analysis", analysis);
}

/// Text with the repository's path and `dirs` (temporary folders) replaced by placeholders.
fn redact_text(text: &str, dirs: &[(&std::path::Path, &str)]) -> String {
    let mut text = text.replace(env!("CARGO_MANIFEST_DIR"), "<repo>");
    for (dir, name) in dirs {
        text = text.replace(&dir.display().to_string(), name);
    }
    text
}

fn snapshot_text(name: &str, text: String) {
    insta::with_settings!({ snapshot_path => "snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(name, text);
    });
}

/// What a reader sees: every verb's terminal output on the demo (`record` prints JSON, which
/// the JSON snapshots hold).
#[test]
fn every_verb_s_terminal_output_on_the_demo() {
    for group in spec::groups().into_iter().filter(|g| *g != "record") {
        let (out, copy) = common::demo_verb(group, None, false);
        assert!(
            out.status.success(),
            "{group}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).expect("UTF-8");
        snapshot_text(
            &format!("{group}_terminal"),
            redact_text(&text, &[(copy.root.path(), "<tmp>")]),
        );
    }
}

/// Every bad edit `check` refuses: its message and its exit code, as the user sees them.
#[test]
fn every_bad_edit_s_message_and_exit_code() {
    for (name, file, from, to, _) in crate::check::BAD_EDITS {
        let w = common::Workdir::tiny();
        w.edit(file, from, to);
        let out = common::ablate().arg("check").arg(&w.dir).output().unwrap();
        let stderr = String::from_utf8(out.stderr).expect("UTF-8");
        let text = format!(
            "exit {}\n{}",
            out.status.code().unwrap_or(-1),
            redact_text(&stderr, &[(&w.dir, "<exp>"), (w.root.path(), "<tmp>")])
        );
        snapshot_text(&format!("bad_edit_{name}"), text);
    }
}
