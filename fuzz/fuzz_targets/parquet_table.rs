//! Any bytes as one of the experiment's tables stored as Parquet (the first byte picks which).
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

const TABLES: [&str; 5] = ["results", "cases", "arms", "units", "mix"];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    common::experiment(dir.path());
    let stem = TABLES[pick as usize % TABLES.len()];
    std::fs::remove_file(dir.path().join(format!("{stem}.csv"))).unwrap();
    std::fs::write(dir.path().join(format!("{stem}.parquet")), body).unwrap();
    common::load_and_analyse(dir.path());
});
