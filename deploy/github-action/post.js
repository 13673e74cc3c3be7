// Always runs when the job ends: ends the job at the broker, revoking every credential it got.
// A failed revocation fails this step so that a credential outliving its job is noticed.
'use strict';
const { input, run, brokerArgs } = require('./common.js');

const binary = process.env.STATE_binary;
if (!binary) {
  console.log('ci-creds was not installed by the main step; nothing to revoke');
} else if (input('revoke') === 'false') {
  console.log('revoke: false; the credentials stay valid until they expire');
} else {
  const code = run(binary, ['revoke', ...brokerArgs()]);
  if (code !== 0) {
    console.log(`::error::ci-creds revoke failed with exit code ${code}; the credentials stay valid until they expire unless the broker's job-completed webhook ends the job`);
    process.exitCode = code;
  }
}
