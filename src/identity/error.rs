use thiserror::Error;

/// Why a token was not accepted. Messages name claims and reasons, never the token's text.
#[derive(Debug, Error)]
pub enum Error {
    #[error("the token is malformed: {0}")]
    Malformed(String),
    #[error("the token's issuer is not configured")]
    UnknownIssuer,
    #[error("the token is signed with {0}, which this issuer may not use")]
    AlgorithmNotAllowed(String),
    #[error("the key id in the token is not among the keys the issuer publishes")]
    UnknownKey,
    #[error("the token's alg {alg} does not fit the issuer's key (kty {kty})")]
    AlgorithmKeyMismatch { alg: String, kty: &'static str },
    #[error("the token is not valid: {0}")]
    Invalid(String),
    #[error("the token lacks the required claim `{0}`")]
    MissingClaim(&'static str),
    #[error("the token's claims do not have the documented types: {0}")]
    WrongClaimType(String),
    #[error(
        "the claim `{0}` still holds `${{`: the controller's claim template names a variable this build does not set"
    )]
    UnsubstitutedClaim(String),
    #[error("the keys of issuer `{issuer}` could not be fetched: {reason}")]
    KeysUnavailable { issuer: String, reason: String },
}

impl From<crate::ci::ClaimsError> for Error {
    fn from(error: crate::ci::ClaimsError) -> Self {
        match error {
            crate::ci::ClaimsError::Missing(claim) => Self::MissingClaim(claim),
            crate::ci::ClaimsError::WrongType(reason) => Self::WrongClaimType(reason),
            crate::ci::ClaimsError::Refused(reason) => Self::Invalid(reason),
            crate::ci::ClaimsError::Unsubstituted(claim) => Self::UnsubstitutedClaim(claim),
        }
    }
}
