//! Shell integration: `ablate completions SHELL` (clap_complete) and `ablate man [VERB]`
//! (clap_mangen), both generated from the command line's own definition, so they cannot drift
//! from it.

use clap::{Args, CommandFactory};

use ablate::error::{Error, Result};

use super::{Cli, Global, IoPaths, VerbArgs, refuse_json};

/// Print a completion script for your shell (bash, zsh, fish, powershell or elvish).
///
/// Install it where your shell looks for completions (see the examples), then open a new shell:
/// `ablate sw<TAB>` completes the verb, `ablate sweep --gu<TAB>` the option, `--guarantee <TAB>`
/// its values.
#[derive(Debug, Args)]
pub(super) struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

impl VerbArgs for CompletionsArgs {
    fn paths(&self) -> IoPaths {
        IoPaths::default()
    }

    fn apply(&self, _g: &mut Global) {}
}

/// Prints the completion script.
pub(super) fn completions(args: CompletionsArgs, g: &Global) -> Result<String> {
    refuse_json(g, "completions", "a shell script")?;
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "ablate", &mut out);
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Print the manual page (roff), of ablate or of one verb.
///
/// `ablate man | man -l -` reads it now; save it as ablate.1 in a man1 folder on your MANPATH to
/// read it with `man ablate`.
#[derive(Debug, Args)]
pub(super) struct ManArgs {
    /// A verb, for its own page (`ablate man sweep`); without it, ablate's page with every verb.
    verb: Option<String>,
}

impl VerbArgs for ManArgs {
    fn paths(&self) -> IoPaths {
        IoPaths::default()
    }

    fn apply(&self, _g: &mut Global) {}
}

/// Prints the manual page.
pub(super) fn man(args: ManArgs, g: &Global) -> Result<String> {
    refuse_json(g, "man", "a manual page (roff)")?;
    let cli = Cli::command();
    let page = match &args.verb {
        None => cli,
        Some(name) => {
            let sub = cli
                .get_subcommands()
                .find(|s| s.get_name() == name && !s.is_hide_set())
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "ablate man {name}: no such verb. Give one of the verbs `ablate --help` lists, or none for ablate's page"
                    ))
                })?;
            sub.clone()
                .display_name(format!("ablate-{name}"))
                .bin_name(format!("ablate {name}"))
        }
    };
    let mut out = Vec::new();
    // The footer names ablate and its version on every page: a verb's own (`sweep`, with no
    // version of its own) had read `"sweep "`.
    clap_mangen::Man::new(page)
        .source(format!("ablate {}", env!("CARGO_PKG_VERSION")))
        .render(&mut out)
        .map_err(|source| Error::Io {
            path: "the manual page".into(),
            source,
        })?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}
