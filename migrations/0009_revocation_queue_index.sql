-- The revocation queue's index holds only the leases being revoked, the only ones its claim reads
-- (`state = 'revoking'`, by `next_attempt_at`). Every lease was in it before: each exchange wrote
-- an entry for its pending lease and moved it when the lease became active, a page more in each of
-- the exchange's two transactions.
DROP INDEX leases_queue;
CREATE INDEX leases_queue ON leases (state, next_attempt_at) WHERE state = 'revoking';
