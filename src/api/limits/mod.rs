//! What one client may hold of the broker: connections, time, and requests in flight.

mod config;
mod connections;
mod in_flight;
mod listener;

pub use config::LimitsConfig;
pub(super) use in_flight::{InFlight, admit};
pub use listener::serve;
