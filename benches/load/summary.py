"""The load benchmark's table, from the RESULT, CPU and RSS lines run.sh left in
OUT/<target>.r<round>.txt: each figure the median over the rounds.

python3 summary.py OUT ROUNDS HEADER
"""

import os
import statistics
import sys

# openbao-jwt-login: its role has claim_mappings, so its tokens carry the job's metadata, as the
# broker's do; openbao-jwt-login-bare: the same role without them. broker-vs: a second broker
# build (--vs), measured in the same rounds.
TARGETS = ("broker", "broker-vs", "openbao-jwt-login", "openbao-jwt-login-bare", "openbao-token-create")
LOGINS = ("openbao-jwt-login", "openbao-jwt-login-bare", "openbao-token-create")


def fields(path):
    row = {}
    with open(path) as lines:
        for line in lines:
            if line.startswith(("RESULT ", "CPU ", "RSS ")):
                row.update(field.split("=", 1) for field in line.split()[1:])
    return row


def cpu_ms(row, process):
    seconds = float(row[f"{process}_s"])
    return 1000 * seconds / max(int(row["requests"]), 1) if seconds else None


def elsewhere(row):
    return 100 * float(row["other_s"]) / (float(row["seconds"]) * int(row["cores"]))


def main(out, rounds, header):
    runs = {}
    for name in TARGETS:
        found = [f"{out}/{name}.r{n}.txt" for n in range(1, int(rounds) + 1)]
        found = [fields(path) for path in found if os.path.exists(path)]
        if found:
            runs[name] = found

    def median(name, figure):
        values = [figure(row) for row in runs[name]]
        values = [value for value in values if value is not None]
        return statistics.median(values) if values else None

    rate = {name: median(name, lambda row: float(row["ok_rps"])) for name in runs}
    p99 = {name: median(name, lambda row: float(row["p99_ms"])) for name in runs}

    print(header)
    print()
    print(f"{'median of ' + rounds + ' round(s)':24} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}"
          "   CPU ms/req: broker  OpenBao   each round's req/s")
    for name in runs:
        broker, bao = median(name, lambda row: cpu_ms(row, "broker")), median(name, lambda row: cpu_ms(row, "openbao"))
        errors = sum(int(row["errors"]) for row in runs[name])
        each = " ".join(f"{float(row['ok_rps']):.0f}" for row in runs[name])
        print(
            f"{name:24} {rate[name]:8.0f} {median(name, lambda row: float(row['p50_ms'])):8.2f} {p99[name]:8.2f}"
            f" {errors:7d}   {broker and f'{broker:.3f}' or '-':>17} {bao and f'{bao:.3f}' or '-':>8}   {each}"
        )
    print()
    for broker in ("broker", "broker-vs"):
        if broker not in runs:
            continue
        for login in LOGINS:
            if login in runs:
                print(
                    f"{broker} / {login + ':':23} req/s {rate[broker] / rate[login]:.2f}x,"
                    f" p99 {p99[broker] / p99[login]:.2f}x"
                )
    if "broker-vs" in runs:
        ours, theirs = (median(name, lambda row: cpu_ms(row, "broker")) for name in ("broker", "broker-vs"))
        print(f"broker / broker-vs: req/s {rate['broker'] / rate['broker-vs']:.2f}x, broker CPU per exchange"
              f" {ours / theirs:.2f}x ({ours:.3f} against {theirs:.3f} ms)")
        ratios = [
            cpu_ms(ours_row, "broker") / cpu_ms(theirs_row, "broker")
            for ours_row, theirs_row in zip(runs["broker"], runs["broker-vs"])
        ]
        print("  CPU per exchange, round by round: " + ", ".join(f"{ratio:.2f}x" for ratio in ratios))
    if {"openbao-jwt-login", "openbao-jwt-login-bare"} <= runs.keys():
        print(
            f"openbao-jwt-login-bare / openbao-jwt-login: req/s"
            f" {rate['openbao-jwt-login-bare'] / rate['openbao-jwt-login']:.2f}x (what claim_mappings cost OpenBao)"
        )
    for broker in ("broker", "broker-vs"):
        if broker in runs:
            peak = max(int(row["peak_kb"]) for row in runs[broker])
            print(f"{broker} peak RSS (VmHWM): {peak / 1024:.1f} MiB; at the end of its last run"
                  f" {int(runs[broker][-1]['end_kb']) / 1024:.1f} MiB")
    print("the machine's CPU taken by other processes during each run (worst round): "
          + ", ".join(f"{name} {max(elsewhere(row) for row in runs[name]):.0f} %" for name in runs))
    print()
    print("req/s: 2xx answers per second. errors: non-2xx answers and socket errors. Latency covers every")
    print("answer. CPU ms/req: each process's user+system CPU over the measured run, per request.")
    for name in runs:
        for n, row in enumerate(runs[name], 1):
            if int(row["errors"]) or int(row["ran_out"]):
                print(
                    f"WARNING {name} round {n}: {row['errors']} errors (statuses {row['statuses']}),"
                    f" {row['ran_out']} requests without a fresh token: not comparable"
                )
            if elsewhere(row) > 5:
                print(f"WARNING {name} round {n}: other processes took {elsewhere(row):.0f} % of the machine's CPU:"
                      " not a quiet run")


if __name__ == "__main__":
    main(*sys.argv[1:])
