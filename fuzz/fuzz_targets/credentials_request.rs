//! A `POST /v1/credentials` body: what the handler parses and checks before the token is
//! verified or the store is touched.
#![no_main]

use ci_creds::api::credentials_request::CredentialsRequest;
use ci_creds::lifecycle::{ExchangeRequest, MAX_ROLE_NAME_CHARS, MAX_ROLES_PER_EXCHANGE, check_request};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(request) = CredentialsRequest::parse(data) else { return };
    let request = ExchangeRequest::from(request);
    if check_request(&request).is_ok() {
        assert!((1..=MAX_ROLES_PER_EXCHANGE).contains(&request.roles.len()));
        assert!(request.roles.iter().all(|role| (1..=MAX_ROLE_NAME_CHARS).contains(&role.chars().count())));
        assert!(request.ttl.is_none_or(|ttl| !ttl.is_zero()));
    }
});
