//! The broker's own Vault login, kept alive: the current token behind a lock read once per call,
//! and a task that renews it, logs in again when it cannot be renewed further, and says when a
//! static token is going to expire.
//!
//! Vault's endpoints, as the OpenBao API docs define them (website/content/api-docs/auth/):
//! - `POST auth/<mount>/login` with `{role_id, secret_id}` (approle.mdx, "Login with AppRole")
//!   or `{role, jwt}` (kubernetes.mdx, "Login"): `auth.client_token`, `auth.lease_duration`
//!   (seconds), `auth.renewable`.
//! - `GET auth/token/lookup-self` (token.mdx, "Lookup a token (Self)"): `data.ttl` (seconds left,
//!   0 for a token that never expires), `data.creation_ttl`, `data.renewable`.
//! - `POST auth/token/renew-self` with `{increment}` (token.mdx, "Renew a token (Self)"):
//!   `auth.lease_duration`, the TTL granted. Vault grants less than the increment asked once the
//!   token's max TTL is near, and never renews past it (commands/token/renew: "Lease renewal will
//!   fail if ... the token has already reached its maximum TTL").
//!
//! A 403 for the broker's token means Vault no longer takes it (expired or revoked): with a login
//! method the broker logs in once more and retries the call once ([`VaultLogin::with_token`]).

use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::header::HeaderValue;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use url::Url;

use super::{NAME, Refusal, answered};
use crate::backends::config::read_secret_file;
use crate::backends::{Error, SecretId, VaultCredentials};
use crate::net::HttpClient;

/// Renewal comes once a third of the TTL has passed: well before half, so one failed attempt
/// still leaves time for another.
const RENEW_AFTER_FRACTION: u32 = 3;
/// The TTL gauge is brought up to date at least this often between renewals.
const GAUGE_REFRESH: Duration = Duration::from_secs(10);
/// A token that never expires is looked up this often, to notice that it was revoked.
const NON_EXPIRING_CHECK: Duration = Duration::from_secs(300);
/// A static token Vault refused is looked up again this often (the error is logged each time).
const DEAD_TOKEN_CHECK: Duration = Duration::from_secs(60);
/// Retries after a failed renewal or login start here and double up to the maximum.
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(30);
/// A 403 answered to an exchange leads to at most one new login this often: a refusal that is
/// not about an expired token (a policy missing a path) must not turn into a login per exchange.
const REFUSAL_LOGIN_COOLDOWN: Duration = Duration::from_secs(10);
/// Larger than any login, lookup or renewal answer.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// The broker's Vault token as calls use it; cheap to clone.
#[derive(Clone)]
pub struct VaultLogin {
    inner: Arc<Inner>,
}

struct Inner {
    http: HttpClient,
    timeout: Duration,
    method: Method,
    lookup_self: Url,
    renew_self: Url,
    current: RwLock<Arc<Session>>,
    /// Held while logging in, so concurrent refusals log in once; when a refusal last led to a
    /// login.
    login: tokio::sync::Mutex<Option<Instant>>,
}

enum Method {
    /// `[vault] token_env`: kept alive if renewable, never replaced.
    Token,
    AppRole {
        url: Url,
        role_id: SecretString,
        secret_id: SecretId,
    },
    Kubernetes {
        url: Url,
        role: String,
        token_file: PathBuf,
    },
}

/// One token of the broker's, and what Vault last said of its life.
struct Session {
    /// The token as the `X-Vault-Token` header (marked sensitive: never printed).
    header: HeaderValue,
    /// Which login this token came from: a refusal names it, so that only the first of many
    /// concurrent refusals logs in again.
    generation: u64,
    life: Life,
}

/// What Vault last said of a token's life, and when.
#[derive(Clone, Copy, Debug)]
struct Life {
    /// Unknown until the first lookup of a token read from the environment, or after Vault
    /// refused a login's token (then the next step is a new login).
    known: bool,
    as_of: Instant,
    /// `None`: the token never expires.
    ttl: Option<Duration>,
    renewable: bool,
    /// The increment renewals ask for: the TTL the token was issued with.
    increment: Duration,
}

impl Life {
    fn unknown() -> Self {
        Self {
            known: false,
            as_of: Instant::now(),
            ttl: Some(Duration::ZERO),
            renewable: false,
            increment: Duration::ZERO,
        }
    }

    /// A life of `ttl` seconds from now, 0 meaning forever (as Vault writes it).
    fn new(ttl_seconds: u64, renewable: bool, increment: Duration) -> Self {
        let ttl = (ttl_seconds > 0).then(|| Duration::from_secs(ttl_seconds));
        Self { known: true, as_of: Instant::now(), ttl, renewable, increment }
    }

    /// A token Vault refuses.
    fn dead() -> Self {
        Self {
            known: true,
            as_of: Instant::now(),
            ttl: Some(Duration::ZERO),
            renewable: false,
            increment: Duration::ZERO,
        }
    }

    fn remaining(&self) -> Option<Duration> {
        self.ttl.map(|ttl| (self.as_of + ttl).saturating_duration_since(Instant::now()))
    }

    /// Sets the gauges, once Vault has described the token.
    fn record(&self) {
        if !self.known {
            return;
        }
        crate::metrics::vault_token(self.remaining().map(|left| left.as_secs_f64()), self.renewable);
    }
}

#[derive(Serialize)]
struct AppRoleLogin<'a> {
    role_id: &'a str,
    secret_id: &'a str,
}

#[derive(Serialize)]
struct KubernetesLogin<'a> {
    role: &'a str,
    jwt: &'a str,
}

#[derive(Serialize)]
struct RenewSelf {
    /// Seconds, as a duration string.
    increment: String,
}

#[derive(Deserialize)]
struct AuthAnswer {
    auth: Auth,
}

#[derive(Deserialize)]
struct Auth {
    #[serde(default)]
    client_token: Option<SecretString>,
    lease_duration: u64,
    renewable: bool,
}

#[derive(Deserialize)]
struct LookupAnswer {
    data: Lookup,
}

#[derive(Deserialize)]
struct Lookup {
    ttl: u64,
    #[serde(default)]
    creation_ttl: u64,
    #[serde(default)]
    renewable: bool,
}

/// What a failed call to Vault leaves the keeper to do.
enum Failure {
    /// Vault refused the token itself: it is dead.
    Forbidden(Error),
    /// Anything else (unreachable, an outage, an answer that does not parse): try again later.
    Other(Error),
}

impl Failure {
    fn error(&self) -> &Error {
        match self {
            Self::Forbidden(error) | Self::Other(error) => error,
        }
    }

    fn into_error(self) -> Error {
        match self {
            Self::Forbidden(error) | Self::Other(error) => error,
        }
    }
}

impl VaultLogin {
    /// The login `credentials` describe, against Vault at `address`. A login method logs in
    /// here: a refusal is an error (wrong credentials do not start a broker); an unreachable Vault
    /// is not (the broker starts, and the keeper logs in once Vault answers).
    pub async fn start(
        credentials: VaultCredentials,
        address: &str,
        http: HttpClient,
        timeout: Duration,
    ) -> Result<Self, Error> {
        let login = Self::new(credentials, address, http, timeout)?;
        if login.can_log_in() {
            let _logging_in = login.inner.login.lock().await;
            match login.log_in().await {
                Ok(()) => {}
                Err(Failure::Other(Error::Unavailable { reason, .. })) => {
                    tracing::warn!(%reason, "cannot log in to Vault yet; retrying in the background");
                }
                Err(failure) => return Err(failure.into_error()),
            }
        }
        Ok(login)
    }

    /// A login that holds `credentials` without calling Vault.
    pub fn new(
        credentials: VaultCredentials,
        address: &str,
        http: HttpClient,
        timeout: Duration,
    ) -> Result<Self, Error> {
        let address = address.trim_end_matches('/');
        let url = |path: &str| {
            crate::net::check_url_scheme(&format!("{address}/v1/{path}")).map_err(|reason| Error::Refused {
                backend: NAME,
                code: "config".into(),
                reason: format!("vault.address: {reason}"),
            })
        };
        let (method, header) = match credentials {
            VaultCredentials::Token(token) => (Method::Token, token_header(&token)?),
            VaultCredentials::AppRole { mount, role_id, secret_id } => {
                (Method::AppRole { url: url(&format!("auth/{mount}/login"))?, role_id, secret_id }, not_logged_in())
            }
            VaultCredentials::Kubernetes { mount, role, token_file } => {
                (Method::Kubernetes { url: url(&format!("auth/{mount}/login"))?, role, token_file }, not_logged_in())
            }
        };
        let session = Session { header, generation: 0, life: Life::unknown() };
        Ok(Self {
            inner: Arc::new(Inner {
                http,
                timeout,
                method,
                lookup_self: url("auth/token/lookup-self")?,
                renew_self: url("auth/token/renew-self")?,
                current: RwLock::new(Arc::new(session)),
                login: tokio::sync::Mutex::new(None),
            }),
        })
    }

    /// Whether this login can obtain a new token (not a static one from the environment).
    pub fn can_log_in(&self) -> bool {
        !matches!(self.inner.method, Method::Token)
    }

    fn session(&self) -> Arc<Session> {
        self.inner.current.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn replace(&self, session: Session) {
        *self.inner.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(session);
    }

    /// Runs `call` with the broker's token. When Vault answers 403 for it and a new token can be
    /// had (another caller's login meanwhile, or one now), runs `call` once more with that.
    pub async fn with_token<T, F, Fut>(&self, call: F) -> Result<T, Error>
    where
        F: Fn(HeaderValue) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let session = self.session();
        match call(session.header.clone()).await {
            Err(error) if is_forbidden(&error) && self.replaced_after_refusal(session.generation).await => {
                call(self.session().header.clone()).await
            }
            other => other,
        }
    }

    /// Whether a token newer than `generation` is there to retry with: another caller's login,
    /// or one made now (at most once per cooldown).
    async fn replaced_after_refusal(&self, generation: u64) -> bool {
        if !self.can_log_in() {
            return false;
        }
        let mut last_refusal_login = self.inner.login.lock().await;
        if self.session().generation != generation {
            return true;
        }
        if last_refusal_login.is_some_and(|at| at.elapsed() < REFUSAL_LOGIN_COOLDOWN) {
            return false;
        }
        *last_refusal_login = Some(Instant::now());
        tracing::info!("Vault refused the broker's token; logging in again");
        match self.log_in().await {
            Ok(()) => true,
            Err(failure) => {
                tracing::warn!(error = %failure.error(), "logging in to Vault again failed");
                false
            }
        }
    }

    /// Logs in with the method's credentials and makes the new token current.
    async fn log_in(&self) -> Result<(), Failure> {
        let inner = &self.inner;
        let (url, answer) = match &inner.method {
            Method::Token => return Err(Failure::Other(refused("login", "a static token cannot log in again"))),
            Method::AppRole { url, role_id, secret_id } => {
                let secret_id = match secret_id {
                    SecretId::Value(value) => value.clone(),
                    SecretId::File(path) => {
                        read_secret_file(path).map_err(|reason| Failure::Other(refused("login", &reason)))?
                    }
                };
                let body = AppRoleLogin { role_id: role_id.expose_secret(), secret_id: secret_id.expose_secret() };
                (url, inner.http.post_json(url, &body, inner.timeout, MAX_ANSWER_BYTES).await)
            }
            Method::Kubernetes { url, role, token_file } => {
                let jwt = read_secret_file(token_file).map_err(|reason| Failure::Other(refused("login", &reason)))?;
                let body = KubernetesLogin { role, jwt: jwt.expose_secret() };
                (url, inner.http.post_json(url, &body, inner.timeout, MAX_ANSWER_BYTES).await)
            }
        };
        let auth = parse_auth(answer, url.path())?;
        let token = auth.client_token.ok_or_else(|| {
            Failure::Other(Error::Unavailable { backend: NAME, reason: "the login answer has no client_token".into() })
        })?;
        let life = Life::new(auth.lease_duration, auth.renewable, Duration::from_secs(auth.lease_duration));
        let generation = self.session().generation + 1;
        self.replace(Session { header: token_header(&token).map_err(Failure::Other)?, generation, life });
        life.record();
        tracing::info!(ttl_seconds = auth.lease_duration, renewable = auth.renewable, "logged in to Vault");
        Ok(())
    }

    /// Keeps the broker's token alive for as long as the process runs.
    pub async fn keep_alive(self) {
        let mut retry = RETRY_FIRST;
        loop {
            let session = self.session();
            session.life.record();
            let wait = match self.next_step(&session) {
                Step::Wait(wait) => wait,
                Step::Act(action) => match self.act(action, &session).await {
                    Ok(()) => {
                        retry = RETRY_FIRST;
                        let life = self.session().life;
                        if !self.can_log_in() && !life.renewable && life.remaining().is_some_and(|left| !left.is_zero())
                        {
                            warn_static_expiry(&life);
                        }
                        continue;
                    }
                    Err(failure) => {
                        self.after_failure(action, failure, &session);
                        let wait = match session.life.remaining() {
                            Some(left) if !left.is_zero() => retry.min(left / 2),
                            _ => retry,
                        };
                        retry = (retry * 2).min(RETRY_MAX);
                        wait.max(Duration::from_millis(200))
                    }
                },
            };
            tokio::time::sleep(wait.min(GAUGE_REFRESH)).await;
        }
    }

    /// What to do next with `session`'s token, or how long to wait first.
    fn next_step(&self, session: &Session) -> Step {
        let life = &session.life;
        let since = life.as_of.elapsed();
        let (due, action) = match (life.known, life.ttl, life.renewable, self.can_log_in()) {
            (false, _, _, true) => return Step::Act(Action::LogIn),
            (false, _, _, false) => return Step::Act(Action::LookUp),
            (true, None, _, _) => (NON_EXPIRING_CHECK, Action::LookUp),
            (true, Some(ttl), _, true) if ttl.saturating_sub(since).is_zero() => return Step::Act(Action::LogIn),
            (true, Some(ttl), true, _) => (ttl / RENEW_AFTER_FRACTION, Action::Renew),
            // Not renewable (or renewed up to its max TTL): a new login with half the life left.
            (true, Some(ttl), false, true) => (ttl / 2, Action::LogIn),
            // A dead static token: looked up now and then, in case it was a fluke.
            (true, Some(ttl), false, false) if ttl.is_zero() => (DEAD_TOKEN_CHECK, Action::LookUp),
            // A static token that cannot be renewed: looked up again (and warned about) with half
            // of what was left, so the warnings come closer together as the expiry nears.
            (true, Some(ttl), false, false) => ((ttl / 2).max(Duration::from_secs(1)), Action::LookUp),
        };
        match due.checked_sub(since) {
            Some(wait) if !wait.is_zero() => Step::Wait(wait),
            _ => Step::Act(action),
        }
    }

    async fn act(&self, action: Action, session: &Session) -> Result<(), Failure> {
        match action {
            Action::LookUp => {
                let lookup = self.look_up(&session.header).await?;
                let increment = Duration::from_secs(lookup.creation_ttl.max(lookup.ttl));
                // Vault still calls a token renewable once renewals are capped by its max TTL:
                // what the last renewal showed stands.
                let renewable = lookup.renewable && (session.life.renewable || !session.life.known);
                self.update_life(session, Life::new(lookup.ttl, renewable, increment));
                Ok(())
            }
            Action::Renew => {
                let increment = session.life.increment;
                let auth = self.renew(&session.header, increment).await?;
                // Less than asked: the token's max TTL is near and it cannot be renewed past it.
                let capped = Duration::from_secs(auth.lease_duration) < increment;
                if capped && self.can_log_in() {
                    return self.log_in_replacing(session).await;
                }
                self.update_life(session, Life::new(auth.lease_duration, auth.renewable && !capped, increment));
                Ok(())
            }
            Action::LogIn => self.log_in_replacing(session).await,
        }
    }

    /// Logs in, unless another caller already replaced `session`'s token.
    async fn log_in_replacing(&self, session: &Session) -> Result<(), Failure> {
        let _logging_in = self.inner.login.lock().await;
        if self.session().generation == session.generation {
            self.log_in().await?;
        }
        Ok(())
    }

    /// Records `life` for `session`'s token, unless another login replaced it meanwhile.
    fn update_life(&self, session: &Session, life: Life) {
        let mut current = self.inner.current.write().unwrap_or_else(PoisonError::into_inner);
        if current.generation == session.generation {
            *current = Arc::new(Session { header: session.header.clone(), generation: session.generation, life });
            drop(current);
            life.record();
        }
    }

    fn after_failure(&self, action: Action, failure: Failure, session: &Session) {
        let remaining_seconds = session.life.remaining().map(|left| left.as_secs());
        match failure {
            Failure::Forbidden(error) | Failure::Other(error) if action == Action::LogIn => {
                tracing::warn!(%error, ?remaining_seconds, "logging in to Vault failed; retrying");
            }
            // A login method's token Vault refuses: the next step is a new login.
            Failure::Forbidden(error) | Failure::Other(error @ Error::Refused { .. }) if self.can_log_in() => {
                tracing::warn!(%error, "Vault refused the broker's token; logging in again");
                self.update_life(session, Life::unknown());
            }
            Failure::Forbidden(error) => {
                // Nothing brings a static token back: said on every check.
                self.update_life(session, Life::dead());
                tracing::error!(
                    %error,
                    "Vault refuses the broker's token (expired or revoked): every exchange for a Vault role fails \
                     until the broker is given a new token; [vault.auth] method = \"approle\" or \"kubernetes\" \
                     logs in again by itself"
                );
            }
            Failure::Other(error) => {
                tracing::warn!(%error, ?remaining_seconds, "keeping the broker's Vault token alive failed; retrying");
            }
        }
    }

    async fn look_up(&self, header: &HeaderValue) -> Result<Lookup, Failure> {
        let inner = &self.inner;
        let answer = inner
            .http
            .get_with_secret_header(&inner.lookup_self, ("X-Vault-Token", header), inner.timeout, MAX_ANSWER_BYTES)
            .await;
        let (status, body) = answer.map_err(|reason| Failure::Other(unavailable(&reason)))?;
        check_status(status, &body)?;
        let lookup: LookupAnswer = serde_json::from_slice(&body)
            .map_err(|e| Failure::Other(unavailable(&format!("the token lookup's answer does not parse: {e}"))))?;
        Ok(lookup.data)
    }

    async fn renew(&self, header: &HeaderValue, increment: Duration) -> Result<Auth, Failure> {
        let inner = &self.inner;
        let body = RenewSelf { increment: format!("{}s", increment.as_secs()) };
        let answer = inner
            .http
            .post_json_with_secret_header(
                &inner.renew_self,
                ("X-Vault-Token", header),
                &body,
                inner.timeout,
                MAX_ANSWER_BYTES,
            )
            .await;
        parse_auth(answer, inner.renew_self.path())
    }
}

enum Step {
    Wait(Duration),
    Act(Action),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    LookUp,
    Renew,
    LogIn,
}

fn warn_static_expiry(life: &Life) {
    let Some(remaining) = life.remaining() else { return };
    let expires_at = OffsetDateTime::now_utc() + remaining;
    let expires_at = expires_at.format(&Rfc3339).unwrap_or_default();
    tracing::warn!(
        %expires_at,
        remaining_seconds = remaining.as_secs(),
        "the broker's Vault token cannot be renewed: every exchange for a Vault role fails once it expires; \
         give the broker a renewable token, or log in with [vault.auth] method = \"approle\" or \"kubernetes\""
    );
}

/// A login, lookup or renewal answer: `auth` on success; a 403 is the token's death.
fn parse_auth(answer: Result<(StatusCode, Vec<u8>), String>, path: &str) -> Result<Auth, Failure> {
    let (status, body) = answer.map_err(|reason| Failure::Other(unavailable(&reason)))?;
    check_status(status, &body)?;
    let parsed: AuthAnswer = serde_json::from_slice(&body)
        .map_err(|e| Failure::Other(unavailable(&format!("the answer of {path} does not parse: {e}"))))?;
    Ok(parsed.auth)
}

fn check_status(status: StatusCode, body: &[u8]) -> Result<(), Failure> {
    if status.is_success() {
        return Ok(());
    }
    let errors = serde_json::from_slice::<Refusal>(body).unwrap_or_default().errors;
    let error = answered(status.as_u16(), &errors);
    Err(if status == StatusCode::FORBIDDEN { Failure::Forbidden(error) } else { Failure::Other(error) })
}

/// Whether `error` is Vault's 403, as [`answered`] writes it.
fn is_forbidden(error: &Error) -> bool {
    matches!(error, Error::Refused { code, .. } if code == "HTTP 403")
}

fn token_header(token: &SecretString) -> Result<HeaderValue, Error> {
    let mut header = HeaderValue::from_str(token.expose_secret())
        .map_err(|_| refused("config", "the Vault token is not a valid header value"))?;
    header.set_sensitive(true);
    Ok(header)
}

/// The header before the first login: Vault refuses it, so a call made then fails as one made
/// with an expired token does, and logs in.
fn not_logged_in() -> HeaderValue {
    let mut header = HeaderValue::from_static("not-logged-in");
    header.set_sensitive(true);
    header
}

fn refused(code: &str, reason: &str) -> Error {
    Error::Refused { backend: NAME, code: code.into(), reason: reason.into() }
}

fn unavailable(reason: &str) -> Error {
    Error::Unavailable { backend: NAME, reason: reason.into() }
}

#[cfg(test)]
#[path = "login_tests.rs"]
mod tests;
