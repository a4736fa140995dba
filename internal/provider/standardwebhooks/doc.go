// Package standardwebhooks is the provider kind standardwebhooks: deliveries
// signed as the Standard Webhooks specification says (Svix and others), over
// "<webhook-id>.<webhook-timestamp>.<raw body>": v1 entries are
// HMAC-SHA256 under whsec_ secrets, v1a entries Ed25519 signatures under
// whpk_ public keys. It has no backfill client.
package standardwebhooks
