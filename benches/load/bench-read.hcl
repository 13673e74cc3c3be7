# The one Vault policy both the broker's role and OpenBao's JWT role grant.
path "secret/data/bench/*" {
  capabilities = ["read"]
}
