"""What one exchange costs the broker in counts that do not drift with the machine: context
switches, syscalls by kind, SQLite statement steps and mallocs, from `perf stat -x,` over a run
of REQUESTS exchanges.

python3 counts.py PERF_CSV REQUESTS NAME
"""

import sys


def main(path, requests, name):
    requests = max(int(requests), 1)
    counts = {}
    with open(path) as lines:
        for line in lines:
            parts = line.strip().split(",")
            if len(parts) < 3 or line.startswith("#") or not parts[0].replace(".", "").isdigit():
                continue
            event = parts[2].split(":")[-1].removeprefix("sys_enter_")
            counts[event] = float(parts[0])
    print(f"{name}: per exchange, over {requests} exchanges")
    for event, label in (
        ("context-switches", "context switches"),
        ("cpu-migrations", "CPU migrations"),
        ("sys_enter", "syscalls"),
        ("sqlite3_step", "SQLite statement steps"),
        ("malloc", "mallocs"),
    ):
        if event in counts:
            print(f"  {label:24} {counts.pop(event) / requests:8.2f}")
    by_kind = sorted(counts.items(), key=lambda item: -item[1])
    print("  syscalls by kind: " + ", ".join(f"{event} {count / requests:.2f}" for event, count in by_kind if count))


if __name__ == "__main__":
    main(*sys.argv[1:])
