//! The tour is a test: every fenced block in `docs/tour.md` that starts with `$ ablate …` is run,
//! in the page's order, from a temporary folder laid out as the repository's root (a fresh copy
//! of the demo as `notebooks-data/support-eval-v3`, and the repository's `tests/` for the harness
//! fixtures), and what it prints must be what the page shows: its stdout, or, for a command
//! that exits 2, its error. `| head -N` and `| tail -N` after a command are applied to its
//! output, and a line `…` in a sample stands for any number of lines (the page shows the first
//! rows of a long table). Every verb must appear. After an intended change, `UPDATE_DOCS=1
//! cargo test --test cli docs` rewrites the samples in place with the whole output; put the `…`
//! back and review the diff.

use std::path::Path;

use crate::common;

/// One sample: the command as written, its words, the pipe after it, and the output shown.
struct Sample {
    line: String,
    words: Vec<String>,
    pipe: Option<(String, usize)>,
    shown: Vec<String>,
}

/// The samples of a Markdown page, with the line range of each sample's output.
fn samples(md: &str) -> Vec<(Sample, std::ops::Range<usize>)> {
    let lines: Vec<&str> = md.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i] != "```" || !lines.get(i + 1).is_some_and(|l| l.starts_with("$ ablate ")) {
            i += 1;
            continue;
        }
        i += 1;
        while i < lines.len() && lines[i] != "```" {
            // The command, with its continuation lines.
            let mut command = lines[i].trim_start_matches("$ ").to_string();
            while command.ends_with('\\') {
                command.pop();
                i += 1;
                command.push(' ');
                command.push_str(lines[i].trim());
            }
            i += 1;
            let start = i;
            while i < lines.len() && lines[i] != "```" && !lines[i].starts_with("$ ") {
                i += 1;
            }
            let (cmd, pipe) = match command.split_once(" | ") {
                Some((c, p)) => {
                    let mut w = p.split_whitespace();
                    let tool = w.next().unwrap_or_default().to_string();
                    let n: usize = w
                        .next()
                        .and_then(|n| n.trim_start_matches('-').parse().ok())
                        .unwrap_or(10);
                    (c.to_string(), Some((tool, n)))
                }
                None => (command.clone(), None),
            };
            out.push((
                Sample {
                    line: command.clone(),
                    words: cmd.split_whitespace().skip(1).map(str::to_string).collect(),
                    pipe,
                    shown: lines[start..i].iter().map(|l| l.to_string()).collect(),
                },
                start..i,
            ));
        }
        i += 1;
    }
    out
}

/// Whether the output matches what the page shows: line for line, where a shown `…` line stands
/// for any number of lines.
fn matches(shown: &[String], now: &[String]) -> bool {
    let parts: Vec<&[String]> = shown.split(|l| l == "…").collect();
    let mut at = 0;
    for (i, part) in parts.iter().enumerate() {
        let last = i == parts.len() - 1;
        if i == 0 {
            if !now.starts_with(part) {
                return false;
            }
            at = part.len();
        } else if last {
            return now.len() >= at + part.len() && now.ends_with(part);
        } else {
            match now[at..]
                .windows(part.len().max(1))
                .position(|w| w == *part)
            {
                Some(p) => at += p + part.len(),
                None if part.is_empty() => {}
                None => return false,
            }
        }
    }
    parts.len() > 1 || at == now.len()
}

/// What the sample's command prints now, after its pipe: its stdout, or its error when it exits
/// 2 (bad input, which the page may show on purpose); any other failure fails the test.
fn run(sample: &Sample, cwd: &Path) -> Vec<String> {
    let out = common::ablate()
        .args(&sample.words)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = match out.status.code() {
        Some(0) => String::from_utf8_lossy(&out.stdout).into_owned(),
        Some(2) if stderr.starts_with("ablate: error: ") => stderr,
        _ => panic!("{}: {:?}: {stderr}", sample.line, out.status),
    };
    let mut lines: Vec<String> = text.lines().map(|l| l.trim_end().to_string()).collect();
    match &sample.pipe {
        Some((tool, n)) if tool == "head" => lines.truncate(*n),
        Some((tool, n)) if tool == "tail" => {
            let skip = lines.len().saturating_sub(*n);
            lines.drain(..skip);
        }
        Some((tool, _)) => panic!("{}: no pipe to {tool} in a sample", sample.line),
        None => {}
    }
    lines
}

#[test]
fn the_tour_runs_every_verb_and_shows_its_current_output() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = root.join("docs/tour.md");
    let md = std::fs::read_to_string(&page).unwrap();
    let work = tempfile::tempdir().unwrap();
    common::copy_tree(
        &common::demo(),
        &work.path().join("notebooks-data/support-eval-v3"),
    );
    // A watch state left in the repository's demo is not part of the demo.
    let _ = std::fs::remove_file(
        work.path()
            .join("notebooks-data/support-eval-v3/.ablate-watch.json"),
    );
    std::os::unix::fs::symlink(root.join("tests"), work.path().join("tests")).unwrap();

    let found = samples(&md);
    let mut verbs: Vec<&str> = ablate::verb::Verb::ALL.iter().map(|v| v.name()).collect();
    verbs.extend(["completions", "man"]);
    let missing: Vec<&&str> = verbs
        .iter()
        .filter(|v| {
            !found
                .iter()
                .any(|(s, _)| s.words.first().map(String::as_str) == Some(**v))
        })
        .collect();
    assert!(missing.is_empty(), "docs/tour.md runs no {missing:?}");

    // Run in the page's order (a later command reads what an earlier one wrote), then replace
    // from the last sample up, so that earlier line ranges stay valid.
    let now: Vec<Vec<String>> = found.iter().map(|(s, _)| run(s, work.path())).collect();
    let mut lines: Vec<String> = md.lines().map(str::to_string).collect();
    let mut stale = Vec::new();
    for ((sample, range), now) in found.into_iter().zip(now).rev() {
        let shown: Vec<String> = sample
            .shown
            .iter()
            .map(|l| l.trim_end().to_string())
            .collect();
        if !matches(&shown, &now) {
            stale.push(format!("$ {}\n{}", sample.line, now.join("\n")));
            lines.splice(range, now);
        }
    }
    if stale.is_empty() {
        return;
    }
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&page, lines.join("\n") + "\n").unwrap();
        return;
    }
    stale.reverse();
    panic!(
        "docs/tour.md shows output that is out of date (UPDATE_DOCS=1 rewrites it); now:\n\n{}",
        stale.join("\n\n")
    );
}

#[test]
fn an_ellipsis_stands_for_any_lines() {
    let v = |s: &str| -> Vec<String> { s.lines().map(str::to_string).collect() };
    assert!(matches(&v("a\nb"), &v("a\nb")));
    assert!(!matches(&v("a\nb"), &v("a\nb\nc")));
    assert!(matches(&v("a\n…"), &v("a\nb\nc")));
    assert!(matches(&v("a\n…\nc"), &v("a\nb\nx\nc")));
    assert!(matches(&v("a\n…\nx\n…"), &v("a\nb\nx\nc")));
    assert!(!matches(&v("a\n…\ny\n…"), &v("a\nb\nx\nc")));
    assert!(!matches(&v("b\n…"), &v("a\nb")));
}

/// The README's quick start runs as written from a clone: each `ablate …` line of its first `sh`
/// block, in a temporary folder holding the repository's `tests/` (the harness logs it imports),
/// with the binary the suite built; the report it writes is there afterwards.
#[test]
fn the_readme_quick_start_runs_from_a_clone() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let section = &readme[readme
        .find("## Quick start")
        .expect("a Quick start section")..];
    let block = &section[section.find("```sh\n").expect("an sh block") + 6..];
    let block = &block[..block.find("```").unwrap()];
    let commands: Vec<Vec<&str>> = block
        .lines()
        .filter_map(|l| l.strip_prefix("ablate "))
        .map(|l| l.split(" #").next().unwrap().split_whitespace().collect())
        .collect();
    assert!(commands.len() >= 3, "{block}");
    assert_eq!(commands[0][0], "import", "the quick start starts from logs");
    let work = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root.join("tests"), work.path().join("tests")).unwrap();
    let mut last = String::new();
    for words in &commands {
        let out = common::ablate()
            .args(words)
            .current_dir(work.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "ablate {}: {}",
            words.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        last = String::from_utf8_lossy(&out.stdout).into_owned();
    }
    // The report's own words say where the page is, and it is there.
    let page = last
        .split_whitespace()
        .map(|w| w.trim_end_matches([',', '.']))
        .find(|w| w.ends_with("index.html"))
        .unwrap_or_else(|| panic!("the last command names no page: {last}"));
    assert!(work.path().join(page).is_file(), "{page}");
    assert!(
        section.contains(page),
        "the README names another page than {page}"
    );
}
