//! A job named within its run by the exchange request, for a CI whose token names only the run.

/// A job within its run, as an exchange request names it, for a CI whose token names only the
/// run (Azure Pipelines: `System.JobId` and `System.JobAttempt`). The caller asserts it; only the
/// CI's API can confirm it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "RawNamedJob", deny_unknown_fields)]
pub struct NamedJob {
    /// A GUID, lowercase.
    pub id: String,
    pub attempt: u32,
}

/// A named job as sent, before it is checked.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNamedJob {
    id: String,
    attempt: u32,
}

impl TryFrom<RawNamedJob> for NamedJob {
    type Error = String;

    fn try_from(raw: RawNamedJob) -> Result<Self, String> {
        Self::new(&raw.id, raw.attempt)
    }
}

impl NamedJob {
    /// The most attempts of one job a CI makes; a larger number names no attempt.
    pub const MAX_ATTEMPT: u32 = 1000;
    /// `8-4-4-4-12` hexadecimal digits.
    pub const ID_PATTERN: &'static str =
        "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";

    /// A job id shaped as a GUID and an attempt of 1 to `MAX_ATTEMPT`; the error says which is
    /// wrong, never echoing what was sent.
    pub fn new(id: &str, attempt: u32) -> Result<Self, String> {
        if !is_guid(id) {
            return Err("`job.id` must be a GUID (8-4-4-4-12 hexadecimal digits)".into());
        }
        if !(1..=Self::MAX_ATTEMPT).contains(&attempt) {
            return Err(format!("`job.attempt` must be 1 to {}", Self::MAX_ATTEMPT));
        }
        Ok(Self { id: id.to_ascii_lowercase(), attempt })
    }
}

/// Whether `text` is a GUID in its usual form: `8-4-4-4-12` hexadecimal digits.
pub fn is_guid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(group, len)| group.len() == len && group.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_job_is_a_guid_and_a_bounded_attempt() {
        let job = NamedJob::new("E87E3D16-29B0-5003-7D86-82B704B96244", 1000).unwrap();
        assert_eq!((job.id.as_str(), job.attempt), ("e87e3d16-29b0-5003-7d86-82b704b96244", 1000));
        for (id, attempt) in [
            ("e87e3d16-29b0-5003-7d86-82b704b96244", 0),
            ("e87e3d16-29b0-5003-7d86-82b704b96244", 1001),
            ("e87e3d1629b050037d8682b704b96244", 1),
            ("{e87e3d16-29b0-5003-7d86-82b704b96244}", 1),
            ("e87e3d16-29b0-5003-7d86-82b704b9624g", 1),
            ("e87e3d16-29b0-5003-7d86-82b704b96244-", 1),
            ("__default", 1),
            ("", 1),
        ] {
            assert!(NamedJob::new(id, attempt).is_err(), "{id} {attempt}");
        }
        let sent: Result<NamedJob, _> =
            serde_json::from_str(r#"{"id": "e87e3d16-29b0-5003-7d86-82b704b96244", "attempt": 1, "x": 1}"#);
        assert!(sent.is_err(), "unknown fields refused");
    }
}
