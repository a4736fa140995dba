package ingest

import (
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pginbox/pginbox/internal/metrics"
	"github.com/pginbox/pginbox/internal/provider/sig"
)

// unsignedConflictNotice is the NOTICE webhooks.ingest_webhook raises when a
// different body arrives under a stored key the provider does not sign; its
// DETAIL starts "provider <name>, external_id ...".
const unsignedConflictNotice = "pginbox: different body under a stored key"

// Notices returns the ingest pool's notice handler, which a [Receiver]'s
// Pool must have: it marks the connection on which the server warns that a
// commit's wait for the synchronous standbys was cancelled (that commit is
// then never answered 2xx), and counts refused different-body deliveries in
// pginbox_unsigned_key_conflicts_total by provider (only configured names
// become labels). m returns the metrics, nil until they exist.
func Notices(m func() *metrics.Set, providers map[string]sig.Provider) pgconn.NoticeHandler {
	return func(pc *pgconn.PgConn, n *pgconn.Notice) {
		// pginbox's own notice first: its DETAIL holds the caller's key.
		if n.Message != unsignedConflictNotice {
			if syncRepCancelled(n) {
				pc.CustomData()[syncRepKey] = true
			}
			return
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(n.Detail, "provider "), ",")
		if _, ok := providers[name]; !ok {
			name = "unknown"
		}
		if mm := m(); mm != nil {
			mm.UnsignedConflicts.WithLabelValues(name).Inc()
		}
	}
}
