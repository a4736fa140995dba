// Package github is the provider kind github: GitHub's webhooks (of a
// repository, an organization or an app), signed with the webhook's secret
// as X-Hub-Signature-256 over the raw body, with no timestamp (the
// X-GitHub-Delivery guid, the idempotency key, makes a replay a duplicate);
// and the client of a GitHub App's webhook delivery log ([EventLog],
// authenticated with an app JWT), read by backfill.
package github
