//! When the keeper renews, logs in again or looks up, for each kind of token: decided from what
//! Vault last said and how long ago, without calling Vault.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use secrecy::SecretString;

use super::{Action, Life, Session, Step, VaultLogin, not_logged_in};
use crate::backends::VaultCredentials;
use crate::net::HttpClient;

fn login(can_log_in: bool) -> VaultLogin {
    let credentials = if can_log_in {
        VaultCredentials::Kubernetes { mount: "kubernetes".into(), role: "r".into(), token_file: PathBuf::from("/t") }
    } else {
        VaultCredentials::Token(SecretString::from("s.static"))
    };
    VaultLogin::new(credentials, "http://127.0.0.1:8200", HttpClient::new().unwrap(), Duration::from_secs(2)).unwrap()
}

/// A token Vault described `ago` with `ttl` seconds left (0: never expires).
fn session(ttl: u64, renewable: bool, ago: Duration) -> Session {
    let mut life = Life::new(ttl, renewable, Duration::from_secs(ttl));
    life.as_of = Instant::now() - ago;
    Session { header: not_logged_in(), generation: 1, life }
}

fn acts(step: Step) -> Option<Action> {
    match step {
        Step::Act(action) => Some(action),
        Step::Wait(_) => None,
    }
}

#[test]
fn each_token_is_kept_alive_the_way_it_can_be() {
    let s = Duration::from_secs;
    // (can log in, ttl, renewable, seen ago, what is due)
    let cases: &[(bool, u64, bool, Duration, Option<Action>)] = &[
        // Renewed once a third of its TTL has passed, whatever the login.
        (false, 30, true, s(9), None),
        (false, 30, true, s(11), Some(Action::Renew)),
        (true, 30, true, s(11), Some(Action::Renew)),
        // Not renewable (or renewed up to its max TTL): a new login at half its life …
        (true, 30, false, s(14), None),
        (true, 30, false, s(16), Some(Action::LogIn)),
        // … and at once once it has expired.
        (true, 30, true, s(31), Some(Action::LogIn)),
        // A static token that cannot be renewed is looked up (and warned about) at half its life.
        (false, 30, false, s(14), None),
        (false, 30, false, s(16), Some(Action::LookUp)),
        // A token that never expires is looked up every 5 minutes, to notice a revocation.
        (false, 0, false, s(299), None),
        (false, 0, false, s(301), Some(Action::LookUp)),
    ];
    for (can_log_in, ttl, renewable, ago, due) in cases {
        let got = acts(login(*can_log_in).next_step(&session(*ttl, *renewable, *ago)));
        assert_eq!(got, *due, "can log in {can_log_in}, ttl {ttl}, renewable {renewable}, seen {ago:?} ago");
    }
}

#[test]
fn a_token_not_yet_known_is_looked_up_or_logged_in_for_at_once() {
    let unknown = Session { header: not_logged_in(), generation: 0, life: Life::unknown() };
    assert_eq!(acts(login(false).next_step(&unknown)), Some(Action::LookUp));
    assert_eq!(acts(login(true).next_step(&unknown)), Some(Action::LogIn));
}
