// A webhook receiver for pginbox in plain Node.js: it verifies a Sume
// signature on the raw body, extracts the idempotency key, and stores the
// delivery with one call to webhooks.ingest_webhook(). No pginbox runner is
// involved: the database decides what is a duplicate.
//
//   DATABASE_URL=postgres://app@db/app SUME_SECRET=old,new PORT=3000 node receiver.js
//
//   POST /webhooks/sume   200 {"event_id": N, "outcome": "created|updated|duplicate"}
//                         401 bad, missing or expired signature
//                         400 body not a JSON object, no key, ids that disagree
//                         413 body over 1 MiB, 415 a Content-Type that is not JSON
//                         503 the database did not take the write (Retry-After: 5)
//   GET  /healthz         200 {"ok": true}
//
// Every error answer is {"error": "<reason>"} and writes no row.
'use strict';

const crypto = require('node:crypto');
const http = require('node:http');
const { Pool } = require('pg');

const MAX_BODY = 1 << 20; // bytes, like the runner's default
const TOLERANCE_S = 5 * 60; // signed timestamps this far before or after now are accepted
const MAX_TEXT = 255; // bytes: the longest external_id / event_type the schema takes
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

class Reject extends Error {
  constructor(status, reason) {
    super(reason);
    this.status = status;
    this.reason = reason;
  }
}

// verifySume checks X-Sume-Signature: v1=<hex HMAC-SHA256(secret, "<X-Sume-Timestamp>.<raw body>")>
// against every configured secret (several during a rotation), in constant
// time, then the timestamp's tolerance. The header may list several entries
// (comma or space separated); entries of other schemes are ignored.
function verifySume(headers, body, secrets, nowS = Math.floor(Date.now() / 1000)) {
  const header = headers['x-sume-signature'] || '';
  const entries = header.split(/[\s,]+/).filter(Boolean);
  if (entries.length === 0) throw new Reject(401, 'signature missing');
  const sigs = entries
    .filter((e) => e.startsWith('v1=') && /^[0-9a-fA-F]{64}$/.test(e.slice(3)))
    .map((e) => Buffer.from(e.slice(3), 'hex'));
  if (sigs.length === 0) throw new Reject(401, 'signature malformed');

  const ts = headers['x-sume-timestamp'] || '';
  if (ts === '') throw new Reject(401, 'timestamp missing');
  if (!/^[0-9]{1,12}$/.test(ts)) throw new Reject(401, 'timestamp malformed');

  let ok = false;
  for (const secret of secrets) {
    const mac = crypto.createHmac('sha256', secret).update(ts + '.').update(body).digest();
    for (const sig of sigs) {
      // timingSafeEqual needs equal lengths: both are 32 bytes here.
      if (crypto.timingSafeEqual(mac, sig)) ok = true; // no early exit: constant work
    }
  }
  if (!ok) throw new Reject(401, 'signature mismatch');
  if (Math.abs(nowS - Number(ts)) > TOLERANCE_S) throw new Reject(401, 'timestamp out of tolerance');
}

// validText: what the schema stores as an external_id or event_type.
function validText(s) {
  return (
    typeof s === 'string' &&
    s.trim() !== '' &&
    Buffer.byteLength(s, 'utf8') <= MAX_TEXT &&
    !/[\u0000-\u001f\u007f-\u009f]/.test(s) &&
    !LONE_SURROGATE.test(s)
  );
}

// keyOf turns a top-level member into an idempotency key: a JSON string, or a
// JSON integer as its digits. JSON.parse keeps no literal, so integers beyond
// 2^53 (which it would round) are refused rather than stored under a wrong key.
function keyOf(value) {
  let key = value;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new Reject(400, 'idempotency key invalid');
    key = String(value);
  }
  if (!validText(key)) throw new Reject(400, 'idempotency key invalid');
  return key;
}

// hasMember: present at the top level and not null.
function hasMember(obj, name) {
  return Object.prototype.hasOwnProperty.call(obj, name) && obj[name] !== null;
}

// identifySume extracts what ingest_webhook() needs from a verified delivery.
// The key is the first that exists: top-level job_id (job webhooks); the
// envelope's top-level request_id (Format-run webhooks; a nested
// payload.request_id is never looked at); top-level id (resource events);
// else the X-Sume-Event-Id header. That header is not signed, so whenever the
// body has a top-level id as well, the two must be equal.
function identifySume(headers, body) {
  let text;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new Reject(400, 'body not json');
  }
  let env;
  try {
    env = JSON.parse(text); // a name given twice keeps its last value, as jsonb does
  } catch {
    throw new Reject(400, 'body not json');
  }
  if (env === null || typeof env !== 'object' || Array.isArray(env)) throw new Reject(400, 'body not json');

  const headerID = headers['x-sume-event-id'] || '';
  let externalID;
  if (hasMember(env, 'job_id')) externalID = keyOf(env.job_id);
  else if (hasMember(env, 'request_id')) externalID = keyOf(env.request_id);
  else if (hasMember(env, 'id')) externalID = keyOf(env.id);
  else if (headerID !== '') externalID = keyOf(headerID);
  else throw new Reject(400, 'idempotency key missing');

  if (headerID !== '' && hasMember(env, 'id')) {
    let bodyID;
    try {
      bodyID = keyOf(env.id);
    } catch {
      throw new Reject(400, 'event id mismatch');
    }
    if (bodyID !== headerID) throw new Reject(400, 'event id mismatch');
  }

  let eventType = typeof env.event === 'string' && env.event !== '' ? env.event : env.type;
  if (typeof eventType !== 'string' || eventType === '') throw new Reject(400, 'event type missing');
  if (!validText(eventType)) throw new Reject(400, 'event type invalid');

  return { externalID, eventType, payload: text };
}

// readBody collects the raw bytes, refusing more than limit. Past the limit
// it keeps reading and discarding, so the client gets to read the 413.
function readBody(req, limit) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk) => {
      if (over) return;
      size += chunk.length;
      if (size > limit) {
        over = true;
        chunks.length = 0;
        reject(new Reject(413, 'body too large'));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!over) resolve(Buffer.concat(chunks));
    });
    req.on('error', reject);
  });
}

function send(res, status, obj, headers = {}) {
  const body = JSON.stringify(obj) + '\n';
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

function jsonContentType(ct) {
  if (ct === undefined) return true; // not sent: fine
  const type = ct.split(';')[0].trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

function createReceiver({ pool, secrets, provider = 'sume', log = console }) {
  if (!secrets || secrets.length === 0) throw new Error('at least one Sume secret is required');

  return http.createServer(async (req, res) => {
    const path = new URL(req.url, 'http://localhost').pathname;
    if (req.method === 'GET' && path === '/healthz') return send(res, 200, { ok: true });
    if (path !== `/webhooks/${provider}`) return send(res, 404, { error: 'not found' });
    if (req.method !== 'POST') return send(res, 405, { error: 'method not allowed' }, { Allow: 'POST' });

    try {
      if (!jsonContentType(req.headers['content-type'])) throw new Reject(415, 'content type not json');
      const body = await readBody(req, MAX_BODY);
      // Verify the exact bytes received before anything is parsed or written.
      verifySume(req.headers, body, secrets);
      const d = identifySume(req.headers, body);

      let row;
      try {
        // The payload goes as text and Postgres parses it to jsonb: the stored
        // document is exactly what was signed. One statement, autocommit: when
        // it returns, the row is committed (synchronous_commit is on, see main).
        const r = await pool.query(
          'SELECT event_id, outcome FROM webhooks.ingest_webhook($1, $2, $3, $4::jsonb)',
          [provider, d.externalID, d.eventType, d.payload],
        );
        row = r.rows[0];
      } catch (err) {
        // Class 22 (data exception): Postgres refused the values themselves,
        // e.g. a \u0000 escape jsonb cannot store. Retrying would not help.
        if (typeof err.code === 'string' && err.code.startsWith('22')) {
          log.warn(`receiver: ${provider}: rejected by the database: ${err.code} ${err.message}`);
          throw new Reject(400, 'body not json');
        }
        log.error(`receiver: ${provider}: ingest failed: ${err.code || ''} ${err.message}`);
        return send(res, 503, { error: 'database unavailable' }, { 'Retry-After': '5' });
      }
      return send(res, 200, { event_id: Number(row.event_id), outcome: row.outcome });
    } catch (err) {
      if (err instanceof Reject) {
        log.warn(`receiver: ${provider}: ${err.status} ${err.reason}`); // never the body or a secret
        if (err.status === 413) {
          // Stop a sender that does not stop: drop the connection soon after.
          setTimeout(() => req.destroy(), 5000).unref();
          return send(res, 413, { error: err.reason }, { Connection: 'close' });
        }
        return send(res, err.status, { error: err.reason });
      }
      log.error(`receiver: ${provider}: ${err.stack || err}`);
      return send(res, 500, { error: 'internal error' });
    }
  });
}

function main() {
  const databaseURL = process.env.DATABASE_URL;
  const secrets = (process.env.SUME_SECRET || '').split(',').map((s) => s.trim()).filter(Boolean);
  if (!databaseURL) throw new Error('DATABASE_URL is not set');
  if (secrets.length === 0) throw new Error('SUME_SECRET is not set (a comma list of secrets)');
  const port = Number(process.env.PORT || 3000); // 0: any free port
  const host = process.env.HOST || '127.0.0.1';

  const pool = new Pool({
    connectionString: databaseURL,
    max: 10,
    connectionTimeoutMillis: 5000,
    query_timeout: 10000, // past it the delivery answers 503 and the provider retries
    application_name: 'pginbox-node-receiver',
    // A 200 promises a durable row, whatever the server's default.
    options: '-c synchronous_commit=on',
  });
  pool.on('error', (err) => console.error(`receiver: idle connection: ${err.message}`));

  const server = createReceiver({ pool, secrets });
  server.listen(port, host, () => {
    const a = server.address();
    console.log(`listening on http://${a.address}:${a.port}`);
  });

  let stopping = false;
  const stop = (signal) => {
    if (stopping) process.exit(1); // a second signal: now
    stopping = true;
    console.log(`receiver: ${signal}: finishing in-flight requests`);
    server.close(() => pool.end().then(() => process.exit(0)));
    server.closeIdleConnections();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

module.exports = { createReceiver, verifySume, identifySume, Reject };

if (require.main === module) {
  try {
    main();
  } catch (err) {
    console.error(`receiver: ${err.message}`);
    process.exit(1);
  }
}
