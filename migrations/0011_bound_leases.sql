-- The address block a lease's credential is bound to (`bind_to_address`), as `a.b.c.d/n`; NULL
-- for an unbound credential. The sweeper deletes a Vault token role bound to a block once no
-- lease of that block is pending or active and unexpired: OpenBao refuses to renew a token whose
-- role is gone, and the broker renews each token once to end its mint grace.
ALTER TABLE leases ADD COLUMN bound_to TEXT;
-- Only bound leases are indexed: an unbound exchange writes no index entry.
CREATE INDEX leases_bound_to ON leases (bound_to) WHERE bound_to IS NOT NULL;
