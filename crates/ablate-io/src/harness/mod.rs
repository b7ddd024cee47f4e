//! The harnesses' file formats that need more than a JSON parser: Inspect AI's `.eval` zip
//! archives, and the Python JSON (bare `NaN`, `Infinity`) lm-evaluation-harness writes. The
//! importers in `ablate-import` turn what these return into experiments.

pub mod eval_zip;
pub mod python_json;
