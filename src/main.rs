//! The `ablate` binary: parses the command line and calls the library. Errors go to stderr with
//! exit code 2 (bad input or usage) or 1 (anything else); a closed stdout pipe is not an error.

// See the note on `result_large_err` in lib.rs.
#![allow(clippy::result_large_err)]

mod cli;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

/// Prints clap's error and exits (2, or 0 for `--help` and `--version`), with ablate's own tip
/// where clap's would mislead: a threshold flag given to a verb that reads it from
/// experiment.toml was told to pass it as a value after `--`.
fn usage_error(e: clap::Error) -> ! {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let arg = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => s.clone(),
        _ => String::new(),
    };
    let lower = arg.to_ascii_lowercase();
    // `import` and `plan` take --threshold-drop: clap's own "a similar argument exists" is right
    // there.
    let takes_threshold = std::env::args().any(|a| a == "import" || a == "plan");
    if e.kind() == ErrorKind::UnknownArgument
        && !takes_threshold
        && lower.starts_with("--")
        && ["thresh", "tresh", "thresold"]
            .iter()
            .any(|t| lower.contains(t))
    {
        // The experiment.toml key the flag meant.
        let key = if lower.contains("stress") {
            "stress_threshold_drop = 0.02"
        } else if lower.contains("quality") {
            "quality_threshold = 0.95"
        } else {
            "threshold_drop = 0.02"
        };
        let text = e.render().to_string();
        let kept: Vec<&str> = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("tip: to pass"))
            .collect();
        let mut out = kept.join("\n");
        out = out.replacen(
            "\n\n",
            &format!("\n\n  tip: thresholds are agreed before the results are read and kept in the experiment: write it in experiment.toml ({key}); only `import` (writing a new folder) and `plan` take --threshold-drop\n"),
            1,
        );
        eprintln!("{out}");
        std::process::exit(2);
    }
    e.exit()
}

fn main() -> ExitCode {
    ablate::io::logs::allocator_for_speed();
    // Ctrl-C, SIGTERM and SIGHUP remove the hidden temporary outputs before the process ends.
    ablate::io::output::install_interrupt_handler();
    let args = cli::Cli::try_parse().unwrap_or_else(|e| usage_error(e));
    match cli::run(args) {
        Ok(output) => {
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(output.as_bytes())
                .and_then(|_| stdout.flush())
            {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("ablate: cannot write output: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Err(e) => {
            // The user's paths, never the hidden temporary ones the outputs were built in.
            let e = ablate::io::output::in_user_terms(e).for_user();
            // A value from the data quoted in the message cannot drive the terminal.
            eprintln!("ablate: error: {}", ablate::escape::plain(&e.to_string()));
            ExitCode::from(e.exit_code() as u8)
        }
    }
}
