// ed25519.js signs and verifies with node:crypto's Ed25519 (the v1a
// signatures of Standard Webhooks), independently of Go's crypto/ed25519.
// stdin: {"seed_hex": 32-byte private seed, "msg_b64": the signed content,
// "sig_b64": a signature to verify (optional)}; stdout: {"public_b64",
// "signature_b64", "verifies": bool (of sig_b64, when given)}.
'use strict';
const crypto = require('node:crypto');

// PKCS#8 DER prefix of an Ed25519 private key (RFC 8410), before the seed.
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

let input = '';
process.stdin.on('data', (c) => { input += c; });
process.stdin.on('end', () => {
  const { seed_hex: seedHex, msg_b64: msgB64, sig_b64: sigB64 } = JSON.parse(input);
  const priv = crypto.createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, Buffer.from(seedHex, 'hex')]), format: 'der', type: 'pkcs8' });
  const pub = crypto.createPublicKey(priv);
  const msg = Buffer.from(msgB64, 'base64');
  const out = {
    public_b64: Buffer.from(pub.export({ format: 'jwk' }).x, 'base64url').toString('base64'),
    signature_b64: crypto.sign(null, msg, priv).toString('base64'),
  };
  if (sigB64 !== undefined) {
    out.verifies = crypto.verify(null, msg, pub, Buffer.from(sigB64, 'base64'));
  }
  process.stdout.write(JSON.stringify(out));
});
