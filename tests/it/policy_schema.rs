//! The policy JSON Schema editors use: current with the code, and agreeing with the parser on
//! the shipped example and on a file the parser refuses for its shape.

use std::path::Path;

use serde_json::Value;

fn schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("policy/policy.schema.json");
    let checked_in = std::fs::read_to_string(&path).expect("policy/policy.schema.json is checked in");
    assert_eq!(
        checked_in,
        ci_creds::policy::json_schema(),
        "policy/policy.schema.json is stale; regenerate it: cargo run -- policy schema > policy/policy.schema.json"
    );
    serde_json::from_str(&checked_in).unwrap()
}

fn yaml(text: &str) -> Value {
    serde_yaml_ng::from_str(text).expect("YAML")
}

#[test]
fn the_example_policy_is_valid() {
    let validator = jsonschema::validator_for(&schema()).expect("a valid schema");
    let example = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("policy/example.yaml")).unwrap();
    let errors: Vec<String> = validator.iter_errors(&yaml(&example)).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn shapes_the_parser_refuses_are_invalid() {
    let validator = jsonschema::validator_for(&schema()).expect("a valid schema");
    let role =
        "roles:\n  - name: r\n    backend: vault\n    max_ttl: 5m\n    vault: { policies: [p] }\n    allow:\n      - ";
    for (what, text) in [
        ("unknown condition", format!("{role}reff: refs/heads/main\n")),
        ("sub as a condition", format!("{role}sub: repo:octo-org/octo-repo\n")),
        ("unknown backend", format!("{role}issuer: github\n").replace("backend: vault", "backend: gcp")),
        ("unknown top-level key", "colour: blue\n".to_owned()),
        ("nested list value", format!("{role}ref: [[refs/heads/main]]\n")),
        ("allow rule without issuer", format!("{role}repository_id: \"74\"\n")),
        (
            "negative exchange cap",
            format!("{role}issuer: github\n").replace("max_ttl: 5m", "max_ttl: 5m\n    max_exchanges_per_job: -1"),
        ),
        (
            "exchange cap as text",
            format!("{role}issuer: github\n").replace("max_ttl: 5m", "max_ttl: 5m\n    max_exchanges_per_job: ten"),
        ),
        (
            "a binding to a /4",
            format!("{role}issuer: github\n")
                .replace("    allow:", "    bind_to_address: true\n    bind_prefix: 4\n    allow:"),
        ),
        (
            "a binding to a /16 of IPv6",
            format!("{role}issuer: github\n")
                .replace("    allow:", "    bind_to_address: true\n    bind_prefix_v6: 16\n    allow:"),
        ),
    ] {
        assert!(!validator.is_valid(&yaml(&text)), "{what} must be invalid");
        let files = [ci_creds::policy::PolicyFile { path: "p.yaml", text: &text }];
        assert!(ci_creds::policy::PolicySet::parse(&files).is_err(), "{what}: the parser refuses it too");
    }
}
