//! The exchange's writes on PostgreSQL: many exchanges' at once, in one transaction of
//! multi-row statements, with the outcome each write would have had alone, in the order given.
//! Every statement is a round trip to the server, so a batch costs about what one exchange's
//! writes cost alone. Rows are written in key order, so that concurrent batches lock them in the
//! same order. Placeholders are numbered here: sqlx's `QueryBuilder` writes `?` for the `Any`
//! driver, which PostgreSQL refuses.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use sqlx::{AnyConnection, Connection, Row};

use super::{Error, LeaseBegun, LeaseState, NewLease, NewLeases, SpentToken};
use crate::clock::now;

/// A lease to activate: its id, its handle as stored (JSON), and its credential's expiry.
pub(super) struct Activation<'a> {
    pub id: &'a str,
    pub handle: &'a str,
    /// Unix seconds; replaces the lease's expiry if later.
    pub expires_at: i64,
}

pub(super) struct Outcomes {
    pub begun: Vec<LeaseBegun>,
    pub activated: Vec<Result<LeaseState, Error>>,
}

/// Begins `begins` and activates `activations`, in one transaction: all of it or none.
pub(super) async fn begin_and_activate(
    connection: &mut AnyConnection,
    begins: &[&NewLeases],
    activations: &[Activation<'_>],
) -> Result<Outcomes, Error> {
    let now = now();
    let mut tx = connection.begin().await?;
    let begun = begin_leases(&mut tx, begins, now).await?;
    let activated = activate_leases(&mut tx, activations, now).await?;
    tx.commit().await?;
    Ok(Outcomes { begun, activated })
}

/// The state an activation left lease `lease_id` in, as read back by either database's statement;
/// `None` when the lease was no longer there to activate.
pub(super) fn state_after_activation(lease_id: &str, state: Option<&str>) -> Result<LeaseState, Error> {
    match state {
        Some(state) => state.parse().map_err(Error::Corrupt),
        None => Err(Error::Corrupt(format!("lease {lease_id} vanished"))),
    }
}

type Key<'a> = (&'a str, &'a str);

async fn begin_leases(tx: &mut AnyConnection, begins: &[&NewLeases], now: i64) -> Result<Vec<LeaseBegun>, Error> {
    let mut outcomes = vec![LeaseBegun::Begun; begins.len()];
    // A token presented twice in one batch: the second presentation fares as it would after the
    // first one's commit, decided once the first one's outcome is known.
    // Each token id's first spender in the batch, and the token's expiry. A token spent under
    // two ids (`SpentToken::legacy_id`) is a replay if either was spent or repeats in the batch.
    let mut first_spender: BTreeMap<Key, (usize, i64)> = BTreeMap::new();
    let mut repeats = Vec::new();
    for (n, begin) in begins.iter().enumerate() {
        let Some(token) = &begin.spends else { continue };
        for id in token.ids() {
            match first_spender.entry((&begin.issuer, id)) {
                Entry::Vacant(entry) => {
                    entry.insert((n, token.expires_at));
                }
                Entry::Occupied(entry) => repeats.push((n, entry.get().0)),
            }
        }
    }
    let spent = spend_tokens(tx, &first_spender).await?;
    for (key, &(n, _)) in &first_spender {
        if !contains(&spent, *key) {
            outcomes[n] = LeaseBegun::Replayed;
        }
    }
    for &(n, _) in &repeats {
        outcomes[n] = LeaseBegun::Replayed;
    }

    let active = see_jobs(tx, begins, &outcomes, now).await?;
    let mut unspend = Vec::new();
    for (n, begin) in begins.iter().enumerate() {
        if outcomes[n] == LeaseBegun::Begun && !contains(&active, (&begin.issuer, &begin.job_id)) {
            outcomes[n] = LeaseBegun::JobEnded;
            // Alone, the whole transaction rolls back: the token stays unspent.
            for id in begin.spends.iter().flat_map(SpentToken::ids) {
                unspend.push((begin.issuer.as_str(), id));
            }
        }
    }
    // Counted once the jobs' rows are written: each row stays locked by this transaction until it
    // commits, so a concurrent batch (another replica's) that writes the same job waits for this
    // one, and its count, a statement later, sees this one's leases.
    let mut had = count_capped_leases(tx, begins, &outcomes).await?;
    for (n, begin) in begins.iter().enumerate() {
        if outcomes[n] != LeaseBegun::Begun {
            continue;
        }
        if let Some(role) = first_capped_role(begin, &mut had) {
            outcomes[n] = LeaseBegun::CapReached { role };
            for id in begin.spends.iter().flat_map(SpentToken::ids) {
                unspend.push((begin.issuer.as_str(), id));
            }
        }
    }
    // A repeat fares as it would after its first presentation: a token left unspent by a refusal
    // would be spent again, and meet the same refusal.
    for (n, first) in repeats {
        if matches!(outcomes[first], LeaseBegun::JobEnded | LeaseBegun::CapReached { .. }) {
            outcomes[n] = outcomes[first].clone();
        }
    }
    unspend_tokens(tx, &unspend).await?;
    let leases: Vec<(&NewLeases, &NewLease)> = begins
        .iter()
        .zip(&outcomes)
        .filter(|(_, outcome)| **outcome == LeaseBegun::Begun)
        .flat_map(|(begin, _)| begin.leases.iter().map(|lease| (*begin, lease)))
        .collect();
    insert_leases(tx, &leases, now).await?;
    Ok(outcomes)
}

/// (issuer, job, role) to how many leases the job has of the role, for the capped roles of the
/// writes still `Begun`.
type Counts<'a> = BTreeMap<(&'a str, &'a str, &'a str), i64>;

async fn count_capped_leases<'a>(
    tx: &mut AnyConnection,
    begins: &[&'a NewLeases],
    outcomes: &[LeaseBegun],
) -> Result<Counts<'a>, Error> {
    let mut counts: Counts = BTreeMap::new();
    for (begin, _) in begins.iter().zip(outcomes).filter(|(_, outcome)| **outcome == LeaseBegun::Begun) {
        for lease in begin.leases.iter().filter(|lease| lease.max_per_job > 0) {
            counts.insert((&begin.issuer, &begin.job_id, &lease.role), 0);
        }
    }
    if counts.is_empty() {
        return Ok(counts);
    }
    let conditions: Vec<String> = (0..counts.len())
        .map(|n| format!("(issuer = ${} AND job_id = ${} AND role = ${})", 3 * n + 1, 3 * n + 2, 3 * n + 3))
        .collect();
    let sql = format!(
        "SELECT issuer, job_id, role, CAST(COUNT(*) AS BIGINT) FROM leases WHERE {} GROUP BY issuer, job_id, role",
        conditions.join(" OR ")
    );
    let mut query = sqlx::query(&sql).persistent(false);
    for &(issuer, job_id, role) in counts.keys() {
        query = query.bind(issuer).bind(job_id).bind(role);
    }
    let mut found: Vec<((String, String, String), i64)> = Vec::new();
    for row in query.fetch_all(&mut *tx).await? {
        found.push(((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?), row.try_get(3)?));
    }
    found.sort_unstable();
    for (&(issuer, job_id, role), count) in &mut counts {
        if let Ok(at) =
            found.binary_search_by(|((i, j, r), _)| (i.as_str(), j.as_str(), r.as_str()).cmp(&(issuer, job_id, role)))
        {
            *count = found[at].1;
        }
    }
    Ok(counts)
}

/// The first role of `begin` whose cap its job has reached, counting the leases of the writes
/// before it in the batch; when none, its leases are counted for the writes after it.
fn first_capped_role<'a>(begin: &'a NewLeases, had: &mut Counts<'a>) -> Option<String> {
    let capped = || begin.leases.iter().filter(|lease| lease.max_per_job > 0);
    let key = |lease: &'a NewLease| (begin.issuer.as_str(), begin.job_id.as_str(), lease.role.as_str());
    if let Some(lease) =
        capped().find(|lease| had.get(&key(lease)).copied().unwrap_or_default() >= i64::from(lease.max_per_job))
    {
        return Some(lease.role.clone());
    }
    for lease in capped() {
        *had.entry(key(lease)).or_default() += 1;
    }
    None
}

/// Records each token as spent; returns those that were not spent before, sorted.
async fn spend_tokens(
    tx: &mut AnyConnection,
    spenders: &BTreeMap<Key<'_>, (usize, i64)>,
) -> Result<Vec<(String, String)>, Error> {
    if spenders.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "INSERT INTO exchanged_tokens (issuer, token_id, expires_at) VALUES {}
         ON CONFLICT (issuer, token_id) DO NOTHING RETURNING issuer, token_id",
        values(spenders.len(), 3, 1, |p| format!("(${p}, ${}, ${})", p + 1, p + 2))
    );
    let mut query = sqlx::query(&sql).persistent(false);
    for (&(issuer, token_id), &(_, expires_at)) in spenders {
        query = query.bind(issuer).bind(token_id).bind(expires_at);
    }
    let mut spent = Vec::with_capacity(spenders.len());
    for row in query.fetch_all(&mut *tx).await? {
        spent.push((row.try_get(0)?, row.try_get(1)?));
    }
    spent.sort_unstable();
    Ok(spent)
}

/// Records the jobs of the writes still `Begun` as seen, unless they have ended (an ended job's
/// record is left as it is); returns the active ones, sorted.
async fn see_jobs(
    tx: &mut AnyConnection,
    begins: &[&NewLeases],
    outcomes: &[LeaseBegun],
    now: i64,
) -> Result<Vec<(String, String)>, Error> {
    // One row per job: PostgreSQL refuses an upsert that touches a row twice.
    let mut jobs: BTreeMap<Key, (&NewLeases, i64)> = BTreeMap::new();
    for (begin, _) in begins.iter().zip(outcomes).filter(|(_, outcome)| **outcome == LeaseBegun::Begun) {
        let seen = jobs.entry((&begin.issuer, &begin.job_id)).or_insert((*begin, begin.job_keep_until));
        seen.1 = seen.1.max(begin.job_keep_until);
        if begin.ci.asked_at_ms > seen.0.ci.asked_at_ms {
            seen.0 = begin;
        }
    }
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "INSERT INTO jobs (issuer, job_id, repository, state, first_seen_at, keep_until, ci_api_locator, last_asked_at, runner, address)
         VALUES {}
         ON CONFLICT (issuer, job_id) DO UPDATE SET
             repository = COALESCE(jobs.repository, excluded.repository),
             keep_until = CASE WHEN jobs.keep_until > excluded.keep_until THEN jobs.keep_until ELSE excluded.keep_until END,
             ci_api_locator = COALESCE(jobs.ci_api_locator, excluded.ci_api_locator),
             last_asked_at = CASE WHEN jobs.last_asked_at > excluded.last_asked_at THEN jobs.last_asked_at ELSE excluded.last_asked_at END,
             runner = COALESCE(excluded.runner, jobs.runner),
             address = COALESCE(excluded.address, jobs.address)
         WHERE jobs.state = 'active'
         RETURNING issuer, job_id",
        values(jobs.len(), 8, 2, |p| format!(
            "(${p}, ${}, ${}, 'active', $1, ${}, ${}, ${}, ${}, ${})",
            p + 1,
            p + 2,
            p + 3,
            p + 4,
            p + 5,
            p + 6,
            p + 7
        ))
    );
    let mut query = sqlx::query(&sql).persistent(false).bind(now);
    for (&(issuer, job_id), &(seen, keep_until)) in &jobs {
        query = query
            .bind(issuer)
            .bind(job_id)
            .bind(&seen.repository)
            .bind(keep_until)
            .bind(&seen.ci.locator)
            .bind(seen.ci.asked_at_ms)
            .bind(&seen.ci.runner)
            .bind(&seen.address);
    }
    let mut active = Vec::with_capacity(jobs.len());
    for row in query.fetch_all(&mut *tx).await? {
        active.push((row.try_get(0)?, row.try_get(1)?));
    }
    active.sort_unstable();
    Ok(active)
}

async fn unspend_tokens(tx: &mut AnyConnection, tokens: &[Key<'_>]) -> Result<(), Error> {
    if tokens.is_empty() {
        return Ok(());
    }
    let conditions: Vec<String> =
        (0..tokens.len()).map(|n| format!("(issuer = ${} AND token_id = ${})", 2 * n + 1, 2 * n + 2)).collect();
    let sql = format!("DELETE FROM exchanged_tokens WHERE {}", conditions.join(" OR "));
    let mut query = sqlx::query(&sql).persistent(false);
    for (issuer, token_id) in tokens {
        query = query.bind(*issuer).bind(*token_id);
    }
    query.execute(&mut *tx).await?;
    Ok(())
}

async fn insert_leases(tx: &mut AnyConnection, leases: &[(&NewLeases, &NewLease)], now: i64) -> Result<(), Error> {
    if leases.is_empty() {
        return Ok(());
    }
    let sql = format!(
        "INSERT INTO leases (id, issuer, job_id, role, backend, handle, state, created_at, expires_at, updated_at, bound_to)
         VALUES {}",
        values(leases.len(), 7, 2, |p| {
            format!(
                "(${p}, ${}, ${}, ${}, ${}, NULL, 'pending', $1, ${}, $1, ${})",
                p + 1,
                p + 2,
                p + 3,
                p + 4,
                p + 5,
                p + 6
            )
        })
    );
    let mut query = sqlx::query(&sql).persistent(false).bind(now);
    for (begin, lease) in leases {
        query = query
            .bind(lease.id.as_str())
            .bind(begin.issuer.as_str())
            .bind(begin.job_id.as_str())
            .bind(lease.role.as_str())
            .bind(lease.backend.as_str())
            .bind(lease.expires_at)
            .bind(lease.bound_to.as_deref());
    }
    query.execute(&mut *tx).await?;
    Ok(())
}
async fn activate_leases(
    tx: &mut AnyConnection,
    activations: &[Activation<'_>],
    now: i64,
) -> Result<Vec<Result<LeaseState, Error>>, Error> {
    if activations.is_empty() {
        return Ok(Vec::new());
    }
    let mut by_id: BTreeMap<&str, (&str, i64)> = BTreeMap::new();
    for activation in activations {
        by_id.insert(activation.id, (activation.handle, activation.expires_at));
    }
    // `column1`, `column2`, …: what both SQLite and PostgreSQL name a VALUES list's columns.
    let sql = format!(
        "UPDATE leases SET handle = v.column2, updated_at = $1,
             expires_at = CASE WHEN leases.expires_at < v.column3 THEN v.column3 ELSE leases.expires_at END,
             state = CASE WHEN state = 'pending' THEN 'active' ELSE state END
         FROM (VALUES {}) AS v
         WHERE leases.id = v.column1 RETURNING id, state",
        values(by_id.len(), 3, 2, |p| format!("(${p}, ${}, ${})", p + 1, p + 2))
    );
    let mut query = sqlx::query(&sql).persistent(false).bind(now);
    for (id, (handle, expires_at)) in &by_id {
        query = query.bind(*id).bind(*handle).bind(*expires_at);
    }
    let mut states = BTreeMap::new();
    for row in query.fetch_all(&mut *tx).await? {
        let (id, state): (String, String) = (row.try_get(0)?, row.try_get(1)?);
        states.insert(id, state);
    }
    Ok(activations
        .iter()
        .map(|activation| state_after_activation(activation.id, states.get(activation.id).map(String::as_str)))
        .collect())
}

/// Whether `sorted` (rows as returned, then sorted) holds `key`.
fn contains(sorted: &[(String, String)], key: Key<'_>) -> bool {
    sorted.binary_search_by(|(a, b)| (a.as_str(), b.as_str()).cmp(&key)).is_ok()
}

/// `rows` placeholder rows of `width` parameters each, numbered from `first`.
fn values(rows: usize, width: usize, first: usize, row: impl Fn(usize) -> String) -> String {
    (0..rows).map(|r| row(first + r * width)).collect::<Vec<_>>().join(", ")
}
