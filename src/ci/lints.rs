//! What `ci-creds policy check` warns of in a rule for one CI, beyond what it warns of in every
//! rule: each CI's folder says it in its `Ci` record, and `policy/lint*.rs` reads it from there,
//! naming no CI itself.

/// One CI's part in the policy lints.
pub struct RuleLints {
    /// What pins a job of this CI where the repository's name does not, for a rule that names
    /// only this CI's issuers. Such a rule is not asked for `repository_id` either.
    pub pinning_claims: Option<PinningClaims>,
    /// The rule condition that pins this CI's jobs where its tokens carry no repository id
    /// (Jenkins: `job_name`): a rule with it is pinned as far as the CI allows.
    pub pinned_by: Option<&'static str>,
    /// The `event` and `ref` of a job this CI runs for a pull or merge request: a rule whose
    /// conditions admit one of every CI's is reachable from code proposed by anyone.
    pub change_request: Option<ChangeRequest>,
    /// Why a rule on `ref`, `ref_type` or `event` cannot be judged for this CI's issuers that
    /// have no `[ci_api.<issuer>]`, where their tokens alone cannot tell those facts.
    pub refs_need_api: Option<RefsNeedApi>,
}

impl RuleLints {
    /// A CI that adds nothing to the lints of every rule.
    pub const NONE: RuleLints =
        RuleLints { pinning_claims: None, pinned_by: None, change_request: None, refs_need_api: None };
}

/// Claims of which a rule must name one.
pub struct PinningClaims {
    pub claims: &'static [&'static str],
    pub message: &'static str,
    pub hint: &'static str,
}

pub struct ChangeRequest {
    pub event: &'static str,
    pub git_ref: &'static str,
}

/// The warning's reason, after the issuers it names, and its hint.
pub struct RefsNeedApi {
    pub why: &'static str,
    pub hint: &'static str,
}
