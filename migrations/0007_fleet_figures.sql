-- The fleet's figures as last computed (JSON), shared by every replica: one computes them at a
-- time and the others publish what it wrote, so the fleet is aggregated once per interval, not
-- once per replica.
CREATE TABLE fleet_figures (
    name        TEXT   NOT NULL PRIMARY KEY,
    computed_at_ms BIGINT NOT NULL,
    took_ms     BIGINT NOT NULL,
    figures     TEXT   NOT NULL
);
