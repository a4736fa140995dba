// Package verify checks the signatures of webhook deliveries and extracts
// their idempotency key and event type. It uses the standard library only and
// knows nothing of databases: a [Provider] built by [New] answers, for one
// delivery, whether it is authentic ([Provider.Verify]) and under which key it
// is stored ([Provider.Identify]). Every refusal is a [*RejectError] with the
// HTTP status to answer (401 or 400) and a fixed, lower-case Reason.
//
// The kinds ([Kinds]), with the header that carries the signature, where the
// idempotency key comes from and where the event type comes from:
//
//   - sume: X-Sume-Signature: v1=<hex HMAC-SHA256 of "<X-Sume-Timestamp>.<body>">;
//     key: top-level job_id, else request_id, else id, else X-Sume-Event-Id;
//     type: top-level event, else type.
//   - stripe: Stripe-Signature: t=<ts>,v1=<hex HMAC-SHA256 of "<t>.<body>">[,v1=…];
//     key: top-level id; type: top-level type.
//   - github: X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of body>;
//     key: X-GitHub-Delivery; type: X-GitHub-Event, plus "."+action when the body has one.
//   - standardwebhooks: webhook-signature: v1,<base64 HMAC-SHA256 of
//     "<webhook-id>.<webhook-timestamp>.<body>"> (space-separated list), keyed by
//     the base64 secret after its optional "whsec_" prefix, and v1a,<base64
//     Ed25519 signature of the same> verified with "whpk_<base64>" public keys
//     listed among the secrets;
//     key: webhook-id; type: top-level type.
//   - shopify: X-Shopify-Hmac-Sha256: <base64 HMAC-SHA256 of body>;
//     key: X-Shopify-Event-Id; type: X-Shopify-Topic.
//   - paddle: Paddle-Signature: ts=<ts>;h1=<hex HMAC-SHA256 of "<ts>:<body>">[;h1=…];
//     key: top-level event_id; type: top-level event_type.
//   - slack: X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:<X-Slack-Request-Timestamp>:<body>">;
//     key: top-level event_id; type: event.type of an event_callback, else type.
//     A url_verification is a handshake ([Delivery].Handshake): answered, not stored.
//   - linear: Linear-Signature: <hex HMAC-SHA256 of body>, and the body's
//     webhookTimestamp (unix milliseconds); key: Linear-Delivery; type: "<type>.<action>".
//   - square: X-Square-HmacSha256-Signature: <base64 HMAC-SHA256 of
//     "<notification URL><body>">, the URL given to [NewWithURL];
//     key: top-level event_id; type: top-level type.
//
// Schemes that sign a timestamp (sume, stripe, standardwebhooks, paddle,
// slack, linear) refuse one more than five minutes before or after now. Every kind accepts several
// secrets at once (rotation): a delivery is valid if any of them verifies it.
// Signatures are computed over the exact raw body bytes and compared in
// constant time.
//
// A body must be one JSON object that Postgres jsonb accepts ([ReadEnvelope]);
// keys and event types are non-blank UTF-8 of at most 255 bytes without
// control characters. Sume's unsigned X-Sume-Event-Id header must equal the
// signed top-level body id whenever both are present.
//
// This package is the public face of the provider kinds: each kind's scheme
// lives in its own folder, internal/provider/<kind>, with its backfill client
// and tests, and [New] and [Kinds] read the list of kinds there.
package verify
