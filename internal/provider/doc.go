// Package provider is the list of provider kinds ([Kinds]): for each, its
// name, its signature verifier and, where the provider has an API backfill
// can read, the constructor of that API's client. The receiver
// (runner/verify), the backfill passes (internal/backfill) and the
// configuration consult it instead of switching on kind names.
//
// Each kind is one folder, internal/provider/<kind>, holding its verifier
// (standard library only, built on package [sig]), its backfill client
// where it has one (built on package internal/provider/api, the contract
// every kind's client implements), their tests, a fake of its API where the
// tests need one (<kind>/<kind>fake) and its test kit (<kind>/<kind>test).
//
// The same list is written in SQL: the rows of the table
// webhooks.provider_kinds, which webhooks.set_provider and the foreign key of
// webhooks.provider_secrets.kind read. tests.TestProviderKindsMatchSQL keeps
// the two equal.
package provider
