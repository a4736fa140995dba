// Package api is the contract of a provider kind's backfill client, what it
// is built from: the two shapes of provider API it implements ([StatusAPI], asked
// about one gap at a time, and [EventLog], a list of what the provider sent),
// the answers and errors a backfill pass tells apart, and the guarded HTTP
// client ([NewClient], [GetJSON]) that contacts only the origin of the
// provider's PGINBOX_API_URL_<NAME>, never follows a redirect and dials only
// the addresses the configured host resolves to.
//
// It uses the standard library only and knows nothing of databases: the
// passes that use these clients are package backfill's, the clients
// themselves live with their provider kind (internal/provider/<kind>).
package api
