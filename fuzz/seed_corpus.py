#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/<target>/ from the CI fixtures (tests/fixtures,
or $FIXTURES) and the cases the test suite uses. Run from anywhere; overwrites seeds it names,
leaves other files alone. Input formats: fuzz/README.md."""

import base64
import hashlib
import json
import os
import re
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
ROOT = FUZZ.parent
FIXTURES = Path(os.environ.get("FIXTURES", ROOT / "tests" / "fixtures"))
ISSUER = "https://token.fuzz.example"  # fuzz/src/token.rs
JENKINS_ISSUER = ISSUER + "/oidc"
AZURE_ISSUER = ISSUER + "/0ca3ddd9-f0b0-4635-a98c-5866526961b6"  # the fixture's org_id
AUDIENCE = "https://ci-creds.fuzz.example"
FAR_FUTURE = 4102444800  # 2100-01-01: mode-2 payloads are signed as written, never made live
CLAIMS_MODE, KEEP_ISS, KEEP_AUD, KEEP_EXP, SET_TIMES = 1, 4, 7, 13, 25  # 1 + 3 * flag bits


def fixture(name):
    return json.loads((FIXTURES / name).read_text())


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def write(target, name, data):
    directory = FUZZ / "corpus" / target
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_bytes(data)


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def edited(claims, **changes):
    claims = dict(claims)
    for key, value in changes.items():
        key = key.replace("__", "/").replace("_DOT_", ".")
        if value is None:
            claims.pop(key, None)
        else:
            claims[key] = value
    return claims


def token_seeds(target, claims, variants, issuer=ISSUER):
    write(target, "fixture", bytes([CLAIMS_MODE]) + compact(claims))
    for name, changed in variants.items():
        write(target, name, bytes([CLAIMS_MODE]) + compact(changed))
    write(target, "keep-foreign-iss", bytes([KEEP_ISS]) + compact(edited(claims, iss="https://elsewhere.example")))
    write(target, "keep-aud-list", bytes([KEEP_AUD]) + compact(edited(claims, aud=["https://github.com/octo-org", AUDIENCE])))
    write(target, "keep-aud-resembling", bytes([KEEP_AUD]) + compact(edited(claims, aud=AUDIENCE + ".evil")))
    write(target, "keep-expired", bytes([KEEP_EXP]) + compact(edited(claims, exp=1632493867)))
    write(target, "keep-exp-string", bytes([KEEP_EXP]) + compact(edited(claims, exp=str(FAR_FUTURE))))
    write(target, "keep-exp-huge", bytes([KEEP_EXP]) + compact(edited(claims, exp=2**63 - 1)))
    write(target, "times-now", bytes([SET_TIMES]) + compact(claims))
    write(target, "not-an-object", bytes([CLAIMS_MODE]) + b"[1,2,3]")
    live = edited(claims, iss=issuer, aud=AUDIENCE, exp=FAR_FUTURE)
    payload = compact(live)
    headers = {
        "header-es256": {"alg": "ES256", "typ": "JWT", "kid": "fuzz"},
        "header-rs256-on-ec-key": {"alg": "RS256", "kid": "fuzz"},
        "header-es384": {"alg": "ES384", "kid": "fuzz"},
        "header-none": {"alg": "none", "kid": "fuzz"},
        "header-hs256": {"alg": "HS256", "kid": "fuzz"},
        "header-no-kid": {"alg": "ES256"},
        "header-unknown-kid": {"alg": "ES256", "kid": "rotated-away"},
        "header-crit": {"alg": "ES256", "kid": "fuzz", "crit": ["exp"]},
        "header-jwk": {"alg": "ES256", "kid": "fuzz", "jwk": {"kty": "oct", "k": "AAAA"}},
    }
    for name, header in headers.items():
        write(target, name, bytes([2]) + compact(header) + b"\n" + payload)
    write(target, "payload-not-json", bytes([2]) + compact(headers["header-es256"]) + b"\n" + b"not json")
    # Raw token text: unsigned, odd encodings, what a confused client sends.
    header = b64(compact(headers["header-es256"]))
    none = b64(compact(headers["header-none"]))
    body = b64(payload)
    raw = {
        "raw-alg-none": none + b"." + body + b".",
        "raw-bad-signature": header + b"." + body + b"." + b64(b"\0" * 64),
        "raw-two-parts": header + b"." + body,
        "raw-padded-base64": base64.urlsafe_b64encode(compact(headers["header-es256"])) + b"." + body + b".AA",
        "raw-not-base64": b"%%%.!!!.***",
        "raw-bearer-prefix": b"Bearer " + header + b"." + body + b".x",
    }
    for name, text in raw.items():
        write(target, name, bytes([0]) + text)


def tokens():
    github = fixture("github-token-claims.json")
    token_seeds("token_github", github, {
        "numeric-repository-id": edited(github, repository_id=74),
        "no-check-run-id": edited(github, check_run_id=None),
        "no-repository": edited(github, repository=None),
        "unicode-actor": edited(github, actor="ôctocat-🐙"),
        "pull-request-target": edited(github, event_name="pull_request_target"),
        "empty-environment": edited(github, environment=""),
        "jti-empty": edited(github, jti=""),
        "iat-future": edited(github, iat=FAR_FUTURE),
    })
    gitlab = fixture("gitlab-token-claims.json")
    token_seeds("token_gitlab", gitlab, {
        "fork-project": edited(gitlab, project_path="fork-owner/my-project"),
        "ref-protected-yes": edited(gitlab, ref_protected="yes"),
        "runner-id-string": edited(gitlab, runner_id="12"),
        "no-ref-path": edited(gitlab, ref_path=None),
        "tag-ref": edited(gitlab, ref_path=None, ref_type="tag", ref="v1.0.0"),
        "no-job-id": edited(gitlab, job_id=None),
    })
    buildkite = fixture("buildkite-token-claims.json")
    token_seeds("token_buildkite", buildkite, {
        "tag-only": edited(buildkite, build_branch=""),
        "no-ref": edited(buildkite, build_branch=None, build_tag=None),
        "build-number-string": edited(buildkite, build_number="1"),
        "no-pipeline": edited(buildkite, pipeline_slug=None),
    })
    circleci = fixture("circleci-token-claims.json")
    prefix = "oidc_DOT_circleci_DOT_com__"
    token_seeds("token_circleci", circleci, {
        "tag-ref": edited(circleci, **{prefix + "vcs-ref": "refs/tags/v1.0.0"}),
        "no-vcs-origin": edited(circleci, **{prefix + "vcs-origin": None}),
        "numeric-job-id": edited(circleci, **{prefix + "job-id": 8}),
        "ssh-rerun": edited(circleci, **{prefix + "ssh-rerun": True}),
        "ssh-rerun-string": edited(circleci, **{prefix + "ssh-rerun": "true"}),
    })
    # Jenkins names jobs below its controller's root: the fixture's host becomes the target's.
    jenkins = json.loads(json.dumps(fixture("jenkins-token-claims.json")).replace("https://jenkins.example.com", ISSUER))
    job = ISSUER + "/job/octo-org/job/octo-repo/job/"
    token_seeds("token_jenkins", jenkins, {
        "default-templates": edited(jenkins, branch=None, commit=None, build_url=None),
        "branch-with-slash": edited(jenkins, sub=job + "feature%252Fx/", branch="feature/x"),
        "branch-disagrees": edited(jenkins, branch="release"),
        "change-request": edited(jenkins, sub=job + "PR-7/", branch="PR-7", change_id="7", change_fork="mallory"),
        "root-url": edited(jenkins, sub=ISSUER + "/", build_number=None),
        "other-host": edited(jenkins, sub="https://jenkins.evil.example/job/octo-org/job/octo-repo/job/main/"),
        "dot-item": edited(jenkins, sub=ISSUER + "/job/octo-org/job/%2E%2E/job/main/"),
        "build-number-string": edited(jenkins, build_number="42"),
        "build-number-negative": edited(jenkins, build_number=-1),
        "aud-string": edited(jenkins, aud=AUDIENCE),
        "node-name": edited(jenkins, node_name="linux-agent-1"),
        "unsubstituted-template": edited(jenkins, change_id="${CHANGE_ID}"),
    }, issuer=JENKINS_ISSUER)
    azure = fixture("azure-pipelines-token-claims.json")
    token_seeds("token_azure_pipelines", azure, {
        "other-organisation": edited(azure, org_id="11111111-2222-3333-4444-555555555555"),
        "run-id-number": edited(azure, run_id=4711),
        "run-id-not-digits": edited(azure, run_id="47a"),
        "pull-request-ref": edited(azure, rpo_ref="refs/pull/7/merge"),
        "no-rpo-id": edited(azure, rpo_id=None),
        "fixed-audience": edited(azure, aud="api://AzureADTokenExchange"),
    }, issuer=AZURE_ISSUER)


def delivery(flags, headers, body):
    head = b"".join(f"{name}: {value}\n".encode() for name, value in headers)
    return bytes([flags]) + head + b"\n" + body


def webhooks():
    completed = fixture("github-workflow-job-completed.json")
    in_progress = fixture("github-workflow-job-in-progress.json")
    event = [("X-GitHub-Event", "workflow_job"), ("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")]
    target = "webhook_github"
    write(target, "completed", delivery(1, event, compact(completed)))
    write(target, "in-progress", delivery(1, event, compact(in_progress)))
    write(target, "ping", delivery(1, [("X-GitHub-Event", "ping")], compact({"zen": "Design for failure."})))
    write(target, "id-as-string", delivery(1, event, compact({"action": "completed", "workflow_job": {"id": "1"}})))
    write(target, "no-action", delivery(1, event, compact({"workflow_job": {"id": 1}})))
    write(target, "garbage-body", delivery(1, event, b"\xff\xfe not json"))
    bad = hashlib.sha256(b"another body").hexdigest()
    write(target, "forged-signature", delivery(0, event + [("X-Hub-Signature-256", f"sha256={bad}")], compact(completed)))
    write(target, "unsigned", delivery(0, event, compact(completed)))

    hook = fixture("gitlab-job-hook.json")
    running = fixture("gitlab-job-hook-running.json")
    event = [("X-Gitlab-Event", "Job Hook"), ("Idempotency-Key", "f4b8d1a2-0000-4000-8000-000000000001")]
    target = "webhook_gitlab"
    write(target, "success", delivery(1, event, compact(hook)))
    write(target, "running", delivery(1, event, compact(running)))
    write(target, "canceled-uuid", delivery(1, [("X-Gitlab-Event", "Job Hook"), ("X-Gitlab-Event-UUID", "u-1")],
                                            compact(dict(hook, build_status="canceled"))))
    write(target, "pipeline-hook", delivery(1, [("X-Gitlab-Event", "Pipeline Hook")], compact(hook)))
    write(target, "build-id-string", delivery(1, event, compact(dict(hook, build_id="302"))))
    write(target, "wrong-token", delivery(0, event + [("X-Gitlab-Token", "not-the-token")], compact(hook)))

    finished = fixture("buildkite-job-finished.json")
    started = fixture("buildkite-job-started.json")
    target = "webhook_buildkite"
    write(target, "finished-signed", delivery(1, [("X-Buildkite-Event", "job.finished")], compact(finished)))
    write(target, "finished-token", delivery(3, [("X-Buildkite-Event", "job.finished")], compact(finished)))
    write(target, "started", delivery(1, [("X-Buildkite-Event", "job.started")], compact(started)))
    write(target, "empty-job-id", delivery(3, [("X-Buildkite-Event", "job.finished")], compact({"job": {"id": ""}})))
    write(target, "stale-signature", delivery(0, [("X-Buildkite-Event", "job.finished"),
                                                  ("X-Buildkite-Signature", "timestamp=1669014898,signature=" + "00" * 32)],
                                              compact(finished)))
    write(target, "odd-signature", delivery(0, [("X-Buildkite-Signature", "timestamp=-9223372036854775808,signature=zz")],
                                            compact(finished)))

    completed = fixture("circleci-job-completed.json")
    event = [("circleci-event-type", "job-completed")]
    target = "webhook_circleci"
    write(target, "completed", delivery(1, event, compact(completed)))
    write(target, "workflow-completed", delivery(1, [("circleci-event-type", "workflow-completed")],
                                                 compact(dict(completed, type="workflow-completed"))))
    write(target, "no-job", delivery(1, event, compact({"id": "e-1", "type": "job-completed"})))
    write(target, "several-versions", delivery(0, event + [("circleci-signature", "v2=ab,v1=" + "00" * 32 + ",v1=zz")],
                                               compact(completed)))
    write(target, "unsigned", delivery(0, event, compact(completed)))

    completed = fixture("jenkins-notification-completed.json")
    target = "webhook_jenkins"
    json_type = [("Content-Type", "application/json")]  # the plugin's; a seed needs a header line
    write(target, "completed", delivery(1, json_type, compact(completed)))
    write(target, "finalized", delivery(1, json_type, compact(dict(completed, build=dict(completed["build"], phase="FINALIZED")))))
    write(target, "started", delivery(1, json_type, compact(dict(completed, build=dict(completed["build"], phase="STARTED")))))
    write(target, "other-build-url", delivery(1, json_type, compact(dict(completed, build=dict(completed["build"], url="job/x/41/")))))
    write(target, "url-climbs", delivery(1, json_type, compact(dict(completed, url="job/octo-org/job/../"))))
    wrong = base64.b64encode(b"ci-creds:not-the-password").decode()
    write(target, "wrong-credentials", delivery(0, json_type + [("Authorization", "Basic " + wrong)], compact(completed)))
    write(target, "unauthenticated", delivery(0, json_type, compact(completed)))


def azure_hooks():
    run = fixture("azure-pipelines-hook-run-completed.json")
    job = fixture("azure-pipelines-hook-job-completed.json")
    target = "webhook_azure_pipelines"
    json_type = [("Content-Type", "application/json")]
    running = json.loads(json.dumps(run))
    running["resource"]["run"]["state"] = "inProgress"
    write(target, "run-completed", delivery(1, json_type, compact(run)))
    write(target, "run-in-progress", delivery(1, json_type, compact(running)))
    write(target, "job-completed", delivery(1, json_type, compact(job)))
    write(target, "run-id-string", delivery(1, json_type, compact(dict(run, resource={"run": {"id": "4711", "state": "completed"}}))))
    write(target, "unauthenticated", delivery(0, json_type, compact(run)))
    # Shapes acknowledged rather than refused, and Microsoft's sample without attempt or run id.
    write(target, "run-null", delivery(1, json_type, compact(dict(run, resource={"run": None}))))
    write(target, "resource-null", delivery(1, json_type, compact(dict(run, resource=None))))
    write(target, "other-event", delivery(1, json_type, compact(dict(run, eventType="build.complete"))))
    sample = json.loads(json.dumps(job))
    del sample["resource"]["job"]["attempt"]
    del sample["resource"]["run"]["id"]
    del sample["resource"]["run"]["url"]
    write(target, "job-completed-no-attempt-no-run-id", delivery(1, json_type, compact(sample)))
    by_url = json.loads(json.dumps(job))
    del by_url["resource"]["run"]["id"]
    write(target, "job-completed-run-id-from-url", delivery(1, json_type, compact(by_url)))
    run_by_url = json.loads(json.dumps(run))
    del run_by_url["resource"]["run"]["id"]
    write(target, "run-completed-run-id-from-url", delivery(1, json_type, compact(run_by_url)))


def credentials_requests():
    bodies = {
        "readme": b'{"roles": ["deploy-prod"], "ttl_seconds": 600}',
        "roles-only": b'{"roles": ["deploy-prod"]}',
        "not-json": b"roles=deploy-prod",
        "wrong-shape": b'{"roles": "deploy-prod"}',
        "no-roles": b'{"roles": []}',
        "empty-role-name": b'{"roles": [""]}',
        "ttl-zero": b'{"roles": ["a"], "ttl_seconds": 0}',
        "ttl-fraction": b'{"roles": ["a"], "ttl_seconds": 600.5}',
        "ttl-decimal-point": b'{"roles": ["a"], "ttl_seconds": 600.0}',
        "ttl-negative": b'{"roles": ["a"], "ttl_seconds": -5}',
        "ttl-u64-max": b'{"roles": ["a"], "ttl_seconds": 18446744073709551615}',
        "ttl-2-pow-64": b'{"roles": ["a"], "ttl_seconds": 1.8446744073709552e19}',
        "ttl-null": b'{"roles": ["a"], "ttl_seconds": null}',
        "unknown-field": b'{"roles": ["a"], "role": "b"}',
        "long-role-name": compact({"roles": ["é" * 129]}),
        "seventeen-roles": compact({"roles": [f"r{i}" for i in range(17)]}),
    }
    for name, body in bodies.items():
        write("credentials_request", name, body)


def rust_strings(path):
    """YAML documents the policy tests write as Rust string literals."""
    text = path.read_text()
    found = re.findall(r'r#"(.*?)"#', text, re.S)
    for literal in re.findall(r'"((?:roles|runner_tiers):(?:[^"\\]|\\.)*)"', text, re.S):
        found.append(re.sub(r'\\(.)', lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), literal))
    return [doc for doc in found if "roles" in doc or "runner_tiers" in doc]


def policies():
    write("policy_yaml", "example", (ROOT / "policy" / "example.yaml").read_bytes())
    write("policy_yaml", "bench", (ROOT / "benches" / "load" / "policy" / "bench.yaml").read_bytes())
    seen = set()
    for path in sorted((ROOT / "src" / "policy" / "tests").glob("*.rs")):
        for n, doc in enumerate(rust_strings(path)):
            if doc not in seen:
                seen.add(doc)
                write("policy_yaml", f"{path.stem}-{n}", doc.encode())
    extra = {
        "alias-bomb": b"a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nroles: [*c, *c]\n",
        "glob-classes": b"roles:\n  - name: g\n    backend: vault\n    max_ttl: 1m\n    vault: { policies: [p] }\n"
                        b"    allow:\n      - issuer: github\n        ref: \"glob:refs/heads/{a,b}/[!x]*\"\n",
        "sub-condition": b"roles:\n  - name: s\n    backend: vault\n    max_ttl: 1m\n    vault: { policies: [p] }\n"
                         b"    allow:\n      - issuer: github\n        sub: repo:octo-org/octo-repo\n",
    }
    for name, text in extra.items():
        write("policy_yaml", name, text)


def configs():
    head = ('listen = "127.0.0.1:8080"\naudience = "https://ci-creds.example"\npolicy_dir = "policy"\n'
            '[store]\nurl = "sqlite://ci-creds.db"\n')
    issuer = '[[issuers]]\nname = "github"\nkind = "github"\nissuer = "https://token.actions.githubusercontent.com"\n'
    vault = '[vault]\naddress = "https://vault.example"\ntoken_env = "VAULT_TOKEN"\n'
    full = (head + issuer
            + '[[issuers]]\nname = "gitlab"\nkind = "gitlab"\nissuer = "https://gitlab.example.com"\n'
              'jwks_url = "https://gitlab.example.com/oauth/discovery/keys"\nalgorithms = ["RS256", "ES256"]\n'
            + vault
            + '[aws]\nregion = "eu-west-1"\nendpoint_url = "http://127.0.0.1:5000"\ntimeout_seconds = 5\n'
              '[webhooks.github]\nissuer = "github"\nsecret_env = "GITHUB_WEBHOOK_SECRET"\n'
              '[webhooks.gitlab]\nissuer = "gitlab"\ntoken_env = "GITLAB_WEBHOOK_TOKEN"\n'
              '[lifecycle]\nretention = "24h"\nsweep_interval = "1m"\nclaim_timeout = "60s"\n'
              '[audit]\nfile = "audit.jsonl"\nstdout = true\n'
              '[metrics]\nrepositories = ["octo-org/octo-repo"]\n'
              '[limits]\nheader_timeout = "10s"\nidle_timeout = "30s"\nrequest_timeout = "30s"\n'
              'max_connections = 512\nmax_in_flight = 128\nin_flight_wait = "100ms"\n')
    cases = {
        "readme": head + issuer + vault,
        "full": full,
        "postgres": head.replace("sqlite://ci-creds.db", "postgres://ci-creds@db:5432/ci_creds") + 'password_env = "PGPASSWORD"\nmax_connections = 16\n' + issuer,
        "sqlite-memory-query": head.replace("sqlite://ci-creds.db", "sqlite::memory:?cache=shared") + issuer,
        "unknown-key": head + 'colour = "blue"\n' + issuer + vault,
        "no-issuers": head + "issuers = []\n" + vault,
        "plain-http-issuer": head + issuer.replace("https://token.actions", "http://token.actions") + vault,
        "unknown-kind": head + issuer.replace('kind = "github"', 'kind = "teamcity"') + vault,
        "jenkins": head + '[[issuers]]\nname = "jenkins"\nkind = "jenkins"\nissuer = "https://jenkins.example.com/oidc"\n'
                   'max_token_lifetime = "15m"\n[issuers.claim_names]\nbranch = "git_branch"\n' + vault
                   + '[webhooks.jenkins]\nissuer = "jenkins"\ncredentials_env = "JENKINS_WEBHOOK_CREDENTIALS"\n'
                     '[ci_api.jenkins]\napi_url = "https://jenkins.example.com"\nuser = "ci-creds"\ntoken_env = "T"\n',
        "jenkins-unknown-claim-role": head + '[[issuers]]\nname = "j"\nkind = "jenkins"\nissuer = "https://j.example/oidc"\n'
                                      '[issuers.claim_names]\nrepository = "repo"\n' + vault,
        "symmetric-alg": head + issuer + 'algorithms = ["HS256"]\n' + vault,
        "not-sqlite": head.replace("sqlite://", "mysql://") + issuer + vault,
        "webhook-wrong-kind": head + issuer + '[webhooks.gitlab]\nissuer = "github"\ntoken_env = "T"\n',
        "webhooks-per-issuer": head + '[[issuers]]\nname = "jenkins"\nkind = "jenkins"\nissuer = "https://jenkins.example.com/oidc"\n'
                               '[[issuers]]\nname = "jenkins-teams"\nkind = "jenkins"\n'
                               'issuer = "https://jenkins.example.com/oidc/job/teams"\n' + vault
                               + '[webhooks.jenkins]\nissuer = "jenkins"\ncredentials_env = "JENKINS_WEBHOOK_CREDENTIALS"\n'
                                 '[webhooks.jenkins-teams]\nissuer = "jenkins-teams"\ncredentials_env = "TEAMS_CREDENTIALS"\n',
        "webhook-bad-name": head + issuer + '[webhooks."a/b"]\nissuer = "github"\nsecret_env = "S"\n',
        "zero-sweep": head + issuer + '[lifecycle]\nsweep_interval = "0s"\n',
        "bad-duration": head + issuer + '[lifecycle]\nretention = "forever"\n',
        "limits-inverted": head + issuer + '[limits]\nmax_connections = 1\nmax_in_flight = 1\n',
        "bench": (ROOT / "benches" / "load" / "broker.toml").read_text(),
    }
    for name, text in cases.items():
        write("config_toml", name, text.encode())


def answers():
    def vault(role, token):
        return {"role": role, "backend": "vault", "lease_id": "l-1", "expires_at": "2026-11-29T22:10:00Z",
                "vault": {"address": "https://vault.example", "token": token, "accessor": "acc"}}

    def aws(role):
        return {"role": role, "backend": "aws", "lease_id": "l-2", "expires_at": "2026-11-29T22:10:00Z",
                "aws": {"access_key_id": "ASIAEXAMPLE", "secret_access_key": "se/cr+et", "session_token": "to'ken",
                        "region": "eu-west-1"}}

    job = {"issuer": "github", "job_id": "1", "repository": "o/r", "ref": "refs/heads/main"}
    bodies = {
        "vault-and-aws": {"job": job, "credentials": [vault("deploy", "s.tok"), aws("aws-deploy")]},
        "vault-twice": {"job": job, "credentials": [vault("deploy-prod", "a"), vault("read.config", "b")]},
        "aws-only": {"job": job, "credentials": [aws("aws-deploy")]},
        "newline-in-token": {"job": job, "credentials": [vault("deploy", "s.tok\nINJECTED=1")]},
        "nul-in-token": {"job": job, "credentials": [vault("deploy", "s.\u0000tok")]},
        "no-credentials": {"job": job, "credentials": []},
        "dynamic-secret": {"job": job, "credentials": [dict(vault("db", "s.t"), vault={
            "address": "https://vault.example", "token": "s.t", "accessor": "a", "secret": {"username": "u", "password": "p"}})]},
        "denied": {"error": "access_denied", "message": "the policy does not allow every requested role",
                   "request_id": "0193", "denied": [{"role": "deploy-prod", "reasons": ["ref is refs/heads/dev, not refs/heads/main"]}]},
        "replayed": {"error": "token_replayed", "message": "this token was already exchanged", "request_id": "r"},
    }
    for name, body in bodies.items():
        for selector in range(6):  # env, json, github, gitlab-dotenv, credential-process, azure
            if name in ("denied", "replayed") and selector:
                continue
            write("client_answer", f"{name}-{selector}", bytes([selector]) + compact(body))
    write("client_answer", "not-json-0", b"\0<html>502 Bad Gateway</html>")


def ci_answers():
    """The CI APIs' documented job answers, in each state the broker tells apart."""
    for selector, name, field, states in [
        (0, "github-api-job-in-progress.json", "status", ["in_progress", "completed", "queued"]),
        (1, "gitlab-api-job-running.json", "status", ["running", "success", "pending"]),
        (2, "buildkite-api-job.json", "state", ["running", "passed", "scheduled"]),
    ]:
        answer = fixture(name)
        for state in states:
            write("ci_answer", f"{name.split('-')[0]}-{state}", bytes([selector]) + compact(dict(answer, **{field: state})))
    for name in ["jenkins-api-build-running.json", "jenkins-api-build-finished.json"]:
        write("ci_answer", name.removesuffix(".json"), bytes([3]) + compact(fixture(name)))
    # The SCMRevisionAction heads, as answers about build 42 of `main` so that their heads are read.
    main_42 = fixture("jenkins-api-build-running.json")
    for head in ["branch", "tag", "change-request-fork", "none"]:
        answer = dict(fixture(f"jenkins-api-build-{head}.json"), number=main_42["number"], url=main_42["url"])
        write("ci_answer", f"jenkins-api-build-{head}", bytes([3]) + compact(answer))
    for name in ["azure-pipelines-api-build-inprogress.json", "azure-pipelines-api-build-completed.json"]:
        write("ci_answer", name.removesuffix(".json"), bytes([4]) + compact(fixture(name)))
    # Read as the run's timeline too: every job on the run's queue (queueId 1, as the target's
    # build answer), one elsewhere, one on no queue.
    timeline = fixture("azure-pipelines-api-timeline.json")
    for name, queues in [("run-queue", [1]), ("job-elsewhere", [1, 4800]), ("job-queueless", [1, None])]:
        records = [r for r in timeline["records"] if r["type"] != "Job"]
        job = next(r for r in timeline["records"] if r["type"] == "Job")
        for i, queue in enumerate(queues):
            records.append(dict(job, id=f"e87e3d16-29b0-5003-7d86-82b704b9624{i}", queueId=queue))
        write("ci_answer", f"azure-timeline-{name}", bytes([4]) + compact(dict(timeline, records=records)))
    write("ci_answer", "github-completed-fixture", bytes([0]) + compact(fixture("github-api-job-completed.json")))
    write("ci_answer", "gitlab-success-fixture", bytes([1]) + compact(fixture("gitlab-api-job-success.json")))
    write("ci_answer", "not-json", b"\0<html>502 Bad Gateway</html>")


tokens()
webhooks()
azure_hooks()
credentials_requests()
policies()
configs()
answers()
ci_answers()
