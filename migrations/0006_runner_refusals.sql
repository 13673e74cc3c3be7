-- Refused exchanges counted against the job's runner as far as it is known ('' when not), by
-- reason (replayed, job_ended, ci_unavailable, runner_reused, runner_unknown, policy), one row a
-- runner a reason a day (days since the epoch, UTC): bounded by runners and days, not attempts.
CREATE TABLE runner_refusals (
    issuer     TEXT   NOT NULL,
    runner_key TEXT   NOT NULL,
    reason     TEXT   NOT NULL,
    day        BIGINT NOT NULL,
    attempts   BIGINT NOT NULL,
    last_seen  BIGINT NOT NULL,
    keep_until BIGINT NOT NULL,
    PRIMARY KEY (issuer, runner_key, reason, day)
);
CREATE INDEX runner_refusals_day ON runner_refusals (day);
CREATE INDEX runner_refusals_keep_until ON runner_refusals (keep_until);
