// paddle.js asks Paddle's official Node.js SDK (@paddle/paddle-node-sdk)
// about one delivery. stdin: {"secret", "body", "header"} (header is the
// Paddle-Signature value); stdout: {"isSignatureValid": bool,
// "unmarshal": {"ok": bool, "eventId", "eventType", "error"}}.
// The SDK only verifies: tests/sdkcheck_test.go signs by hand (Paddle's
// published recipe) and has the SDK judge the result.
'use strict';
const { Webhooks } = require('@paddle/paddle-node-sdk');

let input = '';
process.stdin.on('data', (c) => { input += c; });
process.stdin.on('end', async () => {
  const { secret, body, header } = JSON.parse(input);
  const w = new Webhooks();
  const out = { isSignatureValid: await w.isSignatureValid(body, secret, header) };
  try {
    const ev = await w.unmarshal(body, secret, header);
    out.unmarshal = { ok: true, eventId: ev.eventId, eventType: ev.eventType };
  } catch (e) {
    out.unmarshal = { ok: false, error: String(e && e.message) };
  }
  process.stdout.write(JSON.stringify(out));
});
