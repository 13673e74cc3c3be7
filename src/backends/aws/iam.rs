//! The deny list's home: the `ci-creds-revoked` inline policy of each target role, changed by
//! read-modify-write under that role's lock so concurrent job ends never lose one another.

use std::borrow::Cow;

use time::OffsetDateTime;

use super::deny_list::{DenyList, POLICY_NAME, ROLE_INLINE_BUDGET, policy_size};
use super::error::classify;
use super::{AwsBackend, NAME, RoleState};
use crate::backends::Error;
use crate::clock;

/// A role whose deny list looked empty is looked at again after this long anyway: another
/// replica may have written to it.
const RECHECK_SECONDS: i64 = 600;

impl AwsBackend {
    /// Adds `identity` (sessions dead by `expires_at`) to the role's deny list, pruning what
    /// expired, and falls back to a token-issue-time cut-off when the role's inline policies
    /// would exceed IAM's budget.
    pub(super) async fn deny(&self, role_arn: &str, identity: &str, expires_at: i64) -> Result<(), Error> {
        let role = role_name(role_arn)?;
        let lock = self.role_state(role);
        let mut state = lock.lock().await;
        let now = OffsetDateTime::now_utc();
        let mut list = self.read(role, &state).await?;
        let pruned = list.prune(now.unix_timestamp());
        if !list.add(identity, expires_at, now.unix_timestamp()) && !pruned {
            return Ok(());
        }
        let others = self.others_size(role).await?;
        if others + policy_size(&list.document()) > ROLE_INLINE_BUDGET {
            list.fall_back(now);
            tracing::warn!(
                role = %role, others_size = others, budget = ROLE_INLINE_BUDGET,
                "the deny list no longer fits the role's inline-policy budget: every session of this role issued before now is denied (aws:TokenIssueTime)"
            );
        }
        self.write(role, &list, &mut state).await
    }

    /// Drops expired entries from every known role's deny list; deletes a list left empty.
    pub(super) async fn prune_all(&self) {
        let roles: Vec<String> = self.roles.lock().unwrap_or_else(|p| p.into_inner()).keys().cloned().collect();
        for role in roles {
            if let Err(error) = self.prune_role(&role).await {
                tracing::warn!(%role, %error, "cannot prune the role's deny list; retrying at the next sweep");
            }
        }
    }

    async fn prune_role(&self, role: &str) -> Result<(), Error> {
        let lock = self.role_state(role);
        let mut state = lock.lock().await;
        let now = clock::now();
        if state.next_check > now {
            return Ok(());
        }
        let mut list = self.read(role, &state).await?;
        if list.prune(now) {
            tracing::info!(%role, remaining = list.identities().count(), "pruned expired sessions from the deny list");
            self.write(role, &list, &mut state).await?;
        } else {
            state.remember(list, now);
        }
        Ok(())
    }

    /// The role's deny list as IAM has it, merged with what this process last wrote (IAM reads
    /// may lag behind writes).
    async fn read(&self, role: &str, state: &RoleState) -> Result<DenyList, Error> {
        let answer = self.iam.get_role_policy().role_name(role).policy_name(POLICY_NAME).send().await;
        let mut list = match answer {
            Ok(answer) => DenyList::parse(&decode(&answer.policy_document)).map_err(|reason| Error::Refused {
                backend: NAME,
                code: "MalformedDenyList".into(),
                reason: format!("{POLICY_NAME} on role {role}: {reason}"),
            })?,
            Err(error) if error.as_service_error().is_some_and(|e| e.is_no_such_entity_exception()) => {
                DenyList::default()
            }
            Err(error) => return Err(classify(error)),
        };
        if let Some(written) = &state.written {
            list.merge(written);
        }
        Ok(list)
    }

    async fn write(&self, role: &str, list: &DenyList, state: &mut RoleState) -> Result<(), Error> {
        if list.is_empty() {
            let deleted = self.iam.delete_role_policy().role_name(role).policy_name(POLICY_NAME).send().await;
            match deleted {
                Ok(_) => {}
                Err(error) if error.as_service_error().is_some_and(|e| e.is_no_such_entity_exception()) => {}
                Err(error) => return Err(classify(error)),
            }
        } else {
            self.iam
                .put_role_policy()
                .role_name(role)
                .policy_name(POLICY_NAME)
                .policy_document(list.document())
                .send()
                .await
                .map_err(classify)?;
        }
        state.remember(list.clone(), clock::now());
        Ok(())
    }

    /// The size of the role's other inline policies, which share the budget with the deny list.
    async fn others_size(&self, role: &str) -> Result<usize, Error> {
        let mut size = 0;
        let mut marker = None;
        loop {
            let page =
                self.iam.list_role_policies().role_name(role).set_marker(marker).send().await.map_err(classify)?;
            for name in page.policy_names.iter().filter(|name| *name != POLICY_NAME) {
                let policy =
                    self.iam.get_role_policy().role_name(role).policy_name(name).send().await.map_err(classify)?;
                size += policy_size(&decode(&policy.policy_document));
            }
            match page.marker {
                Some(next) if page.is_truncated => marker = Some(next),
                _ => return Ok(size),
            }
        }
    }
}

impl RoleState {
    fn remember(&mut self, list: DenyList, now: i64) {
        self.next_check = list.next_expiry().unwrap_or(i64::MAX).min(now + RECHECK_SECONDS);
        self.written = if list.is_empty() { None } else { Some(list) };
    }
}

/// IAM answers policy documents URL-encoded (RFC 3986).
fn decode(document: &str) -> Cow<'_, str> {
    percent_encoding::percent_decode_str(document).decode_utf8_lossy()
}

/// The role's name, as IAM's role-policy calls want it: the ARN's last path segment.
pub(super) fn role_name(role_arn: &str) -> Result<&str, Error> {
    role_arn
        .split_once(":role/")
        .and_then(|(_, path)| path.rsplit('/').next())
        .filter(|name| !name.is_empty())
        .ok_or_else(|| Error::Refused {
            backend: NAME,
            code: "InvalidRoleArn".into(),
            reason: format!("`{role_arn}` is not an IAM role ARN"),
        })
}
