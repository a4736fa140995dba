// paddle.js asks Paddle's official Node.js SDK (@paddle/paddle-node-sdk)
// about one delivery. stdin: {"secret", "body", "header"} (header is the
// Paddle-Signature value); stdout: {"isSignatureValid": bool,
// "unmarshal": {"ok": bool, "eventId", "eventType", "error"}}.
// The SDK only verifies: tests/sdkcheck_test.go signs by hand (Paddle's
// published recipe) and has the SDK judge the result.
'use strict';
const { Paddle } = require('@paddle/paddle-node-sdk');

let input = '';
process.stdin.on('data', (c) => { input += c; });
process.stdin.on('end', async () => {
  const { secret, body, header } = JSON.parse(input);
  // As Paddle documents it: paddle.webhooks of a client (constructing one
  // sets up the SDK's Node.js crypto; no request is made, the key is unused).
  const w = new Paddle('pdl_sdkcheck_unused_api_key').webhooks;
  const out = { isSignatureValid: await w.isSignatureValid(body, secret, header) };
  try {
    const ev = await w.unmarshal(body, secret, header);
    out.unmarshal = { ok: true, eventId: ev.eventId, eventType: ev.eventType };
  } catch (e) {
    out.unmarshal = { ok: false, error: String(e && e.message) };
  }
  process.stdout.write(JSON.stringify(out));
});
