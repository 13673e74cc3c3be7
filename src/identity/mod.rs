//! Who is asking: pinned issuers, their keys, and the verification of every token, whatever its
//! CI, before the CI's own claim mapping (`ci/`) sees it.

mod claims;
mod error;
mod keys;
mod mapping;
mod verifier;

pub use error::Error;
pub use keys::{FixedKeys, KeyStore, PublishedKeys, REFRESH_COOLDOWN, probe};
pub use mapping::{job_from_claims, job_from_issuer_claims};
pub use verifier::{MAX_TOKEN_BYTES, Verifier, signed_part_id, token_sha256};

use std::collections::BTreeMap;
use std::time::Duration;

use jsonwebtoken::Algorithm;
use serde::Deserialize;

use crate::ci::CiKind;

/// One pinned issuer, as written in the broker's config.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssuerConfig {
    /// What policy rules call this issuer.
    pub name: String,
    pub kind: CiKind,
    /// Compared to a token's `iss` exactly.
    pub issuer: String,
    /// Where the keys are; without it, discovery at `{issuer}/.well-known/openid-configuration`.
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// Signature algorithms this issuer may use; RS256 unless configured.
    #[serde(default = "default_algorithms")]
    pub algorithms: Vec<Algorithm>,
    /// The longest lifetime (`exp - iat`) a token of this issuer may have: a token minted to
    /// live longer, or one without `iat`, is refused. Without it, any lifetime `exp` allows.
    #[serde(default, deserialize_with = "crate::duration::human_optional")]
    pub max_token_lifetime: Option<Duration>,
    /// The `aud` this issuer's tokens must carry, where not the broker's own `audience`: the
    /// one a CI writes into every token (Azure DevOps' `api://AzureADTokenExchange`, the default
    /// for its issuers), or CircleCI's organisation id.
    #[serde(default)]
    pub audience: Option<String>,
    /// `[issuers.claim_names]`: which claim holds each of the values the CI's mapping reads under
    /// a name the issuer's admin chooses (Jenkins' claim templates), where not the default.
    #[serde(default)]
    pub claim_names: BTreeMap<String, String>,
    /// Jenkins only: the controller's root URL (ending in `/`), for an issuer configured with the
    /// plugin's custom "Issuer URI", whose URL then says nothing of the controller.
    #[serde(default)]
    pub controller_url: Option<String>,
}

fn default_algorithms() -> Vec<Algorithm> {
    vec![Algorithm::RS256]
}

/// The asymmetric algorithms an issuer may be configured with; HMAC and `none` never verify a CI token.
pub const ASYMMETRIC_ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
];
