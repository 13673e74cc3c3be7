#!/usr/bin/env bash
# Crash benchmark: the suite's crash scenario (tests/it/support/crash.rs) for many cycles against
# the release build. Jobs exchange for two Vault roles from several workers at once while the
# broker is killed with SIGKILL at random moments and restarted; after each kill the Vault job
# tokens whose accessors the store does not hold are counted (left unrecorded by the kill) and
# watched until they are gone (the recovery bound); then every job ends by its signed webhook, the
# revocation queue drains, and the job tokens still alive in OpenBao are counted.
#
#   benches/crash/run.sh [--cycles 50] [--workers 8] [--grace 5] [--uptime-ms 300,1500]
#
# CI_CREDS_BIN=PATH: measure that binary instead of building this checkout's release build.
# Prints one JSON line, labelled by the commit measured.
set -euo pipefail
cd "$(dirname "$0")/../.."

CYCLES=50
WORKERS=8
GRACE=5
UPTIME_MS=300,1500
while [ $# -gt 0 ]; do
  case "$1" in
    --cycles) CYCLES=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --grace) GRACE=$2; shift 2 ;;
    --uptime-ms) UPTIME_MS=$2; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

TARGET=${CARGO_TARGET_DIR:-target}
if [ -z "${CI_CREDS_BIN:-}" ]; then
  cargo build --release --locked --bin ci-creds
  CI_CREDS_BIN=$TARGET/release/ci-creds
fi
# A copy: rebuilding meanwhile cannot replace the binary the scenario restarts.
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp "$CI_CREDS_BIN" "$WORK/ci-creds"

export CI_CREDS_BIN=$WORK/ci-creds
export CRASH_CYCLES=$CYCLES CRASH_WORKERS=$WORKERS CRASH_GRACE_SECONDS=$GRACE CRASH_UPTIME_MS=$UPTIME_MS
export CRASH_COMMIT=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src migrations || echo "+changes")
cargo test --locked --test it -- --ignored --exact crash_safety::many_kill_cycles_under_load --nocapture 2>&1 \
  | grep --line-buffered -E '^\{.*"crash_bench"|^test |panicked|assert'
