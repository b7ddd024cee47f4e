//! Any bytes as a `context --policy` TOML file, parsed as the loader parses the file's bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::path::Path::new("policy.toml");
    if let Err(e) = ablate::io::logs::context::Policy::from_bytes(data, path) {
        assert_eq!(e.exit_code(), 2, "internal error on a policy: {e}");
    }
});
