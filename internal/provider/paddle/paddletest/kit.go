// Package paddletest is the paddle kind's test kit: secrets, a sample
// delivery and its signer, for the tests every kind shares.
package paddletest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/internal/testsign"
)

// Kit returns the paddle kind's test kit.
func Kit() providertest.Kit {
	return providertest.Kit{
		Kind:    "paddle",
		Secrets: [2]string{"pdl_ntfset_01old_secret_0123", "pdl_ntfset_01new_secret_0123"},
		Body: func(key string) string {
			return fmt.Sprintf(`{"event_id": %q, "event_type": "transaction.completed", "occurred_at": "2026-12-02T01:00:00.000000Z", "data": {"id": "txn_1", "customer_id": "ctm_1"}}`, key)
		},
		Sign: func(secret, body, _ string, at time.Time) http.Header {
			return testsign.Paddle(secret, body, at)
		},
		EventType: "transaction.completed",
	}
}
