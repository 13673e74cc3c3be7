//! ci-creds: a credential lifecycle broker for CI.
#![forbid(unsafe_code)]

#[cfg(feature = "server")]
pub mod api;
/// Without the server, only what the API parses before any serving code runs: the credentials
/// request body, and `[limits]` and `trusted_proxies` of the config. The files are the server
/// build's own.
#[cfg(not(feature = "server"))]
pub mod api {
    pub mod credentials_request;
    // Only the config's `TrustedProxies` is used without the server.
    #[allow(dead_code)]
    mod exchange_address;
    pub use exchange_address::TrustedProxies;
    pub mod limits {
        mod config;
        pub use config::LimitsConfig;
    }
}
pub mod audit;
pub mod backends;
pub mod ci;
pub mod ci_api;
pub mod client;
pub mod clock;
pub mod config;
pub mod dev;
pub mod duration;
pub mod env_secret;
#[cfg(feature = "server")]
pub mod fleet;
pub mod identity;
#[cfg(feature = "server")]
pub mod inspect;
pub mod lifecycle;
pub mod metrics;
pub mod net;
pub mod policy;
pub mod policy_cli;
#[cfg(feature = "server")]
pub mod preflight;
#[cfg(feature = "server")]
pub mod server;
pub mod store;
#[cfg(feature = "server")]
pub mod table;
