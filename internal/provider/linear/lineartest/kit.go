// Package lineartest is the linear kind's test kit: secrets, a sample
// delivery and its signer, for the tests every kind shares.
package lineartest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/internal/testsign"
)

// Kit returns the linear kind's test kit.
func Kit() providertest.Kit {
	return providertest.Kit{
		Kind:    "linear",
		Secrets: [2]string{"lin_wh_secret_old_0123", "lin_wh_secret_new_0123"},
		Body: func(key string) string {
			// Linear's key is an unsigned header: the body differs per key, and
			// carries its signed webhookTimestamp.
			return fmt.Sprintf(`{"action": "create", "type": "Issue", "data": {"title": %q}, "webhookTimestamp": %d}`, key, time.Now().UnixMilli())
		},
		Sign: func(secret, body, key string, _ time.Time) http.Header {
			return testsign.Linear(secret, key, body)
		},
		EventType: "Issue.create",
	}
}
