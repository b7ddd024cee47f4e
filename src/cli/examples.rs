//! The `Examples:` that end each verb's `--help` (clap's `after_help`). Every line that starts
//! with `ablate` must parse with the verb's own definition (a test below runs each one through
//! the parser, up to a `|`, `>` or `#`), so an example cannot name an option the verb lacks.
//! The paths are the demo's (`notebooks-data/support-eval-v3`, in the repository) or an
//! experiment folder `exp` that `ablate import` wrote.

pub(super) const CHECK: &str = "\
Examples:
  # what the demo folder holds
  ablate check notebooks-data/support-eval-v3
  # the same as JSON, for scripts
  ablate check exp --json";

pub(super) const SWEEP: &str = "\
Examples:
  ablate sweep notebooks-data/support-eval-v3
  # the normal approximation, chosen before the run
  ablate sweep exp --guarantee normal
  # JSON on stdout, the tables as Parquet
  ablate sweep exp --json --export tables/";

pub(super) const VARIANCE: &str = "\
Examples:
  ablate variance notebooks-data/support-eval-v3
  ablate variance exp --json";

pub(super) const REWEIGHT: &str = "\
Examples:
  # post-stratify to the folder's mix table
  ablate reweight notebooks-data/support-eval-v3
  # rake to two margins
  ablate reweight exp --mix tier.csv --mix region.csv
  # the mix counted from a log
  ablate reweight exp --mix-from shadow.parquet --by turns";

pub(super) const STRESS: &str = "\
Examples:
  ablate stress notebooks-data/support-eval-v3
  # each arm at its own level, not family-wise
  ablate stress exp --per-arm";

pub(super) const INTERACTIONS: &str = "\
Examples:
  ablate interactions notebooks-data/support-eval-v3
  ablate interactions exp --guarantee normal";

pub(super) const PLAN: &str = "\
Examples:
  ablate plan --units notebooks-data/support-eval-v3/units.parquet \\
      --design loo --out arms.csv
  ablate plan --units units.parquet --design fractional \\
      --unit system --unit few_shot/02 \\
      --unit conversation --unit passages/rank2 \\
      --pilot exp --price-per-mtok 3 --out arms.csv
  # the arm that tests the cut together
  ablate plan --confirm exp --out arms-confirm.csv";

pub(super) const NEED: &str = "\
Examples:
  ablate need notebooks-data/support-eval-v3
  ablate need exp --json";

pub(super) const CURVE: &str = "\
Examples:
  ablate curve notebooks-data/support-eval-v3
  # with the daily cost
  ablate curve exp --price-per-mtok 3 --requests-per-day 1000000";

pub(super) const SELECTOR: &str = "\
Examples:
  ablate selector notebooks-data/support-eval-v3
  ablate selector exp --export tables/";

pub(super) const RECORD: &str = "\
Examples:
  ablate record notebooks-data/support-eval-v3
  ablate record exp > decision.json";

pub(super) const SHADOW: &str = "\
Examples:
  ablate shadow notebooks-data/support-eval-v3 --by turns
  ablate shadow shadow.parquet --by turns --cluster-by user_id
  # the reduction `ablate sql shadow` printed
  ablate shadow --from-aggregates agg.parquet --by turns";

pub(super) const CONTEXT: &str = "\
Examples:
  ablate context notebooks-data/support-eval-v3
  # replay a budget policy
  ablate context context_log.parquet --policy policy.toml";

pub(super) const WATCH: &str = "\
Examples:
  # each arm: needed, removable or continue
  ablate watch exp
  # where a complete run could have stopped
  ablate watch --replay notebooks-data/support-eval-v3";

pub(super) const NEXT: &str = "\
Examples:
  ablate next exp --calls 5000 --out batch.csv
  # after the harness ran the batch
  ablate import inspect new-logs/ --into exp
  ablate watch exp";

pub(super) const REPORT: &str = "\
Examples:
  ablate report notebooks-data/support-eval-v3 --open
  ablate report exp --price-per-mtok 3 --requests-per-day 1000000
  ablate report exp --mix tier.csv --mix region.csv --out reports/exp-raked";

pub(super) const SIMULATE: &str = "\
Examples:
  # the demo
  ablate simulate --out /tmp/demo
  ablate simulate --cases 20000 --arms 100 --repeats 5 --out /tmp/big
  # rehearse a planned design
  ablate simulate --design arms.csv --out /tmp/rehearsal";

pub(super) const IMPORT: &str = "\
Examples:
  ablate import inspect logs/ --out exp --threshold-drop 0.02
  ablate import lm-eval run-a/ run-b/ --out exp --baseline run-a \\
      --threshold-drop 0.02
  # add a batch's logs
  ablate import inspect new-logs/ --into exp";

pub(super) const SQL: &str = "\
Examples:
  ablate sql sweep exp --dialect duckdb > reduce.sql
  # after running it where the data lives
  ablate sweep exp --from-aggregates agg.parquet
  ablate sql shadow --dialect bigquery --table shadow=proj.logs.shadow \\
      --by turns";

pub(super) const COMPLETIONS: &str = "\
Examples:
  ablate completions bash > ~/.local/share/bash-completion/completions/ablate
  ablate completions zsh > ~/.zfunc/_ablate
  ablate completions fish > ~/.config/fish/completions/ablate.fish";

pub(super) const MAN: &str = "\
Examples:
  ablate man | man -l -
  ablate man > ~/.local/share/man/man1/ablate.1";

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::super::Cli;

    /// The example commands of a help text: each `ablate …` line (with its `\` continuations),
    /// cut at the first `|`, `>` or `#`, as words.
    fn commands(help: &str) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        let mut lines = help.lines().map(str::trim);
        while let Some(line) = lines.next() {
            if !line.starts_with("ablate ") {
                continue;
            }
            let mut text = line.to_string();
            while text.ends_with('\\') {
                text.pop();
                text.push(' ');
                text.push_str(lines.next().unwrap_or_default());
            }
            let cut = text.find(['|', '>', '#']).unwrap_or(text.len());
            out.push(text[..cut].split_whitespace().map(str::to_string).collect());
        }
        out
    }

    /// Every visible subcommand ends its help with two or three examples, and each parses with
    /// the command line's own definition.
    /// Each visible verb's name and the text after its help (its examples).
    fn after_helps() -> Vec<(String, String)> {
        Cli::command()
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| {
                let help = s
                    .get_after_help()
                    .map(|h| h.to_string())
                    .unwrap_or_default();
                (s.get_name().to_string(), help)
            })
            .collect()
    }

    #[test]
    fn every_verb_s_examples_parse() {
        for (name, help) in after_helps() {
            assert!(
                help.starts_with("Examples:"),
                "{name}: no Examples: section"
            );
            let found = commands(&help);
            assert!(
                (2..=3).contains(&found.len()),
                "{name}: {} examples",
                found.len()
            );
            for words in found {
                if let Err(e) = Cli::try_parse_from(&words) {
                    panic!("{}: {}", words.join(" "), e);
                }
            }
        }
    }

    /// Every line of the examples fits 80 columns, comments on lines of their own: clap wraps
    /// a longer line at the terminal's width, and a comment's last word wrapped onto a line of
    /// its own (`continue`) ran as a command when the example was pasted into a shell.
    #[test]
    fn examples_fit_80_columns_with_comments_on_their_own_lines() {
        for (name, help) in after_helps() {
            for line in help.lines() {
                assert!(line.chars().count() <= 80, "{name}: {line}");
                let code = line.trim_start();
                assert!(
                    !code.starts_with("ablate") || !code.contains('#'),
                    "{name}: a comment after a command: {line}"
                );
            }
        }
    }

    #[test]
    fn a_continued_line_is_one_command() {
        let c =
            commands("Examples:\n  ablate plan --a \\\n      --b x > f   # c\n  ablate sweep d");
        assert_eq!(
            c,
            vec![
                vec!["ablate", "plan", "--a", "--b", "x"],
                vec!["ablate", "sweep", "d"]
            ]
        );
    }
}
