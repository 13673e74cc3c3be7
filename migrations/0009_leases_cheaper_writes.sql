-- Leases rebuilt, with the same columns and rows, so that an exchange's two writes to them cost
-- less:
-- * the state's CHECK is a chain of comparisons: SQLite evaluated `state IN (six values)` by
--   building a temporary B-tree on every insert and every change of state;
-- * the revocation queue's index holds only the leases being revoked, the only ones its claim
--   reads (`state = 'revoking'`, by `next_attempt_at`): every lease was in it, so each exchange
--   wrote an entry for its pending lease and moved it when the lease became active.
-- SQLite cannot change a table's CHECK in place, so the table is rebuilt as SQLite documents; the
-- same statements run on PostgreSQL.
CREATE TABLE leases_rebuilt (
    id                  TEXT    PRIMARY KEY,
    issuer              TEXT    NOT NULL,
    job_id              TEXT    NOT NULL,
    role                TEXT    NOT NULL,
    backend             TEXT    NOT NULL,
    handle              TEXT,
    state               TEXT    NOT NULL CHECK (state = 'pending' OR state = 'active' OR state = 'revoking'
                                             OR state = 'revoked' OR state = 'expired' OR state = 'failed'),
    created_at          BIGINT  NOT NULL,
    expires_at          BIGINT  NOT NULL,
    updated_at          BIGINT  NOT NULL,
    attempts            BIGINT  NOT NULL DEFAULT 0,
    last_error          TEXT,
    next_attempt_at     BIGINT  NOT NULL DEFAULT 0,
    claimed_until       BIGINT  NOT NULL DEFAULT 0,
    revoke_requested_at BIGINT
);
INSERT INTO leases_rebuilt (id, issuer, job_id, role, backend, handle, state, created_at, expires_at, updated_at,
                            attempts, last_error, next_attempt_at, claimed_until, revoke_requested_at)
SELECT id, issuer, job_id, role, backend, handle, state, created_at, expires_at, updated_at,
       attempts, last_error, next_attempt_at, claimed_until, revoke_requested_at
FROM leases;
DROP TABLE leases;
ALTER TABLE leases_rebuilt RENAME TO leases;
CREATE INDEX leases_job ON leases (issuer, job_id);
CREATE INDEX leases_state ON leases (state, expires_at);
CREATE INDEX leases_queue ON leases (state, next_attempt_at) WHERE state = 'revoking';
