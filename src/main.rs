//! The `ablate` binary: parses the command line and calls the library. Errors go to stderr with
//! exit code 2 (bad input or usage) or 1 (anything else); a closed stdout pipe is not an error.

// See the note on `result_large_err` in lib.rs.
#![allow(clippy::result_large_err)]

mod cli;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    ablate::io::logs::allocator_for_speed();
    // Ctrl-C, SIGTERM and SIGHUP remove the hidden temporary outputs before the process ends.
    ablate::io::output::install_interrupt_handler();
    let args = cli::Cli::parse();
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
