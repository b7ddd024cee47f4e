//! Any bytes as one of the experiment's tables stored as Parquet (the first byte picks which),
//! read by that table's loader.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let stem = common::TABLES[pick as usize % common::TABLES.len()];
    common::load_table(stem, "parquet", body);
});
