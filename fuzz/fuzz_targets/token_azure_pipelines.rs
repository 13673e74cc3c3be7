//! A bearer token from an Azure DevOps organisation's issuer; input format in `ci_creds_fuzz::token`.
#![no_main]

use ci_creds::ci::CiKind;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ci_creds_fuzz::token::fuzz(CiKind::AzurePipelines, data));
