//! The CI's own REST API, asked whether a job still runs and which runner it ran on. One
//! optional client per issuer, with its own timeout, call budget and rate-limit pauses; what
//! each CI's API answers and how it is called is the CI's own (`ci/<ci>/api.rs`).
//!
//! An answer is untrusted input, like a token: bounded in size, strictly typed, and anything
//! that cannot be read (a redirect, a 4xx including 404, a 5xx, a timeout) is an error, which
//! callers treat as "unknown": never as "ended", never as "running".

#[cfg(feature = "server")]
mod client;
pub mod config;
#[cfg(feature = "server")]
mod http;

#[cfg(feature = "server")]
pub use client::{Asked, CiApi, CiApis};
pub use config::{CiApiConfig, CiApisConfig, OnUnavailable};

use thiserror::Error;

/// Why the CI's answer about a job is unknown.
#[derive(Debug, Error)]
pub enum Error {
    #[error("{api} cannot be reached: {reason}")]
    Unreachable { api: &'static str, reason: String },
    #[error("{api} answered HTTP {status}")]
    Status { api: &'static str, status: u16 },
    #[error("{api}'s answer is larger than {limit} bytes")]
    TooLarge { api: &'static str, limit: usize },
    #[error("{api}'s answer cannot be read: {reason}")]
    Malformed { api: &'static str, reason: String },
    #[error("{api} asked for a pause in calls for {seconds} s more")]
    Paused { api: &'static str, seconds: u64 },
    #[error("the call budget for {api} is spent for now")]
    OverBudget { api: &'static str },
    #[error("the job's token does not say where {api} answers for it: {reason}")]
    NoLocator { api: &'static str, reason: &'static str },
    #[error("{api}: {reason}")]
    Auth { api: &'static str, reason: String },
    #[error("ci_api config `{key}`: {message}")]
    Config { key: String, message: String },
}
