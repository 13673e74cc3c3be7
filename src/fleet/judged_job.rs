//! A judged job and the runner it ran on, as the fleet report records it: shared by the records
//! (`records.rs`) and the fleet's window kept from them (`window/`).

/// One judged job and its runner, for the fleet report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunnerJob {
    pub issuer: String,
    pub job_id: String,
    pub repository: String,
    pub runner_key: Option<String>,
    pub runner_name: Option<String>,
    pub runner_group: Option<String>,
    pub runner_environment: Option<String>,
    pub tier: Option<String>,
    pub single_use: bool,
    pub roles_granted: i64,
    pub refused: bool,
    /// Unix seconds.
    pub seen_at: i64,
}
