//! The JSON Schema of a policy file, for editors. Generated (schemars) from types that mirror the
//! YAML shape the parser accepts; the parser's own types validate more (globs, ARNs, TTLs) than a
//! schema can say, so these stay shape-only, and a test keeps their condition keys equal to the
//! parser's.

use std::collections::BTreeMap;

use schemars::JsonSchema;

/// A ci-creds policy file: runner tiers and roles. Every `*.yaml` of the policy directory is one.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "ci-creds policy file")]
#[allow(dead_code)]
struct PolicyFileShape {
    /// Named tiers; the first whose `match` holds is the job's `runner_tier`.
    #[serde(default)]
    runner_tiers: Vec<TierShape>,
    #[serde(default)]
    roles: Vec<RoleShape>,
}

#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct TierShape {
    name: String,
    /// Each runner of this tier serves one job: a second job on it is refused `runner_reused`.
    #[serde(default)]
    single_use: bool,
    #[serde(rename = "match")]
    conditions: ConditionsShape,
}

#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct RoleShape {
    name: String,
    backend: BackendShape,
    /// A duration with a unit: `15m`, `1h`, `900s`.
    #[schemars(regex(pattern = r"^\s*[0-9]+\s*[a-zA-Z]+(\s*[0-9]+\s*[a-zA-Z]+)*\s*$"))]
    max_ttl: String,
    /// How many exchanges of one job may include this role (default 10); 0 is no cap. The next
    /// is refused `exchange_cap_reached`.
    #[serde(default = "default_max_exchanges_per_job")]
    max_exchanges_per_job: u32,
    #[serde(default)]
    vault: Option<VaultShape>,
    #[serde(default)]
    aws: Option<AwsShape>,
    #[serde(default)]
    github: Option<GithubShape>,
    /// The credentials work only from the job's address block: a Vault token through a token
    /// role with `token_bound_cidrs`, an AWS session through an `aws:SourceIp` condition. Not for
    /// github roles, nor a vault role with `secret_path`.
    #[serde(default)]
    bind_to_address: bool,
    /// The IPv4 block's prefix length: 32 binds the one address, 24 a NAT pool's /24.
    #[serde(default)]
    #[schemars(range(min = 8, max = 32))]
    bind_prefix: Option<u8>,
    /// The IPv6 block's prefix length: 128 binds the one address, 64 a subnet.
    #[serde(default)]
    #[schemars(range(min = 32, max = 128))]
    bind_prefix_v6: Option<u8>,
    /// Granted when ANY rule matches; a rule matches when ALL its conditions hold.
    allow: Vec<AllowRuleShape>,
    /// Any matching deny rule refuses the role, whatever `allow` says.
    #[serde(default)]
    deny: Vec<ConditionsShape>,
}

fn default_max_exchanges_per_job() -> u32 {
    super::model::DEFAULT_MAX_EXCHANGES_PER_JOB
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum BackendShape {
    Vault,
    Aws,
    #[serde(rename = "github")]
    GithubApp,
}

#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct VaultShape {
    /// Exactly these Vault policies (no `default` unless listed).
    policies: Vec<String>,
    /// A dynamic secret read with the job's token, e.g. `database/creds/readonly`.
    #[serde(default)]
    secret_path: Option<String>,
}

#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct AwsShape {
    role_arn: String,
    /// An IAM policy document narrowing the role.
    #[serde(default)]
    session_policy: Option<BTreeMap<String, serde_json::Value>>,
    #[serde(default)]
    session_tags: BTreeMap<String, String>,
}

/// A GitHub App installation token: one account's installation, named repositories (never all),
/// permissions as GitHub names them.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct GithubShape {
    owner: String,
    /// Names without the owner; or `repository_ids`.
    #[serde(default)]
    repositories: Option<Vec<String>>,
    #[serde(default)]
    repository_ids: Option<Vec<u64>>,
    /// Permission name to `read`, `write` or (where GitHub has it) `admin`.
    permissions: BTreeMap<String, String>,
}

/// An allow rule names its `issuer`: without one it would match a job of any CI.
#[derive(JsonSchema)]
#[schemars(extend("required" = ["issuer"]))]
#[allow(dead_code)]
struct AllowRuleShape(ConditionsShape);

/// Conditions on the job's normalised fields; `claims` names raw claims. `sub` is never one.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ConditionsShape {
    issuer: Option<ValueShape>,
    repository: Option<ValueShape>,
    repository_id: Option<ValueShape>,
    owner: Option<ValueShape>,
    owner_id: Option<ValueShape>,
    /// The full form, `refs/heads/…` or `refs/tags/…`.
    #[serde(rename = "ref")]
    git_ref: Option<ValueShape>,
    ref_type: Option<ValueShape>,
    ref_protected: Option<ValueShape>,
    environment: Option<ValueShape>,
    environment_protected: Option<ValueShape>,
    event: Option<ValueShape>,
    workflow_ref: Option<ValueShape>,
    job_workflow_ref: Option<ValueShape>,
    /// Jenkins: the job's full name, `octo-org/octo-repo/main`.
    job_name: Option<ValueShape>,
    /// The token's `runner_environment` (`github-hosted`, `gitlab-hosted`, `self-hosted` …);
    /// Jenkins: `self-hosted`; Azure Pipelines: the pool's, from the CI's API, `microsoft-hosted` or
    /// `self-hosted`.
    runner_environment: Option<ValueShape>,
    /// GitHub: from the CI's API or a webhook; GitLab: the token's (a configuration, not a host);
    /// Buildkite: the token's `agent_id`.
    runner_id: Option<ValueShape>,
    runner_name: Option<ValueShape>,
    /// GitHub's runner group; Buildkite's cluster.
    runner_group: Option<ValueShape>,
    /// Holds when the runner has every label listed (ignoring case); names, never globs.
    runner_labels: Option<ValueShape>,
    /// Buildkite's queue.
    runner_queue: Option<ValueShape>,
    /// GitLab's `instance_type`, `group_type` or `project_type`.
    runner_type: Option<ValueShape>,
    /// GitLab's runner manager `system_id`: the host.
    runner_manager: Option<ValueShape>,
    runner_tier: Option<ValueShape>,
    claims: Option<BTreeMap<String, ValueShape>>,
}

/// One accepted value, or a list of which any may match. A string starting `glob:` is an
/// anchored glob where `*` never crosses `/`.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum ValueShape {
    One(ScalarShape),
    AnyOf(Vec<ScalarShape>),
}

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum ScalarShape {
    Text(String),
    Number(i64),
    Flag(bool),
}

/// The policy file JSON Schema, pretty-printed with a final newline.
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(PolicyFileShape);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::super::field::Field;

    #[test]
    fn lists_exactly_the_condition_keys_the_parser_accepts() {
        let schema: serde_json::Value = serde_json::from_str(&super::json_schema()).unwrap();
        let properties = schema["$defs"]["ConditionsShape"]["properties"].as_object().expect("conditions");
        let mut in_schema: Vec<&str> = properties.keys().map(String::as_str).collect();
        let mut in_parser = Field::KEYS.to_vec();
        in_schema.sort_unstable();
        in_parser.sort_unstable();
        assert_eq!(in_schema, in_parser);
    }

    #[test]
    fn states_the_binding_keys_with_the_prefixes_the_parser_accepts() {
        let schema: serde_json::Value = serde_json::from_str(&super::json_schema()).unwrap();
        let role = &schema["$defs"]["RoleShape"]["properties"];
        assert_eq!(role["bind_to_address"]["type"], "boolean");
        assert_eq!(
            (role["bind_prefix"]["minimum"].as_u64(), role["bind_prefix"]["maximum"].as_u64()),
            (Some(8), Some(32))
        );
        assert_eq!(
            (role["bind_prefix_v6"]["minimum"].as_u64(), role["bind_prefix_v6"]["maximum"].as_u64()),
            (Some(32), Some(128))
        );
    }
}
