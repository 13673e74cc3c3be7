#!/usr/bin/env bash
# Runs every fuzz target for SECONDS_PER_TARGET (default 30), each from a throw-away copy of its
# seed corpus (fuzz/corpus/<target>/, never written to): builds all targets once, prints each
# target's executions, fails if any target crashes, times out or runs out of memory. A failing
# input is kept under fuzz/artifacts/<target>/. See fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz from crates.io"
  cargo install cargo-fuzz --locked
fi

# A target that no longer builds (a moved path, a renamed type) fails the run here.
cargo +nightly fuzz build
host="$(rustc +nightly -vV | sed -n 's/^host: //p')"
bin="fuzz/target/$host/release"
targets="$(cargo +nightly fuzz list)"
declared="$(grep -c '^\[\[bin\]\]' fuzz/Cargo.toml)"
if [ -z "$targets" ] || [ "$(wc -l <<<"$targets")" -ne "$declared" ]; then
  echo "cargo fuzz list names $(wc -l <<<"$targets") targets; fuzz/Cargo.toml declares $declared" >&2
  exit 1
fi
for target in $targets; do
  if [ ! -x "$bin/$target" ]; then
    echo "fuzz target $target was not built" >&2
    exit 1
  fi
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

failed=()
summary=""
for target in $targets; do
  mkdir -p "$work/corpus/$target" "fuzz/artifacts/$target"
  if [ -d "fuzz/corpus/$target" ]; then
    cp -R "fuzz/corpus/$target/." "$work/corpus/$target/"
  fi
  log="$work/$target.log"
  status=ok
  # Binaries run directly: `cargo fuzz run` would check the build again for every target.
  if ! "$bin/$target" "$work/corpus/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$target/" >"$log" 2>&1; then
    status=FAILED
    failed+=("$target")
    echo "---- $target failed; the end of its log:"
    tail -n 40 "$log"
  fi
  executions="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  summary+="$(printf '%-20s %12s  %s' "$target" "${executions:-?}" "$status")"$'\n'
done

printf '%-20s %12s  %s\n' target executions result
printf '%s' "$summary"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzzing found failures in: ${failed[*]}; reproduce with cargo +nightly fuzz run TARGET fuzz/artifacts/TARGET/<file>" >&2
  exit 1
fi
