// Package backfill finds and stores what never arrived. Provider APIs come in
// two shapes (package [api], internal/provider/api, defines both; each
// provider kind's client lives in its folder, internal/provider/<kind>):
//
//   - per id ([StatusAPI]; Sume's job status API): a pass ([Run]) asks about
//     each gap — an expected webhook past its deadline — and ingests the
//     terminal event, tombstones an id the provider does not know, or
//     postpones the deadline of one still running;
//   - event log ([EventLog]; Stripe's event list and a GitHub App's delivery
//     log): a pass ([RunLog]) lists what the provider sent since a
//     per-provider checkpoint and ingests what is not stored, with no
//     expectation needed.
//
// A provider whose API gives no answer in a pass is backed off ([Backoff])
// and probed with one request at a time until it answers again
// ([Backoff.Probe]), when a pass reads it at once.
//
// [APIs] and [EventLogs] build them from the configuration, asking the list
// of kinds (internal/provider) which kind has which API. Every API contacts
// only the origin of its provider's PGINBOX_API_URL_<NAME>, with that
// provider's key, never follows a redirect and dials only the addresses the
// configured host resolves to.
package backfill
