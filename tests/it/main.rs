//! Every integration test, in one binary: linked once, not once per file, which keeps a cold
//! build's disk and link time in proportion (each binary links the AWS SDK, sqlx and axum).
//! Each file is a module named for what it covers; `support` starts the real components.

mod support;

mod api_bad_input;
mod audit_chain;
mod audit_trail;
mod azure_pipelines;
mod azure_pipelines_end;
mod client_azure;
mod client_exit_codes;
mod client_formats;
mod client_revoke;
mod config_errors;
mod deploy_files;
mod dev_token;
mod exchange_aws;
mod exchange_refusals;
mod exchange_vault;
mod github_tokens;
mod identity_claims;
mod identity_keys;
mod identity_tokens;
mod jenkins;
mod jenkins_end;
mod jenkins_heads;
mod job_end_aws;
mod job_end_circleci;
mod job_end_durability;
mod job_end_reconcile;
mod job_end_webhooks;
mod job_liveness;
mod limits;
mod metrics_scrape;
mod module_graph;
mod openapi_conformance;
mod policy_cli;
mod policy_cli_azure;
mod policy_cli_jenkins;
mod policy_cli_runner;
mod policy_schema;
mod replicas;
mod request_paths;
mod runner_facts;
mod runner_identity;
mod runner_report;
mod store_fleet_window;
mod store_group_commit;
mod store_runners;
mod store_schema;
mod store_suite;
mod stored_formats;
mod vault_backend;
mod vault_dynamic_secret;
mod webhook_secrets;
