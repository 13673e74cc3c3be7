//! `ci-creds policy explain`: a claim set judged against roles, every rule and condition printed
//! with the values compared.

use std::fmt::Write;
use std::path::Path;

use serde_json::Value;

use super::mapping::{MappingChoice, map};
use super::{Error, Report, read};
use crate::config::load_policies;
use crate::policy::{ConditionCheck, RoleExplanation, RuleExplanation};

/// Explains `roles` (every role when empty) for the claims in `claims_path`. Evaluating is the
/// work, so the report is `ok` whether or not the roles are granted.
pub fn explain(dir: &Path, claims_path: &Path, roles: &[String], choice: &MappingChoice) -> Result<Report, Error> {
    let set = load_policies(dir)?;
    let claims: Value = serde_json::from_str(&read(claims_path)?)
        .map_err(|e| Error::Claims { path: claims_path.display().to_string(), message: format!("not JSON: {e}") })?;
    let mapped = map(&claims, choice)?;
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
    let _ = writeln!(text, "runner tier: {}", set.runner_tier(job).unwrap_or("(none)"));
    let names: Vec<String> =
        if roles.is_empty() { set.roles().map(|r| r.name.clone()).collect() } else { roles.to_vec() };
    for name in &names {
        render_role(&mut text, &set.explain(job, name));
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
    let missing = if check.field == "runner_tier" { "(in no runner tier)" } else { "(not in the token)" };
    let actual = check.actual.as_deref().unwrap_or(missing);
    format!("{mark}  {}: {actual}  (accepts {})", check.field, check.accepted.join(", "))
}
