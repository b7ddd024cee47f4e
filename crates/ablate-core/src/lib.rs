//! ablate's core: what every layer above shares and nothing below needs. Typed errors (the
//! engine's own errors boxed, so no layer above `ablate-io` names Polars), typed warnings, text
//! (display widths, number formats) and escaping for HTML, Markdown and XML, with no Polars and
//! no file I/O.

// Errors carry the file, column, row, value and a fix as owned text, so they are larger than
// clippy's 128-byte default. They are built once, on the cold path, right before the process
// reports them and exits; boxing them would add noise to every constructor for no measurable gain.
#![allow(clippy::result_large_err)]

pub mod data;
pub mod error;
pub mod escape;
pub mod text;
pub mod warning;

/// The numerics (the `ablate-stats` crate).
pub use ablate_stats as stats;
pub use error::{Error, Result};
