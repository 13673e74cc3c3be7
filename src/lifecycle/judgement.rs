//! One exchange's judgement, as one step: the runner facts its token lacks, whether the job
//! still runs, and the policy's decision on the requested roles.
//!
//! The CI's API is asked at most once (`liveness.rs`): before deciding when the decision needs
//! what only it may tell (runner facts neither the token nor a start webhook gave, or what a
//! build runs for, for a CI whose API tells it), else only once the policy has granted, so that a
//! refusal by policy costs no call. A liveness left unknown is settled by the issuer's
//! `on_unavailable` after the decision, so that a refusal by policy is told as such.

use super::liveness::Checked;
use super::request::ExchangeRequest;
use super::{Error, Exchange};
use crate::ci::{Job, RunnerFacts};
use crate::policy::{Decision, Role};
use crate::store::JobCiFacts;

/// What the judgement of an exchange found, for the rest of the exchange.
pub(super) struct Judgement<'p> {
    /// Every requested role, granted.
    pub roles: Vec<&'p Role>,
    /// What the CI's API told of the job, written with its leases.
    pub ci: JobCiFacts,
    /// `running` or `unknown`, told in the audit event; `None` when the CI was not asked.
    pub liveness: Option<&'static str>,
}

impl Exchange {
    /// Gathers the runner facts and liveness of `job` and decides its requested roles. Facts
    /// found are merged into the job beneath its token's: the runner a start webhook recorded
    /// first, and the CI's answer only where facts are still missing.
    pub(super) async fn judge(&self, job: &mut Job, request: &ExchangeRequest) -> Result<Judgement<'_>, Error> {
        let roles = request.roles.as_slice();
        let wants_runner = self.policy.wants_runner_facts(job, roles);
        let api = self.ci_apis.get(&job.issuer);
        let mut still_wants_runner = false;
        if wants_runner {
            self.merge_recorded_runner(job).await?;
            match api {
                // Asked again: the webhook's runner may have told what the token lacked.
                Some(_) => still_wants_runner = self.policy.wants_runner_facts(job, roles),
                None => {
                    job.runner.unavailable.get_or_insert_with(|| NO_CI_API.to_owned());
                }
            }
        }
        let asked_first = if wants_runner || api.is_some_and(|api| api.tells_head()) {
            Some(self.check_running(job, still_wants_runner).await?)
        } else {
            None
        };
        let roles = match self.policy.decide(job, roles) {
            Decision::Granted(roles) => roles,
            Decision::Denied(denials) => {
                tracing::info!(issuer = %job.issuer, job_id = %job.job_id, repository = %job.repository, "exchange denied");
                return Err(Error::Denied(denials));
            }
        };
        // A bound role asked without an address is refused before the CI is asked or the token
        // is spent.
        if request.address.is_none()
            && let Some(role) = roles.iter().find(|role| role.bind.is_some())
        {
            return Err(Error::AddressUnknown { role: role.name.clone() });
        }
        let checked = match asked_first {
            Some(checked) => checked,
            None => self.check_running(job, false).await?,
        };
        let Checked { facts, liveness, .. } = self.settle_liveness(job, checked)?;
        Ok(Judgement { roles, ci: facts, liveness })
    }

    /// The runner a start webhook (or an earlier answer of the CI's API) named for the job.
    async fn merge_recorded_runner(&self, job: &mut Job) -> Result<(), Error> {
        let recorded = self.store.job_runner(&job.issuer, &job.job_id).await?;
        // Written by the broker from bounded facts; an unreadable record counts as none.
        if let Some(facts) = recorded.and_then(|text| serde_json::from_str::<RunnerFacts>(&text).ok()) {
            job.runner.merge(facts.to_runner());
        }
        Ok(())
    }
}

const NO_CI_API: &str = "no CI API is configured for this issuer, and no webhook named the runner";
