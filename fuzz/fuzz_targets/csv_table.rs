//! Any bytes as one of the experiment's CSV tables (the first byte picks which).
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

const TABLES: [&str; 5] = ["results.csv", "cases.csv", "arms.csv", "units.csv", "mix.csv"];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    common::experiment(dir.path());
    std::fs::write(dir.path().join(TABLES[pick as usize % TABLES.len()]), body).unwrap();
    common::load_and_analyse(dir.path());
});
