#!/usr/bin/env bash
# The fleet at fleet scale on a serving broker: seeds JOBS judged jobs into a store
# (benches/fleet_report.rs --keep, the store's own write path), starts an OpenBao dev server, a dev
# issuer and the broker on that store, then scrapes /metrics every 200 ms from the broker's start
# until its fleet gauges appear and for 10 s more. Prints each scrape's time (median and max, while
# the fleet's figures were being computed and after) and the broker's RSS at start, and its peak
# (VmHWM) once the figures are out. With JOBS 0 it is the broker with no judged job, the baseline
# the memory goal is judged against.
#
#   benches/fleet_scrape.sh JOBS [--store postgres://…]   (default: SQLite in a temp dir)
#
# CI_CREDS_BIN=PATH: run that broker binary (default: target/debug/ci-creds, built here).
# FLEET_BENCH_SEEDED=1 with --store: the PostgreSQL database is seeded already.
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${1:?usage: benches/fleet_scrape.sh JOBS [--store URL]}
shift
STORE_URL=
while [ $# -gt 0 ]; do
  case "$1" in
    --store) STORE_URL=$2; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_for() { # WHAT URL: until URL answers 2xx, at most 30 s
  for _ in $(seq 150); do
    curl -fsS -o /dev/null "$2" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "$1 did not start; logs in $WORK" >&2
  exit 1
}
rss_kib() { awk -v k="$2" '$1 == k ":" { print $2 }' "/proc/$1/status"; }

BIN=${CI_CREDS_BIN:-target/debug/ci-creds}
[ -n "${CI_CREDS_BIN:-}" ] || cargo build --locked --quiet --bin ci-creds
cp "$BIN" "$WORK/ci-creds"
BIN=$WORK/ci-creds

# The store, seeded through the store's own write path.
if [ -z "$STORE_URL" ]; then
  mkdir -p "$WORK/store"
  STORE_URL="sqlite://$WORK/store/store.db"
  cargo test --locked --quiet --bench fleet_report -- --bench "$JOBS" --keep "$WORK/store" --seed-only
elif [ "${FLEET_BENCH_SEEDED:-0}" != 1 ]; then
  FLEET_BENCH_URL=$STORE_URL cargo test --locked --quiet --bench fleet_report -- --bench "$JOBS" --seed-only
fi

ROOT_TOKEN=fleet-scrape-root
BAO_PORT=$(free_port)
BROKER_PORT=$(free_port)
bao server -dev -dev-no-store-token -dev-root-token-id="$ROOT_TOKEN" -dev-listen-address="127.0.0.1:$BAO_PORT" \
  >"$WORK/bao.log" 2>&1 &
PIDS+=($!)
wait_for OpenBao "http://127.0.0.1:$BAO_PORT/v1/sys/health"
"$BIN" dev issuer --dir "$WORK/issuer" --listen 127.0.0.1:0 >"$WORK/issuer.out" 2>"$WORK/issuer.log" &
PIDS+=($!)
for _ in $(seq 75); do [ -s "$WORK/issuer.out" ] && break; sleep 0.2; done
mkdir -p "$WORK/policy"
cat >"$WORK/config.toml" <<EOF
listen = "127.0.0.1:$BROKER_PORT"
audience = "ci-creds-fleet-bench"
policy_dir = "$PWD/benches/load/policy"

[store]
url = "$STORE_URL"

[[issuers]]
name = "github"
kind = "github"
issuer = "$(cat "$WORK/issuer.out")"

[vault]
address = "http://127.0.0.1:$BAO_PORT"
token_env = "FLEET_BENCH_VAULT_TOKEN"
EOF

FLEET_BENCH_VAULT_TOKEN=$ROOT_TOKEN RUST_LOG=warn "$BIN" serve --config "$WORK/config.toml" 2>"$WORK/broker.log" &
BROKER=$!
PIDS+=("$BROKER")
wait_for "the broker" "http://127.0.0.1:$BROKER_PORT/readyz"
RSS_START=$(rss_kib "$BROKER" VmRSS)
STARTED=$(date +%s.%N)

# Scrape until the gauges appear, then 10 s more.
: >"$WORK/during" >"$WORK/after"
PHASE=during
DONE_AT=
while :; do
  TIME=$(curl -fsS -o "$WORK/metrics" -w '%{time_total}' "http://127.0.0.1:$BROKER_PORT/metrics")
  echo "$TIME" >>"$WORK/$PHASE"
  if [ "$PHASE" = during ] && grep -q '^ci_creds_runner_hygiene{' "$WORK/metrics"; then
    PHASE=after
    DONE_AT=$(date +%s.%N)
  fi
  if [ -n "$DONE_AT" ] && [ "$(echo "$(date +%s.%N) - $DONE_AT > 10" | bc)" = 1 ]; then
    break
  fi
  sleep 0.2
done

stats() { # FILE: n, median and max in ms
  sort -n "$1" | awk '{ t[NR] = $1 * 1000 } END { if (NR == 0) { print "n 0"; exit }
    printf "n %d, median %.1f ms, max %.1f ms", NR, t[int((NR + 1) / 2)], t[NR] }'
}
echo "fleet scrape, $JOBS judged jobs ($(echo "$STORE_URL" | cut -d: -f1)):"
echo "  figures out $(echo "$DONE_AT - $STARTED" | bc | xargs printf '%.1f') s after the broker was ready"
echo "  scrapes while they were computed: $(stats "$WORK/during")"
echo "  scrapes after: $(stats "$WORK/after")"
echo "  broker RSS at start $((RSS_START / 1024)) MiB; peak $(($(rss_kib "$BROKER" VmHWM) / 1024)) MiB," \
  "now $(($(rss_kib "$BROKER" VmRSS) / 1024)) MiB"
grep '^ci_creds_runner_hygiene{' "$WORK/metrics" | sed 's/^/  /'
