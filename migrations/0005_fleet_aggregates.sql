-- The fleet report is aggregated where the judged jobs are: the window's totals, tiers and days
-- read one index (seen_at first, then every column they group or sum), and each runner's last
-- job is found in an index ordered by runner then time. Both replace narrower indexes.
DROP INDEX runner_jobs_seen;
DROP INDEX runner_jobs_runner;
CREATE INDEX runner_jobs_seen_tier ON runner_jobs (seen_at, tier, runner_environment, single_use, roles_granted);
CREATE INDEX runner_jobs_runner_seen ON runner_jobs (issuer, runner_key, seen_at);
