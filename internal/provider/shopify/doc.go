// Package shopify is the provider kind shopify: Shopify's webhooks, signed
// with the app's client secret as X-Shopify-Hmac-Sha256 (base64) over the
// raw body, with no timestamp (the X-Shopify-Event-Id, the idempotency key,
// makes a replay a duplicate). It has no backfill client.
package shopify
