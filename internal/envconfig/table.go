package envconfig

// Table is every setting of pginbox, each declared once: the environment
// reader ([Read]), the `pginbox serve` flags, runner.Config's defaults and
// its Validate, and the test that docs/reference.md documents every variable
// all come from it. A per-provider family is one row whose Env ends in
// <NAME>; a row without Env is a runner.Config field only a Go program sets.
var Table = []Setting{
	// The pginbox command's own settings.
	{Env: "DATABASE_URL", Doc: "the Postgres every command uses; unset: an embedded cluster under PGINBOX_DATA_DIR", kind: text()},
	{Env: "PGINBOX_DATA_DIR", Flag: "data-dir", Default: ".pginbox", Doc: "folder of the embedded cluster", kind: text()},
	{Env: "PGINBOX_LOG_LEVEL", Flag: "log-level", Default: "info", Doc: "debug, info, warn or error (JSON logs on stderr)", kind: logLevel()},

	// The listeners.
	{Env: "PGINBOX_ADDR", Flag: "addr", Field: "Addr", Default: "127.0.0.1:8080",
		Doc: "the public listener, host:port: POST /webhooks/{provider}, /healthz, /readyz", kind: hostPort(false)},
	{Env: "PGINBOX_ADMIN_ADDR", Field: "AdminAddr", Default: "127.0.0.1:8081",
		Doc: "the operators' listener, host:port (console, /api/*, /metrics); off disables it", kind: hostPort(true)},
	{Env: "PGINBOX_ADMIN_HOSTS", Field: "AdminHosts",
		Doc: "comma list of extra Host names the admin listener answers (a reverse proxy's or tunnel's)", kind: hostNames()},
	{Env: "PGINBOX_ADMIN_TRUSTED_PROXIES", Field: "AdminTrustedProxies",
		Doc: "comma list of CIDRs of reverse proxies whose X-Forwarded-For/-Proto the admin listener believes; unset: none", kind: cidrList()},
	{Env: "PGINBOX_ADMIN_TOKEN", Field: "AdminToken",
		Doc: "the token the admin routes require, at least 16 characters; unset: reads open, actions refused", kind: token(16)},
	{Field: "ReadHeaderTimeout", Default: "10s",
		Doc: "how long a client may take to send its request headers, on both listeners", kind: duration(false)},
	{Env: "PGINBOX_MAX_BODY", Flag: "max-body", Field: "MaxBody", Default: "1048576",
		Doc: "largest accepted body, in bytes", kind: bytes()},
	{Env: "PGINBOX_INGEST_TIMEOUT", Flag: "ingest-timeout", Field: "IngestTimeout", Default: "10s",
		Doc: "longest ingest call before the delivery is answered 503", kind: duration(false)},
	{Env: "PGINBOX_INGEST_BATCH", Flag: "ingest-batch", Field: "IngestBatch", Default: "64",
		Doc: "most deliveries stored in one transaction: deliveries arriving while others commit share the next commit (group commit); 1 stores each alone", kind: wholeNumber(1, 1000)},

	// Providers.
	{Env: "PGINBOX_PROVIDERS", Flag: "providers", Builds: "Providers",
		Doc: "comma list of name=kind: the {provider} of POST /webhooks/{provider} and its signature scheme", kind: providerList()},
	{Env: "PGINBOX_SECRET_<NAME>", Builds: "Providers",
		Doc: "comma list of secrets of provider name (upper-cased, - → _); several at once for rotation", kind: text()},
	{Env: "PGINBOX_URL_<NAME>", Builds: "Providers",
		Doc: "the exact public URL provider name was given, which kind square signs (required for square; other kinds ignore it)", kind: text()},

	// Processing.
	{Env: "PGINBOX_HANDLER", Flag: "handler", Builds: "Handler", Default: "none",
		Doc: "what a worker does with a claimed event: none, sql:<schema.function> or http:<url>", kind: text()},
	{Env: "PGINBOX_LEASE_MODE", Flag: "lease-mode", Field: "LeaseMode",
		Doc: "how a batch is held while its handler runs: row-lock or two-phase; unset: row-lock for sql:, two-phase for Go handlers", kind: oneOf("row-lock", "two-phase")},
	{Env: "PGINBOX_HTTP_TIMEOUT", Flag: "http-timeout", Builds: "Handler", Default: "30s",
		Doc: "timeout of the http: handler's POST", kind: duration(false)},
	{Env: "PGINBOX_HANDLER_TIMEOUT", Flag: "handler-timeout", Field: "HandlerTimeout", Default: "5m",
		Doc: "longest handler call; past it the lease is no longer extended", kind: duration(false)},
	{Env: "PGINBOX_WORKERS", Flag: "workers", Field: "Workers", Default: "8",
		Doc: "worker goroutines, 1 to 1024", kind: wholeNumber(1, 1024)},
	{Env: "PGINBOX_BATCH", Flag: "batch", Field: "BatchSize", Default: "100",
		Doc: "events a worker claims at once, 1 to 10000", kind: wholeNumber(1, 10000)},
	{Env: "PGINBOX_LEASE", Flag: "lease", Field: "Lease", Default: "5m",
		Doc: "how long a claimed event stays locked before reconciliation may rescue it", kind: duration(false)},
	{Env: "PGINBOX_POLL_INTERVAL", Flag: "poll-interval", Field: "PollInterval", Default: "1s",
		Doc: "poll backstop: workers look for work at least this often", kind: duration(false)},
	{Env: "PGINBOX_NOTIFY_INTERVAL", Flag: "notify-interval", Field: "NotifyInterval", Default: "50ms",
		Doc: "least time between two coalesced NOTIFY webhooks_events", kind: duration(false)},

	// Connections.
	{Env: "PGINBOX_LISTEN", Flag: "listen", Field: "PollOnly", Default: "true",
		Doc: "use LISTEN/NOTIFY wake-ups (false: poll only)", kind: negated()},
	{Env: "PGINBOX_DIRECT_URL", Flag: "direct-url", Field: "DirectURL",
		Doc: "a direct (session) connection for LISTEN and migrations when DATABASE_URL is a transaction pooler; unset: DATABASE_URL", kind: text()},
	{Env: "PGINBOX_LISTEN_URL", Flag: "listen-url", Field: "DirectURL", OldNameOf: "PGINBOX_DIRECT_URL",
		Doc: "the old name of PGINBOX_DIRECT_URL, read when that is unset", kind: text()},
	{Env: "PGINBOX_LISTEN_PING", Flag: "listen-ping", Field: "ListenPing", Default: "10s",
		Doc: "how often the listener pings itself to detect a half-open connection (off disables)", kind: duration(true)},
	{Env: "PGINBOX_MIGRATE", Flag: "migrate", Field: "SkipMigrate", Default: "true",
		Doc: "apply pending migrations at start (the embedded cluster is always migrated)", kind: negated()},
	{Env: "PGINBOX_SHUTDOWN_TIMEOUT", Flag: "shutdown-timeout", Field: "ShutdownTimeout", Default: "30s",
		Doc: "graceful shutdown bound", kind: duration(false)},

	// Schedules and retention.
	{Env: "PGINBOX_RECONCILE_EVERY", Flag: "reconcile-every", Field: "ReconcileEvery", Default: "1m",
		Doc: "reconciliation schedule (off disables); a backfill pass follows each scheduled pass", kind: duration(true)},
	{Env: "PGINBOX_CHECKS_EVERY", Flag: "checks-every", Field: "ChecksEvery", Default: "1m",
		Doc: "view refresh and anomaly checks schedule (off disables)", kind: duration(true)},
	{Env: "PGINBOX_PRUNE_EVERY", Flag: "prune-every", Field: "PruneEvery", Default: "1h",
		Doc: "retention schedule (off disables)", kind: duration(true)},
	{Env: "PGINBOX_HISTORY_EVERY", Flag: "history-every", Field: "HistoryEvery", Default: "1s",
		Doc: "how often processed events move from the queue into their days of history (off disables: the queue then keeps them)", kind: duration(true)},
	{Env: "PGINBOX_KEEP_PAYLOAD", Flag: "keep-payload", Field: "KeepPayload", Default: "30d",
		Doc: "how long payloads of processed events are kept", kind: duration(false)},
	{Env: "PGINBOX_KEEP_KEYS", Flag: "keep-keys", Field: "KeepKeys", Default: "400d", LongerThan: "PGINBOX_KEEP_PAYLOAD", why: "so late redeliveries still dedupe",
		Doc: "how long finished events, and so their dedup keys, are kept", kind: duration(false)},

	// Backfill.
	{Env: "PGINBOX_API_URL_<NAME>", Builds: "ProviderAPIs",
		Doc: "base URL of provider name's API, for backfill: https, or http on loopback only; unset: the API is never contacted", kind: text()},
	{Env: "PGINBOX_API_KEY_<NAME>", Builds: "ProviderAPIs",
		Doc: "the key sent to that API, and only to it (kind github: the app's private key: PEM, base64-encoded PEM, or a path)", kind: text()},
	{Env: "PGINBOX_GITHUB_APP_ID_<NAME>", Builds: "ProviderAPIs",
		Doc: "kind github: the id of the GitHub App whose delivery log backfill reads", kind: text()},
	{Env: "PGINBOX_BACKFILL_TIMEOUT", Field: "BackfillTimeout", Default: "2m",
		Doc: "longest backfill pass", kind: duration(false)},
	{Env: "PGINBOX_BACKFILL_LOOKBACK", Field: "BackfillLookback", Default: "72h",
		Doc: "how far back the first event-log backfill pass of a provider reads", kind: duration(false)},

	// Alerts.
	{Env: "PGINBOX_ALERT_URL", Field: "AlertURL",
		Doc: "where each check that starts to breach, and clears, is POSTed (http or https); unset: no alert POSTs", kind: webhookURL()},
	{Env: "PGINBOX_ALERT_SECRET", Field: "AlertSecret",
		Doc: "whsec_<base64 of at least 16 bytes>: signs each alert POST the Standard Webhooks way; unset: unsigned", kind: whsec()},
	{Env: "PGINBOX_ALERT_FORMAT", Field: "AlertFormat", Default: "pginbox",
		Doc: "the alert POST's body: pginbox, slack (incoming webhook), pagerduty (Events v2) or alertmanager (/api/v2/alerts)", kind: oneOf("pginbox", "slack", "pagerduty", "alertmanager")},
	{Env: "PGINBOX_ALERT_ROUTING_KEY", Field: "AlertRoutingKey",
		Doc: "PGINBOX_ALERT_FORMAT=pagerduty: the integration's routing key (required then)", kind: token(1)},
}
