//! The front door: every verb's help opens with a sentence and ends with examples, the shell
//! integration works (a completion script the shell accepts, a manual page `man` renders), and
//! every human table fits a 120-column terminal unless `--wide` asks for every column.

use std::io::Write as _;
use std::process::{Command, Stdio};

use unicode_width::UnicodeWidthStr;

use crate::common;
use common::{ablate, demo, succeeds};

/// The verbs `ablate --help` lists.
fn verbs() -> Vec<String> {
    let mut v: Vec<String> = ablate::verb::Verb::ALL
        .iter()
        .map(|v| v.name().to_string())
        .collect();
    v.extend(["completions".into(), "man".into()]);
    v
}

fn stdout(args: &[&str]) -> String {
    String::from_utf8(succeeds(ablate().args(args)).stdout).unwrap()
}

#[test]
fn every_verb_s_help_opens_with_a_sentence_and_ends_with_examples() {
    let top = stdout(&["--help"]);
    for verb in verbs() {
        let help = stdout(&[&verb, "--help"]);
        let first = help.split("\n\n").next().unwrap().replace('\n', " ");
        assert!(first.ends_with('.'), "{verb}: {first}");
        assert!(
            !first.trim_end_matches('.').contains(". "),
            "{verb}: {first}"
        );
        let examples = &help[help.rfind("Examples:").unwrap_or_else(|| panic!("{verb}"))..];
        let lines: Vec<&str> = examples
            .lines()
            .skip(1)
            .filter(|l| l.trim_start().starts_with("ablate "))
            .collect();
        assert!((2..=3).contains(&lines.len()), "{verb}: {examples}");
        // Formulas live in docs/statistics.md, not in the help.
        assert!(!help.contains('Σ') && !help.contains('√'), "{verb}");
        // The overview lists the verb with a description.
        let listed = top
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{verb} ")))
            .unwrap_or_else(|| panic!("{verb} is not in ablate --help"));
        assert!(listed.split_whitespace().count() > 2, "{listed}");
    }
}

/// Runs `program args` with `input` on stdin; `None` when the program is not installed.
fn pipe(program: &str, args: &[&str], input: &str) -> Option<std::process::Output> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    Some(child.wait_with_output().unwrap())
}

#[test]
fn completions_are_scripts_the_shell_accepts() {
    let bash = stdout(&["completions", "bash"]);
    let checked = pipe("bash", &["-n"], &bash).expect("bash is installed");
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    for verb in verbs() {
        assert!(bash.contains(&verb), "bash completion lacks {verb}");
    }
    assert!(bash.contains("--guarantee"));
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let script = stdout(&["completions", shell]);
        assert!(
            script.contains("sweep") && script.contains("wide"),
            "{shell}"
        );
    }
    let err = common::fails(ablate().args(["completions", "tcsh"]));
    assert!(err.contains("bash"), "{err}");
}

/// `ablate man | man -l -` renders the page (CI installs man; without it the roff is checked).
#[test]
fn the_manual_page_renders() {
    let page = stdout(&["man"]);
    assert!(page.contains(".TH ablate 1"), "{page}");
    let verb = stdout(&["man", "sweep"]);
    assert!(
        verb.contains("ablate\\-sweep") && verb.contains("guarantee"),
        "{verb}"
    );
    common::fails(ablate().args(["man", "nonsense"]));
    match pipe("man", &["-l", "-"], &page) {
        Some(out) => {
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.contains("SYNOPSIS") && text.contains("sweep"),
                "{text}"
            );
        }
        None => {
            assert!(
                std::env::var_os("CI").is_none(),
                "man is not installed on CI (.ci/run installs man-db)"
            );
            eprintln!("man is not installed: the roff was checked, not its rendering");
        }
    }
}

/// The widths of the tables (their rules) a command prints.
fn table_widths(args: &[&str]) -> Vec<usize> {
    stdout(args)
        .lines()
        .filter(|l| !l.is_empty() && l.chars().all(|c| c == '─'))
        .map(|l| l.width())
        .collect()
}

#[test]
fn every_human_table_fits_120_columns_unless_wide() {
    let d = demo();
    let d = d.to_str().unwrap();
    let runs: &[&[&str]] = &[
        &["check", d],
        &["sweep", d],
        &["variance", d],
        &["reweight", d],
        &["stress", d],
        &["interactions", d],
        &["need", d],
        &["curve", d],
        &["selector", d],
        &["watch", "--replay", d],
        &["shadow", d, "--by", "turns"],
        &["context", d],
    ];
    for args in runs {
        let widths = table_widths(args);
        assert!(!widths.is_empty(), "{args:?} prints no table");
        assert!(widths.iter().all(|&w| w <= 120), "{args:?}: {widths:?}");
    }
    // The sweep's narrow table names what it left out; --wide shows it.
    let narrow = stdout(&["sweep", d]);
    assert!(
        narrow.contains("left out to fit 120 characters: "),
        "{narrow}"
    );
    assert!(!narrow.contains("p_holm  "));
    let wide = stdout(&["sweep", d, "--wide"]);
    assert!(table_widths(&["sweep", d, "--wide"])[0] > 120);
    assert!(wide.contains("p_holm") && !wide.contains("left out"));
}
