// Runs Linear's own check, LinearWebhookClient.parseVerifiedPayload of
// @linear/sdk (signature, then the body's webhookTimestamp), on each delivery
// read from stdin as JSON [{"secret", "headers", "body"}] (header names
// lower-case) and prints a JSON array: true where Linear's code accepts the
// delivery. The signature is read from the header the SDK names
// (LINEAR_WEBHOOK_SIGNATURE_HEADER). Run by tests/providerlibs_test.go.
import { LinearWebhookClient, LINEAR_WEBHOOK_SIGNATURE_HEADER } from '@linear/sdk/webhooks';

let input = '';
process.stdin.on('data', (c) => { input += c; });
process.stdin.on('end', () => {
  const out = JSON.parse(input).map((d) => {
    try {
      const client = new LinearWebhookClient(d.secret);
      const sig = d.headers[LINEAR_WEBHOOK_SIGNATURE_HEADER];
      if (!sig) return false;
      client.parseVerifiedPayload(Buffer.from(d.body, 'utf8'), sig, null);
      return true;
    } catch (e) {
      return false;
    }
  });
  process.stdout.write(JSON.stringify(out));
});
