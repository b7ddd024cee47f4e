//! Any bytes as `experiment.toml`.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    common::experiment(dir.path());
    std::fs::write(dir.path().join("experiment.toml"), data).unwrap();
    common::load_and_analyse(dir.path());
});
