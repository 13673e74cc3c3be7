//! A broker's answer as `ci-creds get` reads it: a successful body parsed and rendered in the
//! output format the first byte picks, and the same body read as a refusal.
#![no_main]

use ci_creds::client::{Format, Refusal, render_answer};
use ci_creds::ci::CiKind;
use libfuzzer_sys::fuzz_target;
use secrecy::{ExposeSecret, SecretString};

const FORMATS: [Format; 6] = [
    Format::Env,
    Format::Json,
    Format::Step(CiKind::Github),
    Format::Step(CiKind::Gitlab),
    Format::CredentialProcess,
    Format::Step(CiKind::AzurePipelines),
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else { return };
    // The client reads the body as text, replacing what is not UTF-8.
    let body = String::from_utf8_lossy(body).into_owned();
    let format = FORMATS[usize::from(selector) % FORMATS.len()];
    if let Ok(rendered) = render_answer(format, SecretString::from(body.clone())) {
        let text = rendered.text.expose_secret();
        if format == Format::Step(CiKind::AzurePipelines) {
            // One logging command per variable: no value can start a command of its own.
            for line in text.lines() {
                let command = line.strip_prefix("##vso[task.setvariable variable=").unwrap_or_default();
                let name = command.split_once([';', ']']).map_or("", |(name, _)| name);
                assert!(!name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'), "{line:?}");
            }
        } else if matches!(format, Format::Step(_)) {
            // One NAME=value line per variable: no value can start a line of its own.
            for line in text.lines() {
                let name = line.split_once('=').map_or("", |(name, _)| name);
                assert!(!name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'), "{line:?}");
            }
        }
        if let Some(masks) = &rendered.masks {
            assert!(masks.expose_secret().lines().all(|line| line.starts_with("::add-mask::")));
        }
    }
    let mut refusal: Refusal = serde_json::from_str(&body).unwrap_or_default();
    refusal.status = 403;
    let _ = refusal.to_string();
});
