//! The Vault backend on its own, against a real OpenBao: revoking is idempotent.

use ci_creds::backends::vault::{VaultBackend, VaultConfig};
use ci_creds::backends::{Backend, RevokeHandle};
use ci_creds::net::HttpClient;
use secrecy::SecretString;

use crate::support::bao::{Bao, ROOT_TOKEN};

#[tokio::test(flavor = "multi_thread")]
async fn an_accessor_vault_no_longer_knows_counts_as_revoked() {
    let bao = Bao::start().await;
    let config = VaultConfig {
        address: bao.address.clone(),
        token_env: "UNUSED".into(),
        timeout_seconds: 5,
        token_role: None,
        auth: Default::default(),
        mint_grace_seconds: 30,
    };
    let vault =
        VaultBackend::new(&config, &SecretString::from(ROOT_TOKEN), HttpClient::new().unwrap()).expect("backend");
    let gone = RevokeHandle::Vault { accessor: "no-such-accessor".into() };
    vault.revoke(&gone).await.expect("an unknown accessor is already revoked");

    let mut stopped = bao;
    stopped.stop();
    assert!(vault.revoke(&gone).await.is_err(), "an unreachable Vault is not a confirmation");
}
