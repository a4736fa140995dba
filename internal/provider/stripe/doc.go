// Package stripe is the provider kind stripe: Stripe's webhook endpoints,
// signed with the endpoint's signing secret as the v1 entries of
// Stripe-Signature over "<t>.<raw body>"; and the client of Stripe's event
// list ([EventLog], GET /v1/events under a restricted key), read by
// backfill.
package stripe
