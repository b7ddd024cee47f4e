//! The `Examples:` that end each verb's `--help` (clap's `after_help`). Every line that starts
//! with `ablate` must parse with the verb's own definition (a test below runs each one through
//! the parser, up to a `|`, `>` or `#`), so an example cannot name an option the verb lacks.
//! The paths are the demo's (`notebooks-data/support-eval-v3`, in the repository) or an
//! experiment folder `exp` that `ablate import` wrote.

pub(super) const CHECK: &str = "\
Examples:
  ablate check notebooks-data/support-eval-v3     # what the demo folder holds
  ablate check exp --json                         # the same as JSON, for scripts";

pub(super) const SWEEP: &str = "\
Examples:
  ablate sweep notebooks-data/support-eval-v3
  ablate sweep exp --guarantee normal             # the normal approximation, chosen before the run
  ablate sweep exp --json --export tables/        # JSON on stdout, the tables as Parquet";

pub(super) const VARIANCE: &str = "\
Examples:
  ablate variance notebooks-data/support-eval-v3
  ablate variance exp --json";

pub(super) const REWEIGHT: &str = "\
Examples:
  ablate reweight notebooks-data/support-eval-v3  # post-stratify to the folder's mix table
  ablate reweight exp --mix tier.csv --mix region.csv          # rake to two margins
  ablate reweight exp --mix-from shadow.parquet --by turns     # the mix counted from a log";

pub(super) const STRESS: &str = "\
Examples:
  ablate stress notebooks-data/support-eval-v3
  ablate stress exp --per-arm                     # each arm at its own level, not family-wise";

pub(super) const INTERACTIONS: &str = "\
Examples:
  ablate interactions notebooks-data/support-eval-v3
  ablate interactions exp --guarantee normal";

pub(super) const PLAN: &str = "\
Examples:
  ablate plan --units notebooks-data/support-eval-v3/units.parquet --design loo --out arms.csv
  ablate plan --units units.parquet --design fractional --unit system --unit few_shot/02 \\
      --unit conversation --unit passages/rank2 --pilot exp --price-per-mtok 3 --out arms.csv
  ablate plan --confirm exp --out arms-confirm.csv   # the arm that tests the cut together";

pub(super) const NEED: &str = "\
Examples:
  ablate need notebooks-data/support-eval-v3
  ablate need exp --json";

pub(super) const CURVE: &str = "\
Examples:
  ablate curve notebooks-data/support-eval-v3
  ablate curve exp --price-per-mtok 3 --requests-per-day 1000000   # with the daily cost";

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
  ablate shadow --from-aggregates agg.parquet --by turns    # the reduction `ablate sql shadow` printed";

pub(super) const CONTEXT: &str = "\
Examples:
  ablate context notebooks-data/support-eval-v3
  ablate context context_log.parquet --policy policy.toml   # replay a budget policy";

pub(super) const WATCH: &str = "\
Examples:
  ablate watch exp                                          # each arm: needed, removable or continue
  ablate watch --replay notebooks-data/support-eval-v3      # where a complete run could have stopped";

pub(super) const NEXT: &str = "\
Examples:
  ablate next exp --calls 5000 --out batch.csv
  ablate import inspect new-logs/ --into exp                # after the harness ran the batch
  ablate watch exp";

pub(super) const REPORT: &str = "\
Examples:
  ablate report notebooks-data/support-eval-v3 --open
  ablate report exp --price-per-mtok 3 --requests-per-day 1000000
  ablate report exp --mix tier.csv --mix region.csv --out reports/exp-raked";

pub(super) const SIMULATE: &str = "\
Examples:
  ablate simulate --out /tmp/demo                           # the demo
  ablate simulate --cases 20000 --arms 100 --repeats 5 --out /tmp/big
  ablate simulate --design arms.csv --out /tmp/rehearsal    # rehearse a planned design";

pub(super) const IMPORT: &str = "\
Examples:
  ablate import inspect logs/ --out exp --threshold-drop 0.02
  ablate import lm-eval run-a/ run-b/ --out exp --baseline run-a --threshold-drop 0.02
  ablate import inspect new-logs/ --into exp                # add a batch's logs";

pub(super) const SQL: &str = "\
Examples:
  ablate sql sweep exp --dialect duckdb > reduce.sql
  ablate sweep exp --from-aggregates agg.parquet            # after running it where the data lives
  ablate sql shadow --dialect bigquery --table shadow=proj.logs.shadow --by turns";

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
    #[test]
    fn every_verb_s_examples_parse() {
        let cli = Cli::command();
        for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
            let help = sub
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            assert!(
                help.starts_with("Examples:"),
                "{}: no Examples: section",
                sub.get_name()
            );
            let found = commands(&help);
            assert!(
                (2..=3).contains(&found.len()),
                "{}: {} examples",
                sub.get_name(),
                found.len()
            );
            for words in found {
                if let Err(e) = Cli::try_parse_from(&words) {
                    panic!("{}: {}", words.join(" "), e);
                }
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
