//! The policy file's shape and the checks made while reading it, so that every error the
//! YAML parser reports carries the position of what is wrong.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::github::{GITHUB_TOKEN_LIFETIME, GithubDoc, GithubScope};
use super::matcher::{Condition, Field, Values};
use super::tiers::RunnerTier;

/// Which backend mints a role's credentials.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Vault,
    Aws,
    Github,
}

impl BackendKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Vault => "vault",
            Self::Aws => "aws",
            Self::Github => "github",
        }
    }
}

/// A named grant: what a job gets from which backend, for how long, and which jobs may have it.
#[derive(Clone, Debug)]
pub struct Role {
    pub name: String,
    pub backend: BackendKind,
    pub max_ttl: Duration,
    pub vault: Option<VaultScope>,
    pub aws: Option<AwsScope>,
    pub github: Option<GithubScope>,
    pub allow: Vec<Rule>,
    pub deny: Vec<Rule>,
}

/// What a Vault token minted for a role may do.
#[derive(Clone, Debug)]
pub struct VaultScope {
    pub policies: Vec<String>,
    /// A dynamic secret (e.g. `database/creds/readonly`) read with the job's token, so its lease
    /// is a child of that token and dies with it.
    pub secret_path: Option<String>,
}

/// What an STS session minted for a role is: the target role, optionally narrowed.
#[derive(Clone, Debug)]
pub struct AwsScope {
    pub role_arn: String,
    /// The session policy as compact JSON, ready for `sts:AssumeRole`'s `Policy`.
    pub session_policy: Option<String>,
    /// Extra session tags; never one of the `ci_*` tags the broker sets itself.
    pub session_tags: BTreeMap<String, String>,
}

/// STS refuses sessions shorter than this.
pub const AWS_MIN_SESSION: Duration = Duration::from_secs(900);
/// STS's ceiling for `sts:AssumeRole`, whatever the role's own maximum.
pub const AWS_MAX_SESSION: Duration = Duration::from_secs(12 * 3600);
/// Tags the broker sets on every session, so a role's own tags cannot spoof them.
pub const AWS_RESERVED_TAG_PREFIX: &str = "ci_";
/// STS allows 50 session tags; the broker sets four.
const AWS_MAX_EXTRA_TAGS: usize = 46;

/// Conditions that must all hold for the rule to match; never empty.
#[derive(Clone, Debug)]
pub struct Rule {
    pub(super) conditions: Vec<Condition>,
}

/// One policy file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileDoc {
    #[serde(default)]
    pub(super) runner_tiers: Vec<RunnerTier>,
    #[serde(default)]
    pub(super) roles: Vec<RoleEntry>,
}

/// Keeps `Role` itself free of a public `Deserialize`: roles only come from `PolicySet::parse`.
pub(super) struct RoleEntry(pub(super) Role);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleDoc {
    name: String,
    backend: BackendKind,
    max_ttl: Ttl,
    #[serde(default)]
    vault: Option<VaultDoc>,
    #[serde(default)]
    aws: Option<AwsDoc>,
    #[serde(default)]
    github: Option<GithubDoc>,
    #[serde(default)]
    allow: Vec<Rule>,
    #[serde(default)]
    deny: Vec<Rule>,
}

impl<'de> Deserialize<'de> for RoleEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_map(d, "a role mapping", |doc: RoleDoc| {
            if doc.name.is_empty() {
                return Err("a role needs a non-empty `name`".to_owned());
            }
            let sections = [doc.vault.is_some(), doc.aws.is_some(), doc.github.is_some()];
            if sections.iter().filter(|present| **present).count() > 1 {
                return Err(format!(
                    "role `{}` has backend {} and a section for another backend; hint: keep only the `{}:` section",
                    doc.name,
                    doc.backend.as_str(),
                    doc.backend.as_str()
                ));
            }
            let (mut vault, mut aws, mut github) = (None, None, None);
            match doc.backend {
                BackendKind::Vault => match doc.vault {
                    Some(VaultDoc { policies, secret_path }) => vault = Some(VaultScope { policies, secret_path }),
                    None => {
                        return Err(missing_section(
                            &doc.name,
                            "vault",
                            "vault: { policies: [...] }` naming the Vault policies its tokens get",
                        ));
                    }
                },
                BackendKind::Aws => match doc.aws {
                    Some(AwsDoc(scope)) => aws = Some(scope),
                    None => {
                        return Err(missing_section(
                            &doc.name,
                            "aws",
                            "aws: { role_arn: arn:aws:iam::ACCOUNT:role/NAME }`",
                        ));
                    }
                },
                BackendKind::Github => match doc.github {
                    Some(GithubDoc(scope)) => github = Some(scope),
                    None => {
                        return Err(missing_section(
                            &doc.name,
                            "github",
                            "github: { owner: ORG, repositories: [NAME], permissions: { contents: read } }`",
                        ));
                    }
                },
            }
            if doc.backend == BackendKind::Github && doc.max_ttl.0 > GITHUB_TOKEN_LIFETIME {
                return Err(format!(
                    "role `{}`: a github role's max_ttl must be at most 1h (GitHub's installation tokens live one hour)",
                    doc.name
                ));
            }
            if doc.backend == BackendKind::Aws && !(AWS_MIN_SESSION..=AWS_MAX_SESSION).contains(&doc.max_ttl.0) {
                return Err(format!(
                    "role `{}`: an aws role's max_ttl must be between 15m and 12h (STS's limits for AssumeRole)",
                    doc.name
                ));
            }
            Ok(RoleEntry(Role {
                name: doc.name,
                backend: doc.backend,
                max_ttl: doc.max_ttl.0,
                vault,
                aws,
                github,
                allow: doc.allow,
                deny: doc.deny,
            }))
        })
    }
}

fn missing_section(role: &str, backend: &str, example: &str) -> String {
    format!("role `{role}` has backend {backend} but no `{backend}:` section; hint: add `{example}")
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VaultFields {
    policies: Vec<String>,
    #[serde(default)]
    secret_path: Option<String>,
}

struct VaultDoc {
    policies: Vec<String>,
    secret_path: Option<String>,
}

impl<'de> Deserialize<'de> for VaultDoc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_map(d, "a `vault:` mapping with `policies`", |doc: VaultFields| {
            if doc.policies.is_empty() {
                return Err("`vault.policies` is empty; hint: list at least one Vault policy".to_owned());
            }
            if doc.policies.iter().any(String::is_empty) {
                return Err("`vault.policies` has an empty policy name".to_owned());
            }
            if let Some(path) = &doc.secret_path {
                let bad = path.is_empty()
                    || path.starts_with('/')
                    || path.starts_with("v1/")
                    || path.split('/').any(|part| part.is_empty() || part == "." || part == "..")
                    || path.contains(['?', '#']);
                if bad {
                    return Err(format!(
                        "`vault.secret_path` `{path}` is not a Vault path; hint: write it as the API path after /v1/, e.g. database/creds/readonly"
                    ));
                }
            }
            Ok(VaultDoc { policies: doc.policies, secret_path: doc.secret_path })
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AwsFields {
    role_arn: String,
    #[serde(default)]
    session_policy: Option<serde_json::Value>,
    #[serde(default)]
    session_tags: BTreeMap<String, String>,
}

struct AwsDoc(AwsScope);

impl<'de> Deserialize<'de> for AwsDoc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_map(d, "an `aws:` mapping with `role_arn`", |doc: AwsFields| {
            check_role_arn(&doc.role_arn)?;
            let session_policy = match doc.session_policy {
                None => None,
                Some(policy @ serde_json::Value::Object(_)) => Some(policy.to_string()),
                Some(_) => {
                    return Err("`aws.session_policy` must be a policy document mapping such as `{ Version: \"2012-10-17\", Statement: [...] }`".to_owned());
                }
            };
            if doc.session_tags.len() > AWS_MAX_EXTRA_TAGS {
                return Err(format!(
                    "`aws.session_tags` has more than {AWS_MAX_EXTRA_TAGS} tags (STS allows 50, the broker sets 4)"
                ));
            }
            for (key, value) in &doc.session_tags {
                check_tag(key, value)?;
            }
            Ok(AwsDoc(AwsScope { role_arn: doc.role_arn, session_policy, session_tags: doc.session_tags }))
        })
    }
}

/// `arn:PARTITION:iam::ACCOUNT:role/[PATH/]NAME`: anything else would fail at every mint.
fn check_role_arn(arn: &str) -> Result<(), String> {
    let hint = "hint: write it like arn:aws:iam::123456789012:role/deploy-prod";
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    let valid = matches!(parts.as_slice(), ["arn", partition, "iam", "", account, resource]
        if !partition.is_empty()
            && account.len() == 12
            && account.bytes().all(|b| b.is_ascii_digit())
            && resource.strip_prefix("role/").is_some_and(|name| name.rsplit('/').next().is_some_and(|n| !n.is_empty())));
    if valid { Ok(()) } else { Err(format!("`aws.role_arn` `{arn}` is not an IAM role ARN; {hint}")) }
}

/// STS's rules for session tags, checked at load rather than at every mint.
fn check_tag(key: &str, value: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_alphanumeric() || c == ' ' || "_.:/=+-@".contains(c);
    if key.is_empty() || key.chars().count() > 128 || !key.chars().all(allowed) {
        return Err(format!("session tag key `{key}` is not 1 to 128 letters, digits, spaces or _.:/=+-@"));
    }
    let lower = key.to_ascii_lowercase();
    if lower.starts_with(AWS_RESERVED_TAG_PREFIX) || lower.starts_with("aws:") {
        return Err(format!(
            "session tag key `{key}` is reserved: the broker sets the ci_* tags from the job, and aws:* belongs to AWS"
        ));
    }
    if value.chars().count() > 256 || !value.chars().all(allowed) {
        return Err(format!("session tag `{key}`: the value is not up to 256 letters, digits, spaces or _.:/=+-@"));
    }
    Ok(())
}

const MAX_ROLE_TTL: Duration = Duration::from_secs(31 * 24 * 3600);

/// `max_ttl`: a humantime duration such as `15m`; zero would mint credentials that are already dead.
struct Ttl(Duration);

impl<'de> Deserialize<'de> for Ttl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TtlVisitor;
        impl Visitor<'_> for TtlVisitor {
            type Value = Ttl;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration with a unit, such as 15m, 1h or 900s")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Ttl, E> {
                let ttl = humantime::parse_duration(v).map_err(|e| {
                    E::custom(format!("max_ttl `{v}` is not a duration ({e}); hint: write it like 15m, 1h or 900s"))
                })?;
                if ttl.is_zero() {
                    return Err(E::custom("max_ttl must be greater than zero; hint: write it like 15m"));
                }
                // Past any CI job's life, and far past Vault's default ceiling (32 days); without a
                // bound, `now + max_ttl` would overflow at every exchange of the role.
                if ttl > MAX_ROLE_TTL {
                    return Err(E::custom(format!(
                        "max_ttl `{v}` is over 31d; hint: a CI job's credential lives minutes or hours"
                    )));
                }
                Ok(Ttl(ttl))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Ttl, E> {
                Err(E::custom(format!("max_ttl `{v}` is not a duration with a unit; hint: write it like {v}s or 15m")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Ttl, E> {
                Err(E::custom(format!(
                    "max_ttl `{v}` is not a duration with a unit; hint: write it like 15m, 1h or 900s"
                )))
            }
        }
        d.deserialize_any(TtlVisitor)
    }
}

/// Where a set of conditions is used; tiers are computed from conditions, so they cannot
/// themselves test a tier.
#[derive(Clone, Copy)]
pub(super) enum Purpose {
    Rule,
    TierMatch,
}

impl<'de> Deserialize<'de> for Rule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let conditions = d.deserialize_map(ConditionsVisitor(Purpose::Rule))?;
        Ok(Rule { conditions })
    }
}

/// Reads a mapping of condition keys to values, rejecting what would widen or confuse a rule.
pub(super) struct ConditionsVisitor(pub(super) Purpose);

impl<'de> Visitor<'de> for ConditionsVisitor {
    type Value = Vec<Condition>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping of conditions such as `repository: octo-org/octo-repo`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<Condition>, A::Error> {
        let mut conditions: Vec<Condition> = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed(self.0))? {
            match key {
                Key::Field(field) => {
                    if conditions.iter().any(|c| c.field == field) {
                        return Err(de::Error::custom(format!("`{field}` is given twice")));
                    }
                    let values: Values = map.next_value()?;
                    if field == Field::RunnerLabels && values.has_globs() {
                        return Err(de::Error::custom(
                            "`runner_labels` lists label names, not globs; hint: it holds when the runner has every label listed",
                        ));
                    }
                    conditions.push(Condition { field, values });
                }
                Key::Claims => {
                    if conditions.iter().any(|c| matches!(c.field, Field::Claim(_))) {
                        return Err(de::Error::duplicate_field("claims"));
                    }
                    let ClaimConditions(claims) = map.next_value()?;
                    conditions.extend(claims);
                }
            }
        }
        if conditions.is_empty() {
            return Err(de::Error::custom(match self.0 {
                Purpose::Rule => {
                    "a rule with no condition would match every job; hint: add conditions such as `repository:` and `ref:`"
                }
                Purpose::TierMatch => {
                    "a tier `match` with no condition would put every job in this tier; hint: add conditions such as `runner_environment:`"
                }
            }));
        }
        Ok(conditions)
    }
}

enum Key {
    Field(Field),
    Claims,
}

struct KeySeed(Purpose);

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeySeed {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a condition key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        if v == "claims" {
            return Ok(Key::Claims);
        }
        match (Field::from_key(v), self.0) {
            (Some(Field::RunnerTier), Purpose::TierMatch) => Err(E::custom(
                "`runner_tier` cannot be used in a runner tier's `match`; hint: tiers are computed from the other conditions, first match wins",
            )),
            (Some(field), _) => Ok(Key::Field(field)),
            (None, _) => Err(E::unknown_field(v, Field::KEYS)),
        }
    }
}

/// `claims: {name: value}`; `sub` is refused because it packs several claims into one string
/// whose layout differs per CI, so matching it invites mistakes.
struct ClaimConditions(Vec<Condition>);

impl<'de> Deserialize<'de> for ClaimConditions {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ClaimsVisitor;
        impl<'de> Visitor<'de> for ClaimsVisitor {
            type Value = ClaimConditions;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping of claim names to values, such as `{ actor: octocat }`")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ClaimConditions, A::Error> {
                let mut conditions: Vec<Condition> = Vec::new();
                while let Some(ClaimName(name)) = map.next_key()? {
                    if conditions.iter().any(|c| matches!(&c.field, Field::Claim(n) if *n == name)) {
                        return Err(de::Error::custom(format!("claim `{name}` is given twice")));
                    }
                    let values: Values = map.next_value()?;
                    conditions.push(Condition { field: Field::Claim(name), values });
                }
                if conditions.is_empty() {
                    return Err(de::Error::custom(
                        "`claims:` is empty; hint: name at least one claim, or remove the key",
                    ));
                }
                Ok(ClaimConditions(conditions))
            }
        }
        d.deserialize_map(ClaimsVisitor)
    }
}

struct ClaimName(Box<str>);

impl<'de> Deserialize<'de> for ClaimName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NameVisitor;
        impl Visitor<'_> for NameVisitor {
            type Value = ClaimName;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a claim name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ClaimName, E> {
                match v {
                    "sub" => Err(E::custom(
                        "`sub` cannot be a condition: policy must use the individual claims; hint: match `repository`, `ref`, `environment` … or `claims.project_path` instead",
                    )),
                    "" => Err(E::custom("a claim name cannot be empty")),
                    _ => Ok(ClaimName(v.into())),
                }
            }
        }
        d.deserialize_str(NameVisitor)
    }
}

/// Deserializes `Raw` from a mapping and converts it inside the map visitor, so a conversion
/// error is placed at the mapping rather than at the end of the enclosing list.
pub(super) fn from_map<'de, D, Raw, T>(
    d: D,
    expecting: &'static str,
    convert: fn(Raw) -> Result<T, String>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    Raw: Deserialize<'de>,
{
    struct MapVisitor<Raw, T> {
        expecting: &'static str,
        convert: fn(Raw) -> Result<T, String>,
        raw: PhantomData<Raw>,
    }
    impl<'de, Raw: Deserialize<'de>, T> Visitor<'de> for MapVisitor<Raw, T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.expecting)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            let raw = Raw::deserialize(MapAccessDeserializer::new(map))?;
            (self.convert)(raw).map_err(de::Error::custom)
        }
    }
    d.deserialize_map(MapVisitor { expecting, convert, raw: PhantomData })
}
