// Package backfill repairs gaps: expected webhooks that did not arrive by
// their deadline. A pass ([Run]) asks each gap's provider API what became of
// the id and ingests the terminal event, tombstones an id the provider does
// not know, or postpones the deadline of one still running. Provider APIs sit
// behind [StatusAPI], one file per API (today Sume's job status API,
// [SumeAPI]); [APIs] builds them from the configured providers.
package backfill
