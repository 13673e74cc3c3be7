//! The session policy that binds an AWS session to the job's address block: every Allow of the
//! role's own session policy (or, without one, an Allow of everything, which leaves the role's
//! own permissions as the limit) holds only while `aws:SourceIp` is in the block, or while an
//! AWS service makes the call on the session's behalf (`aws:ViaAWSService`).
//!
//! IAM: "AWS global condition context keys", `aws:SourceIp` (the requester's public address;
//! absent through a VPC endpoint, where `aws:VpcSourceIp` holds the private one) and
//! `aws:ViaAWSService` (true when a service calls with the principal's credentials); the
//! pattern is IAM's own example "AWS: Denies access to AWS based on the source IP"
//! (reference_policies_examples_aws_deny-ip.html), turned into Allows because a session policy
//! only narrows: conditions within a statement all hold (AND), so the OR of the two is two
//! statements.

use ipnet::IpNet;
use serde_json::{Map, Value, json};

/// STS `AssumeRole`, `Policy`: "The plaintext that you use for both inline and managed session
/// policies can't exceed 2,048 characters" (AssumeRole API reference). The packed size, a
/// separate limit on the compressed policy and tags, is only known from STS's answer.
pub const SESSION_POLICY_PLAIN_TEXT_LIMIT: usize = 2048;

/// The longest block text a binding can produce, for the size check at load.
const LONGEST_BLOCK: &str = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128";

/// The session policy for a session bound to `block`, as compact JSON.
pub fn bound_session_policy(session_policy: Option<&str>, block: IpNet) -> Result<String, String> {
    bind(session_policy, &block.to_string())
}

/// Refuses at load a bound role whose session policy cannot carry the binding, or would pass
/// STS's size limit once it does.
pub(super) fn check_fits(role: &str, session_policy: Option<&str>) -> Result<(), String> {
    let bound = bind(session_policy, LONGEST_BLOCK).map_err(|reason| format!("role `{role}`: {reason}"))?;
    let size = bound.chars().count();
    if size > SESSION_POLICY_PLAIN_TEXT_LIMIT {
        return Err(format!(
            "role `{role}`: with `bind_to_address`, the session policy grows to {size} characters (each Allow statement is written twice, once per condition), over STS's limit of {SESSION_POLICY_PLAIN_TEXT_LIMIT}; hint: merge Allow statements or shorten the policy"
        ));
    }
    Ok(())
}

fn bind(session_policy: Option<&str>, block: &str) -> Result<String, String> {
    let mut policy: Value = match session_policy {
        Some(text) => serde_json::from_str(text).map_err(|e| format!("the session policy does not parse: {e}"))?,
        None => {
            json!({ "Version": "2012-10-17", "Statement": [{ "Effect": "Allow", "Action": "*", "Resource": "*" }] })
        }
    };
    let document = policy.as_object_mut().ok_or("the session policy is not a mapping")?;
    let statements = match document.remove("Statement") {
        Some(Value::Array(statements)) => statements,
        Some(statement @ Value::Object(_)) => vec![statement],
        _ => return Err("the session policy has no `Statement` list".to_owned()),
    };
    let mut bound = Vec::with_capacity(statements.len() * 2);
    for statement in statements {
        // A Deny stays as written: narrowing it to the block would lift it everywhere else.
        if statement.get("Effect").and_then(Value::as_str) != Some("Allow") {
            bound.push(statement);
            continue;
        }
        bound.push(with_condition(&statement, "IpAddress", "aws:SourceIp", json!(block), None)?);
        bound.push(with_condition(&statement, "Bool", "aws:ViaAWSService", json!("true"), Some("ViaAwsService"))?);
    }
    document.insert("Statement".to_owned(), Value::Array(bound));
    Ok(policy.to_string())
}

/// `statement` with `key` tested by `operator` added to its own conditions, which still all hold
/// too. `sid_suffix` keeps a copied statement's `Sid` unique within the policy.
fn with_condition(
    statement: &Value,
    operator: &str,
    key: &str,
    value: Value,
    sid_suffix: Option<&str>,
) -> Result<Value, String> {
    let mut statement = statement.clone();
    let fields = statement.as_object_mut().ok_or("a statement is not a mapping")?;
    if let (Some(suffix), Some(Value::String(sid))) = (sid_suffix, fields.get_mut("Sid")) {
        sid.push_str(suffix);
    }
    let conditions = fields
        .entry("Condition")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("a statement's `Condition` is not a mapping")?;
    let tests = conditions
        .entry(operator)
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| format!("a statement's `{operator}` condition is not a mapping"))?;
    // IAM compares condition key names case-insensitively; a second test of the same key under
    // the same operator would be OR-ed into the statement's own values, widening them.
    if tests.keys().any(|existing| existing.eq_ignore_ascii_case(key)) {
        return Err(format!(
            "an Allow statement of the session policy already tests `{key}` under `{operator}`, so the binding cannot be added to it; hint: drop that test or `bind_to_address`"
        ));
    }
    tests.insert(key.to_owned(), value);
    Ok(statement)
}
