//! The broker's config file through the parse and validation `serve` runs at start, without
//! reading any file or environment variable.
#![no_main]

use std::path::Path;

use ci_creds::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Config::parse(text, Path::new("/etc/ci-creds/ci-creds.toml")) {
        Ok(config) => assert!(!config.issuers.is_empty()),
        Err(error) => {
            let _ = error.to_string();
        }
    }
});
