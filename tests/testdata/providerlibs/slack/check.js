// Runs Slack's own check, verifyRequestSignature of @slack/events-api, on
// each delivery read from stdin as JSON [{"secret", "headers", "body"}]
// (header names lower-case) and prints a JSON array: true where Slack's code
// accepts the delivery. Run by tests/providerlibs_test.go.
'use strict';
const { verifyRequestSignature } = require('@slack/events-api');

let input = '';
process.stdin.on('data', (c) => { input += c; });
process.stdin.on('end', () => {
  const out = JSON.parse(input).map((d) => {
    try {
      return verifyRequestSignature({
        signingSecret: d.secret,
        requestSignature: d.headers['x-slack-signature'],
        requestTimestamp: Number(d.headers['x-slack-request-timestamp']),
        body: d.body,
      }) === true;
    } catch (e) {
      return false;
    }
  });
  process.stdout.write(JSON.stringify(out));
});
