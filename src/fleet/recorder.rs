//! The fleet's recorder: what each exchange judged (a job, or a refused attempt against its
//! runner) queued and written to the fleet's records in batches (`records.rs`).

use std::time::Duration;

use tokio::sync::mpsc;

use super::judged_job::RunnerJob;
use super::refusals::RunnerRefusal;
use crate::store::Store;

/// Judged jobs on their way to the store, written in batches by a task of their own: the fleet
/// report costs the exchange no write of its own.
#[derive(Clone)]
pub struct RunnerJobs {
    queue: mpsc::Sender<Judged>,
}

/// What the writing task records: a judged job, or a refused attempt against its runner.
enum Judged {
    Job(RunnerJob),
    Refusal(RunnerRefusal),
}

/// Records waiting beyond this are dropped (and counted): a flood must not grow memory.
const QUEUE: usize = 8192;
const BATCH: usize = 512;
/// How long the writer gathers records before a commit: the report is read by people and by a
/// scrape a minute, so a quarter second late costs nothing.
const GATHER: Duration = Duration::from_millis(250);

impl RunnerJobs {
    /// Starts the writing task; records are kept `keep_for` past when their job was seen.
    pub fn start(store: Store, keep_for: Duration) -> Self {
        let (queue, mut waiting) = mpsc::channel::<Judged>(QUEUE);
        let keep_for = keep_for.as_secs() as i64;
        tokio::spawn(async move {
            let mut batch = Vec::with_capacity(BATCH);
            while waiting.recv_many(&mut batch, BATCH).await > 0 {
                // Gather a moment's worth: one commit for many jobs costs far less than one each.
                tokio::time::sleep(GATHER).await;
                while batch.len() < BATCH
                    && let Ok(judged) = waiting.try_recv()
                {
                    batch.push(judged);
                }
                let (mut jobs, mut refusals) = (Vec::new(), Vec::new());
                for judged in batch.drain(..) {
                    match judged {
                        Judged::Job(job) => jobs.push(job),
                        Judged::Refusal(refusal) => refusals.push(refusal),
                    }
                }
                let count = jobs.len();
                if let Err(error) = store.record_runner_jobs(jobs, keep_for).await {
                    tracing::warn!(%error, jobs = count, "cannot record judged jobs for the fleet report");
                }
                if let Err(error) = store.record_runner_refusals(&refusals, keep_for).await {
                    tracing::warn!(%error, refusals = refusals.len(), "cannot record refused attempts for the fleet report");
                }
            }
        });
        Self { queue }
    }

    /// Queues a judged job for the fleet report.
    pub fn record_job(&self, job: RunnerJob) {
        self.send(Judged::Job(job));
    }

    /// Queues a refused attempt against its runner, for the fleet report.
    pub fn record_refusal(&self, refusal: RunnerRefusal) {
        self.send(Judged::Refusal(refusal));
    }

    fn send(&self, judged: Judged) {
        if self.queue.try_send(judged).is_err() {
            crate::metrics::runner_jobs_dropped();
        }
    }
}
