//! A Buildkite job delivery; input format in `ci_creds_fuzz::webhook`.
#![no_main]

use ci_creds::ci::CiKind;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ci_creds_fuzz::webhook::fuzz(CiKind::Buildkite, data));
