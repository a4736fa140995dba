// Runs Square's own check, WebhooksHelper.verifySignature of the square SDK,
// on each delivery read from stdin as JSON [{"secret", "url", "headers",
// "body"}] (header names lower-case) and prints a JSON array: true where
// Square's code accepts the delivery. Run by tests/providerlibs_test.go.
'use strict';
const { WebhooksHelper } = require('square');

let input = '';
process.stdin.on('data', (c) => { input += c; });
process.stdin.on('end', async () => {
  const out = [];
  for (const d of JSON.parse(input)) {
    try {
      out.push(await WebhooksHelper.verifySignature({
        requestBody: d.body,
        signatureHeader: d.headers['x-square-hmacsha256-signature'],
        signatureKey: d.secret,
        notificationUrl: d.url,
      }) === true);
    } catch (e) {
      out.push(false);
    }
  }
  process.stdout.write(JSON.stringify(out));
});
