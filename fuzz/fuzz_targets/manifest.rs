//! Any bytes as `experiment.toml`, parsed as the loader parses the file's bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::path::Path::new("experiment.toml");
    if let Err(e) = ablate::io::Manifest::from_bytes(data, path) {
        assert_eq!(e.exit_code(), 2, "internal error on a manifest: {e}");
    }
});
