//! Durations in the broker's config, written as people write them: `30s`, `15m`, `1h 30m`, `90d`.

use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// `deserialize_with` for a config key holding a humantime duration; the error is humantime's.
pub fn human<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(deserializer)?;
    humantime::parse_duration(&text).map_err(serde::de::Error::custom)
}

/// `deserialize_with` for an optional duration key (with `#[serde(default)]`).
pub fn human_optional<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
    human(deserializer).map(Some)
}

#[cfg(test)]
mod tests {
    use serde::de::value::{Error, I64Deserializer, StrDeserializer};

    use super::*;

    #[test]
    fn reads_what_people_write() {
        let table: &[(&str, Result<Duration, &str>)] = &[
            ("100ms", Ok(Duration::from_millis(100))),
            ("30s", Ok(Duration::from_secs(30))),
            ("15m", Ok(Duration::from_secs(15 * 60))),
            ("1h 30m", Ok(Duration::from_secs(90 * 60))),
            ("90d", Ok(Duration::from_secs(90 * 24 * 3600))),
            ("0s", Ok(Duration::ZERO)),
            ("10", Err("time unit needed, for example 10sec or 10ms")),
            ("ten minutes", Err("expected number at 0")),
            ("", Err("value was empty")),
        ];
        for (text, expected) in table {
            let read = human(StrDeserializer::<Error>::new(text)).map_err(|e| e.to_string());
            assert_eq!(read, expected.map_err(str::to_owned), "{text:?}");
        }
    }

    #[test]
    fn refuses_a_number_without_a_unit() {
        let error = human(I64Deserializer::<Error>::new(30)).unwrap_err();
        assert_eq!(error.to_string(), "invalid type: integer `30`, expected a string");
    }
}
