//! `ci-creds policy test [DIR]`: every `*_test.yaml` of DIR run against DIR's policies, each
//! expected role judged on its own, as a job requesting only it would be.

use std::fmt::Write;
use std::path::Path;

use super::mapping::map;
use super::test_file::{Case, load};
use super::{Error, MappingChoice, Report};
use crate::ci::Job;
use crate::config::{load_policies, policy_test_paths};
use crate::policy::{Decision, PolicySet};

/// A case's own `issuer`/`kind` win over `choice`, which applies to the cases without them.
pub fn run_tests(dir: &Path, choice: &MappingChoice) -> Result<Report, Error> {
    let set = load_policies(dir)?;
    let paths = policy_test_paths(dir).map_err(|source| Error::Read { path: dir.display().to_string(), source })?;
    let mut text = String::new();
    let (mut passed, mut failed) = (0, 0);
    // Said once per run of cases that share it, so the list stays readable.
    let mut last_how = String::new();
    for path in &paths {
        let _ = writeln!(text, "{}", path.display());
        let cases = match load(path) {
            Ok(cases) => cases,
            Err(error) => {
                failed += 1;
                let _ = writeln!(text, "  error   {error}");
                continue;
            }
        };
        for case in cases {
            let outcome = run_case(&set, &case, choice);
            if let Ok((how, _)) = &outcome
                && *how != last_how
            {
                let _ = writeln!(text, "  mapping: {how}");
                last_how.clone_from(how);
            }
            match outcome {
                Ok((_, problems)) if problems.is_empty() => {
                    passed += 1;
                    let _ = writeln!(text, "  ok      {}", case.name);
                }
                Ok((_, problems)) => {
                    failed += 1;
                    let _ = writeln!(text, "  FAILED  {}", case.name);
                    for problem in problems {
                        let _ = writeln!(text, "          {problem}");
                    }
                }
                Err(error) => {
                    failed += 1;
                    let _ = writeln!(text, "  FAILED  {}", case.name);
                    let _ = writeln!(text, "          {error}");
                }
            }
        }
    }
    if paths.is_empty() {
        let _ = writeln!(text, "{}: no *_test.yaml file", dir.display());
    }
    let _ = writeln!(text, "{passed} passed, {failed} failed");
    Ok(Report { text, ok: failed == 0 })
}

fn run_case(set: &PolicySet, case: &Case, choice: &MappingChoice) -> Result<(String, Vec<String>), Error> {
    let mut mapped = map(&case.claims, case.mapping.as_ref().unwrap_or(choice))?;
    if let Some(runner) = &case.runner {
        runner.apply(&mut mapped.job.runner);
    }
    let mut problems = Vec::new();
    // A misspelt role under `denied:` would otherwise pass for the wrong reason.
    for role in case.granted.iter().chain(&case.denied) {
        if set.role(role).is_none() {
            problems.push(format!("{role}: no such role in the policy"));
        }
    }
    for role in &case.granted {
        if let Err(reasons) = judge(set, &mapped.job, role) {
            problems.push(format!("{role}: expected granted, was denied: {}", reasons.join("; ")));
        }
    }
    for role in case.denied.iter().filter(|r| set.role(r).is_some()) {
        if judge(set, &mapped.job, role).is_ok() {
            problems.push(format!("{role}: expected denied, was granted"));
        }
    }
    Ok((mapped.how, problems))
}

fn judge(set: &PolicySet, job: &Job, role: &str) -> Result<(), Vec<String>> {
    match set.decide(job, &[role.to_owned()]) {
        Decision::Granted(_) => Ok(()),
        Decision::Denied(denials) => Err(denials.into_iter().flat_map(|d| d.reasons).collect()),
    }
}
