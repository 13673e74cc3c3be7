-- Runners as identities. `runners`: each runner a single-use tier's job ran on, keyed by issuer
-- and runner key (GitHub runner id/name, Buildkite agent id, GitLab runner manager), with the
-- first job it served; `reused` (0/1) once a second job came. Shared by every replica.
CREATE TABLE runners (
    issuer       TEXT   NOT NULL,
    runner_key   TEXT   NOT NULL,
    first_job_id TEXT   NOT NULL,
    reused       BIGINT NOT NULL DEFAULT 0,
    first_seen   BIGINT NOT NULL,
    last_seen    BIGINT NOT NULL,
    keep_until   BIGINT NOT NULL,
    PRIMARY KEY (issuer, runner_key)
);
CREATE INDEX runners_keep_until ON runners (keep_until);
-- Every job the broker judged, granted or refused, with the runner it ran on as far as known
-- (unix seconds): what `ci-creds runners list` and `runners report` are computed from.
CREATE TABLE runner_jobs (
    issuer             TEXT   NOT NULL,
    job_id             TEXT   NOT NULL,
    repository         TEXT   NOT NULL,
    runner_key         TEXT,
    runner_name        TEXT,
    runner_group       TEXT,
    runner_environment TEXT,
    tier               TEXT,
    single_use         BIGINT NOT NULL DEFAULT 0,
    roles_granted      BIGINT NOT NULL DEFAULT 0,
    refused            BIGINT NOT NULL DEFAULT 0,
    seen_at            BIGINT NOT NULL,
    keep_until         BIGINT NOT NULL,
    PRIMARY KEY (issuer, job_id)
);
CREATE INDEX runner_jobs_seen ON runner_jobs (seen_at);
CREATE INDEX runner_jobs_runner ON runner_jobs (issuer, runner_key);
