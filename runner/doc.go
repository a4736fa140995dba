// Package runner embeds pginbox's sidecar in a Go program: the webhook
// endpoint (POST /webhooks/{provider}, verified by package verify and stored
// with webhooks.ingest_webhook), the workers that claim stored events and
// run a [Handler] on each inside the transaction that completes it, and the
// schedules (reconciliation and backfill, view refreshes and anomaly checks,
// retention). `pginbox serve` is this package configured by [ConfigFromEnv].
//
// Build a [Config] (its zero value is a working default), pass it to [New],
// and call [Server.Run]:
//
//	srv, err := runner.New(ctx, runner.Config{Providers: providers, Handler: h}, databaseURL, logger)
//	if err != nil { ... }
//	err = srv.Run(ctx) // until ctx ends, then a graceful shutdown
//
// runner is the facade: it wires parts that live in packages of their own
// (ingest, process, notify, maintenance, metrics and the operators' console
// under internal/), and
// [Event], [Handler] and [HandlerFunc] are aliases of the leaf package
// pginboxtype, which any package can import.
package runner
