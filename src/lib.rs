//! ci-creds: a credential lifecycle broker for CI.
#![forbid(unsafe_code)]

pub mod api;
pub mod audit;
pub mod backends;
pub mod client;
pub mod config;
pub mod dev;
pub mod identity;
pub mod inspect;
pub mod job;
pub mod lifecycle;
pub mod metrics;
pub mod net;
pub mod policy;
pub mod policy_cli;
pub mod server;
pub mod store;
