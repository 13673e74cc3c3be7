//! The deployment files under deploy/. What these tests prove, and what they do not:
//! - Kubernetes: every manifest parses as YAML and states what the issue requires (2 replicas,
//!   probes, limits, non-root, read-only root, no capabilities, secrets only by reference); the
//!   shipped policy loads with the broker's own parser. Not validated against the Kubernetes API
//!   schemas, and not applied to a cluster.
//! - systemd: `systemd-analyze verify` accepts the unit (where systemd-analyze exists).
//! - Dockerfile: read for its shape (multi-stage, distroless non-root runtime, exec-form
//!   entrypoint, nothing run in the runtime stage); built only with `CI_CREDS_DOCKER_BUILD=1`
//!   and a reachable Docker daemon.
//! - Grafana: the dashboard parses, and every metric it queries is one the broker exports.
//! - Azure Pipelines: the steps template parses and has its shape (get with the access token
//!   mapped, the steps given, revoke with `condition: always()`). Not expanded by Azure DevOps.

use std::path::{Path, PathBuf};
use std::process::Command;

use ci_creds::policy::{PolicyFile, PolicySet};
use serde::Deserialize;
use serde_yaml_ng::Value;

fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy").join(path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(deploy(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn yaml_documents(path: &str) -> Vec<Value> {
    let text = read(path);
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|document| Value::deserialize(document).unwrap_or_else(|e| panic!("{path}: {e}")))
        .collect()
}

fn manifest(path: &str) -> Value {
    let mut documents = yaml_documents(path);
    assert_eq!(documents.len(), 1, "{path}: one object per file");
    documents.remove(0)
}

#[test]
fn every_kubernetes_manifest_parses_and_is_listed() {
    let kustomization = manifest("k8s/kustomization.yaml");
    let listed: Vec<&str> =
        kustomization["resources"].as_sequence().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    for entry in std::fs::read_dir(deploy("k8s")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let object = manifest(&format!("k8s/{name}"));
        assert!(object["apiVersion"].is_string() && object["kind"].is_string(), "{name}: apiVersion and kind");
        assert!(name == "kustomization.yaml" || listed.contains(&name.as_str()), "{name} is not in kustomization.yaml");
    }
    let kinds: Vec<String> =
        listed.iter().map(|file| manifest(&format!("k8s/{file}"))["kind"].as_str().unwrap().to_owned()).collect();
    for kind in ["ConfigMap", "Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy"] {
        assert!(kinds.iter().any(|k| k == kind), "no {kind}");
    }
}

#[test]
fn the_deployment_is_hardened_and_takes_secrets_by_reference() {
    let deployment = manifest("k8s/deployment.yaml");
    assert_eq!(deployment["spec"]["replicas"].as_u64(), Some(2));
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"].as_bool(), Some(true));
    assert_eq!(pod["automountServiceAccountToken"].as_bool(), Some(false));
    let container = &pod["containers"][0];
    let security = &container["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"].as_bool(), Some(true));
    assert_eq!(security["allowPrivilegeEscalation"].as_bool(), Some(false));
    assert_eq!(security["capabilities"]["drop"][0].as_str(), Some("ALL"));
    assert_eq!(container["livenessProbe"]["httpGet"]["path"].as_str(), Some("/healthz"));
    assert_eq!(container["readinessProbe"]["httpGet"]["path"].as_str(), Some("/readyz"));
    assert!(
        container["resources"]["limits"]["memory"].is_string() && container["resources"]["limits"]["cpu"].is_string()
    );
    for variable in container["env"].as_sequence().unwrap() {
        assert!(variable.get("value").is_none(), "a literal env value in the Deployment: {variable:?}");
        assert!(variable["valueFrom"]["secretKeyRef"]["name"].is_string(), "{variable:?}");
    }
}

#[test]
fn the_configmap_holds_a_toml_config_and_a_policy_the_broker_loads() {
    let configmap = manifest("k8s/configmap.yaml");
    let config = configmap["data"]["config.toml"].as_str().unwrap();
    let config: toml::Value = toml::from_str(config).expect("config.toml is TOML");
    assert_eq!(config["policy_dir"].as_str(), Some("/etc/ci-creds/policy"));
    assert!(config["store"]["url"].as_str().unwrap().starts_with("postgres://"), "replicas share PostgreSQL");
    let policy = configmap["data"]["policy.yaml"].as_str().unwrap();
    let set = PolicySet::parse(&[PolicyFile { path: "policy.yaml", text: policy }]).expect("the shipped policy loads");
    assert!(set.role("deploy-prod").is_some());
}

#[test]
fn systemd_accepts_the_unit() {
    let unit = read("systemd/ci-creds.service");
    for directive in ["DynamicUser=yes", "StateDirectory=ci-creds", "ProtectSystem=strict", "NoNewPrivileges=yes"] {
        assert!(unit.lines().any(|line| line == directive), "missing {directive}");
    }
    if Command::new("systemd-analyze").arg("--version").output().is_err() {
        eprintln!("systemd-analyze is not installed: only the directives were checked");
        return;
    }
    // verify checks that ExecStart exists: point it at the binary just built.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ci-creds.service");
    std::fs::write(&path, unit.replace("/usr/local/bin/ci-creds", env!("CARGO_BIN_EXE_ci-creds"))).unwrap();
    let output = Command::new("systemd-analyze").args(["verify", "--man=no"]).arg(&path).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    // verify exits 0 even for a directive it ignores; it says so on stderr.
    let complaints: Vec<&str> = stderr.lines().filter(|line| !line.trim().is_empty()).collect();
    assert!(output.status.success(), "systemd-analyze verify:\n{stderr}");
    assert!(complaints.is_empty(), "systemd-analyze verify:\n{stderr}");
}

#[test]
fn the_image_is_multi_stage_distroless_and_non_root() {
    let dockerfile = read("container/Dockerfile");
    let instructions: Vec<&str> =
        dockerfile.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with('#')).collect();
    let stages: Vec<usize> = (0..instructions.len()).filter(|&i| instructions[i].starts_with("FROM ")).collect();
    assert!(stages.len() >= 2, "multi-stage");
    let runtime = &instructions[*stages.last().unwrap()..];
    assert!(runtime[0].starts_with("FROM gcr.io/distroless/"), "{}", runtime[0]);
    assert!(!runtime.iter().any(|line| line.starts_with("RUN ")), "the runtime stage needs no shell");
    let user = runtime.iter().find_map(|line| line.strip_prefix("USER ")).expect("USER in the runtime stage");
    assert!(user.split(':').next().unwrap().parse::<u32>().is_ok_and(|uid| uid != 0), "numeric non-root USER");
    assert!(runtime.iter().any(|line| line.starts_with("ENTRYPOINT [\"")), "exec-form ENTRYPOINT");
    if std::env::var_os("CI_CREDS_DOCKER_BUILD").is_none() {
        eprintln!("set CI_CREDS_DOCKER_BUILD=1 (with a Docker daemon) to build the image too");
        return;
    }
    let status = Command::new("docker")
        .args(["build", "-f", "deploy/container/Dockerfile", "-t", "ci-creds:test", "."])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("docker runs");
    assert!(status.success(), "docker build failed");
}

#[test]
fn the_dashboard_queries_only_metrics_the_broker_exports() {
    let dashboard: serde_json::Value = serde_json::from_str(&read("grafana/ci-creds.json")).expect("JSON");
    let exported = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/metrics.rs")).unwrap();
    let mut queried = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            for (at, _) in expr.match_indices("ci_creds_") {
                let name: String = expr[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                let base =
                    ["_bucket", "_count", "_sum"].iter().fold(name.as_str(), |n, s| n.strip_suffix(s).unwrap_or(n));
                assert!(
                    exported.contains(&format!("\"{base}\"")),
                    "the dashboard queries {name}, which is not exported"
                );
                queried += 1;
            }
        }
    }
    assert!(queried >= 10);
    for needed in ["ci_creds_exchanges_total", "ci_creds_revocations_pending", "ci_creds_revocation_exposure_seconds"] {
        assert!(dashboard.to_string().contains(needed), "no panel on {needed}");
    }
}

#[test]
fn the_azure_pipelines_template_gets_with_the_access_token_and_always_revokes() {
    let template = manifest("azure-pipelines/ci-creds.yml");
    let parameters: Vec<(&str, &str)> = template["parameters"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["type"].as_str().unwrap()))
        .collect();
    assert_eq!(parameters, [("broker", "string"), ("roles", "string"), ("ttl", "string"), ("steps", "stepList")]);
    let steps = template["steps"].as_sequence().unwrap();
    let (get, revoke) = (&steps[0], steps.last().unwrap());
    assert_eq!(steps.len(), 3);
    assert_eq!(steps[1].as_str(), Some("${{ parameters.steps }}"), "the given steps between get and revoke");
    let script = get["bash"].as_str().unwrap();
    assert!(script.starts_with("ci-creds get ") && script.ends_with(" --format azure"), "{script}");
    assert_eq!(revoke["bash"].as_str(), Some("ci-creds revoke"));
    assert_eq!(revoke["condition"].as_str(), Some("always()"));
    for step in [get, revoke] {
        assert_eq!(step["env"]["SYSTEM_ACCESSTOKEN"].as_str(), Some("$(System.AccessToken)"), "{step:?}");
        assert_eq!(step["env"]["CI_CREDS_BROKER"].as_str(), Some("${{ parameters.broker }}"));
        assert!(!step["bash"].as_str().unwrap().contains("${{"), "a parameter in script text: {step:?}");
    }
}
