"""Where the broker's CPU goes per exchange, by stage: samples from `perf record --call-graph
dwarf` on the broker (read from `perf script` on stdin), each given to the first stage whose
frames its stack holds, so a syscall counts for the stage that made it.

perf script -i broker.perf | python3 stages.py CPU_MS_PER_EXCHANGE
"""

import collections
import re
import sys

# Checked in order: the first stage whose pattern matches a frame of the stack (or the thread's
# name, for `thread:`) takes the sample.
STAGES = (
    # Both SQLite threads' names shorten to `ci-creds-sqlite` in the kernel's 15 characters.
    ("store: SQLite checkpoints", r"sqlite_checkpoint"),
    ("store: SQLite commit thread (group commit)", r"thread:ci-creds-sqlite|sqlite_batch"),
    ("fleet records (background)", r"fleet::recorder::RunnerJobs|record_runner_jobs|record_runner_refusals|fleet::window"),
    ("store: exchange's reads and queueing (sqlx, group commit task)", r"ci_creds::store|sqlx|thread:sqlx-sqlite"),
    ("verify the token (JWT, keys)", r"ci_creds::identity|jsonwebtoken|aws_lc"),
    ("decide (policy)", r"ci_creds::policy"),
    ("mint: the call to Vault (HTTP client)", r"backends::vault|vaultrs|reqwest|hyper_util::client|hyper::client|h1::role::Client"),
    ("audit trail", r"ci_creds::audit"),
    ("metrics", r"ci_creds::metrics|metrics_util|metrics::"),
    ("exchange (lifecycle)", r"ci_creds::lifecycle"),
    ("HTTP server (hyper, axum, handlers)", r"ci_creds::api|axum|tower|hyper::proto|hyper::server|hyper_util::server|ci_creds::server"),
    ("tokio scheduling and parking", r"tokio::runtime|tokio::"),
)


def samples(lines):
    thread, stack = None, []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if thread is not None:
                yield thread, stack
            thread, stack = None, []
        elif line[0] in " \t":
            parts = line.strip().split(" ", 1)
            if len(parts) == 2:
                stack.append(parts[1])
        else:
            thread = line.split()[0]
    if thread is not None:
        yield thread, stack


def main(cpu_ms):
    by_stage, total = collections.Counter(), 0
    patterns = [(name, re.compile(pattern)) for name, pattern in STAGES]
    for thread, stack in samples(sys.stdin):
        total += 1
        text = f"thread:{thread}\n" + "\n".join(stack)
        stage = next((name for name, pattern in patterns if pattern.search(text)), f"other ({thread})")
        by_stage[stage] += 1
    cpu_ms = float(cpu_ms)
    print(f"the broker's CPU per exchange by stage ({total} samples; {cpu_ms:.3f} ms an exchange in all):")
    for stage, count in by_stage.most_common():
        share = count / max(total, 1)
        print(f"  {stage:64} {1000 * share * cpu_ms:6.0f} µs {100 * share:5.1f} %")


if __name__ == "__main__":
    main(*sys.argv[1:])
