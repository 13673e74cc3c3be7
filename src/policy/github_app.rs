//! What a GitHub App installation token minted for a role may do: one account's installation,
//! named repositories, and permissions checked against the list GitHub documents for
//! installation tokens, when the policy loads rather than at the first mint.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde::de::Deserializer;

use super::checked_section::from_map;

/// GitHub fixes an installation token's lifetime at one hour.
pub const GITHUB_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);
/// GitHub's limit on the repositories one token may name.
const MAX_REPOSITORIES: usize = 500;

/// Each permission an installation token can be given, and the levels GitHub accepts for it
/// (the `app-permissions` schema of GitHub's REST API description).
const PERMISSIONS: &[(&str, &[&str])] = &[
    ("actions", &["read", "write"]),
    ("administration", &["read", "write"]),
    ("checks", &["read", "write"]),
    ("codespaces", &["read", "write"]),
    ("contents", &["read", "write"]),
    ("dependabot_secrets", &["read", "write"]),
    ("deployments", &["read", "write"]),
    ("email_addresses", &["read", "write"]),
    ("environments", &["read", "write"]),
    ("followers", &["read", "write"]),
    ("git_ssh_keys", &["read", "write"]),
    ("gpg_keys", &["read", "write"]),
    ("interaction_limits", &["read", "write"]),
    ("issues", &["read", "write"]),
    ("members", &["read", "write"]),
    ("metadata", &["read", "write"]),
    ("organization_administration", &["read", "write"]),
    ("organization_announcement_banners", &["read", "write"]),
    ("organization_copilot_seat_management", &["write"]),
    ("organization_custom_org_roles", &["read", "write"]),
    ("organization_custom_properties", &["read", "write", "admin"]),
    ("organization_custom_roles", &["read", "write"]),
    ("organization_events", &["read"]),
    ("organization_hooks", &["read", "write"]),
    ("organization_packages", &["read", "write"]),
    ("organization_personal_access_token_requests", &["read", "write"]),
    ("organization_personal_access_tokens", &["read", "write"]),
    ("organization_plan", &["read"]),
    ("organization_projects", &["read", "write", "admin"]),
    ("organization_secrets", &["read", "write"]),
    ("organization_self_hosted_runners", &["read", "write"]),
    ("organization_user_blocking", &["read", "write"]),
    ("packages", &["read", "write"]),
    ("pages", &["read", "write"]),
    ("profile", &["write"]),
    ("pull_requests", &["read", "write"]),
    ("repository_custom_properties", &["read", "write"]),
    ("repository_hooks", &["read", "write"]),
    ("repository_projects", &["read", "write", "admin"]),
    ("secret_scanning_alerts", &["read", "write"]),
    ("secrets", &["read", "write"]),
    ("security_events", &["read", "write"]),
    ("single_file", &["read", "write"]),
    ("starring", &["read", "write"]),
    ("statuses", &["read", "write"]),
    ("team_discussions", &["read", "write"]),
    ("vulnerability_alerts", &["read", "write"]),
    ("workflows", &["write"]),
];

/// The repositories a token is scoped to; never "all of the installation's".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Repositories {
    Names(Vec<String>),
    Ids(Vec<u64>),
}

#[derive(Clone, Debug)]
pub struct GithubAppScope {
    /// The account (organisation or user) whose installation of the broker's App mints it.
    pub owner: String,
    pub repositories: Repositories,
    /// Permission name to level, exactly as sent to GitHub.
    pub permissions: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GithubFields {
    #[serde(default)]
    owner: Option<String>,
    #[serde(default)]
    repositories: Option<Vec<String>>,
    #[serde(default)]
    repository_ids: Option<Vec<u64>>,
    #[serde(default)]
    permissions: Option<BTreeMap<String, String>>,
}

pub(super) struct GithubAppDoc(pub(super) GithubAppScope);

impl<'de> Deserialize<'de> for GithubAppDoc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_map(d, "a `github:` mapping with `owner`, `repositories` and `permissions`", |doc: GithubFields| {
            let owner = match doc.owner {
                Some(owner) if is_account_name(&owner) => owner,
                Some(owner) => return Err(format!("`github.owner` `{owner}` is not a GitHub account name")),
                None => {
                    return Err(
                        "`github.owner` is missing; hint: name the organisation or user whose installation mints the token"
                            .into(),
                    );
                }
            };
            let repositories = match (doc.repositories, doc.repository_ids) {
                (Some(_), Some(_)) => {
                    return Err("`github` has both `repositories` and `repository_ids`; hint: keep one".into());
                }
                (None, None) => {
                    return Err("`github` names no repositories; hint: list `repositories: [name]` or `repository_ids: [id]` (a token for every repository of the installation is never minted)".into());
                }
                (Some(names), None) => Repositories::Names(check_names(names)?),
                (None, Some(ids)) => Repositories::Ids(check_ids(ids)?),
            };
            let permissions = doc.permissions.unwrap_or_default();
            if permissions.is_empty() {
                return Err("`github.permissions` is missing or empty; hint: name each permission and its level, e.g. `{ contents: read }`".into());
            }
            for (name, level) in &permissions {
                check_permission(name, level)?;
            }
            Ok(GithubAppDoc(GithubAppScope { owner, repositories, permissions }))
        })
    }
}

/// Account names: letters, digits and single hyphens, at most 39 characters.
fn is_account_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 39
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !name.starts_with('-')
}

fn check_names(names: Vec<String>) -> Result<Vec<String>, String> {
    if names.is_empty() {
        return Err("`github.repositories` is empty; hint: list at least one repository name".into());
    }
    if names.len() > MAX_REPOSITORIES {
        return Err(format!("`github.repositories` lists more than GitHub's {MAX_REPOSITORIES}"));
    }
    for name in &names {
        let valid = !name.is_empty()
            && name.len() <= 100
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            && name != "."
            && name != "..";
        if !valid {
            return Err(format!(
                "`github.repositories`: `{name}` is not a repository name; hint: names only, without the owner (`app`, not `octo-org/app`)"
            ));
        }
    }
    Ok(names)
}

fn check_ids(ids: Vec<u64>) -> Result<Vec<u64>, String> {
    if ids.is_empty() {
        return Err("`github.repository_ids` is empty; hint: list at least one repository id".into());
    }
    if ids.len() > MAX_REPOSITORIES {
        return Err(format!("`github.repository_ids` lists more than GitHub's {MAX_REPOSITORIES}"));
    }
    Ok(ids)
}

fn check_permission(name: &str, level: &str) -> Result<(), String> {
    let Some((_, levels)) = PERMISSIONS.iter().find(|(known, _)| *known == name) else {
        return Err(format!(
            "`github.permissions`: `{name}` is not a permission GitHub grants to installation tokens; hint: use GitHub's names, such as contents, pull_requests, issues, actions"
        ));
    };
    if !levels.contains(&level) {
        return Err(format!("`github.permissions.{name}`: `{level}` is not one of {}", levels.join(", ")));
    }
    Ok(())
}
