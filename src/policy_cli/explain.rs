//! `ci-creds policy explain`: a claim set judged against roles, every rule and condition printed
//! with the values compared.

use std::fmt::Write;
use std::path::Path;

use serde_json::Value;

use super::mapping::{MappingChoice, map};
use super::{Error, Report, read, runner_facts};
use crate::ci::{Job, Sourced};
use crate::config::load_policies;
use crate::policy::{ConditionCheck, RoleExplanation, RuleExplanation};

/// Explains `roles` (every role when empty) for the claims in `claims_path`. Evaluating is the
/// work, so the report is `ok` whether or not the roles are granted.
pub fn explain(
    dir: &Path,
    claims_path: &Path,
    roles: &[String],
    runner_facts: &[(String, String)],
    choice: &MappingChoice,
) -> Result<Report, Error> {
    let set = load_policies(dir)?;
    let claims: Value = serde_json::from_str(&read(claims_path)?)
        .map_err(|e| Error::Claims { path: claims_path.display().to_string(), message: format!("not JSON: {e}") })?;
    let mut mapped = map(&claims, choice)?;
    for (name, value) in runner_facts {
        runner_facts::set(&mut mapped.job.runner, name, value).map_err(Error::Mapping)?;
    }
    let job = &mapped.job;
    let mut text = String::new();
    let _ = writeln!(text, "mapping: {}", mapped.how);
    let _ = writeln!(
        text,
        "job: {} job {}, repository {}, ref {}",
        job.issuer,
        job.job_id,
        job.repository,
        job.git_ref.as_deref().unwrap_or("(none)")
    );
    if let Some(why) = &job.ref_unknown {
        let _ = writeln!(text, "ref unknown: {why}");
    }
    if let Some(fork) = &job.fork {
        let _ = writeln!(text, "from fork: {fork}");
    }
    let _ = writeln!(text, "runner: {}", render_runner(job));
    let tier = set.tier(job);
    let single_use = if tier.is_some_and(|t| t.single_use) { " (single-use)" } else { "" };
    let _ = writeln!(text, "runner tier: {}{single_use}", tier.map_or("(none)", |t| t.name));
    let names: Vec<String> =
        if roles.is_empty() { set.roles().map(|r| r.name.clone()).collect() } else { roles.to_vec() };
    for name in &names {
        render_role(&mut text, &set.explain(job, name));
        if let Some(role) = set.role(name) {
            render_cap(&mut text, role.max_exchanges_per_job);
        }
    }
    Ok(Report { text, ok: true })
}

fn render_role(text: &mut String, role: &RoleExplanation) {
    let verdict = match (role.defined, role.granted) {
        (false, _) => "not defined",
        (true, true) => "granted",
        (true, false) => "denied",
    };
    let _ = writeln!(text, "\nrole {}: {verdict}", role.role);
    if let Some(bound_to) = &role.bound_to {
        let _ = writeln!(text, "  credentials bound to {bound_to}");
    }
    if role.defined && role.allow.is_empty() {
        let _ = writeln!(text, "  (no allow rule: never granted)");
    }
    for (i, rule) in role.allow.iter().enumerate() {
        render_rule(text, "allow", i + 1, rule);
    }
    for (i, rule) in role.deny.iter().enumerate() {
        render_rule(text, "deny", i + 1, rule);
    }
}

/// `max_exchanges_per_job`, so that a reader sees what one job may mint of the role.
fn render_cap(text: &mut String, max: u32) {
    let _ = match max {
        0 => writeln!(text, "  exchanges per job: no cap (max_exchanges_per_job: 0)"),
        max => writeln!(text, "  exchanges per job: at most {max} (max_exchanges_per_job)"),
    };
}

fn render_rule(text: &mut String, kind: &str, number: usize, rule: &RuleExplanation) {
    let verdict = if rule.matches { "matches" } else { "does not match" };
    let _ = writeln!(text, "  {kind} rule {number}: {verdict}");
    for check in &rule.conditions {
        let _ = writeln!(text, "    {}", render_check(check));
    }
    if let Some(reason) = &rule.unnamed_trigger {
        let _ = writeln!(text, "    failed  {reason}");
    }
}

fn render_check(check: &ConditionCheck) -> String {
    let mark = if check.holds { "held  " } else { "failed" };
    let missing = match check.field.as_str() {
        _ if check.unknown_because.is_some() => "(unknown: see `ref unknown` above)",
        "runner_tier" => "(in no runner tier)",
        field if field.starts_with("runner_") => "(unknown)",
        _ => "(not in the token)",
    };
    let actual = check.actual.as_deref().unwrap_or(missing);
    let source = check.source.map(|s| format!(" ({s})")).unwrap_or_default();
    format!("{mark}  {}: {actual}{source}  (accepts {})", check.field, check.accepted.join(", "))
}

/// Every runner fact known, with its source: `environment github-hosted (token), group release (given)`.
fn render_runner(job: &Job) -> String {
    fn one(parts: &mut Vec<String>, name: &str, fact: &Option<Sourced<String>>) {
        if let Some(fact) = fact {
            parts.push(format!("{name} {} ({})", fact.value, fact.source.as_str()));
        }
    }
    let runner = &job.runner;
    let mut parts = Vec::new();
    if let Some(environment) = job.effective_runner_environment() {
        parts.push(format!("environment {} ({})", environment.value, environment.source.as_str()));
    }
    one(&mut parts, "id", &runner.id);
    one(&mut parts, "name", &runner.name);
    one(&mut parts, "group", &runner.group);
    if let Some(labels) = &runner.labels {
        parts.push(format!("labels [{}] ({})", labels.value.join(", "), labels.source.as_str()));
    }
    one(&mut parts, "queue", &runner.queue);
    one(&mut parts, "type", &runner.runner_type);
    one(&mut parts, "manager", &runner.manager);
    if parts.is_empty() { "(nothing known)".to_owned() } else { parts.join(", ") }
}

#[cfg(test)]
mod tests {
    use super::render_runner;
    use crate::ci::{FactSource, Job, Sourced};

    #[test]
    fn the_runner_s_environment_shows_who_told_it() {
        let mut job = Job::default();
        assert_eq!(render_runner(&job), "(nothing known)");
        job.runner.environment = Some(Sourced::new("self-hosted".into(), FactSource::CiApi));
        job.runner.group = Some(Sourced::new("linux-pool".into(), FactSource::CiApi));
        assert_eq!(render_runner(&job), "environment self-hosted (ci_api), group linux-pool (ci_api)");
        job.runner_environment = Some("github-hosted".into());
        assert_eq!(render_runner(&job), "environment github-hosted (token), group linux-pool (ci_api)");
    }
}
