//! A Buildkite job asks its agent for a token with the broker's audience:
//! `buildkite-agent oidc request-token --audience …`, available wherever
//! `BUILDKITE_AGENT_ACCESS_TOKEN` is set.

use crate::ci::job_token::{AskToken, Asking, Env, JobToken};

const AGENT_TOKEN_ENV: &str = "BUILDKITE_AGENT_ACCESS_TOKEN";

struct Agent;

pub fn find(env: Env<'_>) -> Option<JobToken> {
    env(AGENT_TOKEN_ENV).map(|_| JobToken::Asked(Box::new(Agent)))
}

impl AskToken for Agent {
    fn describe(&self) -> &'static str {
        "buildkite-agent oidc request-token"
    }

    fn ask<'a>(&'a self, _http: &'a reqwest::Client, audience: &'a str) -> Asking<'a> {
        Box::pin(async move {
            let output = tokio::process::Command::new("buildkite-agent")
                .args(["oidc", "request-token", "--audience", audience])
                .stdin(std::process::Stdio::null())
                .output()
                .await
                .map_err(|e| format!("cannot run buildkite-agent: {e}"))?;
            if !output.status.success() {
                let stderr = String::from_utf8_lossy(&output.stderr);
                let stderr: String = stderr.trim().chars().take(500).collect();
                return Err(format!("`buildkite-agent oidc request-token` failed ({}): {stderr}", output.status));
            }
            let token = String::from_utf8(output.stdout)
                .map_err(|_| "buildkite-agent printed a token that is not UTF-8".to_owned())?;
            let token = token.trim();
            if token.is_empty() {
                return Err(format!("{} is empty", self.describe()));
            }
            Ok(token.to_owned().into())
        })
    }
}
