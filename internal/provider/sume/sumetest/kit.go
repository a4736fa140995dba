// Package sumetest is the sume kind's test kit: secrets, a sample
// delivery and its signer, for the tests every kind shares.
package sumetest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/internal/testsign"
)

// Kit returns the sume kind's test kit.
func Kit() providertest.Kit {
	return providertest.Kit{
		Kind:    "sume",
		Secrets: [2]string{"sume-secret-old-0123", "sume-secret-new-0123"},
		Body: func(key string) string {
			return fmt.Sprintf(`{"job_id": %q, "event": "job.completed", "status": "COMPLETED"}`, key)
		},
		Sign: func(secret, body, _ string, at time.Time) http.Header {
			return testsign.Sume(secret, body, at)
		},
		EventType: "job.completed",
	}
}
