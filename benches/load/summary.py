"""The load benchmark's table, from the RESULT and CPU lines run.sh left in OUT/<target>.txt.

python3 summary.py OUT PEAK_RSS_KB END_RSS_KB HEADER
"""

import sys

# openbao-jwt-login: its role has claim_mappings, so its tokens carry the job's metadata, as the
# broker's do; openbao-jwt-login-bare: the same role without them.
TARGETS = ("broker", "openbao-jwt-login", "openbao-jwt-login-bare", "openbao-token-create")


def fields(path):
    row = {}
    with open(path) as lines:
        for line in lines:
            if line.startswith(("RESULT ", "CPU ")):
                row.update(field.split("=", 1) for field in line.split()[1:])
    return row


def main(out, peak_kb, end_kb, header):
    rows = {name: fields(f"{out}/{name}.txt") for name in TARGETS}
    rate = {name: float(row["ok_rps"]) for name, row in rows.items()}
    p99 = {name: float(row["p99_ms"]) for name, row in rows.items()}

    def cpu_ms(row, process):
        seconds = float(row[f"{process}_s"])
        return f"{1000 * seconds / max(int(row['requests']), 1):.2f}" if seconds else "-"

    print(header)
    print()
    print(f"{'':24} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}   CPU ms/req: broker  OpenBao")
    for name, row in rows.items():
        print(
            f"{name:24} {rate[name]:8.0f} {float(row['p50_ms']):8.2f} {p99[name]:8.2f} {int(row['errors']):7d}"
            f"   {cpu_ms(row, 'broker'):>17} {cpu_ms(row, 'openbao'):>8}"
        )
    print()
    for login in ("openbao-jwt-login", "openbao-jwt-login-bare"):
        print(
            f"broker / {login + ':':23} req/s {rate['broker'] / rate[login]:.2f}x,"
            f" p99 {p99['broker'] / p99[login]:.2f}x"
        )
    print(
        f"broker / openbao-token-create:  {100 * rate['broker'] / rate['openbao-token-create']:.0f} %"
        " of the backend's ceiling (goal >= 85 %, judged in --layout split)"
    )
    print(
        f"openbao-jwt-login-bare / openbao-jwt-login: req/s"
        f" {rate['openbao-jwt-login-bare'] / rate['openbao-jwt-login']:.2f}x (what claim_mappings cost OpenBao)"
    )
    print(f"broker peak RSS (VmHWM): {int(peak_kb) / 1024:.1f} MiB; at the end of its run {int(end_kb) / 1024:.1f} MiB")
    elsewhere = {
        name: 100 * float(row["other_s"]) / (float(row["seconds"]) * int(row["cores"])) for name, row in rows.items()
    }
    print("the machine's CPU taken by other processes during each run: "
          + ", ".join(f"{name} {pct:.0f} %" for name, pct in elsewhere.items()))
    print()
    print("req/s: 2xx answers per second. errors: non-2xx answers and socket errors. Latency covers every")
    print("answer. CPU ms/req: each process's user+system CPU over the measured run, per request.")
    for name, row in rows.items():
        if int(row["errors"]) or int(row["ran_out"]):
            print(
                f"WARNING {name}: {row['errors']} errors (statuses {row['statuses']}),"
                f" {row['ran_out']} requests without a fresh token: not comparable"
            )
        if elsewhere[name] > 5:
            print(f"WARNING {name}: other processes took {elsewhere[name]:.0f} % of the machine's CPU: not a quiet run")


if __name__ == "__main__":
    main(*sys.argv[1:])
