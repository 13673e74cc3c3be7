-- Jobs the broker has seen (by an exchange) or heard the end of (by a webhook or self-revoke).
-- An ended job never obtains credentials again; its record outlives any token it could present.
CREATE TABLE jobs (
    issuer        TEXT    NOT NULL,
    job_id        TEXT    NOT NULL,
    repository    TEXT,
    state         TEXT    NOT NULL CHECK (state IN ('active', 'ended')),
    ended_by      TEXT,
    ended_at      BIGINT,
    first_seen_at BIGINT NOT NULL,
    -- Unix seconds after which the record may be pruned.
    keep_until    BIGINT NOT NULL,
    PRIMARY KEY (issuer, job_id)
);
CREATE INDEX jobs_keep_until ON jobs (keep_until);

-- Webhook deliveries already applied, so a redelivery is acknowledged and not applied twice.
CREATE TABLE webhook_deliveries (
    source      TEXT    NOT NULL,
    delivery_id TEXT    NOT NULL,
    received_at BIGINT NOT NULL,
    PRIMARY KEY (source, delivery_id)
);
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at);

-- The revocation queue lives on the lease itself: state 'revoking' is the durable intent.
ALTER TABLE leases ADD COLUMN attempts BIGINT NOT NULL DEFAULT 0;
ALTER TABLE leases ADD COLUMN last_error TEXT;
-- Unix milliseconds: the earliest next attempt, and until when a worker holds the lease.
ALTER TABLE leases ADD COLUMN next_attempt_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE leases ADD COLUMN claimed_until BIGINT NOT NULL DEFAULT 0;
-- When the job's end was recorded (unix milliseconds), to measure the exposure window.
ALTER TABLE leases ADD COLUMN revoke_requested_at BIGINT;
CREATE INDEX leases_queue ON leases (state, next_attempt_at);
