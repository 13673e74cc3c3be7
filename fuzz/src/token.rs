//! A bearer token through the real verifier: issuer pinning, header and algorithm checks,
//! signature, time claims, then the CI kind's claim mapping and a policy decision on the job.
//!
//! The first byte picks how the rest becomes a token (`mode % 3`):
//! - 0: the rest is the token's text, as a client would send it;
//! - 1: the rest is the claims JSON; unless `mode / 3` says to keep them as given (bit 0 `iss`,
//!   bit 1 `aud`, bit 2 `exp`), the registered claims are set to live values so that most
//!   inputs reach the claim mapping; bit 3 also sets `iat` and `nbf` to now. Signed with the
//!   target's key and a well-formed header;
//! - 2: the rest is `HEADER\nPAYLOAD`, both bytes as given, signed with the target's key.

use std::sync::OnceLock;

use ci_creds::dev::SigningKey;
use ci_creds::identity::{FixedKeys, IssuerConfig, Verifier, signed_part_id};
use ci_creds::ci::CiKind;
use ci_creds::policy::{PolicyFile, PolicySet};
use serde_json::{Value, json};

use crate::split_at_first;

pub const ISSUER: &str = "https://token.fuzz.example";
/// A Jenkins issuer is its controller's root URL and `oidc`: its tokens name jobs below the root.
pub const JENKINS_ISSUER: &str = "https://token.fuzz.example/oidc";

/// An Azure DevOps issuer names its organisation, which `org_id` must be.
pub const AZURE_ISSUER: &str = "https://token.fuzz.example/0ca3ddd9-f0b0-4635-a98c-5866526961b6";

/// The issuer the target's verifier pins for tokens of `kind`.
pub fn pinned_issuer(kind: CiKind) -> &'static str {
    match kind {
        CiKind::Jenkins => JENKINS_ISSUER,
        CiKind::AzurePipelines => AZURE_ISSUER,
        _ => ISSUER,
    }
}
pub const AUDIENCE: &str = "https://ci-creds.fuzz.example";
pub const KEY_ID: &str = "fuzz";
const POLICY: &str = include_str!("../../policy/example.yaml");

struct Harness {
    kind: CiKind,
    key: SigningKey,
    header: Vec<u8>,
    verifier: Verifier,
    policy: PolicySet,
    roles: Vec<String>,
    runtime: tokio::runtime::Runtime,
}

static HARNESS: OnceLock<Harness> = OnceLock::new();

impl Harness {
    fn new(kind: CiKind) -> Self {
        let name = serde_json::to_value(kind).expect("a CI kind serialises");
        let issuer: IssuerConfig = serde_json::from_value(json!({
            "name": name, "kind": name, "issuer": pinned_issuer(kind), "algorithms": ["ES256", "RS256"],
            // Azure's tokens carry a fixed audience; this one replaces it, as for every kind.
            "audience": AUDIENCE,
        }))
        .expect("a valid issuer config");
        // ES256: signing and verifying each input costs microseconds, not the milliseconds of RSA.
        // The key is new in every process, its id is not: seeds and saved inputs can name it.
        let mut key = SigningKey::generate_es256().expect("an ES256 key");
        key.kid = KEY_ID.into();
        let mut jwk = key.jwk().clone();
        jwk["kid"] = json!(KEY_ID);
        let jwks = json!({ "keys": [jwk] });
        let keys = FixedKeys::from_jwks([(pinned_issuer(kind), &jwks)]).expect("the target's own JWKS");
        let header = serde_json::to_vec(&json!({ "alg": "ES256", "typ": "JWT", "kid": key.kid })).expect("JSON");
        let policy = PolicySet::parse(&[PolicyFile { path: "policy/example.yaml", text: POLICY }])
            .expect("the example policy loads");
        let roles = policy.roles().map(|role| role.name.clone()).collect();
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        Self {
            kind,
            key,
            header,
            verifier: Verifier::with_fixed_keys(AUDIENCE.into(), vec![issuer], keys),
            policy,
            roles,
            runtime,
        }
    }

    /// The token, and its signature when the target signed it.
    fn token(&self, data: &[u8]) -> Option<(String, Option<String>)> {
        let (&mode, rest) = data.split_first()?;
        let signed = match mode % 3 {
            0 => return std::str::from_utf8(rest).ok().map(|text| (text.to_owned(), None)),
            1 => self.key.sign_raw(&self.header, &live_claims(pinned_issuer(self.kind), rest, mode / 3)),
            _ => {
                let (header, payload) = split_at_first(rest, b"\n");
                self.key.sign_raw(header, payload)
            }
        }
        .expect("signing never fails with the target's key");
        let signature = signed.rsplit('.').next().map(str::to_owned);
        Some((signed, signature))
    }
}

/// The claims with `iss`, `aud` and `exp` made live unless `keep` says otherwise; bytes that are
/// not a JSON object are signed as they are.
fn live_claims(issuer: &str, claims: &[u8], keep: u8) -> Vec<u8> {
    let Ok(Value::Object(mut claims)) = serde_json::from_slice::<Value>(claims) else {
        return claims.to_vec();
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs() as i64);
    if keep & 1 == 0 {
        claims.insert("iss".into(), json!(issuer));
    }
    if keep & 2 == 0 {
        claims.insert("aud".into(), json!(AUDIENCE));
    }
    if keep & 4 == 0 {
        claims.insert("exp".into(), json!(now + 300));
    }
    if keep & 8 != 0 {
        claims.insert("iat".into(), json!(now));
        claims.insert("nbf".into(), json!(now));
    }
    serde_json::to_vec(&claims).expect("JSON")
}

pub fn fuzz(kind: CiKind, data: &[u8]) {
    let harness = HARNESS.get_or_init(|| Harness::new(kind));
    assert_eq!(harness.kind, kind, "one CI kind per target");
    let Some((token, signature)) = harness.token(data) else { return };
    match harness.runtime.block_on(harness.verifier.verify(&token)) {
        Ok(job) => {
            // The mapping refuses a job it cannot name, rather than granting on a missing fact.
            assert!(!job.job_id.is_empty() && !job.repository.is_empty());
            assert_eq!(job.kind, Some(kind));
            // Without a `jti`, the replay id leaves the signature out (ECDSA's (r, n − s) verifies
            // too), and the whole text's id of earlier releases goes with it.
            if !job.token_id.starts_with("jti:") {
                assert_eq!(job.token_id, signed_part_id(&token));
                assert!(job.legacy_token_id.is_some());
            }
            let _ = harness.policy.decide(&job, &harness.roles);
            for role in &harness.roles {
                let _ = harness.policy.explain(&job, role);
            }
        }
        Err(error) => {
            // Errors name claims and reasons, never the token: its signature must not show.
            let message = error.to_string();
            if let Some(signature) = signature.filter(|signature| signature.len() >= 16) {
                assert!(!message.contains(&signature), "an error quotes the token");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seeds are meant to get past the signature: if the harness drifted, fuzzing would only
    /// ever see the verifier refuse.
    #[test]
    fn each_kinds_fixture_seed_verifies_and_maps_to_a_job() {
        for (kind, target) in [
            (CiKind::Github, "token_github"),
            (CiKind::Gitlab, "token_gitlab"),
            (CiKind::Buildkite, "token_buildkite"),
            (CiKind::Circleci, "token_circleci"),
            (CiKind::Jenkins, "token_jenkins"),
            (CiKind::AzurePipelines, "token_azure_pipelines"),
        ] {
            let harness = Harness::new(kind);
            for seed in ["fixture", "header-es256"] {
                let data = std::fs::read(format!("{}/corpus/{target}/{seed}", env!("CARGO_MANIFEST_DIR"))).unwrap();
                let (token, _) = harness.token(&data).unwrap();
                let job = harness.runtime.block_on(harness.verifier.verify(&token));
                assert!(job.is_ok(), "{target}/{seed}: {:?}", job.err());
            }
        }
    }

    /// CircleCI's tokens carry no `jti`: its seeds reach the replay-id check, and the SSH rerun
    /// seeds reach the dangerous trigger and the refusal of a claim that is not a boolean.
    #[test]
    fn circleci_seeds_reach_the_replay_id_and_the_ssh_rerun_trigger() {
        let harness = Harness::new(CiKind::Circleci);
        let verify = |seed: &str| {
            let data = std::fs::read(format!("{}/corpus/token_circleci/{seed}", env!("CARGO_MANIFEST_DIR"))).unwrap();
            let (token, _) = harness.token(&data).unwrap();
            (harness.runtime.block_on(harness.verifier.verify(&token)), token)
        };
        for (seed, event) in [("fixture", None), ("ssh-rerun", Some("ssh_rerun"))] {
            let (job, token) = verify(seed);
            let job = job.unwrap_or_else(|error| panic!("{seed}: {error:?}"));
            assert_eq!(job.token_id, signed_part_id(&token), "{seed}");
            assert_eq!(job.event.as_deref(), event, "{seed}");
        }
        assert!(verify("ssh-rerun-string").0.is_err());
    }
}
