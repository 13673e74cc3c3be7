//! What a multibranch build runs for, as the build API tells it: the `SCMRevisionAction` the
//! branch project adds to each build, and its revision's head. A token's templates cannot tell
//! it (`BRANCH_NAME` is a tag's name in a tag build, `CHANGE_ID` exists only in change requests,
//! and a template naming an unset variable stops the plugin minting).
//!
//! How Jenkins writes these beans: Stapler's `Model` exports a class's own `@Exported` getters
//! and those of its `@ExportedBean` superclasses, never an interface's; `_class` names a bean's
//! class where it is not the declared type (core `Api`: `ClassAttributeBehaviour.IF_NEEDED`);
//! nested beans are hidden at the default depth, so the build is asked with a `tree` naming
//! every field read (`TREE`).

use serde::Deserialize;

use super::job_url::branch_of_item;
use crate::ci::api::Head;
use crate::ci::{DangerousTrigger, Job, bounded_fact};

/// The build's fields the head is read from, in the `tree` parameter's form.
pub const TREE: &str = "actions[revision[head[name,id,origin[name]]]]";

/// scm-api: `@ExportedBean public class SCMRevisionAction`, added to a multibranch build by
/// branch-api / workflow-multibranch (`SCMBinder`) with the revision it built.
const REVISION_ACTION: &str = "jenkins.scm.api.SCMRevisionAction";

/// scm-api: `SCMHeadOrigin.Fork`, a head from another repository (`@Exported getName()`).
const FORK: &str = "jenkins.scm.api.SCMHeadOrigin$Fork";

/// The branch sources' tag heads: their `TagSCMHead` mixin exports nothing, so only the class
/// tells a tag. git-plugin `jenkins.plugins.git.GitTagSCMHead`; github-branch-source
/// `GitHubTagSCMHead`; gitlab-branch-source `GitLabTagSCMHead`; bitbucket-branch-source
/// `BitbucketTagSCMHead`.
const TAG_HEADS: &[&str] = &[
    "jenkins.plugins.git.GitTagSCMHead",
    "org.jenkinsci.plugins.github_branch_source.GitHubTagSCMHead",
    "io.jenkins.plugins.gitlabbranchsource.GitLabTagSCMHead",
    "com.cloudbees.jenkins.plugins.bitbucket.BitbucketTagSCMHead",
];

/// The branch sources' change-request heads. scm-api's `ChangeRequestSCMHead` marks `getId()`
/// and `getTarget()` `@Exported`, but on an interface, which Stapler does not read: the class
/// tells (github-branch-source `PullRequestSCMHead` and its migration subclasses `$FixOrigin`,
/// `$FixMetadata`; gitlab-branch-source `MergeRequestSCMHead`; bitbucket-branch-source
/// `PullRequestSCMHead`). An `id`, where a head exports one, tells too.
const CHANGE_REQUEST_HEADS: &[&str] = &[
    "org.jenkinsci.plugins.github_branch_source.PullRequestSCMHead",
    "io.jenkins.plugins.gitlabbranchsource.MergeRequestSCMHead",
    "com.cloudbees.jenkins.plugins.bitbucket.PullRequestSCMHead",
];

/// The branch heads: scm-api's own `SCMHead` (no `_class`, being the declared type), git-plugin
/// `GitBranchSCMHead`, github-branch-source `BranchSCMHead`, gitlab-branch-source
/// `BranchSCMHead`, bitbucket-branch-source `BranchSCMHead`.
const BRANCH_HEADS: &[&str] = &[
    "jenkins.scm.api.SCMHead",
    "jenkins.plugins.git.GitBranchSCMHead",
    "org.jenkinsci.plugins.github_branch_source.BranchSCMHead",
    "io.jenkins.plugins.gitlabbranchsource.BranchSCMHead",
    "com.cloudbees.jenkins.plugins.bitbucket.BranchSCMHead",
];

/// core `Actionable#getAllActions` (`@Exported(name = "actions")`): every action, each `{}` or
/// `null` where the tree selects nothing of it.
#[derive(Deserialize)]
pub struct Actions {
    #[serde(default)]
    actions: Vec<Option<Action>>,
}

#[derive(Deserialize)]
struct Action {
    #[serde(rename = "_class", default)]
    class: Option<String>,
    /// scm-api: `SCMRevisionAction#getRevision()`, `@Exported @NonNull`.
    #[serde(default)]
    revision: Option<Revision>,
}

#[derive(Deserialize)]
struct Revision {
    /// scm-api: `SCMRevision#getHead()`, `@Exported @NonNull`.
    head: ScmHead,
}

#[derive(Deserialize)]
struct ScmHead {
    #[serde(rename = "_class", default)]
    class: Option<String>,
    /// scm-api: `SCMHead#getName()`, `@Exported @NonNull`: the branch, tag or `PR-7`.
    name: String,
    /// scm-api: `ChangeRequestSCMHead#getId()`, where a head's own class exports it.
    #[serde(default)]
    id: Option<String>,
    /// scm-api: `SCMHead#getOrigin()`, `@Exported @NonNull`: `SCMHeadOrigin$Default` or `$Fork`.
    #[serde(default)]
    origin: Option<Origin>,
}

#[derive(Deserialize)]
struct Origin {
    #[serde(rename = "_class", default)]
    class: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

impl Actions {
    /// The head of the build's `SCMRevisionAction`: `Head::None` without one; an error when two
    /// name different heads, or one's class is none the broker knows.
    pub fn head(self) -> Result<Head, String> {
        let mut found: Option<Head> = None;
        for action in self.actions.into_iter().flatten() {
            if action.class.as_deref() != Some(REVISION_ACTION) {
                continue;
            }
            let Some(revision) = action.revision else { continue };
            let head = revision.head.kind()?;
            match &found {
                Some(other) if *other != head => {
                    return Err("the build has two SCM revisions of different heads".into());
                }
                _ => found = Some(head),
            }
        }
        Ok(found.unwrap_or(Head::None))
    }
}

impl ScmHead {
    fn kind(self) -> Result<Head, String> {
        let name = bounded_fact(self.name);
        let class = self.class.as_deref().unwrap_or("jenkins.scm.api.SCMHead");
        let fork = self
            .origin
            .filter(|origin| origin.class.as_deref() == Some(FORK))
            .map(|origin| origin.name.map(bounded_fact).unwrap_or_default());
        let change_request = CHANGE_REQUEST_HEADS.iter().any(|known| class_is(class, known)) || self.id.is_some();
        if change_request {
            return Ok(Head::ChangeRequest { name, id: self.id.map(bounded_fact), fork });
        }
        // A branch source builds a fork's heads only as change requests; a fork that is not one
        // is none the broker knows.
        if fork.is_some() {
            return Err(format!("the build's SCM head `{name}` comes from a fork but is no change request"));
        }
        if TAG_HEADS.iter().any(|known| class_is(class, known)) {
            return Ok(Head::Tag(name));
        }
        if BRANCH_HEADS.contains(&class) {
            return Ok(Head::Branch(name));
        }
        Err(format!(
            "the build's SCM head is a `{}`, which is no branch, tag or change request known here",
            bounded_fact(class)
        ))
    }
}

/// `class` is `known` or one of its nested classes (`…PullRequestSCMHead$FixOrigin`).
fn class_is(class: &str, known: &str) -> bool {
    class.strip_prefix(known).is_some_and(|rest| rest.is_empty() || rest.starts_with('$'))
}

/// Sets what a Jenkins build runs for from its head, or why it is unknown. The head must be the
/// branch job the token's URL names (branch-api names each branch job by its head's encoded
/// name), so a `branch` claim, already held to that name, cannot disagree with it either.
pub fn apply(job: &mut Job, head: Result<&Head, &str>) -> Result<(), String> {
    let head = match head {
        Ok(head) => head,
        Err(reason) => {
            unknown(job, format!("the Jenkins API did not tell the build's SCM head: {reason}"));
            return Ok(());
        }
    };
    let name = match head {
        Head::None => {
            unknown(job, "the Jenkins API names no SCM head for this build: it is not a multibranch build".into());
            return Ok(());
        }
        Head::Branch(name) | Head::Tag(name) | Head::ChangeRequest { name, .. } => name,
    };
    let full_name = job.job_name.clone().unwrap_or_default();
    let items: Vec<&str> = full_name.split('/').collect();
    let Some((item, project)) = items.split_last().filter(|(_, project)| !project.is_empty()) else {
        return Err("the build has an SCM head, but its job URL names no multibranch project".into());
    };
    if branch_of_item(item).as_deref() != Some(name.as_str()) {
        return Err(format!("the build's SCM head `{name}` is not the branch job the token names"));
    }
    // The claims need not name a change request (the templates every build fills do not), but
    // a token that does is of one.
    let claimed_change = job.event.as_deref() == Some(super::claims::CHANGE_REQUEST_EVENT);
    if claimed_change && !matches!(head, Head::ChangeRequest { .. }) {
        return Err("the token's change-request claims disagree with the build's SCM head".into());
    }
    job.repository = project.join("/");
    job.ref_unknown = None;
    match head {
        Head::Branch(name) => set_ref(job, format!("refs/heads/{name}"), "branch"),
        Head::Tag(name) => set_ref(job, format!("refs/tags/{name}"), "tag"),
        Head::ChangeRequest { fork, .. } => {
            job.git_ref = None;
            job.ref_type = None;
            job.event = Some(super::claims::CHANGE_REQUEST_EVENT.to_owned());
            job.dangerous_trigger = Some(DangerousTrigger::Event(super::claims::CHANGE_REQUEST_EVENT.to_owned()));
            job.fork = fork.clone();
        }
        Head::None => {}
    }
    Ok(())
}

fn set_ref(job: &mut Job, git_ref: String, ref_type: &str) {
    job.git_ref = Some(git_ref);
    job.ref_type = Some(ref_type.to_owned());
    job.event = None;
    job.dangerous_trigger = None;
}

fn unknown(job: &mut Job, reason: String) {
    job.git_ref = None;
    job.ref_type = None;
    job.ref_unknown = Some(reason);
}
