-- The CI's API: where it answers for a job (JSON, from the job's verified token), when the
-- reconciler last asked it, and which replica is asking now (unix milliseconds).
ALTER TABLE jobs ADD COLUMN ci_api_locator TEXT;
ALTER TABLE jobs ADD COLUMN last_asked_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN ask_claimed_until BIGINT NOT NULL DEFAULT 0;
-- The runner the job ran on, as JSON {id, name, group, labels, source}, from the CI's API or a
-- job start or completion webhook.
ALTER TABLE jobs ADD COLUMN runner TEXT;
CREATE INDEX jobs_reconcile ON jobs (state, issuer, last_asked_at);
-- Each issuer's CI API call budget, shared by every replica: milli-calls left when last
-- refilled (unix ms), and until when the CI asked for no calls (unix ms).
CREATE TABLE ci_api_budgets (
    issuer       TEXT   PRIMARY KEY,
    calls_milli  BIGINT NOT NULL,
    refilled_at  BIGINT NOT NULL,
    paused_until BIGINT NOT NULL DEFAULT 0
);
