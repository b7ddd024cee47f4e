//! The `ablate` binary: parses the command line and calls the library. Errors go to stderr with
//! exit code 2 (bad input or usage) or 1 (anything else); a closed stdout pipe is not an error.

// See the note on `result_large_err` in lib.rs.
#![allow(clippy::result_large_err)]

mod cli;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    tune_allocator();
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
            eprintln!("ablate: error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

/// glibc's malloc hands every block over 128 KiB (a decompressed Parquet page, a bootstrap
/// block) to mmap, and gives it back to the kernel when freed, so the next such block is fresh
/// pages the kernel must zero and fault in again: about a fifth of `sweep`'s time at 10M rows.
/// Blocks up to 32 MiB are served from the heap instead, and up to 256 MiB of freed heap is kept
/// for reuse. The streamed logs set thresholds for their memory budget before their passes
/// (`io::logs::allocator_for_budget`) and hand their memory back between passes, so their
/// budget holds. `sweep` at 10M rows: 0.64 → 0.56 s, peak RSS 230 → 300 MB (benches/README.md).
/// A no-op on other platforms.
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets the allocator's thresholds; it is called before any thread
    // starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}
