//! The per-role inline policy that makes ended jobs' STS sessions useless: `Deny *` for the
//! source identities of ended jobs, each statement named after the moment its sessions have all
//! expired so any broker replica can prune it from IAM alone; or, when the role's inline-policy
//! budget would overflow, a cut-off on `aws:TokenIssueTime`. Pure: IAM I/O is in `iam.rs`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::policy::AWS_MAX_SESSION;

/// The inline policy's name on every target role.
pub const POLICY_NAME: &str = "ci-creds-revoked";
/// IAM's limit for all inline policies of one role together, whitespace not counted.
pub const ROLE_INLINE_BUDGET: usize = 10_240;
/// Entries are kept this long past their sessions' expiry, in case AWS's clock is behind ours.
pub const PRUNE_GRACE_SECONDS: i64 = 60;
/// Expiries are rounded up to this many seconds so that jobs ending close together share one
/// statement, which keeps the document small.
const BUCKET_SECONDS: i64 = 60;
const IDENTITIES_SID: &str = "CiCredsUntil";
const CUTOFF_SID: &str = "CiCredsCutoffUntil";

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DenyList {
    /// Source identities of ended jobs, by the unix second after which their sessions are dead.
    identities: BTreeMap<i64, BTreeSet<String>>,
    /// Every session issued before this unix second is denied: the fallback when the list
    /// would not fit. Any session it covers is dead `AWS_MAX_SESSION` later.
    cutoff: Option<i64>,
    /// Statements someone else added to this policy: kept as they are, never pruned.
    foreign: Vec<Value>,
}

impl DenyList {
    /// Reads the document as IAM holds it (already URL-decoded). A statement the broker did not
    /// write is kept untouched.
    pub fn parse(document: &str) -> Result<Self, String> {
        let doc: Value = serde_json::from_str(document).map_err(|e| format!("not JSON: {e}"))?;
        let statements = match &doc["Statement"] {
            Value::Array(statements) => statements.clone(),
            Value::Null => Vec::new(),
            single => vec![single.clone()],
        };
        let mut list = Self::default();
        for statement in statements {
            if !list.read_own(&statement) {
                list.foreign.push(statement);
            }
        }
        Ok(list)
    }

    fn read_own(&mut self, statement: &Value) -> bool {
        let sid = statement["Sid"].as_str().unwrap_or_default();
        if let Some(until) = sid.strip_prefix(CUTOFF_SID).and_then(|n| n.parse::<i64>().ok()) {
            let at = statement["Condition"]["DateLessThan"]["aws:TokenIssueTime"].as_str();
            let Some(at) = at.and_then(|at| OffsetDateTime::parse(at, &Rfc3339).ok()) else { return false };
            let cutoff = at.unix_timestamp();
            if until != cutoff + AWS_MAX_SESSION.as_secs() as i64 {
                return false;
            }
            self.cutoff = self.cutoff.max(Some(cutoff));
            return true;
        }
        if let Some(until) = sid.strip_prefix(IDENTITIES_SID).and_then(|n| n.parse::<i64>().ok()) {
            let identities: Vec<String> = match &statement["Condition"]["StringEquals"]["aws:SourceIdentity"] {
                Value::String(one) => vec![one.clone()],
                Value::Array(many) => many.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
                _ => return false,
            };
            self.identities.entry(until).or_default().extend(identities);
            return true;
        }
        false
    }

    /// Adds what `other` holds (a copy this process wrote, in case IAM still serves an older one).
    pub fn merge(&mut self, other: &DenyList) {
        for (until, identities) in &other.identities {
            self.identities.entry(*until).or_default().extend(identities.iter().cloned());
        }
        self.cutoff = self.cutoff.max(other.cutoff);
        for statement in &other.foreign {
            if !self.foreign.contains(statement) {
                self.foreign.push(statement.clone());
            }
        }
    }

    /// Denies the sessions of `identity`, which are all dead by `expires_at` (unix seconds).
    /// False when nothing needed to change.
    pub fn add(&mut self, identity: &str, expires_at: i64, now: i64) -> bool {
        let until = round_up(expires_at, BUCKET_SECONDS);
        if until + PRUNE_GRACE_SECONDS < now {
            return false;
        }
        if self.identities.range(until..).any(|(_, ids)| ids.contains(identity)) {
            return false;
        }
        self.identities.entry(until).or_default().insert(identity.to_owned())
    }

    /// Drops entries whose sessions have all expired. True when something was dropped.
    pub fn prune(&mut self, now: i64) -> bool {
        let before = (self.identities.len(), self.cutoff);
        self.identities.retain(|until, _| until + PRUNE_GRACE_SECONDS >= now);
        if self.cutoff.is_some_and(|cutoff| cutoff + AWS_MAX_SESSION.as_secs() as i64 + PRUNE_GRACE_SECONDS < now) {
            self.cutoff = None;
        }
        before != (self.identities.len(), self.cutoff)
    }

    /// Replaces the list with "deny every session issued before `now`", rounded up to the next
    /// second so a session issued within the current second is covered too.
    pub fn fall_back(&mut self, now: OffsetDateTime) {
        let seconds = now.unix_timestamp() + i64::from(now.nanosecond() > 0);
        self.identities.clear();
        self.cutoff = Some(seconds);
    }

    pub fn is_empty(&self) -> bool {
        self.identities.is_empty() && self.cutoff.is_none() && self.foreign.is_empty()
    }

    /// The earliest moment (unix seconds) at which `prune` would drop something.
    pub fn next_expiry(&self) -> Option<i64> {
        let identities = self.identities.keys().next().map(|until| until + PRUNE_GRACE_SECONDS + 1);
        let cutoff = self.cutoff.map(|c| c + AWS_MAX_SESSION.as_secs() as i64 + PRUNE_GRACE_SECONDS + 1);
        identities.into_iter().chain(cutoff).min()
    }

    /// The policy document, compact, statements in a stable order.
    pub fn document(&self) -> String {
        let mut statements = Vec::new();
        if let Some(cutoff) = self.cutoff {
            let at = OffsetDateTime::from_unix_timestamp(cutoff)
                .ok()
                .and_then(|at| at.format(&Rfc3339).ok())
                .unwrap_or_default();
            let until = cutoff + AWS_MAX_SESSION.as_secs() as i64;
            statements.push(deny(format!("{CUTOFF_SID}{until}"), json!({"DateLessThan": {"aws:TokenIssueTime": at}})));
        }
        for (until, identities) in &self.identities {
            let condition = json!({"StringEquals": {"aws:SourceIdentity": identities}});
            statements.push(deny(format!("{IDENTITIES_SID}{until}"), condition));
        }
        statements.extend(self.foreign.iter().cloned());
        json!({"Version": "2012-10-17", "Statement": statements}).to_string()
    }

    pub fn identities(&self) -> impl Iterator<Item = &str> {
        self.identities.values().flatten().map(String::as_str)
    }

    pub fn cutoff(&self) -> Option<i64> {
        self.cutoff
    }
}

/// How IAM counts a policy against the budget: every character but whitespace.
pub fn policy_size(document: &str) -> usize {
    document.chars().filter(|c| !c.is_whitespace()).count()
}

fn deny(sid: String, condition: Value) -> Value {
    json!({"Sid": sid, "Effect": "Deny", "Action": "*", "Resource": "*", "Condition": condition})
}

fn round_up(value: i64, step: i64) -> i64 {
    value.div_euclid(step) * step + if value.rem_euclid(step) == 0 { 0 } else { step }
}

#[cfg(test)]
#[path = "deny_list_tests.rs"]
mod tests;
