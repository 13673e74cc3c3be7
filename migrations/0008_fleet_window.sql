-- The fleet report kept up to date as judged jobs are recorded, so that reading it costs what it
-- shows (runners, hours, tiers), never a pass over the jobs. Maintained by src/store/fleet_window.rs
-- in the same transaction as each write to `runner_jobs`.
--
-- A runner is grouped as the report groups it, by issuer and `runner`: 'k:' and its key where a
-- key is known, else 'n:' and its name, else '-' (the jobs whose runner nobody told).

-- What an upsert of a judged job changed, for the maintenance to read back: how many times the
-- job was judged (1: new), and the group it was counted in when a later judgement told more of
-- its runner (its key, name or group), else NULL.
ALTER TABLE runner_jobs ADD COLUMN judged BIGINT NOT NULL DEFAULT 1;
ALTER TABLE runner_jobs ADD COLUMN told_more_from TEXT;
-- A runner known by name alone has its jobs found by name.
CREATE INDEX runner_jobs_name_seen ON runner_jobs (issuer, runner_name, seen_at) WHERE runner_key IS NULL;

-- The window the rows below count: the jobs seen at or after `since` (unix seconds). It only
-- moves forward, a slice of leaving jobs at a time; 0 until it first does (every kept job).
CREATE TABLE fleet_window (
    id    BIGINT NOT NULL PRIMARY KEY,
    since BIGINT NOT NULL
);
INSERT INTO fleet_window (id, since) VALUES (1, 0);

-- One row per runner: its jobs in the window, where its oldest and latest are (seen_at, job_id),
-- the first name, group and environment told (oldest job first), and over every kept job (not
-- only the window's) what staleness is judged on.
CREATE TABLE runner_windows (
    issuer             TEXT   NOT NULL,
    runner             TEXT   NOT NULL,
    runner_key         TEXT,
    name_key           TEXT,
    jobs               BIGINT NOT NULL,
    single_use_jobs    BIGINT NOT NULL,
    repositories       BIGINT NOT NULL,
    first_at           BIGINT,
    first_job          TEXT,
    latest_at          BIGINT,
    latest_job         TEXT,
    tier               TEXT,
    single_use         BIGINT,
    runner_name        TEXT,
    named_at           BIGINT,
    named_job          TEXT,
    runner_group       TEXT,
    grouped_at         BIGINT,
    grouped_job        TEXT,
    runner_environment TEXT,
    placed_at          BIGINT,
    placed_job         TEXT,
    kept_jobs          BIGINT NOT NULL,
    kept_single_use    BIGINT NOT NULL,
    kept_self_hosted   BIGINT NOT NULL,
    kept_last_seen     BIGINT NOT NULL,
    PRIMARY KEY (issuer, runner)
);

-- Each runner's jobs in the window per repository: a runner's repositories are its rows here.
CREATE TABLE runner_window_repositories (
    issuer     TEXT   NOT NULL,
    runner     TEXT   NOT NULL,
    repository TEXT   NOT NULL,
    jobs       BIGINT NOT NULL,
    PRIMARY KEY (issuer, runner, repository)
);

-- Jobs and roles granted per hour (since the epoch, UTC), tier ('' for none), self-hosted or
-- not, single-use or not, over every kept job: the totals, tiers and days of any window read
-- its whole hours here and its first, partial hour from the jobs.
CREATE TABLE fleet_hours (
    hour          BIGINT NOT NULL,
    tier          TEXT   NOT NULL,
    self_hosted   BIGINT NOT NULL,
    single_use    BIGINT NOT NULL,
    jobs          BIGINT NOT NULL,
    roles_granted BIGINT NOT NULL,
    PRIMARY KEY (hour, tier, self_hosted, single_use)
);

-- The jobs already kept, counted once, here.
INSERT INTO fleet_hours (hour, tier, self_hosted, single_use, jobs, roles_granted)
SELECT seen_at / 3600, COALESCE(tier, ''),
       CASE WHEN runner_environment = 'self-hosted' THEN 1 ELSE 0 END, single_use,
       COUNT(*), SUM(roles_granted)
FROM runner_jobs
GROUP BY seen_at / 3600, COALESCE(tier, ''), CASE WHEN runner_environment = 'self-hosted' THEN 1 ELSE 0 END, single_use;

INSERT INTO runner_window_repositories (issuer, runner, repository, jobs)
SELECT issuer,
       CASE WHEN runner_key IS NOT NULL THEN 'k:' || runner_key
            WHEN runner_name IS NOT NULL THEN 'n:' || runner_name ELSE '-' END,
       repository, COUNT(*)
FROM runner_jobs
GROUP BY issuer,
         CASE WHEN runner_key IS NOT NULL THEN 'k:' || runner_key
              WHEN runner_name IS NOT NULL THEN 'n:' || runner_name ELSE '-' END,
         repository;

INSERT INTO runner_windows (
    issuer, runner, runner_key, name_key, jobs, single_use_jobs, repositories,
    first_at, first_job, latest_at, latest_job, tier, single_use,
    runner_name, named_at, named_job, runner_group, grouped_at, grouped_job,
    runner_environment, placed_at, placed_job,
    kept_jobs, kept_single_use, kept_self_hosted, kept_last_seen)
SELECT issuer, runner, MAX(runner_key), MAX(name_key), COUNT(*), SUM(single_use), COUNT(DISTINCT repository),
       MAX(CASE WHEN n = 1 THEN seen_at END), MAX(CASE WHEN n = 1 THEN job_id END),
       MAX(CASE WHEN n = total THEN seen_at END), MAX(CASE WHEN n = total THEN job_id END),
       MAX(CASE WHEN n = total THEN tier END), MAX(CASE WHEN n = total THEN single_use END),
       MAX(CASE WHEN n = named THEN runner_name END), MAX(CASE WHEN n = named THEN seen_at END),
       MAX(CASE WHEN n = named THEN job_id END),
       MAX(CASE WHEN n = grouped THEN runner_group END), MAX(CASE WHEN n = grouped THEN seen_at END),
       MAX(CASE WHEN n = grouped THEN job_id END),
       MAX(CASE WHEN n = placed THEN runner_environment END), MAX(CASE WHEN n = placed THEN seen_at END),
       MAX(CASE WHEN n = placed THEN job_id END),
       COUNT(*), SUM(single_use), SUM(CASE WHEN runner_environment = 'self-hosted' THEN 1 ELSE 0 END), MAX(seen_at)
FROM (
    SELECT numbered.*,
           MIN(CASE WHEN runner_name IS NOT NULL THEN n END) OVER runner_jobs_of AS named,
           MIN(CASE WHEN runner_group IS NOT NULL THEN n END) OVER runner_jobs_of AS grouped,
           MIN(CASE WHEN runner_environment IS NOT NULL THEN n END) OVER runner_jobs_of AS placed,
           COUNT(*) OVER runner_jobs_of AS total
    FROM (
        SELECT grouped_jobs.*, ROW_NUMBER() OVER (PARTITION BY issuer, runner ORDER BY seen_at, job_id) AS n
        FROM (
            SELECT issuer, job_id, repository, runner_key,
                   CASE WHEN runner_key IS NULL THEN runner_name END AS name_key,
                   CASE WHEN runner_key IS NOT NULL THEN 'k:' || runner_key
                        WHEN runner_name IS NOT NULL THEN 'n:' || runner_name ELSE '-' END AS runner,
                   runner_name, runner_group, runner_environment, tier, single_use, seen_at
            FROM runner_jobs
        ) grouped_jobs
    ) numbered
    WINDOW runner_jobs_of AS (PARTITION BY issuer, runner)
) marked
GROUP BY issuer, runner;
