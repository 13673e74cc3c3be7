// Shared by main.js and post.js. No npm dependencies: the runner's Node has fetch and crypto.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');

function input(name) {
  return (process.env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] || '').trim();
}

// Runs ci-creds with stdio inherited: `::add-mask::` lines reach the runner on stdout, and
// diagnostics (which never hold secrets) reach the log on stderr.
function run(binary, args) {
  const result = spawnSync(binary, args, { stdio: 'inherit' });
  if (result.error) {
    console.log(`::error::cannot run ${binary}: ${result.error.message}`);
    return 1;
  }
  return result.status === null ? 1 : result.status;
}

function saveState(name, value) {
  fs.appendFileSync(process.env.GITHUB_STATE, `${name}=${value}\n`);
}

function brokerArgs() {
  const args = ['--broker', input('broker')];
  const audience = input('audience');
  if (audience) args.push('--audience', audience);
  return args;
}

module.exports = { input, run, saveState, brokerArgs };
