// Installs ci-creds if asked, then `ci-creds get --format github`: secrets are masked first,
// then exported to the following steps through $GITHUB_ENV.
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { input, run, saveState, brokerArgs } = require('./common.js');

async function install() {
  const url = input('install-url');
  if (!url) return 'ci-creds';
  const expected = input('install-sha256').toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(expected)) {
    throw new Error('install-sha256 must be the hex SHA-256 of the binary at install-url');
  }
  const response = await fetch(url, { redirect: 'follow' });
  if (!response.ok) throw new Error(`downloading ${url}: HTTP ${response.status}`);
  const bytes = Buffer.from(await response.arrayBuffer());
  const actual = crypto.createHash('sha256').update(bytes).digest('hex');
  if (actual !== expected) throw new Error(`${url} has SHA-256 ${actual}, expected ${expected}`);
  const binary = path.join(process.env.RUNNER_TEMP, 'ci-creds', 'ci-creds');
  fs.mkdirSync(path.dirname(binary), { recursive: true });
  fs.writeFileSync(binary, bytes, { mode: 0o755 });
  return binary;
}

async function main() {
  const binary = await install();
  saveState('binary', binary);
  const args = ['get', ...brokerArgs(), '--role', input('roles'), '--format', 'github'];
  const ttl = input('ttl');
  if (ttl) args.push('--ttl', ttl);
  const code = run(binary, args);
  if (code !== 0) {
    console.log(`::error::ci-creds get failed with exit code ${code} (2 usage, 3 no OIDC token: does the job have \`permissions: id-token: write\`?, 4 refused by policy, 5 broker unavailable)`);
    process.exitCode = code;
  }
}

main().catch((error) => {
  console.log(`::error::${error.message}`);
  process.exitCode = 1;
});
