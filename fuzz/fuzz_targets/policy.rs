//! Any bytes as a `context --policy` TOML file.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.toml");
    std::fs::write(&path, data).unwrap();
    if let Err(e) = ablate::analysis::context::Policy::load(&path) {
        assert_eq!(e.exit_code(), 2, "internal error on a policy: {e}");
    }
});
