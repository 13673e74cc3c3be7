//! What STS is told about the job: a source identity (also the session name) that names the
//! job and is unique per job, and session tags whose values fit STS's alphabet.

use sha2::{Digest, Sha256};

use crate::ci::Job;

/// STS's limit for `RoleSessionName` and `SourceIdentity`.
const MAX_IDENTITY: usize = 64;
/// STS's limit for a session tag value.
const MAX_TAG_VALUE: usize = 256;
/// Hex digits of the hash that keeps a reduced identity unique.
const HASH_HEX: usize = 16;

/// `{issuer}@{job_id}` when both are made of plain characters and fit; otherwise the reduced,
/// truncated form followed by `=` and a hash of the exact issuer and job id. A plain identity
/// never contains `=`, and an issuer in a plain identity never contains `@`, so two jobs never
/// share an identity (short of a 64-bit hash collision) and the job id stays readable.
pub fn source_identity(issuer: &str, job_id: &str) -> String {
    let plain = format!("{issuer}@{job_id}");
    let issuer_plain = !issuer.is_empty() && issuer.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    let job_plain = !job_id.is_empty() && job_id.chars().all(|c| c.is_ascii_alphanumeric() || "_.@-".contains(c));
    if issuer_plain && job_plain && plain.len() <= MAX_IDENTITY {
        return plain;
    }
    let mut hasher = Sha256::new();
    hasher.update(issuer.as_bytes());
    hasher.update([0]);
    hasher.update(job_id.as_bytes());
    let hash = hex::encode(hasher.finalize());
    let keep = |c: char| if c.is_ascii_alphanumeric() || "_.-".contains(c) { c } else { '_' };
    let reduced: String =
        format!("{}@{}", issuer.chars().map(keep).collect::<String>(), job_id.chars().map(keep).collect::<String>());
    let prefix: String = reduced.chars().take(MAX_IDENTITY - 1 - HASH_HEX).collect();
    format!("{prefix}={}", &hash[..HASH_HEX])
}

/// The session tags naming the job; `ci_ref` only when the token has a ref.
pub fn job_tags(job: &Job) -> Vec<(&'static str, String)> {
    let mut tags = vec![
        ("ci_issuer", tag_value(&job.issuer)),
        ("ci_job_id", tag_value(&job.job_id)),
        ("ci_repository", tag_value(&job.repository)),
    ];
    if let Some(git_ref) = &job.git_ref {
        tags.push(("ci_ref", tag_value(git_ref)));
    }
    tags
}

/// STS allows letters, digits, spaces and `_.:/=+-@` in tag values, up to 256 characters;
/// anything else becomes `_`. Values are descriptive: policy decisions use the source identity.
fn tag_value(value: &str) -> String {
    value
        .chars()
        .map(|c| if c.is_alphanumeric() || c == ' ' || "_.:/=+-@".contains(c) { c } else { '_' })
        .take(MAX_TAG_VALUE)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sts_valid(identity: &str) -> bool {
        (2..=MAX_IDENTITY).contains(&identity.len())
            && identity.chars().all(|c| c.is_ascii_alphanumeric() || "_+=,.@-".contains(c))
            && !identity.starts_with("aws:")
    }

    #[test]
    fn keeps_the_job_id_verbatim_when_it_can() {
        for (issuer, job, expected) in [
            ("github", "289782451", "github@289782451"),
            ("buildkite", "0184990a-477b-4fa8-9968-496074483cee", "buildkite@0184990a-477b-4fa8-9968-496074483cee"),
            ("gitlab.example", "302", "gitlab.example@302"),
        ] {
            assert_eq!(source_identity(issuer, job), expected);
        }
    }

    #[test]
    fn reduces_and_hashes_what_sts_would_refuse_or_what_could_collide() {
        let cases = [
            ("github", "a/b"),
            ("github", "a_b"),
            ("git hub", "1"),
            ("git_hub", "1"),
            ("a@b", "1"),
            ("a", "b@1"),
            ("aws:x", "1"),
            ("circleci", &"7".repeat(100)),
            ("circleci", &format!("{}8", "7".repeat(99))),
        ];
        let identities: Vec<String> = cases.iter().map(|(i, j)| source_identity(i, j)).collect();
        for identity in &identities {
            assert!(sts_valid(identity), "{identity}");
        }
        assert_eq!(identities[1], "github@a_b", "plain");
        assert_ne!(identities[0], identities[1], "a reduced id does not take a plain one's identity");
        assert_ne!(identities[2], identities[3]);
        assert_ne!(identities[4], identities[5], "`@` in the issuer cannot shift the split");
        assert_ne!(identities[7], identities[8], "truncation keeps ids apart");
        assert!(identities[7].starts_with("circleci@777"), "{}", identities[7]);
    }

    #[test]
    fn tag_values_fit_sts() {
        let mut job = Job::new("github", "1", "octo-org/octo-repo");
        job.git_ref = Some(format!("refs/heads/feat/{}#1", "x".repeat(300)));
        let tags = job_tags(&job);
        assert_eq!(tags[2], ("ci_repository", "octo-org/octo-repo".to_owned()));
        let (_, git_ref) = &tags[3];
        assert_eq!(git_ref.chars().count(), MAX_TAG_VALUE);
        assert!(!git_ref.contains('#'));
        assert_eq!(job_tags(&Job::new("github", "1", "r")).len(), 3, "no ref, no ci_ref tag");
    }
}
