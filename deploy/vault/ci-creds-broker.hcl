# The Vault (OpenBao) policy of the ci-creds broker's own token: exactly the paths the broker
# calls with it, and nothing else. Load it with
#   bao policy write ci-creds-broker deploy/vault/ci-creds-broker.hcl
# and give it to the broker's login (an AppRole's or Kubernetes role's token_policies), with the
# token role below made by the operator (docs/vault.md, "The broker's own Vault access").
#
# Not here, on purpose:
# - The dynamic secrets a role names (`secret_path`): the broker reads them with the job's own
#   token, so the job token's policies must allow them, never the broker's.
# - `auth/token/create` and `auth/token/create-orphan`: job tokens are made only through the
#   token role, whose `allowed_policies` bound what the broker can grant. `create-orphan` would
#   need `sudo`, and a sudo caller may give a token any policy.
# - Logging in (`auth/approle/login`, `auth/kubernetes/login`) needs no token.
# - `sys/health`, read for readiness, needs no token.

# Mint each job's token against the orphan token role `ci-creds-job` (`[vault] token_role`):
# orphans outlive the broker's login token, which is replaced at every login. Rename the role
# here and in the config together.
path "auth/token/create/ci-creds-job" {
  capabilities = ["update"]
}

# Roles with `bind_to_address`: a job's token is minted through a token role whose
# `token_bound_cidrs` is the job's address block, made on demand with the settings of the role
# above (read once) and named `ci-creds-job-bound-<block>`, e.g. ci-creds-job-bound-127-0-0-5-32
# (docs/vault.md, "Tokens bound to the job's address"). Writing token roles is a power: a role
# the broker writes may allow any policy but `root`; pin `allowed_policies` with
# `allowed_parameters` here if the broker's host is less trusted than Vault's operators.
path "auth/token/roles/ci-creds-job" {
  capabilities = ["read"]
}

path "auth/token/roles/ci-creds-job-bound-*" {
  capabilities = ["create", "update", "delete"]
}

# The sweeper lists token roles to delete the bound ones no live lease uses (the list holds role
# names only).
path "auth/token/roles" {
  capabilities = ["list"]
}

path "auth/token/create/ci-creds-job-bound-*" {
  capabilities = ["update"]
}

# Revoke a job's token by its accessor when the job ends (the revocation queue).
path "auth/token/revoke-accessor" {
  capabilities = ["update"]
}

# Extend a job's token by its accessor once its lease is stored (crash-safe minting: tokens are
# created with a short TTL and extended only when the broker can revoke them).
path "auth/token/renew-accessor" {
  capabilities = ["update"]
}

# Read the broker's own token's TTL and renewability, to know when to renew it.
path "auth/token/lookup-self" {
  capabilities = ["read"]
}

# Renew the broker's own token before half its TTL has passed.
path "auth/token/renew-self" {
  capabilities = ["update"]
}

# `ci-creds check` asks what this token may do on the paths above (Vault's default policy grants
# this too; the broker's token needs no other part of it).
path "sys/capabilities-self" {
  capabilities = ["update"]
}
