-- Portable SQL: the same migrations run on SQLite and PostgreSQL.
-- Tokens already exchanged: a token is accepted once, until it expires.
CREATE TABLE exchanged_tokens (
    issuer     TEXT    NOT NULL,
    token_id   TEXT    NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (issuer, token_id)
);
CREATE INDEX exchanged_tokens_expiry ON exchanged_tokens (expires_at);

-- One minted credential. A lease is written `pending` before the backend is asked, so nothing
-- can be minted that the broker could not later revoke.
CREATE TABLE leases (
    id         TEXT    PRIMARY KEY,
    issuer     TEXT    NOT NULL,
    job_id     TEXT    NOT NULL,
    role       TEXT    NOT NULL,
    backend    TEXT    NOT NULL,
    handle     TEXT,
    state      TEXT    NOT NULL CHECK (state IN ('pending', 'active', 'revoking', 'revoked', 'expired', 'failed')),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX leases_job ON leases (issuer, job_id);
CREATE INDEX leases_state ON leases (state, expires_at);
