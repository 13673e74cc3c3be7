//! ci-creds: a credential lifecycle broker for CI.
#![forbid(unsafe_code)]

pub mod job;
